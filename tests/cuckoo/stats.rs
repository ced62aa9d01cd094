//! CF.STATS: the reply's shape, and `Saturated` by each of its rules — a filter that cannot
//! grow (EXPANSION 0, or its next sub-filter over `bf.max-filter-bytes`) once an insert was
//! refused as full, a growing one only at `cf-max-expansions` — kept by a reload and a replica.

use super::*;

/// The fields of CF.STATS, in order.
const FIELDS: [&str; 7] = [
    "Capacity",
    "Items",
    "Load factor",
    "Load factor of newest filter",
    "Number of filters",
    "Max filters",
    "Saturated",
];

/// CF.STATS fields by name, numbers as f64.
fn cf_stats(c: &mut Conn, key: &str) -> Vec<(String, f64)> {
    c.stats_f64("CF.STATS", key)
}

/// CF.ADD of `prefix:0`, `prefix:1`, … until one is refused; that error, and the items taken.
fn add_until_refused(c: &mut Conn, key: &str, prefix: &str) -> (String, u64) {
    for i in 0..1_000_000u64 {
        let v = c.cmd(&["CF.ADD", key, &format!("{prefix}:{i}")]);
        if v.is_err() {
            return (v.err_text().to_string(), i);
        }
        assert_eq!(v.as_int(), 1, "CF.ADD {key} {prefix}:{i}");
    }
    panic!("{key} never refused an item");
}

/// The reply: a map in RESP3 (doubles as doubles), a flat array of name, value in RESP2 (the
/// doubles as strings), the same fields in the same order; a fresh filter's numbers; a missing
/// key is `ERR not found`, another type the wrong-type error.
#[test]
fn reply_shapes_and_a_fresh_filter() {
    let s = Server::start();
    let mut c = s.conn();
    c.ok(&["CF.RESERVE", "k", "1000"]);
    c.cmd(&["CF.ADD", "k", "a"]);
    let v2 = c.cmd(&["CF.STATS", "k"]);
    let flat = v2.as_array();
    assert_eq!(flat.len(), 2 * FIELDS.len(), "{v2:?}");
    for (i, n) in FIELDS.iter().enumerate() {
        assert_eq!(flat[2 * i].as_str(), *n);
    }
    // 1000 / 2 rounds up to 512 buckets of 2 slots.
    assert_eq!(flat[1], Value::Int(1024));
    assert_eq!(flat[3], Value::Int(1));
    assert_eq!(flat[5].as_str().parse::<f64>(), Ok(1.0 / 1024.0), "a double as a string");
    let mut c3 = s.conn3();
    let v3 = c3.cmd(&["CF.STATS", "k"]);
    let Value::Map(m) = &v3 else { panic!("{v3:?}") };
    assert_eq!(m.len(), FIELDS.len());
    assert!(matches!(m[2].1, Value::Double(d) if d == 1.0 / 1024.0), "{v3:?}");
    assert_eq!(cf_stats(&mut c, "k"), cf_stats(&mut c3, "k"));
    let st = cf_stats(&mut c, "k");
    assert_eq!(stat_field(&st, "Number of filters"), 1.0);
    assert_eq!(stat_field(&st, "Max filters"), 32.0, "cf-max-expansions' default");
    assert_eq!(stat_field(&st, "Saturated"), 0.0, "{st:?}");
    c.ok(&["CF.RESERVE", "fixed", "1000", "EXPANSION", "0"]);
    let st = cf_stats(&mut c, "fixed");
    assert_eq!(
        (stat_field(&st, "Max filters"), stat_field(&st, "Saturated")),
        (1.0, 0.0),
        "{st:?}"
    );
    c.expect_err(&["CF.STATS", "missing"], "ERR not found");
    c.ok(&["SET", "str", "x"]);
    assert!(c.err(&["CF.STATS", "str"]).starts_with("WRONGTYPE"));
    c.cmd(&["BF.ADD", "bloom", "x"]);
    assert!(c.err(&["CF.STATS", "bloom"]).starts_with("WRONGTYPE"));
    assert!(c.err(&["CF.STATS"]).contains("wrong number of arguments"));
    assert!(c.err(&["CF.STATS", "k", "extra"]).contains("wrong number of arguments"));
}

