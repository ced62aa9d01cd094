//! The probe kernels: the innermost loops of every add and every lookup.
//!
//! [`hash::Probes`](crate::filter::hash::Probes) defines which bits an item probes; this file walks the
//! same sequence faster. What makes the difference, measured with callgrind (bench/README.md):
//! - the probe count `k` is made a compile-time constant for every `k` up to [`UNROLLED_MAX`],
//!   so each loop is fully unrolled: no loop counter, and the step increments become constants;
//! - every probe is below the array's length by construction, so a probe is a multiply, a shift
//!   or two, one load and one bit test, with no bounds check (see [`WordArray::word`]);
//! - each kernel also exists compiled with BMI2 (`mulx`, `shlx`), used where the CPU has it.
//!
//! Kernels are generic over where the words are ([`WordArray`]): one slice (a layer of up to
//! 64 MiB, nearly every layer) or the 64 MiB segments of a larger one
//! ([`SegmentTable`](super::bits::SegmentTable)). Both give exactly the answers and bits of the
//! iterator path; the tests below check that for every `k` and both builds.

use crate::filter::hash::{ItemHash, reduce};

/// The largest probe count with an unrolled kernel. Sizing gives `k = ceil(ln 2 · bits/item)`:
/// 7–8 at 1%, 11 at 0.1%, about 1.44 per halving of the error, so a chain that doubles its
/// precision per layer stays under 24 for its first dozen layers. Larger `k` takes the loop.
pub const UNROLLED_MAX: u32 = 24;

/// The words of one layer's bit array, by index: bit `p` is bit `p % 64` of word `p / 64`.
///
/// # Safety
/// [`WordArray::word`] and [`WordArray::word_mut`] must be sound for every `w` below
/// `bits() / 64`, and `bits()` must be a multiple of 64: kernels index unchecked on that promise.
pub unsafe trait WordArray {
    /// Bits in the array.
    fn bits(&self) -> u64;
    /// Word `w`.
    ///
    /// # Safety
    /// `w < self.bits() / 64`.
    unsafe fn word(&self, w: u64) -> &u64;
    /// Word `w`, writable.
    ///
    /// # Safety
    /// `w < self.bits() / 64`.
    unsafe fn word_mut(&mut self, w: u64) -> &mut u64;
}

// SAFETY: `bits` is 64 per element, so `w < bits / 64` is `w < len`.
unsafe impl WordArray for [u64] {
    #[inline(always)]
    fn bits(&self) -> u64 {
        self.len() as u64 * 64
    }
    #[inline(always)]
    unsafe fn word(&self, w: u64) -> &u64 {
        debug_assert!(w < self.len() as u64);
        // SAFETY: the caller's `w < bits / 64 = len`.
        unsafe { self.get_unchecked(w as usize) }
    }
    #[inline(always)]
    unsafe fn word_mut(&mut self, w: u64) -> &mut u64 {
        debug_assert!(w < self.len() as u64);
        // SAFETY: as in `word`.
        unsafe { self.get_unchecked_mut(w as usize) }
    }
}

/// Tests an item: whether every probe is set (array, probe count, hash).
///
/// `unsafe fn` only because some kernels are compiled for CPU features beyond the x86_64
/// baseline: calling one is safe exactly when the CPU has them, which [`Kernels::for_hashes`]
/// checks before it hands one out. The array and hash may be anything.
pub type AllSet<A> = unsafe fn(&A, u32, ItemHash) -> bool;
/// Adds an item: sets the clear probes, returns how many bits it set — the item is new when that
/// is not 0, and the layer's count of set bits grows by it (array, count, hash).
/// `unsafe fn` for the reason given at [`AllSet`].
pub type SetClear<A> = unsafe fn(&mut A, u32, ItemHash) -> u32;
/// Starts loading the cache line of every probe (array, count, hash); changes nothing.
/// `unsafe fn` for the reason given at [`AllSet`].
pub type Prefetch<A> = unsafe fn(&A, u32, ItemHash);

