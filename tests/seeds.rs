//! Creating commands replicate verbatim: a replica, an AOF replay and a replica of a replica
//! derive the same parameters and seeds as the primary from the command and the creation
//! settings the primary sends (`BF.REPLCONF`, RDB aux data), whatever their own defaults.

mod common;
use common::*;

/// Defaults unlike the primary's, so a replica that used its own would build other filters.
const OTHER_DEFAULTS: &[&str] =
    &["error-rate", "0.05", "initial-size", "7", "expansion-factor", "4"];

/// A replica of the server on `upstream`, with [`OTHER_DEFAULTS`], in `dir` if given.
fn replica_of(upstream: u16, dir: Option<std::sync::Arc<TempDir>>) -> Server {
    let opts = ServerOpts::new().module_args(OTHER_DEFAULTS).arg("repl-diskless-sync-delay", "0");
    Server::start_replica(upstream, dir, opts).0
}

fn start_primary() -> Server {
    Server::start_with(ServerOpts::new().arg("repl-diskless-sync-delay", "0"))
}

/// Every key's SCANDUMP (header with parameters and seed, then every bit) is the same on both.
fn assert_same_filters(a: &mut Conn, b: &mut Conn, keys: &[&str], what: &str) {
    for k in keys {
        let da = a.scandump_all(k);
        assert!(!da.is_empty(), "{what}: no filter at {k}");
        assert!(da == b.scandump_all(k), "{what}: {k} differs (header, seed or bits)");
    }
}

/// Creates one filter of each creating path on `c`, with `tag` in the key names.
fn create_each_way(c: &mut Conn, tag: &str) -> Vec<String> {
    let k = |n: &str| format!("{tag}:{n}");
    c.ok(&["BF.RESERVE", &k("reserve"), "0.01", "100"]);
    c.ok(&["BF.RESERVE", &k("counting"), "0.01", "100", "COUNTING", "4"]);
    assert_eq!(c.cmd(&["BF.ADD", &k("add"), "first"]), Value::Int(1));
    c.madd(&k("madd"), &items("m", 30));
    c.cmd(&["BF.INSERT", &k("insert"), "CAPACITY", "50", "ITEMS", "x", "y"]);
    let its = items("i", 40);
    let mut insert = vec!["BF.INSERT".to_string(), k("insert-defaults"), "ITEMS".into()];
    insert.extend(its);
    c.cmd(&insert);
    ["reserve", "counting", "add", "madd", "insert", "insert-defaults"]
        .iter()
        .map(|n| k(n))
        .collect()
}

fn strs(keys: &[String]) -> Vec<&str> {
    keys.iter().map(String::as_str).collect()
}

fn commandstat(c: &mut Conn, command: &str) -> Option<i64> {
    let line = c.info_field("commandstats", &format!("cmdstat_{command}"))?;
    line.split(',').find_map(|f| f.strip_prefix("calls=")).and_then(|v| v.parse().ok())
}

#[test]
fn creating_commands_replicate_verbatim_and_replicas_derive_the_same_filters() {
    let p = start_primary();
    let r = replica_of(p.port, None);
    let (mut pc, mut rc) = (p.conn(), r.conn());
    let mut keys = create_each_way(&mut pc, "a");
    // A settings change on the primary reaches the replica before the next creation.
    pc.ok(&["CONFIG", "SET", "bf.error-rate", "0.002"]);
    pc.ok(&["CONFIG", "SET", "bf.initial-size", "33"]);
    keys.extend(create_each_way(&mut pc, "b"));
    wait_caught_up(&mut pc, &mut rc);
    assert_same_filters(&mut pc, &mut rc, &strs(&keys), "replica");
    assert_eq!(rc.bf_info("b:add").capacity, 33);
    // Verbatim: the replica ran the creating commands themselves, no BF.LOADCHUNK header.
    assert_eq!(commandstat(&mut rc, "bf.loadchunk"), None);
    assert_eq!(commandstat(&mut rc, "bf.reserve"), Some(4));
    assert!(commandstat(&mut rc, "bf.replconf").is_some_and(|n| n >= 1));
    // Stopped early after creating: the replica gets the filter as it was created, then only
    // the items that went in.
    let r = pc.cmd(&[
        "BF.INSERT",
        "partial",
        "CAPACITY",
        "3",
        "NONSCALING",
        "ITEMS",
        "a",
        "b",
        "c",
        "d",
        "e",
        "f",
    ]);
    assert!(r.as_array().last().unwrap().is_err(), "{r:?}");
    wait_caught_up(&mut pc, &mut rc);
    assert_same_filters(&mut pc, &mut rc, &["partial"], "replica");
    // Seeds differ per key, and are not 0: the replica derived them, it did not fall back.
    let seeds: std::collections::HashSet<Vec<u8>> =
        keys.iter().map(|k| pc.scandump_all(k)[0].1.clone()).collect();
    assert_eq!(seeds.len(), keys.len());
}

