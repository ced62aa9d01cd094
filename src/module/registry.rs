//! What the module registers with Redis: its commands (names, flags, arity, key specs, ACL
//! categories, `COMMAND DOCS`), the panic barrier every command runs behind, and the load-time
//! setup (`init`) that `RedisModule_OnLoad` in `lib.rs` calls.

use std::ffi::{CString, c_int};
use std::panic::{AssertUnwindSafe, catch_unwind};

use redis_module::{Context, RedisString, Status, raw};

use std::sync::atomic::Ordering;

use super::args::Args;
use super::call::Call;
use super::clock;
use super::commands::{Handler, bloom, cuckoo, merge, replconf, valkey, window};
use super::docs::{Arg, ArgKind, c_args};
use super::errors;
use super::events;
use super::reply::{Reply, send};
use super::types::DEFRAG_MOVES;

/// Runs one command: checks its arity (the one place it is checked), borrows argv, runs the
/// handler behind a panic barrier, sends its reply.
#[inline(always)]
fn run(
    ctx: *mut raw::RedisModuleCtx,
    argv: *mut *mut raw::RedisModuleString,
    argc: c_int,
    handler: Handler,
    arity: c_int,
) -> c_int {
    let argv: &[*mut raw::RedisModuleString] = match usize::try_from(argc) {
        // SAFETY: Redis passes `argc` valid string pointers at `argv`, alive for the whole
        // command; the slice is dropped before the command returns.
        Ok(n) if !argv.is_null() => unsafe { std::slice::from_raw_parts(argv, n) },
        _ => &[],
    };
    if is_keys_request(ctx) {
        key_positions(ctx, argv);
        return raw::REDISMODULE_OK as c_int;
    }
    let call = Call::new(ctx);
    let wrong_arity = if arity >= 0 { argc != arity } else { argc < -arity };
    let reply = if wrong_arity || argv.len() < 2 {
        Reply::WrongArity
    } else {
        catch_unwind(AssertUnwindSafe(|| handler(&call, &Args::new(ctx, argv)))).unwrap_or_else(
            |_| {
                call.log_warning("scalebloom: a command panicked; the panic was caught");
                Reply::err(errors::INTERNAL)
            },
        )
    };
    send(&call, reply);
    raw::REDISMODULE_OK as c_int
}

/// Whether Redis runs the command only to learn its keys (`getkeys-api` commands: cluster
/// routing, ACL key checks, `COMMAND GETKEYS`).
#[inline(always)]
fn is_keys_request(ctx: *mut raw::RedisModuleCtx) -> bool {
    match api!(RedisModule_IsKeysPositionRequest) {
        // SAFETY: `ctx` is the running command's context.
        Some(is_request) => (unsafe { is_request(ctx) }) != 0,
        None => false,
    }
}

/// The keys of a `getkeys-api` command (those with other keys than their first, whose
/// positions depend on the arguments): argument 1, then BF.MERGE's sources (2 to the end), or
/// the key after `LIKE` among BF.RESERVE's and BF.INSERT's options (before `ITEMS`).
fn key_positions(ctx: *mut raw::RedisModuleCtx, argv: &[*mut raw::RedisModuleString]) {
    let Some(key_at) = api!(RedisModule_KeyAtPos) else { return };
    if argv.len() < 2 {
        return;
    }
    let arg = |i: usize| super::args::string_bytes(argv[i]);
    let mut positions = vec![1];
    if arg(0).eq_ignore_ascii_case(b"bf.merge") {
        positions.extend(2..argv.len());
    } else if let Some(i) = (2..argv.len().saturating_sub(1))
        .take_while(|&i| !arg(i).eq_ignore_ascii_case(b"ITEMS"))
        .find(|&i| arg(i).eq_ignore_ascii_case(b"LIKE"))
    {
        positions.push(i + 1);
    }
    for p in positions {
        // SAFETY: `ctx` is the running command's context, asked for key positions; each
        // position is below argc.
        unsafe { key_at(ctx, p as c_int) };
    }
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
    /// Removes content from the key (never allocates, so not refused under `maxmemory`).
    Delete,
    /// Rearranges the key's content without allocating (CF.COMPACT).
    Rearrange,
    /// No key, no data: BF.DEBUGCLOCK (refused unless the module was loaded with the debug
    /// clock on).
    Admin,
    /// No key: the internal BF.REPLCONF, which only the replication link and AOF replay may
    /// run, hidden from MONITOR and the slow log and in no ACL category (it carries the seed
    /// secret; see `creation`).
    None,
}

