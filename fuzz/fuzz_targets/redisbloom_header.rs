//! RedisBloom's dump header (`BF.LOADCHUNK key 1 <header>` from a RedisBloom SCANDUMP stream):
//! arbitrary bytes through `parse_any_header`, then `allocate`, exactly as BF.LOADCHUNK does.
//!
//! Properties:
//! - parsing never panics and allocates nothing from the header's claims; allocation happens
//!   only after the guard admitted the filter's size (64 MiB here);
//! - the guard is the only reason a parsed header may fail to allocate;
//! - an accepted RedisBloom header gives a chain with zero bits whose own dump header (the
//!   way back, RedisBloom's format) parses and allocates to an equal chain.
#![no_main]

use libfuzzer_sys::fuzz_target;
use scalebloom::filter::bloom::codec::{dump_header, parse_any_header};
use scalebloom::filter::{FilterError, MaxFilterBytes};

/// Largest filter (as `BF.INFO Size` counts) a header may allocate here.
const LIMIT: u64 = 64 << 20;

fuzz_target!(|data: &[u8]| {
    let Ok(header) = parse_any_header(data) else {
        return;
    };
    let redisbloom = header.is_redisbloom();
    let chain = match header.allocate(&MaxFilterBytes(LIMIT)) {
        Ok(chain) => chain,
        Err(FilterError::FilterLimit { .. }) => return,
        Err(e) => panic!("a header that parsed could not be allocated: {e:?}"),
    };
    assert_eq!(chain.scheme().is_redisbloom(), redisbloom);
    assert!(chain.layers().iter().all(|l| l.bits().count_ones() == 0));
    let back = parse_any_header(&dump_header(&chain))
        .expect("the way back must parse")
        .allocate(&MaxFilterBytes(LIMIT))
        .expect("and allocate");
    assert_eq!(back, chain, "the way back changed the chain");
});
