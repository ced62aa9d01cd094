//! Replication and persistence: a replica and an AOF end with the same fingerprints in the
//! same slots (`DEBUG DIGEST-VALUE` equal), whatever their own `cf-*` settings.

use super::*;

fn assert_digests_equal(a: &mut Conn, b: &mut Conn, keys: &[&str]) {
    for k in keys {
        let d = a.digest(k);
        assert_ne!(d, "0000000000000000000000000000000000000000", "{k} missing");
        assert_eq!(b.digest(k), d, "digest of {k}");
    }
}

/// Relocating inserts, deletes (with automatic compaction), CF.COMPACT and expansion, on a
/// replica whose own cf-* settings differ from the primary's: the creating commands replicate
/// verbatim, and the replica reads the options they leave out from the primary's settings
/// (`BF.REPLCONF`), not its own.
#[test]
fn replica_is_digest_equal_after_every_kind_of_write() {
    let p = Server::start();
    let mut pc = p.conn();
    let (_r, mut rc) = Server::start_replica(
        p.port,
        None,
        ServerOpts::new().module_args(&[
            "cf-initial-size",
            "4096",
            "cf-bucket-size",
            "4",
            "cf-max-iterations",
            "5",
            "cf-expansion-factor",
            "4",
        ]),
    );
    let made = make_filters(&mut pc);
    pc.cmd(&["CF.ADDNX", "auto-nx", "x"]);
    pc.cmd(&["CF.INSERTNX", "auto-insertnx", "CAPACITY", "100", "ITEMS", "x", "y", "x"]);
    pc.ok(&["CF.RESERVE", "w32", "200", "FINGERPRINT", "32", "EXPANSION", "2"]);
    cf_insert(&mut pc, "w32", &names("w32", 900));
    pc.wait_acked();
    let mut keys: Vec<&str> = made.iter().map(|(k, _)| *k).collect();
    keys.extend(["auto-nx", "auto-insertnx", "w32"]);
    assert_digests_equal(&mut pc, &mut rc, &keys);
    // A filter made by CF.ADD from the settings: the primary's defaults, on the replica too.
    assert_eq!(cf_info(&mut rc, "auto"), cf_info(&mut pc, "auto"));
}

/// Every CF.LOADCHUNK chunk reaches the replica (RedisBloom #1014 replicated only some, so a
/// failover lost data silently).
#[test]
fn loadchunk_chunks_replicate() {
    let p = Server::start();
    let mut pc = p.conn();
    let (_r, mut rc) = Server::start_replica(p.port, None, ServerOpts::new());
    let src = Server::start();
    let mut sc = src.conn();
    make_filters(&mut sc);
    let steps = cf_scandump_all(&mut sc, "grown1");
    assert!(steps.len() > 2, "a dump of several chunks");
    cf_loadchunks(&mut pc, "copy", &steps);
    pc.wait_acked();
    assert!(cf_scandump_all(&mut rc, "copy") == steps, "the replica's copy");
    assert_eq!(rc.digest("copy"), sc.digest("grown1"));
}

/// AOF rewrite (CF.LOADCHUNK header and chunks) and AOF replay of the commands both rebuild
/// every filter bit for bit.
#[test]
fn aof_rewrite_and_replay_restore_every_filter() {
    let dir = Arc::new(TempDir::new("cf-aof"));
    let opts = || ServerOpts::new().arg("appendonly", "yes").arg("aof-use-rdb-preamble", "no");
    let s = Server::start_in(dir.clone(), opts());
    let mut c = s.conn();
    let made = make_filters(&mut c);
    c.ok(&["CF.RESERVE", "w16", "100", "FINGERPRINT", "16"]);
    cf_insert(&mut c, "w16", &names("w16", 300));
    let mut keys: Vec<&str> = made.iter().map(|(k, _)| *k).collect();
    keys.push("w16");
    let before: Vec<String> = keys.iter().map(|k| c.digest(k)).collect();
    // Replay of the commands as written.
    c.ok(&["DEBUG", "LOADAOF"]);
    assert_eq!(keys.iter().map(|k| c.digest(k)).collect::<Vec<_>>(), before, "AOF replay");
    // Rewritten as CF.LOADCHUNK, then replayed.
    c.rewrite_aof();
    c.ok(&["DEBUG", "LOADAOF"]);
    assert_eq!(keys.iter().map(|k| c.digest(k)).collect::<Vec<_>>(), before, "AOF rewrite");
    // And the RDB round trip.
    c.ok(&["DEBUG", "RELOAD"]);
    assert_eq!(keys.iter().map(|k| c.digest(k)).collect::<Vec<_>>(), before, "RDB reload");
}

