//! Command handlers: parse → core → reply. Each takes the context and the borrowed argv and
//! returns a whole [`Reply`]; `lib.rs` registers them, catches panics and sends the reply.

pub mod bloom;
pub mod dump;

use redis_module::key::{RedisKey, RedisKeyWritable};
use redis_module::{Context, ContextFlags};

use super::args::Args;
use super::datatype::BLOOM_TYPE;
use super::errors;
use super::reply::Reply;
use crate::filter::{AllocGuard, BloomError, Chain, MaxFilterBytes};

/// A command handler.
pub type Handler = fn(&Context, &Args) -> Reply;

/// The chain at a read-only key: `Ok(None)` when the key is missing.
fn read_chain(key: &RedisKey) -> Result<Option<&Chain>, Reply> {
    key.get_value::<Chain>(&BLOOM_TYPE).map_err(|_| Reply::err(errors::WRONG_TYPE))
}

/// The chain at a writable key: `Ok(None)` when the key is missing.
fn write_chain(key: &RedisKeyWritable) -> Result<Option<&mut Chain>, Reply> {
    key.get_value::<Chain>(&BLOOM_TYPE).map_err(|_| Reply::err(errors::WRONG_TYPE))
}

/// Stores a new chain at an empty writable key.
fn store_chain(key: &RedisKeyWritable, chain: Chain) -> Result<(), Reply> {
    key.set_value(&BLOOM_TYPE, chain).map_err(|_| Reply::err(errors::WRONG_TYPE))
}

/// The allocation policy of the running command: the per-filter limit and `maxmemory` for
/// commands from clients; nothing for replicated commands and loading (the primary, or the
/// server that wrote the file, already decided, and a replica must hold the same bits).
///
/// Built for every write command but consulted only when a filter would grow, so the context
/// flags are read then, not on every command.
pub struct ServerGuard<'a> {
    ctx: &'a Context,
}

impl<'a> ServerGuard<'a> {
    /// The policy for the command running in `ctx`.
    pub fn new(ctx: &'a Context) -> Self {
        Self { ctx }
    }

    /// Whether this command's allocations are checked: not for replicated commands or loading.
    fn enforce(&self) -> bool {
        !self.ctx.get_flags().intersects(ContextFlags::REPLICATED | ContextFlags::LOADING)
    }

    /// `used_memory` and `maxmemory` from the server, if it reports them.
    fn memory(&self) -> Option<(u64, u64)> {
        let info = self.ctx.server_info("memory");
        let read = |f: &str| info.field(f)?.to_string_lossy().parse::<u64>().ok();
        Some((read("used_memory")?, read("maxmemory")?))
    }
}

impl AllocGuard for ServerGuard<'_> {
    fn admit(&self, filter_bytes_after: u64, new_bytes: u64) -> Result<(), BloomError> {
        if !self.enforce() {
            return Ok(());
        }
        MaxFilterBytes(super::config::max_filter_bytes()).admit(filter_bytes_after, new_bytes)?;
        if let Some((used, max)) = self.memory() {
            if max > 0 && used.saturating_add(new_bytes) > max {
                return Err(BloomError::MaxMemory { needed: new_bytes });
            }
        }
        Ok(())
    }
}

/// Error reply for a core error.
fn core_err(e: &BloomError) -> Reply {
    Reply::Error(errors::text(e))
}
