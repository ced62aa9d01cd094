//! CF.RESERVE, CF.ADD, CF.ADDNX, CF.INSERT, CF.INSERTNX, CF.EXISTS, CF.MEXISTS, CF.COUNT,
//! CF.DEL, CF.COMPACT, CF.INFO, CF.STATS, CF.DEBUG, CF.SCANDUMP, CF.LOADCHUNK: RedisBloom's
//! grammar and replies (RESP2 and RESP3) over the core in `crate::filter::cuckoo`, with
//! RedisBloom 8's error texts.
//!
//! # Replication
//! The core is deterministic (no random kick-outs), so a command that ran whole on the
//! primary gives the same slots on a replica. What a replica could work out differently is
//! replaced by what the primary did:
//! - a creating command (`CF.RESERVE`, or an insert on a missing key) replicates verbatim, as
//!   RedisBloom's do, preceded when due by `BF.REPLCONF` with the primary's creation settings,
//!   its `cf-*` defaults among them (`crate::module::creation`): a replica and AOF replay read
//!   the options a command leaves out from those, not from their own `cf-*` settings.
//!   (Replicating the filter's `CF.LOADCHUNK key 1 <header>` instead would cost a third of a
//!   `CF.RESERVE`'s instructions in `RM_Replicate`'s command lookup and argument strings.)
//! - an insert command in which an item was refused by a limit a replica does not apply
//!   (`bf.max-filter-bytes`, `maxmemory`) is replicated as `CF.INSERT key ITEMS <the items
//!   that went in>`, after the header of the filter if the command created it (the header
//!   keeps its `CAPACITY` and `FINGERPRINT`); items refused as full or present changed
//!   nothing and are left out.
//!
//! `cf-max-expansions` is read by replicas too: give replicas the same value as the primary.

use std::ffi::CStr;

use super::{Key, dump, notify, with_value};
use crate::filter::FilterError;
use crate::filter::cuckoo::params::MAX_CAPACITY_8X;
use crate::filter::cuckoo::{
    CuckooFilter, CuckooParams, FingerprintWidth, Header, Insert, InsertSink,
};
use crate::module::args::{Arg, Args, parse_i64};
use crate::module::call::Call;
use crate::module::config;
use crate::module::creation::{self, CfDefaults};
use crate::module::errors;
use crate::module::limits::ServerGuard;
use crate::module::options;
use crate::module::replicate::replicate;
use crate::module::reply::Reply;
use crate::module::types::cuckoo::CuckooValue;

/// Parses a RESERVE option value: `Couldn't parse NAME` if not an integer, the range error if
/// outside `lo..=hi`.
fn option_value(b: &[u8], name: &str, lo: i64, hi: i64, range: &str) -> Result<i64, Reply> {
    let v = parse_i64(b).ok_or_else(|| Reply::Error(errors::cf_cannot_parse(name)))?;
    if !(lo..=hi).contains(&v) {
        return Err(Reply::err(range));
    }
    Ok(v)
}

fn parse_fingerprint(b: &[u8]) -> Result<FingerprintWidth, Reply> {
    parse_i64(b)
        .and_then(|v| u64::try_from(v).ok())
        .and_then(FingerprintWidth::from_bits)
        .ok_or_else(|| Reply::err(errors::CF_FINGERPRINT_RANGE))
}

/// The parameters of a filter made from the `cf-*` defaults, with `capacity` (a `CAPACITY`
/// already checked against the bucket size, or `cf-initial-size`); the reply when there are
/// none, naming the settings where they are what does not fit (no option the user typed).
fn default_params(cf: &CfDefaults, capacity: u64) -> Result<CuckooParams, Reply> {
    CuckooParams::new(capacity, cf.bucket_size, cf.max_iterations, cf.expansion).map_err(
        |e| match e {
            FilterError::CapacityTooSmall => {
                Reply::Error(errors::cf_initial_size_too_small(capacity, cf.bucket_size))
            }
            e => Reply::Error(errors::cf_create(&e)),
        },
    )
}

/// The `cf-*` defaults a creating command uses: the server's own, or on a replica and in
/// replication or AOF replay the stream's (see `crate::module::creation`).
fn cf_defaults(ctx: &Call) -> CfDefaults {
    creation::cf_for_command(ctx)
}

