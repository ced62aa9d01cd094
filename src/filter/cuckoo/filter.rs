//! The cuckoo filter: a chain of sub-filters, with RedisBloom's algorithms step for step
//! (`src/cuckoo.c`), so that the same commands leave the same fingerprints in the same slots.

use super::fingerprint::{Fingerprint, Lookup};
use super::params::{CuckooParams, info_size};
use super::slots::Slots;
pub use super::sub::{SubFilter, SubFilterMut};
use crate::filter::FilterError;
use crate::filter::guard::AllocGuard;
use crate::filter::mem;

mod batch;
mod shape;
mod stats;
pub use batch::InsertSink;
pub use shape::Shape;
use shape::{buckets_at, slots_of};
pub use stats::{CuckooStats, full_load};

/// What an insert did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Insert {
    /// The fingerprint was stored (reply 1 / true).
    Inserted,
    /// `CF.ADDNX`/`CF.INSERTNX`: already present, nothing stored (reply 0 / false).
    Exists,
    /// No room and no growth allowed: nothing changed (`Filter is full`, or -1 in `CF.INSERT`).
    Full,
}

/// What `CF.INFO` reports (and `CF.DEBUG`, with the same numbers).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Info {
    /// `Size`: RedisBloom's struct sizes plus the slot bytes ([`info_size`]).
    pub size: u64,
    /// `Number of buckets`: the first sub-filter's.
    pub buckets: u64,
    /// `Number of filters`.
    pub filters: u64,
    /// `Number of items inserted`: fingerprints stored (adds minus deletes).
    pub items: u64,
    /// `Number of items deleted`: deletes since the last compaction.
    pub deletes: u64,
    /// `Bucket size`.
    pub bucket_size: u64,
    /// `Expansion rate` (rounded up to a power of two).
    pub expansion: u64,
    /// `Max iterations`.
    pub max_iterations: u64,
    /// Fingerprint bits (8 unless made with `FINGERPRINT`).
    pub fingerprint_bits: u32,
}

/// A cuckoo filter whose fingerprints have one width, fixed by their type `F` (8, 16 or 32
/// bits); [`CuckooFilter`](super::CuckooFilter) holds one of any width.
///
/// 40 bytes (48 with the width's tag in [`CuckooFilter`](super::CuckooFilter)), and one
/// 16-byte allocation per sub-filter besides its slots: what RedisBloom's `CuckooFilter`
/// (48) and `SubCF` array (16 per sub-filter) cost, so that many small filters take no more
/// memory than RedisBloom's. Every number a sub-filter has is derived from the shape: its
/// buckets are `base × expansion^i`, its slots `buckets × bucket size`.
#[derive(Debug, Clone)]
pub struct FixedWidthCuckoo<F> {
    /// The slot allocations, oldest first: the first `count` are the sub-filters; any after
    /// them hold nothing (left by compaction, reused by growth).
    filters: Box<[Slots<F>]>,
    /// Fingerprints counted, read through [`FixedWidthCuckoo::items`]: above the slots only after a
    /// forged value (see there).
    items: u64,
    deletes: u64,
    max_iterations: u16,
    /// Number of sub-filters, ≥ 1.
    count: u16,
    /// Slots per bucket, 1..=255.
    bucket_size: u8,
    /// log2 of the first sub-filter's buckets (≤ 55).
    base_log2: u8,
    /// 0 for expansion 0, else log2(expansion) + 1 (expansion is 0 or a power of two).
    expansion_code: u8,
    /// The owner's mark ([`FixedWidthCuckoo::marked`]): not part of the filter.
    mark: bool,
}

impl<F: Fingerprint> PartialEq for FixedWidthCuckoo<F> {
    /// Same shape, same slots and same mark (spare allocations are not compared).
    fn eq(&self, other: &Self) -> bool {
        self.shape() == other.shape()
            && self.mark == other.mark
            && self.subs().zip(other.subs()).all(|(a, b)| a.slots() == b.slots())
    }
}

impl<F: Fingerprint> Eq for FixedWidthCuckoo<F> {}

