//! The kernel tables of blocked layers: [`BlockedKernels`], the one-item and batch kernels for
//! one probe count, compiled once per feature set (the baseline, BMI2, AVX2 and BMI2) from the
//! probe bodies of [`super`] (scalar) and `vector` (AVX2) by `kernel_set!`, and picked per
//! probe count and CPU once per process. The same macro writes the hash-and-probe kernels that
//! [`ItemsKernels`](super::ItemsKernels) picks from.

#[cfg(target_arch = "x86_64")]
use super::vector::{all_set_vector, set_probes_vector};
use super::{
    BLOCK_WORDS, BLOCKED_UNROLLED_MAX, Blocks, all_set_scalar, block_of, block_of_mut, is_short,
    set_probes_scalar,
};
use crate::filter::hash::xxh3short::Xxh3Seeded;
use crate::filter::hash::{ItemHash, blocked_hash, reduce};

/// Tests a blocked item (block, probe count, `h2`). `unsafe fn` only because some kernels need
/// CPU features beyond the baseline; [`BlockedKernels::for_hashes`] hands out only those this
/// CPU has.
type AllSet = unsafe fn(&[u64; 8], u32, u64) -> bool;
/// Adds a blocked item: sets its probes, returns how many bits were clear.
type SetClear = unsafe fn(&mut [u64; 8], u32, u64) -> u32;
/// Tests every one of a batch of items in one array (words, probe count, hashes, answers).
type AllSetMany = unsafe fn(&[u64], u32, &[ItemHash], bool, &mut Vec<bool>);
/// Adds every one of a batch of items in order (words, probe count, hashes, answers: whether
/// each was new); returns (items new, bits set).
type SetClearMany = unsafe fn(&mut [u64], u32, &[ItemHash], bool, &mut Vec<bool>) -> (u64, u64);

/// The kernels for one probe count, chosen once per batch (see
/// [`crate::filter::bloom::probe::Kernels`]): one item at a time, and whole batches over one slice,
/// where the item's code is inlined into the loop (no call per item, the constants loaded
/// once).
///
/// Invariant: every kernel held runs on this CPU.
#[derive(Clone, Copy)]
pub struct BlockedKernels {
    all_set: AllSet,
    set_clear: SetClear,
    all_set_many: AllSetMany,
    set_clear_many: SetClearMany,
}

/// The batch loop of [`AllSetMany`] around an inlined one-item test (`test(block, h2, short)`,
/// `short` being [`is_short`] of `h2`). With `all_short` (every `h2` is short: hash scheme 4)
/// the loop passes `true`, a constant: no test of `h2` per item.
#[inline(always)]
fn all_set_many_with(
    words: &[u64],
    hashes: &[ItemHash],
    all_short: bool,
    out: &mut Vec<bool>,
    test: impl Fn(&[u64; 8], u64, bool) -> bool,
) {
    if all_short {
        out.extend(hashes.iter().map(|&h| test(block_of(words, h), h.h2, true)));
    } else {
        out.extend(hashes.iter().map(|&h| test(block_of(words, h), h.h2, is_short(h.h2))));
    }
}

/// The batch loop of [`SetClearMany`] around an inlined one-item add (`set(block, h2, short)`
/// returns how many of the item's `k` probes were set already; `short` as in
/// [`all_set_many_with`], and so is `all_short`).
#[inline(always)]
fn set_clear_many_with(
    words: &mut [u64],
    k: u32,
    hashes: &[ItemHash],
    all_short: bool,
    out: &mut Vec<bool>,
    set: impl Fn(&mut [u64; 8], u64, bool) -> u32,
) -> (u64, u64) {
    // Counted per item: the probes found set; the bits set are the probes less those, summed
    // once at the end, and the new items are counted from the answers after the loop (a
    // vectorised count of bytes, not two instructions per item).
    let mut found = 0u64;
    let start = out.len();
    out.reserve(hashes.len());
    // Written in place: no capacity check per item, as `push` has.
    let slots = &mut out.spare_capacity_mut()[..hashes.len()];
    let mut add_all = |short_of: fn(u64) -> bool| {
        for (slot, &h) in slots.iter_mut().zip(hashes) {
            let already = set(block_of_mut(words, h), h.h2, short_of(h.h2));
            found += u64::from(already);
            slot.write(already < k);
        }
    };
    if all_short {
        add_all(|_| true)
    } else {
        add_all(is_short)
    }
    // SAFETY: `reserve` made room for `hashes.len()` more, and the loop wrote every one of the
    // first `hashes.len()` spare slots (the zip runs over all of them: both are that long).
    unsafe { out.set_len(start + hashes.len()) };
    let new = out[start..].iter().map(|&b| u64::from(b)).sum();
    // `found` ≤ `k · len` (each item finds at most `k`); `k · len` < 2^64 (`len` < 2^59).
    (new, u64::from(k) * hashes.len() as u64 - found)
}

