//! Data written by an earlier build of the module loads in this one and answers as it did.
//!
//! `tests/fixtures/bloom/` holds what the module built from commit 89584a9 (before filter kinds
//! became types and the Redis type seam was cut, issue 19) wrote for a set of filters of every
//! kind it makes — plain scaling and nonscaling, expansion 5, empty, binary items, counting 4
//! and 8 (with deletes), a filter in RedisBloom's scheme (`bf.redisbloom-scheme yes`) and two
//! older RedisBloom layouts imported through `BF.LOADCHUNK` (32-bit hash with power-of-two
//! sizes, and 2.2.0–2.2.14's byte-rounded layers), each filled through this module:
//!
//! - `dump.rdb`: the RDB file `SAVE` wrote (Redis 7.0, so RDB version 10: every engine the
//!   tests run reads it);
//! - `<key>.dump`: the `DUMP` payload of each key;
//! - `<key>.scandump`: the `BF.SCANDUMP` stream of each key, as (iterator, bytes) records;
//! - `expected.txt`: per key, what that build answered — `BF.INFO`, `BF.DEBUG`, `BF.CARD`,
//!   `DEBUG DIGEST-VALUE`, and the `BF.MEXISTS` answer for every item it was given, every item
//!   it deleted and 3,000 it never saw (false positives included).
//!
//! Each path (RDB at startup, `RESTORE`, `BF.LOADCHUNK`) must bring back every key with the
//! same answers, the same numbers, the same digest and the same SCANDUMP bytes. The fixtures
//! are regenerated only on purpose (`write_fixtures`, ignored: it overwrites them).

mod common;
use common::*;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

fn fixture_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/bloom")
}

/// The keys, in the order they are written to `expected.txt`.
const KEYS: &[&str] = &[
    "scaling",
    "nonscaling",
    "expansion5",
    "empty",
    "binary",
    "counting4",
    "counting8-nonscaling",
    "redisbloom-scheme",
    "legacy32",
    "bytes22",
];

/// Items added to `key` (the fixture built them the same way).
fn added_items(key: &str) -> Vec<String> {
    let n = match key {
        "scaling" => 1500,
        "nonscaling" => 300,
        "expansion5" => 400,
        "empty" => 0,
        "binary" => 100,
        "counting4" => 900,
        "counting8-nonscaling" => 200,
        "redisbloom-scheme" => 800,
        "legacy32" | "bytes22" => 1200,
        _ => unreachable!("unknown fixture key {key}"),
    };
    if key == "binary" {
        return (0..n).map(|i| format!("\u{0}\u{7f}é{i}\r\n")).collect();
    }
    (0..n).map(|i| format!("{key}:item:{i}")).collect()
}

/// Items deleted from `key` once each (counting filters only): every third one added.
fn deleted_items(key: &str) -> Vec<String> {
    if !key.starts_with("counting") {
        return Vec::new();
    }
    added_items(key).into_iter().step_by(3).collect()
}

/// Every item whose answer the fixture records: added, then 3,000 never added.
fn probed_items(key: &str) -> Vec<String> {
    let mut all = added_items(key);
    all.extend((0..3000).map(|i| format!("{key}:absent:{i}")));
    all
}

/// A one-layer RedisBloom header for `BF.LOADCHUNK` (iterator 1): options, bits, n2, hashes,
/// capacity, error. Written out here so the fixture does not depend on the crate's API.
fn one_layer_header(options: u32, bits: u64, n2: u8, hashes: u32, cap: u64, error: f64) -> Vec<u8> {
    let bpe = (-error.ln() / std::f64::consts::LN_2.powi(2)).abs();
    let mut h = Vec::new();
    h.extend_from_slice(&0u64.to_le_bytes()); // size (items)
    h.extend_from_slice(&1u32.to_le_bytes()); // nfilters
    h.extend_from_slice(&options.to_le_bytes());
    h.extend_from_slice(&2u32.to_le_bytes()); // growth
    h.extend_from_slice(&(bits / 8).to_le_bytes());
    h.extend_from_slice(&bits.to_le_bytes());
    h.extend_from_slice(&0u64.to_le_bytes()); // the layer's items
    h.extend_from_slice(&error.to_bits().to_le_bytes());
    h.extend_from_slice(&bpe.to_bits().to_le_bytes());
    h.extend_from_slice(&hashes.to_le_bytes());
    h.extend_from_slice(&cap.to_le_bytes());
    h.push(n2);
    h
}