/// `[value]` as a boxed slice in one allocation of exactly one entry: what
/// `Vec::try_reserve_exact(1)`, `push` and `into_boxed_slice` make, without the vector's
/// general growth path (a filter's creation is a hot path when many small filters are made).
/// `OutOfMemory` if the allocator refuses (never an abort).
fn boxed_one<T>(value: T) -> Result<Box<[T]>, FilterError> {
    let layout = std::alloc::Layout::new::<T>();
    if layout.size() == 0 {
        return Ok(Box::new([value]));
    }
    // SAFETY: `layout` has a non-zero size. A non-null result is an allocation of `layout`
    // from the global allocator, aligned for `T` and large enough for one, which `write`
    // initialises. A `Box<[T]>` of length 1 frees with `Layout::array::<T>(1)`, which is
    // `layout` (the same size and alignment), through the same global allocator.
    unsafe {
        let ptr = std::alloc::alloc(layout).cast::<T>();
        if ptr.is_null() {
            return Err(FilterError::OutOfMemory);
        }
        ptr.write(value);
        Ok(Box::from_raw(std::ptr::slice_from_raw_parts_mut(ptr, 1)))
    }
}

impl<F: Fingerprint> FixedWidthCuckoo<F> {
    /// `CuckooFilter_Init`: one empty sub-filter, after `guard` admitted its size.
    pub fn new(p: &CuckooParams, guard: &dyn AllocGuard) -> Result<Self, FilterError> {
        let base = p.base_buckets()?;
        let slots = base.checked_mul(u64::from(p.bucket_size)).ok_or(FilterError::TooLarge)?;
        let bytes = slots.checked_mul(F::BYTES as u64).ok_or(FilterError::TooLarge)?;
        let size = info_size(1, bytes).ok_or(FilterError::TooLarge)?;
        guard.admit(size, bytes)?;
        let filters = boxed_one(Slots::zeroed(slots)?)?;
        // `assemble`'s checks, made directly (one sub-filter of `base` buckets, no shape to
        // walk): the same errors, the same filter. `base_buckets` is a power of two and the
        // rounded expansion 0 or one, so only the allocation's check can fail in practice.
        let bad = FilterError::BadData;
        let bucket_size = u8::try_from(p.bucket_size).map_err(|_| bad.clone())?;
        let expansion = p.rounded_expansion();
        let len = usize::try_from(slots).map_err(|_| bad.clone())?;
        if !base.is_power_of_two()
            || (expansion != 0 && !expansion.is_power_of_two())
            || !filters.first().is_some_and(|s| s.holds(len))
        {
            return Err(bad);
        }
        // What `sub` relies on, as `assemble` checks it: sub-filter 0's allocation holds
        // `buckets_at(base_log2, code, 0) × bucket size` = `base × bucket size` = `len` slots.
        Ok(Self {
            filters,
            items: 0,
            deletes: 0,
            max_iterations: p.max_iterations,
            count: 1,
            bucket_size,
            base_log2: base.trailing_zeros() as u8,
            expansion_code: if expansion == 0 { 0 } else { expansion.trailing_zeros() as u8 + 1 },
            mark: false,
        })
    }

    /// The filter of `shape` over `filters` (one allocation per sub-filter, each holding its
    /// slots). `filters` has exactly its capacity, so it becomes the boxed slice in place.
    fn assemble(shape: &Shape, filters: Vec<Slots<F>>) -> Result<Self, FilterError> {
        let bad = FilterError::BadData;
        let bucket_size = u8::try_from(shape.bucket_size).map_err(|_| bad.clone())?;
        if !shape.base_buckets.is_power_of_two()
            || (shape.expansion != 0 && !shape.expansion.is_power_of_two())
            || filters.len() != usize::from(shape.filters)
        {
            return Err(bad);
        }
        let expansion_code =
            if shape.expansion == 0 { 0 } else { shape.expansion.trailing_zeros() as u8 + 1 };
        let base_log2 = shape.base_buckets.trailing_zeros() as u8;
        // What `sub` relies on: each allocation holds its sub-filter's slots.
        for (i, s) in filters.iter().enumerate() {
            let buckets = shape.sub_buckets(i as u16)?;
            let len = buckets.checked_mul(u64::from(bucket_size));
            let len = len.and_then(|n| usize::try_from(n).ok()).ok_or(bad.clone())?;
            if buckets_at(base_log2, expansion_code, i) != buckets || !s.holds(len) {
                return Err(bad);
            }
        }
        Ok(Self {
            filters: filters.into_boxed_slice(),
            items: shape.items,
            deletes: shape.deletes,
            max_iterations: shape.max_iterations,
            count: shape.filters,
            bucket_size,
            base_log2,
            expansion_code,
            mark: false,
        })
    }

