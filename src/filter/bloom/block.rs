//! One block of hashed items for the batched paths ([`super::batch`], and the deletes of
//! counting chains): items are hashed [`HASH_BATCH`] at a time, and the cache lines they will
//! probe in layers too large for the CPU caches are prefetched before any is tested, so the
//! memory latency of every probe in the block overlaps.

use super::chain::Chain;
use super::kernel::{BATCH, LayerKind};
use super::layer::Layer;
use crate::filter::hash::ItemHash;

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
    pub(super) hashes: [ItemHash; HASH_BATCH],
    /// Whether any layer is large enough to prefetch (decided once per call).
    pub(super) prefetch: bool,
    /// What the prefetch of a chain's only layer kept for the block kernels
    /// ([`LayerKind::prefetch_keeping`]).
    pub(super) kept: K::Kept,
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
    pub(super) fn part_len(&self) -> usize {
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
pub(super) fn prefetch_layers<K: LayerKind>(
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
