//! The batched paths against the one-by-one paths they must equal.

use super::*;
use crate::filter::MaxFilterBytes;

fn items(prefix: &str, n: usize) -> Vec<Vec<u8>> {
    (0..n).map(|i| format!("{prefix}{i}").into_bytes()).collect()
}

/// The textbook add, written independently of the kernels: test every layer probe by probe
/// with the [`Probes`](crate::filter::hash::Probes) iterator, then set every probe of the
/// last layer (after growing if it is full).
fn reference_add(c: &mut Chain, item: &[u8], guard: &dyn AllocGuard) -> Result<bool, FilterError> {
    let h = c.hash(item);
    let curved = c.scheme().is_curved();
    let present =
        |l: &Layer| h.probes_in(curved, l.len_bits(), l.hashes()).all(|p| l.bits().get(p));
    if c.layers.iter().any(present) {
        return Ok(false);
    }
    if c.layers.last().is_full() {
        c.grow(guard)?;
    }
    let (last, scheme) = (c.layers.len() - 1, c.scheme());
    c.layers[last].insert(scheme, h);
    Ok(true)
}

/// Adds `items` to copies of `chain` three ways — the textbook add, [`Chain::add`] one by
/// one, and [`Chain::add_many`] — and checks the per-item results, the stopping error and the
/// whole chains (every bit of every layer, item counts) are equal; then checks
/// [`Chain::contains_many`] against [`Chain::contains`] on present and absent items.
fn assert_batch_equals_one_by_one(
    chain: Chain,
    items: &[Vec<u8>],
    guard: &dyn AllocGuard,
) -> Chain {
    let mut reference = chain.clone();
    let mut reference_results = Vec::new();
    for item in items {
        match reference_add(&mut reference, item, guard) {
            Ok(new) => reference_results.push(new),
            Err(_) => break,
        }
    }
    let mut one = chain.clone();
    let mut expected = Vec::new();
    let mut expected_err = None;
    for item in items {
        match one.add(item, guard) {
            Ok(new) => expected.push(new),
            Err(e) => {
                expected_err = Some(e);
                break;
            }
        }
    }
    let mut many = chain;
    let mut got = Vec::new();
    let err = many.add_many(items, guard, &mut got).err();
    assert_eq!(expected, reference_results, "one-by-one against the textbook add");
    assert_eq!(one, reference, "one-by-one bits against the textbook add");
    assert_eq!(got, expected, "per-item add results");
    assert_eq!(err, expected_err, "stopping error");
    assert_eq!(many, one, "bits and counts after adding");

    let mut probes = items.to_vec();
    probes.extend(self::items("absent:", items.len()));
    let mut looked_up = Vec::new();
    many.contains_many(&probes, &mut looked_up);
    let one_by_one: Vec<bool> = probes.iter().map(|p| many.contains(p)).collect();
    assert_eq!(looked_up, one_by_one, "lookups");
    many
}

/// A plain chain of what BF.RESERVE makes (scheme 5).
fn chain(error: f64, capacity: u64, expansion: u64) -> Chain {
    chain_in(HashScheme::Xxh3Curved, error, capacity, expansion)
}

fn chain_in(scheme: HashScheme, error: f64, capacity: u64, expansion: u64) -> Chain {
    let p = ChainParams::new(error, capacity, expansion).unwrap();
    let c = Chain::new(p, scheme, 0xba7c4, &Unlimited).unwrap();
    assert_eq!(c.scheme(), scheme);
    c
}

/// Chains of scheme 1 (its probe sequence) keep batches equal to their
/// one-by-one paths, one layer and many.
#[test]
fn batches_equal_one_by_one_in_scheme_1() {
    let c = chain_in(HashScheme::Xxh3Enhanced, 0.01, 100_000, 2);
    assert_batch_equals_one_by_one(c, &items("a", 5000), &Unlimited);
    let c = chain_in(HashScheme::Xxh3Enhanced, 0.01, 7, 2);
    let c = assert_batch_equals_one_by_one(c, &items("g", 3000), &Unlimited);
    assert!(c.layers().len() > 5);
    assert_batch_equals_one_by_one(c, &items("g", 3000), &Unlimited);
}

