//! Redis Cluster on loopback for the integration tests: start nodes, join them with
//! `redis-cli --cluster create`, read the topology, and a small cluster-aware client.
//!
//! How a cluster client finds a key (the part [`ClusterClient`] implements):
//! - The key space is 16384 slots; a key's slot is `CRC16(key) mod 16384`, with CRC16 the XMODEM
//!   variant (polynomial 0x1021, initial value 0, no reflection, no final xor).
//! - Hash tags: when the key holds a `{` followed later by a `}` with at least one byte between
//!   them, only the bytes between the first `{` and the first `}` after it are hashed, so
//!   `{user1}:a` and `{user1}:b` share a slot (and a node).
//! - Every primary owns some slot ranges; `CLUSTER SLOTS` lists them with their primary first.
//! - A node asked about a slot it does not own answers `MOVED <slot> <host:port>`: the map is
//!   stale (after a failover or resharding), so refresh it and go there.
//! - While a slot migrates, its old owner answers `ASK <slot> <host:port>` for keys it no longer
//!   holds: send `ASKING` then the command to that node once, without changing the map.
//!
//! Every command this module's tests send (all of `BF.*`) has its key at argv[1], which is
//! what [`ClusterClient::cmd`] routes on.
//!
//! Environment: `SCALEBLOOM_REDIS_CLI` names the `redis-cli` used for `--cluster create`
//! (default `redis-cli` from PATH; Debian's `redis-tools` works against Valkey too).

use std::collections::HashMap;
use std::process::Command;

use super::{Conn, Server, ServerOpts, Value, poll_until};

/// Number of hash slots of a Redis Cluster.
pub const SLOTS: usize = 16384;

/// CRC16/XMODEM, the checksum Redis Cluster hashes keys with.
pub fn crc16(data: &[u8]) -> u16 {
    let mut crc: u16 = 0;
    for &b in data {
        crc ^= (b as u16) << 8;
        for _ in 0..8 {
            crc = if crc & 0x8000 != 0 { (crc << 1) ^ 0x1021 } else { crc << 1 };
        }
    }
    crc
}

/// The part of a key that is hashed: the hash tag when there is a non-empty one.
pub fn hash_tag(key: &[u8]) -> &[u8] {
    if let Some(open) = key.iter().position(|&b| b == b'{') {
        if let Some(len) = key[open + 1..].iter().position(|&b| b == b'}') {
            if len > 0 {
                return &key[open + 1..open + 1 + len];
            }
        }
    }
    key
}

/// The hash slot of a key.
pub fn key_slot(key: &[u8]) -> u16 {
    crc16(hash_tag(key)) % SLOTS as u16
}

// ---------------------------------------------------------------------------------------------
// Topology, as CLUSTER NODES reports it
// ---------------------------------------------------------------------------------------------

/// One node in a `CLUSTER NODES` view.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct NodeView {
    pub id: String,
    pub port: u16,
    pub primary: bool,
    /// The id of its primary, for a replica.
    pub replicates: Option<String>,
    /// Owned slot ranges, inclusive, sorted.
    pub slots: Vec<(u16, u16)>,
    /// Flags other than `myself`, `master`, `slave` (e.g. `fail?`, `handshake`), and a link state
    /// other than `connected`: anything here means the view is not settled.
    pub trouble: Vec<String>,
    /// Whether the node line carried a migrating or importing slot (`[slot->-id]`, `[slot-<-id]`).
    pub open_slot: bool,
}

/// A primary with its slots and replicas.
#[derive(Clone, Debug)]
pub struct Shard {
    pub primary: NodeView,
    pub replicas: Vec<NodeView>,
}

impl Shard {
    pub fn owns(&self, slot: u16) -> bool {
        self.primary.slots.iter().any(|&(a, b)| (a..=b).contains(&slot))
    }
}

/// The cluster as one node sees it.
#[derive(Clone, Debug)]
pub struct Topology {
    pub nodes: Vec<NodeView>,
}