/// Builds every fixture key on `c` (a server with the module loaded, random seeds on).
fn build(c: &mut Conn) {
    let fill = |c: &mut Conn, key: &str| {
        for chunk in added_items(key).chunks(500) {
            for r in c.madd(key, chunk) {
                assert!(matches!(r, Value::Int(0 | 1)), "fixture MADD {key}: {r:?}");
            }
        }
    };
    c.ok(&["BF.RESERVE", "scaling", "0.01", "100"]);
    fill(c, "scaling");
    c.ok(&["BF.RESERVE", "nonscaling", "0.001", "500", "NONSCALING"]);
    fill(c, "nonscaling");
    c.ok(&["BF.RESERVE", "expansion5", "0.05", "20", "EXPANSION", "5"]);
    fill(c, "expansion5");
    c.ok(&["BF.RESERVE", "empty", "0.01", "1000"]);
    fill(c, "binary");
    c.ok(&["BF.RESERVE", "counting4", "0.01", "200", "COUNTING", "4"]);
    fill(c, "counting4");
    c.ok(&["BF.RESERVE", "counting8-nonscaling", "0.001", "300", "NONSCALING", "COUNTING", "8"]);
    fill(c, "counting8-nonscaling");
    for key in ["counting4", "counting8-nonscaling"] {
        for item in deleted_items(key) {
            assert_eq!(c.int(&["BF.DEL", key, &item]), 1, "fixture BF.DEL {key} {item}");
        }
    }
    c.ok(&["CONFIG", "SET", "bf.redisbloom-scheme", "yes"]);
    c.ok(&["BF.RESERVE", "redisbloom-scheme", "0.01", "100"]);
    fill(c, "redisbloom-scheme");
    c.ok(&["CONFIG", "SET", "bf.redisbloom-scheme", "no"]);
    // Options 0: RedisBloom 1.0–1.1.0 (32-bit hash, power-of-two layers); options 5 with bits
    // rounded to bytes: RedisBloom 2.2.0–2.2.14.
    for (key, options, bits, n2, hashes, cap, error) in
        [("legacy32", 0, 16384, 14, 7, 1709, 0.01), ("bytes22", 5, 11032, 0, 8, 1000, 0.005)]
    {
        let header = one_layer_header(options, bits, n2, hashes, cap, error);
        c.ok(&[&b"BF.LOADCHUNK"[..], key.as_bytes(), b"1", &header]);
        fill(c, key);
    }
}

/// What one key answers: its numbers, digest and every probed item's answer.
#[derive(Debug, PartialEq)]
struct Answers {
    info: String,
    debug: String,
    card: i64,
    digest: String,
    exists: String,
}

fn answers(c: &mut Conn, key: &str) -> Answers {
    let info = BfInfo::parse(&c.cmd(&["BF.INFO", key]));
    let mut exists = String::new();
    for chunk in probed_items(key).chunks(1000) {
        exists.extend(c.mexists(key, chunk).iter().map(|b| if *b == 1 { '1' } else { '0' }));
    }
    Answers {
        info: format!("{info:?}"),
        debug: c.bf_debug(key).join("|"),
        card: c.bf_card(key),
        digest: c.digest(key),
        exists,
    }
}

fn write_expected(path: &Path, all: &BTreeMap<String, Answers>) {
    let mut out = String::new();
    for key in KEYS {
        let a = &all[*key];
        out += &format!("key {key}\ninfo {}\ndebug {}\ncard {}\n", a.info, a.debug, a.card);
        out += &format!("digest {}\nexists {}\n", a.digest, a.exists);
    }
    std::fs::write(path, out).expect("write expected.txt");
}

fn read_expected() -> BTreeMap<String, Answers> {
    let text = std::fs::read_to_string(fixture_dir().join("expected.txt")).expect("expected.txt");
    let mut out = BTreeMap::new();
    let mut lines = text.lines();
    while let Some(line) = lines.next() {
        let key = line.strip_prefix("key ").expect("a 'key' line").to_string();
        let mut field = |name: &str| -> String {
            let l = lines.next().unwrap_or_else(|| panic!("{key}: no {name} line"));
            l.strip_prefix(&format!("{name} ")).unwrap_or_else(|| panic!("{key}: {l:?}")).into()
        };
        let a = Answers {
            info: field("info"),
            debug: field("debug"),
            card: field("card").parse().expect("card"),
            digest: field("digest"),
            exists: field("exists"),
        };
        out.insert(key, a);
    }
    assert_eq!(out.len(), KEYS.len(), "expected.txt holds every key");
    out
}

/// SCANDUMP records: iterator (i64 LE), length (u32 LE), bytes.
fn encode_scandump(chunks: &[(i64, Vec<u8>)]) -> Vec<u8> {
    let mut out = Vec::new();
    for (it, data) in chunks {
        out.extend_from_slice(&it.to_le_bytes());
        out.extend_from_slice(&(data.len() as u32).to_le_bytes());
        out.extend_from_slice(data);
    }
    out
}

