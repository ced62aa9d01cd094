//! SCANDUMP / LOADCHUNK.

use super::*;

fn loadchunk_all(c: &mut Conn, key: &str, chunks: &[(i64, Vec<u8>)]) {
    for (it, data) in chunks {
        c.ok(&[b"BF.LOADCHUNK".as_slice(), key.as_bytes(), it.to_string().as_bytes(), data]);
    }
}

#[test]
fn scandump_loadchunk_round_trip_copies_every_filter() {
    let s = Server::start();
    let mut c = s.conn();
    let fx = build_fixture(&mut c);
    let before = snapshot(&mut c, &fx);
    let mut copies = Vec::new();
    for b in &fx {
        let chunks = c.scandump_all(&b.key);
        let k2 = format!("{}:loaded", b.key);
        loadchunk_all(&mut c, &k2, &chunks);
        copies.push(Built { key: k2, items: b.items.clone() });
    }
    assert_same(&mut c, &copies, &before, "LOADCHUNK copy");
    for b in &copies {
        assert_eq!(c.bf_card(&b.key), c.bf_card(&b.key.replace(":loaded", "")));
    }
    // the copy keeps working and survives a reload
    let more = items("more", 1500);
    let r = c.madd("auto:loaded", &more);
    let more_added = added(&more, &r);
    c.ok(&["DEBUG", "RELOAD"]);
    c.assert_all_present("auto:loaded", &more_added);
    c.assert_all_present("auto:loaded", &fx[2].items);
    assert_same(&mut c, &fx, &before, "originals");
}

#[test]
fn scandump_splits_big_layers_and_round_trips() {
    let s = Server::start();
    let mut c = s.conn();
    // one layer of ~20 MiB: more than one 16 MiB chunk
    c.ok(&["BF.RESERVE", "big", "0.01", "15000000"]);
    let its = items("b", 3000);
    c.madd("big", &its);
    let chunks = c.scandump_all("big");
    assert!(
        chunks.len() >= 3,
        "header + at least two chunks for a 20 MiB layer, got {}",
        chunks.len()
    );
    for (_, d) in &chunks[1..] {
        assert!(d.len() <= 16 * 1024 * 1024, "chunk of {} bytes", d.len());
    }
    loadchunk_all(&mut c, "copy", &chunks);
    assert_eq!(c.digest("copy"), c.digest("big"));
    assert_eq!(c.bf_debug("copy"), c.bf_debug("big"));
    c.assert_all_present("copy", &its);
}

#[test]
fn loadchunk_of_mutated_headers_never_crashes() {
    let mut s = Server::start();
    let mut c = s.conn();
    c.ok(&["BF.RESERVE", "src", "0.01", "100"]);
    let its = items("h", 400);
    c.madd("src", &its);
    let chunks = c.scandump_all("src");
    let h = chunks[0].1.clone();
    let mut variants: Vec<Vec<u8>> = Vec::new();
    for cut in 0..h.len() {
        variants.push(h[..cut].to_vec());
    }
    variants.push([h.clone(), vec![0]].concat());
    for o in 0..h.len() {
        for x in [0xFFu8, 0x01, 0x80] {
            let mut m = h.clone();
            m[o] ^= x;
            variants.push(m);
        }
        if o + 8 <= h.len() {
            for v in [0u64, 1, u64::MAX, 1 << 40] {
                let mut m = h.clone();
                m[o..o + 8].copy_from_slice(&v.to_le_bytes());
                variants.push(m);
            }
        }
        if o + 4 <= h.len() {
            let mut m = h.clone();
            m[o..o + 4].copy_from_slice(&0u32.to_le_bytes());
            variants.push(m.clone());
            m.truncate(o + 4);
            variants.push(m);
        }
    }
    let before = c.used_memory();
    let mut accepted = 0;
    for (i, v) in variants.iter().enumerate() {
        let key = format!("m{}", i);
        let r = c.cmd(&[b"BF.LOADCHUNK".as_slice(), key.as_bytes(), b"1", v]);
        if r.is_ok() {
            accepted += 1;
            // feed the real chunks too; they may be refused if they no longer fit
            for (it, data) in &chunks[1..] {
                c.cmd(&[
                    b"BF.LOADCHUNK".as_slice(),
                    key.as_bytes(),
                    it.to_string().as_bytes(),
                    data,
                ]);
            }
            probe_filter(&mut c, &key);
            c.cmd(&["DEL", &key]);
        } else {
            assert!(r.is_err(), "LOADCHUNK answered {:?}", r);
            assert!(!c.exists_key(&key), "refused header left key {}", key);
        }
        s.assert_alive();
    }
    assert!(accepted < variants.len());
    let after = c.used_memory();
    assert!(after - before < 10 * 1024 * 1024, "used_memory went from {} to {}", before, after);
    c.assert_all_present("src", &its);
}
