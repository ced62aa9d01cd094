//! BF.* helpers: [`BfInfo`] (a parsed BF.INFO reply) and methods on [`Conn`] for the bloom
//! commands the tests run most (MADD/MEXISTS of many items, SCANDUMP of a whole filter, …),
//! and the numbers of a BF.STATS or CF.STATS reply ([`Conn::stats_f64`], [`stat_field`]).

use super::resp::{Conn, Value};

// ---------------------------------------------------------------------------------------------
// BF.INFO
// ---------------------------------------------------------------------------------------------

#[derive(Debug, Clone, PartialEq)]
pub struct BfInfo {
    pub capacity: i64,
    pub size: i64,
    pub filters: i64,
    pub items: i64,
    /// None for a nonscaling filter.
    pub expansion: Option<i64>,
}

impl BfInfo {
    pub fn parse(v: &Value) -> BfInfo {
        let pairs = v.pairs();
        let get = |name: &str| -> Value {
            pairs
                .iter()
                .find(|(k, _)| k.as_str() == name)
                .map(|(_, v)| v.clone())
                .unwrap_or_else(|| panic!("BF.INFO has no {:?}: {:?}", name, v))
        };
        let exp = get("Expansion rate");
        BfInfo {
            capacity: get("Capacity").as_int(),
            size: get("Size").as_int(),
            filters: get("Number of filters").as_int(),
            items: get("Number of items inserted").as_int(),
            expansion: if exp.is_null() { None } else { Some(exp.as_int()) },
        }
    }
}

impl Conn {
    /// BF.DEBUG lines.
    pub fn bf_debug(&mut self, key: &str) -> Vec<String> {
        let v = self.cmd(&["BF.DEBUG", key]);
        v.as_array().iter().map(|x| x.as_str().to_string()).collect()
    }

    /// BF.INFO of a key, read from a RESP2 connection.
    pub fn bf_info(&mut self, key: &str) -> BfInfo {
        let v = self.cmd(&["BF.INFO", key]);
        BfInfo::parse(&v)
    }

    pub fn bf_card(&mut self, key: &str) -> i64 {
        self.int(&["BF.CARD", key])
    }

    /// BF.MADD of many items; returns the raw per-item replies.
    pub fn madd(&mut self, key: &str, items: &[String]) -> Vec<Value> {
        let mut args: Vec<&[u8]> = vec![b"BF.MADD", key.as_bytes()];
        args.extend(items.iter().map(|s| s.as_bytes()));
        let v = self.cmd(&args);
        match v {
            Value::Array(Some(a)) => a,
            other => panic!("BF.MADD {} ({} items) -> {:?}", key, items.len(), other),
        }
    }

    /// BF.MEXISTS of many items as 1/0.
    pub fn mexists(&mut self, key: &str, items: &[String]) -> Vec<i64> {
        let mut args: Vec<&[u8]> = vec![b"BF.MEXISTS", key.as_bytes()];
        args.extend(items.iter().map(|s| s.as_bytes()));
        let v = self.cmd(&args);
        v.as_array().iter().map(|x| x.as_bit()).collect()
    }

    /// BF.MADD of any number of items, 10,000 a command.
    pub fn madd_all(&mut self, key: &str, items: &[String]) {
        for chunk in items.chunks(10_000) {
            self.madd(key, chunk);
        }
    }

    /// How many of `n` items never added BF.MEXISTS reports present (its false positives).
    pub fn false_positives(&mut self, key: &str, n: usize) -> usize {
        let mut hits = 0;
        for chunk in super::data::items("never-added", n).chunks(10_000) {
            hits += self.mexists(key, chunk).iter().filter(|&&b| b == 1).count();
        }
        hits
    }

    /// What a Bloom filter answers: MEXISTS over `probe` items, BF.CARD, BF.STATS and BF.INFO.
    pub fn bf_answers(&mut self, key: &str, probe: &[String]) -> (Vec<i64>, i64, Value, Value) {
        let mut bits = Vec::new();
        for chunk in probe.chunks(10_000) {
            bits.extend(self.mexists(key, chunk));
        }
        (bits, self.bf_card(key), self.cmd(&["BF.STATS", key]), self.cmd(&["BF.INFO", key]))
    }

