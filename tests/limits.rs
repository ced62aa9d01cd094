//! Resource limits: capacity range, the per-filter byte limit, maxmemory, runaway layering.

mod common;
use common::*;

const RANGE_CAPACITY: &str = "ERR capacity must be in the range [1, 1073741824]";
/// Refused allocations are all ≥ 50 MB: a smaller growth is noise, not the allocation.
const JUMP: i64 = 10 * 1024 * 1024;

fn assert_no_jump(c: &mut Conn, before: i64, what: &str) {
    let after = c.used_memory();
    assert!(after - before < JUMP, "{}: used_memory went from {} to {}", what, before, after);
}

fn fill_first_layer(c: &mut Conn, key: &str, capacity: i64) {
    let mut i = 0;
    while c.bf_card(key) < capacity {
        let batch = items(&format!("fill{}", i), (capacity - c.bf_card(key)) as usize);
        i += 1;
        for v in c.madd(key, &batch) {
            assert!(matches!(v, Value::Int(0 | 1)), "filling {}: {:?}", key, v);
        }
    }
    assert_eq!(c.bf_info(key).filters, 1, "filling {} made a second layer", key);
}

/// Adds new items one at a time until one is not a false positive; returns that reply.
fn add_new_item(c: &mut Conn, key: &str) -> Value {
    for j in 0..1000 {
        let v = c.cmd(&["BF.ADD", key, &format!("brand-new:{}", j)]);
        if v != Value::Int(0) {
            return v;
        }
    }
    panic!("every new item was a false positive");
}

#[test]
fn huge_reserve_is_refused_with_range_error_without_allocating() {
    let s = Server::start();
    let mut c = s.conn();
    let before = c.used_memory();
    c.expect_err(&["BF.RESERVE", "x", "0.01", "10000000000"], RANGE_CAPACITY);
    c.expect_err(&["BF.RESERVE", "x", "0.01", "9223372036854775807"], RANGE_CAPACITY);
    let v = c.cmd(&["BF.RESERVE", "x", "0.01", "18446744073709551615"]);
    assert!(v.is_err(), "{:?}", v);
    let v = c.cmd(&["BF.INSERT", "x", "CAPACITY", "10000000000", "ITEMS", "a"]);
    assert!(v.is_err(), "{:?}", v);
    assert!(!c.exists_key("x"));
    assert_no_jump(&mut c, before, "huge RESERVE");
}

#[test]
fn reserve_over_max_filter_bytes_is_refused() {
    let s = Server::start();
    let mut c = s.conn();
    c.ok(&["CONFIG", "SET", "bf.max-filter-bytes", "1mb"]);
    let before = c.used_memory();
    for args in [
        vec!["BF.RESERVE", "k", "0.01", "10000000"],
        vec!["BF.RESERVE", "k", "0.01", "10000000", "NONSCALING"],
        vec!["BF.RESERVE", "k", "0.000001", "1000000"],
    ] {
        let e = c.err(&args);
        assert!(e.starts_with("ERR") && e.contains("max-filter-bytes"), "{:?} -> {}", args, e);
        assert!(!c.exists_key("k"));
    }
    // auto-create paths respect the limit too
    let e = c.cmd(&["BF.INSERT", "i", "CAPACITY", "10000000", "ITEMS", "a"]);
    assert!(e.is_err() && e.err_text().contains("max-filter-bytes"), "{:?}", e);
    assert!(!c.exists_key("i"));
    c.ok(&["CONFIG", "SET", "bf.initial-size", "10000000"]);
    let e = c.cmd(&["BF.ADD", "a", "x"]);
    assert!(e.is_err() && e.err_text().contains("max-filter-bytes"), "{:?}", e);
    assert!(!c.exists_key("a"));
    assert_no_jump(&mut c, before, "RESERVE over max-filter-bytes");
    // just under the limit (~690 KB) is fine
    c.ok(&["BF.RESERVE", "fits", "0.01", "500000"]);
    assert!(c.bf_info("fits").size <= 1024 * 1024);
}

