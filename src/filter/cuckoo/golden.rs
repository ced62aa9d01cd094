//! Golden tests: RedisBloom 2.8's own replies, captured by `tests/fixtures/cuckoo/capture.py`
//! (CF.ADD/ADDNX/INSERT/INSERTNX/DEL/COUNT/MEXISTS/COMPACT/INFO/DEBUG, every CF.SCANDUMP chunk
//! and the DUMP payloads), replayed on this core, which must answer byte for byte the same:
//! same replies, same header and chunks (so the same fingerprints in the same slots), and RDB
//! fields equal to those inside RedisBloom's DUMP payloads, which it also loads back.

use std::collections::HashMap;

use super::codec::{Header, REDISBLOOM_ENCODING_VERSION, ScanStep};
use super::{CuckooFilter, CuckooParams, FingerprintWidth, Insert};
use crate::filter::fields::{FieldWriter, SliceReader};
use crate::filter::guard::Unlimited;

const FIXTURES: &[(&str, &str)] = &[
    ("grow", include_str!("../../../tests/fixtures/cuckoo/grow.txt")),
    ("full", include_str!("../../../tests/fixtures/cuckoo/full.txt")),
    ("full1", include_str!("../../../tests/fixtures/cuckoo/full1.txt")),
    ("odd", include_str!("../../../tests/fixtures/cuckoo/odd.txt")),
    ("default", include_str!("../../../tests/fixtures/cuckoo/default.txt")),
];

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

fn unhex(s: &str) -> Vec<u8> {
    (0..s.len()).step_by(2).map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap()).collect()
}

fn int(v: i64) -> String {
    format!("i:{v}")
}

fn text(s: &str) -> String {
    format!("h:{}", hex(s.as_bytes()))
}

fn insert_reply(r: Result<Insert, crate::filter::FilterError>, multi: bool) -> String {
    match r {
        Ok(Insert::Inserted) => int(1),
        Ok(Insert::Exists) => int(0),
        Ok(Insert::Full) if multi => int(-1),
        Ok(Insert::Full) => "e:Filter is full".into(),
        Err(e) => panic!("unexpected {e:?}"),
    }
}

/// One typed field of an RDB module value.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Field {
    U64(u64),
    Bytes(Vec<u8>),
}

/// A `FieldWriter` that keeps the typed fields (a newtype: an impl on `Vec<Field>` would make
/// `Vec::new()` ambiguous for every other writer in the crate's tests).
#[derive(Default)]
struct Fields(Vec<Field>);

impl FieldWriter for Fields {
    fn u64(&mut self, v: u64) {
        self.0.push(Field::U64(v));
    }
    fn f64(&mut self, _: f64) {
        unreachable!("cuckoo filters store no doubles")
    }
    fn bytes(&mut self, b: &[u8]) {
        self.0.push(Field::Bytes(b.to_vec()));
    }
}

