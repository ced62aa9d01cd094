//! Chunk placement for `BF.LOADCHUNK`: a valid small filter built from fuzzed parameters, then a
//! fuzzed sequence of chunks written with `write_chunk`, checked against a plain byte-array model.
//!
//! Every input decodes to a valid filter (parameters are taken modulo their ranges), so no
//! execution is wasted on a refused header. Input layout (missing bytes read as zero):
//! ```text
//! [0]      error rate: ERRORS[b % len]
//! [1..3)   first layer's capacity: 1 + (u16 LE % 1000)
//! [3]      expansion: b % 5 (0 = nonscaling); layout: blocked if b ≥ 128, else standard
//! [4]      layers: 1 + b % 4 (always 1 when nonscaling)
//! [5]      items in the last layer: b % (its capacity + 1)
//! then 7-byte chunk records until the input ends:
//!   [0] where:  b % 5 — 0: `delta` bytes into layer `layer`; 1: `delta` bytes before layer
//!               `layer`'s end; 2: `delta` bytes before the end of all layers; 3: `delta`
//!               bytes past that end; 4: u64::MAX − delta
//!   [1] layer index (mod layer count)
//!   [2..4) delta, u16 LE
//!   [4..6) length, u16 LE % 4097
//!   [6] fill: the chunk's byte i is fill × (i + 1) + i / 7, wrapping in u8
//! ```
//! Properties, for every chunk: `write_chunk` never panics; it accepts exactly the chunks that
//! start inside the filter and fit in the layer they start in, refusing the others with
//! `ChunkOffset` (starts past the end) or `ChunkTooBig` (crosses its layer's end) and changing
//! nothing; the chain's description never changes. At the end, the bytes SCANDUMP would send —
//! walking `chunk_at` from offset 0, each chunk inside one layer and at most
//! `MAX_CHUNK_BYTES` — are exactly the model's bytes.
#![no_main]

use libfuzzer_sys::fuzz_target;
use scalebloom::filter::bloom::chunks::{MAX_CHUNK_BYTES, chunk_at, read_chunk, write_chunk};
use scalebloom::filter::bloom::claims::expected_layer_in;
use scalebloom::filter::bloom::codec::{ChainMeta, dump_header, parse_dump_header};
use scalebloom::filter::bloom::params::Layout;
use scalebloom::filter::bloom::{Chain, ChainParams};
use scalebloom::filter::hash::HashScheme;
use scalebloom::filter::{FilterError, MaxFilterBytes};

const ERRORS: [f64; 7] = [0.5, 0.1, 0.05, 0.01, 0.001, 1e-5, 1e-9];

/// Reads the input front to back; past the end every byte is zero.
struct Input<'a>(&'a [u8]);

impl Input<'_> {
    fn u8(&mut self) -> u8 {
        let (&b, rest) = self.0.split_first().unwrap_or((&0, &[]));
        self.0 = rest;
        b
    }
    fn u16(&mut self) -> u16 {
        u16::from_le_bytes([self.u8(), self.u8()])
    }
    fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