#[test]
fn default_max_filter_bytes_refuses_a_filter_over_4_gib() {
    let s = Server::start();
    let mut c = s.conn();
    let before = c.used_memory();
    // 1073741824 items at 5e-8 per layer: ~4.7 GB, inside the capacity range
    let e = c.err(&["BF.RESERVE", "x", "0.0000001", "1073741824"]);
    assert!(e.starts_with("ERR") && e.contains("max-filter-bytes"), "{}", e);
    assert!(!c.exists_key("x"));
    assert_no_jump(&mut c, before, "4.7 GB RESERVE");
}

#[test]
fn add_needing_a_layer_over_max_filter_bytes_is_refused() {
    let s = Server::start();
    let mut c = s.conn();
    c.ok(&["CONFIG", "SET", "bf.max-filter-bytes", "1mb"]);
    // second layer: 32,768,000 items (~51 MB)
    c.ok(&["BF.RESERVE", "k", "0.01", "1000", "EXPANSION", "32768"]);
    fill_first_layer(&mut c, "k", 1000);
    let digest = c.digest("k");
    let before = c.used_memory();
    let v = add_new_item(&mut c, "k");
    assert!(v.is_err(), "BF.ADD needing a 51 MB layer under a 1 MB limit -> {:?}", v);
    let r = c.madd("k", &items("more", 50));
    assert!(r.iter().any(|v| v.is_err()), "MADD needing the layer: {:?}", r);
    assert!(
        r.iter().all(|v| matches!(v, Value::Int(0)) || v.is_err()),
        "MADD added an item: {:?}",
        r
    );
    assert_eq!(c.bf_card("k"), 1000);
    assert_eq!(c.bf_info("k").filters, 1);
    assert_eq!(c.digest("k"), digest, "a refused add changed the filter");
    assert_no_jump(&mut c, before, "refused layer");
}

#[test]
fn maxmemory_refuses_a_big_reserve_with_oom() {
    let s = Server::start();
    let mut c = s.conn();
    let before = c.used_memory();
    c.ok(&["CONFIG", "SET", "maxmemory", &(before + 2 * 1024 * 1024).to_string()]);
    // ~110 MB, under the per-filter limit
    let e = c.err(&["BF.RESERVE", "k", "0.01", "80000000"]);
    assert!(e.starts_with("OOM"), "{}", e);
    assert!(!c.exists_key("k"));
    let e = c.cmd(&["BF.INSERT", "i", "CAPACITY", "80000000", "ITEMS", "a"]);
    assert!(e.is_err(), "{:?}", e);
    assert!(!c.exists_key("i"));
    assert_no_jump(&mut c, before, "RESERVE over maxmemory");
    // a small filter still fits
    c.ok(&["BF.RESERVE", "small", "0.01", "1000"]);
    assert_eq!(c.cmd(&["BF.ADD", "small", "a"]), Value::Int(1));
}

#[test]
fn maxmemory_refuses_a_big_new_layer() {
    let s = Server::start();
    let mut c = s.conn();
    c.ok(&["BF.RESERVE", "k", "0.01", "1000", "EXPANSION", "32768"]);
    fill_first_layer(&mut c, "k", 1000);
    let digest = c.digest("k");
    let before = c.used_memory();
    c.ok(&["CONFIG", "SET", "maxmemory", &(before + 2 * 1024 * 1024).to_string()]);
    let v = add_new_item(&mut c, "k");
    assert!(v.is_err(), "BF.ADD needing a 51 MB layer under maxmemory -> {:?}", v);
    let r = c.cmd(&["BF.INSERT", "k", "ITEMS", "x1", "x2", "x3"]);
    let ok = r.is_err() || r.as_array().iter().all(|v| matches!(v, Value::Int(0)) || v.is_err());
    assert!(ok, "INSERT needing the layer: {:?}", r);
    assert_eq!(c.bf_card("k"), 1000);
    assert_eq!(c.bf_info("k").filters, 1);
    assert_eq!(c.digest("k"), digest);
    assert_no_jump(&mut c, before, "refused layer under maxmemory");
}

