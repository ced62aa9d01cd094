//! RedisBloom's own cuckoo tests (`tests/flow/test_cuckoo.py` of RedisBloom/RedisBloom), their
//! assertions ported to run against scalebloom (not RLTest itself: each test has its server).
//! Every assertion holds as RedisBloom states it; there is no documented difference to skip.
//! (`assertRaises(ResponseError, …)` becomes "the reply is an error".)

use super::*;

/// A command given as one string of space-separated words, as the Python tests write many.
fn w(s: &str) -> Vec<&str> {
    s.split_whitespace().collect()
}

fn is_error(c: &mut Conn, args: &[&str]) {
    let r = c.cmd(args);
    assert!(r.is_err(), "`{}` answered {r:?}, not an error", args.join(" "));
}

fn debug(c: &mut Conn, key: &str) -> String {
    c.cmd(&["CF.DEBUG", key]).as_str().to_string()
}

fn ints(v: &[i64]) -> Value {
    Value::Array(Some(v.iter().map(|&i| Value::Int(i)).collect()))
}

#[test]
fn test_count() {
    let mut s = Server::start();
    let mut c = s.conn();
    is_error(&mut c, &w("CF.RESERVE cf"));
    is_error(&mut c, &w("CF.RESERVE cf str"));
    c.ok(&w("CF.RESERVE cf 1000"));
    is_error(&mut c, &w("CF.RESERVE cf 1000"));
    is_error(&mut c, &w("CF.RESERVE tooSmall 1"));
    is_error(&mut c, &w("CF.INSERT cf CAPACITY -1 ITEMS k0"));
    is_error(&mut c, &w("CF.INSERT cf CAPACITY 3 ITEMS k0"));
    is_error(&mut c, &w("CF.INSERTNX cf CAPACITY -1 ITEMS k0"));
    is_error(&mut c, &w("CF.INSERTNX cf CAPACITY 3 ITEMS k0"));
    assert_eq!(c.int(&w("cf.exists cf k1")), 0);
    assert_eq!(c.int(&w("cf.add cf k1")), 1);
    assert_eq!(c.int(&w("cf.add cf k1")), 1);
    assert_eq!(c.int(&w("cf.exists cf k1")), 1);
    assert_eq!(c.int(&w("cf.count cf k1")), 2);
    assert_eq!(c.int(&w("cf.del cf k1")), 1);
    assert_eq!(c.int(&w("cf.count cf k1")), 1);
    assert_eq!(c.int(&w("cf.del cf k1")), 1);
    assert_eq!(c.int(&w("cf.count cf k1")), 0);
    assert_eq!(c.int(&w("cf.del cf k1")), 0);
    is_error(&mut c, &w("cf.del cf"));
    is_error(&mut c, &w("cf.del bf k1"));
    for x in 0..100 {
        c.cmd(&["cf.add", "nums", &x.to_string()]);
    }
    for x in 0..100 {
        assert_eq!(c.int(&["cf.exists", "nums", &x.to_string()]), 1);
    }
    s.assert_alive();
}

#[test]
fn test_setnx() {
    let s = Server::start();
    let mut c = s.conn();
    assert_eq!(c.int(&w("cf.addnx cf k1")), 1);
    assert_eq!(c.int(&w("cf.addnx cf k1")), 0);
    assert_eq!(c.int(&w("cf.count cf k1")), 1);
    assert_eq!(c.int(&w("cf.add cf k1")), 1);
    assert_eq!(c.int(&w("cf.count cf k1")), 2);
}

#[test]
fn test_insert() {
    let s = Server::start();
    let mut c = s.conn();
    assert_eq!(c.int(&w("cf.add f1 foo")), 1);
    is_error(&mut c, &w("cf.add f1"));
    assert_eq!(c.cmd(&w("cf.insert f2 ITEMS foo")), ints(&[1]));
    is_error(&mut c, &w("cf.insert cf"));
    let d1 = debug(&mut c, "f1");
    let d2 = debug(&mut c, "f2");
    is_error(&mut c, &w("cf.debug"));
    is_error(&mut c, &w("cf.debug noexist"));
    assert!(!d1.is_empty());
    assert_eq!(d1, d2);
    assert_eq!(c.cmd(&w("cf.insertnx f1 items foo")), ints(&[0]));
    assert_eq!(c.cmd(&w("cf.insert f3 CAPACITY 10000 ITEMS foo")), ints(&[1]));
    is_error(&mut c, &w("cf.insert f3 NOCREATE CAPACITY"));
    is_error(&mut c, &w("cf.insert f3 NOCREATE CAPACITY str"));
    is_error(&mut c, &w("cf.insert f3 NOCREATE DONTEXIST"));
    is_error(&mut c, &w("cf.insert f3 NOCREATE ITEMS"));
    let d3 = debug(&mut c, "f3");
    assert_eq!(
        d3,
        "bktsize:2 buckets:8192 items:1 deletes:0 filters:1 max_iterations:20 expansion:1"
    );
    assert_ne!(d1, d3);
    assert_eq!(c.cmd(&w("cf.insertnx f3 ITEMS foo bar baz")), ints(&[0, 1, 1]));
    is_error(&mut c, &w("cf.insert f4 nocreate items foo"));
    c.cmd(&w("cf.insert f4 items foo"));
    assert_eq!(c.cmd(&w("cf.insert f4 nocreate items foo")), ints(&[1]));
}

