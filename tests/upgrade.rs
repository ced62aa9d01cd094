//! Upgrade and rollback against the previous release's own build (`make test-upgrade` builds
//! it from history and names it in `SCALEBLOOM_PREVIOUS_MODULE`), with every filter type:
//! what 0.1 wrote (RDB, AOF, its replication stream) loads into this build, and what this
//! build writes under `bf.compat 0.1` loads into 0.1, with identical answers both ways.
//!
//! These tests run only under `make test-upgrade` (`--run-ignored only`): without the
//! previous build they fail, never skip.

mod common;
use common::*;
use std::sync::Arc;

fn previous_module() -> String {
    std::env::var("SCALEBLOOM_PREVIOUS_MODULE")
        .expect("SCALEBLOOM_PREVIOUS_MODULE: the previous release's module (make test-upgrade)")
}

/// A server with `module` and its arguments instead of the one under test.
fn with_module(opts: ServerOpts, module: &str, args: &[&str]) -> ServerOpts {
    let mut opts = opts.without_module();
    opts.extra_args.push("--loadmodule".into());
    opts.extra_args.push(module.into());
    opts.extra_args.extend(args.iter().map(|a| a.to_string()));
    opts
}

fn previous(opts: ServerOpts) -> ServerOpts {
    with_module(opts, &previous_module(), &[])
}

fn current_for_0_1(opts: ServerOpts) -> ServerOpts {
    with_module(opts, &module_path().to_string_lossy(), &["compat", "0.1"])
}

/// Every filter type with items, written through `c`.
fn fill(c: &mut Conn) {
    c.ok(&["BF.RESERVE", "plain", "0.01", "500"]);
    c.ok(&["BF.RESERVE", "counting", "0.01", "500", "COUNTING", "4"]);
    c.ok(&["BF.RESERVE", "blocked", "0.001", "500", "LAYOUT", "BLOCKED"]);
    c.ok(&["BF.RESERVE", "windowed", "0.01", "500", "WINDOW", "ITEMS"]);
    c.ok(&["CF.RESERVE", "cuckoo", "1000"]);
    for key in ["plain", "counting", "blocked", "windowed", "auto"] {
        c.madd(key, &items(key, 2000));
    }
    c.cmd(&["BF.MDEL", "counting", "counting:0", "counting:1"]);
    for item in items("cuckoo", 600) {
        c.cmd(&["CF.ADD", "cuckoo", &item]);
    }
}

fn items(key: &str, n: usize) -> Vec<String> {
    (0..n).map(|i| format!("{key}:{i}")).collect()
}

/// What a reader sees of every filter: its INFO and the answers for its items and for as many
/// never-added ones.
fn answers(c: &mut Conn) -> Vec<String> {
    let mut out = Vec::new();
    for key in ["plain", "counting", "blocked", "windowed", "auto", "cuckoo"] {
        let (info, exists) =
            if key == "cuckoo" { ("CF.INFO", "CF.MEXISTS") } else { ("BF.INFO", "BF.MEXISTS") };
        out.push(format!("{key} {:?}", c.cmd(&[info, key])));
        for probe in [items(key, 2000), items(&format!("{key}-absent"), 2000)] {
            let mut cmd = vec![exists.to_string(), key.to_string()];
            cmd.extend(probe);
            out.push(format!("{key} {:?}", c.cmd(&cmd)));
        }
    }
    out
}

#[test]
#[ignore = "make test-upgrade: needs the previous release's build"]
fn what_0_1_wrote_loads_here_by_rdb_aof_and_replication() {
    for aof in [false, true] {
        let dir = Arc::new(TempDir::new("upgrade-in"));
        let mut opts = ServerOpts::new();
        if aof {
            opts = opts.arg("appendonly", "yes").arg("aof-use-rdb-preamble", "no");
        }
        let old = Server::start_in(dir.clone(), previous(opts.clone()));
        let mut c = old.conn();
        fill(&mut c);
        // A replica of this build, following 0.1's stream (its full sync, then commands).
        let (_replica, mut r) = Server::start_replica(old.port, None, ServerOpts::new());
        c.madd("plain", &items("late", 100));
        wait_caught_up(&mut c, &mut r);
        let before = answers(&mut c);
        assert_eq!(answers(&mut r), before, "replica of 0.1, aof={aof}");
        // This build on the RDB or AOF 0.1 left.
        let new = old.restart(&["SAVE"], opts.clone());
        assert_eq!(answers(&mut new.conn()), before, "0.1's files, aof={aof}");
    }
}

#[test]
#[ignore = "make test-upgrade: needs the previous release's build"]
fn what_this_build_writes_under_compat_0_1_loads_into_0_1() {
    for aof in [false, true] {
        let dir = Arc::new(TempDir::new("upgrade-back"));
        let mut opts = ServerOpts::new();
        if aof {
            opts = opts.arg("appendonly", "yes");
        }
        let new = Server::start_in(dir.clone(), current_for_0_1(opts.clone()));
        let mut c = new.conn();
        fill(&mut c);
        let before = answers(&mut c);
        // A replica of 0.1, following this build's stream under bf.compat 0.1.
        let (_replica, mut r) = Server::start_replica(new.port, None, previous(ServerOpts::new()));
        wait_caught_up(&mut c, &mut r);
        assert_eq!(answers(&mut r), before, "0.1 replica, aof={aof}");
        if aof {
            c.cmd(&["BGREWRITEAOF"]);
            wait_until("the AOF rewrite", || {
                c.info_field("persistence", "aof_rewrite_in_progress").as_deref() == Some("0")
                    && c.info_field("persistence", "aof_rewrite_scheduled").as_deref() == Some("0")
            });
        }
        let old = new.restart(&["SAVE"], previous(opts.clone()));
        assert_eq!(answers(&mut old.conn()), before, "0.1 on this build's files, aof={aof}");
    }
}