/// `CF.RESERVE key capacity [BUCKETSIZE n] [MAXITERATIONS n] [EXPANSION n] [FINGERPRINT w]`.
/// As in RedisBloom, options are name/value pairs found by name, the first occurrence counts,
/// and unknown names are ignored; checks run in RedisBloom's order.
pub fn reserve(ctx: &Call, args: &Args) -> Reply {
    if args.len() % 2 == 0 {
        return Reply::WrongArity;
    }
    let cf = cf_defaults(ctx);
    let parsed = (|| {
        options::check_cuckoo_names((3..args.len()).step_by(2).map(|i| args.bytes(i)))?;
        let capacity =
            parse_i64(args.bytes(2)).ok_or_else(|| Reply::err(errors::INSERT_BAD_CAPACITY))?;
        let find = |name: &str| (3..args.len()).step_by(2).find(|&i| args.is(i, name));
        let mut max_iterations = i64::from(cf.max_iterations);
        if let Some(i) = find("MAXITERATIONS") {
            max_iterations = option_value(
                args.bytes(i + 1),
                "MAXITERATIONS",
                1,
                65535,
                errors::CF_MAX_ITERATIONS_RANGE,
            )?;
        }
        let mut bucket_size = i64::from(cf.bucket_size);
        if let Some(i) = find("BUCKETSIZE") {
            bucket_size = option_value(
                args.bytes(i + 1),
                "BUCKETSIZE",
                1,
                255,
                errors::CF_BUCKET_SIZE_RANGE,
            )?;
        }
        let mut expansion = i64::from(cf.expansion);
        if let Some(i) = find("EXPANSION") {
            expansion =
                option_value(args.bytes(i + 1), "EXPANSION", 0, 32768, errors::CF_EXPANSION_RANGE)?;
        }
        let width = match find("FINGERPRINT") {
            Some(i) => parse_fingerprint(args.bytes(i + 1))?,
            None => FingerprintWidth::W8,
        };
        if capacity < 2 * bucket_size || capacity > MAX_CAPACITY_8X as i64 {
            return Err(Reply::err(errors::CF_CAPACITY_RANGE));
        }
        let params = CuckooParams::new(
            capacity as u64,
            bucket_size as u16,
            max_iterations as u16,
            expansion as u16,
        )
        .map_err(|e| Reply::Error(errors::cf_create(&e)))?;
        Ok((params, width))
    })();
    let (params, width) = match parsed {
        Ok(p) => p,
        Err(r) => return r,
    };
    let key_name = args.key();
    let key = Key::writable(ctx, &key_name);
    match key.value::<CuckooValue>() {
        Err(r) => return r,
        Ok(Some(_)) => return Reply::err(errors::ITEM_EXISTS),
        Ok(None) => {}
    }
    let guard = ServerGuard::for_command(ctx);
    let filter = match CuckooFilter::new(&params, width, &guard) {
        Ok(f) => f,
        Err(e) => return Reply::Error(errors::cf_create(&e)),
    };
    if let Err(r) = key.set_value(CuckooValue::new(filter)) {
        return r;
    }
    creation::replicate_creating_command(ctx);
    notify(ctx, c"cf.reserve", &key_name);
    Reply::Ok
}

/// How an insert command makes a missing filter.
struct Create {
    /// The `cf-*` defaults it uses.
    cf: CfDefaults,
    capacity: u64,
    width: FingerprintWidth,
    nocreate: bool,
}

/// The outcomes of an insert command's items, as its reply needs them: one code per item
/// (`CF.INSERTNX`'s integers: 1 inserted, 0 present, -1 full; [`REFUSED`] for an item a limit
/// refused, whose error is in `errors`), given by the core's item loop directly. Only the
/// items not inserted are recorded one by one (an inserted item, the usual outcome, only
/// counts), so the loop's cost per inserted item is one increment.
struct Outcomes {
    /// Items given an outcome so far.
    len: usize,
    /// (item index, code) of each item not inserted, in order; every other item's code is 1.
    others: Vec<(usize, i64)>,
    /// (item index, error) of each item a limit refused, in order.
    errors: Vec<(usize, FilterError)>,
}

