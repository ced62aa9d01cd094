//! Batch kernels that hash and probe in one loop, for hash scheme 4 chains whose one layer is
//! small enough not to be prefetched ([`crate::filter::bloom::batch`]): each item is read, hashed
//! (xxh3-64, the seed's part made once: [`Xxh3Seeded`]) and tested or added in the same loop
//! step, so its hash never goes through memory and there is one loop, not two. The same bits
//! and answers as hashing the batch first and then running [`BlockedKernels`]'
//! `all_set_many` / `set_clear_many` over the hashes (the tests check both against each
//! other).
//!
//! Generic over the item type (the module's argv strings are read inside the loop), so the
//! kernel for a probe count and feature set is picked per call ([`ItemsKernels::for_hashes`])
//! rather than from the process-wide table of [`BlockedKernels`].

use super::kernels::{Level, kernel_table};
use crate::filter::hash::xxh3short::Xxh3Seeded;

/// Tests every item of a batch (words, probe count, items, the seeded hash, answers).
type AllSetItems<T> = unsafe fn(&[u64], u32, &[T], &Xxh3Seeded, &mut Vec<bool>);
/// Adds every item of a batch in order (as [`AllSetItems`], answers: whether each was new);
/// returns (items new, bits set).
type SetClearItems<T> = unsafe fn(&mut [u64], u32, &[T], &Xxh3Seeded, &mut Vec<bool>) -> (u64, u64);

/// The hash-and-probe kernels for one probe count and item type.
///
/// Invariant: every kernel held runs on this CPU.
pub struct ItemsKernels<T> {
    all_set: AllSetItems<T>,
    set_clear: SetClearItems<T>,
}

impl<T: AsRef<[u8]>> ItemsKernels<T> {
    /// The best kernels this CPU runs for `k` probes.
    #[inline]
    pub fn for_hashes(k: u32) -> Self {
        Self::at(Level::get(), k)
    }

    /// The kernels of `level` for `k` probes. Only for a level this CPU has.
    fn at(level: Level, k: u32) -> Self {
        macro_rules! make {
            ($set:path, $n:literal) => {{
                use $set as set;
                ItemsKernels {
                    all_set: set::all_set_items::<T, $n>,
                    set_clear: set::set_clear_items::<T, $n>,
                }
            }};
        }
        kernel_table!(level, k, make)
    }

    /// Every kernel set this CPU runs for `k` (baseline first): for the tests.
    #[cfg(test)]
    pub fn all_variants(k: u32) -> Vec<(&'static str, Self)> {
        Level::all().into_iter().map(|(name, level)| (name, Self::at(level, k))).collect()
    }

    /// Whether every probe of each of `items` (hash scheme 4 with `xxh3`'s seed) is set in
    /// `words` (whole 512-bit blocks), appended to `out`.
    #[inline]
    pub fn all_set_items(
        &self,
        words: &[u64],
        k: u32,
        items: &[T],
        xxh3: &Xxh3Seeded,
        out: &mut Vec<bool>,
    ) {
        // SAFETY: the struct's invariant: only kernels this CPU runs are held.
        unsafe { (self.all_set)(words, k, items, xxh3, out) }
    }

    /// Sets the probes of each of `items` in order (as in [`ItemsKernels::all_set_items`]),
    /// appending whether each was new to `out`; returns (items new, bits set).
    #[inline]
    pub fn set_clear_items(
        &self,
        words: &mut [u64],
        k: u32,
        items: &[T],
        xxh3: &Xxh3Seeded,
        out: &mut Vec<bool>,
    ) -> (u64, u64) {
        // SAFETY: as in `all_set_items`.
        unsafe { (self.set_clear)(words, k, items, xxh3, out) }
    }
}