    /// The owner's mark: a flag kept with the filter and nothing else (not saved, dumped or
    /// digested; the module marks a filter a `CF.LOADCHUNK` header made). Kept here because
    /// the filter's padding holds it for free.
    pub fn marked(&self) -> bool {
        self.mark
    }

    /// Sets the owner's mark.
    pub fn set_mark(&mut self, mark: bool) {
        self.mark = mark;
    }

    /// Slots per bucket.
    #[inline(always)]
    fn bs(&self) -> usize {
        usize::from(self.bucket_size)
    }

    /// The stored expansion: 0 or a power of two.
    fn expansion(&self) -> u16 {
        if self.expansion_code == 0 { 0 } else { 1 << (self.expansion_code - 1) }
    }

    /// Buckets of the first sub-filter.
    fn base_buckets(&self) -> u64 {
        1 << self.base_log2
    }

    /// Buckets of sub-filter `i` < count: `base × expansion^i`. It exists in memory, so the
    /// shift is below 64.
    #[inline(always)]
    fn buckets_of(&self, i: usize) -> u64 {
        buckets_at(self.base_log2, self.expansion_code, i)
    }

    /// Lets `mv` move every allocation of the filter (active defragmentation): the slice of
    /// allocation entries, then each sub-filter's slots. The filter is unchanged: the same
    /// slots at new addresses.
    ///
    /// # Safety
    /// `mv` must keep the contract of [`mem::Mover`].
    pub unsafe fn relocate(&mut self, mv: &mut mem::Mover<'_>) {
        // SAFETY: the caller's contract on `mv`, which both calls require.
        unsafe {
            mem::relocate_boxed_slice(&mut self.filters, mv);
            for s in self.filters.iter_mut() {
                s.relocate(mv);
            }
        }
    }

    /// Number of sub-filters.
    #[inline(always)]
    pub fn filter_count(&self) -> usize {
        usize::from(self.count)
    }