/// The code of an item refused with an error (its reply is the error).
const REFUSED: i64 = i64::MIN;

impl Outcomes {
    fn new() -> Self {
        Self { len: 0, others: Vec::new(), errors: Vec::new() }
    }

    /// Items inserted.
    fn inserted(&self) -> usize {
        self.len - self.others.len()
    }

    /// Every item's code, in order.
    fn codes(&self) -> Vec<i64> {
        let mut codes = vec![1; self.len];
        for &(i, code) in &self.others {
            // Every recorded index is below `len` (it was `len` when recorded).
            if let Some(c) = codes.get_mut(i) {
                *c = code;
            }
        }
        codes
    }
}

impl InsertSink for Outcomes {
    #[inline(always)]
    fn push(&mut self, outcome: Result<Insert, FilterError>) {
        let code = match outcome {
            Ok(Insert::Inserted) => None,
            Ok(Insert::Exists) => Some(0),
            Ok(Insert::Full) => Some(-1),
            Err(e) => {
                self.errors.push((self.len, e));
                Some(REFUSED)
            }
        };
        if let Some(code) = code {
            self.others.push((self.len, code));
        }
        self.len += 1;
    }

    #[inline(always)]
    fn inserted(&mut self, n: usize) {
        self.len += n;
    }
}

/// Shared body of ADD, ADDNX, INSERT and INSERTNX on `key` (argv[1], open for writing):
/// creates the filter if needed, inserts the items in order, replicates what happened (see the
/// module header). `Err`: the reply of the whole command.
fn insert_items(
    ctx: &Call,
    args: &Args,
    key: &mut Key,
    first_item: usize,
    nx: bool,
    create: Create,
    event: &CStr,
) -> Result<Outcomes, Reply> {
    let key_name = args.key();
    let guard = ServerGuard::for_command(ctx);
    let existing = key.value_mut::<CuckooValue>()?;
    let mut created: Option<CuckooValue> = None;
    let mut header: Option<Header> = None;
    let value = match existing {
        Some(v) => v,
        None if create.nocreate => return Err(Reply::err(errors::NOT_FOUND)),
        None => {
            let params = default_params(&create.cf, create.capacity)?;
            let filter = CuckooFilter::new(&params, create.width, &guard)
                .map_err(|e| Reply::Error(errors::cf_create(&e)))?;
            // The empty filter's header, before any item goes in: what replicas create if a
            // limit refuses an item (the command is not replicated verbatim then).
            header = Some(filter.header());
            created.insert(CuckooValue::new(filter))
        }
    };
    let items = args.items(first_item);
    let max_filters = config::cf_max_filters();
    let mut out = Outcomes::new();
    let refused = if items.len() == 1 {
        value.filter.add(items[0].as_ref(), nx, max_filters, &guard).map(|r| out.push(Ok(r)))
    } else {
        value.filter.insert_many(items, nx, max_filters, &guard, &mut out)
    };
    let inserted = out.inserted();
    if inserted > 0 {
        value.in_use();
    }
    if let Some(v) = created {
        key.set_value(v)?;
    }
    let limited = !out.errors.is_empty();
    if header.is_some() && !limited {
        // The command replays the same on a replica: it creates the filter from the same
        // options and creation settings, and each item has the outcome it had here.
        creation::replicate_creating_command(ctx);
    } else if let Some(header) = &header {
        let header = header.encode();
        replicate!(ctx, c"CF.LOADCHUNK", Arg(args.key_arg()), Int(1), Bytes(&header));
    }
    if inserted > 0 && (header.is_none() || limited) {
        if !limited {
            ctx.replicate_verbatim();
        } else {
            let went_in: Vec<Arg> =
                items.iter().zip(out.codes()).filter(|&(_, c)| c == 1).map(|(a, _)| *a).collect();
            replicate!(ctx, c"CF.INSERT", Arg(args.key_arg()), Word(c"ITEMS"), Args(&went_in));
        }
    }
    if inserted > 0 || header.is_some() {
        notify(ctx, event, &key_name);
    }
    match refused {
        Err(e) => Err(Reply::Error(errors::cuckoo_text(&e))),
        Ok(()) => Ok(out),
    }
}

