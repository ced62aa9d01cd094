//! The many-small-filters shape: creating and deleting filters leaves no memory behind,
//! allocation limits follow Redis' eviction model, RESTORE obeys the limits a client's write
//! obeys, and a BF.LOADCHUNK data chunk never lands in a filter it was not made for.

mod common;
use common::*;

/// Filters per churn round.
const CHURN: usize = 50_000;
/// Commands per pipeline batch.
const BATCH: usize = 2_000;

/// Runs `cmds_for(i)` for i in `range`, pipelined in batches, asserting every reply is not an
/// error.
fn pipelined(
    c: &mut Conn,
    range: std::ops::Range<usize>,
    cmds_for: impl Fn(usize) -> Vec<Vec<String>>,
) {
    let all: Vec<usize> = range.collect();
    for chunk in all.chunks(BATCH / 4) {
        let cmds: Vec<Vec<String>> = chunk.iter().flat_map(|&i| cmds_for(i)).collect();
        for (cmd, v) in cmds.iter().zip(c.pipeline(&cmds)) {
            assert!(!v.is_err(), "{:?} -> {:?}", cmd, v);
        }
    }
}

fn s(v: &[&str]) -> Vec<String> {
    v.iter().map(|x| x.to_string()).collect()
}

/// used_memory after `CHURN` filters made by `make(i)` and deleted, minus before, per filter.
fn churn_bytes_per_filter(make: impl Fn(usize) -> Vec<Vec<String>> + Copy) -> f64 {
    let server = Server::start();
    let mut c = server.conn();
    let round = |c: &mut Conn, range: std::ops::Range<usize>| {
        pipelined(c, range, |i| {
            let mut cmds = make(i);
            cmds.push(s(&["DEL", &format!("user:{i}:seen")]));
            cmds
        })
    };
    // A first round warms up what Redis allocates once (the keyspace's tables, reply buffers).
    round(&mut c, 0..BATCH);
    let before = c.used_memory();
    round(&mut c, BATCH..BATCH + CHURN);
    let after = c.used_memory();
    assert_eq!(c.int(&["DBSIZE"]), 0);
    (after - before) as f64 / CHURN as f64
}

#[test]
fn creating_and_deleting_50000_filters_leaves_used_memory_where_it_started() {
    let per_filter = churn_bytes_per_filter(|i| {
        vec![s(&["BF.RESERVE", &format!("user:{i}:seen"), "0.01", "1000"])]
    });
    assert!(per_filter.abs() <= 2.0, "{per_filter:.2} bytes per filter left behind");
}

#[test]
fn growing_and_deleting_50000_multi_layer_filters_leaves_used_memory_where_it_started() {
    // Capacity 1, expansion 2: the third distinct item needs a third layer (1 + 2 + 4).
    let per_filter = churn_bytes_per_filter(|i| {
        let key = format!("user:{i}:seen");
        vec![
            s(&["BF.RESERVE", &key, "0.01", "1", "EXPANSION", "2"]),
            s(&["BF.MADD", &key, "a", "b", "c", "d"]),
        ]
    });
    assert!(per_filter.abs() <= 2.0, "{per_filter:.2} bytes per filter left behind");
}

#[test]
fn auto_created_filters_churn_leaves_used_memory_where_it_started() {
    let per_filter =
        churn_bytes_per_filter(|i| vec![s(&["BF.ADD", &format!("user:{i}:seen"), "x"])]);
    assert!(per_filter.abs() <= 2.0, "{per_filter:.2} bytes per filter left behind");
}

/// A full cache (maxmemory reached) with `policy`.
fn full_cache(policy: &str) -> (Server, Conn) {
    let server = Server::start();
    let mut c = server.conn();
    let base = c.used_memory();
    c.ok(&["CONFIG", "SET", "maxmemory-policy", policy]);
    c.ok(&["CONFIG", "SET", "maxmemory", &(base + 4 * 1024 * 1024).to_string()]);
    (server, c)
}

#[test]
fn with_an_evicting_policy_new_filters_evict_old_ones_instead_of_failing() {
    let (_server, mut c) = full_cache("allkeys-lru");
    // 1,000 filters of ~12 KB: three times maxmemory's headroom.
    for i in 0..1000 {
        let v = c.cmd(&["BF.RESERVE", &format!("day:{i}"), "0.01", "10000"]);
        assert!(v.is_ok(), "BF.RESERVE day:{i} on a full allkeys-lru cache -> {v:?}");
        let v = c.cmd(&["BF.ADD", &format!("auto:{i}"), "x"]);
        assert_eq!(v, Value::Int(1), "BF.ADD auto:{i} on a full allkeys-lru cache");
    }
    let evicted: i64 = c.info_field("stats", "evicted_keys").unwrap().parse().unwrap();
    assert!(evicted > 0, "nothing was evicted");
    assert!(c.int(&["DBSIZE"]) < 2000);
}

