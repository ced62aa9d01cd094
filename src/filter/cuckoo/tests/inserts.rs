//! Inserts: a failed insert undoes its kick-out walk exactly, `EXPANSION 0` answers full,
//! `NX` and duplicates, and batched inserts equal one-by-one calls at every bucket size.

use super::*;
use crate::filter::cuckoo::Insert;
use crate::filter::cuckoo::params::DEFAULT_MAX_EXPANSIONS;

/// An insert that fails leaves every slot as it was, and every item added before it is still
/// present: the kick-out walk is undone exactly.
#[test]
fn a_failed_insert_loses_nothing() {
    for w in WIDTHS {
        for (bs, iters) in [(1u16, 1u16), (1, 50), (2, 20), (3, 7), (4, 500)] {
            let mut f = filter(64, bs, iters, 0, w);
            let mut added = Vec::new();
            let mut failures = 0;
            for i in 0..400 {
                let before = f.clone();
                match f.add(&item(i), false, DEFAULT_MAX_EXPANSIONS, &Unlimited).unwrap() {
                    Insert::Inserted => added.push(i),
                    Insert::Full => {
                        failures += 1;
                        assert_eq!(f, before, "a failed insert changed the filter");
                    }
                    Insert::Exists => unreachable!(),
                }
                assert_eq!(f.info().filters, 1, "EXPANSION 0 never grows");
            }
            assert!(failures > 100, "bs {bs}: the filter must fill up");
            for &i in &added {
                assert!(f.contains(&item(i)), "bs {bs} iters {iters}: item {i} lost");
            }
            assert_eq!(f.items(), added.len() as u64);
        }
    }
}

/// RedisBloom #481: `EXPANSION 0` crashed. Here it answers full, in `CF.INSERT` too.
#[test]
fn expansion_zero_answers_full() {
    let mut f = filter(4, 2, 20, 0, FingerprintWidth::W8);
    let items: Vec<Vec<u8>> = (0..50).map(item).collect();
    let mut out = Vec::new();
    f.insert_many(&items, false, 32, &Unlimited, &mut out).unwrap();
    assert!(out.contains(&Ok(Insert::Full)));
    assert_eq!(f.info().filters, 1);
    f.compact(true);
    assert_eq!(f.info().filters, 1);
}

/// `ADDNX` / `INSERTNX` answer `Exists` and change nothing; `ADD` stores duplicates that
/// `COUNT` counts; batches equal one-by-one calls.
#[test]
fn nx_duplicates_and_batches() {
    for w in WIDTHS {
        let mut f = filter(1000, 2, 20, 1, w);
        assert_eq!(f.add(b"a", false, 32, &Unlimited), Ok(Insert::Inserted));
        assert_eq!(f.add(b"a", false, 32, &Unlimited), Ok(Insert::Inserted));
        let before = f.clone();
        assert_eq!(f.add(b"a", true, 32, &Unlimited), Ok(Insert::Exists));
        assert_eq!(f, before);
        assert_eq!(f.count(b"a"), 2);
        assert!(f.delete(b"a"));
        assert_eq!(f.count(b"a"), 1);
        assert!(!f.delete(b"never"), "deleting an absent item changes nothing");
        let items: Vec<Vec<u8>> = (0..3000).map(|i| item(i % 2500)).collect();
        let mut one = filter(1000, 2, 20, 2, w);
        let mut batch = one.clone();
        let singles: Vec<_> = items.iter().map(|i| one.add(i, true, 32, &Unlimited)).collect();
        let mut out = Vec::new();
        batch.insert_many(&items, true, 32, &Unlimited, &mut out).unwrap();
        assert_eq!(out, singles);
        assert_eq!(one, batch);
        let mut exists = Vec::new();
        batch.contains_many(&items, &mut exists);
        assert!(exists.iter().zip(&items).all(|(&e, i)| e == batch.contains(i)));
    }
}

/// Batches equal one-by-one calls on every path of the batched code: bucket sizes with a
/// constant (2, 4) and at run time (1, 3, 7), with and without NX, growing (one and then
/// several sub-filters) and full (expansion 0); `CF.MEXISTS` of present and absent items.
#[test]
fn batches_equal_singles_at_every_bucket_size() {
    let items: Vec<Vec<u8>> = (0..1500).map(|i| item(i % 1200)).collect();
    let probes: Vec<Vec<u8>> = (0..2400).map(item).collect();
    for w in WIDTHS {
        for bs in [1u16, 2, 3, 4, 7] {
            for exp in [0u16, 1, 2] {
                for nx in [false, true] {
                    let mut one = filter(256, bs, 20, exp, w);
                    let mut batch = one.clone();
                    let singles: Vec<_> =
                        items.iter().map(|i| one.add(i, nx, 32, &Unlimited)).collect();
                    let mut out = Vec::new();
                    batch.insert_many(&items, nx, 32, &Unlimited, &mut out).unwrap();
                    let case = format!("{w:?} bucket size {bs} expansion {exp} nx {nx}");
                    assert_eq!(out, singles, "{case}");
                    assert_eq!(one, batch, "{case}");
                    if exp > 0 {
                        assert!(batch.info().filters > 1, "{case}: the filter grew");
                    }
                    let mut exists = vec![true];
                    batch.contains_many(&probes, &mut exists);
                    let expected: Vec<bool> = std::iter::once(true)
                        .chain(probes.iter().map(|i| batch.contains(i)))
                        .collect();
                    assert_eq!(exists, expected, "{case}");
                }
            }
        }
    }
}
