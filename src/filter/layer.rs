//! One Bloom layer: a bit array sized for `capacity` items at one error rate, and the number of
//! items added to it.

use super::BloomError;
use super::bits::BitArray;
use super::hash::ItemHash;
use super::params::{LayerSize, layer_size};

/// One fixed-size Bloom filter inside a chain.
#[derive(Debug, Clone, PartialEq)]
pub struct Layer {
    size: LayerSize,
    items: u64,
    bits: BitArray,
}

impl Layer {
    /// An empty layer for `capacity` items at `error`.
    pub fn new(capacity: u64, error: f64) -> Result<Self, BloomError> {
        let size = layer_size(capacity, error)?;
        Ok(Self {
            size,
            items: 0,
            bits: BitArray::new(size.bits)?,
        })
    }

    /// A layer rebuilt from stored parts. `bits` must have the length the sizing gives and
    /// `items` must not exceed the capacity.
    pub fn from_parts(size: LayerSize, items: u64, bits: BitArray) -> Result<Self, BloomError> {
        if bits.len_bits() != size.bits || items > size.capacity {
            return Err(BloomError::BadData);
        }
        Ok(Self { size, items, bits })
    }

    /// Sizing of this layer.
    pub fn size(&self) -> &LayerSize {
        &self.size
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
        self.items >= self.size.capacity
    }

    /// Whether every probe of `h` is set.
    #[inline]
    pub fn contains(&self, h: ItemHash) -> bool {
        h.probes(self.size.bits, self.size.hashes)
            .all(|p| self.bits.get(p))
    }

    /// Sets every probe of `h` and counts the item.
    #[inline]
    pub fn insert(&mut self, h: ItemHash) {
        for p in h.probes(self.size.bits, self.size.hashes) {
            self.bits.set(p);
        }
        self.items += 1;
    }
}
