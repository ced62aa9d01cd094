//! scalebloom's own encoding of a valkey-bloom object: what an object loaded from
//! valkey-bloom's data is saved as (RDB, `DUMP`, full sync), under type `bloomfltr` with
//! encoding version [`OWN_ENCVER`] — above valkey-bloom's 1, which valkey-bloom itself refuses
//! rather than misreads. Written in typed fields, so the same code serves an RDB file and a
//! byte buffer.
//!
//! ```text
//! u64    expansion          0: nonscaling
//! f64    error
//! f64    tightening
//! u64    is_seed_random     0 or 1
//! bytes  seed               32 bytes
//! u64    layers
//! per layer, oldest first:
//!   u64    capacity
//!   u64    items
//!   u64    hashes
//!   bytes  bitmap
//! ```
//! Unlike valkey-bloom's RDB value, every layer carries its items and the seed is stored once.
//! Loaded through [`Builder`], so every check of valkey-bloom's own data applies.

use super::ValkeyError;
use super::blob::Blob;
use super::hash::SipSeed;
use super::object::{Builder, Settings, StoredLayer, ValkeyBloom};
use super::sizing::MAX_LAYERS;
use crate::filter::fields::{FieldReader, FieldWriter};
use crate::filter::guard::AllocGuard;

/// The encoding version of this format under type `bloomfltr`.
pub const OWN_ENCVER: i32 = 2;

/// Writes `bloom` in this format.
pub fn write(bloom: &ValkeyBloom, w: &mut impl FieldWriter) {
    let s = bloom.settings();
    w.u64(u64::from(s.expansion));
    w.f64(s.error);
    w.f64(s.tightening);
    w.u64(u64::from(s.is_seed_random));
    w.bytes(s.seed.bytes());
    w.u64(bloom.layers().len() as u64);
    let mut bitmap = Vec::new();
    for layer in bloom.layers() {
        w.u64(layer.capacity());
        w.u64(layer.items());
        w.u64(u64::from(layer.hashes()));
        bitmap.clear();
        layer.bits().for_each_segment_bytes(|b| bitmap.extend_from_slice(b));
        bitmap.truncate(layer.bytes() as usize);
        w.bytes(&bitmap);
    }
}

/// Reads an object written by [`write()`], asking `guard` before each bitmap is allocated.
pub fn read<R: FieldReader>(r: &mut R, guard: &dyn AllocGuard) -> Result<ValkeyBloom, ValkeyError> {
    let bad = |_| ValkeyError::Decode;
    let expansion = u32::try_from(r.u64().map_err(bad)?).map_err(|_| ValkeyError::Decode)?;
    let error = r.f64().map_err(bad)?;
    let tightening = r.f64().map_err(bad)?;
    let is_seed_random = match r.u64().map_err(bad)? {
        0 => false,
        1 => true,
        _ => return Err(ValkeyError::Decode),
    };
    let seed = SipSeed::from_slice(r.bytes().map_err(bad)?.as_ref()).ok_or(ValkeyError::Decode)?;
    let layers = r.u64().map_err(bad)?;
    if layers == 0 || layers >= MAX_LAYERS {
        return Err(ValkeyError::Decode);
    }
    let mut b = Builder::new(Settings { expansion, error, tightening, seed, is_seed_random })?;
    for _ in 0..layers {
        let capacity = r.u64().map_err(bad)?;
        let items = r.u64().map_err(bad)?;
        let hashes = u32::try_from(r.u64().map_err(bad)?).map_err(|_| ValkeyError::Decode)?;
        let bitmap = r.bytes().map_err(bad)?;
        let blob = Blob::from_parts(hashes, seed, bitmap.as_ref())?;
        b.push(&StoredLayer { blob, capacity, items }, guard)?;
    }
    b.finish()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::filter::fields::SliceReader;
    use crate::filter::guard::{MaxFilterBytes, Unlimited};

    fn object() -> ValkeyBloom {
        let s = Settings {
            expansion: 2,
            error: 0.01,
            tightening: 0.7,
            seed: SipSeed::new([9; 32]),
            is_seed_random: true,
        };
        let mut b = ValkeyBloom::new(s, 100, &Unlimited).unwrap();
        for i in 0..500 {
            b.add(format!("i{i}").as_bytes(), &Unlimited).unwrap();
        }
        b
    }

    #[test]
    fn an_object_round_trips() {
        let b = object();
        assert!(b.layers().len() >= 3);
        let mut out = Vec::new();
        write(&b, &mut out);
        let back = read(&mut SliceReader::new(&out), &Unlimited).unwrap();
        assert_eq!(back, b);
        assert!(read(&mut SliceReader::new(&out), &MaxFilterBytes(b.size() - 1)).is_err());
    }

    #[test]
    fn every_truncation_and_byte_change_is_refused_or_sound() {
        let mut out = Vec::new();
        write(&object(), &mut out);
        for n in 0..out.len() {
            assert!(read(&mut SliceReader::new(&out[..n]), &Unlimited).is_err(), "{n}");
        }
        for at in (0..out.len()).step_by(7) {
            for v in [0u8, 1, 0x80, 0xff] {
                let mut m = out.clone();
                m[at] = v;
                if let Ok(b) = read(&mut SliceReader::new(&m), &MaxFilterBytes(1 << 27)) {
                    let mut again = Vec::new();
                    write(&b, &mut again);
                    assert_eq!(read(&mut SliceReader::new(&again), &Unlimited).unwrap(), b);
                }
            }
        }
    }
}
