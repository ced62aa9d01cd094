//! Sizing of one layer, exactly as RedisBloom sizes it, and the limits every filter obeys.
//!
//! For a layer that must hold `capacity` items at false-positive rate `error`:
//! ```text
//! bpe    = -ln(error) / ln(2)^2          bits per entry
//! bits   = floor(capacity * bpe), rounded UP to a multiple of 64
//! hashes = ceil(ln(2) * bpe)             probes per item
//! ```
//! The constants are RedisBloom's own literals so the same RESERVE gives the same bytes, bits
//! and hashes (and so the same `BF.INFO` / `BF.DEBUG` numbers).

use crate::filter::FilterError;
use crate::filter::masks::BLOCK_BITS;

/// ln(2)^2, as RedisBloom writes it.
const LN2_SQUARED: f64 = 0.480453013918201;
/// ln(2), as RedisBloom writes it: this literal, not `std::f64::consts::LN_2`, so the hash
/// count rounds exactly as RedisBloom's does.
#[allow(clippy::approx_constant)]
const LN2: f64 = 0.693147180559945;

/// Smallest capacity a RESERVE accepts.
pub const MIN_CAPACITY: u64 = 1;
/// Largest initial capacity a RESERVE accepts (RedisBloom 8's bound: 2^30).
pub const MAX_CAPACITY: u64 = 1 << 30;
/// Largest expansion factor (RedisBloom 8's bound). 0 means "nonscaling".
pub const MAX_EXPANSION: u64 = 32768;
/// Each new layer's error is the previous one times this (RedisBloom's tightening ratio).
pub const TIGHTENING: f64 = 0.5;
/// Most probes per item in one layer. `hashes ≈ log2(1/error)`, so a layer error of 2^-64
/// would already need 64 probes; smaller errors need absurd numbers of probes and, halved layer
/// after layer, underflow towards 0 (a 0-hash layer says "present" to everything — the
/// RedisBloom bug this bound exists to prevent).
pub const MAX_HASHES: u32 = 64;
/// Smallest per-layer error: 1e-19, just above 2^-64, the smallest round number whose layer
/// needs no more than [`MAX_HASHES`] probes with RedisBloom's sizing constants.
pub const MIN_LAYER_ERROR: f64 = 1e-19;
/// Most layers in one chain. With tightening 0.5 and the error floor above, no chain can grow
/// past ~64 layers anyway; the explicit bound keeps every loop and every loaded count small.
/// Chains in RedisBloom's schemes have RedisBloom's bounds instead ([`MAX_RB_LAYERS`]).
pub const MAX_LAYERS: usize = 64;
/// Smallest layer error of a chain in RedisBloom's schemes: the smallest positive double
/// (2^-1074). RedisBloom's own rule is `error > 0` (`bloom_init` for new layers, and RedisBloom
/// 8's `bloom_validate_integrity` for loaded ones), so a chain it made, halving the error layer
/// after layer, can reach any positive error.
pub const MIN_RB_LAYER_ERROR: f64 = 5e-324;
/// Most probes per item in a layer of a chain in RedisBloom's schemes: `ceil(ln(2) × bpe)` at
/// [`MIN_RB_LAYER_ERROR`], where bpe = 1074 / ln(2) (RedisBloom's constants give 1074.0000…).
pub const MAX_RB_HASHES: u32 = 1075;
/// Most layers of a chain in RedisBloom's schemes: each layer's error is the previous one's
/// × 0.5 and stays above 0, so from a first error below 1 (LOADCHUNK headers; below 0.5 from
/// RedisBloom's commands, which halve the requested rate) there are at most 1,075 of them
/// (the unit test below counts them from every first error). RedisBloom 8's loaders take
/// any count of layers whose error is above 0; RedisBloom 2.x's RDB loader asserts fewer
/// than 1,000 (2.8 crashes reloading more). A chain of 1,075 layers costs 1,075 × 64 bytes of
/// layer headers here, as its `SBLink`s cost in RedisBloom.
pub const MAX_RB_LAYERS: usize = 1075;
/// Largest bit count of one layer (2^43 bits = 1 TiB), far above any memory limit; keeps every
/// product below 2^64.
pub const MAX_LAYER_BITS: u64 = 1 << 43;
/// Bytes RedisBloom counts for the chain header in `BF.INFO Size` (sizeof(SBChain)).
pub const CHAIN_OVERHEAD: u64 = 32;
/// Bytes RedisBloom counts per layer in `BF.INFO Size` (sizeof(SBLink)).
pub const LAYER_OVERHEAD: u64 = 64;

