//! Filter-creation options: the one parser behind BF.RESERVE's and BF.INSERT's grammars.
//!
//! Both commands take the same options — `EXPANSION n`, `NONSCALING`, `COUNTING 4|8`,
//! `LAYOUT STANDARD|BLOCKED`, valkey-bloom's `SEED s`, `TIGHTENING r` and `VALIDATESCALETO n`
//! (which make a filter in valkey-bloom's layout), and for BF.INSERT also
//! `CAPACITY n`, `ERROR r`, `NOCREATE` and `ITEMS` — but answer bad input in RedisBloom's two
//! wordings (valkey-bloom's for the options only it has). A [`Grammar`] names which keywords a command takes and its error replies; the
//! parsing and the rules (ranges, NONSCALING against EXPANSION) are written once here, so a new
//! option is added once.

use super::args::{Args, parse_f64, parse_i64};
use super::compat::{Compat, Release};
use super::errors;
use super::reply::Reply;
use crate::filter::bloom::ChainParams;
use crate::filter::bloom::counters::valid_width;
use crate::filter::bloom::params::{
    Layout, MAX_CAPACITY, MAX_EXPANSION, MIN_CAPACITY, error_in_range,
};
use crate::filter::window::params::MAX_WINDOW_MS;
use crate::filter::window::{WindowKind, WindowParams};

/// The largest error rate a filter is made with: RedisBloom 8 caps larger requests (from
/// BF.RESERVE, BF.INSERT's `ERROR` and the `bf-error-rate` config) at 0.25 without an error,
/// since a filter that wrong is of no use; so does scalebloom.
pub const ERROR_RATE_CAP: f64 = 0.25;

/// An error rate in range, capped at [`ERROR_RATE_CAP`].
pub fn capped_error(e: f64) -> f64 {
    e.min(ERROR_RATE_CAP)
}

/// A creation keyword.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Keyword {
    /// `CAPACITY n`: the first layer's capacity.
    Capacity,
    /// `ERROR r`: the error rate.
    Error,
    /// `EXPANSION n`: each new layer's growth factor (0: nonscaling).
    Expansion,
    /// `NONSCALING`: one layer, never grown.
    Nonscaling,
    /// `NOCREATE`: do not create a missing filter.
    Nocreate,
    /// `ITEMS`: the options end, the items follow.
    Items,
    /// `COUNTING 4|8`: a counting filter, counters of that many bits (items can be deleted).
    Counting,
    /// `WINDOW <duration>|ITEMS`: a windowed filter whose items expire.
    Window,
    /// `LAYOUT STANDARD|BLOCKED`: where an item's probes go (blocked: one cache line).
    Layout,
    /// `LIKE otherkey`: a new filter of the other's shape, kind and seed (so the two merge
    /// into one with `BF.MERGE`).
    Like,
    /// `SEED <32 bytes>`: a valkey-bloom filter hashed under this seed.
    Seed,
    /// `TIGHTENING r`: a valkey-bloom filter whose new layers' error shrinks by `r`.
    Tightening,
    /// `VALIDATESCALETO n`: a valkey-bloom filter, refused unless it can grow to `n` items.
    ValidateScaleTo,
}

impl Keyword {
    const ALL: [(Keyword, &'static str); 13] = [
        (Keyword::Capacity, "CAPACITY"),
        (Keyword::Error, "ERROR"),
        (Keyword::Expansion, "EXPANSION"),
        (Keyword::Nonscaling, "NONSCALING"),
        (Keyword::Nocreate, "NOCREATE"),
        (Keyword::Items, "ITEMS"),
        (Keyword::Counting, "COUNTING"),
        (Keyword::Window, "WINDOW"),
        (Keyword::Layout, "LAYOUT"),
        (Keyword::Like, "LIKE"),
        (Keyword::Seed, "SEED"),
        (Keyword::Tightening, "TIGHTENING"),
        (Keyword::ValidateScaleTo, "VALIDATESCALETO"),
    ];

    /// The keyword `word` spells, ignoring ASCII case.
    fn of(word: &[u8]) -> Option<Keyword> {
        Self::ALL
            .iter()
            .find(|(_, name)| word.eq_ignore_ascii_case(name.as_bytes()))
            .map(|&(k, _)| k)
    }

    /// The keyword's name, as the grammar spells it.
    fn name(self) -> &'static str {
        Self::ALL.iter().find(|(k, _)| *k == self).map_or("", |&(_, name)| name)
    }

