//! A cuckoo filter's RDB value (type `MBbloomCF`): arbitrary bytes as the typed fields of
//! RedisBloom's encoding version 4 or this module's 512 (the first byte picks), through
//! `CuckooFilter::read_rdb`, exactly as the type's rdb_load does; the bytes the value leaves
//! unread are a script of commands (`shared::run_commands`).
//!
//! Properties:
//! - reading never panics and allocates nothing from the value's claims before the guard
//!   admitted the filter's size (64 MiB here);
//! - an accepted value, and whatever state the commands take it to (inserts, deletes,
//!   compactions, growth), saves to a value that loads again, equal, with the same digest
//!   and the same bytes when saved again, and whose SCANDUMP stream loads back through
//!   LOADCHUNK (`shared::assert_reloads`); the commands never panic, counters never wrap;
//! - the reloaded value is the same filter from then on: the script again on it and on the
//!   filter gives the same replies and equal filters (`shared::assert_same_after_reload`).
#![no_main]

use libfuzzer_sys::fuzz_target;
use scalebloom::filter::MaxFilterBytes;
use scalebloom::filter::cuckoo::CuckooFilter;
use scalebloom::filter::cuckoo::codec::{RDB_ENCODING_VERSION, REDISBLOOM_ENCODING_VERSION};
use scalebloom::filter::fields::SliceReader;

#[path = "shared/cuckoo.rs"]
mod shared;

/// Largest filter (as `CF.INFO Size` counts) a value may allocate here.
const LIMIT: u64 = 64 << 20;

/// The script when the value leaves no bytes unread: what this target ran before it took one
/// (eight adds, half of them NX, eight deletes, a full compaction).
const DEFAULT_SCRIPT: &[u8] =
    &[0, 0x41, 2, 0x43, 4, 0x45, 6, 0x47, 0x80, 0x81, 0x82, 0x83, 0x84, 0x85, 0x86, 0x87, 0xc1];

fuzz_target!(|data: &[u8]| {
    let Some((&pick, fields)) = data.split_first() else { return };
    let encver = if pick & 1 == 0 { REDISBLOOM_ENCODING_VERSION } else { RDB_ENCODING_VERSION };
    let guard = MaxFilterBytes(LIMIT);
    let mut reader = SliceReader::new(fields);
    let Ok(mut f) = CuckooFilter::read_rdb(&mut reader, encver, &guard) else {
        return;
    };
    let script = &fields[fields.len() - reader.remaining()..];
    let script = if script.is_empty() { DEFAULT_SCRIPT } else { script };
    shared::assert_reloads(&f);
    shared::run_commands(&mut f, script);
    shared::assert_same_after_reload(&mut f, script);
});
