//! Which generations' blocks of a row hold an item: its probe mask tested against each block
//! (scalar, AVX2), and the AVX-512 test where it is compiled.

#[cfg(all(target_arch = "x86_64", scalebloom_avx512))]
use super::gen512;
use super::params::{GEN_BLOCKS, GenBlocks};
use crate::filter::masks::probe_mask;
#[cfg(target_arch = "x86_64")]
use crate::filter::masks::probe_mask_avx2;

/// Bit `p` of the result is whether block `p` of `blocks` holds every bit of `mask`. No branch
/// on the data. The scalar model of [`holding_avx2`].
#[inline(always)]
pub(super) fn holding_scalar(blocks: &GenBlocks, mask: &[u64; 8]) -> u32 {
    let mut bits = 0;
    for (p, block) in blocks.chunks_exact(8).enumerate() {
        let mut miss = 0u64;
        for (b, m) in block.iter().zip(mask) {
            miss |= m & !b;
        }
        bits |= u32::from(miss == 0) << p;
    }
    bits
}

/// [`holding_scalar`] by two 256-bit and-not/test per block.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
#[inline]
pub(super) fn holding_avx2(blocks: &GenBlocks, mask: &[u64; 8]) -> u32 {
    use std::arch::x86_64::*;
    // SAFETY: each unaligned 256-bit load reads four words inside `mask` (words 0..4, 4..8)
    // or inside `blocks` (words 8p..8p + 4 and 8p + 4..8p + 8, p < GEN_BLOCKS).
    unsafe {
        let m = mask.as_ptr();
        let (m0, m1) = (_mm256_loadu_si256(m.cast()), _mm256_loadu_si256(m.add(4).cast()));
        let mut bits = 0;
        for p in 0..GEN_BLOCKS {
            let b = blocks.as_ptr().add(8 * p);
            let (b0, b1) = (_mm256_loadu_si256(b.cast()), _mm256_loadu_si256(b.add(4).cast()));
            let miss = _mm256_or_si256(_mm256_andnot_si256(b0, m0), _mm256_andnot_si256(b1, m1));
            bits |= (_mm256_testz_si256(miss, miss) as u32) << p;
        }
        bits
    }
}

/// Which blocks of `blocks` hold the item's probe mask (`probes` probes of probe hash `h2` in
/// a 512-bit block), in one function compiled with AVX2 and BMI2: the mask is made in
/// registers and tested without a call between.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,bmi2")]
fn gen_test_avx2(blocks: &GenBlocks, probes: u32, h2: u64) -> u32 {
    holding_avx2(blocks, &probe_mask_avx2(probes, h2))
}

/// Which blocks of `blocks` hold the item's probe mask ([`holding_scalar`]; AVX2 and BMI2
/// where the CPU has them).
#[inline]
pub(super) fn gen_test(blocks: &GenBlocks, probes: u32, h2: u64) -> u32 {
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("avx2") && std::arch::is_x86_feature_detected!("bmi2") {
        // SAFETY: the CPU has AVX2 and BMI2 (checked just above).
        return unsafe { gen_test_avx2(blocks, probes, h2) };
    }
    holding_scalar(blocks, &probe_mask(probes, h2))
}

/// [`gen512::holding`], where it is compiled.
///
/// # Safety
/// As [`gen512::holding`]: the CPU has AVX-512F; `K` is in 1..=16.
#[cfg(all(target_arch = "x86_64", scalebloom_avx512))]
#[inline(always)]
pub(super) unsafe fn wide_holding<const K: u32>(blocks: &GenBlocks, h2: u64) -> u32 {
    // SAFETY: the caller's precondition, which is `holding`'s.
    unsafe { gen512::holding::<K>(blocks, h2) }
}

/// Never called: the AVX-512 query is compiled only with Rust 1.89 or newer, and only it asks
/// for the AVX-512 test (`WIDE`).
///
/// # Safety
/// None needed; it only panics.
#[cfg(all(target_arch = "x86_64", not(scalebloom_avx512)))]
#[inline(always)]
pub(super) unsafe fn wide_holding<const K: u32>(_: &GenBlocks, _: u64) -> u32 {
    unreachable!("the AVX-512 test is compiled only where gen512 is")
}
