//! A chain's fields as RedisBloom stores them, and the one validation both of its formats (and
//! this module's RDB fields of a chain in its schemes) go through. What each field means, and
//! every option and version RedisBloom ever wrote, is in the [module's](super) header comment.
//!
//! Every field is validated before anything is allocated from it (a layer's bit array is read
//! only after its fields passed), and the checks are stricter than RedisBloom's own, but admit
//! everything RedisBloom itself writes: RedisBloom's bounds, not this module's own limits for
//! new filters, apply to the layer count and errors (see `params.rs`):
//! - counts: 1 to [`MAX_RB_LAYERS`] layers (a count is checked before anything is allocated
//!   for it, and every layer is read from the bytes actually present before the next); the
//!   layers' item counts add up to the chain's; every
//!   layer but the last is full (RedisBloom adds a layer only then); a nonscaling chain has one
//!   layer; items ≤ capacity in each layer;
//! - options: only `NOROUND` (1), `FORCE64` (4) and `NONSCALING` (8); unknown bits and
//!   `ENTS_IS_BITS` (2, never set by RedisBloom's commands) are refused;
//! - per layer, what `bloom_init` makes: error in `[MIN_RB_LAYER_ERROR, 1)` (above 0, as
//!   RedisBloom 8's loader requires) and equal to the first layer's halved a whole number of
//!   times; bits per entry equal to `|ln(error)| / ln(2)^2` (to 1e-12 relative); hashes =
//!   `ceil(ln(2) × bpe)` in `1..=MAX_RB_HASHES`; `n2` = 0 exactly
//!   when the options say `NOROUND`; bits a positive multiple of 64 up to [`MAX_LAYER_BITS`],
//!   equal to bytes × 8, and to `max(64, 2^n2)` for power-of-two layers (or 0 with a
//!   `max(1, 2^n2 / 8)`-byte array: RedisBloom before 2.2 stored no bit count for them);
//!   `NOROUND` bits are `(u64)(capacity × bpe)` rounded up to whole bytes (2.2.0–2.2.14) or
//!   words (since), so a forged capacity cannot make a layer accept more items than its bits
//!   were sized for; every layer after the first is exactly what `bloom_init` makes of the
//!   previous layer's capacity × growth at its error (capacity, hashes, n2);
//! - growth: at least 1 when scaling, at most `u32::MAX`.

use std::fmt;

use super::{OPT_FORCE64, OPT_NONSCALING, OPT_NOROUND};
use crate::filter::FilterError;
use crate::filter::bloom::Chain;
use crate::filter::bloom::bits::BitArray;
use crate::filter::bloom::chunks;
use crate::filter::bloom::layer::{Contents, Layer, array_bits};
use crate::filter::bloom::params::{
    MAX_LAYER_BITS, MAX_RB_HASHES, MAX_RB_LAYERS, MIN_RB_LAYER_ERROR, RbLayerSize, TIGHTENING,
    bits_per_entry, rb_layer_size,
};
use crate::filter::guard::AllocGuard;
use crate::filter::hash::HashScheme;

/// ln(2), as RedisBloom writes it (see `params.rs`).
#[allow(clippy::approx_constant)]
const LN2: f64 = 0.693147180559945;

/// Why RedisBloom data was refused: logged by `rdb_load`, and turned into
/// [`FilterError::BadData`] for replies.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Refusal {
    /// An encoding version this module does not read.
    Version(i32),
    /// Option bits this module does not know (or `ENTS_IS_BITS`).
    Options(u64),
    /// A field that fails validation (its name), or a short input.
    Field(&'static str),
    /// The filter would need more memory than allowed (LOADCHUNK headers only).
    Memory(FilterError),
}

impl fmt::Display for Refusal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Refusal::Version(0) => write!(
                f,
                "RedisBloom encoding version 0 (development builds before 1.0, 2017) is not \
                 supported"
            ),
            Refusal::Version(v) => write!(f, "unknown MBbloom-- encoding version {v}"),
            Refusal::Options(o) => write!(f, "unsupported RedisBloom option bits {o:#x}"),
            Refusal::Field(name) => write!(f, "invalid RedisBloom field: {name}"),
            Refusal::Memory(e) => write!(f, "filter refused: {e:?}"),
        }
    }
}

impl From<Refusal> for FilterError {
    fn from(r: Refusal) -> Self {
        match r {
            Refusal::Memory(e) => e,
            _ => FilterError::BadData,
        }
    }
}