/// An insert that fails loses nothing: a full filter (EXPANSION 0, or at cf-max-expansions)
/// answers full and every item present before is present after, and the replica agrees.
#[test]
fn a_failed_insert_loses_nothing() {
    let p = Server::start_with(ServerOpts::new().module_args(&["cf-max-expansions", "2"]));
    let mut pc = p.conn();
    let (_r, mut rc) = Server::start_replica(
        p.port,
        None,
        ServerOpts::new().module_args(&["cf-max-expansions", "2"]),
    );
    for (key, reserve) in [
        ("e0", vec!["CF.RESERVE", "e0", "64", "EXPANSION", "0", "MAXITERATIONS", "30"]),
        ("max2", vec!["CF.RESERVE", "max2", "64", "BUCKETSIZE", "1", "EXPANSION", "1"]),
    ] {
        pc.ok(&reserve);
        let items = names(key, 400);
        let mut present = Vec::new();
        let mut full = 0;
        for item in &items {
            let before = present.clone();
            match pc.cmd(&["CF.ADD", key, item]) {
                Value::Int(1) => present.push(item.clone()),
                Value::Error(e) => {
                    assert!(
                        e == "Filter is full" || e == "Maximum expansions reached",
                        "{key}: {e}"
                    );
                    full += 1;
                    assert!(
                        cf_mexists(&mut pc, key, &before).iter().all(|&b| b == 1),
                        "{key}: lost an item at {item}"
                    );
                }
                other => panic!("{key}: CF.ADD {item} -> {other:?}"),
            }
        }
        assert!(full > 0, "{key} never filled");
        assert!(cf_mexists(&mut pc, key, &present).iter().all(|&b| b == 1));
        let r = pc.cmd(&["CF.INSERT", key, "ITEMS", "more1", "more2"]);
        assert!(r.is_err() || r.as_array().iter().all(|v| *v == Value::Int(-1)), "{key}: {r:?}");
    }
    pc.wait_acked();
    assert_digests_equal(&mut pc, &mut rc, &["e0", "max2"]);
}

/// An insert cut short by the per-filter limit (`bf.max-filter-bytes`, which replicas do not
/// apply) replicates only what went in: the replica does not grow where the primary refused.
#[test]
fn inserts_refused_by_the_byte_limit_replicate_exactly() {
    let p = Server::start_with(ServerOpts::new().module_args(&["max-filter-bytes", "8192"]));
    let mut pc = p.conn();
    let (_r, mut rc) = Server::start_replica(p.port, None, ServerOpts::new());
    pc.ok(&["CF.RESERVE", "lim", "2048", "EXPANSION", "2"]);
    let replies = cf_insert(&mut pc, "lim", &names("lim", 6000));
    let errors: Vec<&Value> = replies.iter().filter(|v| v.is_err()).collect();
    assert!(!errors.is_empty(), "the limit never refused growth");
    assert!(errors[0].err_text().contains("bf.max-filter-bytes"), "{:?}", errors[0]);
    assert_eq!(pc.cmd(&["CF.ADD", "lim2", "x"]).as_bit(), 1);
    // A command that creates its filter and is then cut short: the replica gets the filter's
    // header (its CAPACITY and FINGERPRINT) and the items that went in.
    let mut insert = vec!["CF.INSERT", "lim3", "CAPACITY", "2048", "FINGERPRINT", "16", "ITEMS"];
    let items = names("lim3", 6000);
    insert.extend(items.iter().map(String::as_str));
    let replies = pc.cmd(&insert).as_array().to_vec();
    assert!(replies.iter().any(|v| v.is_err()), "the limit never refused growth of lim3");
    assert!(replies.iter().any(|v| !v.is_err()), "nothing went into lim3");
    pc.wait_acked();
    assert_digests_equal(&mut pc, &mut rc, &["lim", "lim2", "lim3"]);
}

