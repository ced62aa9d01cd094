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
//!
//! Scheme 1 has a floor: multiply-shift reads the top bits of `x` only, and
//! `step_i` (at most `k³/6`, a few thousand) is far below `2^64 / bits` there, so on the bits
//! that matter the probes are plain double hashing, `h1 + i·h2`. An item whose `h2 / 2^64` lies
//! within about `1/(k·bits)` of a fraction with a small denominator `q` probes only about `q`
//! distinct positions, and is a false positive with the probability that those few are set.
//! The false-positive rate is then never below about `2 / (k · bits)`, whatever was asked:
//! measured, a 1,000-item layer asked for 1e-6 (28,800 bits, `k` = 20) answers 4.5e-6, and asked
//! for 1e-9, 2.5e-6. RedisBloom's `(a + i·b) mod M` has the same floor (2.8.2 measured the same).
//!
//! Scheme 5, [`HashScheme::Xxh3Curved`], for new standard chains (plain and counting): the
//! same xxh3-128 and `h1`, `h2`, and a full-width curvature `h3` in place of
//! `i`: `x_0 = h1`, `x_{i+1} = x_i + step_i`, `step_0 = h2`, `step_{i+1} = step_i + h3`, so
//! `x_i = h1 + i·h2 + i(i−1)/2 · h3` (wrapping), with `h3` = `h1` rotated by 32 bits
//! ([`ItemHash::curve`]). Few distinct positions now need `h2` and `h3` near fractions with
//! small denominators at once (at resolutions about `1/(k·bits)` and `1/(k²·bits)`).
//!
//! Why a rotation, not `h1` itself: with `h3 = h1`, `x_2 = 2·x_1` for every item, so probe 2's
//! position is nearly a function of probe 1's, and the rate rose about 7% over the textbook's
//! at 1% (simulated, 1.08% against 1.00%; measured 1.05% on the server). Every other
//! small-integer relation between an item's probe values then involves four of them
//! (`x_3 − 3x_2 + 3x_1 − x_0 = 0`), where scheme 1's involve three (`x_2 − 2x_1 + x_0 ≈ 0`).
//! Measured on 1,000-item layers: see docs/low-error-rates.md.
//! The kernels run the same number of instructions per probe (`step += h3`, a register, where
//! scheme 1 adds a constant) and one rotation per item. A chain stored with scheme 1 keeps it
//! and answers as scheme 1 does.
//!
//! Scheme 4, [`HashScheme::Xxh3Blocked`], for new blocked chains (`LAYOUT BLOCKED`; a blocked chain
//! stored with scheme 1 keeps it): one `xxh3_64(item, seed)` per item,
//! about half the instructions of xxh3-128 on short items. A blocked layer needs about 64 bits
//! per item: `h1` = the hash, whose high bits pick the block by multiply-shift; `h2` = its
//! low 32 bits, shifted up, `| 1`: the probes within the block come from them
//! ([`crate::filter::masks`]), as RocksDB's FastLocalBloom takes its probes from 32 bits. The block
//! (`(h1 · blocks) >> 64`) depends on the top bits of `h1` only, up to carries, so the two are
//! independent for any array below 2^32 blocks (256 GiB). The batched paths compute the same
//! xxh3-64 with the seed's part made once per batch (`xxh3short`).
//!
//! Schemes 2 and 3 are RedisBloom's, for filters imported from it (and new filters made while
//! `bf.new-filter-scheme redisbloom` is set); the chain's seed is unused, RedisBloom's seeds are
//! fixed. Both hash the item twice into `a` and `b`, and probe `i` of a layer is
//! `(a + i·b) mod 2^64 mod M`, where `M` is the layer's bit count or, for layers sized to a
//! power of two, `2^n2` (see [`layer::Rule`](crate::filter::bloom::layer::Rule) and `filter/bloom/redisbloom/mod.rs`):
//! - scheme 2, [`HashScheme::Murmur64`] (RedisBloom's `FORCE64` option, every filter of RedisBloom
//!   1.1.1 on): `a = MurmurHash64A(item, 0xc6a4a7935bd1e995)`, `b = MurmurHash64A(item, a)`;
//! - scheme 3, [`HashScheme::Murmur32`] (filters without `FORCE64`, RedisBloom 1.0–1.1.0):
//!   `a = MurmurHash2(item, 0x9747b28c)`, `b = MurmurHash2(item, a)`, both 32-bit values.

pub mod murmur;
pub(crate) mod xxh3short;