    /// One bit per keyword, for the set of those already given.
    fn bit(self) -> u16 {
        1 << (self as u16)
    }
}

/// The options only cuckoo filters take (`CF.RESERVE`, `CF.INSERT`): a Bloom filter command
/// that meets one says so, rather than that it does not know the word.
const CUCKOO_ONLY: [&str; 3] = ["BUCKETSIZE", "MAXITERATIONS", "FINGERPRINT"];

/// Every option of cuckoo filter commands, each of which may be given once.
const CUCKOO_OPTIONS: [&str; 6] =
    ["BUCKETSIZE", "MAXITERATIONS", "EXPANSION", "FINGERPRINT", "CAPACITY", "NOCREATE"];

/// The options only Bloom filters take: a cuckoo filter command that meets one says so, where
/// RedisBloom ignores it.
const BLOOM_ONLY: [Keyword; 6] = [
    Keyword::Error,
    Keyword::Nonscaling,
    Keyword::Counting,
    Keyword::Window,
    Keyword::Layout,
    Keyword::Like,
];

/// The cuckoo-filter option `word` spells, in capitals, if it is one.
fn cuckoo_option(word: &[u8]) -> Option<&'static str> {
    CUCKOO_ONLY.iter().copied().find(|name| word.eq_ignore_ascii_case(name.as_bytes()))
}

/// The option names of a cuckoo filter command (`names`, in order): a Bloom filter's option
/// and an option given twice are refused (RedisBloom ignores the first and takes the first of
/// a repeated one); an unknown name is left to the command, as there.
pub fn check_cuckoo_names<'a>(names: impl Iterator<Item = &'a [u8]>) -> Result<(), Reply> {
    let mut given = [false; CUCKOO_OPTIONS.len()];
    for name in names {
        if let Some(k) = Keyword::of(name).filter(|k| BLOOM_ONLY.contains(k)) {
            return Err(Reply::Error(errors::bloom_option(k.name())));
        }
        let known = CUCKOO_OPTIONS.iter().position(|o| name.eq_ignore_ascii_case(o.as_bytes()));
        if let Some(i) = known {
            if given[i] {
                return Err(Reply::Error(errors::repeated_option(CUCKOO_OPTIONS[i])));
            }
            given[i] = true;
        }
    }
    Ok(())
}

