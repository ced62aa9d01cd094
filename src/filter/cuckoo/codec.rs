//! Every byte format of a cuckoo filter: RDB field sequences (RedisBloom's and ours), the
//! `CF.SCANDUMP` header (RedisBloom's and ours) and the chunks after it.
//!
//! # RDB, type `MBbloomCF`
//! RedisBloom's encoding version 4 (2.2 to 8.x, `CFRdbSave`), typed fields:
//! ```text
//! u64 numFilters  u64 numBuckets  u64 numItems  u64 numDeletes
//! u64 bucketSize  u64 maxIterations  u64 expansion
//! per sub-filter: u64 numBuckets, string (its numBuckets × bucketSize one-byte slots)
//! ```
//! Versions 1–3 (RedisBloom ≤ 2.0) stored `numFilters, numBuckets, numItems` and the slots,
//! but hashed with 32-bit MurmurHash2, other fingerprints and other alternate indexes;
//! RedisBloom ≥ 2.2 reads those bits with its 64-bit hashing, so their items are not found
//! there either. They are refused here ([`FilterError::UnsupportedEncoding`]).
//!
//! This module's version [`RDB_ENCODING_VERSION`] (512): the fingerprint width, then version
//! 4's fields, each sub-filter's slots (little-endian) as strings of at most
//! [`SEGMENT_BYTES`], so loading never holds a second copy of a whole large sub-filter.
//! ```text
//! u64 fingerprintBits (8, 16, 32)
//! u64 numFilters  u64 numBuckets  u64 numItems  u64 numDeletes
//! u64 bucketSize  u64 maxIterations  u64 expansion
//! per sub-filter: u64 numBuckets, ceil(bytes / 64 MiB) strings
//! ```
//!
//! Every field is validated before anything is allocated ([`Shape::validate`]): bucket size
//! 1..=255, max iterations 1..=65535, expansion 0 or a power of two ≤ 32768 (0 only with one
//! sub-filter), base bucket count a power of two ≤ 2^56 − 1, 1..=65535 sub-filters whose
//! bucket counts are exactly `numBuckets × expansion^i`, items ≤ slots; then the guard admits
//! the total size; then each string's length must be exactly what the layout says.
//!
//! # `CF.SCANDUMP` / `CF.LOADCHUNK`
//! Iterator 0 answers `[1, header]`. RedisBloom's header (`CFHeader`, packed little-endian,
//! 38 bytes): `u64 numItems, u64 numBuckets, u64 numDeletes, u64 numFilters, u16 bucketSize,
//! u16 maxIterations, u16 expansion`. Filters with 16- or 32-bit fingerprints use this
//! module's header instead (54 bytes): `"SCCUCKOO"`, `u32` version 1, `u32` fingerprint bits,
//! then the same 38 bytes; RedisBloom refuses it (`Invalid header`: not 38 bytes long).
//!
//! Chunks: the slot bytes of all sub-filters laid end to end; iterator `it ≥ 1` is byte
//! `it − 1`. A chunk is at most 16 MiB and never crosses a sub-filter's end; `SCANDUMP`
//! answers `[it + length, chunk]` and `LOADCHUNK` gets that same iterator, so it writes the
//! chunk at byte `it − length − 1` (RedisBloom's asymmetry, kept so chunks go both ways).
//! RedisBloom answers `[0, nil]` at once for a filter with no items.

use std::borrow::Cow;

use super::filter::{FixedWidthCuckoo, Shape};
use super::fingerprint::{Fingerprint, FingerprintWidth};
use crate::filter::FilterError;
use crate::filter::fields::{FieldReader, FieldWriter};
use crate::filter::guard::AllocGuard;

/// RedisBloom's current (and last) encoding version of `MBbloomCF`.
pub const REDISBLOOM_ENCODING_VERSION: i32 = 4;
/// This module's encoding version of `MBbloomCF` (RedisBloom's versions stay below 512).
pub const RDB_ENCODING_VERSION: i32 = 512;
/// Largest string of slots in this module's RDB encoding.
pub const SEGMENT_BYTES: u64 = 64 << 20;
/// Largest `CF.SCANDUMP` chunk (RedisBloom's `MAX_SCANDUMP_SIZE`).
pub const MAX_CHUNK_BYTES: u64 = 16 << 20;
/// Length of RedisBloom's `CFHeader`.
pub const REDISBLOOM_HEADER_BYTES: usize = 38;
/// Magic at the start of this module's header.
pub const HEADER_MAGIC: [u8; 8] = *b"SCCUCKOO";
/// Version of this module's header.
pub const HEADER_VERSION: u32 = 1;
/// Length of this module's header.
pub const HEADER_BYTES: usize = 16 + REDISBLOOM_HEADER_BYTES;

