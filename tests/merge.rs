//! BF.MERGE and LIKE on a real server: the union, when layers are OR-ed and when kept apart,
//! the error bound BF.STATS reports, the refusals (which change nothing), the limits, every
//! path a merged filter takes (RELOAD, DUMP/RESTORE, SCANDUMP/LOADCHUNK, AOF, a replica),
//! cluster routing, the keyspace event and key specs, and mutated payloads merged.

mod common;
use common::hostile::Hostile;
use common::*;

/// Per-worker filters of a crawler, each created on its own (so each has its own seed), and
/// the URLs each saw.
fn workers(c: &mut Conn, n: usize, per: usize, like: Option<&str>) -> Vec<(String, Vec<String>)> {
    (0..n)
        .map(|w| {
            let key = format!("{{crawl}}:worker:{w}");
            match like {
                Some(other) => c.ok(&["BF.RESERVE", &key, "0.01", "1000", "LIKE", other]),
                None => c.ok(&["BF.RESERVE", &key, "0.01", "1000"]),
            }
            let urls = items(&format!("https://site{w}.example/page/"), per);
            c.madd_all(&key, &urls);
            (key, urls)
        })
        .collect()
}

fn merge_args<'a>(dest: &'a str, sources: &'a [(String, Vec<String>)]) -> Vec<&'a str> {
    let mut args = vec!["BF.MERGE", dest];
    args.extend(sources.iter().map(|(k, _)| k.as_str()));
    args
}

fn stat(c: &mut Conn, key: &str, name: &str) -> f64 {
    stat_field(&c.stats_f64("BF.STATS", key), name)
}

#[test]
fn the_union_holds_every_item_of_every_source_and_of_the_destination() {
    let s = Server::start();
    let mut c = s.conn();
    let ws = workers(&mut c, 4, 300, None);
    // The destination exists and keeps its own items.
    c.ok(&["BF.RESERVE", "{crawl}:all", "0.01", "1000"]);
    let own = items("own", 100);
    c.madd_all("{crawl}:all", &own);
    c.ok(&merge_args("{crawl}:all", &ws));
    c.assert_all_present("{crawl}:all", &own);
    for (_, urls) in &ws {
        c.assert_all_present("{crawl}:all", urls);
    }
    // Different seeds: each worker's filter is kept apart (one more layer each).
    let info = c.bf_info("{crawl}:all");
    assert_eq!(info.filters, 5);
    assert_eq!(info.items, 100 + 4 * 300);
    assert_eq!(c.bf_card("{crawl}:all"), 100 + 4 * 300);
    let debug = c.bf_debug("{crawl}:all");
    assert_eq!(debug.iter().filter(|l| l.contains(" member:")).count(), 4, "{debug:?}");
    // Absent items still answer like a filter at its target.
    let fp = c.false_positives("{crawl}:all", 20_000);
    assert!(fp < 20_000 / 100 * 3, "{fp} false positives of 20000");
    // An item a member holds is not new; new items go to the destination's own layers.
    assert_eq!(c.int(&["BF.ADD", "{crawl}:all", &ws[2].1[7]]), 0);
    assert_eq!(c.int(&["BF.ADD", "{crawl}:all", "fresh"]), 1);
    assert_eq!(c.bf_card("{crawl}:all"), 100 + 4 * 300 + 1);
    // A missing destination is created from the sources, a missing source is an empty one.
    c.ok(&["BF.MERGE", "{crawl}:new", &ws[0].0, "{crawl}:missing", &ws[1].0]);
    c.assert_all_present("{crawl}:new", &ws[0].1);
    c.assert_all_present("{crawl}:new", &ws[1].1);
    // Nothing at all to merge.
    c.expect_err(&["BF.MERGE", "{crawl}:none", "{crawl}:missing"], "ERR not found");
    assert!(!c.exists_key("{crawl}:none"));
}

