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
//!   decode to an equal chain.
#![no_main]

use libfuzzer_sys::fuzz_target;
use scalebloom::filter::Unlimited;
use scalebloom::filter::codec::{read_chain, write_chain};
use scalebloom::filter::fields::SliceReader;

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
});