#[test]
fn with_an_evicting_policy_a_scaling_filter_still_adds_its_next_layer() {
    let (_server, mut c) = full_cache("allkeys-lru");
    c.ok(&["BF.RESERVE", "crawler", "0.01", "1000", "EXPANSION", "2"]);
    // Fill the cache with other filters, touching `crawler` so LRU keeps it.
    for i in 0..600 {
        c.ok(&["BF.RESERVE", &format!("other:{i}"), "0.01", "10000"]);
        c.cmd(&["BF.EXISTS", "crawler", "x"]);
    }
    let items = items("url", 5000);
    for v in c.madd("crawler", &items) {
        assert!(matches!(v, Value::Int(0 | 1)), "MADD on a full allkeys-lru cache -> {v:?}");
    }
    assert!(c.bf_info("crawler").filters >= 3);
    c.assert_all_present("crawler", &items);
}

#[test]
fn with_an_evicting_policy_an_allocation_larger_than_maxmemory_is_refused() {
    let (_server, mut c) = full_cache("allkeys-lru");
    let max: i64 = c.config_get("maxmemory").unwrap().parse().unwrap();
    // ~60 MB of bits: more than maxmemory itself, so no eviction could make room.
    let e = c.err(&["BF.RESERVE", "huge", "0.01", "50000000"]);
    assert!(e.starts_with("OOM"), "{e}");
    assert!(!c.exists_key("huge"));
    assert!(c.used_memory() < max + 1024 * 1024);
}

#[test]
fn with_noeviction_a_create_that_does_not_fit_is_refused() {
    let (_server, mut c) = full_cache("noeviction");
    let mut refused = None;
    for i in 0..1000 {
        let v = c.cmd(&["BF.RESERVE", &format!("day:{i}"), "0.01", "10000"]);
        if v.is_err() {
            refused = Some((i, v.err_text().to_string()));
            break;
        }
    }
    let (i, e) = refused.expect("noeviction never refused a filter past maxmemory");
    assert!(e.starts_with("OOM"), "{e}");
    assert!(!c.exists_key(&format!("day:{i}")));
    assert_eq!(c.info_field("stats", "evicted_keys").as_deref(), Some("0"));
}

/// A DUMP payload of a filter of about 2.4 MB (error 0.01, capacity 2,000,000).
fn big_payload(c: &mut Conn) -> Vec<u8> {
    c.ok(&["BF.RESERVE", "src", "0.01", "2000000"]);
    c.madd("src", &items("p", 1000));
    c.cmd(&["DUMP", "src"]).as_bytes().to_vec()
}

#[test]
fn restore_from_a_client_obeys_max_filter_bytes() {
    let server = Server::start();
    let mut c = server.conn();
    let payload = big_payload(&mut c);
    c.ok(&["CONFIG", "SET", "bf.max-filter-bytes", "1mb"]);
    let v = c.cmd(&[&b"RESTORE"[..], b"copy", b"0", &payload]);
    assert!(v.is_err(), "RESTORE of a 2.4 MB filter under a 1 MB limit -> {v:?}");
    assert!(!c.exists_key("copy"));
    assert!(server.log_text().contains("bf.max-filter-bytes"), "the log does not say why");
    c.ok(&["CONFIG", "SET", "bf.max-filter-bytes", "4mb"]);
    c.ok(&[&b"RESTORE"[..], b"copy", b"0", &payload]);
    assert_eq!(c.digest("copy"), c.digest("src"));
}

#[test]
fn restore_from_a_client_obeys_maxmemory_under_noeviction() {
    let server = Server::start();
    let mut c = server.conn();
    let payload = big_payload(&mut c);
    c.int(&["DEL", "src"]);
    let base = c.used_memory();
    c.ok(&["CONFIG", "SET", "maxmemory", &(base + 1024 * 1024).to_string()]);
    let v = c.cmd(&[&b"RESTORE"[..], b"copy", b"0", &payload]);
    assert!(v.is_err(), "RESTORE of 2.4 MB with 1 MB of headroom -> {v:?}");
    assert!(!c.exists_key("copy"));
}

#[test]
fn a_server_starts_on_its_own_data_whatever_the_limits() {
    let dir = std::sync::Arc::new(TempDir::new("own-data"));
    let digest = {
        let server = Server::start_in(dir.clone(), ServerOpts::new());
        let mut c = server.conn();
        c.ok(&["BF.RESERVE", "big", "0.01", "2000000"]);
        c.madd("big", &items("q", 1000));
        let d = c.digest("big");
        server.shutdown(&["SAVE"]);
        d
    };
    let server = Server::start_in(dir, ServerOpts::new().module_args(&["max-filter-bytes", "1mb"]));
    let mut c = server.conn();
    assert_eq!(c.digest("big"), digest);
    c.assert_all_present("big", &items("q", 1000));
}

const NOT_RESTORING: &str = "ERR BF.LOADCHUNK data chunks go only into a filter that its BF.LOADCHUNK header created and that has taken no add since; this key holds another filter";