use murmur::{MURMUR32_SEED, MURMUR64_SEED, murmur2, murmur64a};
use xxh3short::Xxh3Seeded;
use xxhash_rust::xxh3::{xxh3_64_with_seed, xxh3_128_with_seed};

/// The hash scheme a chain's bits were set with. Its id is persisted with the chain.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HashScheme {
    /// xxh3-128 once per item, enhanced double hashing, multiply-shift reduction.
    Xxh3Enhanced,
    /// RedisBloom's 64-bit hashing (MurmurHash64A twice), `(a + i·b) mod M` positions.
    Murmur64,
    /// RedisBloom's legacy 32-bit hashing (MurmurHash2 twice), `(a + i·b) mod M` positions.
    Murmur32,
    /// xxh3-64 once per item, for blocked chains: block from the hash, probes from its low 32
    /// bits.
    Xxh3Blocked,
    /// xxh3-128 once per item as scheme 1, probes with a full-width curvature (`step += h3`),
    /// multiply-shift reduction: new standard chains.
    Xxh3Curved,
}

impl HashScheme {
    /// The id stored with the data.
    pub fn id(self) -> u64 {
        match self {
            HashScheme::Xxh3Enhanced => 1,
            HashScheme::Murmur64 => 2,
            HashScheme::Murmur32 => 3,
            HashScheme::Xxh3Blocked => 4,
            HashScheme::Xxh3Curved => 5,
        }
    }

    /// The scheme with this stored id, if this build knows it.
    pub fn from_id(id: u64) -> Option<Self> {
        match id {
            1 => Some(HashScheme::Xxh3Enhanced),
            2 => Some(HashScheme::Murmur64),
            3 => Some(HashScheme::Murmur32),
            4 => Some(HashScheme::Xxh3Blocked),
            5 => Some(HashScheme::Xxh3Curved),
            _ => None,
        }
    }

    /// Hashes each of `items` into `out` (as long as `items`), choosing the scheme's code once
    /// for all of them: the xxh3 schemes are then inlined into the loop, no call and no
    /// dispatch per item (the batched paths).
    #[inline]
    pub fn hash_each<T: AsRef<[u8]>>(self, items: &[T], seed: u64, out: &mut [ItemHash]) {
        debug_assert_eq!(items.len(), out.len());
        match self {
            HashScheme::Xxh3Blocked => {
                // The same values as `xxh3_blocked`, the seed's part made once.
                let xxh3 = Xxh3Seeded::new(seed);
                for (h, item) in out.iter_mut().zip(items) {
                    *h = blocked_hash(xxh3.hash(item.as_ref()));
                }
            }
            HashScheme::Xxh3Enhanced | HashScheme::Xxh3Curved => {
                for (h, item) in out.iter_mut().zip(items) {
                    *h = xxh3_enhanced(item.as_ref(), seed);
                }
            }
            scheme => {
                for (h, item) in out.iter_mut().zip(items) {
                    *h = scheme.hash(item.as_ref(), seed);
                }
            }
        }
    }

    /// Hashes `item` once; the result feeds the probes of every layer.
    #[inline]
    pub fn hash(self, item: &[u8], seed: u64) -> ItemHash {
        match self {
            HashScheme::Xxh3Enhanced | HashScheme::Xxh3Curved => xxh3_enhanced(item, seed),
            HashScheme::Murmur64 => {
                let a = murmur64a(item, MURMUR64_SEED);
                ItemHash { h1: a, h2: murmur64a(item, a) }
            }
            HashScheme::Murmur32 => {
                let a = murmur2(item, MURMUR32_SEED);
                // RedisBloom passes the 64-bit `a` to a `uint32_t` seed parameter: it is a
                // 32-bit value already.
                ItemHash { h1: u64::from(a), h2: u64::from(murmur2(item, a)) }
            }
            HashScheme::Xxh3Blocked => xxh3_blocked(item, seed),
        }
    }

    /// Whether this is one of RedisBloom's schemes.
    pub fn is_redisbloom(self) -> bool {
        matches!(self, HashScheme::Murmur64 | HashScheme::Murmur32)
    }

    /// Whether the probes of this scheme's standard layers step with the curvature `h1`
    /// (scheme 5) rather than `i` (scheme 1).
    pub fn is_curved(self) -> bool {
        self == HashScheme::Xxh3Curved
    }
}