#[test]
fn test_exists() {
    let s = Server::start();
    let mut c = s.conn();
    assert_eq!(c.cmd(&w("CF.INSERT f1 ITEMS foo bar baz")), ints(&[1, 1, 1]));
    assert_eq!(c.cmd(&w("CF.MEXISTS f1 foo bar baz")), ints(&[1, 1, 1]));
    assert_eq!(c.int(&w("CF.EXISTS nonexist-key blah")), 0);
    assert_eq!(c.cmd(&w("CF.MEXISTS nonexist-key blah")), ints(&[0]));
    for cmd in ["CF.MEXISTS key", "CF.MEXISTS", "CF.EXISTS key", "CF.EXISTS"] {
        is_error(&mut c, &w(cmd));
    }
}

/// RedisBloom's 1112 is `CF.INFO Size` (1080) plus what Redis counts for the key itself; Valkey
/// counts the key differently (1104 on Valkey 8.1), so there the filter's part is checked.
#[test]
fn test_mem_usage() {
    let s = Server::start();
    let mut c = s.conn();
    let want =
        if c.engine().is_redis_at_least(0, 0) { 1112 } else { 1080 + valkey_key_overhead(&mut c) };
    c.ok(&w("CF.RESERVE cf 1000"));
    c.ok(&w("DEBUG RELOAD"));
    assert_eq!(c.int(&w("MEMORY USAGE cf")), want);
    c.cmd(&w("cf.insert cf nocreate items foo"));
    assert_eq!(c.int(&w("MEMORY USAGE cf")), want);
}

/// What the engine's MEMORY USAGE adds to a module value's own size for the key `cf`: measured
/// on a filter whose `CF.INFO Size` is known (RESERVE 4: 56 bytes), then deleted.
fn valkey_key_overhead(c: &mut Conn) -> i64 {
    c.ok(&w("CF.RESERVE cf 4"));
    let size = cf_info(c, "cf")[0].1;
    let usage = c.int(&w("MEMORY USAGE cf"));
    c.cmd(&w("DEL cf"));
    usage - size
}

#[test]
fn test_max_iterations() {
    let s = Server::start();
    let mut c = s.conn();
    c.ok(&w("CF.RESERVE a 10 MAXITERATIONS 10"));
    assert_eq!(
        debug(&mut c, "a"),
        "bktsize:2 buckets:8 items:0 deletes:0 filters:1 max_iterations:10 expansion:1"
    );
    c.ok(&w("CF.RESERVE b 10"));
    assert_eq!(
        debug(&mut c, "b"),
        "bktsize:2 buckets:8 items:0 deletes:0 filters:1 max_iterations:20 expansion:1"
    );
    is_error(&mut c, &w("CF.RESERVE a 10 MAXITERATIONS string"));
}

#[test]
fn test_num_deletes() {
    let s = Server::start();
    let mut c = s.conn();
    c.cmd(&w("cf.add nums Redis"));
    c.cmd(&w("cf.del nums Redis"));
    let d1 = debug(&mut c, "nums");
    c.ok(&w("DEBUG RELOAD"));
    assert_eq!(debug(&mut c, "nums"), d1);
}

#[test]
fn test_compact() {
    let s = Server::start();
    let mut c = s.conn();
    c.ok(&w("CF.RESERVE cf 8 MAXITERATIONS 50"));
    for x in 0..100 {
        c.cmd(&["cf.add", "cf", &x.to_string()]);
    }
    for x in 0..100 {
        assert_eq!(c.int(&["cf.exists", "cf", &x.to_string()]), 1);
    }
    // Python's `[49:52]` of the CF.DEBUG string, compared as strings, as there.
    let str1 = debug(&mut c, "cf")[49..52].to_string();
    assert!(str1.as_str() >= "130", "{str1}");
    c.ok(&w("cf.compact cf"));
    let str2 = debug(&mut c, "cf")[49..52].to_string();
    assert!(str1 >= str2, "{str1} < {str2}");
    is_error(&mut c, &w("CF.COMPACT a"));
    is_error(&mut c, &w("CF.COMPACT a b"));
}

