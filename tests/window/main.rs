//! Windowed filters (`BF.RESERVE … WINDOW …`) against a real server: items younger than the
//! window always answer, items older than window + slack answer as never-added ones (false
//! positives at the target rate), count windows, bursts, replication with a replica whose clock
//! differs, persistence keeping absolute timestamps, and hostile payloads. Time moves through
//! the debug clock (`window-debug-clock yes`, `BF.DEBUGCLOCK`): no test sleeps.

#[path = "../common/mod.rs"]
mod common;
pub(crate) use common::*;

use scalebloom::filter::window::params::{WindowKind, WindowLayout, choose_in};

const T0: &str = "1000000000";

fn clocked() -> Server {
    Server::start_with(ServerOpts::new().module_args(&["window-debug-clock", "yes"]))
}

fn names(prefix: &str, n: usize) -> Vec<String> {
    (0..n).map(|i| format!("{prefix}:{i}")).collect()
}

fn advance(c: &mut Conn, ms: u64) {
    c.int(&["BF.DEBUGCLOCK", "ADVANCE", &ms.to_string()]);
}

/// `BF.STATS` as (field, value) strings.
fn stats(c: &mut Conn, key: &str) -> Vec<(String, String)> {
    let v = c.cmd(&["BF.STATS", key]);
    v.as_array()
        .chunks(2)
        .map(|p| {
            let val = match &p[1] {
                Value::Int(i) => i.to_string(),
                other => other.as_str().to_string(),
            };
            (p[0].as_str().to_string(), val)
        })
        .collect()
}

fn stat(c: &mut Conn, key: &str, field: &str) -> String {
    stats(c, key).into_iter().find(|(f, _)| f == field).unwrap_or_else(|| panic!("{field}")).1
}

fn madd(c: &mut Conn, key: &str, items: &[String]) {
    for chunk in items.chunks(1000) {
        let mut args = vec!["BF.MADD".to_string(), key.to_string()];
        args.extend(chunk.iter().cloned());
        c.cmd(&args);
    }
}

fn present(c: &mut Conn, key: &str, items: &[String]) -> usize {
    let mut n = 0;
    for chunk in items.chunks(1000) {
        let mut args = vec!["BF.MEXISTS".to_string(), key.to_string()];
        args.extend(chunk.iter().cloned());
        n += c.cmd(&args).as_array().iter().filter(|v| v.as_bit() == 1).count();
    }
    n
}

#[test]
fn items_live_for_the_window_and_are_gone_after_the_slack() {
    let s = clocked();
    let mut c = s.conn();
    c.int(&["BF.DEBUGCLOCK", "SET", T0]);
    // Capacity a little above the rate (10 000 per window), so the uneven batches per
    // generation stay within what the slices were sized for.
    c.ok(&["BF.RESERVE", "seen", "0.01", "11000", "WINDOW", "10m"]);
    assert_eq!(c.cmd(&["TYPE", "seen"]).as_str(), "SBwindow-");
    let slack: u64 = stat(&mut c, "seen", "Slack").parse().unwrap();
    assert!(slack <= 150_000, "slack {slack} within a quarter of the window");
    // 10 000 items over 10 minutes, 100 per 6 s.
    let items = names("x", 10_000);
    for batch in items.chunks(100) {
        madd(&mut c, "seen", batch);
        advance(&mut c, 6_000);
    }
    // Now 600 s after the first batch: the last 99 batches are younger than the window.
    assert_eq!(present(&mut c, "seen", &items[100..]), 9_900, "no false negative in the window");
    // Every batch is still there just before its own window ends.
    for (b, batch) in items.chunks(100).enumerate().step_by(10) {
        c.int(&["BF.DEBUGCLOCK", "SET", &(1_000_000_000 + b as u64 * 6_000 + 599_999).to_string()]);
        assert_eq!(present(&mut c, "seen", batch), 100, "batch {b} before its window ended");
    }
    // After the last batch's window and the slack: nothing answers, CARD is 0 (reads only).
    let digest = c.digest("seen");
    let end = 1_000_000_000 + 99 * 6_000 + 600_000 + slack;
    c.int(&["BF.DEBUGCLOCK", "SET", &end.to_string()]);
    assert_eq!(present(&mut c, "seen", &items), 0);
    assert_eq!(c.int(&["BF.CARD", "seen"]), 0);
    assert_eq!(c.digest("seen"), digest, "reads write nothing");
    // A new window of other items: the old ones answer at the never-added rate.
    let fresh = names("y", 10_000);
    for batch in fresh.chunks(100) {
        madd(&mut c, "seen", batch);
        advance(&mut c, 6_000);
    }
    advance(&mut c, 0);
    let old = present(&mut c, "seen", &items) as f64 / 10_000.0;
    let never = present(&mut c, "seen", &names("never", 10_000)) as f64 / 10_000.0;
    assert!(old <= 0.02 && never <= 0.02, "old {old}, never-added {never}");
    assert_eq!(stat(&mut c, "seen", "Saturated"), "0");
}

