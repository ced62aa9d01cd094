//! The `BF.*` commands on valkey-bloom's filters (type `bloomfltr`), and `BF.LOAD`, its AOF
//! rewrite's command. The `BF.*` handlers (`bloom.rs`) hand a key holding such a filter here;
//! answers and refusals follow valkey-bloom where only it has the case, RedisBloom where both
//! have one (README, "Coming from valkey-bloom").

use super::{Key, notify};
use crate::filter::bloom::Chain;
use crate::filter::valkey::{ValkeyBloom, payload};
use crate::module::args::Args;
use crate::module::call::Call;
use crate::module::config;
use crate::module::errors;
use crate::module::limits::ServerGuard;
use crate::module::replicate::replicate;
use crate::module::reply::Reply;
use crate::module::types::window::WindowValue;

/// `BF.LOAD key payload`: creates a valkey-bloom filter from the payload valkey-bloom's AOF
/// rewrite wrote for it. Refuses an existing key (`BUSYKEY`, as valkey-bloom does) and any
/// payload that does not decode, with valkey-bloom's replies; the memory limits apply to a
/// client, not to the primary's stream or an AOF replay. Replicated as it came: a replica
/// decodes the same bytes into the same filter.
pub fn load(ctx: &Call, args: &Args) -> Reply {
    let key_name = args.key();
    let key = Key::writable(ctx, &key_name);
    if !matches!(key.value::<ValkeyBloom>(), Ok(None)) {
        return Reply::err(errors::VALKEY_KEY_EXISTS);
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
