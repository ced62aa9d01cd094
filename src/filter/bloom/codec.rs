//! Every byte format of a chain, and the one strict validator they share.
//!
//! # The field sequence
//! A chain is described by a flat sequence of typed fields. The same sequence is written to an
//! RDB file with Redis' typed calls (`RedisModule_SaveUnsigned`, `SaveDouble`, `SaveStringBuffer`)
//! and, for the dump header of `BF.SCANDUMP`, as explicit little-endian bytes. Version 2:
//! ```text
//! u64 scheme        hash scheme id (1 = xxh3-128, enhanced double hashing; 4 = xxh3-64, for
//!                   blocked filters only; 5 = xxh3-128, probes with a full-width curvature,
//!                   for standard filters only)
//! u64 seed          hash seed
//! f64 error         requested false-positive rate
//! u64 capacity      first layer's capacity
//! u64 expansion     growth factor; 0 = nonscaling
//! u64 counters      bits per counter: 0 = a plain filter, 4 or 8 = a counting filter;
//!                   512 = a blocked filter (plain bits in 512-bit blocks, `LAYOUT BLOCKED`,
//!                   its layers sized by `blocked_layer_size`) (v2 only)
//! u64 items         total items added
//! u64 layers        number of layers, 1..=64
//! per layer:
//!   u64 capacity    u64 hashes    u64 bits    f64 error    u64 items
//! ```
//! Version 1 is the same without `counters` (every filter plain). Every layer's capacity,
//! error, hashes and bits must be exactly what the chain's parameters give at that position
//! (the one rule of [`check_layers`]); item counts must add up and stay within capacities
//! (every layer but the last full, except in a counting chain, where deletes give room back);
//! `counters` must be 0, 4, 8 or 512, and only with the xxh3 schemes (1; scheme 4 only with 512,
//! the scheme of new blocked filters, which a reader without scheme 4 refuses cleanly as an
//! unknown id). Anything else is refused as
//! [`FilterError::BadData`], before any array is allocated. A counting layer's `bits` is its
//! number of counters (what the sizing calls bits); its array is `bits × counters` bits
//! (`super::counting`: counter `i` is byte `i`, or nibble `i % 2` of byte `i / 2`).
//!
//! # RDB (type `MBbloom--`, encoding version [`RDB_ENCODING_VERSION`])
//! The field sequence, then each layer's bit array as one string per 64 MiB segment (little-endian
//! words: bit `p` is in byte `p/8` at mask `1 << (p%8)`). Each string's length is checked against
//! the layout before its bytes are copied, so a forged length never sizes an allocation.
//! RedisBloom's own encoding versions (0–4) are reserved for importing its data.
//! Encoding versions, by what they hold (Redis writes every value of a type with the type's
//! one current version, so plain filters are written as 513 too):
//! - 512 (scalebloom 0.1): field sequence version 1, no counting filters. Loaded.
//! - 513 (counting filters): field sequence version 2. A build that only knows 512 takes 513
//!   for a RedisBloom encoding and refuses the value (it logs why and the load fails cleanly):
//!   an RDB file with 513 values is not readable by a build that knows only 512. A blocked
//!   filter (`counters` 512) is written as 513 too: a build without blocked filters refuses
//!   the value (512 is not a counter width to it), cleanly, as any bad field. Loaded.
//! - 514: 513's value followed by the counts — one u64 per layer, its set bits
//!   (non-zero counters), then one u64, the chain's saturated counters (0 unless counting).
//!   A load of 512 or 513 counts them, reading the whole filter once more (about 0.1 s per
//!   GiB on top of the load). A build that knows only 513 refuses 514 values cleanly.
//!   A loaded count is checked only against its bound (at most the layer's positions, the
//!   saturated counters at most the counters), not against the bits; later adds can push a
//!   possible-but-untrue count past that bound, so the counts are written bounded
//!   ([`Layer::ones`], [`Chain::saturated`]): every value a save writes loads again.
//!   A RedisBloom-scheme chain carries the counts after its own fields and segments too.
//! - 515 (this build): 514's value, then the members a merge kept apart
//!   ([`super::merged`]): u64 count (0 for nearly every filter, at most
//!   [`MAX_MEMBERS`]), then each member as a 514 value of its own. A build that knows only
//!   514 refuses 515 values cleanly.
//!
//! A chain in one of RedisBloom's schemes (scheme id 2 or 3) is written as its scheme id and
//! then RedisBloom's fields (options, growth, items, layer count; per layer its capacity, error,
//! hashes, bpe, bits, n2 and items), then each layer's segments
//! ([`redisbloom::write_fields`]).
//!
//!
//! # Dump header (`BF.SCANDUMP key 0`, `BF.LOADCHUNK key 1 …`)
//! ```text
//! [0..8)   magic "SCBLOOM\0"
//! [8..12)  u32 0xFFFF_FFFF  — where RedisBloom reads its layer count: it computes an expected
//!                             length of 20 + 53 × 2^32 bytes, sees ours differ, and answers
//!                             "received bad data" instead of misreading the header
//! [12..16) u32 dump format version: 1 (plain filters: field sequence version 1, which a
//!                             build that knows only 512 reads) or 2 (counting filters: version 2)
//! [16..)   the field sequence, u64 and f64 little-endian
//! ```
//! Both versions are read. A counting filter's chunks are the bytes of its counter arrays.
//! Chunks after the header are raw bit-array bytes: iterator `it` (≥ 1) means byte offset
//! `it − 1` in all layers' arrays laid end to end; a chunk never crosses a layer boundary.
//! A chain in one of RedisBloom's schemes gets RedisBloom's header instead (below), so that a
//! RedisBloom server can `BF.LOADCHUNK` it; `BF.LOADCHUNK` here reads both ([`AnyHeader`]).
//!
//! # RedisBloom's formats
//! Its RDB value and dump header, and the history of every option and version it wrote, are in
//! [`redisbloom`]; a chain in one of its schemes is written here only through that module.

