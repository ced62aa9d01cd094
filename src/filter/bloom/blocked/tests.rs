//! The blocked kernels against the reference loop, and the shared probe masks against what
//! an add sets.

use super::*;
use crate::filter::hash::xxh3short::Xxh3Seeded;
use crate::filter::masks::probe_mask;
#[cfg(target_arch = "x86_64")]
use crate::filter::masks::probe_mask_avx2;
use crate::filter::testrng::XorShift;

/// Every kernel set (baseline, BMI2, AVX2 where the CPU has them) of every `k` from 1 to
/// past the unrolled ones gives the baseline loop's answers and bits, on blocks from empty
/// to nearly full, including items whose probes share a bit.
#[test]
fn every_kernel_equals_the_loop() {
    let mut checked = 0;
    for k in 1..=BLOCKED_UNROLLED_MAX + 3 {
        let reference = BlockedKernels::baseline(0);
        for (name, kernels) in BlockedKernels::all_variants(k) {
            let mut rng = XorShift(0x1234_5678_9abc_def1u64 ^ u64::from(k));
            let mut next = || rng.next_u64();
            for fill in [0u32, 1, 2, 4, 6] {
                for n in 0..400 {
                    let mut block = [0u64; 8];
                    for w in &mut block {
                        for _ in 0..fill {
                            *w |= next() & next();
                        }
                    }
                    // Half of them scheme 4's `h2` (low half 1: the 32-bit probes).
                    let h2 = if n % 2 == 0 { next() | 1 } else { next() << 32 | 1 };
                    let expect = reference.all_set_in(&block, k, h2);
                    assert_eq!(kernels.all_set_in(&block, k, h2), expect, "{name} k={k}");
                    let mut by_loop = block;
                    let n = reference.set_clear_in(&mut by_loop, k, h2);
                    assert_eq!(n > 0, !expect);
                    let mut b = block;
                    assert_eq!(kernels.set_clear_in(&mut b, k, h2), n, "{name} k={k}");
                    assert_eq!(b, by_loop, "{name} k={k}");
                    assert!(kernels.all_set_in(&b, k, h2));
                    checked += 1;
                }
            }
        }
    }
    assert!(checked >= 2000 * (BLOCKED_UNROLLED_MAX as usize + 3));
}

/// Adds `hashes` one at a time with the baseline kernels `reference`: each item's answer (new
/// or not), and the counts a batch add returns `(new items, bits flipped)`.
fn add_one_by_one(
    reference: &BlockedKernels,
    words: &mut [u64],
    k: u32,
    hashes: &[ItemHash],
) -> (Vec<bool>, (u64, u64)) {
    let (mut new, mut flipped) = (0, 0);
    let answers = hashes
        .iter()
        .map(|&h| {
            let n = reference.set_clear(words, k, h);
            flipped += u64::from(n);
            new += u64::from(n > 0);
            n > 0
        })
        .collect();
    (answers, (new, flipped))
}

/// For each `k` and every kernel set: 40 rounds of adding `hashes(round)` with the batch
/// kernels (`all_short` as given) into `blocks` blocks give the one-item baseline kernels'
/// answers, bits and counts, and the batch test of `probes(hashes)` their answers, which
/// `check` may assert more of.
fn batches_equal_one_by_one(
    blocks: usize,
    all_short: bool,
    hashes: impl Fn(u64) -> Vec<ItemHash>,
    probes: impl Fn(&[ItemHash]) -> Vec<ItemHash>,
    check: impl Fn(&[bool]),
) {
    for k in [1, 6, 7, 8, 9, 11, 16, 17, 20] {
        for (name, kernels) in BlockedKernels::all_variants(k) {
            let reference = BlockedKernels::baseline(0);
            let mut words = vec![0u64; blocks * 8];
            let mut by_one = words.clone();
            for round in 0..40u64 {
                let hashes = hashes(round);
                let (expect, (new, flipped)) = add_one_by_one(&reference, &mut by_one, k, &hashes);
                let mut out = Vec::new();
                let got = kernels.set_clear_many(&mut words, k, &hashes, all_short, &mut out);
                assert_eq!((out, got), (expect, (new, flipped)), "{name} k={k}");
                assert_eq!(words, by_one, "{name} k={k}");
                let probe = probes(&hashes);
                let mut out = Vec::new();
                kernels.all_set_many(&words, k, &probe, all_short, &mut out);
                let expect: Vec<bool> =
                    probe.iter().map(|&h| reference.all_set(&words[..], k, h)).collect();
                assert_eq!(out, expect, "{name} k={k}");
                check(&out);
            }
        }
    }
}

/// The batch kernels of every set give the one-item baseline kernels' answers, bits and
/// counts over a slice of blocks, items repeating within a batch included.
#[test]
fn batch_kernels_equal_one_by_one() {
    let hashes = |round: u64| -> Vec<ItemHash> {
        (0..16u64)
            .map(|i| {
                let x = (round * 7 + i % 11).wrapping_mul(0x9E37_79B9_7F4A_7C15);
                // Odd `i`: scheme 4's `h2` (low half 1).
                let h2 = if i % 2 == 0 { x.rotate_left(17) | 1 } else { x << 32 | 1 };
                ItemHash { h1: x ^ (x >> 29), h2 }
            })
            .collect()
    };
    // Other blocks' tests, then the items added: those all answer 1.
    let probes = |hashes: &[ItemHash]| -> Vec<ItemHash> {
        hashes
            .iter()
            .map(|h| ItemHash { h1: h.h1.rotate_left(3), h2: h.h2 })
            .chain(hashes.iter().copied())
            .collect()
    };
    batches_equal_one_by_one(64, false, hashes, probes, |out| {
        assert!(out[16..].iter().all(|&b| b));
    });
}

