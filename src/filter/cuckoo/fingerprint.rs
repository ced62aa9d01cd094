//! Fingerprints and the two buckets of an item.
//!
//! An item is hashed once: `h = MurmurHash64A(item, seed 0)` (RedisBloom's
//! `CUCKOO_GEN_HASH`, the same function as the Bloom scheme's, [`murmur64a`]). From `h`:
//! - the fingerprint `fp = h mod (2^w − 1) + 1`, in `1..=2^w − 1` (0 marks an empty slot);
//!   for `w = 8` this is RedisBloom's `hash % 255 + 1`;
//! - the first index `h1 = h` and the alternate `h2 = h1 ^ (fp × 0x5bd1e995)` (RedisBloom's
//!   `getAltHash`), both reduced modulo a sub-filter's bucket count when used.
//!
//! Bucket counts are powers of two, so `x mod n` is `x & (n − 1)` and the XOR commutes with
//! the reduction: from either bucket `b` of an item, `(b ^ fp·m) mod n` is the other one. That
//! is what lets a kick-out move a fingerprint without knowing its item, and compaction move one
//! to an older (smaller, dividing) sub-filter from its bucket index alone.
//!
//! The widths are types ([`Fingerprint`] for `u8`, `u16`, `u32`): the filter is generic over
//! them, so no probe asks which width it is in. Only 8 bits is RedisBloom's; 16 and 32 are
//! this module's own (its `FINGERPRINT` option), with the same formulas.

use crate::filter::hash::murmur::murmur64a;

/// RedisBloom's alternate-index multiplier (`getAltHash`).
pub const ALT_MULTIPLIER: u64 = 0x5bd1_e995;

/// The hash of an item: RedisBloom's `MurmurHash64A_Bloom(item, len, 0)`.
#[inline]
pub fn item_hash(item: &[u8]) -> u64 {
    murmur64a(item, 0)
}

mod sealed {
    pub trait Sealed {}
    impl Sealed for u8 {}
    impl Sealed for u16 {}
    impl Sealed for u32 {}
}

/// A fingerprint width: `u8`, `u16` or `u32`, and only those (the trait is sealed, which the
/// slot storage relies on: plain integers, no padding, every bit pattern valid, alignment ≤ 8).
pub trait Fingerprint:
    sealed::Sealed + Copy + Eq + Default + std::fmt::Debug + Send + Sync + 'static
{
    /// Bits of the fingerprint.
    const BITS: u32;
    /// Bytes of a slot.
    const BYTES: usize;
    /// The empty slot.
    const EMPTY: Self;
    /// The width as the enum the formats store.
    const WIDTH: FingerprintWidth;
    /// `h mod (2^BITS − 1) + 1`.
    fn from_hash(h: u64) -> Self;
    /// `fp × 0x5bd1e995`, the term XORed into an index to get the alternate one.
    fn alt_term(self) -> u64;
    /// The fingerprint's value, widened.
    fn widen(self) -> u64;
    /// The slot as little-endian bytes into `out` (`BYTES` long).
    fn write_le(self, out: &mut [u8]);
    /// A slot from `BYTES` little-endian bytes.
    fn read_le(b: &[u8]) -> Self;
}

macro_rules! fingerprint {
    ($t:ty, $w:ident) => {
        impl Fingerprint for $t {
            const BITS: u32 = <$t>::BITS;
            const BYTES: usize = std::mem::size_of::<$t>();
            const EMPTY: Self = 0;
            const WIDTH: FingerprintWidth = FingerprintWidth::$w;
            #[inline(always)]
            fn from_hash(h: u64) -> Self {
                // h mod (2^BITS − 1) < 2^BITS − 1, so + 1 fits the type. Computed as
                // (h + q) mod 2^BITS, q = ⌊h / (2^BITS − 1)⌋: h = q·(2^BITS − 1) + r, so
                // h + q = q·2^BITS + r, whose low BITS bits are r (r < 2^BITS − 1); a wrap of
                // the u64 sum drops a multiple of 2^64, which 2^BITS divides. (The compiler
                // then keeps the value in BITS bits: `h % MAX` it computed in full.)
                let q = h / u64::from(<$t>::MAX);
                (h.wrapping_add(q) as $t) + 1
            }
            #[inline(always)]
            fn alt_term(self) -> u64 {
                // At most (2^32 − 1) × 0x5bd1e995 < 2^63: no wrap, as in C's 64-bit product.
                u64::from(self) * ALT_MULTIPLIER
            }
            #[inline(always)]
            fn widen(self) -> u64 {
                u64::from(self)
            }
            #[inline]
            fn write_le(self, out: &mut [u8]) {
                out.copy_from_slice(&self.to_le_bytes());
            }
            #[inline]
            fn read_le(b: &[u8]) -> Self {
                let mut a = [0u8; std::mem::size_of::<$t>()];
                a.copy_from_slice(b);
                <$t>::from_le_bytes(a)
            }
        }
    };
}
fingerprint!(u8, W8);
fingerprint!(u16, W16);
fingerprint!(u32, W32);

/// A fingerprint width, as the formats and the `FINGERPRINT` option name it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum FingerprintWidth {
    /// 8 bits: RedisBloom's, the default, the only one its formats hold.
    #[default]
    W8,
    /// 16 bits.
    W16,
    /// 32 bits.
    W32,
}