/// The size of one layer: what `BF.DEBUG` prints for it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LayerSize {
    /// Items this layer is built for.
    pub capacity: u64,
    /// False-positive rate this layer is built for.
    pub error: f64,
    /// Bits per entry: -ln(error)/ln(2)^2.
    pub bpe: f64,
    /// Bits in the array (multiple of 64).
    pub bits: u64,
    /// Probes per item.
    pub hashes: u32,
}

impl LayerSize {
    /// Bytes of bit array.
    pub fn bytes(&self) -> u64 {
        self.bits / 8
    }
}

/// Whether `error` is a usable false-positive rate: strictly between 0 and 1.
pub fn error_in_range(error: f64) -> bool {
    error > 0.0 && error < 1.0
}

/// Bits per entry for a false-positive rate: `-ln(error) / ln(2)^2`, RedisBloom's formula.
pub fn bits_per_entry(error: f64) -> f64 {
    -(error.ln() / LN2_SQUARED)
}

/// Sizes one layer for `capacity` items at `error`, or says why it cannot be built.
#[allow(clippy::neg_cmp_op_on_partial_ord)] // the negations are how NaN is refused
pub fn layer_size(capacity: u64, error: f64) -> Result<LayerSize, FilterError> {
    // `!(error < 1.0)` also refuses NaN; `!(error >= MIN)` also refuses 0 and negatives (a
    // tiny requested rate halved for the first layer can round to 0).
    if capacity == 0 || !(error < 1.0) {
        return Err(FilterError::BadParameter);
    }
    if !(error >= MIN_LAYER_ERROR) {
        return Err(FilterError::ErrorTooSmall);
    }
    let bpe = bits_per_entry(error);
    let raw_bits = capacity as f64 * bpe;
    // f64 holds every integer below 2^53 exactly; MAX_LAYER_BITS (2^43) is far below that,
    // so the comparison is exact and the cast below cannot saturate.
    if !raw_bits.is_finite() || raw_bits >= MAX_LAYER_BITS as f64 {
        return Err(FilterError::TooLarge);
    }
    let floor_bits = (raw_bits as u64).max(1);
    let bits = floor_bits.div_ceil(64) * 64;
    let hashes = (LN2 * bpe).ceil() as u32;
    if hashes == 0 || hashes > MAX_HASHES {
        return Err(FilterError::ErrorTooSmall);
    }
    Ok(LayerSize { capacity, error, bpe, bits, hashes })
}

/// Blocked layers size their bits per item in steps of 1/`BPE_STEPS` bit.
const BPE_STEPS: u64 = 16;
/// Blocked layers are sized for this fraction of their error by the model
/// ([`blocked_error`]), a margin for the variance of a measured rate.
const BLOCKED_MARGIN: f64 = 0.95;

/// How a native layer places an item's probes, chosen when the chain is made and kept by
/// every layer it grows (`LAYOUT` of `BF.RESERVE` and `BF.INSERT`, the `bf-layout` default).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Layout {
    /// Probes anywhere in the layer, sized as RedisBloom sizes its layers ([`layer_size`]).
    #[default]
    Standard,
    /// Every probe of an item inside one 512-bit block (a cache line), sized for the blocked
    /// layout's error ([`blocked_layer_size`]): one cache miss per item per layer.
    Blocked,
}

impl Layout {
    /// The size of a layer of this layout for `capacity` items at `error`.
    pub fn layer_size(self, capacity: u64, error: f64) -> Result<LayerSize, FilterError> {
        match self {
            Layout::Standard => layer_size(capacity, error),
            Layout::Blocked => blocked_layer_size(capacity, error),
        }
    }
}