/// A filter of EXPANSION 0 (bucket sizes 1, 2 and 4, 8- and 16-bit fingerprints) filled until
/// `Filter is full` says `Saturated 1`; the same filter at 30% load said 0. The load factors
/// are the items over the slots.
#[test]
fn a_non_growing_filter_filled_until_full_is_saturated() {
    let s = Server::start();
    let mut c = s.conn();
    for (bs, fp) in [("1", "8"), ("2", "8"), ("4", "8"), ("2", "16")] {
        let key = format!("fixed{bs}-{fp}");
        c.ok(&["CF.RESERVE", &key, "4096", "BUCKETSIZE", bs, "EXPANSION", "0", "FINGERPRINT", fp]);
        let slots = 4096.0;
        let names = names(&key, 4096 * 3 / 10);
        for item in &names {
            assert_eq!(c.int(&["CF.ADD", &key, item]), 1);
        }
        let st = cf_stats(&mut c, &key);
        assert_eq!(stat_field(&st, "Saturated"), 0.0, "{key} at 30%: {st:?}");
        let (err, taken) = add_until_refused(&mut c, &key, "more");
        assert_eq!(err, "Filter is full", "{key}");
        let st = cf_stats(&mut c, &key);
        let items = (names.len() as u64 + taken) as f64;
        assert_eq!(stat_field(&st, "Saturated"), 1.0, "{key} refused an item: {st:?}");
        assert_eq!(stat_field(&st, "Capacity"), slots);
        assert_eq!(stat_field(&st, "Items"), items);
        assert_eq!(stat_field(&st, "Load factor"), items / slots);
        assert_eq!(stat_field(&st, "Load factor of newest filter"), items / slots);
        assert_eq!(
            (stat_field(&st, "Number of filters"), stat_field(&st, "Max filters")),
            (1.0, 1.0)
        );
    }
}

/// A growing filter says `Saturated 0` while it may grow, however full its sub-filters, and 1
/// from the insert that gives it its `cf-max-expansions`-th sub-filter, after which every
/// insert is refused. Its newest load is that sub-filter's occupied slots over its slots.
#[test]
fn a_growing_filter_is_saturated_at_max_filters() {
    let s = Server::start_with(ServerOpts::new().module_args(&["cf-max-expansions", "4"]));
    let mut c = s.conn();
    c.ok(&["CF.RESERVE", "g", "256", "EXPANSION", "1"]);
    let mut filters = 1;
    let mut i = 0u64;
    loop {
        let st = cf_stats(&mut c, "g");
        assert_eq!(stat_field(&st, "Max filters"), 4.0);
        let n = stat_field(&st, "Number of filters");
        assert_eq!(stat_field(&st, "Saturated"), if n < 4.0 { 0.0 } else { 1.0 }, "{st:?}");
        assert_eq!(stat_field(&st, "Capacity"), 256.0 * n);
        if n == 4.0 {
            // The item that made the fourth sub-filter is the only one in it.
            assert_eq!(stat_field(&st, "Load factor of newest filter"), 1.0 / 256.0, "{st:?}");
            break;
        }
        if n as i32 > filters {
            filters = n as i32;
            assert_eq!(stat_field(&st, "Load factor of newest filter"), 1.0 / 256.0, "{st:?}");
        }
        assert_eq!(c.int(&["CF.ADD", "g", &format!("g:{i}")]), 1);
        i += 1;
    }
    assert_eq!(c.err(&["CF.ADD", "g", "one more"]), "Maximum expansions reached");
    assert_eq!(stat_field(&cf_stats(&mut c, "g"), "Saturated"), 1.0);
}

