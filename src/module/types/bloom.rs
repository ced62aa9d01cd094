//! The `MBbloom--` type: the scalable Bloom chain ([`Chain`]) as a Redis value, and its
//! registration.

use std::os::raw::c_int;

use redis_module::native_types::RedisType;
use redis_module::raw;

use super::chunked::{self, Chunked, Dialect};
use super::io::{AofWriter, Digest, RdbReader, RdbWriter};
use super::{NativeType, aux, load_refusal, methods};
use std::borrow::Cow;

use crate::filter::bloom::chunks::{read_chunk, write_chunk};
use crate::filter::bloom::codec::{self, RDB_ENCODING_V3, RDB_ENCODING_VERSION, dump_header};
use crate::filter::bloom::{Chain, redisbloom};
use crate::filter::mem::Mover;
use crate::filter::{AllocGuard, FilterError};
use crate::module::args::parse_i64;
use crate::module::call::Call;
use crate::module::compat;
use crate::module::errors;
use crate::module::limits::ServerGuard;
use crate::module::reply::Reply;

/// The data type. Its 9-character name is RedisBloom's, so `TYPE key` answers what clients
/// expect; its encoding version is ours ([`RDB_ENCODING_VERSION`]). It carries the module's aux
/// data (`aux.rs`).
pub static BLOOM_TYPE: RedisType = bloom_type(RDB_ENCODING_VERSION);

/// The same type registered under encoding version 514 ([`RDB_ENCODING_V3`]), the last 0.1
/// reads: registered instead of [`BLOOM_TYPE`] under `bf.compat 0.1` (`compat.rs`), since Redis
/// writes a type's registered version on every value of it.
pub static BLOOM_TYPE_0_1: RedisType = bloom_type(RDB_ENCODING_V3);

const fn bloom_type(encver: i32) -> RedisType {
    RedisType::new(
        "MBbloom--",
        encver,
        raw::RedisModuleTypeMethods {
            aux_load: Some(aux::load),
            aux_save: Some(aux::save),
            aux_save2: Some(aux::save2),
            aux_save_triggers: raw::REDISMODULE_AUX_BEFORE_RDB as c_int,
            ..methods::<Chain>()
        },
    )
}

/// The registration in force: [`BLOOM_TYPE_0_1`] under `bf.compat 0.1`, else [`BLOOM_TYPE`].
pub fn bloom_type_in_force() -> &'static RedisType {
    if compat::writes_for_0_1() { &BLOOM_TYPE_0_1 } else { &BLOOM_TYPE }
}

impl NativeType for Chain {
    fn redis_type() -> &'static RedisType {
        bloom_type_in_force()
    }

    fn load(io: &mut RdbReader, encver: c_int, guard: &dyn AllocGuard) -> Result<Chain, String> {
        if !codec::is_own_encoding(encver) {
            // RedisBloom's own encodings (an RDB file, a DUMP payload or a full sync from it).
            return redisbloom::read_rdb(io, encver, guard)
                .map_err(|why| format!("scalebloom: refused a RedisBloom MBbloom-- value: {why}"));
        }
        let chain = codec::read_chain_version(io, guard, encver)
            .map_err(|e| load_refusal("MBbloom--", &e))?;
        // Under bf.compat 0.1 a value is saved as 514, which holds no members.
        if !chain.members().is_empty() && compat::writes_for_0_1() {
            return Err("scalebloom: refused a merged MBbloom-- value with members: bf.compat \
                        0.1 cannot save it (0.1 has no encoding for members); raise bf.compat"
                .to_string());
        }
        Ok(chain)
    }

    fn save(&self, io: &mut RdbWriter) {
        if compat::writes_for_0_1() {
            // No members: nothing under bf.compat 0.1 makes or loads them (see `load`).
            codec::write_chain_alone(self, io);
        } else {
            codec::write_chain(self, io);
        }
    }

    fn rewrite(&self, aof: &mut AofWriter) {
        chunked::rewrite(self, aof);
    }

    fn mem_usage(&self) -> usize {
        usize::try_from(self.value_info_size()).unwrap_or(usize::MAX)
    }

    fn free_effort(&self) -> usize {
        let layers = self.all_layers();
        layers.map(|(_, _, l)| l.bits().segment_byte_lengths().count() + 1).sum::<usize>() + 1
    }

    /// Items, then the parameters, then every bit; then each member the same way.
    fn digest(&self, d: &mut Digest) {
        for part in self.parts() {
            let mut fields = Vec::new();
            codec::write_meta(part, &mut fields);
            d.add_int(part.items() as i64);
            d.add_bytes(&fields);
            for layer in part.layers() {
                layer.bits().for_each_segment_bytes(|seg| d.add_bytes(seg));
            }
        }
    }

    unsafe fn relocate(&mut self, mv: &mut Mover<'_>) {
        // SAFETY: the caller keeps the `Mover` contract, which `Chain::relocate` requires.
        unsafe { Chain::relocate(self, mv) }
    }
}

