//! RedisBloom's byte formats: its RDB value (encoding versions 1–4 of `MBbloom--`), its
//! `BF.SCANDUMP` header, and the way back (its header for chains in its schemes). What each
//! field means, and every option and version RedisBloom ever wrote, is in `codec.rs`'s header
//! comment; this file holds the code.
//!
//! Every field is validated before anything is allocated from it (a layer's bit array is read
//! only after its fields passed), and the checks are stricter than RedisBloom's own, but admit
//! everything RedisBloom itself writes: RedisBloom's bounds, not this module's own limits for
//! new filters, apply to the layer count and errors (see `params.rs`):
//! - counts: 1 to [`MAX_RB_LAYERS`] layers (a count is checked before anything is allocated
//!   for it, and every layer is read from the bytes actually present before the next); the
//!   layers' item counts add up to the chain's; every
//!   layer but the last is full (RedisBloom adds a layer only then); a nonscaling chain has one
//!   layer; items ≤ capacity in each layer;
//! - options: only `NOROUND` (1), `FORCE64` (4) and `NONSCALING` (8); unknown bits and
//!   `ENTS_IS_BITS` (2, never set by RedisBloom's commands) are refused;
//! - per layer, what `bloom_init` makes: error in `[MIN_RB_LAYER_ERROR, 1)` (above 0, as
//!   RedisBloom 8's loader requires) and equal to the first layer's halved a whole number of
//!   times; bits per entry equal to `|ln(error)| / ln(2)^2` (to 1e-12 relative); hashes =
//!   `ceil(ln(2) × bpe)` in `1..=MAX_RB_HASHES`; `n2` = 0 exactly
//!   when the options say `NOROUND`; bits a positive multiple of 64 up to [`MAX_LAYER_BITS`],
//!   equal to bytes × 8, and to `max(64, 2^n2)` for power-of-two layers (or 0 with a
//!   `max(1, 2^n2 / 8)`-byte array: RedisBloom before 2.2 stored no bit count for them);
//!   `NOROUND` bits are `(u64)(capacity × bpe)` rounded up to whole bytes (2.2.0–2.2.14) or
//!   words (since), so a forged capacity cannot make a layer accept more items than its bits
//!   were sized for; every layer after the first is exactly what `bloom_init` makes of the
//!   previous layer's capacity × growth at its error (capacity, hashes, n2);
//! - growth: at least 1 when scaling, at most `u32::MAX`.

use std::fmt;

use super::BloomError;
use super::bits::{BitArray, SEGMENT_WORDS};
use super::chain::Chain;
use super::codec;
use super::fields::{FieldReader, FieldWriter};
use super::guard::AllocGuard;
use super::hash::HashScheme;
use super::layer::{Contents, Layer, array_bits};
use super::mem::Words;
use super::params::{
    MAX_LAYER_BITS, MAX_RB_HASHES, MAX_RB_LAYERS, MIN_RB_LAYER_ERROR, RbLayerSize, TIGHTENING,
    bits_per_entry, info_size, rb_layer_size,
};

/// `BLOOM_OPT_NOROUND`: layers sized without rounding to a power of two; positions mod bits.
pub const OPT_NOROUND: u64 = 1;
/// `BLOOM_OPT_ENTS_IS_BITS`: "capacity" is a bit count (never set by RedisBloom's commands).
pub const OPT_ENTS_IS_BITS: u64 = 2;
/// `BLOOM_OPT_FORCE64`: 64-bit hashing (MurmurHash64A).
pub const OPT_FORCE64: u64 = 4;
/// `BLOOM_OPT_NO_SCALING`: the chain never adds a layer.
pub const OPT_NONSCALING: u64 = 8;
/// The highest `MBbloom--` encoding version RedisBloom writes.
pub const MAX_ENCODING_VERSION: i32 = 4;
/// The growth RedisBloom gives a chain whose RDB value predates the growth field (encoding
/// versions below 4), and the one it stores for nonscaling chains (its default expansion).
pub const DEFAULT_GROWTH: u32 = 2;
/// Bytes of the fixed part of RedisBloom's dump header (`dumpedChainHeader`).
pub const HEADER_BYTES: usize = 20;
/// Bytes per layer in RedisBloom's dump header (`dumpedChainLink`, packed).
pub const HEADER_LINK_BYTES: usize = 53;
/// ln(2), as RedisBloom writes it (see `params.rs`).
#[allow(clippy::approx_constant)]
const LN2: f64 = 0.693147180559945;

/// Why RedisBloom data was refused: logged by `rdb_load`, and turned into
/// [`BloomError::BadData`] for replies.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Refusal {
    /// An encoding version this module does not read.
    Version(i32),
    /// Option bits this module does not know (or `ENTS_IS_BITS`).
    Options(u64),
    /// A field that fails validation (its name), or a short input.
    Field(&'static str),
    /// The filter would need more memory than allowed (LOADCHUNK headers only).
    Memory(BloomError),
}

impl fmt::Display for Refusal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Refusal::Version(0) => write!(
                f,
                "RedisBloom encoding version 0 (development builds before 1.0, 2017) is not \
                 supported"
            ),
            Refusal::Version(v) => write!(f, "unknown MBbloom-- encoding version {v}"),
            Refusal::Options(o) => write!(f, "unsupported RedisBloom option bits {o:#x}"),
            Refusal::Field(name) => write!(f, "invalid RedisBloom field: {name}"),
            Refusal::Memory(e) => write!(f, "filter refused: {e:?}"),
        }
    }
}

impl From<Refusal> for BloomError {
    fn from(r: Refusal) -> Self {
        match r {
            Refusal::Memory(e) => e,
            _ => BloomError::BadData,
        }
    }
}

fn field(name: &'static str) -> impl Fn(BloomError) -> Refusal {
    move |_| Refusal::Field(name)
}

/// One layer's fields as RedisBloom stores them.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RawLink {
    /// `entries`: capacity.
    pub capacity: u64,
    /// `error`.
    pub error: f64,
    /// `hashes`.
    pub hashes: u64,
    /// `bpe`.
    pub bpe: f64,
    /// `bits` (0 for power-of-two layers written before RedisBloom 2.2).
    pub bits: u64,
    /// `n2`.
    pub n2: u64,
    /// `size`: items in this layer.
    pub items: u64,
}

