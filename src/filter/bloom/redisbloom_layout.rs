//! The RedisBloom kind ([`RedisBloom`]): layers in RedisBloom's layout, where probe `i` of an
//! item hashed to `(a, b)` is position `(a + i·b) mod M` — a 64-bit wrapping sum, then a
//! 64-bit division — with `M` the layer's bits ([`Rule::Modulo`]) or `2^n2` ([`Rule::Pow2`]):
//! [`Layer::positions`]. Filters imported from RedisBloom keep this for good, so they answer
//! exactly as RedisBloom would.
//!
//! The batched paths ([`super::batch`]) prefetch every probe of a block of items before they
//! test any, so each position is needed twice: once for the prefetch, once for the probe. The
//! prefetch of a chain's only layer (the common case: an imported filter is one nonscaling
//! layer) keeps the positions it computed ([`Positions`]), and the block kernels
//! ([`LayerKind::holds_block`], [`LayerKind::insert_block`]) read them instead of computing
//! them again.
//!
//! [`Rule::Modulo`]: super::layer::Rule::Modulo
//! [`Rule::Pow2`]: super::layer::Rule::Pow2

use std::mem::MaybeUninit;
use std::num::NonZeroU64;

use super::bits::{View, ViewMut};
use super::kernel::{BATCH, LayerKind};
use super::layer::Layer;
use super::probe::WordArray;
use crate::filter::hash::{HashScheme, ItemHash};

/// Probes per item that [`Positions`] keeps; a layer with more is prefetched without keeping
/// anything. RedisBloom's `k` is `⌈ln 2 · bits per item⌉`: 7 at 1%, 10 at 0.1%, 20 at 10⁻⁶.
pub const KEEP_MAX_K: usize = 20;

/// Layers in RedisBloom's layout: positions `(a + i·b) mod M`, where `M` is the layer's bits
/// ([`Rule::Modulo`](super::layer::Rule::Modulo)) or `2^n2`
/// ([`Rule::Pow2`](super::layer::Rule::Pow2)): [`Layer::positions`].
pub struct RedisBloom;

/// The positions the prefetch of one block computed in one layer, for that block's kernels.
///
/// Item `i` of the block (`i < items`) has its first `known[i]` positions in `at[i]`: all `k`
/// of them, or for a lookup whose first probe was clear, only that one (the prefetch of a
/// lookup does not compute the others, [`LayerKind::prefetch`]). Every kept position is below
/// `modulus`, the modulus of the layer they were computed in (only `keep_modular` stores
/// one, each `x % modulus`, and `Positions::start` forgets them all, whatever the new
/// modulus): that is what lets the kernels index the layer's words with them unchecked, once
/// they have checked that the layer's modulus is `modulus`.
pub struct Positions {
    /// The modulus the positions were computed with.
    modulus: NonZeroU64,
    /// The probe count of the layer they were computed in, at most [`KEEP_MAX_K`].
    k: u32,
    /// The items of the block.
    items: usize,
    /// How many positions of each item are in `at` (at most `k`): the leading entries of
    /// `at[i]` written since [`Positions::start`], which [`keep_modular`] counts after it
    /// writes them. Only [`Positions::of`] reads `at`, and only the counted entries.
    known: [u8; BATCH],
    /// The positions.
    at: [[MaybeUninit<u64>; KEEP_MAX_K]; BATCH],
}

impl Default for Positions {
    /// Nothing kept. The positions are left uninitialized: a batched call of one item on a
    /// large imported filter should not pay for clearing 2.5 KiB.
    #[inline]
    fn default() -> Self {
        Self {
            modulus: NonZeroU64::MIN,
            k: 0,
            items: 0,
            known: [0; BATCH],
            at: [[MaybeUninit::uninit(); KEEP_MAX_K]; BATCH],
        }
    }
}

impl Positions {
    /// Starts keeping the positions of a block of `items` in a layer of probe count `k` and
    /// `modulus`, forgetting those kept before; `false` (nothing changed) where they do not
    /// fit.
    #[inline(always)]
    fn start(&mut self, modulus: u64, k: u32, items: usize) -> bool {
        let Some(modulus) = NonZeroU64::new(modulus) else {
            return false;
        };
        if k == 0 || k as usize > KEEP_MAX_K || items > BATCH {
            return false;
        }
        (self.modulus, self.k, self.items) = (modulus, k, items);
        self.known = [0; BATCH];
        true
    }

