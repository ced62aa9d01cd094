//! Merging bit arrays: [`BitArray::union_ones`] (what a merge's fill would be) and
//! [`BitArray::merge_from`] (bits OR-ed, or counters of 4 or 8 bits added, saturating), one
//! pass over each segment, compiled with `POPCNT` where the CPU has it.

use super::BitArray;

impl BitArray {
    /// Positions non-zero in any of `arrays` (all of this array's length), as one count: set
    /// bits of their union, or with counters of `width` bits (4 or 8; 0 for plain bits) the
    /// counters non-zero in any. What a merge's fill would be, without writing it.
    pub fn union_ones(arrays: &[&BitArray], width: u8) -> u64 {
        let Some(first) = arrays.first() else { return 0 };
        let mut ones = 0u64;
        for i in 0..first.segs().len() {
            let segs: Vec<&[u64]> = arrays.iter().map(|a| &*a.segs()[i]).collect();
            ones += with_popcnt!(union_segment(&segs, width));
        }
        ones
    }

    /// Merges each of `others` (all of this array's length) into this array, in one pass: bits
    /// OR-ed, or counters of `width` bits (4 or 8) added, saturating at their maximum. Returns,
    /// counted in the same pass, the positions non-zero after, and the saturated counters
    /// before and after (0 and 0 for plain bits).
    pub fn merge_from(&mut self, others: &[&BitArray], width: u8) -> (u64, u64, u64) {
        let mut total = (0u64, 0u64, 0u64);
        for (i, dst) in self.segs_mut().iter_mut().enumerate() {
            let srcs: Vec<&[u64]> = others.iter().map(|a| &*a.segs()[i]).collect();
            let (ones, before, after) = with_popcnt!(merge_segment(dst, &srcs, width));
            total = (total.0 + ones, total.1 + before, total.2 + after);
        }
        total
    }
}

/// Calls `$f(args)` compiled with `POPCNT` where the CPU has it (not part of the x86_64
/// baseline: without it each count is a dozen instructions, and a merge's pass over 1 GiB
/// counted that way took twice as long as Redis' `BITOP OR` of the same bytes), else as built.
macro_rules! with_popcnt {
    ($f:ident($($arg:expr),*)) => {{
        #[cfg(target_arch = "x86_64")]
        {
            if std::arch::is_x86_feature_detected!("popcnt") {
                // SAFETY: the CPU has POPCNT (checked just above), the only feature the
                // function enables.
                unsafe { popcnt::$f($($arg),*) }
            } else {
                $f($($arg),*)
            }
        }
        #[cfg(not(target_arch = "x86_64"))]
        {
            $f($($arg),*)
        }
    }};
}
use with_popcnt;

/// The positions non-zero in any of `segs` (segments of one index, equally long): bits, or
/// counters of `width` bits.
#[inline(always)]
fn union_segment(segs: &[&[u64]], width: u8) -> u64 {
    match (width, segs) {
        // Two plain arrays (a merge of one source): a loop the compiler vectorizes.
        (0, [a, b]) => a.iter().zip(*b).map(|(x, y)| u64::from((x | y).count_ones())).sum(),
        _ => (0..segs[0].len())
            .map(|w| {
                let any = segs.iter().fold(0u64, |acc, s| acc | nonzero_lanes(s[w], width));
                u64::from(any.count_ones())
            })
            .sum(),
    }
}

/// [`BitArray::merge_from`] of one segment.
#[inline(always)]
fn merge_segment(dst: &mut [u64], srcs: &[&[u64]], width: u8) -> (u64, u64, u64) {
    let (mut ones, mut sat_before, mut sat_after) = (0u64, 0u64, 0u64);
    match (width, srcs) {
        (0, [a]) => {
            for (d, &x) in dst.iter_mut().zip(*a) {
                *d |= x;
                ones += u64::from(d.count_ones());
            }
        }
        (0, [a, b]) => {
            for ((d, &x), &y) in dst.iter_mut().zip(*a).zip(*b) {
                *d |= x | y;
                ones += u64::from(d.count_ones());
            }
        }
        (0, _) => {
            for (w, d) in dst.iter_mut().enumerate() {
                *d |= srcs.iter().fold(0u64, |acc, s| acc | s[w]);
                ones += u64::from(d.count_ones());
            }
        }
        (width, _) => {
            for (w, d) in dst.iter_mut().enumerate() {
                sat_before += u64::from(full_lanes(*d, width).count_ones());
                *d = srcs.iter().fold(*d, |acc, s| saturating_lanes(acc, s[w], width));
                sat_after += u64::from(full_lanes(*d, width).count_ones());
                ones += u64::from(nonzero_lanes(*d, width).count_ones());
            }
        }
    }
    (ones, sat_before, sat_after)
}