#[test]
fn batches_equal_one_by_one_on_a_single_layer() {
    let c = chain(0.01, 100_000, 2);
    let c = assert_batch_equals_one_by_one(c, &items("a", 5000), &Unlimited);
    // Everything again: all present now, nothing may change.
    let before = c.clone();
    let c = assert_batch_equals_one_by_one(c, &items("a", 5000), &Unlimited);
    assert_eq!(c, before);
}

#[test]
fn batches_equal_one_by_one_with_duplicates_inside_one_batch() {
    let mut v = items("d", 40);
    v.extend(items("d", 40));
    v.insert(3, b"d0".to_vec());
    v.insert(4, b"d0".to_vec());
    assert_batch_equals_one_by_one(chain(0.01, 1000, 2), &v, &Unlimited);
}

#[test]
fn batches_equal_one_by_one_while_growing_layers_mid_batch() {
    // Capacity 7 and blocks of 16: layers fill up and grow inside blocks, many times.
    let c = assert_batch_equals_one_by_one(chain(0.01, 7, 2), &items("g", 3000), &Unlimited);
    assert!(c.layers().len() > 5);
    // Lookups and re-adds across many layers.
    assert_batch_equals_one_by_one(c, &items("g", 3000), &Unlimited);
}

#[test]
fn batches_stop_where_one_by_one_stops() {
    // Nonscaling: refused once full, in the middle of a block.
    assert_batch_equals_one_by_one(chain(0.01, 21, 0), &items("n", 100), &Unlimited);
    // Scaling under a byte limit: refused when the next layer would not fit.
    assert_batch_equals_one_by_one(chain(0.01, 50, 2), &items("l", 1000), &MaxFilterBytes(1000));
}

#[test]
fn batches_equal_one_by_one_on_prefetched_and_multi_segment_layers() {
    // 5.5 MiB: above PREFETCH_MIN_BYTES, one segment.
    let c = chain(0.01, 4_000_000, 2);
    assert!(c.layers()[0].bytes() >= PREFETCH_MIN_BYTES);
    assert_batch_equals_one_by_one(c, &items("p", 3000), &Unlimited);
    // Over 64 MiB: several segments, the kernels' fallback path.
    let c = chain(0.01, 60_000_000, 0);
    assert!(matches!(c.layers()[0].bits().view(), crate::filter::bloom::bits::View::Many(_)));
    assert_batch_equals_one_by_one(c, &items("s", 3000), &Unlimited);
}

/// The prefetched paths (a layer of at least [`PREFETCH_MIN_BYTES`]) across a layer that
/// fills in the middle of a batch: the chain grows, refuses as nonscaling, or refuses the
/// growth under a byte limit, exactly where one by one does; counting and blocked chains too.
#[test]
fn prefetched_layers_filling_mid_batch_equal_one_by_one() {
    let params = |capacity| ChainParams::new(0.01, capacity, 2).unwrap();
    let limit = MaxFilterBytes(5 << 20);
    let cases: [(Chain, &dyn AllocGuard); 5] = [
        (chain(0.01, 3_700_000, 2), &Unlimited),
        (chain(0.01, 3_700_000, 0), &Unlimited),
        (chain(0.01, 3_700_000, 2), &limit),
        (Chain::new_counting(params(1_000_000), 7, 4, &Unlimited).unwrap(), &Unlimited),
        (Chain::new_blocked(params(4_000_000), 0xb10c, &Unlimited).unwrap(), &Unlimited),
    ];
    for (mut c, guard) in cases {
        assert!(c.layers()[0].bytes() >= PREFETCH_MIN_BYTES);
        // 1,000 items short of full: a batch of 3,000 fills it after about 1,000.
        c.layers[0].items = c.layers()[0].capacity() - 1000;
        let after = assert_batch_equals_one_by_one(c, &items("f", 3000), guard);
        assert!(after.layers().len() <= 2);
    }
}

#[test]
fn odd_probe_counts_past_the_unrolled_kernels_equal_one_by_one() {
    // 1e-9 needs 31 probes: past probe::UNROLLED_MAX, the looping kernel.
    let c = chain(1e-9, 2000, 2);
    assert!(c.layers()[0].hashes() > crate::filter::bloom::probe::UNROLLED_MAX);
    assert_batch_equals_one_by_one(c, &items("o", 3000), &Unlimited);
}

