//! The chunks of `BF.SCANDUMP`/`BF.LOADCHUNK` after the header, the same for both header
//! formats (this module's, [`codec`](super::codec); RedisBloom's, [`redisbloom`](super::redisbloom)):
//! raw bit-array bytes, iterator `it` (≥ 1) meaning byte offset `it − 1` in all layers' arrays
//! laid end to end; a chunk never crosses a layer boundary. And the one way a chain that awaits
//! its chunks is allocated.

use super::bits::BitArray;
use super::chain::Chain;
use super::params::info_size;
use crate::filter::FilterError;
use crate::filter::guard::AllocGuard;

/// Largest chunk `BF.SCANDUMP` returns.
pub const MAX_CHUNK_BYTES: u64 = 16 * 1024 * 1024;

/// The one way a chunked restore (`BF.LOADCHUNK key 1 <header>`, either header format) gets
/// its chain: `guard` admits the filter's size (`bit_bytes` of bits, one layer per entry of
/// `array_bits`), zeroed arrays of `array_bits` are allocated, `build` assembles them, and the
/// chain is marked [`Chain::awaiting_chunks`].
pub fn allocate_for_chunks(
    guard: &dyn AllocGuard,
    bit_bytes: u64,
    array_bits: &[u64],
    build: impl FnOnce(Vec<BitArray>) -> Result<Chain, FilterError>,
) -> Result<Chain, FilterError> {
    guard.admit(info_size(array_bits.len() as u64, bit_bytes), bit_bytes)?;
    let arrays = array_bits.iter().map(|&bits| BitArray::new(bits)).collect::<Result<_, _>>()?;
    let mut chain = build(arrays)?;
    chain.await_chunks();
    Ok(chain)
}

/// Where byte `offset` of all layers' arrays laid end to end lies (the chain's own layers,
/// then each member's: [`Chain::all_layers`]): `(layer index in that order, offset in that
/// layer, bytes from there to the layer's end)`; `None` past the end. The one walk that both
/// reading and writing chunks use.
fn locate(chain: &Chain, offset: u64) -> Option<(usize, u64, u64)> {
    let mut start = 0u64;
    for (i, (_, _, layer)) in chain.all_layers().enumerate() {
        let len = layer.bytes();
        if offset < start + len {
            let inner = offset - start;
            return Some((i, inner, len - inner));
        }
        start += len;
    }
    None
}

/// Where the dump chunk starting at byte `offset` lies: `(layer index, offset in that layer,
/// length)`, at most [`MAX_CHUNK_BYTES`] and never past the layer's end; `None` past the end.
pub fn chunk_at(chain: &Chain, offset: u64) -> Option<(usize, u64, u64)> {
    locate(chain, offset).map(|(layer, inner, rest)| (layer, inner, rest.min(MAX_CHUNK_BYTES)))
}

/// The bytes of the dump chunk starting at byte `offset` ([`chunk_at`]); `None` past the end.
/// What `BF.SCANDUMP` sends and the AOF rewrite emits.
pub fn read_chunk(chain: &Chain, offset: u64) -> Option<Vec<u8>> {
    let (layer, inner, len) = chunk_at(chain, offset)?;
    let mut data = Vec::with_capacity(usize::try_from(len).ok()?);
    // chunk_at keeps [inner, inner + len) inside the layer, so the read cannot fail.
    let (_, _, layer) = chain.all_layers().nth(layer)?;
    layer.bits().read_bytes(inner, len, |b| data.extend_from_slice(b)).ok()?;
    Some(data)
}

/// Writes a chunk received by `BF.LOADCHUNK` at byte `offset`; refuses one that starts past the
/// end or does not fit inside the layer it starts in.
pub fn write_chunk(chain: &mut Chain, offset: u64, data: &[u8]) -> Result<(), FilterError> {
    let (layer, inner, rest) = locate(chain, offset).ok_or(FilterError::ChunkOffset)?;
    if data.len() as u64 > rest {
        return Err(FilterError::ChunkTooBig);
    }
    let own = chain.layers().len();
    if layer < own {
        return chain.write_layer_bytes(layer, inner, data);
    }
    // A member's layer: members follow the chain's own layers, each with all of its own.
    let mut index = layer - own;
    for member in chain.members_mut() {
        if index < member.layers().len() {
            return member.write_layer_bytes(index, inner, data);
        }
        index -= member.layers().len();
    }
    Err(FilterError::ChunkOffset)
}