    /// Sub-filter `i` (< [`FixedWidthCuckoo::filter_count`]; panics otherwise).
    #[inline(always)]
    pub fn sub(&self, i: usize) -> SubFilter<'_, F> {
        assert!(i < self.filter_count(), "sub-filter {i} of {}", self.count);
        let buckets = self.buckets_of(i);
        let len = buckets as usize * self.bs();
        // SAFETY: sub-filter `i` exists, and every constructor (`assemble`, `grow`) checked
        // that its allocation holds `buckets_of(i) × bucket size` slots; nothing else replaces
        // the allocation of a live sub-filter.
        SubFilter { mask: buckets - 1, slots: unsafe { self.filters[i].as_slice_unchecked(len) } }
    }

    /// Sub-filter `i` (< [`FixedWidthCuckoo::filter_count`]; panics otherwise), mutably.
    #[inline(always)]
    pub fn sub_mut(&mut self, i: usize) -> SubFilterMut<'_, F> {
        assert!(i < self.filter_count(), "sub-filter {i} of {}", self.count);
        let buckets = self.buckets_of(i);
        let len = buckets as usize * self.bs();
        // SAFETY: as in `sub`.
        let slots = unsafe { self.filters[i].as_mut_slice_unchecked(len) };
        SubFilterMut { mask: buckets - 1, slots }
    }

    /// The sub-filters, oldest first.
    pub fn subs(&self) -> impl DoubleEndedIterator<Item = SubFilter<'_, F>> + '_ {
        (0..self.filter_count()).map(|i| self.sub(i))
    }

    /// A filter of `shape` with every slot empty, after `guard` admitted its whole size (what
    /// a loaded header or RDB value claims is checked before anything is allocated).
    pub fn allocate(shape: &Shape, guard: &dyn AllocGuard) -> Result<Self, FilterError> {
        let slots = shape.total_slots()?;
        let bytes = slots.checked_mul(F::BYTES as u64).ok_or(FilterError::BadData)?;
        let size = info_size(u64::from(shape.filters), bytes).ok_or(FilterError::BadData)?;
        guard.admit(size, bytes)?;
        let mut filters = Vec::new();
        filters
            .try_reserve_exact(usize::from(shape.filters))
            .map_err(|_| FilterError::OutOfMemory)?;
        for i in 0..shape.filters {
            let len = shape.sub_buckets(i)?.checked_mul(u64::from(shape.bucket_size));
            filters.push(Slots::zeroed(len.ok_or(FilterError::BadData)?)?);
        }
        Self::assemble(shape, filters)
    }

    /// The filter's stored description.
    pub fn shape(&self) -> Shape {
        Shape {
            base_buckets: self.base_buckets(),
            filters: self.count,
            items: self.items(),
            deletes: self.deletes,
            bucket_size: u16::from(self.bucket_size),
            max_iterations: self.max_iterations,
            expansion: self.expansion(),
        }
    }

    /// Fingerprints stored: the count, at most the slots.
    ///
    /// The loaders refuse a count above the slots but trust it (the slots are not counted),
    /// so a value forged at that bound over empty slots passes it at its next insert, and a
    /// compaction that frees a sub-filter lowers the bound under a count it does not change:
    /// saved as is, the value would be refused by the same loader (`DEBUG RELOAD` and a restart
    /// abort Redis). A true count never passes the slots (each fingerprint counted holds one).
    /// The clamp is here, not on every insert (callgrind: 6 to 13 instructions
    /// more per `CF.ADD` with it there; as it is, none on inserts and 4 per `CF.DEL`):
    /// everything that reads the count (`CF.INFO`, the saved value and the dump header, the
    /// digest, equality, the compaction threshold) reads it through this, and what raises the
    /// bound (growth) or builds on the count (a delete) stores the clamped value first, so the
    /// filter behaves as a function of what it saves: a replica or a restarted server that
    /// loaded it answers every later command the same.
    pub fn items(&self) -> u64 {
        self.items.min(self.slot_count())
    }

    /// Slots of all sub-filters: the loaders' bound on the item count ([`slots_of`]).
    #[inline]
    fn slot_count(&self) -> u64 {
        slots_of(self.base_log2, self.expansion_code, self.count, self.bucket_size)
    }

    /// Bytes of all slots.
    pub fn slot_bytes(&self) -> u64 {
        self.subs().map(|f| f.byte_len()).sum()
    }

    /// `CF.INFO`'s numbers.
    pub fn info(&self) -> Info {
        Info {
            size: self.memory_usage(),
            buckets: self.base_buckets(),
            filters: u64::from(self.count),
            items: self.items(),
            deletes: self.deletes,
            bucket_size: u64::from(self.bucket_size),
            expansion: u64::from(self.expansion()),
            max_iterations: u64::from(self.max_iterations),
            fingerprint_bits: F::BITS,
        }
    }

    /// `CF.INFO Size` and `MEMORY USAGE`: RedisBloom's `CFMemUsage` (40 + 16 per sub-filter +
    /// the slot bytes), in 64-bit arithmetic (#609).
    pub fn memory_usage(&self) -> u64 {
        // Sizes that exist in memory cannot overflow.
        info_size(u64::from(self.count), self.slot_bytes()).unwrap_or(u64::MAX)
    }

    /// `CF.MEXISTS` of one item's lookup: any sub-filter holds its fingerprint in one of its
    /// two buckets (`CuckooFilter_Check`).
    #[inline(always)]
    pub fn contains_lookup(&self, l: &Lookup<F>) -> bool {
        let bs = self.bs();
        // A plain loop: `Iter::any` with this closure is not inlined, and most filters have
        // one sub-filter.
        for i in 0..self.filter_count() {
            if self.sub(i).contains(l, bs) {
                return true;
            }
        }
        false
    }

    /// Whether `item` is (probably) present.
    pub fn contains(&self, item: &[u8]) -> bool {
        self.contains_lookup(&Lookup::of(item))
    }

    /// `CF.COUNT`: copies of the item's fingerprint in its buckets of every sub-filter.
    pub fn count(&self, item: &[u8]) -> u64 {
        let l = Lookup::of(item);
        let bs = self.bs();
        self.subs().map(|f| f.count(&l, bs)).sum()
    }

    /// RedisBloom's own `CuckooFilter_Count` (double-counting a bucket both indexes reduce to).
    #[cfg(test)]
    pub(crate) fn count_as_redisbloom(&self, item: &[u8]) -> u64 {
        let l = Lookup::of(item);
        let bs = self.bs();
        self.subs().map(|f| f.count_as_redisbloom(&l, bs)).sum()
    }

    /// `"Maximum expansions reached"`: RedisBloom refuses every insert command into a filter
    /// that has `max_filters` (`cf-max-expansions`) sub-filters, before trying any item.
    pub fn check_can_insert(&self, max_filters: u16) -> Result<(), FilterError> {
        if self.count >= max_filters {
            return Err(FilterError::MaxExpansions);
        }
        Ok(())
    }

    /// Inserts one item's lookup (`CuckooFilter_Insert`, or `CuckooFilter_InsertUnique` when
    /// `nx`): newest sub-filter first, the first empty slot of bucket `h1`, then `h2`; else a
    /// kick-out walk in the newest sub-filter; else, if the filter may grow (expansion > 0,
    /// fewer than `max_filters` sub-filters, `guard` admits the size), a new sub-filter
    /// `expansion` times larger, which takes the item. `Full` and errors change nothing.
    ///
    /// The one difference from RedisBloom: it checks `cf-max-expansions` only before a
    /// command, so one `CF.INSERT` can grow a filter past it; here growth stops there.
    pub fn insert_lookup(
        &mut self,
        l: &Lookup<F>,
        nx: bool,
        max_filters: u16,
        guard: &dyn AllocGuard,
    ) -> Result<Insert, FilterError> {
        if nx && self.contains_lookup(l) {
            return Ok(Insert::Exists);
        }
        let bs = self.bs();
        loop {
            for i in (0..self.filter_count()).rev() {
                if self.sub_mut(i).try_place(l, bs) {
                    self.items = self.items.saturating_add(1);
                    return Ok(Insert::Inserted);
                }
            }
            let max_iterations = self.max_iterations;
            let last = self.filter_count() - 1;
            if self.sub_mut(last).kick_out(l.h1, l.fp, bs, max_iterations) {
                self.items = self.items.saturating_add(1);
                return Ok(Insert::Inserted);
            }
            if self.expansion_code == 0 || self.count >= max_filters {
                return Ok(Insert::Full);
            }
            self.grow(guard)?;
        }
    }

    /// `CF.ADD` (`nx` false) or `CF.ADDNX` (`nx` true) of one item, after the
    /// max-expansions check of the command.
    pub fn add(
        &mut self,
        item: &[u8],
        nx: bool,
        max_filters: u16,
        guard: &dyn AllocGuard,
    ) -> Result<Insert, FilterError> {
        self.check_can_insert(max_filters)?;
        let l = Lookup::of(item);
        if let (false, Some(newest)) = (nx, self.filter_count().checked_sub(1)) {
            // `insert_lookup`'s first step, inline: the newest sub-filter's buckets (the
            // usual case, and always a new filter's). A failed try changes nothing, so the
            // general path may repeat it.
            let bs = self.bs();
            if self.sub_mut(newest).try_place(&l, bs) {
                self.items = self.items.saturating_add(1);
                return Ok(Insert::Inserted);
            }
        }
        self.insert_lookup(&l, nx, max_filters, guard)
    }

    /// `CuckooFilter_Grow`: appends sub-filter `n` with `base × expansion^n` buckets.
    fn grow(&mut self, guard: &dyn AllocGuard) -> Result<(), FilterError> {
        let (buckets, len) = self.admit_growth(guard)?;
        let slots = Slots::zeroed(len)?;
        let n = usize::from(self.count);
        // What `sub` relies on (see `assemble`).
        if buckets_at(self.base_log2, self.expansion_code, n) != buckets
            || !usize::try_from(len).is_ok_and(|len| slots.holds(len))
        {
            return Err(FilterError::TooLarge);
        }
        if n == self.filters.len() {
            // One more allocation entry: the old ones move into a slice one longer.
            let mut grown = Vec::new();
            grown.try_reserve_exact(n + 1).map_err(|_| FilterError::OutOfMemory)?;
            grown.extend(std::mem::take(&mut self.filters).into_vec());
            grown.push(slots);
            self.filters = grown.into_boxed_slice();
        } else {
            self.filters[n] = slots;
        }
        // The bound rises: the count is clamped to the old one first (see `items`).
        self.items = self.items();
        self.count += 1;
        Ok(())
    }

    /// `CF.DEL` of one lookup (`CuckooFilter_Delete`): the first copy of the fingerprint in
    /// the item's buckets, newest sub-filter first. Afterwards, as RedisBloom does, a filter
    /// with several sub-filters compacts itself (stopping at the first sub-filter that cannot
    /// be emptied) once deletes exceed 10% of the items.
    ///
    /// Newest first is what keeps deletes of added items exact across sub-filters of
    /// different sizes: two items share a bucket pair in a sub-filter only if they share it
    /// in every older (smaller, dividing) one too, so the copy taken is always one the
    /// deleted item may own (RedisBloom #259/#260 was oldest first).
    pub fn delete_lookup(&mut self, l: &Lookup<F>) -> bool {
        let bs = self.bs();
        if !(0..self.filter_count()).rev().any(|i| self.sub_mut(i).delete(l, bs)) {
            return false;
        }
        // From the clamped count (`items`): what a reload of the filter would count. A count
        // within the newest sub-filter's slots (at most all of them) needs no clamp.
        let newest = self.buckets_of(self.filter_count() - 1) * u64::from(self.bucket_size);
        let items = if self.items <= newest { self.items } else { self.items() };
        self.items = items.saturating_sub(1);
        self.deletes = self.deletes.saturating_add(1);
        // C compares the u64 count converted to double with the double product: the same here.
        if self.count > 1 && (self.deletes as f64) > (self.items as f64) * 0.10 {
            self.compact(false);
        }
        true
    }

    /// `CF.DEL` of one item.
    pub fn delete(&mut self, item: &[u8]) -> bool {
        self.delete_lookup(&Lookup::of(item))
    }

    /// `CuckooFilter_Compact`: from the newest sub-filter down to the second, move every
    /// fingerprint to the first empty slot of its buckets in the oldest sub-filter that has
    /// one; a newest sub-filter left empty is freed. `cont` false (the automatic compaction
    /// of deletes) stops at the first sub-filter that keeps a fingerprint; true (`CF.COMPACT`)
    /// goes on. The delete count restarts at 0.
    pub fn compact(&mut self, cont: bool) {
        let mut i = self.filter_count();
        while i > 1 {
            i -= 1;
            if !self.compact_single(i) && !cont {
                break;
            }
        }
        self.deletes = 0;
    }

    /// `CuckooFilter_CompactSingle` of sub-filter `index`: whether it was emptied.
    fn compact_single(&mut self, index: usize) -> bool {
        let bs = self.bs();
        let (base_log2, code) = (self.base_log2, self.expansion_code);
        let buckets = self.buckets_of(index);
        let (older, rest) = self.filters.split_at_mut(index);
        let current = rest[0].as_mut_slice(buckets as usize * bs);
        let mut emptied = true;
        for bucket in 0..buckets {
            for slot in 0..bs {
                let at = bucket as usize * bs + slot;
                let fp = current[at];
                if fp == F::EMPTY {
                    continue;
                }
                // Older sub-filters have fewer buckets, each count dividing this one's, so the
                // bucket index reduces to the fingerprint's buckets there too.
                let l = Lookup::at(bucket, fp);
                let placed = older.iter_mut().enumerate().any(|(j, s)| {
                    let b = buckets_at(base_log2, code, j);
                    SubFilterMut { mask: b - 1, slots: s.as_mut_slice(b as usize * bs) }
                        .try_place(&l, bs)
                });
                if placed {
                    current[at] = F::EMPTY;
                } else {
                    emptied = false;
                }
            }
        }
        if emptied && index == self.filter_count() - 1 {
            // The allocation is freed; its entry stays, empty, for a later growth.
            self.filters[index] = Slots::default();
            self.count -= 1;
        }
        emptied
    }

    /// `CF.DEBUG`'s reply.
    pub fn debug_string(&self) -> String {
        let mut s = format!(
            "bktsize:{} buckets:{} items:{} deletes:{} filters:{} max_iterations:{} expansion:{}",
            self.bucket_size,
            self.base_buckets(),
            self.items(),
            self.deletes,
            self.count,
            self.max_iterations,
            self.expansion()
        );
        if F::BITS != 8 {
            s.push_str(&format!(" fingerprint:{}", F::BITS));
        }
        s
    }
}
