//! BF.STATS: how full a filter is and the error rate it really has now, checked against the
//! rates a real server measures, kept right through every way a filter is loaded or copied.

mod common;
use common::*;

/// BF.STATS fields by name, numbers as f64.
fn stats(c: &mut Conn, key: &str) -> Vec<(String, f64)> {
    c.stats_f64("BF.STATS", key)
}

/// The false-positive rate over `n` items never added, measured with BF.MEXISTS.
fn measured_error(c: &mut Conn, key: &str, n: usize) -> f64 {
    c.false_positives(key, n) as f64 / n as f64
}

/// On a nonscaling filter at capacity and on a scaling filter grown 10×, the estimated error
/// rate is within 25% of the rate measured on 200,000 absent items, and the estimated items
/// within 3% of the items the filter took (BF.CARD).
#[test]
fn estimates_match_the_measured_error_and_items() {
    let s = Server::start_with(ServerOpts::new().module_args(&["random-seeds", "no"]));
    let mut c = s.conn();
    c.ok(&["BF.RESERVE", "fixed", "0.01", "100000", "NONSCALING"]);
    c.madd_all("fixed", &items("f", 100_000));
    c.ok(&["BF.RESERVE", "grown", "0.01", "10000", "EXPANSION", "2"]);
    c.madd_all("grown", &items("g", 100_000));
    assert!(c.bf_info("grown").filters >= 4);
    for key in ["fixed", "grown"] {
        let st = stats(&mut c, key);
        let measured = measured_error(&mut c, key, 200_000);
        let estimated = stat_field(&st, "Estimated error rate");
        assert!((estimated / measured - 1.0).abs() < 0.25, "{key}: {estimated} vs {measured}");
        let card = c.bf_card(key) as f64;
        let est_items = stat_field(&st, "Estimated items");
        assert!((est_items / card - 1.0).abs() < 0.03, "{key}: {est_items} items vs {card}");
        assert_eq!(stat_field(&st, "Items added"), card);
        assert_eq!(stat_field(&st, "Target error rate"), 0.01);
        // At capacity a nonscaling filter is right at its target (a hair above it: k is
        // rounded up), so `Saturated` is only asserted for the scaling one.
        if key == "grown" {
            assert_eq!(stat_field(&st, "Saturated"), 0.0, "{key}: {st:?}");
        }
        let (newest, all) = (
            stat_field(&st, "Fill ratio of newest filter"),
            stat_field(&st, "Fill ratio of all filters"),
        );
        assert!(newest > 0.0 && newest <= 1.0 && all > 0.0 && all <= 1.0, "{st:?}");
    }
    // A filter at capacity is about half full, by construction of its size.
    let fill = stat_field(&stats(&mut c, "fixed"), "Fill ratio of all filters");
    assert!((0.45..0.55).contains(&fill), "{fill}");
}

/// An empty filter estimates nothing; a filter at 90% of its capacity is within its target; a filter
/// whose bits are nearly all set (restored from chunks a client made up: the one way to put
/// more bits in a nonscaling filter than its capacity allows) reports `Saturated 1`.
#[test]
fn a_filter_past_its_target_reports_saturated() {
    let s = Server::start();
    let mut c = s.conn();
    c.ok(&["BF.RESERVE", "k", "0.01", "1000", "NONSCALING"]);
    let st = stats(&mut c, "k");
    assert_eq!(stat_field(&st, "Saturated"), 0.0);
    assert_eq!(stat_field(&st, "Estimated error rate"), 0.0);
    assert_eq!(stat_field(&st, "Estimated items"), 0.0);
    c.madd_all("k", &items("a", 900));
    let st = stats(&mut c, "k");
    assert_eq!(stat_field(&st, "Saturated"), 0.0, "{st:?}");
    // The header, then the one chunk of bits.
    let chunks = c.scandump_all("k");
    assert_eq!(chunks.len(), 2);
    let header = &chunks[0].1;
    let (it, data) = &chunks[1];
    // 63 bits of every 64 set.
    let full: Vec<u8> = (0..data.len()).map(|i| if i % 8 == 0 { 0xfe } else { 0xff }).collect();
    assert!(c.cmd(&[&b"BF.LOADCHUNK"[..], b"sat", b"1", header]).is_ok());
    assert!(c.cmd(&[&b"BF.LOADCHUNK"[..], b"sat", it.to_string().as_bytes(), &full]).is_ok());
    let st = stats(&mut c, "sat");
    assert_eq!(stat_field(&st, "Saturated"), 1.0, "{st:?}");
    assert!(stat_field(&st, "Estimated error rate") > 0.5, "{st:?}");
    assert!((stat_field(&st, "Fill ratio of newest filter") - 63.0 / 64.0).abs() < 1e-9, "{st:?}");
}

