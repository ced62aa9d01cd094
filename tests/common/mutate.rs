//! Mutators for the hostile-input tests (`tests/hostile_input.rs`): the seeded generator that
//! drives them (`SCALEBLOOM_FUZZ_SEED` replays a run), the filters they start from
//! ([`Source`], [`sources`]), and the mutations themselves — module-aware field patches and
//! byte-level changes of `DUMP` payloads ([`mutated_payload`]), hostile `BF.LOADCHUNK` chunks
//! ([`hostile_chunk`]) and headers ([`mutated_header`]).

use super::hostile::Hostile;
use super::*;

/// The run's generator: SCALEBLOOM_FUZZ_SEED if set, else a fresh seed. The seed is printed
/// (test output is shown when a test fails) and repeated in every failure message.
pub fn fuzz_rng(test: &str) -> (Rng, u64) {
    let seed = match std::env::var("SCALEBLOOM_FUZZ_SEED") {
        Ok(s) => s.trim().parse::<u64>().expect("SCALEBLOOM_FUZZ_SEED must be an unsigned integer"),
        Err(_) => {
            let nanos = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map(|d| d.as_nanos() as u64)
                .unwrap_or(0);
            nanos ^ (u64::from(std::process::id()) << 32)
        }
    };
    eprintln!("{test}: replay with SCALEBLOOM_FUZZ_SEED={seed}");
    // xorshift never leaves state 0.
    (Rng(if seed == 0 { 0x9e37_79b9_7f4a_7c15 } else { seed }), seed)
}

pub trait RngExt {
    fn pick<'a, T>(&mut self, from: &'a [T]) -> &'a T;
    /// True with probability `percent`/100.
    fn chance(&mut self, percent: u64) -> bool;
    fn bytes(&mut self, n: usize) -> Vec<u8>;
    /// A position in `0..len` (0 when `len` is 0).
    fn pos(&mut self, len: usize) -> usize;
}

impl RngExt for Rng {
    fn pick<'a, T>(&mut self, from: &'a [T]) -> &'a T {
        &from[self.below(from.len() as u64) as usize]
    }
    fn chance(&mut self, percent: u64) -> bool {
        self.below(100) < percent
    }
    fn bytes(&mut self, n: usize) -> Vec<u8> {
        (0..n).map(|_| self.next() as u8).collect()
    }
    fn pos(&mut self, len: usize) -> usize {
        if len == 0 { 0 } else { self.below(len as u64) as usize }
    }
}

/// Byte values that mean something in the RDB encoding: small lengths, the 14-bit, 32-bit and
/// 64-bit length markers, encoded-string markers, module opcodes, extremes.
pub const INTERESTING_BYTES: &[u8] =
    &[0x00, 0x01, 0x02, 0x04, 0x05, 0x07, 0x3f, 0x40, 0x7f, 0x80, 0x81, 0xc0, 0xc3, 0xfe, 0xff];

/// 64-bit values at the edges of every check the decoders make.
pub const INTERESTING_U64: &[u64] = &[
    0,
    1,
    2,
    63,
    64,
    65,
    0x7f,
    0x80,
    0xff,
    1075, // the most layers (and hashes) of a chain in RedisBloom's scheme
    1076,
    0xffff,
    u32::MAX as u64,
    1 << 32,
    1 << 40,
    1 << 43,
    i64::MAX as u64,
    1 << 63,
    u64::MAX,
];

/// One filter of the fixture's server: its payload, parsed fields, dump chunks and digest.
pub struct Source {
    pub key: String,
    pub payload: Vec<u8>,
    pub parsed: ModulePayload,
    /// `BF.SCANDUMP` pairs, header first: what a client passes to BF.LOADCHUNK.
    pub chunks: Vec<(i64, Vec<u8>)>,
    pub digest: String,
    /// Bytes of all bit arrays.
    pub total: u64,
}

/// Shapes beyond the fixture's `src`: (key, RESERVE arguments, items added).
pub const SHAPES: &[(&str, &[&str], usize)] = &[
    ("shape:scaling", &["0.01", "50"], 400), // 4 layers: 50, 100, 200, 400
    ("shape:nonscaling", &["0.001", "100", "NONSCALING"], 60),
    ("shape:tiny", &["0.5", "1"], 0), // one 64-bit layer
    ("shape:expansion1", &["0.1", "2", "EXPANSION", "1"], 9), // 5 layers of 2
    ("shape:wide", &["0.01", "10", "EXPANSION", "8"], 200), // 10, 80, 640
    ("shape:empty", &["0.001", "1000"], 0), // zeros: DUMP compresses it (LZF)
    ("shape:counting4", &["0.01", "50", "COUNTING", "4"], 400), // 4-bit counters, 4 layers
    ("shape:counting8", &["0.001", "100", "NONSCALING", "COUNTING", "8"], 60),
];

