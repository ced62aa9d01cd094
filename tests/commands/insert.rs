//! BF.INSERT.

use super::*;

#[test]
fn insert_creates_filter_with_given_options() {
    let (_s, mut c) = start();
    assert_eq!(
        c.cmd(&[
            "BF.INSERT",
            "k",
            "CAPACITY",
            "1000",
            "ERROR",
            "0.001",
            "EXPANSION",
            "4",
            "ITEMS",
            "a",
            "b",
            "c"
        ]),
        Value::Array(Some(vec![Value::Int(1), Value::Int(1), Value::Int(1)]))
    );
    let info = c.bf_info("k");
    assert_eq!((info.capacity, info.filters, info.items, info.expansion), (1000, 1, 3, Some(4)));
    let l = &c.bf_debug("k")[1];
    assert!(l.ends_with("capacity:1000 size:3 ratio:0.0005"), "{}", l);
    assert_eq!(layer_field(l, "bits"), 15872, "{}", l);
    assert_eq!(layer_field(l, "hashes"), 11, "{}", l);
    // lower-case options, options in another order
    c.cmd(&[
        "BF.INSERT",
        "k2",
        "expansion",
        "4",
        "error",
        "0.001",
        "capacity",
        "1000",
        "items",
        "a",
    ]);
    let info = c.bf_info("k2");
    assert_eq!((info.capacity, info.items, info.expansion), (1000, 1, Some(4)));
}

#[test]
fn insert_nonscaling_creates_nonscaling_filter() {
    let (_s, mut c) = start();
    c.cmd(&["BF.INSERT", "k", "CAPACITY", "10", "NONSCALING", "ITEMS", "a"]);
    let info = c.bf_info("k");
    assert_eq!((info.capacity, info.expansion), (10, None));
    assert!(c.bf_debug("k")[1].ends_with("ratio:0.01"), "{:?}", c.bf_debug("k"));
}

#[test]
fn insert_options_are_ignored_on_existing_key() {
    let (_s, mut c) = start();
    c.ok(&["BF.RESERVE", "k", "0.01", "100"]);
    let before = c.bf_debug("k");
    let r = c.cmd(&[
        "BF.INSERT",
        "k",
        "CAPACITY",
        "5000",
        "ERROR",
        "0.2",
        "EXPANSION",
        "9",
        "ITEMS",
        "a",
    ]);
    assert_eq!(r, Value::Array(Some(vec![Value::Int(1)])));
    let r = c.cmd(&["BF.INSERT", "k", "NONSCALING", "ITEMS", "a"]);
    assert_eq!(r, Value::Array(Some(vec![Value::Int(0)])));
    let info = c.bf_info("k");
    assert_eq!(info, BfInfo { capacity: 100, size: 240, filters: 1, items: 1, expansion: Some(2) });
    let after = c.bf_debug("k");
    assert_eq!(after[1], before[1].replace("size:0", "size:1"));
}

#[test]
fn insert_nocreate_on_missing_key_is_not_found() {
    let (_s, mut c) = start();
    c.expect_err(&["BF.INSERT", "k", "NOCREATE", "ITEMS", "a"], "ERR not found");
    c.expect_err(
        &["BF.INSERT", "k", "CAPACITY", "10", "NOCREATE", "ITEMS", "a", "b"],
        "ERR not found",
    );
    assert_no_key(&mut c, "k");
    c.cmd(&["BF.ADD", "k", "a"]);
    assert_eq!(
        c.cmd(&["BF.INSERT", "k", "NOCREATE", "ITEMS", "a", "b"]),
        Value::Array(Some(vec![Value::Int(0), Value::Int(1)]))
    );
}

#[test]
fn insert_without_items_is_an_arity_error() {
    let (_s, mut c) = start();
    let msg = "ERR wrong number of arguments for 'bf.insert' command";
    c.expect_err(&["bf.insert", "k"], msg);
    c.expect_err(&["bf.insert", "k", "ITEMS"], msg);
    c.expect_err(&["bf.insert", "k", "CAPACITY", "100"], msg);
    c.expect_err(&["bf.insert", "k", "CAPACITY", "100", "ITEMS"], msg);
    c.expect_err(&["bf.insert", "k", "NONSCALING", "ERROR", "0.1"], msg);
    assert_no_key(&mut c, "k");
}

#[test]
fn insert_options_are_exact_keywords() {
    let (_s, mut c) = start();
    for opt in ["NOPE", "N", "NONSCALINGX", "CAP", "E", "ITEM", "X"] {
        c.expect_err(&["BF.INSERT", "k", opt, "ITEMS", "a"], "Unknown argument received");
        assert_no_key(&mut c, "k");
    }
    c.expect_err(
        &["BF.INSERT", "k", "CAPACITY", "10", "FOO", "ITEMS", "a"],
        "Unknown argument received",
    );
    assert_no_key(&mut c, "k");
}

#[test]
fn insert_bad_option_values_are_refused() {
    let (_s, mut c) = start();
    c.expect_err(&["BF.INSERT", "k", "CAPACITY", "abc", "ITEMS", "a"], "Bad capacity");
    c.expect_err(&["BF.INSERT", "k", "ERROR", "abc", "ITEMS", "a"], "Bad error rate");
    c.expect_err(&["BF.INSERT", "k", "EXPANSION", "abc", "ITEMS", "a"], "Bad expansion");
    assert_no_key(&mut c, "k");
    // out-of-range values: refused (exact wording not pinned), nothing created
    for args in [
        vec!["CAPACITY", "0"],
        vec!["CAPACITY", "-5"],
        vec!["CAPACITY", "1073741825"],
        vec!["CAPACITY", "9223372036854775807"],
        vec!["ERROR", "0"],
        vec!["ERROR", "1"],
        vec!["ERROR", "1.5"],
        vec!["ERROR", "-0.1"],
        vec!["EXPANSION", "-1"],
        vec!["EXPANSION", "32769"],
        vec!["EXPANSION", "4294967297"],
        vec!["CAPACITY"],
        vec!["CAPACITY", "10", "NONSCALING", "EXPANSION", "4"],
    ] {
        let mut cmd = vec!["BF.INSERT", "k"];
        cmd.extend(args.iter());
        cmd.extend(["ITEMS", "a"]);
        let v = c.cmd(&cmd);
        assert!(v.is_err(), "{:?} -> {:?}", cmd, v);
        assert_no_key(&mut c, "k");
    }
}

#[test]
fn insert_key_is_never_read_as_an_option() {
    let (_s, mut c) = start();
    assert_eq!(
        c.cmd(&["BF.INSERT", "NOCREATE", "ITEMS", "a"]),
        Value::Array(Some(vec![Value::Int(1)]))
    );
    assert_eq!(
        c.cmd(&["BF.INSERT", "ITEMS", "ITEMS", "ITEMS"]),
        Value::Array(Some(vec![Value::Int(1)]))
    );
    assert_eq!(c.cmd(&["BF.EXISTS", "ITEMS", "ITEMS"]), Value::Int(1));
    assert_eq!(
        c.cmd(&["BF.INSERT", "NONSCALING", "ITEMS", "a"]),
        Value::Array(Some(vec![Value::Int(1)]))
    );
    assert_eq!(c.bf_info("NONSCALING").expansion, Some(2));
}
