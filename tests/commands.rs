//! Replies and errors of every BF.* command, in RESP2 and RESP3.

mod common;
use common::*;

fn start() -> (Server, Conn) {
    let s = Server::start();
    let c = s.conn();
    (s, c)
}

/// A server whose filters get the fixed seed 0, for tests that assert exact replies about items
/// added to a nearly full filter: with random seeds a false positive (about 1 run in 40) turns
/// an expected 1 or refusal into a 0.
fn start_fixed_seeds() -> (Server, Conn) {
    let s = Server::start_with(ServerOpts::new().module_args(&["random-seeds", "no"]));
    let c = s.conn();
    (s, c)
}

const RANGE_ERROR_RATE: &str = "ERR error rate must be in the range (0.000000, 1.000000)";
const RANGE_CAPACITY: &str = "ERR capacity must be in the range [1, 1073741824]";
const RANGE_EXPANSION: &str = "ERR expansion must be in the range [0, 32768]";
const WRONGTYPE: &str = "WRONGTYPE Operation against a key holding the wrong kind of value";

/// One `BF.DEBUG` layer line split into its `name:value` fields.
fn layer_fields(line: &str) -> Vec<(String, String)> {
    line.split(' ')
        .map(|f| {
            let (k, v) = f
                .split_once(':')
                .unwrap_or_else(|| panic!("bad BF.DEBUG field {:?} in {:?}", f, line));
            (k.to_string(), v.to_string())
        })
        .collect()
}

fn layer_field(line: &str, name: &str) -> i64 {
    layer_fields(line)
        .into_iter()
        .find(|(k, _)| k == name)
        .unwrap_or_else(|| panic!("no {} in {:?}", name, line))
        .1
        .parse()
        .unwrap()
}

fn assert_no_key(c: &mut Conn, key: &str) {
    assert!(!c.exists_key(key), "key {:?} must not have been created", key);
}

// ---------------------------------------------------------------------------------------------
// identity
// ---------------------------------------------------------------------------------------------

#[test]
fn module_is_listed_as_bf() {
    let (_s, mut c) = start();
    let v = c.cmd(&["MODULE", "LIST"]);
    let names: Vec<String> = v
        .as_array()
        .iter()
        .map(|m| {
            m.pairs()
                .into_iter()
                .find(|(k, _)| k.as_str() == "name")
                .unwrap()
                .1
                .as_str()
                .to_string()
        })
        .collect();
    assert!(names.contains(&"bf".to_string()), "MODULE LIST names: {:?}", names);
}

#[test]
fn bloom_keys_have_type_mbbloom() {
    let (_s, mut c) = start();
    c.ok(&["BF.RESERVE", "r", "0.01", "100"]);
    assert_eq!(c.cmd(&["TYPE", "r"]), Value::Simple("MBbloom--".into()));
    c.cmd(&["BF.ADD", "a", "x"]);
    assert_eq!(c.cmd(&["TYPE", "a"]), Value::Simple("MBbloom--".into()));
}

// ---------------------------------------------------------------------------------------------
// ADD / MADD / EXISTS / MEXISTS / CARD
// ---------------------------------------------------------------------------------------------

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

// ---------------------------------------------------------------------------------------------
// sizing, BF.DEBUG, BF.INFO
// ---------------------------------------------------------------------------------------------

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

// ---------------------------------------------------------------------------------------------
// BF.INSERT
// ---------------------------------------------------------------------------------------------

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

// ---------------------------------------------------------------------------------------------
// BF.RESERVE
// ---------------------------------------------------------------------------------------------

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

// ---------------------------------------------------------------------------------------------
// arity, wrong type
// ---------------------------------------------------------------------------------------------

