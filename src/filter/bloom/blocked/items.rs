//! Batch kernels that hash and probe in one loop, for hash scheme 4 chains whose one layer is
//! small enough not to be prefetched ([`super::super::batch`]): each item is read, hashed
//! (xxh3-64, the seed's part made once: [`Xxh3Seeded`]) and tested or added in the same loop
//! step, so its hash never goes through memory and there is one loop, not two. The same bits
//! and answers as hashing the batch first and then running [`BlockedKernels`]'
//! `all_set_many` / `set_clear_many` over the hashes (the tests check both against each
//! other).
//!
//! Generic over the item type (the module's argv strings are read inside the loop), so the
//! kernel for a probe count and feature set is picked per call ([`ItemsKernels::for_hashes`])
//! rather than from the process-wide table of [`BlockedKernels`].

use super::super::xxh3short::Xxh3Seeded;
#[cfg(target_arch = "x86_64")]
use super::kernels::{
    all_set_items_avx2, all_set_items_bmi2, set_clear_items_avx2, set_clear_items_bmi2,
};
use super::kernels::{all_set_items_base, set_clear_items_base};

/// Tests every item of a batch (words, probe count, items, the seeded hash, answers).
type AllSetItems<T> = unsafe fn(&[u64], u32, &[T], &Xxh3Seeded, &mut Vec<bool>);
/// Adds every item of a batch in order (as [`AllSetItems`], answers: whether each was new);
/// returns (items new, bits set).
type SetClearItems<T> = unsafe fn(&mut [u64], u32, &[T], &Xxh3Seeded, &mut Vec<bool>) -> (u64, u64);

/// The CPU features the kernels use, found once per process.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Level {
    Baseline,
    #[cfg(target_arch = "x86_64")]
    Bmi2,
    #[cfg(target_arch = "x86_64")]
    Avx2,
}

impl Level {
    /// This CPU's level: AVX2 and BMI2, else BMI2, else the baseline (as
    /// [`BlockedKernels::detect`](super::BlockedKernels) chooses).
    fn get() -> Self {
        static LEVEL: std::sync::OnceLock<Level> = std::sync::OnceLock::new();
        *LEVEL.get_or_init(|| {
            #[cfg(target_arch = "x86_64")]
            if std::arch::is_x86_feature_detected!("bmi2") {
                if std::arch::is_x86_feature_detected!("avx2") {
                    return Level::Avx2;
                }
                return Level::Bmi2;
            }
            Level::Baseline
        })
    }
}

/// The hash-and-probe kernels for one probe count and item type.
///
/// Invariant: every kernel held runs on this CPU.
pub struct ItemsKernels<T> {
    all_set: AllSetItems<T>,
    set_clear: SetClearItems<T>,
}

/// The kernels of one feature set for `$k` probes (unrolled up to 16, which is
/// [`BLOCKED_UNROLLED_MAX`](super::BLOCKED_UNROLLED_MAX), the loop past them).
macro_rules! items_table {
    ($k:expr, $all:ident, $set:ident) => {
        items_table!(@pick $k, $all, $set; 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16)
    };
    (@pick $k:expr, $all:ident, $set:ident; $($n:literal)*) => {
        match $k {
            $($n => ItemsKernels { all_set: $all::<T, $n>, set_clear: $set::<T, $n> },)*
            // Past the unrolled ones (and 0, which no layer has), `K = 0` reads the count.
            _ => ItemsKernels {
                all_set: all_set_items_base::<T, 0>,
                set_clear: set_clear_items_base::<T, 0>,
            },
        }
    };
}

impl<T: AsRef<[u8]>> ItemsKernels<T> {
    /// The best kernels this CPU runs for `k` probes.
    #[inline]
    pub fn for_hashes(k: u32) -> Self {
        Self::at(Level::get(), k)
    }

    /// The kernels of `level` for `k` probes. Only for a level this CPU has.
    fn at(level: Level, k: u32) -> Self {
        match level {
            Level::Baseline => items_table!(k, all_set_items_base, set_clear_items_base),
            #[cfg(target_arch = "x86_64")]
            Level::Bmi2 => items_table!(k, all_set_items_bmi2, set_clear_items_bmi2),
            #[cfg(target_arch = "x86_64")]
            Level::Avx2 => items_table!(k, all_set_items_avx2, set_clear_items_avx2),
        }
    }

    /// Every kernel set this CPU runs for `k` (baseline first): for the tests.
    #[cfg(test)]
    pub fn all_variants(k: u32) -> Vec<(&'static str, Self)> {
        let mut v = vec![("baseline", Self::at(Level::Baseline, k))];
        #[cfg(target_arch = "x86_64")]
        if std::arch::is_x86_feature_detected!("bmi2") {
            v.push(("bmi2", Self::at(Level::Bmi2, k)));
            if std::arch::is_x86_feature_detected!("avx2") {
                v.push(("avx2", Self::at(Level::Avx2, k)));
            }
        }
        v
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
