//! scalebloom: scalable Bloom filters for Redis, a drop-in for RedisBloom's `BF.*` commands.
//!
//! `filter` is the pure core (no Redis); `module` is the glue. This file is the module entry:
//! the allocator, command registration, the panic barrier around every command, and sending
//! replies. Together with `module/datatype.rs` it holds all the `unsafe` code that talks to
//! Redis, with `module/args.rs` (argv read in place). The core's few unsafe blocks each have
//! their proof beside them: the memory of bit arrays in `filter/mem.rs` (zeroed allocation,
//! huge-page advice, the prefetch hint); in the probe kernels (`filter/probe.rs`) unchecked
//! indexing and the kernels compiled for BMI2, called only on CPUs that have it; and the
//! segment table of large arrays (`filter/bits.rs`), whose checked shape bounds every probe.

pub mod filter;
pub mod module;

use std::alloc::{GlobalAlloc, Layout, System};
use std::ffi::{CStr, CString, c_int};
use std::panic::{AssertUnwindSafe, catch_unwind};

use redis_module::{Context, NotifyEvent, RedisString, Status, raw, redis_module};

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
        Reply::Bools(values, error) => {
            raw::reply_with_array(ctx, (values.len() + usize::from(error.is_some())) as _);
            // The per-item loop of MADD/MEXISTS replies: the function pointer is looked up once
            // rather than through the crate's per-call wrapper.
            if let Some(reply_with_bool) = unsafe { raw::RedisModule_ReplyWithBool } {
                for b in values {
                    unsafe { reply_with_bool(ctx, c_int::from(b)) };
                }
            }
            if let Some(text) = error {
                send(ctx, Reply::Error(text));
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

/// Publishes the keyspace event `event` (a module-type event) for `key`. Like the crate's
/// `Context::notify_keyspace_event`, but the event name is a static C string, so a write
/// command does not allocate one each time.
pub fn notify(ctx: &Context, event: &CStr, key: &RedisString) {
    if let Some(notify) = unsafe { raw::RedisModule_NotifyKeyspaceEvent } {
        // SAFETY: `ctx` is the running command's context and `key` a live string; Redis only
        // reads `event` during the call, and a `&CStr` is NUL-terminated.
        unsafe {
            notify(ctx.ctx, NotifyEvent::MODULE.bits(), event.as_ptr(), key.inner);
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
        catch_unwind(AssertUnwindSafe(|| handler(&context, &Args::new(ctx, argv)))).unwrap_or_else(
            |_| {
                context.log_warning("scalebloom: a command panicked; the panic was caught");
                Reply::err(errors::INTERNAL)
            },
        )
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

/// How a command treats its key, for its key spec (`COMMAND INFO`, cluster routing, ACL key
/// permissions).
#[derive(Clone, Copy)]
enum KeyUse {
    /// Reads the key.
    Read,
    /// Adds to (or creates) the key.
    Insert,
    /// Overwrites parts of the key.
    Update,
}

/// One command: name, entry point, arity (negative: at least), key use, and summary and
/// complexity for `COMMAND DOCS`. All take their one key at `argv[1]`; flags and ACL categories
/// follow from whether the command reads or writes it.
struct Command {
    name: &'static str,
    entry: EntryPoint,
    arity: c_int,
    key: KeyUse,
    summary: &'static str,
    complexity: &'static str,
}

impl Command {
    fn writes(&self) -> bool {
        !matches!(self.key, KeyUse::Read)
    }

    /// Command flags for `RedisModule_CreateCommand`.
    fn flags(&self) -> &'static str {
        if self.writes() { "write deny-oom" } else { "readonly fast" }
    }

    /// ACL categories (Redis 7.2+ / Valkey 8).
    fn acl(&self) -> &'static str {
        if self.writes() { "bloom write" } else { "bloom read fast" }
    }
}

const fn cmd(
    name: &'static str,
    entry: EntryPoint,
    arity: c_int,
    key: KeyUse,
    summary: &'static str,
    complexity: &'static str,
) -> Command {
    Command { name, entry, arity, key, summary, complexity }
}

const COMMANDS: &[Command] = &[
    cmd(
        "bf.reserve",
        cmd_reserve,
        -4,
        KeyUse::Insert,
        "Creates an empty scalable Bloom filter with an error rate and initial capacity",
        "O(1)",
    ),
    cmd(
        "bf.add",
        cmd_add,
        3,
        KeyUse::Insert,
        "Adds an item, creating the filter if needed",
        "O(k + i), k hashes, i layers",
    ),
    cmd(
        "bf.madd",
        cmd_madd,
        -3,
        KeyUse::Insert,
        "Adds one or more items, creating the filter if needed",
        "O(n * (k + i))",
    ),
    cmd(
        "bf.insert",
        cmd_insert,
        -4,
        KeyUse::Insert,
        "Adds items, creating the filter with the given options if needed",
        "O(n * (k + i))",
    ),
    cmd(
        "bf.loadchunk",
        cmd_loadchunk,
        4,
        KeyUse::Update,
        "Restores a filter from a header or chunk produced by BF.SCANDUMP",
        "O(n), n bytes",
    ),
    cmd(
        "bf.exists",
        cmd_exists,
        3,
        KeyUse::Read,
        "Tells whether an item may have been added",
        "O(k * i)",
    ),
    cmd(
        "bf.mexists",
        cmd_mexists,
        -3,
        KeyUse::Read,
        "Tells for each item whether it may have been added",
        "O(n * k * i)",
    ),
    cmd(
        "bf.info",
        cmd_info,
        -2,
        KeyUse::Read,
        "Returns a filter's capacity, size, layers, items and expansion",
        "O(1)",
    ),
    cmd(
        "bf.card",
        cmd_card,
        2,
        KeyUse::Read,
        "Returns the number of items added to a filter",
        "O(1)",
    ),
    cmd("bf.debug", cmd_debug, 2, KeyUse::Read, "Describes every layer of a filter", "O(i)"),
    cmd(
        "bf.scandump",
        cmd_scandump,
        3,
        KeyUse::Read,
        "Returns a filter's header or its next chunk of bits",
        "O(n), n bytes",
    ),
];

/// Sets arity, key spec and docs (Redis 7.0+), and ACL categories where the server has them.
fn describe(ctx: &Context, c: &Command) -> Result<(), String> {
    use redis_module::commands::{
        BeginSearch, FindKeys, KeySpec, KeySpecFlags, get_redis_key_spec,
    };
    let raw_ctx = ctx.get_raw();
    let name = CString::new(c.name).map_err(|e| e.to_string())?;
    let (Some(get_command), Some(set_info)) =
        (unsafe { raw::RedisModule_GetCommand }, unsafe { raw::RedisModule_SetCommandInfo })
    else {
        return Ok(()); // before Redis 7.0: legacy key positions only
    };
    let command = unsafe { get_command(raw_ctx, name.as_ptr()) };
    if command.is_null() {
        return Err(format!("{} not found after registration", c.name));
    }
    if let Some(set_acl) = unsafe { raw::RedisModule_SetCommandACLCategories } {
        let acl = CString::new(c.acl()).map_err(|e| e.to_string())?;
        if unsafe { set_acl(command, acl.as_ptr()) } == raw::REDISMODULE_ERR as c_int {
            return Err(format!("could not set ACL categories of {}", c.name));
        }
    }
    let flags = match c.key {
        KeyUse::Read => KeySpecFlags::READ_ONLY,
        KeyUse::Insert => KeySpecFlags::READ_WRITE | KeySpecFlags::INSERT,
        KeyUse::Update => KeySpecFlags::READ_WRITE | KeySpecFlags::UPDATE,
    };
    let spec = KeySpec::new(None, flags, BeginSearch::new_index(1), FindKeys::new_range(0, 1, 0));
    let mut specs = get_redis_key_spec(vec![spec]);
    let summary = CString::new(c.summary).map_err(|e| e.to_string())?;
    let complexity = CString::new(c.complexity).map_err(|e| e.to_string())?;
    let since = CString::new(env!("CARGO_PKG_VERSION")).map_err(|e| e.to_string())?;
    let version = raw::RedisModuleCommandInfoVersion {
        version: 1,
        sizeof_historyentry: std::mem::size_of::<raw::RedisModuleCommandHistoryEntry>(),
        sizeof_keyspec: std::mem::size_of::<raw::RedisModuleCommandKeySpec>(),
        sizeof_arg: std::mem::size_of::<raw::RedisModuleCommandArg>(),
    };
    let info = raw::RedisModuleCommandInfo {
        version: &version,
        summary: summary.as_ptr(),
        complexity: complexity.as_ptr(),
        since: since.as_ptr(),
        history: std::ptr::null_mut(),
        tips: std::ptr::null(),
        arity: c.arity,
        key_specs: specs.as_mut_ptr(),
        args: std::ptr::null_mut(),
    };
    // SAFETY: every pointer in `info` outlives the call; Redis copies what it keeps.
    if unsafe { set_info(command, &info) } == raw::REDISMODULE_ERR as c_int {
        return Err(format!("could not set the command info of {}", c.name));
    }
    Ok(())
}

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
    // The `bloom` ACL category (Redis 7.2+, Valkey 8): `+@bloom` grants every BF command.
    if let Some(add_category) = unsafe { raw::RedisModule_AddACLCategory } {
        if unsafe { add_category(raw_ctx, c"bloom".as_ptr()) } == raw::REDISMODULE_ERR as c_int {
            ctx.log_warning("scalebloom: could not add the bloom ACL category");
            return Status::Err;
        }
    }
    for c in COMMANDS {
        let (Ok(name), Ok(flags)) = (CString::new(c.name), CString::new(c.flags())) else {
            return Status::Err;
        };
        let rc = unsafe { create(raw_ctx, name.as_ptr(), Some(c.entry), flags.as_ptr(), 1, 1, 1) };
        if rc == raw::REDISMODULE_ERR as c_int {
            ctx.log_warning(&format!("scalebloom: could not register {}", c.name));
            return Status::Err;
        }
        if let Err(msg) = describe(ctx, c) {
            ctx.log_warning(&format!("scalebloom: {msg}"));
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