/// The kernels for a probe count over one kind of array, chosen once per batch: per item, the
/// call is then a direct call to code where `k` is a constant (the count argument is only read
/// by the looping fallback for `k` > [`UNROLLED_MAX`]), compiled for the best instructions the
/// CPU has.
///
/// Invariant: every kernel held runs on this CPU (see [`AllSet`]), so the methods may call them.
pub struct Kernels<A: ?Sized> {
    all_set: AllSet<A>,
    set_clear: SetClear<A>,
    prefetch: Prefetch<A>,
}

impl<A: ?Sized> Clone for Kernels<A> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<A: ?Sized> Copy for Kernels<A> {}

/// Generates the kernel table for every unrolled `k` from generic kernels.
/// `$curved` (a `bool` value) picks scheme 5's sequence or scheme 1's.
macro_rules! kernel_table {
    ($hashes:expr, $curved:expr, $all_set:ident, $set_clear:ident, $prefetch:ident) => {
        if $curved {
            kernel_table!(@pick $hashes, true, $all_set, $set_clear, $prefetch;
                1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 24)
        } else {
            kernel_table!(@pick $hashes, false, $all_set, $set_clear, $prefetch;
                1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 24)
        }
    };
    (@pick $hashes:expr, $c:literal, $all_set:ident, $set_clear:ident, $prefetch:ident; $($k:literal)*) => {
        match $hashes {
            $($k => Kernels {
                all_set: $all_set::<A, $k, $c>,
                set_clear: $set_clear::<A, $k, $c>,
                prefetch: $prefetch::<A, $k, $c>,
            },)*
            // Past the unrolled ones, `K = 0` means "read the count argument".
            _ => Kernels {
                all_set: $all_set::<A, 0, $c>,
                set_clear: $set_clear::<A, 0, $c>,
                prefetch: $prefetch::<A, 0, $c>,
            },
        }
    };
}

impl<A: WordArray + ?Sized> Kernels<A> {
    /// The kernels for `hashes` probes in the sequence of scheme 5 (`curved`,
    /// [`HashScheme::is_curved`](crate::filter::hash::HashScheme::is_curved)) or scheme 1: with BMI2
    /// (`mulx`, `shlx`: about 3 instructions fewer per probe, measured with callgrind) where
    /// the CPU has it, else the baseline ones.
    #[inline]
    pub fn for_hashes(hashes: u32, curved: bool) -> Self {
        Self::bmi2(hashes, curved).unwrap_or_else(|| Self::baseline(hashes, curved))
    }

    /// The kernels compiled for the x86_64 baseline (or whatever the target is).
    fn baseline(hashes: u32, curved: bool) -> Self {
        kernel_table!(hashes, curved, all_set_base, set_clear_base, prefetch_base)
    }

    /// The kernels compiled with BMI2, if this CPU has it.
    #[inline]
    fn bmi2(hashes: u32, curved: bool) -> Option<Self> {
        #[cfg(target_arch = "x86_64")]
        if std::arch::is_x86_feature_detected!("bmi2") {
            return Some(kernel_table!(
                hashes,
                curved,
                all_set_bmi2,
                set_clear_bmi2,
                prefetch_bmi2
            ));
        }
        let _ = (hashes, curved);
        None
    }

    /// Whether every probe of `h` is set in `words`.
    #[inline(always)]
    pub fn all_set(self, words: &A, hashes: u32, h: ItemHash) -> bool {
        // SAFETY: the struct's invariant: `for_hashes` only holds kernels this CPU runs.
        unsafe { (self.all_set)(words, hashes, h) }
    }

    /// Sets the clear probes of `h` in `words`; how many were clear (bits newly set).
    #[inline(always)]
    pub fn set_clear(self, words: &mut A, hashes: u32, h: ItemHash) -> u32 {
        // SAFETY: as in `all_set`.
        unsafe { (self.set_clear)(words, hashes, h) }
    }