/// A validated layer: its size, how many times its error halves the first's, its items, and
/// the length of its stored bit array.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LinkMeta {
    /// The layer's sizing (bits rounded up to a multiple of 64 for tiny legacy layers).
    pub size: RbLayerSize,
    /// error = first layer's error × 0.5^halvings.
    pub halvings: u16,
    /// Items in the layer.
    pub items: u64,
    /// Bytes of the stored bit array (`bits / 8`, or fewer for tiny legacy layers).
    pub stored_bytes: u64,
}

/// A validated RedisBloom chain without its bits.
#[derive(Debug, Clone, PartialEq)]
pub struct RbMeta {
    /// Hash scheme (from `FORCE64`).
    pub scheme: HashScheme,
    /// `NOROUND`.
    pub noround: bool,
    /// Growth; 0 when nonscaling.
    pub expansion: u32,
    /// Total items.
    pub items: u64,
    /// Layers, oldest first.
    pub layers: Vec<LinkMeta>,
}

/// The chain-level fields, validated: (scheme, noround, expansion).
fn check_options(options: u64, growth: u64) -> Result<(HashScheme, bool, u32), Refusal> {
    if options & !(OPT_NOROUND | OPT_FORCE64 | OPT_NONSCALING) != 0 {
        return Err(Refusal::Options(options));
    }
    let scheme =
        if options & OPT_FORCE64 != 0 { HashScheme::Murmur64 } else { HashScheme::Murmur32 };
    let expansion = if options & OPT_NONSCALING != 0 {
        0
    } else {
        match u32::try_from(growth) {
            Ok(g) if g >= 1 => g,
            _ => return Err(Refusal::Field("growth")),
        }
    };
    Ok((scheme, options & OPT_NOROUND != 0, expansion))
}

/// Validates one layer's fields (see the file comment). `first_error` is layer 0's error and
/// `request` the capacity RedisBloom asked this layer for (the previous layer's × growth);
/// both `None` for layer 0.
fn check_link(
    raw: &RawLink,
    first_error: Option<f64>,
    request: Option<u64>,
    noround: bool,
) -> Result<LinkMeta, Refusal> {
    let e = raw.error;
    if !(MIN_RB_LAYER_ERROR..1.0).contains(&e) {
        return Err(Refusal::Field("error"));
    }
    let halvings = match first_error {
        None => 0u16,
        Some(first) => {
            // At most MAX_RB_LAYERS steps: halving any error below 1 reaches 0 by then.
            let mut x = first;
            let mut t = 0u16;
            while x.to_bits() != e.to_bits() {
                if x < e || t == u16::MAX {
                    return Err(Refusal::Field("error (not the first layer's halved)"));
                }
                x *= TIGHTENING;
                t += 1;
            }
            t
        }
    };
    let bpe = raw.bpe;
    let want_bpe = bits_per_entry(e).abs();
    if !bpe.is_finite() || bpe <= 0.0 || ((bpe - want_bpe) / want_bpe).abs() > 1e-12 {
        return Err(Refusal::Field("bpe"));
    }
    let hashes = (LN2 * bpe).ceil();
    if raw.hashes == 0 || raw.hashes > u64::from(MAX_RB_HASHES) || raw.hashes as f64 != hashes {
        return Err(Refusal::Field("hashes"));
    }
    if (raw.n2 == 0) != noround || raw.n2 > 43 {
        return Err(Refusal::Field("n2"));
    }
    if raw.capacity == 0 || raw.items > raw.capacity {
        return Err(Refusal::Field("capacity"));
    }
    let raw_bits = raw.capacity as f64 * bpe;
    if !raw_bits.is_finite() || raw_bits >= MAX_LAYER_BITS as f64 {
        return Err(Refusal::Field("capacity"));
    }
    let (bits, stored_bytes) = if raw.n2 > 0 {
        // Stored as 0 before 2.2, as whole bytes in 2.2.0–2.2.14, as whole words since.
        let pow = 1u64 << raw.n2;
        match raw.bits {
            0 => (pow.max(64), (pow / 8).max(1)),
            b if b == pow.max(8) || b == pow.max(64) => (pow.max(64), b / 8),
            _ => return Err(Refusal::Field("bits")),
        }
    } else {
        // bloom_init: (u64)(entries × bpe), at least 1, rounded up to whole bytes (2.2.0–2.2.14)
        // or whole words (since).
        let floor = (raw_bits as u64).max(1);
        if raw.bits != floor.div_ceil(8) * 8 && raw.bits != floor.div_ceil(64) * 64 {
            return Err(Refusal::Field("bits"));
        }
        (raw.bits, raw.bits / 8)
    };
    if bits > MAX_LAYER_BITS || raw_bits > bits as f64 + 1.0 {
        return Err(Refusal::Field("capacity"));
    }
    if let Some(request) = request {
        // Layers after the first are exactly what bloom_init made of the request.
        let want = rb_layer_size(request, e, noround).map_err(|_| Refusal::Field("capacity"))?;
        if (want.capacity, u64::from(want.hashes), u64::from(want.n2))
            != (raw.capacity, raw.hashes, raw.n2)
        {
            return Err(Refusal::Field("capacity (not the previous layer's × growth)"));
        }
    }
    let size = RbLayerSize {
        capacity: raw.capacity,
        error: e,
        bpe,
        bits,
        hashes: raw.hashes as u32,
        n2: raw.n2 as u8,
    };
    Ok(LinkMeta { size, halvings, items: raw.items, stored_bytes })
}

/// The arguments of [`check_link`] for the next layer of `meta`: (first error, request).
fn next_link(meta: &RbMeta) -> Result<(Option<f64>, Option<u64>), Refusal> {
    match (meta.layers.first(), meta.layers.last()) {
        (Some(first), Some(last)) => {
            let request = last
                .size
                .capacity
                .checked_mul(u64::from(meta.expansion))
                .ok_or(Refusal::Field("capacity"))?;
            Ok((Some(first.size.error), Some(request)))
        }
        _ => Ok((None, None)),
    }
}