#[test]
fn like_filters_merge_into_one_layer_and_answer_as_one_filter() {
    let s = Server::start();
    let mut c = s.conn();
    c.ok(&["BF.RESERVE", "{crawl}:template", "0.01", "1000"]);
    let ws = workers(&mut c, 3, 200, Some("{crawl}:template"));
    c.ok(&["BF.RESERVE", "{crawl}:all", "0.01", "1000", "LIKE", "{crawl}:template"]);
    c.ok(&merge_args("{crawl}:all", &ws));
    let info = c.bf_info("{crawl}:all");
    assert_eq!(info.filters, 1, "OR-ed into the one layer: {:?}", c.bf_debug("{crawl}:all"));
    for (_, urls) in &ws {
        c.assert_all_present("{crawl}:all", urls);
    }
    // The count is the estimate from the bits: the 600 distinct items, within a few.
    assert!((560..=600).contains(&info.items), "{info:?}");
    assert!(stat(&mut c, "{crawl}:all", "Estimated error rate") <= 0.01);
    // BF.INSERT … LIKE creates a missing filter the same way (and ignores LIKE otherwise).
    let r = c.cmd(&["BF.INSERT", "{crawl}:ins", "LIKE", "{crawl}:template", "ITEMS", "a", "b"]);
    assert_eq!(r.as_array().len(), 2);
    assert_eq!(
        c.bf_debug("{crawl}:ins")[1..],
        c.bf_debug("{crawl}:template")[1..]
            .iter()
            .map(|l| l.replace("size:0", "size:2"))
            .collect::<Vec<_>>()[..]
    );
    c.ok(&["BF.MERGE", "{crawl}:all", "{crawl}:ins"]);
    assert_eq!(c.bf_info("{crawl}:all").filters, 1);
    // LIKE copies the other's options: none may be given beside it; it needs a Bloom filter.
    for extra in
        [&["EXPANSION", "4"][..], &["NONSCALING"], &["COUNTING", "4"], &["LAYOUT", "BLOCKED"]]
    {
        let mut args = vec!["BF.RESERVE", "{crawl}:x", "0.01", "100"];
        args.extend_from_slice(extra);
        args.extend_from_slice(&["LIKE", "{crawl}:template"]);
        assert!(c.err(&args).contains("LIKE copies"), "{args:?}");
    }
    c.expect_err(
        &["BF.RESERVE", "{crawl}:x", "0.01", "100", "LIKE", "{crawl}:nothing"],
        "ERR LIKE: the key it names holds no Bloom filter",
    );
    c.ok(&["SET", "{crawl}:string", "v"]);
    assert!(
        c.err(&["BF.RESERVE", "{crawl}:x", "0.01", "100", "LIKE", "{crawl}:string"])
            .starts_with("WRONGTYPE")
    );
    assert!(!c.exists_key("{crawl}:x"));
}

#[test]
fn layers_whose_or_would_exceed_their_error_stay_apart_and_stats_report_the_sum() {
    let s = Server::start();
    let mut c = s.conn();
    c.ok(&["BF.RESERVE", "{f}:a", "0.01", "1000", "NONSCALING"]);
    for k in ["{f}:b", "{f}:c"] {
        c.ok(&["BF.RESERVE", k, "0.01", "1000", "LIKE", "{f}:a"]);
    }
    let mut parts_error = 0.0;
    for k in ["{f}:a", "{f}:b", "{f}:c"] {
        c.madd_all(k, &items(k, 950));
        parts_error += stat(&mut c, k, "Estimated error rate");
    }
    c.ok(&["BF.MERGE", "{f}:a", "{f}:b", "{f}:c"]);
    // An OR of 2850 items into a layer sized for 1000 would be far above 1%: kept apart.
    assert_eq!(c.bf_info("{f}:a").filters, 3);
    let merged = stat(&mut c, "{f}:a", "Estimated error rate");
    assert!(merged <= parts_error + 1e-12, "{merged} > {parts_error}");
    // Three nearly full 1% filters: above the target, so BF.STATS says saturated.
    assert!(merged > 0.01, "{merged}");
    assert_eq!(stat(&mut c, "{f}:a", "Saturated"), 1.0);
    let fp = c.false_positives("{f}:a", 40_000) as f64 / 40_000.0;
    assert!(fp < parts_error * 2.0, "measured {fp}, bound {parts_error}");
}

