//! ADD / MADD / EXISTS / MEXISTS / CARD.

use super::*;

#[test]
fn add_reports_new_then_already_present() {
    let (_s, mut c) = start();
    assert_eq!(c.cmd(&["BF.ADD", "k", "a"]), Value::Int(1));
    assert_eq!(c.cmd(&["BF.ADD", "k", "a"]), Value::Int(0));
    assert_eq!(c.cmd(&["BF.ADD", "k", "b"]), Value::Int(1));
    assert_eq!(c.bf_card("k"), 2);
}

#[test]
fn madd_answers_each_item_including_repeats_within_one_call() {
    let (_s, mut c) = start();
    assert_eq!(
        c.cmd(&["BF.MADD", "k", "a", "b", "a"]),
        Value::Array(Some(vec![Value::Int(1), Value::Int(1), Value::Int(0)]))
    );
    assert_eq!(
        c.cmd(&["BF.MADD", "k", "b", "c"]),
        Value::Array(Some(vec![Value::Int(0), Value::Int(1)]))
    );
    assert_eq!(c.bf_card("k"), 3);
}

#[test]
fn exists_finds_every_added_item_and_few_others() {
    let (_s, mut c) = start();
    let its = items("in", 3000);
    let replies = c.madd("k", &its);
    let added = added(&its, &replies);
    assert!(added.len() > 2900, "only {} of 3000 distinct items were new", added.len());
    c.assert_all_present("k", &its);
    for it in its.iter().step_by(97) {
        assert_eq!(c.cmd(&["BF.EXISTS", "k", it]), Value::Int(1), "BF.EXISTS k {}", it);
    }
    // Never-added items: the filter's error bound is 1%, so far fewer than 5% may be reported.
    let absent = items("out", 2000);
    let fp: i64 = c.mexists("k", &absent).iter().sum();
    assert!(fp < 100, "{} of 2000 never-added items reported present", fp);
}

#[test]
fn exists_and_mexists_on_missing_key_answer_zero_without_creating_it() {
    let (_s, mut c) = start();
    assert_eq!(c.cmd(&["BF.EXISTS", "nokey", "a"]), Value::Int(0));
    assert_eq!(
        c.cmd(&["BF.MEXISTS", "nokey", "a", "b"]),
        Value::Array(Some(vec![Value::Int(0), Value::Int(0)]))
    );
    assert_no_key(&mut c, "nokey");
}

#[test]
fn card_counts_inserted_items_and_missing_key_is_zero() {
    let (_s, mut c) = start();
    assert_eq!(c.cmd(&["BF.CARD", "nokey"]), Value::Int(0));
    assert_no_key(&mut c, "nokey");
    c.ok(&["BF.RESERVE", "k", "0.01", "100"]);
    assert_eq!(c.cmd(&["BF.CARD", "k"]), Value::Int(0));
    c.cmd(&["BF.MADD", "k", "a", "b", "c", "a"]);
    assert_eq!(c.cmd(&["BF.CARD", "k"]), Value::Int(3));
}

#[test]
fn items_are_binary_safe_and_empty_item_is_valid() {
    let (_s, mut c) = start();
    let a: &[u8] = b"a\x00b";
    assert_eq!(c.cmd(&[b"BF.ADD".as_slice(), b"k", a]), Value::Int(1));
    assert_eq!(c.cmd(&[b"BF.EXISTS".as_slice(), b"k", b"a\x00b"]), Value::Int(1));
    assert_eq!(c.cmd(&[b"BF.EXISTS".as_slice(), b"k", b"a\x00c"]), Value::Int(0));
    assert_eq!(c.cmd(&[b"BF.EXISTS".as_slice(), b"k", b"a"]), Value::Int(0));
    assert_eq!(c.cmd(&[b"BF.ADD".as_slice(), b"k", b"\xff\xfe\x00\r\n"]), Value::Int(1));
    assert_eq!(c.cmd(&[b"BF.EXISTS".as_slice(), b"k", b"\xff\xfe\x00\r\n"]), Value::Int(1));
    assert_eq!(c.cmd(&["BF.EXISTS", "k", ""]), Value::Int(0));
    assert_eq!(c.cmd(&["BF.ADD", "k", ""]), Value::Int(1));
    assert_eq!(c.cmd(&["BF.ADD", "k", ""]), Value::Int(0));
    assert_eq!(c.bf_card("k"), 3);
}

#[test]
fn resp2_add_family_answers_are_integers() {
    let (_s, mut c) = start();
    assert_eq!(c.cmd(&["BF.ADD", "k", "a"]), Value::Int(1));
    assert_eq!(c.cmd(&["BF.ADD", "k", "a"]), Value::Int(0));
    assert_eq!(
        c.cmd(&["BF.MADD", "k", "a", "b"]),
        Value::Array(Some(vec![Value::Int(0), Value::Int(1)]))
    );
    assert_eq!(c.cmd(&["BF.EXISTS", "k", "a"]), Value::Int(1));
    assert_eq!(
        c.cmd(&["BF.MEXISTS", "k", "a", "zz"]),
        Value::Array(Some(vec![Value::Int(1), Value::Int(0)]))
    );
    assert_eq!(
        c.cmd(&["BF.INSERT", "k", "ITEMS", "c", "a"]),
        Value::Array(Some(vec![Value::Int(1), Value::Int(0)]))
    );
    assert_eq!(c.cmd(&["BF.CARD", "k"]), Value::Int(3));
}

#[test]
fn resp3_add_family_answers_are_booleans() {
    let s = Server::start();
    let mut c = s.conn3();
    let t = Value::Bool(true);
    let f = Value::Bool(false);
    assert_eq!(c.cmd(&["BF.ADD", "k", "a"]), t);
    assert_eq!(c.cmd(&["BF.ADD", "k", "a"]), f);
    assert_eq!(c.cmd(&["BF.MADD", "k", "a", "b"]), Value::Array(Some(vec![f.clone(), t.clone()])));
    assert_eq!(c.cmd(&["BF.EXISTS", "k", "a"]), t);
    assert_eq!(c.cmd(&["BF.EXISTS", "k", "zz"]), f);
    assert_eq!(c.cmd(&["BF.EXISTS", "nokey", "a"]), f);
    assert_eq!(
        c.cmd(&["BF.MEXISTS", "k", "a", "zz"]),
        Value::Array(Some(vec![t.clone(), f.clone()]))
    );
    assert_eq!(c.cmd(&["BF.MEXISTS", "nokey", "a"]), Value::Array(Some(vec![f.clone()])));
    assert_eq!(
        c.cmd(&["BF.INSERT", "k", "ITEMS", "c", "a"]),
        Value::Array(Some(vec![t.clone(), f.clone()]))
    );
    assert_eq!(c.cmd(&["BF.CARD", "k"]), Value::Int(3));
    assert_eq!(c.cmd(&["BF.RESERVE", "r", "0.01", "10"]), Value::Simple("OK".into()));
}
