//! The handles a native type's callbacks get: Redis' typed RDB calls as the core's
//! [`FieldReader`]/[`FieldWriter`], the AOF rewrite's command emitter, the digest, and the log.

use std::ffi::{CStr, CString};
use std::os::raw::{c_char, c_longlong};

use redis_module::{RedisBuffer, raw};

use crate::filter::FilterError;
use crate::filter::fields::{FieldReader, FieldWriter};
use crate::filter::mem::Words;

/// Logs at `warning` level without letting `%` be read as a format directive.
pub fn log_warning(msg: &str) {
    let text = CString::new(msg.replace('\0', " ")).expect("NULs replaced");
    if let Some(log) = api!(RedisModule_Log) {
        // SAFETY: RedisModule_Log with a null context logs as the module-less server; the
        // format is "%s" with one C string argument.
        unsafe { log(std::ptr::null_mut(), c"warning".as_ptr(), c"%s".as_ptr(), text.as_ptr()) };
    }
}

/// Which value a load is reading, for the log: ` (key "name", db N)`, the key's bytes escaped
/// as `redis-cli` shows them, or "" when the server does not say. A refused value stops an RDB
/// load (Redis' rule for a module value), so the refusal must name the key for the operator
/// to find it.
pub(super) fn value_name(rdb: *mut raw::RedisModuleIO) -> String {
    let key = match (api!(RedisModule_GetKeyNameFromIO), api!(RedisModule_StringPtrLen)) {
        (Some(name_of), Some(ptr_len)) => {
            // SAFETY: `rdb` is the live I/O handle of this load; the key string it returns (or
            // null) lives as long as the handle, and StringPtrLen returns that string's buffer
            // and length, copied out here before the call returns.
            unsafe {
                let name = name_of(rdb);
                if name.is_null() {
                    None
                } else {
                    let mut len = 0;
                    let ptr = ptr_len(name, &mut len);
                    let bytes = std::slice::from_raw_parts(ptr.cast::<u8>(), len);
                    Some(bytes.escape_ascii().to_string())
                }
            }
        }
        _ => None,
    };
    // SAFETY: as above; GetDbIdFromIO only reads the handle.
    let db = api!(RedisModule_GetDbIdFromIO).map(|db_of| unsafe { db_of(rdb) });
    match (key, db) {
        (Some(k), Some(db)) if db >= 0 => format!(" (key \"{k}\", db {db})"),
        (Some(k), _) => format!(" (key \"{k}\")"),
        _ => String::new(),
    }
}

/// Redis' typed RDB calls as a [`FieldReader`].
pub struct RdbReader(pub(super) *mut raw::RedisModuleIO);

impl FieldReader for RdbReader {
    type Bytes = RedisBuffer;
    fn u64(&mut self) -> Result<u64, FilterError> {
        raw::load_unsigned(self.0).map_err(|_| FilterError::BadData)
    }
    fn f64(&mut self) -> Result<f64, FilterError> {
        raw::load_double(self.0).map_err(|_| FilterError::BadData)
    }
    fn bytes(&mut self) -> Result<RedisBuffer, FilterError> {
        raw::load_string_buffer(self.0).map_err(|_| FilterError::BadData)
    }

    /// A bit-array segment, kept in the buffer Redis read it into: no second allocation, no
    /// zeroing and no copy of up to 64 MiB per segment (a copy would page in and zero twice the
    /// filter's size). Copied instead where the buffer cannot serve as words.
    fn words(&mut self, n: u64) -> Result<Words, FilterError> {
        let want =
            n.checked_mul(8).and_then(|b| usize::try_from(b).ok()).ok_or(FilterError::BadData)?;
        let (Some(load), Some(io_error), Some(free)) = (
            api!(RedisModule_LoadStringBuffer),
            api!(RedisModule_IsIOError),
            api!(RedisModule_Free),
        ) else {
            return Err(FilterError::BadData);
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
            return Err(FilterError::BadData);
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
pub struct RdbWriter(pub(super) *mut raw::RedisModuleIO);

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

/// The AOF rewrite of one key: emits commands on it.
pub struct AofWriter {
    pub(super) aof: *mut raw::RedisModuleIO,
    pub(super) key: *mut raw::RedisModuleString,
}

impl AofWriter {
    /// Emits `<command> <key> <number> <data>` (the shape of every `*.LOADCHUNK`).
    pub fn emit_key_number_data(&mut self, command: &CStr, number: i64, data: &[u8]) {
        let Some(emit) = api!(RedisModule_EmitAOF) else {
            return;
        };
        // SAFETY: `aof` and `key` are this rewrite's live handle and key; the format "slb" is
        // matched by a string, a long long and a (pointer, length) buffer alive for the call.
        unsafe {
            emit(
                self.aof,
                command.as_ptr(),
                c"slb".as_ptr(),
                self.key,
                number as c_longlong,
                data.as_ptr().cast::<c_char>(),
                data.len(),
            );
        }
    }
}

impl AofWriter {
    /// Emits `<command> <key> <data>` (valkey-bloom's `BF.LOAD`).
    pub fn emit_key_data(&mut self, command: &CStr, data: &[u8]) {
        let Some(emit) = api!(RedisModule_EmitAOF) else {
            return;
        };
        // SAFETY: `aof` and `key` are this rewrite's live handle and key; the format "sb" is
        // matched by a string and a (pointer, length) buffer alive for the call.
        unsafe {
            emit(
                self.aof,
                command.as_ptr(),
                c"sb".as_ptr(),
                self.key,
                data.as_ptr().cast::<c_char>(),
                data.len(),
            );
        }
    }
}

/// `DEBUG DIGEST-VALUE`'s handle for one value.
pub struct Digest {
    md: *mut raw::RedisModuleDigest,
    add_ll: unsafe extern "C" fn(*mut raw::RedisModuleDigest, c_longlong),
    add_buf: unsafe extern "C" fn(*mut raw::RedisModuleDigest, *const c_char, usize),
    end: unsafe extern "C" fn(*mut raw::RedisModuleDigest),
}

impl Digest {
    /// The digest `md`, or `None` when the server lacks the digest API.
    pub(super) fn new(md: *mut raw::RedisModuleDigest) -> Option<Digest> {
        Some(Digest {
            md,
            add_ll: api!(RedisModule_DigestAddLongLong)?,
            add_buf: api!(RedisModule_DigestAddStringBuffer)?,
            end: api!(RedisModule_DigestEndSequence)?,
        })
    }

    /// Adds an integer to the current sequence.
    pub fn add_int(&mut self, v: i64) {
        // SAFETY: `md` is this digest's live handle.
        unsafe { (self.add_ll)(self.md, v as c_longlong) };
    }

    /// Adds bytes to the current sequence.
    pub fn add_bytes(&mut self, b: &[u8]) {
        // SAFETY: `md` is this digest's live handle; the buffer is a (pointer, length) pair
        // alive for the call, which Redis only reads.
        unsafe { (self.add_buf)(self.md, b.as_ptr().cast::<c_char>(), b.len()) };
    }

    /// Ends the sequence (the value's last call).
    pub(super) fn end(self) {
        // SAFETY: `md` is this digest's live handle.
        unsafe { (self.end)(self.md) };
    }
}