#[test]
fn counting_filters_add_counters_and_deletes_reach_kept_parts() {
    let s = Server::start();
    let mut c = s.conn();
    c.ok(&["BF.RESERVE", "{c}:a", "0.01", "1000", "COUNTING", "4"]);
    c.ok(&["BF.RESERVE", "{c}:b", "0.01", "1000", "LIKE", "{c}:a"]);
    c.ok(&["BF.RESERVE", "{c}:other", "0.01", "1000", "COUNTING", "4"]);
    c.madd_all("{c}:a", &items("x", 100));
    c.madd_all("{c}:b", &items("x", 100));
    c.madd_all("{c}:other", &items("o", 100));
    c.ok(&["BF.MERGE", "{c}:a", "{c}:b", "{c}:other"]);
    assert_eq!(c.bf_card("{c}:a"), 300);
    assert_eq!(c.bf_info("{c}:a").filters, 2);
    // x:7 was added to a and to b: its counters are 2, two deletes remove it.
    assert_eq!(c.int(&["BF.DEL", "{c}:a", "x:7"]), 1);
    assert_eq!(c.int(&["BF.EXISTS", "{c}:a", "x:7"]), 1);
    assert_eq!(c.int(&["BF.DEL", "{c}:a", "x:7"]), 1);
    assert_eq!(c.int(&["BF.EXISTS", "{c}:a", "x:7"]), 0);
    // o:3 is in the part kept apart.
    assert_eq!(c.int(&["BF.DEL", "{c}:a", "o:3"]), 1);
    assert_eq!(c.int(&["BF.EXISTS", "{c}:a", "o:3"]), 0);
    let left: Vec<String> = items("o", 100).into_iter().filter(|i| i != "o:3").collect();
    c.assert_all_present("{c}:a", &left);
}

#[test]
fn refusals_change_nothing() {
    let s = Server::start();
    let mut c = s.conn();
    c.ok(&["BF.RESERVE", "{r}:plain", "0.01", "1000"]);
    c.madd_all("{r}:plain", &items("p", 50));
    c.ok(&["BF.RESERVE", "{r}:c4", "0.01", "1000", "COUNTING", "4"]);
    c.ok(&["BF.RESERVE", "{r}:c8", "0.01", "1000", "COUNTING", "8"]);
    c.ok(&["BF.RESERVE", "{r}:win", "0.01", "1000", "WINDOW", "1h"]);
    c.ok(&["CF.RESERVE", "{r}:cf", "1000"]);
    c.ok(&["SET", "{r}:string", "v"]);
    let before = c.digest("{r}:plain");
    let cases: &[(&[&str], &str)] = &[
        (
            &["BF.MERGE", "{r}:plain", "{r}:c4"],
            "ERR cannot merge a counting filter with a plain one",
        ),
        (
            &["BF.MERGE", "{r}:c4", "{r}:c8"],
            "ERR cannot merge counting filters of different counter widths",
        ),
        (
            &["BF.MERGE", "{r}:plain", "{r}:win"],
            "ERR BF.MERGE takes Bloom filters without a window",
        ),
        (
            &["BF.MERGE", "{r}:win", "{r}:plain"],
            "ERR BF.MERGE takes Bloom filters without a window",
        ),
        (&["BF.MERGE", "{r}:plain", "{r}:cf"], "WRONGTYPE"),
        (&["BF.MERGE", "{r}:cf", "{r}:plain"], "WRONGTYPE"),
        (&["BF.MERGE", "{r}:plain", "{r}:string"], "WRONGTYPE"),
    ];
    for (args, want) in cases {
        let e = c.err(args);
        assert!(e.starts_with(want), "{args:?} -> {e}");
    }
    assert!(c.err(&["BF.MERGE", "{r}:plain"]).contains("wrong number of arguments"));
    assert_eq!(c.digest("{r}:plain"), before);
    // Counting into a new key from mixed kinds: refused, no key made.
    assert!(c.err(&["BF.MERGE", "{r}:new", "{r}:c4", "{r}:plain"]).starts_with("ERR cannot merge"));
    assert!(!c.exists_key("{r}:new"));
}