/// Checks the chain-level counts of validated layers.
fn check_counts(meta: &RbMeta) -> Result<(), Refusal> {
    let n = meta.layers.len();
    if n == 0 || n > MAX_RB_LAYERS || (meta.expansion == 0 && n != 1) {
        return Err(Refusal::Field("layer count"));
    }
    let mut sum = 0u64;
    for (i, l) in meta.layers.iter().enumerate() {
        if i + 1 < n && l.items != l.size.capacity {
            return Err(Refusal::Field("size (a layer before the last is not full)"));
        }
        sum = sum.checked_add(l.items).ok_or(Refusal::Field("size"))?;
    }
    if sum != meta.items {
        return Err(Refusal::Field("size (layers do not add up)"));
    }
    Ok(())
}

impl RbMeta {
    /// Bytes of all the layers' bit arrays (as this module holds them).
    pub fn bit_bytes(&self) -> u64 {
        self.layers.iter().map(|l| array_bits(l.size.bits) / 8).sum()
    }

    /// Builds the chain from one bit array per layer.
    pub fn into_chain(
        self,
        arrays: Vec<BitArray>,
        contents: Contents,
    ) -> Result<Chain, BloomError> {
        if arrays.len() != self.layers.len() {
            return Err(BloomError::BadData);
        }
        let first_error = self.layers[0].size.error;
        let layers = self
            .layers
            .iter()
            .zip(arrays)
            .map(|(l, bits)| Layer::from_redisbloom(&l.size, l.halvings, l.items, bits, contents))
            .collect::<Result<Vec<_>, _>>()?;
        Chain::from_redisbloom(
            self.scheme,
            self.noround,
            self.expansion,
            first_error,
            layers,
            self.items,
        )
    }

    /// Builds the chain with zeroed bit arrays (`BF.LOADCHUNK key 1 <header>`; marked
    /// [`Chain::awaiting_chunks`]), after asking `guard` for the memory.
    pub fn allocate(self, guard: &dyn AllocGuard) -> Result<Chain, BloomError> {
        let bits: Vec<u64> = self.layers.iter().map(|l| array_bits(l.size.bits)).collect();
        codec::allocate_for_chunks(guard, self.bit_bytes(), &bits, |arrays| {
            self.into_chain(arrays, Contents::Fresh)
        })
    }
}

/// Copies a stored bit array of `stored` bytes into an array of `bits` bits (zero-padded when
/// the layer's bytes are not whole words), one segment at a time.
fn bit_array(bits: u64, stored: &[u8]) -> Result<BitArray, BloomError> {
    if stored.len() as u64 == bits / 8 {
        let mut rest = stored;
        return BitArray::from_segments(bits, |words| {
            let take = usize::try_from(words * 8).map_err(|_| BloomError::BadData)?;
            let (head, tail) = rest.split_at(take.min(rest.len()));
            rest = tail;
            Words::from_le_bytes(head)
        });
    }
    let mut array = BitArray::new(bits)?;
    array.write_bytes(0, stored)?;
    Ok(array)
}

/// Reads RedisBloom's RDB value of encoding version `encver` (1–4), validating everything.
///
/// Layout (typed RDB fields): `size` (items), `nfilters`, then `options` (encver ≥ 2) and
/// `growth` (encver ≥ 4); per layer `entries`, `error` (double), `hashes`, `bpe` (double),
/// `bits`, `n2`, the bit array (string), `size` (items).
///
/// Each bit array is copied only after `guard` admitted the filter's size so far.
pub fn read_rdb(
    r: &mut impl FieldReader,
    encver: i32,
    guard: &dyn AllocGuard,
) -> Result<Chain, Refusal> {
    if !(1..=MAX_ENCODING_VERSION).contains(&encver) {
        return Err(Refusal::Version(encver));
    }
    let short = field("value (truncated)");
    let items = r.u64().map_err(&short)?;
    let count = r.u64().map_err(&short)?;
    // Nothing is allocated from the count: each layer is read, checked and admitted before the
    // next, so a forged count runs out of bytes first.
    if count == 0 || count > MAX_RB_LAYERS as u64 {
        return Err(Refusal::Field("layer count"));
    }
    let options = if encver >= 2 { r.u64().map_err(&short)? } else { 0 };
    let growth = if encver >= 4 { r.u64().map_err(&short)? } else { u64::from(DEFAULT_GROWTH) };
    let (scheme, noround, expansion) = check_options(options, growth)?;
    let mut meta = RbMeta { scheme, noround, expansion, items, layers: Vec::new() };
    let mut arrays = Vec::new();
    for _ in 0..count {
        let capacity = r.u64().map_err(&short)?;
        let error = r.f64().map_err(&short)?;
        let hashes = r.u64().map_err(&short)?;
        let bpe = r.f64().map_err(&short)?;
        let bits = r.u64().map_err(&short)?;
        let n2 = r.u64().map_err(&short)?;
        // `items` comes after the array; validate what is known first (items 0 for now).
        let raw = RawLink { capacity, error, hashes, bpe, bits, n2, items: 0 };
        let (first, request) = next_link(&meta)?;
        let mut link = check_link(&raw, first, request, noround)?;
        let so_far = arrays.len() as u64 + 1;
        let bytes = meta.bit_bytes() + array_bits(link.size.bits) / 8;
        guard
            .admit(info_size(so_far, bytes), array_bits(link.size.bits) / 8)
            .map_err(Refusal::Memory)?;
        let array_words = array_bits(link.size.bits) / 64;
        if link.stored_bytes == array_words * 8 && array_words <= SEGMENT_WORDS {
            // One whole segment: the buffer Redis read is kept as the array, as for our format.
            let array = BitArray::from_segments(array_words * 64, |n| r.words(n));
            arrays.push(array.map_err(field("bit array (length)"))?);
        } else {
            // Larger, or not whole words: copied into segments.
            let stored = r.bytes().map_err(&short)?;
            if stored.as_ref().len() as u64 != link.stored_bytes {
                return Err(Refusal::Field("bit array length"));
            }
            let array = bit_array(array_words * 64, stored.as_ref());
            arrays.push(array.map_err(field("bit array"))?);
        }
        link.items = r.u64().map_err(&short)?;
        if link.items > link.size.capacity {
            return Err(Refusal::Field("size (items above capacity)"));
        }
        meta.layers.push(link);
    }
    check_counts(&meta)?;
    meta.into_chain(arrays, Contents::Loaded).map_err(field("chain"))
}

/// RedisBloom's option bits of a chain in one of its schemes.
pub fn options_of(chain: &Chain) -> u64 {
    let mut o = 0;
    if chain.noround() {
        o |= OPT_NOROUND;
    }
    if chain.scheme() == HashScheme::Murmur64 {
        o |= OPT_FORCE64;
    }
    if !chain.params().scaling() {
        o |= OPT_NONSCALING;
    }
    o
}

