//! The batched paths of the cuckoo filter: `CF.MEXISTS` ([`Cuckoo::contains_many`]) and
//! `CF.INSERT` / `CF.INSERTNX` ([`Cuckoo::insert_many`]). The same answers and the same slots
//! as the one-item paths item after item; the sub-filters' views are made once per batch (not
//! per item and sub-filter), and the common bucket size (2) is a constant in the item loop.

use super::super::fingerprint::{Fingerprint, Lookup};
use super::{AllocGuard, Cuckoo, CuckooError, Insert, SubFilter, SubFilterMut, buckets_at};

/// Items per block of the prefetching paths: their buckets are prefetched before any is used.
const BATCH: usize = 16;
/// Sub-filters at least this large are prefetched in batches; smaller ones stay in cache.
const PREFETCH_MIN_BYTES: u64 = 4 << 20;

/// Where [`Cuckoo::insert_many`] puts each item's outcome, in order. A vector of the outcomes
/// is one; the module's reply builder is another (its codes straight from the loop, no
/// vector of `Result`s walked again).
pub trait InsertSink {
    /// The outcome of the next item.
    fn push(&mut self, outcome: Result<Insert, CuckooError>);
}

impl InsertSink for Vec<Result<Insert, CuckooError>> {
    #[inline(always)]
    fn push(&mut self, outcome: Result<Insert, CuckooError>) {
        Vec::push(self, outcome);
    }
}

/// Runs `body` with the bucket size `bs`, as a constant for the common sizes (2, RedisBloom's
/// default, and 4) so that the bucket arithmetic and the slot compares fold, else as is.
#[inline(always)]
fn with_bucket_size<R>(bs: usize, mut body: impl FnMut(usize) -> R) -> R {
    match bs {
        2 => body(2),
        4 => body(4),
        _ => body(bs),
    }
}

impl<F: Fingerprint> Cuckoo<F> {
    /// Whether any sub-filter is large enough for prefetching to pay.
    fn prefetching(&self) -> bool {
        self.subs().any(|f| f.byte_len() >= PREFETCH_MIN_BYTES)
    }

