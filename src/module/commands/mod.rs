//! Command handlers: parse → core → reply. Each takes the context and the borrowed argv and
//! returns a whole [`Reply`]; `registry` registers them, checks their arity, catches panics and
//! sends the reply.

pub mod bloom;
pub mod dump;

use std::ffi::CStr;

use redis_module::key::RedisKeyWritable;
use redis_module::{Context, NotifyEvent, RedisString, raw};

use super::args::Args;
use super::datatype::BLOOM_TYPE;
use super::errors;
use super::reply::Reply;
use crate::filter::{BloomError, Chain};

/// A command handler.
pub type Handler = fn(&Context, &Args) -> Reply;

/// The read path of every read-only command: opens the key at `argv[1]`, answers `missing()`
/// when there is none, the wrong-type error when it holds something else, and `f(chain)`
/// otherwise.
fn with_chain(
    ctx: &Context,
    args: &Args,
    missing: impl FnOnce() -> Reply,
    f: impl FnOnce(&Chain) -> Reply,
) -> Reply {
    let key = ctx.open_key(&args.key());
    match key.get_value::<Chain>(&BLOOM_TYPE) {
        Err(_) => Reply::err(errors::WRONG_TYPE),
        Ok(None) => missing(),
        Ok(Some(chain)) => f(chain),
    }
}

/// The chain at a writable key: `Ok(None)` when the key is missing.
fn write_chain(key: &RedisKeyWritable) -> Result<Option<&mut Chain>, Reply> {
    key.get_value::<Chain>(&BLOOM_TYPE).map_err(|_| Reply::err(errors::WRONG_TYPE))
}

/// Stores a new chain at an empty writable key.
fn store_chain(key: &RedisKeyWritable, chain: Chain) -> Result<(), Reply> {
    key.set_value(&BLOOM_TYPE, chain).map_err(|_| Reply::err(errors::WRONG_TYPE))
}

/// Error reply for a core error.
fn core_err(e: &BloomError) -> Reply {
    Reply::Error(errors::text(e))
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