/// Creates the shapes (they join the bystanders) and reads every source's DUMP and SCANDUMP.
pub fn sources(fx: &mut Hostile) -> Vec<Source> {
    for (key, args, n) in SHAPES {
        let mut reserve = vec!["BF.RESERVE", key];
        reserve.extend_from_slice(args);
        fx.conn.ok(&reserve);
        if *n > 0 {
            fx.conn.madd(key, &items(key, *n));
        }
        fx.add_bystander(key);
    }
    let keys = std::iter::once("src").chain(SHAPES.iter().map(|s| s.0));
    keys.map(|key| {
        let payload = fx.conn.cmd(&["DUMP", key]).as_bytes().to_vec();
        let parsed =
            ModulePayload::parse(&payload).unwrap_or_else(|e| panic!("parse DUMP {key}: {e}"));
        let chunks = fx.conn.scandump_all(key);
        let total = chunks[1..].iter().map(|(_, d)| d.len() as u64).sum();
        Source { key: key.to_string(), payload, parsed, chunks, digest: fx.conn.digest(key), total }
    })
    .collect()
}

/// A module-aware change to a parsed payload: a field's value, type, presence or order.
pub fn patch_fields(rng: &mut Rng, p: &mut ModulePayload) -> String {
    if p.fields.is_empty() {
        p.fields.push(Field::Uint(*rng.pick(INTERESTING_U64)));
        return "add a field to an empty payload".into();
    }
    let i = rng.pos(p.fields.len());
    match rng.below(12) {
        0 => {
            p.fields.remove(i);
            format!("drop field {i}")
        }
        1 => {
            let f = p.fields[i].clone();
            p.fields.insert(i, f);
            format!("duplicate field {i}")
        }
        2 if i + 1 < p.fields.len() => {
            p.fields.swap(i, i + 1);
            format!("swap fields {i} and {}", i + 1)
        }
        3 => {
            // The same bits under another type.
            p.fields[i] = match &p.fields[i] {
                Field::Uint(v) => Field::Double(f64::from_bits(*v)),
                Field::Double(d) => Field::Uint(d.to_bits()),
                Field::Str { bytes, .. } => Field::Uint(bytes.len() as u64),
                _ => Field::Str { bytes: rng.bytes(8), lzf: None },
            };
            format!("retype field {i}")
        }
        4 => {
            p.fields.push(Field::Uint(*rng.pick(INTERESTING_U64)));
            "append a field".into()
        }
        _ => {
            p.fields[i] = patch_value(rng, &p.fields[i]);
            format!("patch field {i}")
        }
    }
}

/// A new value for one field: edges, neighbours, doubles and halves, lengths ±1.
pub fn patch_value(rng: &mut Rng, f: &Field) -> Field {
    match f {
        Field::Uint(v) => Field::Uint(match rng.below(8) {
            0 => v.wrapping_add(1),
            1 => v.wrapping_sub(1),
            2 => v.wrapping_mul(2),
            3 => v / 2,
            4 => rng.next(),
            _ => *rng.pick(INTERESTING_U64),
        }),
        Field::Sint(v) => Field::Sint(*rng.pick(&[
            0,
            -1,
            1,
            v.wrapping_add(1),
            v.wrapping_sub(1),
            i64::MAX,
            i64::MIN,
        ])),
        Field::Double(d) => Field::Double(match rng.below(16) {
            0 => 0.0,
            1 => -0.0,
            2 => -d,
            3 => d * 2.0,
            4 => d / 2.0,
            5 => f64::from_bits(d.to_bits().wrapping_add(1)),
            6 => f64::from_bits(d.to_bits().wrapping_sub(1)),
            7 => f64::NAN,
            8 => f64::INFINITY,
            9 => f64::NEG_INFINITY,
            10 => 1.0,
            11 => 5e-324,
            12 => 1e-19,
            13 => 9e-20,
            14 => 0.999_999_999,
            _ => f64::from_bits(rng.next()),
        }),
        Field::Float(d) => Field::Float(*rng.pick(&[0.0, -d, f32::NAN, f32::INFINITY])),
        Field::Str { bytes, lzf } => {
            let mut b = bytes.clone();
            let mut lzf = *lzf;
            match rng.below(9) {
                0 => b.truncate(b.len().saturating_sub(1)),
                1 => b.truncate(b.len().saturating_sub(8)),
                2 => b.push(0),
                3 => b.extend(rng.bytes(8)),
                4 => b.clear(),
                5 => b = [b.clone(), b.clone()].concat(),
                6 if lzf.is_some() => {
                    lzf = lzf.map(|n| if rng.chance(50) { n + 1 } else { n.saturating_sub(1) })
                }
                _ if !b.is_empty() => {
                    // Same length, other content: a valid layout with other bits.
                    let p = rng.pos(b.len());
                    b[p] ^= 1 << rng.below(8);
                }
                _ => b.push(0xff),
            }
            Field::Str { bytes: b, lzf }
        }
        Field::IntStr(v, e) => Field::IntStr(v.wrapping_add(1), *e),
    }
}