use super::bits::BitArray;
use super::chain::Chain;
use super::chunks;
use super::claims::{LayerClaim, check_layers};
use super::counters;
use super::layer::{Contents, Layer};
use super::merged::MAX_MEMBERS;
use super::params::{ChainParams, LayerSize, Layout, MAX_LAYERS, info_size};
use super::redisbloom::{self, RbMeta};
use crate::filter::FilterError;
use crate::filter::fields::{FieldReader, FieldWriter, SliceReader};
use crate::filter::guard::AllocGuard;
use crate::filter::hash::HashScheme;
use crate::filter::masks::BLOCK_BITS;

/// The `MBbloom--` encoding version this build writes: field sequence version 2, the bits,
/// the counts, then the members ([`write_chain`]). Versions below 512 are left to
/// RedisBloom's formats (it uses 0–4).
pub const RDB_ENCODING_VERSION: i32 = 515;
/// The encoding version of a value without its members: still loaded, and the encoding of
/// each member inside a 515 value.
pub const RDB_ENCODING_V3: i32 = 514;
/// The encoding version of field sequence version 2 without the counts after the bits, still
/// loaded (the bits are counted).
pub const RDB_ENCODING_V2: i32 = 513;
/// The encoding version of field sequence version 1 (no counters), still loaded.
pub const RDB_ENCODING_V1: i32 = 512;

/// Whether `encver` is one of this module's own `MBbloom--` encodings (512–515, which
/// [`read_chain_version`] reads), not one of RedisBloom's.
pub fn is_own_encoding(encver: i32) -> bool {
    matches!(encver, RDB_ENCODING_V1 | RDB_ENCODING_V2 | RDB_ENCODING_V3 | RDB_ENCODING_VERSION)
}

/// Magic at the start of a dump header.
pub const DUMP_MAGIC: [u8; 8] = *b"SCBLOOM\0";
/// Dump header format version of plain filters (field sequence version 1).
pub const DUMP_VERSION: u32 = 1;
/// Dump header format version of counting and blocked filters (field sequence version 2).
pub const DUMP_VERSION_COUNTING: u32 = 2;
/// Dump header format version of a filter with members ([`super::merged`]): u64 count of
/// parts (the chain, then each member), then per part a u64 length and that part's own dump
/// header (version 1 or 2, or RedisBloom's).
pub const DUMP_VERSION_MERGED: u32 = 3;
/// The field sequence version RDB values of this build use.
pub const FIELDS_VERSION: u32 = 2;
/// Bytes of a dump header before the field sequence.
const DUMP_PREFIX: usize = 16;

