//! valkey-bloom's own data (tests/fixtures/valkey-bloom: made by valkey-bloom 1.0 on Valkey
//! 8.1 and 9.1) decodes here and answers exactly as valkey-bloom did: every added item
//! present, each of 10,000 never-added items as valkey-bloom answered it (false positives
//! included), the same counts and sizes; rebuilt from scratch by adding the same items, each
//! object is the one valkey-bloom grew, bit for bit.

use std::path::{Path, PathBuf};

use super::object::{Settings, ValkeyBloom};
use super::{ValkeyError, payload, rdb, sizing};
use crate::filter::FilterError;
use crate::filter::fields::FieldReader;
use crate::filter::guard::{MaxFilterBytes, Unlimited};

const SERVERS: [&str; 2] = ["valkey-8.1", "valkey-9.1"];
/// valkey-bloom's default `bloom-memory-usage-limit`.
const LIMIT: u64 = 128 << 20;

fn dir(server: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/valkey-bloom").join(server)
}

/// One line of `expected.txt`: what valkey-bloom answered for a key.
struct Expected {
    key: String,
    added: usize,
    card: u64,
    absent: usize,
    false_positives: Vec<usize>,
    info: Vec<(String, String)>,
}

impl Expected {
    fn info(&self, name: &str) -> &str {
        &self.info.iter().find(|(n, _)| n == name).unwrap_or_else(|| panic!("{name}")).1
    }

    /// The items valkey-bloom was given, in order.
    fn items(&self) -> Vec<Vec<u8>> {
        let first = (self.key == "autocreated").then(|| b"autocreated:item:first".to_vec());
        let rest = (0..self.added).map(|i| format!("{}:item:{i}", self.key).into_bytes());
        first.into_iter().chain(rest).collect()
    }

    /// Checks every answer, count and size of `bloom` against valkey-bloom's.
    fn check(&self, bloom: &ValkeyBloom, exact_size: bool) {
        let key = &self.key;
        for item in self.items() {
            assert!(bloom.contains(&item), "{key}: an added item is missing");
        }
        let mut fp = Vec::new();
        for i in 0..self.absent {
            if bloom.contains(format!("{key}:absent:{i}").as_bytes()) {
                fp.push(i);
            }
        }
        assert_eq!(fp, self.false_positives, "{key}: absent items answer otherwise");
        assert_eq!(bloom.items(), self.card, "{key}");
        assert_eq!(bloom.capacity().to_string(), self.info("Capacity"), "{key}");
        assert_eq!(bloom.layers().len().to_string(), self.info("Number of filters"), "{key}");
        assert_eq!(bloom.settings().error.to_string(), self.info("Error rate"), "{key}");
        if exact_size {
            assert_eq!(bloom.size().to_string(), self.info("Size"), "{key}");
        }
        let s = bloom.settings();
        if s.expansion == 0 {
            assert_eq!(self.info("Expansion rate"), "nil");
            assert!(bloom.max_scaled_capacity(LIMIT).is_none());
        } else {
            assert_eq!(s.expansion.to_string(), self.info("Expansion rate"), "{key}");
            assert_eq!(s.tightening.to_string(), self.info("Tightening ratio"), "{key}");
            let max = bloom.max_scaled_capacity(LIMIT).unwrap().unwrap();
            assert_eq!(max.to_string(), self.info("Max scaled capacity"), "{key}");
        }
    }
}

fn expected(server: &str) -> Vec<Expected> {
    let text = std::fs::read_to_string(dir(server).join("expected.txt")).unwrap();
    text.lines()
        .map(|line| {
            let f: Vec<&str> = line.split('\t').collect();
            Expected {
                key: f[0].to_string(),
                added: f[1].parse().unwrap(),
                card: f[2].parse().unwrap(),
                absent: f[3].parse().unwrap(),
                false_positives: f[4].split_whitespace().map(|n| n.parse().unwrap()).collect(),
                info: f[5]
                    .split(';')
                    .map(|kv| {
                        let (k, v) = kv.split_once('=').unwrap();
                        (k.to_string(), v.to_string())
                    })
                    .collect(),
            }
        })
        .collect()
}

