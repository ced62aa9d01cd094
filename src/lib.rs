//! scalebloom: scalable Bloom filters for Redis, a drop-in for RedisBloom's `BF.*` commands.
//!
//! `filter` is the pure core (no Redis); `module` is the glue: the allocator
//! (`module/alloc.rs`), the commands and their registration (`module/registry.rs`,
//! `module/commands/`), the native types (`module/types/`), configuration and memory
//! limits. This file is the entry point only.
//!
//! `unsafe` lives where it earns its place, each block with its proof beside it (`[lints]` in
//! Cargo.toml denies one without): in the glue, every call through the module API's function
//! pointers (read only through `api!`, under the premise stated once in `module/mod.rs`) and
//! the argv read in place (`module/args.rs`); in the core, the memory of bit arrays
//! (`filter/mem/`: zeroed allocation, moves into huge pages, the prefetch hint), the probe kernels
//! (`filter/bloom/probe.rs`: unchecked indexing and the BMI2 builds, called only on CPUs that
//! have it), and the segment table of large arrays (`filter/bloom/bits.rs`), whose checked
//! shape bounds every probe.

pub mod filter;
pub mod module;

use std::ffi::c_int;

use module::alloc::BloomAlloc;
use redis_module::{Context, MODULE_CONTEXT, RedisString, Status, decode_args, raw};

/// Every allocation of the module goes through Redis' allocator, so `INFO memory` and
/// `maxmemory` see it.
#[global_allocator]
static ALLOCATOR: BloomAlloc = BloomAlloc;

/// This build's version (Cargo.toml's), as `INFO bf` shows it (`bf_version`).
pub const VERSION: &str = env!("CARGO_PKG_VERSION");

/// The version as `MODULE LIST` shows it (`ver`), encoded as RedisBloom encodes its own:
/// major × 10000 + minor × 100 + patch (1.0.0 is 10000).
pub const MODULE_VERSION: c_int = {
    let major = decimal(env!("CARGO_PKG_VERSION_MAJOR"));
    let minor = decimal(env!("CARGO_PKG_VERSION_MINOR"));
    let patch = decimal(env!("CARGO_PKG_VERSION_PATCH"));
    assert!(minor < 100 && patch < 100, "MODULE LIST's encoding has two digits for each");
    major * 10000 + minor * 100 + patch
};

/// A decimal number of at most four digits, at compile time.
const fn decimal(s: &str) -> c_int {
    let b = s.as_bytes();
    assert!(!b.is_empty() && b.len() <= 4, "a version part of 1 to 4 digits");
    let (mut i, mut n) = (0, 0);
    while i < b.len() {
        assert!(b[i].is_ascii_digit(), "a version part of digits");
        n = n * 10 + (b[i] - b'0') as c_int;
        i += 1;
    }
    n
}

/// What `redis_module!` would generate, minus the parts scalebloom does not use and that log
/// at warning level on every start: the crate's registration of its own (empty) lists of
/// commands, defrag start/end callbacks (`Skip register defrag callbacks …` on Redis 7.0, where
/// filters are still defragmented through the type's own callback) and server events. The
/// module registers its commands, events, configs and INFO section in `module::registry::init`,
/// which logs what it decided at notice level.
///
/// # Safety
/// Called by the server once, on its main thread, with the arguments of `MODULE LOAD` /
/// `loadmodule`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn RedisModule_OnLoad(
    ctx: *mut raw::RedisModuleCtx,
    argv: *mut *mut raw::RedisModuleString,
    argc: c_int,
) -> c_int {
    // SAFETY: `ctx` is the load context the server passed; the name is NUL-terminated and
    // static. This fills the API function pointers every later call goes through.
    let rc = unsafe {
        raw::Export_RedisModule_Init(
            ctx,
            c"bf".as_ptr(),
            MODULE_VERSION,
            raw::REDISMODULE_APIVER_1 as c_int,
        )
    };
    if rc == raw::Status::Err as c_int {
        return rc;
    }
    let context = Context::new(ctx);
    // The crate's detached-context logging needs it; a second load in one process keeps the first.
    let _ = MODULE_CONTEXT.set_context(&context);
    let args: Vec<RedisString> = decode_args(ctx, argv, argc);
    // `bf.compat` decides the encoding version a type is registered with.
    if let Err(why) = module::config::compat_from_args(&args) {
        context.log_warning(&format!("scalebloom: {}", why.replace('%', "%%")));
        return raw::Status::Err as c_int;
    }
    if module::types::create_all(ctx).is_err() {
        return raw::Status::Err as c_int;
    }
    match module::registry::init(&context, &args) {
        Status::Ok => raw::Status::Ok as c_int,
        Status::Err => raw::Status::Err as c_int,
    }
}