/// The growth field RedisBloom would store for `chain`.
fn growth_of(chain: &Chain) -> u32 {
    let e = chain.params().expansion;
    if e == 0 { DEFAULT_GROWTH } else { e }
}

/// The stored fields of every layer of a RedisBloom chain.
fn links(chain: &Chain) -> impl Iterator<Item = RawLink> + '_ {
    chain.layers().iter().enumerate().map(|(i, l)| {
        let error = chain.layer_error(i);
        RawLink {
            capacity: l.capacity(),
            error,
            hashes: u64::from(l.hashes()),
            bpe: bits_per_entry(error).abs(),
            bits: l.len_bits(),
            n2: u64::from(l.rule().n2()),
            items: l.items(),
        }
    })
}

/// RedisBloom's dump header of a chain in one of its schemes (`BF.SCANDUMP key 0`): what a
/// RedisBloom server's `BF.LOADCHUNK` reads.
pub fn header(chain: &Chain) -> Vec<u8> {
    header_of(chain, false)
}

/// The header `chain` had when it was created: its first layer, nothing added.
pub fn creation_header(chain: &Chain) -> Vec<u8> {
    header_of(chain, true)
}

fn header_of(chain: &Chain, as_created: bool) -> Vec<u8> {
    let n = if as_created { 1 } else { chain.layers().len() };
    let mut out = Vec::with_capacity(HEADER_BYTES + HEADER_LINK_BYTES * n);
    let items = if as_created { 0 } else { chain.items() };
    out.extend_from_slice(&items.to_le_bytes());
    out.extend_from_slice(&(n as u32).to_le_bytes());
    out.extend_from_slice(&(options_of(chain) as u32).to_le_bytes());
    out.extend_from_slice(&growth_of(chain).to_le_bytes());
    for link in links(chain).take(n) {
        let items = if as_created { 0 } else { link.items };
        out.extend_from_slice(&(link.bits / 8).to_le_bytes());
        out.extend_from_slice(&link.bits.to_le_bytes());
        out.extend_from_slice(&items.to_le_bytes());
        out.extend_from_slice(&link.error.to_bits().to_le_bytes());
        out.extend_from_slice(&link.bpe.to_bits().to_le_bytes());
        out.extend_from_slice(&(link.hashes as u32).to_le_bytes());
        out.extend_from_slice(&link.capacity.to_le_bytes());
        out.push(link.n2 as u8);
    }
    out
}

/// Parses and validates RedisBloom's dump header; nothing is allocated from its claims.
pub fn parse_header(data: &[u8]) -> Result<RbMeta, Refusal> {
    let u64_at = |o: usize| u64::from_le_bytes(data[o..o + 8].try_into().expect("8 bytes"));
    let u32_at = |o: usize| u32::from_le_bytes(data[o..o + 4].try_into().expect("4 bytes"));
    if data.len() < HEADER_BYTES {
        return Err(Refusal::Field("header length"));
    }
    let count = u32_at(8) as usize;
    if count == 0 || count > MAX_RB_LAYERS {
        return Err(Refusal::Field("layer count"));
    }
    if data.len() != HEADER_BYTES + HEADER_LINK_BYTES * count {
        return Err(Refusal::Field("header length"));
    }
    let (scheme, noround, expansion) = check_options(u64::from(u32_at(12)), u64::from(u32_at(16)))?;
    let mut meta = RbMeta { scheme, noround, expansion, items: u64_at(0), layers: Vec::new() };
    for i in 0..count {
        let o = HEADER_BYTES + HEADER_LINK_BYTES * i;
        let bytes = u64_at(o);
        let raw = RawLink {
            bits: u64_at(o + 8),
            items: u64_at(o + 16),
            error: f64::from_bits(u64_at(o + 24)),
            bpe: f64::from_bits(u64_at(o + 32)),
            hashes: u64::from(u32_at(o + 40)),
            capacity: u64_at(o + 44),
            n2: u64::from(data[o + 52]),
        };
        let (first, request) = next_link(&meta)?;
        let link = check_link(&raw, first, request, noround)?;
        // A header restores whole arrays of this module's size: RedisBloom's bytes field must
        // be exactly bits / 8 (its own check), which rules out the legacy bits = 0 form.
        if raw.bits == 0 || bytes != raw.bits / 8 {
            return Err(Refusal::Field("bytes"));
        }
        meta.layers.push(link);
    }
    check_counts(&meta)?;
    Ok(meta)
}

/// The fields of one link that both RDB layouts write in this order (RedisBloom's `bloom`
/// struct: entries, error, hashes, bpe, bits, n2).
fn write_link(link: &RawLink, w: &mut impl FieldWriter) {
    w.u64(link.capacity);
    w.f64(link.error);
    w.u64(link.hashes);
    w.f64(link.bpe);
    w.u64(link.bits);
    w.u64(link.n2);
}

/// Writes a RedisBloom chain in this module's own RDB format (after its scheme id): the chain
/// fields and every layer's fields first, then each layer's bit array as its segments.
pub fn write_fields(chain: &Chain, w: &mut impl FieldWriter) {
    w.u64(options_of(chain));
    w.u64(u64::from(growth_of(chain)));
    w.u64(chain.items());
    w.u64(chain.layers().len() as u64);
    for link in links(chain) {
        write_link(&link, w);
        w.u64(link.items);
    }
    for layer in chain.layers() {
        layer.bits().for_each_segment_bytes(|seg| w.bytes(seg));
    }
}

