//! A command's key: opened through the module API, its value read or stored as a native type
//! ([`Key::value`], [`Key::value_mut`], [`Key::set_value`]), closed when dropped.

use std::ffi::c_int;

use redis_module::{RedisString, raw};

use super::super::args::Args;
use super::super::call::Call;
use super::super::errors;
use super::super::reply::Reply;
use super::super::types::NativeType;

/// A key opened through the module API for one command, closed when dropped.
///
/// Its own rather than the crate's `RedisKey`/`RedisKeyWritable`: their typed access checks the
/// type through a `RedisResult` built and dropped on every call (about 100 instructions, once
/// to read and again to store, per command), where this compares two pointers.
pub struct Key(*mut raw::RedisModuleKey);

impl Key {
    /// Opens `name` for writing (and reading).
    pub fn writable(ctx: &Call, name: &RedisString) -> Key {
        Key::open(ctx, name, true)
    }

    /// Opens `name` for reading, or for writing too.
    pub fn open(ctx: &Call, name: &RedisString, write: bool) -> Key {
        let mode = if write {
            raw::REDISMODULE_READ | raw::REDISMODULE_WRITE
        } else {
            raw::REDISMODULE_READ
        };
        let ptr = match api!(RedisModule_OpenKey) {
            // SAFETY: `ctx` is the running command's context and `name` a live string. Redis
            // returns a handle (null only for a missing key opened read-only) that stays valid
            // until closed.
            Some(open) => unsafe { open(ctx.ctx, name.inner, mode as c_int) },
            None => std::ptr::null_mut(),
        };
        Key(ptr)
    }

    /// The `T` at this key: `Ok(None)` when the key is missing, the wrong-type error when it
    /// holds anything else.
    pub fn value<T: NativeType>(&self) -> Result<Option<&T>, Reply> {
        // SAFETY: a pointer from `value_ptr` is a live `T`, read-only while `self` is borrowed.
        self.value_ptr::<T>().map(|p| p.map(|p| unsafe { &*p })).map_err(Held::reply)
    }

    /// [`Key::value`], to change it (the key must be open for writing).
    pub fn value_mut<T: NativeType>(&mut self) -> Result<Option<&mut T>, Reply> {
        // SAFETY: a pointer from `value_ptr` is a live `T`, and `&mut self` makes this the
        // only reference to it while borrowed.
        self.value_ptr::<T>().map(|p| p.map(|p| unsafe { &mut *p })).map_err(Held::reply)
    }

    /// The `T` at this key, to change it; `None` when the key is missing or holds anything
    /// else (no reply is built: the caller tells those apart if it needs to).
    pub fn get_mut<T: NativeType>(&mut self) -> Option<&mut T> {
        // SAFETY: as in `value_mut`.
        self.value_ptr::<T>().ok().flatten().map(|p| unsafe { &mut *p })
    }

    /// The `T` at this key; `None` when the key is missing or holds anything else.
    pub fn get<T: NativeType>(&self) -> Option<&T> {
        // SAFETY: as in `value`.
        self.value_ptr::<T>().ok().flatten().map(|p| unsafe { &*p })
    }

    /// The value pointer behind [`Key::value`]. The error says what the key holds instead,
    /// without building a reply: testing for a type the key does not hold is the usual path
    /// of [`Key::holds`].
    fn value_ptr<T: NativeType>(&self) -> Result<Option<*mut T>, Held> {
        if self.0.is_null() {
            return Ok(None);
        }
        let (Some(kind), Some(module_type), Some(value)) = (
            api!(RedisModule_KeyType),
            api!(RedisModule_ModuleTypeGetType),
            api!(RedisModule_ModuleTypeGetValue),
        ) else {
            return Err(Held::NoApi);
        };
        // SAFETY: `self.0` is an open key.
        let kind = unsafe { kind(self.0) };
        if kind == raw::REDISMODULE_KEYTYPE_EMPTY as c_int {
            return Ok(None);
        }
        // SAFETY: as above; the type is only compared, and the value read only when it is
        // `T`'s type: a `Box<T>` this module made (see `types::value_ref`), not aliased while
        // this command runs.
        unsafe {
            if kind != raw::REDISMODULE_KEYTYPE_MODULE as c_int
                || module_type(self.0) != *T::redis_type().raw_type.borrow()
            {
                return Err(Held::Other);
            }
            let value = value(self.0).cast::<T>();
            Ok((!value.is_null()).then_some(value))
        }
    }

