//! `CF.LOADCHUNK` of a cuckoo filter: arbitrary bytes as a header (RedisBloom's 38 bytes or
//! this module's 54, the first byte picks) and then chunks (`u64` iterator, `u16` length,
//! bytes), exactly as CF.LOADCHUNK sees them.
//!
//! Properties:
//! - parsing never panics and allocates only after the guard admitted the size (64 MiB);
//! - a refused chunk writes nothing; an accepted one lies inside one sub-filter;
//! - the loaded filter's own SCANDUMP stream (header and chunks) rebuilds an equal filter;
//! - whatever the chunks made, and whatever state commands take it to (the input's last 16
//!   bytes as a script of inserts, deletes, compactions: `shared::run_commands`), saves to an
//!   RDB value that loads again, equal, with the same digest and the same bytes when saved
//!   again, and dumps to a SCANDUMP stream that loads back (`shared::assert_reloads`); the
//!   commands never panic, counters never wrap;
//! - the reloaded filter is the same filter from then on: the script again on it and on the
//!   loaded one gives the same replies and equal filters (`shared::assert_same_after_reload`).
#![no_main]

use libfuzzer_sys::fuzz_target;
use scalebloom::filter::MaxFilterBytes;
use scalebloom::filter::cuckoo::Header;

#[path = "shared/cuckoo.rs"]
mod shared;

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
    // The SCANDUMP stream rebuilds it (and the RDB value reloads it).
    shared::assert_reloads(&f);
    let script = &data[data.len().saturating_sub(16)..];
    shared::run_commands(&mut f, script);
    shared::assert_same_after_reload(&mut f, script);
});