/// Reads what [`write_fields`] wrote (the scheme id `id` already read), validating everything;
/// the options must agree with the scheme id.
pub fn read_fields(
    r: &mut impl FieldReader,
    scheme: HashScheme,
    guard: &dyn AllocGuard,
) -> Result<Chain, BloomError> {
    let options = r.u64()?;
    let growth = r.u64()?;
    let (s, noround, expansion) = check_options(options, growth)?;
    if s != scheme || (expansion == 0 && growth != u64::from(DEFAULT_GROWTH)) {
        return Err(BloomError::BadData);
    }
    let items = r.u64()?;
    let count = r.u64()?;
    if count == 0 || count > MAX_RB_LAYERS as u64 {
        return Err(BloomError::BadData);
    }
    let mut meta = RbMeta { scheme, noround, expansion, items, layers: Vec::new() };
    for _ in 0..count {
        let raw = RawLink {
            capacity: r.u64()?,
            error: r.f64()?,
            hashes: r.u64()?,
            bpe: r.f64()?,
            bits: r.u64()?,
            n2: r.u64()?,
            items: r.u64()?,
        };
        let (first, request) = next_link(&meta)?;
        let link = check_link(&raw, first, request, noround)?;
        // This module's own format is canonical: bits and bpe exactly as `write_fields` writes
        // them, so one chain has one encoding.
        if raw.bits != link.size.bits
            || raw.bpe.to_bits() != bits_per_entry(raw.error).abs().to_bits()
        {
            return Err(BloomError::BadData);
        }
        meta.layers.push(link);
    }
    check_counts(&meta)?;
    let bytes = meta.bit_bytes();
    guard.admit(info_size(meta.layers.len() as u64, bytes), bytes)?;
    let mut arrays = Vec::with_capacity(meta.layers.len());
    for l in &meta.layers {
        arrays.push(BitArray::from_segments(array_bits(l.size.bits), |n| r.words(n))?);
    }
    meta.into_chain(arrays, Contents::Loaded)
}

/// Writes RedisBloom's own RDB value (encoding version 4) of a chain in one of its schemes:
/// what RedisBloom's `BFRdbSave` writes. Used by tests and fuzz seeds (a RedisBloom server
/// reading it is the way back through an RDB file, which Redis cannot do for one key).
pub fn write_rdb(chain: &Chain, w: &mut impl FieldWriter) {
    w.u64(chain.items());
    w.u64(chain.layers().len() as u64);
    w.u64(options_of(chain));
    w.u64(u64::from(growth_of(chain)));
    for (link, layer) in links(chain).zip(chain.layers()) {
        write_link(&link, w);
        let mut buf = Vec::with_capacity(layer.bytes() as usize);
        layer.bits().for_each_segment_bytes(|seg| buf.extend_from_slice(seg));
        buf.truncate(layer.bytes() as usize);
        w.bytes(&buf);
        w.u64(link.items);
    }
}

