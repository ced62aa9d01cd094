//! A sub-filter as the batched paths probe and write it ([`Buckets`], [`BucketsMut`]): its
//! buckets of `B` slots with the shape checked once per view, so that the per-item bucket
//! accesses need no bounds check, and a bucket's slots tested as one 64-bit word (SWAR).

use super::{SubFilter, SubFilterMut};
use crate::filter::cuckoo::fingerprint::{Fingerprint, Lookup};
use crate::filter::cuckoo::slots;
use crate::filter::mem;

/// A sub-filter as the batched paths probe it: its buckets of `B` slots (`B` a constant for
/// the common sizes, 0 for the bucket size held at run time), the shape checked once when the
/// view is made, so that the per-item bucket accesses need no bounds check.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Buckets<'a, F, const B: usize> {
    // Private: only `new` (which checks the shape) and `BucketsMut::view` (of a checked
    // view) make one, and nothing changes the fields after.
    mask: u64,
    bs: usize,
    slots: &'a [F],
}

/// A sub-filter as the batched insert path writes it; [`Buckets`], lent mutably.
#[derive(Debug)]
pub(crate) struct BucketsMut<'a, F, const B: usize> {
    // Private, as in `Buckets`.
    mask: u64,
    bs: usize,
    slots: &'a mut [F],
}

/// Whether `slots` slots are `mask + 1` buckets of `bs` slots, `bs` being `B` unless `B` is
/// 0 (and not 0 itself): what `Buckets` and `BucketsMut` rely on.
fn holds_buckets<const B: usize>(mask: u64, bs: usize, slots: usize) -> bool {
    let buckets = usize::try_from(mask).ok().and_then(|m| m.checked_add(1));
    bs > 0 && (B == 0 || B == bs) && buckets.and_then(|n| n.checked_mul(bs)) == Some(slots)
}

impl<'a, F: Fingerprint, const B: usize> Buckets<'a, F, B> {
    /// The view of `f`, whose buckets are `bs` slots; `None` if they are not `B` (when `B`
    /// is not 0) or if `f`'s slots are not its buckets' (a bug, never data).
    #[inline(always)]
    pub(crate) fn new(f: SubFilter<'a, F>, bs: usize) -> Option<Self> {
        holds_buckets::<B>(f.mask, bs, f.slots.len()).then_some(Self {
            mask: f.mask,
            bs,
            slots: f.slots,
        })
    }

    /// Slots per bucket: the constant `B`, or the one held.
    #[inline(always)]
    fn size(&self) -> usize {
        if B == 0 { self.bs } else { B }
    }