/// A growing filter whose next sub-filter would pass `bf.max-filter-bytes` cannot grow: it
/// says 0 while its load is low and 1 once CF.ADD refused an item for that limit; raising the
/// limit makes it growable (0) again, with the same CF.ADD taking the item.
#[test]
fn a_filter_stopped_by_max_filter_bytes_is_saturated() {
    let s = Server::start();
    let mut c = s.conn();
    c.ok(&["CONFIG", "SET", "bf.max-filter-bytes", "8192"]);
    // 2048 one-byte slots; the next sub-filter has 8192.
    c.ok(&["CF.RESERVE", "k", "2048", "EXPANSION", "4"]);
    for item in names("k", 500) {
        assert_eq!(c.int(&["CF.ADD", "k", &item]), 1);
    }
    assert_eq!(stat_field(&cf_stats(&mut c, "k"), "Saturated"), 0.0);
    let (err, _) = add_until_refused(&mut c, "k", "more");
    assert!(err.contains("max-filter-bytes"), "{err}");
    let st = cf_stats(&mut c, "k");
    assert_eq!(stat_field(&st, "Saturated"), 1.0, "{st:?}");
    assert_eq!((stat_field(&st, "Number of filters"), stat_field(&st, "Max filters")), (1.0, 32.0));
    c.ok(&["CONFIG", "SET", "bf.max-filter-bytes", "1mb"]);
    assert_eq!(stat_field(&cf_stats(&mut c, "k"), "Saturated"), 0.0);
}

/// CF.STATS is computed from what the filter saves: the same after DEBUG RELOAD and on a
/// replica, for a saturated filter and a growing one with several sub-filters.
#[test]
fn stats_are_the_same_after_reload_and_on_a_replica() {
    let s = Server::start();
    let mut c = s.conn();
    let (replica, mut rc) = Server::start_replica_of(&s);
    c.ok(&["CF.RESERVE", "fixed", "512", "EXPANSION", "0"]);
    add_until_refused(&mut c, "fixed", "f");
    c.ok(&["CF.RESERVE", "grown", "256", "EXPANSION", "2"]);
    cf_insert(&mut c, "grown", &names("g", 2000));
    c.cmd(&["CF.DEL", "grown", "g:1999"]);
    c.wait_acked();
    let fixed = cf_stats(&mut c, "fixed");
    let grown = cf_stats(&mut c, "grown");
    assert_eq!(stat_field(&fixed, "Saturated"), 1.0);
    assert!(stat_field(&grown, "Number of filters") >= 3.0, "{grown:?}");
    assert_eq!(cf_stats(&mut rc, "fixed"), fixed);
    assert_eq!(cf_stats(&mut rc, "grown"), grown);
    c.ok(&["DEBUG", "RELOAD"]);
    assert_eq!(cf_stats(&mut c, "fixed"), fixed);
    assert_eq!(cf_stats(&mut c, "grown"), grown);
    drop(replica);
}

/// CF.STATS is a fast read in `@cuckoo` and `@read` (where the server has module
/// categories), with a read-only key spec and its one argument documented.
#[test]
fn command_table_entry() {
    let s = Server::start();
    let mut c = s.conn();
    let info = c.cmd(&["COMMAND", "INFO", "cf.stats"]);
    let entry = info.as_array()[0].as_array();
    assert_eq!(entry[1].as_int(), 2);
    let flags = format!("{:?}", entry[2]);
    assert!(flags.contains("readonly") && flags.contains("fast"), "{flags}");
    assert!(format!("{:?}", entry.get(8)).contains("RO"));
    if c.engine().has_module_acl_categories() {
        let cats = format!("{:?}", entry.get(6));
        for cat in ["@read", "@fast", "@cuckoo"] {
            assert!(cats.contains(cat), "{cat} missing: {cats}");
        }
    }
    let docs = format!("{:?}", c.cmd(&["COMMAND", "DOCS", "cf.stats"]));
    assert!(docs.contains("how full") && docs.contains("key"), "{docs}");
}
