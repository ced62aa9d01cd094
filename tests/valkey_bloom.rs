//! valkey-bloom's filters come into scalebloom and answer as valkey-bloom answered: the data
//! valkey-bloom 1.0 wrote on Valkey 8.1 and 9.1 (tests/fixtures/valkey-bloom: per key its
//! `DUMP` payload, its `BF.LOAD` payload and valkey-bloom's answers) is restored with
//! `RESTORE` (where the server reads that payload's RDB version) and created with `BF.LOAD`
//! (every server). For each key: every added item answers 1, each of 10,000 never-added items
//! answers exactly as valkey-bloom did, `BF.CARD` and `BF.INFO` are valkey-bloom's; the key
//! keeps them through a save and reload in scalebloom's own encoding and through an AOF
//! rewrite; and it grows as valkey-bloom's object would (the core's model, itself checked bit
//! for bit against valkey-bloom's objects in the unit tests).

mod common;
use common::*;
use scalebloom::filter::Unlimited;
use scalebloom::filter::valkey::payload;
use std::path::PathBuf;

const SERVERS: [&str; 2] = ["valkey-8.1", "valkey-9.1"];

fn dir_of(server: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/valkey-bloom").join(server)
}

/// valkey-bloom's answers for one key (a line of `expected.txt`).
struct Expected {
    key: String,
    added: usize,
    card: i64,
    absent: usize,
    false_positives: Vec<usize>,
    info: Vec<(String, String)>,
}

fn expected(server: &str) -> Vec<Expected> {
    let text = std::fs::read_to_string(dir_of(server).join("expected.txt")).unwrap();
    text.lines()
        .map(|line| {
            let f: Vec<&str> = line.split('\t').collect();
            Expected {
                key: f[0].into(),
                added: f[1].parse().unwrap(),
                card: f[2].parse().unwrap(),
                absent: f[3].parse().unwrap(),
                false_positives: f[4].split_whitespace().map(|n| n.parse().unwrap()).collect(),
                info: f[5]
                    .split(';')
                    .map(|kv| kv.split_once('=').map(|(k, v)| (k.into(), v.into())).unwrap())
                    .collect(),
            }
        })
        .collect()
}

impl Expected {
    fn items(&self) -> Vec<String> {
        let first = (self.key == "autocreated").then(|| "autocreated:item:first".to_string());
        first.into_iter().chain((0..self.added).map(|i| format!("{}:item:{i}", self.key))).collect()
    }

    /// Checks `key` on the server against valkey-bloom's answers.
    fn check(&self, c: &mut Conn, key: &str) {
        let items = self.items();
        for chunk in items.chunks(2000) {
            assert!(c.mexists(key, chunk).iter().all(|&v| v == 1), "{key}: an item is missing");
        }
        let absent: Vec<String> =
            (0..self.absent).map(|i| format!("{}:absent:{i}", self.key)).collect();
        let mut fp = Vec::new();
        for (n, chunk) in absent.chunks(2000).enumerate() {
            for (i, v) in c.mexists(key, chunk).into_iter().enumerate() {
                if v == 1 {
                    fp.push(n * 2000 + i);
                }
            }
        }
        assert_eq!(fp, self.false_positives, "{key}: absent items answer otherwise");
        assert_eq!(c.bf_card(key), self.card, "{key}");
        let info = c.cmd(&["BF.INFO", key]);
        let got: Vec<(String, String)> = info
            .pairs()
            .iter()
            .map(|(k, v)| {
                let v = if v.is_null() { "nil".to_string() } else { value_text(v) };
                (k.as_str().to_string(), v)
            })
            .collect();
        assert_eq!(got, self.info, "{key}: BF.INFO");
    }
}

fn value_text(v: &Value) -> String {
    match v {
        Value::Int(n) => n.to_string(),
        other => other.as_str().to_string(),
    }
}

/// A server whose per-filter limit is valkey-bloom's default (128 MiB), so `BF.INFO Max
/// scaled capacity` is computed as valkey-bloom computed it.
fn start() -> Server {
    Server::start_with(start_opts())
}

fn start_opts() -> ServerOpts {
    ServerOpts::new().module_args(&["max-filter-bytes", "128mb"])
}

/// Whether `engine` reads a DUMP payload of RDB version `version` (11 from Valkey 8.1, 80 from
/// Valkey 9.1): Redis 7.2+ and every Valkey read 11; Valkey 9 reads 80.
fn reads_rdb_version(engine: Engine, version: u16) -> bool {
    match version {
        11 => engine.valkey || engine.is_redis_at_least(7, 2),
        80 => engine.valkey && engine.version.0 >= 9,
        _ => false,
    }
}

fn dump_version(dump: &[u8]) -> u16 {
    let n = dump.len();
    u16::from_le_bytes([dump[n - 10], dump[n - 9]])
}