/// `BF.SCANDUMP` and `BF.LOADCHUNK` in RedisBloom's words, for every type the `BF.*` commands
/// take (Bloom chains and windowed filters).
pub static BLOOM_CHUNKS: Dialect = Dialect {
    not_found: errors::NOT_FOUND,
    scan_iterator: bloom_scan_iterator,
    iterator_first: false,
    end: || Reply::Bulk(Vec::new()),
    load_iterator: |b| parse_i64(b).ok_or_else(|| Reply::err(errors::LOADCHUNK_ITER)),
    key_exists: errors::LOADCHUNK_KEY_EXISTS,
    empty_header_is_chunk: true,
    not_restoring: errors::NOT_RESTORING,
    event: c"bf.loadchunk",
    load_command: c"BF.LOADCHUNK",
};

/// `BF.SCANDUMP`'s iterator: an integer; a negative one ends the dump at once.
fn bloom_scan_iterator(b: &[u8]) -> Result<Option<u64>, Reply> {
    match parse_i64(b) {
        None => Err(Reply::err(errors::SCANDUMP_ITER)),
        Some(it) => Ok(u64::try_from(it).ok()),
    }
}

/// Where a `BF.LOADCHUNK` chunk goes: iterator `it` is 1 + the offset just past the chunk, so
/// at least 1 and at least the chunk's length (the offset is worked out when it is written).
pub fn bloom_chunk_position(it: i64, len: usize) -> Result<u64, Reply> {
    u64::try_from(it)
        .ok()
        .filter(|&it| it >= 1 && it >= len as u64)
        .ok_or_else(|| Reply::err(errors::BAD_DATA))
}

/// The byte offset of a `BF.LOADCHUNK` chunk of `len` bytes at iterator `at`.
pub fn bloom_chunk_offset(at: u64, len: usize) -> Result<u64, Reply> {
    at.checked_sub(len as u64 + 1)
        .ok_or_else(|| Reply::Error(errors::text(&FilterError::ChunkOffset)))
}

impl Chunked for Chain {
    const DIALECT: &'static Dialect = &BLOOM_CHUNKS;

    fn header(&self) -> Vec<u8> {
        dump_header(self)
    }

    fn chunk(&self, it: u64) -> Option<(u64, Cow<'_, [u8]>)> {
        let data = read_chunk(self, it.checked_sub(1)?)?;
        Some((it.checked_add(data.len() as u64)?, Cow::Owned(data)))
    }

    fn from_header(call: &Call, header: &[u8]) -> Result<Self, Reply> {
        codec::parse_any_header(header)
            .and_then(|meta| meta.allocate(&ServerGuard::for_command(call)))
            .map_err(|e| Reply::Error(errors::text(&e)))
    }

    fn chunk_position(it: i64, len: usize) -> Result<u64, Reply> {
        bloom_chunk_position(it, len)
    }

    fn awaiting_chunks(&self) -> bool {
        Chain::awaiting_chunks(self)
    }

    fn write_chunk(&mut self, at: u64, data: &[u8]) -> Result<(), Reply> {
        let offset = bloom_chunk_offset(at, data.len())?;
        write_chunk(self, offset, data).map_err(|e| Reply::Error(errors::text(&e)))
    }
}