#[test]
fn arity_errors_name_the_command() {
    let (_s, mut c) = start();
    c.cmd(&["BF.ADD", "k", "a"]);
    let cases: Vec<Vec<&str>> = vec![
        vec!["bf.reserve", "x", "0.01"],
        vec!["bf.reserve", "x"],
        vec!["bf.add", "k"],
        vec!["bf.add", "k", "a", "b"],
        vec!["bf.madd", "k"],
        vec!["bf.exists", "k"],
        vec!["bf.exists", "k", "a", "b"],
        vec!["bf.mexists", "k"],
        vec!["bf.insert", "k"],
        vec!["bf.info"],
        vec!["bf.info", "k", "CAPACITY", "SIZE"],
        vec!["bf.card"],
        vec!["bf.card", "k", "a"],
        vec!["bf.debug"],
        vec!["bf.scandump", "k"],
        vec!["bf.scandump", "k", "0", "x"],
        vec!["bf.loadchunk", "k", "1"],
        vec!["bf.loadchunk", "k", "1", "x", "y"],
    ];
    for args in cases {
        let want = format!("ERR wrong number of arguments for '{}' command", args[0]);
        c.expect_err(&args, &want);
    }
    assert_no_key(&mut c, "x");
    assert_eq!(c.bf_card("k"), 1);
}

#[test]
fn every_command_on_a_string_key_is_wrongtype() {
    let (_s, mut c) = start();
    c.ok(&["SET", "s", "x"]);
    let cases: Vec<Vec<&str>> = vec![
        vec!["BF.RESERVE", "s", "0.01", "100"],
        vec!["BF.ADD", "s", "a"],
        vec!["BF.MADD", "s", "a", "b"],
        vec!["BF.EXISTS", "s", "a"],
        vec!["BF.MEXISTS", "s", "a", "b"],
        vec!["BF.INSERT", "s", "ITEMS", "a"],
        vec!["BF.INSERT", "s", "NOCREATE", "ITEMS", "a"],
        vec!["BF.INFO", "s"],
        vec!["BF.INFO", "s", "CAPACITY"],
        vec!["BF.CARD", "s"],
        vec!["BF.DEBUG", "s"],
        vec!["BF.SCANDUMP", "s", "0"],
        vec!["BF.LOADCHUNK", "s", "1", "xxxxxxxxxxxxxxxxxxxxxxxxxxxx"],
    ];
    for args in cases {
        c.expect_err(&args, WRONGTYPE);
    }
    assert_eq!(c.cmd(&["GET", "s"]), Value::Bulk(Some(b"x".to_vec())));
    c.cmd(&["RPUSH", "l", "x"]);
    c.expect_err(&["BF.EXISTS", "l", "a"], WRONGTYPE);
    c.expect_err(&["BF.ADD", "l", "a"], WRONGTYPE);
}

// ---------------------------------------------------------------------------------------------
// full nonscaling filters, scaling
// ---------------------------------------------------------------------------------------------

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

// ---------------------------------------------------------------------------------------------
// SCANDUMP / LOADCHUNK argument handling
// ---------------------------------------------------------------------------------------------

#[test]
fn scandump_walks_header_then_chunks_then_zero() {
    let (_s, mut c) = start();
    c.ok(&["BF.RESERVE", "k", "0.01", "100"]);
    c.madd("k", &items("s", 400));
    let chunks = c.scandump_all("k");
    let layers = c.bf_info("k").filters as usize;
    assert!(layers >= 3, "layers {}", layers);
    assert!(
        chunks.len() > layers,
        "expected a header and one chunk per layer at least, got {}",
        chunks.len()
    );
    assert!(chunks.iter().all(|(_, d)| !d.is_empty()));
    let layer_bytes: usize =
        c.bf_debug("k")[1..].iter().map(|l| layer_field(l, "bytes") as usize).sum();
    let data_bytes: usize = chunks[1..].iter().map(|(_, d)| d.len()).sum();
    assert_eq!(data_bytes, layer_bytes, "chunks after the header carry exactly the bit arrays");
    // the final reply
    let last = chunks.last().unwrap().0;
    assert_eq!(
        c.cmd(&["BF.SCANDUMP", "k", &last.to_string()]),
        Value::Array(Some(vec![Value::Int(0), Value::Bulk(Some(vec![]))]))
    );
}