#[test]
fn restore_of_every_valkey_bloom_dump_answers_as_valkey_bloom_did() {
    let mut s = start();
    let mut c = s.conn();
    let engine = c.engine();
    let (mut restored, mut refused) = (0, 0);
    for server in SERVERS {
        for e in expected(server) {
            let Ok(dump) = std::fs::read(dir_of(server).join(&e.key).join("dump.bin")) else {
                continue;
            };
            let key = format!("{server}:{}", e.key);
            let r = c.cmd(&[b"RESTORE".as_slice(), key.as_bytes(), b"0", &dump]);
            if reads_rdb_version(engine, dump_version(&dump)) {
                assert!(r.is_ok(), "{key}: {r:?}");
                assert_eq!(c.cmd(&["TYPE", &key]).as_str(), "bloomfltr");
                e.check(&mut c, &key);
                restored += 1;
            } else {
                assert!(r.is_err(), "{key}: {engine} restored a payload it cannot read");
                refused += 1;
            }
        }
    }
    assert_eq!(restored + refused, 17);
    s.assert_alive();
}

#[test]
fn bf_load_of_every_payload_answers_as_valkey_bloom_did_and_survives_reload_and_rewrite() {
    let opts = start_opts().arg("appendonly", "yes").arg("aof-use-rdb-preamble", "no");
    let s = Server::start_with(opts.clone());
    let dir = s.dir();
    let mut c = s.conn();
    let mut keys = Vec::new();
    for server in SERVERS {
        for e in expected(server) {
            let Ok(p) = std::fs::read(dir_of(server).join(&e.key).join("bfload.bin")) else {
                continue;
            };
            let key = format!("{server}:{}", e.key);
            c.ok(&[b"BF.LOAD".as_slice(), key.as_bytes(), &p]);
            let again = c.cmd(&[b"BF.LOAD".as_slice(), key.as_bytes(), &p]);
            assert_eq!(again.err_text(), "BUSYKEY Target key name already exists.");
            e.check(&mut c, &key);
            keys.push((key, e));
        }
    }
    assert_eq!(keys.len(), 16);
    // Saved in scalebloom's own encoding and loaded again.
    c.ok(&["DEBUG", "RELOAD"]);
    for (key, e) in &keys {
        assert_eq!(c.cmd(&["TYPE", key]).as_str(), "bloomfltr");
        e.check(&mut c, key);
    }
    // The AOF rewrite writes BF.LOAD; a restart replays it into the same filters.
    c.rewrite_aof();
    drop(c);
    s.shutdown(&[]);
    let mut s = Server::start_in(dir, opts);
    let mut c = s.conn();
    for (key, e) in &keys {
        e.check(&mut c, key);
    }
    s.assert_alive();
}

#[test]
fn a_loaded_filter_grows_as_valkey_blooms_would() {
    let s = start();
    let mut c = s.conn();
    let p = std::fs::read(dir_of("valkey-8.1").join("scale3").join("bfload.bin")).unwrap();
    c.ok(&[b"BF.LOAD".as_slice(), b"k", &p]);
    let mut model = payload::decode(&p, &Unlimited).unwrap();
    // 4,954 of 7,000: the third layer fills, and a fourth (8,000 at 0.00125) is appended.
    let more: Vec<String> = (0..4000).map(|i| format!("more:{i}")).collect();
    let replies = c.madd("k", &more);
    let want: Vec<Value> = more
        .iter()
        .map(|m| Value::Int(i64::from(model.add(m.as_bytes(), &Unlimited).unwrap())))
        .collect();
    assert_eq!(replies, want);
    assert_eq!(model.layers().len(), 4);
    assert_eq!(c.bf_card("k"), model.items() as i64);
    let probes: Vec<String> = (0..20_000).map(|i| format!("probe:{i}")).collect();
    let got = c.mexists("k", &probes);
    let expect: Vec<i64> = probes.iter().map(|p| i64::from(model.contains(p.as_bytes()))).collect();
    assert_eq!(got, expect);
}

#[test]
fn bf_load_refuses_what_valkey_bloom_refuses_with_its_replies() {
    let s = start();
    let mut c = s.conn();
    let p = std::fs::read(dir_of("valkey-8.1").join("scale1").join("bfload.bin")).unwrap();
    let cases: Vec<(Vec<u8>, &str)> = vec![
        (Vec::new(), "ERR bloom object decoding failed"),
        (vec![2], "ERR bloom object decoding failed. Unsupported version"),
        (p[..p.len() - 1].to_vec(), "ERR bloom object decoding failed"),
        (
            {
                let mut m = p.clone();
                m[5..13].copy_from_slice(&1.5f64.to_le_bytes());
                m
            },
            "ERR (0 < error rate range < 1)",
        ),
    ];
    for (payload, want) in cases {
        let r = c.cmd(&[b"BF.LOAD".as_slice(), b"bad", &payload]);
        assert_eq!(r.err_text(), want);
        assert_eq!(c.cmd(&["EXISTS", "bad"]).as_int(), 0);
    }
    c.ok(&["SET", "str", "x"]);
    let r = c.cmd(&[b"BF.LOAD".as_slice(), b"str", &p]);
    assert_eq!(r.err_text(), "BUSYKEY Target key name already exists.");
    let r = c.cmd(&["BF.RESERVE", "vk", "0.01", "100"]);
    assert!(r.is_ok());
    c.ok(&[b"BF.LOAD".as_slice(), b"loaded", &p]);
    assert_eq!(c.cmd(&["BF.RESERVE", "loaded", "0.01", "100"]).err_text(), "ERR item exists");
}