/// Hashes `item` (scheme 4, `xxh3`'s seed) and starts loading its block of the `blocks`
/// blocks at `words`: the block's address and the item's `h2`. The adds of `set_clear_items_*`
/// call it one item ahead (the address is kept, not computed again).
///
/// # Safety
/// `words` points to `blocks` whole blocks (`8 · blocks` words), valid for as long as the
/// returned address is used.
#[inline(always)]
unsafe fn hash_ahead<T: AsRef<[u8]>>(
    words: *mut u64,
    blocks: u64,
    xxh3: &Xxh3Seeded,
    item: &T,
) -> (*mut [u64; 8], u64) {
    let h = blocked_hash(xxh3.hash(item.as_ref()));
    // The block's byte offset, `b · 64`.
    let offset = reduce(h.h1, blocks) << 6;
    // SAFETY: `offset` is `64b` for a `b` below `blocks` (`reduce`), so bytes `64b..64b + 64`
    // (words `8b..8b + 8`) are inside the caller's `8 · blocks` words; `[u64; 8]` has the
    // layout of 8 consecutive `u64`, and the offset is a multiple of 8 (aligned).
    let block = unsafe { words.cast::<u8>().add(offset as usize).cast::<[u64; 8]>() };
    // SAFETY: as above: `block` points into the words.
    crate::filter::mem::prefetch(unsafe { &(*block)[0] });
    (block, h.h2)
}

