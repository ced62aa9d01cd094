//! A valkey-bloom object: its settings and its layers, answering and growing exactly as
//! valkey-bloom 1.0 does.
//!
//! An item is present if any layer holds it (every one of its `k` positions set). A new item
//! goes into the newest layer while that layer holds fewer items than its capacity; when it is
//! full, a nonscaling object (expansion 0) refuses the item and a scaling one appends a layer
//! of `capacity × expansion` items at error `error × tightening^i` (`i` the new layer's
//! index), sized by the `bloomfilter` crate's rules ([`super::sizing`]), hashed with the
//! object's seed. An item some layer already holds is not added and counts nothing.

use super::ValkeyError;
use super::blob;
use super::hash::{SipSeed, positions};
use super::sizing::{self, FILTER_BYTES, MAX_LAYERS, OBJECT_BYTES, SLOT_BYTES};
use crate::filter::bloom::bits::BitArray;
use crate::filter::bloom::params::MAX_LAYER_BITS;
use crate::filter::guard::AllocGuard;

/// What a valkey-bloom object is made with, besides its first layer's capacity.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Settings {
    /// Growth factor of each new layer's capacity; 0: nonscaling.
    pub expansion: u32,
    /// The object's error rate: its first layer's, in (0, 1).
    pub error: f64,
    /// Each new layer's error is the object's × this to the power of its index; in (0, 1).
    pub tightening: f64,
    /// The seed every layer is hashed with.
    pub seed: SipSeed,
    /// valkey-bloom's `is_seed_random`: false only with its [fixed seed](super::hash::FIXED_SEED).
    pub is_seed_random: bool,
}

impl Settings {
    /// Checks the settings as valkey-bloom's decoder does (error and tightening in (0, 1), both
    /// refused with [`ValkeyError::ErrorRateRange`]), and that `is_seed_random` is false only
    /// with the fixed seed (valkey-bloom's RDB loader refuses that; it never writes it).
    #[allow(clippy::neg_cmp_op_on_partial_ord)] // the negations are how NaN is refused
    pub fn check(&self) -> Result<(), ValkeyError> {
        let open = |x: f64| x > 0.0 && x < 1.0;
        if !open(self.error) || !open(self.tightening) {
            return Err(ValkeyError::ErrorRateRange);
        }
        if !self.is_seed_random && !self.seed.is_fixed() {
            return Err(ValkeyError::Decode);
        }
        Ok(())
    }
}

/// One layer: a bitmap of whole bytes, its probes, its capacity and the items added to it.
#[derive(Debug, Clone, PartialEq)]
pub struct Layer {
    capacity: u64,
    items: u64,
    hashes: u32,
    /// Bytes of the bitmap; `bits` holds them rounded up to whole 64-bit words, zero beyond.
    bytes: u64,
    bits: BitArray,
}

impl Layer {
    /// Items the layer is built for.
    pub fn capacity(&self) -> u64 {
        self.capacity
    }
    /// Items added to it.
    pub fn items(&self) -> u64 {
        self.items
    }
    /// Probes per item.
    pub fn hashes(&self) -> u32 {
        self.hashes
    }
    /// Bytes of its bitmap (`m / 8`).
    pub fn bytes(&self) -> u64 {
        self.bytes
    }
    /// The bitmap's array (rounded up to whole words, zero beyond [`Layer::bytes`]).
    pub fn bits(&self) -> &BitArray {
        &self.bits
    }

    fn holds(&self, h: (u64, u64)) -> bool {
        positions(h, self.bytes * 8, self.hashes).all(|b| self.bits.get(b))
    }

    fn set(&mut self, h: (u64, u64)) {
        for b in positions(h, self.bytes * 8, self.hashes) {
            self.bits.set(b);
        }
    }

    /// An empty layer of `bytes` bitmap bytes: no more than a layer may have, and not
    /// allocated unless that holds.
    fn zeroed(capacity: u64, bytes: u64, hashes: u32) -> Result<Self, ValkeyError> {
        let bits = array_bits(bytes)?;
        let bits = BitArray::new(bits).map_err(ValkeyError::Alloc)?;
        Ok(Self { capacity, items: 0, hashes, bytes, bits })
    }
}

/// Bits of the array that holds a bitmap of `bytes` bytes (whole words), or
/// [`ValkeyError::TooLarge`] past this module's largest layer.
fn array_bits(bytes: u64) -> Result<u64, ValkeyError> {
    let bits = bytes.checked_mul(8).filter(|&b| b > 0 && b <= MAX_LAYER_BITS);
    Ok(bits.ok_or(ValkeyError::TooLarge)?.div_ceil(64) * 64)
}

/// A layer as stored, before its bitmap is copied: what a loader has read of it.
#[derive(Debug, Clone, Copy)]
pub struct StoredLayer<'a> {
    /// The blob (header and bitmap).
    pub blob: blob::Blob<'a>,
    /// Its capacity, as stored (valkey-bloom's `i64`).
    pub capacity: u64,
    /// Its items, as stored.
    pub items: u64,
}

