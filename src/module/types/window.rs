//! The `SBwindow-` type: a windowed filter ([`WindowFilter`], `BF.RESERVE … WINDOW …`) as a
//! Redis value, and its registration. RedisBloom has no such type; the name is scalebloom's.

use std::borrow::Cow;
use std::os::raw::c_int;

use redis_module::native_types::RedisType;

use super::bloom::{BLOOM_CHUNKS, bloom_chunk_offset, bloom_chunk_position};
use super::chunked::{self, Chunked, Dialect};
use super::io::{AofWriter, Digest, RdbReader, RdbWriter};
use super::{NativeType, load_refusal, methods};
use crate::filter::AllocGuard;
use crate::filter::mem::Mover;
use crate::filter::window::WindowFilter;
use crate::filter::window::codec::{self, RDB_ENCODING_VERSION};
use crate::module::call::Call;
use crate::module::errors;
use crate::module::limits::ServerGuard;
use crate::module::reply::Reply;

/// The data type (9 characters, as Redis requires).
pub static WINDOW_TYPE: RedisType =
    RedisType::new("SBwindow-", RDB_ENCODING_VERSION, methods::<WindowValue>());

/// A windowed filter stored at a key.
#[derive(Debug, Clone, PartialEq)]
pub struct WindowValue {
    /// The filter.
    pub filter: WindowFilter,
    /// Whether a `BF.LOADCHUNK` header created it and nothing but chunks has written it since
    /// (only then does a client's chunk go in). Not saved.
    pub awaiting_chunks: bool,
}

impl NativeType for WindowValue {
    fn redis_type() -> &'static RedisType {
        &WINDOW_TYPE
    }

    fn load(io: &mut RdbReader, encver: c_int, guard: &dyn AllocGuard) -> Result<Self, String> {
        let read = match encver {
            1 => codec::read_rdb_v1(io, guard),
            RDB_ENCODING_VERSION => codec::read_rdb(io, guard),
            _ => {
                return Err(format!(
                    "scalebloom: refused an SBwindow- value of unknown encoding version {encver}"
                ));
            }
        };
        read.map(|filter| WindowValue { filter, awaiting_chunks: false })
            .map_err(|e| load_refusal("SBwindow-", &e))
    }

    fn save(&self, io: &mut RdbWriter) {
        codec::write_rdb(&self.filter, io);
    }

    fn rewrite(&self, aof: &mut AofWriter) {
        chunked::rewrite(self, aof);
    }

    fn mem_usage(&self) -> usize {
        usize::try_from(self.filter.memory_usage()).unwrap_or(usize::MAX)
    }

    fn free_effort(&self) -> usize {
        self.filter.params().slices() + 1
    }

    /// The fields (times, counts, head), then every slice.
    fn digest(&self, d: &mut Digest) {
        let mut fields = Vec::new();
        codec::write_meta(&self.filter, &mut fields);
        d.add_bytes(&fields);
        let mut offset = 0u64;
        while let Some(chunk) = codec::read_chunk(&self.filter, offset) {
            offset += chunk.len() as u64;
            d.add_bytes(&chunk);
        }
    }

    unsafe fn relocate(&mut self, mv: &mut Mover<'_>) {
        // SAFETY: the caller keeps the `Mover` contract, which `WindowFilter::relocate` requires.
        unsafe { self.filter.relocate(mv) }
    }
}

impl Chunked for WindowValue {
    const DIALECT: &'static Dialect = &BLOOM_CHUNKS;

    fn header(&self) -> Vec<u8> {
        codec::dump_header(&self.filter)
    }

    fn chunk(&self, it: u64) -> Option<(u64, Cow<'_, [u8]>)> {
        let data = codec::read_chunk(&self.filter, it.checked_sub(1)?)?;
        Some((it.checked_add(data.len() as u64)?, Cow::Owned(data)))
    }

    fn from_header(call: &Call, header: &[u8]) -> Result<Self, Reply> {
        codec::parse_dump_header(header)
            .and_then(|meta| meta.allocate(&ServerGuard::for_command(call)))
            .map(|filter| WindowValue { filter, awaiting_chunks: true })
            .map_err(|e| Reply::Error(errors::text(&e)))
    }

    fn chunk_position(it: i64, len: usize) -> Result<u64, Reply> {
        bloom_chunk_position(it, len)
    }

    fn awaiting_chunks(&self) -> bool {
        self.awaiting_chunks
    }

    fn write_chunk(&mut self, at: u64, data: &[u8]) -> Result<(), Reply> {
        let offset = bloom_chunk_offset(at, data.len())?;
        codec::write_chunk(&mut self.filter, offset, data)
            .map_err(|e| Reply::Error(errors::text(&e)))
    }
}
