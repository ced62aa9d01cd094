//! Deletes and compaction: no other item is ever lost, emptied sub-filters are freed and
//! their entries reused, counters saturate instead of wrapping.

use super::*;
use crate::filter::cuckoo::Insert;
use crate::filter::cuckoo::codec::RDB_ENCODING_VERSION;
use crate::filter::fields::SliceReader;

/// Deleting items that were added never makes another added item absent, across expansions,
/// automatic compaction (10% deletes) and `CF.COMPACT` (RedisBloom #259/#260).
#[test]
fn deletes_and_compaction_never_lose_other_items() {
    for w in [FingerprintWidth::W8, FingerprintWidth::W16] {
        for (bs, exp) in [(1u16, 1u16), (2, 1), (2, 2), (3, 4), (4, 2)] {
            let mut f = filter(16, bs, 20, exp, w);
            let n = 600;
            let mut present: Vec<u64> = Vec::new();
            for i in 0..n {
                if f.add(&item(i), false, u16::MAX, &Unlimited).unwrap() == Insert::Inserted {
                    present.push(i);
                }
            }
            assert!(f.info().filters > 2, "bs {bs} exp {exp}: must grow");
            let filters_before = f.info().filters;
            // Delete every third item, checking the rest after each round of deletes.
            let (gone, kept): (Vec<u64>, Vec<u64>) = present.iter().partition(|&&i| i % 3 == 0);
            for (k, &i) in gone.iter().enumerate() {
                assert!(f.delete(&item(i)), "item {i} was added");
                if k % 50 == 0 {
                    for &j in &kept {
                        assert!(f.contains(&item(j)), "bs {bs} exp {exp}: lost {j} after deletes");
                    }
                }
            }
            f.compact(true);
            assert_eq!(f.info().deletes, 0);
            assert!(f.info().filters <= filters_before);
            for &j in &kept {
                assert!(f.contains(&item(j)), "bs {bs} exp {exp}: lost {j} after compact");
            }
            assert_eq!(f.items(), kept.len() as u64);
        }
    }
}

/// Compaction frees the newest sub-filters once their fingerprints fit in older ones.
#[test]
fn compaction_frees_emptied_sub_filters() {
    let mut f = filter(8, 2, 20, 1, FingerprintWidth::W8);
    for i in 0..40 {
        f.add(&item(i), false, 32, &Unlimited).unwrap();
    }
    let grown = f.info().filters;
    assert!(grown >= 4);
    for i in 0..34 {
        f.delete(&item(i));
    }
    f.compact(true);
    assert!(f.info().filters < grown);
    for i in 34..40 {
        assert!(f.contains(&item(i)));
    }
}

/// A header or RDB value whose counters disagree with its slots cannot make a counter wrap:
/// `items` saturates at 0 on delete.
#[test]
fn counters_saturate_instead_of_wrapping() {
    let mut f = filter(8, 2, 20, 1, FingerprintWidth::W8);
    f.add(b"a", false, 32, &Unlimited).unwrap();
    let mut h = f.header();
    h.shape.items = 0;
    let mut g = h.allocate(&Unlimited).unwrap();
    let (next, data) = f.chunk(1).unwrap();
    g.load_chunk(next, &data).unwrap();
    assert!(g.delete(b"a"));
    assert_eq!(g.items(), 0);
    assert_eq!(g.info().deletes, 1);
}

/// Compaction leaves the freed sub-filter's entry empty; a later growth reuses it; the filter
/// stays equal to its own reload (spare entries are not part of it) and keeps every item.
#[test]
fn growth_after_compaction_reuses_the_entry_and_round_trips() {
    for w in WIDTHS {
        let mut f = filter(8, 2, 20, 2, w);
        for i in 0..60 {
            f.add(&item(i), false, 32, &Unlimited).unwrap();
        }
        let grown = f.info().filters;
        for i in 0..54 {
            assert!(f.delete(&item(i)));
        }
        f.compact(true);
        assert!(f.info().filters < grown);
        let reload = |f: &CuckooFilter| {
            let mut buf = Vec::<u8>::new();
            f.write_rdb(&mut buf);
            CuckooFilter::read_rdb(&mut SliceReader::new(&buf), RDB_ENCODING_VERSION, &Unlimited)
                .unwrap()
        };
        assert_eq!(reload(&f), f);
        for i in 100..200 {
            f.add(&item(i), false, 32, &Unlimited).unwrap();
        }
        assert!(f.info().filters >= grown);
        assert_eq!(reload(&f), f);
        assert_eq!(f.clone(), f);
        assert!((54..60).chain(100..200).all(|i| f.contains(&item(i))));
    }
}
