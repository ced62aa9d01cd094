//! The batched paths of the cuckoo filter: `CF.MEXISTS` ([`FixedWidthCuckoo::contains_many`]) and
//! `CF.INSERT` / `CF.INSERTNX` ([`FixedWidthCuckoo::insert_many`]). The same answers and the same slots
//! as the one-item paths item after item; the sub-filters' views are made once per batch (not
//! per item and sub-filter), and the common bucket size (2) is a constant in the item loop.

use super::shape::buckets_at;
use super::{AllocGuard, FilterError, FixedWidthCuckoo, Insert, SubFilterMut};
use crate::filter::cuckoo::fingerprint::{Fingerprint, Lookup};
use crate::filter::cuckoo::sub::buckets::{Buckets, BucketsMut, Place, Probe, Twin};

/// Where [`FixedWidthCuckoo::insert_many`] puts each item's outcome, in order. A vector of the outcomes
/// is one; the module's reply builder is another (its codes straight from the loop, no
/// vector of `Result`s walked again).
pub trait InsertSink {
    /// The outcome of the next item.
    fn push(&mut self, outcome: Result<Insert, FilterError>);

    /// The outcomes of the next `n` items: each `Ok(Insert::Inserted)`. (The batched loop
    /// counts a run of inserted items and gives them at once, not with a push per item.)
    fn inserted(&mut self, n: usize);
}

impl InsertSink for Vec<Result<Insert, FilterError>> {
    #[inline(always)]
    fn push(&mut self, outcome: Result<Insert, FilterError>) {
        Vec::push(self, outcome);
    }

    fn inserted(&mut self, n: usize) {
        self.extend(std::iter::repeat_n(Ok(Insert::Inserted), n));
    }
}