    /// Starts loading the cache lines `h` probes in `words` (a hint; changes nothing).
    #[inline(always)]
    pub fn prefetch(self, words: &A, hashes: u32, h: ItemHash) {
        // SAFETY: as in `all_set`.
        unsafe { (self.prefetch)(words, hashes, h) }
    }
}

/// Whether every probe of `h` is set in `words` (scheme 5's sequence if `curved`).
#[inline]
pub fn all_set<A: WordArray + ?Sized>(words: &A, hashes: u32, curved: bool, h: ItemHash) -> bool {
    Kernels::for_hashes(hashes, curved).all_set(words, hashes, h)
}

/// Sets the clear probes of `h` in `words` (scheme 5's sequence if `curved`); returns how many
/// were clear (bits newly set; the item is new when that is not 0).
#[inline]
pub fn set_clear<A: WordArray + ?Sized>(
    words: &mut A,
    hashes: u32,
    curved: bool,
    h: ItemHash,
) -> u32 {
    Kernels::for_hashes(hashes, curved).set_clear(words, hashes, h)
}

/// The word index and bit of the first probe of `h` in `words` (where a lookup starts).
#[inline]
pub fn first_probe<A: WordArray + ?Sized>(words: &A, h: ItemHash) -> (u64, u32) {
    let pos = reduce(h.h1, words.bits());
    (pos >> 6, (pos & 63) as u32)
}

/// Whether the first probe of `h` is set (a lookup that finds it clear is over).
#[inline]
pub fn first_probe_set<A: WordArray + ?Sized>(words: &A, h: ItemHash) -> bool {
    let (w, bit) = first_probe(words, h);
    // SAFETY: `first_probe` gives `w < bits / 64` (see `probes`).
    (unsafe { *words.word(w) } >> bit) & 1 == 1
}

/// Starts loading the cache line of the first probe of `h`.
#[inline]
pub fn prefetch_first<A: WordArray + ?Sized>(words: &A, h: ItemHash) {
    let (w, _) = first_probe(words, h);
    // SAFETY: as in `first_probe_set`.
    crate::filter::mem::prefetch(unsafe { words.word(w) });
}

/// Calls `f(word index, bit)` for each of the `hashes` probes of `h` in an array of `bits`
/// bits, in order, until `f` returns `false`; the probe sequence of
/// [`hash::Probes`](crate::filter::hash::Probes). `K` > 0 is the count as a constant (the loop unrolls);
/// `K` = 0 reads `hashes`. `C`: the sequence of scheme 5 (`step += h3`), else scheme 1's
/// (`step += i`).
///
/// `reduce(x, bits) = (x · bits) >> 64 < bits` for every 64-bit `x`, so every word index is
/// below `bits / 64`: the precondition of [`WordArray::word`] holds for each.
#[inline(always)]
fn probes<const K: u32, const C: bool>(
    bits: u64,
    hashes: u32,
    h: ItemHash,
    mut f: impl FnMut(u64, u32) -> bool,
) {
    let count = if K > 0 { K } else { hashes };
    let (mut x, mut step, curve) = (h.h1, h.h2, h.curve());
    for i in 0..count {
        let pos = reduce(x, bits);
        if !f(pos >> 6, (pos & 63) as u32) {
            return;
        }
        x = x.wrapping_add(step);
        step = step.wrapping_add(if C { curve } else { u64::from(i) });
    }
}

#[inline(always)]
fn all_set_loop<A: WordArray + ?Sized, const K: u32, const C: bool>(
    words: &A,
    hashes: u32,
    h: ItemHash,
) -> bool {
    let mut all = true;
    probes::<K, C>(words.bits(), hashes, h, |w, bit| {
        // SAFETY: `probes` gives `w < bits / 64`.
        all = (unsafe { *words.word(w) } >> bit) & 1 == 1;
        all
    });
    all
}

