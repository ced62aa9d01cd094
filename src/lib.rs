//! scalebloom: scalable Bloom filters for Redis, a drop-in for RedisBloom's `BF.*` commands.
//!
//! `filter` is the pure core (no Redis); `module` is the glue. This file is the module entry:
//! the allocator, command registration, the panic barrier around every command, and sending
//! replies. Together with `module/datatype.rs` it holds all the `unsafe` code.

pub mod filter;
pub mod module;

use std::alloc::{GlobalAlloc, Layout, System};
use std::ffi::{CString, c_int};
use std::panic::{AssertUnwindSafe, catch_unwind};

use redis_module::{Context, RedisString, Status, raw, redis_module};

use module::args::Args;
use module::commands::{Handler, bloom, dump};
use module::datatype::BLOOM_TYPE;
use module::errors;
use module::reply::Reply;

/// Redis' allocator (so `INFO memory`, `maxmemory` and `MEMORY USAGE` see filter memory),
/// with `calloc` for zeroed allocations (a fresh multi-GiB filter is not memset page by page)
/// and `realloc` in place.
///
/// Without a Redis server (unit tests, benches, integration-test binaries linking the rlib)
/// `RedisModule_Alloc` is never set and the system allocator serves every call. Inside Redis
/// it is set by `RedisModule_Init` at the top of `RedisModule_OnLoad`, before any Rust code of
/// this module allocates, so one allocator serves every pointer's whole life either way.
pub struct BloomAlloc;

/// Rounds the size up to the alignment, as the `redis-module` crate's allocator does: jemalloc
/// aligns each size class to its size's largest power-of-two divisor.
fn redis_size(layout: Layout) -> usize {
    (layout.size() + layout.align() - 1) & !(layout.align() - 1)
}

unsafe impl GlobalAlloc for BloomAlloc {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        match unsafe { raw::RedisModule_Alloc } {
            Some(alloc) => unsafe { alloc(redis_size(layout)).cast() },
            None => unsafe { System.alloc(layout) },
        }
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        match unsafe { raw::RedisModule_Calloc } {
            Some(calloc) => unsafe { calloc(1, redis_size(layout)).cast() },
            None => unsafe { System.alloc_zeroed(layout) },
        }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        match unsafe { raw::RedisModule_Realloc } {
            Some(realloc) => unsafe {
                let new = Layout::from_size_align_unchecked(new_size, layout.align());
                realloc(ptr.cast(), redis_size(new)).cast()
            },
            None => unsafe { System.realloc(ptr, layout, new_size) },
        }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        match unsafe { raw::RedisModule_Free } {
            Some(free) => unsafe { free(ptr.cast()) },
            None => unsafe { System.dealloc(ptr, layout) },
        }
    }
}

/// Sends a reply built by a handler.
fn send(ctx: *mut raw::RedisModuleCtx, reply: Reply) {
    match reply {
        Reply::Ok => {
            raw::reply_with_simple_string(ctx, c"OK".as_ptr());
        }
        Reply::Int(v) => {
            raw::reply_with_long_long(ctx, v);
        }
        Reply::Bool(b) => {
            raw::reply_with_bool(ctx, c_int::from(b));
        }
        Reply::Bulk(b) => {
            raw::reply_with_string_buffer(ctx, b.as_ptr().cast(), b.len());
        }
        Reply::Null => {
            raw::reply_with_null(ctx);
        }
        Reply::Array(items) => {
            raw::reply_with_array(ctx, items.len() as _);
            for item in items {
                send(ctx, item);
            }
        }
        Reply::Map(fields) => {
            raw::reply_with_map(ctx, fields.len() as _);
            for (name, value) in fields {
                let name = CString::new(name).unwrap_or_default();
                raw::reply_with_simple_string(ctx, name.as_ptr());
                send(ctx, value);
            }
        }
        Reply::Error(text) => {
            let text = CString::new(text.replace(['\0', '\r', '\n'], " ")).unwrap_or_default();
            raw::reply_with_error(ctx, text.as_ptr());
        }
        Reply::WrongArity => {
            if let Some(wrong_arity) = unsafe { raw::RedisModule_WrongArity } {
                unsafe { wrong_arity(ctx) };
            }
        }
    }
}

