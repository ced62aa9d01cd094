//! Replication and persistence: a replica and an AOF end with the same fingerprints in the
//! same slots (`DEBUG DIGEST-VALUE` equal), whatever their own `cf-*` settings.

use super::*;

fn start_replica(primary: &Server, opts: ServerOpts) -> Server {
    let r = Server::start_with(opts.arg("replicaof", &format!("127.0.0.1 {}", primary.port)));
    let mut rc = r.conn();
    wait_until("replica link up", || {
        rc.info_field("replication", "master_link_status").as_deref() == Some("up")
    });
    r
}

fn wait_replicated(primary: &mut Conn) {
    wait_until("WAIT 1 to acknowledge", || primary.int(&["WAIT", "1", "5000"]) >= 1);
}

fn assert_digests_equal(a: &mut Conn, b: &mut Conn, keys: &[&str]) {
    for k in keys {
        let d = a.digest(k);
        assert_ne!(d, "0000000000000000000000000000000000000000", "{k} missing");
        assert_eq!(b.digest(k), d, "digest of {k}");
    }
}

/// Relocating inserts, deletes (with automatic compaction), CF.COMPACT and expansion, on a
/// replica whose own cf-* settings differ from the primary's: the filters it creates come from
/// the primary's header, not its settings.
#[test]
fn replica_is_digest_equal_after_every_kind_of_write() {
    let p = Server::start();
    let mut pc = p.conn();
    let r = start_replica(
        &p,
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
    let mut rc = r.conn();
    let made = make_filters(&mut pc);
    pc.cmd(&["CF.ADDNX", "auto-nx", "x"]);
    pc.cmd(&["CF.INSERTNX", "auto-insertnx", "CAPACITY", "100", "ITEMS", "x", "y", "x"]);
    pc.ok(&["CF.RESERVE", "w32", "200", "FINGERPRINT", "32", "EXPANSION", "2"]);
    cf_insert(&mut pc, "w32", &names("w32", 900));
    wait_replicated(&mut pc);
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
    let r = start_replica(&p, ServerOpts::new());
    let mut rc = r.conn();
    let src = Server::start();
    let mut sc = src.conn();
    make_filters(&mut sc);
    let steps = cf_scandump_all(&mut sc, "grown1");
    assert!(steps.len() > 2, "a dump of several chunks");
    cf_loadchunks(&mut pc, "copy", &steps);
    wait_replicated(&mut pc);
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
    c.cmd(&["BGREWRITEAOF"]);
    wait_until("AOF rewrite done", || {
        c.info_field("persistence", "aof_rewrite_in_progress").as_deref() == Some("0")
            && c.info_field("persistence", "aof_rewrite_scheduled").as_deref() == Some("0")
    });
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
    let r = start_replica(&p, ServerOpts::new().module_args(&["cf-max-expansions", "2"]));
    let mut rc = r.conn();
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
    wait_replicated(&mut pc);
    assert_digests_equal(&mut pc, &mut rc, &["e0", "max2"]);
}

/// An insert cut short by the per-filter limit (`bf.max-filter-bytes`, which replicas do not
/// apply) replicates only what went in: the replica does not grow where the primary refused.
#[test]
fn inserts_refused_by_the_byte_limit_replicate_exactly() {
    let p = Server::start_with(ServerOpts::new().module_args(&["max-filter-bytes", "8192"]));
    let mut pc = p.conn();
    let r = start_replica(&p, ServerOpts::new());
    let mut rc = r.conn();
    pc.ok(&["CF.RESERVE", "lim", "2048", "EXPANSION", "2"]);
    let replies = cf_insert(&mut pc, "lim", &names("lim", 6000));
    let errors: Vec<&Value> = replies.iter().filter(|v| v.is_err()).collect();
    assert!(!errors.is_empty(), "the limit never refused growth");
    assert!(errors[0].err_text().contains("bf.max-filter-bytes"), "{:?}", errors[0]);
    assert_eq!(pc.cmd(&["CF.ADD", "lim2", "x"]).as_bit(), 1);
    wait_replicated(&mut pc);
    assert_digests_equal(&mut pc, &mut rc, &["lim", "lim2"]);
}