#[test]
fn the_limits_are_checked_before_any_change() {
    let s = Server::start();
    let mut c = s.conn();
    c.ok(&["BF.RESERVE", "{l}:a", "0.001", "100000"]);
    c.ok(&["BF.RESERVE", "{l}:b", "0.001", "100000"]);
    c.madd_all("{l}:a", &items("a", 100));
    c.madd_all("{l}:b", &items("b", 100));
    let size = c.bf_info("{l}:a").size;
    let before = c.digest("{l}:a");
    c.ok(&["CONFIG", "SET", "bf.max-filter-bytes", &(size + 1000).to_string()]);
    let e = c.err(&["BF.MERGE", "{l}:a", "{l}:b"]);
    assert!(e.contains("bf.max-filter-bytes"), "{e}");
    assert_eq!(c.digest("{l}:a"), before);
    let e = c.err(&["BF.MERGE", "{l}:new", "{l}:a", "{l}:b"]);
    assert!(e.contains("bf.max-filter-bytes"), "{e}");
    assert!(!c.exists_key("{l}:new"));
    c.ok(&["CONFIG", "SET", "bf.max-filter-bytes", &(3 * size).to_string()]);
    c.ok(&["BF.MERGE", "{l}:a", "{l}:b"]);
    // A source that is the destination, or a source named twice, is read once.
    c.ok(&["BF.RESERVE", "{l}:c", "0.001", "1000"]);
    c.ok(&["BF.RESERVE", "{l}:d", "0.001", "1000"]);
    c.madd_all("{l}:d", &items("d", 10));
    c.ok(&["BF.MERGE", "{l}:c", "{l}:c", "{l}:d", "{l}:d"]);
    assert_eq!(c.bf_info("{l}:c").filters, 2);
    assert_eq!(c.bf_card("{l}:c"), 10);
}

/// Merged filters of every kind: plain with members, OR-ed, counting, blocked.
fn merged_fixture(c: &mut Conn) -> Vec<String> {
    c.ok(&["BF.RESERVE", "{p}:a", "0.01", "500"]);
    c.ok(&["BF.RESERVE", "{p}:b", "0.01", "500"]);
    c.ok(&["BF.RESERVE", "{p}:like", "0.01", "500", "LIKE", "{p}:a"]);
    c.ok(&["BF.RESERVE", "{p}:c1", "0.01", "200", "COUNTING", "8"]);
    c.ok(&["BF.RESERVE", "{p}:c2", "0.01", "300", "COUNTING", "8"]);
    c.ok(&["BF.RESERVE", "{p}:k1", "0.01", "200", "LAYOUT", "BLOCKED"]);
    c.ok(&["BF.RESERVE", "{p}:k2", "0.01", "200", "LAYOUT", "BLOCKED"]);
    for k in ["{p}:a", "{p}:b", "{p}:like", "{p}:c1", "{p}:c2", "{p}:k1", "{p}:k2"] {
        c.madd_all(k, &items(k, 700)); // two layers each where scaling
    }
    c.ok(&["BF.MERGE", "{p}:m1", "{p}:a", "{p}:b", "{p}:like"]);
    c.ok(&["BF.MERGE", "{p}:m2", "{p}:c1", "{p}:c2"]);
    c.ok(&["BF.MERGE", "{p}:m3", "{p}:k1", "{p}:k2"]);
    vec!["{p}:m1".into(), "{p}:m2".into(), "{p}:m3".into()]
}

