//! Counters of a counting Bloom filter (Fan et al., 2000), packed in a [`BitArray`](super::bits::BitArray).
//!
//! A counting layer has one counter where a plain layer has one bit: the same number of
//! positions, the same probes, so the same sizing and error. Adding an item increments its `k`
//! counters; deleting it decrements them; an item is present when all its counters are
//! non-zero. A counter is 4 or 8 bits wide ([`Width`]): counter `i` is bits
//! `[i·w, (i+1)·w)` of the array, so it never crosses a 64-bit word, and serialized (bit `p` in
//! byte `p/8` at mask `1 << (p%8)`) counter `i` is byte `i` (8 bits) or the low (even `i`) or
//! high (odd `i`) nibble of byte `i/2` (4 bits).
//!
//! Saturation: a counter that reached its maximum (15 or 255) is never changed again, neither
//! up nor down. Incrementing it further would wrap it to 0 (a false negative for every item
//! that probes it); decrementing it would lose the increments it could not record. Stuck at its
//! maximum it stays non-zero for good: it costs false positives, never a false negative. Layers
//! count their saturated counters, so `BF.STATS` shows when that starts to matter.
//!
//! Here: the counting kind [`Counting`] — a layer's increments, lookups and decrements (which
//! keep the counts of non-zero and saturated counters as they change them;
//! [`byte_counts`](super::counters::byte_counts) and [`array_counts`](super::counters::array_counts)
//! recount them when counters arrive from outside) and the chain's counting add (which layer
//! an item's counts go to, and why) — and the chain's deletes. The counters' arithmetic is
//! [`super::counters`].

use super::block::{Block, Purpose};
use super::chain::Chain;
use super::counters::{Width, max};
use super::kernel::{BATCH, LayerKind};
use super::kind::Kind;
use super::layer::Layer;
use crate::filter::FilterError;
use crate::filter::guard::AllocGuard;
use crate::filter::hash::ItemHash;

/// Counting layers, counters of `W` bits (4 or 8): the positions of [`Plain`](super::kernel::Plain)
/// layers, each a counter in an array `W` times larger. The kind of counting chains
/// ([`super::kind`]); `W` is a constant in its code.
/// `C`: scheme 5's probe sequence, else scheme 1's ([`ItemHash::probes_in`]).
pub struct Counting<const W: Width, const C: bool>;

impl<const W: Width, const C: bool> Counting<W, C> {
    /// Decrements the counters of `h` that are neither 0 nor saturated, and uncounts the item;
    /// `false`, changing nothing, when the layer does not hold `h` (a counter is 0).
    fn remove(layer: &mut Layer, h: ItemHash) -> bool {
        if !Self::holds(layer, h) {
            return false;
        }
        let max = max(W);
        for p in h.probes_in(C, layer.len_bits(), layer.hashes) {
            // Two probes of one item can share a counter: the second sees it decremented, and
            // one that reached 0 there is left at 0.
            let c = layer.bits.counter(p, W);
            if c != 0 && c < max {
                layer.bits.set_counter(p, W, c - 1);
                // Saturating: the count may be one a loaded value carried (`Contents::Counted`).
                layer.ones = layer.ones.saturating_sub(u64::from(c == 1));
            }
        }
        layer.items = layer.items.saturating_sub(1);
        true
    }

    /// Increments the counters of `h` that are below their maximum, counts the item, and
    /// returns whether the layer held it before (every counter was non-zero: one pass tests
    /// and counts) and how many counters reached their maximum, for the chain's count
    /// ([`Chain::saturated`]). A counter at its maximum stays there ([`super::counting`]).
    #[inline]
    fn increment(layer: &mut Layer, h: ItemHash) -> (bool, u64) {
        let max = max(W);
        // Two probes of the item can share a counter: the second reads it incremented, but
        // the first already saw the 0, and `held` stays false.
        let mut held = true;
        let mut saturated = 0;
        for p in h.probes_in(C, layer.len_bits(), layer.hashes) {
            let c = layer.bits.counter(p, W);
            held &= c != 0;
            if c < max {
                layer.bits.set_counter(p, W, c + 1);
                layer.ones += u64::from(c == 0);
                saturated += u64::from(c + 1 == max);
            }
        }
        layer.items += 1;
        (held, saturated)
    }

    /// [`Chain::delete_hash`] for this width.
    fn delete(chain: &mut Chain, h: ItemHash) -> bool {
        chain.layers.iter_mut().any(|l| Self::remove(l, h))
    }
}

impl<const W: Width, const C: bool> LayerKind for Counting<W, C> {
    /// Every counter of `h` is non-zero.
    #[inline]
    fn holds(layer: &Layer, h: ItemHash) -> bool {
        h.probes_in(C, layer.len_bits(), layer.hashes).all(|p| layer.bits.counter(p, W) != 0)
    }

    /// Not reached from a chain (counting chains add through [`Counting::add`](LayerKind::add),
    /// which keeps the chain's count of saturated counters, and have no block kernel): a layer
    /// alone has no such count to keep.
    #[inline]
    fn insert(layer: &mut Layer, h: ItemHash) {
        Self::increment(layer, h);
    }

    /// As [`Counting::insert`](LayerKind::insert): not reached from a chain.
    #[inline]
    fn insert_if_new(layer: &mut Layer, h: ItemHash) -> bool {
        !Self::increment(layer, h).0
    }

    /// Nothing kept: counting chains have no block kernel.
    type Kept = ();

