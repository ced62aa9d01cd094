//! The one rule every stored chain obeys, and what a stored layer claims of itself: checked by
//! the decoders (`codec`) before a loaded chain's bits are allocated, and again when its layers
//! are assembled ([`Chain::from_parts`](super::chain::Chain::from_parts)).

use super::layer::Layer;
use super::params::{ChainParams, LayerSize, Layout, MAX_LAYERS, TIGHTENING};
use crate::filter::FilterError;

/// What a stored layer says of itself: what [`check_layers`] compares with the parameters.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LayerClaim {
    /// Items the layer is built for.
    pub capacity: u64,
    /// Probes per item.
    pub hashes: u64,
    /// Bits in its array.
    pub bits: u64,
    /// Items added to it.
    pub items: u64,
}

impl LayerClaim {
    /// The claim of a layer in memory.
    pub fn of(layer: &Layer) -> Self {
        Self {
            capacity: layer.capacity(),
            hashes: u64::from(layer.hashes()),
            bits: layer.len_bits(),
            items: layer.items(),
        }
    }
}

/// The one rule every stored chain obeys, checked before a loaded chain's bits are allocated
/// (by the decoders in `codec`) and again when its layers are assembled ([`Chain::from_parts`](super::Chain::from_parts)):
/// 1 to [`MAX_LAYERS`] layers (exactly 1 when nonscaling); each layer exactly the one `params`
/// build at its position ([`expected_layer`]); no layer holds more than its capacity, and every
/// layer but the last is full (a layer is added only when the last is full); the items add up
/// to `items`. A counting chain's layers count every add and delete of the items they hold
/// (an item already present is counted again in its layer, full or not), so there only the
/// sum is checked. Layers are sized for `layout` ([`expected_layer_in`]). Returns each
/// layer's expected size.
pub fn check_layers(
    params: &ChainParams,
    layout: Layout,
    claims: &[LayerClaim],
    items: u64,
    counting: bool,
) -> Result<Vec<LayerSize>, FilterError> {
    if claims.is_empty() || claims.len() > MAX_LAYERS || (!params.scaling() && claims.len() != 1) {
        return Err(FilterError::BadData);
    }
    let mut sizes = Vec::with_capacity(claims.len());
    let mut sum = 0u64;
    for (i, c) in claims.iter().enumerate() {
        let want = expected_layer_in(params, layout, i).map_err(|_| FilterError::BadData)?;
        let sized = c.capacity == want.capacity
            && c.hashes == u64::from(want.hashes)
            && c.bits == want.bits;
        let last = i + 1 == claims.len();
        let counts = counting || (c.items <= c.capacity && (last || c.items == c.capacity));
        if !sized || !counts {
            return Err(FilterError::BadData);
        }
        sum = sum.checked_add(c.items).ok_or(FilterError::BadData)?;
        sizes.push(want);
    }
    if sum != items {
        return Err(FilterError::BadData);
    }
    Ok(sizes)
}

/// The layer a chain with `params` has at position `index`: capacity × expansion^index at
/// error × 0.5^index. Multiplying by 0.5 is exact in binary floating point, so a loaded layer
/// can be compared to this bit for bit.
pub fn expected_layer(params: &ChainParams, index: usize) -> Result<LayerSize, FilterError> {
    expected_layer_in(params, Layout::Standard, index)
}

/// [`expected_layer`] of a chain whose layers are of `layout`.
pub fn expected_layer_in(
    params: &ChainParams,
    layout: Layout,
    index: usize,
) -> Result<LayerSize, FilterError> {
    let mut capacity = params.capacity;
    for _ in 0..index {
        capacity =
            capacity.checked_mul(u64::from(params.expansion)).ok_or(FilterError::TooLarge)?;
    }
    layout.layer_size(capacity, layer_error(params, index))
}

/// The error rate of the layer at position `index`: the first layer's × 0.5^index.
pub fn layer_error(params: &ChainParams, index: usize) -> f64 {
    (0..index).fold(params.first_layer_error(), |error, _| error * TIGHTENING)
}