#[test]
fn loadchunk_header_declaring_a_huge_filter_is_refused() {
    let mut s = Server::start();
    let mut c = s.conn();
    c.ok(&["BF.RESERVE", "src", "0.01", "100"]);
    c.cmd(&["BF.ADD", "src", "a"]);
    let chunks = c.scandump_all("src");
    let h = &chunks[0].1;
    let before = c.used_memory();
    // whatever the header layout, the layer's bits (1152), bytes (144) and capacity (100) are in
    // it as little-endian integers: make them claim a huge layer
    let find = |v: u64| -> Vec<usize> {
        (0..h.len().saturating_sub(7)).filter(|&o| h[o..o + 8] == v.to_le_bytes()).collect()
    };
    let (bits_at, bytes_at, cap_at) = (find(1152), find(144), find(100));
    assert!(
        !bits_at.is_empty() && !cap_at.is_empty(),
        "no bits / capacity field found in the header {:?}",
        h
    );
    let mut patches: Vec<Vec<u8>> = Vec::new();
    for (bytes, bits, cap) in [
        (1u64 << 37, 1u64 << 40, 1u64 << 36),
        (1 << 31, 1 << 34, 1 << 30),
        (u64::MAX / 8, u64::MAX, u64::MAX),
    ] {
        for only_one in [false, true] {
            let mut p = h.clone();
            for &o in &bits_at {
                p[o..o + 8].copy_from_slice(&bits.to_le_bytes());
            }
            if !only_one {
                for &o in &bytes_at {
                    p[o..o + 8].copy_from_slice(&bytes.to_le_bytes());
                }
                for &o in &cap_at {
                    p[o..o + 8].copy_from_slice(&cap.to_le_bytes());
                }
            }
            patches.push(p);
        }
    }
    for (i, p) in patches.iter().enumerate() {
        let key = format!("huge{}", i);
        let v = c.cmd(&[b"BF.LOADCHUNK".as_slice(), key.as_bytes(), b"1", p]);
        s.assert_alive();
        assert!(v.is_err(), "LOADCHUNK of a header declaring a huge layer -> {:?}", v);
        assert!(!c.exists_key(&key));
    }
    assert_no_jump(&mut c, before, "huge LOADCHUNK header");
}

#[test]
fn tiny_error_with_expansion_1_stays_sane() {
    let mut s = Server::start();
    let mut c = s.conn();
    c.ok(&["BF.RESERVE", "k", "0.0001", "1", "EXPANSION", "1"]);
    let its = items("t", 2000);
    let r = c.madd("k", &its);
    assert!(!r.is_empty() && r.len() <= its.len());
    for (i, v) in r.iter().enumerate() {
        match v {
            Value::Int(0 | 1) => {}
            Value::Error(e) => assert!(e.starts_with("ERR"), "element {}: {:?}", i, e),
            other => panic!("MADD element {}: {:?}", i, other),
        }
    }
    let added = added(&its, &r);
    s.assert_alive();
    let info = c.bf_info("k");
    assert_eq!(info.items, added.len() as i64);
    assert!(info.filters >= 1);
    c.bf_debug("k");
    let v = c.cmd(&["DEBUG", "RELOAD"]);
    assert!(v.is_ok(), "DEBUG RELOAD -> {:?}", v);
    s.assert_alive();
    c.assert_all_present("k", &added);
    assert_eq!(c.bf_info("k"), info);
    // the filter still tells items apart (no layer that answers "present" to everything)
    let absent = items("never", 1000);
    let fp: i64 = c.mexists("k", &absent).iter().sum();
    assert!(fp < 100, "{} of 1000 never-added items reported present", fp);
    // and further adds still answer
    let v = c.cmd(&["BF.ADD", "k", "one-more"]);
    assert!(matches!(v, Value::Int(0 | 1) | Value::Error(_)), "{:?}", v);
    s.assert_alive();
}

