//! Hostile input against a live server (the libFuzzer targets of the decoders are `fuzz/`, run
//! by `make fuzz`): more than 10,000 mutated RESTORE payloads and more than 10,000 hostile
//! BF.LOADCHUNK commands sent to a real server, which must stay up, answer PING, log no panic
//! and keep every other key exactly as it was.
//!
//! The mutations start from real `DUMP` payloads and `BF.SCANDUMP` chunks of filters of several
//! shapes, and are driven by one seeded generator: each test prints its seed, and
//! `SCALEBLOOM_FUZZ_SEED=<n>` replays that run exactly. Requests go in pipelined batches; after
//! each batch the server must be alive and the bystanders intact (`common::hostile`).
//!
//! What each reply may be:
//! - RESTORE: an error (and then no key), or OK — and then the filter answers BF.INFO, BF.CARD,
//!   BF.EXISTS, BF.DEBUG and a whole BF.SCANDUMP without error, its dump rebuilds an identical
//!   filter through BF.LOADCHUNK, it still takes items, and it survives DEBUG RELOAD.
//! - BF.LOADCHUNK: OK or one of the documented LOADCHUNK errors; a refused chunk changes
//!   nothing, and commands aimed at bystanders are refused with the exact error.

mod common;
use common::hostile::Hostile;
use common::*;

// ---------------------------------------------------------------------------------------------
// Seeded randomness
// ---------------------------------------------------------------------------------------------