#[test]
fn scandump_iterators_are_byte_offsets_into_the_layers() {
    let (_s, mut c) = start();
    c.ok(&["BF.RESERVE", "k", "0.01", "100", "EXPANSION", "3"]);
    c.madd("k", &items("s", 500));
    let debug = c.bf_debug("k");
    let layers: Vec<&String> = debug[1..].iter().collect();
    assert!(layers.len() >= 3, "{:?}", debug);
    let chunks = c.scandump_all("k");
    assert_eq!(chunks.len(), 1 + layers.len(), "small layers: one chunk each");
    assert_eq!(chunks[0].0, 1, "the header is followed by iterator 1 (byte offset 0)");
    let mut off = 1i64;
    for (i, l) in layers.iter().enumerate() {
        off += layer_field(l, "bytes");
        assert_eq!(chunks[i + 1].0, off, "iterator after layer {}", i);
        assert_eq!(chunks[i + 1].1.len() as i64, layer_field(l, "bytes"));
    }
    // a SCANDUMP may resume from the middle of a layer
    let v = c.cmd(&["BF.SCANDUMP", "k", "11"]);
    let a = v.as_array();
    assert_eq!(a[0], Value::Int(1 + layer_field(layers[0], "bytes")), "{:?}", v);
    assert_eq!(a[1].as_bytes(), &chunks[1].1[10..]);
}

#[test]
fn scandump_and_loadchunk_iterator_must_be_numeric() {
    let (_s, mut c) = start();
    c.cmd(&["BF.ADD", "k", "a"]);
    c.expect_err(&["BF.SCANDUMP", "k", "abc"], "Second argument must be numeric");
    c.expect_err(&["BF.SCANDUMP", "k", "1.5"], "Second argument must be numeric");
    c.expect_err(&["BF.LOADCHUNK", "n", "abc", "data"], "ERR Second argument must be numeric");
    assert_no_key(&mut c, "n");
}

#[test]
fn scandump_past_the_end_answers_zero_and_empty() {
    let (_s, mut c) = start();
    c.cmd(&["BF.ADD", "k", "a"]);
    assert_eq!(
        c.cmd(&["BF.SCANDUMP", "k", "99999999"]),
        Value::Array(Some(vec![Value::Int(0), Value::Bulk(Some(vec![]))]))
    );
}

/// RedisBloom answers any negative SCANDUMP iterator like the end of the dump: `[0, ""]`.
#[test]
fn scandump_negative_iterator_answers_zero_and_empty() {
    let (_s, mut c) = start();
    c.cmd(&["BF.ADD", "k", "a"]);
    let end = Value::Array(Some(vec![Value::Int(0), Value::Bulk(Some(vec![]))]));
    for it in ["-1", "-5", "-9223372036854775808"] {
        assert_eq!(c.cmd(&["BF.SCANDUMP", "k", it]), end, "BF.SCANDUMP k {it}");
    }
    // The key is checked first, as in RedisBloom.
    c.expect_err(&["BF.SCANDUMP", "missing", "-1"], "ERR not found");
    c.expect_err(&["BF.SCANDUMP", "missing", "abc"], "ERR not found");
}

/// RedisBloom's (2.8 and 8.x) replies to a chunk whose offset would be negative — iterator
/// below 1, or below the chunk's length — is `ERR received bad data`; an iterator equal to the
/// length (offset −1) or past the end is `ERR invalid offset - no link found`. Nothing changes.
#[test]
fn loadchunk_chunk_that_cannot_fit_answers_received_bad_data() {
    let (_s, mut c) = start();
    c.ok(&["BF.RESERVE", "src", "0.01", "100"]);
    c.madd("src", &items("x", 20));
    let chunks = c.scandump_all("src");
    c.ok(&[b"BF.LOADCHUNK".as_slice(), b"dst", b"1", &chunks[0].1]);
    let before = c.digest("dst");
    for it in ["-1", "-9223372036854775808", "0", "2"] {
        c.expect_err(&["BF.LOADCHUNK", "dst", it, "abc"], "ERR received bad data");
    }
    c.expect_err(&["BF.LOADCHUNK", "dst", "3", "abc"], "ERR invalid offset - no link found");
    c.expect_err(&["BF.LOADCHUNK", "dst", "99999", "abc"], "ERR invalid offset - no link found");
    assert_eq!(c.digest("dst"), before);
    // Into a filter that no header made: the bad-data check comes first there too.
    c.expect_err(&["BF.LOADCHUNK", "src", "-1", "abc"], "ERR received bad data");
    // A header into a key that exists: RedisBloom's words, then why.
    for key in ["src", "dst"] {
        c.expect_err(
            &[b"BF.LOADCHUNK".as_slice(), key.as_bytes(), b"1", &chunks[0].1],
            "ERR received bad data: the key already exists, and a BF.LOADCHUNK header (iterator 1) only creates a new filter; DEL the key first or load under another name",
        );
    }
    assert_eq!(c.digest("dst"), before);
    // A missing key: only iterator 1 (a header) creates it.
    c.expect_err(&["BF.LOADCHUNK", "none", "-1", "abc"], "ERR not found");
    assert_no_key(&mut c, "none");
}

