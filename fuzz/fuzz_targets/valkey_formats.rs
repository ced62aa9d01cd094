//! valkey-bloom's formats: arbitrary bytes through the three decoders of a valkey-bloom
//! object. The first byte picks one (its low 2 bits): 0 the `BF.LOAD` payload
//! (`payload::decode`), 1 the RDB value of encoding version 1 (`rdb::read`, also a `DUMP`
//! payload's and a full sync's), 2 scalebloom's own encoding of it (`codec::read`, encoding
//! version 2), 3 the RDB value under an encoding version it does not read; the rest is the
//! payload, or the typed fields in the byte form of `FieldWriter for Vec<u8>`.
//!
//! Properties:
//! - decoding never panics, and allocates nothing larger than the input allows (libFuzzer's
//!   `-malloc_limit_mb` catches a forged length that sizes an allocation);
//! - an accepted object round-trips through both formats it is saved in (the `BF.LOAD`
//!   payload of the AOF rewrite, and scalebloom's encoding) unchanged;
//! - every item it was given still answers present, and what adds make of it (24 adds of 16
//!   items, growth under 1 MiB) saves in both formats as an object that loads again.
#![no_main]

use libfuzzer_sys::fuzz_target;
use scalebloom::filter::fields::SliceReader;
use scalebloom::filter::valkey::{codec, payload, rdb};
use scalebloom::filter::{MaxFilterBytes, Unlimited};

fuzz_target!(|data: &[u8]| {
    let Some((&which, rest)) = data.split_first() else {
        return;
    };
    let loaded = match which & 3 {
        0 => payload::decode(rest, &Unlimited),
        1 => rdb::read(&mut SliceReader::new(rest), rdb::ENCVER, &Unlimited),
        2 => codec::read(&mut SliceReader::new(rest), &Unlimited),
        _ => rdb::read(&mut SliceReader::new(rest), 3, &Unlimited),
    };
    let Ok(mut bloom) = loaded else {
        return;
    };
    assert!(which & 3 != 3, "an unknown encoding version was read");
    let back = payload::decode(&payload::encode(&bloom), &Unlimited)
        .expect("the BF.LOAD payload of a loaded object must load");
    assert_eq!(back, bloom, "the BF.LOAD payload round trip changed the object");
    let mut ours = Vec::new();
    codec::write(&bloom, &mut ours);
    let back =
        codec::read(&mut SliceReader::new(&ours), &Unlimited).expect("our encoding must load it");
    assert_eq!(back, bloom, "our encoding's round trip changed the object");

    let mut added = Vec::new();
    for i in 0..24u8 {
        // Full or over the limit: refused, changing nothing.
        if bloom.add(&[i & 0x0f], &MaxFilterBytes(1 << 20)).is_ok() {
            added.push(i & 0x0f);
        }
    }
    assert!(added.iter().all(|i| bloom.contains(&[*i])), "an added item is missing");
    payload::decode(&payload::encode(&bloom), &Unlimited)
        .expect("what a loaded object saves after adds must load (BF.LOAD payload)");
    let mut ours = Vec::new();
    codec::write(&bloom, &mut ours);
    codec::read(&mut SliceReader::new(&ours), &Unlimited)
        .expect("what a loaded object saves after adds must load (ours)");
});
