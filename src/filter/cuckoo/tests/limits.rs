//! Parameters, limits and memory: `cf-max-expansions` and the byte limit bound growth, sizes in
//! 64-bit arithmetic, the size of a filter, and defragmentation moving every allocation.

use super::*;
use crate::filter::FilterError;
use crate::filter::cuckoo::Insert;
use crate::filter::cuckoo::codec::Header;
use crate::filter::guard::MaxFilterBytes;
use crate::filter::mem::CopyingMover;

/// `cf-max-expansions`: a filter with that many sub-filters refuses the command; a batch grows
/// it up to the limit and not past it.
#[test]
fn max_expansions_bound_growth() {
    let mut f = filter(4, 1, 1, 1, FingerprintWidth::W8);
    let items: Vec<Vec<u8>> = (0..200).map(item).collect();
    let mut out = Vec::new();
    f.insert_many(&items, false, 3, &Unlimited, &mut out).unwrap();
    assert_eq!(f.info().filters, 3);
    assert!(out.contains(&Ok(Insert::Full)));
    assert_eq!(f.add(b"x", false, 3, &Unlimited), Err(FilterError::MaxExpansions));
    out.clear();
    assert_eq!(
        f.insert_many(&items, true, 3, &Unlimited, &mut out),
        Err(FilterError::MaxExpansions)
    );
    assert!(out.is_empty());
}

/// Growth past the per-filter byte limit is refused and changes nothing.
#[test]
fn byte_limit_refuses_growth_and_changes_nothing() {
    let p = CuckooParams::new(64, 2, 20, 2).unwrap();
    let limit = MaxFilterBytes(40 + 16 + 64 + 16 + 128 - 1);
    let mut f = CuckooFilter::new(&p, FingerprintWidth::W8, &limit).unwrap();
    let mut refused = None;
    for i in 0..500 {
        let before = f.clone();
        match f.add(&item(i), false, 32, &limit) {
            Ok(_) => {}
            Err(e) => {
                assert_eq!(f, before);
                refused = Some(e);
                break;
            }
        }
    }
    assert!(matches!(refused, Some(ref e) if e.is_limit()), "{refused:?}");
    assert_eq!(f.info().filters, 1);
    assert!(CuckooFilter::new(&p, FingerprintWidth::W32, &MaxFilterBytes(100)).is_err());
}

/// CF.INFO Size and MEMORY USAGE in 64-bit arithmetic (RedisBloom #609), with the width.
#[test]
fn sizes_are_64_bit_and_count_the_width() {
    let p = CuckooParams::new(1000, 2, 20, 1).unwrap();
    let sizes: Vec<u64> = WIDTHS
        .iter()
        .map(|&w| CuckooFilter::new(&p, w, &Unlimited).unwrap().memory_usage())
        .collect();
    assert_eq!(sizes, [1080, 56 + 2048, 56 + 4096]);
    // A header claiming 2^33 buckets of 255 slots: its size is computed without wrapping and
    // refused by the limit before anything is allocated.
    let mut h =
        Header::parse(&filter(8, 2, 20, 1, FingerprintWidth::W8).header().encode()).unwrap();
    h.shape.base_buckets = 1 << 33;
    h.shape.bucket_size = 255;
    let e = h.allocate(&MaxFilterBytes(1 << 30)).unwrap_err();
    assert_eq!(
        e,
        FilterError::FilterLimit { needed: 40 + 16 + (1u64 << 33) * 255, limit: 1 << 30 }
    );
}

/// A filter is 48 bytes and one sub-filter's allocation entry 16: RedisBloom's
/// `CuckooFilter` and `SubCF` sizes, so many small filters cost no more than RedisBloom's.
#[test]
fn a_filter_is_as_small_as_redisbloom_s() {
    assert_eq!(std::mem::size_of::<CuckooFilter>(), 48);
    assert_eq!(std::mem::size_of::<super::slots::Slots<u8>>(), 16);
}

/// Defragmentation is offered every allocation the filter owns (the entry slice and each
/// sub-filter's slots), and a filter whose allocations all moved is the same filter.
#[test]
fn relocation_moves_every_allocation() {
    use std::alloc::Layout;
    use std::ptr::NonNull;
    let mut f = filter(8, 2, 20, 1, FingerprintWidth::W16);
    for i in 0..40 {
        f.add(&item(i), false, 32, &Unlimited).unwrap();
    }
    let subs = f.info().filters as usize;
    assert!(subs > 1);
    let before = f.clone();
    let mut offered = 0;
    let mut keep = |_: NonNull<u8>, _: Layout| {
        offered += 1;
        None
    };
    // SAFETY: a mover that moves nothing keeps the contract trivially.
    unsafe { f.relocate(&mut keep) };
    assert_eq!(offered, 1 + subs, "the entry slice and one slot array per sub-filter");
    let mut copies = CopyingMover::default();
    let mut move_all = |p: NonNull<u8>, layout: Layout| copies.copy(p, layout);
    // SAFETY: `move_all` keeps the `Mover` contract (allocate, copy, give up the old).
    unsafe { f.relocate(&mut move_all) };
    assert_eq!(copies.moved.len(), 1 + subs);
    assert_eq!(f, before);
    assert!((0..40).all(|i| f.contains(&item(i))));
    f.add(&item(5000), false, 32, &Unlimited).unwrap();
}