#[test]
fn loadchunk_garbage_is_refused_and_server_survives() {
    let mut s = Server::start();
    let mut c = s.conn();
    let allowed = [
        "ERR received bad data",
        "ERR received bad data: the key already exists, and a BF.LOADCHUNK header (iterator 1) only creates a new filter; DEL the key first or load under another name",
        "ERR invalid offset - no link found",
        "ERR invalid chunk - Too big for current filter",
    ];
    let garbage: Vec<(&str, Vec<u8>)> = vec![
        ("1", b"garbage".to_vec()),
        ("1", vec![]),
        ("1", vec![0xff; 20]),
        ("1", vec![0u8; 73]),
        ("2", b"xyz".to_vec()),
        ("999999", vec![1, 2, 3]),
        ("-5", vec![1, 2, 3]),
        ("0", vec![1, 2, 3]),
    ];
    for (it, data) in &garbage {
        let v = c.cmd(&[b"BF.LOADCHUNK".as_slice(), b"g", it.as_bytes(), data]);
        let e = v.err_text();
        // a non-header chunk for a key that does not exist may also answer "not found", and a
        // negative iterator is not a valid (unsigned) number
        let ok = allowed.contains(&e)
            || (*it != "1" && e == "ERR not found")
            || (it.starts_with('-') && e == "ERR Second argument must be numeric");
        assert!(ok, "BF.LOADCHUNK g {} <{} bytes> -> {:?}", it, data.len(), e);
        assert_no_key(&mut c, "g");
    }
    // a valid header, then chunks that do not fit
    c.ok(&["BF.RESERVE", "src", "0.01", "100"]);
    c.madd("src", &items("x", 50));
    let chunks = c.scandump_all("src");
    c.ok(&[b"BF.LOADCHUNK".as_slice(), b"dst", b"1", &chunks[0].1]);
    let too_big = vec![0xAAu8; chunks[1].1.len() + 100];
    let e =
        c.cmd(&[b"BF.LOADCHUNK".as_slice(), b"dst", chunks[1].0.to_string().as_bytes(), &too_big]);
    assert!(e.is_err() && allowed.contains(&e.err_text()), "oversized chunk -> {:?}", e);
    let e = c.cmd(&[b"BF.LOADCHUNK".as_slice(), b"dst", b"100000", b"abc"]);
    assert!(e.is_err() && allowed.contains(&e.err_text()), "chunk at bad offset -> {:?}", e);
    // the half-loaded key still answers commands, and survives a save/load cycle
    assert!(!c.cmd(&["BF.EXISTS", "dst", "x"]).is_err());
    assert!(!c.cmd(&["BF.INFO", "dst"]).is_err());
    c.ok(&["DEBUG", "RELOAD"]);
    assert!(!c.cmd(&["BF.EXISTS", "dst", "x"]).is_err());
    s.assert_alive();
}

#[test]
fn loadchunk_header_with_zero_layers_then_add_does_not_crash() {
    let mut s = Server::start();
    let mut c = s.conn();
    c.ok(&["BF.RESERVE", "src", "0.01", "100"]);
    c.cmd(&["BF.ADD", "src", "a"]);
    let chunks = c.scandump_all("src");
    let mut h = chunks[0].1.clone();
    // RedisBloom layout: u64 items, u32 layer count, ...; zero the layer count and cut the layers
    h[8..12].copy_from_slice(&0u32.to_le_bytes());
    h.truncate(20);
    let v = c.cmd(&[b"BF.LOADCHUNK".as_slice(), b"z", b"1", &h]);
    if v.is_ok() {
        for args in [
            vec!["BF.ADD", "z", "a"],
            vec!["BF.EXISTS", "z", "a"],
            vec!["BF.INFO", "z"],
            vec!["BF.DEBUG", "z"],
        ] {
            let r = c.cmd(&args);
            s.assert_alive();
            let _ = r;
        }
    } else {
        assert!(v.err_text().starts_with("ERR"), "{:?}", v);
        assert_no_key(&mut c, "z");
    }
    s.assert_alive();
}