    /// [`with_either`] on this key.
    pub fn either<T: NativeType, U: NativeType>(
        &self,
        missing: impl FnOnce() -> Reply,
        f: impl FnOnce(&T) -> Reply,
        g: impl FnOnce(&U) -> Reply,
    ) -> Reply {
        match self.value::<T>() {
            Ok(None) => missing(),
            Ok(Some(value)) => f(value),
            Err(r) => match self.value::<U>() {
                Ok(Some(value)) => g(value),
                _ => r,
            },
        }
    }

    /// Whether the key holds anything (of any type).
    pub fn holds_any(&self) -> bool {
        let Some(kind) = api!(RedisModule_KeyType) else { return false };
        // SAFETY: `self.0`, when not null, is an open key.
        !self.0.is_null() && unsafe { kind(self.0) } != raw::REDISMODULE_KEYTYPE_EMPTY as c_int
    }

    /// Whether the key holds a `T`.
    pub fn holds<T: NativeType>(&self) -> bool {
        matches!(self.value_ptr::<T>(), Ok(Some(_)))
    }

    /// Stores a new value at this key, which must be empty (never overwrites) and open for
    /// writing.
    pub fn set_value<T: NativeType>(&self, value: T) -> Result<(), Reply> {
        self.set_boxed(Box::new(value))
    }

    /// [`Key::set_value`] of a value already boxed (made in place on the heap, not moved
    /// there at the end).
    pub fn set_boxed<T: NativeType>(&self, value: Box<T>) -> Result<(), Reply> {
        let (Some(kind), Some(set)) =
            (api!(RedisModule_KeyType), api!(RedisModule_ModuleTypeSetValue))
        else {
            return Err(Reply::err(errors::INTERNAL));
        };
        // SAFETY: `self.0`, when not null, is an open key.
        if self.0.is_null() || unsafe { kind(self.0) } != raw::REDISMODULE_KEYTYPE_EMPTY as c_int {
            return Err(Reply::err(errors::WRONG_TYPE));
        }
        let value = Box::into_raw(value);
        // SAFETY: `self.0` is an empty key open for writing; on success Redis owns `value`
        // and frees it through the type's `free` callback.
        let rc = unsafe { set(self.0, *T::redis_type().raw_type.borrow(), value.cast()) };
        if rc == raw::REDISMODULE_OK as c_int {
            Ok(())
        } else {
            // SAFETY: Redis refused it, so `value` is still ours, and dropped once, here.
            drop(unsafe { Box::from_raw(value) });
            Err(Reply::err(errors::WRONG_TYPE))
        }
    }
}

/// Why a key's value is not the type asked for.
#[derive(Clone, Copy)]
enum Held {
    /// Another type (or not a module type).
    Other,
    /// The module API is missing (never, once loaded).
    NoApi,
}

impl Held {
    /// The error reply for it.
    fn reply(self) -> Reply {
        match self {
            Held::Other => Reply::err(errors::WRONG_TYPE),
            Held::NoApi => Reply::err(errors::INTERNAL),
        }
    }
}

impl Drop for Key {
    fn drop(&mut self) {
        if self.0.is_null() {
            return;
        }
        if let Some(close) = api!(RedisModule_CloseKey) {
            // SAFETY: the key is open and closed once, here.
            unsafe { close(self.0) };
        }
    }
}

/// The read path of a command that takes either of two types: `f` for a `T`, `g` for a `U`.
pub fn with_either<T: NativeType, U: NativeType>(
    ctx: &Call,
    args: &Args,
    missing: impl FnOnce() -> Reply,
    f: impl FnOnce(&T) -> Reply,
    g: impl FnOnce(&U) -> Reply,
) -> Reply {
    Key::open(ctx, &args.key(), false).either(missing, f, g)
}

/// The read path of every read-only command: opens the key at `argv[1]`, answers `missing()`
/// when there is none, the wrong-type error when it holds something else, and `f(value)`
/// otherwise.
pub fn with_value<T: NativeType>(
    ctx: &Call,
    args: &Args,
    missing: impl FnOnce() -> Reply,
    f: impl FnOnce(&T) -> Reply,
) -> Reply {
    let key = Key::open(ctx, &args.key(), false);
    match key.value::<T>() {
        Err(r) => r,
        Ok(None) => missing(),
        Ok(Some(value)) => f(value),
    }
}
