//! The one error type of the core: what any filter kind can refuse.

/// Everything the core can refuse, for every kind of filter. The glue maps each to its reply
/// text in one place (`module/errors.rs`); where a kind answers as RedisBloom does, the text
/// depends on the kind (a cuckoo filter's in brackets below).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FilterError {
    /// Error rate outside (0, 1).
    ErrorRange,
    /// Capacity outside [MIN_CAPACITY, MAX_CAPACITY].
    CapacityRange,
    /// Expansion above MAX_EXPANSION (cuckoo: above 32768, `EXPANSION: value must be an
    /// integer between 0 and 32768, inclusive.`).
    ExpansionRange,
    /// A layer would need an error below MIN_LAYER_ERROR (too many probes), or, in RedisBloom's
    /// schemes, an error of 0.
    ErrorTooSmall,
    /// Some size does not fit the bounds (layer bits, products that would overflow; cuckoo:
    /// more than 2^56 − 1 buckets, or the address space).
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
    /// Stored or transferred data that fails validation (cuckoo: `Couldn't create filter!` for
    /// a header).
    BadData,
    /// A dump chunk whose offset is past the end of the filter (cuckoo: whose iterator places it
    /// outside the filter, `Couldn't load chunk!`).
    ChunkOffset,
    /// A dump chunk that does not fit inside one layer (cuckoo: one sub-filter) at its offset.
    ChunkTooBig,
    /// A delete on a filter that was not made with counters.
    NotCounting,
    /// Cuckoo capacity below 2 × bucket size (`Capacity must be at least (BucketSize * 2)`).
    CapacityTooSmall,
    /// Cuckoo bucket size outside 1..=255 (`BUCKETSIZE: value must be an integer between 1 and
    /// 255, inclusive.`).
    BucketSizeRange,
    /// Cuckoo max iterations 0 (`MAXITERATIONS: value must be an integer between 1 and 65535,
    /// inclusive.`).
    MaxIterationsRange,
    /// The cuckoo filter has `cf-max-expansions` sub-filters (`Maximum expansions reached`).
    MaxExpansions,
    /// A `CF.LOADCHUNK` header of neither length (`Invalid header`).
    BadHeader,
    /// An RDB encoding version this build does not read.
    UnsupportedEncoding(i32),
    /// A format that cannot hold this filter (RedisBloom's, for 16/32-bit fingerprints).
    Unsupported,
    /// `BF.MERGE` cannot hold these filters in one value ([`MergeRefusal`]).
    MergeRefused(MergeRefusal),
}

/// Why `BF.MERGE` refuses, before changing anything.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MergeRefusal {
    /// A counting filter with a plain one: the result could not delete items.
    CountingWithPlain,
    /// Counting filters of two counter widths.
    CounterWidths,
    /// A filter in RedisBloom's layout with one in this module's.
    RedisBloomLayout,
    /// More parts kept apart than one value holds.
    TooManyParts,
    /// A windowed filter among the keys.
    Windows,
}

impl FilterError {
    /// Whether the allocation guard refused: the per-filter limit or `maxmemory`.
    pub fn is_limit(&self) -> bool {
        matches!(self, FilterError::FilterLimit { .. } | FilterError::MaxMemory { .. })
    }
}