/// Every layer's count of set bits equals a scan of its bits, whichever path set them:
/// one by one, batched (one layer and several), past a full layer, RedisBloom's rules.
#[test]
fn set_bit_counts_follow_every_add_path() {
    let item = |i: u64| format!("item-{i}").into_bytes();
    fn check(c: &Chain) {
        for (i, l) in c.layers().iter().enumerate() {
            assert_eq!(l.ones(), l.bits().count_ones(), "layer {i}");
        }
    }
    let mut c = chain(0.01, 500, 2);
    for i in 0..300 {
        c.add(&item(i), &Unlimited).unwrap();
    }
    check(&c);
    let mut out = Vec::new();
    c.add_many(&items("b", 5000), &Unlimited, &mut out).unwrap();
    assert!(c.layers().len() > 2);
    check(&c);
    let p = ChainParams::new(0.01, 300, 2).unwrap();
    let mut rb = Chain::new(p, HashScheme::Murmur64, 0, &Unlimited).unwrap();
    rb.add_many(&items("r", 2000), &Unlimited, &mut out).unwrap();
    assert!(rb.layers().len() > 1);
    check(&rb);
}

/// The estimates of `BF.STATS` against what a filter really does: a nonscaling filter at
/// capacity and a scaling one grown 10× — the estimated error within 25% of the rate
/// measured on 200,000 absent items, the estimated items within 3% of the items added.
#[test]
fn stats_estimate_the_measured_error_and_the_items() {
    let item = |i: u64| format!("item-{i}").into_bytes();
    for (capacity, expansion, added) in [(20_000u64, 0u64, 20_000u64), (5_000, 2, 50_000)] {
        let mut c = chain(0.01, capacity, expansion);
        let mut out = Vec::new();
        let present: Vec<Vec<u8>> = (0..added).map(item).collect();
        c.add_many(&present, &Unlimited, &mut out).unwrap();
        let absent = 200_000;
        let fp = (0..absent).filter(|i| c.contains(format!("absent-{i}").as_bytes())).count();
        let measured = fp as f64 / absent as f64;
        let s = c.stats(&Unlimited);
        assert!(
            (s.estimated_error / measured - 1.0).abs() < 0.25,
            "expansion {expansion}: estimated {} measured {measured}",
            s.estimated_error
        );
        assert!(
            (s.estimated_items / added as f64 - 1.0).abs() < 0.03,
            "expansion {expansion}: estimated {} items of {added}",
            s.estimated_items
        );
        assert_eq!(s.items, c.items());
        assert!(s.fill_newest > 0.0 && s.fill_overall > 0.0 && s.fill_overall <= 1.0);
        assert_eq!(s.target_error, 0.01);
        // A nonscaling chain that took its capacity refuses the next new item: `saturated`;
        // short of it (false positives answered 1), it is right at its target (k rounded up),
        // so `saturated` may go either way. A scaling chain's layers sum to well below the
        // target, and it grows.
        if expansion == 0 && c.items() == capacity {
            assert!(s.saturated, "{s:?}");
        }
        assert!(expansion == 0 || !s.saturated, "{s:?}");
    }
}

/// Past its capacity a nonscaling filter's error climbs over the target: `saturated`.
#[test]
fn stats_report_saturation_past_the_target() {
    let item = |i: u64| format!("item-{i}").into_bytes();
    let mut c = chain(0.01, 1000, 0);
    let mut out = Vec::new();
    c.add_many(&items("x", 900), &Unlimited, &mut out).unwrap();
    assert!(!c.stats(&Unlimited).saturated);
    // Force more bits in, as a full filter that kept taking items would have.
    let last = c.layers.len() - 1;
    for i in 0..2000 {
        let (h, scheme) = (c.hash(&item(10_000 + i)), c.scheme());
        c.layers[last].insert(scheme, h);
    }
    let s = c.stats(&Unlimited);
    assert!(s.saturated && s.estimated_error > 0.01, "{s:?}");
    let empty = chain(0.01, 1000, 2).stats(&Unlimited);
    assert_eq!((empty.estimated_error, empty.estimated_items, empty.fill_overall), (0.0, 0.0, 0.0));
}

