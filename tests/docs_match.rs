//! The documents say what the server does: `redis.conf.example` lists every setting with its
//! default, and the manual lists every `INFO bf` field and every keyspace event
//! (docs/monitoring.md) and, in its Redis 7 grant lists (docs/acl.md), every command a reader or
//! a writer needs; no page of README.md or docs/ names an `INFO bf` field the server lacks. Each
//! test reads the document and compares it with a live server, so a new field, event, setting
//! or command fails here until the document names it.

mod common;
use common::*;
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// The `# bf.<name> <value>` lines of redis.conf.example: the settings it documents, in order.
fn example_settings(text: &str) -> Vec<(String, String)> {
    text.lines()
        .filter_map(|l| l.strip_prefix("# bf."))
        .map(|l| {
            let mut words = l.split_whitespace();
            let name = format!("bf.{}", words.next().unwrap_or(""));
            let value = words.next().unwrap_or_else(|| panic!("no value on line '# {l}'"));
            assert!(words.next().is_none(), "more than a value on line '# {l}'");
            (name, value.to_string())
        })
        .collect()
}

/// `value` as `CONFIG GET` shows it: memory sizes in bytes.
fn normalized(value: &str) -> String {
    let lower = value.to_ascii_lowercase();
    for (suffix, unit) in [("kb", 1u64 << 10), ("mb", 1 << 20), ("gb", 1 << 30), ("tb", 1 << 40)] {
        if let Some(n) = lower.strip_suffix(suffix).and_then(|n| n.parse::<u64>().ok()) {
            return (n * unit).to_string();
        }
    }
    value.to_string()
}

fn same_value(shown: &str, documented: &str) -> bool {
    let documented = normalized(documented);
    match (shown.parse::<f64>(), documented.parse::<f64>()) {
        (Ok(a), Ok(b)) => a == b,
        _ => shown.eq_ignore_ascii_case(&documented),
    }
}

/// Every setting `CONFIG GET bf.*` shows is documented in redis.conf.example with its default,
/// and the file's lines, uncommented, start a server that reports exactly those values.
#[test]
fn redis_conf_example_has_every_setting_with_its_default() {
    let text = repo_file("redis.conf.example");
    let documented = example_settings(&text);
    let by_name: BTreeMap<&str, &str> =
        documented.iter().map(|(n, v)| (n.as_str(), v.as_str())).collect();
    assert_eq!(by_name.len(), documented.len(), "a setting is listed twice: {documented:?}");

    // A server with no arguments shows the defaults: each must be in the file, with its value.
    let s = Server::start();
    let mut c = s.conn();
    let shown = c.cmd(&["CONFIG", "GET", "bf.*"]).pairs();
    assert!(!shown.is_empty(), "CONFIG GET bf.* shows nothing");
    for (name, value) in &shown {
        let (name, value) = (name.as_str(), value.as_str());
        let Some(doc) = by_name.get(name) else {
            panic!("redis.conf.example does not list the setting {name} (default {value})");
        };
        assert!(same_value(value, doc), "{name}: default {value}, redis.conf.example says {doc}");
    }
    for (name, _) in &documented {
        assert!(
            shown.iter().any(|(n, _)| n.as_str() == name.as_str()),
            "redis.conf.example lists {name}, which the server does not have"
        );
    }

    // The file itself, with every setting line uncommented, is a configuration the server
    // starts with (the test's own options override its port, dir and logfile).
    let dir = Arc::new(TempDir::new("conf-example"));
    let mut conf = text.clone();
    conf.push_str("\n# uncommented by tests/docs_match.rs\n");
    for (name, value) in &documented {
        conf.push_str(&format!("{name} {value}\n"));
    }
    let path = dir.path().join("redis.conf");
    std::fs::write(&path, conf).expect("write the configuration");
    let s = Server::start_in(dir, ServerOpts::new().config_file(&path));
    let mut c = s.conn();
    for (name, value) in &documented {
        let got = c.config_get(name).unwrap_or_else(|| panic!("CONFIG GET {name} shows nothing"));
        assert!(same_value(&got, value), "{name}: {got} after the line '{name} {value}'");
    }
}

/// The `bf_*` words of a document.
fn bf_words(text: &str) -> BTreeSet<String> {
    text.split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        .filter(|w| w.starts_with("bf_") && w.len() > 3)
        .map(str::to_string)
        .collect()
}