/// Whom a command is for: its ACL category and whether clients may run it at all.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Family {
    /// `BF.*`: in `@bloom`.
    Bloom,
    /// `CF.*`: in `@cuckoo`, as RedisBloom 8 registers them (not in `@bloom`).
    Cuckoo,
    /// Only the replication link and AOF replay may run it (BF.REPLCONF; BF.WINDOWADD, a
    /// primary's adds to a windowed filter at the time it ran them): registered with Redis 8's
    /// `internal` flag where the server has it, refusing clients itself where it does not, and
    /// in no ACL category, so that `+@bloom` does not name it and `ACL CAT bloom` does not
    /// list it.
    Internal,
    /// For tests only (BF.DEBUGCLOCK, refused unless the module was loaded with the debug
    /// clock on): in no ACL category a user is granted.
    Test,
}

/// One command: name, entry point, arity (negative: at least), key use, family, summary,
/// complexity
/// and arguments for `COMMAND DOCS`. All but BF.REPLCONF take their one key at `argv[1]`; flags,
/// key spec and ACL categories follow from whether the command reads or writes it.
struct Command {
    name: &'static str,
    entry: EntryPoint,
    arity: c_int,
    key: KeyUse,
    family: Family,
    /// The release that added it (`COMMAND DOCS` `since`).
    since: &'static str,
    /// What later releases changed in it, oldest first: (release, change) (`COMMAND DOCS`
    /// `history`).
    history: &'static [(&'static str, &'static str)],
    summary: &'static str,
    complexity: &'static str,
    /// The arguments after the command's name, as RedisBloom's documentation gives them.
    args: &'static [Arg],
}

impl Command {
    /// Command flags for `RedisModule_CreateCommand`: its key use's, and `getkeys-api` for a
    /// command whose other keys' positions depend on its arguments ([`key_positions`]).
    fn flags(&self) -> String {
        let base = self.base_flags();
        if Arg::other_keys(self.args).is_some() {
            format!("{base} getkeys-api")
        } else {
            base.into()
        }
    }

    fn base_flags(&self) -> &'static str {
        match self.key {
            KeyUse::Read => "readonly fast",
            KeyUse::Delete | KeyUse::Rearrange => "write fast",
            KeyUse::Insert | KeyUse::Update => "write deny-oom",
            // `may-replicate`, not `write`: `write` would put it in `@write`. It changes no
            // key, and the replication link and AOF replay run it whatever its flags.
            KeyUse::None => "may-replicate deny-script no-monitor no-slowlog fast",
            KeyUse::Admin => "fast",
        }
    }

    /// Whether only the replication link and AOF replay may run it.
    fn internal(&self) -> bool {
        self.family == Family::Internal
    }

    /// ACL categories (Redis 7.2+ / Valkey 8): the family's, then whether it reads or writes.
    fn acl(&self) -> Option<&'static str> {
        let read = matches!(self.key, KeyUse::Read);
        let fast_write = matches!(self.key, KeyUse::Delete | KeyUse::Rearrange);
        match self.family {
            Family::Internal | Family::Test => None,
            Family::Bloom if read => Some("bloom read fast"),
            Family::Bloom => Some("bloom write"),
            Family::Cuckoo if read => Some("cuckoo read fast"),
            Family::Cuckoo if fast_write => Some("cuckoo write fast"),
            Family::Cuckoo => Some("cuckoo write"),
        }
    }
}

