//! The batched paths (`BF.MADD`, `BF.MEXISTS`, `BF.MDEL`): items are hashed [`HASH_BATCH`] at
//! a time and taken in blocks of [`BATCH`], and the cache lines they will probe in layers too
//! large for the CPU caches are prefetched before any is tested, so the memory latency of every
//! probe in the block overlaps (where no layer is that large, the kernels take the whole hashed
//! batch at once; a blocked chain of hash scheme 4 whose one layer is that small hashes and
//! probes each item in one loop, [`LayerKind::holds_items`]). Same answers and bits as the
//! one-by-one paths. Each call chooses its kind's
//! code once ([`super::kind`]); the deletes of counting chains are in [`super::counting`].

use super::chain::Chain;
use super::hash::ItemHash;
use super::kind::{LayerKind, by_kind};
use super::layer::Layer;
use crate::filter::BloomError;
use crate::filter::guard::AllocGuard;

/// Items per block in [`Chain::contains_many`] and [`Chain::add_many`]: enough probes in flight
/// to cover memory latency (16 items × up to ~10 probes), few enough that the prefetched lines
/// stay in L1 until they are used.
pub const BATCH: usize = 16;

/// Layers at least this large are prefetched in batches; smaller ones sit in the CPU caches
/// anyway, where a prefetch would only cost instructions.
pub const PREFETCH_MIN_BYTES: u64 = 4 << 20;

/// What a block is loaded for: it decides which cache lines are worth prefetching.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum Purpose {
    /// Adds read (and, for new items, write) every probe: prefetch them all.
    Add,
    /// Lookups of absent items usually stop at the first probe: prefetch only that one first,
    /// then the rest for the items it does not rule out.
    Lookup,
}

/// Items hashed at a time in [`Chain::contains_many`] and [`Chain::add_many`]: the hashing
/// loop's set-up (its scheme's constants, derived from the chain's seed) is paid once per this
/// many items, not once per [`BATCH`]; the kernels then take them [`BATCH`] at a time where
/// they prefetch, all at once where they do not.
pub const HASH_BATCH: usize = 64;

/// One block of hashed items for the batched paths, in a chain of kind `K`.
pub(super) struct Block<K: LayerKind> {
    hashes: [ItemHash; HASH_BATCH],
    /// Whether any layer is large enough to prefetch (decided once per call).
    prefetch: bool,
    /// What the prefetch of a chain's only layer kept for the block kernels
    /// ([`LayerKind::prefetch_keeping`]).
    kept: K::Kept,
}

impl<K: LayerKind> Block<K> {
    pub(super) fn new(chain: &Chain) -> Self {
        Self {
            hashes: [ItemHash { h1: 0, h2: 1 }; HASH_BATCH],
            prefetch: chain.layers.iter().any(is_large),
            kept: K::Kept::default(),
        }
    }

    /// How many of the hashes to take at a time: the kind's part ([`LayerKind::PART`], at most
    /// [`HASH_BATCH`]) when they are prefetched (the lines must still be in L1 when used), all
    /// of them ([`HASH_BATCH`]) when not.
    fn part_len(&self) -> usize {
        if self.prefetch { K::PART.min(HASH_BATCH) } else { HASH_BATCH }
    }

    /// Hashes `items` (at most [`BATCH`]), prefetches what `purpose` needs of them in every
    /// layer too large to be in cache, and returns the hashes, with what the prefetch kept for
    /// the kernels of the chain's only layer ([`LayerKind::holds_block`],
    /// [`LayerKind::insert_block`]) if it kept anything.
    #[inline]
    pub(super) fn load<T: AsRef<[u8]>>(
        &mut self,
        chain: &Chain,
        items: &[T],
        purpose: Purpose,
    ) -> (&[ItemHash], Option<&K::Kept>) {
        debug_assert!(items.len() <= BATCH);
        let hashes = &mut self.hashes[..items.len()];
        chain.scheme().hash_each(items, chain.seed(), hashes);
        let kept = self.prefetch && prefetch_layers::<K>(chain, hashes, purpose, &mut self.kept);
        (hashes, (K::KEEPS && kept).then_some(&self.kept))
    }
}

/// Prefetches what `purpose` needs of `hashes` in every layer (of kind `K`) too large to be in
/// cache; `true` when the prefetch of the chain's only layer kept what the block kernels need
/// in `kept` ([`LayerKind::prefetch_keeping`]).
#[inline]
fn prefetch_layers<K: LayerKind>(
    chain: &Chain,
    hashes: &[ItemHash],
    purpose: Purpose,
    kept: &mut K::Kept,
) -> bool {
    let lookup = purpose == Purpose::Lookup;
    let mut keeps = false;
    // The first layer, then the later ones: plain loops over the parts, no adapter.
    let (first, rest) = (chain.layers.first(), chain.layers.rest());
    if is_large(first) {
        if K::KEEPS && rest.is_empty() {
            keeps = K::prefetch_keeping(first, hashes, lookup, kept);
        } else {
            K::prefetch(first, hashes, lookup);
        }
    }
    for layer in rest {
        if is_large(layer) {
            K::prefetch(layer, hashes, lookup);
        }
    }
    keeps
}