#[test]
fn test_max_expansions() {
    let s = Server::start();
    let mut c = s.conn();
    c.ok(&w("CF.RESERVE cf 4"));
    for i in 0..124 {
        assert_eq!(c.int(&["cf.add", "cf", &i.to_string()]), 1, "item {i}");
    }
    is_error(&mut c, &w("cf.add cf 2048"));
}

/// RedisBloom's `test_bucket_size` and `test_expansion` share one shape: three filters made by
/// `reserves`, the same 1000 items added to each and all found, then `CF.DEBUG` of each
/// (`expected`, in key order `a`, `b`, `c`) and the option's argument errors (`bad`).
fn three_filters_of_1000(reserves: [&str; 3], expected: [&str; 3], bad: [&str; 2]) {
    let s = Server::start();
    let mut c = s.conn();
    for r in reserves {
        c.ok(&w(r));
    }
    let keys = ["a", "b", "c"];
    for i in 0..1000 {
        for k in keys {
            c.cmd(&["CF.ADD", k, &i.to_string()]);
        }
    }
    for i in 0..1000 {
        for k in keys {
            assert_eq!(c.int(&["CF.EXISTS", k, &i.to_string()]), 1, "{k} {i}");
        }
    }
    for (k, e) in keys.into_iter().zip(expected) {
        assert_eq!(debug(&mut c, k), e, "{k}");
    }
    for b in bad {
        is_error(&mut c, &w(b));
    }
}

#[test]
fn test_bucket_size() {
    three_filters_of_1000(
        [
            "CF.RESERVE a 64 BUCKETSIZE 1",
            "CF.RESERVE b 64 BUCKETSIZE 2",
            "CF.RESERVE c 256 BUCKETSIZE 4 MAXITERATIONS 500",
        ],
        [
            "bktsize:1 buckets:64 items:1000 deletes:0 filters:18 max_iterations:20 expansion:1",
            "bktsize:2 buckets:32 items:1000 deletes:0 filters:17 max_iterations:20 expansion:1",
            "bktsize:4 buckets:64 items:1000 deletes:0 filters:4 max_iterations:500 expansion:1",
        ],
        ["CF.RESERVE err 10 BUCKETSIZE", "CF.RESERVE err 10 BUCKETSIZE string"],
    );
}

#[test]
fn test_expansion() {
    three_filters_of_1000(
        [
            "CF.RESERVE a 64 EXPANSION 1",
            "CF.RESERVE b 64 EXPANSION 2",
            "CF.RESERVE c 64 EXPANSION 4 MAXITERATIONS 500",
        ],
        [
            "bktsize:2 buckets:32 items:1000 deletes:0 filters:17 max_iterations:20 expansion:1",
            "bktsize:2 buckets:32 items:1000 deletes:0 filters:5 max_iterations:20 expansion:2",
            "bktsize:2 buckets:32 items:1000 deletes:0 filters:3 max_iterations:500 expansion:4",
        ],
        ["CF.RESERVE err 10 EXPANSION", "CF.RESERVE err 10 EXPANSION string"],
    );
}

#[test]
fn test_expansion_0() {
    let s = Server::start();
    let mut c = s.conn();
    c.ok(&w("CF.RESERVE a 4 EXPANSION 0"));
    for i in 1..=4 {
        assert_eq!(c.int(&["CF.ADD", "a", &i.to_string()]), 1);
    }
    assert_eq!(c.cmd(&w("CF.INSERT a ITEMS 5 6")), ints(&[-1, -1]));
    is_error(&mut c, &w("Filter is full"));
}

#[test]
fn test_info() {
    let s = Server::start();
    let mut c = s.conn();
    c.ok(&w("CF.RESERVE a 1000"));
    let want = [
        ("Size", 1080),
        ("Number of buckets", 512),
        ("Number of filters", 1),
        ("Number of items inserted", 0),
        ("Number of items deleted", 0),
        ("Bucket size", 2),
        ("Expansion rate", 1),
        ("Max iterations", 20),
    ];
    let flat: Vec<Value> =
        want.iter().flat_map(|(k, v)| [Value::Simple(k.to_string()), Value::Int(*v)]).collect();
    assert_eq!(c.cmd(&w("CF.INFO a")), Value::Array(Some(flat)));
    is_error(&mut c, &w("cf.info bf"));
    is_error(&mut c, &w("cf.info"));
}

