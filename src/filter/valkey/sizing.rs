//! valkey-bloom's sizing: a layer's bytes and probes (the `bloomfilter` crate's rules), the
//! error and capacity of each layer a scaling object appends, the object's memory as
//! valkey-bloom counts it (its `BF.INFO Size` and its per-object memory limit), and the
//! largest capacity an object can scale to (`BF.INFO MAXSCALEDCAPACITY`, `VALIDATESCALETO`).
//!
//! Every figure is computed as valkey-bloom computes it, in the same floating-point steps, so
//! that a filter made or grown here has the bytes and probes valkey-bloom would give it; every
//! integer step is checked or saturating where valkey-bloom's would overflow.

use super::ValkeyError;

/// `size_of::<BloomObject>()` in valkey-bloom 1.0 (x86-64): the object's own bytes.
pub const OBJECT_BYTES: u64 = 48;
/// Bytes per slot of the object's list of filters (a `Box` each).
pub const SLOT_BYTES: u64 = 8;
/// `size_of::<BloomFilter>() + size_of::<bloomfilter::Bloom<[u8]>>()`: each layer's fixed
/// bytes besides its bitmap (24 + 184).
pub const FILTER_BYTES: u64 = 208;

/// The most layers valkey-bloom lets an object have (`i32::MAX`; the memory limit stops
/// growth long before).
pub const MAX_LAYERS: u64 = i32::MAX as u64;

/// The most probes a layer may have. valkey-bloom never makes more than 1,027: its smallest
/// layer error is just above `f64::MIN_POSITIVE`, about 1,474 bits per item, and rounding the
/// bitmap up to whole bytes adds at most 8 bits to a one-item layer, so
/// `round((1474.3 + 8) · ln 2) = 1027`. A stored layer with more is refused: each probe of
/// every lookup would cost that much.
pub const MAX_HASHES: u32 = 1027;

/// The smallest layer error valkey-bloom accepts on scale-out: `fp · t^i` must be above this.
pub const MIN_LAYER_ERROR: f64 = f64::MIN_POSITIVE;

/// Bytes of the bitmap of a layer for `capacity` items at `error` (the `bloomfilter` crate's
/// `compute_bitmap_size`): `ceil(capacity · ln(error) / (−8 · ln(2)²))`, saturating at
/// `u64::MAX` as its conversion does. `error` must be in (0, 1) and `capacity` ≥ 1.
pub fn bitmap_bytes(capacity: u64, error: f64) -> u64 {
    let ln2 = std::f64::consts::LN_2;
    // Rust's float-to-integer conversion saturates, as the crate's `as usize` does.
    (capacity as f64 * error.ln() / (-8.0 * ln2 * ln2)).ceil() as u64
}

/// Probes of a layer of `bits` bits for `capacity` items (the crate's `optimal_k_num`):
/// `max(1, round(bits / capacity · ln 2))`.
pub fn hashes(bits: u64, capacity: u64) -> u32 {
    let k = (bits as f64 / capacity as f64 * std::f64::consts::LN_2).round() as u32;
    k.max(1)
}

/// The error of layer `index` (0-based) of an object of error `error` and tightening ratio
/// `tightening`: `error · tightening^index`, or [`ValkeyError::FalsePositiveZero`] when that is
/// not above [`MIN_LAYER_ERROR`] (valkey-bloom's `calculate_fp_rate`).
pub fn layer_error(error: f64, tightening: f64, index: u64) -> Result<f64, ValkeyError> {
    // valkey-bloom passes the index as an i32; the layer bound keeps it there.
    let index = i32::try_from(index).map_err(|_| ValkeyError::MaxFilters)?;
    let e = error * tightening.powi(index);
    if e > MIN_LAYER_ERROR { Ok(e) } else { Err(ValkeyError::FalsePositiveZero) }
}

/// valkey-bloom's bytes for one layer of `capacity` items at `error` (`BloomFilter::compute_size`).
pub fn layer_bytes(capacity: u64, error: f64) -> u64 {
    FILTER_BYTES.saturating_add(bitmap_bytes(capacity, error))
}

/// Slots in the object's list of filters after growing to `layers` from one by pushes (Rust's
/// `Vec` growth: 1, then 4, 8, 16, …), as valkey-bloom's limit checks assume.
pub fn slots(layers: u64) -> u64 {
    if layers <= 1 { 1 } else { layers.max(4).checked_next_power_of_two().unwrap_or(u64::MAX) }
}

/// The object's memory as valkey-bloom counts it (`BF.INFO Size`, `MEMORY USAGE`, the
/// per-object limit), for `layers` layers whose bitmaps total `bitmap_bytes`.
pub fn object_bytes(layers: u64, bitmap_bytes: u64) -> u64 {
    OBJECT_BYTES
        .saturating_add(SLOT_BYTES.saturating_mul(slots(layers)))
        .saturating_add(FILTER_BYTES.saturating_mul(layers))
        .saturating_add(bitmap_bytes)
}

