//! A cuckoo filter's RDB value (type `MBbloomCF`): arbitrary bytes as the typed fields of
//! RedisBloom's encoding version 4 or this module's 512 (the first byte picks), through
//! `CuckooFilter::read_rdb`, exactly as the type's rdb_load does.
//!
//! Properties:
//! - reading never panics and allocates nothing from the value's claims before the guard
//!   admitted the filter's size (64 MiB here);
//! - an accepted value writes back (this module's encoding) to fields that read back equal;
//! - the loaded filter takes inserts, deletes and a compaction without panicking, and its
//!   counters never wrap.
#![no_main]

use libfuzzer_sys::fuzz_target;
use scalebloom::filter::MaxFilterBytes;
use scalebloom::filter::cuckoo::CuckooFilter;
use scalebloom::filter::cuckoo::codec::{RDB_ENCODING_VERSION, REDISBLOOM_ENCODING_VERSION};
use scalebloom::filter::fields::SliceReader;

/// Largest filter (as `CF.INFO Size` counts) a value may allocate here.
const LIMIT: u64 = 64 << 20;

fuzz_target!(|data: &[u8]| {
    let Some((&pick, fields)) = data.split_first() else { return };
    let encver = if pick & 1 == 0 { REDISBLOOM_ENCODING_VERSION } else { RDB_ENCODING_VERSION };
    let guard = MaxFilterBytes(LIMIT);
    let Ok(mut f) = CuckooFilter::read_rdb(&mut SliceReader::new(fields), encver, &guard) else {
        return;
    };
    let mut buf = Vec::<u8>::new();
    f.write_rdb(&mut buf);
    let back = CuckooFilter::read_rdb(&mut SliceReader::new(&buf), RDB_ENCODING_VERSION, &guard)
        .expect("the way back must load");
    assert_eq!(back, f, "the way back changed the filter");
    let items = f.items();
    for i in 0..8u8 {
        let _ = f.add(&[i], i % 2 == 0, 32, &guard);
    }
    for i in 0..8u8 {
        f.delete(&[i]);
    }
    f.compact(true);
    assert!(f.items() <= items.saturating_add(8));
});