// ---------------------------------------------------------------------------------------------
// integration with the server: scripts, transactions, command table
// ---------------------------------------------------------------------------------------------

#[test]
fn commands_work_inside_scripts_and_transactions() {
    let (_s, mut c) = start();
    assert_eq!(
        c.cmd(&["EVAL", "return redis.call('BF.ADD', KEYS[1], ARGV[1])", "1", "k", "a"]),
        Value::Int(1)
    );
    assert_eq!(
        c.cmd(&["EVAL", "return redis.call('BF.EXISTS', KEYS[1], ARGV[1])", "1", "k", "a"]),
        Value::Int(1)
    );
    c.ok(&["MULTI"]);
    assert_eq!(c.cmd(&["BF.ADD", "k", "b"]), Value::Simple("QUEUED".into()));
    assert_eq!(c.cmd(&["BF.MEXISTS", "k", "a", "b"]), Value::Simple("QUEUED".into()));
    assert_eq!(
        c.cmd(&["EXEC"]),
        Value::Array(Some(vec![
            Value::Int(1),
            Value::Array(Some(vec![Value::Int(1), Value::Int(1)]))
        ]))
    );
}

#[test]
fn command_table_has_key_positions_and_flags() {
    let (_s, mut c) = start();
    for args in [
        vec!["BF.ADD", "k", "a"],
        vec!["BF.MADD", "k", "a", "b"],
        vec!["BF.INSERT", "k", "CAPACITY", "5", "ITEMS", "a", "b"],
        vec!["BF.MEXISTS", "k", "a", "b"],
        vec!["BF.RESERVE", "k", "0.01", "100"],
        vec!["BF.DEL", "k", "a"],
        vec!["BF.MDEL", "k", "a", "b"],
        vec!["BF.STATS", "k"],
    ] {
        let mut cmd = vec!["COMMAND", "GETKEYS"];
        cmd.extend(args.iter());
        assert_eq!(
            c.cmd(&cmd),
            Value::Array(Some(vec![Value::Bulk(Some(b"k".to_vec()))])),
            "{:?}",
            cmd
        );
    }
    let flags = |c: &mut Conn, name: &str| -> Vec<String> {
        let v = c.cmd(&["COMMAND", "INFO", name]);
        let entry = &v.as_array()[0];
        entry.as_array()[2].as_array().iter().map(|f| f.as_str().to_string()).collect()
    };
    for w in ["bf.reserve", "bf.add", "bf.madd", "bf.insert", "bf.loadchunk"] {
        let f = flags(&mut c, w);
        assert!(
            f.contains(&"write".to_string()) && f.contains(&"denyoom".to_string()),
            "{} flags {:?}",
            w,
            f
        );
    }
    // Deletes free memory, never take it: write and fast, not denyoom (they work past maxmemory).
    for d in ["bf.del", "bf.mdel"] {
        let f = flags(&mut c, d);
        let has = |x: &str| f.iter().any(|g| g == x);
        assert!(has("write") && has("fast") && !has("denyoom"), "{d} flags {f:?}");
    }
    for r in
        ["bf.exists", "bf.mexists", "bf.info", "bf.card", "bf.debug", "bf.scandump", "bf.stats"]
    {
        let f = flags(&mut c, r);
        assert!(
            f.contains(&"readonly".to_string()) && !f.contains(&"write".to_string()),
            "{} flags {:?}",
            r,
            f
        );
    }
}

#[test]
fn command_docs_have_summaries_and_arity_is_enforced_by_the_server() {
    let s = Server::start();
    let mut c = s.conn();
    let docs = c.cmd(&["COMMAND", "DOCS", "bf.add"]);
    let text = format!("{:?}", docs);
    assert!(text.contains("Adds an item"), "{}", text);
    let info = c.cmd(&["COMMAND", "INFO", "bf.madd"]);
    let entry = info.as_array()[0].as_array();
    assert_eq!(entry[1].as_int(), -3, "arity of bf.madd: {:?}", info);
    let spec = format!("{:?}", entry.get(8));
    assert!(spec.contains("RW") && spec.contains("insert"), "key spec of bf.madd: {}", spec);
}

