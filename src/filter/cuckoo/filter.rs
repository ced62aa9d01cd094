//! The cuckoo filter: a chain of sub-filters, with RedisBloom's algorithms step for step
//! (`src/cuckoo.c`), so that the same commands leave the same fingerprints in the same slots.

use super::super::guard::AllocGuard;
use super::CuckooError;
use super::fingerprint::{Fingerprint, Lookup, alt_bucket};
use super::params::{self, CuckooParams, MAX_FILTERS, info_size, sub_filter_buckets};
use super::slots::Slots;

/// One sub-filter: `buckets` (a power of two) buckets of `bucket_size` slots, bucket `b`
/// being slots `[b × bucket_size, (b + 1) × bucket_size)`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SubFilter<F> {
    buckets: u64,
    slots: Slots<F>,
}

impl<F: Fingerprint> SubFilter<F> {
    /// An empty sub-filter. The caller checked that `buckets × bucket_size` slots were admitted.
    fn new(buckets: u64, bucket_size: u16) -> Result<Self, CuckooError> {
        debug_assert!(buckets.is_power_of_two());
        let len = buckets.checked_mul(u64::from(bucket_size)).ok_or(CuckooError::TooLarge)?;
        Ok(Self { buckets, slots: Slots::zeroed(len)? })
    }

    /// Number of buckets.
    pub fn buckets(&self) -> u64 {
        self.buckets
    }

    /// The slots.
    pub fn slots(&self) -> &Slots<F> {
        &self.slots
    }

    /// The slots, mutably (chunk loading).
    pub fn slots_mut(&mut self) -> &mut Slots<F> {
        &mut self.slots
    }

    #[inline(always)]
    fn mask(&self) -> u64 {
        self.buckets - 1
    }

    /// First slot of the bucket of unreduced index `h` (RedisBloom's `SubCF_GetIndex`, without
    /// its 32-bit truncation).
    #[inline(always)]
    fn start(&self, h: u64, bs: usize) -> usize {
        // The bucket is < buckets, and buckets × bs slots exist in memory: no overflow.
        (h & self.mask()) as usize * bs
    }

    #[inline(always)]
    fn bucket(&self, h: u64, bs: usize) -> &[F] {
        let s = self.start(h, bs);
        &self.slots.as_slice()[s..s + bs]
    }

