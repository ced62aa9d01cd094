//! How full a cuckoo filter is and whether it takes more items (`CF.STATS`): computed from the
//! filter's contents, its settings and what the caller's limits admit, nothing else, so a
//! replica or a reloaded server answers the same.

use super::{AllocGuard, FilterError, FixedWidthCuckoo};
use crate::filter::cuckoo::fingerprint::Fingerprint;
use crate::filter::cuckoo::params::{MAX_FILTERS, info_size, sub_filter_buckets};

/// What `CF.STATS` reports ([`FixedWidthCuckoo::stats`]).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct CuckooStats {
    /// Slots over all sub-filters: what the filter can hold.
    pub capacity: u64,
    /// Fingerprints stored (inserted − deleted).
    pub items: u64,
    /// `items ÷ capacity`.
    pub load: f64,
    /// Occupied slots ÷ slots of the newest sub-filter (the one kick-outs run in).
    pub newest_load: f64,
    /// Number of sub-filters.
    pub filters: u64,
    /// Sub-filters the filter may reach: 1 with expansion 0, else `max_filters`.
    pub max_filters: u64,
    /// Whether it refuses, or is about to refuse, new items: every insert is refused (it has
    /// `max_filters` sub-filters), or it cannot grow and its newest sub-filter's load is at
    /// least [`full_load`] of its bucket size.
    pub saturated: bool,
}

/// The load of its newest sub-filter from which a cuckoo filter that cannot grow counts as
/// saturated: about where inserts start to fail for its bucket size.
///
/// Measured on this module's filters (deterministic kick-outs, the default `MAXITERATIONS`
/// 20), 8- and 16-bit fingerprints, 2^1 to 2^16 buckets (60 filters per size up to 2^12, 8
/// above), inserting distinct items into a filter of `EXPANSION 0` until the first `Filter is
/// full`; the load at that first refusal:
///
/// | bucket size | median (2^10 – 2^16 buckets) | lowest (64 slots and more) | chosen |
/// |-------------|------------------------------|----------------------------|--------|
/// | 1           | 0.38 – 0.52                  | 0.30                       | 0.30   |
/// | 2           | 0.60 – 0.69                  | 0.36                       | 0.50   |
/// | 3           | 0.75 – 0.85                  | 0.72                       | 0.70   |
/// | 4           | 0.80 – 0.87                  | 0.77                       | 0.75   |
/// | 6           | 0.85 – 0.90                  | 0.80                       | 0.78   |
/// | 8           | 0.88 – 0.92                  | 0.81                       | 0.80   |
/// | 16          | 0.92 – 0.95                  | 0.885                      | 0.80   |
///
/// Each threshold is at or below the lowest first-refusal load measured, so a filter that
/// answered `Filter is full` says saturated, and one that does not yet is close to refusing.
/// Bucket size 2 (the default) is the exception: its first refusals spread widest, and a
/// threshold at the lowest (0.36) would call a filter saturated at little over half its
/// median; 0.50 is below the 5th percentile of every size from 128 slots on (0.55 – 0.70 up to
/// 2^12 buckets), so a refusal below it is rare. The textbook loads (50%, 84%, 95% for bucket
/// sizes 1, 2, 4) assume random kick-outs with hundreds of iterations; 20 deterministic ones
/// give up earlier. A larger `MAXITERATIONS` fills further: the threshold then warns early,
/// never late. Filters of a few dozen slots vary more.
pub fn full_load(bucket_size: u16) -> f64 {
    match bucket_size {
        0 | 1 => 0.30,
        2 => 0.50,
        3 => 0.70,
        4 => 0.75,
        5..=7 => 0.78,
        _ => 0.80,
    }
}

impl<F: Fingerprint> FixedWidthCuckoo<F> {
    /// What `CF.STATS` reports, with `max_filters` the `cf-max-expansions` of inserts and
    /// `guard` the limits an insert's growth must pass: the same checks an insert makes
    /// ([`FixedWidthCuckoo::check_can_insert`], then growth through `admit_growth`), so the two
    /// never disagree. O(1) for one sub-filter; with several, a count of the newest one's
    /// occupied slots.
    pub fn stats(&self, max_filters: u16, guard: &dyn AllocGuard) -> CuckooStats {
        let capacity = self.slot_count();
        let items = self.items();
        let newest = self.sub(self.filter_count() - 1);
        let newest_slots = newest.slots();
        let occupied = if self.count == 1 {
            items
        } else {
            newest_slots.iter().filter(|&&fp| fp != F::EMPTY).count() as u64
        };
        let ratio = |n: u64, d: u64| if d == 0 { 0.0 } else { n as f64 / d as f64 };
        let newest_load = ratio(occupied, newest_slots.len() as u64);
        let refuses_all = self.check_can_insert(max_filters).is_err();
        let can_grow = self.expansion_code != 0 && self.admit_growth(guard).is_ok();
        CuckooStats {
            capacity,
            items,
            load: ratio(items, capacity),
            newest_load,
            filters: u64::from(self.count),
            max_filters: if self.expansion_code == 0 { 1 } else { u64::from(max_filters) },
            saturated: refuses_all
                || (!can_grow && newest_load >= full_load(u16::from(self.bucket_size))),
        }
    }

    /// The checks growth makes before it allocates: the sub-filter limit, the next
    /// sub-filter's size in checked arithmetic, and `guard`'s admission of its bytes. Returns
    /// its buckets and slots.
    pub(super) fn admit_growth(&self, guard: &dyn AllocGuard) -> Result<(u64, u64), FilterError> {
        let n = self.count;
        if n == MAX_FILTERS {
            return Err(FilterError::TooLarge);
        }
        let buckets = sub_filter_buckets(self.base_buckets(), self.expansion(), n)
            .ok_or(FilterError::TooLarge)?;
        let len = buckets.checked_mul(u64::from(self.bucket_size)).ok_or(FilterError::TooLarge)?;
        let bytes = len.checked_mul(F::BYTES as u64).ok_or(FilterError::TooLarge)?;
        let after = self.slot_bytes().checked_add(bytes).ok_or(FilterError::TooLarge)?;
        let size = info_size(u64::from(n) + 1, after).ok_or(FilterError::TooLarge)?;
        guard.admit(size, bytes)?;
        Ok((buckets, len))
    }
}