/// The command table: one row per command — entry point, name, handler, arity, key use,
/// family, the release that added it and what later ones changed, summary, complexity,
/// arguments — each with a C entry point that runs its handler with its
/// arity. A new command is a row here and its handler; nothing else names it.
macro_rules! commands {
    ($($entry:ident: $name:literal => $handler:path, $arity:literal, $key:ident, $family:ident,
       since $since:literal $(history [$(($hv:literal, $hd:literal)),* $(,)?])?,
       $summary:literal, $complexity:literal, [$($arg:expr),* $(,)?];)*) => {
        $(
            extern "C" fn $entry(
                ctx: *mut raw::RedisModuleCtx,
                argv: *mut *mut raw::RedisModuleString,
                argc: c_int,
            ) -> c_int {
                run(ctx, argv, argc, $handler, $arity)
            }
        )*
        const COMMANDS: &[Command] = &[$(
            Command {
                name: $name,
                entry: $entry,
                arity: $arity,
                key: KeyUse::$key,
                family: Family::$family,
                since: $since,
                history: &[$($(($hv, $hd)),*)?],
                summary: $summary,
                complexity: $complexity,
                args: &[$($arg),*],
            },
        )*];
    };
}

// Arguments several commands share.
const KEY: Arg = Arg::new(c"key", ArgKind::Key);
const ITEM: Arg = Arg::new(c"item", ArgKind::String);
const ITEMS: Arg = Arg::new(c"item", ArgKind::String).multiple();
const EXPANSION: Arg = Arg::option(c"expansion", c"EXPANSION", ArgKind::Integer);
const NONSCALING: Arg = Arg::flag(c"nonscaling", c"NONSCALING");
const COUNTING: Arg = Arg::option(c"counting", c"COUNTING", ArgKind::Integer);
const ITERATOR: Arg = Arg::new(c"iterator", ArgKind::Integer);
const FINGERPRINT: Arg = Arg::option(c"fingerprint", c"FINGERPRINT", ArgKind::Integer);
const WINDOW: Arg = Arg::option(c"window", c"WINDOW", ArgKind::String);
const LAYOUT: Arg = Arg::option(
    c"layout",
    c"LAYOUT",
    ArgKind::OneOf(&[
        Arg::new(c"standard", ArgKind::Token).token(c"STANDARD"),
        Arg::new(c"blocked", ArgKind::Token).token(c"BLOCKED"),
    ]),
);
const CF_CAPACITY: Arg = Arg::option(c"capacity", c"CAPACITY", ArgKind::Integer);
const LIKE: Arg = Arg::option(c"otherkey", c"LIKE", ArgKind::OtherKey);
// valkey-bloom's creation options: any of them makes a filter in its layout.
const SEED: Arg = Arg::option(c"seed", c"SEED", ArgKind::String);
const TIGHTENING: Arg = Arg::option(c"tightening", c"TIGHTENING", ArgKind::Double);
const VALIDATESCALETO: Arg = Arg::option(c"validatescaleto", c"VALIDATESCALETO", ArgKind::Integer);

