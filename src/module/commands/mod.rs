//! Command handlers: parse → core → reply. Each takes the context and the borrowed argv and
//! returns a whole [`Reply`]; `registry` registers them, checks their arity, catches panics and
//! sends the reply.

pub mod bloom;
pub mod cuckoo;
pub mod dump;
pub mod key;
pub mod merge;
pub mod replconf;
pub mod valkey;
pub mod window;

use std::ffi::CStr;

use redis_module::{NotifyEvent, RedisString};

use super::args::Args;
use super::call::Call;
use super::errors;
use super::reply::Reply;
use crate::filter::FilterError;

pub use self::key::{Key, with_either, with_value};

/// A command handler.
pub type Handler = fn(&Call, &Args) -> Reply;

/// Error reply for a core error.
fn core_err(e: &FilterError) -> Reply {
    Reply::Error(errors::text(e))
}

/// Publishes the keyspace event `event` (a module-type event) for `key`. Like the crate's
/// `Context::notify_keyspace_event`, but the event name is a static C string, so a write
/// command does not allocate one each time.
fn notify(ctx: &Call, event: &CStr, key: &RedisString) {
    if let Some(notify) = api!(RedisModule_NotifyKeyspaceEvent) {
        // SAFETY: `ctx` is the running command's context and `key` a live string; Redis only
        // reads `event` during the call, and a `&CStr` is NUL-terminated.
        unsafe {
            notify(ctx.ctx, NotifyEvent::MODULE.bits(), event.as_ptr(), key.inner);
        }
    }
}