/// The false-positive rate of a blocked Bloom filter (Putze, Sanders and Singler, 2007) with
/// `bpe` bits per item and `k` probes per item, each probe uniform in a block of
/// [`BLOCK_BITS`]: the block an absent item probes holds `i` items with the Poisson
/// probability of a mean load `λ = BLOCK_BITS / bpe`, and then each probe finds its bit set
/// with probability `1 − (1 − 1/B)^(k·i)`:
/// ```text
/// error = Σ_i  e^-λ λ^i / i!  ·  (1 − (1 − 1/B)^(k·i))^k
/// ```
/// (RocksDB's FastLocalBloom: 0.9576% at 10 bits per item and 6 probes.) Only additions,
/// multiplications, `exp` and `ln`, in a fixed order: the same inputs give the same bits.
pub fn blocked_error(bpe: f64, k: u32) -> f64 {
    let lambda = BLOCK_BITS as f64 / bpe;
    // P(a bit stays clear after one probe of one item), to the k probes of one item.
    let clear_per_item = ((BLOCK_BITS as f64 - 1.0) / BLOCK_BITS as f64).powi(k as i32);
    let (mut pmf, mut clear, mut total) = ((-lambda).exp(), 1.0f64, 0.0f64);
    let mut i = 0u32;
    // Past the mean, stop once the Poisson terms no longer matter (or a hard bound).
    while i < 100_000 && !(f64::from(i) > lambda && pmf < 1e-40) {
        total += pmf * (1.0 - clear).powi(k as i32);
        i += 1;
        pmf *= lambda / f64::from(i);
        clear *= clear_per_item;
    }
    total
}

/// The best probe count at `bpe` bits per item in a blocked layer and its error: the error
/// is unimodal in `k`, so the scan stops at the first `k` that does worse.
fn best_blocked_probes(bpe: f64) -> (u32, f64) {
    let mut best = (1, blocked_error(bpe, 1));
    for k in 2..=MAX_HASHES {
        let e = blocked_error(bpe, k);
        if e >= best.1 {
            break;
        }
        best = (k, e);
    }
    best
}

/// Sizes one blocked layer ([`Layout::Blocked`]) for `capacity` items at `error`: the fewest
/// bits per item, in steps of 1/16, at which the best probe count gives at most
/// 0.95 × `error` by [`blocked_error`]; bits = `ceil(capacity × bpe)` rounded up to whole
/// blocks. The size's `bpe` is [`bits_per_entry`] of the error, as for standard layers. Costs about 4.6% more bits than [`layer_size`] at 1%, 8.7% at 0.1%, 15% at 0.01%;
/// the cost grows as the error falls (a block holds few items' worth of bits).
#[allow(clippy::neg_cmp_op_on_partial_ord)] // the negations are how NaN is refused
pub fn blocked_layer_size(capacity: u64, error: f64) -> Result<LayerSize, FilterError> {
    // The standard sizing first: the same refusals (capacity 0, error range, error floor).
    let standard = layer_size(capacity, error)?;
    let target = error * BLOCKED_MARGIN;
    let steps = |bpe: f64| (bpe * BPE_STEPS as f64).floor() as u64;
    // Binary search over bpe = n / 16: the best error falls as the bits grow.
    // At least 3/4 bit per item: a block then holds at most ~683 items on average, where
    // e^-λ stays a normal number (the model needs it).
    let mut lo = steps(standard.bpe).max(12);
    let mut hi = (steps(standard.bpe * 16.0) + 1).max(lo);
    if !(best_blocked_probes(hi as f64 / BPE_STEPS as f64).1 <= target) {
        return Err(FilterError::ErrorTooSmall);
    }
    while lo < hi {
        let mid = lo + (hi - lo) / 2;
        if best_blocked_probes(mid as f64 / BPE_STEPS as f64).1 <= target {
            hi = mid;
        } else {
            lo = mid + 1;
        }
    }
    let (hashes, _) = best_blocked_probes(hi as f64 / BPE_STEPS as f64);
    let raw = capacity.checked_mul(hi).ok_or(FilterError::TooLarge)?.div_ceil(BPE_STEPS);
    let bits =
        raw.max(1).div_ceil(BLOCK_BITS).checked_mul(BLOCK_BITS).ok_or(FilterError::TooLarge)?;
    if bits >= MAX_LAYER_BITS {
        return Err(FilterError::TooLarge);
    }
    // `bpe` stays RedisBloom's figure for the error, as for every native layer (a chain's
    // layer sizes carry it from the error alone); the bits per item really spent are
    // `bits / capacity`.
    Ok(LayerSize { capacity, error, bpe: standard.bpe, bits, hashes })
}