#[test]
fn count_window_keeps_the_last_capacity_items() {
    let s = clocked();
    let mut c = s.conn();
    assert_eq!(
        c.cmd(&["BF.INSERT", "last", "WINDOW", "ITEMS", "CAPACITY", "1000", "ITEMS", "a"])
            .as_array()
            .len(),
        1
    );
    let slack: usize = stat(&mut c, "last", "Slack").parse().unwrap();
    let items = names("c", 5000);
    madd(&mut c, "last", &items);
    assert_eq!(present(&mut c, "last", &items[4000..]), 1000);
    // Forgotten items answer at the false-positive rate (the default 1%; the seed is random):
    // about 30 of 3,000. Twice the rate keeps a chance failure below one in a million, and a
    // window that forgot nothing would answer them all.
    let forgotten = &items[..4000 - slack];
    let old = present(&mut c, "last", forgotten);
    assert!((old as f64) <= 0.02 * forgotten.len() as f64, "{old} of the old items still answer");
    // Time does not move a count window.
    advance(&mut c, 365 * 86_400_000);
    assert_eq!(present(&mut c, "last", &items[4000..]), 1000);
}

#[test]
fn a_burst_saturates_instead_of_forgetting_early() {
    let s = clocked();
    let mut c = s.conn();
    c.ok(&["BF.RESERVE", "burst", "0.01", "1000", "WINDOW", "1h", "NONSCALING"]);
    assert_eq!(stat(&mut c, "burst", "Saturated"), "0");
    let items = names("b", 20_000);
    madd(&mut c, "burst", &items);
    assert_eq!(stat(&mut c, "burst", "Saturated"), "1");
    let est: f64 = stat(&mut c, "burst", "Estimated error rate").parse().unwrap();
    assert!(est > 0.01, "estimated {est}");
    advance(&mut c, 3_600_000 - 1);
    assert_eq!(present(&mut c, "burst", &items), 20_000);
    // The error rose: measured on absent items, above the target.
    assert!(present(&mut c, "burst", &names("absent", 5000)) > 50);
}

