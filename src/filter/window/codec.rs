//! The windowed filter's byte formats: its RDB value, its `BF.SCANDUMP` header and chunks.
//!
//! # Fields, in order, each a [`FieldWriter`] field
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
//! u64 turns         (blocked layout only) turns of the ring so far
//! ```
//! The memory is then, as little-endian words: sliced, each slice (physical order) of
//! `slice_bits / 8` bytes; blocked, `slice_bits / 64` rows of `k + l + 1` words (the row's tag,
//! at most `turns`, then the word of each slice by physical index).
//!
//! The RDB value of encoding 2 is a u64 layout (0 sliced, 1 blocked), the fields, then the
//! memory as strings: one per slice (sliced), or pieces of at most 16 MiB (blocked). Encoding 1
//! is the sliced fields and slices without the layout word; it is
//! still read. The dump header of `BF.SCANDUMP` is [`WINDOW_MAGIC`] (sliced) or
//! [`WINDOW_MAGIC_BLOCKED`] followed by the fields in a byte buffer; its chunks are the memory's
//! bytes, each at most 16 MiB (and inside one slice, sliced), addressed by byte offset as the
//! Bloom chain's are. Timestamps are absolute, so a filter restored after downtime forgets on
//! its first write what expired meanwhile.
//!
//! Every field is validated ([`WindowParams::validate`] ties the derived ones to the others),
//! and the slices are offered to the allocation guard before they are read.

use super::params::{WindowKind, WindowLayout, WindowParams};
use super::{Store, WindowFilter};
use crate::filter::FilterError;
use crate::filter::bloom::chunks::MAX_CHUNK_BYTES;
use crate::filter::fields::{FieldReader, FieldWriter, SliceReader};
use crate::filter::guard::AllocGuard;
use crate::filter::mem::{Words, le_bytes, set_from_le_bytes};

/// The first bytes of a sliced windowed filter's dump header (never those of a Bloom chain's
/// `SCBLOOM\0` header, nor a plausible RedisBloom header: RedisBloom's begins with a u64
/// capacity, and this one reads as one above its 2^30 bound).
pub const WINDOW_MAGIC: [u8; 8] = *b"SBWINDW\x01";

/// The first bytes of a blocked windowed filter's dump header.
pub const WINDOW_MAGIC_BLOCKED: [u8; 8] = *b"SBWINDW\x02";

/// The first bytes of a generations-layout windowed filter's dump header.
pub const WINDOW_MAGIC_GENERATIONS: [u8; 8] = *b"SBWINDW\x03";

/// The RDB encoding version of the windowed type (2: the layout word and the blocked layout).
pub const RDB_ENCODING_VERSION: i32 = 2;

/// Largest `turns` accepted from stored data. No filter turns 2^62 times, but a forged count
/// may sit at the bound: the filter rebases its count before a turn would pass it
/// (`WindowFilter::count_turns`), so what it saves always loads again.
pub const MAX_TURNS: u64 = 1 << 62;

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
    if p.layout == WindowLayout::Generations {
        w.u64(u64::from(p.probes));
    }
    w.u64(f.seed);
    w.u64(f.head as u64);
    w.u64(f.gen_start_ms);
    w.u64(f.last_ms);
    for &c in &f.counts {
        w.u64(c);
    }
    if p.layout != WindowLayout::Sliced {
        w.u64(f.turns);
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
    turns: u64,
}

/// Reads and validates the fields of a filter in `layout`.
pub fn read_meta(r: &mut impl FieldReader, layout: WindowLayout) -> Result<Meta, FilterError> {
    let bad = || FilterError::BadData;
    let kind = match (r.u64()?, r.u64()?) {
        (0, window_ms) => WindowKind::Time { window_ms },
        (1, 0) => WindowKind::Items,
        _ => return Err(bad()),
    };
    let capacity = r.u64()?;
    let error = r.f64()?;
    let k = u32::try_from(r.u64()?).map_err(|_| bad())?;
    let l = u32::try_from(r.u64()?).map_err(|_| bad())?;
    let (gen_items, gen_ms, slice_bits) = (r.u64()?, r.u64()?, r.u64()?);
    let probes = match layout {
        WindowLayout::Generations => u32::try_from(r.u64()?).map_err(|_| bad())?,
        _ => 0,
    };
    let params =
        WindowParams { kind, error, capacity, k, l, gen_items, gen_ms, slice_bits, layout, probes };
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
    let turns = match layout {
        WindowLayout::Sliced => 0,
        WindowLayout::Blocked | WindowLayout::Generations => {
            Some(r.u64()?).filter(|&t| t <= MAX_TURNS).ok_or_else(bad)?
        }
    };
    Ok(Meta { params, seed, head, gen_start_ms, last_ms, counts, turns })
}