    /// The slots of bucket `h mod buckets`.
    #[inline(always)]
    fn bucket(&self, h: u64) -> &'a [F] {
        // SAFETY: `h & mask` ≤ `mask`, and it is a `usize` (`new` checked `mask + 1` fits
        // one).
        unsafe { self.bucket_at((h & self.mask) as usize) }
    }

    /// The slots of bucket `i`, an index already reduced.
    ///
    /// # Safety
    /// `i ≤ mask`.
    #[inline(always)]
    unsafe fn bucket_at(&self, i: usize) -> &'a [F] {
        let n = self.size();
        // SAFETY: `i ≤ mask` (the caller's), so the bucket's slots `[i × n, i × n + n)` lie
        // within `(mask + 1) × n`, which is `slots.len()` (checked by `new`, or by the
        // `BucketsMut::new` this view was lent from; the fields never change). The slice
        // borrows `slots` for `'a`.
        unsafe { std::slice::from_raw_parts(self.slots.as_ptr().add(i * n), n) }
    }

    /// `self` and `other` probed together ([`Twin`]) if they have as many buckets (what a
    /// filter of expansion 1 that grew once has).
    #[inline(always)]
    pub(crate) fn twin(self, other: Self) -> Option<Twin<'a, F, B>> {
        (self.mask == other.mask).then_some(Twin { f: self, g: other })
    }

    /// Whether [`Buckets::matches`] reads each bucket as one word: the bucket size a constant
    /// and both buckets' slots within 8 bytes (8-bit fingerprints in buckets of 2 or 4, 16-bit
    /// ones in buckets of 2), on a little-endian machine (where a slot's bytes, read as part
    /// of a little-endian word, are its value).
    const WORDS: bool = cfg!(target_endian = "little") && B != 0 && 2 * B * F::BYTES <= 8;
    /// Bits of [`Buckets::matches`]' mask per slot: a slot's lane in the word, or one bit.
    const LANE: u32 = if Self::WORDS { F::BITS } else { 1 };
    /// Bits of the slots of an item's two buckets (of [`Buckets::pair_word`]).
    const PAIR_BITS: u32 = 2 * B as u32 * F::BITS;

    /// With [`Buckets::WORDS`]: the slots of the item's two buckets as one word, a lane of
    /// `F::BITS` bits per slot, bucket `h1`'s in the low half.
    #[inline(always)]
    fn pair_word(&self, l: &Lookup<F>) -> u64 {
        word_of(self.bucket(l.h1)) | word_of(self.bucket(l.h2)) << (Self::PAIR_BITS / 2)
    }

    /// Which slots of the item's two buckets hold `x`, as a mask whose lowest set bit, divided
    /// by [`Buckets::LANE`], is the first such slot `j` of the `2B` (`j < B`: slot `j` of
    /// bucket `h1`; else slot `j − B` of bucket `h2`); 0 if none does. For a constant `B` (2
    /// or 4) every slot is compared, with no branch: the slot that holds a present item's
    /// fingerprint, or the first empty one an insert takes, is data, and the branch per slot
    /// this replaces mispredicted about once in two items (callgrind's branch simulation: 0.57
    /// per item on the bench's 200,000-item filter, in `CF.MEXISTS` of present items and in
    /// `CF.INSERT`), which costs more cycles than the compares of all `2B` slots.
    ///
    /// With [`Buckets::WORDS`] the two buckets are read as one word ([`Buckets::pair_word`])
    /// and its lanes compared at once ([`equal_lanes`]). Only `B != 0` reaches here (the
    /// callers keep their loops for `B = 0`).
    #[inline(always)]
    fn matches(&self, l: &Lookup<F>, x: F) -> u64 {
        // `h & mask` ≤ `mask`.
        let (i, j) = ((l.h1 & self.mask) as usize, (l.h2 & self.mask) as usize);
        // SAFETY: `i`, `j` ≤ `mask` (just reduced).
        unsafe { self.matches_at(i, j, x) }
    }

    /// [`Buckets::matches`] of the item whose two bucket indexes, already reduced, are `i`
    /// and `j` (the insert reuses them to address the slot it stores into).
    ///
    /// # Safety
    /// `i`, `j` ≤ `mask`.
    #[inline(always)]
    unsafe fn matches_at(&self, i: usize, j: usize, x: F) -> u64 {
        debug_assert!(B == 2 || B == 4, "a constant bucket size of 2 or 4");
        // SAFETY: `i`, `j` ≤ `mask` (the caller's).
        let (a, b) = unsafe { (self.bucket_at(i), self.bucket_at(j)) };
        if Self::WORDS {
            let word = word_of(a) | word_of(b) << (Self::PAIR_BITS / 2);
            return equal_lanes(word, x, Self::PAIR_BITS);
        }
        let mut m = 0u64;
        for j in 0..B {
            // `a` and `b` are `B` slots long (`bucket_at` makes them `size()` = `B` long), so
            // these indexes are in bounds and the checks fold away.
            m |= u64::from(a[j] == x) << j;
            m |= u64::from(b[j] == x) << (B + j);
        }
        m
    }

    /// Whether [`Buckets::prefetch_key`] and [`Buckets::hits_key`] apply: both buckets read
    /// as one word ([`Buckets::WORDS`]).
    pub(crate) const KEYED: bool = Self::WORDS;

    /// The [`Probe`] of `l` in this view.
    #[inline(always)]
    fn probe_of(&self, l: &Lookup<F>) -> Probe {
        // `mask` is a `usize` (`new` checked `mask + 1` fits one).
        Probe {
            i: (l.h1 & self.mask) as usize,
            j: (l.h2 & self.mask) as usize,
            pattern: lanes_of(l.fp),
        }
    }

    /// [`Buckets::prefetch`], giving the item's [`Probe`] for [`Buckets::hits_key`].
    #[inline(always)]
    pub(crate) fn prefetch_key(&self, l: &Lookup<F>) -> Probe {
        let p = self.probe_of(l);
        // SAFETY: `p.i`, `p.j` ≤ `mask` (`probe_of` reduced them with it).
        unsafe {
            fetch_first(self.bucket_at(p.i));
            fetch_first(self.bucket_at(p.j));
        }
        p
    }

    /// [`Buckets::hits`] of the item `p` was made of (with [`Buckets::KEYED`]): its indexes
    /// not reduced again, its fingerprint's lanes not made again.
    ///
    /// # Safety
    /// `p.i`, `p.j` ≤ `mask`: `p` is the default [`Probe`] or was made by
    /// [`Buckets::prefetch_key`] of a view with this view's mask.
    #[inline(always)]
    pub(crate) unsafe fn hits_key(&self, p: &Probe) -> u64 {
        debug_assert!(Self::KEYED);
        // SAFETY: `p.i`, `p.j` ≤ `mask` (the caller's).
        let (a, b) = unsafe { (self.bucket_at(p.i), self.bucket_at(p.j)) };
        let word = word_of(a) | word_of(b) << (Self::PAIR_BITS / 2);
        zero_lanes::<F>(word ^ p.pattern, Self::PAIR_BITS)
    }

    /// [`SubFilter::contains`] as a mask: not 0 iff bucket `h1` or `h2` holds the
    /// fingerprint. (The batched lookups OR the masks of all sub-filters and test once.)
    #[inline(always)]
    pub(crate) fn hits(&self, l: &Lookup<F>) -> u64 {
        if B != 0 {
            return self.matches(l, l.fp);
        }
        // The bucket size at run time: plain compares (`<[u8]>::contains` goes through
        // `memchr`, and a chained iterator is not unrolled).
        for &x in self.bucket(l.h1) {
            if x == l.fp {
                return 1;
            }
        }
        for &x in self.bucket(l.h2) {
            if x == l.fp {
                return 1;
            }
        }
        0
    }

    /// [`Buckets::hits`] of two sub-filters, `self` and `other`, ORed. Where both items'
    /// bucket pairs fit one word together (8-bit fingerprints in buckets of 2, the default:
    /// 32 bits each), they are tested as one word, the lanes compared once for both.
    #[inline(always)]
    pub(crate) fn hits_with(&self, other: &Self, l: &Lookup<F>) -> u64 {
        if Self::WORDS && Self::PAIR_BITS <= 32 {
            let word = self.pair_word(l) | other.pair_word(l) << 32;
            return equal_lanes(word, l.fp, 64);
        }
        self.hits(l) | other.hits(l)
    }

    /// Prefetches the cache lines of both buckets of `l`.
    #[inline(always)]
    pub(crate) fn prefetch(&self, l: &Lookup<F>) {
        for h in [l.h1, l.h2] {
            // Every bucket has a first slot (`new` checked the bucket size is not 0).
            if let Some(slot) = self.bucket(h).first() {
                mem::prefetch_any(slot);
            }
        }
    }
}

