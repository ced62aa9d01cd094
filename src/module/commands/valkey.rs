//! The `BF.*` commands on valkey-bloom's filters (type `bloomfltr`), and `BF.LOAD`, its AOF
//! rewrite's command. The `BF.*` handlers (`bloom.rs`) hand a key holding such a filter here;
//! answers and refusals follow valkey-bloom where only it has the case, RedisBloom where both
//! have one (docs/coming-from-valkey-bloom.md).

use super::{Key, notify};
use crate::filter::bloom::Chain;
use crate::filter::valkey::{Settings, SipSeed, ValkeyBloom, payload, sizing};
use crate::module::args::Args;
use crate::module::call::Call;
use crate::module::compat::{Compat, Release};
use crate::module::config;
use crate::module::creation;
use crate::module::errors;
use crate::module::limits::ServerGuard;
use crate::module::options::Creation;
use crate::module::replicate::replicate;
use crate::module::reply::Reply;
use crate::module::types::window::WindowValue;

/// `BF.LOAD key payload`: creates a valkey-bloom filter from the payload valkey-bloom's AOF
/// rewrite wrote for it. Refuses a key that holds a Bloom filter (`BUSYKEY`, as valkey-bloom
/// does), a key of any other type (`WRONGTYPE`, as valkey-bloom does) and any payload that
/// does not decode, with valkey-bloom's replies; the memory limits apply to a client, not to
/// the primary's stream or an AOF replay. Replicated as it came: a replica decodes the same
/// bytes into the same filter.
pub fn load(ctx: &Call, args: &Args) -> Reply {
    if let Some(text) = Compat::refusal("BF.LOAD", Release::V1_0) {
        return Reply::Error(text);
    }
    let key_name = args.key();
    let key = Key::writable(ctx, &key_name);
    if key.holds::<ValkeyBloom>() || key.holds::<Chain>() || key.holds::<WindowValue>() {
        return Reply::err(errors::VALKEY_KEY_EXISTS);
    }
    if key.holds_any() {
        return Reply::err(errors::WRONG_TYPE);
    }
    let guard = ServerGuard::for_command(ctx);
    let bloom = match payload::decode(args.bytes(2), &guard) {
        Ok(b) => b,
        Err(e) => return Reply::Error(errors::valkey_text(&e)),
    };
    if let Err(r) = key.set_value(bloom) {
        return r;
    }
    ctx.replicate_verbatim();
    notify(ctx, c"bf.load", &key_name);
    Reply::Ok
}

/// Adds the items from `args[first]` on to the valkey-bloom filter at `key`, in order,
/// stopping at the first refusal: the per-item answers and that refusal's text. Replicates
/// the command when every item went in, or a `BF.MADD` of those that did.
pub fn add_items(
    ctx: &Call,
    args: &Args,
    first: usize,
    key: &mut Key,
    event: &std::ffi::CStr,
) -> Result<(Vec<bool>, Option<String>), Reply> {
    let bloom = key.value_mut::<ValkeyBloom>()?.ok_or_else(|| Reply::err(errors::NOT_FOUND))?;
    let guard = ServerGuard::for_command(ctx);
    let mut results = Vec::with_capacity(args.len() - first);
    let mut error = None;
    for i in first..args.len() {
        match bloom.add(args.bytes(i), &guard) {
            Ok(new) => results.push(new),
            Err(e) => {
                error = Some(errors::valkey_text(&e));
                break;
            }
        }
    }
    if results.contains(&true) {
        if error.is_none() {
            ctx.replicate_verbatim();
        } else {
            let went_in = &args.items(first)[..results.len()];
            replicate!(ctx, c"BF.MADD", Arg(args.key_arg()), Args(went_in));
        }
        notify(ctx, event, &args.key());
    }
    Ok((results, error))
}

/// The read path of the `BF.*` commands that take a Bloom chain, a windowed filter or a
/// valkey-bloom filter: opens the key once and answers with the function of what it holds.
pub fn with_bloom(
    ctx: &Call,
    args: &Args,
    missing: impl FnOnce() -> Reply,
    chain: impl FnOnce(&Chain) -> Reply,
    window: impl FnOnce(&WindowValue) -> Reply,
    valkey: impl FnOnce(&ValkeyBloom) -> Reply,
) -> Reply {
    read_bloom(&Key::open(ctx, &args.key(), false), missing, chain, window, valkey)
}