/// A chain's description without its bits: what the field sequence holds, validated.
#[derive(Debug, Clone, PartialEq)]
pub struct ChainMeta {
    /// Creation parameters.
    pub params: ChainParams,
    /// Hash scheme of the bits.
    pub scheme: HashScheme,
    /// Hash seed.
    pub seed: u64,
    /// Bits per counter (4 or 8) of a counting chain; 0 for a plain one.
    pub width: u8,
    /// How the layers place probes (a blocked chain has width 0).
    pub layout: Layout,
    /// Total items.
    pub items: u64,
    /// Each layer's size and item count, oldest first.
    pub layers: Vec<(LayerSize, u64)>,
}

impl ChainMeta {
    /// The description of `chain`.
    pub fn of(chain: &Chain) -> Self {
        Self {
            params: chain.params(),
            scheme: chain.scheme(),
            seed: chain.seed(),
            width: chain.counter_width(),
            layout: chain.layout(),
            items: chain.items(),
            layers: chain
                .layers()
                .iter()
                .enumerate()
                .map(|(i, l)| (chain.layer_size(i), l.items()))
                .collect(),
        }
    }

    /// Bytes of all the layers' arrays (bits or counters). Validated sizes (at most
    /// [`MAX_LAYERS`] layers of at most 2^43 positions of at most 8 bits) cannot overflow.
    pub fn bit_bytes(&self) -> u64 {
        let width = u64::from(self.width.max(1));
        self.layers.iter().map(|(s, _)| s.bytes() * width).sum()
    }

    /// Writes the field sequence of this build's RDB values ([`FIELDS_VERSION`]).
    pub fn write(&self, w: &mut impl FieldWriter) {
        self.write_version(w, FIELDS_VERSION);
    }

    /// Writes field sequence `version` (1: no counter width; only for plain chains).
    pub fn write_version(&self, w: &mut impl FieldWriter, version: u32) {
        debug_assert!(version == 2 || (self.width == 0 && self.layout == Layout::Standard));
        let width = (version >= 2).then_some(counters_field(self.width, self.layout));
        let layers = self.layers.iter().map(|&(size, items)| (size, items));
        write_fields(self.scheme, self.seed, self.params, width, self.items, layers, w);
    }

    /// Reads and validates a field sequence ([`check_layers`], and each stored error must be
    /// the one its position gives). Allocates nothing proportional to the claimed sizes: only
    /// the layer list, whose length is bounded first.
    pub fn read(r: &mut impl FieldReader, version: u32) -> Result<Self, FilterError> {
        let scheme = HashScheme::from_id(r.u64()?).ok_or(FilterError::BadData)?;
        Self::read_after_scheme(r, scheme, version)
    }

    /// [`ChainMeta::read`] of field sequence `version` (1 or 2) after the scheme id; refuses
    /// RedisBloom's schemes, whose chains have their own field sequence.
    fn read_after_scheme(
        r: &mut impl FieldReader,
        scheme: HashScheme,
        version: u32,
    ) -> Result<Self, FilterError> {
        if scheme.is_redisbloom() {
            return Err(FilterError::BadData);
        }
        let seed = r.u64()?;
        let error = r.f64()?;
        let capacity = r.u64()?;
        let expansion = r.u64()?;
        let params =
            ChainParams::new(error, capacity, expansion).map_err(|_| FilterError::BadData)?;
        let counters = if version >= 2 { r.u64()? } else { 0 };
        let allowed = match scheme {
            HashScheme::Xxh3Enhanced => {
                counters == 0 || counters::valid_width(counters) || counters == BLOCK_BITS
            }
            // Scheme 4 is for blocked chains only, scheme 5 for standard ones only.
            HashScheme::Xxh3Blocked => counters == BLOCK_BITS,
            HashScheme::Xxh3Curved => counters == 0 || counters::valid_width(counters),
            HashScheme::Murmur64 | HashScheme::Murmur32 => false,
        };
        if !allowed {
            return Err(FilterError::BadData);
        }
        let (width, layout) = match counters {
            BLOCK_BITS => (0, Layout::Blocked),
            w => (w as u8, Layout::Standard), // 0, 4 or 8, checked above
        };
        let items = r.u64()?;
        let count = r.u64()?;
        if count == 0 || count > MAX_LAYERS as u64 {
            return Err(FilterError::BadData);
        }
        let mut claims = Vec::with_capacity(count as usize);
        let mut errors = Vec::with_capacity(count as usize);
        for _ in 0..count {
            let (capacity, hashes, bits) = (r.u64()?, r.u64()?, r.u64()?);
            errors.push(r.f64()?);
            claims.push(LayerClaim { capacity, hashes, bits, items: r.u64()? });
        }
        let sizes = check_layers(&params, layout, &claims, items, width != 0)?;
        if sizes.iter().zip(&errors).any(|(want, got)| want.error.to_bits() != got.to_bits()) {
            return Err(FilterError::BadData);
        }
        let layers = sizes.into_iter().zip(claims).map(|(size, c)| (size, c.items)).collect();
        Ok(Self { params, scheme, seed, width, layout, items, layers })
    }

