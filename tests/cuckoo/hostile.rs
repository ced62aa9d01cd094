//! Hostile RESTORE payloads, CF.LOADCHUNK headers and chunks: refused or loaded as a valid
//! filter, never a crash, and the server's other keys unchanged.

use super::*;
use crate::common::mutate::{fuzz_rng, mutate_bytes};

/// The reload rule, live: `key` (a value the server accepted, after the commands that probed
/// it) DUMPs to a payload that RESTORE takes under another name, with the same digest. A state
/// that commands reach from a loaded value and that the loader refuses makes `DEBUG RELOAD`
/// and every restart abort the server.
fn assert_dump_restores(c: &mut Conn, key: &str, why: &str) {
    let dump = c.cmd(&["DUMP", key]).as_bytes().to_vec();
    let copy = format!("{key}:copy");
    let r = c.cmd(&[&b"RESTORE"[..], copy.as_bytes(), b"0", &dump]);
    assert!(r.is_ok(), "{why}: RESTORE of {key}'s own DUMP -> {r:?}");
    assert_eq!(c.digest(&copy), c.digest(key), "{why}: RESTORE of {key}'s DUMP differs");
    c.cmd(&["DEL", &copy]);
}

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
                assert_dump_restores(&mut c, &key, &format!("seed {seed} ({what})"));
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
                assert_dump_restores(&mut c, &key, &format!("seed {seed} ({what})"));
                c.cmd(&["DEL", &key]);
            }
            other => panic!("seed {seed}: LOADCHUNK header ({what}) -> {other:?}"),
        }
        assert!(s.is_running(), "seed {seed}: the server died on a header ({what})");
    }
    assert_eq!(c.digest("grown4"), bystander);
    s.assert_alive();
}

/// `CF.RESERVE key 8` (one sub-filter of 8 slots, all empty) as a DUMP payload, with its
/// fields changed by `edit` (width, numFilters, numBuckets, numItems, numDeletes, bucketSize,
/// maxIterations, expansion, then each sub-filter's bucket count and slots).
fn forged_payload(c: &mut Conn, edit: impl FnOnce(&mut Vec<Field>)) -> Vec<u8> {
    c.ok(&["CF.RESERVE", "forge-src", "8"]);
    let dump = c.cmd(&["DUMP", "forge-src"]).as_bytes().to_vec();
    c.cmd(&["DEL", "forge-src"]);
    let mut p = ModulePayload::parse(&dump).unwrap();
    assert_eq!(p.fields[..5], [8, 1, 4, 0, 0].map(Field::Uint), "the layout this test forges");
    edit(&mut p.fields);
    p.serialize()
}

/// The CI failure of the Bloom type (a count forged at the loader's bound, pushed past it by
/// later commands, the saved value refused by `DEBUG RELOAD`: Redis aborts), for the cuckoo
/// type's item count: forged at the slots over empty slots, then an insert; forged at the slots
/// of two sub-filters, then the compaction that frees the empty one. The server reloads its
/// own data, the filters answer as before, and each DUMPs to a payload RESTORE takes.
#[test]
fn a_forged_item_count_survives_commands_and_debug_reload() {
    let mut s = Server::start();
    let mut c = s.conn();
    let full = forged_payload(&mut c, |f| f[3] = Field::Uint(8));
    c.ok(&[&b"RESTORE"[..], b"full", b"0", &full]);
    assert_eq!(c.int(&["CF.ADD", "full", "a"]), 1);
    // Two sub-filters of 4 buckets, 16 slots, all counted; the newer one empty.
    let two = forged_payload(&mut c, |f| {
        f[1] = Field::Uint(2);
        f[3] = Field::Uint(16);
        let sub = f[8..].to_vec();
        f.extend(sub);
    });
    c.ok(&[&b"RESTORE"[..], b"two", b"0", &two]);
    assert_eq!(c.int(&["CF.ADD", "two", "a"]), 1);
    c.ok(&["CF.COMPACT", "two"]);
    assert_eq!(cf_info(&mut c, "two")[2], ("Number of filters".to_string(), 1));
    let digests = [c.digest("full"), c.digest("two")];
    c.ok(&["DEBUG", "RELOAD"]);
    assert!(s.is_running(), "DEBUG RELOAD refused the server's own data");
    assert_eq!([c.digest("full"), c.digest("two")], digests, "DEBUG RELOAD changed a filter");
    for key in ["full", "two"] {
        assert_eq!(c.int(&["CF.EXISTS", key, "a"]), 1, "{key}");
        assert_dump_restores(&mut c, key, key);
    }
    s.assert_alive();
}

/// The same hole reached without a forged byte: a CF.SCANDUMP stream loaded only in part (a
/// migration cut off after its first chunk) keeps the item count of its header over slots
/// that stayed empty; CF.COMPACT then frees the empty sub-filters. The server must still
/// reload its own data (main before this fix: the saved value was refused, and DEBUG RELOAD
/// and every restart aborted Redis), and the filter must DUMP to a payload RESTORE takes.
#[test]
fn a_scandump_loaded_in_part_then_compacted_still_reloads() {
    let mut s = Server::start();
    let mut c = s.conn();
    c.ok(&["CF.RESERVE", "src", "64", "EXPANSION", "1"]);
    cf_insert(&mut c, "src", &names("src", 150));
    let filters = cf_info(&mut c, "src")[2].1;
    assert!(filters >= 3, "the source grew: {filters} sub-filters");
    let chunks = cf_scandump_all(&mut c, "src");
    assert!(chunks.len() > 2, "a header and several data chunks: {}", chunks.len());
    // The header and the first data chunk only.
    for (it, data) in &chunks[..2] {
        c.ok(&[&b"CF.LOADCHUNK"[..], b"part", it.to_string().as_bytes(), data]);
    }
    c.ok(&["CF.COMPACT", "part"]);
    let info = cf_info(&mut c, "part");
    assert!(info[2].1 < filters, "compaction freed the empty sub-filters: {info:?}");
    let digest = c.digest("part");
    c.ok(&["DEBUG", "RELOAD"]);
    assert!(s.is_running(), "DEBUG RELOAD refused the server's own data");
    assert_eq!(c.digest("part"), digest, "DEBUG RELOAD changed the filter");
    assert_eq!(cf_info(&mut c, "part"), info, "CF.INFO across DEBUG RELOAD");
    assert_dump_restores(&mut c, "part", "part");
    s.assert_alive();
}