/// A parsed, validated `CF.LOADCHUNK key 1 <header>`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Header {
    /// Fingerprint width.
    pub width: FingerprintWidth,
    /// The filter's description.
    pub shape: Shape,
}

impl Header {
    /// The header of `shape` with fingerprints of `width`: RedisBloom's for 8 bits, ours else.
    pub fn encode(&self) -> Vec<u8> {
        let s = &self.shape;
        let mut out = Vec::with_capacity(HEADER_BYTES);
        if self.width != FingerprintWidth::W8 {
            out.extend_from_slice(&HEADER_MAGIC);
            out.extend_from_slice(&HEADER_VERSION.to_le_bytes());
            out.extend_from_slice(&self.width.bits().to_le_bytes());
        }
        for v in [s.items, s.base_buckets, s.deletes, u64::from(s.filters)] {
            out.extend_from_slice(&v.to_le_bytes());
        }
        for v in [s.bucket_size, s.max_iterations, s.expansion] {
            out.extend_from_slice(&v.to_le_bytes());
        }
        out
    }

    /// Parses either header. `BadHeader` if its length is neither (RedisBloom's `Invalid
    /// header`), `BadData` if a field is invalid (RedisBloom's `Couldn't create filter!`).
    pub fn parse(data: &[u8]) -> Result<Self, FilterError> {
        let (width, fields) = match data.len() {
            REDISBLOOM_HEADER_BYTES => (FingerprintWidth::W8, data),
            HEADER_BYTES if data.starts_with(&HEADER_MAGIC) => {
                if data[8..12] != HEADER_VERSION.to_le_bytes() {
                    return Err(FilterError::BadData);
                }
                let bits = u32::from_le_bytes([data[12], data[13], data[14], data[15]]);
                let width = FingerprintWidth::from_bits(u64::from(bits))
                    .filter(|w| *w != FingerprintWidth::W8)
                    .ok_or(FilterError::BadData)?;
                (width, &data[16..])
            }
            _ => return Err(FilterError::BadHeader),
        };
        let u64_at = |i: usize| {
            let mut b = [0u8; 8];
            b.copy_from_slice(&fields[i..i + 8]);
            u64::from_le_bytes(b)
        };
        let u16_at = |i: usize| u64::from(u16::from_le_bytes([fields[i], fields[i + 1]]));
        let shape = Shape::validate(
            u64_at(24),
            u64_at(8),
            u64_at(0),
            u64_at(16),
            u16_at(32),
            u16_at(34),
            u16_at(36),
            width.bytes(),
        )?;
        Ok(Self { width, shape })
    }
}

/// One step of `CF.SCANDUMP`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ScanStep<'a> {
    /// Iterator 0: reply `[1, header]`.
    Header(Vec<u8>),
    /// A chunk: reply `[next, data]`.
    Chunk {
        /// The iterator to send next (and to give `CF.LOADCHUNK` with this chunk).
        next: u64,
        /// The chunk's bytes.
        data: Cow<'a, [u8]>,
    },
    /// Nothing more: reply `[0, nil]`.
    End,
}

impl<F: Fingerprint> FixedWidthCuckoo<F> {
    /// The header `CF.SCANDUMP key 0` answers.
    pub fn header(&self) -> Header {
        Header { width: F::WIDTH, shape: self.shape() }
    }

    /// Where byte `offset` of all sub-filters' slot bytes lies: `(sub-filter, offset in it,
    /// bytes from there to its end)`; `None` past the end.
    ///
    /// With expansion 0 or 1 every sub-filter has the same length, so the sub-filter is a
    /// division: a filter of 65,535 one-bucket sub-filters (which a header may describe) is
    /// dumped in linear, not quadratic, time (found by the `cuckoo_chunks` fuzz target).
    fn locate(&self, offset: u64) -> Option<(usize, u64, u64)> {
        if self.shape().expansion <= 1 {
            let len = self.sub(0).byte_len();
            let i = usize::try_from(offset.checked_div(len)?).ok()?;
            if i >= self.filter_count() {
                return None;
            }
            let inner = offset % len;
            return Some((i, inner, len - inner));
        }
        let mut start = 0u64;
        for (i, f) in self.subs().enumerate() {
            let len = f.byte_len();
            if offset - start < len {
                return Some((i, offset - start, len - (offset - start)));
            }
            start += len;
        }
        None
    }

