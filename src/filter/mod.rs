//! The pure core of scalebloom: scalable Bloom filters with no Redis in sight.
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
//! Each item is hashed once ([`hash`]): 128 bits of xxh3 with the chain's seed, split into a
//! start and an odd step, from which every layer derives its `k` probe positions. The scheme's
//! id and the seed are stored with the chain, so the same bits always mean the same items.
//! Filters imported from RedisBloom keep RedisBloom's schemes (MurmurHash64A or its legacy
//! 32-bit hash, `(a + i·b) mod bits` or `mod 2^n2` positions) and its layer sizing for good
//! ([`redisbloom`], `codec.rs`), so they answer exactly as RedisBloom would.
//!
//! # Sizing and limits
//! Layers are sized exactly as RedisBloom sizes them ([`params`]), so `BF.INFO` and `BF.DEBUG`
//! show users the numbers they know. Every size is computed with checked arithmetic and every
//! allocation is first offered to an [`chain::AllocGuard`]. A native chain has at most
//! [`params::MAX_LAYERS`] layers and no layer's error goes below [`params::MIN_LAYER_ERROR`];
//! every new chain's first layer keeps that floor too. A chain in RedisBloom's schemes has
//! RedisBloom's own bounds, so that everything RedisBloom wrote comes in and grows as there:
//! at most [`params::MAX_RB_LAYERS`] layers, errors down to [`params::MIN_RB_LAYER_ERROR`].
//!
//! # Counting
//! A counting chain ([`counting`]) has a 4- or 8-bit counter where a plain one has a bit, so
//! items can be deleted: adds increment, deletes decrement, present means every counter is
//! non-zero. Same sizing and probes; 4× or 8× the memory.
//!
//! # Encoding
//! Every byte format (RDB fields, the dump header of SCANDUMP/LOADCHUNK) lives in [`codec`],
//! with one strict validator shared by all of them.
//!
//! Nothing below this folder uses the Redis module API: the Redis glue lives in `crate::module`.

pub mod bits;
pub mod chain;
pub mod codec;
pub mod counting;
pub mod hash;
pub mod layer;
pub mod mem;
pub mod params;
pub mod probe;
pub mod redisbloom;

pub use chain::{AllocGuard, Chain, MaxFilterBytes, Unlimited};
pub use hash::HashScheme;
pub use params::ChainParams;

/// Everything the core can refuse. The module maps each to its reply text in one place.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BloomError {
    /// Error rate outside (0, 1).
    ErrorRange,
    /// Capacity outside [MIN_CAPACITY, MAX_CAPACITY].
    CapacityRange,
    /// Expansion above MAX_EXPANSION.
    ExpansionRange,
    /// A layer would need an error below MIN_LAYER_ERROR (too many probes), or, in RedisBloom's
    /// schemes, an error of 0.
    ErrorTooSmall,
    /// Some size does not fit the bounds (layer bits, products that would overflow).
    TooLarge,
    /// A parameter that cannot size a layer (zero capacity, error out of range).
    BadParameter,
    /// A nonscaling chain's only layer is full.
    NonscalingFull,
    /// The chain already has the most layers it may have.
    TooManyLayers,
    /// Growing the filter would take it past the per-filter byte limit.
    FilterLimit {
        /// The filter's size after the allocation.
        needed: u64,
        /// The configured limit.
        limit: u64,
    },
    /// Growing the filter would take the server past `maxmemory`.
    MaxMemory {
        /// Bytes the allocation needs.
        needed: u64,
    },
    /// The allocator refused.
    OutOfMemory,
    /// Stored or transferred data that fails validation.
    BadData,
    /// A dump chunk whose offset is past the end of the filter.
    ChunkOffset,
    /// A dump chunk that does not fit inside one layer at its offset.
    ChunkTooBig,
    /// A delete on a filter that was not made with counters.
    NotCounting,
}
