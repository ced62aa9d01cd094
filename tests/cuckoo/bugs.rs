//! RedisBloom's known cuckoo bugs, each absent here.

use super::*;

/// #481: `EXPANSION 0` crashed RedisBloom when the filter filled; here it answers full.
#[test]
fn expansion_0_answers_full_481() {
    let mut s = Server::start();
    let mut c = s.conn();
    c.ok(&["CF.RESERVE", "e0", "4", "EXPANSION", "0", "BUCKETSIZE", "1"]);
    let r = cf_insert(&mut c, "e0", &names("e0", 50));
    assert!(r.contains(&Value::Int(-1)), "never full: {r:?}");
    assert_eq!(c.err(&["CF.ADD", "e0", "one more"]), "Filter is full");
    assert_eq!(cf_info(&mut c, "e0")[2], ("Number of filters".to_string(), 1));
    s.assert_alive();
}

/// #434: a negative capacity crashed RedisBloom (2.x); here it is a range error, on RESERVE
/// and INSERT, and `cf-initial-size` refuses it too.
#[test]
fn negative_capacity_is_refused_434() {
    let mut s = Server::start();
    let mut c = s.conn();
    c.expect_err(
        &["CF.RESERVE", "n", "-1"],
        "Capacity must be in the range [2 * BUCKETSIZE, 1073741824]",
    );
    c.expect_err(
        &["CF.RESERVE", "n", "-9223372036854775808"],
        "Capacity must be in the range [2 * BUCKETSIZE, 1073741824]",
    );
    c.expect_err(
        &["CF.INSERT", "n", "CAPACITY", "-5", "ITEMS", "a"],
        "Capacity must be in the range [cf-bucket-size * 2, 1073741824]",
    );
    assert!(c.cmd(&["CONFIG", "SET", "bf.cf-initial-size", "-5"]).is_err());
    assert!(!c.exists_key("n"));
    s.assert_alive();
}

/// #609: MEMORY USAGE came from a 32-bit bucket count. Here it is CF.INFO Size (64-bit) plus
/// the key's overhead, for every sub-filter, as the filter grows.
#[test]
fn memory_usage_counts_every_sub_filter_609() {
    let s = Server::start();
    let mut c = s.conn();
    c.ok(&["CF.RESERVE", "m", "1024", "EXPANSION", "4"]);
    let mut last = 0;
    for round in 0..4 {
        cf_insert(&mut c, "m", &names(&format!("m{round}"), 4000));
        let info = cf_info(&mut c, "m");
        let size = info[0].1;
        let filters = info[2].1;
        let slots: i64 = (0..filters).map(|i| 512 * 2 * 4i64.pow(i as u32)).sum();
        assert_eq!(size, 40 + 16 * filters + slots, "CF.INFO Size with {filters} sub-filters");
        let usage = c.int(&["MEMORY", "USAGE", "m"]);
        assert!(usage >= size && usage < size + 100, "MEMORY USAGE {usage} vs Size {size}");
        assert!(usage >= last);
        last = usage;
    }
}

/// #259/#260: after compaction, deletes removed other items' fingerprints. Here, deleting
/// added items across grown and compacted sub-filters leaves every other item present.
#[test]
fn compact_then_delete_keeps_the_other_items_259_260() {
    let s = Server::start();
    let mut c = s.conn();
    c.ok(&["CF.RESERVE", "cd", "128", "EXPANSION", "2", "BUCKETSIZE", "2"]);
    let items = names("cd", 3000);
    cf_insert(&mut c, "cd", &items);
    assert!(cf_info(&mut c, "cd")[2].1 > 3, "grown");
    let mut kept: Vec<String> = Vec::new();
    for (i, item) in items.iter().enumerate() {
        if i % 2 == 0 {
            assert_eq!(c.cmd(&["CF.DEL", "cd", item]).as_bit(), 1, "CF.DEL {item}");
        } else {
            kept.push(item.clone());
        }
        if i % 500 == 0 {
            c.ok(&["CF.COMPACT", "cd"]);
        }
    }
    c.ok(&["CF.COMPACT", "cd"]);
    assert!(cf_mexists(&mut c, "cd", &kept).iter().all(|&p| p == 1), "a kept item was lost");
    for item in kept.iter().take(300) {
        assert_eq!(c.cmd(&["CF.DEL", "cd", item]).as_bit(), 1, "CF.DEL {item} after compaction");
    }
    assert!(cf_mexists(&mut c, "cd", &kept[300..]).iter().all(|&p| p == 1));
}

