//! Command handlers: parse → core → reply. Each takes the context and the borrowed argv and
//! returns a whole [`Reply`]; `registry` registers them, checks their arity, catches panics and
//! sends the reply.

pub mod bloom;
pub mod dump;
pub mod replconf;

use std::ffi::{CStr, c_char, c_int, c_longlong};

use redis_module::{Context, NotifyEvent, RedisString, raw};

use super::args::{Arg, Args};
use super::datatype::BLOOM_TYPE;
use super::errors;
use super::reply::Reply;
use crate::filter::{BloomError, Chain};

/// A command handler.
pub type Handler = fn(&Context, &Args) -> Reply;

/// A key opened through the module API for one command, closed when dropped.
///
/// Its own rather than the crate's `RedisKey`/`RedisKeyWritable`: their typed access checks the
/// type through a `RedisResult` built and dropped on every call (about 100 instructions, once
/// to read and again to store, per command), where this compares two pointers.
struct Key(*mut raw::RedisModuleKey);

impl Key {
    /// Opens `name` for writing (and reading).
    fn writable(ctx: &Context, name: &RedisString) -> Key {
        Key::open(ctx, name, true)
    }

    /// Opens `name` for reading, or for writing too.
    fn open(ctx: &Context, name: &RedisString, write: bool) -> Key {
        let mode = if write {
            raw::REDISMODULE_READ | raw::REDISMODULE_WRITE
        } else {
            raw::REDISMODULE_READ
        };
        // SAFETY: API pointers are written once by RedisModule_Init, before any command; `ctx`
        // is the running command's context and `name` a live string. Redis returns a handle
        // (null only for a missing key opened read-only) that stays valid until closed.
        let ptr = unsafe {
            match raw::RedisModule_OpenKey {
                Some(open) => open(ctx.ctx, name.inner, mode as c_int),
                None => std::ptr::null_mut(),
            }
        };
        Key(ptr)
    }

    /// The chain at this key: `Ok(None)` when the key is missing, the wrong-type error when it
    /// holds anything else.
    fn chain(&self) -> Result<Option<&Chain>, Reply> {
        // SAFETY: a pointer from `chain_ptr` is a live chain, read-only while `self` is borrowed.
        self.chain_ptr().map(|p| p.map(|p| unsafe { &*p }))
    }

    /// [`Key::chain`], to change it (the key must be open for writing).
    fn chain_mut(&mut self) -> Result<Option<&mut Chain>, Reply> {
        // SAFETY: a pointer from `chain_ptr` is a live chain, and `&mut self` makes this the
        // only reference to it while borrowed.
        self.chain_ptr().map(|p| p.map(|p| unsafe { &mut *p }))
    }

    /// The value pointer behind [`Key::chain`].
    fn chain_ptr(&self) -> Result<Option<*mut Chain>, Reply> {
        if self.0.is_null() {
            return Ok(None);
        }
        // SAFETY: API pointers are written once by RedisModule_Init; `self.0` is an open key.
        let (kind, module_type, value) = unsafe {
            let (Some(kind), Some(module_type), Some(value)) = (
                raw::RedisModule_KeyType,
                raw::RedisModule_ModuleTypeGetType,
                raw::RedisModule_ModuleTypeGetValue,
            ) else {
                return Err(Reply::err(errors::INTERNAL));
            };
            (kind(self.0), module_type, value)
        };
        if kind == raw::REDISMODULE_KEYTYPE_EMPTY as c_int {
            return Ok(None);
        }
        // SAFETY: as above; the type is only compared, and the value read only when it is
        // ours.
        unsafe {
            if kind != raw::REDISMODULE_KEYTYPE_MODULE as c_int
                || module_type(self.0) != *BLOOM_TYPE.raw_type.borrow()
            {
                return Err(Reply::err(errors::WRONG_TYPE));
            }
            // A value of our type is a `Box<Chain>` this module made (see
            // `datatype::chain_ref`), not aliased while this command runs.
            let chain = value(self.0).cast::<Chain>();
            Ok((!chain.is_null()).then_some(chain))
        }
    }

