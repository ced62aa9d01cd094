//! xxh3-64 with a seed, for a batch of items: the value of `xxhash_rust`'s
//! `xxh3_64_with_seed(item, seed)` for every item (tests compare the two at every length from
//! 0 to 300 bytes and many seeds), with what depends on the seed alone made once per batch
//! rather than once per item, and items of 9 to 16 bytes (keys such as `item:000123`, `user:42`
//! + a suffix) taken first. Items longer than 16 bytes go to the crate.
//!
//! The short paths are XXH3's own (xxHash's `XXH3_len_1to3_64b`, `XXH3_len_4to8_64b`,
//! `XXH3_len_9to16_64b`, and the empty input), with its default secret's first 72 bytes below.
//! Scheme 4's bits depend on these values: they must never change.

use xxhash_rust::xxh3::xxh3_64_with_seed;

/// The first 72 bytes of XXH3's default secret (`kSecret`).
const SECRET: [u8; 72] = [
    0xb8, 0xfe, 0x6c, 0x39, 0x23, 0xa4, 0x4b, 0xbe, 0x7c, 0x01, 0x81, 0x2c, 0xf7, 0x21, 0xad, 0x1c,
    0xde, 0xd4, 0x6d, 0xe9, 0x83, 0x90, 0x97, 0xdb, 0x72, 0x40, 0xa4, 0xa4, 0xb7, 0xb3, 0x67, 0x1f,
    0xcb, 0x79, 0xe6, 0x4e, 0xcc, 0xc0, 0xe5, 0x78, 0x82, 0x5a, 0xd0, 0x7d, 0xcc, 0xff, 0x72, 0x21,
    0xb8, 0x08, 0x46, 0x74, 0xf7, 0x43, 0x24, 0x8e, 0xe0, 0x35, 0x90, 0xe6, 0x81, 0x3a, 0x26, 0x4c,
    0x3c, 0x28, 0x52, 0xbb, 0x91, 0xc3, 0x00, 0xcb,
];

/// The little-endian 64-bit word of [`SECRET`] at byte `at`.
const fn secret64(at: usize) -> u64 {
    let mut v = 0u64;
    let mut i = 0;
    while i < 8 {
        v |= (SECRET[at + i] as u64) << (8 * i);
        i += 1;
    }
    v
}

/// The little-endian 32-bit word of [`SECRET`] at byte `at`.
const fn secret32(at: usize) -> u32 {
    secret64(at) as u32
}

/// XXH64's and XXH3's primes used by the short paths.
const PRIME64_2: u64 = 0xC2B2_AE3D_27D4_EB4F;
const PRIME64_3: u64 = 0x1656_67B1_9E37_79F9;
const PRIME_MX1: u64 = 0x1656_6791_9E37_79F9;
const PRIME_MX2: u64 = 0x9FB2_1C65_1E98_DF25;

/// XXH64's final mix (`XXH64_avalanche`), which XXH3 uses for 0 to 3 bytes.
#[inline(always)]
fn xxh64_avalanche(mut h: u64) -> u64 {
    h ^= h >> 33;
    h = h.wrapping_mul(PRIME64_2);
    h ^= h >> 29;
    h = h.wrapping_mul(PRIME64_3);
    h ^ (h >> 32)
}

/// `XXH3_avalanche`.
#[inline(always)]
fn avalanche(mut h: u64) -> u64 {
    h ^= h >> 37;
    h = h.wrapping_mul(PRIME_MX1);
    h ^ (h >> 32)
}

/// `XXH3_rrmxmx`, for 4 to 8 bytes.
#[inline(always)]
fn rrmxmx(mut h: u64, len: u64) -> u64 {
    h ^= h.rotate_left(49) ^ h.rotate_left(24);
    h = h.wrapping_mul(PRIME_MX2);
    h ^= (h >> 35).wrapping_add(len);
    h = h.wrapping_mul(PRIME_MX2);
    h ^ (h >> 28)
}

/// The 128-bit product of `a` and `b`, its halves xored (`XXH3_mul128_fold64`).
#[inline(always)]
fn mul128_fold64(a: u64, b: u64) -> u64 {
    let p = u128::from(a) * u128::from(b);
    (p as u64) ^ ((p >> 64) as u64)
}

/// xxh3-64 with one seed, the seed's part made once ([`Xxh3Seeded::new`]).
#[derive(Clone, Copy)]
pub struct Xxh3Seeded {
    seed: u64,
    /// The keys of the first and last 8 bytes of a 9-to-16-byte item.
    flip_9to16: (u64, u64),
    /// The key of a 4-to-8-byte item.
    flip_4to8: u64,
    /// The key of a 1-to-3-byte item.
    flip_1to3: u64,
    /// The hash of the empty item.
    empty: u64,
}