/// A valkey-bloom object.
#[derive(Debug, Clone, PartialEq)]
pub struct ValkeyBloom {
    settings: Settings,
    layers: Vec<Layer>,
}

impl ValkeyBloom {
    /// An empty object with one layer of `capacity` items at the settings' error, after asking
    /// `guard` for its memory (valkey-bloom's size check before it creates an object).
    pub fn new(
        settings: Settings,
        capacity: u64,
        guard: &dyn AllocGuard,
    ) -> Result<Self, ValkeyError> {
        settings.check()?;
        if capacity == 0 || capacity > i64::MAX as u64 {
            return Err(ValkeyError::BadCapacity);
        }
        let bytes = sizing::bitmap_bytes(capacity, settings.error);
        array_bits(bytes)?;
        let after = sizing::object_bytes(1, bytes);
        guard.admit(after, bytes).map_err(ValkeyError::Alloc)?;
        let hashes = sizing::hashes(bytes * 8, capacity);
        Ok(Self { settings, layers: vec![Layer::zeroed(capacity, bytes, hashes)?] })
    }

    /// An object rebuilt from stored layers (oldest first): [`Builder`] with each in turn.
    pub fn from_stored(
        settings: Settings,
        layers: &[StoredLayer<'_>],
        guard: &dyn AllocGuard,
    ) -> Result<Self, ValkeyError> {
        let mut b = Builder::new(settings)?;
        for layer in layers {
            b.push(layer, guard)?;
        }
        b.finish()
    }

    /// Lets `mv` move every layer's bit array (active defragmentation).
    ///
    /// # Safety
    /// `mv` must keep the contract of [`Mover`](crate::filter::mem::Mover).
    pub unsafe fn relocate(&mut self, mv: &mut crate::filter::mem::Mover<'_>) {
        for layer in &mut self.layers {
            // SAFETY: the caller's contract on `mv`.
            unsafe { layer.bits.relocate(mv) }
        }
    }

    /// The settings.
    pub fn settings(&self) -> &Settings {
        &self.settings
    }

    /// The layers, oldest first (never empty).
    pub fn layers(&self) -> &[Layer] {
        &self.layers
    }

    /// Whether `item` is (probably) present: whether any layer holds it.
    pub fn contains(&self, item: &[u8]) -> bool {
        let h = self.settings.seed.hash(item);
        self.layers.iter().any(|l| l.holds(h))
    }

    /// Adds `item`: `Ok(true)` if no layer held it, `Ok(false)` (nothing changed) if one did.
    /// Appends a layer when the newest is full, or says why it cannot, changing nothing.
    pub fn add(&mut self, item: &[u8], guard: &dyn AllocGuard) -> Result<bool, ValkeyError> {
        let h = self.settings.seed.hash(item);
        if self.layers.iter().any(|l| l.holds(h)) {
            return Ok(false);
        }
        let last = self.layers.len() - 1;
        if self.layers[last].items < self.layers[last].capacity {
            self.layers[last].set(h);
            self.layers[last].items += 1;
            return Ok(true);
        }
        let mut layer = self.next_layer(guard)?;
        layer.set(h);
        layer.items = 1;
        self.layers.try_reserve(1).map_err(|_| ValkeyError::TooLarge)?;
        self.layers.push(layer);
        Ok(true)
    }

    /// Whether a new item would be refused now: the newest layer is full and no layer can
    /// be appended. Allocates nothing.
    pub fn refuses_new_items(&self, guard: &dyn AllocGuard) -> bool {
        let last = &self.layers[self.layers.len() - 1];
        last.items >= last.capacity && self.next_layer_size(guard).is_err()
    }

    /// The layer valkey-bloom would append, checked in its order (nonscaling, layer count,
    /// error underflow, capacity overflow, memory), allocated.
    fn next_layer(&self, guard: &dyn AllocGuard) -> Result<Layer, ValkeyError> {
        let (capacity, bytes, hashes) = self.next_layer_size(guard)?;
        Layer::zeroed(capacity, bytes, hashes)
    }

    fn next_layer_size(&self, guard: &dyn AllocGuard) -> Result<(u64, u64, u32), ValkeyError> {
        let s = &self.settings;
        if s.expansion == 0 {
            return Err(ValkeyError::NonScalingFull);
        }
        let n = self.layers.len() as u64;
        if n >= MAX_LAYERS {
            return Err(ValkeyError::MaxFilters);
        }
        let error = sizing::layer_error(s.error, s.tightening, n)?;
        let capacity =
            sizing::next_capacity(self.layers[self.layers.len() - 1].capacity, s.expansion)?;
        let bytes = sizing::bitmap_bytes(capacity, error);
        // valkey-bloom's check: the object's size now (its list's slots as they are) plus the
        // new layer.
        let after = self
            .size_with_slots(sizing::slots(n))
            .saturating_add(FILTER_BYTES)
            .saturating_add(bytes);
        array_bits(bytes)?;
        guard.admit(after, bytes).map_err(ValkeyError::Alloc)?;
        Ok((capacity, bytes, sizing::hashes(bytes * 8, capacity)))
    }

    /// Items added over all layers (`BF.CARD`).
    pub fn items(&self) -> u64 {
        self.layers.iter().map(|l| l.items).sum()
    }

    /// Capacity over all layers (`BF.INFO Capacity`).
    pub fn capacity(&self) -> u64 {
        self.layers.iter().map(|l| l.capacity).sum()
    }

    /// Bytes of all bitmaps.
    pub fn bitmap_bytes(&self) -> u64 {
        self.layers.iter().map(|l| l.bytes).sum()
    }

    /// The object's memory as valkey-bloom counts it for an object grown from one layer
    /// (`BF.INFO Size`): see [`sizing::object_bytes`].
    pub fn size(&self) -> u64 {
        sizing::object_bytes(self.layers.len() as u64, self.bitmap_bytes())
    }

    fn size_with_slots(&self, slots: u64) -> u64 {
        let n = self.layers.len() as u64;
        OBJECT_BYTES
            .saturating_add(SLOT_BYTES.saturating_mul(slots))
            .saturating_add(FILTER_BYTES.saturating_mul(n))
            .saturating_add(self.bitmap_bytes())
    }

    /// `BF.INFO Max scaled capacity` under a per-object limit of `limit` bytes: the capacity
    /// the object's parameters reach from its first layer; `None` for a nonscaling object
    /// (valkey-bloom answers it for scaling objects only). An error where valkey-bloom's
    /// computation fails (a capacity past `i64`).
    pub fn max_scaled_capacity(&self, limit: u64) -> Option<Result<u64, ValkeyError>> {
        let s = &self.settings;
        if s.expansion == 0 {
            return None;
        }
        let first = self.layers[0].capacity;
        Some(sizing::max_scaled_capacity(first, s.error, None, s.tightening, s.expansion, limit))
    }
}

/// Rebuilds a stored object layer by layer, so that a loader holds one stored layer at a time
/// besides the layers built. Refused ([`ValkeyError::Decode`] unless said otherwise):
/// - settings out of range ([`Settings::check`]);
/// - no layer, or [`MAX_LAYERS`] or more ([`ValkeyError::MaxFilters`]);
/// - a layer hashed with another seed than the settings' (valkey-bloom hashes every layer
///   with its object's one seed);
/// - a capacity of 0 or past `i64`, items past the capacity, an older layer not full
///   (valkey-bloom appends a layer only when the newest is full), totals past `i64`;
/// - a nonscaling object of more than one layer;
/// - memory `guard` refuses ([`ValkeyError::Alloc`]), asked before each layer's bitmap is
///   allocated with the object's size once it is.
#[derive(Debug)]
pub struct Builder {
    settings: Settings,
    layers: Vec<Layer>,
    capacity: u64,
    items: u64,
    bytes: u64,
}

impl Builder {
    /// Starts an object of `settings`.
    pub fn new(settings: Settings) -> Result<Self, ValkeyError> {
        settings.check()?;
        Ok(Self { settings, layers: Vec::new(), capacity: 0, items: 0, bytes: 0 })
    }