/// Schemes 1 and 5: xxh3-128, `h1` its low half, `h2` its high half made odd.
#[inline(always)]
fn xxh3_enhanced(item: &[u8], seed: u64) -> ItemHash {
    let h = xxh3_128_with_seed(item, seed);
    ItemHash { h1: h as u64, h2: (h >> 64) as u64 | 1 }
}

/// Scheme 4: xxh3-64, `h1` the hash, `h2` its low half shifted up, odd.
#[inline(always)]
fn xxh3_blocked(item: &[u8], seed: u64) -> ItemHash {
    blocked_hash(xxh3_64_with_seed(item, seed))
}

/// Scheme 4's [`ItemHash`] of the xxh3-64 value `h`.
#[inline(always)]
pub(crate) fn blocked_hash(h: u64) -> ItemHash {
    ItemHash { h1: h, h2: h << 32 | 1 }
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
    /// The bit positions a RedisBloom-scheme item probes in a layer whose positions are taken
    /// modulo `modulus` (its bit count, or `2^n2`): `(a + i·b) mod 2^64 mod modulus`, for `i` in
    /// `0..hashes`. (RedisBloom computes this in 64 bits since 1.1.1; with a power-of-two
    /// modulus 1.0's 32-bit arithmetic gives the same positions.)
    #[inline]
    pub fn modular_probes(self, modulus: u64, hashes: u32) -> impl Iterator<Item = u64> {
        (0..u64::from(hashes)).map(move |i| self.h1.wrapping_add(i.wrapping_mul(self.h2)) % modulus)
    }

    /// The bit positions this item probes in a scheme-1 layer of `bits` bits with `hashes`
    /// probes.
    #[inline]
    pub fn probes(self, bits: u64, hashes: u32) -> Probes {
        self.probes_in(false, bits, hashes)
    }

    /// The bit positions this item probes in a layer of `bits` bits with `hashes` probes:
    /// scheme 5's (`curved`, [`HashScheme::is_curved`]) or scheme 1's.
    #[inline]
    pub fn probes_in(self, curved: bool, bits: u64, hashes: u32) -> Probes {
        Probes {
            x: self.h1,
            step: self.h2,
            curve: curved.then(|| self.curve()),
            i: 0,
            hashes,
            bits,
        }
    }

    /// Scheme 5's curvature `h3`: `h1` rotated by 32 bits (see the module's docs for why not
    /// `h1`).
    #[inline(always)]
    pub fn curve(self) -> u64 {
        self.h1.rotate_left(32)
    }
}

/// Iterator over one item's probe positions in one layer.
#[derive(Debug, Clone)]
pub struct Probes {
    x: u64,
    step: u64,
    /// Scheme 5's curvature ([`ItemHash::curve`]); `None`: scheme 1 (`step += i`).
    curve: Option<u64>,
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
        self.step = self.step.wrapping_add(self.curve.unwrap_or(u64::from(self.i)));
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
        for s in [HashScheme::Murmur64, HashScheme::Murmur32] {
            assert_eq!(HashScheme::from_id(s.id()), Some(s));
            assert!(s.is_redisbloom());
        }
        assert!(!HashScheme::Xxh3Enhanced.is_redisbloom());
        assert_eq!(HashScheme::from_id(4), Some(HashScheme::Xxh3Blocked));
        assert!(!HashScheme::Xxh3Blocked.is_redisbloom());
        assert_eq!(HashScheme::from_id(5), Some(HashScheme::Xxh3Curved));
        assert!(HashScheme::Xxh3Curved.is_curved() && !HashScheme::Xxh3Enhanced.is_curved());
        assert_eq!(HashScheme::from_id(0), None);
        assert_eq!(HashScheme::from_id(6), None);
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

    /// Pins scheme 5: scheme 1's hash, `step += h3` (and the first two probes are scheme 1's:
    /// the sequences part from the third).
    #[test]
    fn scheme_five_is_stable() {
        let h = HashScheme::Xxh3Curved.hash(b"hello", 0);
        assert_eq!(h, HashScheme::Xxh3Enhanced.hash(b"hello", 0));
        let p: Vec<u64> = h.probes_in(true, 1 << 20, 4).collect();
        assert_eq!(p[..2], PINNED_HELLO_PROBES[..2]);
        let x = |i: u64| {
            let h3 = h.h1.rotate_left(32);
            h.h1.wrapping_add(i.wrapping_mul(h.h2))
                .wrapping_add((i * i.saturating_sub(1) / 2).wrapping_mul(h3))
        };
        assert_eq!(p, (0..4).map(|i| reduce(x(i), 1 << 20)).collect::<Vec<_>>());
        assert_eq!(PINNED_HELLO_PROBES_5, p.as_slice());
    }

