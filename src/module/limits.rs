//! The memory limits a filter allocation must pass, and which paths check them.
//!
//! | path                                        | `bf.max-filter-bytes` | `maxmemory` |
//! |---------------------------------------------|-----------------------|-------------|
//! | a client's create / add / LOADCHUNK header  | checked               | checked     |
//! | a client's RESTORE (DUMP payload)           | checked               | checked     |
//! | replicated commands, AOF replay, RDB load,  | not checked           | not checked |
//! | a replica's full sync, RESTORE on a replica |                       |             |
//!
//! A server must always start on its own data, and a replica must end with its primary's bits:
//! the primary (or the server that wrote the file) already decided.
//!
//! `maxmemory` follows Redis' eviction model. Redis evicts before a command runs, never during
//! one; a large `SET` is accepted and the next command evicts. So with an evicting
//! `maxmemory-policy` an allocation goes ahead as long as it is not larger than `maxmemory`
//! itself (eviction can make room for it); with `noeviction` it is refused when the memory in
//! use plus the allocation would pass `maxmemory`.
//!
//! The check costs next to nothing: the context flags say whether `maxmemory` is set and
//! whether the policy evicts, `RedisModule_GetUsedMemoryRatio` gives the memory counted against
//! `maxmemory` (as eviction counts it), and `maxmemory` itself is read once at load and again
//! on every `CONFIG SET` (the server's config-change event, see `events`), never per command.

use std::sync::atomic::{AtomicU64, Ordering};

use redis_module::{Context, ContextFlags, RedisValue};

use super::call::Call;
use super::config;
use crate::filter::{AllocGuard, FilterError, MaxFilterBytes};

/// `maxmemory` in bytes (0: none), as of the last load or config change.
static MAXMEMORY: AtomicU64 = AtomicU64::new(0);

/// `CONFIG GET maxmemory`, stored in `MAXMEMORY`. Leaves the old value if the reply is not
/// the expected `[name, value]`.
pub fn refresh_maxmemory(ctx: &Context) {
    let Ok(RedisValue::Array(reply)) = ctx.call("CONFIG", &["GET", "maxmemory"][..]) else {
        return;
    };
    let value = match reply.get(1) {
        Some(RedisValue::BulkString(s) | RedisValue::SimpleString(s)) => s.parse().ok(),
        Some(RedisValue::StringBuffer(b)) => {
            std::str::from_utf8(b).ok().and_then(|s| s.parse().ok())
        }
        Some(RedisValue::BulkRedisString(s)) => s.to_string_lossy().parse().ok(),
        Some(RedisValue::Integer(v)) => u64::try_from(*v).ok(),
        _ => None,
    };
    if let Some(v) = value {
        MAXMEMORY.store(v, Ordering::Relaxed);
    }
}

/// The allocation policy of the running command or load (see the table at the top).
///
/// Built for every write, consulted only when a filter would grow, so the context flags are
/// read then (through the [`Call`]), not on every command.
pub struct ServerGuard<'a> {
    call: &'a Call,
    /// Whether this is an `rdb_load` rather than a command.
    load: bool,
}

impl<'a> ServerGuard<'a> {
    /// The policy for the running command: replicated commands and AOF replay are exempt.
    pub fn for_command(call: &'a Call) -> Self {
        Self { call, load: false }
    }

    /// The policy for an `rdb_load` whose I/O context is `call`: a server loading its own data
    /// (startup, DEBUG RELOAD, a replica's full sync, async or not) and a replica are exempt;
    /// what remains is a client's RESTORE.
    pub fn for_load(call: &'a Call) -> Self {
        Self { call, load: true }
    }

    /// The context flags of the running command or load.
    pub fn flags(&self) -> ContextFlags {
        self.call.flags()
    }
}

impl AllocGuard for ServerGuard<'_> {
    fn admit(&self, filter_bytes_after: u64, new_bytes: u64) -> Result<(), FilterError> {
        let per_filter = MaxFilterBytes(config::max_filter_bytes());
        let max = MAXMEMORY.load(Ordering::Relaxed);
        if max == 0 && per_filter.admit(filter_bytes_after, new_bytes).is_ok() {
            // Nothing to refuse whoever runs it: no need to ask Redis for the context flags.
            return Ok(());
        }
        let flags = self.flags();
        let exempt = if self.load {
            ContextFlags::LOADING | ContextFlags::ASYNC_LOADING | ContextFlags::SLAVE
        } else {
            ContextFlags::REPLICATED | ContextFlags::LOADING
        };
        if flags.intersects(exempt) {
            return Ok(());
        }
        per_filter.admit(filter_bytes_after, new_bytes)?;
        if max == 0 || !flags.contains(ContextFlags::MAXMEMORY) {
            return Ok(());
        }
        if new_bytes > max {
            return Err(FilterError::MaxMemory { needed: new_bytes });
        }
        if flags.contains(ContextFlags::EVICTED) {
            return Ok(()); // the policy evicts: the next command makes room
        }
        let ratio = match api!(RedisModule_GetUsedMemoryRatio) {
            // SAFETY: a function of the module API taking no arguments; it only reads the
            // server's memory counters.
            Some(ratio) => f64::from(unsafe { ratio() }),
            None => 0.0,
        };
        let used = (ratio * max as f64) as u64;
        if used.saturating_add(new_bytes) > max {
            return Err(FilterError::MaxMemory { needed: new_bytes });
        }
        Ok(())
    }
}