/// `saturated` is 1 exactly when an add of a new item is refused — a nonscaling chain at its
/// capacity, a scaling one whose next layer the guard refuses — and not at 89% of capacity.
#[test]
fn stats_say_saturated_when_an_add_is_refused() {
    for capacity in [10u64, 100, 1000, 10_000] {
        let mut c = chain(0.01, capacity, 0);
        let mut i = 0u64;
        while c.items() < capacity * 89 / 100 {
            c.add(format!("a{i}").as_bytes(), &Unlimited).unwrap();
            i += 1;
        }
        let s = c.stats(&Unlimited);
        assert!(!s.saturated && !c.refuses_new_items(&Unlimited), "{capacity} at 89%: {s:?}");
        while c.add(format!("a{i}").as_bytes(), &Unlimited).is_ok() {
            i += 1;
        }
        assert_eq!(c.items(), capacity);
        assert!(c.refuses_new_items(&Unlimited) && c.stats(&Unlimited).saturated, "{capacity}");
    }
    // A scaling chain under a per-filter limit that its second layer passes.
    let mut c = chain(0.01, 1000, 2);
    let guard = MaxFilterBytes(c.info_size() + 100);
    let mut i = 0u64;
    while c.add(format!("b{i}").as_bytes(), &guard).is_ok() {
        i += 1;
        assert!(c.items() <= 1000);
        assert_eq!(c.stats(&guard).saturated, c.items() == 1000, "{i}");
    }
    assert_eq!(c.layers().len(), 1);
    assert!(c.refuses_new_items(&guard) && !c.refuses_new_items(&Unlimited));
    assert!(c.stats(&guard).saturated);
}

/// The batched paths of one-layer RedisBloom chains large enough to prefetch, where the
/// prefetch keeps the positions it computes and the block kernels read them
/// ([`super::redisbloom_layout`]): results, bits and counts as one by one, and lookups as one by one
/// on present and absent items, with the bits half set at random first (so that many absent
/// items get past their first probe). Probe counts below, inside and above the unrolled
/// kernels' range, and past [`KEEP_MAX_K`](super::redisbloom_layout::KEEP_MAX_K), where nothing is kept;
/// one array of several segments.
#[test]
fn redisbloom_batches_with_kept_positions_equal_one_by_one() {
    use crate::filter::bloom::bits::View;
    let mut rng = crate::filter::testrng::XorShift::default();
    let mut random = |n: u64| -> Vec<u8> { (0..n).map(|_| rng.next_u64() as u8).collect() };
    // (error, capacity, probes): each at least PREFETCH_MIN_BYTES.
    let shapes = [
        (0.3, 14_000_000, 2),
        (0.01, 3_700_000, 7),
        (1e-4, 1_900_000, 14),
        (1e-7, 1_100_000, 24),
        (0.01, 60_000_000, 7),
    ];
    for (error, capacity, hashes) in shapes {
        let p = ChainParams::new(error, capacity, 0).unwrap();
        let mut c = Chain::new(p, HashScheme::Murmur64, 0, &Unlimited).unwrap();
        let layer = &mut c.layers[0];
        assert_eq!(layer.hashes(), hashes);
        assert!(layer.bytes() >= PREFETCH_MIN_BYTES);
        let bytes = random(layer.bytes());
        layer.write_bytes(0, &bytes).unwrap();
        let many_segments = matches!(c.layers()[0].bits().view(), View::Many(_));
        assert_eq!(many_segments, capacity == 60_000_000);
        // The first thousand items twice: the second time they are present.
        let mut items = items(&format!("k{hashes}:"), 3000);
        items.extend_from_within(..1000);
        let mut one = c.clone();
        let expected: Vec<bool> = items.iter().map(|i| one.add(i, &Unlimited).unwrap()).collect();
        let mut got = Vec::new();
        c.add_many(&items, &Unlimited, &mut got).unwrap();
        assert_eq!(got, expected, "add results, {hashes} probes");
        assert!(got.iter().any(|&new| new) && got.iter().any(|&new| !new));
        assert_eq!(c, one, "bits and counts, {hashes} probes");
        let mut probes = items.clone();
        probes.extend(self::items("absent:", 4000));
        let mut looked_up = Vec::new();
        c.contains_many(&probes, &mut looked_up);
        let one_by_one: Vec<bool> = probes.iter().map(|p| c.contains(p)).collect();
        assert_eq!(looked_up, one_by_one, "lookups, {hashes} probes");
        assert!(looked_up[4000..].iter().any(|&b| !b));
    }
}