impl Topology {
    /// Parses the text of `CLUSTER NODES`.
    pub fn parse(text: &str) -> Topology {
        let mut nodes = Vec::new();
        for line in text.lines().filter(|l| !l.trim().is_empty()) {
            let f: Vec<&str> = line.split_whitespace().collect();
            assert!(f.len() >= 8, "short CLUSTER NODES line {:?}", line);
            // 127.0.0.1:7000@17000[,hostname]
            let addr = f[1].split(['@', ',']).next().unwrap();
            let port: u16 = addr
                .rsplit(':')
                .next()
                .unwrap()
                .parse()
                .unwrap_or_else(|_| panic!("bad address in {:?}", line));
            let flags: Vec<&str> = f[2].split(',').collect();
            let mut trouble: Vec<String> = flags
                .iter()
                .filter(|fl| !matches!(**fl, "myself" | "master" | "slave" | "nofailover"))
                .map(|s| s.to_string())
                .collect();
            if f[7] != "connected" {
                trouble.push(format!("link {}", f[7]));
            }
            let mut slots = Vec::new();
            let mut open_slot = false;
            for s in &f[8..] {
                if s.starts_with('[') {
                    open_slot = true;
                    continue;
                }
                let (a, b) = s.split_once('-').unwrap_or((s, s));
                slots.push((a.parse().unwrap(), b.parse().unwrap()));
            }
            slots.sort();
            nodes.push(NodeView {
                id: f[0].to_string(),
                port,
                primary: flags.contains(&"master"),
                replicates: (f[3] != "-").then(|| f[3].to_string()),
                slots,
                trouble,
                open_slot,
            });
        }
        nodes.sort();
        Topology { nodes }
    }

    /// `CLUSTER NODES` of the node at `port`.
    pub fn of(port: u16) -> Topology {
        let v = Conn::connect(port).cmd(&["CLUSTER", "NODES"]);
        Topology::parse(v.as_str())
    }

    /// Primaries that own slots, each with its replicas, in port order.
    pub fn shards(&self) -> Vec<Shard> {
        self.nodes
            .iter()
            .filter(|n| n.primary && !n.slots.is_empty())
            .map(|p| Shard {
                primary: p.clone(),
                replicas: self
                    .nodes
                    .iter()
                    .filter(|r| r.replicates.as_deref() == Some(&p.id))
                    .cloned()
                    .collect(),
            })
            .collect()
    }

    /// The shard owning `slot`.
    pub fn shard_of(&self, slot: u16) -> Shard {
        self.shards()
            .into_iter()
            .find(|s| s.owns(slot))
            .unwrap_or_else(|| panic!("no shard owns slot {}: {:?}", slot, self))
    }

    pub fn node(&self, port: u16) -> &NodeView {
        self.nodes
            .iter()
            .find(|n| n.port == port)
            .unwrap_or_else(|| panic!("no node on port {}", port))
    }

    /// Whether this view describes a settled cluster of `primaries` shards with `replicas`
    /// replicas each, covering all slots, nothing migrating, nobody failing.
    pub fn is_settled(&self, primaries: usize, replicas: usize) -> bool {
        let shards = self.shards();
        let covered: usize =
            shards.iter().flat_map(|s| &s.primary.slots).map(|&(a, b)| (b - a) as usize + 1).sum();
        self.nodes.iter().all(|n| n.trouble.is_empty() && !n.open_slot)
            && shards.len() == primaries
            && shards.iter().all(|s| s.replicas.len() == replicas)
            && self.nodes.len() == primaries * (1 + replicas)
            && covered == SLOTS
    }
}

// ---------------------------------------------------------------------------------------------
// A cluster of servers
// ---------------------------------------------------------------------------------------------

/// The `redis-cli` binary used to create clusters.
pub fn redis_cli() -> String {
    std::env::var("SCALEBLOOM_REDIS_CLI").unwrap_or_else(|_| "redis-cli".to_string())
}

/// A running cluster; every server is shut down when it drops (also when a test panics).
pub struct Cluster {
    pub servers: Vec<Server>,
    primaries: usize,
    replicas: usize,
}