#[inline(always)]
fn set_clear_loop<A: WordArray + ?Sized, const K: u32, const C: bool>(
    words: &mut A,
    hashes: u32,
    h: ItemHash,
) -> u32 {
    // The count of bits set is what keeps a layer's fill known without a scan (`BF.STATS`);
    // two probes of one item that hit the same bit count once (the second finds it set). A
    // set bit is not written, so an item already present dirties no cache line.
    let mut flipped = 0;
    probes::<K, C>(words.bits(), hashes, h, |w, bit| {
        // SAFETY: `probes` gives `w < bits / 64`.
        let word = unsafe { words.word_mut(w) };
        if (*word >> bit) & 1 == 0 {
            *word |= 1 << bit;
            flipped += 1;
        }
        true
    });
    flipped
}

#[inline(always)]
fn prefetch_loop<A: WordArray + ?Sized, const K: u32, const C: bool>(
    words: &A,
    hashes: u32,
    h: ItemHash,
) {
    probes::<K, C>(words.bits(), hashes, h, |w, _| {
        // SAFETY: `probes` gives `w < bits / 64`.
        crate::filter::mem::prefetch(unsafe { words.word(w) });
        true
    });
}

// The baseline kernels. `unsafe fn` only to share the pointer type with the BMI2 ones; they
// have no precondition.
unsafe fn all_set_base<A: WordArray + ?Sized, const K: u32, const C: bool>(
    words: &A,
    hashes: u32,
    h: ItemHash,
) -> bool {
    all_set_loop::<A, K, C>(words, hashes, h)
}

unsafe fn set_clear_base<A: WordArray + ?Sized, const K: u32, const C: bool>(
    words: &mut A,
    hashes: u32,
    h: ItemHash,
) -> u32 {
    set_clear_loop::<A, K, C>(words, hashes, h)
}

unsafe fn prefetch_base<A: WordArray + ?Sized, const K: u32, const C: bool>(
    words: &A,
    hashes: u32,
    h: ItemHash,
) {
    prefetch_loop::<A, K, C>(words, hashes, h)
}

// The same kernels compiled with BMI2. Precondition: the CPU has BMI2.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "bmi2")]
unsafe fn all_set_bmi2<A: WordArray + ?Sized, const K: u32, const C: bool>(
    words: &A,
    hashes: u32,
    h: ItemHash,
) -> bool {
    all_set_loop::<A, K, C>(words, hashes, h)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "bmi2")]
unsafe fn set_clear_bmi2<A: WordArray + ?Sized, const K: u32, const C: bool>(
    words: &mut A,
    hashes: u32,
    h: ItemHash,
) -> u32 {
    set_clear_loop::<A, K, C>(words, hashes, h)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "bmi2")]
