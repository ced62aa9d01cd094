//! The batched paths (`BF.MADD`, `BF.MEXISTS`, `BF.MDEL`): items are hashed [`HASH_BATCH`] at
//! a time and taken in blocks of [`BATCH`](super::kernel::BATCH), and the cache lines they will probe in layers too
//! large for the CPU caches are prefetched before any is tested, so the memory latency of every
//! probe in the block overlaps (where no layer is that large, the kernels take the whole hashed
//! batch at once; a blocked chain of hash scheme 4 whose one layer is that small hashes and
//! probes each item in one loop, [`LayerKind::holds_items`]). Same answers and bits as the
//! one-by-one paths. Each call chooses its kind's
//! code once ([`super::dispatch`]); the deletes of counting chains are in [`super::counting`],
//! the blocks of hashed items in [`super::block`].

use super::block::{Block, HASH_BATCH, Purpose, prefetch_layers};
use super::chain::Chain;
use super::dispatch::by_kind;
use super::kernel::LayerKind;
use crate::filter::FilterError;
use crate::filter::guard::AllocGuard;

impl Chain {
    /// Whether each of `items` is (probably) present, in order, appended to `out`. Same answers
    /// as [`Chain::contains`] one by one; faster on filters larger than the CPU caches, because
    /// items are taken in blocks of [`BATCH`](super::kernel::BATCH): the whole block is hashed, the cache lines it
    /// will probe are prefetched, and only then tested, so the memory latency of every probe in
    /// the block overlaps instead of being paid one after another. Prefetching goes in two
    /// steps (first probes, then the rest for items the first probe does not rule out), so
    /// absent items cost one miss each, not `k`.
    pub fn contains_many<T: AsRef<[u8]>>(&self, items: &[T], out: &mut Vec<bool>) {
        let start = out.len();
        by_kind!(self.kind(), K => self.contains_many_as::<K, T>(items, out));
        if !self.members().is_empty() {
            self.members_answer(items, &mut out[start..]);
        }
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
    ) -> Result<(), FilterError> {
        self.awaiting_chunks = false;
        if !self.members().is_empty() {
            // A merged chain: each item is first looked up in the members (`Chain::add`).
            for item in items {
                out.push(self.add(item.as_ref(), guard)?);
            }
            return Ok(());
        }
        by_kind!(self.kind(), K => self.add_many_as::<K, T>(items, guard, out))
    }

    /// [`Chain::add_many`] in a chain of kind `K`.
    fn add_many_as<K: LayerKind, T: AsRef<[u8]>>(
        &mut self,
        items: &[T],
        guard: &dyn AllocGuard,
        out: &mut Vec<bool>,
    ) -> Result<(), FilterError> {
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
