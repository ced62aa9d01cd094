//! The `MBbloom--` native type and its callbacks. Every callback runs inside `catch_unwind`: a
//! panic here must not take Redis down.

use std::alloc::Layout;
use std::cell::Cell;
use std::ffi::{CString, c_void};
use std::os::raw::{c_char, c_int, c_longlong};
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::ptr::NonNull;
use std::sync::atomic::{AtomicU64, Ordering};

use redis_module::native_types::RedisType;
use redis_module::{RedisBuffer, raw};

use redis_module::Context;

use super::creation::{self, Settings};
use super::limits::ServerGuard;
use crate::filter::codec::{
    self, FieldReader, FieldWriter, RDB_ENCODING_V1, RDB_ENCODING_VERSION, dump_header, read_chunk,
};
use crate::filter::mem::Words;
use crate::filter::{BloomError, Chain, redisbloom};

/// The data type. Its 9-character name is RedisBloom's, so `TYPE key` answers what clients
/// expect; its encoding version is ours ([`RDB_ENCODING_VERSION`]).
pub static BLOOM_TYPE: RedisType = RedisType::new(
    "MBbloom--",
    RDB_ENCODING_VERSION,
    raw::RedisModuleTypeMethods {
        version: raw::REDISMODULE_TYPE_METHOD_VERSION as u64,
        rdb_load: Some(rdb_load),
        rdb_save: Some(rdb_save),
        aof_rewrite: Some(aof_rewrite),
        mem_usage: Some(mem_usage),
        digest: Some(digest),
        free: Some(free),
        aux_load: Some(aux_load),
        aux_save: Some(aux_save),
        aux_save2: Some(aux_save2),
        aux_save_triggers: raw::REDISMODULE_AUX_BEFORE_RDB as c_int,
        free_effort: Some(free_effort),
        unlink: None,
        copy: Some(copy),
        defrag: Some(defrag),
        copy2: None,
        free_effort2: None,
        mem_usage2: None,
        unlink2: None,
    },
);

/// Logs at `warning` level without letting `%` be read as a format directive.
fn log_warning(msg: &str) {
    let level = CString::new("warning").expect("no NUL");
    let fmt = CString::new("%s").expect("no NUL");
    let text = CString::new(msg.replace('\0', " ")).expect("NULs replaced");
    // SAFETY: RedisModule_Log with a null context logs as the module-less server; the format
    // is "%s" with one C string argument.
    unsafe {
        if let Some(log) = raw::RedisModule_Log {
            log(std::ptr::null_mut(), level.as_ptr(), fmt.as_ptr(), text.as_ptr());
        }
    }
}

/// Runs a callback body, turning a panic into `fallback` and a log line.
fn guarded<T>(what: &str, fallback: T, f: impl FnOnce() -> T) -> T {
    catch_unwind(AssertUnwindSafe(f)).unwrap_or_else(|_| {
        log_warning(&format!("scalebloom: panic caught in {what}; operation refused"));
        fallback
    })
}

/// Redis' typed RDB calls as a [`FieldReader`].
struct RdbReader(*mut raw::RedisModuleIO);

impl FieldReader for RdbReader {
    type Bytes = RedisBuffer;
    fn u64(&mut self) -> Result<u64, BloomError> {
        raw::load_unsigned(self.0).map_err(|_| BloomError::BadData)
    }
    fn f64(&mut self) -> Result<f64, BloomError> {
        raw::load_double(self.0).map_err(|_| BloomError::BadData)
    }
    fn bytes(&mut self) -> Result<RedisBuffer, BloomError> {
        raw::load_string_buffer(self.0).map_err(|_| BloomError::BadData)
    }

