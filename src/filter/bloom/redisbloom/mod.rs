//! RedisBloom's Bloom formats: its RDB value (encoding versions 1–4 of `MBbloom--`), its
//! `BF.SCANDUMP` header, and the way back (its header, and this module's RDB fields, for chains
//! in its schemes). Importing its data is their purpose; the hash schemes themselves (MurmurHash
//! twice, positions mod bits or mod 2^n2) are the Bloom chain's, in `bloom/hash.rs`.
//!
//! # Layout
//! - [`meta`]: a chain's fields as RedisBloom stores them, and their validation.
//! - [`header`](mod@header): its dump header (the 53-byte link layout).
//! - [`rdb`]: its RDB value, and this module's RDB fields of a chain in its schemes.
//!
//! # History
//! Facts from RedisBloom's history (`src/rebloom.c`, `src/sb.c`, `deps/bloom/bloom.c`, formerly
//! `contrib/bloom.c`), by the commit that changed them; releases named where they first appear.
//!
//! A chain (`SBChain`) is `size` (items), `nfilters`, `options`, `growth` and its layers. A layer
//! (`SBLink` + `struct bloom`) is `entries` (capacity), `error`, `hashes`, `bpe` (bits per entry),
//! `bits`, `n2`, `bytes` (array length) and `size` (its items). Bit `p` of a layer is in byte
//! `p >> 3` at mask `1 << (p & 7)`: the same order as ours, so arrays are copied as they are.
//!
//! Options (`BLOOM_OPT_*`, bloom.h):
//! - `NOROUND` = 1: `bits = (u64)(entries × bpe)` (at least 1), `n2 = 0`, positions mod `bits`.
//!   Without it: `n2 = logb(entries × bpe) + 1`, `bits = 2^n2`, positions mod `2^n2` (a mask),
//!   and `entries` grows by the items the extra bits hold: `+= (u64)((u64)(2^n2 − entries×bpe)
//!   / bpe)` — the stored capacity is that grown value, and the next layer builds on it.
//! - `ENTS_IS_BITS` = 2: never set by RedisBloom's commands (refused here).
//! - `FORCE64` = 4 (releases 1.1.1 on): `a = MurmurHash64A(item,
//!   0xc6a4a7935bd1e995)`, `b = MurmurHash64A(item, a)`. Without it: `a = MurmurHash2(item,
//!   0x9747b28c)`, `b = MurmurHash2(item, a)` (32-bit). (In RDB encoding version 2,
//!   which no release wrote, the first seed is 0.) Probe `i` = `(a + i·b) mod M` in 64-bit arithmetic since
//!   1.1.1; 1.0's 32-bit arithmetic gives the same positions because 1.0 layers are powers of two.
//! - `NO_SCALING` = 8 (releases 2.2 on): the chain never grows; its growth field keeps
//!   the default expansion, 2.
//!
//! What releases wrote: 1.0–1.1.0 options 0 (32-bit hash, powers of two); 1.1.1–2.0 options 4
//! (64-bit, powers of two); 2.2 on 5 (`NOROUND | FORCE64`), 13 when nonscaling. `BF.LOADCHUNK`
//! of RedisBloom 2.8 accepts any of 0, 1, 4, 5, 8, 9, 12, 13 (and 2): all but 2 are read here.
//!
//! Sizing (`bloom_init`): `bpe = |ln(error) / 0.480453013918201|`, `hashes = ceil(0.693147180559945
//! × bpe)`, then bits as above; from 2.2 on `bytes` is rounded up to whole 64-bit
//! words and `bits = bytes × 8` is stored; 1.0–2.0 store `bits` as 0 for power-of-two
//! layers and `bytes = 2^n2 / 8` (at least 1). Growth (`SBChain_Add`): a new layer when the
//! last holds `entries` items, with `entries × growth` items (the last layer's stored entries)
//! at `error × 0.5` (2.2 on); in 1.0–2.0 `growth` is always 2, the first layer gets the
//! full requested error (2.2 on: half, or all of it when nonscaling), and layer `n` gets the
//! previous layer's error × 0.5^(n+1). Every error is therefore the first layer's halved a
//! whole number of times, which is how it is held here. New layers of an imported chain are
//! sized and tightened as RedisBloom 2.2 on does.
//!
//! RDB value, by encoding version (typed fields; `BFRdbLoad`):
//! - 0 (no release): `size`, `nfilters`; per layer `entries`, `error`,
//!   `hashes`, `bpe`, array, `size` — `bits = entries × bpe` unrounded, 32-bit arithmetic mod
//!   `bits`. Refused here (RedisBloom 2.8 loads them unchecked but probes them in 64-bit
//!   arithmetic, unlike the builds that wrote them; RedisBloom 8 refuses nearly all of them: it
//!   requires `bits = bytes × 8`).
//! - 1 (1.0): adds `bits` and `n2` after `bpe` (one build of no release wrote version 1
//!   without `bits`). Options are 0.
//! - 2 (no release): adds `options` after `nfilters`.
//! - 3 (1.1.1): the same fields (marks the 64-bit hash's seed `0xc6a4a7935bd1e995`).
//! - 4 (2.2 on): adds `growth` after `options`; below 4 growth is 2.
//!
//! Dump header (`SBChain_GetEncodedHeader`, packed little-endian, `20 + 53 × nfilters` bytes):
//! the chain's `size`, `nfilters`, `options` and `growth`, then per layer its `bytes`, `bits`,
//! `size`, `error`, `bpe`, `hashes`, `entries` and `n2` (byte layout in [`header`](mod@header)). Chunks as
//! ours (iterator = 1 + offset).

