//! Blocked filters (`LAYOUT BLOCKED`, the `bf-layout` default): the option and its errors,
//! answers and scaling, and every promise the standard layout keeps (persistence, dumps,
//! replication, hostile payloads).

mod common;
use common::hostile::Hostile;
use common::mutate::fuzz_rng;
use common::*;

/// Whether every layer of `key` is blocked, from BF.DEBUG (and how many layers there are).
fn blocked_layers(c: &mut Conn, key: &str) -> (bool, usize) {
    let lines = c.bf_debug(key);
    let layers = &lines[1..];
    (!layers.is_empty() && layers.iter().all(|l| l.ends_with(" layout:blocked")), layers.len())
}

/// `bits:` of BF.DEBUG's first layer line.
fn first_layer_bits(c: &mut Conn, key: &str) -> u64 {
    let line = c.bf_debug(key)[1].clone();
    let field = line.split(' ').find(|f| f.starts_with("bits:")).unwrap();
    field[5..].parse().unwrap()
}

/// `LAYOUT BLOCKED` in BF.RESERVE and BF.INSERT (any case) makes a blocked filter of whole
/// 512-bit blocks, a few percent larger than the standard one; `LAYOUT STANDARD` the usual
/// one. Bad values, a missing value, COUNTING or WINDOW beside BLOCKED are refused with clear
/// errors and create nothing.
#[test]
fn layout_option_sizes_and_errors() {
    let srv = Server::start();
    let mut c = srv.conn();
    c.ok(&["BF.RESERVE", "std", "0.01", "100000", "NONSCALING"]);
    c.ok(&["BF.RESERVE", "blk", "0.01", "100000", "NONSCALING", "LAYOUT", "BLOCKED"]);
    c.ok(&["BF.RESERVE", "std2", "0.01", "1000", "layout", "standard"]);
    c.ok(&["BF.RESERVE", "blk2", "0.01", "1000", "EXPANSION", "4", "layout", "blocked"]);
    let ins = c.cmd(&["BF.INSERT", "ins", "CAPACITY", "1000", "LAYOUT", "BLOCKED", "ITEMS", "a"]);
    assert_eq!(ins.as_array().len(), 1, "{ins:?}");
    for key in ["blk", "blk2", "ins"] {
        assert_eq!(blocked_layers(&mut c, key), (true, 1), "{key}");
    }
    for key in ["std", "std2"] {
        assert!(!blocked_layers(&mut c, key).0, "{key}");
    }
    assert_eq!(c.bf_info("blk2").expansion, Some(4));
    let (std_bits, blk_bits) = (first_layer_bits(&mut c, "std"), first_layer_bits(&mut c, "blk"));
    assert_eq!(blk_bits % 512, 0);
    let ratio = blk_bits as f64 / std_bits as f64;
    assert!(ratio > 1.0 && ratio <= 1.10, "blocked / standard bits at 1%: {ratio}");
    assert_eq!(c.bf_info("blk").size as u64, 32 + 64 + blk_bits / 8);
    for bad in [
        vec!["BF.RESERVE", "x", "0.01", "100", "LAYOUT", "CACHELINE"],
        vec!["BF.RESERVE", "x", "0.01", "100", "LAYOUT", ""],
        vec!["BF.RESERVE", "x", "0.01", "100", "LAYOUT"],
        vec!["BF.INSERT", "x", "LAYOUT", "ITEMS", "a"],
        vec!["BF.INSERT", "x", "LAYOUT", "1", "ITEMS", "a"],
    ] {
        c.expect_err(&bad, "ERR LAYOUT must be STANDARD or BLOCKED");
    }
    let counting =
        "ERR LAYOUT BLOCKED has no counting form: COUNTING cannot go with LAYOUT BLOCKED";
    c.expect_err(
        &["BF.RESERVE", "x", "0.01", "100", "COUNTING", "4", "LAYOUT", "BLOCKED"],
        counting,
    );
    c.expect_err(&["BF.INSERT", "x", "LAYOUT", "BLOCKED", "COUNTING", "8", "ITEMS", "a"], counting);
    let window = "ERR a WINDOW filter has its own layout: LAYOUT BLOCKED cannot go with WINDOW";
    c.expect_err(&["BF.RESERVE", "x", "0.01", "100", "WINDOW", "1h", "LAYOUT", "BLOCKED"], window);
    assert!(!c.exists_key("x"));
    // A counting filter and LAYOUT STANDARD go together.
    c.ok(&["BF.RESERVE", "cs", "0.01", "100", "COUNTING", "4", "LAYOUT", "STANDARD"]);
    // Not a counting filter: BF.DEL answers as for any plain filter.
    c.expect_err(
        &["BF.DEL", "blk", "a"],
        "ERR not a counting filter: items can be deleted only from a filter created with COUNTING 4 or COUNTING 8",
    );
}

