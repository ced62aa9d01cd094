//! `BF.REPLCONF` carries the seed secret down the replication stream and into the AOF (see
//! `src/module/creation.rs`). It must never reach what a server logs or shows about the
//! commands it runs — the replication backlog dump a replica logs when it answers its primary
//! with an error, `MONITOR`, the slow log, Valkey's `COMMANDLOG` — and no client may run it or
//! find it in an ACL category.

mod common;
use common::*;

use std::hash::Hasher;
use std::path::Path;

use siphasher::sip::SipHasher13;

/// Length of the settings blob (`creation::ENCODED_LEN`); the secret is its bytes 1..17.
const SETTINGS_LEN: usize = 56;

/// The end of the padding that follows the settings in `BF.REPLCONF` (`creation::PADDING`).
const PADDING_END: &str = "the padding keeps them out of that window.";

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|w| w == needle)
}

/// The settings of every `BF.REPLCONF` in the AOF files under `dir`.
fn settings_in_aof(dir: &Path) -> Vec<Vec<u8>> {
    let needle = format!("BF.REPLCONF\r\n${SETTINGS_LEN}\r\n").into_bytes();
    let mut found = Vec::new();
    for entry in std::fs::read_dir(dir.join("appendonlydir")).expect("an AOF directory") {
        let bytes = std::fs::read(entry.unwrap().path()).unwrap();
        let mut rest = bytes.as_slice();
        while let Some(at) = find(rest, &needle) {
            let start = at + needle.len();
            found.push(rest[start..start + SETTINGS_LEN].to_vec());
            rest = &rest[start + SETTINGS_LEN..];
        }
    }
    found
}

/// `bytes` as Redis and Valkey write binary data into their log and MONITOR (`sdscatrepr`).
fn repr(bytes: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    for &b in bytes {
        match b {
            b'\\' => out.extend_from_slice(b"\\\\"),
            b'"' => out.extend_from_slice(b"\\\""),
            b'\n' => out.extend_from_slice(b"\\n"),
            b'\r' => out.extend_from_slice(b"\\r"),
            b'\t' => out.extend_from_slice(b"\\t"),
            7 => out.extend_from_slice(b"\\a"),
            8 => out.extend_from_slice(b"\\b"),
            0x20..=0x7e => out.push(b),
            _ => out.extend_from_slice(format!("\\x{b:02x}").as_bytes()),
        }
    }
    out
}

/// Panics if `text` holds any 4 consecutive bytes of `secret`, as they are or escaped as the
/// server escapes binary data (a dump may start anywhere, in the middle of the secret too).
fn assert_no_part_of_secret(secret: &[u8], text: &[u8], what: &str) {
    for w in secret.windows(4) {
        for form in [w.to_vec(), repr(w)] {
            assert!(
                find(text, &form).is_none(),
                "{what} holds secret bytes {}:\n{}",
                String::from_utf8_lossy(&repr(w)),
                String::from_utf8_lossy(text)
            );
        }
    }
}

/// The argument arrays of a `SLOWLOG GET` or `COMMANDLOG GET` reply: each entry's first array.
fn logged_argvs(reply: &Value) -> Vec<Vec<Vec<u8>>> {
    reply
        .as_array()
        .iter()
        .map(|entry| {
            let argv = entry
                .as_array()
                .iter()
                .find(|f| matches!(f, Value::Array(_)))
                .expect("an entry with its arguments");
            argv.as_array().iter().map(|a| a.as_bytes().to_vec()).collect()
        })
        .collect()
}

fn is_command(arg: &[u8], name: &str) -> bool {
    arg.eq_ignore_ascii_case(name.as_bytes())
}

