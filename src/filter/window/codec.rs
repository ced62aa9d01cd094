//! The windowed filter's byte formats: its RDB value, its `BF.SCANDUMP` header and chunks.
//!
//! # Fields (version 1), in order, each a [`FieldWriter`] field
//! ```text
//! u64 kind          0 = time window, 1 = count window
//! u64 window_ms     the window (time), 0 (count)
//! u64 capacity      items per window
//! f64 error         target false-positive rate
//! u64 k, u64 l      slices an item sets; generations remembered besides the current one
//! u64 gen_items     ceil(capacity / l)
//! u64 gen_ms        ceil(window_ms / l) (time), 0 (count)
//! u64 slice_bits    bits per slice, a multiple of 64
//! u64 seed          xxh3 seed of the items' hashes
//! u64 head          physical index of the newest slice
//! u64 gen_start_ms  when the current generation began (absolute ms)
//! u64 last_ms       the latest time a write brought (absolute ms)
//! u64 × (k+l)       items per generation, by physical slice
//! ```
//! The RDB value is these fields, then each slice (physical order) as one string of
//! `slice_bits / 8` bytes (little-endian words). The dump header of `BF.SCANDUMP` is
//! [`WINDOW_MAGIC`] followed by the fields in a byte buffer; its chunks are the slices' bytes
//! in physical order, each chunk inside one slice and at most 16 MiB, addressed by byte offset
//! as the Bloom chain's are. Timestamps are absolute, so a filter restored after downtime
//! forgets on its first write what expired meanwhile.
//!
//! Every field is validated ([`WindowParams::validate`] ties the derived ones to the others),
//! and the slices are offered to the allocation guard before they are read.

use super::super::BloomError;
use super::super::chunks::MAX_CHUNK_BYTES;
use super::super::fields::{FieldReader, FieldWriter, SliceReader};
use super::super::guard::AllocGuard;
use super::super::mem::{Words, le_bytes, set_from_le_bytes};
use super::WindowFilter;
use super::params::{WindowKind, WindowParams};

/// The first bytes of a windowed filter's dump header (never those of a Bloom chain's
/// `SCBLOOM\0` header, nor a plausible RedisBloom header: RedisBloom's begins with a u64
/// capacity, and this one reads as one above its 2^30 bound).
pub const WINDOW_MAGIC: [u8; 8] = *b"SBWINDW\x01";

/// The field format version.
pub const FIELDS_VERSION: u64 = 1;

/// The RDB encoding version of the windowed type.
pub const RDB_ENCODING_VERSION: i32 = 1;

/// Writes the fields (not the slices).
pub fn write_meta(f: &WindowFilter, w: &mut impl FieldWriter) {
    let p = &f.params;
    let (kind, window_ms) = match p.kind {
        WindowKind::Time { window_ms } => (0, window_ms),
        WindowKind::Items => (1, 0),
    };
    w.u64(kind);
    w.u64(window_ms);
    w.u64(p.capacity);
    w.f64(p.error);
    w.u64(u64::from(p.k));
    w.u64(u64::from(p.l));
    w.u64(p.gen_items);
    w.u64(p.gen_ms);
    w.u64(p.slice_bits);
    w.u64(f.seed);
    w.u64(f.head as u64);
    w.u64(f.gen_start_ms);
    w.u64(f.last_ms);
    for &c in &f.counts {
        w.u64(c);
    }
}

/// A filter's fields, read and validated, before its slices.
#[derive(Debug, Clone, PartialEq)]
pub struct Meta {
    params: WindowParams,
    seed: u64,
    head: usize,
    gen_start_ms: u64,
    last_ms: u64,
    counts: Vec<u64>,
}

/// Reads and validates the fields.
pub fn read_meta(r: &mut impl FieldReader) -> Result<Meta, BloomError> {
    let bad = || BloomError::BadData;
    let kind = match (r.u64()?, r.u64()?) {
        (0, window_ms) => WindowKind::Time { window_ms },
        (1, 0) => WindowKind::Items,
        _ => return Err(bad()),
    };
    let capacity = r.u64()?;
    let error = r.f64()?;
    let k = u32::try_from(r.u64()?).map_err(|_| bad())?;
    let l = u32::try_from(r.u64()?).map_err(|_| bad())?;
    let params = WindowParams {
        kind,
        error,
        capacity,
        k,
        l,
        gen_items: r.u64()?,
        gen_ms: r.u64()?,
        slice_bits: r.u64()?,
    };
    params.validate()?;
    let seed = r.u64()?;
    let n = params.slices();
    let head = usize::try_from(r.u64()?).ok().filter(|&h| h < n).ok_or_else(bad)?;
    let gen_start_ms = r.u64()?;
    let last_ms = r.u64()?;
    let times_ok = gen_start_ms <= last_ms
        && match kind {
            WindowKind::Time { .. } => last_ms - gen_start_ms < params.gen_ms,
            WindowKind::Items => true,
        };
    if !times_ok {
        return Err(bad());
    }
    let mut counts = Vec::with_capacity(n);
    for _ in 0..n {
        let c = r.u64()?;
        if kind == WindowKind::Items && c > params.gen_items {
            return Err(bad());
        }
        counts.push(c);
    }
    Ok(Meta { params, seed, head, gen_start_ms, last_ms, counts })
}