    /// A bit-array segment, kept in the buffer Redis read it into: no second allocation, no
    /// zeroing and no copy of up to 64 MiB per segment (loading a 1 GiB filter used to page in
    /// and zero twice its size). Copied instead where the buffer cannot serve as words.
    fn words(&mut self, n: u64) -> Result<Words, BloomError> {
        let want =
            n.checked_mul(8).and_then(|b| usize::try_from(b).ok()).ok_or(BloomError::BadData)?;
        // SAFETY: API pointers are written once by RedisModule_Init, before any callback.
        let (Some(load), Some(io_error), Some(free)) = (unsafe {
            (raw::RedisModule_LoadStringBuffer, raw::RedisModule_IsIOError, raw::RedisModule_Free)
        }) else {
            return Err(BloomError::BadData);
        };
        let mut len = 0usize;
        // SAFETY: `self.0` is this load's live I/O handle; on success Redis returns a buffer of
        // `len` bytes allocated with RedisModule_Alloc, which the caller owns.
        let ptr = unsafe { load(self.0, &mut len) };
        // SAFETY: as above.
        let failed = unsafe { io_error(self.0) } != 0;
        if failed || ptr.is_null() || len != want || want == 0 {
            if !ptr.is_null() {
                // SAFETY: the buffer is ours (see above) and freed once, here.
                unsafe { free(ptr.cast()) };
            }
            return Err(BloomError::BadData);
        }
        if cfg!(target_endian = "big") || ptr as usize % std::mem::align_of::<u64>() != 0 {
            // SAFETY: `ptr` points to `len` initialised bytes that stay ours until freed below.
            let bytes = unsafe { std::slice::from_raw_parts(ptr.cast(), len) };
            let words = Words::from_le_bytes(bytes);
            // SAFETY: the buffer is ours and freed once, here, after its last use.
            unsafe { free(ptr.cast()) };
            return words;
        }
        // SAFETY: `ptr` is non-null, aligned for u64 (checked), holds `n` little-endian words
        // (`len == 8n`, checked; the target is little-endian, so they read as the values they
        // encode), and was allocated with RedisModule_Alloc, which the module's global
        // allocator (`alloc::BloomAlloc`) frees with RedisModule_Free whatever the layout.
        // Ownership passes to the Words; nothing else frees it.
        Ok(unsafe { Words::adopt(ptr.cast(), want / 8) })
    }
}

/// Redis' typed RDB calls as a [`FieldWriter`].
struct RdbWriter(*mut raw::RedisModuleIO);

impl FieldWriter for RdbWriter {
    fn u64(&mut self, v: u64) {
        raw::save_unsigned(self.0, v);
    }
    fn f64(&mut self, v: f64) {
        raw::save_double(self.0, v);
    }
    fn bytes(&mut self, b: &[u8]) {
        raw::save_slice(self.0, b);
    }
}

/// The chain behind a type value pointer.
///
/// # Safety
/// `value` is a value pointer Redis passes to a type callback: one this module made with
/// `Box::into_raw(Box<Chain>)` (rdb_load, copy, or a command's `set_value`) and has not freed;
/// Redis runs no command on the key while the callback runs, so nothing mutates it meanwhile.
unsafe fn chain_ref<'a>(value: *mut c_void) -> &'a Chain {
    // SAFETY: the caller's contract above: a live, properly aligned `Chain`.
    unsafe { &*value.cast::<Chain>() }
}

/// Module aux data, before the keys: the creation settings of the stream this server follows
/// (see `creation`), so that a replica restarted from its RDB, or a replica of a replica,
/// derives the same seeds as its primary. A marker (0: none, 1: the encoded settings follow).
///
/// Redis 7.0 calls this one, which must write something; 7.2+ and Valkey call [`aux_save2`].
unsafe extern "C" fn aux_save(rdb: *mut raw::RedisModuleIO, when: c_int) {
    guarded("aux_save", (), || save_aux(rdb, when, true));
}

/// [`aux_save`] for servers that skip an aux field nothing was written to: a primary, which
/// follows no stream, writes nothing, so its RDB files load on a server without the module
/// when they hold no filter.
unsafe extern "C" fn aux_save2(rdb: *mut raw::RedisModuleIO, when: c_int) {
    guarded("aux_save2", (), || save_aux(rdb, when, false));
}