#[test]
fn options_and_internal_commands_are_checked() {
    let s = clocked();
    let mut c = s.conn();
    let mut refused = |args: &[&str], start: &str| {
        let e = c.err(args);
        assert!(e.starts_with(start), "{args:?}: {e}");
    };
    for bad in ["10", "5x", "0s", "ms", "-1s", "99999999999d"] {
        refused(&["BF.RESERVE", "k", "0.01", "10", "WINDOW", bad], "ERR WINDOW takes");
    }
    refused(&["BF.RESERVE", "k", "0.01", "10", "WINDOW"], "ERR WINDOW takes");
    refused(&["BF.RESERVE", "k", "0.01", "10", "WINDOW", "1s", "EXPANSION", "2"], "ERR a WINDOW");
    refused(&["BF.RESERVE", "k", "0.01", "10", "WINDOW", "1s", "COUNTING", "4"], "ERR a WINDOW");
    // Redis 8 registers it `internal`: unknown to clients, absent from COMMAND; elsewhere the
    // module refuses it.
    let internal = c.engine().has_internal_commands();
    let mut refused = |args: &[&str], start: &str| {
        let e = c.err(args);
        assert!(e.starts_with(start), "{args:?}: {e}");
    };
    let refusal = if internal { "ERR unknown command" } else { "ERR BF.WINDOWADD is internal" };
    refused(&["BF.WINDOWADD", "k", "5", "x"], refusal);
    let info = c.cmd(&["COMMAND", "INFO", "bf.windowadd"]);
    assert_eq!(info.as_array()[0].is_null(), internal, "{info:?}");
    c.ok(&["BF.RESERVE", "k", "0.01", "10", "WINDOW", "1s"]);
    c.expect_err(&["BF.RESERVE", "k", "0.01", "10", "WINDOW", "1s"], "ERR item exists");
    assert!(c.err(&["BF.DEL", "k", "x"]).starts_with("ERR a windowed filter has no deletes"));
    let info = c.cmd(&["BF.INFO", "k", "CAPACITY"]);
    assert_eq!(info.as_array()[0].as_int(), 10);
    // Without the module argument the debug clock is refused.
    let plain = Server::start();
    assert!(plain.conn().err(&["BF.DEBUGCLOCK", "GET"]).starts_with("ERR the debug clock is off"));
}

/// The primary's debug clock is in 2001; the replica runs on the wall clock. Writes over many
/// generations, a long pause, more writes: the replica ends with the same bits.
#[test]
fn replica_with_another_clock_is_digest_equal() {
    let p = clocked();
    let mut pc = p.conn();
    pc.int(&["BF.DEBUGCLOCK", "SET", T0]);
    let (_replica, mut rc) = Server::start_replica_of(&p);
    pc.ok(&["BF.RESERVE", "t", "0.001", "2000", "WINDOW", "1m"]);
    pc.cmd(&["BF.INSERT", "n", "WINDOW", "ITEMS", "CAPACITY", "500", "ITEMS", "a", "b"]);
    for (i, batch) in names("r", 6000).chunks(200).enumerate() {
        madd(&mut pc, "t", batch);
        madd(&mut pc, "n", batch);
        advance(&mut pc, 7_000 + i as u64);
    }
    advance(&mut pc, 10 * 86_400_000);
    pc.cmd(&["BF.ADD", "t", "after-pause"]);
    pc.wait_acked();
    for k in ["t", "n"] {
        assert_eq!(rc.digest(k), pc.digest(k), "digest of {k}");
    }
    // The replica's reads use its own clock (years ahead of the primary's) and write nothing.
    let before = rc.digest("t");
    assert_eq!(rc.int(&["BF.EXISTS", "t", "after-pause"]), 0);
    assert_eq!(pc.int(&["BF.EXISTS", "t", "after-pause"]), 1);
    assert_eq!(rc.digest("t"), before);
}

