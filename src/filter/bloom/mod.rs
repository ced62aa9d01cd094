//! The scalable Bloom chain: parameters and sizing ([`params`]), hashing ([`crate::filter::hash`]), bit arrays
//! ([`bits`]) and their probe kernels ([`probe`]), layers ([`layer`]), how a chain stores them
//! ([`layers`]) and their kinds as types
//! ([`kind`]), the chain ([`chain`]),
//! the RedisBloom kind's kernels ([`redisbloom_layout`]), its batched paths ([`batch`]), counting ([`counting`]), fill statistics ([`stats`]) and the
//! rule every stored chain obeys ([`claims`]).
//!
//! # What a Bloom filter is
//! A Bloom filter answers "have I seen this item?" with "no" (certainly) or "probably". It is an
//! array of `m` bits, all 0 at first. Adding an item sets `k` bits chosen by hashing the item;
//! asking about an item checks its `k` bits: any 0 means the item was never added; all 1 means
//! it probably was — a false positive happens when other items happened to set all `k`. With
//! `n` items, `m = n · ln(1/p) / ln(2)²` bits and `k = ln(2) · m/n` probes give a false-positive
//! rate of about `p`. There are no false negatives, ever.
//!
//! # Scaling
//! A fixed array fills up: past `n` items the false-positive rate climbs. A *scalable* filter
//! (Almeida et al., 2007) is a chain of layers ([`chain`]): when the newest layer holds its `n`
//! items, a new layer `expansion` times larger is appended, built for half the error of the one
//! before. The chain answers "present" if any layer does, and its overall error stays below
//! `p/2 + p/4 + … < p`. A nonscaling chain has one layer and refuses items once full.
//!
//! # Hashing
//! Each item is hashed once ([`crate::filter::hash`]): 128 bits of xxh3 with the chain's seed, split into a
//! start and an odd step, from which every layer derives its `k` probe positions (new
//! standard chains add a full-width curvature: hash scheme 5). The scheme's
//! id and the seed are stored with the chain, so the same bits always mean the same items.
//! Filters imported from RedisBloom keep RedisBloom's schemes (MurmurHash64A or its legacy
//! 32-bit hash, `(a + i·b) mod bits` or `mod 2^n2` positions) and its layer sizing for good
//! (`filter/redisbloom/`, `filter/codec.rs`), so they answer exactly as RedisBloom would.
//!
//! # Sizing and limits
//! Layers are sized exactly as RedisBloom sizes them ([`params`]), so `BF.INFO` and `BF.DEBUG`
//! show users the numbers they know. Every size is computed with checked arithmetic and every
//! allocation is first offered to an [`AllocGuard`](crate::filter::AllocGuard). A native chain
//! has at most [`params::MAX_LAYERS`] layers and no layer's error goes below
//! [`params::MIN_LAYER_ERROR`]; every new chain's first layer keeps that floor too. A chain in
//! RedisBloom's schemes has RedisBloom's own bounds, so that everything RedisBloom wrote comes
//! in and grows as there: at most [`params::MAX_RB_LAYERS`] layers, errors down to
//! [`params::MIN_RB_LAYER_ERROR`].
//!
//! # Counting
//! A counting chain ([`counting`]) has a 4- or 8-bit counter where a plain one has a bit, so
//! items can be deleted: adds increment, deletes decrement, present means every counter is
//! non-zero. Same sizing and probes; 4× or 8× the memory.
//!

pub mod batch;
pub mod bits;
pub mod block;
pub mod blocked;
pub mod chain;
pub mod chunks;
pub mod claims;
pub mod codec;
pub mod counters;
pub mod counting;
pub mod dispatch;
pub mod kernel;
pub mod kind;
pub mod layer;
pub mod layers;
pub mod merge;
pub mod merged;
pub mod params;
pub mod probe;
pub mod redisbloom;
pub mod redisbloom_layout;
pub mod stats;

#[cfg(test)]
mod tests;

pub use chain::Chain;
pub use params::ChainParams;
