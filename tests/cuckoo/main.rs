//! CF.* against real servers: replies and errors beside RedisBloom 2.8 (`vs_redisbloom`), its
//! data imported by every path (`import`), replication and persistence (`replication`),
//! RedisBloom's known bugs (`bugs`) and hostile input (`hostile`).
//!
//! `REDISBLOOM_MODULE` names RedisBloom 2.8's `redisbloom.so` (the Makefile sets it); the tests
//! that compare with RedisBloom fail without it, and say how to set it.

#[path = "../common/mod.rs"]
mod common;
pub(crate) use common::*;

mod bugs;
mod hostile;
mod import;
mod redisbloom_flow;
mod replication;
mod server;
mod stats;
mod vs_redisbloom;

use std::sync::Arc;

/// Path of RedisBloom's module; a test without it fails.
fn redisbloom_module() -> String {
    match std::env::var("REDISBLOOM_MODULE") {
        Ok(p) if !p.is_empty() => {
            assert!(std::path::Path::new(&p).exists(), "REDISBLOOM_MODULE={p} does not exist");
            p
        }
        _ => panic!(
            "REDISBLOOM_MODULE is not set: these tests need RedisBloom 2.8's redisbloom.so \
             (make test-redis sets it; by hand: REDISBLOOM_MODULE=$(bash scripts/venv-tool .venv \
             redisbloom))"
        ),
    }
}

/// A redis-server with RedisBloom loaded instead of scalebloom.
fn redisbloom_server(tag: &str) -> Server {
    let module = redisbloom_module();
    Server::start_in(
        Arc::new(TempDir::new(tag)),
        ServerOpts::new().without_module().arg("loadmodule", &module),
    )
}

/// `n` item names.
fn names(prefix: &str, n: usize) -> Vec<String> {
    (0..n).map(|i| format!("{prefix}:{i}")).collect()
}

/// `CF.INSERT key ITEMS items…` in batches of 1000; the replies.
fn cf_insert(c: &mut Conn, key: &str, items: &[String]) -> Vec<Value> {
    let mut out = Vec::new();
    for chunk in items.chunks(1000) {
        let mut args = vec!["CF.INSERT".to_string(), key.to_string(), "ITEMS".to_string()];
        args.extend(chunk.iter().cloned());
        out.extend(c.cmd(&args).as_array().to_vec());
    }
    out
}

/// `CF.MEXISTS` of `items` as 0/1.
fn cf_mexists(c: &mut Conn, key: &str, items: &[String]) -> Vec<i64> {
    let mut out = Vec::new();
    for chunk in items.chunks(1000) {
        let mut args = vec!["CF.MEXISTS".to_string(), key.to_string()];
        args.extend(chunk.iter().cloned());
        out.extend(c.cmd(&args).as_array().iter().map(|v| v.as_bit()));
    }
    out
}

/// Every `CF.SCANDUMP` step of `key`: (iterator, data) pairs as a client stores them.
fn cf_scandump_all(c: &mut Conn, key: &str) -> Vec<(i64, Vec<u8>)> {
    let mut out = Vec::new();
    let mut it = 0i64;
    loop {
        let v = c.cmd(&["CF.SCANDUMP", key, &it.to_string()]);
        let a = v.as_array();
        assert_eq!(a.len(), 2, "CF.SCANDUMP {key} {it} -> {v:?}");
        let next = a[0].as_int();
        if next == 0 {
            assert!(a[1].is_null(), "the last CF.SCANDUMP step is [0, nil]: {v:?}");
            return out;
        }
        out.push((next, a[1].as_bytes().to_vec()));
        it = next;
        assert!(out.len() < 100_000, "CF.SCANDUMP {key} never ends");
    }
}

/// Replays SCANDUMP steps into `key` with CF.LOADCHUNK.
fn cf_loadchunks(c: &mut Conn, key: &str, steps: &[(i64, Vec<u8>)]) {
    for (it, data) in steps {
        c.ok(&[&b"CF.LOADCHUNK"[..], key.as_bytes(), it.to_string().as_bytes(), data]);
    }
}

/// CF.INFO as (name, value) pairs.
fn cf_info(c: &mut Conn, key: &str) -> Vec<(String, i64)> {
    c.cmd(&["CF.INFO", key])
        .pairs()
        .into_iter()
        .map(|(k, v)| (k.as_str().to_string(), v.as_int()))
        .collect()
}

/// Filters of every shape, made by the same commands on `c`: grown (expansion 1, 2 and 4),
/// relocating, with deletes and compaction, bucket sizes 1, 2 and 4. Returns (key, items
/// added). The same on RedisBloom and scalebloom.
fn make_filters(c: &mut Conn) -> Vec<(&'static str, Vec<String>)> {
    let mut out = Vec::new();
    c.ok(&["CF.RESERVE", "grown1", "1000"]);
    let items = names("grown1", 5000);
    cf_insert(c, "grown1", &items);
    out.push(("grown1", items));
    c.ok(&["CF.RESERVE", "grown4", "512", "BUCKETSIZE", "4", "EXPANSION", "3"]);
    let items = names("grown4", 6000);
    cf_insert(c, "grown4", &items);
    out.push(("grown4", items));
    c.ok(&[
        "CF.RESERVE",
        "tight",
        "64",
        "BUCKETSIZE",
        "1",
        "MAXITERATIONS",
        "50",
        "EXPANSION",
        "2",
    ]);
    let items = names("tight", 700);
    cf_insert(c, "tight", &items);
    out.push(("tight", items));
    // Deletes (some compacting automatically), then CF.COMPACT.
    c.ok(&["CF.RESERVE", "churn", "256", "EXPANSION", "2"]);
    let items = names("churn", 2000);
    cf_insert(c, "churn", &items);
    for item in items.iter().step_by(3) {
        assert_eq!(c.cmd(&["CF.DEL", "churn", item]).as_bit(), 1, "CF.DEL churn {item}");
    }
    c.ok(&["CF.COMPACT", "churn"]);
    let kept: Vec<String> =
        items.iter().enumerate().filter(|(i, _)| i % 3 != 0).map(|(_, s)| s.clone()).collect();
    out.push(("churn", kept));
    let items = names("auto", 300);
    for item in &items {
        c.cmd(&["CF.ADD", "auto", item]);
    }
    out.push(("auto", items));
    out
}