/// `CF.ADD key item` / `CF.ADDNX key item`. Into an existing filter directly (no outcome
/// vector: the command's hot path); a missing key goes through [`insert_items`] (the key
/// opened once), which creates the filter.
fn add_one(ctx: &Call, args: &Args, nx: bool) -> Reply {
    let event = if nx { c"cf.addnx" } else { c"cf.add" };
    let key_name = args.key();
    let mut key = Key::writable(ctx, &key_name);
    match key.value_mut::<CuckooValue>() {
        Err(r) => return r,
        Ok(None) => {}
        Ok(Some(value)) => {
            let guard = ServerGuard::for_command(ctx);
            // What insert_items does for one item: an error or `Full` changed nothing and is
            // not replicated; an insert is replicated verbatim (no limit refused an item).
            return match value.filter.add(args.bytes(2), nx, config::cf_max_filters(), &guard) {
                Ok(Insert::Inserted) => {
                    value.in_use();
                    ctx.replicate_verbatim();
                    notify(ctx, event, &key_name);
                    Reply::Bool(true)
                }
                Ok(Insert::Exists) => Reply::Bool(false),
                Ok(Insert::Full) => Reply::err(errors::CF_FULL),
                Err(e) => Reply::Error(errors::cuckoo_text(&e)),
            };
        }
    }
    // A missing key: the same open key creates it, as `insert_items` would for one item (no
    // limit refuses a single item's outcome: an error is the whole reply). The filter is
    // stored whatever the outcome, and the command replicated verbatim: a replica makes the
    // same filter with the same outcome.
    let cf = cf_defaults(ctx);
    let guard = ServerGuard::for_command(ctx);
    let params = match default_params(&cf, cf.initial_size) {
        Ok(p) => p,
        Err(r) => return r,
    };
    let mut value = match CuckooFilter::new(&params, FingerprintWidth::W8, &guard) {
        Ok(f) => Box::new(CuckooValue::new(f)),
        Err(e) => return Reply::Error(errors::cf_create(&e)),
    };
    let outcome = value.filter.add(args.bytes(2), nx, config::cf_max_filters(), &guard);
    if let Ok(Insert::Inserted) = outcome {
        value.in_use();
    }
    if let Err(r) = key.set_boxed(value) {
        return r;
    }
    creation::replicate_creating_command(ctx);
    notify(ctx, event, &key_name);
    match outcome {
        Ok(Insert::Inserted) => Reply::Bool(true),
        Ok(Insert::Exists) => Reply::Bool(false),
        Ok(Insert::Full) => Reply::err(errors::CF_FULL),
        Err(e) => Reply::Error(errors::cuckoo_text(&e)),
    }
}

/// `CF.ADD key item`: 1 (true), or `Filter is full`.
pub fn add(ctx: &Call, args: &Args) -> Reply {
    add_one(ctx, args, false)
}

/// `CF.ADDNX key item`: 1 (true) if added, 0 (false) if present.
pub fn addnx(ctx: &Call, args: &Args) -> Reply {
    add_one(ctx, args, true)
}