    /// The chunk at iterator `it` (≥ 1): `(next iterator, bytes)`, `None` past the end (or for
    /// 0). RedisBloom's `CF_GetEncodedChunk` for every iterator it hands out; for an
    /// iterator inside a sub-filter no larger than a chunk (which it never hands out) it
    /// would send the whole sub-filter from its start, this sends the rest from there.
    pub fn chunk(&self, it: u64) -> Option<(u64, Cow<'_, [u8]>)> {
        let (i, inner, rest) = self.locate(it.checked_sub(1)?)?;
        let len = rest.min(MAX_CHUNK_BYTES);
        let next = it.checked_add(len)?;
        Some((next, self.sub(i).read_bytes(inner, len)))
    }

    /// `CF.SCANDUMP key it`, as RedisBloom answers it (an empty filter ends at once).
    pub fn scandump(&self, it: u64) -> ScanStep<'_> {
        if self.items() == 0 {
            return ScanStep::End;
        }
        if it == 0 {
            return ScanStep::Header(self.header().encode());
        }
        match self.chunk(it) {
            Some((next, data)) => ScanStep::Chunk { next, data },
            None => ScanStep::End,
        }
    }

    /// `CF.LOADCHUNK key it data` for `it ≥ 2`: writes `data` at byte `it − len − 1`. Refused
    /// (nothing written) unless the chunk is non-empty and lies inside one sub-filter.
    pub fn load_chunk(&mut self, it: u64, data: &[u8]) -> Result<(), FilterError> {
        let offset = it
            .checked_sub(1)
            .and_then(|o| o.checked_sub(data.len() as u64))
            .filter(|_| !data.is_empty())
            .ok_or(FilterError::ChunkOffset)?;
        let (i, inner, rest) = self.locate(offset).ok_or(FilterError::ChunkOffset)?;
        if data.len() as u64 > rest {
            return Err(FilterError::ChunkTooBig);
        }
        self.sub_mut(i).write_bytes(inner, data)
    }

    /// Feeds `DEBUG DIGEST-VALUE` everything that makes the filter: its header (fingerprint
    /// width, counters, shape) and every slot.
    pub fn digest(&self, mut feed: impl FnMut(&[u8])) {
        feed(&self.header().encode());
        for f in self.subs() {
            feed(&f.bytes());
        }
    }

    /// Writes this module's RDB fields ([`RDB_ENCODING_VERSION`]).
    pub fn write_rdb(&self, w: &mut impl FieldWriter) {
        w.u64(u64::from(F::BITS));
        self.write_fields(w, true);
    }

    /// Writes RedisBloom's RDB fields (encoding version 4); 8-bit fingerprints only (what
    /// RedisBloom can read), `Unsupported` otherwise.
    pub fn write_rdb_redisbloom(&self, w: &mut impl FieldWriter) -> Result<(), FilterError> {
        if F::BITS != 8 {
            return Err(FilterError::Unsupported);
        }
        self.write_fields(w, false);
        Ok(())
    }

    fn write_fields(&self, w: &mut impl FieldWriter, segmented: bool) {
        let s = self.shape();
        for v in [u64::from(s.filters), s.base_buckets, s.items, s.deletes] {
            w.u64(v);
        }
        for v in [s.bucket_size, s.max_iterations, s.expansion] {
            w.u64(u64::from(v));
        }
        for f in self.subs() {
            w.u64(f.buckets());
            let bytes = f.bytes();
            if segmented {
                for seg in bytes.chunks(SEGMENT_BYTES as usize) {
                    w.bytes(seg);
                }
            } else {
                w.bytes(&bytes);
            }
        }
    }

    /// Reads the fields after the width (either encoding), validating each before use.
    /// More than `max_filters` sub-filters: `MaxExpansions`, before anything is allocated.
    pub(super) fn read_fields(
        r: &mut impl FieldReader,
        guard: &dyn AllocGuard,
        segmented: bool,
        max_filters: u16,
    ) -> Result<Self, FilterError> {
        let mut v = [0u64; 7];
        for x in &mut v {
            *x = r.u64()?;
        }
        let shape = Shape::validate(v[0], v[1], v[2], v[3], v[4], v[5], v[6], F::BYTES as u64)?;
        if shape.filters > max_filters {
            return Err(FilterError::MaxExpansions);
        }
        let mut c = Self::allocate(&shape, guard)?;
        for i in 0..shape.filters {
            let mut f = c.sub_mut(usize::from(i));
            if r.u64()? != f.buckets() {
                return Err(FilterError::BadData);
            }
            let total = f.byte_len();
            let mut at = 0u64;
            loop {
                let expected = if segmented { (total - at).min(SEGMENT_BYTES) } else { total };
                let b = r.bytes()?;
                let b = b.as_ref();
                if b.len() as u64 != expected {
                    return Err(FilterError::BadData);
                }
                f.write_bytes(at, b)?;
                at += expected;
                if at == total {
                    break;
                }
            }
        }
        Ok(c)
    }
}