    /// A STATS reply (`BF.STATS` or `CF.STATS`, as `cmd`) of `key` by field name, numbers as
    /// f64 (RESP2 sends doubles as bulk strings, RESP3 as doubles).
    pub fn stats_f64(&mut self, cmd: &str, key: &str) -> Vec<(String, f64)> {
        let v = self.cmd(&[cmd, key]);
        assert!(!v.is_err(), "{cmd} {key} -> {v:?}");
        v.pairs()
            .into_iter()
            .map(|(k, v)| {
                let x = match v {
                    Value::Int(i) => i as f64,
                    Value::Double(d) => d,
                    Value::Bulk(Some(b)) => String::from_utf8(b).unwrap().parse().unwrap(),
                    other => panic!("{k:?}: {other:?}"),
                };
                (k.as_str().to_string(), x)
            })
            .collect()
    }

    /// Asserts every item is reported present.
    pub fn assert_all_present(&mut self, key: &str, items: &[String]) {
        for chunk in items.chunks(1000) {
            let r = self.mexists(key, chunk);
            for (item, bit) in chunk.iter().zip(r) {
                assert_eq!(bit, 1, "item {:?} of key {:?} is missing (false negative)", item, key);
            }
        }
    }

    /// Copies Bloom filter `key` by every path a filter moves by: DUMP/RESTORE into
    /// `restored`, SCANDUMP/LOADCHUNK into `chunked`, COPY into `copied` (none of which may
    /// exist), then DEBUG RELOAD. Returns the four keys, `key` first.
    pub fn copy_every_way<'k>(&mut self, key: &'k str) -> [&'k str; 4] {
        let dump = self.cmd(&["DUMP", key]).as_bytes().to_vec();
        let r = self.cmd(&[&b"RESTORE"[..], b"restored", b"0", &dump]);
        assert!(r.is_ok(), "RESTORE -> {r:?}");
        for (it, data) in self.scandump_all(key) {
            let r = self.cmd(&[&b"BF.LOADCHUNK"[..], b"chunked", it.to_string().as_bytes(), &data]);
            assert!(r.is_ok(), "BF.LOADCHUNK -> {r:?}");
        }
        assert_eq!(self.int(&["COPY", key, "copied"]), 1);
        self.ok(&["DEBUG", "RELOAD"]);
        [key, "restored", "chunked", "copied"]
    }

    /// Runs BGREWRITEAOF, waits until no rewrite runs or is scheduled, and asserts the rewrite
    /// succeeded.
    pub fn rewrite_aof(&mut self) {
        let v = self.cmd(&["BGREWRITEAOF"]);
        assert!(matches!(v, Value::Simple(_)), "BGREWRITEAOF -> {v:?}");
        super::server::wait_until("AOF rewrite to finish", || {
            self.info_field("persistence", "aof_rewrite_in_progress").as_deref() == Some("0")
                && self.info_field("persistence", "aof_rewrite_scheduled").as_deref() == Some("0")
        });
        let status = self.info_field("persistence", "aof_last_bgrewrite_status");
        assert_eq!(status.as_deref(), Some("ok"), "BGREWRITEAOF failed");
    }

    /// The SCANDUMP chunks of a key: (iterator, data) pairs, as a client would store them.
    pub fn scandump_all(&mut self, key: &str) -> Vec<(i64, Vec<u8>)> {
        let mut out = Vec::new();
        let mut it: i64 = 0;
        for _ in 0..100_000 {
            let v = self.cmd(&["BF.SCANDUMP", key, &it.to_string()]);
            let a = v.as_array();
            assert_eq!(a.len(), 2, "BF.SCANDUMP {} {} -> {:?}", key, it, v);
            let next = a[0].as_int();
            let data = a[1].as_bytes().to_vec();
            if next == 0 {
                assert!(
                    data.is_empty(),
                    "final SCANDUMP chunk must be empty, got {} bytes",
                    data.len()
                );
                return out;
            }
            out.push((next, data));
            it = next;
        }
        panic!("SCANDUMP of {} never ended", key);
    }
}

/// The field `name` of a [`Conn::stats_f64`] reply; panics when it has none.
pub fn stat_field(s: &[(String, f64)], name: &str) -> f64 {
    s.iter().find(|(k, _)| k == name).unwrap_or_else(|| panic!("no {name:?} in {s:?}")).1
}
