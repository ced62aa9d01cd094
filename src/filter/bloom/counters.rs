//! Counters of a counting Bloom filter (Fan et al., 2000), packed in a [`BitArray`]: their
//! widths, limits and counts (pure arithmetic; the counting kind that changes them is
//! [`super::counting`]).
//!
//! A counting layer has one counter where a plain layer has one bit: the same number of
//! positions, the same probes, so the same sizing and error. A counter is 4 or 8 bits wide
//! ([`Width`]): counter `i` is bits `[i·w, (i+1)·w)` of the array, so it never crosses a 64-bit
//! word, and serialized (bit `p` in byte `p/8` at mask `1 << (p%8)`) counter `i` is byte `i` (8
//! bits) or the low (even `i`) or high (odd `i`) nibble of byte `i/2` (4 bits).

use super::bits::BitArray;
use crate::filter::FilterError;

/// Bits per counter: 4 (at most 15, 4× a plain filter's memory) or 8 (at most 255, 8×).
pub type Width = u8;

/// Whether `w` is a counter width this module builds.
pub fn valid_width(w: u64) -> bool {
    w == 4 || w == 8
}

/// A counter's largest value: where it saturates.
#[inline]
pub fn max(width: Width) -> u64 {
    (1u64 << width) - 1
}

/// `(non-zero, saturated)` counters among the counters of `width` bits packed in `bytes` (whole
/// bytes: a chunk of a counter array). Width 0 means a plain bit array: set bits, and none
/// saturated.
pub fn byte_counts(bytes: &[u8], width: Width) -> (u64, u64) {
    let (mut nonzero, mut saturated) = (0u64, 0u64);
    match width {
        4 => {
            for &b in bytes {
                nonzero += u64::from(b & 0x0f != 0) + u64::from(b & 0xf0 != 0);
                saturated += u64::from(b & 0x0f == 0x0f) + u64::from(b & 0xf0 == 0xf0);
            }
        }
        8 => {
            for &b in bytes {
                nonzero += u64::from(b != 0);
                saturated += u64::from(b == 0xff);
            }
        }
        _ => nonzero = crate::filter::mem::count_ones_bytes(bytes),
    }
    (nonzero, saturated)
}

/// [`byte_counts`] over a whole array, one segment at a time.
pub fn array_counts(bits: &BitArray, width: Width) -> (u64, u64) {
    if width == 0 {
        return (bits.count_ones(), 0);
    }
    let (mut nonzero, mut saturated) = (0, 0);
    bits.for_each_segment_bytes(|seg| {
        let (n, s) = byte_counts(seg, width);
        nonzero += n;
        saturated += s;
    });
    (nonzero, saturated)
}

/// Counters stored in an array of `positions` counters of `width` bits: its length in bits,
/// checked.
pub fn array_bits(positions: u64, width: Width) -> Result<u64, FilterError> {
    positions.checked_mul(u64::from(width.max(1))).ok_or(FilterError::TooLarge)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_of_nibbles_and_bytes() {
        assert_eq!(byte_counts(&[0x00, 0x01, 0x10, 0xff, 0xf1], 4), (6, 3));
        assert_eq!(byte_counts(&[0x00, 0x01, 0x10, 0xff, 0xf1], 8), (4, 1));
        assert_eq!(byte_counts(&[0x00, 0x01, 0x10, 0xff, 0xf1], 0), (15, 0));
        assert_eq!(max(4), 15);
        assert_eq!(max(8), 255);
        assert!(valid_width(4) && valid_width(8) && !valid_width(0) && !valid_width(16));
    }
}