/// The size of one layer as RedisBloom's `bloom_init` makes it (`deps/bloom/bloom.c`), for
/// filters in RedisBloom's schemes: what new layers of an imported filter get.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RbLayerSize {
    /// `entries`: the capacity asked for, plus, for power-of-two layers, the items the extra
    /// bits hold (`itemDiff`); the next layer asks for this × the growth.
    pub capacity: u64,
    /// The layer's error rate.
    pub error: f64,
    /// Bits per entry: `|ln(error)| / ln(2)^2`.
    pub bpe: f64,
    /// Bits in the array: `bytes × 8`, a multiple of 64.
    pub bits: u64,
    /// Probes per item: `ceil(ln(2) × bpe)`.
    pub hashes: u32,
    /// log2 of the position modulus for power-of-two layers (`2^n2` ≤ `bits`); 0 when positions
    /// are taken modulo `bits` (`NOROUND`).
    pub n2: u8,
}

/// RedisBloom's `bloom_init(entries, error, options)`, with the same floating-point steps, or
/// why the layer cannot be built within RedisBloom's bounds (error above 0, so at most
/// [`MAX_RB_HASHES`] probes) and this module's size limit ([`MAX_LAYER_BITS`]). New filters
/// are held to this module's own error floor before this is called (`Chain::new`):
/// ```text
/// bpe = |ln(error) / ln(2)^2|
/// NOROUND:  bits = max(1, (u64)(entries × bpe)), n2 = 0
/// else:     n2 = logb(entries × bpe) + 1, bits = 2^n2,
///           entries += (u64)((u64)(bits − entries × bpe) / bpe)
/// bytes = ceil(bits / 64) × 8, bits = bytes × 8, hashes = ceil(ln(2) × bpe)
/// ```
#[allow(clippy::neg_cmp_op_on_partial_ord)] // the negations are how NaN is refused
pub fn rb_layer_size(entries: u64, error: f64, noround: bool) -> Result<RbLayerSize, FilterError> {
    if entries == 0 || !(error < 1.0) {
        return Err(FilterError::BadParameter);
    }
    if !(error >= MIN_RB_LAYER_ERROR) {
        return Err(FilterError::ErrorTooSmall);
    }
    let bpe = bits_per_entry(error).abs();
    let raw = entries as f64 * bpe;
    if !raw.is_finite() || raw >= MAX_LAYER_BITS as f64 {
        return Err(FilterError::TooLarge);
    }
    let (capacity, bits, n2) = if noround {
        (entries, (raw as u64).max(1), 0u8)
    } else {
        if raw < 1.0 {
            // logb would be negative: RedisBloom stores it in a uint8_t (undefined behaviour).
            return Err(FilterError::BadParameter);
        }
        // logb of a normal double ≥ 1 is its unbiased exponent: floor(log2(raw)).
        let n2 = ((raw.to_bits() >> 52) & 0x7ff) as u32 - 1023 + 1;
        let bits = 1u64 << n2; // raw < 2^43, so n2 ≤ 43
        if bits > MAX_LAYER_BITS {
            return Err(FilterError::TooLarge);
        }
        // `size_t bitDiff = bits - (entries * bpe)`: a double, truncated.
        let bit_diff = (bits as f64 - raw) as u64;
        // `size_t itemDiff = bitDiff / bpe`.
        let item_diff = (bit_diff as f64 / bpe) as u64;
        let capacity = entries.checked_add(item_diff).ok_or(FilterError::TooLarge)?;
        (capacity, bits, n2 as u8)
    };
    let bits = bits.div_ceil(64) * 64;
    let hashes = (LN2 * bpe).ceil() as u32;
    if hashes == 0 || hashes > MAX_RB_HASHES {
        return Err(FilterError::ErrorTooSmall);
    }
    Ok(RbLayerSize { capacity, error, bpe, bits, hashes, n2 })
}

/// The parameters of a new chain, checked: what RESERVE / INSERT / auto-create ask for.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ChainParams {
    /// Requested overall false-positive rate.
    pub error: f64,
    /// Capacity of the first layer.
    pub capacity: u64,
    /// Growth factor of each new layer's capacity; 0 when nonscaling.
    pub expansion: u32,
}

impl ChainParams {
    /// Checks and builds the parameters; `expansion` 0 makes a nonscaling chain.
    pub fn new(error: f64, capacity: u64, expansion: u64) -> Result<Self, FilterError> {
        let params = Self::in_ranges(error, capacity, expansion)?;
        // The first layer must be buildable, or the chain is useless.
        layer_size(capacity, params.first_layer_error())?;
        Ok(params)
    }