/// [`with_bloom`] on a key already open.
pub fn read_bloom(
    key: &Key,
    missing: impl FnOnce() -> Reply,
    chain: impl FnOnce(&Chain) -> Reply,
    window: impl FnOnce(&WindowValue) -> Reply,
    valkey: impl FnOnce(&ValkeyBloom) -> Reply,
) -> Reply {
    match key.value::<Chain>() {
        Ok(None) => missing(),
        Ok(Some(value)) => chain(value),
        Err(r) => match (key.get::<WindowValue>(), key.get::<ValkeyBloom>()) {
            (Some(w), _) => window(w),
            (_, Some(v)) => valkey(v),
            _ => r,
        },
    }
}

/// `BF.INFO` of a valkey-bloom filter: valkey-bloom's fields, in its order (`Error rate`,
/// and for a scaling filter `Tightening ratio` and `Max scaled capacity` under this server's
/// per-filter memory limit, beside RedisBloom's).
/// Doubles go to RESP2 clients in their shortest form (`0.005`), as valkey-bloom sends them.
pub fn info_fields(b: &ValkeyBloom, resp3: bool) -> Vec<(&'static str, Reply)> {
    let s = b.settings();
    let double =
        |x: f64| if resp3 { Reply::Double(x) } else { Reply::Bulk(x.to_string().into_bytes()) };
    let int = |v: u64| Reply::Int(i64::try_from(v).unwrap_or(i64::MAX));
    let mut fields = vec![
        ("Capacity", int(b.capacity())),
        ("Size", int(b.size())),
        ("Number of filters", int(b.layers().len() as u64)),
        ("Number of items inserted", int(b.items())),
        ("Error rate", double(s.error)),
    ];
    if s.expansion == 0 {
        fields.push(("Expansion rate", Reply::Null));
        return fields;
    }
    fields.push(("Expansion rate", int(u64::from(s.expansion))));
    fields.push(("Tightening ratio", double(s.tightening)));
    let max = match b.max_scaled_capacity(config::max_filter_bytes()) {
        Some(Ok(max)) => int(max),
        Some(Err(e)) => Reply::Error(errors::valkey_text(&e)),
        None => Reply::Null,
    };
    fields.push(("Max scaled capacity", max));
    fields
}

/// The field of `BF.INFO key <field>` for a valkey-bloom filter: RedisBloom's five and
/// valkey-bloom's `ERROR`, `TIGHTENING` and `MAXSCALEDCAPACITY` (the last two on scaling
/// filters only).
pub fn info_field(ctx: &Call, args: &Args, b: &ValkeyBloom) -> Reply {
    const NAMES: [(&str, &str); 8] = [
        ("CAPACITY", "Capacity"),
        ("SIZE", "Size"),
        ("FILTERS", "Number of filters"),
        ("ITEMS", "Number of items inserted"),
        ("ERROR", "Error rate"),
        ("EXPANSION", "Expansion rate"),
        ("TIGHTENING", "Tightening ratio"),
        ("MAXSCALEDCAPACITY", "Max scaled capacity"),
    ];
    let fields = info_fields(b, ctx.resp3());
    if args.len() == 2 {
        return Reply::Map(fields);
    }
    let wanted = NAMES.iter().find(|(arg, _)| args.is(2, arg)).map(|(_, name)| *name);
    let Some(field) = wanted.and_then(|w| fields.into_iter().find(|(name, _)| *name == w)) else {
        return Reply::err(errors::INVALID_INFO);
    };
    if ctx.resp3() { Reply::Map(vec![field]) } else { Reply::Array(vec![field.1]) }
}

/// What a new valkey-bloom filter is made with: its settings and its first layer's capacity.
struct Plan {
    settings: Settings,
    capacity: u64,
}

