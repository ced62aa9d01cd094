//! Command handlers: parse → core → reply. Each takes the context and the borrowed argv and
//! returns a whole [`Reply`]; `registry` registers them, checks their arity, catches panics and
//! sends the reply.

pub mod bloom;
pub mod cuckoo;
pub mod cuckoo_stats;
pub mod dump;
pub mod key;
pub mod replconf;
pub mod window;

use std::ffi::{CStr, c_char, c_longlong};

use redis_module::{Context, NotifyEvent, RedisString, raw};

use super::args::{Arg, Args};
use super::errors;
use super::reply::Reply;
use crate::filter::FilterError;

pub use self::key::{Key, with_either, with_value};

/// A command handler.
pub type Handler = fn(&Context, &Args) -> Reply;

/// Error reply for a core error.
fn core_err(e: &FilterError) -> Reply {
    Reply::Error(errors::text(e))
}

/// Replicates `BF.LOADCHUNK <key> 1 <header>` for the running command, whose key is `argv[1]`.
///
/// Straight through `RedisModule_Replicate` with a format of the key's own string, a number and
/// a buffer: no strings are built on this side (the crate's `Context::replicate` creates and
/// frees one per argument, which was most of the cost of creating a small filter).
fn replicate_header(ctx: &Context, args: &Args, header: &[u8]) {
    if let Some(replicate) = api!(RedisModule_Replicate) {
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
    if let Some(replicate) = api!(RedisModule_Replicate) {
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
    if let Some(notify) = api!(RedisModule_NotifyKeyspaceEvent) {
        // SAFETY: `ctx` is the running command's context and `key` a live string; Redis only
        // reads `event` during the call, and a `&CStr` is NUL-terminated.
        unsafe {
            notify(ctx.ctx, NotifyEvent::MODULE.bits(), event.as_ptr(), key.inner);
        }
    }
}