fn read(server: &str, key: &str, file: &str) -> Option<Vec<u8>> {
    std::fs::read(dir(server).join(key).join(file)).ok()
}

/// The fields of a `DUMP` payload of a module value, as Redis' typed loads return them.
enum Field {
    U64(u64),
    F64(f64),
    Bytes(Vec<u8>),
}

struct Fields(std::collections::VecDeque<Field>);

impl FieldReader for Fields {
    type Bytes = Vec<u8>;
    fn u64(&mut self) -> Result<u64, FilterError> {
        match self.0.pop_front() {
            Some(Field::U64(v)) => Ok(v),
            _ => Err(FilterError::BadData),
        }
    }
    fn f64(&mut self) -> Result<f64, FilterError> {
        match self.0.pop_front() {
            Some(Field::F64(v)) => Ok(v),
            _ => Err(FilterError::BadData),
        }
    }
    fn bytes(&mut self) -> Result<Vec<u8>, FilterError> {
        match self.0.pop_front() {
            Some(Field::Bytes(v)) => Ok(v),
            _ => Err(FilterError::BadData),
        }
    }
}

/// A reader of RDB encodings: lengths, strings (plain or LZF) and module opcodes.
struct Rdb<'a>(&'a [u8]);

impl Rdb<'_> {
    fn byte(&mut self) -> u8 {
        let b = self.0[0];
        self.0 = &self.0[1..];
        b
    }
    fn take(&mut self, n: usize) -> Vec<u8> {
        let (h, t) = self.0.split_at(n);
        self.0 = t;
        h.to_vec()
    }
    /// A length, or `(encoding, true)` for a special string encoding.
    fn len(&mut self) -> (u64, bool) {
        let t = self.byte();
        match t >> 6 {
            0 => (u64::from(t & 0x3f), false),
            1 => ((u64::from(t & 0x3f) << 8) | u64::from(self.byte()), false),
            2 if t == 0x80 => {
                (u64::from(u32::from_be_bytes(self.take(4).try_into().unwrap())), false)
            }
            2 if t == 0x81 => (u64::from_be_bytes(self.take(8).try_into().unwrap()), false),
            _ => (u64::from(t & 0x3f), true),
        }
    }
    fn string(&mut self) -> Vec<u8> {
        match self.len() {
            (n, false) => self.take(n as usize),
            (3, true) => {
                let (clen, _) = self.len();
                let (ulen, _) = self.len();
                let c = self.take(clen as usize);
                lzf_decompress(&c, ulen as usize)
            }
            other => panic!("string encoding {other:?}"),
        }
    }
    /// The module value's fields up to its EOF opcode; returns the module id's encver.
    fn module_value(&mut self) -> (u64, Fields) {
        let (id, _) = self.len();
        let mut fields = std::collections::VecDeque::new();
        loop {
            match self.len().0 {
                0 => break,
                2 => fields.push_back(Field::U64(self.len().0)),
                4 => fields
                    .push_back(Field::F64(f64::from_le_bytes(self.take(8).try_into().unwrap()))),
                5 => fields.push_back(Field::Bytes(self.string())),
                op => panic!("opcode {op}"),
            }
        }
        (id, Fields(fields))
    }
}

fn lzf_decompress(src: &[u8], out_len: usize) -> Vec<u8> {
    let (mut out, mut i) = (Vec::with_capacity(out_len), 0);
    while i < src.len() {
        let ctrl = usize::from(src[i]);
        i += 1;
        if ctrl < 32 {
            out.extend_from_slice(&src[i..i + ctrl + 1]);
            i += ctrl + 1;
        } else {
            let mut len = ctrl >> 5;
            if len == 7 {
                len += usize::from(src[i]);
                i += 1;
            }
            let back = ((ctrl & 0x1f) << 8) + usize::from(src[i]) + 1;
            i += 1;
            for _ in 0..len + 2 {
                out.push(out[out.len() - back]);
            }
        }
    }
    assert_eq!(out.len(), out_len);
    out
}