#[test]
fn test_params() {
    let s = Server::start();
    let mut c = s.conn();
    for cmd in [
        "CF.RESERVE",
        "CF.RESERVE err",
        "CF.RESERVE err 10 EXPANSION -1",
        "CF.RESERVE err 10 BUCKETSIZE 0",
        "CF.RESERVE err 10 BUCKETSIZE -1",
        "CF.RESERVE err 10 MAXITERATIONS 0",
        "CF.RESERVE err 10 MAXITERATIONS -1",
    ] {
        is_error(&mut c, &w(cmd));
    }
    c.ok(&w("CF.RESERVE err 1000"));
    for cmd in [
        "CF.ADD",
        "CF.ADD err",
        "CF.ADDNX",
        "CF.ADDNX err",
        "CF.INSERT",
        "CF.INSERT err",
        "CF.INSERT err element",
        "CF.INSERTNX",
        "CF.INSERTNX err",
        "CF.INSERTNX err element",
        "CF.DEL",
        "CF.DEL err",
        "CF.EXISTS",
        "CF.EXISTS err",
        "CF.MEXISTS",
        "CF.MEXISTS err",
        "CF.COUNT",
        "CF.COUNT err",
        "CF.INFO",
        "CF.LOADCHUNK err",
        "CF.LOADCHUNK err iterator",
        "CF.SCANDUMP err",
    ] {
        is_error(&mut c, &w(cmd));
    }
}

/// `CF.SCANDUMP` from iterator 0 to the end, the `[iterator, data]` pairs.
fn scandump(c: &mut Conn, key: &str) -> Vec<(i64, Vec<u8>)> {
    let mut chunks: Vec<(i64, Vec<u8>)> = Vec::new();
    loop {
        let pos = chunks.last().map_or(0, |x| x.0);
        let r = c.cmd(&["cf.scandump", key, &pos.to_string()]);
        let Value::Array(Some(v)) = r else { panic!("{r:?}") };
        let Value::Int(next) = v[0] else { panic!("{v:?}") };
        if next == 0 {
            return chunks;
        }
        chunks.push((next, v[1].as_bytes().to_vec()));
    }
}

fn scandump_round_trip(reserve: &[&str], items: usize, same_item: bool) {
    let s = Server::start();
    let mut c = s.conn();
    c.ok(reserve);
    let empty = Value::Array(Some(vec![Value::Int(0), Value::Bulk(None)]));
    assert_eq!(c.cmd(&w("cf.scandump cf 0")), empty);
    let item = |x: usize| if same_item { "foo".to_string() } else { x.to_string() };
    for x in 0..items {
        c.cmd(&["cf.add", "cf", &item(x)]);
    }
    for x in 0..items {
        assert_eq!(c.int(&["cf.exists", "cf", &item(x)]), 1);
    }
    is_error(&mut c, &w("cf.scandump cf"));
    is_error(&mut c, &w("cf.scandump cf str"));
    is_error(&mut c, &w("cf.scandump noexist 0"));
    let chunks = scandump(&mut c, "cf");
    c.cmd(&w("del cf"));
    is_error(&mut c, &w("cf.loadchunk cf"));
    is_error(&mut c, &w("cf.loadchunk cf str"));
    for (it, data) in &chunks {
        c.ok(&[&b"cf.loadchunk"[..], b"cf", it.to_string().as_bytes(), data]);
    }
    for x in 0..items {
        assert_eq!(c.int(&["cf.exists", "cf", &item(x)]), 1);
    }
}

#[test]
fn test_scandump() {
    scandump_round_trip(&w("cf.reserve cf 62"), 500, false);
}

#[test]
fn test_scandump_with_expansion() {
    scandump_round_trip(&w("cf.reserve cf 62 expansion 2"), 500, false);
}

#[test]
fn test_scandump_huge() {
    scandump_round_trip(&w("cf.reserve cf 67108864"), 6, true);
}

#[test]
fn test_scandump_invalid() {
    let s = Server::start();
    let mut c = s.conn();
    c.ok(&w("cf.reserve cf 4"));
    is_error(&mut c, &w("cf.loadchunk cf -9223372036854775808 1"));
    is_error(&mut c, &w("cf.loadchunk cf 922337203685477588 1"));
    is_error(&mut c, &w("cf.loadchunk cf 4 kdoasdksaodsadsadsadsadsadadsadadsdad"));
    is_error(&mut c, &w("cf.loadchunk cf 4 abcd"));
    c.cmd(&w("cf.add cf x"));
    is_error(&mut c, &w("cf.scandump cf -1"));
}
