//! Redis Cluster on loopback: three primaries with one replica each, created by
//! `redis-cli --cluster create`, filters spread over every shard through a cluster-aware client.
//! Replicas hold the primaries' exact bits; a manual failover of every shard loses nothing;
//! resharding a slot with MIGRATE (the type's DUMP/RESTORE) moves filters while the client
//! follows ASK and then MOVED.

mod common;
use common::cluster::*;
use common::*;

/// A filter written through the cluster client, with every item added to it.
struct Filter {
    key: String,
    items: Vec<String>,
    /// BF.CARD after the writes: the number of items reported new.
    card: i64,
}

/// Count of 1 answers in a MADD / INSERT reply.
fn ones(v: &Value) -> i64 {
    v.as_array().iter().map(|x| x.as_bit()).sum()
}

/// Creates `n` filters named `<prefix><i>` through every creating command in turn:
/// BF.RESERVE then BF.MADD (scaling past its first layer), BF.ADD on a missing key (auto-create
/// with the defaults), BF.INSERT with its own parameters.
fn fill(client: &mut ClusterClient, prefix: &str, n: usize) -> Vec<Filter> {
    let mut out = Vec::new();
    for i in 0..n {
        let key = format!("{}{}", prefix, i);
        let (items, card) = match i % 3 {
            0 => {
                let its = items(&key, 60);
                assert!(client.cmd(&["BF.RESERVE", &key, "0.01", "20", "EXPANSION", "2"]).is_ok());
                let mut args = vec!["BF.MADD", key.as_str()];
                args.extend(its.iter().map(|s| s.as_str()));
                let card = ones(&client.cmd(&args));
                (its, card)
            }
            1 => {
                let its = items(&key, 50);
                let card = its.iter().map(|it| client.cmd(&["BF.ADD", &key, it]).as_bit()).sum();
                (its, card)
            }
            _ => {
                let its = items(&key, 60);
                let mut args = vec![
                    "BF.INSERT",
                    key.as_str(),
                    "CAPACITY",
                    "30",
                    "ERROR",
                    "0.001",
                    "EXPANSION",
                    "3",
                    "ITEMS",
                ];
                args.extend(its.iter().map(|s| s.as_str()));
                let card = ones(&client.cmd(&args));
                (its, card)
            }
        };
        assert_eq!(client.cmd(&["BF.CARD", &key]).as_int(), card, "BF.CARD {}", key);
        out.push(Filter { key, items, card });
    }
    out
}

/// Asserts, through the client, that every item is present and every BF.CARD unchanged.
fn assert_all_present(client: &mut ClusterClient, filters: &[Filter], what: &str) {
    for f in filters {
        let mut args = vec!["BF.MEXISTS", f.key.as_str()];
        args.extend(f.items.iter().map(|s| s.as_str()));
        let v = client.cmd(&args);
        for (item, bit) in f.items.iter().zip(v.as_array()) {
            assert_eq!(bit.as_bit(), 1, "{}: item {:?} of {:?} is missing", what, item, f.key);
        }
        assert_eq!(
            client.cmd(&["BF.CARD", &f.key]).as_int(),
            f.card,
            "{}: BF.CARD {}",
            what,
            f.key
        );
    }
}

/// DEBUG DIGEST-VALUE of `key` on the node at `port` (DEBUG has no key, so no redirection).
fn digest_on(port: u16, key: &str) -> String {
    Conn::connect(port).digest(key)
}

const NO_KEY_DIGEST: &str = "0000000000000000000000000000000000000000";

/// Once every replica has caught up, each filter's digest on its replica equals its primary's.
/// Returns the digests by key.
fn assert_replicas_match(topo: &Topology, filters: &[Filter], what: &str) -> Vec<String> {
    for s in topo.shards() {
        s.wait_replicated();
    }
    filters
        .iter()
        .map(|f| {
            let shard = topo.shard_of(key_slot(f.key.as_bytes()));
            let d = digest_on(shard.primary.port, &f.key);
            assert_ne!(
                d, NO_KEY_DIGEST,
                "{}: primary {} lacks {}",
                what, shard.primary.port, f.key
            );
            assert_eq!(
                digest_on(shard.replicas[0].port, &f.key),
                d,
                "{}: replica digest of {}",
                what,
                f.key
            );
            d
        })
        .collect()
}