impl<F: Fingerprint> FixedWidthCuckoo<F> {
    /// Views of every sub-filter with buckets of `B` slots (0: the bucket size at run time),
    /// oldest first, in one vector; `None` if the allocator refuses it (the caller then goes
    /// item by item) or the buckets are not `B` slots.
    fn views<const B: usize>(&self) -> Option<Vec<Buckets<'_, F, B>>> {
        let bs = self.bs();
        let mut views = Vec::new();
        views.try_reserve_exact(self.filter_count()).ok()?;
        for f in self.subs() {
            views.push(Buckets::new(f, bs)?);
        }
        Some(views)
    }

    /// Mutable views of every sub-filter; `None` as for [`FixedWidthCuckoo::views`].
    fn views_mut<const B: usize>(&mut self) -> Option<Vec<BucketsMut<'_, F, B>>> {
        let (bs, base_log2, code) = (self.bs(), self.base_log2, self.expansion_code);
        let count = self.filter_count();
        let mut views = Vec::new();
        views.try_reserve_exact(count).ok()?;
        for (i, s) in self.filters[..count].iter_mut().enumerate() {
            let buckets = buckets_at(base_log2, code, i);
            // SAFETY: as in `sub_mut`: sub-filter `i` < count exists, and every constructor
            // checked that its allocation holds `buckets_at(i) × bucket size` slots.
            let slots = unsafe { s.as_mut_slice_unchecked(buckets as usize * bs) };
            views.push(BucketsMut::new(SubFilterMut { mask: buckets - 1, slots }, bs)?);
        }
        Some(views)
    }

    /// `CF.MEXISTS`: whether each item is (probably) present, appended to `out` in order.
    /// The items go in blocks whose buckets are prefetched before any is read (see
    /// `BLOCK`, 16 items), at every filter size; the bucket size a constant for the common sizes.
    pub fn contains_many<T: AsRef<[u8]>>(&self, items: &[T], out: &mut Vec<bool>) {
        match self.bs() {
            2 => self.contains_run::<2, T>(items, out),
            4 => self.contains_run::<4, T>(items, out),
            _ => self.contains_run::<0, T>(items, out),
        }
    }

    /// [`FixedWidthCuckoo::contains_many`] with buckets of `B` slots (0: the filter's bucket size at
    /// run time). The sub-filters' views are made once for the batch.
    #[inline(always)]
    fn contains_run<const B: usize, T: AsRef<[u8]>>(&self, items: &[T], out: &mut Vec<bool>) {
        // The answers are written into place: no capacity check per item.
        let start = out.len();
        out.resize(start + items.len(), false);
        let answers = &mut out[start..];
        if self.count == 1 {
            if let Some(f) = Buckets::<F, B>::new(self.sub(0), self.bs()) {
                return probe_keyed(&f, items, answers);
            }
        } else if let Some(views) = self.views::<B>() {
            // Every sub-filter asked, their masks ORed and tested once: which one holds a
            // present item is data (a quarter of the bench's items are in the second), and a
            // branch on it mispredicts more than the extra bucket reads cost. Two sub-filters
            // (what a filter that grew once has) held in registers, not read from the vector
            // per item.
            if let [f, g] = views[..] {
                if let Some(t) = f.twin(g) {
                    // Expansion 1: the same indexes in both, reduced once, when prefetching.
                    probe_keyed(&t, items, answers);
                } else {
                    let prefetch = |l: &Lookup<F>| {
                        f.prefetch(l);
                        g.prefetch(l);
                        *l
                    };
                    probe_blocks(items, answers, prefetch, |l| f.hits_with(&g, l) != 0);
                }
            } else {
                let prefetch = |l: &Lookup<F>| {
                    views.iter().for_each(|f| f.prefetch(l));
                    *l
                };
                probe_blocks(items, answers, prefetch, |l| {
                    views.iter().fold(0, |any, f| any | f.hits(l)) != 0
                });
            }
            return;
        }
        // No views (no memory for them): item by item.
        for (found, item) in answers.iter_mut().zip(items) {
            *found = self.contains_lookup(&Lookup::of(item.as_ref()));
        }
    }

    /// `CF.INSERT` (`nx` false) / `CF.INSERTNX` (`nx` true): refuses the whole command with
    /// `MaxExpansions` first, like RedisBloom; then inserts each item in order, giving `out`
    /// its outcome (an item that cannot be inserted gets its error and the next is tried, as
    /// RedisBloom replies an error element and goes on). Same slots as one by one.
    pub fn insert_many<T: AsRef<[u8]>, S: InsertSink>(
        &mut self,
        items: &[T],
        nx: bool,
        max_filters: u16,
        guard: &dyn AllocGuard,
        out: &mut S,
    ) -> Result<(), FilterError> {
        self.check_can_insert(max_filters)?;
        let mut rest = items.iter();
        // The first block of a run: after an item that found no room, one item, so that a
        // full filter (each item failing) does not hash a block of items per item.
        let mut first = BLOCK;
        loop {
            // The sub-filters' views, made once: items go straight in (newest sub-filter
            // first, then the kick-out walk in the newest) until one finds no room; that one
            // takes the general path (growth, or `Full`), and the views are made again. The
            // same steps as `insert_lookup`, in the same order.
            let run = match self.bs() {
                2 => self.insert_fast::<2, T, S>(&mut rest, nx, first, out),
                4 => self.insert_fast::<4, T, S>(&mut rest, nx, first, out),
                _ => self.insert_fast::<0, T, S>(&mut rest, nx, first, out),
            };
            let Some((inserted, pending)) = run else {
                // No memory for the views: item by item.
                for item in rest {
                    out.push(self.insert_lookup(
                        &Lookup::of(item.as_ref()),
                        nx,
                        max_filters,
                        guard,
                    ));
                }
                return Ok(());
            };
            // The same total as one saturating increment per item.
            self.items = self.items.saturating_add(inserted);
            let Some(l) = pending else {
                return Ok(());
            };
            // A failed walk changed nothing, so the general path retries it as the first
            // attempt would, then grows or answers `Full`.
            out.push(self.insert_lookup(&l, nx, max_filters, guard));
            first = 1;
        }
    }

    /// The items of `rest` that find room (see [`insert_run`], whose first block has `first`
    /// items), through views of every sub-filter with buckets of `B` slots (0: the bucket
    /// size at run time): the number inserted and the lookup of the item that found none.
    /// `None`, having taken no item, if the views could not be made.
    #[inline(always)]
    fn insert_fast<'i, const B: usize, T: AsRef<[u8]>, S: InsertSink>(
        &mut self,
        rest: &mut std::slice::Iter<'i, T>,
        nx: bool,
        first: usize,
        out: &mut S,
    ) -> Option<(u64, Option<Lookup<F>>)> {
        let (bs, max_iterations) = (self.bs(), self.max_iterations);
        let walk = Walk { bs, max_iterations, first };
        if self.count == 1 {
            let mut f = BucketsMut::<F, B>::new(self.sub_mut(0), bs)?;
            return Some(insert_run_nx(std::slice::from_mut(&mut f), rest, nx, walk, out));
        }
        let mut views = self.views_mut::<B>()?;
        Some(insert_run_nx(&mut views, rest, nx, walk, out))
    }
}