fn assert_merged_intact(c: &mut Conn, keys: &[String], digests: &[String], what: &str) {
    for (k, d) in keys.iter().zip(digests) {
        assert_eq!(&c.digest(k), d, "{what}: digest of {k}");
    }
    for (k, parts) in [
        ("{p}:m1", ["{p}:a", "{p}:b", "{p}:like"].as_slice()),
        ("{p}:m2", &["{p}:c1", "{p}:c2"]),
        ("{p}:m3", &["{p}:k1", "{p}:k2"]),
    ] {
        for p in parts {
            c.assert_all_present(k, &items(p, 700));
        }
    }
}

#[test]
fn a_merged_filter_survives_every_path() {
    let s = Server::start_with(ServerOpts::new().arg("appendonly", "yes"));
    let mut c = s.conn();
    let keys = merged_fixture(&mut c);
    let digests: Vec<String> = keys.iter().map(|k| c.digest(k)).collect();
    c.ok(&["DEBUG", "RELOAD"]);
    assert_merged_intact(&mut c, &keys, &digests, "DEBUG RELOAD");
    for k in &keys {
        let dump = c.cmd(&["DUMP", k.as_str()]).as_bytes().to_vec();
        let copy = format!("{k}:restored");
        c.ok(&[b"RESTORE".as_slice(), copy.as_bytes(), b"0", &dump]);
        assert_eq!(c.digest(&copy), c.digest(k), "RESTORE of {k}");
        let chunked = format!("{k}:chunks");
        for (it, data) in c.scandump_all(k) {
            c.ok(&[
                b"BF.LOADCHUNK".as_slice(),
                chunked.as_bytes(),
                it.to_string().as_bytes(),
                &data,
            ]);
        }
        assert_eq!(c.digest(&chunked), c.digest(k), "SCANDUMP/LOADCHUNK of {k}");
        assert_eq!(c.bf_info(&chunked), c.bf_info(k));
    }
    // AOF: the rewrite (chunks) and the merges themselves in the tail, replayed at start.
    c.rewrite_aof();
    c.ok(&["BF.RESERVE", "{p}:late", "0.01", "500"]);
    c.madd_all("{p}:late", &items("late", 50));
    c.ok(&["BF.MERGE", "{p}:m1", "{p}:late"]);
    let after: Vec<String> = keys.iter().map(|k| c.digest(k)).collect();
    drop(c);
    let s = s.restart(&[], ServerOpts::new().arg("appendonly", "yes"));
    let mut c = s.conn();
    assert_merged_intact(&mut c, &keys, &after, "AOF replay");
    c.assert_all_present("{p}:m1", &items("late", 50));
}

#[test]
fn a_replica_ends_with_the_same_bits() {
    let p = Server::start_with(ServerOpts::new().arg("repl-diskless-sync-delay", "0"));
    let (_r, mut rc) = Server::start_replica(p.port, None, ServerOpts::new());
    let mut pc = p.conn();
    let keys = merged_fixture(&mut pc);
    // A merge that creates and one into an existing filter, OR-ed and kept apart.
    pc.ok(&["BF.MERGE", "{p}:m1", "{p}:m3"]);
    pc.wait_acked();
    for k in keys.iter().map(String::as_str).chain(["{p}:a", "{p}:like"]) {
        assert_eq!(rc.digest(k), pc.digest(k), "replica digest of {k}");
    }
    // A full sync of merged filters.
    let (_r2, mut rc2) = Server::start_replica(p.port, None, ServerOpts::new());
    pc.wait_acked();
    for k in &keys {
        assert_eq!(rc2.digest(k), pc.digest(k), "full-sync digest of {k}");
    }
}

