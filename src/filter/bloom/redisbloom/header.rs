//! RedisBloom's dump header (`SBChain_GetEncodedHeader`): what `BF.SCANDUMP key 0` returns for a
//! chain in one of its schemes, and what `BF.LOADCHUNK key 1` reads from a RedisBloom server.
//! Packed little-endian, `HEADER_BYTES + HEADER_LINK_BYTES × nfilters` bytes:
//! ```text
//! chain (dumpedChainHeader, 20 bytes)      per layer (dumpedChainLink, 53 bytes)
//! [0..8)   u64 size (items)                [0..8)   u64 bytes (array length)
//! [8..12)  u32 nfilters                    [8..16)  u64 bits
//! [12..16) u32 options                     [16..24) u64 size (items)
//! [16..20) u32 growth                      [24..32) f64 error
//!                                          [32..40) f64 bpe
//!                                          [40..44) u32 hashes
//!                                          [44..52) u64 entries (capacity)
//!                                          [52]     u8  n2
//! ```
//! The layout is written down once, as the offsets below: `put_chain` and `put_link` write it,
//! `ChainFields::get` and `get_link` read it.

use super::meta::{check_counts, check_link, check_options, next_link};
use super::{DEFAULT_GROWTH, RawLink, RbMeta, Refusal, growth_of, links, options_of};
use crate::filter::bloom::Chain;
use crate::filter::bloom::params::{MAX_RB_LAYERS, bits_per_entry};

/// Bytes of the fixed part of RedisBloom's dump header (`dumpedChainHeader`).
pub const HEADER_BYTES: usize = 20;
/// Bytes per layer in RedisBloom's dump header (`dumpedChainLink`, packed).
pub const HEADER_LINK_BYTES: usize = 53;

// Offsets in the chain part.
const SIZE: usize = 0;
const NFILTERS: usize = 8;
const OPTIONS: usize = 12;
const GROWTH: usize = 16;
// Offsets in a link.
const L_BYTES: usize = 0;
const L_BITS: usize = 8;
const L_SIZE: usize = 16;
const L_ERROR: usize = 24;
const L_BPE: usize = 32;
const L_HASHES: usize = 40;
const L_ENTRIES: usize = 44;
const L_N2: usize = 52;

/// The chain part of the header.
struct ChainFields {
    items: u64,
    count: u32,
    options: u32,
    growth: u32,
}

impl ChainFields {
    /// Reads the chain part from `data`, at least [`HEADER_BYTES`] long.
    fn get(data: &[u8]) -> Self {
        Self {
            items: u64_at(data, SIZE),
            count: u32_at(data, NFILTERS),
            options: u32_at(data, OPTIONS),
            growth: u32_at(data, GROWTH),
        }
    }
}

/// Appends the chain part.
fn put_chain(out: &mut Vec<u8>, c: &ChainFields) {
    let mut h = [0u8; HEADER_BYTES];
    h[SIZE..SIZE + 8].copy_from_slice(&c.items.to_le_bytes());
    h[NFILTERS..NFILTERS + 4].copy_from_slice(&c.count.to_le_bytes());
    h[OPTIONS..OPTIONS + 4].copy_from_slice(&c.options.to_le_bytes());
    h[GROWTH..GROWTH + 4].copy_from_slice(&c.growth.to_le_bytes());
    out.extend_from_slice(&h);
}

/// Appends one link; its `bytes` field is `bits / 8`. `hashes` and `n2` go out in their
/// stored widths (32 and 8 bits).
fn put_link(out: &mut Vec<u8>, link: &RawLink) {
    let mut l = [0u8; HEADER_LINK_BYTES];
    l[L_BYTES..L_BYTES + 8].copy_from_slice(&(link.bits / 8).to_le_bytes());
    l[L_BITS..L_BITS + 8].copy_from_slice(&link.bits.to_le_bytes());
    l[L_SIZE..L_SIZE + 8].copy_from_slice(&link.items.to_le_bytes());
    l[L_ERROR..L_ERROR + 8].copy_from_slice(&link.error.to_bits().to_le_bytes());
    l[L_BPE..L_BPE + 8].copy_from_slice(&link.bpe.to_bits().to_le_bytes());
    l[L_HASHES..L_HASHES + 4].copy_from_slice(&(link.hashes as u32).to_le_bytes());
    l[L_ENTRIES..L_ENTRIES + 8].copy_from_slice(&link.capacity.to_le_bytes());
    l[L_N2] = link.n2 as u8;
    out.extend_from_slice(&l);
}

/// Reads the link at `data[o..o + HEADER_LINK_BYTES]` (the caller checked the length):
/// its `bytes` field and its other fields.
fn get_link(data: &[u8], o: usize) -> (u64, RawLink) {
    let raw = RawLink {
        bits: u64_at(data, o + L_BITS),
        items: u64_at(data, o + L_SIZE),
        error: f64::from_bits(u64_at(data, o + L_ERROR)),
        bpe: f64::from_bits(u64_at(data, o + L_BPE)),
        hashes: u64::from(u32_at(data, o + L_HASHES)),
        capacity: u64_at(data, o + L_ENTRIES),
        n2: u64::from(data[o + L_N2]),
    };
    (u64_at(data, o + L_BYTES), raw)
}

fn u64_at(data: &[u8], o: usize) -> u64 {
    u64::from_le_bytes(data[o..o + 8].try_into().expect("8 bytes"))
}

fn u32_at(data: &[u8], o: usize) -> u32 {
    u32::from_le_bytes(data[o..o + 4].try_into().expect("4 bytes"))
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
    let fields = ChainFields {
        items,
        count: n as u32,
        options: options_of(chain) as u32,
        growth: growth_of(chain),
    };
    put_chain(&mut out, &fields);
    for mut link in links(chain).take(n) {
        if as_created {
            link.items = 0;
        }
        put_link(&mut out, &link);
    }
    out
}

/// Parses and validates RedisBloom's dump header; nothing is allocated from its claims.
pub fn parse_header(data: &[u8]) -> Result<RbMeta, Refusal> {
    if data.len() < HEADER_BYTES {
        return Err(Refusal::Field("header length"));
    }
    let c = ChainFields::get(data);
    let count = c.count as usize;
    if count == 0 || count > MAX_RB_LAYERS {
        return Err(Refusal::Field("layer count"));
    }
    if data.len() != HEADER_BYTES + HEADER_LINK_BYTES * count {
        return Err(Refusal::Field("header length"));
    }
    let (scheme, noround, expansion) = check_options(u64::from(c.options), u64::from(c.growth))?;
    let mut meta = RbMeta { scheme, noround, expansion, items: c.items, layers: Vec::new() };
    for i in 0..count {
        let (bytes, raw) = get_link(data, HEADER_BYTES + HEADER_LINK_BYTES * i);
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
    let mut h = Vec::with_capacity(HEADER_BYTES + HEADER_LINK_BYTES);
    put_chain(&mut h, &ChainFields { items: 0, count: 1, options, growth: DEFAULT_GROWTH });
    let link = RawLink {
        capacity,
        error,
        hashes: u64::from(hashes),
        bpe: bits_per_entry(error).abs(),
        bits,
        n2: u64::from(n2),
        items: 0,
    };
    put_link(&mut h, &link);
    h
}