/// The module id of type `bloomfltr`, encoding version 1 (formats.md).
const MODULE_ID: u64 = 0x6e5a_2899_f96d_ac01;

/// Decodes a `DUMP` payload of a `bloomfltr` value through the RDB reader.
fn restore(dump: &[u8], guard: &dyn crate::filter::AllocGuard) -> Result<ValkeyBloom, ValkeyError> {
    let mut r = Rdb(dump);
    assert_eq!(r.byte(), 7, "RDB_TYPE_MODULE_2");
    let (id, mut fields) = r.module_value();
    assert_eq!(id, MODULE_ID);
    assert_eq!(r.0.len(), 10, "RDB version and CRC64 follow");
    rdb::read(&mut fields, (id & 1023) as i32, guard)
}

#[test]
fn every_bf_load_payload_answers_as_valkey_bloom_did() {
    let mut checked = 0;
    for server in SERVERS {
        for e in expected(server) {
            let Some(p) = read(server, &e.key, "bfload.bin") else { continue };
            let bloom = payload::decode(&p, &Unlimited).unwrap();
            e.check(&bloom, true);
            assert_eq!(payload::encode(&bloom), p, "{}: the payload written again", e.key);
            checked += 1;
        }
    }
    assert_eq!(checked, 16);
}

#[test]
fn every_dump_answers_as_valkey_bloom_did_and_holds_the_payloads_object() {
    let mut checked = 0;
    for server in SERVERS {
        for e in expected(server) {
            let Some(d) = read(server, &e.key, "dump.bin") else { continue };
            let bloom = restore(&d, &Unlimited).unwrap();
            e.check(&bloom, true);
            if let Some(p) = read(server, &e.key, "bfload.bin") {
                assert_eq!(bloom, payload::decode(&p, &Unlimited).unwrap(), "{}", e.key);
            }
            checked += 1;
        }
    }
    assert_eq!(checked, 17, "9 keys from 8.1 (with the 16 MB one), 8 from 9.1");
}

/// Adding the same items in the same order to a new object of the same settings and first
/// capacity builds exactly the object valkey-bloom built: the same layers (sizes, probes,
/// capacities, items) and the same bits. Growth, sizing and hashing all agree.
#[test]
fn adding_the_items_again_builds_valkey_blooms_object_bit_for_bit() {
    let mut checked = 0;
    for server in SERVERS {
        for e in expected(server) {
            let Some(p) = read(server, &e.key, "bfload.bin") else { continue };
            let theirs = payload::decode(&p, &Unlimited).unwrap();
            let first = theirs.layers()[0].capacity();
            let mut ours =
                ValkeyBloom::new(*theirs.settings(), first, &MaxFilterBytes(LIMIT)).unwrap();
            for item in e.items() {
                ours.add(&item, &MaxFilterBytes(LIMIT)).unwrap();
            }
            assert_eq!(ours, theirs, "{server} {}", e.key);
            checked += 1;
        }
    }
    assert_eq!(checked, 16);
}

fn scale1() -> ValkeyBloom {
    payload::decode(&read("valkey-8.1", "scale1", "bfload.bin").unwrap(), &Unlimited).unwrap()
}

#[test]
fn a_full_nonscaling_object_refuses_new_items_and_changes_nothing() {
    let p = read("valkey-8.1", "nonscaling", "bfload.bin").unwrap();
    let mut b = payload::decode(&p, &Unlimited).unwrap();
    let mut refused = 0;
    for i in 0..100 {
        let item = format!("more:{i}");
        let before = b.clone();
        match b.add(item.as_bytes(), &Unlimited) {
            Ok(added) => assert!(added, "a present item changes nothing and is not refused"),
            Err(e) => {
                assert_eq!(e, ValkeyError::NonScalingFull);
                assert_eq!(b, before);
                refused += 1;
            }
        }
        if b.items() == 5000 {
            assert!(b.refuses_new_items(&Unlimited));
        }
    }
    assert!(refused > 90, "{refused}");
}