/// Items per block of the batched paths: a block's lookups are made and both buckets of each
/// in every sub-filter prefetched before the first is probed, so that the probes find their
/// buckets in L1 rather than wait for each in turn. At every filter size: even the bench's
/// 512 KiB filter is mostly outside L1, and its bucket reads were where `CF.MEXISTS` spent
/// its time in a `perf` profile when only sub-filters of 4 MiB and more were prefetched
/// (through the one-item paths).
const BLOCK: usize = 16;

/// The lookups of `items`, a block at a time ([`BLOCK`]), each `prefetch`ed (its buckets in
/// every sub-filter), which gives what `probe` needs of it (the lookup itself, or a
/// [`Probe`] of its reduced indexes); `probe` answers each into `answers` (as long as
/// `items`), in order.
#[inline(always)]
fn probe_blocks<F: Fingerprint, K: Copy + Default, T: AsRef<[u8]>>(
    items: &[T],
    answers: &mut [bool],
    prefetch: impl Fn(&Lookup<F>) -> K,
    probe: impl Fn(&K) -> bool,
) {
    let mut block = [K::default(); BLOCK];
    for (items, answers) in items.chunks(BLOCK).zip(answers.chunks_mut(BLOCK)) {
        for (k, item) in block.iter_mut().zip(items) {
            *k = prefetch(&Lookup::of(item.as_ref()));
        }
        for (found, k) in answers.iter_mut().zip(&block) {
            *found = probe(k);
        }
    }
}

/// What [`probe_keyed`] probes: one sub-filter's buckets, or two sub-filters of one size
/// ([`Twin`]). Each keys its blocks ([`Probe`]: indexes reduced and fingerprint spread when
/// prefetching) where its buckets read as words ([`Keyed::KEYED`]), and keeps the lookups
/// otherwise.
trait Keyed<F: Fingerprint> {
    const KEYED: bool;
    fn prefetch(&self, l: &Lookup<F>);
    fn prefetch_key(&self, l: &Lookup<F>) -> Probe;
    /// # Safety
    /// `p` is the default [`Probe`] or was made by this value's `prefetch_key`.
    unsafe fn hits_key(&self, p: &Probe) -> u64;
    fn hits(&self, l: &Lookup<F>) -> u64;
}

/// Delegates to the methods of the same names ([`Buckets`], [`Twin`]).
macro_rules! keyed {
    ($($t:ident),*) => {$(
        impl<F: Fingerprint, const B: usize> Keyed<F> for $t<'_, F, B> {
            const KEYED: bool = $t::<F, B>::KEYED;
            #[inline(always)]
            fn prefetch(&self, l: &Lookup<F>) {
                $t::prefetch(self, l)
            }
            #[inline(always)]
            fn prefetch_key(&self, l: &Lookup<F>) -> Probe {
                $t::prefetch_key(self, l)
            }
            #[inline(always)]
            unsafe fn hits_key(&self, p: &Probe) -> u64 {
                // SAFETY: the trait method's contract is the inherent one's.
                unsafe { $t::hits_key(self, p) }
            }
            #[inline(always)]
            fn hits(&self, l: &Lookup<F>) -> u64 {
                $t::hits(self, l)
            }
        }
    )*};
}
keyed!(Buckets, Twin);

