//! Sizing of a cuckoo filter, exactly as RedisBloom's `CuckooFilter_Init` and
//! `CuckooFilter_Grow` size it, with every product checked.
//!
//! - `numBuckets` (CF.INFO "Number of buckets", the first sub-filter's bucket count) is
//!   `capacity / bucketSize` rounded up to a power of two (at least 1). Powers of two make the
//!   alternate index an involution: `(i ^ m) mod n` undone by the same XOR, see `fingerprint.rs`.
//! - The expansion is rounded up to a power of two too (`EXPANSION 3` shows as 4; 0 stays 0).
//! - Sub-filter `i` has `numBuckets × expansion^i` buckets of `bucketSize` slots.
//! - `CF.INFO Size` and `MEMORY USAGE` are RedisBloom's `sizeof(CuckooFilter) + numFilters ×
//!   sizeof(SubCF) + slots` = `40 + 16 × filters + slot bytes`.

use crate::filter::FilterError;

/// Default `BUCKETSIZE` (`cf-bucket-size`).
pub const DEFAULT_BUCKET_SIZE: u16 = 2;
/// Largest `BUCKETSIZE` (RedisBloom keeps it in 8 bits of its `SubCF`).
pub const MAX_BUCKET_SIZE: u16 = 255;
/// Default capacity of a filter made by `CF.ADD`/`CF.INSERT` (`cf-initial-size`).
pub const DEFAULT_CAPACITY: u64 = 1024;
/// RedisBloom 8's largest `cf-initial-size` and `CF.RESERVE` capacity (2.8 had no bound).
pub const MAX_CAPACITY_8X: u64 = 1 << 30;
/// Default `MAXITERATIONS` (`cf-max-iterations`); the range is 1..=65535.
pub const DEFAULT_MAX_ITERATIONS: u16 = 20;
/// Default `EXPANSION` (`cf-expansion-factor`).
pub const DEFAULT_EXPANSION: u16 = 1;
/// Largest `EXPANSION`.
pub const MAX_EXPANSION: u16 = 32768;
/// Default `cf-max-expansions`: a filter with this many sub-filters takes no more inserts.
pub const DEFAULT_MAX_EXPANSIONS: u16 = 32;
/// Most buckets a sub-filter may have (RedisBloom's 56-bit `SubCF.numBuckets`).
pub const MAX_BUCKETS: u64 = (1 << 56) - 1;
/// Most sub-filters (RedisBloom's `uint16_t numFilters`).
pub const MAX_FILTERS: u16 = u16::MAX;
/// `sizeof(CuckooFilter)` in RedisBloom, counted by `CF.INFO Size`.
pub const STRUCT_BYTES: u64 = 40;
/// `sizeof(SubCF)` in RedisBloom, counted once per sub-filter.
pub const SUB_FILTER_BYTES: u64 = 16;

/// What `CF.RESERVE` (or an auto-creating `CF.ADD`/`CF.INSERT`) asks for, validated.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CuckooParams {
    /// Requested capacity (items).
    pub capacity: u64,
    /// Slots per bucket, 1..=255.
    pub bucket_size: u16,
    /// Kick-outs tried before an insert gives up on the newest sub-filter, 1..=65535.
    pub max_iterations: u16,
    /// Growth factor as requested, 0..=32768 (0: the filter never grows).
    pub expansion: u16,
}

impl Default for CuckooParams {
    fn default() -> Self {
        Self {
            capacity: DEFAULT_CAPACITY,
            bucket_size: DEFAULT_BUCKET_SIZE,
            max_iterations: DEFAULT_MAX_ITERATIONS,
            expansion: DEFAULT_EXPANSION,
        }
    }
}

impl CuckooParams {
    /// Validates the parameters in RedisBloom's order of checks (`CF.RESERVE`): max
    /// iterations, bucket size, expansion, then `capacity ≥ 2 × bucketSize`. Capacity has no
    /// upper bound here (the glue applies `cf-initial-size`'s); the sizes it gives are bounded
    /// by [`CuckooParams::base_buckets`] and by the allocation guard.
    pub fn new(
        capacity: u64,
        bucket_size: u16,
        max_iterations: u16,
        expansion: u16,
    ) -> Result<Self, FilterError> {
        if max_iterations == 0 {
            return Err(FilterError::MaxIterationsRange);
        }
        if bucket_size == 0 || bucket_size > MAX_BUCKET_SIZE {
            return Err(FilterError::BucketSizeRange);
        }
        if expansion > MAX_EXPANSION {
            return Err(FilterError::ExpansionRange);
        }
        if capacity < 2 * u64::from(bucket_size) {
            return Err(FilterError::CapacityTooSmall);
        }
        let p = Self { capacity, bucket_size, max_iterations, expansion };
        p.base_buckets()?;
        Ok(p)
    }

    /// Buckets of the first sub-filter: `capacity / bucketSize` rounded up to a power of two.
    pub fn base_buckets(&self) -> Result<u64, FilterError> {
        let n = self.capacity / u64::from(self.bucket_size.max(1));
        let n = next_pow2(n).ok_or(FilterError::TooLarge)?.max(1);
        if n > MAX_BUCKETS {
            return Err(FilterError::TooLarge);
        }
        Ok(n)
    }