#[test]
fn growth_stops_at_the_memory_limit_as_valkey_blooms_does() {
    let mut b = scale1();
    // 800 of 1000 items: the first layer takes 200 more; the second layer (2000 items at
    // 0.005: 2757 bytes) needs the object at 1463 + 208 + 2757 bytes.
    let tight = MaxFilterBytes(1463 + 208 + 2757 - 1);
    let mut n = 0;
    let err = loop {
        match b.add(format!("grow:{n}").as_bytes(), &tight) {
            Ok(_) => n += 1,
            Err(e) => break e,
        }
    };
    assert!(matches!(err, ValkeyError::Alloc(FilterError::FilterLimit { .. })), "{err:?}");
    assert_eq!((b.layers().len(), b.items()), (1, 1000));
    assert!(b.refuses_new_items(&tight));
    assert!(!b.refuses_new_items(&MaxFilterBytes(1463 + 208 + 2757)));
}

#[test]
fn the_memory_limit_is_asked_before_a_payload_is_allocated() {
    let p = read("valkey-8.1", "scale8", "bfload.bin").unwrap();
    let size: u64 = expected("valkey-8.1")
        .iter()
        .find(|e| e.key == "scale8")
        .map(|e| e.info("Size").parse().unwrap())
        .unwrap();
    assert!(payload::decode(&p, &MaxFilterBytes(size)).is_ok());
    let err = payload::decode(&p, &MaxFilterBytes(size - 1)).unwrap_err();
    assert!(matches!(err, ValkeyError::Alloc(FilterError::FilterLimit { .. })), "{err:?}");
}

fn settings() -> Settings {
    *scale1().settings()
}

#[test]
fn new_objects_refuse_what_valkey_bloom_refuses() {
    let s = settings();
    let new = |s: Settings, c| ValkeyBloom::new(s, c, &MaxFilterBytes(LIMIT)).map(|_| ());
    assert_eq!(new(s, 0), Err(ValkeyError::BadCapacity));
    assert_eq!(new(s, 1 << 63), Err(ValkeyError::BadCapacity));
    for e in [0.0, 1.0, -0.1, f64::NAN, f64::INFINITY] {
        assert_eq!(new(Settings { error: e, ..s }, 10), Err(ValkeyError::ErrorRateRange));
        assert_eq!(new(Settings { tightening: e, ..s }, 10), Err(ValkeyError::ErrorRateRange));
    }
    // BF.RESERVE k 0.000000001 100000000: "operation exceeds bloom object memory limit".
    let tiny = Settings { error: 1e-9, ..s };
    assert!(matches!(new(tiny, 100_000_000), Err(ValkeyError::Alloc(_))));
    // Past this module's largest layer, even with no limit: refused before allocation.
    let err = ValkeyBloom::new(tiny, i64::MAX as u64, &Unlimited).unwrap_err();
    assert_eq!(err, ValkeyError::TooLarge);
    let fixed = Settings { is_seed_random: false, ..s };
    assert_eq!(new(fixed, 10), Err(ValkeyError::Decode));
}

#[test]
fn scale_out_refuses_an_error_that_underflows_and_a_capacity_past_i64() {
    let s = Settings { tightening: 1e-300, expansion: 1, ..settings() };
    let mut b = ValkeyBloom::new(s, 1, &Unlimited).unwrap();
    assert_eq!(b.add(b"a", &Unlimited), Ok(true));
    assert_eq!(b.add(b"b", &Unlimited), Ok(true));
    assert_eq!(b.layers().len(), 2);
    assert_eq!(b.add(b"c", &Unlimited), Err(ValkeyError::FalsePositiveZero));
    assert_eq!(sizing::next_capacity(1 << 31, u32::MAX), Ok((1 << 31) * u64::from(u32::MAX)));
    assert_eq!(sizing::next_capacity(1 << 32, u32::MAX), Err(ValkeyError::BadCapacity));
    // A layer past the limit is refused before anything is allocated.
    let s = Settings { expansion: u32::MAX, ..settings() };
    let limit = MaxFilterBytes(LIMIT);
    let mut b = ValkeyBloom::new(s, 1, &limit).unwrap();
    assert_eq!(b.add(b"a", &limit), Ok(true));
    assert!(matches!(
        b.add(b"b", &limit),
        Err(ValkeyError::Alloc(FilterError::FilterLimit { .. }))
    ));
    assert_eq!(b.layers().len(), 1);
}

