//! BF.RESERVE, BF.ADD, BF.MADD, BF.INSERT, BF.EXISTS, BF.MEXISTS, BF.INFO, BF.CARD, BF.DEBUG,
//! BF.STATS, BF.DEL, BF.MDEL.

use std::ffi::CStr;

use redis_module::RedisString;

use super::merge::{self, Like};
use super::valkey::{self as vk, with_bloom};
use super::{Key, core_err, dump, notify, window, with_either, with_value};
use crate::filter::bloom::codec;
use crate::filter::bloom::params::Layout;
use crate::filter::bloom::{Chain, ChainParams};
use crate::filter::hash::HashScheme;
use crate::filter::valkey::ValkeyBloom;
use crate::filter::window::WindowParams;
use crate::filter::window::codec::is_window_header;
use crate::module::args::Args;
use crate::module::call::Call;
use crate::module::clock;
use crate::module::creation::{self, Settings};
use crate::module::errors;
use crate::module::limits::ServerGuard;
use crate::module::options::{self, Creation};
use crate::module::replicate::replicate;
use crate::module::reply::Reply;
use crate::module::types::bloom::BLOOM_CHUNKS;
use crate::module::types::window::WindowValue;

/// Builds a new chain at `key` for `params` with `settings` (scheme, seed, default layout)
/// under the server's allocation policy: a counting chain with counters of `counting` bits
/// when given (native scheme only), a blocked chain when `layout` says so or, not given, the
/// `bf-layout` default does (native scheme, not counting). Counting and `LAYOUT BLOCKED`
/// together are refused, never one of them dropped.
fn new_chain(
    settings: &Settings,
    key: &[u8],
    params: ChainParams,
    counting: Option<u8>,
    layout: Option<Layout>,
    guard: &ServerGuard,
) -> Result<Chain, Reply> {
    let seed = settings.seed(key);
    let blocked = match layout {
        Some(layout) => layout == Layout::Blocked,
        // The default applies to plain filters in scalebloom's scheme: a counting filter has
        // no blocked form, and bf.redisbloom-scheme asks for RedisBloom's layout.
        None => settings.blocked_layout && counting.is_none() && !settings.redisbloom_scheme,
    };
    let made = match counting {
        Some(_) if blocked => return Err(Reply::err(errors::COUNTING_BLOCKED)),
        Some(_) if settings.redisbloom_scheme => {
            return Err(Reply::err(errors::COUNTING_REDISBLOOM_SCHEME));
        }
        Some(width) => Chain::new_standard(params, settings.standard_scheme(), seed, width, guard),
        None if blocked && settings.redisbloom_scheme => {
            return Err(Reply::err(errors::BLOCKED_REDISBLOOM_SCHEME));
        }
        None if blocked => Chain::new_blocked(params, seed, guard),
        None => Chain::new(params, settings.scheme(), seed, guard),
    };
    made.map_err(|e| core_err(&e))
}