    /// The two steps of the plain layers' prefetch, over counter positions (bit `p · W` holds
    /// counter `p`).
    fn prefetch(layer: &Layer, hashes: &[ItemHash], candidates_only: bool) {
        let (k, positions, w) = (layer.hashes, layer.len_bits(), u64::from(W));
        if candidates_only {
            hashes.iter().flat_map(|h| h.probes_in(C, positions, k).take(1)).for_each(|p| {
                layer.bits.prefetch(p * w);
            });
        }
        for h in hashes {
            let mut probes = h.probes_in(C, positions, k);
            if candidates_only {
                match probes.next() {
                    Some(first) if layer.bits.counter(first, W) != 0 => {}
                    _ => continue,
                }
            }
            probes.for_each(|p| layer.bits.prefetch(p * w));
        }
    }

    /// A counting chain's add: the item's counters are always incremented (a second add
    /// counts twice). An item some layer holds already goes to the *oldest* layer that holds
    /// it: its counters there are all non-zero, so no counter becomes non-zero and that
    /// layer's fill (its error rate) does not change; `Ok(false)`. A new item goes to the
    /// newest layer, which grows the chain when full (or, nonscaling, is refused); `Ok(true)`.
    ///
    /// Why the oldest: counters become non-zero only in the newest layer, so once a layer has
    /// a newer one after it, the set of its non-zero counters can only shrink, and an item it
    /// does not hold it will never hold. An item's increments all sit in one layer L (its
    /// home), and no layer older than L holds it — so [`Chain::delete`], taking the oldest
    /// layer that holds the item, always finds L and decrements only the item's own counts.
    /// (Taking the newest instead decrements some other layer whenever a newer layer reports
    /// the item as a false positive: measured on a chain grown 20× at 1%, about 15 items lost
    /// per 5,000 deletes.) Only a delete of an item never added can take counts that are not
    /// its own (docs/counting.md).
    fn add(chain: &mut Chain, h: ItemHash, guard: &dyn AllocGuard) -> Result<bool, FilterError> {
        if let Some(home) = chain.layers.iter_mut().find(|l| Self::holds(l, h)) {
            let (_, saturated) = Self::increment(home, h);
            chain.layers.add_saturated(saturated);
            return Ok(false);
        }
        if chain.layers.last().is_full() {
            chain.grow(guard)?;
        }
        let (_, saturated) = Self::increment(chain.layers.last_mut(), h);
        chain.layers.add_saturated(saturated);
        Ok(true)
    }
}

/// The chain's deletes (counting chains only).
impl Chain {
    /// Deletes one occurrence of `item` from a counting chain: `Ok(true)` if it was present
    /// and its counters were decremented (in the oldest layer that holds it, which is always
    /// the layer its adds counted it in: see [`Counting::add`](LayerKind::add)), `Ok(false)`,
    /// changing nothing, if it was not; [`FilterError::NotCounting`] for a plain chain.
    pub fn delete(&mut self, item: &[u8]) -> Result<bool, FilterError> {
        let h = self.hash(item);
        let deleted = self.delete_hash(h)? || self.delete_in_members(item);
        self.awaiting_chunks = false;
        Ok(deleted)
    }

    /// [`Chain::delete`] for a precomputed hash; [`FilterError::NotCounting`] for a plain chain.
    pub(super) fn delete_hash(&mut self, h: ItemHash) -> Result<bool, FilterError> {
        match self.kind() {
            Kind::Counting4 => Ok(Counting::<4, false>::delete(self, h)),
            Kind::Counting4Curved => Ok(Counting::<4, true>::delete(self, h)),
            Kind::Counting8 => Ok(Counting::<8, false>::delete(self, h)),
            Kind::Counting8Curved => Ok(Counting::<8, true>::delete(self, h)),
            Kind::Plain | Kind::PlainCurved | Kind::RedisBloom | Kind::Blocked => {
                Err(FilterError::NotCounting)
            }
        }
    }

    /// [`Chain::delete`] of each of `items` in order, appending the results to `out`; hashed
    /// and prefetched in blocks as the chain's other batches ([`super::batch`]).
    pub fn delete_many<T: AsRef<[u8]>>(
        &mut self,
        items: &[T],
        out: &mut Vec<bool>,
    ) -> Result<(), FilterError> {
        if !self.members().is_empty() && self.counter_width() != 0 {
            for item in items {
                out.push(self.delete(item.as_ref())?);
            }
            return Ok(());
        }
        match self.kind() {
            Kind::Counting4 => self.delete_many_as::<4, false, T>(items, out),
            Kind::Counting4Curved => self.delete_many_as::<4, true, T>(items, out),
            Kind::Counting8 => self.delete_many_as::<8, false, T>(items, out),
            Kind::Counting8Curved => self.delete_many_as::<8, true, T>(items, out),
            Kind::Plain | Kind::PlainCurved | Kind::RedisBloom | Kind::Blocked => {
                return Err(FilterError::NotCounting);
            }
        }
        Ok(())
    }

    fn delete_many_as<const W: Width, const C: bool, T: AsRef<[u8]>>(
        &mut self,
        items: &[T],
        out: &mut Vec<bool>,
    ) {
        self.awaiting_chunks = false;
        let mut block = Block::<Counting<W, C>>::new(self);
        for chunk in items.chunks(BATCH) {
            let (hashes, _) = block.load(self, chunk, Purpose::Add);
            for &h in hashes {
                out.push(Counting::<W, C>::delete(self, h));
            }
        }
    }
}