/// RedisBloom's dump header (`SBChain_GetEncodedHeader`) of an empty one-layer filter with these
/// fields, whatever the options: how the tests and the fuzz seeds make RedisBloom, and this
/// module, take layouts that RedisBloom's own commands no longer create (legacy 32-bit hashing,
/// power-of-two layers). Not a validator: the fields go out as given.
pub fn one_layer_header(
    options: u32,
    bits: u64,
    n2: u8,
    hashes: u32,
    capacity: u64,
    error: f64,
) -> Vec<u8> {
    let bpe = bits_per_entry(error).abs();
    let mut h = Vec::with_capacity(20 + 53);
    h.extend_from_slice(&0u64.to_le_bytes()); // size (items)
    h.extend_from_slice(&1u32.to_le_bytes()); // nfilters
    h.extend_from_slice(&options.to_le_bytes());
    h.extend_from_slice(&2u32.to_le_bytes()); // growth
    h.extend_from_slice(&(bits / 8).to_le_bytes());
    h.extend_from_slice(&bits.to_le_bytes());
    h.extend_from_slice(&0u64.to_le_bytes()); // the layer's items
    h.extend_from_slice(&error.to_bits().to_le_bytes());
    h.extend_from_slice(&bpe.to_bits().to_le_bytes());
    h.extend_from_slice(&hashes.to_le_bytes());
    h.extend_from_slice(&capacity.to_le_bytes());
    h.push(n2);
    h
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::filter::Unlimited;
    use crate::filter::codec::SliceReader;
    use crate::filter::params::{MAX_RB_HASHES, MIN_RB_LAYER_ERROR};

    /// The four layouts RedisBloom 2.8.2 was given (options 5 by `BF.RESERVE k 0.01 1000`, the
    /// others by `BF.LOADCHUNK` of these headers).
    fn layouts() -> Vec<(&'static str, Chain)> {
        let reserve = ChainParams_new();
        vec![
            ("o5", Chain::new(reserve, HashScheme::Murmur64, 0, &Unlimited).unwrap()),
            (
                "o1",
                parse_header(&one_layer_header(1, 9600, 0, 7, 1000, 0.01))
                    .unwrap()
                    .allocate(&Unlimited)
                    .unwrap(),
            ),
            (
                "o4",
                parse_header(&one_layer_header(4, 16384, 14, 7, 1709, 0.01))
                    .unwrap()
                    .allocate(&Unlimited)
                    .unwrap(),
            ),
            (
                "o0",
                parse_header(&one_layer_header(0, 16384, 14, 7, 1709, 0.01))
                    .unwrap()
                    .allocate(&Unlimited)
                    .unwrap(),
            ),
        ]
    }

    #[allow(non_snake_case)]
    fn ChainParams_new() -> crate::filter::ChainParams {
        crate::filter::ChainParams::new(0.01, 1000, 2).unwrap()
    }

    fn set_bits(chain: &Chain) -> Vec<u64> {
        let mut out = Vec::new();
        let mut base = 0;
        for layer in chain.layers() {
            let mut bytes = Vec::new();
            layer.bits().read_bytes(0, layer.bytes(), |b| bytes.extend_from_slice(b)).unwrap();
            for (i, &c) in bytes.iter().enumerate() {
                out.extend((0..8).filter(|b| c >> b & 1 == 1).map(|b| base + i as u64 * 8 + b));
            }
            base += layer.len_bits();
        }
        out
    }

    /// Bits RedisBloom 2.8.2 set for one item in each empty layout (read back with
    /// `BF.SCANDUMP`): MurmurHash64A / MurmurHash2 with RedisBloom's seeds, positions mod bits
    /// or mod 2^n2, RedisBloom's bit order in bytes.
    #[test]
    #[allow(clippy::type_complexity)]
    fn one_item_sets_the_bits_redisbloom_sets() {
        let want: &[(&str, &[(&[u8], &[u64])])] = &[
            (
                "o5",
                &[
                    (b"hello", &[1905, 2749, 2837, 3681, 6469, 7401, 10189, 11033]),
                    (b"", &[700, 3423, 4213, 4746, 6936, 8259, 9582, 10449]),
                    (b"abcdefghijk", &[586, 830, 1074, 1318, 6244, 6488, 6732, 7856]),
                    (b"xxxxxxxxxxxxx", &[1623, 3047, 3191, 3335, 7727, 7871, 8015, 8159]),
                ],
            ),
            (
                "o1",
                &[
                    (b"hello", &[1777, 3614, 4029, 5451, 5866, 7703, 9540]),
                    (b"", &[1881, 1916, 3808, 3843, 5735, 7662, 9589]),
                    (b"abcdefghijk", &[257, 1747, 1879, 3369, 4991, 6613, 8235]),
                    (b"xxxxxxxxxxxxx", &[116, 1671, 3226, 4781, 6336, 7891, 8161]),
                ],
            ),
            (
                "o4",
                &[
                    (b"hello", &[9881, 10557, 11233, 11909, 12585, 13261, 13937]),
                    (b"", &[1304, 1347, 1390, 6794, 6837, 12241, 12284]),
                    (b"abcdefghijk", &[944, 1674, 2404, 3134, 3864, 4594, 5324]),
                    (b"xxxxxxxxxxxxx", &[2295, 3343, 7407, 8455, 9503, 13567, 14615]),
                ],
            ),
            (
                "o0",
                &[
                    (b"hello", &[2763, 4209, 5655, 7101, 11678, 13124, 14570]),
                    (b"", &[2265, 2805, 6496, 7036, 10727, 11267, 14958]),
                    (b"abcdefghijk", &[1107, 5035, 6185, 10113, 11263, 15191, 16341]),
                    (b"xxxxxxxxxxxxx", &[2605, 5914, 9223, 12371, 12532, 15680, 15841]),
                ],
            ),
        ];
        for ((name, empty), (want_name, items)) in layouts().into_iter().zip(want) {
            assert_eq!(name, *want_name);
            for (item, bits) in items.iter() {
                let mut c = empty.clone();
                assert!(c.add(item, &Unlimited).unwrap());
                assert_eq!(set_bits(&c), *bits, "{name} {item:?}");
                assert!(c.contains(item));
            }
        }
    }

    /// `BF.ADD g item0 … item5999` on each layout in RedisBloom 2.8.2: how many were new, and
    /// `BF.DEBUG` afterwards (capacity, bits, hashes and items of every layer: growth of
    /// power-of-two layers from their grown capacity, NOROUND growth, error halving).
    #[test]
    fn six_thousand_adds_grow_as_redisbloom_grows() {
        type L = (u64, u64, u32, u64);
        let want: &[(&str, u64, &[L])] = &[
            (
                "o5",
                5967,
                &[(11072, 1000, 8, 1000), (24960, 2000, 9, 2000), (55680, 4000, 10, 2967)],
            ),
            ("o1", 5921, &[(9600, 1000, 7, 1000), (22080, 2000, 8, 2000), (49920, 4000, 9, 2921)]),
            ("o4", 5945, &[(16384, 1709, 7, 1709), (65536, 5942, 8, 4236)]),
            ("o0", 5959, &[(16384, 1709, 7, 1709), (65536, 5942, 8, 4250)]),
        ];
        for ((name, mut c), (_, new, layers)) in layouts().into_iter().zip(want) {
            let items: Vec<String> = (0..6000).map(|i| format!("item{i}")).collect();
            let mut one_by_one = c.clone();
            let mut count = 0;
            for item in &items {
                count += u64::from(one_by_one.add(item.as_bytes(), &Unlimited).unwrap());
            }
            assert_eq!(count, *new, "{name}");
            let got: Vec<L> = one_by_one
                .layers()
                .iter()
                .map(|l| (l.len_bits(), l.capacity(), l.hashes(), l.items()))
                .collect();
            assert_eq!(got, *layers, "{name}");
            // The batched path gives the same results and bits.
            let mut out = Vec::new();
            c.add_many(&items, &Unlimited, &mut out).unwrap();
            assert_eq!(out.iter().filter(|&&b| b).count() as u64, *new, "{name}");
            assert_eq!(c, one_by_one, "{name}");
            let mut found = Vec::new();
            c.contains_many(&items, &mut found);
            assert!(found.iter().all(|&b| b));
            let absent: Vec<String> = (0..3000).map(|i| format!("absent{i}")).collect();
            found.clear();
            c.contains_many(&absent, &mut found);
            let singly: Vec<bool> = absent.iter().map(|a| c.contains(a.as_bytes())).collect();
            assert_eq!(found, singly, "{name}");
            // The way back: the header re-parses to the same chain shape.
            let back = parse_header(&header(&c)).unwrap().allocate(&Unlimited).unwrap();
            assert_eq!(header(&back), header(&c));
        }
    }

    fn grown(name: &str) -> Chain {
        let (_, mut c) = layouts().into_iter().find(|(n, _)| *n == name).unwrap();
        for i in 0..2500 {
            c.add(format!("item{i}").as_bytes(), &Unlimited).unwrap();
        }
        c
    }

    #[test]
    fn rdb_value_and_own_format_round_trip() {
        for name in ["o5", "o1", "o4", "o0"] {
            let c = grown(name);
            let mut buf = Vec::new();
            write_rdb(&c, &mut buf);
            for encver in 1..=4 {
                // Versions below 4 have no growth field; below 2 no options (only options 0).
                let mut v = Vec::new();
                let mut r = SliceReader::new(&buf);
                use crate::filter::codec::FieldReader as _;
                let (items, n, options, growth) =
                    (r.u64().unwrap(), r.u64().unwrap(), r.u64().unwrap(), r.u64().unwrap());
                if encver < 2 && options != 0 {
                    continue;
                }
                v.extend_from_slice(&items.to_le_bytes());
                v.extend_from_slice(&n.to_le_bytes());
                if encver >= 2 {
                    v.extend_from_slice(&options.to_le_bytes());
                }
                if encver >= 4 {
                    v.extend_from_slice(&growth.to_le_bytes());
                }
                v.extend_from_slice(&buf[32..]);
                let back = read_rdb(&mut SliceReader::new(&v), encver, &Unlimited).unwrap();
                assert_eq!(back, c, "{name} encver {encver}");
            }
            let mut ours = Vec::new();
            crate::filter::codec::write_chain(&c, &mut ours);
            let back =
                crate::filter::codec::read_chain(&mut SliceReader::new(&ours), &Unlimited).unwrap();
            assert_eq!(back, c, "{name}");
        }
    }

    #[test]
    fn every_truncation_and_versions_and_options_are_refused() {
        let c = grown("o5");
        let mut buf = Vec::new();
        write_rdb(&c, &mut buf);
        for cut in 0..buf.len() {
            assert!(
                read_rdb(&mut SliceReader::new(&buf[..cut]), 4, &Unlimited).is_err(),
                "cut {cut}"
            );
        }
        for v in [0, 5, 512, -1] {
            assert_eq!(
                read_rdb(&mut SliceReader::new(&buf), v, &Unlimited).unwrap_err(),
                Refusal::Version(v)
            );
        }
        for bad in [2u64, 16, 1 << 40] {
            let mut b = buf.clone();
            b[16..24].copy_from_slice(&(5 | bad).to_le_bytes());
            assert_eq!(
                read_rdb(&mut SliceReader::new(&b), 4, &Unlimited).unwrap_err(),
                Refusal::Options(5 | bad)
            );
        }
        let h = header(&c);
        for cut in 0..h.len() {
            assert!(parse_header(&h[..cut]).is_err(), "cut {cut}");
        }
        let mut longer = h.clone();
        longer.push(0);
        assert!(parse_header(&longer).is_err());
    }

    /// Flipping any bit of the header's fields is caught, except where the format has freedom:
    /// the growth (any value ≥ 1 is valid), `FORCE64` (either hash fits any layout) and `bpe`'s
    /// lowest bits (checked to 1e-12, not bit for bit).
    #[test]
    fn altered_header_fields_are_refused() {
        let c = grown("o5");
        let h = header(&c);
        for byte in 0..h.len() {
            if (16..20).contains(&byte) {
                continue; // growth
            }
            let link = byte.checked_sub(HEADER_BYTES).map(|o| o % HEADER_LINK_BYTES);
            if matches!(link, Some(32..=35)) {
                continue; // the low 32 bits of bpe
            }
            for bit in 0..8 {
                if (byte, bit) == (12, 2) {
                    continue; // FORCE64
                }
                let mut bad = h.clone();
                bad[byte] ^= 1 << bit;
                assert!(parse_header(&bad).is_err(), "byte {byte} bit {bit} accepted");
            }
        }
    }

    #[test]
    fn forged_layers_are_refused() {
        let ok = one_layer_header(5, 9600, 0, 7, 1000, 0.01);
        assert!(parse_header(&ok).is_ok());
        // Capacity far above what the bits hold; bits not a multiple of 64; n2 with NOROUND;
        // zero layers; 65 layers; nonscaling with two layers; hashes that do not fit the bpe.
        let cases = [
            one_layer_header(5, 9600, 0, 7, 100_000, 0.01),
            one_layer_header(5, 9601, 0, 7, 1000, 0.01),
            one_layer_header(5, 9600, 3, 7, 1000, 0.01),
            one_layer_header(4, 9600, 0, 7, 1000, 0.01),
            one_layer_header(5, 9600, 0, 8, 1000, 0.01),
            one_layer_header(5, 9600, 0, 7, 1000, 1.5),
            one_layer_header(5, 9600, 0, 7, 1000, 0.0),
            one_layer_header(5, 1 << 50, 0, 7, 1000, 0.01),
            one_layer_header(6, 9600, 0, 7, 1000, 0.01),
        ];
        for (i, h) in cases.iter().enumerate() {
            assert!(parse_header(h).is_err(), "case {i}");
        }
        let mut zero = ok.clone();
        zero[8..12].copy_from_slice(&0u32.to_le_bytes());
        assert!(parse_header(&zero[..HEADER_BYTES]).is_err());
        let mut many = ok.clone();
        many[8..12].copy_from_slice(&65u32.to_le_bytes());
        assert!(parse_header(&many).is_err());
    }

    /// The widest chain RedisBloom can write: growth 1 from a first error of 0.75 (a header
    /// RedisBloom's LOADCHUNK accepts), grown by adds until the next error would be 0.
    fn widest() -> Chain {
        let mut h = one_layer_header(5, 64, 0, 1, 1, 0.75);
        h[16..20].copy_from_slice(&1u32.to_le_bytes());
        let mut c = parse_header(&h).unwrap().allocate(&Unlimited).unwrap();
        let mut i = 0u64;
        let refused = loop {
            if let Err(e) = c.add(format!("wide:{i}").as_bytes(), &Unlimited) {
                break e;
            }
            i += 1;
        };
        // The same item count as RedisBloom 2.8 (tests/import.rs makes it there).
        assert_eq!((i, refused), (2288, BloomError::TooManyLayers));
        c
    }

    /// Every layer count up to RedisBloom's bound comes in, with errors down to 2^-1074 and
    /// 1,075 hashes; one more layer, or a count beyond the bytes present, is refused before
    /// anything is allocated for it.
    #[test]
    fn the_widest_redisbloom_chain_loads_and_no_more() {
        let c = widest();
        assert_eq!(c.layers().len(), MAX_RB_LAYERS);
        let last = c.layers().len() - 1;
        assert_eq!(c.layer_error(last), MIN_RB_LAYER_ERROR);
        assert_eq!(c.layers()[last].hashes(), MAX_RB_HASHES);
        // Header and RDB value round-trip.
        let h = header(&c);
        assert_eq!(header(&parse_header(&h).unwrap().allocate(&Unlimited).unwrap()), h);
        let mut rdb = Vec::new();
        write_rdb(&c, &mut rdb);
        assert_eq!(read_rdb(&mut SliceReader::new(&rdb), 4, &Unlimited).unwrap(), c);
        let mut ours = Vec::new();
        crate::filter::codec::write_chain(&c, &mut ours);
        let back =
            crate::filter::codec::read_chain(&mut SliceReader::new(&ours), &Unlimited).unwrap();
        assert_eq!(back, c);
        // One layer more (a copy of the last, so only the count is wrong): refused.
        let mut more = h.clone();
        more[8..12].copy_from_slice(&(MAX_RB_LAYERS as u32 + 1).to_le_bytes());
        more.extend_from_slice(&h[h.len() - HEADER_LINK_BYTES..]);
        assert_eq!(parse_header(&more).unwrap_err(), Refusal::Field("layer count"));
        // Forged RDB counts: beyond the bound, refused at once; within it but with fewer
        // layers present, refused when the bytes run out.
        for (count, want) in [
            (u64::MAX, Refusal::Field("layer count")),
            (MAX_RB_LAYERS as u64 + 1, Refusal::Field("layer count")),
            (MAX_RB_LAYERS as u64, Refusal::Field("value (truncated)")),
        ] {
            let mut v = Vec::new();
            write_rdb(&grown("o5"), &mut v);
            v[8..16].copy_from_slice(&count.to_le_bytes());
            assert_eq!(read_rdb(&mut SliceReader::new(&v), 4, &Unlimited).unwrap_err(), want);
        }
        // A layer whose error is 0 (what RedisBloom 2.8 leaves behind when a layer past
        // 2^-1074 fails to build; RedisBloom 8 refuses it too) is refused.
        let mut zero = h.clone();
        let at = h.len() - HEADER_LINK_BYTES + 24;
        zero[at..at + 8].copy_from_slice(&0f64.to_bits().to_le_bytes());
        assert!(parse_header(&zero).is_err());
    }

    /// The deepest chain RedisBloom's commands make (`BF.RESERVE k 0.99 1 EXPANSION 1`, first
    /// error 0.495): 1,074 layers; a new chain made here with the same parameters grows the same
    /// way, as RedisBloom grows it, while a native one stops at this module's own limits.
    #[test]
    fn redisbloom_chains_grow_as_redisbloom_native_ones_within_our_limits() {
        let params = crate::filter::ChainParams::new(0.99, 1, 1).unwrap();
        let mut rb = Chain::new(params, HashScheme::Murmur64, 0, &Unlimited).unwrap();
        let mut i = 0u64;
        while rb.add(format!("top:{i}").as_bytes(), &Unlimited).is_ok() {
            i += 1;
        }
        assert_eq!((i, rb.layers().len()), (2302, MAX_RB_LAYERS - 1));
        assert_eq!(rb.layer_error(MAX_RB_LAYERS - 2), MIN_RB_LAYER_ERROR);
        let mut native = Chain::new(params, HashScheme::Xxh3Enhanced, 7, &Unlimited).unwrap();
        let mut i = 0u64;
        while native.add(format!("top:{i}").as_bytes(), &Unlimited).is_ok() {
            i += 1;
        }
        assert!(native.layers().len() <= crate::filter::params::MAX_LAYERS);
        // New filters keep this module's error floor, whatever their scheme.
        let tiny = crate::filter::ChainParams::in_ranges(1e-30, 100, 2).unwrap();
        assert_eq!(
            Chain::new(tiny, HashScheme::Murmur64, 0, &Unlimited).unwrap_err(),
            BloomError::ErrorTooSmall
        );
    }

    /// RedisBloom 2.2.0–2.2.14 rounded NOROUND layers to whole bytes: 1000 items at 0.005 is
    /// 11027 bits, stored as 1379 bytes (11032 bits), positions mod 11032. Such a layer loads,
    /// probes mod 11032, counts 1379 bytes in INFO and dumps, and grows as RedisBloom does now.
    #[test]
    fn byte_rounded_noround_layers_load() {
        let mut h = one_layer_header(5, 11032, 0, 8, 1000, 0.005);
        let meta = parse_header(&h).unwrap();
        let mut c = meta.allocate(&Unlimited).unwrap();
        assert_eq!((c.layers()[0].len_bits(), c.layers()[0].bytes()), (11032, 1379));
        assert_eq!(c.info_size(), 32 + 64 + 1379);
        c.add(b"hello", &Unlimited).unwrap();
        let h1 = crate::filter::hash::HashScheme::Murmur64.hash(b"hello", 0);
        let want: Vec<u64> = {
            let mut v: Vec<u64> = h1.modular_probes(11032, 8).collect();
            v.sort();
            v.dedup();
            v
        };
        assert_eq!(set_bits(&c), want);
        assert_eq!(
            header(&c)[..HEADER_BYTES + 16],
            {
                h[0] = 1; // one item now
                h[HEADER_BYTES + 16] = 1;
                h
            }[..HEADER_BYTES + 16]
        );
        let mut rdb = Vec::new();
        write_rdb(&c, &mut rdb);
        assert_eq!(read_rdb(&mut SliceReader::new(&rdb), 4, &Unlimited).unwrap(), c);
        assert!(parse_header(&one_layer_header(5, 11040, 0, 8, 1000, 0.005)).is_err());
    }

    /// RedisBloom before 2.2 stored 0 bits for power-of-two layers, and tiny ones in fewer than
    /// 8 bytes: both load, with positions still below 2^n2.
    #[test]
    fn legacy_power_of_two_layers_load() {
        let mut v = Vec::new();
        v.u64(1); // items
        v.u64(1); // layers
        v.u64(0); // options (encver 2+)
        let (cap, err) = (2u64, 0.1);
        let size = crate::filter::params::rb_layer_size(cap, err, false).unwrap();
        assert_eq!(size.n2, 4);
        v.u64(size.capacity);
        v.f64(err);
        v.u64(u64::from(size.hashes));
        v.f64(size.bpe);
        v.u64(0); // bits: not stored then
        v.u64(u64::from(size.n2));
        // The one item's bits, in a 2-byte array.
        let mut c = Chain::from_redisbloom(
            HashScheme::Murmur32,
            false,
            2,
            err,
            vec![Layer::new_redisbloom(&size, 0).unwrap()],
            0,
        )
        .unwrap();
        c.add(b"legacy", &Unlimited).unwrap();
        let mut arr = Vec::new();
        c.layers()[0].bits().read_bytes(0, 8, |b| arr.extend_from_slice(b)).unwrap();
        assert!(arr[2..].iter().all(|&b| b == 0));
        v.bytes(&arr[..2]);
        v.u64(1);
        let back = read_rdb(&mut SliceReader::new(&v), 3, &Unlimited).unwrap();
        assert_eq!(back, c);
        assert!(back.contains(b"legacy"));
        // An array of the wrong length is refused.
        let mut bad = v.clone();
        let at = bad.len() - 8 - 2 - 8;
        bad[at..at + 8].copy_from_slice(&3u64.to_le_bytes());
        bad.insert(at + 8, 0);
        assert!(read_rdb(&mut SliceReader::new(&bad), 3, &Unlimited).is_err());
    }
}
