//! The scalable chain: a list of layers, each larger and tighter than the one before.
//!
//! An item is present if any layer says so. A genuinely new item is set in the last layer;
//! when that layer is full, a scaling chain appends a layer with `capacity × expansion` items at
//! half the error, and a nonscaling chain refuses the item. The first layer of a scaling chain
//! gets half the requested error, so the errors of all layers sum to less than the request.

use super::hash::{HashScheme, ItemHash};
use super::layer::Layer;
use super::params::{ChainParams, MAX_LAYERS, TIGHTENING, info_size, layer_size};
use super::BloomError;

/// Decides whether a filter may grow by some bytes. The core checks the per-filter limit
/// itself ([`MaxFilterBytes`]); the module adds the server's `maxmemory`.
pub trait AllocGuard {
    /// May the filter, now `filter_bytes_after` bytes in total (as `BF.INFO Size` counts),
    /// allocate `new_bytes` more?
    fn admit(&self, filter_bytes_after: u64, new_bytes: u64) -> Result<(), BloomError>;
}

/// Admits any allocation: for replicated writes and loading, where the primary already decided.
#[derive(Debug, Clone, Copy)]
pub struct Unlimited;

impl AllocGuard for Unlimited {
    fn admit(&self, _: u64, _: u64) -> Result<(), BloomError> {
        Ok(())
    }
}

/// Refuses to let one filter grow past a byte limit.
#[derive(Debug, Clone, Copy)]
pub struct MaxFilterBytes(pub u64);

impl AllocGuard for MaxFilterBytes {
    fn admit(&self, filter_bytes_after: u64, _new_bytes: u64) -> Result<(), BloomError> {
        if filter_bytes_after > self.0 {
            Err(BloomError::FilterLimit {
                needed: filter_bytes_after,
                limit: self.0,
            })
        } else {
            Ok(())
        }
    }
}

/// A scalable Bloom filter.
#[derive(Debug, Clone, PartialEq)]
pub struct Chain {
    scheme: HashScheme,
    seed: u64,
    params: ChainParams,
    layers: Vec<Layer>,
    items: u64,
}

impl Chain {
    /// An empty chain with one layer, after asking `guard` for the memory.
    pub fn new(
        params: ChainParams,
        scheme: HashScheme,
        seed: u64,
        guard: &dyn AllocGuard,
    ) -> Result<Self, BloomError> {
        let first = layer_size(params.capacity, params.first_layer_error())?;
        guard.admit(info_size(1, first.bytes()), first.bytes())?;
        Ok(Self {
            scheme,
            seed,
            params,
            layers: vec![Layer::new(first.capacity, first.error)?],
            items: 0,
        })
    }

    /// A chain rebuilt from stored layers; checks that every layer is exactly the one this
    /// chain's parameters would have built at its position, and the item counts add up.
    pub fn from_parts(
        params: ChainParams,
        scheme: HashScheme,
        seed: u64,
        layers: Vec<Layer>,
        items: u64,
    ) -> Result<Self, BloomError> {
        if layers.is_empty() || layers.len() > MAX_LAYERS {
            return Err(BloomError::BadData);
        }
        if !params.scaling() && layers.len() != 1 {
            return Err(BloomError::BadData);
        }
        let mut sum = 0u64;
        for (i, layer) in layers.iter().enumerate() {
            if *layer.size() != expected_layer(&params, i)? {
                return Err(BloomError::BadData);
            }
            // Only the last layer may be partly filled: a layer is added when the last is full.
            if i + 1 < layers.len() && !layer.is_full() {
                return Err(BloomError::BadData);
            }
            sum = sum.checked_add(layer.items()).ok_or(BloomError::BadData)?;
        }
        if sum != items {
            return Err(BloomError::BadData);
        }
        Ok(Self {
            scheme,
            seed,
            params,
            layers,
            items,
        })
    }

    /// The parameters the chain was created with.
    pub fn params(&self) -> &ChainParams {
        &self.params
    }

    /// The hash scheme of the chain's bits.
    pub fn scheme(&self) -> HashScheme {
        self.scheme
    }