    /// Whether the kept positions are of a block of `items` in a layer of `modulus` and `k`.
    #[inline(always)]
    fn fits(&self, modulus: u64, k: u32, items: usize) -> bool {
        self.modulus.get() == modulus && self.k == k && self.items == items
    }

    /// The kept positions of item `i` (each below the modulus).
    #[inline(always)]
    fn of(&self, i: usize) -> &[u64] {
        let n = usize::from(self.known[i]).min(KEEP_MAX_K);
        let slot = &self.at[i][..n];
        // SAFETY: `known[i]` counts leading entries of `at[i]` that were written (see the
        // field), so the first `n` are initialized; `MaybeUninit<u64>` has the layout of `u64`.
        unsafe { std::slice::from_raw_parts(slot.as_ptr().cast::<u64>(), n) }
    }
}

/// `x % m` in one `div` instruction. For 64-bit `%` on generic x86-64, LLVM first tests
/// whether both operands fit in 32 bits, to use the 32-bit `div` that older Intel cores ran
/// much faster: four more instructions per division, and this kind divides once per probe.
#[inline(always)]
fn rem(x: u64, m: NonZeroU64) -> u64 {
    #[cfg(target_arch = "x86_64")]
    {
        let r: u64;
        // SAFETY: `div` divides rdx:rax by its operand. With rdx = 0 the quotient is
        // `x / m ≤ x`, which fits in rax, and `m ≠ 0` (a `NonZeroU64`), so it cannot fault;
        // it writes rax, rdx and the flags only (the flags are not declared preserved) and
        // touches no memory.
        unsafe {
            std::arch::asm!(
                "div {m}",
                m = in(reg) m.get(),
                inout("rax") x => _,
                inout("rdx") 0u64 => r,
                options(pure, nomem, nostack),
            );
        }
        r
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        x % m
    }
}

impl RedisBloom {
    /// Sets the probes of `h`, adds the bits it set to the layer's count and returns how many
    /// that was.
    #[inline]
    fn set_probes(layer: &mut Layer, h: ItemHash) -> u64 {
        let (k, modulus) = (layer.hashes, layer.positions());
        let flipped = match layer.bits.view_mut() {
            ViewMut::One(words) => set_modular(words, k, modulus, h),
            ViewMut::Many(table) => set_modular(table, k, modulus, h),
        };
        layer.ones += flipped;
        flipped
    }
}

impl LayerKind for RedisBloom {
    /// Stops at the first clear bit, as RedisBloom's `bloom_check` does.
    #[inline]
    fn holds(layer: &Layer, h: ItemHash) -> bool {
        let (k, modulus) = (layer.hashes, layer.positions());
        match layer.bits.view() {
            View::One(words) => all_set_modular(words, k, modulus, h),
            View::Many(table) => all_set_modular(table, k, modulus, h),
        }
    }

    #[inline]
    fn insert(layer: &mut Layer, h: ItemHash) {
        Self::set_probes(layer, h);
        layer.items += 1;
    }

    #[inline]
    fn insert_if_new(layer: &mut Layer, h: ItemHash) -> bool {
        let flipped = Self::set_probes(layer, h);
        layer.items += u64::from(flipped > 0);
        flipped > 0
    }

    fn prefetch(layer: &Layer, hashes: &[ItemHash], candidates_only: bool) {
        let (k, modulus) = (layer.hashes, layer.positions());
        match layer.bits.view() {
            View::One(words) => prefetch_modular(words, k, modulus, hashes, candidates_only),
            View::Many(table) => prefetch_modular(table, k, modulus, hashes, candidates_only),
        }
    }

    /// The positions of a block: a division each.
    type Kept = Positions;
    const KEEPS: bool = true;

    fn prefetch_keeping(
        layer: &Layer,
        hashes: &[ItemHash],
        candidates_only: bool,
        kept: &mut Positions,
    ) -> bool {
        let (k, modulus) = (layer.hashes, layer.positions());
        if !kept.start(modulus, k, hashes.len()) {
            Self::prefetch(layer, hashes, candidates_only);
            return false;
        }
        match layer.bits.view() {
            View::One(words) => keep_modular(words, hashes, candidates_only, kept),
            View::Many(table) => keep_modular(table, hashes, candidates_only, kept),
        }
        true
    }