/// Whether a layer is worth prefetching ([`PREFETCH_MIN_BYTES`]).
fn is_large(layer: &Layer) -> bool {
    layer.bytes() >= PREFETCH_MIN_BYTES
}

impl Chain {
    /// Whether each of `items` is (probably) present, in order, appended to `out`. Same answers
    /// as [`Chain::contains`] one by one; faster on filters larger than the CPU caches, because
    /// items are taken in blocks of [`BATCH`]: the whole block is hashed, the cache lines it
    /// will probe are prefetched, and only then tested, so the memory latency of every probe in
    /// the block overlaps instead of being paid one after another. Prefetching goes in two
    /// steps (first probes, then the rest for items the first probe does not rule out), so
    /// absent items cost one miss each, not `k`.
    pub fn contains_many<T: AsRef<[u8]>>(&self, items: &[T], out: &mut Vec<bool>) {
        by_kind!(self.kind(), K => self.contains_many_as::<K, T>(items, out))
    }

    /// [`Chain::contains_many`] in a chain of kind `K`.
    fn contains_many_as<K: LayerKind, T: AsRef<[u8]>>(&self, items: &[T], out: &mut Vec<bool>) {
        let mut block = Block::<K>::new(self);
        let (step, prefetch) = (block.part_len(), block.prefetch);
        // One layer, not prefetched: hashed and tested in one loop, where the kind can.
        if let (false, Some(only)) = (prefetch, self.layers.only()) {
            if K::holds_items(only, items, self.scheme(), self.seed(), out) {
                return;
            }
        }
        for chunk in items.chunks(HASH_BATCH) {
            let hashes = &mut block.hashes[..chunk.len()];
            self.scheme().hash_each(chunk, self.seed(), hashes);
            for part in hashes.chunks(step) {
                let kept =
                    prefetch && prefetch_layers::<K>(self, part, Purpose::Lookup, &mut block.kept);
                let kept = (K::KEEPS && kept).then_some(&block.kept);
                // One layer (the common case): its kernel straight over the part.
                if let Some(only) = self.layers.only() {
                    if K::holds_block(only, part, self.scheme(), kept, out) {
                        continue;
                    }
                }
                out.extend(part.iter().map(|&h| self.contains_as::<K>(h)));
            }
        }
    }

    /// Adds each of `items` in order, appending `true` (new) or `false` (present) to `out`, with
    /// the same results and bits as [`Chain::add`] one by one (an item may repeat an earlier one
    /// in the same call). Stops at the first item that cannot be added and returns why; the items
    /// before it are in and their results are in `out`. Blocked and prefetched like
    /// [`Chain::contains_many`].
    pub fn add_many<T: AsRef<[u8]>>(
        &mut self,
        items: &[T],
        guard: &dyn AllocGuard,
        out: &mut Vec<bool>,
    ) -> Result<(), BloomError> {
        self.awaiting_chunks = false;
        by_kind!(self.kind(), K => self.add_many_as::<K, T>(items, guard, out))
    }

    /// [`Chain::add_many`] in a chain of kind `K`.
    fn add_many_as<K: LayerKind, T: AsRef<[u8]>>(
        &mut self,
        items: &[T],
        guard: &dyn AllocGuard,
        out: &mut Vec<bool>,
    ) -> Result<(), BloomError> {
        let mut block = Block::<K>::new(self);
        let (step, prefetch, scheme) = (block.part_len(), block.prefetch, self.scheme());
        // One layer, not prefetched: as many items as it has room for hashed and added in one
        // loop, where the kind can; the rest (if any) below.
        let mut items = items;
        if let (false, seed, Some(only)) = (prefetch, self.seed(), self.layers.only_mut()) {
            items = &items[K::insert_items(only, items, scheme, seed, out)..];
        }
        for chunk in items.chunks(HASH_BATCH) {
            let hashes = &mut block.hashes[..chunk.len()];
            scheme.hash_each(chunk, self.seed(), hashes);
            for part in hashes.chunks(step) {
                let kept =
                    prefetch && prefetch_layers::<K>(self, part, Purpose::Add, &mut block.kept);
                let kept = (K::KEEPS && kept).then_some(&block.kept);
                // One layer with room for the whole part (the common case): no layer to grow
                // and none to consult first, so its kernel runs straight over the part.
                if let Some(only) = self.layers.only_mut() {
                    if K::insert_block(only, part, scheme, kept, out).is_some() {
                        continue;
                    }
                }
                for &h in part {
                    out.push(K::add(self, h, guard)?);
                }
            }
        }
        Ok(())
    }
}