commands! {
    cmd_reserve: "bf.reserve" => bloom::reserve, -4, Insert, Bloom, since "0.1.0" history [("1.0.0", "Added the LIKE option, and valkey-bloom's SEED, TIGHTENING and VALIDATESCALETO.")],
        "Creates an empty scalable Bloom filter with an error rate and initial capacity", "O(1)",
        [KEY, Arg::new(c"error_rate", ArgKind::Double), Arg::new(c"capacity", ArgKind::Integer),
         EXPANSION, NONSCALING, COUNTING, WINDOW, LAYOUT, LIKE, SEED, TIGHTENING,
         VALIDATESCALETO];
    cmd_add: "bf.add" => bloom::add, 3, Insert, Bloom, since "0.1.0",
        "Adds an item, creating the filter if needed", "O(k + i), k hashes, i layers",
        [KEY, ITEM];
    cmd_madd: "bf.madd" => bloom::madd, -3, Insert, Bloom, since "0.1.0",
        "Adds one or more items, creating the filter if needed", "O(n * (k + i))",
        [KEY, ITEMS];
    cmd_insert: "bf.insert" => bloom::insert, -4, Insert, Bloom, since "0.1.0" history [("1.0.0", "Added the LIKE option, and valkey-bloom's SEED, TIGHTENING and VALIDATESCALETO.")],
        "Adds items, creating the filter with the given options if needed", "O(n * (k + i))",
        [KEY,
         Arg::option(c"capacity", c"CAPACITY", ArgKind::Integer),
         Arg::option(c"error", c"ERROR", ArgKind::Double),
         EXPANSION,
         Arg::flag(c"nocreate", c"NOCREATE"),
         NONSCALING,
         COUNTING,
         WINDOW,
         LAYOUT,
         LIKE,
         SEED,
         TIGHTENING,
         VALIDATESCALETO,
         Arg::new(c"items", ArgKind::Block(&[ITEMS])).token(c"ITEMS")];
    cmd_loadchunk: "bf.loadchunk" => bloom::loadchunk, 4, Update, Bloom, since "0.1.0",
        "Restores a filter from a header or chunk produced by BF.SCANDUMP", "O(n), n bytes",
        [KEY, ITERATOR, Arg::new(c"data", ArgKind::String)];
    cmd_exists: "bf.exists" => bloom::exists, 3, Read, Bloom, since "0.1.0",
        "Tells whether an item may have been added", "O(k * i)",
        [KEY, ITEM];
    cmd_mexists: "bf.mexists" => bloom::mexists, -3, Read, Bloom, since "0.1.0",
        "Tells for each item whether it may have been added", "O(n * k * i)",
        [KEY, ITEMS];
    cmd_info: "bf.info" => bloom::info, -2, Read, Bloom, since "0.1.0" history [("1.0.0", "Added the ERROR, TIGHTENING and MAXSCALEDCAPACITY fields (valkey-bloom's).")],
        "Returns a filter's capacity, size, layers, items and expansion", "O(1)",
        [KEY,
         Arg::new(c"single_value", ArgKind::OneOf(&[
             Arg::new(c"capacity", ArgKind::Token).token(c"CAPACITY"),
             Arg::new(c"size", ArgKind::Token).token(c"SIZE"),
             Arg::new(c"filters", ArgKind::Token).token(c"FILTERS"),
             Arg::new(c"items", ArgKind::Token).token(c"ITEMS"),
             Arg::new(c"expansion", ArgKind::Token).token(c"EXPANSION"),
             Arg::new(c"error", ArgKind::Token).token(c"ERROR"),
             Arg::new(c"tightening", ArgKind::Token).token(c"TIGHTENING"),
             Arg::new(c"maxscaledcapacity", ArgKind::Token).token(c"MAXSCALEDCAPACITY"),
         ])).optional()];
    cmd_bf_load: "bf.load" => valkey::load, 3, Insert, Bloom, since "1.0.0",
        "Creates a filter from the payload of valkey-bloom's AOF rewrite", "O(n), n bytes",
        [KEY, Arg::new(c"data", ArgKind::String)];
    cmd_card: "bf.card" => bloom::card, 2, Read, Bloom, since "0.1.0",
        "Returns the number of items added to a filter", "O(1)",
        [KEY];
    cmd_debug: "bf.debug" => bloom::debug, 2, Read, Bloom, since "0.1.0",
        "Describes every layer of a filter", "O(i)",
        [KEY];
    cmd_scandump: "bf.scandump" => bloom::scandump, 3, Read, Bloom, since "0.1.0",
        "Returns a filter's header or its next chunk of bits", "O(n), n bytes",
        [KEY, ITERATOR];
    cmd_del: "bf.del" => bloom::del, 3, Delete, Bloom, since "0.1.0",
        "Deletes one occurrence of an item from a counting filter", "O(k * i)",
        [KEY, ITEM];
    cmd_mdel: "bf.mdel" => bloom::mdel, -3, Delete, Bloom, since "0.1.0",
        "Deletes one occurrence of each item from a counting filter", "O(n * k * i)",
        [KEY, ITEMS];
    cmd_merge: "bf.merge" => merge::merge, -3, Insert, Bloom, since "1.0.0",
        "Merges filters into one: the union of the sources and the destination",
        "O(n), n bytes of the filters",
        [Arg::new(c"destkey", ArgKind::Key),
         Arg::new(c"sourcekey", ArgKind::OtherKey).multiple()];
    cmd_replconf: "bf.replconf" => replconf::replconf, -2, None, Internal, since "0.1.0",
        "Internal: the creation settings of the primary whose stream follows", "O(1)",
        [Arg::new(c"settings", ArgKind::String), Arg::new(c"padding", ArgKind::String).optional()];
    cmd_stats: "bf.stats" => bloom::stats, 2, Read, Bloom, since "0.1.0",
        "Tells how full a filter is: fill, estimated error rate and items, saturation",
        "O(i), i layers",
        [KEY];
    cmd_windowadd: "bf.windowadd" => window::windowadd, -4, Insert, Internal, since "0.1.0",
        "Internal: adds items to a windowed filter at the primary's time", "O(n * k)",
        [KEY, Arg::new(c"ms", ArgKind::Integer), ITEMS];
    cmd_debugclock: "bf.debugclock" => clock::debugclock, -2, Admin, Test, since "0.1.0",
        "Tests only: reads or moves the debug clock of windowed filters", "O(1)",
        [Arg::new(c"subcommand", ArgKind::String), Arg::new(c"ms", ArgKind::Integer).optional()];
    cmd_cf_reserve: "cf.reserve" => cuckoo::reserve, -3, Insert, Cuckoo, since "0.1.0",
        "Creates an empty cuckoo filter with an initial capacity", "O(1)",
        [KEY, Arg::new(c"capacity", ArgKind::Integer),
         Arg::option(c"bucketsize", c"BUCKETSIZE", ArgKind::Integer),
         Arg::option(c"maxiterations", c"MAXITERATIONS", ArgKind::Integer),
         Arg::option(c"expansion", c"EXPANSION", ArgKind::Integer),
         FINGERPRINT];
    cmd_cf_add: "cf.add" => cuckoo::add, 3, Insert, Cuckoo, since "0.1.0",
        "Adds an item to a cuckoo filter, creating the filter if needed", "O(k + i)",
        [KEY, ITEM];
    cmd_cf_addnx: "cf.addnx" => cuckoo::addnx, 3, Insert, Cuckoo, since "0.1.0",
        "Adds an item to a cuckoo filter if it is not present yet", "O(k + i)",
        [KEY, ITEM];
    cmd_cf_insert: "cf.insert" => cuckoo::insert, -4, Insert, Cuckoo, since "0.1.0",
        "Adds items to a cuckoo filter, creating it with the given options if needed",
        "O(n * (k + i))",
        [KEY, CF_CAPACITY, Arg::flag(c"nocreate", c"NOCREATE"), FINGERPRINT,
         Arg::new(c"items", ArgKind::Block(&[ITEMS])).token(c"ITEMS")];
    cmd_cf_insertnx: "cf.insertnx" => cuckoo::insertnx, -4, Insert, Cuckoo, since "0.1.0",
        "Adds the items not present yet to a cuckoo filter, creating it if needed",
        "O(n * (k + i))",
        [KEY, CF_CAPACITY, Arg::flag(c"nocreate", c"NOCREATE"), FINGERPRINT,
         Arg::new(c"items", ArgKind::Block(&[ITEMS])).token(c"ITEMS")];
    cmd_cf_exists: "cf.exists" => cuckoo::exists, 3, Read, Cuckoo, since "0.1.0",
        "Tells whether an item may be in a cuckoo filter", "O(k), k sub-filters",
        [KEY, ITEM];
    cmd_cf_mexists: "cf.mexists" => cuckoo::mexists, -3, Read, Cuckoo, since "0.1.0",
        "Tells for each item whether it may be in a cuckoo filter", "O(n * k)",
        [KEY, ITEMS];
    cmd_cf_count: "cf.count" => cuckoo::count, 3, Read, Cuckoo, since "0.1.0",
        "Counts the copies of an item's fingerprint in a cuckoo filter", "O(k)",
        [KEY, ITEM];
    cmd_cf_del: "cf.del" => cuckoo::del, 3, Delete, Cuckoo, since "0.1.0",
        "Deletes one copy of an item from a cuckoo filter", "O(k)",
        [KEY, ITEM];
    cmd_cf_compact: "cf.compact" => cuckoo::compact, 2, Rearrange, Cuckoo, since "0.1.0",
        "Moves fingerprints to older sub-filters and frees emptied ones", "O(n), n slots",
        [KEY];
    cmd_cf_info: "cf.info" => cuckoo::info, 2, Read, Cuckoo, since "0.1.0",
        "Returns a cuckoo filter's size, buckets, sub-filters, items and parameters", "O(1)",
        [KEY];
    cmd_cf_stats: "cf.stats" => cuckoo::stats, 2, Read, Cuckoo, since "1.0.0",
        "Tells how full a cuckoo filter is: capacity, items, load factors, saturation",
        "O(1), or O(s) with s the slots of the newest sub-filter when there are several",
        [KEY];
    cmd_cf_debug: "cf.debug" => cuckoo::debug, 2, Read, Cuckoo, since "0.1.0",
        "Describes a cuckoo filter in one line", "O(1)",
        [KEY];
    cmd_cf_scandump: "cf.scandump" => cuckoo::scandump, 3, Read, Cuckoo, since "0.1.0",
        "Returns a cuckoo filter's header or its next chunk of slots", "O(n), n bytes",
        [KEY, ITERATOR];
    cmd_cf_loadchunk: "cf.loadchunk" => cuckoo::loadchunk, 4, Update, Cuckoo, since "0.1.0",
        "Restores a cuckoo filter from a header or chunk produced by CF.SCANDUMP",
        "O(n), n bytes",
        [KEY, ITERATOR, Arg::new(c"data", ArgKind::String)];
}

