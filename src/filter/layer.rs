//! One Bloom layer: a bit array sized for `capacity` items at one error rate, and the number of
//! items added to it.

use super::BloomError;
use super::bits::{BitArray, View, ViewMut};
use super::hash::ItemHash;
use super::params::{LayerSize, layer_size};
use super::probe;

/// One fixed-size Bloom filter inside a chain.
///
/// Only what the hot paths read is stored — capacity, probe count, item count and the bits
/// (whose length is the bit count). The error rate and bits per entry follow from the chain's
/// parameters and the layer's position ([`Chain::layer_size`](super::Chain::layer_size)). This
/// keeps a layer at 48 bytes, part of every filter's fixed memory.
#[derive(Debug, Clone, PartialEq)]
pub struct Layer {
    capacity: u64,
    items: u64,
    hashes: u32,
    bits: BitArray,
}

impl Layer {
    /// Lets `mv` move the layer's bit array (active defragmentation).
    ///
    /// # Safety
    /// `mv` must keep the contract of [`Mover`](super::mem::Mover).
    pub unsafe fn relocate(&mut self, mv: &mut super::mem::Mover<'_>) {
        // SAFETY: the caller's contract on `mv`.
        unsafe { self.bits.relocate(mv) }
    }

    /// An empty layer for `capacity` items at `error`.
    pub fn new(capacity: u64, error: f64) -> Result<Self, BloomError> {
        let size = layer_size(capacity, error)?;
        Ok(Self {
            capacity: size.capacity,
            items: 0,
            hashes: size.hashes,
            bits: BitArray::new(size.bits)?,
        })
    }

    /// A layer rebuilt from stored parts. `bits` must have the length the sizing gives and
    /// `items` must not exceed the capacity.
    pub fn from_parts(size: LayerSize, items: u64, bits: BitArray) -> Result<Self, BloomError> {
        if bits.len_bits() != size.bits || items > size.capacity {
            return Err(BloomError::BadData);
        }
        Ok(Self { capacity: size.capacity, items, hashes: size.hashes, bits })
    }

    /// Items this layer is built for.
    pub fn capacity(&self) -> u64 {
        self.capacity
    }

    /// Probes per item.
    pub fn hashes(&self) -> u32 {
        self.hashes
    }

    /// Bits in the array.
    #[inline]
    pub fn len_bits(&self) -> u64 {
        self.bits.len_bits()
    }

    /// Bytes of the bit array.
    pub fn bytes(&self) -> u64 {
        self.len_bits() / 8
    }

    /// Items added to this layer.
    pub fn items(&self) -> u64 {
        self.items
    }

    /// The bit array.
    pub fn bits(&self) -> &BitArray {
        &self.bits
    }

    /// The bit array, for chunked restores.
    pub fn bits_mut(&mut self) -> &mut BitArray {
        &mut self.bits
    }

    /// Whether the layer holds as many items as it was sized for.
    pub fn is_full(&self) -> bool {
        self.items >= self.capacity
    }

    /// Whether every probe of `h` is set.
    #[inline(always)]
    pub fn contains(&self, h: ItemHash) -> bool {
        match self.bits.view() {
            View::One(words) => probe::all_set(words, self.hashes, h),
            View::Many(table) => probe::all_set(table, self.hashes, h),
        }
    }

    /// Sets every probe of `h` and counts the item.
    #[inline]
    pub fn insert(&mut self, h: ItemHash) {
        for p in h.probes(self.len_bits(), self.hashes) {
            self.bits.set(p);
        }
        self.items += 1;
    }

    /// Tests and sets in one pass: sets the probes of `h` that are clear and, if any was, counts
    /// the item and returns `true`. Same answer and same bits as `!contains(h)` followed by
    /// `insert(h)`, with each probed word visited once; an item already present writes nothing.
    #[inline]
    pub fn insert_if_new(&mut self, h: ItemHash) -> bool {
        let hashes = self.hashes;
        let new = match self.bits.view_mut() {
            ViewMut::One(words) => probe::set_clear(words, hashes, h),
            ViewMut::Many(table) => probe::set_clear(table, hashes, h),
        };
        self.items += u64::from(new);
        new
    }

    /// [`Layer::insert_if_new`] for each of `hashes` in order, appending the results to `out`,
    /// when the layer is one segment with room for all of them (so it cannot fill up part-way);
    /// returns how many were new. `None`, changing nothing, when that does not hold.
    #[inline]
    pub fn insert_block(&mut self, hashes: &[ItemHash], out: &mut Vec<bool>) -> Option<u64> {
        if self.items.checked_add(hashes.len() as u64)? > self.capacity {
            return None;
        }
        let k = self.hashes;
        let kernels = probe::Kernels::<[u64]>::for_hashes(k);
        let ViewMut::One(words) = self.bits.view_mut() else {
            return None;
        };
        let mut new = 0;
        for &h in hashes {
            let n = kernels.set_clear(words, k, h);
            new += u64::from(n);
            out.push(n);
        }
        self.items += new;
        Some(new)
    }

    /// [`Layer::contains`] for each of `hashes`, appended to `out`; `false`, doing nothing, when
    /// the layer is not one segment.
    #[inline]
    pub fn contains_block(&self, hashes: &[ItemHash], out: &mut Vec<bool>) -> bool {
        let k = self.hashes;
        let kernels = probe::Kernels::<[u64]>::for_hashes(k);
        let View::One(words) = self.bits.view() else {
            return false;
        };
        out.extend(hashes.iter().map(|&h| kernels.all_set(words, k, h)));
        true
    }

    /// Starts loading the cache lines that `hashes` probe: every probe of each item
    /// (`Purpose::Add` in the chain's batches), or, with `candidates_only`, first every item's
    /// first probe and then the remaining probes of the items whose first probe is set (an
    /// absent item usually stops at its first probe, so it costs one miss, not `k`). Hints
    /// only: nothing changes.
    pub fn prefetch_block(&self, hashes: &[ItemHash], candidates_only: bool) {
        match self.bits.view() {
            View::One(words) => prefetch_block(words, self.hashes, hashes, candidates_only),
            View::Many(table) => prefetch_block(table, self.hashes, hashes, candidates_only),
        }
    }
}

/// [`Layer::prefetch_block`] over one kind of word array.
#[inline(always)]
fn prefetch_block<A: probe::WordArray + ?Sized>(
    words: &A,
    k: u32,
    hashes: &[ItemHash],
    candidates_only: bool,
) {
    let kernels = probe::Kernels::<A>::for_hashes(k);
    if !candidates_only {
        hashes.iter().for_each(|&h| kernels.prefetch(words, k, h));
        return;
    }
    hashes.iter().for_each(|&h| probe::prefetch_first(words, h));
    for &h in hashes {
        if probe::first_probe_set(words, h) {
            kernels.prefetch(words, k, h);
        }
    }
}