    /// Builds the chain with zeroed bit arrays for a chunked restore (marked
    /// [`Chain::awaiting_chunks`]), after asking `guard` for the memory.
    pub fn allocate(self, guard: &dyn AllocGuard) -> Result<Chain, FilterError> {
        let array_bits = self
            .layers
            .iter()
            .map(|(size, _)| counters::array_bits(size.bits, self.width))
            .collect::<Result<Vec<_>, _>>()?;
        chunks::allocate_for_chunks(guard, self.bit_bytes(), &array_bits, |arrays| {
            self.into_chain(arrays, Contents::Fresh)
        })
    }

    /// Builds the chain with the given bit arrays (one per layer, in order).
    pub fn into_chain(self, bits: Vec<BitArray>, contents: Contents) -> Result<Chain, FilterError> {
        if bits.len() != self.layers.len() {
            return Err(FilterError::BadData);
        }
        let layers = self
            .layers
            .iter()
            .zip(bits)
            .map(|(&(size, items), b)| match self.layout {
                Layout::Blocked => Layer::from_blocked(size, items, b, contents),
                Layout::Standard => Layer::from_parts(size, items, b, self.width, contents),
            })
            .collect::<Result<Vec<_>, _>>()?;
        let counts_follow = contents == Contents::Counted;
        Chain::from_parts_counted(
            self.params,
            self.scheme,
            self.seed,
            layers,
            self.items,
            counts_follow,
        )
    }
}

/// Writes a whole chain in this build's RDB layout ([`RDB_ENCODING_VERSION`]): fields, each
/// layer's segments, then the counts (each layer's set bits or non-zero counters, oldest
/// first, and the chain's saturated counters), so that a load does not read the whole filter
/// once more to count them.
pub fn write_chain(chain: &Chain, w: &mut impl FieldWriter) {
    write_alone(chain, w);
    w.u64(chain.members().len() as u64);
    for member in chain.members() {
        write_alone(member, w);
    }
}

/// Writes a chain without its members: a 514 value ([`RDB_ENCODING_V3`]), what a server that
/// must stay readable by a build that knows only 514 saves.
pub fn write_chain_alone(chain: &Chain, w: &mut impl FieldWriter) {
    write_alone(chain, w);
}

/// Writes a chain without its members: a 514 value.
fn write_alone(chain: &Chain, w: &mut impl FieldWriter) {
    if chain.scheme().is_redisbloom() {
        w.u64(chain.scheme().id());
        redisbloom::write_fields(chain, w);
    } else {
        ChainMeta::of(chain).write(w);
        for layer in chain.layers() {
            layer.bits().for_each_segment_bytes(|seg| w.bytes(seg));
        }
    }
    for layer in chain.layers() {
        w.u64(layer.ones());
    }
    w.u64(chain.saturated());
}

/// Reads a whole chain in this build's RDB layout ([`RDB_ENCODING_VERSION`]), validating
/// everything; the arrays are allocated only once the metadata is valid and `guard` admits
/// their size.
pub fn read_chain(r: &mut impl FieldReader, guard: &dyn AllocGuard) -> Result<Chain, FilterError> {
    read_chain_version(r, guard, RDB_ENCODING_VERSION)
}

