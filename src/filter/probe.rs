//! The probe kernels: the innermost loops of every add and every lookup.
//!
//! [`hash::Probes`](super::hash::Probes) defines which bits an item probes; this file walks the
//! same sequence faster, for the common case of a layer held in one segment (up to 64 MiB).
//! Two things make the difference, measured with callgrind (see bench/README.md):
//! - the probe count `k` is made a compile-time constant for every `k` up to [`UNROLLED_MAX`],
//!   so each loop is fully unrolled: no loop counter, and the step increments become constants;
//! - the words are one slice whose length bounds every probe by construction, so a probe is one
//!   multiply, one shift, one load and one bit test, with no bounds check (see [`locate`]).
//!
//! Both kernels give exactly the answers and bits of the iterator path; the tests below check
//! that for every `k` the kernels handle.

use super::hash::{ItemHash, reduce};

/// The largest probe count with an unrolled kernel. Sizing gives `k = ceil(ln 2 · bits/item)`:
/// 7–8 at 1%, 11 at 0.1%, about 1.44 per halving of the error, so a chain that doubles its
/// precision per layer stays under 24 for its first dozen layers. Larger `k` takes the loop.
pub const UNROLLED_MAX: u32 = 24;

/// Tests an item: whether every probe is set (`words`, probe count, hash).
///
/// `unsafe fn` only because some kernels are compiled for CPU features beyond the x86_64
/// baseline: calling one is safe exactly when the CPU has them, which [`Kernels::for_hashes`]
/// checks before it hands one out. The slice and hash may be anything.
pub type AllSet = unsafe fn(&[u64], u32, ItemHash) -> bool;
/// Adds an item: sets the clear probes, returns whether any was clear (`words`, count, hash).
/// `unsafe fn` for the reason given at [`AllSet`].
pub type SetClear = unsafe fn(&mut [u64], u32, ItemHash) -> bool;

/// The kernels for a probe count, chosen once per batch: per item, the call is then a direct
/// call to code where `k` is a constant (the count argument is only read by the looping
/// fallback for `k` > [`UNROLLED_MAX`]), compiled for the best instructions the CPU has.
///
/// Invariant: every kernel held runs on this CPU (see [`AllSet`]), so [`Kernels::all_set`] and
/// [`Kernels::set_clear`] may call them.
#[derive(Clone, Copy)]
pub struct Kernels {
    all_set: AllSet,
    set_clear: SetClear,
}

/// Generates the kernel table for every unrolled `k` from two generic kernels.
macro_rules! kernel_table {
    ($hashes:expr, $all_set:ident, $set_clear:ident, $all_set_loop:ident, $set_clear_loop:ident) => {
        kernel_table!(@pick $hashes, $all_set, $set_clear, $all_set_loop, $set_clear_loop;
            1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 24)
    };
    (@pick $hashes:expr, $all_set:ident, $set_clear:ident, $all_set_loop:ident, $set_clear_loop:ident; $($k:literal)*) => {
        match $hashes {
            $($k => Kernels { all_set: $all_set::<$k>, set_clear: $set_clear::<$k> },)*
            _ => Kernels { all_set: $all_set_loop, set_clear: $set_clear_loop },
        }
    };
}

impl Kernels {
    /// The kernels for `hashes` probes: with BMI2 (`mulx`, `shlx`: about 3 instructions
    /// fewer per probe, measured with callgrind) where the CPU has it, else the baseline ones.
    #[inline]
    pub fn for_hashes(hashes: u32) -> Self {
        Self::bmi2(hashes).unwrap_or_else(|| Self::baseline(hashes))
    }

    /// The kernels compiled for the x86_64 baseline (or whatever the target is).
    fn baseline(hashes: u32) -> Self {
        kernel_table!(hashes, all_set_k, set_clear_k, all_set_dyn, set_clear_dyn)
    }

    /// The kernels compiled with BMI2, if this CPU has it.
    #[inline]
    fn bmi2(hashes: u32) -> Option<Self> {
        #[cfg(target_arch = "x86_64")]
        if std::arch::is_x86_feature_detected!("bmi2") {
            return Some(kernel_table!(hashes, all_set_bmi2, set_clear_bmi2, all_set_loop_bmi2, set_clear_loop_bmi2));
        }
        let _ = hashes;
        None
    }

    /// Whether every probe of `h` is set in `words`.
    #[inline(always)]
    pub fn all_set(self, words: &[u64], hashes: u32, h: ItemHash) -> bool {
        // SAFETY: the struct's invariant: `for_hashes` only holds kernels this CPU runs.
        unsafe { (self.all_set)(words, hashes, h) }
    }

    /// Sets the clear probes of `h` in `words`; whether any was clear.
    #[inline(always)]
    pub fn set_clear(self, words: &mut [u64], hashes: u32, h: ItemHash) -> bool {
        // SAFETY: as in `all_set`.
        unsafe { (self.set_clear)(words, hashes, h) }
    }
}

/// Whether every probe of `h` is set in `words` (a layer of 64 · `words.len()` bits).
#[inline]
pub fn all_set(words: &[u64], hashes: u32, h: ItemHash) -> bool {
    Kernels::for_hashes(hashes).all_set(words, hashes, h)
}

/// Sets the clear probes of `h` in `words`; returns whether any was clear (the item is new).
#[inline]
pub fn set_clear(words: &mut [u64], hashes: u32, h: ItemHash) -> bool {
    Kernels::for_hashes(hashes).set_clear(words, hashes, h)
}

