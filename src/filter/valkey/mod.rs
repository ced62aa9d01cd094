//! valkey-bloom's Bloom filters (the module Valkey bundles, 1.0.x), as it made them: its
//! hashing, sizing and growth, and the formats its data comes in, so that a filter it wrote
//! loads here and answers every item exactly as it did.
//!
//! # The object
//! One key holds one object: settings — expansion (0: nonscaling), error rate, tightening
//! ratio, a 32-byte seed and whether that seed was random — and layers, oldest first, each a
//! bitmap of whole bytes with its probe count, capacity and items ([`object`]). An item is
//! present if any layer holds it; a new item goes into the newest layer until it is full, then
//! a scaling object appends a layer `expansion` times larger at `error × tightening^i`.
//!
//! # Hashing
//! Two SipHash-1-3 hashes of the item (length-prefixed) under the seed's two 16-byte keys, and
//! probe positions `h0`, `h1`, `(h0 + i·h1) mod (2^64 − 59)`, each modulo the layer's bits
//! ([`hash`]). Sizes follow the `bloomfilter` crate: `ceil(n · ln p / (−8 ln² 2))` bytes,
//! `round(m/n · ln 2)` probes ([`sizing`]).
//!
//! # Formats
//! - [`blob`]: one layer (45-byte header, then its bitmap), inside both formats below;
//! - [`rdb`]: the RDB value of module type `bloomfltr`, encoding version 1 (also what a
//!   `DUMP` payload holds);
//! - [`payload`]: the `BF.LOAD` payload of valkey-bloom's AOF rewrite;
//! - [`codec`]: scalebloom's own encoding of such an object (type `bloomfltr`, encoding 2),
//!   which is what it is saved as here.
//!
//! Every field is validated before it is used and every bitmap's memory is offered to an
//! [`AllocGuard`](crate::filter::guard::AllocGuard) before it is allocated: nothing a payload
//! holds can make the loader panic, allocate past the limit, or build an object that cannot
//! answer, grow, or be saved and loaded again.

pub mod blob;
pub mod codec;
pub mod hash;
pub mod object;
pub mod payload;
pub mod rdb;
pub mod sizing;

#[cfg(test)]
mod tests;

pub use hash::{FIXED_SEED, SipSeed};
pub use object::{Settings, ValkeyBloom};

use crate::filter::FilterError;

/// Everything valkey-bloom's filters can refuse, named as valkey-bloom names its errors; the
/// module maps each to its reply.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ValkeyError {
    /// Data that does not decode (`ERR bloom object decoding failed`).
    Decode,
    /// A payload or value of a version valkey-bloom 1.0 does not write
    /// (`ERR bloom object decoding failed. Unsupported version`).
    UnsupportedVersion,
    /// An error rate or tightening ratio outside (0, 1) (`ERR (0 < error rate range < 1)`).
    ErrorRateRange,
    /// An expansion past `u32` (`ERR bad expansion`).
    BadExpansion,
    /// A capacity past `i64`, as given or as scaling makes it (`ERR bad capacity`).
    BadCapacity,
    /// A nonscaling object's layer is full (`ERR non scaling filter is full`).
    NonScalingFull,
    /// The object has the most layers it may have
    /// (`ERR bloom object reached max number of filters`).
    MaxFilters,
    /// The next layer's error would not be above `f64::MIN_POSITIVE`
    /// (`ERR false positive degrades to 0 on scale out`).
    FalsePositiveZero,
    /// `VALIDATESCALETO` past the memory limit
    /// (`ERR provided VALIDATESCALETO causes bloom object to exceed memory limit`).
    ScaleToExceedsLimit,
    /// `VALIDATESCALETO` past the error underflow
    /// (`ERR provided VALIDATESCALETO causes false positive to degrade to 0`).
    ScaleToFalsePositiveZero,
    /// A layer larger than this module's largest layer (2^43 bits).
    TooLarge,
    /// The memory guard or the allocator refused ([`FilterError::FilterLimit`],
    /// [`FilterError::MaxMemory`], [`FilterError::OutOfMemory`]).
    Alloc(FilterError),
}