    /// Whether bucket `h1` or `h2` holds the fingerprint (`Filter_Find`).
    ///
    /// Bucket size 2 (the default) compares its two slots directly: `<[u8]>::contains` goes
    /// through `memchr`, whose setup costs more than the four compares.
    #[inline(always)]
    fn contains(&self, l: &Lookup<F>, bs: usize) -> bool {
        if bs == 2 {
            let slots = self.slots.as_slice();
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
    fn count(&self, l: &Lookup<F>, bs: usize) -> u64 {
        let in_bucket = |h| self.bucket(h, bs).iter().filter(|&&s| s == l.fp).count() as u64;
        let (a, b) = (l.h1 & self.mask(), l.h2 & self.mask());
        if a == b { in_bucket(l.h1) } else { in_bucket(l.h1) + in_bucket(l.h2) }
    }

    /// RedisBloom's `subFilterCount` itself, for the golden tests.
    #[cfg(test)]
    pub(crate) fn count_as_redisbloom(&self, l: &Lookup<F>, bs: usize) -> u64 {
        let in_bucket = |h| self.bucket(h, bs).iter().filter(|&&s| s == l.fp).count() as u64;
        in_bucket(l.h1) + in_bucket(l.h2)
    }

    /// Empties the first slot holding the fingerprint, bucket `h1` first (`Filter_Delete`).
    #[inline]
    fn delete(&mut self, l: &Lookup<F>, bs: usize) -> bool {
        for h in [l.h1, l.h2] {
            let s = self.start(h, bs);
            if let Some(slot) =
                self.slots.as_mut_slice()[s..s + bs].iter_mut().find(|x| **x == l.fp)
            {
                *slot = F::EMPTY;
                return true;
            }
        }
        false
    }

    /// Index of the first empty slot, bucket `h1` first (`Filter_FindAvailable`).
    #[inline(always)]
    fn find_available(&self, l: &Lookup<F>, bs: usize) -> Option<usize> {
        if bs == 2 {
            let slots = self.slots.as_slice();
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
            if let Some(i) = self.slots.as_slice()[s..s + bs].iter().position(|&x| x == F::EMPTY) {
                return Some(s + i);
            }
        }
        None
    }

    /// Stores the fingerprint in its first empty slot, if it has one.
    #[inline(always)]
    fn try_place(&mut self, l: &Lookup<F>, bs: usize) -> bool {
        match self.find_available(l, bs) {
            Some(i) => {
                self.slots.as_mut_slice()[i] = l.fp;
                true
            }
            None => false,
        }
    }

    /// Prefetches the cache lines of both buckets of `l`.
    #[inline(always)]
    fn prefetch(&self, l: &Lookup<F>, bs: usize) {
        self.slots.prefetch(self.start(l.h1, bs));
        self.slots.prefetch(self.start(l.h2, bs));
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
    fn kick_out(&mut self, l: &Lookup<F>, bs: usize, max_iterations: u16) -> bool {
        let mask = self.mask();
        let slots = self.slots.as_mut_slice();
        let mut fp = l.fp;
        let mut victim = 0usize;
        let mut b = l.h1 & mask;
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
        debug_assert!(fp == l.fp, "an undone walk ends with the original fingerprint");
        false
    }
}

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
    /// `Size`: RedisBloom's struct sizes plus the slot bytes ([`params::info_size`]).
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

/// Items per block of the batched paths: their buckets are prefetched before any is used.
const BATCH: usize = 16;
/// Sub-filters at least this large are prefetched in batches; smaller ones stay in cache.
const PREFETCH_MIN_BYTES: u64 = 4 << 20;

/// A cuckoo filter with fingerprints of type `F`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Cuckoo<F> {
    /// Buckets of the first sub-filter (a power of two).
    base_buckets: u64,
    items: u64,
    deletes: u64,
    bucket_size: u16,
    max_iterations: u16,
    /// 0 or a power of two ≤ 32768.
    expansion: u16,
    /// Oldest first; never empty.
    filters: Vec<SubFilter<F>>,
}

/// The stored description of a filter, validated: what RDB fields and dump headers hold.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Shape {
    /// Buckets of the first sub-filter.
    pub base_buckets: u64,
    /// Number of sub-filters.
    pub filters: u16,
    /// Fingerprints stored.
    pub items: u64,
    /// Deletes since the last compaction.
    pub deletes: u64,
    /// Slots per bucket.
    pub bucket_size: u16,
    /// Kick-out limit.
    pub max_iterations: u16,
    /// Stored expansion.
    pub expansion: u16,
}

impl Shape {
    /// Checks raw stored values (RDB fields or header fields) and returns the shape, or
    /// `BadData`. Allocates nothing. `slot_bytes` is the bytes of one slot.
    #[allow(clippy::too_many_arguments)]
    pub fn validate(
        filters: u64,
        base_buckets: u64,
        items: u64,
        deletes: u64,
        bucket_size: u64,
        max_iterations: u64,
        expansion: u64,
        slot_bytes: u64,
    ) -> Result<Self, CuckooError> {
        let bad = CuckooError::BadData;
        let filters = u16::try_from(filters).map_err(|_| bad.clone())?;
        let bucket_size = u16::try_from(bucket_size).map_err(|_| bad.clone())?;
        let max_iterations = u16::try_from(max_iterations).map_err(|_| bad.clone())?;
        if filters == 0
            || !base_buckets.is_power_of_two()
            || base_buckets > params::MAX_BUCKETS
            || bucket_size == 0
            || bucket_size > params::MAX_BUCKET_SIZE
            || max_iterations == 0
            || !params::valid_stored_expansion(expansion)
            || (expansion == 0 && filters > 1)
        {
            return Err(bad);
        }
        let shape = Self {
            base_buckets,
            filters,
            items,
            deletes,
            bucket_size,
            max_iterations,
            expansion: expansion as u16,
        };
        let slots = shape.total_slots()?;
        if items > slots {
            return Err(bad);
        }
        slots.checked_mul(slot_bytes).ok_or(bad)?;
        Ok(shape)
    }