impl Xxh3Seeded {
    /// The seed's part of every short path.
    #[inline(always)]
    pub fn new(seed: u64) -> Self {
        // `XXH3_len_4to8_64b` mixes the byte-swapped low half of the seed into its high half.
        let seed_4to8 = seed ^ (u64::from((seed as u32).swap_bytes()) << 32);
        Self {
            seed,
            flip_9to16: (
                (secret64(24) ^ secret64(32)).wrapping_add(seed),
                (secret64(40) ^ secret64(48)).wrapping_sub(seed),
            ),
            flip_4to8: (secret64(8) ^ secret64(16)).wrapping_sub(seed_4to8),
            flip_1to3: u64::from(secret32(0) ^ secret32(4)).wrapping_add(seed),
            empty: xxh64_avalanche(seed ^ secret64(56) ^ secret64(64)),
        }
    }

    /// `xxh3_64_with_seed(item, seed)`.
    #[inline(always)]
    pub fn hash(&self, item: &[u8]) -> u64 {
        let len = item.len();
        // 9 to 16 bytes first: one compare (`len - 9 < 8`, unsigned).
        if len.wrapping_sub(9) < 8 {
            if let (Some(first), Some(last)) = (item.first_chunk::<8>(), item.last_chunk::<8>()) {
                let lo = u64::from_le_bytes(*first) ^ self.flip_9to16.0;
                let hi = u64::from_le_bytes(*last) ^ self.flip_9to16.1;
                let acc = (len as u64)
                    .wrapping_add(lo.swap_bytes())
                    .wrapping_add(hi)
                    .wrapping_add(mul128_fold64(lo, hi));
                return avalanche(acc);
            }
        }
        self.hash_other(item)
    }

    /// [`Xxh3Seeded::hash`] of an item not 9 to 16 bytes long.
    #[inline(always)]
    fn hash_other(&self, item: &[u8]) -> u64 {
        let len = item.len();
        if len == 0 {
            return self.empty;
        }
        if len <= 3 {
            // `XXH3_len_1to3_64b`: first, middle and last byte and the length in 32 bits.
            let (c1, c2, c3) = (item[0], item[len >> 1], item[len - 1]);
            let combo =
                u32::from(c1) << 16 | u32::from(c2) << 24 | u32::from(c3) | (len as u32) << 8;
            return xxh64_avalanche(u64::from(combo) ^ self.flip_1to3);
        }
        if let (true, Some(first), Some(last)) =
            (len <= 8, item.first_chunk::<4>(), item.last_chunk::<4>())
        {
            // `XXH3_len_4to8_64b`: the first and last 4 bytes (they overlap below 8).
            let input1 = u64::from(u32::from_le_bytes(*first));
            let input2 = u64::from(u32::from_le_bytes(*last));
            return rrmxmx(input2.wrapping_add(input1 << 32) ^ self.flip_4to8, len as u64);
        }
        xxh3_64_with_seed(item, self.seed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every length from 0 to 300 bytes (every short path and the crate's longer ones), with
    /// seeds from 0 to all ones: the crate's value.
    #[test]
    fn equals_xxh3_64_with_seed_at_every_length() {
        let mut rng = crate::filter::testrng::XorShift::default();
        let mut next = || rng.next_u64();
        let data: Vec<u8> = (0..300).map(|_| next() as u8).collect();
        let mut seeds = vec![0, 1, u64::MAX, 0x5eed, 0x8000_0000_0000_0000, 0xffff_ffff];
        seeds.extend((0..20).map(|_| next()));
        for seed in seeds {
            let x = Xxh3Seeded::new(seed);
            for len in 0..=data.len() {
                for start in [0, data.len() - len] {
                    let item = &data[start..start + len];
                    assert_eq!(
                        x.hash(item),
                        xxh3_64_with_seed(item, seed),
                        "len {len} seed {seed}"
                    );
                }
            }
        }
    }

    /// Golden values (xxHash's own test vectors are for seed 0 and PRIME32 / PRIME64 seeds;
    /// these pin the short paths with this module's inputs).
    #[test]
    fn golden_values() {
        let x = Xxh3Seeded::new(0);
        assert_eq!(x.hash(b""), 0x2d06_8005_38d3_94c2);
        assert_eq!(x.hash(b"hello"), 0x9555_e855_5c62_dcfd);
    }
}