#[test]
fn a_replica_of_a_replica_takes_the_settings_from_its_upstreams_rdb() {
    let p = start_primary();
    let r1 = replica_of(p.port, None);
    let (mut pc, mut r1c) = (p.conn(), r1.conn());
    let mut keys = create_each_way(&mut pc, "before");
    wait_caught_up(&mut pc, &mut r1c);
    // The primary does not see this replica connect, so it sends no settings for it: they
    // come in r1's RDB.
    let r2 = replica_of(r1.port, None);
    let mut r2c = r2.conn();
    keys.extend(create_each_way(&mut pc, "after"));
    wait_caught_up(&mut pc, &mut r2c);
    assert_same_filters(&mut pc, &mut r2c, &strs(&keys), "replica of a replica");
    assert_same_filters(&mut pc, &mut r1c, &strs(&keys), "replica");
}

#[test]
fn a_replica_restarted_from_its_rdb_resumes_and_still_matches() {
    let p = start_primary();
    let r = replica_of(p.port, None);
    let dir = r.dir();
    let (mut pc, mut rc) = (p.conn(), r.conn());
    let mut keys = create_each_way(&mut pc, "before");
    wait_caught_up(&mut pc, &mut rc);
    drop(rc);
    r.shutdown(&["SAVE"]);
    keys.extend(create_each_way(&mut pc, "while-down"));
    let r = replica_of(p.port, Some(dir));
    let mut rc = r.conn();
    keys.extend(create_each_way(&mut pc, "after"));
    wait_caught_up(&mut pc, &mut rc);
    assert_same_filters(&mut pc, &mut rc, &strs(&keys), "restarted replica");
}

#[test]
fn after_failover_the_old_primary_follows_the_new_ones_settings() {
    let p = start_primary();
    let r = replica_of(p.port, None);
    let (mut pc, mut rc) = (p.conn(), r.conn());
    let mut keys = create_each_way(&mut pc, "before");
    wait_caught_up(&mut pc, &mut rc);
    rc.ok(&["REPLICAOF", "NO", "ONE"]);
    pc.ok(&["REPLICAOF", "127.0.0.1", &r.port.to_string()]);
    wait_until("old primary's link up", || {
        pc.info_field("replication", "master_link_status").as_deref() == Some("up")
    });
    // The new primary creates with its own defaults and secret.
    keys.extend(create_each_way(&mut rc, "after"));
    wait_caught_up(&mut rc, &mut pc);
    assert_same_filters(&mut rc, &mut pc, &strs(&keys), "old primary");
    assert_eq!(rc.bf_info("after:add").capacity, 7, "the new primary's own default");
}

#[test]
fn aof_replay_rebuilds_filters_created_after_the_rewrite_identically() {
    for preamble in ["yes", "no"] {
        let opts = ServerOpts::new().arg("appendonly", "yes").arg("aof-use-rdb-preamble", preamble);
        let s = Server::start_with(opts.clone());
        let mut c = s.conn();
        let mut keys = create_each_way(&mut c, "base");
        c.rewrite_aof();
        keys.extend(create_each_way(&mut c, "tail"));
        c.ok(&["CONFIG", "SET", "bf.expansion-factor", "5"]);
        keys.extend(create_each_way(&mut c, "tail2"));
        let before: Vec<_> = keys.iter().map(|k| c.scandump_all(k)).collect();
        drop(c);
        // Restarted with other defaults: the replay must use the ones the AOF recorded.
        let s = s.restart(&[], opts.module_args(OTHER_DEFAULTS));
        let mut c = s.conn();
        for (k, b) in keys.iter().zip(&before) {
            assert!(c.scandump_all(k) == *b, "preamble {preamble}: {k} differs after AOF replay");
        }
        // New filters after the restart use the server's own (new) defaults.
        c.cmd(&["BF.ADD", "new", "x"]);
        assert_eq!(c.bf_info("new").capacity, 7);
    }
}

