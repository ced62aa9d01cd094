//! What the server sees of CF.*: flags, key specs and ACL categories as RedisBloom 8 registers
//! them, COMMAND DOCS, keyspace events, the cf-* settings, COPY.

use super::*;

/// Flags and categories per command, as `COMMAND INFO` reports them.
#[test]
fn flags_key_specs_and_acl_categories() {
    let s = Server::start();
    let mut c = s.conn();
    let engine = c.engine();
    let reads = ["cf.exists", "cf.mexists", "cf.count", "cf.info", "cf.debug", "cf.scandump"];
    let writes = ["cf.reserve", "cf.add", "cf.addnx", "cf.insert", "cf.insertnx", "cf.loadchunk"];
    let fast_writes = ["cf.del", "cf.compact"];
    for (names, flags) in [
        (&reads[..], &["readonly", "fast"][..]),
        (&writes[..], &["write", "denyoom"][..]),
        (&fast_writes[..], &["write", "fast"][..]),
    ] {
        for name in names {
            let info = c.cmd(&["COMMAND", "INFO", name]);
            let entry = &info.as_array()[0].as_array().to_vec();
            assert_eq!(entry[0].as_str(), *name);
            let got: Vec<&str> = entry[2].as_array().iter().map(|v| v.as_str()).collect();
            for f in flags {
                assert!(got.contains(f), "{name}: flags {got:?} lack {f}");
            }
            assert_eq!((entry[3].as_int(), entry[4].as_int(), entry[5].as_int()), (1, 1, 1));
        }
    }
    let cat = c.cmd(&["ACL", "CAT", "cuckoo"]);
    assert_eq!(!cat.is_err(), engine.has_module_acl_categories(), "{engine}: {cat:?}");
    if engine.has_module_acl_categories() {
        let listed = format!("{cat:?}");
        for name in reads.iter().chain(&writes).chain(&fast_writes) {
            assert!(listed.contains(name), "{name} missing from @cuckoo: {listed}");
        }
        let bloom = format!("{:?}", c.cmd(&["ACL", "CAT", "bloom"]));
        assert!(!bloom.contains("cf."), "CF commands in @bloom: {bloom}");
        // A user with +@read may query cuckoo filters but not change them.
        c.cmd(&["CF.ADD", "k", "a"]);
        assert!(c.cmd(&["ACL", "SETUSER", "reader", "on", ">pw", "~*", "+@read"]).is_ok());
        let mut r = s.conn();
        assert!(r.cmd(&["AUTH", "reader", "pw"]).is_ok());
        assert_eq!(r.cmd(&["CF.EXISTS", "k", "a"]).as_bit(), 1);
        assert!(r.cmd(&["CF.ADD", "k", "b"]).err_text().starts_with("NOPERM"));
        assert!(r.cmd(&["CF.COMPACT", "k"]).err_text().starts_with("NOPERM"));
    }
}

#[test]
fn command_docs_name_the_arguments() {
    let s = Server::start();
    let mut c = s.conn();
    let docs = format!("{:?}", c.cmd(&["COMMAND", "DOCS", "cf.reserve"]));
    for token in ["BUCKETSIZE", "MAXITERATIONS", "EXPANSION", "FINGERPRINT", "capacity"] {
        assert!(docs.contains(token), "COMMAND DOCS cf.reserve lacks {token}: {docs}");
    }
    let docs = format!("{:?}", c.cmd(&["COMMAND", "DOCS", "cf.insertnx"]));
    for token in ["CAPACITY", "NOCREATE", "ITEMS"] {
        assert!(docs.contains(token), "COMMAND DOCS cf.insertnx lacks {token}: {docs}");
    }
}