/// What a command answers when an option's value is missing.
#[derive(Clone, Copy)]
pub enum Missing {
    /// The standard wrong-number-of-arguments error.
    WrongArity,
    /// This error.
    Error(&'static str),
}

/// One command's options and error replies.
pub struct Grammar {
    /// The keywords the command takes; any other word is `unknown`.
    pub keywords: &'static [Keyword],
    /// An option without its value.
    pub missing_value: Missing,
    /// An error rate that is not a number / not in (0, 1).
    pub bad_error: &'static str,
    pub error_range: &'static str,
    /// A capacity that is not an integer / not in range.
    pub bad_capacity: &'static str,
    pub capacity_range: &'static str,
    /// An expansion that is not an integer / not in [0, MAX_EXPANSION].
    pub bad_expansion: &'static str,
    pub expansion_range: &'static str,
    /// Whether an out-of-range expansion is refused as soon as it is read (BF.INSERT), or only
    /// once all options are read and NONSCALING beside it has been refused first (BF.RESERVE).
    pub expansion_range_first: bool,
    /// A word that is not one of `keywords`.
    pub unknown: &'static str,
    /// Keywords whose repetition is answered with the wrong-number-of-arguments error, as
    /// RedisBloom does where its grammar has room for one only (BF.RESERVE's `EXPANSION`);
    /// any other repeated keyword is refused as given more than once.
    pub repeat_arity: &'static [Keyword],
}

/// BF.RESERVE: `key error_rate capacity [EXPANSION n] [NONSCALING]`.
pub const RESERVE: Grammar = Grammar {
    keywords: &[
        Keyword::Expansion,
        Keyword::Nonscaling,
        Keyword::Counting,
        Keyword::Window,
        Keyword::Layout,
        Keyword::Like,
        Keyword::Seed,
        Keyword::Tightening,
        Keyword::ValidateScaleTo,
    ],
    missing_value: Missing::Error(errors::NO_EXPANSION),
    bad_error: errors::BAD_ERROR_RATE,
    error_range: errors::ERROR_RATE_RANGE,
    bad_capacity: errors::BAD_CAPACITY,
    capacity_range: errors::CAPACITY_RANGE,
    bad_expansion: errors::BAD_EXPANSION,
    expansion_range: errors::EXPANSION_RANGE,
    expansion_range_first: false,
    unknown: errors::SYNTAX,
    repeat_arity: &[Keyword::Expansion],
};

/// BF.INSERT: `key [CAPACITY n] [ERROR r] [EXPANSION n] [NOCREATE] [NONSCALING] ITEMS item …`.
pub const INSERT: Grammar = Grammar {
    keywords: &[
        Keyword::Capacity,
        Keyword::Error,
        Keyword::Expansion,
        Keyword::Nonscaling,
        Keyword::Nocreate,
        Keyword::Items,
        Keyword::Counting,
        Keyword::Window,
        Keyword::Layout,
        Keyword::Like,
        Keyword::Seed,
        Keyword::Tightening,
        Keyword::ValidateScaleTo,
    ],
    missing_value: Missing::WrongArity,
    bad_error: errors::INSERT_BAD_ERROR_RATE,
    error_range: errors::INSERT_BAD_ERROR_RATE,
    bad_capacity: errors::INSERT_BAD_CAPACITY,
    capacity_range: errors::INSERT_BAD_CAPACITY,
    bad_expansion: errors::INSERT_BAD_EXPANSION,
    expansion_range: errors::INSERT_BAD_EXPANSION,
    expansion_range_first: true,
    unknown: errors::UNKNOWN_ARGUMENT,
    repeat_arity: &[],
};

/// The creation options a command was given.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct Creation {
    /// As given, in (0, 1); [`Grammar::params`] caps it for a Bloom chain.
    pub error: Option<f64>,
    pub capacity: Option<u64>,
    /// As given; checked against the range by [`Grammar::params`] (or when read, by grammars
    /// with `expansion_range_first`).
    pub expansion: Option<i64>,
    pub nonscaling: bool,
    pub nocreate: bool,
    /// Where the items start (after `ITEMS`).
    pub items_at: Option<usize>,
    /// `COUNTING w`: bits per counter (4 or 8); `None` for a plain filter.
    pub counting: Option<u8>,
    /// `WINDOW <duration>|ITEMS`: a windowed filter.
    pub window: Option<WindowKind>,
    /// `LAYOUT STANDARD|BLOCKED`; `None`: the `bf-layout` default.
    pub layout: Option<Layout>,
    /// `LIKE otherkey`: the argument index of `otherkey` (after the keyword).
    pub like_at: Option<usize>,
    /// valkey-bloom's `SEED` (exactly 32 bytes).
    pub seed: Option<[u8; 32]>,
    /// valkey-bloom's `TIGHTENING`, in (0, 1).
    pub tightening: Option<f64>,
    /// valkey-bloom's `VALIDATESCALETO`, at least 1.
    pub scale_to: Option<u64>,
}

impl Creation {
    /// Whether an option only valkey-bloom has was given: the filter made is one in
    /// valkey-bloom's layout.
    pub fn valkey(&self) -> bool {
        self.seed.is_some() || self.tightening.is_some() || self.scale_to.is_some()
    }

    /// Whether options that set what `LIKE` copies were given beside it (`NOCREATE` may be:
    /// it copies nothing).
    pub fn like_with_options(&self) -> bool {
        self.like_at.is_some()
            && (self.error.is_some()
                || self.capacity.is_some()
                || self.expansion.is_some()
                || self.nonscaling
                || self.counting.is_some()
                || self.window.is_some()
                || self.layout.is_some()
                || self.valkey())
    }
}

/// Reads `TIGHTENING`'s value as valkey-bloom does: a number in (0, 1).
fn parse_tightening(b: &[u8]) -> Result<f64, Reply> {
    let t = parse_f64(b).ok_or_else(|| Reply::err(errors::VALKEY_BAD_TIGHTENING))?;
    if t > 0.0 && t < 1.0 { Ok(t) } else { Err(Reply::err(errors::VALKEY_TIGHTENING_RANGE)) }
}

/// Reads `VALIDATESCALETO`'s value as valkey-bloom does: an integer of at least 1.
fn parse_scale_to(b: &[u8]) -> Result<u64, Reply> {
    match parse_i64(b) {
        Some(0) => Err(Reply::err(errors::VALKEY_CAPACITY_ZERO)),
        Some(n) if n > 0 => Ok(n as u64), // positive, so it fits
        _ => Err(Reply::err(errors::VALKEY_BAD_CAPACITY)),
    }
}

