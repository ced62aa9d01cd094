//! The dump header of `BF.SCANDUMP key 0` / `BF.LOADCHUNK key 1 <header>`: arbitrary bytes
//! through `parse_dump_header`, then `ChainMeta::allocate`, exactly as BF.LOADCHUNK does.
//!
//! Properties:
//! - parsing never panics and allocates nothing from the header's claims; allocation happens
//!   only after the guard admitted the filter's size (`MaxFilterBytes`, 64 MiB here, so a
//!   valid-but-huge header is refused instead of exhausting memory — libFuzzer's
//!   `-malloc_limit_mb` / `-rss_limit_mb` catch anything that allocates first);
//! - the guard is the only reason a parsed header may fail to allocate;
//! - an accepted header is canonical: the allocated chain's `dump_header` is byte for byte the
//!   input, it re-parses to the same description, and the fresh chain's bits are all zero.
#![no_main]

use libfuzzer_sys::fuzz_target;
use scalebloom::filter::bloom::codec::{ChainMeta, dump_header, parse_dump_header};
use scalebloom::filter::bloom::params::info_size;
use scalebloom::filter::{FilterError, MaxFilterBytes};

/// Largest filter (as `BF.INFO Size` counts) a header may allocate here.
const LIMIT: u64 = 64 << 20;

fuzz_target!(|data: &[u8]| {
    let Ok(meta) = parse_dump_header(data) else {
        return;
    };
    let size = info_size(meta.layers.len() as u64, meta.bit_bytes());
    let chain = match meta.clone().allocate(&MaxFilterBytes(LIMIT)) {
        Ok(chain) => chain,
        Err(FilterError::FilterLimit { needed, limit }) => {
            assert_eq!((needed, limit), (size, LIMIT), "the guard saw another size");
            assert!(size > LIMIT, "a filter within the limit was refused");
            return;
        }
        Err(e) => panic!("a header that parsed could not be allocated: {e:?}"),
    };
    assert!(size <= LIMIT);
    assert_eq!(ChainMeta::of(&chain), meta, "allocate changed the description");
    assert_eq!(dump_header(&chain), data, "an accepted header is not canonical");
    assert_eq!(parse_dump_header(&dump_header(&chain)), Ok(meta));
    assert!(
        chain.layers().iter().all(|l| l.bits().count_ones() == 0),
        "a header-only restore must start from zero bits"
    );
});