#[test]
fn crc16_key_slot_and_hash_tags_follow_the_cluster_spec() {
    assert_eq!(crc16(b"123456789"), 0x31C3);
    assert_eq!(key_slot(b"foo"), 12182);
    assert_eq!(key_slot(b""), 0);
    // the examples of the cluster specification
    assert_eq!(key_slot(b"{user1000}.following"), key_slot(b"user1000"));
    assert_eq!(key_slot(b"{user1000}.followers"), key_slot(b"user1000"));
    assert_eq!(key_slot(b"foo{}{bar}"), crc16(b"foo{}{bar}") % 16384);
    assert_eq!(key_slot(b"foo{{bar}}zap"), crc16(b"{bar") % 16384);
    assert_eq!(key_slot(b"foo{bar}{zap}"), key_slot(b"bar"));
}

#[test]
fn filters_on_every_shard_survive_a_failover_of_each_primary() {
    let cluster = Cluster::start(3, 1);
    let topo = cluster.wait_settled("the cluster");
    let mut client = ClusterClient::new(&cluster.ports());
    let filters = fill(&mut client, "bf:", 72);
    let items_total: usize = filters.iter().map(|f| f.items.len()).sum();
    assert!(items_total >= 4000, "{} items", items_total);

    // The client's slot function is the server's, and each key lives where the map says.
    let mut any = Conn::connect(cluster.ports()[0]);
    for f in &filters {
        let slot = key_slot(f.key.as_bytes());
        assert_eq!(any.int(&["CLUSTER", "KEYSLOT", &f.key]), slot as i64, "slot of {}", f.key);
        let owner = topo.shard_of(slot).primary.port;
        assert!(
            Conn::connect(owner).exists_key(&f.key),
            "{} not on its slot owner {}",
            f.key,
            owner
        );
    }
    for tricky in ["foo{}{bar}", "foo{{bar}}zap", "foo{bar}{zap}", "{user1000}.following"] {
        assert_eq!(
            any.int(&["CLUSTER", "KEYSLOT", tricky]),
            key_slot(tricky.as_bytes()) as i64,
            "slot of {}",
            tricky
        );
    }
    // Every shard got some of them.
    let mut total = 0;
    for s in topo.shards() {
        let n = Conn::connect(s.primary.port).int(&["DBSIZE"]);
        assert!(n > 0, "primary {} holds no filter", s.primary.port);
        total += n;
    }
    assert_eq!(total, filters.len() as i64);

    // The servers route BF commands by their key specs: a node that does not own the key
    // redirects, a replica serves reads only after READONLY.
    let f0 = &filters[0].key;
    let slot0 = key_slot(f0.as_bytes());
    let shard0 = topo.shard_of(slot0);
    let other = topo.shards().into_iter().find(|s| !s.owns(slot0)).unwrap().primary.port;
    let moved0 = format!("MOVED {} 127.0.0.1:{}", slot0, shard0.primary.port);
    assert_eq!(Conn::connect(other).err(&["BF.ADD", f0, "x"]), moved0);
    assert_eq!(Conn::connect(other).err(&["BF.EXISTS", f0, "x"]), moved0);
    let mut rc = Conn::connect(shard0.replicas[0].port);
    assert_eq!(rc.err(&["BF.MEXISTS", f0, &filters[0].items[0]]), moved0);
    rc.ok(&["READONLY"]);
    shard0.wait_replicated(); // replication is asynchronous
    assert_eq!(rc.mexists(f0, &filters[0].items[..3]), vec![1, 1, 1]);
    assert!(rc.err(&["BF.ADD", f0, "x"]).starts_with("MOVED "), "a replica refuses writes");
    for cmd in [vec!["BF.ADD", f0, "x"], vec!["BF.INSERT", f0, "CAPACITY", "10", "ITEMS", "a", "b"]]
    {
        let mut getkeys = vec!["COMMAND", "GETKEYS"];
        getkeys.extend(cmd.iter().copied());
        assert_eq!(
            any.cmd(&getkeys),
            Value::Array(Some(vec![Value::Bulk(Some(f0.as_bytes().to_vec()))])),
            "{:?}",
            cmd
        );
    }

    // Replicas hold the primaries' exact bits.
    let digests = assert_replicas_match(&topo, &filters, "before failover");

    // Promote every replica in turn with a manual failover.
    for shard in topo.shards() {
        let (old, new) = (shard.primary.clone(), shard.replicas[0].clone());
        Conn::connect(new.port).ok(&["CLUSTER", "FAILOVER"]);
        let t = poll_until(&format!("{} to take over from {}", new.port, old.port), || {
            let t = cluster.wait_settled("the cluster after a failover");
            let (n, o) = (t.node(new.port), t.node(old.port));
            if n.primary && n.slots == old.slots && o.replicates.as_deref() == Some(new.id.as_str())
            {
                Ok(t)
            } else {
                Err(format!("{:?}", t))
            }
        });
        assert!(t.node(old.port).slots.is_empty());
    }
    let after = cluster.wait_settled("the cluster after every failover");
    for s in after.shards() {
        assert!(
            topo.shards().iter().any(|o| o.replicas[0].port == s.primary.port),
            "{} was not a replica",
            s.primary.port
        );
    }

    // Nothing was lost: the client follows MOVED from its stale map to the new primaries.
    let moved = client.moved;
    assert_all_present(&mut client, &filters, "after failover");
    assert!(client.moved > moved, "the stale slot map was never corrected by a MOVED");
    for (f, d) in filters.iter().zip(&digests) {
        let owner = after.shard_of(key_slot(f.key.as_bytes())).primary.port;
        assert_eq!(
            &digest_on(owner, &f.key),
            d,
            "digest of {} on its new primary {}",
            f.key,
            owner
        );
    }

    // The promoted primaries take writes, and their replicas (the old primaries) get them.
    let mut more_filters = Vec::new();
    for f in &filters {
        let more = items(&format!("{}:more", f.key), 20);
        let mut args = vec!["BF.MADD", f.key.as_str()];
        args.extend(more.iter().map(|s| s.as_str()));
        let card = f.card + ones(&client.cmd(&args));
        more_filters.push(Filter {
            key: f.key.clone(),
            items: f.items.iter().chain(&more).cloned().collect(),
            card,
        });
    }
    let new_digests =
        assert_replicas_match(&after, &more_filters, "after failover and more writes");
    assert!(new_digests.iter().zip(&digests).all(|(a, b)| a != b), "every filter changed");
    assert_all_present(&mut client, &more_filters, "after more writes");
    for f in &more_filters {
        let replica = after.shard_of(key_slot(f.key.as_bytes())).replicas[0].port;
        let mut rc = Conn::connect(replica);
        rc.ok(&["READONLY"]);
        rc.assert_all_present(&f.key, &f.items);
        assert_eq!(rc.bf_card(&f.key), f.card, "BF.CARD of {} on replica {}", f.key, replica);
    }
}

