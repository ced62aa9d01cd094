//! valkey-bloom's RDB value: module type `bloomfltr`, encoding version 1, read field by field
//! through Redis' typed calls (a [`FieldReader`]). `RESTORE` of its `DUMP` payload reads the
//! same fields.
//!
//! ```text
//! u64    layers            at least 1
//! u64    expansion         0: nonscaling; at most u32::MAX
//! f64    error
//! f64    tightening
//! u64    is_seed_random    0 or 1
//! per layer, oldest first:
//!   bytes  blob            (blob.rs)
//!   u64    capacity
//! u64    items             of the newest layer only; every older layer is full
//! ```

use super::ValkeyError;
use super::blob::Blob;
use super::hash::SipSeed;
use super::object::{Builder, Settings, StoredLayer, ValkeyBloom};
use super::sizing::MAX_LAYERS;
use crate::filter::fields::FieldReader;
use crate::filter::guard::AllocGuard;

/// valkey-bloom's module type name.
pub const TYPE_NAME: &str = "bloomfltr";
/// The only encoding version valkey-bloom 1.0 writes (and the highest it reads).
pub const ENCVER: i32 = 1;

/// Reads one value of encoding version `encver` from `r`, asking `guard` before each layer's
/// bitmap is allocated. Refuses what valkey-bloom's loader refuses (another encoding version,
/// a fixed-seed object whose seed is not the fixed one) and everything
/// [`Builder`] refuses.
pub fn read<R: FieldReader>(
    r: &mut R,
    encver: i32,
    guard: &dyn AllocGuard,
) -> Result<ValkeyBloom, ValkeyError> {
    if encver != ENCVER {
        return Err(ValkeyError::UnsupportedVersion);
    }
    let bad = |_| ValkeyError::Decode;
    let layers = r.u64().map_err(bad)?;
    if layers == 0 {
        return Err(ValkeyError::Decode);
    }
    if layers >= MAX_LAYERS {
        return Err(ValkeyError::MaxFilters);
    }
    let expansion = u32::try_from(r.u64().map_err(bad)?).map_err(|_| ValkeyError::BadExpansion)?;
    let error = r.f64().map_err(bad)?;
    let tightening = r.f64().map_err(bad)?;
    let is_seed_random = match r.u64().map_err(bad)? {
        0 => false,
        1 => true,
        _ => return Err(ValkeyError::Decode),
    };
    let mut builder: Option<Builder> = None;
    for i in 0..layers {
        let bytes = r.bytes().map_err(bad)?;
        let blob = Blob::parse(bytes.as_ref())?;
        let capacity = r.u64().map_err(bad)?;
        // Older layers are saved without their items: valkey-bloom loads them full.
        let items = if i + 1 == layers { r.u64().map_err(bad)? } else { capacity };
        let b = match &mut builder {
            Some(b) => b,
            None => builder.insert(Builder::new(settings(
                expansion,
                error,
                tightening,
                blob.seed,
                is_seed_random,
            ))?),
        };
        b.push(&StoredLayer { blob, capacity, items }, guard)?;
    }
    builder.ok_or(ValkeyError::Decode)?.finish()
}

fn settings(
    expansion: u32,
    error: f64,
    tightening: f64,
    seed: SipSeed,
    is_seed_random: bool,
) -> Settings {
    Settings { expansion, error, tightening, seed, is_seed_random }
}
