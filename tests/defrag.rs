//! Active defragmentation: on a server that can defragment (Redis built with its own jemalloc,
//! like the Redis 8 that `scripts/redis8-ensure` builds) filters' memory moves and the filters
//! stay exactly as they were. Elsewhere the server must refuse `activedefrag yes`.
//!
//! `SCALEBLOOM_EXPECT_DEFRAG` says which to expect, and must be set: `1` (make test's Redis 8
//! run) makes a refusal a failure, `0` (the other engines) makes defragmenting one. Unset, the
//! test fails and says so, so the defrag path can never pass untested without anyone noticing.

mod common;
use common::*;

/// Filters made, and the share (one in `KEEP_EVERY`) that survives the deletions.
const FILTERS: usize = 16_000;
const KEEP_EVERY: usize = 8;

fn expect_defrag() -> bool {
    match std::env::var("SCALEBLOOM_EXPECT_DEFRAG").as_deref() {
        Ok("1") => true,
        Ok("0") => false,
        other => panic!(
            "SCALEBLOOM_EXPECT_DEFRAG must be 1 (the server can defragment: Redis built with its \
             own jemalloc, like scripts/redis8-ensure's) or 0 (it must refuse activedefrag), \
             got {other:?}; make test-* sets it"
        ),
    }
}

/// Runs `cmds` in pipelined batches; every reply must satisfy `check`.
fn run_batches(c: &mut Conn, cmds: &[Vec<String>], check: impl Fn(&Value) -> bool) {
    for batch in cmds.chunks(1000) {
        for (cmd, reply) in batch.iter().zip(c.pipeline(batch)) {
            assert!(check(&reply), "{cmd:?} -> {reply:?}");
        }
    }
}

fn info_u64(c: &mut Conn, section: &str, field: &str) -> u64 {
    c.info_field(section, field)
        .unwrap_or_else(|| panic!("no {field} in INFO {section}"))
        .parse()
        .unwrap()
}

/// Many small filters interleaved with strings, then most of both deleted: the survivors sit
/// in sparsely used pages, which active defrag empties by moving what is left. The defrag
/// callback must then have moved filter memory (`bf_defrag_moves`), and every survivor must
/// have the same digest, answer its item and take new ones.
#[test]
fn active_defrag_moves_filters_and_changes_nothing() {
    let s = Server::start();
    let mut c = s.conn();
    let engine = c.engine();
    let expected = expect_defrag();
    let on = c.cmd(&["CONFIG", "SET", "activedefrag", "yes"]);
    if on.is_err() {
        assert!(
            !expected,
            "{engine}: SCALEBLOOM_EXPECT_DEFRAG=1 but activedefrag was refused: {on:?}"
        );
        assert!(
            on.err_text().contains("Active defragmentation cannot be enabled"),
            "{engine}: activedefrag refused for another reason: {on:?}"
        );
        eprintln!("{engine} cannot defragment (not built with its own jemalloc), as expected");
        return;
    }
    assert!(expected, "{engine}: SCALEBLOOM_EXPECT_DEFRAG=0 but activedefrag was accepted");
    c.ok(&["CONFIG", "SET", "activedefrag", "no"]);
    assert_eq!(info_u64(&mut c, "bf", "bf_defrag_moves"), 0);

    let filter = |i: usize| format!("f{i}");
    let item = |i: usize| format!("item-{i}");
    let mut fill = Vec::new();
    for i in 0..FILTERS {
        fill.push(vec!["BF.ADD".into(), filter(i), item(i)]);
        fill.push(vec!["SET".into(), format!("s{i}"), "x".repeat(100)]);
    }
    run_batches(&mut c, &fill, |r| !r.is_err());
    let mut delete = Vec::new();
    for i in 0..FILTERS {
        if i % KEEP_EVERY != 0 {
            delete.push(vec!["DEL".into(), filter(i)]);
        }
        delete.push(vec!["DEL".into(), format!("s{i}")]);
    }
    run_batches(&mut c, &delete, |r| *r == Value::Int(1));

    let survivors: Vec<usize> = (0..FILTERS).step_by(KEEP_EVERY).collect();
    let digests: Vec<String> = survivors.iter().map(|&i| c.digest(&filter(i))).collect();

    // Defragment whatever the fragmentation (the thresholds' lowest values).
    c.ok(&["CONFIG", "SET", "active-defrag-ignore-bytes", "1"]);
    c.ok(&["CONFIG", "SET", "active-defrag-threshold-lower", "0"]);
    c.ok(&["CONFIG", "SET", "activedefrag", "yes"]);
    let moves = poll_until("active defrag to move filter memory", || {
        let moves = info_u64(&mut c, "bf", "bf_defrag_moves");
        let hits = info_u64(&mut c, "stats", "active_defrag_hits");
        if moves > 0 && hits > 0 { Ok(moves) } else { Err(format!("moves {moves}, hits {hits}")) }
    });
    eprintln!("{engine}: active defrag moved {moves} filter allocations");

    for (&i, digest) in survivors.iter().zip(&digests) {
        assert_eq!(&c.digest(&filter(i)), digest, "{} changed", filter(i));
        assert_eq!(c.cmd(&["BF.EXISTS", &filter(i), &item(i)]).as_bit(), 1, "{}", filter(i));
    }
    c.ok(&["CONFIG", "SET", "activedefrag", "no"]);
    for &i in survivors.iter().take(100) {
        assert_eq!(c.cmd(&["BF.ADD", &filter(i), "new"]).as_bit(), 1);
        assert_eq!(c.bf_card(&filter(i)), 2);
    }
    // A save and load still round-trips every survivor.
    c.ok(&["DEBUG", "RELOAD"]);
    for (&i, digest) in survivors.iter().zip(&digests).skip(100) {
        assert_eq!(&c.digest(&filter(i)), digest, "{} changed across DEBUG RELOAD", filter(i));
    }
}