    /// Either view of the array: the rule's modulus and probe count are read once per block,
    /// not once per item, and no per-item call into the chain.
    #[inline]
    fn holds_block(
        layer: &Layer,
        hashes: &[ItemHash],
        _: HashScheme,
        kept: Option<&Positions>,
        out: &mut Vec<bool>,
    ) -> bool {
        let (k, modulus) = (layer.hashes, layer.positions());
        let kept = kept.filter(|kept| kept.fits(modulus, k, hashes.len()));
        match layer.bits.view() {
            View::One(words) => holds_modular(words, k, modulus, hashes, kept, out),
            View::Many(table) => holds_modular(table, k, modulus, hashes, kept, out),
        }
        true
    }

    /// As [`RedisBloom::holds_block`](LayerKind::holds_block), when the layer has room for the
    /// whole block.
    #[inline]
    fn insert_block(
        layer: &mut Layer,
        hashes: &[ItemHash],
        _: HashScheme,
        kept: Option<&Positions>,
        out: &mut Vec<bool>,
    ) -> Option<u64> {
        if layer.items.checked_add(hashes.len() as u64)? > layer.capacity {
            return None;
        }
        let (k, modulus) = (layer.hashes, layer.positions());
        let kept = kept.filter(|kept| kept.fits(modulus, k, hashes.len()));
        let (new, flipped) = match layer.bits.view_mut() {
            ViewMut::One(words) => insert_modular(words, k, modulus, hashes, kept, out),
            ViewMut::Many(table) => insert_modular(table, k, modulus, hashes, kept, out),
        };
        layer.items += new;
        layer.ones += flipped;
        Some(new)
    }
}

/// Whether bit `p` of `words` is set.
///
/// # Safety
/// `p < words.bits()`. Every position below a layer's modulus is: `modulus ≤ words.bits()`,
/// checked when the layer was built ([`Layer::positions`]).
#[inline(always)]
unsafe fn bit<A: WordArray + ?Sized>(words: &A, p: u64) -> bool {
    debug_assert!(p < words.bits());
    // SAFETY: `p < bits` (the caller's), so `p / 64 < bits / 64`.
    (unsafe { *words.word(p >> 6) } >> (p & 63)) & 1 != 0
}

/// Sets bit `p` of `words`; whether it was clear.
///
/// # Safety
/// As [`bit`]'s.
#[inline(always)]
unsafe fn set_bit<A: WordArray + ?Sized>(words: &mut A, p: u64) -> bool {
    debug_assert!(p < words.bits());
    // SAFETY: as in `bit`.
    let w = unsafe { words.word_mut(p >> 6) };
    let mask = 1u64 << (p & 63);
    let clear = *w & mask == 0;
    *w |= mask;
    clear
}

/// Starts loading the cache line of bit `p` of `words`.
///
/// # Safety
/// As [`bit`]'s.
#[inline(always)]
unsafe fn prefetch_bit<A: WordArray + ?Sized>(words: &A, p: u64) {
    debug_assert!(p < words.bits());
    // SAFETY: as in `bit`.
    crate::filter::mem::prefetch(unsafe { words.word(p >> 6) });
}

/// [`RedisBloom::prefetch`] over one kind of word array. `modulus ≤ words.bits()` (checked
/// when the layer was built, [`Layer::positions`]), so every position below it is a bit of
/// `words`: the precondition of [`bit`] and [`prefetch_bit`], met by every `x % modulus`.
fn prefetch_modular<A: WordArray + ?Sized>(
    words: &A,
    k: u32,
    modulus: u64,
    hashes: &[ItemHash],
    candidates_only: bool,
) {
    debug_assert!(modulus <= words.bits());
    if !candidates_only {
        for h in hashes {
            let mut x = h.h1;
            for _ in 0..k {
                // SAFETY: `x % modulus < modulus ≤ bits` (see above).
                unsafe { prefetch_bit(words, x % modulus) };
                x = x.wrapping_add(h.h2);
            }
        }
        return;
    }
    // Each item's first position is computed once (a 64-bit division): prefetched in the
    // first pass, tested in the second, whose probes start at the second position.
    const STEP: usize = BATCH;
    for chunk in hashes.chunks(STEP) {
        let mut firsts = [0u64; STEP];
        for (f, h) in firsts.iter_mut().zip(chunk) {
            *f = h.h1 % modulus;
            // SAFETY: as above.
            unsafe { prefetch_bit(words, *f) };
        }
        for (&first, h) in firsts.iter().zip(chunk) {
            // SAFETY: `first` is `h1 % modulus`, as above.
            if !unsafe { bit(words, first) } {
                continue;
            }
            let mut x = h.h1.wrapping_add(h.h2);
            for _ in 1..k {
                // SAFETY: as above.
                unsafe { prefetch_bit(words, x % modulus) };
                x = x.wrapping_add(h.h2);
            }
        }
    }
}