#[test]
fn cluster_mode_refuses_keys_of_different_slots() {
    let s = Server::start_with(ServerOpts::new().cluster());
    let mut c = s.conn();
    c.ok(&["CLUSTER", "ADDSLOTSRANGE", "0", "16383"]);
    wait_until("the node owns every slot", || {
        c.cmd(&["CLUSTER", "INFO"]).as_str().contains("cluster_state:ok")
    });
    c.ok(&["BF.RESERVE", "{a}x", "0.01", "100"]);
    c.ok(&["BF.RESERVE", "{b}y", "0.01", "100"]);
    assert!(c.err(&["BF.MERGE", "{a}z", "{a}x", "{b}y"]).starts_with("CROSSSLOT"));
    assert!(c.err(&["BF.RESERVE", "{a}w", "0.01", "100", "LIKE", "{b}y"]).starts_with("CROSSSLOT"));
    c.ok(&["BF.RESERVE", "{a}w", "0.01", "100", "LIKE", "{a}x"]);
    c.ok(&["BF.MERGE", "{a}z", "{a}x", "{a}w"]);
}

#[test]
fn merge_publishes_its_event_and_declares_its_keys() {
    let s = Server::start();
    let mut c = s.conn();
    c.ok(&["CONFIG", "SET", "notify-keyspace-events", "Kd"]);
    let mut sub = s.conn();
    sub.cmd(&["SUBSCRIBE", "__keyspace@0__:dest"]);
    c.ok(&["BF.RESERVE", "src", "0.01", "100"]);
    c.ok(&["BF.MERGE", "dest", "src"]);
    let m = sub.read_reply().expect("an event");
    assert_eq!(m.as_array()[2].as_str(), "bf.merge", "{m:?}");
    let keys = c.cmd(&["COMMAND", "GETKEYSANDFLAGS", "BF.MERGE", "d", "s1", "s2"]);
    let got: Vec<(String, Vec<String>)> = keys
        .as_array()
        .iter()
        .map(|k| {
            let k = k.as_array();
            (
                k[0].as_str().to_string(),
                k[1].as_array().iter().map(|f| f.as_str().to_string()).collect(),
            )
        })
        .collect();
    assert_eq!(got[0].0, "d");
    assert!(got[0].1.contains(&"RW".to_string()), "{got:?}");
    for (k, flags) in &got[1..] {
        assert!(k == "s1" || k == "s2");
        assert!(flags.contains(&"RO".to_string()), "{got:?}");
    }
    let like = c.cmd(&["COMMAND", "GETKEYS", "BF.RESERVE", "k", "0.01", "10", "LIKE", "o"]);
    let like: Vec<&str> = like.as_array().iter().map(Value::as_str).collect();
    assert_eq!(like, ["k", "o"]);
}

