//! Native types: the callbacks Redis calls on a module type's values, written once, generic over
//! the stored type.
//!
//! Four types live here, one file each: `MBbloom--` (`bloom.rs`, the Bloom chain, RedisBloom's
//! name), `MBbloomCF` (`cuckoo.rs`, the cuckoo filter, RedisBloom's name) and `SBwindow-`
//! (`window.rs`, the windowed filter), `bloomfltr` (`valkey.rs`, valkey-bloom's filters, its
//! name). Each implements [`NativeType`] (load, save, sizes,
//! digest, defrag) in terms of the small handles of `io.rs`, and [`chunked::Chunked`] (its
//! SCANDUMP/LOADCHUNK bytes, which also give its AOF rewrite); [`methods`] builds its callback
//! table, and its registration is one `static RedisType` and a row in `TYPES`. Commands reach a
//! type's values through `commands::Key::value::<T>()`.
//!
//! Every callback runs inside `catch_unwind`: a panic here must not take Redis down.

pub mod aux;
pub mod bloom;
pub mod chunked;
pub mod cuckoo;
pub mod io;
pub mod valkey;
pub mod window;

use std::alloc::Layout;
use std::cell::Cell;
use std::ffi::c_void;
use std::os::raw::c_int;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::ptr::NonNull;
use std::sync::atomic::{AtomicU64, Ordering};

use redis_module::native_types::RedisType;
use redis_module::raw;

pub use self::cuckoo::CUCKOO_TYPE;
use self::io::{AofWriter, Digest, RdbReader, RdbWriter, log_warning, value_name};
pub use self::valkey::VALKEY_TYPE;
pub use self::window::WINDOW_TYPE;
use super::call::Call;
use super::limits::ServerGuard;
use crate::filter::mem::Mover;
use crate::filter::{AllocGuard, FilterError, Unlimited};

/// The other native types of the module, one row each; `RedisModule_OnLoad` creates them all,
/// and the `MBbloom--` registration `bf.compat` chooses ([`bloom::bloom_type_in_force`]).
const TYPES: &[&RedisType] = &[&CUCKOO_TYPE, &WINDOW_TYPE, &VALKEY_TYPE];

/// Creates every native type with the server (at load, before the commands).
pub fn create_all(ctx: *mut raw::RedisModuleCtx) -> Result<(), String> {
    for t in std::iter::once(bloom::bloom_type_in_force()).chain(TYPES.iter().copied()) {
        t.create_data_type(ctx).map_err(|e| e.to_string())?;
    }
    Ok(())
}

/// A value Redis stores under a module type: what the type's callbacks do with it.
///
/// Values live in Redis as `Box<Self>` made by `Box::into_raw` (a command's
/// `Key::set_value`, [`NativeType::load`] through `rdb_load`, or `copy`) and are freed by the
/// `free` callback.
pub trait NativeType: Sized + Clone + 'static {
    /// The type's registration (its `static RedisType`).
    fn redis_type() -> &'static RedisType;

    /// Reads a value saved with encoding version `encver` (this type's own, or an older or
    /// foreign one it imports). Every field is validated; allocations are offered to `guard`
    /// first. The error is the log line that says why the value was refused.
    fn load(io: &mut RdbReader, encver: c_int, guard: &dyn AllocGuard) -> Result<Self, String>;

    /// Writes the value field by field (RDB files, DUMP payloads, full syncs).
    fn save(&self, io: &mut RdbWriter);

    /// Emits the commands that rebuild the value (AOF rewrite).
    fn rewrite(&self, aof: &mut AofWriter);

    /// Bytes the value takes (`MEMORY USAGE`).
    fn mem_usage(&self) -> usize;

    /// Allocations to free: Redis frees values above its threshold in the background.
    fn free_effort(&self) -> usize;

    /// Feeds every field and bit of the value to `DEBUG DIGEST-VALUE`.
    fn digest(&self, d: &mut Digest);

    /// Offers every allocation of the value (not the box itself) to `mv`, replacing those it
    /// moves (active defragmentation).
    ///
    /// # Safety
    /// `mv` keeps the [`Mover`] contract: it returns `None` and leaves the allocation alone, or
    /// returns a new allocation of the global allocator holding the same bytes and frees the old.
    unsafe fn relocate(&mut self, mv: &mut Mover<'_>);
}