/// An item as the keyed probes read it ([`Buckets::prefetch_key`], [`Twin::prefetch_key`]):
/// its two bucket indexes already reduced, and its fingerprint in every lane of a word, so
/// that the probe after a block's prefetches neither reduces the indexes again nor widens the
/// fingerprint. The default is bucket 0 twice and fingerprint 0 (a valid probe of any view).
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Probe {
    // Private: made by `Buckets::probe_of` only (indexes reduced by the view's mask).
    i: usize,
    j: usize,
    pattern: u64,
}

/// An item as the keyed insert places it ([`BucketsMut::prefetch_place`]): its two bucket
/// indexes in the newest sub-filter already reduced, and its fingerprint. The default is
/// bucket 0 twice (a valid place in any view).
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Place<F> {
    // Private: made by `BucketsMut::prefetch_place` only (indexes reduced by its mask).
    i: usize,
    j: usize,
    fp: F,
}

/// Two sub-filters with as many buckets, probed together ([`Buckets::twin`]): an item's
/// bucket indexes are the same in both, so each is reduced once (two `h & mask` per item,
/// not four, when prefetching and again when probing).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Twin<'a, F, const B: usize> {
    // Private: only `Buckets::twin` makes one, with `f.mask == g.mask`; the fields never
    // change.
    f: Buckets<'a, F, B>,
    g: Buckets<'a, F, B>,
}