fn decode_scandump(mut bytes: &[u8]) -> Vec<(i64, Vec<u8>)> {
    let mut out = Vec::new();
    while !bytes.is_empty() {
        let it = i64::from_le_bytes(bytes[..8].try_into().unwrap());
        let len = u32::from_le_bytes(bytes[8..12].try_into().unwrap()) as usize;
        out.push((it, bytes[12..12 + len].to_vec()));
        bytes = &bytes[12 + len..];
    }
    out
}

fn scandump_fixture(key: &str) -> Vec<(i64, Vec<u8>)> {
    let path = fixture_dir().join(format!("{key}.scandump"));
    decode_scandump(&std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display())))
}

/// Every key on `c` answers as `expected.txt` says, and SCANDUMPs to the fixture's bytes.
fn assert_as_before(c: &mut Conn, how: &str) {
    let expected = read_expected();
    for key in KEYS {
        assert_eq!(c.cmd(&["TYPE", key]), Value::Simple("MBbloom--".into()), "{how}: {key}");
        let now = answers(c, key);
        let before = &expected[*key];
        assert_eq!(now.info, before.info, "{how}: BF.INFO {key}");
        assert_eq!(now.debug, before.debug, "{how}: BF.DEBUG {key}");
        assert_eq!(now.card, before.card, "{how}: BF.CARD {key}");
        assert_eq!(now.digest, before.digest, "{how}: digest of {key}");
        assert!(now.exists == before.exists, "{how}: {key} answers an item differently");
        assert!(c.scandump_all(key) == scandump_fixture(key), "{how}: SCANDUMP of {key}");
        // Every added item that was not deleted answers 1 (no false negative in the fixture).
        let deleted = deleted_items(key);
        let kept: Vec<String> =
            added_items(key).into_iter().filter(|i| !deleted.contains(i)).collect();
        c.assert_all_present(key, &kept);
    }
}

#[test]
fn rdb_file_written_before_loads_with_the_same_answers() {
    let dir = Arc::new(TempDir::new("fixture-rdb"));
    std::fs::copy(fixture_dir().join("dump.rdb"), dir.path().join("dump.rdb")).expect("copy");
    let s = Server::start_in(dir, ServerOpts::new());
    let mut c = s.conn();
    assert_eq!(c.int(&["DBSIZE"]), KEYS.len() as i64);
    assert_as_before(&mut c, "RDB");
    // Saved again by this build, the filters reload unchanged.
    c.ok(&["DEBUG", "RELOAD"]);
    assert_as_before(&mut c, "RDB, then DEBUG RELOAD");
}

#[test]
fn dump_payloads_written_before_restore_with_the_same_answers() {
    let s = Server::start();
    let mut c = s.conn();
    for key in KEYS {
        let payload = std::fs::read(fixture_dir().join(format!("{key}.dump"))).expect("payload");
        c.ok(&[&b"RESTORE"[..], key.as_bytes(), b"0", &payload]);
    }
    assert_as_before(&mut c, "RESTORE");
}

#[test]
fn scandump_streams_written_before_load_with_the_same_answers() {
    let s = Server::start();
    let mut c = s.conn();
    for key in KEYS {
        for (it, data) in scandump_fixture(key) {
            c.ok(&[&b"BF.LOADCHUNK"[..], key.as_bytes(), it.to_string().as_bytes(), &data]);
        }
    }
    assert_as_before(&mut c, "BF.LOADCHUNK");
}

/// Rewrites `tests/fixtures/bloom/` from the module under test (run by hand, with the build whose
/// data the fixtures must keep: `cargo test --test fixtures -- --ignored write_fixtures`).
#[test]
#[ignore = "overwrites tests/fixtures/bloom/: run by hand to capture a build's data"]
fn write_fixtures() {
    let s = Server::start();
    let mut c = s.conn();
    build(&mut c);
    let dir = fixture_dir();
    std::fs::create_dir_all(&dir).expect("mkdir tests/fixtures/bloom");
    let mut all = BTreeMap::new();
    for key in KEYS {
        all.insert(key.to_string(), answers(&mut c, key));
        let payload = c.cmd(&["DUMP", key]).as_bytes().to_vec();
        std::fs::write(dir.join(format!("{key}.dump")), payload).expect("write dump");
        let stream = encode_scandump(&c.scandump_all(key));
        std::fs::write(dir.join(format!("{key}.scandump")), stream).expect("write scandump");
    }
    write_expected(&dir.join("expected.txt"), &all);
    c.ok(&["SAVE"]);
    std::fs::copy(s.dir().path().join("dump.rdb"), dir.join("dump.rdb")).expect("copy dump.rdb");
}