    /// Buckets of sub-filter `i`.
    pub fn sub_buckets(&self, i: u16) -> Result<u64, CuckooError> {
        sub_filter_buckets(self.base_buckets, self.expansion, i).ok_or(CuckooError::BadData)
    }

    /// Slots of all sub-filters.
    pub fn total_slots(&self) -> Result<u64, CuckooError> {
        let mut total = 0u64;
        for i in 0..self.filters {
            let slots = self.sub_buckets(i)?.checked_mul(u64::from(self.bucket_size));
            total = slots.and_then(|s| total.checked_add(s)).ok_or(CuckooError::BadData)?;
        }
        Ok(total)
    }
}

impl<F: Fingerprint> Cuckoo<F> {
    /// `CuckooFilter_Init`: one empty sub-filter, after `guard` admitted its size.
    pub fn new(p: &CuckooParams, guard: &dyn AllocGuard) -> Result<Self, CuckooError> {
        let base = p.base_buckets()?;
        let slots = base.checked_mul(u64::from(p.bucket_size)).ok_or(CuckooError::TooLarge)?;
        let bytes = slots.checked_mul(F::BYTES as u64).ok_or(CuckooError::TooLarge)?;
        let size = info_size(1, bytes).ok_or(CuckooError::TooLarge)?;
        guard.admit(size, bytes)?;
        Ok(Self {
            base_buckets: base,
            items: 0,
            deletes: 0,
            bucket_size: p.bucket_size,
            max_iterations: p.max_iterations,
            expansion: p.rounded_expansion(),
            filters: vec![SubFilter::new(base, p.bucket_size)?],
        })
    }

    /// A filter of `shape` with every slot empty, after `guard` admitted its whole size (what
    /// a loaded header or RDB value claims is checked before anything is allocated).
    pub fn allocate(shape: &Shape, guard: &dyn AllocGuard) -> Result<Self, CuckooError> {
        let slots = shape.total_slots()?;
        let bytes = slots.checked_mul(F::BYTES as u64).ok_or(CuckooError::BadData)?;
        let size = info_size(u64::from(shape.filters), bytes).ok_or(CuckooError::BadData)?;
        guard.admit(size, bytes)?;
        let mut filters = Vec::new();
        filters
            .try_reserve_exact(usize::from(shape.filters))
            .map_err(|_| CuckooError::OutOfMemory)?;
        for i in 0..shape.filters {
            filters.push(SubFilter::new(shape.sub_buckets(i)?, shape.bucket_size)?);
        }
        Ok(Self {
            base_buckets: shape.base_buckets,
            items: shape.items,
            deletes: shape.deletes,
            bucket_size: shape.bucket_size,
            max_iterations: shape.max_iterations,
            expansion: shape.expansion,
            filters,
        })
    }

    /// The filter's stored description.
    pub fn shape(&self) -> Shape {
        Shape {
            base_buckets: self.base_buckets,
            filters: self.filters.len() as u16,
            items: self.items,
            deletes: self.deletes,
            bucket_size: self.bucket_size,
            max_iterations: self.max_iterations,
            expansion: self.expansion,
        }
    }

    /// The sub-filters, oldest first.
    pub fn filters(&self) -> &[SubFilter<F>] {
        &self.filters
    }

    /// The sub-filters, mutably (chunk and RDB loading write their slots).
    pub fn filters_mut(&mut self) -> &mut [SubFilter<F>] {
        &mut self.filters
    }

    /// Fingerprints stored.
    pub fn items(&self) -> u64 {
        self.items
    }

    /// Bytes of all slots.
    pub fn slot_bytes(&self) -> u64 {
        self.filters.iter().map(|f| f.slots.byte_len()).sum()
    }

    /// `CF.INFO`'s numbers.
    pub fn info(&self) -> Info {
        Info {
            size: self.memory_usage(),
            buckets: self.base_buckets,
            filters: self.filters.len() as u64,
            items: self.items,
            deletes: self.deletes,
            bucket_size: u64::from(self.bucket_size),
            expansion: u64::from(self.expansion),
            max_iterations: u64::from(self.max_iterations),
            fingerprint_bits: F::BITS,
        }
    }