/// With `bf.redisbloom-scheme yes`, `LAYOUT BLOCKED` is refused (RedisBloom's layout is asked
/// for), and the `bf-layout blocked` default does not apply.
#[test]
fn redisbloom_scheme_refuses_blocked() {
    let srv = Server::start_with(ServerOpts::new().module_args(&[
        "redisbloom-scheme",
        "yes",
        "layout",
        "blocked",
    ]));
    let mut c = srv.conn();
    c.expect_err(
        &["BF.RESERVE", "x", "0.01", "100", "LAYOUT", "BLOCKED"],
        "ERR LAYOUT BLOCKED uses scalebloom's own hash scheme: not available while bf.redisbloom-scheme is yes",
    );
    assert_eq!(c.int(&["BF.ADD", "auto", "a"]), 1);
    assert!(!blocked_layers(&mut c, "auto").0);
}

/// The `bf-layout` default: a module argument (both spellings) and `CONFIG SET` (both
/// spellings where the server has unprefixed configs) decide what BF.ADD, BF.MADD,
/// BF.INSERT and BF.RESERVE make without `LAYOUT`; `LAYOUT` overrides it; COUNTING ignores a
/// blocked default (counting filters have no blocked form); bad values are refused.
#[test]
fn bf_layout_default() {
    for arg in ["layout", "bf-layout"] {
        let srv = Server::start_with(ServerOpts::new().module_args(&[arg, "BLOCKED"]));
        let mut c = srv.conn();
        assert_eq!(c.config_get("bf.layout").as_deref(), Some("blocked"), "{arg}");
        assert_eq!(c.int(&["BF.ADD", "add", "a"]), 1);
        c.madd("madd", &items("m", 3));
        c.cmd(&["BF.INSERT", "ins", "ITEMS", "a"]);
        c.ok(&["BF.RESERVE", "res", "0.01", "100"]);
        for key in ["add", "madd", "ins", "res"] {
            assert!(blocked_layers(&mut c, key).0, "{arg} {key}");
        }
        c.ok(&["BF.RESERVE", "std", "0.01", "100", "LAYOUT", "STANDARD"]);
        assert!(!blocked_layers(&mut c, "std").0);
        c.ok(&["BF.RESERVE", "cnt", "0.01", "100", "COUNTING", "4"]);
        assert!(c.bf_debug("cnt")[1].ends_with(" counters:4"));
    }
    let srv = Server::start();
    let mut c = srv.conn();
    assert_eq!(c.config_get("bf.layout").as_deref(), Some("standard"));
    let mut names = vec!["bf.layout"];
    if c.engine().has_unprefixed_module_configs() {
        names.push("bf-layout");
    }
    for (i, name) in names.iter().enumerate() {
        c.ok(&["CONFIG", "SET", name, "blocked"]);
        assert_eq!(c.config_get(name).as_deref(), Some("blocked"));
        let key = format!("k{i}");
        assert_eq!(c.int(&["BF.ADD", &key, "a"]), 1);
        assert!(blocked_layers(&mut c, &key).0, "{name}");
        c.ok(&["CONFIG", "SET", name, "Standard"]);
        assert_eq!(c.config_get("bf.layout").as_deref(), Some("standard"));
        let v = c.cmd(&["CONFIG", "SET", name, "cacheline"]);
        assert!(v.is_err(), "{v:?}");
        assert_eq!(c.config_get("bf.layout").as_deref(), Some("standard"));
    }
    let dir = std::sync::Arc::new(TempDir::new("bad-layout"));
    let bad = Server::try_start_in(dir, ServerOpts::new().module_args(&["layout", "fast"]));
    assert!(bad.is_err(), "the module loaded with layout fast");
}