/// A byte-level change to a payload body (everything before the RDB version and CRC).
pub fn mutate_bytes(rng: &mut Rng, body: &mut Vec<u8>, other: &[u8]) -> String {
    let len = body.len();
    match rng.below(10) {
        0 | 1 => {
            let n = 1 + rng.below(8);
            for _ in 0..n {
                if !body.is_empty() {
                    let p = rng.pos(body.len());
                    body[p] ^= 1 << rng.below(8);
                }
            }
            format!("flip {n} bits")
        }
        2 => {
            let p = rng.pos(len);
            if p < len {
                body[p] = *rng.pick(INTERESTING_BYTES);
            }
            format!("interesting byte at {p}")
        }
        3 => {
            // A 64-bit value, little-endian (the dump header's order) or big-endian (the
            // order of RDB's 64-bit lengths), possibly cut off at the end.
            let p = rng.pos(len);
            let v = *rng.pick(INTERESTING_U64);
            let bytes = if rng.chance(50) { v.to_le_bytes() } else { v.to_be_bytes() };
            for (k, b) in bytes.iter().enumerate() {
                if let Some(x) = body.get_mut(p + k) {
                    *x = *b;
                }
            }
            format!("u64 {v:#x} at {p}")
        }
        4 => {
            // A byte ±1: a 6-bit RDB length (most of the module's lengths) off by one.
            let p = rng.pos(len);
            if p < len {
                body[p] =
                    if rng.chance(50) { body[p].wrapping_add(1) } else { body[p].wrapping_sub(1) };
            }
            format!("byte at {p} ±1")
        }
        5 => {
            let cut = rng.pos(len);
            body.truncate(cut);
            format!("truncate at {cut}")
        }
        6 => {
            let n = 1 + rng.pos(64);
            let extra = rng.bytes(n);
            if rng.chance(50) {
                body.extend_from_slice(&extra);
                format!("append {} bytes", extra.len())
            } else {
                let p = rng.pos(len + 1);
                body.splice(p..p, extra.iter().copied());
                format!("insert {} bytes at {p}", extra.len())
            }
        }
        7 => {
            let a = rng.pos(len + 1);
            let b = rng.pos(other.len() + 1);
            body.truncate(a);
            body.extend_from_slice(&other[b..]);
            format!("splice at {a} with another payload from {b}")
        }
        8 => {
            let a = rng.pos(len);
            let b = (a + 1 + rng.pos(32)).min(len);
            body.drain(a..b);
            format!("delete {a}..{b}")
        }
        _ => {
            let a = rng.pos(len);
            let b = (a + 1 + rng.pos(32)).min(len);
            let copy = body[a..b].to_vec();
            let p = rng.pos(len + 1);
            body.splice(p..p, copy);
            format!("duplicate {a}..{b} at {p}")
        }
    }
}

/// One mutated payload, what was done to it, and whether its CRC matches its body.
pub fn mutated_payload(rng: &mut Rng, sources: &[Source]) -> (Vec<u8>, String, bool) {
    let src = rng.pick(sources);
    let other = &rng.pick(sources).payload;
    let mut what = vec![src.key.clone()];
    let mut payload = src.payload.clone();
    if rng.chance(35) {
        let mut p = src.parsed.clone();
        what.push(patch_fields(rng, &mut p));
        payload = p.serialize();
    }
    let n = if what.len() > 1 { rng.below(2) } else { 1 + rng.below(3) };
    let mut body = payload[..payload.len() - 10].to_vec();
    let mut version = [payload[payload.len() - 10], payload[payload.len() - 9]];
    for _ in 0..n {
        what.push(mutate_bytes(rng, &mut body, &other[..other.len() - 10]));
    }
    // Keep the value type a module type (RDB_TYPE_MODULE_2): this test is about the module's
    // loader, not Redis' loaders of its own types.
    if let Some(t) = body.first_mut() {
        *t = 7;
    }
    if rng.chance(1) {
        version = [rng.next() as u8, rng.next() as u8];
        what.push(format!("RDB version {version:?}"));
    }
    let mut out = body;
    out.extend_from_slice(&version);
    out.extend_from_slice(&[0u8; 8]);
    fix_dump_crc(&mut out);
    if rng.chance(3) {
        // A stale CRC: the server itself must refuse the payload.
        let n = out.len();
        out[n - 1 - rng.pos(8)] ^= 1 + rng.below(255) as u8;
        what.push("bad CRC".into());
    }
    let crc_ok = dump_crc_ok(&out);
    (out, what.join(", "), crc_ok)
}