/// The default 4 GiB limit must leave room for the big filters people really make: one billion
/// items at 1% is about 1.2 GB. Fresh filter memory comes from calloc, so this does not touch
/// 1.2 GB of pages; the test only needs the address space.
#[test]
fn one_billion_items_at_one_percent_fit_under_the_default_limit() {
    let s = Server::start();
    let mut c = s.conn();
    c.ok(&["BF.RESERVE", "big", "0.01", "1000000000", "NONSCALING"]);
    let info = c.bf_info("big");
    assert!(info.size > 1_150_000_000 && info.size < 1_250_000_000, "{:?}", info);
    assert_eq!(c.cmd(&["BF.ADD", "big", "x"]).as_bit(), 1);
    assert_eq!(c.cmd(&["BF.EXISTS", "big", "x"]).as_bit(), 1);
    assert_eq!(c.cmd(&["BF.EXISTS", "big", "y"]).as_bit(), 0);
    assert!(c.used_memory() > 1_150_000_000, "filter memory must be visible to INFO memory");
    c.cmd(&["DEL", "big"]);
}

#[test]
fn extremes_give_correct_answers_or_clear_errors_and_survive_reload() {
    let s = Server::start();
    let mut c = s.conn();
    // A 1 MiB item and a slightly different one.
    let big: Vec<u8> = (0..1 << 20).map(|i| (i * 7 % 251) as u8).collect();
    let mut other = big.clone();
    other[123_456] ^= 1;
    assert_eq!(c.cmd(&[&b"BF.ADD"[..], b"big", &big]).as_bit(), 1);
    assert_eq!(c.cmd(&[&b"BF.EXISTS"[..], b"big", &big]).as_bit(), 1);
    assert_eq!(c.cmd(&[&b"BF.EXISTS"[..], b"big", &other]).as_bit(), 0);

    // 100k items in one MADD, all reported present afterwards.
    let many = items("m", 100_000);
    let mut madd: Vec<&str> = vec!["BF.MADD", "many"];
    madd.extend(many.iter().map(String::as_str));
    let r = c.cmd(&madd);
    assert_eq!(r.as_array().len(), 100_000);
    let mut mexists = madd.clone();
    mexists[0] = "BF.MEXISTS";
    let present = c.cmd(&mexists);
    assert!(present.as_array().iter().all(|v| v.as_bit() == 1), "a false negative after MADD");

    // Error rates near 1 and near the floor.
    c.ok(&["BF.RESERVE", "loose", "0.999999", "10"]);
    c.ok(&["BF.RESERVE", "tight", "2e-19", "10"]);
    let e = c.err(&["BF.RESERVE", "toolow", "1e-19", "10"]);
    assert!(e.starts_with("ERR error rate too small"), "{}", e);
    for key in ["loose", "tight"] {
        let r = c.cmd(&["BF.MADD", key, "a", "b", "c"]);
        assert!(r.as_array().iter().all(|v| v.as_bit() == 1 || v.as_bit() == 0));
        assert_eq!(c.cmd(&["BF.EXISTS", key, "a"]).as_bit(), 1);
    }
    let digests: Vec<String> =
        ["big", "many", "loose", "tight"].iter().map(|k| c.digest(k)).collect();
    c.ok(&["DEBUG", "RELOAD"]);
    let after: Vec<String> =
        ["big", "many", "loose", "tight"].iter().map(|k| c.digest(k)).collect();
    assert_eq!(digests, after);
    assert_eq!(c.cmd(&[&b"BF.EXISTS"[..], b"big", &big]).as_bit(), 1);
    let added = r.as_array().iter().filter(|v| v.as_bit() == 1).count() as i64;
    // Each of the 100k distinct items is reported present with probability just under the
    // filter's 1% budget while it grows (earlier layers are full), so about 1,000 are expected;
    // 1,500 is far outside the noise (standard deviation ~32).
    assert!(added > 98_500, "only {added} of 100k distinct items reported new");
    assert_eq!(c.bf_card("many"), added);
}
