//! The RDB field sequence: arbitrary bytes through `read_chain`, the decoder behind `rdb_load`
//! (and so behind every RESTORE payload and RDB file).
//!
//! The byte form is the one `FieldWriter for Vec<u8>` writes: the same typed fields Redis'
//! `RedisModule_Save*` calls write, as little-endian u64/f64 and u64-length-prefixed strings.
//! Properties:
//! - decoding never panics, and allocates nothing larger than the input (libFuzzer's
//!   `-malloc_limit_mb` catches a forged length that sizes an allocation);
//! - what decodes is canonical: re-encoding the chain gives back exactly the bytes that were
//!   read (the decoder is strict, so no two inputs mean the same chain), and those bytes
//!   decode to an equal chain;
//! - every state writes reach from an accepted value saves as a value that loads again (the
//!   counts after the bits are possible but not true in a forged value, and adds push them on:
//!   once that made the module refuse an RDB it had written itself). The writes come from the
//!   bytes after the value (each picks one of 16 items, so counters saturate; the top bit
//!   deletes from a counting chain), then 24 fixed adds; growth stays under 1 MiB.
#![no_main]

use libfuzzer_sys::fuzz_target;
use scalebloom::filter::bloom::codec::{read_chain, write_chain};
use scalebloom::filter::fields::SliceReader;
use scalebloom::filter::{MaxFilterBytes, Unlimited};

fuzz_target!(|data: &[u8]| {
    let mut reader = SliceReader::new(data);
    let Ok(chain) = read_chain(&mut reader, &Unlimited) else {
        return;
    };
    let consumed = data.len() - reader.remaining();
    let mut again = Vec::new();
    write_chain(&chain, &mut again);
    assert_eq!(
        again,
        &data[..consumed],
        "an accepted field sequence did not re-encode to the bytes it was read from"
    );
    let back = read_chain(&mut SliceReader::new(&again), &Unlimited)
        .expect("a re-encoded chain must load");
    assert_eq!(back, chain, "round trip changed the chain");

    let mut chain = chain;
    let counting = chain.counter_width() != 0;
    for b in data[consumed..].iter().take(64).copied().chain(0..24) {
        let item = [b & 0x0f];
        // Errors (full, over the limit, not counting) change nothing and are allowed here.
        let _ = if counting && b & 0x80 != 0 {
            chain.delete(&item)
        } else {
            chain.add(&item, &MaxFilterBytes(1 << 20))
        };
    }
    let mut saved = Vec::new();
    write_chain(&chain, &mut saved);
    let back = read_chain(&mut SliceReader::new(&saved), &Unlimited)
        .expect("what a loaded chain saves after writes must load");
    let mut again = Vec::new();
    write_chain(&back, &mut again);
    assert_eq!(again, saved, "a written chain changed across its save and load");
});