/// The merge loops compiled with `POPCNT` ([`with_popcnt`]).
#[cfg(target_arch = "x86_64")]
mod popcnt {
    /// [`super::union_segment`] with `POPCNT`.
    ///
    /// # Safety
    /// The CPU has the `popcnt` feature.
    #[target_feature(enable = "popcnt")]
    pub unsafe fn union_segment(segs: &[&[u64]], width: u8) -> u64 {
        super::union_segment(segs, width)
    }

    /// [`super::merge_segment`] with `POPCNT`.
    ///
    /// # Safety
    /// The CPU has the `popcnt` feature.
    #[target_feature(enable = "popcnt")]
    pub unsafe fn merge_segment(dst: &mut [u64], srcs: &[&[u64]], width: u8) -> (u64, u64, u64) {
        super::merge_segment(dst, srcs, width)
    }
}

/// One bit per lane of `width` bits (0: every bit its own lane) that is non-zero in `w`, at the
/// lane's lowest bit.
#[inline]
fn nonzero_lanes(w: u64, width: u8) -> u64 {
    match width {
        0 => w,
        4 => (w | (w >> 1) | (w >> 2) | (w >> 3)) & 0x1111_1111_1111_1111,
        _ => {
            let w = w | (w >> 4);
            (w | (w >> 1) | (w >> 2) | (w >> 3)) & 0x0101_0101_0101_0101
        }
    }
}

/// One bit per lane of `width` bits (4 or 8) that is at its maximum in `w` (all ones), at the
/// lane's lowest bit.
#[inline]
fn full_lanes(w: u64, width: u8) -> u64 {
    if width == 4 {
        w & (w >> 1) & (w >> 2) & (w >> 3) & 0x1111_1111_1111_1111
    } else {
        let w = w & (w >> 4);
        w & (w >> 1) & (w >> 2) & (w >> 3) & 0x0101_0101_0101_0101
    }
}

/// Lane-wise `min(a + b, max)` of two words of counters of `width` bits (4 or 8): each lane's
/// low bits are added apart from its top bit, so no carry crosses a lane; a lane whose sum
/// carries out of its top bit is set to its maximum.
#[inline]
fn saturating_lanes(a: u64, b: u64, width: u8) -> u64 {
    let (high, ones) = if width == 4 {
        (0x8888_8888_8888_8888u64, 0x1111_1111_1111_1111u64)
    } else {
        (0x8080_8080_8080_8080u64, 0x0101_0101_0101_0101u64)
    };
    let low = !high;
    let partial = (a & low) + (b & low); // each lane < 2^width: no carry leaves it
    let carry_in = partial & high;
    let (ah, bh) = (a & high, b & high);
    let sum = partial ^ ah ^ bh;
    let carry_out = (ah & bh) | (ah & carry_in) | (bh & carry_in);
    // The lanes that overflowed, all ones: (lane's low bit) × (2^width − 1).
    let lanes = carry_out >> (width - 1);
    let full = lanes * ((1u64 << width) - 1);
    debug_assert_eq!(lanes & !ones, 0);
    sum | full
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn saturating_lanes_matches_per_counter_arithmetic() {
        let mut x = 0x9e37_79b9_7f4a_7c15u64;
        for _ in 0..20_000 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let (a, b) = (x, x.rotate_left(23) ^ 0x5555_0000_ffff_1234);
            for width in [4u8, 8] {
                let lanes = 64 / u32::from(width);
                let max = (1u64 << width) - 1;
                let mut want = 0u64;
                for i in 0..lanes {
                    let sh = i * u32::from(width);
                    let s = (((a >> sh) & max) + ((b >> sh) & max)).min(max);
                    want |= s << sh;
                }
                assert_eq!(saturating_lanes(a, b, width), want, "width {width}");
                let mut nz = 0u64;
                for i in 0..lanes {
                    let sh = i * u32::from(width);
                    if (a >> sh) & max != 0 {
                        nz |= 1 << sh;
                    }
                }
                assert_eq!(nonzero_lanes(a, width), nz);
                let full = (0..lanes).filter(|i| (a >> (i * u32::from(width))) & max == max);
                assert_eq!(u64::from(full_lanes(a, width).count_ones()), full.count() as u64);
            }
        }
    }
}
