//! Persistence and replication: DEBUG RELOAD, DUMP/RESTORE, RDB and AOF restarts, COPY,
//! MEMORY USAGE, replicas, corrupt RESTORE payloads, SCANDUMP/LOADCHUNK.

//!
//! One test binary, one module per concern; the filters every path must keep (`build_fixture`)
//! and the comparisons are shared below.

#[path = "../common/mod.rs"]
mod common;
use common::hostile::{Hostile, probe_filter};
use common::*;
use std::sync::Arc;

mod corrupt_restore;
mod dump_restore_copy;
mod rdb_aof_restart;
mod reload_digest;
mod replication;
mod scandump_loadchunk;

/// A filter built by the fixture, with every item that was reported added.
struct Built {
    key: String,
    items: Vec<String>,
}

/// Builds filters of several shapes: scaling with several layers, nonscaling, auto-created,
/// large expansion, empty, and binary items.
fn build_fixture(c: &mut Conn) -> Vec<Built> {
    let mut out = Vec::new();
    fn add_to(out: &mut Vec<Built>, c: &mut Conn, key: &str, its: Vec<String>) {
        let r = c.madd(key, &its);
        for v in &r {
            assert!(matches!(v, Value::Int(0 | 1)), "fixture MADD {} element {:?}", key, v);
        }
        out.push(Built { key: key.to_string(), items: its });
    }
    macro_rules! add {
        ($c:expr, $k:expr, $its:expr) => {
            add_to(&mut out, $c, $k, $its)
        };
    }
    c.ok(&["BF.RESERVE", "scaling", "0.01", "100"]);
    add!(c, "scaling", items("s", 1000));
    c.ok(&["BF.RESERVE", "nonscaling", "0.001", "500", "NONSCALING"]);
    add!(c, "nonscaling", items("n", 300));
    add!(c, "auto", items("a", 50));
    c.cmd(&[
        "BF.INSERT",
        "exp",
        "CAPACITY",
        "20",
        "ERROR",
        "0.05",
        "EXPANSION",
        "5",
        "ITEMS",
        "first",
    ]);
    add!(c, "exp", items("e", 300));
    c.ok(&["BF.RESERVE", "empty", "0.01", "1000"]);
    out.push(Built { key: "empty".into(), items: vec![] });
    c.ok(&["BF.RESERVE", "one", "0.0001", "1", "EXPANSION", "1"]);
    add!(c, "one", items("o", 20));
    let bin: Vec<String> = (0..100).map(|i| format!("\u{0}\u{7f}é{}\r\n", i)).collect();
    add!(c, "binary", bin);
    out
}

#[derive(Debug, PartialEq)]
struct Snap {
    digest: String,
    debug: Vec<String>,
    info: BfInfo,
}

fn snapshot(c: &mut Conn, fixture: &[Built]) -> Vec<Snap> {
    fixture
        .iter()
        .map(|b| Snap {
            digest: c.digest(&b.key),
            debug: c.bf_debug(&b.key),
            info: c.bf_info(&b.key),
        })
        .collect()
}

/// Every item present, and digest / BF.DEBUG / BF.INFO as before.
fn assert_same(c: &mut Conn, fixture: &[Built], before: &[Snap], what: &str) {
    for (b, snap) in fixture.iter().zip(before) {
        assert_eq!(
            c.cmd(&["TYPE", &b.key]),
            Value::Simple("MBbloom--".into()),
            "{}: key {}",
            what,
            b.key
        );
        c.assert_all_present(&b.key, &b.items);
        let now =
            Snap { digest: c.digest(&b.key), debug: c.bf_debug(&b.key), info: c.bf_info(&b.key) };
        assert_eq!(&now, snap, "{}: key {} changed", what, b.key);
    }
}