    /// The expansion the filter stores and reports: rounded up to a power of two, 0 kept.
    pub fn rounded_expansion(&self) -> u16 {
        round_expansion(self.expansion)
    }
}

/// RedisBloom's `getNextN2`: the smallest power of two `≥ n`, 0 for 0; `None` past 2^63.
pub fn next_pow2(n: u64) -> Option<u64> {
    if n == 0 { Some(0) } else { n.checked_next_power_of_two() }
}

/// An expansion as stored: a power of two (or 0), at most [`MAX_EXPANSION`] for any input up
/// to it.
pub fn round_expansion(e: u16) -> u16 {
    // e ≤ 32768 = 2^15 rounds to at most 2^15; larger inputs saturate (never stored).
    next_pow2(u64::from(e)).and_then(|v| u16::try_from(v).ok()).unwrap_or(MAX_EXPANSION)
}

/// Whether `e` is an expansion a filter can store: 0 or a power of two up to 32768.
pub fn valid_stored_expansion(e: u64) -> bool {
    e == 0 || (e.is_power_of_two() && e <= u64::from(MAX_EXPANSION))
}

/// Buckets of sub-filter `index`: `base × expansion^index`, `None` if it overflows
/// [`MAX_BUCKETS`] or if a filter with expansion 0 would need a second sub-filter.
pub fn sub_filter_buckets(base: u64, expansion: u16, index: u16) -> Option<u64> {
    let growth = u64::from(expansion).checked_pow(u32::from(index))?;
    if growth == 0 {
        return None;
    }
    let n = base.checked_mul(growth)?;
    (n <= MAX_BUCKETS).then_some(n)
}

/// `CF.INFO Size`: RedisBloom's struct sizes plus the slot bytes.
pub fn info_size(filters: u64, slot_bytes: u64) -> Option<u64> {
    STRUCT_BYTES.checked_add(SUB_FILTER_BYTES.checked_mul(filters)?)?.checked_add(slot_bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizing_matches_redisbloom() {
        // CF.RESERVE c 1000 → 512 buckets, Size 1080 (reference/redisbloom-cf.md).
        let p = CuckooParams::new(1000, 2, 20, 1).unwrap();
        assert_eq!(p.base_buckets().unwrap(), 512);
        assert_eq!(info_size(1, 1024), Some(1080));
        // CF.RESERVE a 8 EXPANSION 3 → 4 buckets, Size 64, expansion 4 (observed on 2.8.2).
        let p = CuckooParams::new(8, 2, 20, 3).unwrap();
        assert_eq!((p.base_buckets().unwrap(), p.rounded_expansion()), (4, 4));
        assert_eq!(info_size(1, 8), Some(64));
        assert_eq!(round_expansion(0), 0);
        assert_eq!(round_expansion(1), 1);
        assert_eq!(round_expansion(32768), 32768);
        assert_eq!(round_expansion(20000), 32768);
        // RedisBloom 2.8 accepted capacity 2^31: 2^30 buckets.
        assert_eq!(CuckooParams::new(1 << 31, 2, 20, 1).unwrap().base_buckets().unwrap(), 1 << 30);
    }

    #[test]
    fn bounds_are_refused_in_redisbloom_order() {
        assert_eq!(CuckooParams::new(1, 2, 0, 1), Err(FilterError::MaxIterationsRange));
        assert_eq!(CuckooParams::new(100, 0, 20, 1), Err(FilterError::BucketSizeRange));
        assert_eq!(CuckooParams::new(100, 256, 20, 1), Err(FilterError::BucketSizeRange));
        assert_eq!(CuckooParams::new(100, 2, 20, 32769), Err(FilterError::ExpansionRange));
        assert_eq!(CuckooParams::new(3, 2, 20, 1), Err(FilterError::CapacityTooSmall));
        assert!(CuckooParams::new(4, 2, 20, 1).is_ok());
        assert!(CuckooParams::new(100, 2, 20, 0).is_ok(), "EXPANSION 0 is valid (#481)");
        assert_eq!(CuckooParams::new(u64::MAX, 1, 20, 1), Err(FilterError::TooLarge));
        assert_eq!(CuckooParams::new(1 << 60, 1, 20, 1), Err(FilterError::TooLarge));
    }

    #[test]
    fn sub_filter_growth_is_checked() {
        assert_eq!(sub_filter_buckets(4, 2, 0), Some(4));
        assert_eq!(sub_filter_buckets(4, 2, 3), Some(32));
        assert_eq!(sub_filter_buckets(4, 1, 100), Some(4));
        assert_eq!(sub_filter_buckets(4, 0, 0), Some(4));
        assert_eq!(sub_filter_buckets(4, 0, 1), None);
        assert_eq!(sub_filter_buckets(1 << 40, 32768, 2), None);
        assert_eq!(sub_filter_buckets(2, 32768, 4), None, "2^61 buckets");
        assert_eq!(sub_filter_buckets(1, 32768, 100), None);
        assert!(
            valid_stored_expansion(0) && valid_stored_expansion(1) && valid_stored_expansion(32768)
        );
        assert!(!valid_stored_expansion(3) && !valid_stored_expansion(65536));
    }
}
