//! The `MBbloom--` type: the scalable Bloom chain ([`Chain`]) as a Redis value, and its
//! registration.

use std::os::raw::c_int;

use redis_module::native_types::RedisType;
use redis_module::raw;

use super::io::{AofWriter, Digest, RdbReader, RdbWriter};
use super::{NativeType, aux, methods};
use crate::filter::bloom::Chain;
use crate::filter::bloom::chunks::read_chunk;
use crate::filter::bloom::codec::{self, RDB_ENCODING_VERSION, dump_header};
use crate::filter::bloom::redisbloom;
use crate::filter::mem::Mover;
use crate::filter::{AllocGuard, FilterError};
use crate::module::errors;

/// The data type. Its 9-character name is RedisBloom's, so `TYPE key` answers what clients
/// expect; its encoding version is ours ([`RDB_ENCODING_VERSION`]). It carries the module's aux
/// data (`aux.rs`).
pub static BLOOM_TYPE: RedisType = RedisType::new(
    "MBbloom--",
    RDB_ENCODING_VERSION,
    raw::RedisModuleTypeMethods {
        aux_load: Some(aux::load),
        aux_save: Some(aux::save),
        aux_save2: Some(aux::save2),
        aux_save_triggers: raw::REDISMODULE_AUX_BEFORE_RDB as c_int,
        ..methods::<Chain>()
    },
);

impl NativeType for Chain {
    fn redis_type() -> &'static RedisType {
        &BLOOM_TYPE
    }

    fn load(io: &mut RdbReader, encver: c_int, guard: &dyn AllocGuard) -> Result<Chain, String> {
        if !codec::is_own_encoding(encver) {
            // RedisBloom's own encodings (an RDB file, a DUMP payload or a full sync from it).
            return redisbloom::read_rdb(io, encver, guard)
                .map_err(|why| format!("scalebloom: refused a RedisBloom MBbloom-- value: {why}"));
        }
        codec::read_chain_version(io, guard, encver).map_err(|e| match e {
            FilterError::FilterLimit { .. } | FilterError::MaxMemory { .. } => {
                format!("scalebloom: RESTORE refused: {}", errors::text(&e))
            }
            _ => "scalebloom: refused a corrupt or inconsistent MBbloom-- value".to_string(),
        })
    }

    fn save(&self, io: &mut RdbWriter) {
        codec::write_chain(self, io);
    }

    /// `BF.LOADCHUNK key 1 <header>`, then one LOADCHUNK per non-zero chunk (zero chunks are
    /// already zero after the header creates the filter).
    fn rewrite(&self, aof: &mut AofWriter) {
        aof.emit_key_number_data(c"BF.LOADCHUNK", 1, &dump_header(self));
        let mut offset = 0u64;
        while let Some(chunk) = read_chunk(self, offset) {
            offset += chunk.len() as u64;
            if chunk.iter().any(|&b| b != 0) {
                aof.emit_key_number_data(c"BF.LOADCHUNK", (offset + 1) as i64, &chunk);
            }
        }
    }

    fn mem_usage(&self) -> usize {
        usize::try_from(self.info_size()).unwrap_or(usize::MAX)
    }

    fn free_effort(&self) -> usize {
        self.layers().iter().map(|l| l.bits().segment_byte_lengths().count() + 1).sum::<usize>() + 1
    }

    /// Items, then the parameters, then every bit.
    fn digest(&self, d: &mut Digest) {
        let mut fields = Vec::new();
        codec::write_meta(self, &mut fields);
        d.add_int(self.items() as i64);
        d.add_bytes(&fields);
        for layer in self.layers() {
            layer.bits().for_each_segment_bytes(|seg| d.add_bytes(seg));
        }
    }

    unsafe fn relocate(&mut self, mv: &mut Mover<'_>) {
        // SAFETY: the caller keeps the `Mover` contract, which `Chain::relocate` requires.
        unsafe { Chain::relocate(self, mv) }
    }
}
