//! The probes of an item in one 512-bit block (a 64-byte cache line): which bits an item sets
//! and tests in the block it hashes to. Blocked Bloom layers (`bloom::blocked`) and the
//! windowed filter's generations (`window`) share them, so the same item has the same bits in
//! both.
//!
//! Probe `i` of an item is bit `x_i >> 55` of its block (the top [`BLOCK_PROBE_BITS`] bits),
//! `x_i = h2 · φ^i` (wrapping, `φ` = [`BLOCK_PROBE_MUL`]): the bits of the sequence
//! `x_0 = h2`, `x_{i+1} = x_i · φ`, each from one multiply by a constant. Hash scheme 4's `h2`
//! (`lo · 2^32 + 1`, `is_short`) gives each probe from 32-bit arithmetic (`short_top`).
//! [`probe_mask`] is an item's bits as one block; `vector` computes the probes eight per AVX2
//! vector.

/// Bits in one block: a 64-byte cache line.
pub const BLOCK_BITS: u64 = 512;
/// Bits of an item's probe hash each probe takes: log2 of [`BLOCK_BITS`].
pub const BLOCK_PROBE_BITS: u32 = 9;

/// The multiplier from one probe of a blocked layer to the next.
pub const BLOCK_PROBE_MUL: u64 = 0x9E37_79B9_7F4A_7C15;

/// The largest probe count with unrolled kernels (blocked layers have 1–16 probes at the
/// error rates sizing allows down to 1e-5 per layer; a chain that tightens per layer may go
/// past it, which takes the loop).
pub const BLOCKED_UNROLLED_MAX: u32 = 16;

/// `φ^i` for `i` below [`BLOCKED_UNROLLED_MAX`].
pub(crate) const POWERS: [u64; BLOCKED_UNROLLED_MAX as usize] = {
    let mut p = [1u64; BLOCKED_UNROLLED_MAX as usize];
    let mut i = 1;
    while i < p.len() {
        p[i] = p[i - 1].wrapping_mul(BLOCK_PROBE_MUL);
        i += 1;
    }
    p
};

/// The low and high 32-bit halves of `φ^i` (eight per vector in the AVX2 kernels).
pub(crate) const POWER_HALVES: ([u32; 16], [u32; 16]) = {
    let (mut lo, mut hi) = ([0u32; 16], [0u32; 16]);
    let mut i = 0;
    while i < 16 {
        lo[i] = POWERS[i] as u32;
        hi[i] = (POWERS[i] >> 32) as u32;
        i += 1;
    }
    (lo, hi)
};

/// The bit of the block that probe `i` of `h2` tests (`K` > 0: `i < K ≤ 16`, a constant).
#[inline(always)]
pub(crate) fn probe_bit(x: u64) -> u32 {
    (x >> (64 - BLOCK_PROBE_BITS)) as u32
}

/// Whether `h2` is a hash scheme 4 `h2` (`lo · 2^32 + 1`): its probes then come from 32-bit
/// arithmetic ([`short_top`]). Any `h2` whose low half is 1 takes that path, whatever its
/// scheme: the bits are the same.
#[inline(always)]
pub(crate) fn is_short(h2: u64) -> bool {
    h2 as u32 == 1
}

/// The top 32 bits of `h2 · φ^i` for an `h2 = lo · 2^32 + 1` (scheme 4), from 32-bit
/// arithmetic: `lo · φ^i_lo + φ^i_hi` (mod 2^32), one multiply by a constant and one add.
///
/// Why: `h2 · P = lo · P · 2^32 + P` (mod 2^64). The first term is `(lo · P_lo mod 2^32) · 2^32`
/// (its low 32 bits are 0), and `P = P_hi · 2^32 + P_lo`: the low 32 bits of the sum are
/// `P_lo` with no carry out, and its top 32 bits are `lo · P_lo + P_hi` (mod 2^32). Probe `i`
/// (the top 9 bits) is `t >> 23`: 64-bit word `t >> 29`, bit `(t >> 23) & 63` of it.
#[inline(always)]
pub(crate) fn short_top(lo: u32, i: usize) -> u32 {
    lo.wrapping_mul(POWER_HALVES.0[i]).wrapping_add(POWER_HALVES.1[i])
}

/// `f(p)` for the bit `p` of each of the `k` probes of `h2`, in order: the bits
/// [`set_probes_scalar`] sets. `K` > 0 is `k` as a constant (unrolled); `K` = 0 takes the loop.
#[inline(always)]
pub(crate) fn each_probe<const K: u32>(k: u32, h2: u64, mut f: impl FnMut(u32)) {
    if K > 0 && is_short(h2) {
        // The same bits as below (see `short_top`).
        let lo = (h2 >> 32) as u32;
        (0..K as usize).for_each(|i| f(short_top(lo, i) >> 23));
    } else if K > 0 {
        (0..K as usize).for_each(|i| f(probe_bit(h2.wrapping_mul(POWERS[i]))));
    } else {
        let mut x = h2;
        for _ in 0..k {
            f(probe_bit(x));
            x = x.wrapping_mul(BLOCK_PROBE_MUL);
        }
    }
}

/// The block of only the `k` probes of `h2`: what [`set_probes_scalar`] sets in an empty block.
#[inline(always)]
pub(crate) fn mask_scalar<const K: u32>(k: u32, h2: u64) -> [u64; 8] {
    let mut mask = [0u64; 8];
    each_probe::<K>(k, h2, |p| mask[(p >> 6) as usize] |= 1u64.wrapping_shl(p));
    mask
}

/// The item's probe mask in a 512-bit block: the bits its `k` probes set (`h2` its probe
/// hash), for structures that test or set one item in several blocks (the windowed filter's
/// generations). Unrolled for `k` up to [`BLOCKED_UNROLLED_MAX`]; inlined, so that it takes
/// the caller's CPU features (BMI2 shifts).
#[inline(always)]
pub fn probe_mask(k: u32, h2: u64) -> [u64; 8] {
    macro_rules! unrolled {
        ($($n:literal)*) => {
            match k {
                $($n => mask_scalar::<$n>(k, h2),)*
                _ => mask_scalar::<0>(k, h2),
            }
        };
    }
    unrolled!(1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16)
}

#[cfg(target_arch = "x86_64")]
mod vector;
#[cfg(target_arch = "x86_64")]
pub use vector::probe_mask_avx2;
#[cfg(target_arch = "x86_64")]
pub(crate) use vector::{PaddedPowers, mask_vector, probe_tops, probe_tops_of};
