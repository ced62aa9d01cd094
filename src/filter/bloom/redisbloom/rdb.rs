//! RedisBloom's RDB value (`BFRdbLoad`/`BFRdbSave`, encoding versions 1–4 of `MBbloom--`),
//! and this module's own RDB fields of a chain in RedisBloom's schemes (after its scheme id; see
//! `codec.rs`). Both write a layer's fields in the order of RedisBloom's `bloom` struct.

use super::meta::{check_counts, check_link, check_options, field, next_link};
use super::options_of;
use super::{DEFAULT_GROWTH, MAX_ENCODING_VERSION, RawLink, RbMeta, Refusal, growth_of, links};
use crate::filter::FilterError;
use crate::filter::bloom::Chain;
use crate::filter::bloom::bits::{BitArray, SEGMENT_WORDS};
use crate::filter::bloom::layer::{Contents, array_bits};
use crate::filter::bloom::params::{MAX_RB_LAYERS, bits_per_entry, info_size};
use crate::filter::fields::{FieldReader, FieldWriter};
use crate::filter::guard::AllocGuard;
use crate::filter::hash::HashScheme;
use crate::filter::mem::Words;

/// Copies a stored bit array of `stored` bytes into an array of `bits` bits (zero-padded when
/// the layer's bytes are not whole words), one segment at a time.
fn bit_array(bits: u64, stored: &[u8]) -> Result<BitArray, FilterError> {
    if stored.len() as u64 == bits / 8 {
        let mut rest = stored;
        return BitArray::from_segments(bits, |words| {
            let take = usize::try_from(words * 8).map_err(|_| FilterError::BadData)?;
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
    contents: Contents,
) -> Result<Chain, FilterError> {
    let options = r.u64()?;
    let growth = r.u64()?;
    let (s, noround, expansion) = check_options(options, growth)?;
    if s != scheme || (expansion == 0 && growth != u64::from(DEFAULT_GROWTH)) {
        return Err(FilterError::BadData);
    }
    let items = r.u64()?;
    let count = r.u64()?;
    if count == 0 || count > MAX_RB_LAYERS as u64 {
        return Err(FilterError::BadData);
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
            return Err(FilterError::BadData);
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
    meta.into_chain(arrays, contents)
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
