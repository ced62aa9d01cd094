//! The `BF.*` commands on windowed filters (`SBwindow-`, created by `BF.RESERVE … WINDOW …` or
//! `BF.INSERT … WINDOW …`): the write path and its replication, the internal `BF.WINDOWADD`,
//! and the read replies. `bloom.rs` and `dump.rs` dispatch here on the key's type.
//!
//! Replication: only the primary's clock moves a window. A creation replicates as
//! `BF.LOADCHUNK key 1 <header>` (the header carries the parameters, the seed and the creation
//! time), and every add as `BF.WINDOWADD key <ms> item…` with the time the primary applied it
//! at, so a replica and an AOF replay turn the ring exactly as the primary did, whatever their
//! own clocks say. Adds are always replicated: an add of a present item refreshes it (and a
//! count window counts it).

use std::ffi::CStr;

use super::{Key, core_err, notify};
use crate::filter::window::codec::dump_header;
use crate::filter::window::{WindowFilter, WindowKind, WindowParams};
use crate::module::args::{Args, parse_i64};
use crate::module::call::Call;
use crate::module::clock;
use crate::module::creation;
use crate::module::errors;
use crate::module::limits::ServerGuard;
use crate::module::replicate::replicate;
use crate::module::reply::Reply;
use crate::module::types::window::WindowValue;

/// Creates a windowed filter at the (empty) key: stores it and replicates its header.
pub fn create(
    ctx: &Call,
    args: &Args,
    key: &Key,
    params: WindowParams,
    seed: Option<u64>,
) -> Result<(), Reply> {
    let guard = ServerGuard::for_command(ctx);
    // A given seed is `LIKE`'s (the other filter's); otherwise the key's own.
    let seed = seed.unwrap_or_else(|| creation::for_command(ctx).seed(args.bytes(1)));
    let filter =
        WindowFilter::new(params, seed, clock::now_ms(), &guard).map_err(|e| core_err(&e))?;
    let header = dump_header(&filter);
    key.set_value(WindowValue { filter, awaiting_chunks: false })?;
    replicate!(ctx, c"BF.LOADCHUNK", Arg(args.key_arg()), Int(1), Bytes(&header));
    Ok(())
}

/// Adds `args[first_item..]` at `now` to the windowed filter at `key` (created first with
/// `create` when the key is empty). One answer per item: whether it was new.
pub fn add_items(
    ctx: &Call,
    args: &Args,
    first_item: usize,
    key: &mut Key,
    create: Option<(WindowParams, Option<u64>)>,
    event: &CStr,
) -> Result<Vec<bool>, Reply> {
    if key.value::<WindowValue>()?.is_none() {
        let (params, seed) = create.ok_or_else(|| Reply::err(errors::NOT_FOUND))?;
        self::create(ctx, args, key, params, seed)?;
    }
    let value = key.value_mut::<WindowValue>()?.ok_or_else(|| Reply::err(errors::INTERNAL))?;
    value.awaiting_chunks = false;
    let now = clock::now_ms();
    let results = value.filter.add_many((first_item..args.len()).map(|i| args.bytes(i)), now);
    // The time the adds were applied at (a clock past i64::MAX ms, 292 million years, is
    // clamped: BF.WINDOWADD takes at most that).
    let ms = i64::try_from(value.filter.last_ms()).unwrap_or(i64::MAX);
    replicate!(ctx, c"BF.WINDOWADD", Arg(args.key_arg()), Int(ms), Args(args.items(first_item)));
    notify(ctx, event, &args.key());
    Ok(results)
}

/// `BF.WINDOWADD key ms item [item ...]` (internal): the adds of a primary, at the time it ran
/// them. Only the replication link and AOF replay may run it.
pub fn windowadd(ctx: &Call, args: &Args) -> Reply {
    if !ctx.trusted() {
        return Reply::err(errors::WINDOWADD_INTERNAL);
    }
    let Some(ms) = parse_i64(args.bytes(2)).and_then(|v| u64::try_from(v).ok()) else {
        return Reply::err(errors::BAD_DATA);
    };
    let key_name = args.key();
    let mut key = Key::writable(ctx, &key_name);
    let value = match key.value_mut::<WindowValue>() {
        Err(r) => return r,
        Ok(None) => return Reply::err(errors::NOT_FOUND),
        Ok(Some(v)) => v,
    };
    value.awaiting_chunks = false;
    value.filter.add_many((3..args.len()).map(|i| args.bytes(i)), ms);
    ctx.replicate_verbatim();
    notify(ctx, c"bf.add", &key_name);
    Reply::Ok
}

/// `BF.INFO` fields of a windowed filter, in RedisBloom's shape: one "filter", its capacity
/// per window, its bytes, the items its window holds now, no expansion.
pub fn info_fields(value: &WindowValue) -> Vec<(&'static str, Reply)> {
    let f = &value.filter;
    vec![
        ("Capacity", int(f.params().capacity)),
        ("Size", int(f.memory_usage())),
        ("Number of filters", Reply::Int(1)),
        ("Number of items inserted", int(f.items(clock::now_ms()))),
        ("Expansion rate", Reply::Null),
    ]
}

/// `BF.CARD`: the items the window holds now.
pub fn card(value: &WindowValue) -> Reply {
    int(value.filter.items(clock::now_ms()))
}

/// `BF.STATS` of a windowed filter: the chain's fields that apply, then the window's.
pub fn stats(value: &WindowValue) -> Reply {
    let f = &value.filter;
    let p = f.params();
    let s = f.stats(clock::now_ms());
    let window = match p.kind {
        WindowKind::Time { window_ms } => format!("{window_ms}ms"),
        WindowKind::Items => "ITEMS".to_string(),
    };
    Reply::Map(vec![
        ("Target error rate", Reply::Double(s.target_error)),
        ("Estimated error rate", Reply::Double(s.estimated_error)),
        ("Items added", int(s.items)),
        ("Saturated", Reply::Int(i64::from(s.saturated))),
        ("Window", Reply::Bulk(window.into_bytes())),
        ("Window capacity", int(p.capacity)),
        ("Slack", int(p.slack())),
        ("Age of oldest generation", int(s.oldest_age)),
        ("Generation", int(if p.gen_ms > 0 { p.gen_ms } else { p.gen_items })),
        ("Slices", int(p.slices() as u64)),
        // Bits an insert sets: one per slice of k (APBF layouts), the probes in one block of the
        // newest generation (generations layout).
        ("Hashes", int(u64::from(if p.probes > 0 { p.probes } else { p.k }))),
    ])
}

fn int(v: u64) -> Reply {
    Reply::Int(i64::try_from(v).unwrap_or(i64::MAX))
}