impl<F: Fingerprint, const B: usize> Twin<'_, F, B> {
    /// The item's two bucket indexes, reduced (each ≤ `f.mask` = `g.mask`).
    #[inline(always)]
    fn indexes(&self, l: &Lookup<F>) -> [usize; 2] {
        // `mask` is a `usize` (`Buckets::new` checked `mask + 1` fits one).
        [(l.h1 & self.f.mask) as usize, (l.h2 & self.f.mask) as usize]
    }

    /// [`Buckets::prefetch`] in both sub-filters.
    #[inline(always)]
    pub(crate) fn prefetch(&self, l: &Lookup<F>) {
        let [i, j] = self.indexes(l);
        // Every bucket has a first slot (`Buckets::new` checked the bucket size is not 0).
        let fetch = |bucket: &[F]| {
            if let Some(slot) = bucket.first() {
                mem::prefetch_any(slot);
            }
        };
        // SAFETY: `i`, `j` ≤ `f.mask` = `g.mask` (`indexes`; `twin` checked the masks equal).
        unsafe {
            fetch(self.f.bucket_at(i));
            fetch(self.f.bucket_at(j));
            fetch(self.g.bucket_at(i));
            fetch(self.g.bucket_at(j));
        }
    }

    /// Whether [`Twin::prefetch_key`] and [`Twin::hits_key`] apply: the four buckets read
    /// as one word (8-bit fingerprints in buckets of 2, the default).
    pub(crate) const KEYED: bool = Buckets::<F, B>::WORDS && Buckets::<F, B>::PAIR_BITS <= 32;

    /// [`Twin::prefetch`], giving the item's [`Probe`] for [`Twin::hits_key`].
    #[inline(always)]
    pub(crate) fn prefetch_key(&self, l: &Lookup<F>) -> Probe {
        let p = self.f.probe_of(l);
        // SAFETY: `p.i`, `p.j` ≤ `f.mask` = `g.mask` (`probe_of` reduced them with `f.mask`;
        // `twin` checked the masks equal).
        unsafe {
            fetch_first(self.f.bucket_at(p.i));
            fetch_first(self.f.bucket_at(p.j));
            fetch_first(self.g.bucket_at(p.i));
            fetch_first(self.g.bucket_at(p.j));
        }
        p
    }

    /// [`Twin::hits`] of the item `p` was made of (with [`Twin::KEYED`]): its indexes not
    /// reduced again, its fingerprint's lanes not made again.
    ///
    /// # Safety
    /// `p.i`, `p.j` ≤ `f.mask`: `p` is the default [`Probe`] or was made by
    /// [`Twin::prefetch_key`] of a twin with this twin's mask.
    #[inline(always)]
    pub(crate) unsafe fn hits_key(&self, p: &Probe) -> u64 {
        debug_assert!(Self::KEYED);
        // SAFETY: `p.i`, `p.j` ≤ `f.mask` = `g.mask` (the caller's; `twin` checked the masks
        // equal).
        let (fi, fj, gi, gj) = unsafe {
            (
                self.f.bucket_at(p.i),
                self.f.bucket_at(p.j),
                self.g.bucket_at(p.i),
                self.g.bucket_at(p.j),
            )
        };
        // As `Buckets::pair_word` of each, `f`'s in the low half.
        let half = Buckets::<F, B>::PAIR_BITS / 2;
        let f = word_of(fi) | word_of(fj) << half;
        let g = word_of(gi) | word_of(gj) << half;
        zero_lanes::<F>((f | g << 32) ^ p.pattern, 64)
    }

    /// [`Buckets::hits_with`] of the two sub-filters.
    #[inline(always)]
    pub(crate) fn hits(&self, l: &Lookup<F>) -> u64 {
        if Buckets::<F, B>::WORDS && Buckets::<F, B>::PAIR_BITS <= 32 {
            let [i, j] = self.indexes(l);
            // SAFETY: `i`, `j` ≤ `f.mask` = `g.mask`, as in `prefetch`.
            let (fi, fj, gi, gj) = unsafe {
                (self.f.bucket_at(i), self.f.bucket_at(j), self.g.bucket_at(i), self.g.bucket_at(j))
            };
            // As `Buckets::pair_word` of each, `f`'s in the low half.
            let half = Buckets::<F, B>::PAIR_BITS / 2;
            let f = word_of(fi) | word_of(fj) << half;
            let g = word_of(gi) | word_of(gj) << half;
            return equal_lanes(f | g << 32, l.fp, 64);
        }
        self.f.hits_with(&self.g, l)
    }
}