/// `BF.RESERVE key error_rate capacity [EXPANSION n] [NONSCALING] [COUNTING 4|8]
/// [LAYOUT STANDARD|BLOCKED] [WINDOW w] [LIKE otherkey]`. With `LIKE`, the filter copies
/// `otherkey`'s shape, kind and seed: `error_rate` and `capacity` are checked as always but
/// not used, and no other option may be given.
pub fn reserve(ctx: &Call, args: &Args) -> Reply {
    let grammar = &options::RESERVE;
    let mut like_at = None;
    let parsed = grammar.error(args.bytes(2)).and_then(|error| {
        let capacity = grammar.capacity(args.bytes(3))?;
        let given = grammar.options(args, 4)?;
        if given.like_with_options() {
            return Err(Reply::err(errors::LIKE_WITH_OPTIONS));
        }
        like_at = given.like_at;
        if given.valkey() {
            // A valkey-bloom filter: its whole reply, success or refusal.
            return Err(vk::reserve(ctx, args, &given, error, capacity));
        }
        // RESERVE's own default expansion is RedisBloom's 2, not the auto-create setting.
        let defaults = ChainParams { error: options::capped_error(error), capacity, expansion: 2 };
        let window = match given.window {
            Some(kind) => Some(grammar.window_params(&given, kind, defaults)?),
            None => None,
        };
        let params = if window.is_some() { defaults } else { grammar.params(&given, defaults)? };
        Ok((params, given.counting, given.layout, window))
    });
    let (params, counting, layout, window) = match parsed {
        Ok(p) => p,
        Err(r) => return r,
    };
    let key_name = args.key();
    let mut key = Key::writable(ctx, &key_name);
    if key.holds::<WindowValue>() || key.holds::<ValkeyBloom>() {
        return Reply::err(errors::ITEM_EXISTS);
    }
    match key.value_mut::<Chain>() {
        Err(r) => return r,
        Ok(Some(_)) => return Reply::err(errors::ITEM_EXISTS),
        Ok(None) => {}
    }
    let (like_chain, window) = match like_at.map(|at| merge::like(ctx, args, at)) {
        None => (None, window.map(|w| (w, None))),
        Some(Err(r)) => return r,
        Some(Ok(Like::Chain(chain))) => (Some(chain), None),
        Some(Ok(Like::Window(params, seed))) => (None, Some((params, Some(seed)))),
    };
    if let Some((window, seed)) = window {
        if let Err(r) = window::create(ctx, args, &key, window, seed) {
            return r;
        }
        notify(ctx, c"bf.reserve", &key_name);
        return Reply::Ok;
    }
    let guard = ServerGuard::for_command(ctx);
    let settings = creation::for_command(ctx);
    let made = match like_chain {
        Some(chain) => Ok(chain),
        None => new_chain(&settings, args.bytes(1), params, counting, layout, &guard),
    };
    let chain = match made {
        Ok(c) => c,
        Err(r) => return r,
    };
    if let Err(r) = key.set_value(chain) {
        return r;
    }
    creation::replicate_creating_command(ctx);
    notify(ctx, c"bf.reserve", &key_name);
    Reply::Ok
}

/// How an add-family command was asked to create a missing filter.
struct Create {
    /// The new filter's parameters and the settings they were worked out with (BF.INSERT);
    /// `None`: the settings' defaults (BF.ADD, BF.MADD).
    params: Option<(ChainParams, Settings)>,
    nocreate: bool,
    /// `COUNTING w` (BF.INSERT).
    counting: Option<u8>,
    /// `LAYOUT …` (BF.INSERT); `None`: the settings' default.
    layout: Option<Layout>,
    /// `WINDOW …` (BF.INSERT): a missing key gets a windowed filter with these parameters
    /// (and, from `LIKE` of a windowed filter, this seed).
    window: Option<(WindowParams, Option<u64>)>,
    /// `LIKE otherkey` (BF.INSERT) of a Bloom chain: a missing key gets an empty chain of its
    /// shape, kind and seed.
    like: Option<Chain>,
}

impl Create {
    /// BF.ADD's and BF.MADD's: a missing filter is made with the settings' defaults.
    fn defaults() -> Self {
        Create {
            params: None,
            nocreate: false,
            counting: None,
            layout: None,
            window: None,
            like: None,
        }
    }
}

/// The per-item answers of an add-family command: one for BF.ADD (no allocation), or one per
/// item for BF.MADD / BF.INSERT.
enum Answers {
    One(Option<bool>),
    Many(Vec<bool>),
}

impl Answers {
    /// How many items went in (or were found present).
    fn len(&self) -> usize {
        match self {
            Answers::One(a) => usize::from(a.is_some()),
            Answers::Many(v) => v.len(),
        }
    }

    /// Whether any item was new.
    fn any_new(&self) -> bool {
        match self {
            Answers::One(a) => *a == Some(true),
            Answers::Many(v) => v.contains(&true),
        }
    }
}