/// Every CF write that changes a filter publishes `cf.<command>`; one that changes nothing
/// (CF.ADDNX of a present item, CF.DEL of an absent one) publishes none.
#[test]
fn writes_publish_keyspace_events() {
    let s = Server::start();
    let mut c = s.conn();
    c.ok(&["CONFIG", "SET", "notify-keyspace-events", "Kd"]);
    let mut sub = s.conn();
    sub.cmd(&["PSUBSCRIBE", "__keyspace@0__:*"]);
    c.ok(&["CF.RESERVE", "k", "100"]);
    c.cmd(&["CF.ADD", "k", "a"]);
    c.cmd(&["CF.ADDNX", "k", "a"]); // present: nothing
    c.cmd(&["CF.ADDNX", "k", "b"]);
    c.cmd(&["CF.INSERT", "k", "ITEMS", "c"]);
    c.cmd(&["CF.INSERTNX", "k", "ITEMS", "d"]);
    c.cmd(&["CF.DEL", "k", "never"]); // absent: nothing
    c.cmd(&["CF.DEL", "k", "a"]);
    c.ok(&["CF.COMPACT", "k"]);
    let steps = cf_scandump_all(&mut c, "k");
    cf_loadchunks(&mut c, "k2", &steps);
    c.ok(&["CF.RESERVE", "done", "100"]);
    let mut events = Vec::new();
    loop {
        let msg = sub.read_reply().expect("event");
        let a = msg.as_array();
        let (channel, event) = (a[2].as_str().to_string(), a[3].as_str().to_string());
        if channel.ends_with(":done") {
            break;
        }
        events.push(format!("{}:{event}", channel.rsplit(':').next().unwrap()));
    }
    let mut want = vec![
        "k:cf.reserve",
        "k:cf.add",
        "k:cf.addnx",
        "k:cf.insert",
        "k:cf.insertnx",
        "k:cf.del",
        "k:cf.compact",
    ];
    want.extend(std::iter::repeat_n("k2:cf.loadchunk", steps.len()));
    assert_eq!(events, want);
}

/// The cf-* settings: defaults, module arguments (RedisBloom 8's and 2.x's spellings),
/// CONFIG SET in RedisBloom 8's words, and filters made from them.
#[test]
fn cf_settings() {
    let s = Server::start_with(ServerOpts::new().module_args(&[
        "cf-bucket-size",
        "4",
        "CF_MAX_EXPANSIONS",
        "3",
        "cf-initial-size",
        "64",
    ]));
    let mut c = s.conn();
    assert_eq!(c.config_get("bf.cf-bucket-size").as_deref(), Some("4"));
    assert_eq!(c.config_get("bf.cf-max-expansions").as_deref(), Some("3"));
    assert_eq!(c.config_get("bf.cf-max-iterations").as_deref(), Some("20"));
    assert_eq!(c.config_get("bf.cf-expansion-factor").as_deref(), Some("1"));
    c.ok(&["CONFIG", "SET", "bf.cf-max-iterations", "7"]);
    c.ok(&["CONFIG", "SET", "bf.cf-expansion-factor", "3"]);
    c.cmd(&["CF.ADD", "auto", "x"]);
    assert_eq!(
        c.cmd(&["CF.DEBUG", "auto"]).as_str(),
        "bktsize:4 buckets:16 items:1 deletes:0 filters:1 max_iterations:7 expansion:4"
    );
    c.ok(&["CF.RESERVE", "r", "100"]);
    assert!(c.cmd(&["CF.DEBUG", "r"]).as_str().starts_with("bktsize:4 buckets:32 "));
    let e = c.cmd(&["CONFIG", "SET", "bf.cf-bucket-size", "256"]);
    assert!(format!("{e:?}").contains("cf-bucket-size` must be in the range [1, 255]"), "{e:?}");
    let e = c.cmd(&["CONFIG", "SET", "bf.cf-max-expansions", "0"]);
    assert!(format!("{e:?}").contains("[1, 65536]"), "{e:?}");
    // cf-max-expansions 3: a filter with 3 sub-filters takes no more inserts.
    c.ok(&["CF.RESERVE", "m", "8", "BUCKETSIZE", "1"]);
    let r = cf_insert(&mut c, "m", &names("m", 200));
    assert!(r.contains(&Value::Int(-1)), "{:?}", &r[..20]);
    assert_eq!(cf_info(&mut c, "m")[2].1, 3);
    assert_eq!(c.err(&["CF.ADD", "m", "one more"]), "Maximum expansions reached");
    if c.engine().has_unprefixed_module_configs() {
        c.ok(&["CONFIG", "SET", "cf-initial-size", "128"]);
        assert_eq!(c.config_get("bf.cf-initial-size").as_deref(), Some("128"));
    }
    // An unknown cf- argument refuses the load.
    let bad = Server::try_start_in(
        Arc::new(TempDir::new("cf-badarg")),
        ServerOpts::new().module_args(&["cf-bucket", "2"]),
    );
    assert!(bad.is_err(), "an unknown cf- argument loaded");
}

