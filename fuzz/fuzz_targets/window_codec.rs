//! The windowed filter's formats: arbitrary bytes through its RDB decoder (`read_rdb`, behind
//! `rdb_load`, every RESTORE payload and RDB file of an `SBwindow-` value) or, when the first
//! byte is odd, its dump-header parser (`BF.LOADCHUNK key 1 <header>`). The bytes the RDB value
//! leaves unread (the header path: the input's last 16 bytes) are a script of writes.
//!
//! Properties:
//! - decoding never panics, and allocates nothing larger than the input (the RDB decoder reads
//!   the slices from the input; a header's slices are allocated only under a 1 MiB guard);
//! - what decodes is canonical: re-encoding gives back exactly the bytes that were read, and
//!   those decode to an equal filter;
//! - an accepted filter takes adds, queries and stats at any time without panicking;
//! - every state the writes take it to (adds, batches, time passing: turns of the ring, a
//!   pause that clears it) saves to an RDB value that loads again, equal, and saves again to
//!   the same bytes, and dumps to a header and chunks that load back (`assert_reloads`); and
//!   the reloaded filter is the same filter from then on: the writes again on both give the
//!   same answers and equal filters.
#![no_main]

use libfuzzer_sys::fuzz_target;
use scalebloom::filter::fields::SliceReader;
use scalebloom::filter::window::WindowFilter;
use scalebloom::filter::window::codec::{
    dump_header, parse_dump_header, read_chunk, read_rdb, write_chunk, write_rdb,
};
use scalebloom::filter::{MaxFilterBytes, Unlimited};

/// Most writes per input.
const MAX_WRITES: usize = 48;

/// One write per byte of `script`: a clear top bit adds the item named by the low six bits
/// (bit 6 set: a batch of 16 items); a set top bit lets time pass, up to about eight
/// generations. Returns the answers of the adds and of a query after each write.
fn run_writes(f: &mut WindowFilter, script: &[u8]) -> Vec<bool> {
    let step = f.params().gen_ms.div_ceil(16).max(1);
    let mut now = f.last_ms();
    let mut answers = Vec::new();
    for &b in script.iter().take(MAX_WRITES) {
        if b & 0x80 != 0 {
            now = now.saturating_add(u64::from(b & 0x7f) * step);
        } else if b & 0x40 != 0 {
            let items: Vec<[u8; 2]> = (0..16u8).map(|i| [b, i]).collect();
            answers.extend(f.add_many(items.iter().map(|x| &x[..]), now));
        } else {
            answers.push(f.add(&[b], now));
        }
        answers.push(f.contains(&[b & 0x3f], now));
    }
    answers
}

/// The reload rule: `f` saves to an RDB value that loads again, equal, and saves again to the
/// same bytes; its dump header and chunks load back into an equal filter.
fn assert_reloads(f: &WindowFilter) -> WindowFilter {
    let mut saved = Vec::new();
    write_rdb(f, &mut saved);
    let back = read_rdb(&mut SliceReader::new(&saved), &Unlimited)
        .unwrap_or_else(|e| panic!("the saved value is refused: {e:?} ({f:?})"));
    assert!(back == *f, "the reload changed the filter");
    let mut again = Vec::new();
    write_rdb(&back, &mut again);
    assert!(again == saved, "the reloaded filter saves other bytes");
    let meta = parse_dump_header(&dump_header(f))
        .unwrap_or_else(|e| panic!("the dump header is refused: {e:?} ({f:?})"));
    let mut copy = meta.allocate(&Unlimited).expect("a filter in memory is admitted");
    let mut offset = 0u64;
    while let Some(chunk) = read_chunk(f, offset) {
        write_chunk(&mut copy, offset, &chunk).expect("own chunk");
        offset += chunk.len() as u64;
    }
    assert!(copy == *f, "the dump changed the filter");
    back
}

fuzz_target!(|data: &[u8]| {
    let Some((&pick, rest)) = data.split_first() else {
        return;
    };
    let (mut filter, script) = if pick % 2 == 0 {
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
        (f, &rest[consumed..])
    } else {
        let Ok(meta) = parse_dump_header(rest) else {
            return;
        };
        let Ok(f) = meta.allocate(&MaxFilterBytes(1 << 20)) else {
            return;
        };
        assert_eq!(dump_header(&f), rest, "accepted header did not re-encode to itself");
        (f, &data[data.len().saturating_sub(16)..])
    };
    run_writes(&mut filter, script);
    // A replica or a restarted server loads what the filter saved, then takes the same writes.
    let mut back = assert_reloads(&filter);
    let answers = run_writes(&mut filter, script);
    assert!(run_writes(&mut back, script) == answers, "the reloaded filter answers otherwise");
    assert!(back == filter, "the reloaded filter took the same writes to another state");
    assert_reloads(&filter);
    for now in [0, filter.last_ms(), filter.last_ms().wrapping_add(12_345), u64::MAX] {
        let _ = filter.contains(b"probe", now);
        let _ = filter.stats(now);
        let _ = filter.items(now);
        filter.add(b"item", now);
    }
    assert_reloads(&filter);
});