/// README.md and every page directly in docs/.
fn doc_pages() -> Vec<String> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("docs");
    let mut pages = vec!["README.md".to_string()];
    for entry in std::fs::read_dir(&dir).unwrap_or_else(|e| panic!("read {}: {e}", dir.display())) {
        let name = entry.expect("a docs/ entry").file_name().to_string_lossy().into_owned();
        if name.ends_with(".md") {
            pages.push(format!("docs/{name}"));
        }
    }
    pages
}

/// The `bf_*` field names docs/monitoring.md mentions are exactly the fields of `INFO bf`, and
/// no other page names one the server lacks.
#[test]
fn docs_list_every_info_bf_field() {
    let documented = bf_words(&repo_file("docs/monitoring.md"));
    let s = Server::start();
    let mut c = s.conn();
    let info = c.cmd(&["INFO", "bf"]);
    let fields: BTreeSet<String> = info
        .as_str()
        .lines()
        .filter_map(|l| l.split_once(':').map(|(k, _)| k.to_string()))
        .filter(|k| !k.starts_with('#'))
        .collect();
    assert!(!fields.is_empty(), "INFO bf shows no field: {info:?}");
    assert_eq!(documented, fields, "docs/monitoring.md's bf_* names against INFO bf's fields");
    for page in doc_pages() {
        let unknown: Vec<String> =
            bf_words(&repo_file(&page)).difference(&fields).cloned().collect();
        assert!(unknown.is_empty(), "{page} names bf_* fields INFO bf lacks: {unknown:?}");
    }
}

/// The backquoted `bf.*` / `cf.*` words of docs/monitoring.md's "Keyspace notifications" bullet.
fn listed_events(page: &str) -> BTreeSet<String> {
    let start = page
        .find("- Keyspace notifications")
        .expect("docs/monitoring.md has a Keyspace notifications bullet");
    let paragraph = &page[start..];
    let paragraph = &paragraph[..paragraph.find("\n\n").unwrap_or(paragraph.len())];
    paragraph
        .split('`')
        .skip(1)
        .step_by(2)
        .filter(|w| {
            (w.starts_with("bf.") || w.starts_with("cf."))
                && w[3..].chars().all(|c| c.is_ascii_lowercase())
        })
        .map(str::to_string)
        .collect()
}

/// Every keyspace event a write of any filter type publishes is in docs/monitoring.md's list, and every
/// event the list names is published by some write.
#[test]
fn docs_list_every_keyspace_event() {
    let documented = listed_events(&repo_file("docs/monitoring.md"));
    let s = Server::start();
    let mut c = s.conn();
    c.ok(&["CONFIG", "SET", "notify-keyspace-events", "Kd"]);
    let mut sub = s.conn();
    sub.cmd(&["PSUBSCRIBE", "__keyspace@0__:*"]);
    let writes: Vec<Vec<&str>> = vec![
        vec!["BF.RESERVE", "b", "0.01", "100"],
        vec!["BF.ADD", "b", "a"],
        vec!["BF.MADD", "b", "x", "y"],
        vec!["BF.INSERT", "b", "ITEMS", "z"],
        vec!["BF.MERGE", "m", "b"],
        vec!["BF.RESERVE", "c", "0.01", "100", "COUNTING", "4"],
        vec!["BF.ADD", "c", "a"],
        vec!["BF.ADD", "c", "b"],
        vec!["BF.DEL", "c", "a"],
        vec!["BF.MDEL", "c", "b"],
        vec!["BF.RESERVE", "w", "0.01", "100", "WINDOW", "ITEMS"],
        vec!["BF.ADD", "w", "a"],
        vec!["BF.MADD", "w", "b"],
        vec!["BF.INSERT", "w", "ITEMS", "c"],
        vec!["BF.RESERVE", "bl", "0.01", "100", "LAYOUT", "BLOCKED"],
        vec!["BF.ADD", "bl", "a"],
        vec!["CF.RESERVE", "f", "100"],
        vec!["CF.ADD", "f", "a"],
        vec!["CF.ADDNX", "f", "b"],
        vec!["CF.INSERT", "f", "ITEMS", "c"],
        vec!["CF.INSERTNX", "f", "ITEMS", "d"],
        vec!["CF.DEL", "f", "a"],
        vec!["CF.COMPACT", "f"],
    ];
    for w in &writes {
        let r = c.cmd(w);
        assert!(!r.is_err(), "{w:?} -> {r:?}");
    }
    for (it, data) in c.scandump_all("b") {
        c.ok(&[&b"BF.LOADCHUNK"[..], b"b2", it.to_string().as_bytes(), &data]);
    }
    let mut it = 0i64;
    loop {
        let step = c.cmd(&["CF.SCANDUMP", "f", &it.to_string()]);
        let step = step.as_array();
        it = step[0].as_int();
        if it == 0 {
            break;
        }
        c.ok(&[&b"CF.LOADCHUNK"[..], b"f2", it.to_string().as_bytes(), step[1].as_bytes()]);
    }
    // A valkey-bloom filter from its AOF rewrite's payload, and an add to it.
    let payload = std::fs::read(
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/fixtures/valkey-bloom/valkey-8.1/scale1/bfload.bin"),
    )
    .unwrap();
    c.ok(&[&b"BF.LOAD"[..], b"v", &payload]);
    assert!(!c.cmd(&["BF.ADD", "v", "new-item"]).is_err());
    c.ok(&["SET", "done", "1"]);
    c.ok(&["CONFIG", "SET", "notify-keyspace-events", "KA"]);
    c.ok(&["SET", "done", "2"]);
    let mut published = BTreeSet::new();
    loop {
        let m = sub.read_reply().expect("a keyspace event before the read timeout");
        let a = m.as_array();
        if a[2].as_str().ends_with(":done") {
            break;
        }
        published.insert(a[3].as_str().to_string());
    }
    assert_eq!(
        documented, published,
        "docs/monitoring.md's keyspace events against those published"
    );
}