/// #1014: see `replication::loadchunk_chunks_replicate`. Here: CF.LOADCHUNK into a filter that
/// a header did not just create is refused, so a stray chunk never silently rewrites a filter.
#[test]
fn chunks_go_only_into_a_filter_being_restored() {
    let s = Server::start();
    let mut c = s.conn();
    make_filters(&mut c);
    let steps = cf_scandump_all(&mut c, "grown1");
    let before = c.digest("grown4");
    let (it, data) = &steps[1];
    let r = c.cmd(&[&b"CF.LOADCHUNK"[..], b"grown4", it.to_string().as_bytes(), data]);
    assert!(r.err_text().starts_with("ERR CF.LOADCHUNK data chunks go only into"), "{r:?}");
    assert_eq!(c.digest("grown4"), before);
    // After an insert, a restored filter takes no more chunks either.
    c.ok(&[&b"CF.LOADCHUNK"[..], b"copy", b"1", &steps[0].1]);
    c.cmd(&["CF.ADD", "copy", "x"]);
    assert!(c.cmd(&[&b"CF.LOADCHUNK"[..], b"copy", it.to_string().as_bytes(), data]).is_err());
}

/// A CF.LOADCHUNK header with more sub-filters than `cf-max-expansions` (65,531 tiny ones: a
/// filter that could take no insert, and whose CF.COMPACT would block the server for minutes)
/// is refused from a client.
#[test]
fn headers_with_more_sub_filters_than_max_expansions_are_refused() {
    let mut s = Server::start();
    let mut c = s.conn();
    let header = |filters: u64| {
        let mut h = Vec::new();
        for v in [0u64, 4, 0, filters] {
            h.extend_from_slice(&v.to_le_bytes());
        }
        for v in [2u16, 20, 1] {
            h.extend_from_slice(&v.to_le_bytes());
        }
        h
    };
    let r = c.cmd(&[&b"CF.LOADCHUNK"[..], b"many", b"1", &header(65531)]);
    assert_eq!(
        r,
        Value::Error(
            "ERR the header describes 65531 sub-filters, more than cf-max-expansions (32)".into()
        )
    );
    assert!(!c.exists_key("many"));
    c.ok(&[&b"CF.LOADCHUNK"[..], b"few", b"1", &header(32)]);
    assert_eq!(cf_info(&mut c, "few")[2].1, 32);
    s.assert_alive();
}

/// A client's RESTORE of a value with more sub-filters than `cf-max-expansions` is refused
/// before anything is allocated, as a CF.LOADCHUNK header is; with the setting raised it
/// loads, and a server loading its own data (DEBUG RELOAD) keeps such a filter whatever the
/// setting.
#[test]
fn restores_with_more_sub_filters_than_max_expansions_are_refused() {
    let mut s = Server::start_with(ServerOpts::new().module_args(&["cf-max-expansions", "64"]));
    let mut c = s.conn();
    c.ok(&["CF.RESERVE", "many", "2", "BUCKETSIZE", "1", "EXPANSION", "1"]);
    cf_insert(&mut c, "many", &names("many", 100));
    let filters = cf_info(&mut c, "many")[2].1;
    assert!(filters > 32, "only {filters} sub-filters");
    let digest = c.digest("many");
    let dump = c.cmd(&["DUMP", "many"]).as_bytes().to_vec();
    c.ok(&["CONFIG", "SET", "bf.cf-max-expansions", "32"]);
    let r = c.cmd(&[&b"RESTORE"[..], b"copy", b"0", &dump]);
    assert!(r.is_err(), "{r:?}");
    assert!(!c.exists_key("copy"));
    c.ok(&["DEBUG", "RELOAD"]);
    assert_eq!(c.digest("many"), digest, "DEBUG RELOAD changed the filter");
    c.ok(&["CONFIG", "SET", "bf.cf-max-expansions", &filters.to_string()]);
    c.ok(&[&b"RESTORE"[..], b"copy", b"0", &dump]);
    assert_eq!(c.digest("copy"), digest);
    s.assert_alive();
}