/// The probe mask (scalar and AVX2) is what an add sets in an empty block, for every `k`.
#[test]
fn the_probe_mask_is_what_an_add_sets() {
    let mut x = 0x0123_4567_89ab_cdefu64;
    for k in 1..=20 {
        for i in 0..200 {
            x = x.wrapping_mul(BLOCK_PROBE_MUL).wrapping_add(i);
            let h2 = [1u64, 3, u64::MAX].get(i as usize).copied().unwrap_or(x);
            let mut block = [0u64; 8];
            BlockedKernels::baseline(k).set_clear_in(&mut block, k, h2);
            assert_eq!(probe_mask(k, h2), block, "k={k}");
            #[cfg(target_arch = "x86_64")]
            if std::arch::is_x86_feature_detected!("avx2")
                && std::arch::is_x86_feature_detected!("bmi2")
            {
                // SAFETY: the CPU has AVX2 and BMI2 (checked just above).
                assert_eq!(unsafe { probe_mask_avx2(k, h2) }, block, "avx2 k={k}");
            }
        }
    }
}

/// The loop's probes are the layout's: `x_0 = h2`, `x_{i+1} = x_i · φ`, top 9 bits.
#[test]
fn the_loop_sets_the_defined_bits() {
    for h2 in [1u64, 3, 0xdead_beef_0000_0001, u64::MAX] {
        let mut block = [0u64; 8];
        BlockedKernels::baseline(0).set_clear_in(&mut block, 20, h2);
        let mut expect = [0u64; 8];
        let mut x = h2;
        for _ in 0..20 {
            let p = x >> 55;
            expect[(p / 64) as usize] |= 1 << (p % 64);
            x = x.wrapping_mul(BLOCK_PROBE_MUL);
        }
        assert_eq!(block, expect);
    }
}

/// A batch of scheme 4 hashes (every `h2` short) taken as such (`all_short`: no test per item)
/// gives the one-item baseline kernels' answers, bits and counts, in every kernel set.
#[test]
fn all_short_batches_equal_one_by_one() {
    let hashes = |round: u64| -> Vec<ItemHash> {
        (0..64u64)
            .map(|i| {
                let x = (round * 37 + i % 23).wrapping_mul(0x9E37_79B9_7F4A_7C15);
                ItemHash { h1: x ^ (x >> 31), h2: x << 32 | 1 }
            })
            .collect()
    };
    let probes = |hashes: &[ItemHash]| -> Vec<ItemHash> {
        hashes.iter().map(|h| ItemHash { h1: h.h1.rotate_left(7), h2: h.h2 }).collect()
    };
    batches_equal_one_by_one(32, true, hashes, probes, |_| {});
}

/// The hash-and-probe kernels ([`ItemsKernels`]) of every set give what hashing each item with
/// scheme 4 and adding or testing it with the one-item baseline kernels gives: answers, bits
/// and counts, for items of every length class (0 to 40 bytes: each xxh3 path), repeats
/// within a batch included, under two seeds.
#[test]
fn items_kernels_equal_hashing_then_one_by_one() {
    use crate::filter::hash::HashScheme;
    for seed in [0u64, 0x5eed_1234_abcd_ef01] {
        for k in [1, 6, 7, 8, 9, 11, 16, 17, 20] {
            for (name, kernels) in ItemsKernels::<Vec<u8>>::all_variants(k) {
                let reference = BlockedKernels::baseline(0);
                let xxh3 = Xxh3Seeded::new(seed);
                let mut words = vec![0u64; 32 * 8];
                let mut by_one = words.clone();
                for round in 0..30usize {
                    // Batches of 0 to 3 items first (the adds' first and last items are taken
                    // apart from the loop), then of 48.
                    let len = if round < 4 { round } else { 48 };
                    let items: Vec<Vec<u8>> = (0..len)
                        .map(|i| {
                            let n = (round * 5 + i % 41) % 41;
                            (0..n).map(|j| (j * 31 + round * 7 + i % 13) as u8).collect()
                        })
                        .collect();
                    let hashes: Vec<ItemHash> =
                        items.iter().map(|it| HashScheme::Xxh3Blocked.hash(it, seed)).collect();
                    let (expect, (new, flipped)) =
                        add_one_by_one(&reference, &mut by_one, k, &hashes);
                    let mut out = vec![true];
                    let got = kernels.set_clear_items(&mut words, k, &items, &xxh3, &mut out);
                    assert!(out[0], "{name} k={k}: earlier answers kept");
                    assert_eq!(out.len(), items.len() + 1, "{name} k={k}");
                    assert_eq!((&out[1..], got), (&expect[..], (new, flipped)), "{name} k={k}");
                    assert_eq!(words, by_one, "{name} k={k}");
                    // Present items, then others (mostly absent in 32 blocks at this fill).
                    let probes: Vec<Vec<u8>> = items
                        .iter()
                        .cloned()
                        .chain(items.iter().map(|it| [it.as_slice(), b"?"].concat()))
                        .collect();
                    let mut out = Vec::new();
                    kernels.all_set_items(&words, k, &probes, &xxh3, &mut out);
                    let expect: Vec<bool> = probes
                        .iter()
                        .map(|it| {
                            let h = HashScheme::Xxh3Blocked.hash(it, seed);
                            reference.all_set(&words[..], k, h)
                        })
                        .collect();
                    assert_eq!(out, expect, "{name} k={k}");
                    assert!(out[..items.len()].iter().all(|&b| b));
                }
            }
        }
    }
}
