//! Lookups: batched lookups equal one-by-one ones as the filter grows, `CF.COUNT` of a shared
//! bucket, and the false-positive rate of each fingerprint width.

use super::*;

/// Batched lookups equal one-by-one ones while a filter grows from one sub-filter to two
/// and more (the batched path has its own code for one and for two).
#[test]
fn batched_lookups_equal_singles_as_the_filter_grows() {
    let probes: Vec<Vec<u8>> = (0..1200).map(item).collect();
    for w in WIDTHS {
        for bs in [2u16, 3, 4] {
            let mut f = filter(200, bs, 20, 1, w);
            let mut counts = Vec::new();
            for (i, batch) in probes.chunks(100).enumerate() {
                let mut out = Vec::new();
                f.insert_many(batch, i % 2 == 1, 32, &Unlimited, &mut out).unwrap();
                let mut exists = Vec::new();
                f.contains_many(&probes, &mut exists);
                let expected: Vec<bool> = probes.iter().map(|p| f.contains(p)).collect();
                assert_eq!(exists, expected, "{w:?} bucket size {bs} batch {i}");
                counts.push(f.info().filters);
            }
            assert!(counts.contains(&1) && counts.contains(&2), "{w:?} {bs}: {counts:?}");
            assert!(counts.iter().any(|&c| c > 2), "{w:?} {bs}: {counts:?}");
        }
    }
}

/// `CF.COUNT` counts a bucket once when both of an item's indexes reduce to it (RedisBloom
/// counts it twice): in a 2-bucket sub-filter every even fingerprint has one bucket.
#[test]
fn count_does_not_double_count_a_shared_bucket() {
    let mut f = filter(4, 2, 20, 0, FingerprintWidth::W8);
    let shared = (0..1000u64)
        .map(item)
        .find(|i| super::fingerprint::Lookup::<u8>::of(i).fp % 2 == 0)
        .unwrap();
    f.add(&shared, false, 32, &Unlimited).unwrap();
    assert_eq!(f.count(&shared), 1);
    let CuckooFilter::W8(c) = &f else { unreachable!() };
    assert_eq!(c.count_as_redisbloom(&shared), 2);
}

/// Wider fingerprints: far fewer false positives at capacity (measured: 16 bits ≤ 0.02%).
#[test]
fn wider_fingerprints_cut_false_positives() {
    let n = 20_000u64;
    let mut rates = Vec::new();
    for w in WIDTHS {
        let mut f = filter(n, 2, 20, 1, w);
        for i in 0..n {
            f.add(&item(i), false, 32, &Unlimited).unwrap();
        }
        let probes = 200_000u64;
        let fp = (0..probes).filter(|i| f.contains(format!("absent:{i}").as_bytes())).count();
        rates.push(fp as f64 / probes as f64);
    }
    assert!(rates[0] > 0.001 && rates[0] < 0.03, "8 bits: {}", rates[0]);
    assert!(rates[1] <= 0.0002, "16 bits: {}", rates[1]);
    assert!(rates[2] <= 0.000_01, "32 bits: {}", rates[2]);
}