/// Whether every row tag among `data` (little-endian words from word `first` of the blocked
/// memory on) is at most `turns`: a later tag would keep recycled slices from reading as empty.
fn tags_ok(data: &[u8], first: u64, row_words: u64, turns: u64) -> bool {
    // row_words ≤ 201 (validated parameters).
    let skip = ((row_words - first % row_words) % row_words) as usize;
    data.chunks_exact(8)
        .skip(skip)
        .step_by(row_words as usize)
        .all(|w| u64::from_le_bytes(w.try_into().expect("chunks of 8")) <= turns)
}

impl Meta {
    /// The filter with these fields and slices.
    fn with_store(self, store: Store) -> WindowFilter {
        WindowFilter {
            params: self.params,
            seed: self.seed,
            store,
            counts: self.counts,
            head: self.head,
            gen_start_ms: self.gen_start_ms,
            last_ms: self.last_ms,
            turns: self.turns,
        }
    }

    /// The filter with all memory zero (a dump header: the chunks fill it), offered to
    /// `guard` first.
    pub fn allocate(self, guard: &dyn AllocGuard) -> Result<WindowFilter, FilterError> {
        let bytes = self.params.bytes();
        guard.admit(bytes, bytes)?;
        let store = WindowFilter::zeroed_store(&self.params)?;
        Ok(self.with_store(store))
    }
}

/// The RDB layout word of encoding 2.
fn layout_code(layout: WindowLayout) -> u64 {
    match layout {
        WindowLayout::Sliced => 0,
        WindowLayout::Blocked => 1,
        WindowLayout::Generations => 2,
    }
}

/// Writes the RDB value (encoding 2): the layout, the fields, then the memory.
pub fn write_rdb(f: &WindowFilter, w: &mut impl FieldWriter) {
    w.u64(layout_code(f.params.layout));
    write_meta(f, w);
    match &f.store {
        Store::Sliced(slices) => {
            for s in slices {
                w.bytes(&le_bytes(s));
            }
        }
        Store::Blocked(words) => {
            for piece in words.chunks(MAX_CHUNK_BYTES as usize / 8) {
                w.bytes(&le_bytes(piece));
            }
        }
    }
}

/// Reads an RDB value (or a DUMP payload) of encoding 2, every field validated and the memory
/// offered to `guard` before it is read.
pub fn read_rdb(
    r: &mut impl FieldReader,
    guard: &dyn AllocGuard,
) -> Result<WindowFilter, FilterError> {
    let layout = match r.u64()? {
        0 => WindowLayout::Sliced,
        1 => WindowLayout::Blocked,
        2 => WindowLayout::Generations,
        _ => return Err(FilterError::BadData),
    };
    read_body(r, layout, guard)
}

/// Reads an RDB value of encoding 1 (the sliced layout, no layout word).
pub fn read_rdb_v1(
    r: &mut impl FieldReader,
    guard: &dyn AllocGuard,
) -> Result<WindowFilter, FilterError> {
    read_body(r, WindowLayout::Sliced, guard)
}

fn read_body(
    r: &mut impl FieldReader,
    layout: WindowLayout,
    guard: &dyn AllocGuard,
) -> Result<WindowFilter, FilterError> {
    let meta = read_meta(r, layout)?;
    let bytes = meta.params.bytes();
    guard.admit(bytes, bytes)?;
    let store = match layout {
        WindowLayout::Sliced => {
            let mut slices = Vec::with_capacity(meta.params.slices());
            for _ in 0..meta.params.slices() {
                slices.push(r.words(meta.params.slice_words())?);
            }
            Store::Sliced(slices)
        }
        WindowLayout::Blocked | WindowLayout::Generations => {
            // The first piece is read before the memory is allocated: a value that claims more
            // than 16 MiB must bring 16 MiB first (the guard above bounds the rest), and a
            // smaller one allocates no more than it brought.
            let row_words = meta.params.row_words() as u64;
            let piece_words = MAX_CHUNK_BYTES as usize / 8;
            let total = usize::try_from(bytes / 8).map_err(|_| FilterError::TooLarge)?;
            let first_piece = r.bytes()?;
            if first_piece.as_ref().len() != total.min(piece_words) * 8 {
                return Err(FilterError::BadData);
            }
            let mut words = Words::zeroed(total as u64)?;
            let mut pending = Some(first_piece);
            for (i, piece) in words.chunks_mut(piece_words).enumerate() {
                let data = match pending.take() {
                    Some(d) => d,
                    None => r.bytes()?,
                };
                let first = (i * piece_words) as u64;
                if !tags_ok(data.as_ref(), first, row_words, meta.turns)
                    || !set_from_le_bytes(piece, data.as_ref())
                {
                    return Err(FilterError::BadData);
                }
            }
            Store::Blocked(words)
        }
    };
    Ok(meta.with_store(store))
}