/// The new filter `given` asks for at `key`, with `error` and `capacity` (given, or the
/// defaults): checks in valkey-bloom's order what only the options say (`NONSCALING` beside
/// `VALIDATESCALETO`, then, for a client, whether the filter can grow to `VALIDATESCALETO`
/// items within the per-filter limit). Without `SEED` the seed is derived from the server's
/// secret ([`SipSeed::derived`]), or is valkey-bloom's fixed seed when `bf.random-seeds` is
/// off; the command replicates with the seed chosen.
fn plan(
    ctx: &Call,
    key: &[u8],
    given: &Creation,
    error: f64,
    capacity: u64,
) -> Result<Plan, Reply> {
    if given.counting.is_some() || given.window.is_some() || given.layout.is_some() {
        return Err(Reply::err(errors::VALKEY_OTHER_KIND));
    }
    let settings = creation::for_command(ctx);
    let expansion = match (given.expansion, given.nonscaling) {
        (Some(x), true) if x != 0 => return Err(Reply::err(errors::NONSCALING_EXPANSION)),
        (_, true) => 0,
        (Some(x), false) => {
            u32::try_from(x).map_err(|_| Reply::err(errors::VALKEY_BAD_EXPANSION))?
        }
        (None, false) => u32::try_from(settings.expansion).unwrap_or(u32::MAX),
    };
    let tightening = given.tightening.unwrap_or_else(config::tightening_ratio);
    if let Some(target) = given.scale_to {
        if expansion == 0 {
            return Err(Reply::err(errors::VALKEY_NONSCALING_SCALE_TO));
        }
        if !ctx.trusted() {
            let limit = config::max_filter_bytes();
            sizing::max_scaled_capacity(
                capacity,
                error,
                Some(target),
                tightening,
                expansion,
                limit,
            )
            .map_err(|e| Reply::Error(errors::valkey_text(&e)))?;
        }
    }
    let seed = match given.seed {
        Some(bytes) => SipSeed::new(bytes),
        None if settings.random_seeds => SipSeed::derived(settings.secret, key),
        None => SipSeed::fixed(),
    };
    let settings =
        Settings { expansion, error, tightening, seed, is_seed_random: !seed.is_fixed() };
    Ok(Plan { settings, capacity })
}

/// The settings and first capacity of a new filter, replicated explicitly as valkey-bloom
/// replicates a creation: `BF.INSERT key CAPACITY c ERROR e TIGHTENING t SEED s EXPANSION x`
/// (`EXPANSION 0`: nonscaling), then `ITEMS` and the items that went in, if any. Doubles are
/// written in their shortest form that reads back as the same double.
fn replicate_creation(ctx: &Call, args: &Args, plan: &Plan, went_in: &[crate::module::args::Arg]) {
    let s = &plan.settings;
    let capacity = i64::try_from(plan.capacity).unwrap_or(i64::MAX);
    let (error, tightening) = (s.error.to_string(), s.tightening.to_string());
    let expansion = i64::from(s.expansion);
    if went_in.is_empty() {
        replicate!(
            ctx,
            c"BF.INSERT",
            Arg(args.key_arg()),
            Word(c"CAPACITY"),
            Int(capacity),
            Word(c"ERROR"),
            Bytes(error.as_bytes()),
            Word(c"TIGHTENING"),
            Bytes(tightening.as_bytes()),
            Word(c"SEED"),
            Bytes(s.seed.bytes()),
            Word(c"EXPANSION"),
            Int(expansion)
        );
    } else {
        replicate!(
            ctx,
            c"BF.INSERT",
            Arg(args.key_arg()),
            Word(c"CAPACITY"),
            Int(capacity),
            Word(c"ERROR"),
            Bytes(error.as_bytes()),
            Word(c"TIGHTENING"),
            Bytes(tightening.as_bytes()),
            Word(c"SEED"),
            Bytes(s.seed.bytes()),
            Word(c"EXPANSION"),
            Int(expansion),
            Word(c"ITEMS"),
            Args(went_in)
        );
    }
}

