//! Full nonscaling filters, scaling.

use super::*;

#[test]
fn full_nonscaling_filter_refuses_new_items() {
    let (_s, mut c) = start();
    c.ok(&["BF.RESERVE", "k", "0.01", "5", "NONSCALING"]);
    let mut added = Vec::new();
    let mut i = 0;
    while added.len() < 5 {
        let it = format!("fill:{}", i);
        i += 1;
        match c.cmd(&["BF.ADD", "k", &it]) {
            Value::Int(1) => added.push(it),
            Value::Int(0) => {}
            other => panic!("BF.ADD before full -> {:?}", other),
        }
        assert!(i < 1000);
    }
    let mut saw_error = false;
    for j in 0..50 {
        let it = format!("more:{}", j);
        match c.cmd(&["BF.ADD", "k", &it]) {
            Value::Error(e) => {
                assert_eq!(e, "ERR non scaling filter is full");
                saw_error = true;
                break;
            }
            Value::Int(0) => {} // false positive: nothing to add
            other => panic!("BF.ADD into full nonscaling filter -> {:?}", other),
        }
    }
    assert!(saw_error, "never refused an item");
    for it in &added {
        assert_eq!(
            c.cmd(&["BF.ADD", "k", it]),
            Value::Int(0),
            "re-adding a present item into a full filter"
        );
    }
    assert_eq!(
        c.bf_info("k"),
        BfInfo { capacity: 5, size: 32 + 64 + 8, filters: 1, items: 5, expansion: None }
    );
}

#[test]
fn madd_into_full_nonscaling_stops_with_error_element() {
    let (_s, mut c) = start_fixed_seeds();
    c.ok(&["BF.RESERVE", "k", "0.01", "3", "NONSCALING"]);
    let full = Value::Error("ERR non scaling filter is full".into());
    assert_eq!(
        c.cmd(&["BF.MADD", "k", "a", "b", "c", "d", "e"]),
        Value::Array(Some(vec![Value::Int(1), Value::Int(1), Value::Int(1), full.clone()]))
    );
    assert_eq!(
        c.cmd(&["BF.MADD", "k", "a", "x", "b"]),
        Value::Array(Some(vec![Value::Int(0), full.clone()]))
    );
    assert_eq!(c.bf_card("k"), 3);
    assert_eq!(c.cmd(&["BF.EXISTS", "k", "a"]), Value::Int(1));
}

#[test]
fn insert_into_full_nonscaling_stops_with_error_element() {
    let (_s, mut c) = start_fixed_seeds();
    let full = Value::Error("ERR non scaling filter is full".into());
    assert_eq!(
        c.cmd(&["BF.INSERT", "k", "CAPACITY", "3", "NONSCALING", "ITEMS", "a", "b", "c", "d", "e"]),
        Value::Array(Some(vec![Value::Int(1), Value::Int(1), Value::Int(1), full.clone()]))
    );
    assert_eq!(
        c.cmd(&["BF.INSERT", "k", "ITEMS", "c", "y", "a"]),
        Value::Array(Some(vec![Value::Int(0), full.clone()]))
    );
    assert_eq!(c.bf_info("k").items, 3);
    assert_eq!(c.bf_info("k").filters, 1);
}

#[test]
fn new_layer_only_when_a_genuinely_new_item_arrives() {
    let (_s, mut c) = start();
    c.ok(&["BF.RESERVE", "k", "0.01", "10"]);
    let mut added = Vec::new();
    let mut i = 0;
    while added.len() < 10 {
        let it = format!("i:{}", i);
        i += 1;
        if c.cmd(&["BF.ADD", "k", &it]).as_int() == 1 {
            added.push(it);
        }
    }
    assert_eq!(
        c.bf_info("k"),
        BfInfo { capacity: 10, size: 32 + 64 + 16, filters: 1, items: 10, expansion: Some(2) }
    );
    let debug_full = c.bf_debug("k");
    let digest_full = c.digest("k");
    for it in &added {
        assert_eq!(c.cmd(&["BF.ADD", "k", it]), Value::Int(0));
    }
    let r = c.madd("k", &added);
    assert!(r.iter().all(|v| *v == Value::Int(0)), "{:?}", r);
    assert_eq!(c.bf_debug("k"), debug_full, "re-adding present items changed the filter");
    assert_eq!(c.digest("k"), digest_full, "re-adding present items changed the digest");
    // the next genuinely new item makes the second layer
    let mut j = 0;
    loop {
        let it = format!("new:{}", j);
        j += 1;
        match c.cmd(&["BF.ADD", "k", &it]).as_int() {
            1 => break,
            _ => assert_eq!(c.bf_info("k").filters, 1, "a false positive made a layer"),
        }
    }
    let info = c.bf_info("k");
    assert_eq!((info.filters, info.capacity, info.items), (2, 30, 11));
    let d = c.bf_debug("k");
    assert_eq!(d[2], "bytes:32 bits:256 hashes:9 hashwidth:64 capacity:20 size:1 ratio:0.0025");
}

#[test]
fn expansion_multiplies_each_new_layer_capacity() {
    let (_s, mut c) = start();
    c.ok(&["BF.RESERVE", "k3", "0.01", "10", "EXPANSION", "3"]);
    c.madd("k3", &items("e", 100));
    let d = c.bf_debug("k3");
    let caps: Vec<i64> = d[1..].iter().map(|l| layer_field(l, "capacity")).collect();
    assert_eq!(&caps[..3], &[10, 30, 90], "{:?}", d);
    c.ok(&["BF.RESERVE", "k1", "0.01", "10", "EXPANSION", "1"]);
    let r1 = c.madd("k1", &items("e", 35));
    let d = c.bf_debug("k1");
    assert!(d.len() > 4, "size line and at least 4 layers: {:?}", d);
    for l in &d[1..] {
        assert_eq!(layer_field(l, "capacity"), 10, "{:?}", d);
    }
    c.assert_all_present("k1", &added(&items("e", 35), &r1));
}
