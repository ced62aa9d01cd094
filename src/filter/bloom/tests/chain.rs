use super::*;
use crate::filter::mem::CopyingMover;
use std::alloc::Layout;
use std::ptr::NonNull;

fn chain(error: f64, capacity: u64, expansion: u64) -> Chain {
    let p = ChainParams::new(error, capacity, expansion).unwrap();
    Chain::new(p, HashScheme::Xxh3Enhanced, 0x5eed, &Unlimited).unwrap()
}

fn item(i: u64) -> Vec<u8> {
    format!("member:{i}").into_bytes()
}

/// Grows to 10× the initial capacity, then checks there are no false negatives and that
/// the measured false-positive rate over 200k never-added items is within the request.
fn grow_and_measure(error: f64) -> f64 {
    let capacity = 10_000;
    let mut c = chain(error, capacity, 2);
    for i in 0..capacity * 10 {
        c.add(&item(i), &Unlimited).unwrap();
    }
    for i in 0..capacity * 10 {
        assert!(c.contains(&item(i)), "false negative for item {i}");
    }
    let probes = 200_000u64;
    let hits = (0..probes).filter(|i| c.contains(format!("absent:{i}").as_bytes())).count();
    hits as f64 / probes as f64
}

#[test]
fn false_positive_rate_stays_within_one_percent_at_ten_times_capacity() {
    let rate = grow_and_measure(0.01);
    eprintln!("measured false-positive rate at 1%: {rate}");
    assert!(rate <= 0.01, "measured {rate}");
}

#[test]
fn false_positive_rate_stays_within_a_tenth_of_a_percent_at_ten_times_capacity() {
    let rate = grow_and_measure(0.001);
    eprintln!("measured false-positive rate at 0.1%: {rate}");
    assert!(rate <= 0.001, "measured {rate}");
}

/// Relocation (active defragmentation) moves the layer table and the bit arrays and
/// changes nothing about the filter: a mover that moves every allocation it is offered
/// (allocate, copy, free, as `RedisModule_DefragAlloc` does) leaves an equal chain that
/// still answers every item; one that moves nothing leaves the addresses as they were.
#[test]
fn relocation_moves_memory_and_changes_nothing() {
    let mut c = chain(0.01, 100, 2);
    for i in 0..1000 {
        c.add(&item(i), &Unlimited).unwrap();
    }
    assert!(c.layers().len() > 1);
    let before = c.clone();
    let addresses = |c: &Chain| {
        // Layer 1 lives in the tail allocation: its address is the tail's.
        let mut a = vec![&c.layers[1] as *const Layer as usize];
        for l in c.layers.iter() {
            let mut first = None;
            l.bits().for_each_segment_bytes(|seg| {
                first.get_or_insert(seg.as_ptr() as usize);
            });
            a.push(first.unwrap());
        }
        a
    };
    let old = addresses(&c);
    let mut offered = 0;
    let mut keep = |_: NonNull<u8>, _: Layout| {
        offered += 1;
        None
    };
    // SAFETY: a mover that moves nothing keeps the contract trivially.
    unsafe { c.relocate(&mut keep) };
    assert_eq!(offered, 1 + c.layers().len(), "the tail and one array per layer");
    assert_eq!(addresses(&c), old);

    // Holds the old allocations until the end, so the new ones cannot reuse their
    // addresses and every move is visible.
    let mut copies = CopyingMover::default();
    let mut move_all = |p: NonNull<u8>, layout: Layout| copies.copy(p, layout);
    // SAFETY: `move_all` keeps the `Mover` contract (allocate, copy, give up the old).
    unsafe { c.relocate(&mut move_all) };
    let new = addresses(&c);
    assert!(new.iter().zip(&old).all(|(a, b)| a != b), "{old:?} -> {new:?}");
    assert_eq!(c, before);
    assert!((0..1000).all(|i| c.contains(&item(i))));
    assert!(c.add(&item(5000), &Unlimited).unwrap());
}