/// A blocked filter scales (every layer blocked), never forgets an item, answers BF.EXISTS
/// and BF.MEXISTS alike, keeps its error rate, and reports BF.CARD, BF.INFO and BF.STATS.
#[test]
fn blocked_filters_scale_and_answer() {
    let srv = Server::start();
    let mut c = srv.conn();
    c.ok(&["BF.RESERVE", "k", "0.01", "1000", "LAYOUT", "BLOCKED"]);
    let all = items("s", 30_000);
    c.madd_all("k", &all);
    let (blocked, layers) = blocked_layers(&mut c, "k");
    assert!(blocked && layers >= 5, "{layers} layers");
    c.assert_all_present("k", &all);
    for item in &all[..50] {
        assert_eq!(c.int(&["BF.EXISTS", "k", item]), 1);
        assert_eq!(c.int(&["BF.ADD", "k", item]), 0);
    }
    let absent = items("never", 100_000);
    let mut hits = 0;
    for chunk in absent.chunks(10_000) {
        hits += c.mexists("k", chunk).iter().filter(|&&b| b == 1).count();
    }
    assert!(hits <= 1_000, "{hits} false positives in 100000 at 1%");
    let info = c.bf_info("k");
    assert_eq!(info.filters as usize, layers);
    assert_eq!(info.items, c.bf_card("k"));
    assert!(info.items > 29_000 && info.items <= 30_000, "{info:?}");
    let stats = c.cmd(&["BF.STATS", "k"]);
    assert!(!stats.is_err(), "{stats:?}");
    // Nonscaling: refused once full.
    c.ok(&["BF.RESERVE", "n", "0.01", "100", "NONSCALING", "LAYOUT", "BLOCKED"]);
    let replies = c.madd("n", &items("n", 300));
    let last = replies.last().unwrap();
    assert!(last.is_err(), "{last:?}");
}

/// DEBUG RELOAD, DUMP/RESTORE, SCANDUMP/LOADCHUNK into a fresh key, COPY, an AOF rewrite and
/// restart keep a blocked filter: every answer, BF.CARD, BF.STATS, BF.INFO and the digest,
/// the layout (it keeps growing blocked layers).
#[test]
fn reload_restore_dump_copy_and_aof_keep_every_answer() {
    let opts = ServerOpts::new().arg("appendonly", "yes").arg("aof-use-rdb-preamble", "no");
    let srv = Server::start_with(opts.clone());
    let mut c = srv.conn();
    c.ok(&["BF.RESERVE", "k", "0.01", "500", "LAYOUT", "BLOCKED"]);
    let all = items("p", 3_000);
    c.madd_all("k", &all);
    let mut probe = all.clone();
    probe.extend(items("absent", 3_000));
    let before = c.bf_answers("k", &probe);
    let digest = c.digest("k");
    for key in c.copy_every_way("k") {
        assert_eq!(c.bf_answers(key, &probe), before, "{key}");
        assert_eq!(c.digest(key), digest, "{key}");
        assert!(blocked_layers(&mut c, key).0, "{key}");
    }
    c.rewrite_aof();
    // Writes after the rewrite go to the AOF tail, growing a layer.
    let more = items("q", 6_000);
    c.madd_all("copied", &more);
    let after_tail = c.bf_answers("copied", &probe);
    drop(c);
    let srv = srv.restart(&[], opts);
    let mut c = srv.conn();
    assert_eq!(c.bf_answers("k", &probe), before, "after AOF restart");
    assert_eq!(c.bf_answers("copied", &probe), after_tail, "AOF tail");
    assert_eq!(c.digest("k"), digest);
    c.assert_all_present("copied", &more);
    assert!(blocked_layers(&mut c, "copied").0);
}

/// A replica ends with the same bits (digest) as its primary for blocked filters made by
/// BF.RESERVE, BF.INSERT, and BF.ADD under a primary's `bf.layout blocked` that the replica
/// does not have itself (the setting travels with the stream).
#[test]
fn replicas_build_identical_blocked_filters() {
    let p = Server::start();
    let (_replica, mut rc) = Server::start_replica_of(&p);
    let mut pc = p.conn();
    pc.ok(&["BF.RESERVE", "res", "0.01", "300", "LAYOUT", "BLOCKED"]);
    pc.cmd(&["BF.INSERT", "ins", "CAPACITY", "300", "LAYOUT", "BLOCKED", "ITEMS", "a", "b"]);
    pc.ok(&["CONFIG", "SET", "bf.layout", "blocked"]);
    assert_eq!(pc.int(&["BF.ADD", "auto", "a"]), 1);
    assert_eq!(rc.config_get("bf.layout").as_deref(), Some("standard"));
    let all = items("rep", 3_000);
    for key in ["res", "ins", "auto"] {
        pc.madd_all(key, &all);
    }
    pc.wait_acked();
    let mut probe = all.clone();
    probe.extend(items("absent", 3_000));
    for key in ["res", "ins", "auto"] {
        assert!(blocked_layers(&mut rc, key).0, "{key}");
        assert_eq!(rc.digest(key), pc.digest(key), "{key}");
        assert_eq!(rc.bf_answers(key, &probe), pc.bf_answers(key, &probe), "{key}");
    }
}