pub(super) fn field(name: &'static str) -> impl Fn(FilterError) -> Refusal {
    move |_| Refusal::Field(name)
}

/// One layer's fields as RedisBloom stores them.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RawLink {
    /// `entries`: capacity.
    pub capacity: u64,
    /// `error`.
    pub error: f64,
    /// `hashes`.
    pub hashes: u64,
    /// `bpe`.
    pub bpe: f64,
    /// `bits` (0 for power-of-two layers written by RedisBloom 1.0–2.0).
    pub bits: u64,
    /// `n2`.
    pub n2: u64,
    /// `size`: items in this layer.
    pub items: u64,
}

/// A validated layer: its size, how many times its error halves the first's, its items, and
/// the length of its stored bit array.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LinkMeta {
    /// The layer's sizing (bits rounded up to a multiple of 64 for tiny legacy layers).
    pub size: RbLayerSize,
    /// error = first layer's error × 0.5^halvings.
    pub halvings: u16,
    /// Items in the layer.
    pub items: u64,
    /// Bytes of the stored bit array (`bits / 8`, or fewer for tiny legacy layers).
    pub stored_bytes: u64,
}

/// A validated RedisBloom chain without its bits.
#[derive(Debug, Clone, PartialEq)]
pub struct RbMeta {
    /// Hash scheme (from `FORCE64`).
    pub scheme: HashScheme,
    /// `NOROUND`.
    pub noround: bool,
    /// Growth; 0 when nonscaling.
    pub expansion: u32,
    /// Total items.
    pub items: u64,
    /// Layers, oldest first.
    pub layers: Vec<LinkMeta>,
}

/// The chain-level fields, validated: (scheme, noround, expansion).
pub(super) fn check_options(options: u64, growth: u64) -> Result<(HashScheme, bool, u32), Refusal> {
    if options & !(OPT_NOROUND | OPT_FORCE64 | OPT_NONSCALING) != 0 {
        return Err(Refusal::Options(options));
    }
    let scheme =
        if options & OPT_FORCE64 != 0 { HashScheme::Murmur64 } else { HashScheme::Murmur32 };
    let expansion = if options & OPT_NONSCALING != 0 {
        0
    } else {
        match u32::try_from(growth) {
            Ok(g) if g >= 1 => g,
            _ => return Err(Refusal::Field("growth")),
        }
    };
    Ok((scheme, options & OPT_NOROUND != 0, expansion))
}

/// Validates one layer's fields (see the file comment). `first_error` is layer 0's error and
/// `request` the capacity RedisBloom asked this layer for (the previous layer's × growth);
/// both `None` for layer 0.
pub(super) fn check_link(
    raw: &RawLink,
    first_error: Option<f64>,
    request: Option<u64>,
    noround: bool,
) -> Result<LinkMeta, Refusal> {
    let e = raw.error;
    if !(MIN_RB_LAYER_ERROR..1.0).contains(&e) {
        return Err(Refusal::Field("error"));
    }
    let halvings = match first_error {
        None => 0u16,
        Some(first) => {
            // At most MAX_RB_LAYERS steps: halving any error below 1 reaches 0 by then.
            let mut x = first;
            let mut t = 0u16;
            while x.to_bits() != e.to_bits() {
                if x < e || t == u16::MAX {
                    return Err(Refusal::Field("error (not the first layer's halved)"));
                }
                x *= TIGHTENING;
                t += 1;
            }
            t
        }
    };
    let bpe = raw.bpe;
    let want_bpe = bits_per_entry(e).abs();
    if !bpe.is_finite() || bpe <= 0.0 || ((bpe - want_bpe) / want_bpe).abs() > 1e-12 {
        return Err(Refusal::Field("bpe"));
    }
    let hashes = (LN2 * bpe).ceil();
    if raw.hashes == 0 || raw.hashes > u64::from(MAX_RB_HASHES) || raw.hashes as f64 != hashes {
        return Err(Refusal::Field("hashes"));
    }
    if (raw.n2 == 0) != noround || raw.n2 > 43 {
        return Err(Refusal::Field("n2"));
    }
    if raw.capacity == 0 || raw.items > raw.capacity {
        return Err(Refusal::Field("capacity"));
    }
    let raw_bits = raw.capacity as f64 * bpe;
    if !raw_bits.is_finite() || raw_bits >= MAX_LAYER_BITS as f64 {
        return Err(Refusal::Field("capacity"));
    }
    let (bits, stored_bytes) = if raw.n2 > 0 {
        // Stored as 0 before 2.2, as whole bytes in 2.2.0–2.2.14, as whole words since.
        let pow = 1u64 << raw.n2;
        match raw.bits {
            0 => (pow.max(64), (pow / 8).max(1)),
            b if b == pow.max(8) || b == pow.max(64) => (pow.max(64), b / 8),
            _ => return Err(Refusal::Field("bits")),
        }
    } else {
        // bloom_init: (u64)(entries × bpe), at least 1, rounded up to whole bytes (2.2.0–2.2.14)
        // or whole words (since).
        let floor = (raw_bits as u64).max(1);
        if raw.bits != floor.div_ceil(8) * 8 && raw.bits != floor.div_ceil(64) * 64 {
            return Err(Refusal::Field("bits"));
        }
        (raw.bits, raw.bits / 8)
    };
    if bits > MAX_LAYER_BITS || raw_bits > bits as f64 + 1.0 {
        return Err(Refusal::Field("capacity"));
    }
    if let Some(request) = request {
        // Layers after the first are exactly what bloom_init made of the request.
        let want = rb_layer_size(request, e, noround).map_err(|_| Refusal::Field("capacity"))?;
        if (want.capacity, u64::from(want.hashes), u64::from(want.n2))
            != (raw.capacity, raw.hashes, raw.n2)
        {
            return Err(Refusal::Field("capacity (not the previous layer's × growth)"));
        }
    }
    let size = RbLayerSize {
        capacity: raw.capacity,
        error: e,
        bpe,
        bits,
        hashes: raw.hashes as u32,
        n2: raw.n2 as u8,
    };
    Ok(LinkMeta { size, halvings, items: raw.items, stored_bytes })
}

