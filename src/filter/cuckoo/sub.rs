//! A sub-filter of a cuckoo filter, as the filter lends it: its buckets' slots and the
//! per-bucket work on them (lookups, inserts, deletes, the kick-out walk's swaps), with
//! RedisBloom's algorithms step for step (`src/cuckoo.c`).

use super::fingerprint::{Fingerprint, Lookup, alt_bucket};
use super::slots;
use crate::filter::FilterError;
use std::borrow::Cow;

pub(crate) mod buckets;

/// One sub-filter, as the filter lends it: `mask + 1` buckets (a power of two) of
/// `slots.len() / (mask + 1)` slots, bucket `b` being slots `[b × bucket_size, (b + 1) ×
/// bucket_size)`. The filter stores only the slots' allocation and derives the rest from its
/// shape.
#[derive(Debug, Clone, Copy)]
pub struct SubFilter<'a, F> {
    pub(super) mask: u64,
    pub(super) slots: &'a [F],
}

/// One sub-filter, lent mutably.
#[derive(Debug)]
pub struct SubFilterMut<'a, F> {
    pub(super) mask: u64,
    pub(super) slots: &'a mut [F],
}

impl<'a, F: Fingerprint> SubFilter<'a, F> {
    /// Number of buckets.
    pub fn buckets(&self) -> u64 {
        self.mask + 1
    }

    /// The slots.
    pub fn slots(&self) -> &'a [F] {
        self.slots
    }

    /// Bytes of the slots in the stored format.
    pub fn byte_len(&self) -> u64 {
        slots::byte_len(self.slots)
    }

    /// All the slot bytes in the stored format.
    pub fn bytes(&self) -> Cow<'a, [u8]> {
        slots::bytes(self.slots)
    }

    /// Slot bytes `[offset, offset + len)`; the range must lie inside.
    pub fn read_bytes(&self, offset: u64, len: u64) -> Cow<'a, [u8]> {
        slots::read_bytes(self.slots, offset, len)
    }

    /// First slot of the bucket of unreduced index `h` (RedisBloom's `SubCF_GetIndex`, without
    /// its 32-bit truncation).
    #[inline(always)]
    pub(super) fn start(&self, h: u64, bs: usize) -> usize {
        // The bucket is < buckets, and buckets × bs slots exist in memory: no overflow.
        (h & self.mask) as usize * bs
    }

    #[inline(always)]
    pub(super) fn bucket(&self, h: u64, bs: usize) -> &'a [F] {
        let s = self.start(h, bs);
        &self.slots[s..s + bs]
    }

    /// Whether bucket `h1` or `h2` holds the fingerprint (`Filter_Find`).
    ///
    /// Bucket size 2 (the default) compares its two slots directly: `<[u8]>::contains` goes
    /// through `memchr`, whose setup costs more than the four compares.
    #[inline(always)]
    pub(super) fn contains(&self, l: &Lookup<F>, bs: usize) -> bool {
        if bs == 2 {
            let slots = self.slots;
            let (a, b) = (self.start(l.h1, 2), self.start(l.h2, 2));
            return slots[a] == l.fp
                || slots[a + 1] == l.fp
                || slots[b] == l.fp
                || slots[b + 1] == l.fp;
        }
        self.bucket(l.h1, bs).contains(&l.fp) || self.bucket(l.h2, bs).contains(&l.fp)
    }

    /// Copies of the fingerprint in the item's buckets, each bucket counted once.
    /// (RedisBloom's `subFilterCount` counts a bucket twice when both indexes reduce to it.)
    #[inline]
    pub(super) fn count(&self, l: &Lookup<F>, bs: usize) -> u64 {
        let in_bucket = |h| self.bucket(h, bs).iter().filter(|&&s| s == l.fp).count() as u64;
        let (a, b) = (l.h1 & self.mask, l.h2 & self.mask);
        if a == b { in_bucket(l.h1) } else { in_bucket(l.h1) + in_bucket(l.h2) }
    }

    /// RedisBloom's `subFilterCount` itself, for the golden tests.
    #[cfg(test)]
    pub(crate) fn count_as_redisbloom(&self, l: &Lookup<F>, bs: usize) -> u64 {
        let in_bucket = |h| self.bucket(h, bs).iter().filter(|&&s| s == l.fp).count() as u64;
        in_bucket(l.h1) + in_bucket(l.h2)
    }

    /// Index of the first empty slot, bucket `h1` first (`Filter_FindAvailable`).
    #[inline(always)]
    pub(super) fn find_available(&self, l: &Lookup<F>, bs: usize) -> Option<usize> {
        if bs == 2 {
            let slots = self.slots;
            for h in [l.h1, l.h2] {
                let s = self.start(h, 2);
                if slots[s] == F::EMPTY {
                    return Some(s);
                }
                if slots[s + 1] == F::EMPTY {
                    return Some(s + 1);
                }
            }
            return None;
        }
        for h in [l.h1, l.h2] {
            let s = self.start(h, bs);
            if let Some(i) = self.slots[s..s + bs].iter().position(|&x| x == F::EMPTY) {
                return Some(s + i);
            }
        }
        None
    }
}