/// Answers `items` with [`probe_blocks`] over `k`, keyed where `k` keys.
#[inline(always)]
fn probe_keyed<F: Fingerprint, K: Keyed<F>, T: AsRef<[u8]>>(
    k: &K,
    items: &[T],
    answers: &mut [bool],
) {
    if K::KEYED {
        // SAFETY: every probe given to `hits_key` is the default or was made by
        // `k.prefetch_key` (`probe_blocks` probes only what `prefetch` gave).
        let probe = |p: &Probe| unsafe { k.hits_key(p) } != 0;
        probe_blocks(items, answers, |l| k.prefetch_key(l), probe);
    } else {
        let prefetch = |l: &Lookup<F>| {
            k.prefetch(l);
            *l
        };
        probe_blocks(items, answers, prefetch, |l| k.hits(l) != 0);
    }
}

/// What [`insert_run`] needs besides its items: the bucket size and walk length of the
/// kick-out walk, and how many items its first block has.
#[derive(Clone, Copy)]
struct Walk {
    bs: usize,
    max_iterations: u16,
    first: usize,
}

/// [`insert_run`] with `nx` a constant in its item loop, and what a block keeps of each item
/// chosen for it ([`Entry`]).
#[inline(always)]
fn insert_run_nx<'i, const B: usize, F: Fingerprint, T: AsRef<[u8]> + 'i, S: InsertSink>(
    views: &mut [BucketsMut<'_, F, B>],
    rest: &mut std::slice::Iter<'i, T>,
    nx: bool,
    walk: Walk,
    out: &mut S,
) -> (u64, Option<Lookup<F>>) {
    if nx {
        insert_run::<B, Looked<F, true>, F, T, S>(views, rest, walk, out)
    } else if BucketsMut::<F, B>::KEYED {
        insert_run::<B, Place<F>, F, T, S>(views, rest, walk, out)
    } else {
        insert_run::<B, Looked<F, false>, F, T, S>(views, rest, walk, out)
    }
}

/// What [`place`] did with an item.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Placed {
    /// Stored.
    Inserted,
    /// `NX` and already present.
    Exists,
    /// No room in any sub-filter, and the kick-out walk in the newest failed, changing
    /// nothing (the general path takes the item).
    NoRoom,
}