/// Reads `LAYOUT`'s value: `STANDARD` or `BLOCKED`, in any case.
pub fn parse_layout(b: &[u8]) -> Result<Layout, Reply> {
    if b.eq_ignore_ascii_case(b"STANDARD") {
        Ok(Layout::Standard)
    } else if b.eq_ignore_ascii_case(b"BLOCKED") {
        Ok(Layout::Blocked)
    } else {
        Err(Reply::err(errors::BAD_LAYOUT))
    }
}

/// Reads `WINDOW`'s value: `ITEMS`, or `<n>ms|s|m|h|d` (a positive integer and a unit).
pub fn parse_window(b: &[u8]) -> Result<WindowKind, Reply> {
    if b.eq_ignore_ascii_case(b"ITEMS") {
        return Ok(WindowKind::Items);
    }
    let digits = b.iter().take_while(|c| c.is_ascii_digit()).count();
    let (number, unit) = b.split_at(digits);
    let unit_ms: u64 = match unit.to_ascii_lowercase().as_slice() {
        b"ms" => 1,
        b"s" => 1000,
        b"m" => 60_000,
        b"h" => 3_600_000,
        b"d" => 86_400_000,
        _ => return Err(Reply::err(errors::BAD_WINDOW)),
    };
    std::str::from_utf8(number)
        .ok()
        .and_then(|n| n.parse::<u64>().ok())
        .and_then(|n| n.checked_mul(unit_ms))
        .filter(|&ms| (1..=MAX_WINDOW_MS).contains(&ms))
        .map(|window_ms| WindowKind::Time { window_ms })
        .ok_or_else(|| Reply::err(errors::BAD_WINDOW))
}

impl Grammar {
    /// An error rate: a number in (0, 1), as given (a Bloom chain's is capped at
    /// [`ERROR_RATE_CAP`], a valkey-bloom filter's is not).
    pub fn error(&self, b: &[u8]) -> Result<f64, Reply> {
        let e = parse_f64(b).ok_or_else(|| Reply::err(self.bad_error))?;
        if error_in_range(e) { Ok(e) } else { Err(Reply::err(self.error_range)) }
    }

    /// A capacity: an integer in [MIN_CAPACITY, MAX_CAPACITY].
    pub fn capacity(&self, b: &[u8]) -> Result<u64, Reply> {
        let c = parse_i64(b).ok_or_else(|| Reply::err(self.bad_capacity))?;
        u64::try_from(c)
            .ok()
            .filter(|c| (MIN_CAPACITY..=MAX_CAPACITY).contains(c))
            .ok_or_else(|| Reply::err(self.capacity_range))
    }

    fn expansion_in_range(&self, x: i64) -> Result<u64, Reply> {
        u64::try_from(x)
            .ok()
            .filter(|&x| x <= MAX_EXPANSION)
            .ok_or_else(|| Reply::err(self.expansion_range))
    }