#[test]
fn creations_inside_transactions_and_scripts_replicate_with_their_settings() {
    let p = start_primary();
    let r = replica_of(p.port, None);
    let (mut pc, mut rc) = (p.conn(), r.conn());
    // A CONFIG SET makes the settings due again, so the BF.REPLCONF goes out inside the
    // transaction, and then inside the script.
    pc.ok(&["CONFIG", "SET", "bf.initial-size", "21"]);
    pc.ok(&["MULTI"]);
    assert_eq!(pc.cmd(&["BF.ADD", "tx:add", "x"]), Value::Simple("QUEUED".into()));
    assert_eq!(
        pc.cmd(&["BF.RESERVE", "tx:reserve", "0.01", "300"]),
        Value::Simple("QUEUED".into())
    );
    assert_eq!(pc.cmd(&["EXEC"]).as_array().len(), 2);
    pc.ok(&["CONFIG", "SET", "bf.initial-size", "22"]);
    let script = "redis.call('BF.ADD', KEYS[1], 'x'); return redis.call('BF.RESERVE', KEYS[2], '0.02', '50')";
    pc.ok(&["EVAL", script, "2", "lua:add", "lua:reserve"]);
    wait_caught_up(&mut pc, &mut rc);
    assert_same_filters(
        &mut pc,
        &mut rc,
        &["tx:add", "tx:reserve", "lua:add", "lua:reserve"],
        "replica",
    );
    assert_eq!(rc.bf_info("tx:add").capacity, 21);
    assert_eq!(rc.bf_info("lua:add").capacity, 22);
}

#[test]
fn a_primarys_rdb_without_filters_needs_the_module_only_on_redis_7_0() {
    let s = Server::start();
    let dir = s.dir();
    let mut c = s.conn();
    let skips_empty_aux = c.engine().skips_empty_module_aux();
    c.ok(&["SET", "plain", "v"]);
    c.ok(&["BF.RESERVE", "f", "0.01", "100"]);
    assert_eq!(c.int(&["DEL", "f"]), 1);
    c.ok(&["SAVE"]);
    drop(c);
    s.shutdown(&["NOSAVE"]);
    let without = Server::try_start_in(dir, ServerOpts::new().without_module());
    if skips_empty_aux {
        // Redis 7.2+ and Valkey: a primary writes no aux field (`aux_save2`).
        let s = without.unwrap_or_else(|log| panic!("did not start without the module: {log}"));
        assert_eq!(s.conn().cmd(&["GET", "plain"]), Value::Bulk(Some(b"v".to_vec())));
    } else {
        // Redis 7.0 writes the (empty) aux field whatever the module does.
        let log = without.err().expect("Redis 7.0 must refuse an RDB with module aux data");
        assert!(
            log.contains("scalebloom") || log.contains("MBbloom") || log.contains("module"),
            "{log}"
        );
    }
}

