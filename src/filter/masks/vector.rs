//! The probes of an item eight per 256-bit AVX2 vector (x86-64 only). Each function is
//! inlined into functions compiled with AVX2 (the blocked Bloom kernels, the windowed filter's
//! batched query), which is its precondition.

use super::{POWER_HALVES, is_short, mask_scalar};

/// The top 32 bits of the low 64 of `h2 · φ^i` for the eight probes `i` of group `g`
/// (`8g..8g + 8`, `g < 2`), lane by lane (`a_lo`, `a_hi`: the halves of `h2` in every lane;
/// `short`: [`is_short`] of `h2`, whose probes take one multiply, see [`short_top`](super::short_top)).
/// Precondition: the CPU has AVX2; inlined only into functions compiled with it.
#[inline(always)]
pub(crate) unsafe fn probe_tops(
    a_lo: std::arch::x86_64::__m256i,
    a_hi: std::arch::x86_64::__m256i,
    g: usize,
    short: bool,
) -> std::arch::x86_64::__m256i {
    // SAFETY: the caller's precondition (AVX2), and `g < 2`.
    unsafe { probe_tops_of(&POWER_HALVES, a_lo, a_hi, g, short) }
}

/// `φ^i` for `i < K` and `φ^0` = 1 in the lanes past `K` (halves as in [`POWER_HALVES`]): with
/// them a vector's lanes past the item's probes compute its probe 0 again, which an
/// all-set test may test twice, so no lane needs masking out.
pub(crate) struct PaddedPowers<const K: u32>;

impl<const K: u32> PaddedPowers<K> {
    pub(crate) const HALVES: ([u32; 16], [u32; 16]) = {
        let (mut lo, mut hi) = ([1u32; 16], [0u32; 16]);
        let mut i = 0;
        while i < 16 && i < K as usize {
            lo[i] = POWER_HALVES.0[i];
            hi[i] = POWER_HALVES.1[i];
            i += 1;
        }
        (lo, hi)
    };
}

/// [`probe_tops`] with the powers' halves taken from `halves` (`φ^i` in lane `i`, or
/// [`PaddedPowers`]). Precondition: the CPU has AVX2; inlined only into functions compiled
/// with it; `g < 2`.
#[inline(always)]
pub(crate) unsafe fn probe_tops_of(
    halves: &([u32; 16], [u32; 16]),
    a_lo: std::arch::x86_64::__m256i,
    a_hi: std::arch::x86_64::__m256i,
    g: usize,
    short: bool,
) -> std::arch::x86_64::__m256i {
    use std::arch::x86_64::*;
    // SAFETY: the caller's precondition (AVX2); `g < 2`, so lanes `8g..8g + 8` are inside the
    // 16-entry tables.
    unsafe {
        let (b_lo, b_hi) = (
            _mm256_loadu_si256(halves.0.as_ptr().add(g * 8).cast()),
            _mm256_loadu_si256(halves.1.as_ptr().add(g * 8).cast()),
        );
        if short {
            // `a_lo` = 1: `a_hi · b_lo + b_hi` (see `short_top`).
            return _mm256_add_epi32(_mm256_mullo_epi32(a_hi, b_lo), b_hi);
        }
        // mulhi(a_lo, b_lo) per 32-bit lane: even lanes from one 32×32→64 multiply, odd ones
        // from another of the odd halves, blended.
        let even = _mm256_srli_epi64::<32>(_mm256_mul_epu32(a_lo, b_lo));
        let odd = _mm256_mul_epu32(a_lo, _mm256_srli_epi64::<32>(b_lo));
        let mulhi = _mm256_blend_epi32::<0b1010_1010>(even, odd);
        let cross =
            _mm256_add_epi32(_mm256_mullo_epi32(a_lo, b_hi), _mm256_mullo_epi32(a_hi, b_lo));
        _mm256_add_epi32(mulhi, cross)
    }
}

/// [`mask_scalar`] for `K` in 1..=16: the probes' positions eight per AVX2 vector (as in
/// [`all_set_vector`]), then their bits set one by one in the block's words. Precondition: the
/// CPU has AVX2; inlined only into functions compiled with it (the windowed filter's batched
/// query inlines it for its `K`).
#[inline(always)]
pub(crate) unsafe fn mask_vector<const K: u32>(h2: u64) -> [u64; 8] {
    use std::arch::x86_64::*;
    let mut mask = [0u64; 8];
    // SAFETY: the caller's precondition (AVX2); `g · 8 < K ≤ 16` keeps `g < 2`; the store
    // writes the eight lanes into `positions`.
    unsafe {
        let a_lo = _mm256_set1_epi32(h2 as u32 as i32);
        let a_hi = _mm256_set1_epi32((h2 >> 32) as u32 as i32);
        let short = is_short(h2);
        let mut g = 0;
        while g * 8 < K as usize {
            // The probe: the top 9 bits of the product, bit `p & 31` of 32-bit word `p >> 5`.
            let p = _mm256_srli_epi32::<23>(probe_tops(a_lo, a_hi, g, short));
            let mut positions = [0u32; 8];
            _mm256_storeu_si256(positions.as_mut_ptr().cast(), p);
            for &p in positions.iter().take(K as usize - g * 8) {
                mask[(p >> 6) as usize & 7] |= 1 << (p & 63);
            }
            g += 1;
        }
    }
    mask
}

/// [`probe_mask`](super::probe_mask) in a function compiled with AVX2 and BMI2 (the probes' positions eight per
/// vector), for callers compiled with them, which inline it.
///
/// # Safety
/// The CPU has AVX2 and BMI2 (callers outside such functions call it in `unsafe`).
#[target_feature(enable = "avx2,bmi2")]
#[inline]
pub fn probe_mask_avx2(k: u32, h2: u64) -> [u64; 8] {
    macro_rules! unrolled {
        ($($n:literal)*) => {
            match k {
                // SAFETY: this function is compiled with AVX2 and only runs where the CPU has
                // it (a `target_feature` function).
                $($n => unsafe { mask_vector::<$n>(h2) },)*
                _ => mask_scalar::<0>(k, h2),
            }
        };
    }
    unrolled!(1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16)
}