/// Runs `$f::<$A, K>($args)` with `K` the constant equal to `$k` where there is one, else
/// `K = 0` (the kernels then read `k` at run time): the kernels over kept positions unroll
/// their probe loop for the probe counts of RedisBloom's common error rates (`k` is
/// `⌈log2(1/error)⌉`: 4 at 10%, 7 at 1%, 10 at 0.1%). Chosen once per block.
macro_rules! with_k {
    ($k:expr, $f:ident::<$A:ty>($($args:expr),*)) => {
        match $k {
            4 => $f::<$A, 4>($($args),*),
            5 => $f::<$A, 5>($($args),*),
            6 => $f::<$A, 6>($($args),*),
            7 => $f::<$A, 7>($($args),*),
            8 => $f::<$A, 8>($($args),*),
            9 => $f::<$A, 9>($($args),*),
            10 => $f::<$A, 10>($($args),*),
            _ => $f::<$A, 0>($($args),*),
        }
    };
}

/// [`prefetch_modular`] keeping every position it computes in `kept`, which
/// [`Positions::start`] has just set up for `hashes` in this layer: its modulus is the
/// layer's, at most `words.bits()`, so every position below it is a bit of `words`. Each item's
/// positions are counted in `known` once written (the rule of [`Positions::known`]).
#[inline(always)]
fn keep_modular<A: WordArray + ?Sized>(
    words: &A,
    hashes: &[ItemHash],
    candidates_only: bool,
    kept: &mut Positions,
) {
    with_k!(kept.k, keep_k::<A>(words, hashes, candidates_only, kept));
}

/// [`keep_modular`] for `k = K`, or any `k` where `K = 0` ([`with_k`]).
#[inline(always)]
fn keep_k<A: WordArray + ?Sized, const K: usize>(
    words: &A,
    hashes: &[ItemHash],
    candidates_only: bool,
    kept: &mut Positions,
) {
    let (m, k) = (kept.modulus, if K == 0 { kept.k as usize } else { K });
    debug_assert!(m.get() <= words.bits() && k == kept.k as usize && k <= KEEP_MAX_K);
    let Positions { known, at, .. } = kept;
    let items = at.iter_mut().zip(known.iter_mut()).zip(hashes);
    if !candidates_only {
        for ((slots, known), h) in items {
            let mut x = h.h1;
            for slot in &mut slots[..k] {
                let p = rem(x, m);
                slot.write(p);
                // SAFETY: `p < m ≤ bits` (see above).
                unsafe { prefetch_bit(words, p) };
                x = x.wrapping_add(h.h2);
            }
            *known = k as u8;
        }
        return;
    }
    // First every item's first position, then the others of the items whose first is set.
    for ((slots, known), h) in items {
        let p = rem(h.h1, m);
        slots[0].write(p);
        *known = 1;
        // SAFETY: as above.
        unsafe { prefetch_bit(words, p) };
    }
    for ((slots, known), h) in at.iter_mut().zip(known.iter_mut()).zip(hashes) {
        // SAFETY: entry 0 was written (and counted) just above; `p < m ≤ bits`.
        if !unsafe { bit(words, slots[0].assume_init()) } {
            continue;
        }
        let mut x = h.h1.wrapping_add(h.h2);
        for slot in &mut slots[1..k] {
            let p = rem(x, m);
            slot.write(p);
            // SAFETY: as above.
            unsafe { prefetch_bit(words, p) };
            x = x.wrapping_add(h.h2);
        }
        *known = k as u8;
    }
}

/// [`LayerKind::holds_block`] over one kind of word array: the kept positions where there
/// are (`kept` fits this block and layer), else each computed again. `modulus ≤
/// words.bits()`, as in [`prefetch_modular`].
#[inline(always)]
fn holds_modular<A: WordArray + ?Sized>(
    words: &A,
    k: u32,
    modulus: u64,
    hashes: &[ItemHash],
    kept: Option<&Positions>,
    out: &mut Vec<bool>,
) {
    match kept {
        Some(kept) => with_k!(k, holds_k::<A>(words, modulus, hashes, kept, out)),
        None => out.extend(hashes.iter().map(|&h| all_set_modular(words, k, modulus, h))),
    }
}