    const PINNED_HELLO_PROBES_5: &[u64] = &[817052, 513593, 596472, 17115];

    /// The false-positive rate of scheme 5 at 1% (k = 7) and 0.1% (k = 10) is the textbook's,
    /// `(1 − e^(−k·n/m))^k`, within 4%: 20 layers of 1,000 items each, 20,000 absent items
    /// per layer, fixed seeds (so the numbers are fixed too). Curvature `h1` itself, which
    /// makes probe 2 a function of probe 1, gave 1.08% where 1.00% is due (bench/README).
    #[test]
    fn curved_probes_meet_the_textbook_rate() {
        for (m, k, textbook) in [(9_585u64, 7u32, 0.010_03), (14_400, 10, 0.000_98)] {
            let (mut found, mut tried) = (0u64, 0u64);
            for layer in 0..20u64 {
                let mut bits = vec![false; m as usize];
                let hash = |n: u64| HashScheme::Xxh3Curved.hash(&n.to_le_bytes(), layer);
                for n in 0..1_000 {
                    hash(n).probes_in(true, m, k).for_each(|p| bits[p as usize] = true);
                }
                for n in 1_000..21_000 {
                    found += u64::from(hash(n).probes_in(true, m, k).all(|p| bits[p as usize]));
                    tried += 1;
                }
            }
            let rate = found as f64 / tried as f64;
            assert!((rate / textbook - 1.0).abs() < 0.04, "k={k}: {rate} against {textbook}");
        }
    }

    /// Scheme 1's floor and scheme 5's fix: an item whose step `h2` is close to a fraction of
    /// 2^64 with a small denominator probes only a few distinct positions in scheme 1 (its
    /// false-positive rate is then the fill to that small power); in scheme 5 it probes as
    /// many distinct positions as any item.
    #[test]
    fn curved_probes_stay_distinct_where_scheme_one_repeats() {
        let (bits, k) = (28_800u64, 20u32); // a 1,000-item layer at 1e-6
        let distinct = |h: ItemHash, curved: bool| {
            let mut p: Vec<u64> = h.probes_in(curved, bits, k).collect();
            p.sort_unstable();
            p.dedup();
            p.len()
        };
        let mut tried = 0;
        for q in 1..=4u64 {
            for near in [0u64, 1 << 20, 1 << 40] {
                for start in
                    [0x1234_5678_9abc_def1u64, 0xfedc_ba98_7654_3211, 0x9e37_79b9_7f4a_7c15]
                {
                    // h2 = 2^64 / q (+ a little), odd.
                    let h2 = (u64::MAX / q).wrapping_add(near) | 1;
                    let h = ItemHash { h1: start, h2 };
                    assert!(distinct(h, false) <= 2 * q as usize, "scheme 1, q={q}");
                    assert!(distinct(h, true) >= k as usize - 2, "scheme 5, q={q} {h:?}");
                    tried += 1;
                }
            }
        }
        assert_eq!(tried, 36);
    }

    /// The batched hashing gives every scheme's one-item hash, for items of every length class.
    #[test]
    fn hash_each_equals_hash_for_every_scheme() {
        let items: Vec<Vec<u8>> =
            (0..300usize).map(|n| (0..n).map(|i| (i * 7 + n) as u8).collect()).collect();
        for scheme in [1, 2, 3, 4, 5].map(|id| HashScheme::from_id(id).unwrap()) {
            let mut out = vec![ItemHash { h1: 0, h2: 0 }; items.len()];
            scheme.hash_each(&items, 0x5eed, &mut out);
            for (item, h) in items.iter().zip(&out) {
                assert_eq!(*h, scheme.hash(item, 0x5eed), "{scheme:?} {}", item.len());
            }
        }
    }

    /// Pins scheme 4 (blocked chains): the hash is xxh3-64, `h2` its low half shifted up, odd.
    #[test]
    fn scheme_four_is_stable() {
        let h = HashScheme::Xxh3Blocked.hash(b"hello", 0);
        let x = xxh3_64_with_seed(b"hello", 0);
        assert_eq!(h, ItemHash { h1: x, h2: (x << 32) | 1 });
        assert_eq!(x, 0x9555_e855_5c62_dcfd);
        assert_ne!(h, HashScheme::Xxh3Blocked.hash(b"hello", 1));
    }
}
