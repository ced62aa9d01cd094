//! RedisBloom's cuckoo data comes in by every path, and answers as in RedisBloom: RDB file at
//! startup, RESTORE of its DUMP payloads, CF.SCANDUMP → CF.LOADCHUNK (both ways), and a full
//! sync from a RedisBloom primary.

use super::*;

/// Every filter of `made` answers on `sb` as on `rb`: CF.INFO, present and absent items,
/// SCANDUMP bytes; and further inserts agree.
fn assert_same(rb: &mut Conn, sb: &mut Conn, made: &[(&'static str, Vec<String>)]) {
    for (key, items) in made {
        assert_eq!(sb.cmd(&["TYPE", key]).as_str(), "MBbloomCF");
        assert_eq!(cf_info(sb, key), cf_info(rb, key), "CF.INFO {key}");
        assert!(cf_mexists(sb, key, items).iter().all(|&p| p == 1), "{key}: an item is missing");
        let absent = names(&format!("{key}:absent"), 3000);
        assert_eq!(cf_mexists(sb, key, &absent), cf_mexists(rb, key, &absent), "{key}: absent");
        assert!(cf_scandump_all(sb, key) == cf_scandump_all(rb, key), "SCANDUMP bytes of {key}");
    }
}

/// More inserts and deletes on both sides give the same bytes (the imported filter is a
/// working one, not a read-only copy).
fn further_writes_agree(rb: &mut Conn, sb: &mut Conn, key: &str) {
    let more = names(&format!("{key}:more"), 1500);
    assert_eq!(cf_insert(sb, key, &more), cf_insert(rb, key, &more), "{key}: more inserts");
    for item in more.iter().step_by(4) {
        assert_eq!(sb.cmd(&["CF.DEL", key, item]), rb.cmd(&["CF.DEL", key, item]));
    }
    assert!(cf_scandump_all(sb, key) == cf_scandump_all(rb, key), "{key} after more writes");
}

#[test]
fn redisbloom_rdb_file_loads_at_startup() {
    let rb_srv = redisbloom_server("cf-rb-rdb");
    let mut rb = rb_srv.conn();
    let made = make_filters(&mut rb);
    rb.ok(&["SAVE"]);
    let dir = Arc::new(TempDir::new("cf-sb-rdb"));
    std::fs::copy(rb_srv.dir().path().join("dump.rdb"), dir.path().join("dump.rdb"))
        .expect("copy RedisBloom's dump.rdb");
    let sb_srv = Server::start_in(dir, ServerOpts::new());
    let mut sb = sb_srv.conn();
    assert_eq!(sb.int(&["DBSIZE"]), made.len() as i64);
    assert_same(&mut rb, &mut sb, &made);
    // Saved again in scalebloom's encoding, reloaded unchanged.
    let digests: Vec<String> = made.iter().map(|(k, _)| sb.digest(k)).collect();
    sb.ok(&["DEBUG", "RELOAD"]);
    let after: Vec<String> = made.iter().map(|(k, _)| sb.digest(k)).collect();
    assert_eq!(digests, after, "DEBUG RELOAD changed an imported filter");
    further_writes_agree(&mut rb, &mut sb, "grown1");
}

#[test]
fn redisbloom_dump_payloads_restore() {
    let rb_srv = redisbloom_server("cf-rb-dump");
    let mut rb = rb_srv.conn();
    let made = make_filters(&mut rb);
    let sb_srv = Server::start();
    let mut sb = sb_srv.conn();
    for (key, _) in &made {
        let payload = rb.cmd(&["DUMP", key]).as_bytes().to_vec();
        sb.ok(&[&b"RESTORE"[..], key.as_bytes(), b"0", &payload]);
    }
    assert_same(&mut rb, &mut sb, &made);
    further_writes_agree(&mut rb, &mut sb, "churn");
}

#[test]
fn scandump_streams_go_both_ways() {
    let rb_srv = redisbloom_server("cf-rb-scan");
    let mut rb = rb_srv.conn();
    let made = make_filters(&mut rb);
    let sb_srv = Server::start();
    let mut sb = sb_srv.conn();
    for (key, _) in &made {
        let steps = cf_scandump_all(&mut rb, key);
        cf_loadchunks(&mut sb, key, &steps);
    }
    assert_same(&mut rb, &mut sb, &made);
    // The way back: scalebloom's dumps (after more writes here) load into a fresh RedisBloom.
    let back_srv = redisbloom_server("cf-rb-back");
    let mut back = back_srv.conn();
    let more = names("tight:back", 200);
    cf_insert(&mut sb, "tight", &more);
    for (key, _) in &made {
        let steps = cf_scandump_all(&mut sb, key);
        cf_loadchunks(&mut back, key, &steps);
        assert_eq!(cf_info(&mut back, key), cf_info(&mut sb, key), "CF.INFO {key} in RedisBloom");
        assert!(cf_scandump_all(&mut back, key) == steps, "{key} round trip");
    }
    assert!(cf_mexists(&mut back, "tight", &more).iter().all(|&p| p == 1));
}

/// A 16-bit filter's dump uses scalebloom's own header, which RedisBloom refuses (no silent
/// misreading), and which scalebloom loads back.
#[test]
fn wide_fingerprint_dumps_are_refused_by_redisbloom() {
    let sb_srv = Server::start();
    let mut sb = sb_srv.conn();
    sb.ok(&["CF.RESERVE", "w16", "1000", "FINGERPRINT", "16"]);
    cf_insert(&mut sb, "w16", &names("w16", 1500));
    let steps = cf_scandump_all(&mut sb, "w16");
    let rb_srv = redisbloom_server("cf-rb-w16");
    let mut rb = rb_srv.conn();
    let r = rb.cmd(&[&b"CF.LOADCHUNK"[..], b"w16", b"1", &steps[0].1]);
    assert_eq!(r, Value::Error("Invalid header".into()));
    cf_loadchunks(&mut sb, "copy", &steps);
    assert_eq!(sb.digest("copy"), sb.digest("w16"));
}

/// Full sync from a RedisBloom primary, then its stream (CF.ADD, CF.INSERT, CF.DEL,
/// CF.RESERVE as RedisBloom replicates them): the replica ends with RedisBloom's bytes.
#[test]
fn replica_of_a_redisbloom_primary() {
    let rb_srv = redisbloom_server("cf-rb-primary");
    let mut rb = rb_srv.conn();
    let made = make_filters(&mut rb);
    let (_sb_srv, mut sb) = Server::start_replica(rb_srv.port, None, ServerOpts::new());
    cf_insert(&mut rb, "grown1", &names("grown1:live", 3000));
    rb.ok(&["CF.RESERVE", "live-new", "100", "EXPANSION", "2"]);
    cf_insert(&mut rb, "live-new", &names("live-new", 500));
    for item in names("grown1", 500) {
        rb.cmd(&["CF.DEL", "grown1", &item]);
    }
    rb.cmd(&["CF.ADD", "live-auto", "x"]);
    wait_until("the replica acknowledged the stream", || rb.int(&["WAIT", "1", "5000"]) >= 1);
    let mut all = made;
    all.push(("live-new", names("live-new", 500)));
    all.push(("live-auto", vec!["x".to_string()]));
    for (key, _) in &all {
        assert!(
            cf_scandump_all(&mut sb, key) == cf_scandump_all(&mut rb, key),
            "{key} on the replica"
        );
    }
}
