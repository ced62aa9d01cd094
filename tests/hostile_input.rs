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
//!   filter through BF.LOADCHUNK, it still takes items, what it saves after them RESTOREs
//!   unchanged, and it survives DEBUG RELOAD.
//! - BF.LOADCHUNK: OK or one of the documented LOADCHUNK errors; a refused chunk changes
//!   nothing, and commands aimed at bystanders are refused with the exact error.

mod common;
use common::hostile::Hostile;
use common::mutate::*;
use common::*;

/// The fuzzed server: fixed hash seeds, so the same SCALEBLOOM_FUZZ_SEED sends the same bytes
/// again; a 64 MiB per-filter limit, so a mutated header that happens to describe a valid huge
/// filter is refused rather than allocated.
fn server_opts() -> ServerOpts {
    ServerOpts::new().module_args(&["max-filter-bytes", "64mb", "random-seeds", "no"])
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
    // What it saves now (after those writes) loads again, unchanged: a value the module wrote
    // and then refuses would stop the server's next RDB load.
    let payload = c.cmd(&["DUMP", key]).as_bytes().to_vec();
    let saved = format!("{key}:saved");
    let r = c.pipeline(&[
        vec![b"RESTORE".as_slice(), saved.as_bytes(), b"0", &payload],
        vec![b"DEBUG".as_slice(), b"DIGEST-VALUE", key.as_bytes()],
        vec![b"DEBUG".as_slice(), b"DIGEST-VALUE", saved.as_bytes()],
        vec![b"DEL".as_slice(), saved.as_bytes()],
    ]);
    assert!(r[0].is_ok(), "{ctx}: RESTORE of what {key} saves after writes -> {:?}", r[0]);
    assert_eq!(r[1], r[2], "{ctx}: {key} changed across its own DUMP and RESTORE");
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
/// A header (iterator 1) sent to a key that exists.
const KEY_EXISTS: &str = "ERR received bad data: the key already exists, and a BF.LOADCHUNK header (iterator 1) only creates a new filter; DEL the key first or load under another name";
const CHUNK_OFFSET: &str = "ERR invalid offset - no link found";
const CHUNK_TOO_BIG: &str = "ERR invalid chunk - Too big for current filter";
/// A data chunk for a filter that no LOADCHUNK header made (or that took an add since).
const NOT_RESTORING: &str = "ERR BF.LOADCHUNK data chunks go only into a filter that its BF.LOADCHUNK header created and that has taken no add since; this key holds another filter";
const ITER_NOT_NUMERIC: &str = "ERR Second argument must be numeric";
const NOT_FOUND: &str = "ERR not found";
const WRONGTYPE: &str = "WRONGTYPE Operation against a key holding the wrong kind of value";
const ARITY: &str = "ERR wrong number of arguments for 'bf.loadchunk' command";

/// The errors BF.LOADCHUNK documents (docs/bloom.md and docs/limits.md: RedisBloom's three
/// plus the limits).
fn loadchunk_error_allowed(e: &str) -> bool {
    [
        BAD_DATA,
        KEY_EXISTS,
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
        // iterator below its length) is refused first, as RedisBloom does; a header sent at 1
        // says that the key exists.
        1 => loadchunk(&src.key, b"1", header, Expect::Err(KEY_EXISTS)),
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