/// Shared body of ADD, MADD and INSERT: adds the items from `args[first_item]` on in order,
/// stopping at the first refusal (which becomes the last element), and replicates exactly what
/// happened. `Err` is a reply for the whole command (wrong type, missing key, no filter).
fn add_items(
    ctx: &Call,
    args: &Args,
    first_item: usize,
    create: Create,
    event: &CStr,
) -> Result<(Answers, Option<String>), Reply> {
    let key_name = args.key();
    add_items_at(ctx, args, &key_name, Key::writable(ctx, &key_name), first_item, create, event)
}

/// [`add_items`] on `key`, the key `key_name` already open for writing.
fn add_items_at(
    ctx: &Call,
    args: &Args,
    key_name: &RedisString,
    mut key: Key,
    first_item: usize,
    create: Create,
    event: &CStr,
) -> Result<(Answers, Option<String>), Reply> {
    if key.holds::<ValkeyBloom>() {
        let (results, error) = vk::add_items(ctx, args, first_item, &mut key, event)?;
        let one = args.len() - first_item == 1;
        let answers =
            if one { Answers::One(results.first().copied()) } else { Answers::Many(results) };
        return Ok((answers, error));
    }
    let windowed = key.holds::<WindowValue>()
        || (create.window.is_some() && !create.nocreate && !key.holds::<Chain>());
    if windowed {
        let results = window::add_items(ctx, args, first_item, &mut key, create.window, event)?;
        let answers = if args.len() - first_item == 1 {
            Answers::One(results.first().copied())
        } else {
            Answers::Many(results)
        };
        return Ok((answers, None));
    }
    let existing = key.value_mut::<Chain>()?;
    let guard = ServerGuard::for_command(ctx);
    let mut created: Option<Chain> = None;
    let chain: &mut Chain = match existing {
        Some(c) => c,
        None if create.nocreate => return Err(Reply::err(errors::NOT_FOUND)),
        None => match create.like {
            Some(chain) => created.insert(chain),
            None => {
                let (params, settings) = match create.params {
                    Some(given) => given,
                    None => {
                        let settings = creation::for_command(ctx);
                        (settings.defaults().map_err(|e| core_err(&e))?, settings)
                    }
                };
                let (counting, layout) = (create.counting, create.layout);
                let made = new_chain(&settings, args.bytes(1), params, counting, layout, &guard)?;
                created.insert(made)
            }
        },
    };
    let wanted = args.len() - first_item;
    let (answers, error) = if wanted == 1 {
        // BF.ADD (and one-item MADD/INSERT): straight to the core, no batch machinery.
        match chain.add(args.bytes(first_item), &guard) {
            Ok(new) => (Answers::One(Some(new)), None),
            Err(e) => (Answers::One(None), Some(e)),
        }
    } else {
        let mut results = Vec::with_capacity(wanted);
        let error = chain.add_many(args.items(first_item), &guard, &mut results).err();
        (Answers::Many(results), error)
    };
    let processed = answers.len();
    let changed = adds_changed(chain, answers.any_new(), processed);
    let all_done = error.is_none();
    let was_created = created.is_some();
    // Stopped early after creating: a replica, which does not apply this server's memory
    // limits, must not run the whole command. It gets the filter as created (its header, with
    // the seed) and then only the items that went in.
    let partial_creation = match &created {
        Some(chain) if !all_done => Some(codec::creation_header(chain)),
        _ => None,
    };
    if let Some(chain) = created {
        key.set_value(chain)?;
    }
    if let Some(header) = partial_creation {
        replicate!(ctx, c"BF.LOADCHUNK", Arg(args.key_arg()), Int(1), Bytes(&header));
        if changed {
            let went_in = &args.items(first_item)[..processed];
            replicate!(ctx, c"BF.MADD", Arg(args.key_arg()), Args(went_in));
        }
    } else if was_created {
        creation::replicate_creating_command(ctx);
    } else if changed && all_done {
        ctx.replicate_verbatim();
    } else if changed {
        // Stopped early: replicate only the items that went in, so a replica ends with the
        // same bits.
        let went_in = &args.items(first_item)[..processed];
        replicate!(ctx, c"BF.MADD", Arg(args.key_arg()), Args(went_in));
    }
    if changed || was_created {
        notify(ctx, event, key_name);
    }
    Ok((answers, error.map(|e| errors::text(&e))))
}