/// Prefetches the buckets an insert of `l` reads: of every sub-filter with `NX` (all are
/// asked whether they hold the item), of the newest alone otherwise (where the item goes
/// unless both its buckets there are full: the older ones are read only then).
#[inline(always)]
fn prefetch_for_insert<const B: usize, const NX: bool, F: Fingerprint>(
    views: &[BucketsMut<'_, F, B>],
    l: &Lookup<F>,
) {
    if NX {
        for f in views {
            f.view().prefetch(l);
        }
    } else if let Some(f) = views.last() {
        f.view().prefetch(l);
    }
}

/// One item of an insert run: `insert_lookup`'s steps short of growth (with `NX` the
/// `Exists` test of every sub-filter; the first empty slot of the newest sub-filter that has
/// one; else the kick-out walk in the newest). Gives no outcome: see [`Tally`].
#[inline(always)]
fn place<const B: usize, const NX: bool, F: Fingerprint>(
    views: &mut [BucketsMut<'_, F, B>],
    l: &Lookup<F>,
    walk: Walk,
) -> Placed {
    // Plain loops over the views: the iterator adapters (`any`, `rev`) are not inlined here.
    if NX {
        // Every sub-filter asked, without a branch on which holds the item (as in
        // `contains_run`).
        let mut hits = 0;
        for f in views.iter() {
            hits |= f.view().hits(l);
        }
        if hits != 0 {
            return Placed::Exists;
        }
    }
    for f in views.iter_mut().rev() {
        if f.try_place(l) {
            return Placed::Inserted;
        }
    }
    let kicked = match views.last_mut() {
        Some(f) => f.sub().kick_out(l.h1, l.fp, walk.bs, walk.max_iterations),
        None => false,
    };
    if kicked { Placed::Inserted } else { Placed::NoRoom }
}

/// The outcomes of an insert run's items, given to the sink in order: the items inserted
/// since the last other outcome are counted (`streak`, a register in the item loop) and
/// given at once ([`InsertSink::inserted`]) before that outcome or at the run's end, not
/// pushed one by one (a load, an increment and a store through the sink per item).
#[derive(Default)]
struct Tally {
    /// Inserted items not yet given to the sink.
    streak: usize,
    /// Inserted items given to the sink.
    given: usize,
}

impl Tally {
    /// Records what [`place`] or [`place_keyed`] did: false if the item found no room (no
    /// outcome given).
    #[inline(always)]
    fn record<S: InsertSink>(&mut self, placed: Placed, out: &mut S) -> bool {
        match placed {
            Placed::Inserted => {
                self.streak += 1;
                true
            }
            Placed::Exists => {
                self.flush(out);
                out.push(Ok(Insert::Exists));
                true
            }
            Placed::NoRoom => false,
        }
    }

    /// Gives the sink the inserted items not yet given.
    #[inline(always)]
    fn flush<S: InsertSink>(&mut self, out: &mut S) {
        if self.streak > 0 {
            out.inserted(self.streak);
            self.given += self.streak;
            self.streak = 0;
        }
    }

    /// Ends the run: every outcome given; the number of items inserted.
    #[inline(always)]
    fn end<S: InsertSink>(mut self, out: &mut S) -> u64 {
        self.flush(out);
        self.given as u64
    }
}

/// What an insert run's block keeps of each item, and how the item is placed: its lookup
/// ([`Looked`]: any views, with or without `NX`), or its [`Place`] in the newest sub-filter
/// (views with [`BucketsMut::KEYED`], without `NX`).
trait Entry<const B: usize, F: Fingerprint>: Copy + Default {
    /// The entries of `items` into `block` (as long), the buckets their placing reads
    /// prefetched.
    fn prefetch<T: AsRef<[u8]>>(views: &[BucketsMut<'_, F, B>], items: &[T], block: &mut [Self]);
    /// [`place`]'s steps for the item (`item`, its argument, read again on rare paths only).
    fn place<T: AsRef<[u8]>>(
        self,
        views: &mut [BucketsMut<'_, F, B>],
        item: &T,
        walk: &Walk,
    ) -> Placed;
    /// The item's lookup (of an item that found no room).
    fn lookup<T: AsRef<[u8]>>(self, item: &T) -> Lookup<F>;
}

/// An item's [`Lookup`] as a block entry, placed by [`place`] (`NX`: asked of every sub-filter
/// first).
#[derive(Clone, Copy)]
struct Looked<F, const NX: bool>(Lookup<F>);

impl<F: Fingerprint, const NX: bool> Default for Looked<F, NX> {
    fn default() -> Self {
        Self(Lookup::new(0))
    }
}

impl<const B: usize, F: Fingerprint, const NX: bool> Entry<B, F> for Looked<F, NX> {
    #[inline(always)]
    fn prefetch<T: AsRef<[u8]>>(views: &[BucketsMut<'_, F, B>], items: &[T], block: &mut [Self]) {
        for (e, item) in block.iter_mut().zip(items) {
            *e = Self(Lookup::of(item.as_ref()));
            prefetch_for_insert::<B, NX, F>(views, &e.0);
        }
    }

    #[inline(always)]
    fn place<T: AsRef<[u8]>>(
        self,
        views: &mut [BucketsMut<'_, F, B>],
        _item: &T,
        walk: &Walk,
    ) -> Placed {
        place::<B, NX, F>(views, &self.0, *walk)
    }

    #[inline(always)]
    fn lookup<T: AsRef<[u8]>>(self, _item: &T) -> Lookup<F> {
        self.0
    }
}

impl<const B: usize, F: Fingerprint> Entry<B, F> for Place<F> {
    #[inline(always)]
    fn prefetch<T: AsRef<[u8]>>(views: &[BucketsMut<'_, F, B>], items: &[T], block: &mut [Self]) {
        if let Some(newest) = views.last() {
            for (p, item) in block.iter_mut().zip(items) {
                *p = newest.prefetch_place(&Lookup::of(item.as_ref()));
            }
        }
    }

    #[inline(always)]
    fn place<T: AsRef<[u8]>>(
        self,
        views: &mut [BucketsMut<'_, F, B>],
        item: &T,
        walk: &Walk,
    ) -> Placed {
        place_keyed::<B, F, T>(views, &self, item, walk)
    }

    #[inline(always)]
    fn lookup<T: AsRef<[u8]>>(self, item: &T) -> Lookup<F> {
        Lookup::of(item.as_ref())
    }
}

/// Inserts items from `rest` into the sub-filters `views` (oldest first, at least one) while
/// each finds room ([`Entry::place`]), in blocks whose entries are made and buckets
/// prefetched ([`Entry::prefetch`]) first. Returns the number inserted and the lookup of the
/// item that found no room, if one did (its outcome not yet given).
#[inline(always)]
fn insert_run<
    'i,
    const B: usize,
    E: Entry<B, F>,
    F: Fingerprint,
    T: AsRef<[u8]> + 'i,
    S: InsertSink,
>(
    views: &mut [BucketsMut<'_, F, B>],
    rest: &mut std::slice::Iter<'i, T>,
    walk: Walk,
    out: &mut S,
) -> (u64, Option<Lookup<F>>) {
    let mut tally = Tally::default();
    let mut block = [E::default(); BLOCK];
    let mut size = walk.first.clamp(1, BLOCK);
    loop {
        // A block's entries made and their buckets prefetched (as `probe_blocks` does); the
        // items then go in one by one, in order. `rest` moves past the block after it, or
        // just past an item that finds no room.
        let all = rest.as_slice();
        let next = &all[..all.len().min(size)];
        size = BLOCK;
        if next.is_empty() {
            return (tally.end(out), None);
        }
        E::prefetch(views, next, &mut block);
        for (k, e) in block[..next.len()].iter().enumerate() {
            // The item's argument is read again only on rare paths (`place_keyed`).
            let item = &next[k];
            if !tally.record(e.place(views, item, &walk), out) {
                // `k` < `next.len()` ≤ `all.len()`: the range exists.
                *rest = all.get(k + 1..).unwrap_or_default().iter();
                return (tally.end(out), Some(e.lookup(item)));
            }
        }
        *rest = all[next.len()..].iter();
    }
}

/// [`place`] without `NX` of the item `item`, whose [`Place`] `p` in the newest sub-filter
/// (the last view) was made by its [`BucketsMut::prefetch_place`]: the first empty slot of
/// its buckets there, else of an older sub-filter's (newest first), else the kick-out walk
/// in the newest. Only the first step, the usual one, reads `p`; the others (both buckets of
/// the newest full) hash the item again for its lookup.
#[inline(always)]
fn place_keyed<const B: usize, F: Fingerprint, T: AsRef<[u8]>>(
    views: &mut [BucketsMut<'_, F, B>],
    p: &Place<F>,
    item: &T,
    walk: &Walk,
) -> Placed {
    let Some((newest, older)) = views.split_last_mut() else {
        return Placed::NoRoom;
    };
    // SAFETY: `p` was made by `prefetch_place` of this view, the newest (`Place`'s
    // `Entry::prefetch` makes every block entry with `views.last()`, and the views do not
    // change during a run).
    if unsafe { newest.try_place_key(p) } {
        return Placed::Inserted;
    }
    // The item's bytes are read only here (an argument's are a call into Redis).
    place_slow(newest, older, &Lookup::of(item.as_ref()), walk)
}

/// The steps of [`place_keyed`] after the newest sub-filter's buckets were found full: the
/// older sub-filters, newest first, then the kick-out walk in the newest. Out of line: rare.
#[inline(never)]
fn place_slow<const B: usize, F: Fingerprint>(
    newest: &mut BucketsMut<'_, F, B>,
    older: &mut [BucketsMut<'_, F, B>],
    l: &Lookup<F>,
    walk: &Walk,
) -> Placed {
    for f in older.iter_mut().rev() {
        if f.try_place(l) {
            return Placed::Inserted;
        }
    }
    if newest.sub().kick_out(l.h1, l.fp, walk.bs, walk.max_iterations) {
        Placed::Inserted
    } else {
        Placed::NoRoom
    }
}
