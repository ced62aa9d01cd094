//! valkey-bloom's hashing: an item's two 64-bit hashes under the object's 32-byte seed, and
//! the bit positions a layer of `m` bits and `k` probes derives from them.
//!
//! The seed is two SipHash-1-3 keys of 16 bytes each (each key is two little-endian u64,
//! `k0` then `k1`). The hashed message is what Rust's `Hash` feeds for a byte slice: the
//! length as 8 little-endian bytes, then the bytes themselves, as one stream. So item `"ab"`
//! is hashed as `02 00 00 00 00 00 00 00 61 62` under each key, giving `h0` and `h1`.
//!
//! Probe `i` of a layer is `g_i mod m`, where `g_0 = h0`, `g_1 = h1`, and for `i ≥ 2`
//! `g_i = ((h0 + i·h1) mod 2^64) mod P` with `P = 2^64 − 59` (the largest 64-bit prime). Bit
//! `b` is bit `b mod 8` (least significant first) of byte `b / 8`: the order a
//! [`BitArray`](crate::filter::bloom::bits::BitArray) of little-endian words has too, so a
//! layer's bytes are its array's bytes unchanged.

use std::hash::Hasher;

use siphasher::sip::SipHasher13;

/// The prime the third and later probe values are reduced by before the modulo `m`.
pub const PROBE_PRIME: u64 = 0xFFFF_FFFF_FFFF_FFC5;

/// valkey-bloom's seed when `bloom-use-random-seed` is `no` (its `FIXED_SEED`): an object
/// saved with `is_seed_random` 0 must carry exactly this seed.
pub const FIXED_SEED: [u8; 32] = [
    89, 15, 245, 34, 234, 120, 17, 218, 167, 20, 216, 9, 59, 62, 123, 217, 29, 137, 138, 115, 62,
    152, 136, 135, 48, 127, 151, 205, 40, 7, 51, 131,
];

/// The 32-byte seed of a valkey-bloom object, read as its two SipHash-1-3 keys.
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct SipSeed {
    bytes: [u8; 32],
    keys: [(u64, u64); 2],
}

impl std::fmt::Debug for SipSeed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "SipSeed(")?;
        for b in self.bytes {
            write!(f, "{b:02x}")?;
        }
        write!(f, ")")
    }
}

impl SipSeed {
    /// The seed of these 32 bytes.
    pub fn new(bytes: [u8; 32]) -> Self {
        let word = |at: usize| {
            let mut w = [0u8; 8];
            w.copy_from_slice(&bytes[at..at + 8]);
            u64::from_le_bytes(w)
        };
        Self { bytes, keys: [(word(0), word(8)), (word(16), word(24))] }
    }

    /// The seed of a byte string that must be exactly 32 bytes long.
    pub fn from_slice(bytes: &[u8]) -> Option<Self> {
        <[u8; 32]>::try_from(bytes).ok().map(Self::new)
    }

    /// A seed for a new object at `key`, derived from a server's secret SipHash key (four
    /// SipHash-1-3 outputs of the key under it, each after its index): as unpredictable to a
    /// client as the secret, the same for the same key and secret. (valkey-bloom draws random
    /// bytes; either way the creating command replicates with the seed it chose.)
    pub fn derived(secret: [u64; 2], key: &[u8]) -> Self {
        let mut bytes = [0u8; 32];
        for (i, out) in bytes.chunks_exact_mut(8).enumerate() {
            let mut h = SipHasher13::new_with_keys(secret[0], secret[1]);
            h.write_u8(i as u8); // 0 to 3
            h.write(key);
            out.copy_from_slice(&h.finish().to_le_bytes());
        }
        Self::new(bytes)
    }

    /// valkey-bloom's fixed seed ([`FIXED_SEED`]).
    pub fn fixed() -> Self {
        Self::new(FIXED_SEED)
    }

    /// The 32 bytes, as stored and as `SEED` takes them.
    pub fn bytes(&self) -> &[u8; 32] {
        &self.bytes
    }

    /// Whether this is [`FIXED_SEED`]: valkey-bloom's `is_seed_random` is its negation.
    pub fn is_fixed(&self) -> bool {
        self.bytes == FIXED_SEED
    }

    /// The item's two hashes, `(h0, h1)`.
    #[inline]
    pub fn hash(&self, item: &[u8]) -> (u64, u64) {
        let one = |(k0, k1): (u64, u64)| {
            let mut s = SipHasher13::new_with_keys(k0, k1);
            s.write(&(item.len() as u64).to_le_bytes());
            s.write(item);
            s.finish()
        };
        (one(self.keys[0]), one(self.keys[1]))
    }
}

/// The bit positions of an item hashed to `(h0, h1)` in a layer of `bits` bits (> 0) with
/// `hashes` probes, in probe order.
#[inline]
pub fn positions(h: (u64, u64), bits: u64, hashes: u32) -> impl Iterator<Item = u64> {
    let (h0, h1) = h;
    (0..u64::from(hashes)).map(move |i| {
        let g = match i {
            0 => h0,
            1 => h1,
            _ => h0.wrapping_add(i.wrapping_mul(h1)) % PROBE_PRIME,
        };
        g % bits
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The reference SipHash-1-3 test vector (keys 00..0f, message 00..0e, 64-bit output),
    /// through the same calls the item hash makes, and the length prefix as one stream.
    #[test]
    fn sip13_stream_is_one_message() {
        let seed: [u8; 32] = std::array::from_fn(|i| (i % 16) as u8);
        let seed = SipSeed::new(seed);
        let (h0, h1) = seed.hash(b"ab");
        assert_eq!(h0, h1, "both keys equal here");
        let mut s = SipHasher13::new_with_keys(0x0706_0504_0302_0100, 0x0f0e_0d0c_0b0a_0908);
        s.write(&[2, 0, 0, 0, 0, 0, 0, 0, b'a', b'b']);
        assert_eq!(h0, s.finish());
    }

    #[test]
    fn fixed_seed_is_valkey_blooms() {
        let hex: String = FIXED_SEED.iter().map(|b| format!("{b:02x}")).collect();
        assert_eq!(hex, "590ff522ea7811daa714d8093b3e7bd91d898a733e988887307f97cd28073383");
        assert!(SipSeed::fixed().is_fixed());
        assert!(!SipSeed::new([1; 32]).is_fixed());
        assert!(SipSeed::from_slice(&[0; 31]).is_none());
        assert!(SipSeed::from_slice(&[0; 33]).is_none());
    }

    #[test]
    fn positions_follow_the_recurrence() {
        let h = (u64::MAX - 3, 12345u64);
        let p: Vec<u64> = positions(h, 9592, 5).collect();
        assert_eq!(p[0], (u64::MAX - 3) % 9592);
        assert_eq!(p[1], 12345 % 9592);
        let g2 = (u64::MAX - 3).wrapping_add(2 * 12345) % PROBE_PRIME;
        assert_eq!(p[2], g2 % 9592);
        assert!(p.iter().all(|&b| b < 9592));
    }
}
