//! Hash schemes: how an item becomes the sequence of bit positions it probes.
//!
//! The scheme is part of the data (like Guava's persisted strategy ordinal): every chain stores
//! the id of the scheme its bits were set with, and keeps it forever. A new scheme gets a new
//! id; old bits are never reinterpreted.
//!
//! Scheme 1, [`HashScheme::Xxh3Enhanced`]: one `xxh3_128(item, seed)` per item, reused by every
//! layer. `h1` = low 64 bits, `h2` = high 64 bits | 1 (odd, so the step never degenerates to 0).
//! Probe values follow enhanced double hashing (Dillinger & Manolios): `x_0 = h1`, then
//! `x_{i+1} = x_i + step_i`, `step_{i+1} = step_i + i` (all wrapping), which breaks the
//! regularity of plain `h1 + i*h2`. A probe value `x` maps into `[0, bits)` by multiply-shift,
//! `(x * bits) >> 64` on 128 bits: no division, and uniform because `x` is uniform.

use xxhash_rust::xxh3::xxh3_128_with_seed;

/// The hash scheme a chain's bits were set with. Its id is persisted with the chain.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HashScheme {
    /// xxh3-128 once per item, enhanced double hashing, multiply-shift reduction.
    Xxh3Enhanced,
}

impl HashScheme {
    /// The id stored with the data.
    pub fn id(self) -> u64 {
        match self {
            HashScheme::Xxh3Enhanced => 1,
        }
    }

    /// The scheme with this stored id, if this build knows it.
    pub fn from_id(id: u64) -> Option<Self> {
        match id {
            1 => Some(HashScheme::Xxh3Enhanced),
            _ => None,
        }
    }

    /// Hashes `item` once; the result feeds the probes of every layer.
    #[inline]
    pub fn hash(self, item: &[u8], seed: u64) -> ItemHash {
        match self {
            HashScheme::Xxh3Enhanced => {
                let h = xxh3_128_with_seed(item, seed);
                ItemHash { h1: h as u64, h2: (h >> 64) as u64 | 1 }
            }
        }
    }
}

/// The two 64-bit halves an item's probes derive from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ItemHash {
    /// Starting probe value.
    pub h1: u64,
    /// Initial step (odd).
    pub h2: u64,
}

impl ItemHash {
    /// The bit positions this item probes in a layer of `bits` bits with `hashes` probes.
    #[inline]
    pub fn probes(self, bits: u64, hashes: u32) -> Probes {
        Probes { x: self.h1, step: self.h2, i: 0, hashes, bits }
    }
}

/// Iterator over one item's probe positions in one layer.
#[derive(Debug, Clone)]
pub struct Probes {
    x: u64,
    step: u64,
    i: u32,
    hashes: u32,
    bits: u64,
}

/// Maps a uniform 64-bit value into `[0, n)`: `(x * n) >> 64`.
#[inline]
pub fn reduce(x: u64, n: u64) -> u64 {
    ((u128::from(x) * u128::from(n)) >> 64) as u64
}

impl Iterator for Probes {
    type Item = u64;

    #[inline]
    fn next(&mut self) -> Option<u64> {
        if self.i == self.hashes {
            return None;
        }
        let pos = reduce(self.x, self.bits);
        self.x = self.x.wrapping_add(self.step);
        self.step = self.step.wrapping_add(u64::from(self.i));
        self.i += 1;
        Some(pos)
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        let n = (self.hashes - self.i) as usize;
        (n, Some(n))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scheme_ids_round_trip_and_unknown_ids_are_refused() {
        assert_eq!(
            HashScheme::from_id(HashScheme::Xxh3Enhanced.id()),
            Some(HashScheme::Xxh3Enhanced)
        );
        assert_eq!(HashScheme::from_id(0), None);
        assert_eq!(HashScheme::from_id(2), None);
    }

    #[test]
    fn step_is_odd_and_seed_changes_the_hash() {
        let a = HashScheme::Xxh3Enhanced.hash(b"item", 0);
        let b = HashScheme::Xxh3Enhanced.hash(b"item", 1);
        assert_eq!(a.h2 & 1, 1);
        assert_ne!(a, b);
    }

    #[test]
    fn probes_stay_in_range_and_have_the_right_count() {
        let h = HashScheme::Xxh3Enhanced.hash(b"x", 7);
        for bits in [64u64, 960, 11072, 1 << 40] {
            let p: Vec<u64> = h.probes(bits, 13).collect();
            assert_eq!(p.len(), 13);
            assert!(p.iter().all(|&b| b < bits));
        }
    }

    #[test]
    fn reduce_covers_the_range_ends() {
        assert_eq!(reduce(0, 100), 0);
        assert_eq!(reduce(u64::MAX, 100), 99);
    }

    /// Pins scheme 1 so that a change to it (which would corrupt every stored filter) fails here.
    #[test]
    fn scheme_one_is_stable() {
        let h = HashScheme::Xxh3Enhanced.hash(b"hello", 0);
        let p: Vec<u64> = h.probes(1 << 20, 4).collect();
        let h_again = HashScheme::Xxh3Enhanced.hash(b"hello", 0);
        assert_eq!(p, h_again.probes(1 << 20, 4).collect::<Vec<_>>());
        assert_eq!(h.h1, xxh3_128_with_seed(b"hello", 0) as u64);
        assert_eq!(PINNED_HELLO_PROBES, p.as_slice());
    }

    const PINNED_HELLO_PROBES: &[u64] = &[817052, 513593, 210133, 955249];
}