    /// Reads the options from argument `from` on, up to the end or `ITEMS`.
    pub fn options(&self, args: &Args, from: usize) -> Result<Creation, Reply> {
        let mut c = Creation::default();
        let mut given = 0u16;
        let mut i = from;
        while i < args.len() {
            let word = args.bytes(i);
            let Some(keyword) = Keyword::of(word).filter(|k| self.keywords.contains(k)) else {
                return Err(match cuckoo_option(word) {
                    Some(name) => Reply::Error(errors::cuckoo_option(name)),
                    None => Reply::err(self.unknown),
                });
            };
            if given & keyword.bit() != 0 {
                return Err(if self.repeat_arity.contains(&keyword) {
                    Reply::WrongArity
                } else {
                    Reply::Error(errors::repeated_option(keyword.name()))
                });
            }
            given |= keyword.bit();
            let takes_value = matches!(
                keyword,
                Keyword::Capacity
                    | Keyword::Error
                    | Keyword::Expansion
                    | Keyword::Counting
                    | Keyword::Window
                    | Keyword::Layout
                    | Keyword::Like
                    | Keyword::Seed
                    | Keyword::Tightening
                    | Keyword::ValidateScaleTo
            );
            let value = if takes_value {
                i += 1;
                if i >= args.len() {
                    if keyword == Keyword::Counting {
                        return Err(Reply::err(errors::BAD_COUNTING));
                    }
                    if keyword == Keyword::Window {
                        return Err(Reply::err(errors::BAD_WINDOW));
                    }
                    if keyword == Keyword::Layout {
                        return Err(Reply::err(errors::BAD_LAYOUT));
                    }
                    if keyword == Keyword::Like {
                        return Err(Reply::WrongArity);
                    }
                    return Err(match self.missing_value {
                        Missing::WrongArity => Reply::WrongArity,
                        Missing::Error(text) => Reply::err(text),
                    });
                }
                args.bytes(i)
            } else {
                &[]
            };
            match keyword {
                Keyword::Capacity => c.capacity = Some(self.capacity(value)?),
                Keyword::Error => c.error = Some(self.error(value)?),
                Keyword::Expansion => {
                    let x = parse_i64(value).ok_or_else(|| Reply::err(self.bad_expansion))?;
                    if self.expansion_range_first {
                        self.expansion_in_range(x)?;
                    }
                    c.expansion = Some(x);
                }
                Keyword::Nonscaling => c.nonscaling = true,
                Keyword::Counting => {
                    let width = parse_i64(value)
                        .and_then(|w| u64::try_from(w).ok())
                        .filter(|&w| valid_width(w))
                        .ok_or_else(|| Reply::err(errors::BAD_COUNTING))?;
                    c.counting = Some(width as u8); // 4 or 8
                }
                Keyword::Window => c.window = Some(parse_window(value)?),
                Keyword::Layout => c.layout = Some(parse_layout(value)?),
                Keyword::Seed => {
                    let seed = value.try_into().map_err(|_| Reply::err(errors::VALKEY_BAD_SEED))?;
                    c.seed = Some(seed);
                }
                Keyword::Tightening => c.tightening = Some(parse_tightening(value)?),
                Keyword::ValidateScaleTo => c.scale_to = Some(parse_scale_to(value)?),
                Keyword::Nocreate => c.nocreate = true,
                Keyword::Like => c.like_at = Some(i),
                Keyword::Items => {
                    c.items_at = Some(i + 1);
                    break;
                }
            }
            i += 1;
        }
        // What 1.0 added, refused while bf.compat keeps the writes readable by 0.1.
        let since_1_0 = [
            (c.like_at.is_some(), "LIKE"),
            (c.valkey(), "SEED, TIGHTENING or VALIDATESCALETO (a filter in valkey-bloom's layout)"),
        ];
        for (given, what) in since_1_0 {
            if let Some(text) = given.then(|| Compat::refusal(what, Release::V1_0)).flatten() {
                return Err(Reply::Error(text));
            }
        }
        Ok(c)
    }

    /// The parameters of the filter to create: the options over `defaults`. NONSCALING (or
    /// EXPANSION 0) makes a nonscaling filter; NONSCALING beside a non-zero EXPANSION is
    /// refused.
    pub fn params(&self, c: &Creation, defaults: ChainParams) -> Result<ChainParams, Reply> {
        let expansion = match (c.expansion, c.nonscaling) {
            (Some(x), true) if x != 0 => return Err(Reply::err(errors::NONSCALING_EXPANSION)),
            (_, true) => 0,
            (Some(x), false) => self.expansion_in_range(x)?,
            (None, false) => u64::from(defaults.expansion),
        };
        let error = c.error.map_or(defaults.error, capped_error);
        let capacity = c.capacity.unwrap_or(defaults.capacity);
        ChainParams::new(error, capacity, expansion).map_err(|e| Reply::Error(errors::text(&e)))
    }

    /// The parameters of a windowed filter (`WINDOW` given): the error rate and capacity over
    /// `defaults`. A windowed filter never grows (a burst raises its error rate, which
    /// `BF.STATS` reports), so `EXPANSION` and `COUNTING` are refused beside `WINDOW`;
    /// `NONSCALING` is accepted and changes nothing.
    pub fn window_params(
        &self,
        c: &Creation,
        kind: WindowKind,
        defaults: ChainParams,
    ) -> Result<WindowParams, Reply> {
        if c.expansion.is_some() || c.counting.is_some() {
            return Err(Reply::err(errors::WINDOW_OPTIONS));
        }
        if c.layout == Some(Layout::Blocked) {
            return Err(Reply::err(errors::WINDOW_BLOCKED));
        }
        let error = c.error.map_or(defaults.error, capped_error);
        let capacity = c.capacity.unwrap_or(defaults.capacity);
        crate::filter::window::params::choose(kind, error, capacity)
            .map_err(|e| Reply::Error(errors::text(&e)))
    }
}
