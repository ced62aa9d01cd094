//! The running command as the glue sees it: its context, and where it comes from — a client,
//! the replication link, AOF replay — worked out once per call, when first asked.
//!
//! Every rule that depends on the origin asks [`Call`]: a client's chunks go only into a
//! filter that awaits them, internal commands refuse clients, limits exempt what a primary
//! already decided, creating commands on a replica follow the stream's settings. Reading the
//! context flags costs Redis a look at its memory state, so a command that never asks (the
//! usual `BF.ADD` on an existing filter) never reads them.

use std::cell::Cell;
use std::ffi::c_int;
use std::ops::Deref;

use redis_module::{Context, ContextFlags, raw};

/// Where a command comes from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Origin {
    /// A client connection (or a script or `MULTI` it sent).
    Client,
    /// The replication link from this server's primary.
    Replication,
    /// The server's own AOF, replayed at startup.
    Aof,
}

/// One call of a command (or a load callback): the context, with its flags read at most once.
/// Dereferences to the [`Context`], so a handler uses it as one.
pub struct Call {
    ctx: Context,
    flags: Cell<Option<c_int>>,
}

impl Call {
    /// The call running in `ctx`.
    pub fn new(ctx: *mut raw::RedisModuleCtx) -> Self {
        Call { ctx: Context::new(ctx), flags: Cell::new(None) }
    }

    /// The context flags, read on first use (within one call they do not change).
    pub fn flags(&self) -> ContextFlags {
        let bits = match self.flags.get() {
            Some(bits) => bits,
            None => {
                let bits = self.ctx.get_flags().bits();
                self.flags.set(Some(bits));
                bits
            }
        };
        ContextFlags::from_bits_truncate(bits)
    }

    /// Where the command comes from.
    pub fn origin(&self) -> Origin {
        let flags = self.flags();
        if flags.contains(ContextFlags::REPLICATED) {
            Origin::Replication
        } else if flags.contains(ContextFlags::LOADING) {
            Origin::Aof
        } else {
            Origin::Client
        }
    }

    /// Whether what the command carries was already checked where it was first run: it comes
    /// from the replication link (the primary checked it) or the AOF (the server that wrote it
    /// did). Such a command is applied as sent.
    pub fn trusted(&self) -> bool {
        self.origin() != Origin::Client
    }

    /// Whether a creating command takes the settings of the stream this server follows rather
    /// than its own: it is [trusted](Call::trusted), or runs on a replica.
    pub fn follows_stream(&self) -> bool {
        self.trusted() || self.flags().contains(ContextFlags::SLAVE)
    }

    /// Whether the client speaks RESP3.
    pub fn resp3(&self) -> bool {
        self.flags().contains(ContextFlags::FLAGS_RESP3)
    }
}

impl Deref for Call {
    type Target = Context;

    fn deref(&self) -> &Context {
        &self.ctx
    }
}