// The baseline kernels. `unsafe fn` only to share the pointer type with the BMI2 ones; they
// have no precondition.
unsafe fn all_set_k<const K: u32>(words: &[u64], _hashes: u32, h: ItemHash) -> bool {
    all_set_loop(words, K, h)
}

unsafe fn set_clear_k<const K: u32>(words: &mut [u64], _hashes: u32, h: ItemHash) -> bool {
    set_clear_loop(words, K, h)
}

unsafe fn all_set_dyn(words: &[u64], hashes: u32, h: ItemHash) -> bool {
    all_set_loop(words, hashes, h)
}

unsafe fn set_clear_dyn(words: &mut [u64], hashes: u32, h: ItemHash) -> bool {
    set_clear_loop(words, hashes, h)
}

// The same kernels compiled with BMI2. Precondition: the CPU has BMI2.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "bmi2")]
unsafe fn all_set_bmi2<const K: u32>(words: &[u64], _hashes: u32, h: ItemHash) -> bool {
    all_set_loop(words, K, h)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "bmi2")]
unsafe fn set_clear_bmi2<const K: u32>(words: &mut [u64], _hashes: u32, h: ItemHash) -> bool {
    set_clear_loop(words, K, h)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "bmi2")]
unsafe fn all_set_loop_bmi2(words: &[u64], hashes: u32, h: ItemHash) -> bool {
    all_set_loop(words, hashes, h)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "bmi2")]
unsafe fn set_clear_loop_bmi2(words: &mut [u64], hashes: u32, h: ItemHash) -> bool {
    set_clear_loop(words, hashes, h)
}

/// The word index of a probe value in an array of `words.len()` words, and the bit inside it.
///
/// `reduce(x, n) = (x · n) >> 64 < n` for every 64-bit `x`, so with `n = 64 · words.len()`
/// the word index `pos >> 6` is always `< words.len()`: the caller may index unchecked.
#[inline(always)]
fn locate(words: &[u64], x: u64) -> (usize, u32) {
    let pos = reduce(x, words.len() as u64 * 64);
    ((pos >> 6) as usize, (pos & 63) as u32)
}

/// The probe sequence of [`hash::Probes`](super::hash::Probes), stopping at the first clear bit.
#[inline(always)]
fn all_set_loop(words: &[u64], hashes: u32, h: ItemHash) -> bool {
    let (mut x, mut step) = (h.h1, h.h2);
    for i in 0..hashes {
        let (w, bit) = locate(words, x);
        debug_assert!(w < words.len());
        // SAFETY: `locate` returns an index below `words.len()` (see there).
        let word = unsafe { *words.get_unchecked(w) };
        if (word >> bit) & 1 == 0 {
            return false;
        }
        x = x.wrapping_add(step);
        step = step.wrapping_add(u64::from(i));
    }
    true
}

/// The probe sequence of [`hash::Probes`](super::hash::Probes), setting each clear bit.
#[inline(always)]
fn set_clear_loop(words: &mut [u64], hashes: u32, h: ItemHash) -> bool {
    let (mut x, mut step) = (h.h1, h.h2);
    let mut new = false;
    for i in 0..hashes {
        let (w, bit) = locate(words, x);
        debug_assert!(w < words.len());
        // SAFETY: `locate` returns an index below `words.len()` (see there).
        let word = unsafe { words.get_unchecked_mut(w) };
        if (*word >> bit) & 1 == 0 {
            *word |= 1 << bit;
            new = true;
        }
        x = x.wrapping_add(step);
        step = step.wrapping_add(u64::from(i));
    }
    new
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::filter::hash::HashScheme;

    /// For every k the kernels dispatch on (and a few past the unrolled ones), on a half-full
    /// array, both the baseline kernels and (where the CPU has BMI2) the BMI2 ones: `all_set`
    /// answers as the iterator does, and `set_clear` sets exactly the iterator's probes and
    /// reports "new" exactly when one was clear.
    #[test]
    fn kernels_equal_the_iterator_for_every_k() {
        let words_len = 1001usize;
        let bits = words_len as u64 * 64;
        let mut sets_checked = 0;
        for k in 1..=UNROLLED_MAX + 3 {
            for kernels in [Some(Kernels::baseline(k)), Kernels::bmi2(k)].into_iter().flatten() {
                sets_checked += 1;
                let mut words = vec![0u64; words_len];
                for (i, w) in words.iter_mut().enumerate() {
                    *w = (i as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15) & 0x5555_5555_5555_5555;
                }
                for n in 0..300u32 {
                    let h = HashScheme::Xxh3Enhanced.hash(&n.to_le_bytes(), u64::from(k));
                    let expected = h.probes(bits, k).all(|p| words[(p / 64) as usize] & (1 << (p % 64)) != 0);
                    assert_eq!(kernels.all_set(&words, k, h), expected, "k={k} n={n}");

                    let mut by_iterator = words.clone();
                    for p in h.probes(bits, k) {
                        by_iterator[(p / 64) as usize] |= 1 << (p % 64);
                    }
                    let new = kernels.set_clear(&mut words, k, h);
                    assert_eq!(new, !expected, "k={k} n={n}");
                    assert_eq!(words, by_iterator, "k={k} n={n}");
                }
            }
        }
        let with_bmi2 = cfg!(target_arch = "x86_64") && Kernels::bmi2(1).is_some();
        assert_eq!(sets_checked, (UNROLLED_MAX + 3) * if with_bmi2 { 2 } else { 1 });
    }
}
