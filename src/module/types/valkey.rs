//! The `bloomfltr` type: a valkey-bloom object ([`ValkeyBloom`]) as a Redis value, under
//! valkey-bloom's own type name, so that its RDB files, `DUMP` payloads and full syncs load
//! here. Values it wrote (encoding version 1) are read as it wrote them; this module saves
//! them in its own encoding ([`OWN_ENCVER`], `filter/valkey/codec.rs`), which valkey-bloom
//! refuses rather than misreads. The AOF rewrite writes valkey-bloom's own command,
//! `BF.LOAD key <payload>`.

use std::os::raw::c_int;

use redis_module::native_types::RedisType;

use super::io::{AofWriter, Digest, RdbReader, RdbWriter};
use super::{NativeType, methods};
use crate::filter::AllocGuard;
use crate::filter::mem::Mover;
use crate::filter::valkey::codec::{self, OWN_ENCVER};
use crate::filter::valkey::{ValkeyBloom, ValkeyError, payload, rdb};

/// The data type: valkey-bloom's name, this module's encoding version.
pub static VALKEY_TYPE: RedisType =
    RedisType::new(rdb::TYPE_NAME, OWN_ENCVER, methods::<ValkeyBloom>());

/// The log line of a refused value.
fn refusal(e: &ValkeyError) -> String {
    format!("scalebloom: refused a valkey-bloom bloomfltr value: {e:?}")
}

impl NativeType for ValkeyBloom {
    fn redis_type() -> &'static RedisType {
        &VALKEY_TYPE
    }

    fn load(io: &mut RdbReader, encver: c_int, guard: &dyn AllocGuard) -> Result<Self, String> {
        if crate::module::compat::writes_for_0_1() {
            return Err("scalebloom: refused a bloomfltr value (valkey-bloom's layout): \
                        bf.compat 0.1 cannot save it (0.1 has no such type); raise bf.compat"
                .to_string());
        }
        let loaded = if encver == OWN_ENCVER {
            codec::read(io, guard)
        } else {
            rdb::read(io, encver, guard)
        };
        loaded.map_err(|e| refusal(&e))
    }

    fn save(&self, io: &mut RdbWriter) {
        codec::write(self, io);
    }

    fn rewrite(&self, aof: &mut AofWriter) {
        aof.emit_key_data(c"BF.LOAD", &payload::encode(self));
    }

    fn mem_usage(&self) -> usize {
        usize::try_from(self.size()).unwrap_or(usize::MAX)
    }

    fn free_effort(&self) -> usize {
        self.layers().len()
    }

    /// Items, then the settings and layer shapes, then every bit.
    fn digest(&self, d: &mut Digest) {
        d.add_int(self.items() as i64);
        let mut fields = Vec::new();
        codec::write(self, &mut fields);
        d.add_bytes(&fields);
    }

    unsafe fn relocate(&mut self, mv: &mut Mover<'_>) {
        // SAFETY: the caller keeps the `Mover` contract, which `ValkeyBloom::relocate` requires.
        unsafe { ValkeyBloom::relocate(self, mv) }
    }
}