/// The lanes of `word` (of `F::BITS` bits each; only its low `bits` bits are slots) equal to
/// `x`, as each such lane's top bit ([`zero_lanes`] of `word ^ (x in every lane)`).
#[inline(always)]
fn equal_lanes<F: Fingerprint>(word: u64, x: F, bits: u32) -> u64 {
    zero_lanes::<F>(word ^ lanes_of(x), bits)
}

/// `x` in every lane of `F::BITS` bits of a word.
#[inline(always)]
fn lanes_of<F: Fingerprint>(x: F) -> u64 {
    x.widen().wrapping_mul(u64::MAX / ((1u64 << F::BITS) - 1))
}

/// The lanes of `v` (of `F::BITS` bits each; only its low `bits` bits are slots) that are
/// zero, as each such lane's top bit, found exactly (no carry crosses a lane) as those whose
/// top bit is clear in `((v & low) + low) | v`, `low` being every bit but each lane's top one:
/// a lane's top bit is set there iff the lane is not zero. The lanes above `bits` are
/// cleared (an `x` of 0 XORed into a word whose lanes there are zero would match them).
#[inline(always)]
fn zero_lanes<F: Fingerprint>(v: u64, bits: u32) -> u64 {
    let ones = u64::MAX / ((1u64 << F::BITS) - 1);
    let tops = ones << (F::BITS - 1);
    let low = !tops;
    let used = if bits >= 64 { u64::MAX } else { (1u64 << bits) - 1 };
    !(((v & low).wrapping_add(low)) | v) & tops & used
}

/// Prefetches the cache line of a bucket's first slot (every bucket has one: the views
/// checked the bucket size is not 0).
#[inline(always)]
fn fetch_first<F>(bucket: &[F]) {
    if let Some(slot) = bucket.first() {
        mem::prefetch_any(slot);
    }
}

/// The slots of one bucket as a little-endian word (the first 8 bytes of them; 2 or 4 bytes
/// where [`Buckets::WORDS`] calls it, each a single load).
#[inline(always)]
fn word_of<F: Fingerprint>(bucket: &[F]) -> u64 {
    match *slots::as_bytes(bucket) {
        [b0, b1] => u64::from(u16::from_le_bytes([b0, b1])),
        [b0, b1, b2, b3] => u64::from(u32::from_le_bytes([b0, b1, b2, b3])),
        ref bytes => bytes.iter().take(8).rev().fold(0, |w, &b| w << 8 | u64::from(b)),
    }
}