/// Appends `commands` (each RESP-encoded) to the incremental AOF file of the server whose
/// directory is `dir`, as if that server had run them.
fn append_to_incremental_aof(dir: &std::path::Path, commands: &[Vec<u8>]) {
    let incr = std::fs::read_dir(dir.join("appendonlydir"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.to_string_lossy().contains(".incr.aof"))
        .expect("an incremental AOF file");
    let mut tail = std::fs::read(&incr).unwrap();
    commands.iter().for_each(|c| tail.extend_from_slice(c));
    std::fs::write(&incr, tail).unwrap();
}

#[test]
fn a_corrupt_replconf_in_the_aof_is_refused_and_the_replay_goes_on() {
    let opts = ServerOpts::new().arg("appendonly", "yes").arg("aof-use-rdb-preamble", "no");
    let s = Server::start_with(opts.clone());
    let dir = s.dir();
    let mut c = s.conn();
    c.ok(&["BF.RESERVE", "before", "0.01", "100"]);
    assert_eq!(c.cmd(&["BF.ADD", "before", "x"]), Value::Int(1));
    let before = c.scandump_all("before");
    drop(c);
    s.shutdown(&[]);
    // Append settings of the wrong length and of an unknown version, then a creation, to the
    // AOF tail.
    let mut unknown_version = vec![9u8];
    unknown_version.extend_from_slice(&[0u8; 41]);
    let mut tail: Vec<Vec<u8>> = [b"short".to_vec(), unknown_version]
        .iter()
        .map(|bad| encode(&[b"BF.REPLCONF".as_slice(), bad]))
        .collect();
    tail.push(encode(&["BF.RESERVE", "after", "0.01", "100"]));
    append_to_incremental_aof(dir.path(), &tail);
    let mut s = Server::start_in(dir, opts);
    let mut c = s.conn();
    assert!(c.scandump_all("before") == before, "the filter from before the bad lines changed");
    assert_eq!(c.cmd(&["BF.ADD", "after", "x"]), Value::Int(1));
    assert_eq!(c.cmd(&["BF.EXISTS", "after", "x"]), Value::Int(1));
    s.assert_alive();
}

/// The hash scheme id in a native dump header (magic, `u32::MAX`, version, then the scheme).
fn header_scheme(c: &mut Conn, key: &str) -> u64 {
    let chunks = c.scandump_all(key);
    let header = &chunks.first().expect("a header chunk").1;
    u64::from_le_bytes(header[16..24].try_into().unwrap())
}

/// Standard filters are made in hash scheme 5; an AOF (or a primary) whose settings lack the
/// flag that says so has its creations replayed in scheme 1, as its writer made them: the same
/// bits as on the server that wrote them.
#[test]
fn creations_after_an_older_builds_settings_replay_in_scheme_1() {
    let opts = ServerOpts::new().arg("appendonly", "yes").arg("aof-use-rdb-preamble", "no");
    let s = Server::start_with(opts.clone());
    let dir = s.dir();
    let mut c = s.conn();
    c.ok(&["BF.RESERVE", "new", "0.01", "100"]);
    assert_eq!(header_scheme(&mut c, "new"), 5);
    drop(c);
    s.shutdown(&[]);
    // Settings version 2 as a build before scheme 5 sent them: random seeds, no other flag.
    let mut blob = vec![2u8];
    blob.extend_from_slice(&[7u8; 16]);
    blob.push(1);
    blob.extend_from_slice(&0.01f64.to_bits().to_le_bytes());
    blob.extend_from_slice(&100u64.to_le_bytes());
    blob.extend_from_slice(&2u64.to_le_bytes());
    for v in [2u16, 20, 1] {
        blob.extend_from_slice(&v.to_le_bytes());
    }
    blob.extend_from_slice(&1024u64.to_le_bytes());
    assert_eq!(blob.len(), 56);
    append_to_incremental_aof(
        dir.path(),
        &[
            encode(&[b"BF.REPLCONF".as_slice(), &blob]),
            encode(&["BF.RESERVE", "old", "0.01", "100"]),
            encode(&["BF.RESERVE", "oldcounting", "0.01", "100", "COUNTING", "4"]),
            encode(&["BF.MADD", "old", "a", "b", "c"]),
        ],
    );
    let s = Server::start_in(dir, opts);
    let mut c = s.conn();
    assert_eq!(header_scheme(&mut c, "new"), 5);
    assert_eq!(header_scheme(&mut c, "old"), 1);
    assert_eq!(header_scheme(&mut c, "oldcounting"), 1);
    assert_eq!(
        c.cmd(&["BF.MEXISTS", "old", "a", "b", "c"]),
        Value::Array(Some(vec![Value::Int(1); 3]))
    );
    // The server's own creations are scheme 5 again, plain and counting.
    c.ok(&["BF.RESERVE", "after", "0.01", "100"]);
    c.ok(&["BF.RESERVE", "aftercounting", "0.01", "100", "COUNTING", "8"]);
    assert_eq!(header_scheme(&mut c, "after"), 5);
    assert_eq!(header_scheme(&mut c, "aftercounting"), 5);
    // Both schemes survive a reload with their bits.
    let before: Vec<_> = ["old", "new"].iter().map(|k| c.scandump_all(k)).collect();
    c.ok(&["DEBUG", "RELOAD"]);
    let after: Vec<_> = ["old", "new"].iter().map(|k| c.scandump_all(k)).collect();
    assert!(before == after, "a reload changed a filter");
}
