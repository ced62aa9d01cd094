//! The pure core of scalebloom: scalable Bloom filters with no Redis in sight.
//!
//! # Layout
//! - [`bloom`]: the scalable Bloom chain (plain, counting and RedisBloom-layout filters).
//! - [`guard`]: the allocation guard every filter asks before it grows.
//! - [`mem`]: the memory of bit arrays (zeroed allocation, huge pages, prefetch, defrag moves).
//! - [`fields`]: typed fields, the vocabulary of every byte format; [`bloom::codec`] (scalebloom's
//!   formats of a Bloom chain) and [`bloom::redisbloom`] (RedisBloom's) are written in it.
//! - [`bloom::chunks`]: the chunks of SCANDUMP/LOADCHUNK after either header, and the allocation of a
//!   chain that awaits them.
//!
//! # Encoding
//! A Bloom chain's byte formats (RDB fields, the dump header of SCANDUMP/LOADCHUNK) live in
//! [`bloom::codec`], which hands a chain in one of RedisBloom's schemes to [`bloom::redisbloom`] (its RDB
//! value, its dump header, their one strict validator and its format history); [`bloom::redisbloom`]
//! never calls back into [`bloom::codec`]. The cuckoo filter's formats are in `cuckoo/codec.rs`.
//!
//! Nothing below this folder uses the Redis module API: the Redis glue lives in `crate::module`.

pub mod bloom;
pub mod cuckoo;
pub mod fields;
pub mod guard;
pub mod hash;
pub mod masks;
pub mod mem;
#[cfg(test)]
pub(crate) mod testrng;
pub mod window;

pub use guard::{AllocGuard, MaxFilterBytes, Unlimited};

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
