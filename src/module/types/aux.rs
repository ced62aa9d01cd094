//! Module aux data, before the keys: the creation settings of the stream this server follows
//! (see `creation`), so that a replica restarted from its RDB, or a replica of a replica,
//! derives the same seeds as its primary. A marker (0: none, 1: the encoded settings follow).
//! Carried by the `MBbloom--` registration (`bloom.rs`), under its encoding version.

use std::os::raw::c_int;

use redis_module::raw;

use super::guarded;
use super::io::log_warning;
use crate::filter::bloom::codec::is_own_encoding;
use crate::module::creation::{self, Settings};

/// Aux markers.
const AUX_NONE: u64 = 0;
const AUX_SETTINGS: u64 = 1;

/// Redis 7.0 calls this one, which must write something; 7.2+ and Valkey call [`save2`].
pub(super) unsafe extern "C" fn save(rdb: *mut raw::RedisModuleIO, when: c_int) {
    guarded("aux_save", (), || save_settings(rdb, when, true));
}

/// [`save`] for servers that skip an aux field nothing was written to: a primary, which
/// follows no stream, writes nothing, so its RDB files load on a server without the module
/// when they hold no filter.
pub(super) unsafe extern "C" fn save2(rdb: *mut raw::RedisModuleIO, when: c_int) {
    guarded("aux_save2", (), || save_settings(rdb, when, false));
}

/// Writes the settings this server's RDB keeps, if any; with `marker_if_none`, the "none"
/// marker when there are none.
fn save_settings(rdb: *mut raw::RedisModuleIO, when: c_int, marker_if_none: bool) {
    if when != raw::REDISMODULE_AUX_BEFORE_RDB as c_int {
        return;
    }
    match creation::for_rdb() {
        Some(settings) => {
            raw::save_unsigned(rdb, AUX_SETTINGS);
            raw::save_slice(rdb, &settings.encode());
        }
        None if marker_if_none => raw::save_unsigned(rdb, AUX_NONE),
        None => {}
    }
}

/// Reads [`save`]'s data; anything else refuses the file (Redis then stops the load).
pub(super) unsafe extern "C" fn load(
    rdb: *mut raw::RedisModuleIO,
    encver: c_int,
    when: c_int,
) -> c_int {
    let (ok, err) = (raw::REDISMODULE_OK as c_int, raw::REDISMODULE_ERR as c_int);
    guarded("aux_load", err, || {
        // The aux data is the same in every encoding version of the type: files from builds
        // that wrote 512 or 513 carry it under those.
        if !is_own_encoding(encver) || when != raw::REDISMODULE_AUX_BEFORE_RDB as c_int {
            log_warning(&format!(
                "scalebloom: refused module aux data of encoding {encver}, trigger {when}"
            ));
            return err;
        }
        let settings = match raw::load_unsigned(rdb) {
            Ok(AUX_NONE) => return ok,
            Ok(AUX_SETTINGS) => raw::load_string_buffer(rdb)
                .map_err(|_| "truncated")
                .and_then(|b| Settings::decode(b.as_ref())),
            Ok(_) => Err("unknown marker"),
            Err(_) => Err("truncated"),
        };
        match settings {
            Ok(settings) => {
                creation::adopt(settings);
                ok
            }
            Err(why) => {
                log_warning(&format!("scalebloom: refused module aux data: {why}"));
                err
            }
        }
    })
}