impl<'a, F: Fingerprint, const B: usize> BucketsMut<'a, F, B> {
    /// The view of `f`, whose buckets are `bs` slots; `None` as for [`Buckets::new`].
    #[inline(always)]
    pub(crate) fn new(f: SubFilterMut<'a, F>, bs: usize) -> Option<Self> {
        holds_buckets::<B>(f.mask, bs, f.slots.len()).then_some(Self {
            mask: f.mask,
            bs,
            slots: f.slots,
        })
    }

    /// The same buckets, lent immutably.
    #[inline(always)]
    pub(crate) fn view(&self) -> Buckets<'_, F, B> {
        Buckets { mask: self.mask, bs: self.bs, slots: self.slots }
    }

    /// Whether [`BucketsMut::prefetch_place`] and [`BucketsMut::try_place_key`] apply: both
    /// buckets read as one word ([`Buckets::WORDS`]).
    pub(crate) const KEYED: bool = Buckets::<F, B>::WORDS;

    /// [`Buckets::prefetch`], giving the item's [`Place`] for [`BucketsMut::try_place_key`].
    #[inline(always)]
    pub(crate) fn prefetch_place(&self, l: &Lookup<F>) -> Place<F> {
        // `mask` is a `usize` (`new` checked `mask + 1` fits one).
        let p = Place { i: (l.h1 & self.mask) as usize, j: (l.h2 & self.mask) as usize, fp: l.fp };
        let view = self.view();
        // SAFETY: `p.i`, `p.j` ≤ `mask` (just reduced with it).
        unsafe {
            fetch_first(view.bucket_at(p.i));
            fetch_first(view.bucket_at(p.j));
        }
        p
    }

    /// [`BucketsMut::try_place`] of the item `p` was made of (with [`BucketsMut::KEYED`]):
    /// its indexes not reduced again.
    ///
    /// # Safety
    /// `p.i`, `p.j` ≤ `mask`: `p` is the default [`Place`] or was made by
    /// [`BucketsMut::prefetch_place`] of a view with this view's mask.
    #[inline(always)]
    pub(crate) unsafe fn try_place_key(&mut self, p: &Place<F>) -> bool {
        debug_assert!(Self::KEYED);
        // SAFETY: `p.i`, `p.j` ≤ `mask` (the caller's).
        unsafe { self.place_at(p.i, p.j, p.fp) }
    }

    /// Stores `fp` in the first empty slot of bucket `i`, then of bucket `j` (both reduced),
    /// if one is empty ([`Buckets::matches_at`] finds it, for a constant `B`).
    ///
    /// # Safety
    /// `i`, `j` ≤ `mask`.
    #[inline(always)]
    unsafe fn place_at(&mut self, i: usize, j: usize, fp: F) -> bool {
        // SAFETY: `i`, `j` ≤ `mask` (the caller's).
        let empty = unsafe { self.view().matches_at(i, j, F::EMPTY) };
        if empty == 0 {
            return false;
        }
        // `empty` has bits only in the lanes of the `2B` slots, so `lane` < 2B, and `k` < B
        // either way.
        let lane = (empty.trailing_zeros() / Buckets::<F, B>::LANE) as usize;
        let (b, k) = if lane < B { (i, lane) } else { (j, lane - B) };
        debug_assert!(k < B);
        // SAFETY: `b ≤ mask` and `k < B` (above), so slot `b × B + k` lies within
        // `(mask + 1) × B` = `slots.len()`, as in `Buckets::bucket` (`new` checked the shape;
        // the fields never change); `&mut self` is the only access to the slots.
        unsafe { *self.slots.as_mut_ptr().add(b * B + k) = fp };
        true
    }

    /// The sub-filter, for the work the batched path leaves to it (the kick-out walk).
    #[inline(always)]
    pub(crate) fn sub(&mut self) -> SubFilterMut<'_, F> {
        SubFilterMut { mask: self.mask, slots: self.slots }
    }

    /// [`SubFilterMut::try_place`]: the first empty slot of bucket `h1`, then of `h2`, takes
    /// the fingerprint.
    #[inline(always)]
    pub(crate) fn try_place(&mut self, l: &Lookup<F>) -> bool {
        if B != 0 {
            // Every slot of both buckets tested at once ([`Buckets::matches`]); the lowest set
            // bit is the first empty slot in `find_available`'s order (bucket `h1`'s slots,
            // then `h2`'s), chosen without a branch per slot.
            // `h & mask` ≤ `mask`; the reduced indexes also address the slot stored into.
            let (i, j) = ((l.h1 & self.mask) as usize, (l.h2 & self.mask) as usize);
            // SAFETY: `i`, `j` ≤ `mask` (just reduced).
            return unsafe { self.place_at(i, j, l.fp) };
        }
        let n = self.bs;
        for h in [l.h1, l.h2] {
            let i = (h & self.mask) as usize;
            let start = self.slots.as_mut_ptr().wrapping_add(i * n);
            // SAFETY: as in `Buckets::bucket` (the same checked fields: `start` is in bounds and
            // `n` slots from it too); the slice borrows `slots` mutably, the only access to them
            // while it lives.
            let bucket = unsafe { std::slice::from_raw_parts_mut(start, n) };
            for slot in bucket {
                if *slot == F::EMPTY {
                    *slot = l.fp;
                    return true;
                }
            }
        }
        false
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `matches` (the word test, and the compare per slot) finds the first slot equal to a
    /// value in the order `find_available` and `contains` scan them, and `hits_with` answers
    /// as the two sub-filters asked in turn; for every width, bucket sizes 2 and 4, values
    /// present once, twice, in both buckets, absent, and 0 (the empty slot).
    fn check<F: Fingerprint, const B: usize>(value: impl Fn(usize) -> F) {
        let buckets = 8usize;
        let slots: Vec<F> = (0..buckets * B).map(&value).collect();
        let other: Vec<F> = (0..buckets * B).rev().map(&value).collect();
        let sub = |s: &'static [F]| Buckets::<F, B>::new(SubFilter { mask: 7, slots: s }, B);
        let (f, g) = (sub(slots.leak()).unwrap(), sub(other.leak()).unwrap());
        let candidates: Vec<F> = (0..buckets * B + 3).map(&value).collect();
        for h1 in 0..buckets as u64 {
            for h2 in 0..buckets as u64 {
                for &fp in &candidates {
                    let l = Lookup { h1: h1 + 8, h2: h2 + 16, fp };
                    let scan = |v: &Buckets<F, B>, x: F| {
                        v.bucket(l.h1).iter().chain(v.bucket(l.h2)).position(|&s| s == x)
                    };
                    for x in [fp, F::EMPTY] {
                        let m = f.matches(&l, x);
                        let first =
                            (m != 0).then(|| (m.trailing_zeros() / Buckets::<F, B>::LANE) as usize);
                        assert_eq!(first, scan(&f, x), "{h1} {h2} {x:?}");
                    }
                    let either = scan(&f, fp).is_some() || scan(&g, fp).is_some();
                    assert_eq!(f.hits_with(&g, &l) != 0, either, "{h1} {h2} {fp:?}");
                    let twin = f.twin(g).unwrap();
                    assert_eq!(twin.hits(&l) != 0, either, "twin {h1} {h2} {fp:?}");
                }
            }
        }
    }

    #[test]
    fn word_tests_find_the_first_equal_slot() {
        // Values repeating with a period that is not the bucket size, zeros among them.
        check::<u8, 2>(|i| (i % 7 * 37 % 256) as u8);
        check::<u8, 4>(|i| (i % 11 * 29 % 256) as u8);
        check::<u16, 2>(|i| (i % 7 * 9_001 % 65_536) as u16);
        check::<u16, 4>(|i| (i % 11 * 9_001 % 65_536) as u16);
        check::<u32, 2>(|i| ((i % 7) as u32).wrapping_mul(0x0101_0101));
        check::<u32, 4>(|i| ((i % 11) as u32).wrapping_mul(0x8000_0001));
    }
}
