//! The windowed filter's formats: arbitrary bytes through its RDB decoder (`read_rdb`, behind
//! `rdb_load`, every RESTORE payload and RDB file of an `SBwindow-` value) or, when the first
//! byte is odd, its dump-header parser (`BF.LOADCHUNK key 1 <header>`).
//!
//! Properties:
//! - decoding never panics, and allocates nothing larger than the input (the RDB decoder reads
//!   the slices from the input; a header's slices are allocated only under a 1 MiB guard);
//! - what decodes is canonical: re-encoding gives back exactly the bytes that were read, and
//!   those decode to an equal filter;
//! - an accepted filter takes adds, queries and stats at any time without panicking.
#![no_main]

use libfuzzer_sys::fuzz_target;
use scalebloom::filter::fields::SliceReader;
use scalebloom::filter::window::codec::{dump_header, parse_dump_header, read_rdb, write_rdb};
use scalebloom::filter::{MaxFilterBytes, Unlimited};

fuzz_target!(|data: &[u8]| {
    let Some((&pick, rest)) = data.split_first() else {
        return;
    };
    let mut filter = if pick % 2 == 0 {
        let mut reader = SliceReader::new(rest);
        let Ok(f) = read_rdb(&mut reader, &Unlimited) else {
            return;
        };
        let consumed = rest.len() - reader.remaining();
        let mut again = Vec::new();
        write_rdb(&f, &mut again);
        assert_eq!(again, &rest[..consumed], "accepted fields did not re-encode to themselves");
        let back = read_rdb(&mut SliceReader::new(&again), &Unlimited).expect("re-encoded loads");
        assert!(back == f, "round trip changed the filter");
        f
    } else {
        let Ok(meta) = parse_dump_header(rest) else {
            return;
        };
        let Ok(f) = meta.allocate(&MaxFilterBytes(1 << 20)) else {
            return;
        };
        assert_eq!(dump_header(&f), rest, "accepted header did not re-encode to itself");
        f
    };
    for now in [0, filter.last_ms(), filter.last_ms().wrapping_add(12_345), u64::MAX] {
        let _ = filter.contains(b"probe", now);
        let _ = filter.stats(now);
        let _ = filter.items(now);
        filter.add(b"item", now);
    }
});
