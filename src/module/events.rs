//! The server events the module listens to: config changes (to keep `maxmemory` current for
//! the memory checks of `limits`), loading (to hold background huge-page collapses back while
//! the server loads its data; see `filter::mem`), and whatever may start a new consumer of
//! the replication stream or AOF, after which a primary sends its creation settings again
//! (forks, replicas connecting, role changes; see `creation`).

use std::ffi::{c_int, c_void};
use std::panic::{AssertUnwindSafe, catch_unwind};

use redis_module::{Context, ContextFlags, raw};

use super::{creation, limits};
use crate::filter::mem::hold_background_collapse;

/// Reads `maxmemory` now and subscribes to the events.
pub fn init(ctx: &Context) -> Result<(), String> {
    limits::refresh_maxmemory(ctx);
    subscribe(ctx, raw::REDISMODULE_EVENT_CONFIG, on_config_change)?;
    subscribe(ctx, raw::REDISMODULE_EVENT_LOADING, on_loading)?;
    subscribe(ctx, raw::REDISMODULE_EVENT_FORK_CHILD, on_stream_consumer)?;
    subscribe(ctx, raw::REDISMODULE_EVENT_REPLICA_CHANGE, on_stream_consumer)?;
    subscribe(ctx, raw::REDISMODULE_EVENT_REPLICATION_ROLE_CHANGED, on_role_change)
}

type Callback =
    unsafe extern "C" fn(*mut raw::RedisModuleCtx, raw::RedisModuleEvent, u64, *mut c_void);

fn subscribe(ctx: &Context, id: u64, callback: Callback) -> Result<(), String> {
    let Some(subscribe) = api!(RedisModule_SubscribeToServerEvent) else {
        return Err("no RedisModule_SubscribeToServerEvent".into());
    };
    let event = raw::RedisModuleEvent { id, dataver: 1 };
    // SAFETY: OnLoad's live context; `callback` has the callback signature and lives as long
    // as the module.
    let rc = unsafe { subscribe(ctx.get_raw(), event, Some(callback)) };
    if rc == raw::REDISMODULE_ERR as c_int {
        return Err(format!("could not subscribe to server event {id} (needs Redis 7.0+)"));
    }
    Ok(())
}

/// Re-reads `maxmemory` after any `CONFIG SET` (config changes are rare; the names changed are
/// not worth parsing).
unsafe extern "C" fn on_config_change(
    ctx: *mut raw::RedisModuleCtx,
    _event: raw::RedisModuleEvent,
    _subevent: u64,
    _data: *mut c_void,
) {
    let _ = catch_unwind(AssertUnwindSafe(|| {
        limits::refresh_maxmemory(&Context::new(ctx));
        // A creation setting may have changed.
        creation::mark_pending();
    }));
}

/// Holds background collapses while an RDB, AOF or full sync loads; lets them run after.
unsafe extern "C" fn on_loading(
    ctx: *mut raw::RedisModuleCtx,
    _event: raw::RedisModuleEvent,
    subevent: u64,
    _data: *mut c_void,
) {
    let started = matches!(
        subevent,
        raw::REDISMODULE_SUBEVENT_LOADING_RDB_START
            | raw::REDISMODULE_SUBEVENT_LOADING_AOF_START
            | raw::REDISMODULE_SUBEVENT_LOADING_REPL_START
    );
    let ended = subevent == raw::REDISMODULE_SUBEVENT_LOADING_ENDED;
    let _ = catch_unwind(AssertUnwindSafe(|| {
        hold_background_collapse(started);
        // A primary that loaded its own RDB or AOF follows no stream: its own settings apply,
        // sent before its next creation (replicas may resume from before the restart).
        if ended && Context::new(ctx).get_flags().contains(ContextFlags::MASTER) {
            creation::become_primary();
        }
    }));
}

/// A fork (a full sync's or AOF rewrite's snapshot) or a replica coming online (full or
/// partial resync): the stream may have a new consumer that has not seen the settings.
unsafe extern "C" fn on_stream_consumer(
    _ctx: *mut raw::RedisModuleCtx,
    _event: raw::RedisModuleEvent,
    _subevent: u64,
    _data: *mut c_void,
) {
    creation::mark_pending();
}

/// Promoted to primary: its own settings apply from now on. Turned replica: it follows its
/// new primary's stream, which sends the settings before any creation.
unsafe extern "C" fn on_role_change(
    _ctx: *mut raw::RedisModuleCtx,
    _event: raw::RedisModuleEvent,
    subevent: u64,
    _data: *mut c_void,
) {
    if subevent == raw::REDISMODULE_EVENT_REPLROLECHANGED_NOW_MASTER {
        let _ = catch_unwind(creation::become_primary);
    } else {
        creation::mark_pending();
    }
}