/// COPY and DEBUG DIGEST-VALUE: a copy is an equal, independent filter.
#[test]
fn copy_is_equal_and_independent() {
    let s = Server::start();
    let mut c = s.conn();
    c.ok(&["CF.RESERVE", "a", "100", "EXPANSION", "2"]);
    cf_insert(&mut c, "a", &names("a", 300));
    assert_eq!(c.int(&["COPY", "a", "b"]), 1);
    assert_eq!(c.digest("a"), c.digest("b"));
    c.cmd(&["CF.DEL", "b", "a:1"]);
    assert_ne!(c.digest("a"), c.digest("b"));
    assert_eq!(c.cmd(&["CF.EXISTS", "a", "a:1"]).as_bit(), 1);
}

/// Active defragmentation (Redis 8 built with its own jemalloc; `SCALEBLOOM_EXPECT_DEFRAG`
/// says whether the server can, as for tests/defrag.rs): small cuckoo filters left in sparse
/// pages are moved (`bf_defrag_moves`) and stay bit for bit the same.
#[test]
fn active_defrag_moves_cuckoo_filters_and_changes_nothing() {
    let expected = match std::env::var("SCALEBLOOM_EXPECT_DEFRAG").as_deref() {
        Ok("1") => true,
        Ok("0") => false,
        other => {
            panic!("SCALEBLOOM_EXPECT_DEFRAG must be 1 or 0 (make test-* sets it), got {other:?}")
        }
    };
    let s = Server::start();
    let mut c = s.conn();
    let on = c.cmd(&["CONFIG", "SET", "activedefrag", "yes"]);
    assert_eq!(on.is_ok(), expected, "activedefrag -> {on:?}");
    if !expected {
        return;
    }
    c.ok(&["CONFIG", "SET", "activedefrag", "no"]);
    let info = |c: &mut Conn, section: &str, field: &str| -> u64 {
        c.info_field(section, field).expect(field).parse().unwrap()
    };
    let before = info(&mut c, "bf", "bf_defrag_moves");
    const N: usize = 16_000;
    let mut fill = Vec::new();
    for i in 0..N {
        fill.push(vec!["CF.RESERVE".to_string(), format!("f{i}"), "64".into()]);
        fill.push(vec!["CF.ADD".to_string(), format!("f{i}"), format!("item-{i}")]);
        fill.push(vec!["SET".to_string(), format!("s{i}"), "x".repeat(100)]);
    }
    for batch in fill.chunks(1000) {
        assert!(c.pipeline(batch).iter().all(|r| !r.is_err()));
    }
    let mut delete = Vec::new();
    for i in 0..N {
        if i % 8 != 0 {
            delete.push(vec!["DEL".to_string(), format!("f{i}")]);
        }
        delete.push(vec!["DEL".to_string(), format!("s{i}")]);
    }
    for batch in delete.chunks(1000) {
        assert!(c.pipeline(batch).iter().all(|r| *r == Value::Int(1)));
    }
    let survivors: Vec<usize> = (0..N).step_by(8).collect();
    let digests: Vec<String> = survivors.iter().map(|i| c.digest(&format!("f{i}"))).collect();
    c.ok(&["CONFIG", "SET", "active-defrag-ignore-bytes", "1"]);
    c.ok(&["CONFIG", "SET", "active-defrag-threshold-lower", "0"]);
    c.ok(&["CONFIG", "SET", "activedefrag", "yes"]);
    poll_until("active defrag to move cuckoo filter memory", || {
        let moves = info(&mut c, "bf", "bf_defrag_moves") - before;
        if moves > 0 { Ok(moves) } else { Err(format!("moves {moves}")) }
    });
    for (i, digest) in survivors.iter().zip(&digests) {
        assert_eq!(&c.digest(&format!("f{i}")), digest, "f{i} changed");
        assert_eq!(c.cmd(&["CF.EXISTS", &format!("f{i}"), &format!("item-{i}")]).as_bit(), 1);
    }
}