    /// Checks and appends the next layer, copying its bitmap.
    pub fn push(&mut self, l: &StoredLayer<'_>, guard: &dyn AllocGuard) -> Result<(), ValkeyError> {
        let n = self.layers.len() as u64;
        if n + 1 >= MAX_LAYERS {
            return Err(ValkeyError::MaxFilters);
        }
        let sane = l.capacity >= 1 && l.capacity <= i64::MAX as u64 && l.items <= l.capacity;
        let older_full = self.layers.last().is_none_or(|o| o.items == o.capacity);
        let scaling_or_first = self.settings.expansion != 0 || n == 0;
        if !sane || l.blob.seed != self.settings.seed || !older_full || !scaling_or_first {
            return Err(ValkeyError::Decode);
        }
        let capacity = self.capacity.checked_add(l.capacity).filter(|&c| c <= i64::MAX as u64);
        let items = self.items.checked_add(l.items);
        let (Some(capacity), Some(items)) = (capacity, items) else {
            return Err(ValkeyError::Decode);
        };
        let len = l.blob.bitmap.len() as u64;
        array_bits(len)?;
        let bytes = self.bytes.checked_add(len).ok_or(ValkeyError::TooLarge)?;
        guard.admit(sizing::object_bytes(n + 1, bytes), len).map_err(ValkeyError::Alloc)?;
        self.layers.try_reserve(1).map_err(|_| ValkeyError::TooLarge)?;
        let mut layer = Layer::zeroed(l.capacity, len, l.blob.hashes)?;
        layer.bits.write_bytes(0, l.blob.bitmap).map_err(ValkeyError::Alloc)?;
        layer.items = l.items;
        self.layers.push(layer);
        (self.capacity, self.items, self.bytes) = (capacity, items, bytes);
        Ok(())
    }

    /// The object, once it has at least one layer.
    pub fn finish(self) -> Result<ValkeyBloom, ValkeyError> {
        if self.layers.is_empty() {
            return Err(ValkeyError::Decode);
        }
        Ok(ValkeyBloom { settings: self.settings, layers: self.layers })
    }
}