impl FingerprintWidth {
    /// Bits: 8, 16 or 32.
    pub fn bits(self) -> u32 {
        match self {
            FingerprintWidth::W8 => 8,
            FingerprintWidth::W16 => 16,
            FingerprintWidth::W32 => 32,
        }
    }

    /// Bytes of a slot.
    pub fn bytes(self) -> u64 {
        u64::from(self.bits() / 8)
    }

    /// The width of `bits` bits, if it is one.
    pub fn from_bits(bits: u64) -> Option<Self> {
        match bits {
            8 => Some(FingerprintWidth::W8),
            16 => Some(FingerprintWidth::W16),
            32 => Some(FingerprintWidth::W32),
            _ => None,
        }
    }
}

/// An item's fingerprint and its two unreduced bucket indexes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Lookup<F> {
    /// First index (the hash itself).
    pub h1: u64,
    /// Alternate index, `h1 ^ fp·m`.
    pub h2: u64,
    /// The fingerprint.
    pub fp: F,
}

impl<F: Fingerprint> Lookup<F> {
    /// RedisBloom's `getLookupParams`.
    #[inline]
    pub fn new(hash: u64) -> Self {
        let fp = F::from_hash(hash);
        Self { h1: hash, h2: hash ^ fp.alt_term(), fp }
    }

    /// The lookup of an item.
    #[inline]
    pub fn of(item: &[u8]) -> Self {
        Self::new(item_hash(item))
    }

    /// The lookup of a fingerprint stored in bucket `bucket` (of any sub-filter), as
    /// compaction sees it: `h1` is that bucket, `h2` the alternate of it.
    #[inline]
    pub fn at(bucket: u64, fp: F) -> Self {
        Self { h1: bucket, h2: bucket ^ fp.alt_term(), fp }
    }
}

/// The other bucket of fingerprint `fp` stored in bucket `b` of a sub-filter with `mask + 1`
/// buckets.
#[inline(always)]
pub fn alt_bucket<F: Fingerprint>(fp: F, b: u64, mask: u64) -> u64 {
    (b ^ fp.alt_term()) & mask
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fingerprints_are_never_empty_and_match_redisbloom_for_8_bits() {
        for h in [0u64, 1, 254, 255, 256, u64::MAX, 0x1234_5678_9abc_def0] {
            assert_eq!(u8::from_hash(h), (h % 255 + 1) as u8);
            assert_ne!(u8::from_hash(h), 0);
            assert_ne!(u16::from_hash(h), 0);
            assert_ne!(u32::from_hash(h), 0);
        }
        assert_eq!(u8::from_hash(254), 255);
        assert_eq!(u16::from_hash(65534), 65535);
        assert_eq!(u32::from_hash(u64::from(u32::MAX) - 1), u32::MAX);
    }

    /// `from_hash`'s `(h + ⌊h / (2^w − 1)⌋) mod 2^w + 1` is `h mod (2^w − 1) + 1`, near the
    /// multiples of 2^w − 1 and at the ends of the range, and over a spread of hashes.
    #[test]
    fn from_hash_is_the_remainder_plus_one() {
        let mut hashes = vec![0u64, 1, u64::MAX, u64::MAX - 1, 1 << 63];
        for m in [255u64, 65_535, u64::from(u32::MAX)] {
            for k in [1u64, 2, 1000, u64::MAX / m - 1, u64::MAX / m] {
                let base = k.wrapping_mul(m);
                hashes.extend([base.wrapping_sub(1), base, base.wrapping_add(1)]);
            }
        }
        let mut h = 0x9e37_79b9_7f4a_7c15u64;
        for _ in 0..100_000 {
            h = h.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1_442_695_040_888_963_407);
            hashes.push(h);
        }
        for h in hashes {
            assert_eq!(u64::from(u8::from_hash(h)), h % 255 + 1, "{h:#x}");
            assert_eq!(u64::from(u16::from_hash(h)), h % 65_535 + 1, "{h:#x}");
            assert_eq!(u64::from(u32::from_hash(h)), h % u64::from(u32::MAX) + 1, "{h:#x}");
        }
    }

    #[test]
    fn alternate_bucket_is_an_involution_for_powers_of_two() {
        for n in [1u64, 2, 4, 512, 1 << 40] {
            let mask = n - 1;
            for fp in [1u8, 2, 128, 255] {
                for b in [0, 1.min(mask), mask / 2, mask] {
                    assert_eq!(alt_bucket(fp, alt_bucket(fp, b, mask), mask), b);
                }
            }
        }
        let l = Lookup::<u16>::new(0xdead_beef);
        assert_eq!(l.h2 ^ l.fp.alt_term(), l.h1);
    }

    #[test]
    fn widths_round_trip() {
        for w in [FingerprintWidth::W8, FingerprintWidth::W16, FingerprintWidth::W32] {
            assert_eq!(FingerprintWidth::from_bits(u64::from(w.bits())), Some(w));
        }
        assert_eq!(FingerprintWidth::from_bits(0), None);
        assert_eq!(FingerprintWidth::from_bits(64), None);
        let mut b = [0u8; 4];
        0x0102_0304u32.write_le(&mut b);
        assert_eq!(b, [4, 3, 2, 1]);
        assert_eq!(u32::read_le(&b), 0x0102_0304);
    }
}
