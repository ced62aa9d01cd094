//! The generations layout's block test with AVX-512F, for the batched query on CPUs that have
//! it: the item's probes' positions, sixteen 32-bit lanes, pick each block's words by one
//! permute and are tested by one masked test, with no probe mask built (the AVX2 path sets the
//! mask's bits one by one). Same answers as [`holding_scalar`](super::holding::holding_scalar) of the
//! item's mask (unit test `avx512_block_test_matches_the_scalar_test`).
//!
//! Compiled only where the compiler has the AVX-512 intrinsics (Rust 1.89; `build.rs` sets
//! `scalebloom_avx512`): the crate's `rust-version` stays 1.85, whose builds leave this out.
#![allow(
    clippy::incompatible_msrv,
    reason = "compiled only with Rust 1.89 or newer (cfg scalebloom_avx512, set by build.rs)"
)]

use super::params::{GEN_BLOCKS, GenBlocks};
use crate::filter::masks::{is_short, probe_tops};

/// Bit `p` of the result: whether physical block `p` of `blocks` holds every one of the `K`
/// probes of probe hash `h2` (the blocked layer's probes: the top 9 bits of `h2 · φ^i`, bit
/// `p & 31` of 32-bit word `p >> 5`).
///
/// # Safety
/// The CPU has AVX-512F (and so AVX2); `K` is in 1..=16. Inlined only into functions compiled
/// with AVX-512F.
#[inline(always)]
pub(super) unsafe fn holding<const K: u32>(blocks: &GenBlocks, h2: u64) -> u32 {
    use std::arch::x86_64::*;
    debug_assert!((1..=16).contains(&K), "one 16-lane vector of probes");
    // SAFETY: the caller's precondition (AVX-512F, which implies AVX2, so `probe_tops` and the
    // intrinsics run); each 512-bit load reads the eight words of block `p < GEN_BLOCKS`,
    // inside `blocks`.
    unsafe {
        let a_lo = _mm256_set1_epi32(h2 as u32 as i32);
        let a_hi = _mm256_set1_epi32((h2 >> 32) as u32 as i32);
        let short = is_short(h2);
        let lo = probe_tops(a_lo, a_hi, 0, short);
        let hi = if K > 8 { probe_tops(a_lo, a_hi, 1, short) } else { _mm256_setzero_si256() };
        let tops = _mm512_inserti64x4::<1>(_mm512_castsi256_si512(lo), hi);
        let positions = _mm512_srli_epi32::<23>(tops);
        // The 32-bit word of each probe (the permute reads an index's low four bits) and its
        // bit (a rotate takes the count mod 32).
        let words = _mm512_srli_epi32::<5>(positions);
        let bits = _mm512_rolv_epi32(_mm512_set1_epi32(1), positions);
        // The first K lanes (K ≤ 16: the shift stays below 32, the mask fits 16 bits).
        let lanes = ((1u32 << K) - 1) as __mmask16;
        let mut hits = 0;
        for p in 0..GEN_BLOCKS {
            let block = _mm512_loadu_si512(blocks.as_ptr().add(8 * p).cast());
            let picked = _mm512_permutexvar_epi32(words, block);
            // The probes whose bit is clear in this block.
            let missing = _mm512_mask_testn_epi32_mask(lanes, picked, bits);
            hits |= u32::from(missing == 0) << p;
        }
        hits
    }
}