    /// Views of every sub-filter, oldest first, in one vector; `None` if the allocator refuses
    /// it (the caller then goes item by item).
    fn views(&self) -> Option<Vec<SubFilter<'_, F>>> {
        let mut views = Vec::new();
        views.try_reserve_exact(self.filter_count()).ok()?;
        views.extend(self.subs());
        Some(views)
    }

    /// Mutable views of every sub-filter, oldest first; `None` as for [`Cuckoo::views`].
    fn views_mut(&mut self) -> Option<Vec<SubFilterMut<'_, F>>> {
        let (bs, base_log2, code) = (self.bs(), self.base_log2, self.expansion_code);
        let count = self.filter_count();
        let mut views = Vec::new();
        views.try_reserve_exact(count).ok()?;
        views.extend(self.filters[..count].iter_mut().enumerate().map(|(i, s)| {
            let buckets = buckets_at(base_log2, code, i);
            // SAFETY: as in `sub_mut`: sub-filter `i` < count exists, and every constructor
            // checked that its allocation holds `buckets_at(i) × bucket size` slots.
            let slots = unsafe { s.as_mut_slice_unchecked(buckets as usize * bs) };
            SubFilterMut { mask: buckets - 1, slots }
        }));
        Some(views)
    }

    /// Hashes a block of items and prefetches their buckets in every sub-filter.
    fn load_block<T: AsRef<[u8]>>(&self, items: &[T], out: &mut [Lookup<F>; BATCH]) {
        let bs = self.bs();
        for (slot, item) in out.iter_mut().zip(items) {
            *slot = Lookup::of(item.as_ref());
        }
        for l in &out[..items.len()] {
            for f in self.subs().rev() {
                f.prefetch(l, bs);
            }
        }
    }

    /// `CF.MEXISTS`: whether each item is (probably) present, appended to `out` in order.
    /// Large filters are blocked: a block's buckets are prefetched before any is read.
    pub fn contains_many<T: AsRef<[u8]>>(&self, items: &[T], out: &mut Vec<bool>) {
        if self.prefetching() {
            let mut block = [Lookup::new(0); BATCH];
            for chunk in items.chunks(BATCH) {
                self.load_block(chunk, &mut block);
                out.extend(block[..chunk.len()].iter().map(|l| self.contains_lookup(l)));
            }
            return;
        }
        // Small filters stay in cache: each item straight through, no block staged.
        if self.count == 1 {
            let f = self.sub(0);
            with_bucket_size(self.bs(), |bs| {
                out.extend(items.iter().map(|i| f.contains(&Lookup::of(i.as_ref()), bs)));
            });
            return;
        }
        let Some(views) = self.views() else {
            out.extend(items.iter().map(|i| self.contains_lookup(&Lookup::of(i.as_ref()))));
            return;
        };
        with_bucket_size(self.bs(), |bs| {
            out.extend(items.iter().map(|i| {
                let l = Lookup::of(i.as_ref());
                // A plain loop: `any` with this closure is not inlined.
                for f in views.iter() {
                    if f.contains(&l, bs) {
                        return true;
                    }
                }
                false
            }));
        });
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
    ) -> Result<(), CuckooError> {
        self.check_can_insert(max_filters)?;
        if self.prefetching() {
            let mut block = [Lookup::new(0); BATCH];
            for chunk in items.chunks(BATCH) {
                self.load_block(chunk, &mut block);
                for l in &block[..chunk.len()] {
                    out.push(self.insert_lookup(l, nx, max_filters, guard));
                }
            }
            return Ok(());
        }
        let mut rest = items.iter();
        loop {
            // The sub-filters' views, made once: items go straight in (newest sub-filter
            // first, then the kick-out walk in the newest) until one finds no room; that one
            // takes the general path (growth, or `Full`), and the views are made again. The
            // same steps as `insert_lookup`, in the same order.
            let bs = self.bs();
            let max_iterations = self.max_iterations;
            let (inserted, pending) = if self.count == 1 {
                let mut f = self.sub_mut(0);
                let views = std::slice::from_mut(&mut f);
                with_bucket_size(bs, |bs| {
                    insert_run(views, &mut rest, nx, bs, max_iterations, &mut *out)
                })
            } else if let Some(mut views) = self.views_mut() {
                with_bucket_size(bs, |bs| {
                    insert_run(&mut views, &mut rest, nx, bs, max_iterations, &mut *out)
                })
            } else {
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
        }
    }
}

/// Inserts items from `rest` into the sub-filters `views` (oldest first, at least one) while
/// each finds room: `insert_lookup`'s steps short of growth. Returns the number inserted and
/// the lookup of the item that found no room, if one did (its outcome not yet given).
#[inline(always)]
fn insert_run<'i, F: Fingerprint, T: AsRef<[u8]> + 'i, S: InsertSink>(
    views: &mut [SubFilterMut<'_, F>],
    rest: &mut impl Iterator<Item = &'i T>,
    nx: bool,
    bs: usize,
    max_iterations: u16,
    out: &mut S,
) -> (u64, Option<Lookup<F>>) {
    let mut inserted = 0u64;
    // Plain loops over the views: the iterator adapters (`any`, `rev`) are not inlined here.
    'items: for item in rest {
        let l = Lookup::of(item.as_ref());
        if nx {
            for f in views.iter() {
                if f.view().contains(&l, bs) {
                    out.push(Ok(Insert::Exists));
                    continue 'items;
                }
            }
        }
        let mut placed = false;
        for f in views.iter_mut().rev() {
            if f.try_place(&l, bs) {
                placed = true;
                break;
            }
        }
        if !placed {
            let kicked = match views.last_mut() {
                Some(f) => f.kick_out(&l, bs, max_iterations),
                None => false,
            };
            if !kicked {
                return (inserted, Some(l));
            }
        }
        inserted += 1;
        out.push(Ok(Insert::Inserted));
    }
    (inserted, None)
}