    /// [`ChainParams::new`] without sizing the first layer, for a caller that builds the chain
    /// at once: `Chain::new` sizes it and refuses the same parameters with the same error.
    pub fn in_ranges(error: f64, capacity: u64, expansion: u64) -> Result<Self, FilterError> {
        if !error_in_range(error) {
            return Err(FilterError::ErrorRange);
        }
        if !(MIN_CAPACITY..=MAX_CAPACITY).contains(&capacity) {
            return Err(FilterError::CapacityRange);
        }
        if expansion > MAX_EXPANSION {
            return Err(FilterError::ExpansionRange);
        }
        Ok(Self { error, capacity, expansion: expansion as u32 })
    }

    /// Whether the chain may add layers.
    pub fn scaling(&self) -> bool {
        self.expansion != 0
    }

    /// The first layer's error: half the requested rate when scaling, so the sum over all
    /// layers (error/2 + error/4 + ...) stays below the requested rate; the rate itself when not.
    pub fn first_layer_error(&self) -> f64 {
        if self.scaling() { self.error * TIGHTENING } else { self.error }
    }
}

/// `BF.INFO Size` of a chain: RedisBloom's struct overheads plus the bit arrays.
pub fn info_size(layers: u64, bit_bytes: u64) -> u64 {
    CHAIN_OVERHEAD.saturating_add(LAYER_OVERHEAD.saturating_mul(layers)).saturating_add(bit_bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// (error, capacity) → (bits, hashes), from RedisBloom 2.8's BF.DEBUG.
    #[test]
    fn sizing_matches_redisbloom() {
        let table: &[(f64, u64, u64, u32)] = &[
            (0.01, 100, 960, 7),
            (0.005, 100, 1152, 8),
            (0.005, 1000, 11072, 8),
            (0.0025, 2000, 24960, 9),
            (0.00125, 4000, 55680, 10),
            (0.001, 1000, 14400, 10),
            (0.0005, 1000, 15872, 11),
            (0.1, 1000, 4800, 4),
            (0.05, 10, 64, 5),
            (0.01, 1, 64, 7),
            (0.01, 900_000_000, 8_626_552_576, 7),
            (0.00005, 12345, 254_528, 15),
            (0.3, 7, 64, 2),
        ];
        for &(error, capacity, bits, hashes) in table {
            let s = layer_size(capacity, error).unwrap();
            assert_eq!((s.bits, s.hashes), (bits, hashes), "error {error} capacity {capacity}");
            assert_eq!(s.bytes(), bits / 8);
        }
    }

    /// RedisBloom 2.8's BF.DEBUG for NOROUND layers (options 5) equals our native sizing, and
    /// power-of-two layers (options 4, RedisBloom 1.1–2.0) round up and grow their capacity.
    #[test]
    fn redisbloom_sizing() {
        for &(e, c) in &[(0.005, 1000u64), (0.01, 100), (0.001, 1000), (0.0025, 2000)] {
            let rb = rb_layer_size(c, e, true).unwrap();
            let ours = layer_size(c, e).unwrap();
            assert_eq!((rb.capacity, rb.bits, rb.hashes, rb.n2), (c, ours.bits, ours.hashes, 0));
        }
        // 1000 items at 0.01: 9585.06 bits → 2^14; (16384 − 9585.06) / 9.585 = 709 more items.
        let p = rb_layer_size(1000, 0.01, false).unwrap();
        assert_eq!((p.capacity, p.bits, p.hashes, p.n2), (1709, 16384, 7, 14));
        // Tiny layers still get 64 bits, positions modulo 2^n2.
        let t = rb_layer_size(1, 0.1, false).unwrap();
        assert_eq!((t.bits, t.n2), (64, 3));
        assert_eq!(rb_layer_size(1, 0.9, false).unwrap_err(), FilterError::BadParameter);
        assert_eq!(rb_layer_size(0, 0.1, true).unwrap_err(), FilterError::BadParameter);
        assert_eq!(rb_layer_size(1 << 40, 0.01, true).unwrap_err(), FilterError::TooLarge);
    }

    /// The number of positive errors a chain can have when each is the previous × 0.5,
    /// from `first`.
    fn halving_chain(first: f64) -> usize {
        let (mut e, mut n) = (first, 0);
        while e > 0.0 {
            e *= TIGHTENING;
            n += 1;
        }
        n
    }

    /// RedisBloom's bounds: the longest halving chain from any first error below 1 has
    /// `MAX_RB_LAYERS` layers, its last error is `MIN_RB_LAYER_ERROR`, which needs
    /// `MAX_RB_HASHES` probes; RedisBloom's commands (first error below 0.5) make one fewer.
    #[test]
    fn redisbloom_bounds_are_the_longest_halving_chain() {
        assert_eq!(MIN_RB_LAYER_ERROR, f64::from_bits(1));
        let mut longest = 0;
        let mut x = 1.0f64;
        // Every first error of the form (1 − 2^-53) × 2^-j and a spread of others.
        for _ in 0..2000 {
            x = f64::from_bits(x.to_bits() - 1);
            longest = longest.max(halving_chain(x));
        }
        for i in 1..200_000u64 {
            longest = longest.max(halving_chain(i as f64 / 200_000.0));
        }
        assert_eq!(longest, MAX_RB_LAYERS);
        assert_eq!(halving_chain(f64::from_bits(0.5f64.to_bits() - 1)), MAX_RB_LAYERS - 1);
        assert_eq!(halving_chain(0.05), 1071); // BF.RESERVE k 0.1 … EXPANSION 1
        let s = rb_layer_size(1, MIN_RB_LAYER_ERROR, true).unwrap();
        assert_eq!(s.hashes, MAX_RB_HASHES);
        assert_eq!(rb_layer_size(1, 0.0, true).unwrap_err(), FilterError::ErrorTooSmall);
        // Our own floor is far above: new filters never get near these.
        assert!(layer_size(1, 1e-20).is_err());
    }

    #[test]
    fn one_billion_items_at_one_percent_is_about_1_2_gb() {
        let s = layer_size(1_000_000_000, 0.01).unwrap();
        assert!(s.bytes() > 1_150_000_000 && s.bytes() < 1_250_000_000, "{}", s.bytes());
    }

    #[test]
    fn first_layer_error_is_halved_only_when_scaling() {
        let p = ChainParams::new(0.01, 100, 2).unwrap();
        assert_eq!(p.first_layer_error(), 0.005);
        let p = ChainParams::new(0.01, 100, 0).unwrap();
        assert_eq!(p.first_layer_error(), 0.01);
        assert!(!p.scaling());
    }

    #[test]
    fn every_invalid_parameter_is_rejected() {
        use FilterError::*;
        let cases: &[(f64, u64, u64, FilterError)] = &[
            (0.0, 100, 2, ErrorRange),
            (1.0, 100, 2, ErrorRange),
            (-0.5, 100, 2, ErrorRange),
            (f64::NAN, 100, 2, ErrorRange),
            (f64::INFINITY, 100, 2, ErrorRange),
            (0.01, 0, 2, CapacityRange),
            (0.01, MAX_CAPACITY + 1, 2, CapacityRange),
            (0.01, u64::MAX, 2, CapacityRange),
            (0.01, 100, MAX_EXPANSION + 1, ExpansionRange),
            (0.01, 100, 4_294_967_297, ExpansionRange),
            (1e-30, 100, 2, ErrorTooSmall),
            (5e-324, 100, 2, ErrorTooSmall),
        ];
        for &(e, c, x, ref want) in cases {
            assert_eq!(ChainParams::new(e, c, x).unwrap_err(), *want, "{e} {c} {x}");
        }
        assert!(ChainParams::new(0.999, MAX_CAPACITY, MAX_EXPANSION).is_ok());
        assert!(ChainParams::new(2e-19, 1, 1).is_ok());
        assert_eq!(ChainParams::new(1.9e-19, 1, 1).unwrap_err(), ErrorTooSmall);
    }

    #[test]
    fn layer_size_refuses_huge_products() {
        assert_eq!(layer_size(u64::MAX, 0.01).unwrap_err(), FilterError::TooLarge);
        assert_eq!(layer_size(1 << 40, 1e-19).unwrap_err(), FilterError::TooLarge);
    }

    #[test]
    fn hashes_never_exceed_the_bound() {
        let s = layer_size(10, MIN_LAYER_ERROR).unwrap();
        assert_eq!(s.hashes, MAX_HASHES);
        assert_eq!(layer_size(10, 9e-20).unwrap_err(), FilterError::ErrorTooSmall);
        assert_eq!(layer_size(10, 0.0).unwrap_err(), FilterError::ErrorTooSmall);
    }
}