/// A command's documented arguments, from `COMMAND DOCS`, one line each:
/// `name:type[:TOKEN][:optional][:multiple]`, nested arguments indented by two spaces.
fn doc_arguments(c: &mut Conn, command: &str) -> Vec<String> {
    fn walk(args: &Value, depth: usize, out: &mut Vec<String>) {
        for arg in args.as_array() {
            let fields = arg.pairs();
            let get = |k: &str| fields.iter().find(|(n, _)| n.as_str() == k).map(|(_, v)| v);
            let mut line = format!(
                "{}{}:{}",
                "  ".repeat(depth),
                get("name").unwrap().as_str(),
                get("type").unwrap().as_str()
            );
            if let Some(t) = get("token") {
                line += &format!(":{}", t.as_str());
            }
            if let Some(flags) = get("flags") {
                for f in flags.as_array() {
                    line += &format!(":{}", f.as_str());
                }
            }
            out.push(line);
            if let Some(sub) = get("arguments") {
                walk(sub, depth + 1, out);
            }
        }
    }
    let docs = c.cmd(&["COMMAND", "DOCS", command]);
    let entry = &docs.as_array()[1];
    let fields = entry.pairs();
    let args = &fields.iter().find(|(k, _)| k.as_str() == "arguments").expect("arguments").1;
    let mut out = Vec::new();
    walk(args, 0, &mut out);
    out
}

/// `COMMAND DOCS` lists each command's arguments with their types, tokens and flags (what
/// redis-cli builds its hints from), as RedisBloom documents the grammar.
#[test]
fn command_docs_list_every_argument() {
    let s = Server::start();
    let mut c = s.conn();
    assert_eq!(
        doc_arguments(&mut c, "bf.reserve"),
        [
            "key:key",
            "error_rate:double",
            "capacity:integer",
            "expansion:integer:EXPANSION:optional",
            "nonscaling:pure-token:NONSCALING:optional",
            "counting:integer:COUNTING:optional",
        ]
    );
    assert_eq!(
        doc_arguments(&mut c, "bf.insert"),
        [
            "key:key",
            "capacity:integer:CAPACITY:optional",
            "error:double:ERROR:optional",
            "expansion:integer:EXPANSION:optional",
            "nocreate:pure-token:NOCREATE:optional",
            "nonscaling:pure-token:NONSCALING:optional",
            "counting:integer:COUNTING:optional",
            "items:block:ITEMS",
            "  item:string:multiple",
        ]
    );
    assert_eq!(doc_arguments(&mut c, "bf.madd"), ["key:key", "item:string:multiple"]);
    assert_eq!(doc_arguments(&mut c, "bf.info")[1], "single_value:oneof:optional");
    assert_eq!(doc_arguments(&mut c, "bf.info").len(), 7);
    assert_eq!(
        doc_arguments(&mut c, "bf.loadchunk"),
        ["key:key", "iterator:integer", "data:string"]
    );
    assert_eq!(doc_arguments(&mut c, "bf.del"), ["key:key", "item:string"]);
    assert_eq!(doc_arguments(&mut c, "bf.mdel"), ["key:key", "item:string:multiple"]);
    assert_eq!(doc_arguments(&mut c, "bf.stats"), ["key:key"]);
    for cmd in ["bf.add", "bf.exists", "bf.mexists", "bf.card", "bf.debug", "bf.scandump"] {
        assert_eq!(doc_arguments(&mut c, cmd)[0], "key:key", "{cmd}");
    }
}

