//! Query kernels: the mask query against the skipping query, the age mask, the batched query
//! against the per-item one, and the AVX2 and AVX-512F block tests against the scalar ones.

use super::*;
use crate::filter::window::apbf::{age_mask, found, group_mix, has_run, phys_bits_scalar, row_bit};

#[test]
fn the_mask_query_agrees_with_the_skipping_query() {
    let mut x = 0x1234_5678_9abc_def0u64;
    let mut next = move || {
        x = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
        group_mix(x, 0)
    };
    let mut runs = 0;
    for _ in 0..20_000 {
        let n = 1 + (next() % 200) as usize;
        let k = 1 + (next() % n.min(40) as u64) as usize;
        let (a, b) = ((next() % (n as u64 + 1)) as usize, (next() % (n as u64 + 1)) as usize);
        let (lo, hi) = (a.min(b), a.max(b));
        let dense = next() % 2 == 0;
        let mut m = [0u64; 4];
        for w in &mut m {
            *w = next() | next() | if dense { next() | next() } else { 0 };
        }
        let expected = found(k, lo, hi, |age| m[age / 64] >> (age % 64) & 1 == 1);
        runs += usize::from(expected);
        assert_eq!(has_run(m, k, lo, hi), expected, "n {n} k {k} lo {lo} hi {hi} {m:x?}");
    }
    assert!(runs > 1000, "{runs}");
}

#[test]
fn the_age_mask_reads_each_slice_at_the_item_bit() {
    for n in [5usize, 63, 64, 65, 99, 128, 155, 200] {
        for head in [0, 1, n / 2, n - 1] {
            let h2 = 0xdead_beef_1234_5677u64.wrapping_mul(n as u64 + 1) | 1;
            // Slices of even physical index hold the item's bit, odd ones every bit but it.
            let slots: Vec<u64> =
                (0..n).map(|p| if p % 2 == 0 { row_bit(h2, p) } else { !row_bit(h2, p) }).collect();
            let m = age_mask(&slots, h2, head);
            for age in 0..n {
                let p = (head + age) % n;
                assert_eq!(m[age / 64] >> (age % 64) & 1 == 1, p % 2 == 0, "n {n} head {head}");
            }
        }
    }
}

/// The batched query (AVX-512F where the CPU has it, else AVX2, else the per-item path) gives
/// each item the per-item query's answer, at probe counts from 4 to 16 and with rows stale by
/// every number of turns (a count window turned 0..=6 times past its items).
#[test]
fn the_batched_query_answers_as_the_per_item_query() {
    let mut probes_seen = Vec::new();
    for error in [0.2, 0.05, 0.01, 0.001, 0.0001] {
        let p = choose_in(WindowLayout::Generations, WindowKind::Items, error, 2000).unwrap();
        probes_seen.push(p.probes);
        let mut f = WindowFilter::new(p, 7, 0, &Unlimited).unwrap();
        let items = names("b", 3000);
        let absent = names("never", 3000);
        for x in &items {
            f.add(x.as_bytes(), 0);
        }
        for turn in 0..=6 {
            for batch in [&items, &absent] {
                let got = f.contains_many(batch.iter().map(|x| x.as_bytes()), 0);
                for (x, got) in batch.iter().zip(got) {
                    assert_eq!(got, f.contains(x.as_bytes(), 0), "{x} at {error}, turn {turn}");
                }
            }
            // A turn: new items fill the newest generation and the ring moves on.
            for x in names(&format!("t{turn}-"), p.gen_items as usize) {
                f.add(x.as_bytes(), 0);
            }
        }
    }
    assert!(probes_seen.iter().any(|&k| k <= 8) && probes_seen.iter().any(|&k| k > 8));
}

/// Random block-test cases (probes, probe hash, the item's mask, a row's blocks): each block
/// holds the mask, or all of it but random bits, on random other bits.
fn random_block_cases(
    seed: u64,
    n: usize,
) -> impl Iterator<Item = (u32, u64, [u64; 8], GenBlocks)> {
    let mut x = seed;
    let mut next = move || {
        x = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
        group_mix(x, 3)
    };
    (0..n).map(move |_| {
        let (k, h2) = (1 + (next() % 16) as u32, next());
        let mask = crate::filter::masks::probe_mask(k, h2);
        let blocks: GenBlocks = std::array::from_fn(|i| {
            let w = next() & next();
            if next() % 3 == 0 { w | mask[i % 8] } else { w | (mask[i % 8] & next()) }
        });
        (k, h2, mask, blocks)
    })
}