/// Whether adding `processed` items (`any_new`: some of them new) changed `chain`: a counting
/// filter counts every add, present items' too, so any item that went in changed it.
fn adds_changed(chain: &Chain, any_new: bool, processed: usize) -> bool {
    any_new || (chain.counter_width() != 0 && processed > 0)
}

/// The reply of MADD / INSERT: one boolean per item, then the error that stopped them, if any.
fn many_reply(result: Result<(Answers, Option<String>), Reply>) -> Reply {
    match result {
        Ok((Answers::Many(values), error)) => Reply::Bools(values, error),
        Ok((Answers::One(value), error)) => Reply::Bools(value.into_iter().collect(), error),
        Err(r) => r,
    }
}

/// `BF.ADD key item`
pub fn add(ctx: &Call, args: &Args) -> Reply {
    let key_name = args.key();
    let mut key = Key::writable(ctx, &key_name);
    // The usual case, a filter that exists: the item straight to the core, then what
    // `add_items` does for one item that went in (or, refused, nothing).
    if let Some(chain) = key.get_mut::<Chain>() {
        let guard = ServerGuard::for_command(ctx);
        return match chain.add(args.bytes(2), &guard) {
            Ok(new) => {
                if adds_changed(chain, new, 1) {
                    ctx.replicate_verbatim();
                    notify(ctx, c"bf.add", &key_name);
                }
                Reply::Bool(new)
            }
            Err(e) => core_err(&e),
        };
    }
    let create = Create::defaults();
    match add_items_at(ctx, args, &key_name, key, 2, create, c"bf.add") {
        Ok((_, Some(error))) => Reply::Error(error),
        Ok((Answers::One(Some(new)), None)) => Reply::Bool(new),
        Ok(_) => Reply::err(errors::INTERNAL),
        Err(r) => r,
    }
}

/// `BF.MADD key item [item ...]`
pub fn madd(ctx: &Call, args: &Args) -> Reply {
    let create = Create::defaults();
    many_reply(add_items(ctx, args, 2, create, c"bf.madd"))
}

/// `BF.INSERT key [CAPACITY n] [ERROR r] [EXPANSION n] [NOCREATE] [NONSCALING] [COUNTING 4|8]
/// [LAYOUT STANDARD|BLOCKED] ITEMS item ...`
pub fn insert(ctx: &Call, args: &Args) -> Reply {
    let grammar = &options::INSERT;
    let given = match grammar.options(args, 2) {
        Ok(given) => given,
        Err(r) => return r,
    };
    if given.valkey() {
        if let Some(reply) = vk::insert(ctx, args, &given) {
            return reply;
        }
    }
    let parsed = Ok(given).and_then(|given: Creation| {
        let first_item = given.items_at.filter(|&at| at < args.len()).ok_or(Reply::WrongArity)?;
        if given.like_with_options() {
            return Err(Reply::err(errors::LIKE_WITH_OPTIONS));
        }
        let settings = creation::for_command(ctx);
        let defaults = settings.defaults().map_err(|e| core_err(&e))?;
        let mut window = match given.window {
            Some(kind) => Some((grammar.window_params(&given, kind, defaults)?, None)),
            None => None,
        };
        let params = if window.is_some() { defaults } else { grammar.params(&given, defaults)? };
        // LIKE is read only when the filter is to be made: an existing key takes the items.
        let mut like = None;
        if let Some(at) = given.like_at {
            if !given.nocreate && !Key::open(ctx, &args.key(), false).holds_any() {
                match merge::like(ctx, args, at)? {
                    Like::Chain(chain) => like = Some(chain),
                    Like::Window(p, seed) => window = Some((p, Some(seed))),
                }
            }
        }
        Ok((
            first_item,
            Create {
                params: Some((params, settings)),
                nocreate: given.nocreate,
                counting: given.counting,
                layout: given.layout,
                window,
                like,
            },
        ))
    });
    let (first_item, create) = match parsed {
        Ok(p) => p,
        Err(r) => return r,
    };
    many_reply(add_items(ctx, args, first_item, create, c"bf.insert"))
}

