//! `CF.LOADCHUNK` of a cuckoo filter: arbitrary bytes as a header (RedisBloom's 38 bytes or
//! this module's 54, the first byte picks) and then chunks (`u64` iterator, `u16` length,
//! bytes), exactly as CF.LOADCHUNK sees them.
//!
//! Properties:
//! - parsing never panics and allocates only after the guard admitted the size (64 MiB);
//! - a refused chunk writes nothing; an accepted one lies inside one sub-filter;
//! - the loaded filter's own SCANDUMP stream (header and chunks) rebuilds an equal filter;
//! - inserts, deletes and a compaction on whatever the chunks made never panic.
#![no_main]

use libfuzzer_sys::fuzz_target;
use scalebloom::filter::MaxFilterBytes;
use scalebloom::filter::cuckoo::Header;

/// Largest filter (as `CF.INFO Size` counts) a header may allocate here.
const LIMIT: u64 = 64 << 20;

fuzz_target!(|data: &[u8]| {
    let Some((&pick, rest)) = data.split_first() else { return };
    let len = if pick & 1 == 0 { 38 } else { 54 };
    if rest.len() < len {
        return;
    }
    let (header, mut chunks) = rest.split_at(len);
    let guard = MaxFilterBytes(LIMIT);
    let Ok(h) = Header::parse(header) else { return };
    let mut f = match h.allocate(&guard) {
        Ok(f) => f,
        Err(_) => return,
    };
    assert_eq!(f.header(), h, "a filter's header is the one it was made from");
    while chunks.len() >= 10 {
        let it = u64::from_le_bytes(chunks[..8].try_into().unwrap());
        let n = usize::from(u16::from_le_bytes([chunks[8], chunks[9]])).min(chunks.len() - 10);
        let (chunk, tail) = chunks[10..].split_at(n);
        chunks = tail;
        let before = f.clone();
        if f.load_chunk(it, chunk).is_err() {
            assert_eq!(f, before, "a refused chunk wrote something");
        }
    }
    let mut copy =
        Header::parse(&f.header().encode()).expect("own header").allocate(&guard).unwrap();
    let mut it = 1;
    while let Some((next, bytes)) = f.chunk(it) {
        copy.load_chunk(next, &bytes).expect("own chunk");
        it = next;
    }
    assert_eq!(copy, f, "the SCANDUMP stream changed the filter");
    for i in 0..8u8 {
        let _ = f.add(&[i], false, 32, &guard);
        f.contains(&[i]);
        f.count(&[i]);
    }
    for i in 0..8u8 {
        f.delete(&[i]);
    }
    f.compact(true);
});