/// The callback table of type `T`, without module aux data (a registration adds that).
pub const fn methods<T: NativeType>() -> raw::RedisModuleTypeMethods {
    raw::RedisModuleTypeMethods {
        version: raw::REDISMODULE_TYPE_METHOD_VERSION as u64,
        rdb_load: Some(rdb_load::<T>),
        rdb_save: Some(rdb_save::<T>),
        aof_rewrite: Some(aof_rewrite::<T>),
        mem_usage: Some(mem_usage::<T>),
        digest: Some(digest::<T>),
        free: Some(free::<T>),
        aux_load: None,
        aux_save: None,
        aux_save2: None,
        aux_save_triggers: 0,
        free_effort: Some(free_effort::<T>),
        unlink: None,
        copy: Some(copy::<T>),
        defrag: Some(defrag::<T>),
        copy2: None,
        free_effort2: None,
        mem_usage2: None,
        unlink2: None,
    }
}

/// The log line of a value `rdb_load` refuses: a limit a client's RESTORE passed (and which),
/// or data that fails validation.
fn load_refusal(type_name: &str, e: &FilterError) -> String {
    match e {
        e if e.is_limit() => {
            format!("scalebloom: RESTORE refused: {}", super::errors::text(e))
        }
        _ => format!("scalebloom: refused a corrupt or inconsistent {type_name} value"),
    }
}

/// Runs a callback body, turning a panic into `fallback` and a log line.
pub(crate) fn guarded<T>(what: &str, fallback: T, f: impl FnOnce() -> T) -> T {
    catch_unwind(AssertUnwindSafe(f)).unwrap_or_else(|_| {
        log_warning(&format!("scalebloom: panic caught in {what}; operation refused"));
        fallback
    })
}

/// The `T` behind a type value pointer.
///
/// # Safety
/// `value` is a value pointer Redis passes to a callback of `T`'s type: one this module made
/// with `Box::into_raw(Box<T>)` and has not freed (Redis hands a type's callbacks only values
/// of that type); Redis runs no command on the key while the callback runs, so nothing mutates
/// it meanwhile.
unsafe fn value_ref<'a, T>(value: *const c_void) -> &'a T {
    // SAFETY: the caller's contract above: a live, properly aligned `T`.
    unsafe { &*value.cast::<T>() }
}

unsafe extern "C" fn rdb_load<T: NativeType>(
    rdb: *mut raw::RedisModuleIO,
    encver: c_int,
) -> *mut c_void {
    guarded("rdb_load", std::ptr::null_mut(), || {
        // SAFETY: `rdb` is the live I/O handle of this load; the context it gives lives as
        // long as the handle, longer than this call.
        let io_ctx = api!(RedisModule_GetContextFromIO).map(|f| unsafe { f(rdb) });
        let call = Call::new(io_ctx.unwrap_or(std::ptr::null_mut()));
        // No context: no way to tell a client's RESTORE from a load, so nothing is refused.
        let guard: &dyn AllocGuard =
            if call.ctx.is_null() { &Unlimited } else { &ServerGuard::for_load(&call) };
        match T::load(&mut RdbReader(rdb), encver, guard) {
            Ok(value) => Box::into_raw(Box::new(value)).cast(),
            Err(why) => {
                log_warning(&format!("{why}{}", value_name(rdb)));
                std::ptr::null_mut()
            }
        }
    })
}

unsafe extern "C" fn rdb_save<T: NativeType>(rdb: *mut raw::RedisModuleIO, value: *mut c_void) {
    guarded("rdb_save", (), || {
        // SAFETY: `value` is a value of `T`'s type Redis hands to rdb_save (see `value_ref`).
        unsafe { value_ref::<T>(value) }.save(&mut RdbWriter(rdb));
    })
}

unsafe extern "C" fn aof_rewrite<T: NativeType>(
    aof: *mut raw::RedisModuleIO,
    key: *mut raw::RedisModuleString,
    value: *mut c_void,
) {
    guarded("aof_rewrite", (), || {
        // SAFETY: `value` is a value of `T`'s type Redis hands to aof_rewrite (see `value_ref`).
        unsafe { value_ref::<T>(value) }.rewrite(&mut AofWriter { aof, key });
    })
}