/// Issue 18's reproduction: a writable replica holds a key its primary then creates, so the
/// replica answers its primary with an error and logs `Latest backlog is: …`, the last 256
/// bytes of replication traffic, which used to end with `BF.REPLCONF` and the secret. The secret
/// (read from the primary's AOF, and checked to be the live one) must appear in none of the
/// replica's log, MONITOR, slow log or COMMANDLOG, while each of them shows the replicated
/// creations, and the dump shows BF.REPLCONF's padding (so it did cover BF.REPLCONF).
#[test]
fn the_secret_never_reaches_a_replicas_log_monitor_or_slow_log() {
    let p = Server::start_with(
        ServerOpts::new()
            .arg("repl-diskless-sync-delay", "0")
            .arg("appendonly", "yes")
            .arg("appendfsync", "always"),
    );
    let mut pc = p.conn();
    let engine = pc.engine();
    let mut opts = ServerOpts::new()
        .arg("replica-read-only", "no")
        .arg("slowlog-log-slower-than", "0")
        .arg("slowlog-max-len", "10000");
    if engine.has_commandlog() {
        opts = opts
            .arg("commandlog-request-larger-than", "0")
            .arg("commandlog-reply-larger-than", "0")
            .arg("commandlog-large-request-max-len", "10000")
            .arg("commandlog-large-reply-max-len", "10000");
    }
    let (r, mut rc) = Server::start_replica(p.port, None, opts);
    // And the primary done with what marks the settings due again (a replica coming online, a
    // fork): otherwise such an event can land between the creations below and send a third
    // BF.REPLCONF.
    wait_until("the primary to see its replica online, with no fork running", || {
        pc.info_field("replication", "slave0").is_some_and(|s| s.contains("state=online"))
            && pc.info_field("persistence", "aof_rewrite_in_progress").as_deref() == Some("0")
            && pc.info_field("persistence", "aof_rewrite_scheduled").as_deref() == Some("0")
            && pc.info_field("persistence", "rdb_bgsave_in_progress").as_deref() == Some("0")
    });
    // Where the server can leave user data out of its log (Redis 8, Valkey; Valkey 8.1
    // does by default), let it in: the worst case.
    if rc.config_get("hide-user-data-from-log").is_some() {
        rc.ok(&["CONFIG", "SET", "hide-user-data-from-log", "no"]);
    }
    let mut monitor = r.conn();
    monitor.ok(&["MONITOR"]);

    // Keys the primary will create, already on the replica.
    assert_eq!(rc.int(&["BF.ADD", "clash", "x"]), 1);
    assert_eq!(rc.int(&["BF.ADD", "clash2", "x"]), 1);
    // As reported: the settings are due (CONFIG SET), and the creation the replica refuses
    // comes in the same MULTI/EXEC as its BF.REPLCONF.
    pc.ok(&["CONFIG", "SET", "bf.initial-size", "100"]);
    pc.ok(&["BF.RESERVE", "clash", "0.01", "100"]);
    // And with BF.REPLCONF in the transaction just before the refused one: then it is the last
    // thing in the backlog when the replica dumps it.
    pc.ok(&["CONFIG", "SET", "bf.initial-size", "101"]);
    pc.ok(&["BF.RESERVE", "other", "0.01", "100"]);
    pc.ok(&["BF.RESERVE", "clash2", "0.01", "100"]);
    wait_caught_up(&mut pc, &mut rc);

    // The secret, from the primary's AOF; it is the one seeds are derived from.
    let primary_dir = p.dir();
    let sent = settings_in_aof(primary_dir.path());
    assert_eq!(sent.len(), 2, "two BF.REPLCONF in the primary's AOF");
    assert_eq!(sent[0][1..17], sent[1][1..17], "one secret per process");
    let secret = sent[0][1..17].to_vec();
    let key = |at: usize| u64::from_le_bytes(secret[at..at + 8].try_into().unwrap());
    let mut h = SipHasher13::new_with_keys(key(0), key(8));
    h.write(b"other");
    let header = &pc.scandump_all("other")[0].1;
    assert!(find(header, &h.finish().to_le_bytes()).is_some(), "not the secret of the seeds");

    // The replica's log: both refusals are logged, and dumped the backlog when it held
    // anything (Redis 8 starts a replica's backlog empty after a full sync), the second one up
    // to BF.REPLCONF.
    let log = r.log_bytes();
    let text = String::from_utf8_lossy(&log);
    let refusals = text.lines().filter(|l| l.contains("'-ERR item exists'")).count();
    assert_eq!(refusals, 2, "both refusals logged:\n{text}");
    let dumps: Vec<&str> = text.lines().filter(|l| l.contains("Latest backlog is: ")).collect();
    assert!(!dumps.is_empty(), "no backlog dump:\n{text}");
    assert_no_part_of_secret(&secret, &log, "the replica's log");
    assert_no_part_of_secret(&secret, &p.log_bytes(), "the primary's log");
    assert!(
        dumps.iter().any(|d| d.contains(PADDING_END)),
        "no dump reaches BF.REPLCONF:\n{}",
        dumps.join("\n")
    );

    // MONITOR on the replica showed the replicated creations, not BF.REPLCONF.
    rc.cmd(&["ECHO", "end-of-monitor"]);
    let mut shown = Vec::new();
    loop {
        let line = monitor.read_reply().expect("a MONITOR line").as_str().to_string();
        if line.contains("end-of-monitor") {
            break;
        }
        shown.push(line);
    }
    let shown = shown.join("\n");
    assert!(shown.contains("\"BF.RESERVE\" \"other\""), "MONITOR:\n{shown}");
    assert!(!shown.to_ascii_lowercase().contains("replconf"), "MONITOR:\n{shown}");
    assert_no_part_of_secret(&secret, shown.as_bytes(), "MONITOR");

    // The slow log (every command) and Valkey's COMMANDLOG (every command, request and reply).
    let mut logs = vec![("SLOWLOG", rc.cmd(&["SLOWLOG", "GET", "10000"]))];
    if engine.has_commandlog() {
        for kind in ["slow", "large-request", "large-reply"] {
            logs.push((kind, rc.cmd(&["COMMANDLOG", "GET", "10000", kind])));
        }
    }
    for (what, reply) in logs {
        let argvs = logged_argvs(&reply);
        assert!(argvs.iter().any(|a| is_command(&a[0], "bf.reserve")), "{what}: {argvs:?}");
        for argv in argvs {
            assert!(!is_command(&argv[0], "bf.replconf"), "{what}: {argv:?}");
            for arg in argv {
                assert_no_part_of_secret(&secret, &arg, what);
            }
        }
    }
}

