//! The shape of a cuckoo filter: its sub-filters' bucket counts, derived from the first one's
//! and the expansion, and the stored description ([`Shape`]) that RDB fields and dump headers
//! hold, validated before anything is allocated.

use crate::filter::FilterError;
use crate::filter::cuckoo::params::{self, sub_filter_buckets};

/// Buckets of sub-filter `i` of a filter whose first has `2^base_log2` and whose stored
/// expansion code is `code` (`FixedWidthCuckoo`'s fields): `base × expansion^i`. Callers ask only for
/// sub-filters that exist in memory, so the shift is below 64.
#[inline(always)]
pub(super) fn buckets_at(base_log2: u8, code: u8, i: usize) -> u64 {
    let step = u32::from(code.saturating_sub(1));
    1 << (u32::from(base_log2) + i as u32 * step)
}

/// `REPEAT[s]` (`s` in 1..=15): the bits at 0, s, 2s, … below 64, the sum of `2^(s·i)`.
const REPEAT: [u64; 16] = {
    let mut table = [0u64; 16];
    let mut s = 1;
    while s < 16 {
        let mut bit = 0;
        while bit < 64 {
            table[s] |= 1 << bit;
            bit += s;
        }
        s += 1;
    }
    table
};

/// Slots of a filter of `count` sub-filters, the first of `2^base_log2` buckets, growing by the
/// expansion whose code is `code` (`FixedWidthCuckoo`'s fields), of `bucket_size` slots per bucket:
/// `base × Σ e^i` buckets, in O(1) (a delete may read it). The filter exists in memory, so
/// nothing overflows.
#[inline]
pub(super) fn slots_of(base_log2: u8, code: u8, count: u16, bucket_size: u8) -> u64 {
    let n = u32::from(count);
    // The bucket count over the first sub-filter's: the sum of e^i over the sub-filters.
    let growth = match code {
        // Expansion 0 or 1: every sub-filter has the first one's buckets.
        0 | 1 => u64::from(n),
        code => {
            // e = 2^step: the sum is the bits at 0, step, …, step·(n − 1).
            let step = u32::from(code - 1);
            let repeat = REPEAT.get(step as usize).copied().unwrap_or(1);
            match 1u64.checked_shl(step * n) {
                Some(e_n) => repeat & (e_n - 1),
                // e^n past 2^63: never in memory (its last sub-filter would have 2^56 buckets
                // or more), summed all the same.
                None => (0..n).map(|i| 1u64 << (i * step)).sum(),
            }
        }
    };
    (growth << base_log2) * u64::from(bucket_size)
}

/// The stored description of a filter, validated: what RDB fields and dump headers hold.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Shape {
    /// Buckets of the first sub-filter.
    pub base_buckets: u64,
    /// Number of sub-filters.
    pub filters: u16,
    /// Fingerprints stored.
    pub items: u64,
    /// Deletes since the last compaction.
    pub deletes: u64,
    /// Slots per bucket.
    pub bucket_size: u16,
    /// Kick-out limit.
    pub max_iterations: u16,
    /// Stored expansion.
    pub expansion: u16,
}

impl Shape {
    /// Checks raw stored values (RDB fields or header fields) and returns the shape, or
    /// `BadData`. Allocates nothing. `slot_bytes` is the bytes of one slot.
    #[allow(clippy::too_many_arguments)]
    pub fn validate(
        filters: u64,
        base_buckets: u64,
        items: u64,
        deletes: u64,
        bucket_size: u64,
        max_iterations: u64,
        expansion: u64,
        slot_bytes: u64,
    ) -> Result<Self, FilterError> {
        let bad = FilterError::BadData;
        let filters = u16::try_from(filters).map_err(|_| bad.clone())?;
        let bucket_size = u16::try_from(bucket_size).map_err(|_| bad.clone())?;
        let max_iterations = u16::try_from(max_iterations).map_err(|_| bad.clone())?;
        if filters == 0
            || !base_buckets.is_power_of_two()
            || base_buckets > params::MAX_BUCKETS
            || bucket_size == 0
            || bucket_size > params::MAX_BUCKET_SIZE
            || max_iterations == 0
            || !params::valid_stored_expansion(expansion)
            || (expansion == 0 && filters > 1)
        {
            return Err(bad);
        }
        let shape = Self {
            base_buckets,
            filters,
            items,
            deletes,
            bucket_size,
            max_iterations,
            expansion: expansion as u16,
        };
        let slots = shape.total_slots()?;
        if items > slots {
            return Err(bad);
        }
        slots.checked_mul(slot_bytes).ok_or(bad)?;
        Ok(shape)
    }

    /// Buckets of sub-filter `i`.
    pub fn sub_buckets(&self, i: u16) -> Result<u64, FilterError> {
        sub_filter_buckets(self.base_buckets, self.expansion, i).ok_or(FilterError::BadData)
    }

    /// Slots of all sub-filters.
    pub fn total_slots(&self) -> Result<u64, FilterError> {
        let mut total = 0u64;
        for i in 0..self.filters {
            let slots = self.sub_buckets(i)?.checked_mul(u64::from(self.bucket_size));
            total = slots.and_then(|s| total.checked_add(s)).ok_or(FilterError::BadData)?;
        }
        Ok(total)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The closed form of the slot count is the sum over the sub-filters, for every expansion.
    #[test]
    fn slots_of_sums_every_sub_filter() {
        for expansion in [0u16, 1, 2, 4, 8, 256, 32768] {
            let code = if expansion == 0 { 0 } else { expansion.trailing_zeros() as u8 + 1 };
            for base_log2 in [0u8, 1, 3, 10] {
                for bucket_size in [1u8, 2, 255] {
                    for count in 1..=40u16 {
                        let shape = Shape {
                            base_buckets: 1 << base_log2,
                            filters: count,
                            items: 0,
                            deletes: 0,
                            bucket_size: u16::from(bucket_size),
                            max_iterations: 1,
                            expansion,
                        };
                        let Ok(total) = shape.total_slots() else { break };
                        let got = slots_of(base_log2, code, count, bucket_size);
                        assert_eq!(got, total, "e {expansion} base 2^{base_log2} n {count}");
                    }
                }
            }
        }
    }
}