/// Whether the key holds a filter of another kind (a Bloom chain, a windowed filter), which
/// valkey-bloom's options do not apply to: the caller adds to it as it would without them.
fn holds_other_bloom(key: &Key) -> bool {
    key.holds::<Chain>() || key.holds::<WindowValue>()
}

/// `BF.INSERT` with valkey-bloom's options (`SEED`, `TIGHTENING`, `VALIDATESCALETO`): a
/// missing key gets a valkey-bloom filter; items go into a valkey-bloom filter at the key, the
/// new or an existing one. `None` when the key holds another kind of Bloom filter: the
/// options that make one do not apply, and the caller adds the items as it would without
/// them. As in valkey-bloom, `ITEMS` may be left out (the reply is an empty array), the
/// options are checked before the key, and the error rate is not capped.
pub fn insert(ctx: &Call, args: &Args, given: &Creation) -> Option<Reply> {
    let first = match given.items_at {
        Some(at) if at < args.len() => at,
        Some(_) => return Some(Reply::WrongArity),
        None => args.len(),
    };
    let (error, capacity) = {
        let settings = creation::for_command(ctx);
        (
            given.error.unwrap_or(settings.error_rate),
            given.capacity.unwrap_or(settings.initial_size),
        )
    };
    let plan = match plan(ctx, args.bytes(1), given, error, capacity) {
        Ok(p) => p,
        Err(r) => return Some(r),
    };
    let key_name = args.key();
    let mut key = Key::writable(ctx, &key_name);
    if holds_other_bloom(&key) {
        return None;
    }
    let reply = |r: Result<(Vec<bool>, Option<String>), Reply>| match r {
        Ok((results, error)) => Reply::Bools(results, error),
        Err(r) => r,
    };
    match key.value::<ValkeyBloom>() {
        Err(r) => return Some(r),
        Ok(Some(_)) => return Some(reply(add_items(ctx, args, first, &mut key, c"bf.insert"))),
        Ok(None) if given.nocreate => return Some(Reply::err(errors::NOT_FOUND)),
        Ok(None) => {}
    }
    let guard = ServerGuard::for_command(ctx);
    let mut bloom = match ValkeyBloom::new(plan.settings, plan.capacity, &guard) {
        Ok(b) => b,
        Err(e) => return Some(Reply::Error(errors::valkey_text(&e))),
    };
    let mut results = Vec::with_capacity(args.len() - first);
    let mut refusal = None;
    for i in first..args.len() {
        match bloom.add(args.bytes(i), &guard) {
            Ok(new) => results.push(new),
            Err(e) => {
                refusal = Some(errors::valkey_text(&e));
                break;
            }
        }
    }
    if let Err(r) = key.set_value(bloom) {
        return Some(r);
    }
    replicate_creation(ctx, args, &plan, &args.items(first)[..results.len()]);
    notify(ctx, c"bf.insert", &key_name);
    Some(Reply::Bools(results, refusal))
}

/// `BF.RESERVE key error capacity` with valkey-bloom's options: a new valkey-bloom filter
/// (the error rate not capped), `ERR item exists` for a key that holds any Bloom filter.
pub fn reserve(ctx: &Call, args: &Args, given: &Creation, error: f64, capacity: u64) -> Reply {
    let plan = match plan(ctx, args.bytes(1), given, error, capacity) {
        Ok(p) => p,
        Err(r) => return r,
    };
    let key_name = args.key();
    let key = Key::writable(ctx, &key_name);
    if holds_other_bloom(&key) {
        return Reply::err(errors::ITEM_EXISTS);
    }
    match key.value::<ValkeyBloom>() {
        Err(r) => return r,
        Ok(Some(_)) => return Reply::err(errors::ITEM_EXISTS),
        Ok(None) => {}
    }
    let guard = ServerGuard::for_command(ctx);
    let bloom = match ValkeyBloom::new(plan.settings, plan.capacity, &guard) {
        Ok(b) => b,
        Err(e) => return Reply::Error(errors::valkey_text(&e)),
    };
    if let Err(r) = key.set_value(bloom) {
        return r;
    }
    replicate_creation(ctx, args, &plan, &[]);
    notify(ctx, c"bf.reserve", &key_name);
    Reply::Ok
}