    /// `CF.INFO Size` and `MEMORY USAGE`: RedisBloom's `CFMemUsage` (40 + 16 per sub-filter +
    /// the slot bytes), in 64-bit arithmetic (#609).
    pub fn memory_usage(&self) -> u64 {
        // Sizes that exist in memory cannot overflow.
        info_size(self.filters.len() as u64, self.slot_bytes()).unwrap_or(u64::MAX)
    }

    /// `CF.MEXISTS` of one item's lookup: any sub-filter holds its fingerprint in one of its
    /// two buckets (`CuckooFilter_Check`).
    #[inline(always)]
    pub fn contains_lookup(&self, l: &Lookup<F>) -> bool {
        let bs = usize::from(self.bucket_size);
        // A plain loop: `Iter::any` with this closure is not inlined, and most filters have
        // one sub-filter.
        for f in &self.filters {
            if f.contains(l, bs) {
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
        let bs = usize::from(self.bucket_size);
        self.filters.iter().map(|f| f.count(&l, bs)).sum()
    }

    /// RedisBloom's own `CuckooFilter_Count` (double-counting a bucket both indexes reduce to).
    #[cfg(test)]
    pub(crate) fn count_as_redisbloom(&self, item: &[u8]) -> u64 {
        let l = Lookup::of(item);
        let bs = usize::from(self.bucket_size);
        self.filters.iter().map(|f| f.count_as_redisbloom(&l, bs)).sum()
    }

    /// `"Maximum expansions reached"`: RedisBloom refuses every insert command into a filter
    /// that has `max_filters` (`cf-max-expansions`) sub-filters, before trying any item.
    pub fn check_can_insert(&self, max_filters: u16) -> Result<(), CuckooError> {
        if self.filters.len() >= usize::from(max_filters) {
            return Err(CuckooError::MaxExpansions);
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
    ) -> Result<Insert, CuckooError> {
        if nx && self.contains_lookup(l) {
            return Ok(Insert::Exists);
        }
        let bs = usize::from(self.bucket_size);
        loop {
            for f in self.filters.iter_mut().rev() {
                if f.try_place(l, bs) {
                    self.items = self.items.saturating_add(1);
                    return Ok(Insert::Inserted);
                }
            }
            let max_iterations = self.max_iterations;
            let last = self.filters.last_mut().ok_or(CuckooError::BadData)?;
            if last.kick_out(l, bs, max_iterations) {
                self.items = self.items.saturating_add(1);
                return Ok(Insert::Inserted);
            }
            if self.expansion == 0 || self.filters.len() >= usize::from(max_filters) {
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
    ) -> Result<Insert, CuckooError> {
        self.check_can_insert(max_filters)?;
        self.insert_lookup(&Lookup::of(item), nx, max_filters, guard)
    }

    /// `CuckooFilter_Grow`: appends sub-filter `n` with `base × expansion^n` buckets.
    fn grow(&mut self, guard: &dyn AllocGuard) -> Result<(), CuckooError> {
        let n = u16::try_from(self.filters.len()).map_err(|_| CuckooError::TooLarge)?;
        if n == MAX_FILTERS {
            return Err(CuckooError::TooLarge);
        }
        let buckets = sub_filter_buckets(self.base_buckets, self.expansion, n)
            .ok_or(CuckooError::TooLarge)?;
        let bytes = buckets
            .checked_mul(u64::from(self.bucket_size))
            .and_then(|s| s.checked_mul(F::BYTES as u64))
            .ok_or(CuckooError::TooLarge)?;
        let after = self.slot_bytes().checked_add(bytes).ok_or(CuckooError::TooLarge)?;
        let size = info_size(u64::from(n) + 1, after).ok_or(CuckooError::TooLarge)?;
        guard.admit(size, bytes)?;
        self.filters.try_reserve(1).map_err(|_| CuckooError::OutOfMemory)?;
        self.filters.push(SubFilter::new(buckets, self.bucket_size)?);
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
        let bs = usize::from(self.bucket_size);
        if !self.filters.iter_mut().rev().any(|f| f.delete(l, bs)) {
            return false;
        }
        self.items = self.items.saturating_sub(1);
        self.deletes = self.deletes.saturating_add(1);
        // C compares the u64 count converted to double with the double product: the same here.
        if self.filters.len() > 1 && (self.deletes as f64) > (self.items as f64) * 0.10 {
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
        let mut i = self.filters.len();
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
        let bs = usize::from(self.bucket_size);
        let (older, rest) = self.filters.split_at_mut(index);
        let current = &mut rest[0];
        let mut emptied = true;
        for bucket in 0..current.buckets {
            for slot in 0..bs {
                let at = bucket as usize * bs + slot;
                let fp = current.slots.as_slice()[at];
                if fp == F::EMPTY {
                    continue;
                }
                // Older sub-filters have fewer buckets, each count dividing this one's, so the
                // bucket index reduces to the fingerprint's buckets there too.
                let l = Lookup::at(bucket, fp);
                if older.iter_mut().any(|f| f.try_place(&l, bs)) {
                    current.slots.as_mut_slice()[at] = F::EMPTY;
                } else {
                    emptied = false;
                }
            }
        }
        if emptied && index == self.filters.len() - 1 {
            self.filters.pop();
        }
        emptied
    }

    /// Whether any sub-filter is large enough for prefetching to pay.
    fn prefetching(&self) -> bool {
        self.filters.iter().any(|f| f.slots.byte_len() >= PREFETCH_MIN_BYTES)
    }

    /// Hashes a block of items and, on large filters, prefetches their buckets.
    fn load_block<T: AsRef<[u8]>>(
        &self,
        items: &[T],
        out: &mut [Lookup<F>; BATCH],
        prefetch: bool,
    ) {
        let bs = usize::from(self.bucket_size);
        for (slot, item) in out.iter_mut().zip(items) {
            *slot = Lookup::of(item.as_ref());
        }
        if prefetch {
            for l in &out[..items.len()] {
                for f in self.filters.iter().rev() {
                    f.prefetch(l, bs);
                }
            }
        }
    }

    /// `CF.MEXISTS`: whether each item is (probably) present, appended to `out` in order.
    /// Blocked: a block's buckets are prefetched before any is read (large filters only).
    pub fn contains_many<T: AsRef<[u8]>>(&self, items: &[T], out: &mut Vec<bool>) {
        let prefetch = self.prefetching();
        if !prefetch {
            // Small filters stay in cache: each item straight through, no block staged.
            out.extend(items.iter().map(|i| self.contains_lookup(&Lookup::of(i.as_ref()))));
            return;
        }
        let mut block = [Lookup::new(0); BATCH];
        for chunk in items.chunks(BATCH) {
            self.load_block(chunk, &mut block, prefetch);
            out.extend(block[..chunk.len()].iter().map(|l| self.contains_lookup(l)));
        }
    }

    /// `CF.INSERT` (`nx` false) / `CF.INSERTNX` (`nx` true): refuses the whole command with
    /// `MaxExpansions` first, like RedisBloom; then inserts each item in order, appending its
    /// outcome to `out` (an item that cannot be inserted gets its error and the next is
    /// tried, as RedisBloom replies an error element and goes on). Same slots as one by one.
    pub fn insert_many<T: AsRef<[u8]>>(
        &mut self,
        items: &[T],
        nx: bool,
        max_filters: u16,
        guard: &dyn AllocGuard,
        out: &mut Vec<Result<Insert, CuckooError>>,
    ) -> Result<(), CuckooError> {
        self.check_can_insert(max_filters)?;
        let prefetch = self.prefetching();
        if !prefetch {
            for item in items {
                out.push(self.insert_lookup(&Lookup::of(item.as_ref()), nx, max_filters, guard));
            }
            return Ok(());
        }
        let mut block = [Lookup::new(0); BATCH];
        for chunk in items.chunks(BATCH) {
            self.load_block(chunk, &mut block, prefetch);
            for l in &block[..chunk.len()] {
                out.push(self.insert_lookup(l, nx, max_filters, guard));
            }
        }
        Ok(())
    }

    /// `CF.DEBUG`'s reply.
    pub fn debug_string(&self) -> String {
        let mut s = format!(
            "bktsize:{} buckets:{} items:{} deletes:{} filters:{} max_iterations:{} expansion:{}",
            self.bucket_size,
            self.base_buckets,
            self.items,
            self.deletes,
            self.filters.len(),
            self.max_iterations,
            self.expansion
        );
        if F::BITS != 8 {
            s.push_str(&format!(" fingerprint:{}", F::BITS));
        }
        s
    }
}