/// Shared body of BF.DEL and BF.MDEL: deletes the items from `args[2]` on, in order, from a
/// counting filter; replicates the command verbatim and publishes `event` when any was
/// present (a delete of absent items changes nothing).
fn delete_items(ctx: &Call, args: &Args, event: &CStr) -> Result<Vec<bool>, Reply> {
    let key_name = args.key();
    let mut key = Key::writable(ctx, &key_name);
    if key.holds::<WindowValue>() {
        return Err(Reply::err(errors::WINDOW_NO_DELETE));
    }
    let chain = key.value_mut::<Chain>()?.ok_or_else(|| Reply::err(errors::NOT_FOUND))?;
    let mut results = Vec::with_capacity(args.len() - 2);
    if args.len() == 3 {
        results.push(chain.delete(args.bytes(2)).map_err(|e| core_err(&e))?);
    } else {
        chain.delete_many(args.items(2), &mut results).map_err(|e| core_err(&e))?;
    }
    if results.contains(&true) {
        ctx.replicate_verbatim();
        notify(ctx, event, &key_name);
    }
    Ok(results)
}

/// `BF.DEL key item`: 1 if the item was present and one occurrence of it was deleted.
pub fn del(ctx: &Call, args: &Args) -> Reply {
    match delete_items(ctx, args, c"bf.del") {
        Ok(results) => Reply::Bool(results.first().copied().unwrap_or(false)),
        Err(r) => r,
    }
}

/// `BF.MDEL key item [item ...]`: BF.DEL of each item, in order.
pub fn mdel(ctx: &Call, args: &Args) -> Reply {
    match delete_items(ctx, args, c"bf.mdel") {
        Ok(results) => Reply::Bools(results, None),
        Err(r) => r,
    }
}

/// `BF.EXISTS key item`
pub fn exists(ctx: &Call, args: &Args) -> Reply {
    let key = Key::open(ctx, &args.key(), false);
    // The usual case, a filter that exists: no other type is tested.
    if let Some(chain) = key.get::<Chain>() {
        return Reply::Bool(chain.contains(args.bytes(2)));
    }
    // Not a chain: a windowed or valkey-bloom filter, no key, or another type.
    vk::read_bloom(
        &key,
        || Reply::Bool(false),
        |chain: &Chain| Reply::Bool(chain.contains(args.bytes(2))),
        |w: &WindowValue| Reply::Bool(w.filter.contains(args.bytes(2), clock::now_ms())),
        |v: &ValkeyBloom| Reply::Bool(v.contains(args.bytes(2))),
    )
}

/// `BF.MEXISTS key item [item ...]`
pub fn mexists(ctx: &Call, args: &Args) -> Reply {
    let items = args.items(2);
    with_bloom(
        ctx,
        args,
        || Reply::Bools(vec![false; items.len()], None),
        |chain: &Chain| {
            let mut results = Vec::with_capacity(items.len());
            chain.contains_many(items, &mut results);
            Reply::Bools(results, None)
        },
        |w: &WindowValue| {
            let items = (2..args.len()).map(|i| args.bytes(i));
            Reply::Bools(w.filter.contains_many(items, clock::now_ms()), None)
        },
        |v: &ValkeyBloom| {
            Reply::Bools(items.iter().map(|i| v.contains(i.as_ref())).collect(), None)
        },
    )
}

/// `BF.CARD key`
pub fn card(ctx: &Call, args: &Args) -> Reply {
    with_bloom(
        ctx,
        args,
        || Reply::Int(0),
        |chain: &Chain| int(chain.value_items()),
        window::card,
        |v: &ValkeyBloom| int(v.items()),
    )
}