/// Runs one command: borrows argv, runs the handler behind a panic barrier, sends its reply.
fn run(
    ctx: *mut raw::RedisModuleCtx,
    argv: *mut *mut raw::RedisModuleString,
    argc: c_int,
    handler: Handler,
) -> c_int {
    let argv: &[*mut raw::RedisModuleString] = match usize::try_from(argc) {
        Ok(n) if !argv.is_null() => unsafe { std::slice::from_raw_parts(argv, n) },
        _ => &[],
    };
    let context = Context::new(ctx);
    let reply = if argv.len() < 2 {
        Reply::WrongArity
    } else {
        catch_unwind(AssertUnwindSafe(|| handler(&context, &Args::new(ctx, argv))))
            .unwrap_or_else(|_| {
                context.log_warning("scalebloom: a command panicked; the panic was caught");
                Reply::err(errors::INTERNAL)
            })
    };
    send(ctx, reply);
    raw::REDISMODULE_OK as c_int
}

/// Defines a C-ABI entry point for each handler.
macro_rules! entry_points {
    ($($entry:ident => $handler:path),* $(,)?) => {
        $(
            extern "C" fn $entry(
                ctx: *mut raw::RedisModuleCtx,
                argv: *mut *mut raw::RedisModuleString,
                argc: c_int,
            ) -> c_int {
                run(ctx, argv, argc, $handler)
            }
        )*
    };
}

entry_points! {
    cmd_reserve => bloom::reserve,
    cmd_add => bloom::add,
    cmd_madd => bloom::madd,
    cmd_insert => bloom::insert,
    cmd_exists => bloom::exists,
    cmd_mexists => bloom::mexists,
    cmd_info => bloom::info,
    cmd_card => bloom::card,
    cmd_debug => bloom::debug,
    cmd_scandump => dump::scandump,
    cmd_loadchunk => dump::loadchunk,
}

type EntryPoint =
    extern "C" fn(*mut raw::RedisModuleCtx, *mut *mut raw::RedisModuleString, c_int) -> c_int;

/// Every command: name, entry point, flags. All take their one key at argv[1].
const COMMANDS: &[(&str, EntryPoint, &str)] = &[
    ("bf.reserve", cmd_reserve, "write deny-oom"),
    ("bf.add", cmd_add, "write deny-oom"),
    ("bf.madd", cmd_madd, "write deny-oom"),
    ("bf.insert", cmd_insert, "write deny-oom"),
    ("bf.loadchunk", cmd_loadchunk, "write deny-oom"),
    ("bf.exists", cmd_exists, "readonly fast"),
    ("bf.mexists", cmd_mexists, "readonly fast"),
    ("bf.info", cmd_info, "readonly fast"),
    ("bf.card", cmd_card, "readonly fast"),
    ("bf.debug", cmd_debug, "readonly fast"),
    ("bf.scandump", cmd_scandump, "readonly fast"),
];

fn init(ctx: &Context, args: &[RedisString]) -> Status {
    let raw_ctx = ctx.get_raw();
    // A short or corrupt RDB / RESTORE payload must reach rdb_load as an error to refuse,
    // not abort the server.
    if let Some(set_options) = unsafe { raw::RedisModule_SetModuleOptions } {
        unsafe { set_options(raw_ctx, raw::REDISMODULE_OPTIONS_HANDLE_IO_ERRORS as c_int) };
    }
    if let Err(msg) = module::config::register(ctx, args) {
        ctx.log_warning(&format!("scalebloom: {}", msg.replace('%', "%%")));
        return Status::Err;
    }
    if let Some(load_configs) = unsafe { raw::RedisModule_LoadConfigs } {
        if unsafe { load_configs(raw_ctx) } == raw::REDISMODULE_ERR as c_int {
            ctx.log_warning("scalebloom: could not load the bf.* configuration values");
            return Status::Err;
        }
    }
    let Some(create) = (unsafe { raw::RedisModule_CreateCommand }) else {
        return Status::Err;
    };
    for &(name, entry, flags) in COMMANDS {
        let (name_c, flags_c) = (CString::new(name), CString::new(flags));
        let (Ok(name_c), Ok(flags_c)) = (name_c, flags_c) else {
            return Status::Err;
        };
        let rc = unsafe { create(raw_ctx, name_c.as_ptr(), Some(entry), flags_c.as_ptr(), 1, 1, 1) };
        if rc == raw::REDISMODULE_ERR as c_int {
            ctx.log_warning(&format!("scalebloom: could not register {name}"));
            return Status::Err;
        }
    }
    Status::Ok
}

redis_module! {
    name: "bf",
    version: 100,
    allocator: (BloomAlloc, BloomAlloc),
    data_types: [BLOOM_TYPE],
    init: init,
}
