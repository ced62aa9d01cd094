//! The `MBbloomCF` type: a cuckoo filter ([`CuckooFilter`]) as a Redis value, and its
//! registration.
//!
//! Encoding versions: this module writes its own, [`RDB_ENCODING_VERSION`] (512: the
//! fingerprint width, then RedisBloom's fields, slots in strings of at most 64 MiB), and reads
//! that and RedisBloom's version 4 (RedisBloom 2.2 to 8.x), so RedisBloom's cuckoo data comes
//! in by RDB file, `RESTORE` and full sync. RedisBloom's versions 1–3 (≤ 2.0, another hash)
//! are refused with a log line.

use std::borrow::Cow;
use std::os::raw::c_int;

use redis_module::native_types::RedisType;
use redis_module::{Context, ContextFlags};

use super::chunked::{self, Chunked, Dialect};
use super::io::{AofWriter, Digest, RdbReader, RdbWriter};
use super::{NativeType, load_refusal, methods};
use crate::filter::cuckoo::codec::RDB_ENCODING_VERSION;
use crate::filter::cuckoo::params::MAX_FILTERS;
use crate::filter::cuckoo::{CuckooFilter, Header};
use crate::filter::mem::Mover;
use crate::filter::{AllocGuard, FilterError};
use crate::module::args::parse_i64;
use crate::module::call::Call;
use crate::module::config;
use crate::module::errors;
use crate::module::limits::ServerGuard;
use crate::module::reply::Reply;

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
            e if e.is_limit() => load_refusal("MBbloomCF", &e),
            other => format!(
                "scalebloom: refused a corrupt or inconsistent MBbloomCF value ({})",
                errors::cuckoo_text(&other)
            ),
        })
    }

    fn save(&self, io: &mut RdbWriter) {
        self.filter.write_rdb(io);
    }

    fn rewrite(&self, aof: &mut AofWriter) {
        chunked::rewrite(self, aof);
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

/// `CF.SCANDUMP` and `CF.LOADCHUNK` in RedisBloom's words: the iterator is checked first and
/// must not be negative, the dump ends with a null, a header at an existing key is refused.
pub static CUCKOO_CHUNKS: Dialect = Dialect {
    not_found: errors::NOT_FOUND,
    scan_iterator: |b| {
        parse_i64(b)
            .and_then(|it| u64::try_from(it).ok())
            .map(Some)
            .ok_or_else(|| Reply::err(errors::CF_INVALID_POSITION))
    },
    iterator_first: true,
    end: || Reply::Null,
    load_iterator: |b| {
        parse_i64(b).filter(|&it| it != 0).ok_or_else(|| Reply::err(errors::CF_INVALID_POSITION))
    },
    key_exists: errors::ITEM_EXISTS,
    empty_header_is_chunk: false,
    not_restoring: errors::CF_NOT_RESTORING,
    event: c"cf.loadchunk",
    load_command: c"CF.LOADCHUNK",
};

impl Chunked for CuckooValue {
    const DIALECT: &'static Dialect = &CUCKOO_CHUNKS;

    fn header(&self) -> Vec<u8> {
        self.filter.header().encode()
    }

    fn chunk(&self, it: u64) -> Option<(u64, Cow<'_, [u8]>)> {
        self.filter.chunk(it)
    }

    fn dumps_nothing(&self) -> bool {
        self.filter.info().items == 0
    }

    /// More sub-filters than `cf-max-expansions` are refused from a client: a filter that
    /// could take no insert, and whose compaction would take time quadratic in their number
    /// (65,535 tiny ones).
    fn from_header(call: &Call, header: &[u8]) -> Result<Self, Reply> {
        let header = match Header::parse(header) {
            Ok(h) => h,
            Err(FilterError::BadHeader) => return Err(Reply::err(errors::CF_INVALID_HEADER)),
            Err(_) => return Err(Reply::err(errors::CF_BAD_HEADER)),
        };
        let (filters, max) = (header.shape.filters, config::cf_max_filters());
        if filters > max && !call.trusted() {
            return Err(Reply::Error(errors::cf_header_max_filters(filters, max)));
        }
        match header.allocate(&ServerGuard::for_command(call)) {
            Ok(filter) => Ok(CuckooValue::awaiting_chunks(filter)),
            Err(e) if e.is_limit() || e == FilterError::OutOfMemory => {
                Err(Reply::Error(errors::cf_create(&e)))
            }
            Err(FilterError::BadHeader) => Err(Reply::err(errors::CF_INVALID_HEADER)),
            Err(_) => Err(Reply::err(errors::CF_BAD_HEADER)),
        }
    }

    fn chunk_position(it: i64, _len: usize) -> Result<u64, Reply> {
        u64::try_from(it).map_err(|_| Reply::err(errors::CF_BAD_CHUNK))
    }

    fn awaiting_chunks(&self) -> bool {
        self.is_awaiting_chunks()
    }

    fn write_chunk(&mut self, at: u64, data: &[u8]) -> Result<(), Reply> {
        self.filter.load_chunk(at, data).map_err(|_| Reply::err(errors::CF_BAD_CHUNK))
    }
}