#[test]
fn a_data_chunk_never_overwrites_a_filter_its_header_did_not_make() {
    let server = Server::start();
    let mut c = server.conn();
    c.ok(&["BF.RESERVE", "src", "0.01", "1000"]);
    c.madd("src", &items("s", 500));
    let dump = c.scandump_all("src");
    c.ok(&["BF.RESERVE", "dst", "0.01", "1000"]);
    let mine = items("d", 500);
    c.madd("dst", &mine);
    let before = c.digest("dst");
    // The copy loop of docs/moving-filters.md against an existing target: the header is
    // refused, and so is every data chunk — the target keeps its own bits and answers for its
    // own items.
    for (iter, data) in &dump {
        let v = c.cmd(&[&b"BF.LOADCHUNK"[..], b"dst", iter.to_string().as_bytes(), data]);
        assert!(v.is_err(), "LOADCHUNK dst {iter} was accepted");
        if *iter != 1 {
            assert_eq!(v.err_text(), NOT_RESTORING);
        }
    }
    assert_eq!(c.digest("dst"), before);
    c.assert_all_present("dst", &mine);
}

#[test]
fn a_data_chunk_goes_into_a_restored_filter_until_it_takes_an_add() {
    let server = Server::start();
    let mut c = server.conn();
    c.ok(&["BF.RESERVE", "src", "0.01", "1000"]);
    c.madd("src", &items("s", 500));
    let dump = c.scandump_all("src");
    let (header, chunks) = dump.split_first().unwrap();
    c.ok(&[&b"BF.LOADCHUNK"[..], b"copy", b"1", &header.1]);
    for (iter, data) in chunks {
        c.ok(&[&b"BF.LOADCHUNK"[..], b"copy", iter.to_string().as_bytes(), data]);
    }
    assert_eq!(c.digest("copy"), c.digest("src"));
    // Sending a chunk again is still part of the restore.
    let (iter, data) = &chunks[0];
    c.ok(&[&b"BF.LOADCHUNK"[..], b"copy", iter.to_string().as_bytes(), data]);
    // An add ends the restore: chunks are refused from then on.
    c.cmd(&["BF.ADD", "copy", "new"]);
    let after_add = c.digest("copy");
    let v = c.cmd(&[&b"BF.LOADCHUNK"[..], b"copy", iter.to_string().as_bytes(), data]);
    assert_eq!(v.err_text(), NOT_RESTORING);
    assert_eq!(c.digest("copy"), after_add);
}

#[test]
fn a_replica_loads_its_primary_asynchronously_with_swapdb() {
    let p = Server::start_with(
        ServerOpts::new().arg("repl-diskless-sync", "yes").arg("repl-diskless-sync-delay", "0"),
    );
    let mut pc = p.conn();
    pc.ok(&["BF.RESERVE", "f", "0.01", "1000"]);
    pc.madd("f", &items("r", 800));
    let (r, mut rc) =
        Server::start_replica(p.port, None, ServerOpts::new().arg("repl-diskless-load", "swapdb"));
    pc.wait_acked();
    assert_eq!(rc.digest("f"), pc.digest("f"));
    let log = r.log_text();
    assert!(
        !log.contains("Skipping diskless-load"),
        "the replica fell back to a disk load:\n{log}"
    );
    assert!(log.contains("to parser"), "the replica did not load from the socket:\n{log}");
}

/// A filter created by ADD, MADD or INSERT replicates as its header (every parameter and the
/// seed) and then the command itself: a replica with other defaults still ends with the same
/// filter, and INSERT's creation options are not applied twice.
#[test]
fn auto_created_filters_replicate_exactly_to_a_replica_with_other_defaults() {
    let p = Server::start_with(ServerOpts::new().arg("repl-diskless-sync-delay", "0"));
    let mut pc = p.conn();
    let (_r, mut rc) = Server::start_replica(
        p.port,
        None,
        ServerOpts::new().module_args(&[
            "error-rate",
            "0.2",
            "initial-size",
            "7",
            "expansion-factor",
            "5",
        ]),
    );
    pc.cmd(&["BF.ADD", "add", "a"]);
    pc.madd("madd", &items("m", 300));
    pc.cmd(&[
        "BF.INSERT",
        "ins",
        "CAPACITY",
        "30",
        "ERROR",
        "0.001",
        "EXPANSION",
        "4",
        "ITEMS",
        "x",
        "y",
    ]);
    pc.cmd(&["BF.INSERT", "ins", "CAPACITY", "99", "ITEMS", "z"]);
    pc.wait_acked();
    for key in ["add", "madd", "ins"] {
        assert_eq!(rc.digest(key), pc.digest(key), "{key}");
        assert_eq!(rc.bf_info(key), pc.bf_info(key), "{key}");
    }
    assert_eq!(rc.bf_info("ins").capacity, 30);
}