/// [`holds_modular`] over the positions `kept` holds, which fit the block and the layer, for
/// `k = K` (or any `k` where `K = 0`, [`with_k`]). An item of which fewer than `k` were kept
/// is absent when one of them is clear (the usual case: its first), and is otherwise tested
/// in full.
#[inline(always)]
fn holds_k<A: WordArray + ?Sized, const K: usize>(
    words: &A,
    modulus: u64,
    hashes: &[ItemHash],
    kept: &Positions,
    out: &mut Vec<bool>,
) {
    let k = if K == 0 { kept.k as usize } else { K };
    debug_assert!(k == kept.k as usize);
    let mut holds = [false; BATCH];
    for (i, (held, &h)) in holds.iter_mut().zip(hashes).enumerate() {
        let known = kept.of(i);
        *held = match known.get(..k) {
            // SAFETY: each kept position is below `kept.modulus`, which is this layer's
            // `modulus` (`kept` fits it), so below `words.bits()`.
            Some(all) => all.iter().all(|&p| unsafe { bit(words, p) }),
            None => {
                // SAFETY: as above.
                known.iter().all(|&p| unsafe { bit(words, p) })
                    && all_set_modular(words, k as u32, modulus, h)
            }
        };
    }
    out.extend_from_slice(&holds[..hashes.len()]);
}

/// [`LayerKind::insert_block`] over one kind of word array, positions as in
/// [`holds_modular`]: sets each item's probes in order, appends whether it was new to `out`
/// and returns (items new, bits set).
#[inline(always)]
fn insert_modular<A: WordArray + ?Sized>(
    words: &mut A,
    k: u32,
    modulus: u64,
    hashes: &[ItemHash],
    kept: Option<&Positions>,
    out: &mut Vec<bool>,
) -> (u64, u64) {
    match kept {
        Some(kept) => with_k!(k, insert_k::<A>(words, modulus, hashes, kept, out)),
        None => {
            let (mut new, mut flipped) = (0, 0);
            for &h in hashes {
                let n = set_modular(words, k, modulus, h);
                flipped += n;
                new += u64::from(n > 0);
                out.push(n > 0);
            }
            (new, flipped)
        }
    }
}

/// [`insert_modular`] over the positions `kept` holds, as [`holds_k`].
#[inline(always)]
fn insert_k<A: WordArray + ?Sized, const K: usize>(
    words: &mut A,
    modulus: u64,
    hashes: &[ItemHash],
    kept: &Positions,
    out: &mut Vec<bool>,
) -> (u64, u64) {
    let k = if K == 0 { kept.k as usize } else { K };
    debug_assert!(k == kept.k as usize);
    let (mut new, mut flipped, mut added) = (0, 0, [false; BATCH]);
    for (i, (added, &h)) in added.iter_mut().zip(hashes).enumerate() {
        let n = match kept.of(i).get(..k) {
            // SAFETY: as in `holds_k`.
            Some(all) => all.iter().map(|&p| u64::from(unsafe { set_bit(words, p) })).sum(),
            None => set_modular(words, k as u32, modulus, h),
        };
        flipped += n;
        new += u64::from(n > 0);
        *added = n > 0;
    }
    out.extend_from_slice(&added[..hashes.len()]);
    (new, flipped)
}

/// Whether every probe of `h` under a RedisBloom rule is set: positions `(h1 + i·h2) mod
/// modulus` in 64-bit wrapping arithmetic (as [`ItemHash::modular_probes`]), stopping at the
/// first clear one as RedisBloom's `bloom_check` does. `modulus ≤ words.bits()`, as in
/// [`prefetch_modular`]. Unchecked indexing: no bounds checks per probe.
#[inline(always)]
fn all_set_modular<A: WordArray + ?Sized>(words: &A, k: u32, modulus: u64, h: ItemHash) -> bool {
    debug_assert!(modulus <= words.bits());
    let mut x = h.h1;
    for _ in 0..k {
        // SAFETY: `x % modulus < modulus ≤ bits`.
        if !unsafe { bit(words, x % modulus) } {
            return false;
        }
        x = x.wrapping_add(h.h2);
    }
    true
}

/// Sets every probe of `h` under a RedisBloom rule (positions as in [`all_set_modular`]);
/// how many were clear.
#[inline(always)]
fn set_modular<A: WordArray + ?Sized>(words: &mut A, k: u32, modulus: u64, h: ItemHash) -> u64 {
    debug_assert!(modulus <= words.bits());
    let (mut x, mut flipped) = (h.h1, 0);
    for _ in 0..k {
        // SAFETY: `x % modulus < modulus ≤ bits`.
        flipped += u64::from(unsafe { set_bit(words, x % modulus) });
        x = x.wrapping_add(h.h2);
    }
    flipped
}
