//! The `SBwindow-` type: a windowed filter ([`WindowFilter`], `BF.RESERVE … WINDOW …`) as a
//! Redis value, and its registration. RedisBloom has no such type; the name is scalebloom's.

use std::os::raw::c_int;

use redis_module::native_types::RedisType;

use super::io::{AofWriter, Digest, RdbReader, RdbWriter};
use super::{NativeType, methods};
use crate::filter::mem::Mover;
use crate::filter::window::WindowFilter;
use crate::filter::window::codec::{self, RDB_ENCODING_VERSION};
use crate::filter::{AllocGuard, FilterError};
use crate::module::errors;

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
        read.map(|filter| WindowValue { filter, awaiting_chunks: false }).map_err(|e| match e {
            FilterError::FilterLimit { .. } | FilterError::MaxMemory { .. } => {
                format!("scalebloom: RESTORE refused: {}", errors::text(&e))
            }
            _ => "scalebloom: refused a corrupt or inconsistent SBwindow- value".to_string(),
        })
    }

    fn save(&self, io: &mut RdbWriter) {
        codec::write_rdb(&self.filter, io);
    }

    /// `BF.LOADCHUNK key 1 <header>`, then one LOADCHUNK per non-zero chunk.
    fn rewrite(&self, aof: &mut AofWriter) {
        aof.emit_key_number_data(c"BF.LOADCHUNK", 1, &codec::dump_header(&self.filter));
        let mut offset = 0u64;
        while let Some(chunk) = codec::read_chunk(&self.filter, offset) {
            offset += chunk.len() as u64;
            if chunk.iter().any(|&b| b != 0) {
                aof.emit_key_number_data(c"BF.LOADCHUNK", (offset + 1) as i64, &chunk);
            }
        }
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