    /// The seed every item is hashed with.
    pub fn seed(&self) -> u64 {
        self.seed
    }

    /// The layers, oldest first.
    pub fn layers(&self) -> &[Layer] {
        &self.layers
    }

    /// The layers, for chunked restores.
    pub fn layers_mut(&mut self) -> &mut [Layer] {
        &mut self.layers
    }

    /// Items added (`BF.CARD`).
    pub fn items(&self) -> u64 {
        self.items
    }

    /// Sum of layer capacities (`BF.INFO Capacity`).
    pub fn capacity(&self) -> u64 {
        self.layers
            .iter()
            .fold(0u64, |acc, l| acc.saturating_add(l.size().capacity))
    }

    /// Bytes of all bit arrays.
    pub fn bit_bytes(&self) -> u64 {
        self.layers.iter().map(|l| l.size().bytes()).sum()
    }

    /// `BF.INFO Size` and `MEMORY USAGE`: RedisBloom's struct overheads plus the bit arrays.
    pub fn info_size(&self) -> u64 {
        info_size(self.layers.len() as u64, self.bit_bytes())
    }

    /// Hashes `item` with this chain's scheme and seed.
    #[inline]
    pub fn hash(&self, item: &[u8]) -> ItemHash {
        self.scheme.hash(item, self.seed)
    }

    /// Whether `item` is (probably) present.
    pub fn contains(&self, item: &[u8]) -> bool {
        self.contains_hash(self.hash(item))
    }

    /// Whether an item with hash `h` is (probably) present. Newest layers first: they are the
    /// largest and hold the most recent items.
    #[inline]
    pub fn contains_hash(&self, h: ItemHash) -> bool {
        self.layers.iter().rev().any(|l| l.contains(h))
    }

    /// Adds `item`: `Ok(true)` if it was new, `Ok(false)` if it was (probably) present and
    /// nothing changed. Fails, changing nothing, when a needed layer cannot be built.
    pub fn add(&mut self, item: &[u8], guard: &dyn AllocGuard) -> Result<bool, BloomError> {
        self.add_hash(self.hash(item), guard)
    }

    /// [`Chain::add`] for a precomputed hash.
    pub fn add_hash(&mut self, h: ItemHash, guard: &dyn AllocGuard) -> Result<bool, BloomError> {
        if self.contains_hash(h) {
            return Ok(false);
        }
        // `layers` is never empty: constructors make or require at least one layer.
        if self.layers.last().is_some_and(Layer::is_full) {
            self.grow(guard)?;
        }
        let last = self.layers.len() - 1;
        self.layers[last].insert(h);
        self.items += 1;
        Ok(true)
    }

    /// Appends the next layer, or says why it cannot.
    fn grow(&mut self, guard: &dyn AllocGuard) -> Result<(), BloomError> {
        if !self.params.scaling() {
            return Err(BloomError::NonscalingFull);
        }
        if self.layers.len() >= MAX_LAYERS {
            return Err(BloomError::TooManyLayers);
        }
        let next = expected_layer(&self.params, self.layers.len()).map_err(|e| match e {
            BloomError::ErrorTooSmall => BloomError::TooManyLayers,
            other => other,
        })?;
        let after = self
            .bit_bytes()
            .checked_add(next.bytes())
            .ok_or(BloomError::TooLarge)?;
        guard.admit(info_size(self.layers.len() as u64 + 1, after), next.bytes())?;
        self.layers.push(Layer::new(next.capacity, next.error)?);
        Ok(())
    }
}

/// The layer a chain with `params` has at position `index`: capacity × expansion^index at
/// error × 0.5^index. Multiplying by 0.5 is exact in binary floating point, so a loaded layer
/// can be compared to this bit for bit.
pub fn expected_layer(params: &ChainParams, index: usize) -> Result<super::params::LayerSize, BloomError> {
    let mut capacity = params.capacity;
    let mut error = params.first_layer_error();
    for _ in 0..index {
        capacity = capacity
            .checked_mul(u64::from(params.expansion))
            .ok_or(BloomError::TooLarge)?;
        error *= TIGHTENING;
    }
    layer_size(capacity, error)
}