impl Meta {
    /// The filter with these fields and slices.
    fn with_slices(self, slices: Vec<Words>) -> WindowFilter {
        WindowFilter {
            params: self.params,
            seed: self.seed,
            slices,
            counts: self.counts,
            head: self.head,
            gen_start_ms: self.gen_start_ms,
            last_ms: self.last_ms,
        }
    }

    /// The filter with all slices zero (a dump header: the chunks fill them), offered to
    /// `guard` first.
    pub fn allocate(self, guard: &dyn AllocGuard) -> Result<WindowFilter, BloomError> {
        let bytes = self.params.bytes();
        guard.admit(bytes, bytes)?;
        let slices = (0..self.params.slices())
            .map(|_| Words::zeroed(self.params.slice_words()))
            .collect::<Result<Vec<_>, _>>()?;
        Ok(self.with_slices(slices))
    }
}

/// Writes the RDB value: the fields, then each slice.
pub fn write_rdb(f: &WindowFilter, w: &mut impl FieldWriter) {
    write_meta(f, w);
    for s in &f.slices {
        w.bytes(&le_bytes(s));
    }
}

/// Reads an RDB value (or a DUMP payload), every field validated and the slices offered to
/// `guard` before they are read.
pub fn read_rdb(
    r: &mut impl FieldReader,
    guard: &dyn AllocGuard,
) -> Result<WindowFilter, BloomError> {
    let meta = read_meta(r)?;
    let bytes = meta.params.bytes();
    guard.admit(bytes, bytes)?;
    let mut slices = Vec::with_capacity(meta.params.slices());
    for _ in 0..meta.params.slices() {
        slices.push(r.words(meta.params.slice_words())?);
    }
    Ok(meta.with_slices(slices))
}

/// The dump header of `BF.SCANDUMP`: [`WINDOW_MAGIC`], then the fields.
pub fn dump_header(f: &WindowFilter) -> Vec<u8> {
    let mut out = WINDOW_MAGIC.to_vec();
    write_meta(f, &mut out);
    out
}

/// Whether `data` is a windowed filter's dump header (by its magic).
pub fn is_window_header(data: &[u8]) -> bool {
    data.starts_with(&WINDOW_MAGIC)
}

/// Parses a dump header; nothing may follow the fields.
pub fn parse_dump_header(data: &[u8]) -> Result<Meta, BloomError> {
    let rest = data.strip_prefix(&WINDOW_MAGIC).ok_or(BloomError::BadData)?;
    let mut r = SliceReader::new(rest);
    let meta = read_meta(&mut r)?;
    if r.remaining() != 0 {
        return Err(BloomError::BadData);
    }
    Ok(meta)
}

/// The chunk at byte `offset` of the slices (physical order): `(slice, byte within it, len)`,
/// inside one slice and at most 16 MiB; `None` at or past the end.
fn locate(f: &WindowFilter, offset: u64) -> Option<(usize, usize, usize)> {
    let slice_bytes = f.params.slice_bits / 8;
    let slice = usize::try_from(offset / slice_bytes).ok().filter(|&s| s < f.slices.len())?;
    let inner = offset % slice_bytes;
    let len = (slice_bytes - inner).min(MAX_CHUNK_BYTES);
    Some((slice, inner as usize, len as usize))
}

/// The chunk of `BF.SCANDUMP` at byte `offset`, or `None` past the end.
pub fn read_chunk(f: &WindowFilter, offset: u64) -> Option<Vec<u8>> {
    let (slice, inner, len) = locate(f, offset)?;
    let bytes = le_bytes(&f.slices[slice]);
    Some(bytes[inner..inner + len].to_vec())
}

/// Writes a chunk of `BF.LOADCHUNK` at byte `offset`: it must start on a word and lie inside
/// one slice.
pub fn write_chunk(f: &mut WindowFilter, offset: u64, data: &[u8]) -> Result<(), BloomError> {
    let slice_bytes = f.params.slice_bits / 8;
    let slice = usize::try_from(offset / slice_bytes)
        .ok()
        .filter(|&s| s < f.slices.len())
        .ok_or(BloomError::ChunkOffset)?;
    let inner = offset % slice_bytes;
    if inner % 8 != 0 || data.len() % 8 != 0 || data.len() as u64 > slice_bytes - inner {
        return Err(BloomError::ChunkTooBig);
    }
    let first = (inner / 8) as usize;
    let words = &mut f.slices[slice][first..first + data.len() / 8];
    if set_from_le_bytes(words, data) { Ok(()) } else { Err(BloomError::BadData) }
}