#[test]
fn reload_restore_copy_and_chunks_keep_the_timestamps() {
    let s = clocked();
    let mut c = s.conn();
    c.int(&["BF.DEBUGCLOCK", "SET", T0]);
    c.ok(&["BF.RESERVE", "w", "0.01", "3000", "WINDOW", "30s"]);
    let items = names("p", 3000);
    for batch in items.chunks(300) {
        madd(&mut c, "w", batch);
        advance(&mut c, 2_000);
    }
    let digest = c.digest("w");
    c.ok(&["DEBUG", "RELOAD"]);
    assert_eq!(c.digest("w"), digest, "DEBUG RELOAD");
    let dump = c.cmd(&["DUMP", "w"]).as_bytes().to_vec();
    c.cmd(&[b"RESTORE".as_slice(), b"r", b"0", &dump]);
    assert_eq!(c.digest("r"), digest, "RESTORE");
    c.int(&["COPY", "w", "cp"]);
    assert_eq!(c.digest("cp"), digest, "COPY");
    // SCANDUMP → LOADCHUNK into another server.
    let other = clocked();
    let mut oc = other.conn();
    let mut it = 0i64;
    loop {
        let v = c.cmd(&["BF.SCANDUMP", "w", &it.to_string()]);
        let a = v.as_array();
        it = a[0].as_int();
        if it == 0 {
            break;
        }
        let r =
            oc.cmd(&[b"BF.LOADCHUNK".as_slice(), b"w", it.to_string().as_bytes(), a[1].as_bytes()]);
        assert!(r.is_ok(), "{r:?}");
    }
    assert_eq!(oc.digest("w"), digest, "SCANDUMP/LOADCHUNK");
    // Absolute timestamps: the restored copy forgets at the same moment as the original.
    // The last batch went in at T0 + 18 s; the clock is at T0 + 20 s.
    advance(&mut c, 27_000);
    let young = present(&mut c, "r", &items[2700..]);
    assert_eq!(young, 300);
    advance(&mut c, 60_000);
    assert_eq!(present(&mut c, "r", &items), 0);
    assert_eq!(present(&mut c, "w", &items), 0);
}

#[test]
fn hostile_restore_payloads_are_refused_or_harmless() {
    let s = clocked();
    let mut c = s.conn();
    c.ok(&["BF.RESERVE", "w", "0.01", "200", "WINDOW", "10s"]);
    madd(&mut c, "w", &names("h", 200));
    let dump = c.cmd(&["DUMP", "w"]).as_bytes().to_vec();
    let mut rng = Rng(0x5eed);
    let (mut refused, mut accepted) = (0, 0);
    for i in 0..400 {
        let mut body = dump[..dump.len() - 10].to_vec();
        if i % 4 == 0 {
            body.truncate(rng.below(body.len() as u64) as usize);
        } else {
            // Mostly the fields (the first ~200 bytes), sometimes the slices.
            let span = if i % 3 == 0 { body.len() } else { body.len().min(220) };
            let at = rng.below(span as u64) as usize;
            body[at] ^= 1 << rng.below(8);
        }
        let key = format!("m{i}");
        let p = with_body(&dump, &body);
        match c.cmd(&[b"RESTORE".as_slice(), key.as_bytes(), b"0", &p]) {
            Value::Error(_) => {
                refused += 1;
                assert!(!c.exists_key(&key));
            }
            v => {
                assert!(v.is_ok(), "{v:?}");
                accepted += 1;
                c.cmd(&["BF.EXISTS", &key, "h:1"]);
                c.cmd(&["BF.ADD", &key, "z"]);
                c.cmd(&["BF.STATS", &key]);
                assert_dump_restores(&mut c, &key, &format!("payload {i}"));
                c.cmd(&["DEL", &key]);
            }
        }
    }
    assert!(refused > 100, "refused {refused}, accepted {accepted}");
    s.conn().cmd(&["PING"]);
    assert!(s.panic_lines().is_empty());
    assert_eq!(present(&mut c, "w", &names("h", 200)), 200);
}

/// The reload rule, live: `key` (a value the server accepted, after the writes that probed
/// it) DUMPs to a payload that RESTORE takes under another name, with the same digest. A state
/// that writes reach from a loaded value and that the loader refuses makes `DEBUG RELOAD` and
/// every restart abort the server.
fn assert_dump_restores(c: &mut Conn, key: &str, why: &str) {
    let dump = c.cmd(&["DUMP", key]).as_bytes().to_vec();
    let copy = format!("{key}:copy");
    let r = c.cmd(&[b"RESTORE".as_slice(), copy.as_bytes(), b"0", &dump]);
    assert!(r.is_ok(), "{why}: RESTORE of {key}'s own DUMP -> {r:?}");
    assert_eq!(c.digest(&copy), c.digest(key), "{why}: RESTORE of {key}'s DUMP differs");
    c.cmd(&["DEL", &copy]);
}