/// The reply: a map in RESP3 (doubles as doubles), a flat array of name, value in RESP2, the
/// same fields in the same order; a missing key is `ERR not found`, another type the
/// wrong-type error.
#[test]
fn reply_shapes_and_errors() {
    let s = Server::start();
    let mut c = s.conn();
    c.cmd(&["BF.ADD", "k", "a"]);
    let names = [
        "Target error rate",
        "Estimated error rate",
        "Fill ratio of newest filter",
        "Fill ratio of all filters",
        "Estimated items",
        "Items added",
        "Saturated",
    ];
    let v2 = c.cmd(&["BF.STATS", "k"]);
    let flat = v2.as_array();
    assert_eq!(flat.len(), 2 * names.len(), "{v2:?}");
    for (i, n) in names.iter().enumerate() {
        assert_eq!(flat[2 * i].as_str(), *n);
    }
    let mut c3 = s.conn3();
    let v3 = c3.cmd(&["BF.STATS", "k"]);
    let Value::Map(m) = &v3 else { panic!("{v3:?}") };
    assert_eq!(m.len(), names.len());
    assert!(matches!(m[0].1, Value::Double(d) if d == 0.01), "{v3:?}");
    assert_eq!(m[5].1, Value::Int(1));
    assert_eq!(stats(&mut c, "k"), stats(&mut c3, "k"));
    c.expect_err(&["BF.STATS", "missing"], "ERR not found");
    c.ok(&["SET", "str", "x"]);
    let e = c.err(&["BF.STATS", "str"]);
    assert!(e.starts_with("WRONGTYPE"), "{e}");
    let e = c.err(&["BF.STATS"]);
    assert!(e.contains("wrong number of arguments"), "{e}");
    let e = c.err(&["BF.STATS", "k", "extra"]);
    assert!(e.contains("wrong number of arguments"), "{e}");
}

/// The set-bit counts are not persisted: every way a filter comes back (DEBUG RELOAD, an AOF
/// rewrite and restart, DUMP/RESTORE, SCANDUMP/LOADCHUNK, COPY) recounts them to the same
/// numbers, for a native filter and for one in RedisBloom's scheme.
#[test]
fn stats_survive_reload_restore_chunks_and_copy() {
    let opts = ServerOpts::new().arg("appendonly", "yes").arg("aof-use-rdb-preamble", "no");
    let s = Server::start_with(opts.clone());
    let mut c = s.conn();
    c.ok(&["BF.RESERVE", "k", "0.01", "1000", "EXPANSION", "2"]);
    c.madd_all("k", &items("x", 5000));
    c.ok(&["CONFIG", "SET", "bf.redisbloom-scheme", "yes"]);
    c.ok(&["BF.RESERVE", "rb", "0.01", "1000"]);
    c.madd_all("rb", &items("y", 5000));
    c.ok(&["CONFIG", "SET", "bf.redisbloom-scheme", "no"]);
    let mut befores = Vec::new();
    for key in ["k", "rb"] {
        let before = stats(&mut c, key);
        assert!(stat_field(&before, "Estimated items") > 4000.0, "{key}: {before:?}");
        let dump = c.cmd(&["DUMP", key]).as_bytes().to_vec();
        assert!(c.cmd(&[&b"RESTORE"[..], b"restored", b"0", &dump]).is_ok());
        assert_eq!(stats(&mut c, "restored"), before, "{key}: RESTORE");
        for (it, data) in c.scandump_all(key) {
            let r = c.cmd(&[&b"BF.LOADCHUNK"[..], b"chunked", it.to_string().as_bytes(), &data]);
            assert!(r.is_ok(), "{r:?}");
        }
        assert_eq!(stats(&mut c, "chunked"), before, "{key}: LOADCHUNK");
        assert_eq!(c.int(&["COPY", key, "copied"]), 1);
        assert_eq!(stats(&mut c, "copied"), before, "{key}: COPY");
        c.ok(&["DEBUG", "RELOAD"]);
        assert_eq!(stats(&mut c, key), before, "{key}: DEBUG RELOAD");
        c.cmd(&["DEL", "restored", "chunked", "copied"]);
        befores.push((key, before));
    }
    c.rewrite_aof();
    drop(c);
    let s2 = s.restart(&[], opts);
    let mut c = s2.conn();
    for (key, before) in befores {
        assert_eq!(stats(&mut c, key), before, "{key}: AOF rewrite and restart");
    }
}