/// Turns a status code of the module API into a `Result`.
fn check(rc: c_int, what: impl FnOnce() -> String) -> Result<(), String> {
    if rc == raw::REDISMODULE_ERR as c_int { Err(what()) } else { Ok(()) }
}

fn cstring(s: &str) -> Result<CString, String> {
    CString::new(s).map_err(|e| e.to_string())
}

/// Sets arity, key spec and docs (Redis 7.0+), and ACL categories where the server has them.
fn describe(ctx: &Context, c: &Command) -> Result<(), String> {
    use redis_module::commands::{
        BeginSearch, FindKeys, KeySpec, KeySpecFlags, get_redis_key_spec,
    };
    let raw_ctx = ctx.get_raw();
    let name = cstring(c.name)?;
    let (Some(get_command), Some(set_info)) =
        (api!(RedisModule_GetCommand), api!(RedisModule_SetCommandInfo))
    else {
        return Ok(()); // before Redis 7.0: legacy key positions only
    };
    // SAFETY: `raw_ctx` is OnLoad's context and `name` a NUL-terminated string alive for the call.
    let command = unsafe { get_command(raw_ctx, name.as_ptr()) };
    if command.is_null() {
        return Err(format!("{} not found after registration", c.name));
    }
    if let (Some(set_acl), Some(acl)) = (api!(RedisModule_SetCommandACLCategories), c.acl()) {
        let acl = cstring(acl)?;
        // SAFETY: `command` is the live command just looked up; `acl` outlives the call.
        let rc = unsafe { set_acl(command, acl.as_ptr()) };
        check(rc, || format!("could not set ACL categories of {}", c.name))?;
    }
    let flags = match c.key {
        KeyUse::Read => Some(KeySpecFlags::READ_ONLY),
        KeyUse::Insert => Some(KeySpecFlags::READ_WRITE | KeySpecFlags::INSERT),
        KeyUse::Update => Some(KeySpecFlags::READ_WRITE | KeySpecFlags::UPDATE),
        KeyUse::Delete => Some(KeySpecFlags::READ_WRITE | KeySpecFlags::DELETE),
        KeyUse::Rearrange => Some(KeySpecFlags::READ_WRITE | KeySpecFlags::UPDATE),
        KeyUse::None | KeyUse::Admin => None,
    };
    let spec = flags.map(|flags| {
        KeySpec::new(None, flags, BeginSearch::new_index(1), FindKeys::new_range(0, 1, 0))
    });
    // Key spec 1: the other keys it reads, after a keyword or from argument 2 to the end.
    let read = KeySpecFlags::READ_ONLY | KeySpecFlags::ACCESS;
    let other = Arg::other_keys(c.args).map(|token| match token {
        Some(token) => {
            let word = token.to_string_lossy().into_owned();
            KeySpec::new(
                None,
                read,
                BeginSearch::new_keyword(word, 2),
                FindKeys::new_range(0, 1, 0),
            )
        }
        None => KeySpec::new(None, read, BeginSearch::new_index(2), FindKeys::new_range(-1, 1, 0)),
    });
    let mut specs = get_redis_key_spec(spec.into_iter().chain(other).collect());
    let summary = cstring(c.summary)?;
    let complexity = cstring(c.complexity)?;
    let since = cstring(c.since)?;
    let history_strings = c
        .history
        .iter()
        .map(|(release, change)| Ok((cstring(release)?, cstring(change)?)))
        .collect::<Result<Vec<_>, String>>()?;
    // Terminated by an all-null entry, as Redis reads it.
    let mut history: Vec<raw::RedisModuleCommandHistoryEntry> = history_strings
        .iter()
        .map(|(release, change)| raw::RedisModuleCommandHistoryEntry {
            since: release.as_ptr(),
            changes: change.as_ptr(),
        })
        .chain(std::iter::once(raw::RedisModuleCommandHistoryEntry {
            since: std::ptr::null(),
            changes: std::ptr::null(),
        }))
        .collect();
    let mut arg_arrays = Vec::new();
    let args = c_args(c.args, &mut arg_arrays);
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
        history: if c.history.is_empty() { std::ptr::null_mut() } else { history.as_mut_ptr() },
        tips: std::ptr::null(),
        arity: c.arity,
        key_specs: specs.as_mut_ptr(),
        args,
    };
    // SAFETY: every pointer in `info` outlives the call (`arg_arrays` holds the argument
    // arrays, their strings are 'static; `history` and `history_strings` hold the history
    // entries and their strings, ended by the null entry); Redis copies what it keeps.
    let rc = unsafe { set_info(command, &info) };
    check(rc, || format!("could not set the command info of {}", c.name))
}