/// Reads the value of a `DUMP` payload of a module type: its module id (returned with the
/// encoding version it carries) and its typed fields (opcodes 2 = unsigned, 5 = string,
/// 0 = end), decompressing LZF strings as Redis writes them.
fn parse_dump(p: &[u8]) -> (i32, Vec<Field>) {
    struct R<'a>(&'a [u8], usize);
    impl R<'_> {
        fn byte(&mut self) -> u8 {
            self.1 += 1;
            self.0[self.1 - 1]
        }
        fn be(&mut self, n: usize) -> u64 {
            (0..n).fold(0, |a, _| a << 8 | u64::from(self.byte()))
        }
        /// `rdbLoadLen`: `(value, is_encoded)`.
        fn len(&mut self) -> (u64, bool) {
            let b = self.byte();
            match b >> 6 {
                0 => (u64::from(b & 0x3f), false),
                1 => (u64::from(b & 0x3f) << 8 | u64::from(self.byte()), false),
                2 if b == 0x80 => (self.be(4), false),
                2 if b == 0x81 => (self.be(8), false),
                3 => (u64::from(b & 0x3f), true),
                _ => panic!("bad length byte {b:#x}"),
            }
        }
        fn string(&mut self) -> Vec<u8> {
            let (n, encoded) = self.len();
            if !encoded {
                let s = self.0[self.1..self.1 + n as usize].to_vec();
                self.1 += n as usize;
                return s;
            }
            match n {
                0 => (self.byte() as i8).to_string().into_bytes(),
                1 => (i16::from_le_bytes([self.byte(), self.byte()])).to_string().into_bytes(),
                2 => {
                    let v = [self.byte(), self.byte(), self.byte(), self.byte()];
                    i32::from_le_bytes(v).to_string().into_bytes()
                }
                3 => {
                    let clen = self.len().0 as usize;
                    let ulen = self.len().0 as usize;
                    let c = &self.0[self.1..self.1 + clen];
                    self.1 += clen;
                    lzf_decompress(c, ulen)
                }
                _ => panic!("bad string encoding {n}"),
            }
        }
    }
    let mut r = R(p, 0);
    assert_eq!(r.byte(), 7, "RDB_TYPE_MODULE_2");
    let (id, _) = r.len();
    let mut fields = Vec::new();
    loop {
        match r.len().0 {
            0 => break,
            2 => fields.push(Field::U64(r.len().0)),
            5 => fields.push(Field::Bytes(r.string())),
            op => panic!("unexpected module opcode {op}"),
        }
    }
    assert_eq!(r.1 + 10, p.len(), "RDB version and CRC64 follow the value");
    ((id & 1023) as i32, fields)
}

/// Redis' `lzf_decompress`.
fn lzf_decompress(input: &[u8], ulen: usize) -> Vec<u8> {
    let mut out = Vec::with_capacity(ulen);
    let mut i = 0;
    while i < input.len() {
        let ctrl = usize::from(input[i]);
        i += 1;
        if ctrl < 32 {
            out.extend_from_slice(&input[i..i + ctrl + 1]);
            i += ctrl + 1;
        } else {
            let mut len = ctrl >> 5;
            if len == 7 {
                len += usize::from(input[i]);
                i += 1;
            }
            let back = ((ctrl & 0x1f) << 8) + usize::from(input[i]) + 1;
            i += 1;
            let start = out.len() - back;
            for k in 0..len + 2 {
                out.push(out[start + k]);
            }
        }
    }
    assert_eq!(out.len(), ulen);
    out
}

/// Reads `FieldWriter` fields back as a `FieldReader` source.
fn as_slice_bytes(fields: &[Field]) -> Vec<u8> {
    let mut buf = Vec::new();
    for f in fields {
        match f {
            Field::U64(v) => FieldWriter::u64(&mut buf, *v),
            Field::Bytes(b) => FieldWriter::bytes(&mut buf, b),
        }
    }
    buf
}

struct Replay {
    keys: HashMap<String, CuckooFilter>,
    /// Items each key answered 1 for on an add, minus the deletes of them.
    added: HashMap<String, Vec<String>>,
}

impl Replay {
    fn filter(&mut self, key: &str) -> &mut CuckooFilter {
        self.keys.entry(key.to_string()).or_insert_with(|| {
            CuckooFilter::new(&CuckooParams::default(), FingerprintWidth::W8, &Unlimited).unwrap()
        })
    }