/// [`read_chain`] of RDB encoding `encver`: 512 (field sequence version 1), 513 (version 2)
/// or 514 (version 2 and the counts after the bits); before 514 the bits are counted.
pub fn read_chain_version(
    r: &mut impl FieldReader,
    guard: &dyn AllocGuard,
    encver: i32,
) -> Result<Chain, FilterError> {
    if encver == RDB_ENCODING_VERSION {
        let mut chain = read_chain_version(r, guard, RDB_ENCODING_V3)?;
        let count = r.u64()?;
        if count > MAX_MEMBERS as u64 {
            return Err(FilterError::BadData);
        }
        let mut members = Vec::with_capacity(count as usize);
        for _ in 0..count {
            // Each member is admitted with the whole value so far: the filter's limit is the
            // value's.
            let so_far =
                chain.value_bit_bytes() + members.iter().map(Chain::bit_bytes).sum::<u64>();
            members.push(read_chain_version(r, &Within { guard, so_far }, RDB_ENCODING_V3)?);
        }
        chain.set_members(members);
        super::merged::check_value(&chain)?;
        return Ok(chain);
    }
    let (version, contents) = match encver {
        RDB_ENCODING_V1 => (1, Contents::Loaded),
        RDB_ENCODING_V2 => (2, Contents::Loaded),
        RDB_ENCODING_V3 => (FIELDS_VERSION, Contents::Counted),
        _ => return Err(FilterError::BadData),
    };
    let scheme = HashScheme::from_id(r.u64()?).ok_or(FilterError::BadData)?;
    let mut chain = if scheme.is_redisbloom() {
        redisbloom::read_fields(r, scheme, guard, contents)?
    } else {
        let meta = ChainMeta::read_after_scheme(r, scheme, version)?;
        let bytes = meta.bit_bytes();
        guard.admit(info_size(meta.layers.len() as u64, bytes), bytes)?;
        let mut arrays = Vec::with_capacity(meta.layers.len());
        for (size, _) in &meta.layers {
            let bits = counters::array_bits(size.bits, meta.width)?;
            arrays.push(BitArray::from_segments(bits, |n| r.words(n))?);
        }
        meta.into_chain(arrays, contents)?
    };
    if contents == Contents::Counted {
        let ones = (0..chain.layers().len()).map(|_| r.u64()).collect::<Result<Vec<_>, _>>()?;
        chain.set_loaded_counts(&ones, r.u64()?)?;
    }
    Ok(chain)
}

/// A guard that sees a part of a value as the value: `so_far` bytes of bit arrays are the
/// value's already.
pub struct Within<'g> {
    /// The guard of the whole value.
    pub guard: &'g dyn AllocGuard,
    /// Bytes of bit arrays the value has besides the part being admitted.
    pub so_far: u64,
}

impl AllocGuard for Within<'_> {
    fn admit(&self, filter_bytes_after: u64, new_bytes: u64) -> Result<(), FilterError> {
        let after = filter_bytes_after.checked_add(self.so_far).ok_or(FilterError::TooLarge)?;
        self.guard.admit(after, new_bytes)
    }
}

/// Writes a chain's fields without its bits (what `DEBUG DIGEST-VALUE` feeds before the bits).
pub fn write_meta(chain: &Chain, w: &mut impl FieldWriter) {
    if chain.scheme().is_redisbloom() {
        w.u64(chain.scheme().id());
        w.bytes(&redisbloom::header(chain));
    } else {
        ChainMeta::of(chain).write(w);
    }
}

/// The dump header of `chain` (`BF.SCANDUMP key 0`): ours, or RedisBloom's for a chain in one
/// of its schemes.
pub fn dump_header(chain: &Chain) -> Vec<u8> {
    if !chain.members().is_empty() {
        let mut out = Vec::new();
        out.extend_from_slice(&DUMP_MAGIC);
        out.extend_from_slice(&u32::MAX.to_le_bytes());
        out.extend_from_slice(&DUMP_VERSION_MERGED.to_le_bytes());
        out.extend_from_slice(&(chain.parts().count() as u64).to_le_bytes());
        for part in chain.parts() {
            let header = header_alone(part);
            out.extend_from_slice(&(header.len() as u64).to_le_bytes());
            out.extend_from_slice(&header);
        }
        return out;
    }
    header_alone(chain)
}

/// The dump header of `chain` without its members.
fn header_alone(chain: &Chain) -> Vec<u8> {
    if chain.scheme().is_redisbloom() {
        return redisbloom::header(chain);
    }
    header_of(chain, false)
}