/// The total capacity an object created with these parameters reaches before the next
/// layer's error would not be above [`MIN_LAYER_ERROR`] or the object would pass `limit`
/// bytes (valkey-bloom's `calculate_max_scaled_capacity`). With `target`, the capacity at
/// which it first reaches at least `target` instead, or why it cannot
/// ([`ValkeyError::ScaleToExceedsLimit`], [`ValkeyError::ScaleToFalsePositiveZero`]).
///
/// Bounded work: every round adds at least [`FILTER_BYTES`] to the size checked against
/// `limit`, and the error falls geometrically, so the loop ends.
pub fn max_scaled_capacity(
    capacity: u64,
    error: f64,
    target: Option<u64>,
    tightening: f64,
    expansion: u32,
    limit: u64,
) -> Result<u64, ValkeyError> {
    let (mut layer_capacity, mut total, mut layers, mut used) = (capacity, 0u64, 0u64, 0u64);
    while target.is_none_or(|t| total < t) {
        let Ok(e) = layer_error(error, tightening, layers) else {
            return match target {
                None => Ok(total),
                Some(_) => Err(ValkeyError::ScaleToFalsePositiveZero),
            };
        };
        let layer = layer_bytes(layer_capacity, e);
        let size = OBJECT_BYTES
            .saturating_add(SLOT_BYTES.saturating_mul(slots(layers + 1)))
            .saturating_add(used)
            .saturating_add(layer);
        if size > limit {
            return match target {
                None => Ok(total),
                Some(_) => Err(ValkeyError::ScaleToExceedsLimit),
            };
        }
        used = used.saturating_add(layer);
        total = total.checked_add(layer_capacity).ok_or(ValkeyError::BadCapacity)?;
        layer_capacity = next_capacity(layer_capacity, expansion)?;
        layers += 1;
    }
    Ok(total)
}

/// The capacity of the layer appended after one of `capacity`: `capacity × expansion`, which
/// must stay within valkey-bloom's `i64` ([`ValkeyError::BadCapacity`] otherwise).
pub fn next_capacity(capacity: u64, expansion: u32) -> Result<u64, ValkeyError> {
    capacity
        .checked_mul(u64::from(expansion))
        .filter(|&c| c <= i64::MAX as u64)
        .ok_or(ValkeyError::BadCapacity)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The sizes valkey-bloom gave the fixtures' layers (formats.md, the `bloomfilter` crate).
    #[test]
    fn sizing_matches_valkey_bloom() {
        assert_eq!(bitmap_bytes(1000, 0.01), 1199);
        assert_eq!(hashes(9592, 1000), 7);
        assert_eq!(bitmap_bytes(5000, 0.001) * 8, 71_888);
        assert_eq!(hashes(71_888, 5000), 10);
        // The 16 MB fixture: BF.INFO Size 16,714,210 = 264 fixed bytes + this bitmap.
        assert_eq!(bitmap_bytes(9_300_000, 0.001), 16_713_946);
        assert_eq!(hashes(16_713_946 * 8, 9_300_000), 10);
    }

    #[test]
    fn the_hash_bound_holds_for_every_layer_valkey_bloom_can_make() {
        let e = f64::from_bits(MIN_LAYER_ERROR.to_bits() + 1);
        for capacity in [1u64, 2, 3, 7, 1000, 1 << 30] {
            let bytes = bitmap_bytes(capacity, e);
            assert!(hashes(bytes * 8, capacity) <= MAX_HASHES, "{capacity}");
        }
    }

    #[test]
    fn layer_errors_tighten_until_they_underflow() {
        assert_eq!(layer_error(0.01, 0.5, 0), Ok(0.01));
        assert_eq!(layer_error(0.01, 0.5, 3), Ok(0.01 * 0.125));
        assert_eq!(layer_error(0.01, 0.5, 2000), Err(ValkeyError::FalsePositiveZero));
    }

    /// `BF.INFO Max scaled capacity` of the fixtures (128 MiB limit): `BF.RESERVE k 0.01 1000`
    /// reports 32,767,000, with the default expansion 2 and tightening 0.5.
    #[test]
    fn max_scaled_capacity_matches_valkey_bloom() {
        let limit = 128 << 20;
        assert_eq!(max_scaled_capacity(1000, 0.01, None, 0.5, 2, limit), Ok(32_767_000));
        assert_eq!(max_scaled_capacity(1000, 0.01, Some(1000), 0.5, 2, limit), Ok(1000));
        assert_eq!(max_scaled_capacity(1000, 0.01, Some(3001), 0.5, 2, limit), Ok(7000));
        assert_eq!(
            max_scaled_capacity(1000, 0.01, Some(32_767_001), 0.5, 2, limit),
            Err(ValkeyError::ScaleToExceedsLimit)
        );
        assert_eq!(
            max_scaled_capacity(1, 0.5, Some(u64::MAX), 0.01, 1, u64::MAX),
            Err(ValkeyError::ScaleToFalsePositiveZero)
        );
    }

    #[test]
    fn slots_grow_as_a_vec_does() {
        let got: Vec<u64> = (1..=9).map(slots).collect();
        assert_eq!(got, [1, 4, 4, 4, 8, 8, 8, 8, 16]);
        assert_eq!(object_bytes(1, 1199), 1463);
    }
}
