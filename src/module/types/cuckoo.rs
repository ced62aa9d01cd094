//! The `MBbloomCF` type: a cuckoo filter ([`CuckooFilter`]) as a Redis value, and its
//! registration.
//!
//! Encoding versions: this module writes its own, [`RDB_ENCODING_VERSION`] (512: the
//! fingerprint width, then RedisBloom's fields, slots in strings of at most 64 MiB), and reads
//! that and RedisBloom's version 4 (RedisBloom 2.2 to 8.x), so RedisBloom's cuckoo data comes
//! in by RDB file, `RESTORE` and full sync. RedisBloom's versions 1–3 (≤ 2.0, another hash)
//! are refused with a log line.

use std::os::raw::c_int;

use redis_module::native_types::RedisType;
use redis_module::{Context, ContextFlags};

use super::io::{AofWriter, Digest, RdbReader, RdbWriter};
use super::{NativeType, methods};
use crate::filter::cuckoo::CuckooFilter;
use crate::filter::cuckoo::codec::RDB_ENCODING_VERSION;
use crate::filter::cuckoo::params::MAX_FILTERS;
use crate::filter::mem::Mover;
use crate::filter::{AllocGuard, FilterError};
use crate::module::config;
use crate::module::errors;

/// The data type. Its name is RedisBloom's, so `TYPE key` answers `MBbloomCF` and RedisBloom's
/// RDB values and DUMP payloads of the type load here.
pub static CUCKOO_TYPE: RedisType =
    RedisType::new("MBbloomCF", RDB_ENCODING_VERSION, methods::<CuckooValue>());

/// A cuckoo filter stored at a key: the filter itself, 48 bytes, so that the value takes
/// jemalloc's 48-byte class as RedisBloom's does.
///
/// The filter's mark ([`CuckooFilter::marked`]) says whether a `CF.LOADCHUNK` header created
/// it and nothing but chunks has written it since: only then does a client's `CF.LOADCHUNK`
/// chunk go in (a chunk never silently replaces the slots of a filter in use). Not saved: a
/// reloaded filter takes no more chunks.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CuckooValue {
    /// The filter.
    pub filter: CuckooFilter,
}

const _: () = assert!(std::mem::size_of::<CuckooValue>() <= 48);

impl CuckooValue {
    /// A filter in use.
    pub fn new(filter: CuckooFilter) -> Self {
        Self { filter }
    }

    /// A filter a `CF.LOADCHUNK` header created, awaiting its chunks.
    pub fn awaiting_chunks(mut filter: CuckooFilter) -> Self {
        filter.set_mark(true);
        Self { filter }
    }

    /// Whether it awaits `CF.LOADCHUNK` chunks (see the type).
    pub fn is_awaiting_chunks(&self) -> bool {
        self.filter.marked()
    }

    /// Marks the filter in use: it takes no more client chunks.
    pub fn in_use(&mut self) {
        self.filter.set_mark(false);
    }
}

/// The most sub-filters a loaded value may have: `cf-max-expansions` for a client's `RESTORE`
/// (as for a `CF.LOADCHUNK` header), no bound for a server loading its own data or a replica
/// (the same exemptions as the byte limits, `ServerGuard::for_load`).
fn restore_max_filters(io: &RdbReader) -> u16 {
    let Some(get_ctx) = api!(RedisModule_GetContextFromIO) else {
        return MAX_FILTERS;
    };
    // SAFETY: `io.0` is the live I/O handle of this load (RdbReader wraps the handle Redis
    // passed to rdb_load); the context it gives lives as long as the handle.
    let ctx = unsafe { get_ctx(io.0) };
    if ctx.is_null() {
        return MAX_FILTERS;
    }
    let flags = Context::new(ctx).get_flags();
    if flags.intersects(ContextFlags::LOADING | ContextFlags::ASYNC_LOADING | ContextFlags::SLAVE) {
        MAX_FILTERS
    } else {
        config::cf_max_filters()
    }
}

impl NativeType for CuckooValue {
    fn redis_type() -> &'static RedisType {
        &CUCKOO_TYPE
    }

    fn load(io: &mut RdbReader, encver: c_int, guard: &dyn AllocGuard) -> Result<Self, String> {
        let max_filters = restore_max_filters(io);
        let loaded = CuckooFilter::read_rdb_capped(io, encver, guard, max_filters);
        loaded.map(CuckooValue::new).map_err(|e| match e {
            FilterError::MaxExpansions => format!(
                "scalebloom: RESTORE refused: the value has more sub-filters than \
                 cf-max-expansions ({max_filters})"
            ),
            FilterError::UnsupportedEncoding(v) => format!(
                "scalebloom: refused an MBbloomCF value of encoding version {v} (RedisBloom 2.0 \
                 or older, another hash: re-create the filter, or load it into RedisBloom 2.2+ \
                 and save it again)"
            ),
            e @ (FilterError::FilterLimit { .. } | FilterError::MaxMemory { .. }) => {
                format!("scalebloom: RESTORE refused: {}", crate::module::errors::text(&e))
            }
            other => format!(
                "scalebloom: refused a corrupt or inconsistent MBbloomCF value ({})",
                errors::cuckoo_text(&other)
            ),
        })
    }

    fn save(&self, io: &mut RdbWriter) {
        self.filter.write_rdb(io);
    }

    /// `CF.LOADCHUNK key 1 <header>`, then `CF.LOADCHUNK key <it> <chunk>` for each chunk with
    /// a fingerprint (all-empty chunks are already empty after the header).
    fn rewrite(&self, aof: &mut AofWriter) {
        aof.emit_key_number_data(c"CF.LOADCHUNK", 1, &self.filter.header().encode());
        let mut it = 1u64;
        while let Some((next, data)) = self.filter.chunk(it) {
            if data.iter().any(|&b| b != 0) {
                aof.emit_key_number_data(c"CF.LOADCHUNK", next as i64, &data);
            }
            it = next;
        }
    }

    fn mem_usage(&self) -> usize {
        usize::try_from(self.filter.memory_usage()).unwrap_or(usize::MAX)
    }

    fn free_effort(&self) -> usize {
        usize::try_from(self.filter.info().filters).unwrap_or(usize::MAX).saturating_add(1)
    }

    fn digest(&self, d: &mut Digest) {
        self.filter.digest(|b| d.add_bytes(b));
    }

    unsafe fn relocate(&mut self, mv: &mut Mover<'_>) {
        // SAFETY: the caller keeps the `Mover` contract, which `CuckooFilter::relocate` requires.
        unsafe { self.filter.relocate(mv) }
    }
}