/// RESTOREs of a blocked filter's DUMP with bytes flipped, fields patched and the layout
/// field set to every nearby value: each is refused or gives a filter that answers every
/// command; the server never crashes and every bystander stays as it was.
#[test]
fn hostile_restores_of_a_blocked_dump_never_crash() {
    let mut fx = Hostile::start();
    fx.conn.ok(&["BF.RESERVE", "blk", "0.01", "200", "LAYOUT", "BLOCKED"]);
    fx.conn.madd("blk", &items("b", 1_500));
    fx.add_bystander("blk");
    let payload = fx.conn.cmd(&["DUMP", "blk"]).as_bytes().to_vec();
    let (mut rng, seed) = fuzz_rng("hostile_restores_of_a_blocked_dump_never_crash");
    eprintln!("seed {seed}");
    let body = payload.len() - 10;
    for i in 0..300 {
        let mut p = payload.clone();
        let flips = 1 + rng.next() % 4;
        for _ in 0..flips {
            // Mostly the metadata at the front, sometimes anywhere.
            let span = if rng.next() % 4 == 0 { body } else { 160.min(body) };
            let at = rng.next() as usize % span;
            p[at] ^= 1 << (rng.next() % 8);
        }
        fix_dump_crc(&mut p);
        fx.try_restore(&format!("h{i}"), &p, false);
    }
    // The layout field (512) replaced by other counter widths and near values.
    // Fields: scheme, seed, error, capacity, expansion, counters (512: blocked), …
    let parsed = ModulePayload::parse(&payload).expect("parse DUMP payload");
    assert_eq!(parsed.fields[5], Field::Uint(512), "{:?}", &parsed.fields[..8]);
    for value in [0u64, 4, 8, 511, 513, 1024, u64::MAX] {
        let mut changed = parsed.clone();
        changed.fields[5] = Field::Uint(value);
        let p = changed.serialize();
        let v = fx.conn.cmd(&[b"RESTORE".as_slice(), b"layout", b"0", &p]);
        assert!(v.is_err(), "counters {value}: {v:?}");
        assert!(!fx.conn.exists_key("layout"));
    }
    eprintln!("{:?}", fx.tally);
    fx.assert_intact();
}

/// The values of the lines of a fixture's `expected*.txt` that start with `name` and a space.
fn fixture_field(expected: &str, name: &str) -> Vec<String> {
    expected
        .lines()
        .filter_map(|l| l.strip_prefix(name).and_then(|r| r.strip_prefix(' ')))
        .map(str::to_owned)
        .collect()
}

/// A fixture's `absent_hits` line: one digit (0 or 1) per absent item, as `BF.MEXISTS` answers.
fn fixture_hits(digits: &str) -> Vec<i64> {
    digits.bytes().map(|b| i64::from(b - b'0')).collect()
}

