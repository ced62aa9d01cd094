//! The AVX2 bodies of the blocked kernels (x86-64 only): eight probes' positions per 256-bit
//! vector. Each is inlined into functions compiled with AVX2 (the `_avx2` kernels of
//! [`super`], the windowed filter's batched query), which is their precondition.

use super::{set_probes_scalar, set_word_bit};
use crate::filter::masks::{PaddedPowers, is_short, probe_tops, probe_tops_of};

/// [`set_probes_scalar`] for `K` in 1..=16 and a scheme 4 `h2` ([`is_short`]): the probes'
/// word and bit, eight per AVX2 vector (one multiply, one add and two shifts for eight), then
/// each set as in [`set_block_bit`](super::set_block_bit) (two loads of its word and bit, then load, `bts`, `adc`,
/// store: 6 instructions a probe, against 9 with the position computed in scalar). Other
/// `h2` (and `K` = 0) take [`set_probes_scalar`]. Precondition: the CPU has AVX2; inlined
/// only into functions compiled with it (the `_avx2` kernels).
#[inline(always)]
pub(super) unsafe fn set_probes_vector<const K: u32>(
    block: &mut [u64; 8],
    k: u32,
    h2: u64,
    short: bool,
) -> u32 {
    use std::arch::x86_64::*;
    if K == 0 || !short {
        return set_probes_scalar::<K>(block, k, h2, short);
    }
    let mut set = 0u32;
    let mut g = 0;
    while g * 8 < K as usize {
        let (mut words, mut bits) = ([0u32; 8], [0u32; 8]);
        // SAFETY: the caller's precondition (AVX2); `g · 8 < K ≤ 16` keeps `g < 2`; the stores
        // write the eight lanes into the two arrays.
        unsafe {
            let a_hi = _mm256_set1_epi32((h2 >> 32) as u32 as i32);
            let top = probe_tops(_mm256_set1_epi32(1), a_hi, g, true);
            // Word `top >> 29` (below 8), bit `(top >> 23) mod 64` of it (see `short_top`):
            // the bits `set_probes_scalar` sets.
            _mm256_storeu_si256(words.as_mut_ptr().cast(), _mm256_srli_epi32::<29>(top));
            _mm256_storeu_si256(bits.as_mut_ptr().cast(), _mm256_srli_epi32::<23>(top));
        }
        for (&word, &bit) in words.iter().zip(&bits).take(K as usize - g * 8) {
            // SAFETY: `word` is a 32-bit lane shifted right by 29 (above): below 8.
            unsafe { set_word_bit(block, word as usize, bit, &mut set) };
        }
        g += 1;
    }
    set
}

/// [`all_set_scalar`](super::all_set_scalar) for `K` in 1..=16, 8 probes per AVX2 vector. Precondition: the CPU has
/// AVX2; inlined only into functions compiled with it (the `_avx2` kernels).
///
/// For probes `i` of one vector, with `a = h2` and `b = φ^i` split in 32-bit halves, the top
/// 32 bits of the low 64 of `a · b` are `mulhi(a_lo, b_lo) + a_lo · b_hi + a_hi · b_lo`
/// (mod 2^32); the probe is their top 9 bits, bit `p & 31` of the block's 32-bit word `p >> 5`
/// (little-endian: the same bit as bit `p & 63` of 64-bit word `p >> 6`).
#[inline(always)]
pub(super) unsafe fn all_set_vector<const K: u32>(
    block: &[u64; 8],
    _k: u32,
    h2: u64,
    short: bool,
) -> bool {
    // SAFETY: the caller's precondition: the CPU has AVX2, so the intrinsics run; the loads
    // are inside `block` and the power tables (see below).
    unsafe {
        use std::arch::x86_64::*;
        let p = block.as_ptr().cast::<__m256i>();
        // `block` is 64 readable bytes: two unaligned 32-byte loads inside it.
        let (low, high) = (_mm256_loadu_si256(p), _mm256_loadu_si256(p.add(1)));
        let a_lo = _mm256_set1_epi32(h2 as u32 as i32);
        let a_hi = _mm256_set1_epi32((h2 >> 32) as u32 as i32);
        debug_assert_eq!(short, is_short(h2));
        let mut missing = _mm256_setzero_si256();
        let mut g = 0;
        loop {
            // `g · 8 < K ≤ 16`: group `g` of the power tables. Lanes past `K` test probe 0
            // again (`PaddedPowers`): no mask.
            let top = probe_tops_of(&PaddedPowers::<K>::HALVES, a_lo, a_hi, g, short);
            let word = _mm256_srli_epi32::<28>(top);
            let bit = _mm256_srli_epi32::<27>(_mm256_slli_epi32::<4>(top));
            let from_low = _mm256_permutevar8x32_epi32(low, word);
            let from_high = _mm256_permutevar8x32_epi32(high, word);
            // Bit 3 of the word index, moved to the sign bit, picks the high half.
            let pick = _mm256_castsi256_ps(_mm256_slli_epi32::<28>(word));
            let words = _mm256_castps_si256(_mm256_blendv_ps(
                _mm256_castsi256_ps(from_low),
                _mm256_castsi256_ps(from_high),
                pick,
            ));
            let probe = _mm256_sllv_epi32(_mm256_set1_epi32(1), bit);
            g += 1;
            if g * 8 >= K as usize {
                if g == 1 {
                    // One vector (`K` ≤ 8): every probe bit in `words` (`testc`: no `andnot`).
                    return _mm256_testc_si256(words, probe) == 1;
                }
                missing = _mm256_or_si256(missing, _mm256_andnot_si256(words, probe));
                return _mm256_testz_si256(missing, missing) == 1;
            }
            missing = _mm256_andnot_si256(words, probe);
        }
    }
}