/// On servers with module ACL categories (Redis 7.2+, Valkey 8) every BF command is in
/// `@bloom`, reads in `@read` and writes in `@write`. Redis 7.0 has no module categories: there
/// `@bloom` does not exist, and commands are granted by name, which must work. Which case
/// applies comes from the server's version, not from what the module managed to register.
#[test]
fn acl_read_users_can_query_but_not_write() {
    let s = Server::start();
    let mut c = s.conn();
    c.cmd(&["BF.ADD", "k", "a"]);
    let engine = c.engine();
    let has_categories = engine.has_module_acl_categories();
    let cat = c.cmd(&["ACL", "CAT", "bloom"]);
    assert_eq!(!cat.is_err(), has_categories, "{engine}: ACL CAT bloom -> {cat:?}");
    let grants: &[&str] = if has_categories {
        &["+@read"]
    } else {
        &["+bf.exists", "+bf.mexists", "+bf.info", "+bf.card"]
    };
    let mut setuser = vec!["ACL", "SETUSER", "reader", "on", ">pw", "~*"];
    setuser.extend_from_slice(grants);
    assert!(c.cmd(&setuser).is_ok());
    let mut r = s.conn();
    assert!(r.cmd(&["AUTH", "reader", "pw"]).is_ok());
    assert_eq!(r.cmd(&["BF.EXISTS", "k", "a"]).as_bit(), 1);
    assert_eq!(r.cmd(&["BF.CARD", "k"]).as_int(), 1);
    let denied = r.cmd(&["BF.ADD", "k", "b"]);
    assert!(denied.err_text().starts_with("NOPERM"), "{:?}", denied);
    if has_categories {
        let cat = format!("{:?}", c.cmd(&["ACL", "CAT", "bloom"]));
        for name in ["bf.add", "bf.exists", "bf.reserve", "bf.scandump", "bf.loadchunk"] {
            assert!(cat.contains(name), "{name} missing from @bloom: {cat}");
        }
    }
}

/// Every write publishes its module keyspace event (`bf.reserve`, `bf.add`, `bf.madd`,
/// `bf.insert`, `bf.loadchunk`), in order, on the key's channel; a write that changes nothing
/// (an item already present) publishes none.
#[test]
fn every_write_publishes_its_keyspace_event_and_no_op_writes_none() {
    let s = Server::start();
    let mut c = s.conn();
    c.ok(&["CONFIG", "SET", "notify-keyspace-events", "Kd"]);
    let mut sub = s.conn();
    let confirm = sub.cmd(&["PSUBSCRIBE", "__keyspace@0__:*"]);
    assert_eq!(confirm.as_array()[0].as_str(), "psubscribe", "{:?}", confirm);

    c.ok(&["BF.RESERVE", "k1", "0.01", "100"]);
    assert_eq!(c.cmd(&["BF.ADD", "k1", "x"]).as_int(), 1);
    assert_eq!(c.cmd(&["BF.ADD", "k1", "x"]).as_int(), 0, "present: no change, no event");
    c.madd("k1", &items("m", 3));
    c.madd("k1", &items("m", 3)); // all present: no event
    c.cmd(&["BF.INSERT", "k2", "CAPACITY", "50", "ITEMS", "a", "b"]);
    c.cmd(&["BF.ADD", "k3", "auto-created"]);
    let chunks = c.scandump_all("k1");
    for (it, data) in &chunks {
        let r = c.cmd(&[&b"BF.LOADCHUNK"[..], b"k4", it.to_string().as_bytes(), data]);
        assert!(r.is_ok(), "{:?}", r);
    }

    let mut expected: Vec<(String, String)> = vec![
        ("k1".into(), "bf.reserve".into()),
        ("k1".into(), "bf.add".into()),
        ("k1".into(), "bf.madd".into()),
        ("k2".into(), "bf.insert".into()),
        ("k3".into(), "bf.add".into()),
    ];
    expected.extend(chunks.iter().map(|_| ("k4".to_string(), "bf.loadchunk".to_string())));
    for (key, event) in &expected {
        let m = sub.read_reply().expect("a keyspace event before the read timeout");
        let parts = m.as_array();
        assert_eq!(parts[0].as_str(), "pmessage", "{:?}", m);
        assert_eq!(parts[2].as_str(), format!("__keyspace@0__:{key}"), "{:?}", m);
        assert_eq!(parts[3].as_str(), event.as_str(), "{:?}", m);
    }
    // Nothing more was published: a marker event from a plain SET comes next.
    c.ok(&["SET", "marker", "1"]);
    c.ok(&["CONFIG", "SET", "notify-keyspace-events", "KA"]);
    c.ok(&["SET", "marker", "2"]);
    let m = sub.read_reply().expect("the marker event");
    assert_eq!(
        m.as_array()[2].as_str(),
        "__keyspace@0__:marker",
        "an unexpected event came first: {:?}",
        m
    );
}