/// The dump header `chain` had when it was created, before anything was added: its first
/// layer, no items. What a replica needs to build the same filter when the creating command
/// itself cannot be replicated.
pub fn creation_header(chain: &Chain) -> Vec<u8> {
    if chain.scheme().is_redisbloom() {
        return redisbloom::creation_header(chain);
    }
    header_of(chain, true)
}

fn header_of(chain: &Chain, as_created: bool) -> Vec<u8> {
    let n = if as_created { 1 } else { chain.layers().len() };
    let mut out = Vec::with_capacity(DUMP_PREFIX + 7 * 8 + n * 5 * 8);
    out.extend_from_slice(&DUMP_MAGIC);
    out.extend_from_slice(&u32::MAX.to_le_bytes());
    // A plain filter's header stays version 1, which builds without counting filters read.
    let (version, width) = match counters_field(chain.counter_width(), chain.layout()) {
        0 => (DUMP_VERSION, None),
        w => (DUMP_VERSION_COUNTING, Some(w)),
    };
    out.extend_from_slice(&version.to_le_bytes());
    // Straight from the chain, not through a `ChainMeta`: the description's layer list would
    // be one more allocation.
    let layers = (0..n)
        .map(|i| (chain.layer_size(i), if as_created { 0 } else { chain.layers()[i].items() }));
    let (scheme, seed, params) = (chain.scheme(), chain.seed(), chain.params());
    let items = if as_created { 0 } else { chain.items() };
    write_fields(scheme, seed, params, width, items, layers, &mut out);
    out
}

/// The `counters` field of a chain with counters of `width` bits (0: plain) in `layout`.
fn counters_field(width: u8, layout: Layout) -> u64 {
    match layout {
        Layout::Blocked => BLOCK_BITS,
        Layout::Standard => u64::from(width),
    }
}

/// Writes the field sequence (the format at the top of this file): the one writer behind
/// [`ChainMeta::write`] and [`dump_header`].
/// `width`: the counter width field of version 2, `None` for version 1.
fn write_fields(
    scheme: HashScheme,
    seed: u64,
    params: ChainParams,
    width: Option<u64>,
    items: u64,
    layers: impl ExactSizeIterator<Item = (LayerSize, u64)>,
    w: &mut impl FieldWriter,
) {
    w.u64(scheme.id());
    w.u64(seed);
    w.f64(params.error);
    w.u64(params.capacity);
    w.u64(u64::from(params.expansion));
    if let Some(width) = width {
        w.u64(width);
    }
    w.u64(items);
    w.u64(layers.len() as u64);
    for (size, items) in layers {
        w.u64(size.capacity);
        w.u64(u64::from(size.hashes));
        w.u64(size.bits);
        w.f64(size.error);
        w.u64(items);
    }
}

/// Parses and validates a dump header; nothing is allocated from its claims.
pub fn parse_dump_header(data: &[u8]) -> Result<ChainMeta, FilterError> {
    if data.len() < DUMP_PREFIX || data[..8] != DUMP_MAGIC || data[8..12] != u32::MAX.to_le_bytes()
    {
        return Err(FilterError::BadData);
    }
    let fields = match u32::from_le_bytes([data[12], data[13], data[14], data[15]]) {
        DUMP_VERSION => 1,
        DUMP_VERSION_COUNTING => 2,
        _ => return Err(FilterError::BadData),
    };
    let mut r = SliceReader::new(&data[DUMP_PREFIX..]);
    let meta = ChainMeta::read(&mut r, fields)?;
    if fields == 2 && meta.width == 0 && meta.layout == Layout::Standard {
        // Version 2 is only written for counting and blocked filters: one encoding per filter.
        return Err(FilterError::BadData);
    }
    if r.remaining() != 0 {
        return Err(FilterError::BadData);
    }
    Ok(meta)
}

/// A dump header of either format, parsed and validated (`BF.LOADCHUNK key 1 <header>`).
#[derive(Debug, Clone, PartialEq)]
pub enum AnyHeader {
    /// This module's header.
    Native(ChainMeta),
    /// RedisBloom's header.
    RedisBloom(RbMeta),
    /// A filter with members: the chain's header, then each member's ([`DUMP_VERSION_MERGED`]).
    Merged(Vec<AnyHeader>),
}