#[test]
fn present_items_change_nothing() {
    let mut c = chain(0.01, 100, 2);
    assert!(c.add(b"a", &Unlimited).unwrap());
    let before = c.clone();
    assert!(!c.add(b"a", &Unlimited).unwrap());
    assert_eq!(c, before);
    assert_eq!(c.items(), 1);
}

#[test]
fn a_new_layer_is_made_only_for_a_genuinely_new_item() {
    let mut c = chain(0.01, 10, 2);
    let mut i = 0;
    while c.items() < 10 {
        c.add(&item(i), &Unlimited).unwrap();
        i += 1;
    }
    assert_eq!(c.layers().len(), 1);
    // Re-adding a present item to a full layer must not grow the chain.
    assert!(!c.add(&item(0), &Unlimited).unwrap());
    assert_eq!(c.layers().len(), 1);
    while c.layers().len() == 1 {
        c.add(&item(i), &Unlimited).unwrap();
        i += 1;
    }
    let l = c.layers();
    assert_eq!(l[1].capacity(), 20);
    assert_eq!(c.layer_size(1).error, 0.0025);
    assert_eq!(l[1].items(), 1);
    assert_eq!(c.capacity(), 30);
}

#[test]
fn nonscaling_chain_refuses_items_once_full() {
    let mut c = chain(0.01, 5, 0);
    let mut i = 0;
    while c.items() < 5 {
        c.add(&item(i), &Unlimited).unwrap();
        i += 1;
    }
    let before = c.clone();
    let mut refused = false;
    for j in 0..100 {
        match c.add(&item(1000 + j), &Unlimited) {
            Err(FilterError::NonscalingFull) => refused = true,
            Ok(false) => {}
            other => panic!("unexpected {other:?}"),
        }
    }
    assert!(refused);
    assert_eq!(c, before);
}

#[test]
fn expansion_one_stops_at_the_error_floor_with_an_error_not_a_broken_layer() {
    let mut c = chain(0.0001, 1, 1);
    let mut refused = None;
    for i in 0..5000 {
        match c.add(&item(i), &Unlimited) {
            Ok(_) => {}
            Err(e) => {
                refused = Some(e);
                break;
            }
        }
    }
    assert_eq!(refused, Some(FilterError::TooManyLayers));
    assert!(c.layers().len() <= MAX_LAYERS);
    for (i, l) in c.layers().iter().enumerate() {
        assert!(l.hashes() >= 1 && l.hashes() <= crate::filter::bloom::params::MAX_HASHES);
        assert!(c.layer_size(i).error >= crate::filter::bloom::params::MIN_LAYER_ERROR);
        assert_eq!(Ok(c.layer_size(i)), expected_layer(&c.params(), i), "layer {i}");
    }
    // Still answers correctly: an absent item is not reported present by a degenerate layer.
    assert!(!c.contains(b"never added"));
}

#[test]
fn the_guard_sees_each_allocation_and_a_refusal_changes_nothing() {
    let p = ChainParams::new(0.01, 100, 2).unwrap();
    assert!(matches!(
        Chain::new(p, HashScheme::Xxh3Enhanced, 0, &MaxFilterBytes(100)),
        Err(FilterError::FilterLimit { .. })
    ));
    let mut c = Chain::new(p, HashScheme::Xxh3Enhanced, 0, &MaxFilterBytes(300)).unwrap();
    assert_eq!(c.info_size(), 32 + 64 + 144);
    let mut i = 0;
    let err = loop {
        match c.add(&item(i), &MaxFilterBytes(300)) {
            Ok(_) => i += 1,
            Err(e) => break e,
        }
    };
    assert!(matches!(err, FilterError::FilterLimit { limit: 300, .. }));
    assert_eq!(c.layers().len(), 1);
    assert_eq!(c.items(), 100);
}

