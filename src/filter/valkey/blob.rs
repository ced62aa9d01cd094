//! One layer as valkey-bloom serializes it (the `bloomfilter` crate's `to_bytes`), in its RDB
//! value and its `BF.LOAD` payload alike: a 45-byte header, then the bitmap.
//!
//! ```text
//! offset size  field
//!      0    1  version: 1
//!      1    8  bitmap bytes B, u64 little-endian: exactly the bytes that follow the header
//!      9    4  probes k, u32 little-endian, at least 1
//!     13   32  seed: SipHash-1-3 key 1 (16 bytes), then key 2 (16 bytes)
//!     45    B  bitmap, bit b = bit (b mod 8) of byte (b / 8)
//! ```

use super::ValkeyError;
use super::hash::SipSeed;
use super::sizing::MAX_HASHES;

/// The blob format's only version.
pub const BLOB_VERSION: u8 = 1;
/// Bytes before the bitmap.
pub const HEADER_BYTES: usize = 45;

/// A layer's blob, checked: its probes, its seed and its bitmap (borrowed from the blob).
#[derive(Debug, Clone, Copy)]
pub struct Blob<'a> {
    /// Probes per item, 1 to [`MAX_HASHES`].
    pub hashes: u32,
    /// The seed its positions were hashed with.
    pub seed: SipSeed,
    /// The bitmap, at least one byte.
    pub bitmap: &'a [u8],
}

impl<'a> Blob<'a> {
    /// Reads a blob, refusing anything valkey-bloom would refuse (another version, a length
    /// that is not the rest of the blob, 0 probes), an empty bitmap (no position to map to)
    /// and more probes than valkey-bloom ever makes ([`MAX_HASHES`]).
    pub fn parse(blob: &'a [u8]) -> Result<Self, ValkeyError> {
        if blob.len() < HEADER_BYTES || blob[0] != BLOB_VERSION {
            return Err(ValkeyError::Decode);
        }
        let (header, bitmap) = blob.split_at(HEADER_BYTES);
        let mut len = [0u8; 8];
        len.copy_from_slice(&header[1..9]);
        let mut k = [0u8; 4];
        k.copy_from_slice(&header[9..13]);
        let (len, hashes) = (u64::from_le_bytes(len), u32::from_le_bytes(k));
        if len != bitmap.len() as u64 || bitmap.is_empty() || !(1..=MAX_HASHES).contains(&hashes) {
            return Err(ValkeyError::Decode);
        }
        let seed = SipSeed::from_slice(&header[13..45]).ok_or(ValkeyError::Decode)?;
        Ok(Self { hashes, seed, bitmap })
    }
}

impl<'a> Blob<'a> {
    /// A layer stored as its parts (scalebloom's own encoding, `codec.rs`), checked as
    /// [`Blob::parse`] checks a blob's header.
    pub fn from_parts(hashes: u32, seed: SipSeed, bitmap: &'a [u8]) -> Result<Self, ValkeyError> {
        if bitmap.is_empty() || !(1..=MAX_HASHES).contains(&hashes) {
            return Err(ValkeyError::Decode);
        }
        Ok(Self { hashes, seed, bitmap })
    }
}

/// Writes a layer's blob: the header of `bitmap_len` bytes, `hashes` probes and `seed`, then
/// the bitmap bytes `write_bitmap` appends (exactly `bitmap_len` of them).
pub fn write(
    out: &mut Vec<u8>,
    bitmap_len: u64,
    hashes: u32,
    seed: &SipSeed,
    write_bitmap: impl FnOnce(&mut Vec<u8>),
) {
    out.push(BLOB_VERSION);
    out.extend_from_slice(&bitmap_len.to_le_bytes());
    out.extend_from_slice(&hashes.to_le_bytes());
    out.extend_from_slice(seed.bytes());
    let start = out.len();
    write_bitmap(out);
    debug_assert_eq!((out.len() - start) as u64, bitmap_len);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn blob(version: u8, len: u64, k: u32, bitmap: &[u8]) -> Vec<u8> {
        let mut b = vec![version];
        b.extend_from_slice(&len.to_le_bytes());
        b.extend_from_slice(&k.to_le_bytes());
        b.extend_from_slice(&[7; 32]);
        b.extend_from_slice(bitmap);
        b
    }

    #[test]
    fn a_blob_round_trips() {
        let b = blob(1, 3, 7, &[1, 2, 3]);
        let p = Blob::parse(&b).unwrap();
        assert_eq!((p.hashes, p.bitmap), (7, &[1u8, 2, 3][..]));
        let mut out = Vec::new();
        write(&mut out, 3, 7, &p.seed, |o| o.extend_from_slice(p.bitmap));
        assert_eq!(out, b);
    }

    #[test]
    fn every_bad_header_is_refused() {
        for bad in [
            blob(2, 3, 7, &[1, 2, 3]),
            blob(1, 4, 7, &[1, 2, 3]),
            blob(1, 2, 7, &[1, 2, 3]),
            blob(1, u64::MAX, 7, &[1, 2, 3]),
            blob(1, 3, 0, &[1, 2, 3]),
            blob(1, 3, MAX_HASHES + 1, &[1, 2, 3]),
            blob(1, 0, 7, &[]),
        ] {
            assert_eq!(Blob::parse(&bad).unwrap_err(), ValkeyError::Decode);
        }
        let short = blob(1, 3, 7, &[1, 2, 3]);
        for n in 0..HEADER_BYTES {
            assert!(Blob::parse(&short[..n]).is_err());
        }
    }
}