/// Converts a count for an integer reply (counts never approach i64::MAX).
fn int(v: u64) -> Reply {
    Reply::Int(i64::try_from(v).unwrap_or(i64::MAX))
}

/// `BF.INFO key [CAPACITY | SIZE | FILTERS | ITEMS | EXPANSION]`
pub fn info(ctx: &Call, args: &Args) -> Reply {
    if args.len() > 3 {
        return Reply::WrongArity;
    }
    with_bloom(
        ctx,
        args,
        || Reply::err(errors::NOT_FOUND),
        |chain: &Chain| info_of(ctx, args, chain),
        |w: &WindowValue| info_reply(ctx, args, window::info_fields(w)),
        |v: &ValkeyBloom| vk::info_field(ctx, args, v),
    )
}

fn info_of(ctx: &Call, args: &Args, chain: &Chain) -> Reply {
    let params = chain.params();
    let expansion = if params.scaling() { int(u64::from(params.expansion)) } else { Reply::Null };
    let fields = vec![
        ("Capacity", int(chain.value_capacity())),
        ("Size", int(chain.value_info_size())),
        ("Number of filters", int(chain.value_layers() as u64)),
        ("Number of items inserted", int(chain.value_items())),
        ("Expansion rate", expansion),
    ];
    info_reply(ctx, args, fields)
}