/// The dump header of `BF.SCANDUMP`: [`WINDOW_MAGIC`] or [`WINDOW_MAGIC_BLOCKED`], then the
/// fields.
pub fn dump_header(f: &WindowFilter) -> Vec<u8> {
    let mut out = match f.params.layout {
        WindowLayout::Sliced => WINDOW_MAGIC.to_vec(),
        WindowLayout::Blocked => WINDOW_MAGIC_BLOCKED.to_vec(),
        WindowLayout::Generations => WINDOW_MAGIC_GENERATIONS.to_vec(),
    };
    write_meta(f, &mut out);
    out
}

/// Whether `data` is a windowed filter's dump header (by its magic).
pub fn is_window_header(data: &[u8]) -> bool {
    data.starts_with(&WINDOW_MAGIC)
        || data.starts_with(&WINDOW_MAGIC_BLOCKED)
        || data.starts_with(&WINDOW_MAGIC_GENERATIONS)
}

/// Parses a dump header; nothing may follow the fields.
pub fn parse_dump_header(data: &[u8]) -> Result<Meta, FilterError> {
    let (layout, rest) = if let Some(rest) = data.strip_prefix(&WINDOW_MAGIC) {
        (WindowLayout::Sliced, rest)
    } else if let Some(rest) = data.strip_prefix(&WINDOW_MAGIC_BLOCKED) {
        (WindowLayout::Blocked, rest)
    } else if let Some(rest) = data.strip_prefix(&WINDOW_MAGIC_GENERATIONS) {
        (WindowLayout::Generations, rest)
    } else {
        return Err(FilterError::BadData);
    };
    let mut r = SliceReader::new(rest);
    let meta = read_meta(&mut r, layout)?;
    if r.remaining() != 0 {
        return Err(FilterError::BadData);
    }
    Ok(meta)
}

/// The chunk at byte `offset` of the memory: `(slice, byte within it, len)`, inside one slice
/// (sliced; the blocked memory counts as one slice) and at most 16 MiB; `None` at or past the
/// end.
fn locate(f: &WindowFilter, offset: u64) -> Option<(usize, usize, usize)> {
    let (slices, slice_bytes) = match f.store {
        Store::Sliced(_) => (f.params.slices() as u64, f.params.slice_bits / 8),
        Store::Blocked(_) => (1, f.params.bytes()),
    };
    let slice = Some(offset / slice_bytes).filter(|&s| s < slices)? as usize;
    let inner = offset % slice_bytes;
    let len = (slice_bytes - inner).min(MAX_CHUNK_BYTES);
    Some((slice, inner as usize, len as usize))
}

/// The words of slice `slice` (the whole memory when blocked).
fn slice_words(f: &WindowFilter, slice: usize) -> &[u64] {
    match &f.store {
        Store::Sliced(slices) => &slices[slice],
        Store::Blocked(words) => words,
    }
}

/// The chunk of `BF.SCANDUMP` at byte `offset`, or `None` past the end.
pub fn read_chunk(f: &WindowFilter, offset: u64) -> Option<Vec<u8>> {
    let (slice, inner, len) = locate(f, offset)?;
    let words = slice_words(f, slice);
    // The words that hold bytes inner..inner + len (inside the slice, by `locate`).
    let (first, last) = (inner / 8, (inner + len).div_ceil(8));
    let bytes = le_bytes(&words[first..last]);
    Some(bytes[inner - first * 8..inner - first * 8 + len].to_vec())
}

/// Writes a chunk of `BF.LOADCHUNK` at byte `offset`: it must start on a word and lie inside
/// one slice (sliced) or the memory (blocked), and row tags in it must not be past `turns`.
pub fn write_chunk(f: &mut WindowFilter, offset: u64, data: &[u8]) -> Result<(), FilterError> {
    let (slices, slice_bytes) = match f.store {
        Store::Sliced(_) => (f.params.slices() as u64, f.params.slice_bits / 8),
        Store::Blocked(_) => (1, f.params.bytes()),
    };
    let slice = Some(offset / slice_bytes)
        .filter(|&s| s < slices)
        .ok_or(FilterError::ChunkOffset)? as usize;
    let inner = offset % slice_bytes;
    if inner % 8 != 0 || data.len() % 8 != 0 || data.len() as u64 > slice_bytes - inner {
        return Err(FilterError::ChunkTooBig);
    }
    let first = (inner / 8) as usize;
    let row_words = f.params.row_words() as u64;
    let turns = f.turns;
    let words = match &mut f.store {
        Store::Sliced(slices) => &mut slices[slice][first..first + data.len() / 8],
        Store::Blocked(words) => {
            if !tags_ok(data, first as u64, row_words, turns) {
                return Err(FilterError::BadData);
            }
            &mut words[first..first + data.len() / 8]
        }
    };
    if set_from_le_bytes(words, data) { Ok(()) } else { Err(FilterError::BadData) }
}
