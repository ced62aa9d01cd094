//! Sizing, BF.DEBUG, BF.INFO.

use super::*;

#[test]
fn auto_create_uses_capacity_100_error_001_expansion_2() {
    let (_s, mut c) = start();
    c.cmd(&["BF.ADD", "a", "x"]);
    c.cmd(&["BF.MADD", "m", "x"]);
    c.cmd(&["BF.INSERT", "i", "ITEMS", "x"]);
    for key in ["a", "m", "i"] {
        assert_eq!(
            c.bf_info(key),
            BfInfo { capacity: 100, size: 240, filters: 1, items: 1, expansion: Some(2) },
            "BF.INFO {}",
            key
        );
        assert_eq!(
            c.bf_debug(key),
            vec![
                "size:1",
                "bytes:144 bits:1152 hashes:8 hashwidth:64 capacity:100 size:1 ratio:0.005"
            ],
            "BF.DEBUG {}",
            key
        );
    }
}

#[test]
fn nonscaling_layer_uses_full_error_rate_scaling_layer_half() {
    let (_s, mut c) = start();
    c.ok(&["BF.RESERVE", "n", "0.01", "100", "NONSCALING"]);
    assert_eq!(
        c.bf_debug("n"),
        vec!["size:0", "bytes:120 bits:960 hashes:7 hashwidth:64 capacity:100 size:0 ratio:0.01"]
    );
    assert_eq!(
        c.bf_info("n"),
        BfInfo { capacity: 100, size: 32 + 64 + 120, filters: 1, items: 0, expansion: None }
    );
    c.ok(&["BF.RESERVE", "s", "0.01", "100"]);
    assert_eq!(
        c.bf_debug("s"),
        vec!["size:0", "bytes:144 bits:1152 hashes:8 hashwidth:64 capacity:100 size:0 ratio:0.005"]
    );
    assert_eq!(
        c.bf_info("s"),
        BfInfo { capacity: 100, size: 32 + 64 + 144, filters: 1, items: 0, expansion: Some(2) }
    );
}

#[test]
fn debug_after_5000_adds_shows_redisbloom_layer_geometry() {
    let (_s, mut c) = start();
    c.ok(&["BF.RESERVE", "k", "0.01", "1000"]);
    let its = items("g", 5000);
    let replies = c.madd("k", &its);
    for r in &replies {
        assert!(matches!(r, Value::Int(0 | 1)), "MADD element {:?}", r);
    }
    let n = added(&its, &replies).len() as i64;
    let lines = c.bf_debug("k");
    assert_eq!(lines.len(), 4, "BF.DEBUG: {:?}", lines);
    assert_eq!(lines[0], format!("size:{}", n));
    assert!(
        (4900..5000).contains(&n),
        "items counted {} (5000 distinct adds, a few false positives)",
        n
    );
    assert_eq!(
        lines[1],
        "bytes:1384 bits:11072 hashes:8 hashwidth:64 capacity:1000 size:1000 ratio:0.005"
    );
    assert_eq!(
        lines[2],
        "bytes:3120 bits:24960 hashes:9 hashwidth:64 capacity:2000 size:2000 ratio:0.0025"
    );
    assert_eq!(
        lines[3],
        format!(
            "bytes:6960 bits:55680 hashes:10 hashwidth:64 capacity:4000 size:{} ratio:0.00125",
            n - 3000
        )
    );
    assert_eq!(
        c.bf_info("k"),
        BfInfo {
            capacity: 7000,
            size: 32 + 64 * 3 + 1384 + 3120 + 6960,
            filters: 3,
            items: n,
            expansion: Some(2)
        }
    );
    assert_eq!(c.bf_card("k"), n);
    c.assert_all_present("k", &its);
}

#[test]
fn debug_lines_are_bulk_strings() {
    let (_s, mut c) = start();
    c.cmd(&["BF.ADD", "k", "a"]);
    let v = c.cmd(&["BF.DEBUG", "k"]);
    for e in v.as_array() {
        assert!(matches!(e, Value::Bulk(Some(_))), "BF.DEBUG element {:?} is not a bulk string", e);
    }
}

#[test]
fn info_size_is_header_plus_64_per_layer_plus_layer_bytes() {
    let (_s, mut c) = start();
    c.ok(&["BF.RESERVE", "k", "0.001", "50", "EXPANSION", "3"]);
    c.madd("k", &items("z", 700));
    let lines = c.bf_debug("k");
    let layers = &lines[1..];
    assert!(layers.len() >= 3, "expected growth: {:?}", lines);
    let bytes: i64 = layers.iter().map(|l| layer_field(l, "bytes")).sum();
    let cap: i64 = layers.iter().map(|l| layer_field(l, "capacity")).sum();
    let items_in_layers: i64 = layers.iter().map(|l| layer_field(l, "size")).sum();
    let info = c.bf_info("k");
    assert_eq!(info.size, 32 + 64 * layers.len() as i64 + bytes);
    assert_eq!(info.capacity, cap);
    assert_eq!(info.filters, layers.len() as i64);
    assert_eq!(info.items, items_in_layers);
    assert_eq!(info.expansion, Some(3));
    // layer i has capacity 50 * 3^i, bits a multiple of 64, bytes = bits / 8
    for (i, l) in layers.iter().enumerate() {
        assert_eq!(layer_field(l, "capacity"), 50 * 3i64.pow(i as u32), "{}", l);
        assert_eq!(layer_field(l, "bits") % 64, 0, "{}", l);
        assert_eq!(layer_field(l, "bytes") * 8, layer_field(l, "bits"), "{}", l);
        assert_eq!(layer_field(l, "hashwidth"), 64, "{}", l);
    }
}