/// Filters restored from mutated payloads, merged with each other and with sound ones: every
/// merge answers (an error or OK), the result answers and reloads, nothing crashes.
#[test]
fn merging_filters_restored_from_mutated_payloads_never_crashes() {
    let mut fx = Hostile::start();
    let mut sources = common::mutate::sources(&mut fx);
    // Merged filters (with members: encoding 515, dump header version 3) among the sources.
    fx.conn.ok(&["BF.MERGE", "merged", "src", "other", "shape:scaling", "shape:wide"]);
    fx.conn.ok(&["BF.RESERVE", "counting4b", "0.01", "80", "COUNTING", "4"]);
    fx.conn.madd("counting4b", &items("c4b", 100));
    fx.conn.ok(&["BF.MERGE", "merged:counting", "shape:counting4", "counting4b"]);
    for key in ["merged", "merged:counting"] {
        fx.add_bystander(key);
        let payload = fx.conn.cmd(&["DUMP", key]).as_bytes().to_vec();
        let parsed = ModulePayload::parse(&payload).expect("parse DUMP of a merged filter");
        let chunks = fx.conn.scandump_all(key);
        let total = chunks[1..].iter().map(|(_, d)| d.len() as u64).sum();
        let digest = fx.conn.digest(key);
        sources.push(common::mutate::Source {
            key: key.into(),
            payload,
            parsed,
            chunks,
            digest,
            total,
        });
    }
    let (mut rng, seed) = common::mutate::fuzz_rng("merge");
    for i in 0..300 {
        let header = common::mutate::mutated_header(&mut rng, &sources);
        let key = format!("chunked{i}");
        let r = fx.conn.cmd(&[b"BF.LOADCHUNK".as_slice(), key.as_bytes(), b"1", &header]);
        if r.is_ok() {
            common::hostile::probe_filter(&mut fx.conn, &key);
        }
        fx.server.assert_alive();
    }
    let mut kept = Vec::new();
    for i in 0..600 {
        let (payload, _, _) = common::mutate::mutated_payload(&mut rng, &sources);
        let key = format!("m{i}");
        let r = fx.conn.cmd(&[b"RESTORE".as_slice(), key.as_bytes(), b"0", &payload]);
        if r.is_ok() {
            kept.push(key);
        }
    }
    assert!(!kept.is_empty(), "seed {seed}: no mutated payload was accepted");
    let sound: Vec<&str> = sources.iter().map(|s| s.key.as_str()).collect();
    for (i, key) in kept.iter().enumerate() {
        let other =
            if i % 2 == 0 { sound[i % sound.len()] } else { kept[(i * 7) % kept.len()].as_str() };
        let dest = format!("dest{}", i % 5);
        for args in [
            vec!["BF.MERGE", dest.as_str(), key.as_str(), other],
            vec!["BF.MERGE", key.as_str(), other],
        ] {
            let r = fx.conn.cmd(&args);
            assert!(r.is_ok() || r.is_err(), "seed {seed}: {args:?} -> {r:?}");
        }
        common::hostile::probe_filter(&mut fx.conn, key);
        fx.server.assert_alive();
    }
    for d in 0..5 {
        let dest = format!("dest{d}");
        if fx.conn.exists_key(&dest) {
            common::hostile::probe_filter(&mut fx.conn, &dest);
        }
    }
    fx.assert_intact_after_reload();
}

/// Filters in RedisBloom's layout (imported, or made with `bf.redisbloom-scheme yes`) merge
/// with filters in that layout — OR-ed when of one shape (its seed is always 0), kept apart
/// otherwise — and are refused beside this module's own.
#[test]
fn redisbloom_layout_filters_merge_with_their_own_layout() {
    let s = Server::start();
    let mut c = s.conn();
    c.ok(&["CONFIG", "SET", "bf.redisbloom-scheme", "yes"]);
    c.ok(&["BF.RESERVE", "{rb}:a", "0.01", "1000"]);
    c.ok(&["BF.RESERVE", "{rb}:b", "0.01", "1000"]);
    c.ok(&["BF.RESERVE", "{rb}:small", "0.01", "100"]);
    c.ok(&["CONFIG", "SET", "bf.redisbloom-scheme", "no"]);
    c.ok(&["BF.RESERVE", "{rb}:native", "0.01", "1000"]);
    for k in ["{rb}:a", "{rb}:b", "{rb}:small", "{rb}:native"] {
        c.madd_all(k, &items(k, 50));
    }
    c.ok(&["BF.MERGE", "{rb}:a", "{rb}:b", "{rb}:small"]);
    assert_eq!(c.bf_info("{rb}:a").filters, 2, "b OR-ed, small kept apart");
    for k in ["{rb}:a", "{rb}:b", "{rb}:small"] {
        c.assert_all_present("{rb}:a", &items(k, 50));
    }
    let before = c.digest("{rb}:a");
    let e = c.err(&["BF.MERGE", "{rb}:a", "{rb}:native"]);
    assert!(e.starts_with("ERR filters in RedisBloom's layout merge only"), "{e}");
    assert_eq!(c.digest("{rb}:a"), before);
    // A merged RedisBloom-layout filter reloads and answers the same.
    c.ok(&["DEBUG", "RELOAD"]);
    assert_eq!(c.digest("{rb}:a"), before);
}