/// The run's generator: SCALEBLOOM_FUZZ_SEED if set, else a fresh seed. The seed is printed
/// (test output is shown when a test fails) and repeated in every failure message.
fn fuzz_rng(test: &str) -> (Rng, u64) {
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

trait RngExt {
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
const INTERESTING_BYTES: &[u8] =
    &[0x00, 0x01, 0x02, 0x04, 0x05, 0x07, 0x3f, 0x40, 0x7f, 0x80, 0x81, 0xc0, 0xc3, 0xfe, 0xff];

/// 64-bit values at the edges of every check the decoders make.
const INTERESTING_U64: &[u64] = &[
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

/// The fuzzed server: fixed hash seeds, so the same SCALEBLOOM_FUZZ_SEED sends the same bytes
/// again; a 64 MiB per-filter limit, so a mutated header that happens to describe a valid huge
/// filter is refused rather than allocated.
fn server_opts() -> ServerOpts {
    ServerOpts::new().module_args(&["max-filter-bytes", "64mb", "random-seeds", "no"])
}

// ---------------------------------------------------------------------------------------------
// The filters the mutations start from
// ---------------------------------------------------------------------------------------------

/// One filter of the fixture's server: its payload, parsed fields, dump chunks and digest.
struct Source {
    key: String,
    payload: Vec<u8>,
    parsed: ModulePayload,
    /// `BF.SCANDUMP` pairs, header first: what a client passes to BF.LOADCHUNK.
    chunks: Vec<(i64, Vec<u8>)>,
    digest: String,
    /// Bytes of all bit arrays.
    total: u64,
}

/// Shapes beyond the fixture's `src`: (key, RESERVE arguments, items added).
const SHAPES: &[(&str, &[&str], usize)] = &[
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
fn sources(fx: &mut Hostile) -> Vec<Source> {
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

// ---------------------------------------------------------------------------------------------
// Probing a filter a hostile command created
// ---------------------------------------------------------------------------------------------

/// Errors a write to an accepted filter may answer: it may be full, at its last layer or over
/// the per-filter limit; anything else is a bug.
fn add_error_allowed(e: &str) -> bool {
    e == "ERR non scaling filter is full"
        || e == "ERR problem inserting into filter"
        || e == "ERR Insufficient memory to create filter"
        || (e.starts_with("ERR filter would need ") && e.contains("bf.max-filter-bytes"))
        || e.starts_with("OOM ")
}

/// A filter that a RESTORE or LOADCHUNK accepted must answer every read without error and be
/// self-consistent; its dump must rebuild an identical filter; it must still take items. The
/// key and its copy are deleted afterwards unless `keep`.
fn probe_filter(c: &mut Conn, key: &str, keep: bool, ctx: &str) {
    let r = c.pipeline(&[
        vec!["TYPE", key],
        vec!["BF.INFO", key],
        vec!["BF.CARD", key],
        vec!["BF.EXISTS", key, "never-added"],
        vec!["BF.DEBUG", key],
        vec!["BF.STATS", key],
        vec!["BF.DEL", key, "never-added"],
    ]);
    assert_eq!(r[0], Value::Simple("MBbloom--".into()), "{ctx}: TYPE {key}");
    for v in &r[1..6] {
        assert!(!v.is_err(), "{ctx}: a read of accepted filter {key} failed: {r:?}");
    }
    // A delete works on a counting filter and is refused with its reason on a plain one.
    match &r[6] {
        Value::Int(0 | 1) => {}
        Value::Error(e) if e.starts_with("ERR not a counting filter") => {}
        other => panic!("{ctx}: BF.DEL on accepted filter {key} -> {other:?}"),
    }
    let info = BfInfo::parse(&r[1]);
    assert_eq!(r[2].as_int(), info.items, "{ctx}: BF.CARD vs BF.INFO items of {key}");
    r[3].as_bit();
    let debug = r[4].as_array();
    assert_eq!(debug.len() as i64, info.filters + 1, "{ctx}: BF.DEBUG lines of {key}: {debug:?}");
    assert_eq!(debug[0].as_str(), format!("size:{}", info.items), "{ctx}: BF.DEBUG of {key}");

    // The whole dump, whose bytes must add up to what BF.INFO counts...
    let chunks = c.scandump_all(key);
    let bits: i64 = chunks[1..].iter().map(|(_, d)| d.len() as i64).sum();
    assert_eq!(bits, info.size - 32 - 64 * info.filters, "{ctx}: SCANDUMP bytes of {key}");
    // ...and must rebuild the same filter: RESTORE and LOADCHUNK share one validator.
    let copy = format!("{key}:copy");
    let mut cmds: Vec<Vec<Vec<u8>>> = chunks
        .iter()
        .map(|(it, data)| {
            vec![
                b"BF.LOADCHUNK".to_vec(),
                copy.clone().into_bytes(),
                it.to_string().into_bytes(),
                data.clone(),
            ]
        })
        .collect();
    cmds.push(vec![b"DEBUG".to_vec(), b"DIGEST-VALUE".to_vec(), key.as_bytes().to_vec()]);
    cmds.push(vec![b"DEBUG".to_vec(), b"DIGEST-VALUE".to_vec(), copy.clone().into_bytes()]);
    cmds.push(vec![b"DEL".to_vec(), copy.clone().into_bytes()]);
    let r = c.pipeline(&cmds);
    for v in &r[..chunks.len()] {
        assert!(v.is_ok(), "{ctx}: BF.LOADCHUNK of {key}'s own dump -> {v:?}");
    }
    let n = chunks.len();
    assert_eq!(r[n], r[n + 1], "{ctx}: the LOADCHUNK copy of {key} differs");

    // Writes still work (or are refused with a reason).
    let mut madd = vec!["BF.MADD".to_string(), key.to_string()];
    madd.extend(items("probe", 20));
    let v = c.cmd(&madd);
    for e in v.as_array() {
        match e {
            Value::Int(0 | 1) => {}
            Value::Error(text) if add_error_allowed(text) => {}
            other => panic!("{ctx}: BF.MADD on accepted filter {key} -> {other:?}"),
        }
    }
    if !keep {
        c.cmd(&["DEL", key]);
    }
}

// ---------------------------------------------------------------------------------------------
// RESTORE
// ---------------------------------------------------------------------------------------------

/// RESTOREs per test; the acceptance criterion is at least 10,000.
const RESTORES: usize = 10_400;
/// RESTOREs per pipelined batch.
const RESTORE_BATCH: usize = 200;
/// Accepted filters kept (not deleted) until the end, to go through DEBUG RELOAD.
const KEPT: usize = 40;

/// A module-aware change to a parsed payload: a field's value, type, presence or order.
fn patch_fields(rng: &mut Rng, p: &mut ModulePayload) -> String {
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
fn patch_value(rng: &mut Rng, f: &Field) -> Field {
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
fn mutate_bytes(rng: &mut Rng, body: &mut Vec<u8>, other: &[u8]) -> String {
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
fn mutated_payload(rng: &mut Rng, sources: &[Source]) -> (Vec<u8>, String, bool) {
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

#[test]
fn ten_thousand_mutated_restore_payloads_never_crash_the_server() {
    let (mut rng, seed) = fuzz_rng("restore");
    let opts = server_opts();
    let mut fx = Hostile::start_with(opts);
    let sources = sources(&mut fx);
    let mut kept: Vec<(String, String)> = Vec::new();
    let (mut accepted, mut refused, mut sent) = (0usize, 0usize, 0usize);
    while sent < RESTORES {
        let batch: Vec<(String, Vec<u8>, String, bool)> = (0..RESTORE_BATCH)
            .map(|i| {
                let (payload, what, crc_ok) = mutated_payload(&mut rng, &sources);
                (format!("fz:restore:{}", sent + i), payload, what, crc_ok)
            })
            .collect();
        let cmds: Vec<Vec<&[u8]>> = batch
            .iter()
            .map(|(k, p, _, _)| vec![b"RESTORE".as_slice(), k.as_bytes(), b"0", p])
            .collect();
        let replies = fx.conn.pipeline(&cmds);
        sent += batch.len();
        let mut refused_keys = Vec::new();
        for ((key, _, what, crc_ok), v) in batch.iter().zip(&replies) {
            let ctx = format!("seed {seed}, {key} ({what})");
            match v {
                Value::Error(_) => {
                    refused += 1;
                    refused_keys.push(vec!["EXISTS", key.as_str()]);
                }
                v if v.is_ok() => {
                    assert!(crc_ok, "{ctx}: a payload with a wrong CRC was accepted");
                    accepted += 1;
                    let keep = kept.len() < KEPT;
                    probe_filter(&mut fx.conn, key, keep, &ctx);
                    if keep {
                        kept.push((key.clone(), fx.conn.digest(key)));
                    }
                }
                other => panic!("{ctx}: RESTORE answered {other:?}"),
            }
        }
        for (v, k) in fx.conn.pipeline(&refused_keys).iter().zip(&refused_keys) {
            assert_eq!(*v, Value::Int(0), "seed {seed}: refused RESTORE left key {}", k[1]);
        }
        fx.assert_intact();
    }
    // The module logs each value its loader refuses: most refusals must come from there, not
    // from the server's own checks (CRC, RDB version, opcodes), or the loader is not being fuzzed.
    let log = fx.server.log_text();
    let reached =
        log.lines().filter(|l| l.contains("scalebloom: ") && l.contains("MBbloom--")).count();
    eprintln!(
        "restore: {sent} payloads, {accepted} accepted, {refused} refused ({reached} by the module's loader)"
    );
    assert!(sent >= 10_000);
    // Both outcomes must have happened, or the mutations are not reaching the loader.
    assert!(
        accepted > sent / 20 && refused > sent / 4,
        "seed {seed}: {accepted} accepted, {refused} refused"
    );
    assert!(
        reached > refused / 2,
        "seed {seed}: only {reached} of {refused} refusals reached the module's loader"
    );
    // Whatever was accepted survives a save and load unchanged.
    assert!(fx.conn.cmd(&["DEBUG", "RELOAD"]).is_ok(), "seed {seed}: DEBUG RELOAD");
    for (key, digest) in &kept {
        assert_eq!(&fx.conn.digest(key), digest, "seed {seed}: {key} changed across DEBUG RELOAD");
        fx.conn.cmd(&["DEL", key]);
    }
    fx.assert_intact();
    let left = fx.conn.cmd(&["KEYS", "fz:*"]);
    assert!(left.as_array().is_empty(), "seed {seed}: keys left behind: {left:?}");
}

// ---------------------------------------------------------------------------------------------
// BF.LOADCHUNK
// ---------------------------------------------------------------------------------------------

/// Hostile LOADCHUNK commands per test; the acceptance criterion is at least 10,000.
const HOSTILE_LOADCHUNKS: usize = 10_500;
/// Sequences per pipelined batch.
const LOADCHUNK_BATCH: usize = 120;

const BAD_DATA: &str = "ERR received bad data";
const CHUNK_OFFSET: &str = "ERR invalid offset - no link found";
const CHUNK_TOO_BIG: &str = "ERR invalid chunk - Too big for current filter";
/// A data chunk for a filter that no LOADCHUNK header made (or that took an add since).
const NOT_RESTORING: &str = "ERR BF.LOADCHUNK data chunks go only into a filter that its BF.LOADCHUNK header created and that has taken no add since; this key holds another filter";
const ITER_NOT_NUMERIC: &str = "ERR Second argument must be numeric";
const NOT_FOUND: &str = "ERR not found";
const WRONGTYPE: &str = "WRONGTYPE Operation against a key holding the wrong kind of value";
const ARITY: &str = "ERR wrong number of arguments for 'bf.loadchunk' command";

/// The errors BF.LOADCHUNK documents (README, RedisBloom's three plus the limits).
fn loadchunk_error_allowed(e: &str) -> bool {
    [
        BAD_DATA,
        CHUNK_OFFSET,
        CHUNK_TOO_BIG,
        NOT_RESTORING,
        ITER_NOT_NUMERIC,
        NOT_FOUND,
        WRONGTYPE,
        ARITY,
    ]
    .contains(&e)
        || add_error_allowed(e)
}

/// What one command's reply must be.
#[derive(Debug)]
enum Expect {
    /// +OK.
    Ok,
    /// +OK or a documented LOADCHUNK error: hostile input.
    Hostile,
    /// Exactly this error.
    Err(&'static str),
    /// A `DEBUG DIGEST-VALUE` reply equal to this digest.
    Digest(String),
    /// Equal to this digest, unless a hostile command of the sequence was accepted since the
    /// last digest (refused chunks must change nothing).
    DigestUnlessAccepted(String),
    /// +PONG: a PING between two sequences, where the digest bookkeeping starts afresh.
    Pong,
}

struct Cmd {
    args: Vec<Vec<u8>>,
    expect: Expect,
    /// Counted towards the hostile commands.
    hostile: bool,
}

fn loadchunk(key: &str, iter: &[u8], data: &[u8], expect: Expect) -> Cmd {
    let hostile = !matches!(expect, Expect::Ok);
    Cmd {
        args: vec![b"BF.LOADCHUNK".to_vec(), key.as_bytes().to_vec(), iter.to_vec(), data.to_vec()],
        expect,
        hostile,
    }
}

fn digest_cmd(key: &str, expect: Expect) -> Cmd {
    Cmd {
        args: vec![b"DEBUG".to_vec(), b"DIGEST-VALUE".to_vec(), key.as_bytes().to_vec()],
        expect,
        hostile: false,
    }
}

/// Iterator arguments that are not a non-negative 64-bit integer in canonical form (the
/// negative integers among them are numbers, answered like RedisBloom: see [`iter_numeric`]).
const BAD_ITERS: &[&str] = &[
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

/// Whether BF.LOADCHUNK reads `iter` as a number (Redis' `string2ll`: canonical decimal,
/// i64, no `-0`); anything else is `Second argument must be numeric`. A negative number is no
/// iterator: `ERR not found` for a missing key, `ERR received bad data` for a filter.
fn iter_numeric(iter: &[u8]) -> bool {
    let Ok(s) = std::str::from_utf8(iter) else { return false };
    let digits = s.strip_prefix('-').unwrap_or(s);
    !digits.is_empty()
        && digits.bytes().all(|c| c.is_ascii_digit())
        && (digits == "0" || !digits.starts_with('0'))
        && s != "-0"
        && s.parse::<i64>().is_ok()
}

/// A hostile (iterator, data) pair for a filter shaped like `src`: real chunks at wrong places,
/// random data, chunks across layer ends or past the end, broken iterators.
fn hostile_chunk(rng: &mut Rng, src: &Source, all: &[Source]) -> (Vec<u8>, Vec<u8>) {
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
fn mutated_header(rng: &mut Rng, sources: &[Source]) -> Vec<u8> {
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

/// Commands aimed at bystanders, each refused with an exact error (so nothing may change).
fn at_bystander(rng: &mut Rng, sources: &[Source], plain: &[&str]) -> Cmd {
    let src = rng.pick(sources);
    let header = &rng.pick(sources).chunks[0].1;
    let n = 1 + rng.pos(16);
    let data = rng.bytes(n);
    match rng.below(6) {
        0 => {
            let iter = rng.pick(BAD_ITERS).as_bytes().to_vec();
            // A negative integer is a number, but no iterator: RedisBloom's `received bad data`.
            let expect = if iter_numeric(&iter) { BAD_DATA } else { ITER_NOT_NUMERIC };
            loadchunk(&src.key, &iter, &data, Expect::Err(expect))
        }
        // The sources were made by BF.RESERVE and adds, not by a LOADCHUNK header: no chunk
        // goes into them, wherever it would land. A chunk whose offset would be negative (its
        // iterator below its length: a header sent at 1) is refused first, as RedisBloom does.
        1 => loadchunk(&src.key, b"1", header, Expect::Err(BAD_DATA)),
        2 => {
            let past = src.total + rng.below(100) + data.len() as u64 + 1;
            loadchunk(&src.key, past.to_string().as_bytes(), &data, Expect::Err(NOT_RESTORING))
        }
        3 => {
            let iter = rng.pick(&src.chunks[1..]).0;
            let expect = if (iter as u64) < data.len() as u64 { BAD_DATA } else { NOT_RESTORING };
            loadchunk(&src.key, iter.to_string().as_bytes(), &data, Expect::Err(expect))
        }
        _ => {
            let key = rng.pick(plain);
            if rng.chance(50) {
                loadchunk(key, b"1", header, Expect::Err(WRONGTYPE))
            } else {
                let iter = rng.pick(&src.chunks).0.to_string();
                loadchunk(key, iter.as_bytes(), &data, Expect::Err(WRONGTYPE))
            }
        }
    }
}

/// One sequence of commands on `key` (or on bystanders).
fn loadchunk_sequence(rng: &mut Rng, key: &str, sources: &[Source], plain: &[&str]) -> Vec<Cmd> {
    let src = rng.pick(sources);
    let header = &src.chunks[0].1;
    let mut seq = Vec::new();
    match rng.below(10) {
        // A mutated header, then (maybe) the real chunks.
        0..=2 => {
            seq.push(loadchunk(key, b"1", &mutated_header(rng, sources), Expect::Hostile));
            if rng.chance(50) {
                for (it, data) in &src.chunks[1..] {
                    seq.push(loadchunk(key, it.to_string().as_bytes(), data, Expect::Hostile));
                }
            }
        }
        // A valid copy, then hostile chunks: each refused one must change nothing.
        3..=6 => {
            for (it, data) in &src.chunks {
                seq.push(loadchunk(key, it.to_string().as_bytes(), data, Expect::Ok));
            }
            seq.push(digest_cmd(key, Expect::Digest(src.digest.clone())));
            for _ in 0..1 + rng.below(6) {
                let (iter, data) = hostile_chunk(rng, src, sources);
                seq.push(loadchunk(key, &iter, &data, Expect::Hostile));
                seq.push(digest_cmd(key, Expect::DigestUnlessAccepted(src.digest.clone())));
            }
        }
        // Chunks before any header.
        7 => {
            for _ in 0..1 + rng.below(3) {
                let (iter, data) = hostile_chunk(rng, src, sources);
                let expect = if !iter_numeric(&iter) {
                    Expect::Err(ITER_NOT_NUMERIC)
                } else if iter != b"1" {
                    Expect::Err(NOT_FOUND)
                } else if data.starts_with(b"SCBLOOM\0") {
                    Expect::Hostile
                } else {
                    Expect::Err(BAD_DATA)
                };
                let stop = matches!(expect, Expect::Hostile);
                seq.push(loadchunk(key, &iter, &data, expect));
                if stop {
                    break; // a header may have created the key
                }
            }
        }
        // Another filter's chunks on this one's header.
        8 => {
            let other = rng.pick(sources);
            seq.push(loadchunk(key, b"1", header, Expect::Ok));
            for (it, data) in &other.chunks[1..] {
                seq.push(loadchunk(key, it.to_string().as_bytes(), data, Expect::Hostile));
            }
        }
        // Commands at bystanders (wrong types, impossible places), and wrong arities.
        _ => {
            for _ in 0..1 + rng.below(3) {
                seq.push(at_bystander(rng, sources, plain));
            }
            let args: Vec<Vec<u8>> = match rng.below(4) {
                0 => vec![b"BF.LOADCHUNK".to_vec()],
                1 => vec![b"BF.LOADCHUNK".to_vec(), key.as_bytes().to_vec()],
                2 => vec![b"BF.LOADCHUNK".to_vec(), key.as_bytes().to_vec(), b"1".to_vec()],
                _ => vec![
                    b"BF.LOADCHUNK".to_vec(),
                    key.as_bytes().to_vec(),
                    b"1".to_vec(),
                    header.clone(),
                    b"x".to_vec(),
                ],
            };
            seq.push(Cmd { args, expect: Expect::Err(ARITY), hostile: true });
        }
    }
    seq
}

#[test]
fn ten_thousand_hostile_loadchunk_commands_never_crash_the_server() {
    let (mut rng, seed) = fuzz_rng("loadchunk");
    let opts = server_opts();
    let mut fx = Hostile::start_with(opts);
    let sources = sources(&mut fx);
    fx.conn.cmd(&["RPUSH", "bystander:list", "a", "b"]);
    fx.add_bystander("bystander:list");
    let plain = ["bystander:plain", "bystander:list"];
    let (mut hostile, mut accepted, mut refused, mut n) = (0usize, 0usize, 0usize, 0usize);
    while hostile < HOSTILE_LOADCHUNKS {
        let mut keys = Vec::new();
        let mut cmds: Vec<Cmd> = Vec::new();
        for _ in 0..LOADCHUNK_BATCH {
            let key = format!("fz:loadchunk:{n}");
            n += 1;
            cmds.push(Cmd { args: vec![b"PING".to_vec()], expect: Expect::Pong, hostile: false });
            cmds.extend(loadchunk_sequence(&mut rng, &key, &sources, &plain));
            keys.push(key);
        }
        let args: Vec<Vec<&[u8]>> =
            cmds.iter().map(|c| c.args.iter().map(|x| x.as_slice()).collect()).collect();
        let replies = fx.conn.pipeline(&args);
        let mut accepted_since_digest = false;
        for (cmd, v) in cmds.iter().zip(&replies) {
            let ctx = || {
                let show = |x: &Vec<u8>| match x.len() {
                    n if n > 40 => format!("<{n} bytes>"),
                    _ => format!("{:?}", String::from_utf8_lossy(x)),
                };
                let a: Vec<String> = cmd.args.iter().map(show).collect();
                format!("seed {seed}: {}", a.join(" "))
            };
            hostile += usize::from(cmd.hostile);
            match &cmd.expect {
                Expect::Ok => assert!(v.is_ok(), "{}: expected OK, got {v:?}", ctx()),
                Expect::Hostile => match v {
                    v if v.is_ok() => {
                        accepted += 1;
                        accepted_since_digest = true;
                    }
                    Value::Error(e) if loadchunk_error_allowed(e) => refused += 1,
                    other => panic!("{}: answered {other:?}", ctx()),
                },
                Expect::Err(e) => {
                    assert_eq!(*v, Value::Error(e.to_string()), "{}", ctx());
                    refused += 1;
                }
                Expect::Digest(d) => {
                    assert_eq!(
                        v.as_array()[0].as_str(),
                        d,
                        "{}: a LOADCHUNK copy differs from its source",
                        ctx()
                    );
                }
                Expect::DigestUnlessAccepted(d) => {
                    if !accepted_since_digest {
                        assert_eq!(
                            v.as_array()[0].as_str(),
                            d,
                            "{}: refused chunks changed the filter",
                            ctx()
                        );
                    }
                }
                Expect::Pong => {
                    assert_eq!(*v, Value::Simple("PONG".into()), "{}", ctx());
                    accepted_since_digest = false;
                }
            }
        }
        // Whatever the sequences left must be a working filter.
        let exists: Vec<Vec<&str>> = keys.iter().map(|k| vec!["EXISTS", k.as_str()]).collect();
        let exists = fx.conn.pipeline(&exists);
        for (key, e) in keys.iter().zip(&exists) {
            if e.as_int() == 1 {
                probe_filter(&mut fx.conn, key, false, &format!("seed {seed}, {key}"));
            }
        }
        fx.assert_intact();
    }
    eprintln!("loadchunk: {hostile} hostile commands, {accepted} accepted, {refused} refused");
    assert!(hostile >= 10_000);
    assert!(
        accepted > 0 && refused > hostile / 4,
        "seed {seed}: {accepted} accepted, {refused} refused"
    );
    fx.assert_intact();
    let left = fx.conn.cmd(&["KEYS", "fz:*"]);
    assert!(left.as_array().is_empty(), "seed {seed}: keys left behind: {left:?}");
}