/// BF.STATS is a fast read in `@bloom` and `@read` (where the server has module categories),
/// with a read-only key spec and its one argument documented.
#[test]
fn command_table_entry() {
    let s = Server::start();
    let mut c = s.conn();
    let info = c.cmd(&["COMMAND", "INFO", "bf.stats"]);
    let entry = info.as_array()[0].as_array();
    assert_eq!(entry[1].as_int(), 2);
    let flags = format!("{:?}", entry[2]);
    assert!(flags.contains("readonly") && flags.contains("fast"), "{flags}");
    let spec = format!("{:?}", entry.get(8));
    assert!(spec.contains("RO"), "{spec}");
    if c.engine().has_module_acl_categories() {
        let cats = format!("{:?}", entry.get(6));
        for cat in ["@read", "@fast", "@bloom"] {
            assert!(cats.contains(cat), "{cat} missing: {cats}");
        }
    }
    let docs = format!("{:?}", c.cmd(&["COMMAND", "DOCS", "bf.stats"]));
    assert!(docs.contains("how full") && docs.contains("key"), "{docs}");
}

/// Adds distinct items one by one until the filter refuses one (`ERR non scaling filter is
/// full` or a limit's refusal): how many went in, the refused item (new to the filter, since
/// the filter refused it) and the refusal. Panics past `limit` adds.
fn fill_until_refused(
    c: &mut Conn,
    key: &str,
    prefix: &str,
    limit: usize,
) -> (usize, String, String) {
    for i in 0..limit {
        let item = format!("{prefix}-{i}");
        let r = c.cmd(&["BF.ADD", key, &item]);
        if r.is_err() {
            return (i, item, r.err_text().to_string());
        }
    }
    panic!("{key}: no refusal in {limit} adds");
}

/// `Saturated` is 1 for every filter that refuses a new item, whatever its fill happened to
/// be, and 0 below 90% of its capacity: nonscaling filters of 10 to 10,000 items, 20 of each
/// with their own items and hash seeds.
#[test]
fn a_nonscaling_filter_that_refuses_items_is_saturated() {
    let s = Server::start();
    let mut c = s.conn();
    for capacity in [10usize, 100, 1_000, 10_000] {
        for n in 0..20 {
            let key = format!("full-{capacity}-{n}");
            c.ok(&["BF.RESERVE", &key, "0.01", &capacity.to_string(), "NONSCALING"]);
            let below = capacity * 89 / 100;
            let prefix = format!("{key}-item");
            let batch: Vec<String> = (0..below).map(|i| format!("{prefix}-{i}")).collect();
            c.madd_all(&key, &batch);
            let st = stats(&mut c, &key);
            assert_eq!(stat_field(&st, "Saturated"), 0.0, "{key} at {below} items: {st:?}");
            let (took, _, err) = fill_until_refused(&mut c, &key, &prefix, capacity * 2);
            assert!(took >= capacity, "{key}: refused after {took} adds");
            assert_eq!(err, "ERR non scaling filter is full");
            let st = stats(&mut c, &key);
            assert_eq!(stat_field(&st, "Saturated"), 1.0, "{key} refuses items: {st:?}");
        }
    }
}

/// A scaling filter whose next layer `bf.max-filter-bytes` refuses is saturated once its
/// newest layer is full, and stops being so when the limit is raised.
#[test]
fn a_scaling_filter_stopped_by_the_byte_limit_is_saturated() {
    let s = Server::start();
    let mut c = s.conn();
    c.ok(&["CONFIG", "SET", "bf.max-filter-bytes", "8kb"]);
    c.ok(&["BF.RESERVE", "k", "0.01", "1000"]);
    let st = stats(&mut c, "k");
    assert_eq!(stat_field(&st, "Saturated"), 0.0, "{st:?}");
    let (took, refused, err) = fill_until_refused(&mut c, "k", "item", 100_000);
    assert!(err.contains("bf.max-filter-bytes"), "{err}");
    let st = stats(&mut c, "k");
    assert_eq!(stat_field(&st, "Saturated"), 1.0, "after {took} adds: {st:?}");
    c.ok(&["CONFIG", "SET", "bf.max-filter-bytes", "4gb"]);
    let st = stats(&mut c, "k");
    assert_eq!(stat_field(&st, "Saturated"), 0.0, "the limit raised: {st:?}");
    assert_eq!(c.int(&["BF.ADD", "k", &refused]), 1, "the refused item goes in now");
}