/// The arguments of [`check_link`] for the next layer of `meta`: (first error, request).
pub(super) fn next_link(meta: &RbMeta) -> Result<(Option<f64>, Option<u64>), Refusal> {
    match (meta.layers.first(), meta.layers.last()) {
        (Some(first), Some(last)) => {
            let request = last
                .size
                .capacity
                .checked_mul(u64::from(meta.expansion))
                .ok_or(Refusal::Field("capacity"))?;
            Ok((Some(first.size.error), Some(request)))
        }
        _ => Ok((None, None)),
    }
}

/// Checks the chain-level counts of validated layers.
pub(super) fn check_counts(meta: &RbMeta) -> Result<(), Refusal> {
    let n = meta.layers.len();
    if n == 0 || n > MAX_RB_LAYERS || (meta.expansion == 0 && n != 1) {
        return Err(Refusal::Field("layer count"));
    }
    let mut sum = 0u64;
    for (i, l) in meta.layers.iter().enumerate() {
        if i + 1 < n && l.items != l.size.capacity {
            return Err(Refusal::Field("size (a layer before the last is not full)"));
        }
        sum = sum.checked_add(l.items).ok_or(Refusal::Field("size"))?;
    }
    if sum != meta.items {
        return Err(Refusal::Field("size (layers do not add up)"));
    }
    Ok(())
}

impl RbMeta {
    /// Bytes of all the layers' bit arrays (as this module holds them).
    pub fn bit_bytes(&self) -> u64 {
        self.layers.iter().map(|l| array_bits(l.size.bits) / 8).sum()
    }

    /// Builds the chain from one bit array per layer.
    pub fn into_chain(
        self,
        arrays: Vec<BitArray>,
        contents: Contents,
    ) -> Result<Chain, FilterError> {
        if arrays.len() != self.layers.len() {
            return Err(FilterError::BadData);
        }
        let first_error = self.layers[0].size.error;
        let layers = self
            .layers
            .iter()
            .zip(arrays)
            .map(|(l, bits)| Layer::from_redisbloom(&l.size, l.halvings, l.items, bits, contents))
            .collect::<Result<Vec<_>, _>>()?;
        Chain::from_redisbloom(
            self.scheme,
            self.noround,
            self.expansion,
            first_error,
            layers,
            self.items,
        )
    }

    /// Builds the chain with zeroed bit arrays (`BF.LOADCHUNK key 1 <header>`; marked
    /// [`Chain::awaiting_chunks`]), after asking `guard` for the memory.
    pub fn allocate(self, guard: &dyn AllocGuard) -> Result<Chain, FilterError> {
        let bits: Vec<u64> = self.layers.iter().map(|l| array_bits(l.size.bits)).collect();
        chunks::allocate_for_chunks(guard, self.bit_bytes(), &bits, |arrays| {
            self.into_chain(arrays, Contents::Fresh)
        })
    }
}
