//! Integration with the server: scripts, transactions, command table.

use super::*;

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
            "window:string:WINDOW:optional",
            "layout:oneof:LAYOUT:optional",
            "  standard:pure-token:STANDARD",
            "  blocked:pure-token:BLOCKED",
            "otherkey:key:LIKE:optional",
            "seed:string:SEED:optional",
            "tightening:double:TIGHTENING:optional",
            "validatescaleto:integer:VALIDATESCALETO:optional",
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
            "window:string:WINDOW:optional",
            "layout:oneof:LAYOUT:optional",
            "  standard:pure-token:STANDARD",
            "  blocked:pure-token:BLOCKED",
            "otherkey:key:LIKE:optional",
            "seed:string:SEED:optional",
            "tightening:double:TIGHTENING:optional",
            "validatescaleto:integer:VALIDATESCALETO:optional",
            "items:block:ITEMS",
            "  item:string:multiple",
        ]
    );
    assert_eq!(doc_arguments(&mut c, "bf.madd"), ["key:key", "item:string:multiple"]);
    assert_eq!(doc_arguments(&mut c, "bf.info")[1], "single_value:oneof:optional");
    assert_eq!(doc_arguments(&mut c, "bf.info").len(), 10);
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
