//! BF.RESERVE.

use super::*;

#[test]
fn reserve_on_existing_key_is_item_exists() {
    let (_s, mut c) = start();
    c.ok(&["BF.RESERVE", "k", "0.01", "100"]);
    c.expect_err(&["BF.RESERVE", "k", "0.01", "100"], "ERR item exists");
    c.expect_err(&["BF.RESERVE", "k", "0.1", "5000", "NONSCALING"], "ERR item exists");
    assert_eq!(c.bf_info("k").capacity, 100);
    c.cmd(&["BF.ADD", "a", "x"]);
    c.expect_err(&["BF.RESERVE", "a", "0.01", "100"], "ERR item exists");
}

#[test]
fn reserve_error_rate_must_be_a_number_in_open_unit_interval() {
    let (_s, mut c) = start();
    c.expect_err(&["BF.RESERVE", "k", "abc", "100"], "ERR bad error rate");
    c.expect_err(&["BF.RESERVE", "k", "", "100"], "ERR bad error rate");
    c.expect_err(&["BF.RESERVE", "k", "0.01x", "100"], "ERR bad error rate");
    for e in ["0", "1", "1.5", "-0.1", "-1", "0.0"] {
        c.expect_err(&["BF.RESERVE", "k", e, "100"], RANGE_ERROR_RATE);
    }
    for e in ["nan", "inf", "-inf", "1e-400"] {
        let v = c.cmd(&["BF.RESERVE", "k", e, "100"]);
        assert!(v.is_err(), "BF.RESERVE k {} 100 -> {:?}", e, v);
    }
    assert_no_key(&mut c, "k");
    c.ok(&["BF.RESERVE", "k", "0.999", "100"]);
    c.ok(&["BF.RESERVE", "k2", "1e-9", "100"]);
}

#[test]
fn reserve_capacity_must_be_an_integer_in_range() {
    let (_s, mut c) = start();
    for cap in ["abc", "1.5", "10a", "", "0x10"] {
        c.expect_err(&["BF.RESERVE", "k", "0.01", cap], "ERR bad capacity");
    }
    for cap in
        ["0", "-1", "1073741825", "10000000000", "9223372036854775807", "-9223372036854775808"]
    {
        c.expect_err(&["BF.RESERVE", "k", "0.01", cap], RANGE_CAPACITY);
    }
    let v = c.cmd(&["BF.RESERVE", "k", "0.01", "99999999999999999999999"]);
    assert!(v.is_err(), "{:?}", v);
    assert_no_key(&mut c, "k");
    c.ok(&["BF.RESERVE", "k", "0.01", "1"]);
    assert_eq!(c.bf_info("k").capacity, 1);
}

#[test]
fn reserve_expansion_is_validated_and_zero_means_nonscaling() {
    let (_s, mut c) = start();
    c.expect_err(&["BF.RESERVE", "k", "0.01", "100", "EXPANSION"], "ERR no expansion");
    c.expect_err(&["BF.RESERVE", "k", "0.01", "100", "EXPANSION", "abc"], "ERR bad expansion");
    c.expect_err(&["BF.RESERVE", "k", "0.01", "100", "EXPANSION", "1.5"], "ERR bad expansion");
    for e in ["-1", "32769", "4294967297", "4294967296", "9223372036854775807"] {
        c.expect_err(&["BF.RESERVE", "k", "0.01", "100", "EXPANSION", e], RANGE_EXPANSION);
    }
    assert_no_key(&mut c, "k");
    c.ok(&["BF.RESERVE", "zero", "0.01", "100", "EXPANSION", "0"]);
    assert_eq!(c.bf_info("zero").expansion, None);
    assert!(c.bf_debug("zero")[1].ends_with("ratio:0.01"), "{:?}", c.bf_debug("zero"));
    c.ok(&["BF.RESERVE", "one", "0.01", "100", "EXPANSION", "1"]);
    assert_eq!(c.bf_info("one").expansion, Some(1));
    c.ok(&["BF.RESERVE", "max", "0.01", "100", "EXPANSION", "32768"]);
    assert_eq!(c.bf_info("max").expansion, Some(32768));
}

#[test]
fn reserve_nonscaling_with_nonzero_expansion_is_refused() {
    let (_s, mut c) = start();
    c.expect_err(
        &["BF.RESERVE", "k", "0.01", "100", "EXPANSION", "2", "NONSCALING"],
        "Nonscaling filters cannot expand",
    );
    c.expect_err(
        &["BF.RESERVE", "k", "0.01", "100", "NONSCALING", "EXPANSION", "4"],
        "Nonscaling filters cannot expand",
    );
    assert_no_key(&mut c, "k");
    c.ok(&["BF.RESERVE", "k", "0.01", "100", "EXPANSION", "0", "NONSCALING"]);
    assert_eq!(c.bf_info("k").expansion, None);
}

#[test]
fn reserve_options_are_case_insensitive() {
    let (_s, mut c) = start();
    c.ok(&["BF.RESERVE", "a", "0.01", "100", "expansion", "5"]);
    assert_eq!(c.bf_info("a").expansion, Some(5));
    c.ok(&["BF.RESERVE", "b", "0.01", "100", "nonscaling"]);
    assert_eq!(c.bf_info("b").expansion, None);
    c.ok(&["bf.reserve", "c", "0.01", "100", "NonScaling"]);
    assert_eq!(c.bf_info("c").expansion, None);
}

#[test]
fn reserve_unknown_trailing_token_is_refused() {
    let (_s, mut c) = start();
    for extra in [
        vec!["FOO"],
        vec!["NONSCALING", "FOO"],
        vec!["EXPANSION", "2", "3"],
        vec!["NONSCALINGX"],
        vec!["EXPANSIONS", "2"],
    ] {
        let mut cmd = vec!["BF.RESERVE", "k", "0.01", "100"];
        cmd.extend(extra.iter());
        let v = c.cmd(&cmd);
        assert!(v.is_err(), "{:?} -> {:?}", cmd, v);
        assert_no_key(&mut c, "k");
    }
}

#[test]
fn reserve_key_named_like_an_option_creates_scaling_filter() {
    let (_s, mut c) = start();
    c.ok(&["BF.RESERVE", "nonscaling", "0.01", "100"]);
    assert_eq!(c.bf_info("nonscaling").expansion, Some(2));
    c.ok(&["BF.RESERVE", "EXPANSION", "0.01", "100"]);
    assert_eq!(c.bf_info("EXPANSION").expansion, Some(2));
}