/// A well-formed settings blob: version 1 (what builds before the `cf-*` defaults send, still
/// read), a secret, random seeds, 0.01, 100, 2.
fn settings_blob() -> Vec<u8> {
    let mut blob = vec![1u8];
    blob.extend_from_slice(&[7u8; 16]);
    blob.push(1);
    blob.extend_from_slice(&0.01f64.to_bits().to_le_bytes());
    blob.extend_from_slice(&100u64.to_le_bytes());
    blob.extend_from_slice(&2u64.to_le_bytes());
    assert_eq!(blob.len(), 42);
    blob
}

/// No client runs BF.REPLCONF, and no ACL category names it. On Redis 8 it is an `internal`
/// command, unknown to clients and absent from `COMMAND`; elsewhere the module refuses it.
#[test]
fn replconf_is_no_command_for_clients() {
    let mut s = Server::start();
    let mut c = s.conn();
    let engine = c.engine();
    let blob = settings_blob();
    let refusal = if engine.has_internal_commands() { "unknown command" } else { "internal" };
    for args in [
        vec![b"BF.REPLCONF".to_vec(), blob.clone()],
        vec![b"BF.REPLCONF".to_vec(), blob.clone(), b"padding".to_vec()],
        vec![b"BF.REPLCONF".to_vec(), b"garbage".to_vec()],
    ] {
        let e = c.err(&args);
        assert!(e.contains(refusal), "{engine}: {e}");
    }
    let e = c.err(&["BF.REPLCONF"]);
    let arity = if engine.has_internal_commands() { "unknown command" } else { "wrong number" };
    assert!(e.contains(arity), "{engine}: {e}");
    // Nor can scripts.
    c.err(&["EVAL", "return redis.call('BF.REPLCONF', 'x')", "0"]);
    // Not even a user granted everything.
    c.ok(&["ACL", "SETUSER", "all", "on", ">pw", "~*", "&*", "+@all"]);
    let mut all = s.conn();
    all.ok(&["AUTH", "all", "pw"]);
    let e = all.err(&[b"BF.REPLCONF".to_vec(), blob]);
    assert!(e.contains(refusal), "{engine}: {e}");

    let info = c.cmd(&["COMMAND", "INFO", "bf.replconf"]);
    if engine.has_internal_commands() {
        assert!(info.as_array()[0].is_null(), "{info:?}");
        let all = c.cmd(&["COMMAND", "LIST"]);
        let names: Vec<&[u8]> = all.as_array().iter().map(Value::as_bytes).collect();
        assert!(names.iter().any(|n| is_command(n, "bf.add")));
        assert!(!names.iter().any(|n| is_command(n, "bf.replconf")));
    } else {
        assert!(!info.as_array()[0].is_null(), "{info:?}");
    }

    // ACL categories: none of them lists it (`bloom` exists only where modules can add
    // categories, and lists the other commands there). Every command is in `@fast` or
    // `@slow` (BF.REPLCONF in `@fast`), which grants nothing a client could use.
    let listed = |c: &mut Conn, category: &str| -> Vec<Vec<u8>> {
        c.cmd(&["ACL", "CAT", category]).as_array().iter().map(|v| v.as_bytes().to_vec()).collect()
    };
    let mut categories = vec!["write", "read", "admin", "dangerous", "keyspace"];
    if engine.has_module_acl_categories() {
        categories.push("bloom");
        assert!(listed(&mut c, "bloom").iter().any(|n| is_command(n, "bf.add")));
    }
    for category in categories {
        let names = listed(&mut c, category);
        assert!(!names.iter().any(|n| is_command(n, "bf.replconf")), "{engine}: @{category}");
    }
    s.assert_alive();
}
