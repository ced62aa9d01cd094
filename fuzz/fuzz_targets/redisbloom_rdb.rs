//! RedisBloom's RDB value: arbitrary bytes through `redisbloom::read_rdb`, the decoder behind
//! `rdb_load` for encoding versions 0–4 (RedisBloom RDB files, RESTORE of its DUMP payloads, a
//! full sync from a RedisBloom primary). The first byte picks the encoding version (its low 3
//! bits, so 0–7: 1–4 are read, the others refused); the rest are the typed fields in the byte
//! form of `FieldWriter for Vec<u8>`.
//!
//! Properties:
//! - decoding never panics, and allocates nothing larger than the input (libFuzzer's
//!   `-malloc_limit_mb` catches a forged length that sizes an allocation);
//! - an accepted value is a consistent chain: written back as RedisBloom's encoding version 4
//!   (`write_rdb`), it decodes to an equal chain, and so does this module's own format;
//! - every state adds reach from an accepted value saves, in both formats, as a value that
//!   loads again (as in `rdb_fields`): 24 adds of 16 items, growth under 1 MiB.
#![no_main]

use libfuzzer_sys::fuzz_target;
use scalebloom::filter::bloom::codec::{read_chain, write_chain};
use scalebloom::filter::bloom::redisbloom::{read_rdb, write_rdb};
use scalebloom::filter::fields::SliceReader;
use scalebloom::filter::{MaxFilterBytes, Unlimited};

fuzz_target!(|data: &[u8]| {
    let Some((&version, fields)) = data.split_first() else {
        return;
    };
    let encver = i32::from(version & 7);
    let Ok(chain) = read_rdb(&mut SliceReader::new(fields), encver, &Unlimited) else {
        return;
    };
    assert!((1..=4).contains(&encver), "encoding version {encver} was read");
    let mut again = Vec::new();
    write_rdb(&chain, &mut again);
    let back = read_rdb(&mut SliceReader::new(&again), 4, &Unlimited)
        .expect("a re-encoded value must load");
    assert_eq!(back, chain, "RedisBloom's format round trip changed the chain");
    let mut ours = Vec::new();
    write_chain(&chain, &mut ours);
    let back =
        read_chain(&mut SliceReader::new(&ours), &Unlimited).expect("our format must load it");
    assert_eq!(back, chain, "our format round trip changed the chain");

    let mut chain = chain;
    for i in 0..24u8 {
        // Full or over the limit: refused, changing nothing.
        let _ = chain.add(&[i & 0x0f], &MaxFilterBytes(1 << 20));
    }
    let mut saved = Vec::new();
    write_rdb(&chain, &mut saved);
    read_rdb(&mut SliceReader::new(&saved), 4, &Unlimited)
        .expect("what a loaded chain saves after adds must load (RedisBloom's format)");
    let mut ours = Vec::new();
    write_chain(&chain, &mut ours);
    read_chain(&mut SliceReader::new(&ours), &Unlimited)
        .expect("what a loaded chain saves after adds must load (ours)");
});