/// A hostile (iterator, data) pair for a filter shaped like `src`: real chunks at wrong places,
/// random data, chunks across layer ends or past the end, broken iterators.
pub fn hostile_chunk(rng: &mut Rng, src: &Source, all: &[Source]) -> (Vec<u8>, Vec<u8>) {
    let real = &src.chunks[1 + rng.pos(src.chunks.len() - 1)].1;
    let data = match rng.below(8) {
        0 | 1 => real.clone(),
        2 => {
            let n = rng.pos(real.len() * 2 + 2);
            rng.bytes(n)
        }
        3 => Vec::new(),
        4 => {
            let n = 1 + rng.pos(8);
            rng.bytes(n)
        }
        5 => rng.pick(all).chunks[0].1.clone(), // a header where a chunk belongs
        6 => rng.bytes(src.total as usize + 1),
        _ => {
            let other = rng.pick(all);
            other.chunks[1 + rng.pos(other.chunks.len() - 1)].1.clone()
        }
    };
    let len = data.len() as u64;
    // Layer ends are the real chunks' ends: small layers are one chunk each.
    let ends: Vec<u64> = src.chunks[1..].iter().map(|(it, _)| *it as u64 - 1).collect();
    let offset = match rng.below(9) {
        0 => 0,
        1 => rng.below(src.total),
        2 => rng.pick(&ends).saturating_sub(rng.below(4)), // at or just before a layer's end
        3 => rng.pick(&ends) + rng.below(3),               // at or just after it
        4 => src.total.saturating_sub(1 + rng.below(8)),
        5 => src.total + rng.below(1000),
        6 => *rng.pick(INTERESTING_U64) / 2,
        7 => return (rng.pick(BAD_ITERS).as_bytes().to_vec(), data),
        _ => {
            // Raw iterators, not derived from an offset: 0, 1, the length (offset −1) …
            let it = *rng.pick(&[0, 1, len, len + 1, len.wrapping_sub(1), i64::MAX as u64]);
            return (it.to_string().into_bytes(), data);
        }
    };
    // BF.LOADCHUNK writes at iterator − length − 1.
    let iter = offset.checked_add(len + 1).filter(|&i| i <= i64::MAX as u64);
    let iter = iter.map(|i| i.to_string()).unwrap_or_else(|| "9223372036854775807".into());
    (iter.into_bytes(), data)
}

/// A mutated dump header.
pub fn mutated_header(rng: &mut Rng, sources: &[Source]) -> Vec<u8> {
    let mut h = rng.pick(sources).chunks[0].1.clone();
    for _ in 0..1 + rng.below(2) {
        let len = h.len();
        if len == 0 {
            break; // truncated to nothing by the first mutation: already as hostile as it gets
        }
        match rng.below(8) {
            0 | 1 => {
                let p = rng.pos(len);
                h[p] ^= 1 << rng.below(8);
            }
            2 => {
                let p = rng.pos(len);
                h[p] = *rng.pick(INTERESTING_BYTES);
            }
            3 | 4 => {
                // A field of the sequence (u64 at 16 + 8k), or a prefix word, set to an edge
                // value or moved by ±1.
                let p = if rng.chance(80) && len > 16 {
                    16 + 8 * rng.pos((len - 16) / 8)
                } else {
                    rng.pos(len)
                };
                let old =
                    h.get(p..p + 8).map(|b| u64::from_le_bytes(b.try_into().unwrap())).unwrap_or(0);
                let v = match rng.below(4) {
                    0 => old.wrapping_add(1),
                    1 => old.wrapping_sub(1),
                    2 => (f64::from_bits(old) * 2.0).to_bits(),
                    _ => *rng.pick(INTERESTING_U64),
                };
                for (k, b) in v.to_le_bytes().iter().enumerate() {
                    if let Some(x) = h.get_mut(p + k) {
                        *x = *b;
                    }
                }
            }
            5 => h.truncate(rng.pos(len)),
            6 => {
                let n = 1 + rng.pos(16);
                h.extend(rng.bytes(n));
            }
            _ => {
                let o = &rng.pick(sources).chunks[0].1;
                let (a, b) = (rng.pos(len + 1), rng.pos(o.len() + 1));
                h.truncate(a);
                h.extend_from_slice(&o[b..]);
            }
        }
    }
    h
}

/// Iterator arguments that are not a non-negative 64-bit integer in canonical form (the
/// negative integers among them are numbers, answered like RedisBloom: see `iter_numeric` in `tests/hostile_input.rs`).
pub const BAD_ITERS: &[&str] = &[
    "-1",
    "-9223372036854775808",
    "18446744073709551615",
    "99999999999999999999999",
    "abc",
    "",
    "1.5",
    " 1",
    "1 ",
    "+1",
    "0x10",
    "01",
    "-0",
    "1e3",
    "\u{0}",
    "٣",
];
