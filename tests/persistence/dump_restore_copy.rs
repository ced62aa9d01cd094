//! DUMP / RESTORE, COPY, MEMORY USAGE.

use super::*;

#[test]
fn dump_restore_to_another_key_keeps_every_item_and_digest() {
    let s = Server::start();
    let mut c = s.conn();
    let fx = build_fixture(&mut c);
    let before = snapshot(&mut c, &fx);
    let mut copies = Vec::new();
    for b in &fx {
        let payload = c.cmd(&["DUMP", &b.key]).as_bytes().to_vec();
        assert!(
            dump_crc_ok(&payload),
            "DUMP payload of {} has a CRC our crc64 disagrees with",
            b.key
        );
        let k2 = format!("{}:restored", b.key);
        c.ok(&[b"RESTORE".as_slice(), k2.as_bytes(), b"0", &payload]);
        copies.push(Built { key: k2, items: b.items.clone() });
        let e = c.err(&[b"RESTORE".as_slice(), b.key.as_bytes(), b"0", &payload]);
        assert!(e.starts_with("BUSYKEY"), "{}", e);
    }
    assert_same(&mut c, &copies, &before, "restored copy");
    assert_same(&mut c, &fx, &before, "original after RESTORE");
    let more = items("m", 1000);
    let r = c.madd("auto:restored", &more);
    c.assert_all_present("auto:restored", &added(&more, &r));
    assert!(c.bf_info("auto:restored").filters > 1, "restored filter did not scale");
    assert_eq!(c.digest("auto"), before[2].digest, "source changed by writes to the restored copy");
}

#[test]
fn copy_makes_an_independent_filter() {
    let s = Server::start();
    let mut c = s.conn();
    let fx = build_fixture(&mut c);
    let before = snapshot(&mut c, &fx);
    assert_eq!(c.int(&["COPY", "scaling", "dup"]), 1);
    assert_eq!(c.digest("dup"), before[0].digest);
    c.assert_all_present("dup", &fx[0].items);
    let new = items("only-in-dup", 2000);
    let r = c.madd("dup", &new);
    let new_added = added(&new, &r);
    c.assert_all_present("dup", &new_added);
    assert_ne!(c.digest("dup"), before[0].digest);
    assert_same(&mut c, &fx, &before, "source after writes to its COPY");
    let fp: i64 = c.mexists("scaling", &new_added).iter().sum();
    assert!(
        fp < (new_added.len() as i64) / 10,
        "{} of {} items added to the copy are in the source",
        fp,
        new_added.len()
    );
    // COPY onto an existing key needs REPLACE
    assert_eq!(c.int(&["COPY", "auto", "dup"]), 0);
    assert_eq!(c.int(&["COPY", "auto", "dup", "REPLACE"]), 1);
    assert_eq!(c.digest("dup"), before[2].digest);
}

#[test]
fn memory_usage_covers_info_size_without_wild_overcount() {
    let s = Server::start();
    let mut c = s.conn();
    let fx = build_fixture(&mut c);
    c.ok(&["BF.RESERVE", "big", "0.001", "200000"]);
    let mut keys: Vec<String> = fx.iter().map(|b| b.key.clone()).collect();
    keys.push("big".into());
    for k in keys {
        let size = c.bf_info(&k).size;
        let mu = c.int(&["MEMORY", "USAGE", &k]);
        assert!(mu >= size, "MEMORY USAGE {} = {} < BF.INFO Size {}", k, mu, size);
        assert!(mu <= size + 1024, "MEMORY USAGE {} = {} > BF.INFO Size {} + 1024", k, mu, size);
    }
}
