//! A fixture for tests that throw corrupt or hostile data at a live server: the server, a DUMP
//! payload to corrupt, a tally of what was accepted, and bystander keys — filters of several
//! shapes and a plain string — that must come through every test untouched.

use super::*;

/// Item names of the `other` bystander (every one must stay present).
pub fn other_items() -> Vec<String> {
    items("other", 500)
}

/// The plain string bystander's value.
pub const PLAIN_VALUE: &str = "a plain string that no bloom command may touch";

/// What happened to the payloads one test sent.
#[derive(Debug, Default)]
pub struct Tally {
    /// Payloads refused with an error.
    pub refused: usize,
    /// Payloads accepted (each then answered every probe).
    pub accepted: usize,
    /// Accepted keys that were kept rather than deleted.
    pub accepted_keys: Vec<String>,
}

/// A live server holding the bystanders, and the test's tally.
pub struct Hostile {
    pub server: Server,
    pub conn: Conn,
    /// `DUMP src`: a filter with three layers (capacities 1000, 2000, 4000).
    pub payload: Vec<u8>,
    pub tally: Tally,
    /// Every bystander key and its `DEBUG DIGEST-VALUE`, taken after set-up.
    digests: Vec<(String, String)>,
}

impl Hostile {
    /// A server with the module's defaults.
    pub fn start() -> Hostile {
        Hostile::start_with(ServerOpts::new())
    }

    /// A server started with `opts`, then the bystanders:
    /// - `src`: error 0.01, capacity 1000, 5000 items, so three layers (the payload's source);
    /// - `other`: error 0.01, capacity 100, 500 items;
    /// - `bystander:nonscaling`: error 0.001, capacity 300, nonscaling, 200 items;
    /// - `bystander:plain`: a string.
    pub fn start_with(opts: ServerOpts) -> Hostile {
        let server = Server::start_with(opts);
        let mut conn = server.conn();
        conn.ok(&["BF.RESERVE", "src", "0.01", "1000"]);
        conn.madd("src", &items("src", 5000));
        conn.ok(&["BF.RESERVE", "other", "0.01", "100"]);
        conn.madd("other", &other_items());
        conn.ok(&["BF.RESERVE", "bystander:nonscaling", "0.001", "300", "NONSCALING"]);
        conn.madd("bystander:nonscaling", &items("nonscaling", 200));
        conn.ok(&["SET", "bystander:plain", PLAIN_VALUE]);
        let payload = conn.cmd(&["DUMP", "src"]).as_bytes().to_vec();
        let mut fx =
            Hostile { server, conn, payload, tally: Tally::default(), digests: Vec::new() };
        for key in ["src", "other", "bystander:nonscaling", "bystander:plain"] {
            fx.add_bystander(key);
        }
        fx
    }

    /// Adds `key`, as it is now, to the keys that must stay untouched.
    pub fn add_bystander(&mut self, key: &str) {
        let digest = self.conn.digest(key);
        assert_ne!(
            digest, "0000000000000000000000000000000000000000",
            "bystander {} does not exist",
            key
        );
        self.digests.push((key.to_string(), digest));
    }

    /// `payload`, parsed into the module's fields.
    pub fn parsed(&self) -> ModulePayload {
        let p = ModulePayload::parse(&self.payload).expect("parse DUMP payload");
        assert_eq!(p.serialize(), self.payload, "payload re-serialises to the same bytes");
        p
    }

    /// RESTOREs one payload; it must be refused with an error (leaving no key) or yield a
    /// filter that answers every probe. Then the server must still be alive.
    pub fn try_restore(&mut self, key: &str, payload: &[u8], keep: bool) {
        let v = self.conn.cmd(&[b"RESTORE".as_slice(), key.as_bytes(), b"0", payload]);
        match v {
            Value::Error(_) => {
                self.tally.refused += 1;
                assert!(!self.conn.exists_key(key), "refused RESTORE left key {}", key);
            }
            v if v.is_ok() => {
                self.tally.accepted += 1;
                probe_filter(&mut self.conn, key);
                if keep {
                    self.tally.accepted_keys.push(key.to_string());
                } else {
                    self.conn.cmd(&["DEL", key]);
                }
            }
            other => panic!("RESTORE answered {:?}", other),
        }
        self.server.assert_alive();
    }

    /// DEBUG RELOAD (a save and a load of every payload accepted and kept), then
    /// [`Hostile::assert_intact`].
    pub fn assert_intact_after_reload(&mut self) {
        let v = self.conn.cmd(&["DEBUG", "RELOAD"]);
        assert!(
            v.is_ok(),
            "DEBUG RELOAD with {} accepted corrupt filters -> {:?}",
            self.tally.accepted_keys.len(),
            v
        );
        self.assert_intact();
    }

    /// The server is alive and logged no panic; every bystander has its digest, `other` every
    /// item, and the string its value.
    pub fn assert_intact(&mut self) {
        self.server.assert_alive();
        let panics = self.server.panic_lines();
        assert!(panics.is_empty(), "the server reported panics:\n{}", panics.join("\n"));
        let keys: Vec<Vec<&str>> =
            self.digests.iter().map(|(k, _)| vec!["DEBUG", "DIGEST-VALUE", k.as_str()]).collect();
        let now = self.conn.pipeline(&keys);
        for ((key, digest), v) in self.digests.iter().zip(&now) {
            assert_eq!(v.as_array()[0].as_str(), digest, "bystander {} changed", key);
        }
        self.conn.assert_all_present("other", &other_items());
        assert_eq!(self.conn.cmd(&["GET", "bystander:plain"]).as_str(), PLAIN_VALUE);
    }
}

/// After a corrupt payload was accepted: every command must still answer (errors allowed).
pub fn probe_filter(c: &mut Conn, key: &str) {
    let probes: Vec<Vec<String>> = vec![
        vec!["BF.EXISTS".into(), key.into(), "x".into()],
        vec!["BF.ADD".into(), key.into(), "probe-new-item".into()],
        vec!["BF.INFO".into(), key.into()],
        vec!["BF.DEBUG".into(), key.into()],
        vec!["BF.CARD".into(), key.into()],
        vec!["DUMP".into(), key.into()],
        vec!["DEBUG".into(), "DIGEST-VALUE".into(), key.into()],
        vec!["MEMORY".into(), "USAGE".into(), key.into()],
    ];
    for p in &probes {
        c.cmd(p);
    }
    let mut madd: Vec<String> = vec!["BF.MADD".into(), key.into()];
    madd.extend(items("probe", 300));
    c.cmd(&madd);
    let mut it = 0i64;
    for _ in 0..10_000 {
        let v = c.cmd(&["BF.SCANDUMP", key, &it.to_string()]);
        match v {
            Value::Array(Some(a)) if a.len() == 2 => {
                it = a[0].as_int();
                if it == 0 {
                    break;
                }
            }
            _ => break,
        }
    }
}