unsafe extern "C" fn mem_usage<T: NativeType>(value: *const c_void) -> usize {
    guarded("mem_usage", 0, || {
        // SAFETY: `value` is a value of `T`'s type Redis hands to mem_usage (see `value_ref`).
        unsafe { value_ref::<T>(value) }.mem_usage()
    })
}

unsafe extern "C" fn free<T: NativeType>(value: *mut c_void) {
    // SAFETY: Redis calls free exactly once per value, after its last use; the value was made
    // by `Box::into_raw(Box<T>)`, so ownership goes back to a Box here and is dropped.
    guarded("free", (), || drop(unsafe { Box::from_raw(value.cast::<T>()) }))
}

unsafe extern "C" fn free_effort<T: NativeType>(
    _key: *mut raw::RedisModuleString,
    value: *const c_void,
) -> usize {
    guarded("free_effort", 1, || {
        // SAFETY: `value` is a value of `T`'s type Redis hands to free_effort (see `value_ref`).
        unsafe { value_ref::<T>(value) }.free_effort()
    })
}

unsafe extern "C" fn copy<T: NativeType>(
    _from: *mut raw::RedisModuleString,
    _to: *mut raw::RedisModuleString,
    value: *const c_void,
) -> *mut c_void {
    guarded("copy", std::ptr::null_mut(), || {
        // SAFETY: `value` is the source key's value, of `T`'s type (see `value_ref`).
        let copy = unsafe { value_ref::<T>(value) }.clone();
        Box::into_raw(Box::new(copy)).cast()
    })
}

/// Feeds the value to `DEBUG DIGEST-VALUE`.
unsafe extern "C" fn digest<T: NativeType>(md: *mut raw::RedisModuleDigest, value: *mut c_void) {
    guarded("digest", (), || {
        // SAFETY: `value` is a value of `T`'s type Redis hands to digest (see `value_ref`).
        let value = unsafe { value_ref::<T>(value) };
        if let Some(mut d) = Digest::new(md) {
            value.digest(&mut d);
            d.end();
        }
    })
}

/// Allocations of values that the server's active defragmentation moved since the module
/// loaded (`INFO bf`: `bf_defrag_moves`).
pub static DEFRAG_MOVES: AtomicU64 = AtomicU64::new(0);

/// Active defragmentation (Redis built with its own jemalloc, `activedefrag yes`; Redis calls
/// this for each key of the type as its defrag cycle walks the keyspace). Offers the value's box
/// and then its own allocations ([`NativeType::relocate`]) to `RedisModule_DefragAlloc`, which
/// moves an allocation that sits in a sparsely used page and leaves the rest (large
/// allocations, e.g. segments of 64 MiB, are never moved; arrays handed to the huge-page
/// thread are not offered). The value is unchanged: the same bytes at new addresses. One call
/// does the whole value, a few dozen allocations at most, so it reports the value done (0) and
/// keeps no cursor.
unsafe extern "C" fn defrag<T: NativeType>(
    ctx: *mut raw::RedisModuleDefragCtx,
    _key: *mut raw::RedisModuleString,
    value: *mut *mut c_void,
) -> c_int {
    guarded("defrag", 0, || {
        let Some(defrag_alloc) = api!(RedisModule_DefragAlloc) else {
            return 0;
        };
        if !super::config::defrag_enabled() {
            return 0;
        }
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
        // That pointer was made by `Box::into_raw(Box<T>)` (set_value, rdb_load, copy) with the
        // global allocator and `Layout::new::<T>()`; `mv` keeps the `Mover` contract (above),
        // so after a move the new pointer owns the same `T` bitwise and the old allocation is
        // gone. Nothing else holds a reference to the value while Redis runs this callback (it
        // runs on the main thread, between commands).
        // SAFETY: the value pointer and `mv` are as just said.
        unsafe {
            if let Some(v) = NonNull::new((*value).cast::<u8>()) {
                if let Some(new) = mv(v, Layout::new::<T>()) {
                    *value = new.as_ptr().cast();
                }
                (*(*value).cast::<T>()).relocate(&mut mv);
            }
        }
        DEFRAG_MOVES.fetch_add(moves.get(), Ordering::Relaxed);
        0
    })
}