unsafe fn prefetch_bmi2<A: WordArray + ?Sized, const K: u32, const C: bool>(
    words: &A,
    hashes: u32,
    h: ItemHash,
) {
    prefetch_loop::<A, K, C>(words, hashes, h)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::filter::hash::HashScheme;

    /// For every k the kernels dispatch on (and a few past the unrolled ones), in both probe
    /// sequences (schemes 1 and 5), on a half-full
    /// array, both the baseline kernels and (where the CPU has BMI2) the BMI2 ones, over one
    /// slice and over segments: `all_set` answers as the iterator does, `set_clear` sets
    /// exactly the iterator's probes and reports "new" exactly when one was clear, and the
    /// first-probe helpers agree with the iterator's first probe.
    #[test]
    fn kernels_equal_the_iterator_for_every_k() {
        let words_len = 1001usize;
        let bits = words_len as u64 * 64;
        let mut sets_checked = 0;
        for (k, curved) in (1..=UNROLLED_MAX + 3).flat_map(|k| [(k, false), (k, true)]) {
            let flat =
                [Some(Kernels::<[u64]>::baseline(k, curved)), Kernels::<[u64]>::bmi2(k, curved)];
            for kernels in flat.into_iter().flatten() {
                sets_checked += 1;
                let mut words = vec![0u64; words_len];
                for (i, w) in words.iter_mut().enumerate() {
                    *w = (i as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15) & 0x5555_5555_5555_5555;
                }
                for n in 0..300u32 {
                    let h = HashScheme::Xxh3Enhanced.hash(&n.to_le_bytes(), u64::from(k));
                    let bit =
                        |words: &[u64], p: u64| words[(p / 64) as usize] & (1 << (p % 64)) != 0;
                    let expected = h.probes_in(curved, bits, k).all(|p| bit(&words, p));
                    assert_eq!(kernels.all_set(&words[..], k, h), expected, "k={k} n={n}");
                    let first = h.probes_in(curved, bits, k).next().unwrap();
                    assert_eq!(first_probe_set(&words[..], h), bit(&words, first), "k={k} n={n}");
                    kernels.prefetch(&words[..], k, h);

                    let mut by_iterator = words.clone();
                    let mut flips = 0;
                    for p in h.probes_in(curved, bits, k) {
                        flips += u32::from(!bit(&by_iterator, p));
                        by_iterator[(p / 64) as usize] |= 1 << (p % 64);
                    }
                    let new = kernels.set_clear(&mut words[..], k, h);
                    assert_eq!(new > 0, !expected, "k={k} n={n}");
                    assert_eq!(new, flips, "k={k} n={n}: bits newly set");
                    assert_eq!(words, by_iterator, "k={k} n={n}");
                }
            }
        }
        let with_bmi2 = cfg!(target_arch = "x86_64") && Kernels::<[u64]>::bmi2(1, false).is_some();
        assert_eq!(sets_checked, 2 * (UNROLLED_MAX + 3) * if with_bmi2 { 2 } else { 1 });
    }

    /// The same over an array of several segments (three: two full 64 MiB ones and a short
    /// last one), probing with a few k: the segmented kernels address word `w` where the
    /// iterator's bit position says, across segment boundaries.
    #[test]
    fn segmented_kernels_equal_the_iterator() {
        fn table(
            array: &mut crate::filter::bloom::bits::BitArray,
        ) -> &mut crate::filter::bloom::bits::SegmentTable {
            match array.view_mut() {
                crate::filter::bloom::bits::ViewMut::Many(t) => t,
                crate::filter::bloom::bits::ViewMut::One(_) => panic!("one segment"),
            }
        }
        use crate::filter::bloom::bits::{BitArray, SEGMENT_WORDS, SegmentTable, ViewMut};
        let bits = (2 * SEGMENT_WORDS + 1000) * 64;
        let cases =
            [1, 7, 8, 11, UNROLLED_MAX + 2].into_iter().flat_map(|k| [(k, false), (k, true)]);
        for (k, curved) in cases {
            let kernels =
                [Some(Kernels::<SegmentTable>::baseline(k, curved)), Kernels::bmi2(k, curved)];
            for kernels in kernels.into_iter().flatten() {
                let mut array = BitArray::new(bits).unwrap();
                let mut by_iterator = BitArray::new(bits).unwrap();
                let ViewMut::Many(_) = array.view_mut() else { panic!("one segment") };
                // Items 0..2000, then 0..500 again: the second time every probe is set.
                for n in (0..2000u32).chain(0..500) {
                    let h = HashScheme::Xxh3Enhanced.hash(&n.to_le_bytes(), 99);
                    let expected = h.probes_in(curved, bits, k).all(|p| by_iterator.get(p));
                    assert_eq!(kernels.all_set(table(&mut array), k, h), expected, "k={k} n={n}");
                    let first = h.probes_in(curved, bits, k).next().unwrap();
                    assert_eq!(first_probe_set(table(&mut array), h), by_iterator.get(first));
                    kernels.prefetch(table(&mut array), k, h);
                    assert_eq!(table(&mut array).bits(), bits);
                    let mut flips = 0;
                    for p in h.probes_in(curved, bits, k) {
                        flips += u32::from(!by_iterator.set(p));
                    }
                    let new = kernels.set_clear(table(&mut array), k, h);
                    assert_eq!(new > 0, !expected, "k={k} n={n}");
                    assert_eq!(new, flips, "k={k} n={n}: bits newly set");
                }
                assert!(
                    array == by_iterator,
                    "k={k}: the kernels set other bits than the iterator"
                );
            }
        }
    }
}