/// Every truncation and every single-byte change of a payload either is refused or gives an
/// object that answers, grows and round-trips: no panic, no unbounded allocation.
#[test]
fn mutated_payloads_are_refused_or_sound() {
    let p = read("valkey-8.1", "scale3", "bfload.bin").unwrap();
    let probe = |bytes: &[u8]| {
        if let Ok(mut b) = payload::decode(bytes, &MaxFilterBytes(LIMIT)) {
            let _ = b.contains(b"x");
            let again = payload::encode(&b);
            assert_eq!(payload::decode(&again, &Unlimited).unwrap(), b);
            for i in 0..50 {
                let _ = b.add(format!("m:{i}").as_bytes(), &MaxFilterBytes(LIMIT));
            }
        }
    };
    for n in 0..p.len().min(400) {
        assert!(payload::decode(&p[..n], &Unlimited).is_err(), "{n} bytes");
    }
    assert!(payload::decode(&p[..p.len() - 1], &Unlimited).is_err());
    let mut longer = p.clone();
    longer.push(0);
    assert_eq!(payload::decode(&longer, &Unlimited), Err(ValkeyError::Decode));
    // Every header byte and the first bytes of each blob header, each to a few values.
    let mut offsets: Vec<usize> = (0..120).collect();
    offsets.extend((1230..1300).chain(4000..4050));
    for &at in &offsets {
        for v in [0u8, 1, 2, 0x7f, 0x80, 0xff] {
            let mut m = p.clone();
            m[at] = v;
            probe(&m);
        }
    }
    assert_eq!(payload::decode(&[], &Unlimited), Err(ValkeyError::Decode));
    assert_eq!(payload::decode(&[2], &Unlimited), Err(ValkeyError::UnsupportedVersion));
}

/// A forged layer count is no reason to allocate: a payload claiming 2^62 layers and holding
/// none is refused at once.
#[test]
fn a_forged_layer_count_allocates_nothing() {
    let mut p = payload::encode(&scale1());
    p[30..38].copy_from_slice(&(1u64 << 62).to_le_bytes());
    assert_eq!(payload::decode(&p, &Unlimited), Err(ValkeyError::Decode));
}

#[test]
fn a_fixed_seed_object_must_carry_the_fixed_seed() {
    let mut p = payload::encode(&scale1());
    assert_eq!(p[21], 1, "is_seed_random");
    p[21] = 0;
    assert_eq!(payload::decode(&p, &Unlimited), Err(ValkeyError::Decode));
    let fixed = read("valkey-8.1", "fixedseed", "bfload.bin").unwrap();
    let b = payload::decode(&fixed, &Unlimited).unwrap();
    assert!(!b.settings().is_seed_random && b.settings().seed.is_fixed());
}

#[test]
fn layers_with_different_seeds_or_an_older_layer_not_full_are_refused() {
    let p = read("valkey-8.1", "scale3", "bfload.bin").unwrap();
    let b = payload::decode(&p, &Unlimited).unwrap();
    // The second blob's seed starts 13 bytes into it: 38 header bytes, the first layer
    // (8 + blob + 16), then 8 + 13.
    let first_blob = 45 + b.layers()[0].bytes() as usize;
    let second_seed = 38 + 8 + first_blob + 16 + 8 + 13;
    let mut m = p.clone();
    m[second_seed] ^= 1;
    assert_eq!(payload::decode(&m, &Unlimited), Err(ValkeyError::Decode));
    // The first layer's items (right after its blob) one short of its capacity.
    let items_at = 38 + 8 + first_blob;
    let mut m = p.clone();
    m[items_at] = m[items_at].wrapping_sub(1);
    assert_eq!(payload::decode(&m, &Unlimited), Err(ValkeyError::Decode));
}