impl<F: Fingerprint> SubFilterMut<'_, F> {
    /// The same sub-filter, lent immutably.
    #[inline(always)]
    pub(super) fn view(&self) -> SubFilter<'_, F> {
        SubFilter { mask: self.mask, slots: self.slots }
    }

    /// Number of buckets.
    pub fn buckets(&self) -> u64 {
        self.mask + 1
    }

    /// Bytes of the slots in the stored format.
    pub fn byte_len(&self) -> u64 {
        slots::byte_len(self.slots)
    }

    /// Writes `data` at byte `offset` of the stored format; refuses (changing nothing) a range
    /// that does not lie inside.
    pub fn write_bytes(&mut self, offset: u64, data: &[u8]) -> Result<(), FilterError> {
        slots::write_bytes(self.slots, offset, data)
    }

    /// Empties the first slot holding the fingerprint, bucket `h1` first (`Filter_Delete`).
    #[inline]
    pub(super) fn delete(&mut self, l: &Lookup<F>, bs: usize) -> bool {
        for h in [l.h1, l.h2] {
            let s = self.view().start(h, bs);
            if let Some(slot) = self.slots[s..s + bs].iter_mut().find(|x| **x == l.fp) {
                *slot = F::EMPTY;
                return true;
            }
        }
        false
    }

    /// Stores the fingerprint in its first empty slot, if it has one.
    #[inline(always)]
    pub(super) fn try_place(&mut self, l: &Lookup<F>, bs: usize) -> bool {
        match self.view().find_available(l, bs) {
            Some(i) => {
                self.slots[i] = l.fp;
                true
            }
            None => false,
        }
    }

    /// `Filter_KOInsert`: kick fingerprints out of their buckets, at most `max_iterations`
    /// times, until one lands in an empty slot; if none does, undo every swap in reverse order.
    ///
    /// RedisBloom's walk: start at bucket `h1`, victim slot 0; swap the fingerprint in hand
    /// with the victim, move to the alternate bucket of the fingerprint now in hand, and stop
    /// if it has an empty slot; otherwise the next victim slot is the next one
    /// (`(victim + 1) mod bucketSize`), in whatever bucket the walk is in. Undoing walks back:
    /// victim `(victim − 1) mod bucketSize`, alternate bucket of the fingerprint in hand (the
    /// XOR is an involution), swap. Each swap is its own inverse and they are undone in reverse
    /// order, so a failed walk leaves every slot as it was and the original fingerprint in hand:
    /// a failed insert loses nothing (checked by `kick_out_failure_changes_nothing`).
    ///
    /// The item's first index `h1` and fingerprint `fp0` come by value (not as its `Lookup`),
    /// so the batched insert loop need not keep the lookup in memory for this rare call.
    pub(super) fn kick_out(&mut self, h1: u64, fp0: F, bs: usize, max_iterations: u16) -> bool {
        let mask = self.mask;
        let slots = &mut *self.slots;
        let mut fp = fp0;
        let mut victim = 0usize;
        let mut b = h1 & mask;
        for _ in 0..max_iterations {
            std::mem::swap(&mut slots[b as usize * bs + victim], &mut fp);
            b = alt_bucket(fp, b, mask);
            let s = b as usize * bs;
            if let Some(empty) = slots[s..s + bs].iter_mut().find(|x| **x == F::EMPTY) {
                *empty = fp;
                return true;
            }
            victim = (victim + 1) % bs;
        }
        for _ in 0..max_iterations {
            victim = (victim + bs - 1) % bs;
            b = alt_bucket(fp, b, mask);
            std::mem::swap(&mut slots[b as usize * bs + victim], &mut fp);
        }
        debug_assert!(fp == fp0, "an undone walk ends with the original fingerprint");
        false
    }
}