#[cfg(target_arch = "x86_64")]
#[test]
fn the_avx2_generation_test_agrees_with_the_scalar_one() {
    assert!(std::arch::is_x86_feature_detected!("avx2"), "this test needs an AVX2 CPU");
    let mut seen = [0u32; 32];
    for (_, _, mask, blocks) in random_block_cases(0x5eed_f00d_0000_0001, 20_000) {
        let expected = super::holding::holding_scalar(&blocks, &mask);
        seen[expected as usize] += 1;
        // SAFETY: the CPU has AVX2 (asserted above).
        assert_eq!(unsafe { super::holding_avx2(&blocks, &mask) }, expected);
    }
    assert!(seen.iter().filter(|&&c| c > 0).count() > 16, "{seen:?}");
}

#[cfg(target_arch = "x86_64")]
#[test]
fn the_avx2_row_test_agrees_with_the_scalar_one_on_random_rows() {
    // A machine without AVX2 cannot run the vector path: the test says so rather than pass.
    assert!(std::arch::is_x86_feature_detected!("avx2"), "this test needs an AVX2 CPU");
    let mut x = 0x0bad_cafe_f00d_1234u64;
    let mut next = move || {
        x = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
        group_mix(x, 7)
    };
    let mut ones = 0u32;
    for _ in 0..20_000 {
        let n = 1 + (next() % 200) as usize;
        let h2 = next();
        let dense = next() % 2 == 0;
        // Rows that hold the item's bit in about half the slices, on random other bits.
        let slots: Vec<u64> = (0..n)
            .map(|p| {
                let w = next() & if dense { next() } else { next() & next() };
                if next() % 2 == 0 { w | row_bit(h2, p) } else { w & !row_bit(h2, p) }
            })
            .collect();
        let expected = phys_bits_scalar(&slots, h2);
        ones += expected.iter().map(|w| w.count_ones()).sum::<u32>();
        // SAFETY: the CPU has AVX2 (asserted above).
        let got = unsafe { super::apbf::phys_bits_avx2(&slots, h2) };
        assert_eq!(got, expected, "n {n} h2 {h2:x}");
    }
    assert!(ones > 100_000, "{ones}");
}

/// [`super::gen512::holding`] for a run-time probe count (1..=16).
#[cfg(all(target_arch = "x86_64", scalebloom_avx512))]
#[target_feature(enable = "avx512f,avx2,bmi2")]
fn holding_avx512(blocks: &GenBlocks, k: u32, h2: u64) -> u32 {
    macro_rules! by_probes {
        ($($k:literal)*) => {
            match k {
                // SAFETY: this function is compiled with AVX-512F and runs only where the CPU
                // has it (its caller checks); `$k` is in 1..=16.
                $($k => unsafe { super::gen512::holding::<$k>(blocks, h2) },)*
                _ => unreachable!("1..=16 probes"),
            }
        };
    }
    by_probes!(1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16)
}

/// The AVX-512F block test against the scalar one, on blocks that hold the mask, or all of it
/// but random bits. It needs a CPU with AVX-512F; on others the AVX2 test above and the batched
/// query's test cover what runs there, and this one says it did not run.
#[cfg(all(target_arch = "x86_64", scalebloom_avx512))]
#[test]
fn avx512_block_test_matches_the_scalar_test() {
    if !std::arch::is_x86_feature_detected!("avx512f") {
        eprintln!("avx512_block_test_matches_the_scalar_test: this CPU has no AVX-512F: not run");
        return;
    }
    let mut seen = [0u32; 32];
    for (k, h2, mask, blocks) in random_block_cases(0x0dd5_eed5_0000_0001, 40_000) {
        let expected = super::holding::holding_scalar(&blocks, &mask);
        seen[expected as usize] += 1;
        // SAFETY: the CPU has AVX-512F (checked above).
        assert_eq!(unsafe { holding_avx512(&blocks, k, h2) }, expected, "k {k}");
    }
    assert!(seen.iter().filter(|&&c| c > 0).count() > 16, "{seen:?}");
}
