//! The `BF.LOAD` payload: what valkey-bloom's AOF rewrite writes for each key
//! (`BF.LOAD <key> <payload>`), and what `BF.LOAD` creates an object from.
//!
//! ```text
//! version        u8    1
//! expansion      u32   0: nonscaling
//! error          f64
//! tightening     f64
//! is_seed_random u8    0 or 1
//! layers         u64   count, then per layer:
//!   blob         u64 length, then the blob (`blob.rs`)
//!   items        i64
//!   capacity     i64
//! ```
//! Every number is little-endian, fixed width (bincode 1.x's default encoding of the object's
//! fields in declaration order). Unlike the RDB value, every layer carries its own items.

use super::ValkeyError;
use super::blob::{self, Blob};
use super::object::{Settings, StoredLayer, ValkeyBloom};
use crate::filter::guard::AllocGuard;

/// The payload format's only version (valkey-bloom's `BLOOM_OBJECT_VERSION`).
pub const PAYLOAD_VERSION: u8 = 1;

/// Reads fixed-width little-endian fields from a slice.
struct Fields<'a>(&'a [u8]);

impl<'a> Fields<'a> {
    fn take(&mut self, n: u64) -> Result<&'a [u8], ValkeyError> {
        let n = usize::try_from(n).map_err(|_| ValkeyError::Decode)?;
        if self.0.len() < n {
            return Err(ValkeyError::Decode);
        }
        let (head, rest) = self.0.split_at(n);
        self.0 = rest;
        Ok(head)
    }
    fn array<const N: usize>(&mut self) -> Result<[u8; N], ValkeyError> {
        let mut a = [0u8; N];
        a.copy_from_slice(self.take(N as u64)?);
        Ok(a)
    }
    fn u64(&mut self) -> Result<u64, ValkeyError> {
        self.array().map(u64::from_le_bytes)
    }
    fn i64(&mut self) -> Result<u64, ValkeyError> {
        // valkey-bloom's counts are i64; a negative one is no count.
        u64::try_from(i64::from_le_bytes(self.array()?)).map_err(|_| ValkeyError::Decode)
    }
}

/// The parts of a payload, checked for shape but not yet for meaning.
struct Parsed<'a> {
    settings: Settings,
    layers: Vec<StoredLayer<'a>>,
}

fn parse(payload: &[u8]) -> Result<Parsed<'_>, ValkeyError> {
    let (&version, rest) = payload.split_first().ok_or(ValkeyError::Decode)?;
    if version != PAYLOAD_VERSION {
        return Err(ValkeyError::UnsupportedVersion);
    }
    let mut f = Fields(rest);
    let expansion = u32::from_le_bytes(f.array()?);
    let error = f64::from_bits(f.u64()?);
    let tightening = f64::from_bits(f.u64()?);
    let is_seed_random = match f.array::<1>()? {
        [0] => false,
        [1] => true,
        _ => return Err(ValkeyError::Decode),
    };
    let count = f.u64()?;
    // Not reserved from the count, which nothing vouches for: each layer is at least 61
    // bytes, so the list grows only as far as the payload's own bytes go.
    let mut layers = Vec::new();
    let mut seed = None;
    for _ in 0..count {
        let len = f.u64()?;
        let blob = Blob::parse(f.take(len)?)?;
        seed.get_or_insert(blob.seed);
        let items = f.i64()?;
        let capacity = f.i64()?;
        layers.push(StoredLayer { blob, capacity, items });
    }
    if !f.0.is_empty() {
        return Err(ValkeyError::Decode);
    }
    let seed = seed.ok_or(ValkeyError::Decode)?;
    Ok(Parsed { settings: Settings { expansion, error, tightening, seed, is_seed_random }, layers })
}

/// The object a `BF.LOAD` payload holds, or why it is refused, in valkey-bloom's order: the
/// version ([`ValkeyError::UnsupportedVersion`]; an empty payload is
/// [`ValkeyError::Decode`]), the shape (any short, long or malformed field:
/// [`ValkeyError::Decode`]), then the settings and layers ([`ValkeyBloom::from_stored`]),
/// then the memory `guard` admits, before any bitmap is allocated.
pub fn decode(payload: &[u8], guard: &dyn AllocGuard) -> Result<ValkeyBloom, ValkeyError> {
    let Parsed { settings, layers } = parse(payload)?;
    ValkeyBloom::from_stored(settings, &layers, guard)
}

/// The `BF.LOAD` payload of `bloom`, as valkey-bloom's AOF rewrite writes it.
pub fn encode(bloom: &ValkeyBloom) -> Vec<u8> {
    let s = bloom.settings();
    let mut out = vec![PAYLOAD_VERSION];
    out.extend_from_slice(&s.expansion.to_le_bytes());
    out.extend_from_slice(&s.error.to_bits().to_le_bytes());
    out.extend_from_slice(&s.tightening.to_bits().to_le_bytes());
    out.push(u8::from(s.is_seed_random));
    out.extend_from_slice(&(bloom.layers().len() as u64).to_le_bytes());
    for layer in bloom.layers() {
        let len = blob::HEADER_BYTES as u64 + layer.bytes();
        out.extend_from_slice(&len.to_le_bytes());
        blob::write(&mut out, layer.bytes(), layer.hashes(), &s.seed, |o| {
            let start = o.len();
            layer.bits().for_each_segment_bytes(|b| o.extend_from_slice(b));
            o.truncate(start + layer.bytes() as usize);
        });
        out.extend_from_slice(&layer.items().to_le_bytes());
        out.extend_from_slice(&layer.capacity().to_le_bytes());
    }
    out
}