pub mod header;
pub mod meta;
pub mod rdb;
#[cfg(test)]
mod tests;

pub use header::{
    HEADER_BYTES, HEADER_LINK_BYTES, creation_header, header, one_layer_header, parse_header,
};
pub use meta::{LinkMeta, RawLink, RbMeta, Refusal};
pub use rdb::{read_fields, read_rdb, write_fields, write_rdb};

use super::Chain;
use super::params::bits_per_entry;
use crate::filter::hash::HashScheme;

/// `BLOOM_OPT_NOROUND`: layers sized without rounding to a power of two; positions mod bits.
pub const OPT_NOROUND: u64 = 1;
/// `BLOOM_OPT_ENTS_IS_BITS`: "capacity" is a bit count (never set by RedisBloom's commands).
pub const OPT_ENTS_IS_BITS: u64 = 2;
/// `BLOOM_OPT_FORCE64`: 64-bit hashing (MurmurHash64A).
pub const OPT_FORCE64: u64 = 4;
/// `BLOOM_OPT_NO_SCALING`: the chain never adds a layer.
pub const OPT_NONSCALING: u64 = 8;
/// The highest `MBbloom--` encoding version RedisBloom writes.
pub const MAX_ENCODING_VERSION: i32 = 4;
/// The growth RedisBloom gives a chain whose RDB value predates the growth field (encoding
/// versions below 4), and the one it stores for nonscaling chains (its default expansion).
pub const DEFAULT_GROWTH: u32 = 2;

/// RedisBloom's option bits of a chain in one of its schemes.
pub fn options_of(chain: &Chain) -> u64 {
    let mut o = 0;
    if chain.noround() {
        o |= OPT_NOROUND;
    }
    if chain.scheme() == HashScheme::Murmur64 {
        o |= OPT_FORCE64;
    }
    if !chain.params().scaling() {
        o |= OPT_NONSCALING;
    }
    o
}

/// The growth field RedisBloom would store for `chain`.
fn growth_of(chain: &Chain) -> u32 {
    let e = chain.params().expansion;
    if e == 0 { DEFAULT_GROWTH } else { e }
}

/// The stored fields of every layer of a RedisBloom chain.
fn links(chain: &Chain) -> impl Iterator<Item = RawLink> + '_ {
    chain.layers().iter().enumerate().map(|(i, l)| {
        let error = chain.layer_error(i);
        RawLink {
            capacity: l.capacity(),
            error,
            hashes: u64::from(l.hashes()),
            bpe: bits_per_entry(error).abs(),
            bits: l.len_bits(),
            n2: u64::from(l.rule().n2()),
            items: l.items(),
        }
    })
}