/// jemalloc's size class for a small request (16, 32, 48, 64, 80, 96, 112, 128, then four
/// classes per doubling), as the server allocates it.
fn jemalloc_class(bytes: usize) -> usize {
    if bytes <= 8 {
        return 8;
    }
    if bytes <= 128 {
        return bytes.div_ceil(16) * 16;
    }
    let group = (bytes - 1).ilog2(); // 2^group < bytes <= 2^(group + 1)
    let step = 1usize << (group - 2);
    bytes.div_ceil(step) * step
}

/// A filter's fixed memory: the chain with its first layer inline, 80 bytes, under RedisBloom's
/// `SBChain` + `SBLink` (32 + 64, in two allocations); after growing or loading, one tail of a
/// 16-byte header and one 48-byte record per later layer (RedisBloom's: 64 per layer), with no
/// spare slots — at or under RedisBloom's bytes, allocator classes included, for every count of
/// layers from 1 to 8.
#[test]
fn a_filter_has_small_fixed_tables_without_spare_slots() {
    assert_eq!(std::mem::size_of::<Chain>(), 80);
    assert_eq!(std::mem::size_of::<Layer>(), 48);
    assert_eq!((jemalloc_class(160), jemalloc_class(161), jemalloc_class(300)), (160, 192, 320));
    let mut c = chain(0.01, 10, 2);
    assert_eq!(c.layers.tail_bytes(), 0, "one layer: the chain alone");
    let mut i = 0;
    for n in 1..=8usize {
        while c.layers.len() < n {
            c.add(&item(i), &Unlimited).unwrap();
            i += 1;
        }
        let tail = c.layers.tail_bytes();
        // The tail's header: layer count, saturated counters, members (`merged`).
        assert_eq!(tail, if n == 1 { 0 } else { 32 + 48 * (n - 1) });
        let ours = 80 + if tail == 0 { 0 } else { jemalloc_class(tail) };
        let redisbloom = 32 + jemalloc_class(64 * n);
        assert!(ours <= redisbloom, "{n} layers: {ours} bytes against RedisBloom's {redisbloom}");
    }
    // A loader's list with spare slots.
    let mut layers: Vec<Layer> = Vec::with_capacity(16);
    layers.extend(c.layers().iter().cloned());
    assert!(layers.capacity() > layers.len());
    let loaded = Chain::from_parts(c.params(), c.scheme(), c.seed(), layers, c.items()).unwrap();
    assert_eq!(loaded.layers.tail_bytes(), c.layers.tail_bytes(), "no spare slot");
    assert_eq!(loaded, c);
}

#[test]
fn seeds_give_different_bits_for_the_same_items() {
    let p = ChainParams::new(0.01, 100, 2).unwrap();
    let mut a = Chain::new(p, HashScheme::Xxh3Enhanced, 1, &Unlimited).unwrap();
    let mut b = Chain::new(p, HashScheme::Xxh3Enhanced, 2, &Unlimited).unwrap();
    a.add(b"x", &Unlimited).unwrap();
    b.add(b"x", &Unlimited).unwrap();
    assert_ne!(a.layers()[0].bits(), b.layers()[0].bits());
}

#[test]
fn from_parts_refuses_inconsistent_layers() {
    let mut c = chain(0.01, 10, 2);
    for i in 0..25 {
        c.add(&item(i), &Unlimited).unwrap();
    }
    let layers = c.layers().to_vec();
    let p = c.params();
    assert!(Chain::from_parts(p, c.scheme(), c.seed(), layers.clone(), c.items()).is_ok());
    assert!(Chain::from_parts(p, c.scheme(), c.seed(), layers.clone(), c.items() + 1).is_err());
    assert!(Chain::from_parts(p, c.scheme(), c.seed(), layers[1..].to_vec(), 0).is_err());
    assert!(Chain::from_parts(p, c.scheme(), c.seed(), Vec::new(), 0).is_err());
}