/// The words after `+` on docs/acl.md's `ACL SETUSER <user> …` line.
fn listed_grants(page: &str, user: &str) -> BTreeSet<String> {
    let marker = format!("ACL SETUSER {user} ");
    let line = page
        .lines()
        .find(|l| l.contains(&marker))
        .unwrap_or_else(|| panic!("docs/acl.md has no '{marker}' line"));
    line.split_whitespace().filter_map(|w| w.strip_prefix('+')).map(str::to_string).collect()
}

/// Commands only a primary's stream, AOF replay or a test may run: in no grant list.
const NOT_FOR_USERS: [&str; 3] = ["bf.replconf", "bf.windowadd", "bf.debugclock"];

/// docs/acl.md's Redis 7 grant lists name every module command a reader needs (the read-only
/// ones) and, for a writer, every write; a user made with them may read and not write.
#[test]
fn docs_grant_lists_cover_every_command() {
    let page = repo_file("docs/acl.md");
    let reader = listed_grants(&page, "reader");
    let writer = listed_grants(&page, "writer");
    let s = Server::start();
    let mut c = s.conn();
    let names = c.cmd(&["COMMAND", "LIST", "FILTERBY", "MODULE", "bf"]);
    let (mut reads, mut writes) = (BTreeSet::new(), BTreeSet::new());
    for name in names.as_array() {
        let name = name.as_str().to_ascii_lowercase();
        if NOT_FOR_USERS.contains(&name.as_str()) {
            continue;
        }
        let info = c.cmd(&["COMMAND", "INFO", &name]);
        let flags: Vec<String> =
            info.as_array()[0].as_array()[2].as_array().iter().map(|f| f.as_str().into()).collect();
        if flags.iter().any(|f| f == "readonly") {
            reads.insert(name);
        } else if flags.iter().any(|f| f == "write") {
            writes.insert(name);
        } else {
            panic!("{name} is neither readonly nor write: {flags:?}");
        }
    }
    assert_eq!(reader, reads, "docs/acl.md's reader grants against the read-only commands");
    let all: BTreeSet<String> = reads.union(&writes).cloned().collect();
    assert_eq!(writer, all, "docs/acl.md's writer grants against every command");

    let line = |user: &str| {
        page.lines().find(|l| l.contains(&format!("ACL SETUSER {user} "))).unwrap().to_string()
    };
    for user in ["reader", "writer"] {
        let l = line(user);
        let cmd = &l[l.find("ACL SETUSER").unwrap()..];
        let args: Vec<&str> = cmd.split_whitespace().map(|w| w.trim_end_matches('`')).collect();
        c.ok(&args);
    }
    let mut r = s.conn();
    r.ok(&["AUTH", "reader", "pw"]);
    assert_eq!(r.int(&["BF.EXISTS", "k", "a"]), 0);
    assert_eq!(r.int(&["CF.EXISTS", "k", "a"]), 0);
    assert!(r.err(&["BF.ADD", "k", "a"]).starts_with("NOPERM"));
    let mut w = s.conn();
    w.ok(&["AUTH", "writer", "pw"]);
    assert_eq!(w.int(&["BF.ADD", "k", "a"]), 1);
    assert_eq!(w.int(&["CF.ADD", "f", "a"]), 1);
}