/// Writes the settings this server's RDB keeps, if any; with `marker_if_none`, the "none"
/// marker when there are none.
fn save_aux(rdb: *mut raw::RedisModuleIO, when: c_int, marker_if_none: bool) {
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

/// Aux markers.
const AUX_NONE: u64 = 0;
const AUX_SETTINGS: u64 = 1;

/// Reads [`aux_save`]'s data; anything else refuses the file (Redis then stops the load).
unsafe extern "C" fn aux_load(rdb: *mut raw::RedisModuleIO, encver: c_int, when: c_int) -> c_int {
    let (ok, err) = (raw::REDISMODULE_OK as c_int, raw::REDISMODULE_ERR as c_int);
    guarded("aux_load", err, || {
        if encver != RDB_ENCODING_VERSION || when != raw::REDISMODULE_AUX_BEFORE_RDB as c_int {
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

/// Which value a load is reading, for the log: ` (key "name", db N)`, with the key's bytes
/// escaped as `redis-cli` shows them, or "" when the server does not say (Redis before 7.0
/// gives no database, and no key to some loaders). An RDB load that a refused value stops
/// names the key this way, so the operator can find it.
fn value_name(rdb: *mut raw::RedisModuleIO) -> String {
    // SAFETY: the API pointers are set by `RedisModule_Init` before any load; `rdb` is the live
    // I/O handle of this load, and the key string it returns lives as long as the handle.
    // StringPtrLen returns that string's buffer and length, read here before the call returns.
    let key = unsafe {
        match (raw::RedisModule_GetKeyNameFromIO, raw::RedisModule_StringPtrLen) {
            (Some(name_of), Some(ptr_len)) => {
                let name = name_of(rdb);
                if name.is_null() {
                    None
                } else {
                    let mut len = 0;
                    let ptr = ptr_len(name, &mut len);
                    Some(
                        std::slice::from_raw_parts(ptr.cast::<u8>(), len)
                            .escape_ascii()
                            .to_string(),
                    )
                }
            }
            _ => None,
        }
    };
    // SAFETY: as above; GetDbIdFromIO only reads the handle.
    let db = unsafe { raw::RedisModule_GetDbIdFromIO.map(|db_of| db_of(rdb)) };
    match (key, db) {
        (Some(k), Some(db)) if db >= 0 => format!(" (key \"{k}\", db {db})"),
        (Some(k), _) => format!(" (key \"{k}\")"),
        _ => String::new(),
    }
}

unsafe extern "C" fn rdb_load(rdb: *mut raw::RedisModuleIO, encver: c_int) -> *mut c_void {
    guarded("rdb_load", std::ptr::null_mut(), || {
        // SAFETY: `rdb` is the live I/O handle of this load; the context it gives lives as
        // long as the handle, longer than this call.
        let io_ctx = unsafe { raw::RedisModule_GetContextFromIO.map(|f| f(rdb)) };
        let ctx = Context::new(io_ctx.unwrap_or(std::ptr::null_mut()));
        // No context: no way to tell a client's RESTORE from a load, so nothing is refused.
        let guard: &dyn crate::filter::AllocGuard = if ctx.ctx.is_null() {
            &crate::filter::Unlimited
        } else {
            &ServerGuard::for_load(&ctx)
        };
        let fields = match encver {
            RDB_ENCODING_VERSION => codec::FIELDS_VERSION,
            RDB_ENCODING_V1 => 1,
            _ => 0,
        };
        if fields == 0 {
            // RedisBloom's own encodings (an RDB file, a DUMP payload or a full sync from it).
            return match redisbloom::read_rdb(&mut RdbReader(rdb), encver, guard) {
                Ok(chain) => Box::into_raw(Box::new(chain)).cast(),
                Err(why) => {
                    log_warning(&format!(
                        "scalebloom: refused a RedisBloom MBbloom-- value{}: {why}",
                        value_name(rdb)
                    ));
                    std::ptr::null_mut()
                }
            };
        }
        match codec::read_chain_version(&mut RdbReader(rdb), guard, fields) {
            Ok(chain) => Box::into_raw(Box::new(chain)).cast(),
            Err(e @ (BloomError::FilterLimit { .. } | BloomError::MaxMemory { .. })) => {
                log_warning(&format!(
                    "scalebloom: RESTORE refused{}: {}",
                    value_name(rdb),
                    super::errors::text(&e)
                ));
                std::ptr::null_mut()
            }
            Err(_) => {
                log_warning(&format!(
                    "scalebloom: refused a corrupt or inconsistent MBbloom-- value{}",
                    value_name(rdb)
                ));
                std::ptr::null_mut()
            }
        }
    })
}

unsafe extern "C" fn rdb_save(rdb: *mut raw::RedisModuleIO, value: *mut c_void) {
    guarded("rdb_save", (), || {
        // SAFETY: `value` is a type value Redis hands to rdb_save (see `chain_ref`).
        codec::write_chain(unsafe { chain_ref(value) }, &mut RdbWriter(rdb));
    })
}

/// Emits `BF.LOADCHUNK key 1 <header>` and then one LOADCHUNK per non-zero chunk (zero chunks
/// are already zero after the header creates the filter).
unsafe extern "C" fn aof_rewrite(
    aof: *mut raw::RedisModuleIO,
    key: *mut raw::RedisModuleString,
    value: *mut c_void,
) {
    guarded("aof_rewrite", (), || {
        // SAFETY: `value` is a type value Redis hands to aof_rewrite (see `chain_ref`).
        let chain = unsafe { chain_ref(value) };
        // SAFETY: API pointers are written once by RedisModule_Init, before any callback.
        let Some(emit) = (unsafe { raw::RedisModule_EmitAOF }) else {
            return;
        };
        let cmd = CString::new("BF.LOADCHUNK").expect("no NUL");
        let fmt = CString::new("slb").expect("no NUL");
        // SAFETY: `aof` and `key` are this rewrite's live handle and key; the format "slb" is
        // matched by a string, a long long and a (pointer, length) buffer alive for the call.
        let emit_chunk = |iter: u64, data: &[u8]| unsafe {
            emit(
                aof,
                cmd.as_ptr(),
                fmt.as_ptr(),
                key,
                iter as c_longlong,
                data.as_ptr().cast::<c_char>(),
                data.len(),
            );
        };
        emit_chunk(1, &dump_header(chain));
        let mut offset = 0u64;
        while let Some(chunk) = read_chunk(chain, offset) {
            offset += chunk.len() as u64;
            if chunk.iter().any(|&b| b != 0) {
                emit_chunk(offset + 1, &chunk);
            }
        }
    })
}

unsafe extern "C" fn mem_usage(value: *const c_void) -> usize {
    guarded("mem_usage", 0, || {
        // SAFETY: `value` is a type value Redis hands to mem_usage (see `chain_ref`).
        usize::try_from(unsafe { chain_ref(value.cast_mut()) }.info_size()).unwrap_or(usize::MAX)
    })
}

unsafe extern "C" fn free(value: *mut c_void) {
    // SAFETY: Redis calls free exactly once per value, after its last use; the value was made
    // by `Box::into_raw(Box<Chain>)`, so ownership goes back to a Box here and is dropped.
    guarded("free", (), || drop(unsafe { Box::from_raw(value.cast::<Chain>()) }))
}

/// Allocations to free: lets Redis free big filters in the background (lazyfree).
unsafe extern "C" fn free_effort(_key: *mut raw::RedisModuleString, value: *const c_void) -> usize {
    guarded("free_effort", 1, || {
        // SAFETY: `value` is a type value Redis hands to free_effort (see `chain_ref`).
        let chain = unsafe { chain_ref(value.cast_mut()) };
        chain.layers().iter().map(|l| l.bits().segment_byte_lengths().count() + 1).sum::<usize>()
            + 1
    })
}

unsafe extern "C" fn copy(
    _from: *mut raw::RedisModuleString,
    _to: *mut raw::RedisModuleString,
    value: *const c_void,
) -> *mut c_void {
    guarded("copy", std::ptr::null_mut(), || {
        // SAFETY: `value` is the source key's type value (see `chain_ref`).
        let chain = unsafe { chain_ref(value.cast_mut()) }.clone();
        Box::into_raw(Box::new(chain)).cast()
    })
}

/// Allocations of filters that the server's active defragmentation moved since the module
/// loaded (`INFO bf`: `bf_defrag_moves`).
pub static DEFRAG_MOVES: AtomicU64 = AtomicU64::new(0);

/// Active defragmentation (Redis built with its own jemalloc, `activedefrag yes`; Redis calls
/// this for each filter key as its defrag cycle walks the keyspace). Offers the chain itself,
/// its layer table and each one-segment bit array to `RedisModule_DefragAlloc`, which moves an
/// allocation that sits in a sparsely used page and leaves the rest (large allocations, e.g.
/// segments of 64 MiB, are never moved; huge-page-advised arrays are not offered). The filter
/// is unchanged: the same bytes at new addresses. One call does the whole filter, a few dozen
/// allocations at most, so it reports the value done (0) and keeps no cursor.
unsafe extern "C" fn defrag(
    ctx: *mut raw::RedisModuleDefragCtx,
    _key: *mut raw::RedisModuleString,
    value: *mut *mut c_void,
) -> c_int {
    guarded("defrag", 0, || {
        // SAFETY: API pointers are written once by RedisModule_Init, before any callback.
        let Some(defrag_alloc) = (unsafe { raw::RedisModule_DefragAlloc }) else {
            return 0;
        };
        let moves = Cell::new(0u64);
        let mut mv = |p: NonNull<u8>, _: Layout| {
            // `p` is a live allocation of the global allocator, which inside Redis is Redis'
            // own (module/alloc.rs). RedisModule_DefragAlloc returns NULL and leaves it
            // untouched, or returns a new allocation of Redis' allocator (same size class)
            // holding its bytes and frees the old one: the `Mover` contract.
            // SAFETY: `ctx` is this callback's live defrag context and `p` as just said.
            let moved = unsafe { defrag_alloc(ctx, p.as_ptr().cast()) };
            let new = NonNull::new(moved.cast::<u8>());
            moves.set(moves.get() + u64::from(new.is_some()));
            new
        };
        // `value` points at the key's value pointer, which Redis lets this callback replace.
        // That pointer was made by `Box::into_raw(Box<Chain>)` (set_value, rdb_load, copy)
        // with the global allocator and `Layout::new::<Chain>()`; `mv` keeps the `Mover`
        // contract (above), so after a move the new pointer owns the same `Chain` bitwise and
        // the old allocation is gone. Nothing else holds a reference to the value while Redis
        // runs this callback (it runs on the main thread, between commands).
        // SAFETY: the value pointer and `mv` are as just said.
        unsafe {
            if let Some(v) = NonNull::new((*value).cast::<u8>()) {
                if let Some(new) = mv(v, Layout::new::<Chain>()) {
                    *value = new.as_ptr().cast();
                }
                (*(*value).cast::<Chain>()).relocate(&mut mv);
            }
        }
        DEFRAG_MOVES.fetch_add(moves.get(), Ordering::Relaxed);
        0
    })
}

/// Feeds every parameter, counter and bit to `DEBUG DIGEST-VALUE`.
unsafe extern "C" fn digest(md: *mut raw::RedisModuleDigest, value: *mut c_void) {
    guarded("digest", (), || {
        // SAFETY: `value` is a type value Redis hands to digest (see `chain_ref`).
        let chain = unsafe { chain_ref(value) };
        // SAFETY: API pointers are written once by RedisModule_Init, before any callback.
        let (Some(add_ll), Some(add_buf), Some(end)) = (unsafe {
            (
                raw::RedisModule_DigestAddLongLong,
                raw::RedisModule_DigestAddStringBuffer,
                raw::RedisModule_DigestEndSequence,
            )
        }) else {
            return;
        };
        let mut fields = Vec::new();
        codec::write_meta(chain, &mut fields);
        // SAFETY: `md` is this digest's live handle; the buffer is a (pointer, length) pair
        // alive for the call, which Redis only reads.
        unsafe {
            add_ll(md, chain.items() as c_longlong);
            add_buf(md, fields.as_ptr().cast::<c_char>(), fields.len());
        }
        for layer in chain.layers() {
            // SAFETY: as above; each segment is borrowed from the chain for the call.
            layer.bits().for_each_segment_bytes(|seg| unsafe {
                add_buf(md, seg.as_ptr().cast::<c_char>(), seg.len());
            });
        }
        // SAFETY: `md` is this digest's live handle.
        unsafe { end(md) };
    })
}
