//! Hostile RESTORE payloads, CF.LOADCHUNK headers and chunks: refused or loaded as a valid
//! filter, never a crash, and the server's other keys unchanged.

use super::*;
use crate::common::mutate::{fuzz_rng, mutate_bytes};

/// DUMP payloads of every shape (ours and RedisBloom's encoding), mutated byte-wise and
/// restored: each is refused or gives a filter that answers every command.
#[test]
fn mutated_dump_payloads_never_crash() {
    let (mut rng, seed) = fuzz_rng("cf mutated_dump_payloads_never_crash");
    let mut s = Server::start();
    let mut c = s.conn();
    let made = make_filters(&mut c);
    c.ok(&["CF.RESERVE", "w16", "100", "FINGERPRINT", "16"]);
    cf_insert(&mut c, "w16", &names("w16", 150));
    let mut payloads: Vec<Vec<u8>> =
        made.iter().map(|(k, _)| c.cmd(&["DUMP", k]).as_bytes().to_vec()).collect();
    payloads.push(c.cmd(&["DUMP", "w16"]).as_bytes().to_vec());
    let rb_srv = redisbloom_server("cf-hostile-rb");
    let mut rb = rb_srv.conn();
    make_filters(&mut rb);
    payloads.push(rb.cmd(&["DUMP", "tight"]).as_bytes().to_vec());
    let bystander = c.digest("grown1");
    let (mut refused, mut loaded) = (0, 0);
    for round in 0..400 {
        let src = &payloads[rng.below(payloads.len() as u64) as usize];
        let other = &payloads[rng.below(payloads.len() as u64) as usize];
        // The body: everything before the 2-byte RDB version and the 8-byte CRC.
        let mut body = src[..src.len() - 10].to_vec();
        let what = mutate_bytes(&mut rng, &mut body, other);
        // Keep the value type a module type (RDB_TYPE_MODULE_2): a mutation of that byte makes
        // Redis load a list or a string of its own, which is not this module's loader at work.
        if let Some(t) = body.first_mut() {
            *t = 7;
        }
        body.extend_from_slice(&src[src.len() - 10..src.len() - 8]);
        body.extend_from_slice(&[0; 8]);
        fix_dump_crc(&mut body);
        let key = format!("r{round}");
        match c.cmd(&[&b"RESTORE"[..], key.as_bytes(), b"0", &body]) {
            Value::Error(_) => refused += 1,
            Value::Simple(_) => {
                loaded += 1;
                // A loaded value is a working filter.
                c.cmd(&["CF.INFO", &key]);
                c.cmd(&["CF.ADD", &key, "x"]);
                c.cmd(&["CF.DEL", &key, "x"]);
                c.cmd(&["CF.COMPACT", &key]);
                cf_scandump_all(&mut c, &key);
                c.cmd(&["DEL", &key]);
            }
            other => panic!("seed {seed}: RESTORE ({what}) -> {other:?}"),
        }
        assert!(s.is_running(), "seed {seed}: the server died on RESTORE ({what})");
    }
    assert!(refused > 0, "seed {seed}: no mutation was refused ({loaded} loaded)");
    assert_eq!(c.digest("grown1"), bystander);
    s.assert_alive();
}

/// Mutated headers and chunks through CF.LOADCHUNK.
#[test]
fn mutated_headers_and_chunks_never_crash() {
    let (mut rng, seed) = fuzz_rng("cf mutated_headers_and_chunks_never_crash");
    let mut s = Server::start();
    let mut c = s.conn();
    make_filters(&mut c);
    let steps = cf_scandump_all(&mut c, "grown4");
    let bystander = c.digest("grown4");
    let header = &steps[0].1;
    for round in 0..300 {
        let key = format!("h{round}");
        let mut h = header.clone();
        let what = mutate_bytes(&mut rng, &mut h, header);
        match c.cmd(&[&b"CF.LOADCHUNK"[..], key.as_bytes(), b"1", &h]) {
            Value::Error(_) => {}
            Value::Simple(_) => {
                // A header that loads: then chunks, some mutated, some at wrong iterators.
                for (it, data) in &steps[1..] {
                    let mut d = data.clone();
                    let mut it = *it;
                    if rng.below(3) == 0 {
                        mutate_bytes(&mut rng, &mut d, data);
                    }
                    if rng.below(4) == 0 {
                        it = it.wrapping_add(rng.below(1 << 20) as i64 - (1 << 19));
                    }
                    c.cmd(&[&b"CF.LOADCHUNK"[..], key.as_bytes(), it.to_string().as_bytes(), &d]);
                }
                c.cmd(&["CF.INFO", &key]);
                c.cmd(&["CF.INSERT", &key, "ITEMS", "a", "b", "c"]);
                c.cmd(&["CF.COMPACT", &key]);
                c.cmd(&["DEL", &key]);
            }
            other => panic!("seed {seed}: LOADCHUNK header ({what}) -> {other:?}"),
        }
        assert!(s.is_running(), "seed {seed}: the server died on a header ({what})");
    }
    assert_eq!(c.digest("grown4"), bystander);
    s.assert_alive();
}