/// The filters creating commands make with the `cf-*` defaults replay from the AOF as they were
/// made, after the server's own settings changed: the AOF holds the commands as sent (no
/// `CF.LOADCHUNK` header per creation) and the `BF.REPLCONF` with the settings they ran with.
#[test]
fn aof_replay_of_creating_commands_uses_the_settings_they_ran_with() {
    let dir = Arc::new(TempDir::new("cf-aof-settings"));
    let opts =
        ServerOpts::new().arg("appendonly", "yes").arg("aof-use-rdb-preamble", "no").module_args(
            &["cf-bucket-size", "4", "cf-initial-size", "100", "cf-expansion-factor", "2"],
        );
    let s = Server::start_in(dir.clone(), opts);
    let mut c = s.conn();
    c.ok(&["CF.RESERVE", "r", "64"]);
    cf_insert(&mut c, "r", &names("r", 400));
    c.cmd(&["CF.ADD", "a", "x"]);
    cf_insert(&mut c, "a", &names("a", 400));
    let mut insert = vec!["CF.INSERTNX", "i", "ITEMS"];
    let items = names("i", 300);
    insert.extend(items.iter().map(String::as_str));
    c.cmd(&insert);
    let keys = ["r", "a", "i"];
    let before: Vec<String> = keys.iter().map(|k| c.digest(k)).collect();
    let info = cf_info(&mut c, "a");
    let field = |info: &[(String, i64)], name: &str| {
        info.iter().find(|(k, _)| k == name).map(|(_, v)| *v).expect(name)
    };
    assert_eq!(field(&info, "Bucket size"), 4);
    assert_eq!(field(&info, "Expansion rate"), 2);
    for (name, value) in [
        ("bf.cf-bucket-size", "1"),
        ("bf.cf-initial-size", "4096"),
        ("bf.cf-expansion-factor", "4"),
        ("bf.cf-max-iterations", "3"),
    ] {
        c.ok(&["CONFIG", "SET", name, value]);
    }
    c.ok(&["DEBUG", "LOADAOF"]);
    assert_eq!(keys.iter().map(|k| c.digest(k)).collect::<Vec<_>>(), before, "AOF replay");
    assert_eq!(cf_info(&mut c, "a"), info);
    let mut aof = Vec::new();
    for entry in std::fs::read_dir(dir.path().join("appendonlydir")).unwrap() {
        aof.extend(std::fs::read(entry.unwrap().path()).unwrap());
    }
    let has = |needle: &[u8]| aof.windows(needle.len()).any(|w| w == needle);
    assert!(has(b"CF.RESERVE") && has(b"BF.REPLCONF"), "the AOF holds the commands as sent");
    assert!(!has(b"CF.LOADCHUNK"), "no creation was written as its header");
    // And filters made after the replay take the server's new settings.
    c.cmd(&["CF.ADD", "new", "x"]);
    let i = cf_info(&mut c, "new");
    assert_eq!(field(&i, "Bucket size"), 1);
    assert_eq!(field(&i, "Number of buckets"), 4096);
    assert_eq!(field(&i, "Expansion rate"), 4);
    assert_eq!(field(&i, "Max iterations"), 3);
}