/// `CF.INSERT` / `CF.INSERTNX key [CAPACITY n] [NOCREATE] [FINGERPRINT w] ITEMS item…`.
fn insert_common(ctx: &Call, args: &Args, nx: bool) -> Reply {
    let cf = cf_defaults(ctx);
    let mut create =
        Create { cf, capacity: cf.initial_size, width: FingerprintWidth::W8, nocreate: false };
    let mut i = 2;
    let mut given: Vec<&[u8]> = Vec::new();
    let first_item = loop {
        if i >= args.len() {
            return Reply::WrongArity;
        }
        given.push(args.bytes(i));
        if let Err(r) = options::check_cuckoo_names(given.iter().copied()) {
            return r;
        }
        if args.is(i, "ITEMS") {
            break i + 1;
        } else if args.is(i, "NOCREATE") {
            create.nocreate = true;
            i += 1;
        } else if args.is(i, "CAPACITY") || args.is(i, "FINGERPRINT") {
            if i + 1 >= args.len() {
                return Reply::WrongArity;
            }
            let value = args.bytes(i + 1);
            if args.is(i, "FINGERPRINT") {
                match parse_fingerprint(value) {
                    Ok(w) => create.width = w,
                    Err(r) => return r,
                }
            } else {
                let Some(c) = parse_i64(value) else {
                    return Reply::err(errors::INSERT_BAD_CAPACITY);
                };
                if c < 2 * i64::from(cf.bucket_size) || c > MAX_CAPACITY_8X as i64 {
                    return Reply::err(errors::CF_INSERT_CAPACITY_RANGE);
                }
                create.capacity = c as u64;
            }
            i += 2;
        } else {
            return Reply::err(errors::UNKNOWN_ARGUMENT);
        }
    };
    if first_item >= args.len() {
        return Reply::WrongArity;
    }
    let event = if nx { c"cf.insertnx" } else { c"cf.insert" };
    let key_name = args.key();
    let mut key = Key::writable(ctx, &key_name);
    let out = match insert_items(ctx, args, &mut key, first_item, nx, create, event) {
        Ok(out) => out,
        Err(r) => return r,
    };
    // RedisBloom: INSERT answers booleans in RESP3; INSERTNX integers 1 / 0 / -1 always.
    let booleans = ctx.resp3() && !nx;
    // The usual case, no item refused by a limit: one flat array, no `Reply` per item. (An
    // INSERT has no item already present: its codes are 1 or -1.)
    if out.errors.is_empty() {
        return Reply::Ones { len: out.len, except: out.others, bools: booleans };
    }
    let codes = out.codes();
    let mut refusals = out.errors.into_iter();
    let replies = codes
        .into_iter()
        .map(|c| match c {
            1 if booleans => Reply::Bool(true),
            -1 if booleans => Reply::Bool(false),
            REFUSED => match refusals.next() {
                Some((_, e)) => Reply::Error(errors::cuckoo_text(&e)),
                None => Reply::err(errors::INTERNAL),
            },
            c => Reply::Int(c),
        })
        .collect();
    Reply::Array(replies)
}

/// `CF.INSERT`.
pub fn insert(ctx: &Call, args: &Args) -> Reply {
    insert_common(ctx, args, false)
}

/// `CF.INSERTNX`.
pub fn insertnx(ctx: &Call, args: &Args) -> Reply {
    insert_common(ctx, args, true)
}

/// `CF.EXISTS key item`: a missing key answers false.
pub fn exists(ctx: &Call, args: &Args) -> Reply {
    with_value(
        ctx,
        args,
        || Reply::Bool(false),
        |v: &CuckooValue| Reply::Bool(v.filter.contains(args.bytes(2))),
    )
}

/// `CF.MEXISTS key item…`.
pub fn mexists(ctx: &Call, args: &Args) -> Reply {
    let items = args.items(2);
    with_value(
        ctx,
        args,
        || Reply::Bools(vec![false; items.len()], None),
        |v: &CuckooValue| {
            let mut out = Vec::with_capacity(items.len());
            v.filter.contains_many(items, &mut out);
            Reply::Bools(out, None)
        },
    )
}

/// `CF.COUNT key item`: an integer in RESP2 and RESP3; 0 for a missing key.
pub fn count(ctx: &Call, args: &Args) -> Reply {
    with_value(
        ctx,
        args,
        || Reply::Int(0),
        |v: &CuckooValue| {
            Reply::Int(i64::try_from(v.filter.count(args.bytes(2))).unwrap_or(i64::MAX))
        },
    )
}

/// `CF.DEL key item`: whether a copy was removed; `Not found` for a missing key.
pub fn del(ctx: &Call, args: &Args) -> Reply {
    let key_name = args.key();
    let mut key = Key::writable(ctx, &key_name);
    let value = match key.value_mut::<CuckooValue>() {
        Err(r) => return r,
        Ok(None) => return Reply::err(errors::CF_DEL_NOT_FOUND),
        Ok(Some(v)) => v,
    };
    let deleted = value.filter.delete(args.bytes(2));
    if deleted {
        value.in_use();
        ctx.replicate_verbatim();
        notify(ctx, c"cf.del", &key_name);
    }
    Reply::Bool(deleted)
}