/// A turn count forged at the loader's bound (2^62; no filter turns that often, but a loaded
/// count is trusted), then writes that turn the ring: the server reloads its own data (`DEBUG
/// RELOAD` aborted Redis when the count passed the bound), the filter answers as before, and
/// its DUMP restores with the same digest.
#[test]
fn a_forged_turn_count_survives_turns_and_debug_reload() {
    let mut s = clocked();
    let mut c = s.conn();
    c.ok(&["BF.RESERVE", "src", "0.01", "200", "WINDOW", "10s"]);
    let dump = c.cmd(&["DUMP", "src"]).as_bytes().to_vec();
    let mut p = ModulePayload::parse(&dump).unwrap();
    // The turn count is the last field before the memory's strings.
    let turns = p.fields.iter().position(|f| matches!(f, Field::Str { .. })).unwrap() - 1;
    assert_eq!(p.fields[turns], Field::Uint(0), "a new filter has not turned");
    p.fields[turns] = Field::Uint(1 << 62);
    c.ok(&[b"RESTORE".as_slice(), b"w", b"0", &p.serialize()]);
    madd(&mut c, "w", &names("a", 50));
    advance(&mut c, 3_000);
    madd(&mut c, "w", &names("b", 50));
    let digest = c.digest("w");
    c.ok(&["DEBUG", "RELOAD"]);
    assert!(s.is_running(), "DEBUG RELOAD refused the server's own data");
    assert_eq!(c.digest("w"), digest, "DEBUG RELOAD changed the filter");
    assert_eq!(present(&mut c, "w", &names("a", 50)), 50);
    assert_eq!(present(&mut c, "w", &names("b", 50)), 50);
    assert_dump_restores(&mut c, "w", "forged turns");
    assert!(s.panic_lines().is_empty());
}

/// The payload with its body replaced by `body` (RDB version and CRC trailer redone), so the
/// module's loader, not the CRC check, meets the bad bytes.
fn with_body(dump: &[u8], body: &[u8]) -> Vec<u8> {
    let n = dump.len() - 10;
    let mut p = body.to_vec();
    p.extend_from_slice(&dump[n..n + 2]);
    p.extend_from_slice(&[0; 8]);
    fix_dump_crc(&mut p);
    p
}

/// The AOF, replayed on a restart whose debug clock is elsewhere, rebuilds the same bits: with
/// the module's rewrite (BF.LOADCHUNK header and chunks, no RDB preamble) as the base and the
/// primary's BF.WINDOWADD commands in the tail; and with no rewrite at all.
#[test]
fn aof_replay_and_rewrite_rebuild_the_same_bits() {
    for rewrite in [false, true] {
        let opts = ServerOpts::new()
            .module_args(&["window-debug-clock", "yes"])
            .arg("appendonly", "yes")
            .arg("aof-use-rdb-preamble", "no");
        let s = Server::start_with(opts.clone());
        let mut c = s.conn();
        c.int(&["BF.DEBUGCLOCK", "SET", T0]);
        c.ok(&["BF.RESERVE", "t", "0.01", "1000", "WINDOW", "20s"]);
        c.cmd(&["BF.INSERT", "n", "WINDOW", "ITEMS", "CAPACITY", "300", "ITEMS", "a"]);
        for batch in names("a", 2000).chunks(100) {
            madd(&mut c, "t", batch);
            madd(&mut c, "n", batch);
            advance(&mut c, 1_500);
        }
        if rewrite {
            c.rewrite_aof();
            for batch in names("b", 500).chunks(100) {
                madd(&mut c, "t", batch);
                advance(&mut c, 4_000);
            }
        }
        let digests = [c.digest("t"), c.digest("n")];
        drop(c);
        let s2 = s.restart(&[], opts);
        let mut c = s2.conn();
        assert_eq!([c.digest("t"), c.digest("n")], digests, "rewrite {rewrite}");
    }
}

