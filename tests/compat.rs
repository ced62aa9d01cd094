//! `bf.compat 0.1`: the server writes only what 0.1 reads and refuses to create what 0.1
//! cannot represent, with a clear error that changes nothing; values 0.1 could not hold are
//! refused at load. (`make test-upgrade` checks the other side with a 0.1 build itself.)

mod common;
use common::payload::ModulePayload;
use common::*;
use std::path::PathBuf;
use std::sync::Arc;

fn compat_0_1() -> Server {
    Server::start_with(ServerOpts::new().module_args(&["compat", "0.1"]))
}

/// The encoding version a DUMP payload's module type id carries (its low 8 bits).
fn dump_encver_low_byte(c: &mut Conn, key: &str) -> u8 {
    let dump = c.cmd(&["DUMP", key]).as_bytes().to_vec();
    let p = ModulePayload::parse(&dump).unwrap();
    p.module_id[p.module_id.len() - 1]
}

fn valkey_fixture_dump() -> Vec<u8> {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/valkey-bloom/valkey-8.1/scale1/dump.bin");
    std::fs::read(path).unwrap()
}

#[test]
fn the_setting_shows_and_cannot_change_at_run_time() {
    let s = compat_0_1();
    let mut c = s.conn();
    assert_eq!(c.config_get("bf.compat").as_deref(), Some("0.1"));
    assert!(c.cmd(&["CONFIG", "SET", "bf.compat", "1.0"]).is_err());
    assert_eq!(c.config_get("bf.compat").as_deref(), Some("0.1"));
    let d = Server::start();
    assert_eq!(d.conn().config_get("bf.compat").as_deref(), Some("1.0"));
    let dir = Arc::new(TempDir::new("bad-compat"));
    let bad = Server::try_start_in(dir, ServerOpts::new().module_args(&["compat", "0.9"]));
    let log = bad.err().expect("the module loaded with compat 0.9");
    assert!(log.contains("compat must be a release this build can write for"), "{log}");
}

#[test]
fn what_0_1_cannot_represent_is_refused_and_changes_nothing() {
    let s = compat_0_1();
    let mut c = s.conn();
    c.ok(&["BF.RESERVE", "a", "0.01", "100"]);
    c.ok(&["BF.RESERVE", "b", "0.01", "100"]);
    let digest = c.digest("a");
    let seed = [7u8; 32];
    let refused: Vec<Vec<&[u8]>> = vec![
        vec![b"BF.MERGE", b"a", b"b"],
        vec![b"BF.RESERVE", b"l", b"0.01", b"100", b"LIKE", b"a"],
        vec![b"BF.INSERT", b"l", b"LIKE", b"a", b"ITEMS", b"x"],
        vec![b"BF.INSERT", b"v", b"TIGHTENING", b"0.5", b"ITEMS", b"x"],
        vec![b"BF.INSERT", b"v", b"SEED", &seed, b"ITEMS", b"x"],
        vec![b"BF.RESERVE", b"v", b"0.01", b"100", b"VALIDATESCALETO", b"1000"],
        vec![b"BF.LOAD", b"v", b"\x01"],
    ];
    for cmd in refused {
        let r = c.cmd(&cmd);
        let text = r.err_text();
        assert!(text.contains("needs bf.compat 1.0 or later"), "{cmd:?}: {text}");
        assert!(text.contains("writes only what 0.1 reads"), "{text}");
    }
    assert_eq!(c.digest("a"), digest);
    for key in ["l", "v"] {
        assert!(!c.exists_key(key), "{key}");
    }
    // A valkey-bloom payload: RESTORE is refused (0.1 has no bloomfltr type).
    let r = c.cmd(&[b"RESTORE".as_slice(), b"vk", b"0", &valkey_fixture_dump()]);
    assert!(r.is_err(), "{r:?}");
    assert!(!c.exists_key("vk"));
}

#[test]
fn values_are_written_under_514_and_a_merged_value_with_members_is_refused() {
    let s = compat_0_1();
    let mut c = s.conn();
    c.ok(&["BF.RESERVE", "plain", "0.01", "1000"]);
    c.ok(&["BF.RESERVE", "counting", "0.01", "1000", "COUNTING", "4"]);
    c.ok(&["BF.RESERVE", "blocked", "0.01", "1000", "LAYOUT", "BLOCKED"]);
    for key in ["plain", "counting", "blocked"] {
        let items: Vec<String> = (0..3000).map(|i| format!("{key}:{i}")).collect();
        let mut cmd = vec!["BF.MADD".to_string(), key.to_string()];
        cmd.extend(items);
        c.cmd(&cmd);
        assert_eq!(dump_encver_low_byte(&mut c, key), 2, "{key}: 514");
    }
    let digests: Vec<_> = ["plain", "counting", "blocked"].iter().map(|k| c.digest(k)).collect();
    c.ok(&["DEBUG", "RELOAD"]);
    let after: Vec<_> = ["plain", "counting", "blocked"].iter().map(|k| c.digest(k)).collect();
    assert_eq!(digests, after);

    // A merged filter with a member, made by a server at the default bf.compat (515): a
    // server under bf.compat 0.1 refuses its payload rather than drop the member on save.
    let d = Server::start();
    let mut dc = d.conn();
    dc.ok(&["BF.RESERVE", "x", "0.01", "100"]);
    dc.ok(&["BF.RESERVE", "y", "0.001", "5000"]);
    dc.cmd(&["BF.ADD", "x", "1"]);
    dc.cmd(&["BF.ADD", "y", "2"]);
    dc.ok(&["BF.MERGE", "x", "y"]);
    assert!(dc.cmd(&["BF.DEBUG", "x"]).as_array().iter().any(|l| l.as_str().contains("member")));
    assert_eq!(dump_encver_low_byte(&mut dc, "x"), 3, "515");
    let merged = dc.cmd(&["DUMP", "x"]).as_bytes().to_vec();
    let r = c.cmd(&[b"RESTORE".as_slice(), b"m", b"0", &merged]);
    assert!(r.is_err(), "{r:?}");
    assert!(!c.exists_key("m"));
    // Without a member (a plain filter from the default server) the payload loads.
    let plain = dc.cmd(&["DUMP", "y"]).as_bytes().to_vec();
    c.ok(&[b"RESTORE".as_slice(), b"p", b"0", &plain]);
    assert_eq!(c.int(&["BF.EXISTS", "p", "2"]), 1);
    assert_eq!(dump_encver_low_byte(&mut c, "p"), 2);
}