    fn run(&mut self, args: &[&str]) -> String {
        let (cmd, key) = (args[0], args[1]);
        match cmd {
            "CF.RESERVE" => {
                let opt = |name: &str, default: u16| {
                    args.iter()
                        .position(|a| *a == name)
                        .map_or(default, |i| args[i + 1].parse().unwrap())
                };
                let p = CuckooParams::new(
                    args[2].parse().unwrap(),
                    opt("BUCKETSIZE", 2),
                    opt("MAXITERATIONS", 20),
                    opt("EXPANSION", 1),
                )
                .unwrap();
                let f = CuckooFilter::new(&p, FingerprintWidth::W8, &Unlimited).unwrap();
                self.keys.insert(key.to_string(), f);
                text("OK")
            }
            "CF.ADD" | "CF.ADDNX" => {
                let r = self.filter(key).add(args[2].as_bytes(), cmd == "CF.ADDNX", 32, &Unlimited);
                if r == Ok(Insert::Inserted) {
                    self.added.entry(key.into()).or_default().push(args[2].into());
                }
                insert_reply(r, false)
            }
            "CF.INSERT" | "CF.INSERTNX" => {
                let items = &args[3..];
                let mut out = Vec::new();
                let nx = cmd == "CF.INSERTNX";
                self.filter(key).insert_many(items, nx, 32, &Unlimited, &mut out).unwrap();
                for (item, r) in items.iter().zip(&out) {
                    if *r == Ok(Insert::Inserted) {
                        self.added.entry(key.into()).or_default().push(item.to_string());
                    }
                }
                let replies: Vec<String> = out.into_iter().map(|r| insert_reply(r, true)).collect();
                format!("a:{}", replies.join(" "))
            }
            "CF.DEL" => {
                let deleted = self.filter(key).delete(args[2].as_bytes());
                if deleted {
                    let added = self.added.entry(key.into()).or_default();
                    if let Some(i) = added.iter().position(|a| a == args[2]) {
                        added.swap_remove(i);
                    }
                }
                int(i64::from(deleted))
            }
            "CF.COUNT" => {
                let f = self.filter(key);
                let ours = f.count(args[2].as_bytes());
                let CuckooFilter::W8(c) = f else { unreachable!() };
                let theirs = c.count_as_redisbloom(args[2].as_bytes());
                assert!(ours <= theirs && (ours == theirs || ours * 2 >= theirs));
                int(theirs as i64)
            }
            "CF.MEXISTS" => {
                let mut out = Vec::new();
                self.filter(key).contains_many(&args[2..], &mut out);
                for (item, &e) in args[2..].iter().zip(&out) {
                    assert_eq!(e, self.filter(key).contains(item.as_bytes()));
                }
                let v: Vec<String> = out.into_iter().map(|b| int(i64::from(b))).collect();
                format!("a:{}", v.join(" "))
            }
            "CF.COMPACT" => {
                self.filter(key).compact(true);
                text("OK")
            }
            "CF.INFO" => {
                let i = self.filter(key).info();
                let rows = [
                    ("Size", i.size),
                    ("Number of buckets", i.buckets),
                    ("Number of filters", i.filters),
                    ("Number of items inserted", i.items),
                    ("Number of items deleted", i.deletes),
                    ("Bucket size", i.bucket_size),
                    ("Expansion rate", i.expansion),
                    ("Max iterations", i.max_iterations),
                ];
                let v: Vec<String> =
                    rows.iter().map(|(k, v)| format!("{} {}", text(k), int(*v as i64))).collect();
                format!("a:{}", v.join(" "))
            }
            "CF.DEBUG" => text(&self.filter(key).debug_string()),
            "CF.SCANDUMP" => {
                let it: u64 = args[2].parse().unwrap();
                match self.filter(key).scandump(it) {
                    ScanStep::Header(h) => format!("a:i:1 h:{}", hex(&h)),
                    ScanStep::Chunk { next, data } => format!("a:i:{next} h:{}", hex(&data)),
                    ScanStep::End => "a:i:0 nil".into(),
                }
            }
            "DUMP" => format!("dump of {key}"),
            _ => panic!("unknown command {cmd}"),
        }
    }

    /// Checks a `DUMP` payload of RedisBloom against this core's state of the key.
    fn check_dump(&mut self, key: &str, payload: &[u8]) {
        let f = self.filter(key).clone();
        let (encver, fields) = parse_dump(payload);
        assert_eq!(encver, REDISBLOOM_ENCODING_VERSION);
        let mut ours = Fields::default();
        f.write_rdb_redisbloom(&mut ours).unwrap();
        assert_eq!(ours.0, fields, "RDB fields of {key}");
        let buf = as_slice_bytes(&fields);
        let back = CuckooFilter::read_rdb(&mut SliceReader::new(&buf), encver, &Unlimited).unwrap();
        assert_eq!(back, f);
        // And this module's own encoding and the dump stream round-trip it too.
        let mut native = Vec::<u8>::new();
        f.write_rdb(&mut native);
        let again = CuckooFilter::read_rdb(
            &mut SliceReader::new(&native),
            super::codec::RDB_ENCODING_VERSION,
            &Unlimited,
        )
        .unwrap();
        assert_eq!(again, f);
        assert_eq!(restore_by_chunks(&f), f);
        // Every item that was added and not deleted is still there.
        for item in self.added.get(key).into_iter().flatten() {
            assert!(f.contains(item.as_bytes()), "{key} lost {item}");
        }
    }
}