/// Values written before the generations layout — encoding 1 (one array per slice, no layout
/// word) and encoding 2 in the blocked layout (layout word 1) — still load, answer, take adds
/// and save again.
#[test]
fn encoding_1_and_blocked_values_still_load() {
    for layout in [WindowLayout::Sliced, WindowLayout::Blocked] {
        old_values_load(layout);
    }
}

fn old_values_load(layout: WindowLayout) {
    let s = clocked();
    let mut c = s.conn();
    c.int(&["BF.DEBUGCLOCK", "SET", T0]);
    c.ok(&["BF.RESERVE", "w", "0.01", "2000", "WINDOW", "10m"]);
    let dump = c.cmd(&["DUMP", "w"]).as_bytes().to_vec();
    let mut p = ModulePayload::parse(&dump).unwrap();
    // Module id: 8 bytes big-endian after the 0x81 length byte; the low 10 bits are encver.
    assert_eq!(p.module_id[0], 0x81);
    let id = u64::from_be_bytes(p.module_id[1..9].try_into().unwrap());
    assert_eq!(id & 1023, 2);
    // A new filter: encoding 2, layout word 2 (generations), the fields with the probes after
    // the slice bits, the turn count, the memory.
    assert_eq!(p.fields[0], Field::Uint(2));
    let uint = |v: u64| Field::Uint(v);
    // The same window in the old layout, empty, with the new filter's seed and times.
    let old = choose_in(layout, WindowKind::Time { window_ms: 600_000 }, 0.01, 2000).unwrap();
    let n = old.slices();
    let mut fields = Vec::new();
    if layout == WindowLayout::Blocked {
        let mut module_id = vec![0x81];
        module_id.extend_from_slice(&id.to_be_bytes());
        p.module_id = module_id;
        fields.push(uint(1));
    } else {
        // Encoding 1: no layout word.
        let mut module_id = vec![0x81];
        module_id.extend_from_slice(&((id & !1023) | 1).to_be_bytes());
        p.module_id = module_id;
    }
    fields.extend_from_slice(&p.fields[1..5]);
    for v in [u64::from(old.k), u64::from(old.l), old.gen_items, old.gen_ms, old.slice_bits] {
        fields.push(uint(v));
    }
    // Seed, then head 0, the times, zero counts.
    fields.push(p.fields[11].clone());
    fields.push(uint(0));
    fields.extend_from_slice(&p.fields[13..15]);
    fields.extend((0..n).map(|_| uint(0)));
    if layout == WindowLayout::Blocked {
        // Turns, then the memory in one piece (under 16 MiB).
        fields.push(uint(0));
        fields.push(Field::Str { bytes: vec![0; old.bytes() as usize], lzf: None });
    } else {
        for _ in 0..n {
            fields.push(Field::Str { bytes: vec![0; old.slice_bits as usize / 8], lzf: None });
        }
    }
    p.fields = fields;
    let mut v1 = p.serialize();
    fix_dump_crc(&mut v1);
    c.ok(&[b"RESTORE".as_slice(), b"old", b"0", &v1]);
    assert_eq!(c.cmd(&["TYPE", "old"]).as_str(), "SBwindow-");
    assert_eq!(stat(&mut c, "old", "Slices"), n.to_string());
    let items = names("o", 2000);
    madd(&mut c, "old", &items);
    assert_eq!(present(&mut c, "old", &items), 2000);
    assert_eq!(stat(&mut c, "old", "Items added"), "2000");
    advance(&mut c, 5 * 60_000);
    assert_eq!(present(&mut c, "old", &items), 2000);
    // It saves (encoding 2, its own layout) and loads back the same.
    let digest = c.digest("old");
    c.ok(&["DEBUG", "RELOAD"]);
    assert_eq!(c.digest("old"), digest);
    assert_eq!(stat(&mut c, "old", "Slices"), n.to_string());
    assert_eq!(present(&mut c, "old", &items), 2000);
    advance(&mut c, 7 * 60_000);
    c.cmd(&["BF.ADD", "old", "new"]);
    assert!(present(&mut c, "old", &items) < 100);
    assert!(s.panic_lines().is_empty());
}