/// `CF.COMPACT key`: moves fingerprints to older sub-filters, freeing emptied newest ones.
pub fn compact(ctx: &Call, args: &Args) -> Reply {
    let key_name = args.key();
    let mut key = Key::writable(ctx, &key_name);
    let value = match key.value_mut::<CuckooValue>() {
        Err(r) => return r,
        Ok(None) => return Reply::err(errors::CF_COMPACT_NOT_FOUND),
        Ok(Some(v)) => v,
    };
    value.filter.compact(true);
    value.in_use();
    ctx.replicate_verbatim();
    notify(ctx, c"cf.compact", &key_name);
    Reply::Ok
}

/// `CF.INFO key`.
pub fn info(ctx: &Call, args: &Args) -> Reply {
    with_value(
        ctx,
        args,
        || Reply::err(errors::NOT_FOUND),
        |v: &CuckooValue| {
            let i = v.filter.info();
            let n = |x: u64| Reply::Int(i64::try_from(x).unwrap_or(i64::MAX));
            let mut fields = vec![
                ("Size", n(i.size)),
                ("Number of buckets", n(i.buckets)),
                ("Number of filters", n(i.filters)),
                ("Number of items inserted", n(i.items)),
                ("Number of items deleted", n(i.deletes)),
                ("Bucket size", n(i.bucket_size)),
                ("Expansion rate", n(i.expansion)),
                ("Max iterations", n(i.max_iterations)),
            ];
            if i.fingerprint_bits != 8 {
                fields.push(("Fingerprint bits", n(u64::from(i.fingerprint_bits))));
            }
            Reply::Map(fields)
        },
    )
}

/// `CF.DEBUG key`.
pub fn debug(ctx: &Call, args: &Args) -> Reply {
    with_value(
        ctx,
        args,
        || Reply::err(errors::NOT_FOUND),
        |v: &CuckooValue| Reply::Bulk(v.filter.debug_string().into_bytes()),
    )
}

/// `CF.STATS key` (scalebloom's own: RedisBloom has none), in `BF.STATS`'s shape: `Capacity`, `Items`, `Load factor`, `Load factor of newest filter`,
/// `Number of filters`, `Max filters`, `Saturated`, in that order (clients parse them). The
/// saturation checks are an insert's: `cf-max-expansions`, and whether the next sub-filter
/// passes `bf.max-filter-bytes` and `maxmemory` for a client's command (see
/// `CuckooFilter::stats`).
pub fn stats(ctx: &Call, args: &Args) -> Reply {
    with_value(
        ctx,
        args,
        || Reply::err(errors::NOT_FOUND),
        |v: &CuckooValue| {
            let guard = ServerGuard::for_command(ctx);
            let s = v.filter.stats(config::cf_max_filters(), &guard);
            let int = |x: u64| Reply::Int(i64::try_from(x).unwrap_or(i64::MAX));
            Reply::Map(vec![
                ("Capacity", int(s.capacity)),
                ("Items", int(s.items)),
                ("Load factor", Reply::Double(s.load)),
                ("Load factor of newest filter", Reply::Double(s.newest_load)),
                ("Number of filters", int(s.filters)),
                ("Max filters", int(s.max_filters)),
                ("Saturated", Reply::Int(i64::from(s.saturated))),
            ])
        },
    )
}

/// `CF.SCANDUMP key iterator` → `[next, data]`; `[0, nil]` at the end (and at once for a
/// filter with no items, as RedisBloom). The iterator is checked before the key.
pub fn scandump(ctx: &Call, args: &Args) -> Reply {
    dump::scan::<CuckooValue, CuckooValue>(ctx, args)
}

/// `CF.LOADCHUNK key iterator data`: iterator 1 creates the filter a header describes (on a
/// missing key); later iterators write a chunk. Every chunk is replicated (RedisBloom #1014
/// lost them on failover).
pub fn loadchunk(ctx: &Call, args: &Args) -> Reply {
    dump::loadchunk::<CuckooValue>(ctx, args)
}