/// `f` copied as SCANDUMP → LOADCHUNK copies it (header, then chunks, whatever the item count).
pub(super) fn restore_by_chunks(f: &CuckooFilter) -> CuckooFilter {
    let header = f.header().encode();
    let mut g = Header::parse(&header).unwrap().allocate(&Unlimited).unwrap();
    let mut it = 1;
    while let Some((next, data)) = f.chunk(it) {
        g.load_chunk(next, &data).unwrap();
        it = next;
    }
    g
}

#[test]
fn redisbloom_replies_chunks_and_dumps_are_reproduced() {
    for (name, fixture) in FIXTURES {
        let mut replay = Replay { keys: HashMap::new(), added: HashMap::new() };
        let mut lines = fixture.lines().filter(|l| !l.starts_with('#'));
        let mut commands = 0;
        while let Some(cmd) = lines.next() {
            let args: Vec<&str> = cmd.strip_prefix("> ").unwrap().split(' ').collect();
            let expected = lines.next().unwrap().strip_prefix("< ").unwrap();
            commands += 1;
            if args[0] == "DUMP" {
                replay.check_dump(args[1], &unhex(expected.strip_prefix("h:").unwrap()));
                continue;
            }
            let got = replay.run(&args);
            assert_eq!(got, expected, "{name}: {cmd}");
        }
        assert!(commands > 20, "{name}: fixture too short");
    }
}

/// The chunk iterators RedisBloom hands out for a 64 MiB sub-filter (16 MiB chunks).
#[test]
fn chunk_iterators_match_redisbloom_for_large_sub_filters() {
    let fixture = include_str!("../../../tests/fixtures/cuckoo/chunks.txt");
    let p = CuckooParams::new(40_000_000, 2, 20, 2).unwrap();
    let mut f = CuckooFilter::new(&p, FingerprintWidth::W8, &Unlimited).unwrap();
    f.add(b"x", false, 32, &Unlimited).unwrap();
    let mut rows = 0;
    for line in fixture.lines().filter(|l| !l.starts_with('#')) {
        let v: Vec<u64> = line.split(' ').map(|x| x.parse().unwrap()).collect();
        let ScanStep::Chunk { next, data } = f.scandump(v[0]) else { panic!("{line}") };
        assert_eq!((next, data.len() as u64), (v[1], v[2]), "{line}");
        rows += 1;
    }
    assert_eq!(rows, 4);
    assert_eq!(f.scandump(67_108_865), ScanStep::End);
}

/// The transcript of reference/redisbloom-cf.md: `CF.SCANDUMP c 0` of a 1000-capacity
/// filter with 4 items and 1 delete.
#[test]
fn reference_header_bytes() {
    let p = CuckooParams::new(1000, 2, 20, 1).unwrap();
    let mut f = CuckooFilter::new(&p, FingerprintWidth::W8, &Unlimited).unwrap();
    for item in ["a", "a", "b", "q"] {
        f.add(item.as_bytes(), false, 32, &Unlimited).unwrap();
    }
    f.add(b"w", false, 32, &Unlimited).unwrap();
    assert!(f.delete(b"a"));
    let ScanStep::Header(h) = f.scandump(0) else { panic!() };
    assert_eq!(
        h,
        b"\x04\x00\x00\x00\x00\x00\x00\x00\x00\x02\x00\x00\x00\x00\x00\x00\x01\x00\x00\x00\x00\x00\x00\x00\x01\x00\x00\x00\x00\x00\x00\x00\x02\x00\x14\x00\x01\x00"
    );
    assert_eq!(f.memory_usage(), 1080);
    assert_eq!(
        f.debug_string(),
        "bktsize:2 buckets:512 items:4 deletes:1 filters:1 max_iterations:20 expansion:1"
    );
}
