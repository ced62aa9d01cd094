//! The Redis glue: thin layers between Redis and the pure core in `crate::filter`.
//!
//! - `types/`: the native types — callbacks generic over the stored type ([`types::NativeType`]),
//!   and one registration per type (`types/bloom.rs`: `MBbloom--`).
//! - `registry.rs`: the command table, one row per command (handler, arity, key use, docs,
//!   arguments), and the load-time setup; `docs.rs` turns a row's arguments into `COMMAND DOCS`.
//! - `commands/`: one file per command family (parse → core → reply); `commands/key.rs` opens
//!   keys and reads or stores a native type's value.
//! - `args.rs`, `options.rs`, `reply.rs`, `errors.rs`, `config.rs`, `limits.rs`, `creation.rs`,
//!   `events.rs`, `alloc.rs`.
//!
//! # The API-pointer premise
//! `redis_module::raw` holds every function of the module API in a `static mut`
//! (`Option<unsafe extern "C" fn …>`). `RedisModule_Init`, the first thing `RedisModule_OnLoad`
//! does, writes them all, on the main thread, before any other code of this module runs on any
//! thread (commands, type callbacks, events, the allocator inside Redis, Redis' background
//! threads freeing values); nothing writes them again. So reading one by value races with
//! nothing, and reading it before Init (the allocator, in a test binary) sees `None`.
//! `api!` (below) is the one place that reads them, under this premise.

/// The module API function `raw::$name`, read by value: `Option<unsafe extern "C" fn …>`.
macro_rules! api {
    ($name:ident) => {{
        // SAFETY: the API-pointer premise (module/mod.rs): written once by RedisModule_Init
        // before any other code of the module runs, never again; read by value, no reference.
        unsafe { ::redis_module::raw::$name }
    }};
}

pub mod alloc;
pub mod args;
pub mod call;
pub mod clock;
pub mod commands;
pub mod compat;
pub mod config;
pub mod config_alias;
pub mod creation;
pub mod docs;
pub mod errors;
pub mod events;
pub mod limits;
pub mod options;
pub mod registry;
pub mod replicate;
pub mod reply;
pub mod types;