/// Module options, configs, the `bloom` ACL category, the commands and the memory-limit
/// tracking, in that order. Any failure refuses the load (and names the cause in the log).
fn setup(ctx: &Context, args: &[RedisString]) -> Result<(), String> {
    let raw_ctx = ctx.get_raw();
    // Each call below gets OnLoad's live context and strings that outlive the call.
    if let Some(set_options) = api!(RedisModule_SetModuleOptions) {
        // A short or corrupt RDB / RESTORE payload must reach rdb_load as an error to refuse,
        // not abort the server; and the loader keeps no global state, so a replica may load
        // its primary's RDB asynchronously (`repl-diskless-load swapdb`) while serving reads.
        let options = raw::REDISMODULE_OPTIONS_HANDLE_IO_ERRORS
            | raw::REDISMODULE_OPTIONS_HANDLE_REPL_ASYNC_LOAD;
        // SAFETY: OnLoad's live context (see above).
        unsafe { set_options(raw_ctx, options as c_int) };
    }
    let config_names = super::config::register(ctx, args)?;
    if let Some(load_configs) = api!(RedisModule_LoadConfigs) {
        // SAFETY: OnLoad's live context.
        let rc = unsafe { load_configs(raw_ctx) };
        super::config_alias::loading_ends();
        check(rc, || "could not load the bf.* configuration values".into())?;
    }
    super::config_alias::loading_ends();
    // The `bloom` ACL category (Redis 7.2+, Valkey 8): `+@bloom` grants every BF command.
    let acl = if let Some(add_category) = api!(RedisModule_AddACLCategory) {
        // SAFETY: OnLoad's live context and a static NUL-terminated string.
        let rc = unsafe { add_category(raw_ctx, c"bloom".as_ptr()) };
        check(rc, || "could not add the bloom ACL category".into())?;
        // SAFETY: as above.
        let rc = unsafe { add_category(raw_ctx, c"cuckoo".as_ptr()) };
        check(rc, || "could not add the cuckoo ACL category".into())?;
        "in ACL categories @bloom or @cuckoo, @read/@write"
    } else {
        "in no ACL category (this server has no module ACL categories: grant them by name)"
    };
    let create = api!(RedisModule_CreateCommand).ok_or("no RedisModule_CreateCommand")?;
    for c in COMMANDS {
        let (name, flags) = (cstring(c.name)?, cstring(&c.flags())?);
        // Key positions 1,1,1, or 0,0,0 for the keyless BF.REPLCONF; 1,-1,1 for a command
        // whose other keys run to the end (BF.MERGE). `LIKE`'s key is in the key spec only.
        let key = c_int::from(!matches!(c.key, KeyUse::None | KeyUse::Admin));
        let last = if Arg::other_keys(c.args) == Some(None) { -1 } else { key };
        let entry: raw::RedisModuleCmdFunc = Some(c.entry);
        let register = |flags: &CString| {
            // SAFETY: OnLoad's live context, strings alive for the call; `entry` is an `extern "C"` function with the command signature.
            unsafe { create(raw_ctx, name.as_ptr(), entry, flags.as_ptr(), key, last, key) }
        };
        let mut rc = raw::REDISMODULE_ERR as c_int;
        if c.internal() {
            // Redis 8's `internal` flag makes the command unknown to every connection but the
            // replication link, AOF loading and cluster-internal ones, and leaves it out of
            // COMMAND. Servers without the flag (Redis 7.x, Valkey) refuse the unknown flag
            // and register nothing: the command is then registered without it, and refuses
            // clients itself.
            rc = register(&cstring(&format!("{} internal", c.flags()))?);
        }
        if rc == raw::REDISMODULE_ERR as c_int {
            rc = register(&flags);
        }
        check(rc, || format!("could not register {}", c.name))?;
        describe(ctx, c)?;
    }
    // This replaces the `redis-module` crate's INFO callback, which `info` calls first.
    if let Some(register_info) = api!(RedisModule_RegisterInfoFunc) {
        // SAFETY: OnLoad's live context; `info` has the callback's signature and lives forever.
        let rc = unsafe { register_info(raw_ctx, Some(info)) };
        check(rc, || "could not register the INFO section".into())?;
    }
    events::init(ctx)?;
    ctx.log_notice(&format!(
        "scalebloom: {} BF.* and CF.* commands {acl}; configs {config_names}",
        COMMANDS.len()
    ));
    Ok(())
}

