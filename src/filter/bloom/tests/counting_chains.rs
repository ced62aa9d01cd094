use super::*;

fn counting(error: f64, capacity: u64, expansion: u64, width: Width) -> Chain {
    let p = ChainParams::new(error, capacity, expansion).unwrap();
    Chain::new_counting(p, 0x5eed, width, &Unlimited).unwrap()
}

fn name(prefix: &str, i: u64) -> Vec<u8> {
    format!("{prefix}-{i}").into_bytes()
}

/// Every layer's non-zero count, and the chain's saturated count, equal a scan of the counters.
fn check_counts(c: &Chain) {
    let mut saturated = 0;
    for (i, l) in c.layers().iter().enumerate() {
        let (ones, sat) = array_counts(l.bits(), l.width());
        assert_eq!(l.ones(), ones, "layer {i}");
        saturated += sat;
    }
    assert_eq!(c.saturated(), saturated);
}

#[test]
fn counters_are_sized_like_bits_times_their_width() {
    for width in [4u8, 8] {
        let plain = Chain::new(
            ChainParams::new(0.01, 1000, 2).unwrap(),
            HashScheme::Xxh3Enhanced,
            1,
            &Unlimited,
        )
        .unwrap();
        let c = counting(0.01, 1000, 2, width);
        assert_eq!(c.counter_width(), width);
        assert_eq!(c.layers()[0].len_bits(), plain.layers()[0].len_bits());
        assert_eq!(c.layers()[0].hashes(), plain.layers()[0].hashes());
        assert_eq!(c.bit_bytes(), plain.bit_bytes() * u64::from(width));
    }
    let p = ChainParams::new(0.01, 1000, 2).unwrap();
    assert!(Chain::new_counting(p, 1, 5, &Unlimited).is_err());
    // The guard sees the counters' bytes.
    let plain_bytes = counting(0.01, 1000, 2, 0).bit_bytes();
    let limit = MaxFilterBytes(info_size(1, plain_bytes * 2));
    assert!(matches!(Chain::new_counting(p, 1, 4, &limit), Err(FilterError::FilterLimit { .. })));
    assert!(Chain::new_counting(p, 1, 0, &limit).is_ok());
}

/// 10,000 adds then 5,000 deletes: the other 5,000 all present, absent items at the
/// target rate, the counts right.
#[test]
fn deleting_half_keeps_the_other_half_and_the_error_rate() {
    for width in [4u8, 8] {
        let mut c = counting(0.01, 10_000, 0, width);
        for i in 0..10_000 {
            assert!(c.add(&name("a", i), &Unlimited).is_ok());
        }
        let mut out = Vec::new();
        let doomed: Vec<Vec<u8>> = (0..5_000).map(|i| name("a", i)).collect();
        c.delete_many(&doomed, &mut out).unwrap();
        assert!(out.iter().all(|&d| d), "every added item is deletable");
        assert!((5_000..10_000).all(|i| c.contains(&name("a", i))), "false negative");
        let fp = (0..100_000).filter(|&i| c.contains(&name("absent", i))).count();
        // Half the items: well under the target (about 0.03%).
        assert!(fp < 1_000, "{fp} false positives of 100,000");
        assert_eq!(c.items(), 5_000);
        check_counts(&c);
    }
}

/// A scaling counting chain grown 20× with half of its items deleted: no false negative.
#[test]
fn a_grown_chain_with_half_deleted_has_no_false_negative() {
    let mut c = counting(0.01, 500, 2, 4);
    let n = 10_000;
    let all: Vec<Vec<u8>> = (0..n).map(|i| name("g", i)).collect();
    let mut out = Vec::new();
    c.add_many(&all, &Unlimited, &mut out).unwrap();
    assert!(c.layers().len() >= 5, "{} layers", c.layers().len());
    for i in (0..n).step_by(2) {
        assert!(c.delete(&all[i as usize]).unwrap());
    }
    for i in (1..n).step_by(2) {
        assert!(c.contains(&all[i as usize]), "item {i} lost");
    }
    check_counts(&c);
}

/// 100,000 random adds and deletes (a delete takes one occurrence of a live item) against a
/// multiset: every delete succeeds, every live item stays present, the counts stay right.
#[test]
fn random_adds_and_deletes_never_lose_a_live_item() {
    let mut c = counting(0.01, 2_000, 2, 4);
    let mut live: Vec<u64> = Vec::new();
    let mut rng = crate::filter::testrng::XorShift::default();
    for _ in 0..100_000 {
        let x = rng.next_u64();
        if live.is_empty() || x >> 62 < 3 {
            let id = x % 20_000;
            c.add(&name("r", id), &Unlimited).unwrap();
            live.push(id);
        } else {
            let id = live.swap_remove((x % live.len() as u64) as usize);
            assert!(c.delete(&name("r", id)).unwrap(), "live item {id} not deletable");
        }
    }
    assert!(c.layers().len() > 1);
    for id in &live {
        assert!(c.contains(&name("r", *id)), "live item {id} lost");
    }
    check_counts(&c);
}