/// Defines module `$set`, the one-item and batch kernels of one feature set (`$features`, or
/// none: the baseline) from the inlined bodies `$all_body` and `$set_body`. Every set has the
/// same names (`all_set`, `set_clear`, `all_set_many`, `set_clear_many`, `all_set_items`,
/// `set_clear_items`), which [`kernel_table!`] picks from by [`Level`].
macro_rules! kernel_set {
    ($set:ident, $all_body:ident, $set_body:ident $(, $features:literal)?) => {
        pub(super) mod $set {
            use super::*;

            $(#[target_feature(enable = $features)])?
            pub(crate) unsafe fn all_set<const K: u32>(block: &[u64; 8], k: u32, h2: u64) -> bool {
                // SAFETY: this function's own precondition (the CPU has `$features`).
                unsafe { $all_body::<K>(block, k, h2, is_short(h2)) }
            }

            $(#[target_feature(enable = $features)])?
            pub(crate) unsafe fn set_clear<const K: u32>(
                block: &mut [u64; 8],
                k: u32,
                h2: u64,
            ) -> u32 {
                // SAFETY: this function's own precondition (the CPU has `$features`).
                k - unsafe { $set_body::<K>(block, k, h2, is_short(h2)) }
            }

            $(#[target_feature(enable = $features)])?
            pub(crate) unsafe fn all_set_many<const K: u32>(
                words: &[u64],
                k: u32,
                hashes: &[ItemHash],
                all_short: bool,
                out: &mut Vec<bool>,
            ) {
                // SAFETY: this function's own precondition (the CPU has `$features`).
                let test = |b: &[u64; 8], h2, short| unsafe { $all_body::<K>(b, k, h2, short) };
                all_set_many_with(words, hashes, all_short, out, test)
            }

            $(#[target_feature(enable = $features)])?
            pub(crate) unsafe fn set_clear_many<const K: u32>(
                words: &mut [u64],
                k: u32,
                hashes: &[ItemHash],
                all_short: bool,
                out: &mut Vec<bool>,
            ) -> (u64, u64) {
                // SAFETY: this function's own precondition (the CPU has `$features`).
                let set = |b: &mut [u64; 8], h2, short| unsafe { $set_body::<K>(b, k, h2, short) };
                set_clear_many_with(words, k, hashes, all_short, out, set)
            }

            // The hash-and-probe kernels ([`items`]): the loops of `all_set_many_with` and
            // `set_clear_many_with` written out, the item hashed inside (closures passed to those
            // were compiled out of line for a generic item type: a call per item).
            $(#[target_feature(enable = $features)])?
            pub(crate) unsafe fn all_set_items<T: AsRef<[u8]>, const K: u32>(
                words: &[u64],
                k: u32,
                items: &[T],
                xxh3: &Xxh3Seeded,
                out: &mut Vec<bool>,
            ) {
                let start = out.len();
                out.reserve(items.len());
                // Written in place, as in `set_clear_items` below.
                let slots = &mut out.spare_capacity_mut()[..items.len()];
                for (slot, item) in slots.iter_mut().zip(items) {
                    let h = blocked_hash(xxh3.hash(item.as_ref()));
                    // SAFETY: this function's own precondition (the CPU has `$features`).
                    slot.write(unsafe { $all_body::<K>(block_of(words, h), k, h.h2, true) });
                }
                // SAFETY: `reserve` made room for `items.len()` more, and the loop wrote every one
                // of the first `items.len()` spare slots (the zip runs over all of them).
                unsafe { out.set_len(start + items.len()) };
            }

            $(#[target_feature(enable = $features)])?
            pub(crate) unsafe fn set_clear_items<T: AsRef<[u8]>, const K: u32>(
                words: &mut [u64],
                k: u32,
                items: &[T],
                xxh3: &Xxh3Seeded,
                out: &mut Vec<bool>,
            ) -> (u64, u64) {
                // As in `set_clear_many_with`, with each item hashed one step ahead of its add and
                // its block's line prefetched then: in this loop the next block's address waits
                // for a call and a hash, and an add that missed the cache held back the adds after
                // it (BF.MADD 10% slower in time than hashing the batch first, on a filter the
                // size of L2).
                let Some((first, rest)) = items.split_first() else {
                    return (0, 0);
                };
                let mut found = 0u64;
                let start = out.len();
                out.reserve(items.len());
                let slots = &mut out.spare_capacity_mut()[..items.len()];
                // Blocked layers are whole blocks (checked when built): `words` is `8 · blocks`
                // words, addressed through `base` alone until the loops end.
                let blocks = words.len() as u64 / BLOCK_WORDS;
                let base = words.as_mut_ptr();
                // `slots` and `items` are as long (not empty): each slot but the last is written
                // in the loop, while the item after its own is hashed, the last after it.
                let Some((last, slots)) = slots.split_last_mut() else {
                    return (0, 0);
                };
                // SAFETY: `base` is `8 · blocks` words (above), borrowed mutably for this whole
                // function (the precondition of `hash_ahead`, here and in the loop).
                let mut current = unsafe { hash_ahead(base, blocks, xxh3, first) };
                // `k` as the constant it is in the unrolled kernels (one register fewer).
                let k_ = if K > 0 { K } else { k };
                for (slot, next) in slots.iter_mut().zip(rest) {
                    // SAFETY: as above.
                    let following = unsafe { hash_ahead(base, blocks, xxh3, next) };
                    // SAFETY: `current` is a block of the words and its `h2` (`hash_ahead`), no
                    // other reference to which is live; the CPU has `$features` (this function's
                    // own precondition).
                    let already = unsafe { $set_body::<K>(&mut *current.0, k_, current.1, true) };
                    found += u64::from(already);
                    slot.write(already < k_);
                    current = following;
                }
                // SAFETY: as in the loop.
                let already = unsafe { $set_body::<K>(&mut *current.0, k_, current.1, true) };
                found += u64::from(already);
                last.write(already < k_);
                // SAFETY: `reserve` made room for `items.len()` more, and every one of the first
                // `items.len()` spare slots was written: `items.len() - 1` in the loop (the zip
                // runs over all of them: `slots` less the last and `rest` are that long), then the
                // last.
                unsafe { out.set_len(start + items.len()) };
                let new = out[start..].iter().map(|&b| u64::from(b)).sum();
                // `found` ≤ `k · len` (each item finds at most `k`); `k · len` < 2^64.
                (new, u64::from(k) * items.len() as u64 - found)
            }
        }
    };
}

/// [`all_set_scalar`] as an `unsafe fn`, to share the kernel macro with the AVX2 body.
#[inline(always)]
unsafe fn all_set_scalar_unsafe<const K: u32>(
    block: &[u64; 8],
    k: u32,
    h2: u64,
    short: bool,
) -> bool {
    all_set_scalar::<K>(block, k, h2, short)
}

/// [`set_probes_scalar`] as an `unsafe fn`, to share the kernel macro with the AVX2 body.
#[inline(always)]
unsafe fn set_probes_scalar_unsafe<const K: u32>(
    block: &mut [u64; 8],
    k: u32,
    h2: u64,
    short: bool,
) -> u32 {
    set_probes_scalar::<K>(block, k, h2, short)
}

kernel_set!(base, all_set_scalar_unsafe, set_probes_scalar_unsafe);

// Precondition of the `bmi2` kernels: the CPU has BMI2.
#[cfg(target_arch = "x86_64")]
kernel_set!(bmi2, all_set_scalar_unsafe, set_probes_scalar_unsafe, "bmi2");

// Precondition of the `avx2` kernels: the CPU has AVX2 and BMI2.
#[cfg(target_arch = "x86_64")]
kernel_set!(avx2, all_set_vector, set_probes_vector, "avx2,bmi2");

/// The CPU feature sets the kernels are compiled for, each a module of `kernel_set!`.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum Level {
    /// The target's baseline (`base`).
    Baseline,
    /// BMI2 (`bmi2`).
    #[cfg(target_arch = "x86_64")]
    Bmi2,
    /// AVX2 and BMI2 (`avx2`).
    #[cfg(target_arch = "x86_64")]
    Avx2,
}

impl Level {
    /// This CPU's best level: AVX2 and BMI2, else BMI2, else the baseline; found once per
    /// process.
    pub(super) fn get() -> Self {
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

    /// Every level this CPU runs, named (baseline first): for the tests.
    #[cfg(test)]
    pub(super) fn all() -> Vec<(&'static str, Self)> {
        let mut v = vec![("baseline", Level::Baseline)];
        #[cfg(target_arch = "x86_64")]
        if std::arch::is_x86_feature_detected!("bmi2") {
            v.push(("bmi2", Level::Bmi2));
            if std::arch::is_x86_feature_detected!("avx2") {
                v.push(("avx2", Level::Avx2));
            }
        }
        v
    }
}

/// The kernels of level `$level` for `$k` probes: `$make!(set, K)` makes them from `set`, the
/// module of that level's kernels, and `K`, the probe count as a constant, for `$k` from 1 to
/// 16 ([`BLOCKED_UNROLLED_MAX`]); past them (and 0, which no layer has) from the baseline
/// loop, whose `K = 0` reads the count. For the modules of `blocked` (the sets' paths start at
/// `super::kernels`).
macro_rules! kernel_table {
    ($level:expr, $k:expr, $make:ident) => {
        match $level {
            super::kernels::Level::Baseline => kernel_table!(@pick $k, $make, base),
            #[cfg(target_arch = "x86_64")]
            super::kernels::Level::Bmi2 => kernel_table!(@pick $k, $make, bmi2),
            #[cfg(target_arch = "x86_64")]
            super::kernels::Level::Avx2 => kernel_table!(@pick $k, $make, avx2),
        }
    };
    (@pick $k:expr, $make:ident, $set:ident) => {
        kernel_table!(@pick $k, $make, $set; 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16)
    };
    (@pick $k:expr, $make:ident, $set:ident; $($n:literal)*) => {
        match $k {
            $($n => $make!(super::kernels::$set, $n),)*
            _ => $make!(super::kernels::base, 0),
        }
    };
}
pub(super) use kernel_table;

impl BlockedKernels {
    /// The best kernels this CPU runs for `k` probes (AVX2 tests and BMI2 adds where it has
    /// them), from a table made once per process: a load, not a feature test and a table match
    /// per call.
    #[inline]
    pub fn for_hashes(k: u32) -> Self {
        static BEST: std::sync::OnceLock<[BlockedKernels; BLOCKED_UNROLLED_MAX as usize + 1]> =
            std::sync::OnceLock::new();
        let best = BEST.get_or_init(|| std::array::from_fn(|k| Self::at(Level::get(), k as u32)));
        // Index 0 holds the loop, which also serves every `k` past the unrolled ones.
        best[if k <= BLOCKED_UNROLLED_MAX { k as usize } else { 0 }]
    }

    /// The kernels of `level` for `k` probes. Only for a level this CPU has (the struct's
    /// invariant).
    fn at(level: Level, k: u32) -> Self {
        macro_rules! make {
            ($set:path, $n:literal) => {{
                use $set as set;
                BlockedKernels {
                    all_set: set::all_set::<$n>,
                    set_clear: set::set_clear::<$n>,
                    all_set_many: set::all_set_many::<$n>,
                    set_clear_many: set::set_clear_many::<$n>,
                }
            }};
        }
        kernel_table!(level, k, make)
    }

    /// The kernels compiled for the target's baseline.
    pub fn baseline(k: u32) -> Self {
        Self::at(Level::Baseline, k)
    }

    /// Every kernel set this CPU runs for `k` (baseline first): for the tests.
    #[cfg(test)]
    pub fn all_variants(k: u32) -> Vec<(&'static str, Self)> {
        Level::all().into_iter().map(|(name, level)| (name, Self::at(level, k))).collect()
    }

    /// Whether every probe of `h` is set in `words`.
    #[inline(always)]
    pub fn all_set<A: Blocks + ?Sized>(self, words: &A, k: u32, h: ItemHash) -> bool {
        // SAFETY: the struct's invariant: only kernels this CPU runs are held.
        unsafe { (self.all_set)(block_of(words, h), k, h.h2) }
    }

    /// Sets the probes of `h` in `words`; how many bits were clear.
    #[inline(always)]
    pub fn set_clear<A: Blocks + ?Sized>(self, words: &mut A, k: u32, h: ItemHash) -> u32 {
        // SAFETY: as in `all_set`.
        unsafe { (self.set_clear)(block_of_mut(words, h), k, h.h2) }
    }

    /// [`BlockedKernels::all_set`] for each of `hashes` in one slice, appended to `out`.
    /// `all_short`: every hash is of scheme 4 (its `h2` is `lo · 2^32 + 1`), so the kernel
    /// need not test each; `false` is always right, `true` only then.
    #[inline(always)]
    pub fn all_set_many(
        self,
        words: &[u64],
        k: u32,
        hashes: &[ItemHash],
        all_short: bool,
        out: &mut Vec<bool>,
    ) {
        // SAFETY: as in `all_set`.
        unsafe { (self.all_set_many)(words, k, hashes, all_short, out) }
    }

    /// [`BlockedKernels::set_clear`] for each of `hashes` in order in one slice, appending
    /// whether each was new to `out`; returns (items new, bits set). `all_short` as in
    /// [`BlockedKernels::all_set_many`].
    #[inline(always)]
    pub fn set_clear_many(
        self,
        words: &mut [u64],
        k: u32,
        hashes: &[ItemHash],
        all_short: bool,
        out: &mut Vec<bool>,
    ) -> (u64, u64) {
        // SAFETY: as in `all_set`.
        unsafe { (self.set_clear_many)(words, k, hashes, all_short, out) }
    }

    /// [`BlockedKernels::all_set`] on a block already found.
    #[cfg(test)]
    pub fn all_set_in(self, block: &[u64; 8], k: u32, h2: u64) -> bool {
        // SAFETY: as in `all_set`.
        unsafe { (self.all_set)(block, k, h2) }
    }

    /// [`BlockedKernels::set_clear`] on a block already found.
    #[cfg(test)]
    pub fn set_clear_in(self, block: &mut [u64; 8], k: u32, h2: u64) -> u32 {
        // SAFETY: as in `all_set`.
        unsafe { (self.set_clear)(block, k, h2) }
    }
}