impl Cluster {
    /// Starts `primaries × (1 + replicas)` nodes with the module and joins them with
    /// `redis-cli --cluster create … --cluster-replicas <replicas>`, then waits until every node
    /// reports the same settled topology.
    pub fn start(primaries: usize, replicas: usize) -> Cluster {
        let servers: Vec<Server> = (0..primaries * (1 + replicas))
            .map(|_| {
                Server::start_with(ServerOpts::new().cluster().arg("repl-diskless-sync-delay", "0"))
            })
            .collect();
        let mut cmd = Command::new(redis_cli());
        cmd.arg("--cluster").arg("create");
        for s in &servers {
            cmd.arg(format!("127.0.0.1:{}", s.port));
        }
        cmd.args(["--cluster-replicas", &replicas.to_string(), "--cluster-yes"]);
        let out = cmd.output().unwrap_or_else(|e| {
            panic!(
                "cannot run {:?} (install Debian's redis-tools or set SCALEBLOOM_REDIS_CLI): {}",
                redis_cli(),
                e
            )
        });
        let text = format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(
            out.status.success() && text.contains("All 16384 slots covered"),
            "redis-cli --cluster create failed ({}):\n{}",
            out.status,
            text
        );
        let cluster = Cluster { servers, primaries, replicas };
        cluster.wait_settled("the new cluster");
        cluster
    }

    pub fn ports(&self) -> Vec<u16> {
        self.servers.iter().map(|s| s.port).collect()
    }

    pub fn server(&self, port: u16) -> &Server {
        self.servers
            .iter()
            .find(|s| s.port == port)
            .unwrap_or_else(|| panic!("no server on port {}", port))
    }

    /// Polls until every node answers `cluster_state:ok`, every node's `CLUSTER NODES` describes
    /// the same settled cluster, and every replica's link to its primary is up. Returns that view.
    pub fn wait_settled(&self, what: &str) -> Topology {
        poll_until(&format!("{} to settle", what), || {
            let views: Vec<Topology> = self.ports().into_iter().map(Topology::of).collect();
            let first = &views[0];
            if let Some(v) = views.iter().find(|v| v.nodes != first.nodes) {
                return Err(format!("nodes disagree: {:?} vs {:?}", first, v));
            }
            if !first.is_settled(self.primaries, self.replicas) {
                return Err(format!("not settled: {:?}", first));
            }
            for p in self.ports() {
                let state = Conn::connect(p).info_field_cluster("cluster_state");
                if state.as_deref() != Some("ok") {
                    return Err(format!("node {} has cluster_state {:?}", p, state));
                }
            }
            for n in first.nodes.iter().filter(|n| !n.primary) {
                let link = Conn::connect(n.port).info_field("replication", "master_link_status");
                if link.as_deref() != Some("up") {
                    return Err(format!("replica {} has master_link_status {:?}", n.port, link));
                }
            }
            Ok(first.clone())
        })
    }
}

impl Shard {
    /// Polls until every replica of this shard has applied the primary's replication stream up to
    /// the primary's offset at the time of the call.
    ///
    /// Not `WAIT`: WAIT only waits for the writes made on its own connection, and the writes of a
    /// test come from several (the cluster client's, MIGRATE's link to the target node). And not
    /// just `master_link_status:up` either: Valkey starts streaming to a freshly synced replica only
    /// after its first `REPLCONF ACK`, up to a second later.
    pub fn wait_replicated(&self) {
        let mut pc = Conn::connect(self.primary.port);
        let offset = |c: &mut Conn, field: &str| -> i64 {
            let v = c.info_field("replication", field);
            v.as_deref()
                .and_then(|s| s.parse().ok())
                .unwrap_or_else(|| panic!("no {} in INFO replication: {:?}", field, v))
        };
        let target = offset(&mut pc, "master_repl_offset");
        for r in &self.replicas {
            let mut rc = Conn::connect(r.port);
            poll_until(
                &format!("replica {} to reach offset {} of {}", r.port, target, self.primary.port),
                || {
                    let at = offset(&mut rc, "slave_repl_offset");
                    if at >= target { Ok(()) } else { Err(format!("at offset {}", at)) }
                },
            );
        }
    }
}

impl Conn {
    /// A field of `CLUSTER INFO`.
    pub fn info_field_cluster(&mut self, field: &str) -> Option<String> {
        let v = self.cmd(&["CLUSTER", "INFO"]);
        let prefix = format!("{}:", field);
        v.as_str().lines().find_map(|l| l.strip_prefix(&prefix).map(|s| s.trim().to_string()))
    }
}

// ---------------------------------------------------------------------------------------------
// Cluster-aware client
// ---------------------------------------------------------------------------------------------

/// Redirections a client follows for one command before giving up: a settled cluster needs at
/// most two (MOVED to the new owner, ASK during a migration).
const MAX_REDIRECTS: usize = 16;