impl AnyHeader {
    /// Whether the chain it describes is in RedisBloom's layout (a merged one: its own part).
    pub fn is_redisbloom(&self) -> bool {
        match self {
            AnyHeader::Native(_) => false,
            AnyHeader::RedisBloom(_) => true,
            AnyHeader::Merged(parts) => parts.first().is_some_and(AnyHeader::is_redisbloom),
        }
    }

    /// The kind a merge looks at ([`super::merged`]): counter width (0: plain) and whether
    /// the layout is RedisBloom's.
    fn merge_kind(&self) -> (u8, bool) {
        match self {
            AnyHeader::Native(m) => (m.width, false),
            AnyHeader::RedisBloom(_) => (0, true),
            AnyHeader::Merged(parts) => parts.first().map_or((0, false), AnyHeader::merge_kind),
        }
    }

    /// Builds the chain with zeroed bit arrays, after asking `guard` for the memory.
    pub fn allocate(self, guard: &dyn AllocGuard) -> Result<Chain, FilterError> {
        match self {
            AnyHeader::Native(m) => m.allocate(guard),
            AnyHeader::RedisBloom(m) => m.allocate(guard),
            AnyHeader::Merged(parts) => {
                let mut parts = parts.into_iter();
                let mut chain = parts.next().ok_or(FilterError::BadData)?.allocate(guard)?;
                let mut members = Vec::with_capacity(parts.len());
                for part in parts {
                    let so_far =
                        chain.value_bit_bytes() + members.iter().map(Chain::bit_bytes).sum::<u64>();
                    members.push(part.allocate(&Within { guard, so_far })?);
                }
                chain.set_members(members);
                super::merged::check_value(&chain)?;
                Ok(chain)
            }
        }
    }
}

/// Parses a dump header of either format: ours (it starts with [`DUMP_MAGIC`]) or RedisBloom's.
pub fn parse_any_header(data: &[u8]) -> Result<AnyHeader, FilterError> {
    if data.starts_with(&DUMP_MAGIC) {
        if data.get(12..16) == Some(&DUMP_VERSION_MERGED.to_le_bytes()[..]) {
            return parse_merged_header(data);
        }
        return parse_dump_header(data).map(AnyHeader::Native);
    }
    Ok(AnyHeader::RedisBloom(redisbloom::parse_header(data)?))
}

/// Parses a [`DUMP_VERSION_MERGED`] header: 2 to `MAX_MEMBERS + 1` parts, each a header of
/// its own that is not itself merged, all of one kind (`BF.MERGE`'s rule: one counter width,
/// one of the two layouts), so that every header that parses allocates.
fn parse_merged_header(data: &[u8]) -> Result<AnyHeader, FilterError> {
    if data.len() < DUMP_PREFIX || data[8..12] != u32::MAX.to_le_bytes() {
        return Err(FilterError::BadData);
    }
    let mut r = SliceReader::new(&data[DUMP_PREFIX..]);
    let count = r.u64()?;
    if !(2..=MAX_MEMBERS as u64 + 1).contains(&count) {
        return Err(FilterError::BadData);
    }
    let mut parts = Vec::with_capacity(count as usize);
    let mut rest = &data[DUMP_PREFIX + 8..];
    for _ in 0..count {
        let len = rest.get(..8).ok_or(FilterError::BadData)?;
        let len = u64::from_le_bytes(len.try_into().map_err(|_| FilterError::BadData)?);
        let len = usize::try_from(len).map_err(|_| FilterError::BadData)?;
        let end = len.checked_add(8).ok_or(FilterError::BadData)?;
        let header = rest.get(8..end).ok_or(FilterError::BadData)?;
        let part = parse_any_header(header)?;
        if matches!(part, AnyHeader::Merged(_)) {
            return Err(FilterError::BadData);
        }
        if parts.first().is_some_and(|p: &AnyHeader| p.merge_kind() != part.merge_kind()) {
            // Parts a merge would not have put together (`merged::check_value`).
            return Err(FilterError::BadData);
        }
        parts.push(part);
        rest = &rest[end..];
    }
    if !rest.is_empty() {
        return Err(FilterError::BadData);
    }
    Ok(AnyHeader::Merged(parts))
}

#[cfg(test)]
mod tests;