/// The module's `INFO` section (`INFO bf`, and in `INFO everything`): what the crate's own
/// callback adds (a trace in crash reports), then `bf_version` (this build's), `bf_defrag_moves`, the filter allocations
/// active defragmentation moved, and the huge-page thread's `bf_huge_pages_waiting` (large bit
/// arrays not yet moved into huge pages: not yet in use, or queued) and
/// `bf_huge_pages_moved_bytes` (collapsed so far), `bf_huge_pages_refused_bytes` (ranges the
/// kernel would not collapse), and `bf_huge_pages_at_fault_bytes` (large arrays advised for
/// huge pages when allocated, `bf.huge-pages-at-fault yes`).
extern "C" fn info(ctx: *mut raw::RedisModuleInfoCtx, for_crash_report: c_int) {
    let _ = catch_unwind(AssertUnwindSafe(|| {
        redis_module::basic_info_command_handler(
            &redis_module::InfoContext::new(ctx),
            for_crash_report == 1,
        );
        raw::add_info_section(ctx, None);
        raw::add_info_field_str(ctx, "version", crate::VERSION);
        raw::add_info_field_unsigned_long_long(
            ctx,
            "defrag_moves",
            DEFRAG_MOVES.load(Ordering::Relaxed),
        );
        let (waiting, moved) = crate::filter::mem::huge_page_stats();
        raw::add_info_field_unsigned_long_long(ctx, "huge_pages_waiting", waiting);
        raw::add_info_field_unsigned_long_long(ctx, "huge_pages_moved_bytes", moved);
        let refused = crate::filter::mem::huge_page_refused_bytes();
        raw::add_info_field_unsigned_long_long(ctx, "huge_pages_refused_bytes", refused);
        let at_fault = crate::filter::mem::huge_pages_advised_at_fault_bytes();
        raw::add_info_field_unsigned_long_long(ctx, "huge_pages_at_fault_bytes", at_fault);
    }));
}

/// The module's `init`, called by `RedisModule_OnLoad` (`lib.rs`) after the native types.
pub fn init(ctx: &Context, args: &[RedisString]) -> Status {
    match setup(ctx, args) {
        Ok(()) => Status::Ok,
        Err(msg) => {
            ctx.log_warning(&format!("scalebloom: {}", msg.replace('%', "%%")));
            Status::Err
        }
    }
}