#[test]
fn resharding_a_slot_with_migrate_moves_filters_and_the_client_follows_ask_then_moved() {
    let cluster = Cluster::start(3, 1);
    let topo = cluster.wait_settled("the cluster");
    let mut client = ClusterClient::new(&cluster.ports());
    // A hash tag puts every filter in one slot.
    let filters = fill(&mut client, "{moving}:", 9);
    let slot = key_slot(b"moving");
    assert!(filters.iter().all(|f| key_slot(f.key.as_bytes()) == slot));
    let src = topo.shard_of(slot);
    let dst = topo.shards().into_iter().find(|s| !s.owns(slot)).unwrap();
    let third = topo
        .shards()
        .into_iter()
        .find(|s| !s.owns(slot) && s.primary.port != dst.primary.port)
        .unwrap();
    let digests: Vec<String> =
        filters.iter().map(|f| digest_on(src.primary.port, &f.key)).collect();
    let count_in_slot =
        |port: u16| Conn::connect(port).int(&["CLUSTER", "COUNTKEYSINSLOT", &slot.to_string()]);
    assert_eq!(count_in_slot(src.primary.port), 9);

    // Open the migration and move the first four filters.
    let (mut sc, mut dc) = (Conn::connect(src.primary.port), Conn::connect(dst.primary.port));
    dc.ok(&["CLUSTER", "SETSLOT", &slot.to_string(), "IMPORTING", &src.primary.id]);
    sc.ok(&["CLUSTER", "SETSLOT", &slot.to_string(), "MIGRATING", &dst.primary.id]);
    let migrate = |c: &mut Conn, keys: &[Filter]| {
        let port = dst.primary.port.to_string();
        let mut args = vec!["MIGRATE", "127.0.0.1", port.as_str(), "", "0", "10000", "KEYS"];
        args.extend(keys.iter().map(|f| f.key.as_str()));
        c.ok(&args);
    };
    migrate(&mut sc, &filters[..4]);
    assert_eq!((count_in_slot(src.primary.port), count_in_slot(dst.primary.port)), (5, 4));

    // Mid-migration: moved filters are reached through ASK, the others still on the source.
    let asked = client.asked;
    assert_all_present(&mut client, &filters[..4], "moved, slot migrating");
    assert_eq!(client.asked, asked + 8, "one ASK per MEXISTS and per CARD of a moved filter");
    assert_all_present(&mut client, &filters[4..], "not yet moved");
    assert_eq!(client.asked, asked + 8, "filters still on the source need no ASK");
    // A write during the migration: a new filter in the slot is created on the target.
    assert_eq!(client.cmd(&["BF.ADD", "{moving}:new", "x"]).as_bit(), 1);
    assert_eq!(count_in_slot(dst.primary.port), 5);

    // Move the rest and hand the slot over (target, source, then the third primary).
    migrate(&mut sc, &filters[4..]);
    assert_eq!((count_in_slot(src.primary.port), count_in_slot(dst.primary.port)), (0, 10));
    for c in [&mut dc, &mut sc, &mut Conn::connect(third.primary.port)] {
        c.ok(&["CLUSTER", "SETSLOT", &slot.to_string(), "NODE", &dst.primary.id]);
    }
    let after = cluster.wait_settled("the cluster after resharding");
    assert_eq!(after.shard_of(slot).primary.port, dst.primary.port);

    // The client's map is stale until a MOVED; then every filter answers as before.
    let moved = client.moved;
    assert_all_present(&mut client, &filters, "after resharding");
    assert!(client.moved > moved, "the stale slot map was never corrected by a MOVED");
    for (f, d) in filters.iter().zip(&digests) {
        assert_eq!(&digest_on(dst.primary.port, &f.key), d, "digest of {} after MIGRATE", f.key);
        assert_eq!(
            digest_on(src.primary.port, &f.key),
            NO_KEY_DIGEST,
            "{} left on the source",
            f.key
        );
    }
    assert_eq!(client.cmd(&["BF.EXISTS", "{moving}:new", "x"]).as_bit(), 1);

    // Replicas followed: the target's replica holds the filters, the source's no longer does.
    let _ = assert_replicas_match(&after, &filters, "after resharding");
    src.wait_replicated();
    assert_eq!(count_in_slot(src.replicas[0].port), 0);
    assert_eq!(count_in_slot(dst.replicas[0].port), 10);
}