    /// Stores a new chain at this key, which must be empty (never overwrites) and open for
    /// writing.
    fn set_chain(&self, chain: Chain) -> Result<(), Reply> {
        // SAFETY: API pointers are written once by RedisModule_Init, before any command.
        let api = unsafe { (raw::RedisModule_KeyType, raw::RedisModule_ModuleTypeSetValue) };
        let (Some(kind), Some(set)) = api else {
            return Err(Reply::err(errors::INTERNAL));
        };
        // SAFETY: `self.0`, when not null, is an open key.
        if self.0.is_null() || unsafe { kind(self.0) } != raw::REDISMODULE_KEYTYPE_EMPTY as c_int {
            return Err(Reply::err(errors::WRONG_TYPE));
        }
        let value = Box::into_raw(Box::new(chain));
        // SAFETY: `self.0` is an empty key open for writing; on success Redis owns `value`
        // and frees it through the type's `free` callback.
        let rc = unsafe { set(self.0, *BLOOM_TYPE.raw_type.borrow(), value.cast()) };
        if rc == raw::REDISMODULE_OK as c_int {
            Ok(())
        } else {
            // SAFETY: Redis refused it, so `value` is still ours, and dropped once, here.
            drop(unsafe { Box::from_raw(value) });
            Err(Reply::err(errors::WRONG_TYPE))
        }
    }
}

impl Drop for Key {
    fn drop(&mut self) {
        if self.0.is_null() {
            return;
        }
        // SAFETY: API pointers are written once by RedisModule_Init; the key is open and
        // closed once, here.
        if let Some(close) = unsafe { raw::RedisModule_CloseKey } {
            // SAFETY: as above.
            unsafe { close(self.0) };
        }
    }
}

/// The read path of every read-only command: opens the key at `argv[1]`, answers `missing()`
/// when there is none, the wrong-type error when it holds something else, and `f(chain)`
/// otherwise.
fn with_chain(
    ctx: &Context,
    args: &Args,
    missing: impl FnOnce() -> Reply,
    f: impl FnOnce(&Chain) -> Reply,
) -> Reply {
    let key = Key::open(ctx, &args.key(), false);
    match key.chain() {
        Err(r) => r,
        Ok(None) => missing(),
        Ok(Some(chain)) => f(chain),
    }
}

/// Error reply for a core error.
fn core_err(e: &BloomError) -> Reply {
    Reply::Error(errors::text(e))
}

/// Replicates `BF.LOADCHUNK <key> 1 <header>` for the running command, whose key is `argv[1]`.
///
/// Straight through `RedisModule_Replicate` with a format of the key's own string, a number and
/// a buffer: no strings are built on this side (the crate's `Context::replicate` creates and
/// frees one per argument, which was most of the cost of creating a small filter).
fn replicate_header(ctx: &Context, args: &Args, header: &[u8]) {
    // SAFETY: API pointers are written once by RedisModule_Init, before any command.
    if let Some(replicate) = unsafe { raw::RedisModule_Replicate } {
        // SAFETY: `ctx` is the running command's context; the format "slb" is matched by a
        // RedisModuleString (argv[1], alive for the command), a long long, and a (pointer,
        // length) buffer alive for the call, which Redis copies.
        unsafe {
            replicate(
                ctx.ctx,
                c"BF.LOADCHUNK".as_ptr(),
                c"slb".as_ptr(),
                args.key().inner,
                1 as c_longlong,
                header.as_ptr().cast::<c_char>(),
                header.len(),
            );
        }
    }
}

/// Replicates `BF.MADD <key> <items…>` for the running command, the items being argv strings.
/// Like [`replicate_header`], nothing is copied on this side: Redis takes argv's own strings.
fn replicate_madd(ctx: &Context, args: &Args, items: &[Arg]) {
    // SAFETY: API pointers are written once by RedisModule_Init, before any command.
    if let Some(replicate) = unsafe { raw::RedisModule_Replicate } {
        // SAFETY: `ctx` is the running command's context; the format "sv" is matched by a
        // RedisModuleString (argv[1]) and a (RedisModuleString**, count) vector: `Arg` is
        // `repr(transparent)` over the argv pointers, all alive for the command; Redis only
        // takes references to them.
        unsafe {
            replicate(
                ctx.ctx,
                c"BF.MADD".as_ptr(),
                c"sv".as_ptr(),
                args.key().inner,
                items.as_ptr().cast::<*mut raw::RedisModuleString>(),
                items.len(),
            );
        }
    }
}

/// Publishes the keyspace event `event` (a module-type event) for `key`. Like the crate's
/// `Context::notify_keyspace_event`, but the event name is a static C string, so a write
/// command does not allocate one each time.
fn notify(ctx: &Context, event: &CStr, key: &RedisString) {
    // SAFETY: API pointers are written once by RedisModule_Init, before any command.
    if let Some(notify) = unsafe { raw::RedisModule_NotifyKeyspaceEvent } {
        // SAFETY: `ctx` is the running command's context and `key` a live string; Redis only
        // reads `event` during the call, and a `&CStr` is NUL-terminated.
        unsafe {
            notify(ctx.ctx, NotifyEvent::MODULE.bits(), event.as_ptr(), key.inner);
        }
    }
}