/// A counter at its maximum stays there: adding one item 20 times saturates its 4-bit
/// counters, and deleting it 20 times leaves it present (a false positive, never a false
/// negative for another item sharing a counter).
#[test]
fn saturated_counters_never_move() {
    let mut c = counting(0.01, 1000, 0, 4);
    for _ in 0..20 {
        c.add(b"hot", &Unlimited).unwrap();
    }
    let sat = c.stats(&Unlimited).saturated_counters.unwrap();
    assert!(sat >= 1 && sat <= u64::from(c.layers()[0].hashes()), "{sat}");
    for _ in 0..20 {
        assert!(c.delete(b"hot").unwrap());
    }
    assert!(c.contains(b"hot"));
    assert_eq!(c.stats(&Unlimited).saturated_counters, Some(sat));
    check_counts(&c);
    assert_eq!(c.items(), 0);
    assert!(!c.delete(b"never").unwrap());
}

#[test]
fn plain_chains_refuse_deletes_and_report_no_counters() {
    let mut c = counting(0.01, 100, 2, 0);
    c.add(b"x", &Unlimited).unwrap();
    assert_eq!(c.delete(b"x"), Err(FilterError::NotCounting));
    assert_eq!(c.delete_many(&[b"x"], &mut Vec::new()), Err(FilterError::NotCounting));
    assert_eq!(c.stats(&Unlimited).saturated_counters, None);
    assert!(c.contains(b"x"));
}

/// Adds report "new" as a plain filter does, but always count; a nonscaling counting
/// filter refuses any add once full, a present item's too.
#[test]
fn adds_answer_new_and_always_count() {
    let mut c = counting(0.01, 3, 0, 8);
    assert_eq!(c.add(b"a", &Unlimited), Ok(true));
    assert_eq!(c.add(b"a", &Unlimited), Ok(false));
    assert_eq!(c.items(), 2);
    assert_eq!(c.add(b"b", &Unlimited), Ok(true));
    assert_eq!(c.items(), 3);
    // Full: a new item is refused, a present one still counts (it sets no new counter).
    assert_eq!(c.add(b"new", &Unlimited), Err(FilterError::NonscalingFull));
    let ones = c.layers()[0].ones();
    assert_eq!(c.add(b"a", &Unlimited), Ok(false));
    assert_eq!((c.items(), c.layers()[0].ones()), (4, ones));
    assert!(c.delete(b"a").unwrap());
    assert!(c.delete(b"a").unwrap());
    assert!(c.contains(b"a"), "added twice, deleted once");
    assert!(c.delete(b"a").unwrap());
    assert!(!c.contains(b"a") || c.contains(b"b"));
    // Batched adds answer as one by one.
    let mut one = counting(0.01, 100, 2, 4);
    let mut many = one.clone();
    let items: Vec<Vec<u8>> = (0..500).map(|i| name("m", i % 300)).collect();
    let expected: Vec<bool> = items.iter().map(|i| one.add(i, &Unlimited).unwrap()).collect();
    let mut got = Vec::new();
    many.add_many(&items, &Unlimited, &mut got).unwrap();
    assert_eq!(got, expected);
    assert_eq!(one, many);
    check_counts(&many);
}

/// On a counting layer large enough to be prefetched (the batched paths' two-step
/// prefetch over counter positions), batched lookups and deletes answer as one by one.
#[test]
fn batched_lookups_and_deletes_equal_one_by_one_on_a_prefetched_layer() {
    let mut c = counting(0.01, 1_000_000, 0, 4);
    assert!(c.layers()[0].bytes() >= PREFETCH_MIN_BYTES);
    let added: Vec<Vec<u8>> = (0..20_000).map(|i| name("p", i)).collect();
    let mut out = Vec::new();
    c.add_many(&added, &Unlimited, &mut out).unwrap();
    let probe: Vec<Vec<u8>> =
        (0..20_000).map(|i| name(if i % 2 == 0 { "p" } else { "q" }, i)).collect();
    let mut got = Vec::new();
    c.contains_many(&probe, &mut got);
    let expected: Vec<bool> = probe.iter().map(|i| c.contains(i)).collect();
    assert_eq!(got, expected);
    let mut one = c.clone();
    let expected: Vec<bool> = probe.iter().map(|i| one.delete(i).unwrap()).collect();
    let mut got = Vec::new();
    c.delete_many(&probe, &mut got).unwrap();
    assert_eq!(got, expected);
    assert_eq!(c, one);
    check_counts(&c);
}

/// The saturated count lives in the tail allocation, which a one-layer counting chain only
/// gets once a counter saturates (until then it is the 80-byte chain alone, as a plain one);
/// the count survives growing (the tail is rebuilt with one more layer), clones and loads.
#[test]
fn the_saturated_count_has_a_tail_only_when_needed() {
    let mut c = counting(0.01, 10, 2, 4);
    c.add(b"cold", &Unlimited).unwrap();
    assert_eq!((c.layers.tail_bytes(), c.saturated()), (0, 0));
    for _ in 0..20 {
        c.add(b"hot", &Unlimited).unwrap();
    }
    let sat = c.saturated();
    assert!(sat >= 1);
    assert_eq!(c.layers.len(), 1);
    assert_eq!(c.layers.tail_bytes(), 32, "the header alone");
    check_counts(&c);
    let mut i = 0;
    while c.layers.len() < 3 {
        c.add(&name("grow", i), &Unlimited).unwrap();
        i += 1;
    }
    assert!(c.saturated() >= sat);
    check_counts(&c);
    let copy = c.clone();
    assert_eq!(copy, c);
    assert_eq!(copy.saturated(), c.saturated());
    let loaded =
        Chain::from_parts(c.params(), c.scheme(), c.seed(), c.layers().to_vec(), c.items())
            .unwrap();
    assert_eq!(loaded.saturated(), c.saturated());
    assert_eq!(loaded, c);
}