#[test]
fn info_resp2_is_flat_array_with_simple_string_labels() {
    let (_s, mut c) = start();
    c.cmd(&["BF.ADD", "k", "a"]);
    assert_eq!(
        c.cmd(&["BF.INFO", "k"]),
        Value::Array(Some(vec![
            Value::Simple("Capacity".into()),
            Value::Int(100),
            Value::Simple("Size".into()),
            Value::Int(240),
            Value::Simple("Number of filters".into()),
            Value::Int(1),
            Value::Simple("Number of items inserted".into()),
            Value::Int(1),
            Value::Simple("Expansion rate".into()),
            Value::Int(2),
        ]))
    );
}

#[test]
fn info_expansion_is_null_for_nonscaling_filter() {
    let s = Server::start();
    let mut c = s.conn();
    c.ok(&["BF.RESERVE", "n", "0.01", "100", "NONSCALING"]);
    let v = c.cmd(&["BF.INFO", "n"]);
    let a = v.as_array();
    assert_eq!(a.len(), 10, "{:?}", v);
    assert_eq!(a[8], Value::Simple("Expansion rate".into()));
    assert!(a[9].is_null(), "RESP2 expansion of a nonscaling filter: {:?}", a[9]);
    let mut c3 = s.conn3();
    let v = c3.cmd(&["BF.INFO", "n"]);
    let exp =
        v.as_map().iter().find(|(k, _)| k.as_str() == "Expansion rate").map(|(_, v)| v.clone());
    assert_eq!(exp, Some(Value::Null), "RESP3 BF.INFO {:?}", v);
}

#[test]
fn info_single_field_is_array_of_one_integer_and_case_insensitive() {
    let (_s, mut c) = start();
    c.ok(&["BF.RESERVE", "k", "0.01", "100", "EXPANSION", "4"]);
    c.cmd(&["BF.MADD", "k", "a", "b", "c"]);
    for (field, want) in [
        ("CAPACITY", 100),
        ("capacity", 100),
        ("Size", 240),
        ("SIZE", 240),
        ("FILTERS", 1),
        ("filters", 1),
        ("ITEMS", 3),
        ("iTeMs", 3),
        ("EXPANSION", 4),
        ("expansion", 4),
    ] {
        assert_eq!(
            c.cmd(&["BF.INFO", "k", field]),
            Value::Array(Some(vec![Value::Int(want)])),
            "BF.INFO k {}",
            field
        );
    }
}

#[test]
fn info_resp3_is_a_map_with_the_same_labels() {
    let s = Server::start();
    let mut c = s.conn3();
    c.cmd(&["BF.MADD", "k", "a", "b"]);
    let v = c.cmd(&["BF.INFO", "k"]);
    let m: Vec<(String, Value)> =
        v.as_map().iter().map(|(k, v)| (k.as_str().to_string(), v.clone())).collect();
    assert_eq!(
        m,
        vec![
            ("Capacity".to_string(), Value::Int(100)),
            ("Size".to_string(), Value::Int(240)),
            ("Number of filters".to_string(), Value::Int(1)),
            ("Number of items inserted".to_string(), Value::Int(2)),
            ("Expansion rate".to_string(), Value::Int(2)),
        ]
    );
}

#[test]
fn info_resp3_single_field_is_a_map_of_one_entry() {
    let s = Server::start();
    let mut c = s.conn3();
    c.cmd(&["BF.MADD", "k", "a", "b"]);
    for (field, label, want) in [
        ("CAPACITY", "Capacity", 100),
        ("size", "Size", 240),
        ("FILTERS", "Number of filters", 1),
        ("ITEMS", "Number of items inserted", 2),
        ("EXPANSION", "Expansion rate", 2),
    ] {
        let v = c.cmd(&["BF.INFO", "k", field]);
        let m = v.as_map();
        assert_eq!(m.len(), 1, "BF.INFO k {} -> {:?}", field, v);
        assert_eq!(m[0].0.as_str(), label, "BF.INFO k {} -> {:?}", field, v);
        assert_eq!(m[0].1, Value::Int(want), "BF.INFO k {} -> {:?}", field, v);
    }
}

#[test]
fn info_unknown_field_is_invalid_information_value() {
    let (_s, mut c) = start();
    c.cmd(&["BF.ADD", "k", "a"]);
    c.expect_err(&["BF.INFO", "k", "NOPE"], "Invalid information value");
    c.expect_err(&["BF.INFO", "k", "CAP"], "Invalid information value");
}

#[test]
fn info_debug_scandump_on_missing_key_are_not_found() {
    let (_s, mut c) = start();
    c.expect_err(&["BF.INFO", "nokey"], "ERR not found");
    c.expect_err(&["BF.INFO", "nokey", "CAPACITY"], "ERR not found");
    c.expect_err(&["BF.DEBUG", "nokey"], "ERR not found");
    c.expect_err(&["BF.SCANDUMP", "nokey", "0"], "ERR not found");
    assert_no_key(&mut c, "nokey");
}