/// A blocked filter written before blocked chains hashed with xxh3-64 (hash scheme 1, built by
/// main at 21:21 UTC on 2026-11-23: `tests/fixtures/blocked/`, a DUMP payload and its
/// SCANDUMP stream of `BF.RESERVE old 0.01 500 LAYOUT BLOCKED` then `BF.MADD` of `p0`..`p2999`)
/// loads through RESTORE and BF.LOADCHUNK and answers as that build did: every item present,
/// the same false positives among 3,000 absent items, BF.CARD, BF.DEBUG and the digest. It
/// keeps its scheme as it grows (new items present, old ones still), while a filter made now
/// uses scheme 4 (another digest for the same items).
#[test]
fn blocked_filters_of_the_first_hash_scheme_still_answer() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/blocked");
    let expected = std::fs::read_to_string(dir.join("expected.txt")).unwrap();
    let field = |name: &str| fixture_field(&expected, name);
    let card: i64 = field("card")[0].parse().unwrap();
    let digest = field("digest")[0].clone();
    let debug = field("debug");
    let absent_hits = fixture_hits(&field("absent_hits")[0]);
    let present: Vec<String> = (0..3000).map(|i| format!("p{i}")).collect();
    let absent: Vec<String> = (0..3000).map(|i| format!("absent{i}")).collect();
    assert_eq!(absent_hits.len(), 3000);

    let srv = Server::start();
    let mut c = srv.conn();
    let dump = std::fs::read(dir.join("scheme1.dump")).unwrap();
    assert!(c.cmd(&[&b"RESTORE"[..], b"restored", b"0", &dump]).is_ok());
    let stream = std::fs::read(dir.join("scheme1.scandump")).unwrap();
    let mut at = 0;
    while at < stream.len() {
        let it = u64::from_le_bytes(stream[at..at + 8].try_into().unwrap());
        let len = u64::from_le_bytes(stream[at + 8..at + 16].try_into().unwrap()) as usize;
        let data = &stream[at + 16..at + 16 + len];
        let r = c.cmd(&[&b"BF.LOADCHUNK"[..], b"chunked", it.to_string().as_bytes(), data]);
        assert!(r.is_ok(), "BF.LOADCHUNK -> {r:?}");
        at += 16 + len;
    }
    for key in ["restored", "chunked"] {
        c.assert_all_present(key, &present);
        assert_eq!(c.mexists(key, &absent), absent_hits, "{key}: false positives");
        assert_eq!(c.bf_card(key), card, "{key}");
        assert_eq!(c.bf_debug(key), debug, "{key}");
        assert_eq!(c.digest(key), digest, "{key}");
        // The value as read, in encoding 515 now: the fixture's (513) fields, then the
        // counts — each layer's set bits and the saturated counters (none) — and the count of
        // members (none).
        let again = c.cmd(&["DUMP", key]).as_bytes().to_vec();
        let (old, mut new) = (ModulePayload::parse(&dump), ModulePayload::parse(&again));
        let (old, new) = (old.unwrap(), new.as_mut().unwrap());
        let id = old.module_id.len() - 1;
        assert_eq!((old.module_id[id], new.module_id[id]), (1, 3), "{key}: 513 in, 515 out");
        let counts = new.fields.split_off(old.fields.len());
        assert_eq!(new.fields, old.fields, "{key}: written back as read");
        let layers = c.bf_info(key).filters as usize;
        assert_eq!(counts.len(), layers + 2, "{key}: {counts:?}");
        assert_eq!(counts.last(), Some(&Field::Uint(0)));
    }
    // Growing it keeps scheme 1: the new items and the old ones are present.
    let more = items("more", 4_000);
    c.madd_all("restored", &more);
    c.assert_all_present("restored", &more);
    c.assert_all_present("restored", &present);
    assert!(blocked_layers(&mut c, "restored").0);
    // A blocked filter made now, with the same items, is a different filter (scheme 4).
    c.ok(&["BF.RESERVE", "new", "0.01", "500", "LAYOUT", "BLOCKED"]);
    c.madd_all("new", &present);
    c.assert_all_present("new", &present);
    assert_ne!(c.digest("new"), digest);
}

/// A blocked filter of hash scheme 4 written before its probes were computed on 32 bits and
/// its items hashed by `xxh3short` (built by 16c88fd on 2026-11-26: `tests/fixtures/blocked/
/// scheme4.dump`, the DUMP payload of `BF.RESERVE old4 0.01 500 LAYOUT BLOCKED` then one
/// `BF.MADD` of `p0`..`p2999`; `expected4.txt`) answers as that build did — every item present,
/// the same false positives among 3,000 absent items, BF.CARD, BF.DEBUG and the digest — and
/// growing it by `more0`..`more3999` in one `BF.MADD` (layers of 7 to 10 probes) sets exactly
/// the bits that build set: the same digest and layers.
#[test]
fn blocked_filters_of_hash_scheme_four_keep_their_bits() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/blocked");
    let expected = std::fs::read_to_string(dir.join("expected4.txt")).unwrap();
    let field = |name: &str| fixture_field(&expected, name);
    let absent_hits = fixture_hits(&field("absent_hits")[0]);
    let present: Vec<String> = (0..3000).map(|i| format!("p{i}")).collect();
    let absent: Vec<String> = (0..3000).map(|i| format!("absent{i}")).collect();
    let more: Vec<String> = (0..4000).map(|i| format!("more{i}")).collect();
    assert_eq!(absent_hits.len(), 3000);

    let srv = Server::start();
    let mut c = srv.conn();
    let dump = std::fs::read(dir.join("scheme4.dump")).unwrap();
    assert!(c.cmd(&[&b"RESTORE"[..], b"old4", b"0", &dump]).is_ok());
    c.assert_all_present("old4", &present);
    assert_eq!(c.mexists("old4", &absent), absent_hits, "false positives");
    assert_eq!(c.bf_card("old4"), field("card")[0].parse::<i64>().unwrap());
    assert_eq!(c.bf_debug("old4"), field("debug"));
    assert_eq!(c.digest("old4"), field("digest")[0]);
    c.madd("old4", &more);
    assert_eq!(c.bf_debug("old4"), field("grown_debug"));
    assert_eq!(c.digest("old4"), field("grown_digest")[0]);
    c.assert_all_present("old4", &present);
    c.assert_all_present("old4", &more);
}