/// The filter the input describes, built the way BF.LOADCHUNK builds one: its dump header,
/// parsed and allocated. `None` if the guard refuses its size.
fn filter_from(input: &mut Input) -> Option<Chain> {
    let error = ERRORS[input.u8() as usize % ERRORS.len()];
    let capacity = 1 + u64::from(input.u16() % 1000);
    let shape = input.u8();
    let expansion = u64::from(shape % 5);
    let layers = 1 + input.u8() as usize % 4;
    let layers = if expansion == 0 { 1 } else { layers };
    let params =
        ChainParams::new(error, capacity, expansion).expect("every parameter is inside its range");
    // Full layers, then a partly filled last one, exactly as a chain grows: built as a
    // description rather than by adding thousands of items per run.
    // Standard or blocked layers (a blocked layer is a whole number of 512-bit blocks).
    let layout = if shape >= 128 { Layout::Blocked } else { Layout::Standard };
    let mut meta = ChainMeta {
        params,
        scheme: HashScheme::Xxh3Enhanced,
        seed: 7,
        width: 0,
        layout,
        items: 0,
        layers: Vec::new(),
    };
    for i in 0..layers {
        let size =
            expected_layer_in(&params, layout, i).expect("four layers of at most 64000 items");
        meta.layers.push((size, size.capacity));
        meta.items += size.capacity;
    }
    let last = meta.layers.last_mut().expect("at least one layer");
    let partial = u64::from(input.u8()) % (last.0.capacity + 1);
    meta.items -= last.1 - partial;
    last.1 = partial;
    let chain = match meta.allocate(&MaxFilterBytes(4 << 20)) {
        Ok(chain) => chain,
        Err(FilterError::FilterLimit { .. }) => return None,
        Err(e) => panic!("a valid description was refused: {e:?}"),
    };
    // Through the header, as BF.LOADCHUNK key 1 <header> would build it.
    let restored = parse_dump_header(&dump_header(&chain))
        .expect("our own header parses")
        .allocate(&MaxFilterBytes(4 << 20))
        .expect("admitted once, admitted again");
    assert_eq!(restored, chain);
    Some(restored)
}

fuzz_target!(|data: &[u8]| {
    let mut input = Input(data);
    let Some(mut chain) = filter_from(&mut input) else {
        return;
    };
    let meta = ChainMeta::of(&chain);
    // Each layer's [start, end) in the bytes of all layers laid end to end.
    let mut bounds = Vec::new();
    let mut end = 0u64;
    for (size, _) in &meta.layers {
        bounds.push((end, end + size.bytes()));
        end += size.bytes();
    }
    let total = end;
    let mut model = vec![0u8; total as usize];

    while !input.is_empty() {
        let where_ = input.u8() % 5;
        let (start, stop) = bounds[input.u8() as usize % bounds.len()];
        let delta = u64::from(input.u16());
        let len = usize::from(input.u16() % 4097);
        let fill = input.u8();
        let offset = match where_ {
            0 => start.saturating_add(delta),
            1 => stop.saturating_sub(delta),
            2 => total.saturating_sub(delta),
            3 => total.saturating_add(delta),
            _ => u64::MAX - delta,
        };
        let chunk: Vec<u8> = (0..len)
            .map(|i| fill.wrapping_mul((i as u8).wrapping_add(1)).wrapping_add((i / 7) as u8))
            .collect();

        // What must happen, from the model alone.
        let expected = match bounds.iter().find(|(s, e)| (*s..*e).contains(&offset)) {
            None => Err(FilterError::ChunkOffset),
            Some(&(_, layer_end)) if offset + len as u64 > layer_end => {
                Err(FilterError::ChunkTooBig)
            }
            Some(_) => Ok(()),
        };
        let got = write_chunk(&mut chain, offset, &chunk);
        assert_eq!(got, expected, "chunk of {len} bytes at offset {offset} of {total}");
        if got.is_ok() {
            model[offset as usize..offset as usize + len].copy_from_slice(&chunk);
        }
        assert_eq!(ChainMeta::of(&chain), meta, "a chunk changed the filter's description");
    }

    // Read everything back the way SCANDUMP does and compare with the model.
    let mut offset = 0u64;
    let mut seen = Vec::with_capacity(model.len());
    while let Some((layer, inner, len)) = chunk_at(&chain, offset) {
        let (start, stop) = bounds[layer];
        assert_eq!(start + inner, offset, "chunk_at put offset {offset} in the wrong layer");
        assert!(len > 0 && len <= MAX_CHUNK_BYTES && offset + len <= stop, "chunk crosses a layer");
        let bytes = read_chunk(&chain, offset).expect("chunk_at gives a readable range");
        assert_eq!(bytes.len() as u64, len, "read_chunk read another length than chunk_at gave");
        seen.extend_from_slice(&bytes);
        offset += len;
    }
    assert_eq!(offset, total, "SCANDUMP stopped before the end");
    assert!(seen == model, "SCANDUMP would send other bytes than were written");
});