/// A client that routes every command to the primary owning its key's slot.
pub struct ClusterClient {
    seeds: Vec<u16>,
    /// Slot → port of its primary (0: unknown).
    owner: Vec<u16>,
    conns: HashMap<u16, Conn>,
    /// MOVED redirections followed so far.
    pub moved: usize,
    /// ASK redirections followed so far.
    pub asked: usize,
}

impl ClusterClient {
    /// A client that learns the slot map from the first seed node that answers.
    pub fn new(seeds: &[u16]) -> ClusterClient {
        let mut c = ClusterClient {
            seeds: seeds.to_vec(),
            owner: vec![0; SLOTS],
            conns: HashMap::new(),
            moved: 0,
            asked: 0,
        };
        c.refresh();
        c
    }

    fn conn(&mut self, port: u16) -> &mut Conn {
        self.conns.entry(port).or_insert_with(|| Conn::connect(port))
    }

    /// Reloads the slot map from `CLUSTER SLOTS` (each entry: start, end, primary [ip, port, id],
    /// then replicas).
    pub fn refresh(&mut self) {
        let seeds = self.seeds.clone();
        for port in seeds {
            let v = self.conn(port).cmd(&["CLUSTER", "SLOTS"]);
            let Value::Array(Some(ranges)) = v else { continue };
            let mut owner = vec![0u16; SLOTS];
            for r in &ranges {
                let r = r.as_array();
                let (a, b) = (r[0].as_int() as usize, r[1].as_int() as usize);
                let primary_port = r[2].as_array()[1].as_int() as u16;
                owner[a..=b].iter_mut().for_each(|o| *o = primary_port);
            }
            self.owner = owner;
            return;
        }
        panic!("no seed node answered CLUSTER SLOTS: {:?}", self.seeds);
    }

    /// The port of the primary that owns `key`, per the current map.
    pub fn owner_of(&self, key: &[u8]) -> u16 {
        self.owner[key_slot(key) as usize]
    }

    /// Runs a command whose key is argv[1] on the node that owns it, following MOVED (refresh
    /// the map, retry there) and ASK (ASKING + the command on the named node, map unchanged).
    pub fn cmd<A: AsRef<[u8]>>(&mut self, args: &[A]) -> Value {
        assert!(args.len() >= 2, "a routed command needs a key at argv[1]");
        let slot = key_slot(args[1].as_ref()) as usize;
        let mut port = self.owner[slot];
        let mut asking = false;
        let mut trail = Vec::new();
        for _ in 0..=MAX_REDIRECTS {
            if port == 0 {
                self.refresh();
                port = self.owner[slot];
                assert_ne!(port, 0, "slot {} has no owner in CLUSTER SLOTS", slot);
            }
            let reply = if asking {
                let mut r = self.conn(port).pipeline(&[
                    vec![b"ASKING".as_slice()],
                    args.iter().map(|a| a.as_ref()).collect(),
                ]);
                assert!(r[0].is_ok(), "ASKING on {} -> {:?}", port, r[0]);
                r.pop().unwrap()
            } else {
                self.conn(port).cmd(args)
            };
            asking = false;
            let Value::Error(e) = &reply else { return reply };
            let redirect = |e: &str| -> u16 {
                let target = e
                    .split_whitespace()
                    .nth(2)
                    .unwrap_or_else(|| panic!("malformed redirect {:?}", e));
                target
                    .rsplit(':')
                    .next()
                    .unwrap()
                    .parse()
                    .unwrap_or_else(|_| panic!("malformed redirect {:?}", e))
            };
            trail.push(format!("{} -> {}", port, e));
            if e.starts_with("MOVED ") {
                self.moved += 1;
                self.refresh();
                port = redirect(e);
                self.owner[slot] = port; // the redirect is newer than any map a node gossiped
            } else if e.starts_with("ASK ") {
                self.asked += 1;
                port = redirect(e);
                asking = true;
            } else if e.starts_with("TRYAGAIN") || e.starts_with("CLUSTERDOWN") {
                self.refresh();
                port = self.owner[slot];
            } else {
                return reply;
            }
        }
        panic!(
            "command on slot {} still redirected after {} tries: {}",
            slot,
            MAX_REDIRECTS,
            trail.join("; ")
        );
    }
}