/// The whole `BF.INFO` map, or the one field its argument names.
fn info_reply(ctx: &Call, args: &Args, mut fields: Vec<(&'static str, Reply)>) -> Reply {
    if args.len() == 2 {
        return Reply::Map(fields);
    }
    let which =
        ["CAPACITY", "SIZE", "FILTERS", "ITEMS", "EXPANSION"].iter().position(|f| args.is(2, f));
    let Some(which) = which else {
        return Reply::err(errors::INVALID_INFO);
    };
    let field = fields.swap_remove(which);
    if ctx.resp3() { Reply::Map(vec![field]) } else { Reply::Array(vec![field.1]) }
}

/// `BF.STATS key`: how full the filter is and the error rate it has now, from the bits each
/// layer keeps count of (see `Chain::stats`); O(layers), no scan. `Saturated` asks the
/// allocation policy a client's `BF.ADD` grows the chain under whether it would refuse a new
/// item.
pub fn stats(ctx: &Call, args: &Args) -> Reply {
    with_either(
        ctx,
        args,
        || Reply::err(errors::NOT_FOUND),
        |chain: &Chain| {
            let s = chain.stats(&ServerGuard::for_command(ctx));
            let mut fields = vec![
                ("Target error rate", Reply::Double(s.target_error)),
                ("Estimated error rate", Reply::Double(s.estimated_error)),
                ("Fill ratio of newest filter", Reply::Double(s.fill_newest)),
                ("Fill ratio of all filters", Reply::Double(s.fill_overall)),
                ("Estimated items", int(s.estimated_items.round() as u64)),
                ("Items added", int(s.items)),
                ("Saturated", Reply::Int(i64::from(s.saturated))),
            ];
            if let Some(n) = s.saturated_counters {
                fields.push(("Saturated counters", int(n)));
            }
            Reply::Map(fields)
        },
        window::stats,
    )
}

/// Formats like C's `printf("%g")`: 6 significant digits, trailing zeros removed, exponent
/// form below 1e-4 or from 1e6.
pub fn format_g(x: f64) -> String {
    if x == 0.0 || !x.is_finite() {
        return if x == 0.0 { "0".into() } else { x.to_string() };
    }
    let sci = format!("{x:.5e}");
    let (mantissa, exp) = sci.split_once('e').unwrap_or((&sci, "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    let trim = |s: &str| {
        if s.contains('.') {
            s.trim_end_matches('0').trim_end_matches('.').to_string()
        } else {
            s.to_string()
        }
    };
    if !(-4..6).contains(&exp) {
        let sign = if exp < 0 { '-' } else { '+' };
        format!("{}e{}{:02}", trim(mantissa), sign, exp.abs())
    } else {
        trim(&format!("{:.*}", (5 - exp) as usize, x))
    }
}

/// `BF.DEBUG key`: `size:<items>`, then one line per layer in RedisBloom's format.
pub fn debug(ctx: &Call, args: &Args) -> Reply {
    if Key::open(ctx, &args.key(), false).holds::<WindowValue>() {
        return Reply::err(errors::WINDOW_NO_DEBUG);
    }
    with_value(
        ctx,
        args,
        || Reply::err(errors::NOT_FOUND),
        |value: &Chain| {
            let mut lines = vec![Reply::Bulk(format!("size:{}", value.value_items()).into_bytes())];
            // The chain's own layers, then each member's (a merge kept it apart), marked with
            // the member's number.
            for (n, chain) in value.parts().enumerate() {
                let member = if n == 0 { String::new() } else { format!(" member:{n}") };
                for (i, layer) in chain.layers().iter().enumerate() {
                    let s = chain.layer_size(i);
                    // A counting layer: `bits` counts its counters, `bytes` its counter array.
                    let counters = match (layer.width(), chain.layout()) {
                        (0, Layout::Blocked) => " layout:blocked".to_string(),
                        (0, Layout::Standard) => String::new(),
                        (w, _) => format!(" counters:{w}"),
                    };
                    let hashwidth = if chain.scheme() == HashScheme::Murmur32 { 32 } else { 64 };
                    lines.push(Reply::Bulk(
                        format!(
                            "bytes:{} bits:{} hashes:{} hashwidth:{hashwidth} capacity:{} size:{} ratio:{}{counters}{member}",
                            layer.bytes(),
                            s.bits,
                            s.hashes,
                            s.capacity,
                            layer.items(),
                            format_g(s.error),
                        )
                        .into_bytes(),
                    ));
                }
            }
            Reply::Array(lines)
        },
    )
}

/// `BF.SCANDUMP key iterator` → `[next, data]`: iterator 0 gives the header, `[0, ""]` the end,
/// as does any negative iterator (as in RedisBloom). The key is checked before the iterator.
pub fn scandump(ctx: &Call, args: &Args) -> Reply {
    dump::scan::<Chain, WindowValue>(ctx, args)
}

/// `BF.LOADCHUNK key iterator data`: a header (iterator 1) at a missing key makes a Bloom
/// chain or, by its magic, a windowed filter; a chunk goes into the filter at the key.
///
/// Into an existing filter, as RedisBloom answers: a header is refused as `ERR received bad
/// data` (followed by the reason, the key exists); an iterator below 1 or below the chunk's
/// length (its offset would be negative) is `ERR received bad data`; an offset past the end
/// `ERR invalid offset - no link found`.
pub fn loadchunk(ctx: &Call, args: &Args) -> Reply {
    let it = match (BLOOM_CHUNKS.load_iterator)(args.bytes(2)) {
        Ok(it) => it,
        Err(r) => return r,
    };
    let mut key = Key::writable(ctx, &args.key());
    let empty = matches!(key.value::<Chain>(), Ok(None));
    if key.holds::<WindowValue>() || (empty && it == 1 && is_window_header(args.bytes(3))) {
        dump::load::<WindowValue>(ctx, args, it, &mut key)
    } else {
        dump::load::<Chain>(ctx, args, it, &mut key)
    }
}

#[cfg(test)]
mod tests {
    use super::format_g;

    #[test]
    fn format_g_matches_printf() {
        for (x, want) in [
            (0.005, "0.005"),
            (0.0025, "0.0025"),
            (0.00125, "0.00125"),
            (0.01, "0.01"),
            (0.000078125, "7.8125e-05"),
            (1e-10, "1e-10"),
            (0.5, "0.5"),
            (0.123456789, "0.123457"),
            (3.0517578125e-07, "3.05176e-07"),
        ] {
            assert_eq!(format_g(x), want);
        }
    }
}
