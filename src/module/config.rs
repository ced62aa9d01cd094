//! Module configuration: `bf.error-rate`, `bf.initial-size`, `bf.expansion-factor`,
//! `bf.max-filter-bytes`, `bf.random-seeds`, `bf.huge-pages`, `bf.huge-pages-at-fault`,
//! `bf.redisbloom-scheme`, `bf.layout`, `bf.tightening-ratio`, `bf.defrag-enabled`, and
//! `bf.compat` (a module argument only, `compat.rs`). Each can be
//! given as a `--loadmodule` argument (`error-rate 0.001`; RedisBloom 2.x's `ERROR_RATE` /
//! `INITIAL_SIZE` and RedisBloom 8's `bf-error-rate` / `bf-initial-size` / `bf-expansion-factor` spellings work
//! too) and read or changed with `CONFIG GET` / `CONFIG SET`, and in redis.conf. On Redis 8 the
//! first three are also config names under RedisBloom 8's spelling (`bf-error-rate`, …). Error
//! rates above 0.25 are capped at 0.25, as in RedisBloom 8. valkey-bloom's names of the
//! settings it has (`bloom-capacity`, `bloom-expansion`, `bloom-fp-rate`,
//! `bloom-tightening-ratio`, `bloom-use-random-seed`, `bloom-memory-usage-limit`,
//! `bloom-defrag-enabled`) are module arguments and configs (`bf.bloom-fp-rate`, …) too, for the
//! same values (`config_alias.rs`).

use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU64, Ordering};

use redis_module::configuration::{
    ConfigurationContext, ConfigurationFlags, ConfigurationValue, register_bool_configuration,
    register_i64_configuration, register_string_configuration,
};
use redis_module::{Context, RedisError, RedisString};

use super::args::{parse_f64, parse_memory};
use super::compat::{self, Release};
use super::config_alias::Alias;
use super::errors;
use super::options::capped_error;
use crate::filter::FilterError;
use crate::filter::bloom::ChainParams;
use crate::filter::bloom::params::{MAX_CAPACITY, MAX_EXPANSION};
use crate::filter::cuckoo::params as cf;
use crate::filter::mem::{HUGE_PAGES, HUGE_PAGES_AT_FAULT};

/// Default error rate of filters created by ADD / MADD / INSERT.
pub static ERROR_RATE: ErrorRate = ErrorRate(AtomicU64::new(0x3F84_7AE1_47AE_147B)); // 0.01
/// Default first-layer capacity of auto-created filters.
pub static INITIAL_SIZE: Bounded =
    Bounded::new("bf-initial-size", DEFAULT_INITIAL_SIZE, 1, MAX_CAPACITY as i64);
/// Default expansion of auto-created filters (0 = nonscaling).
pub static EXPANSION: Bounded =
    Bounded::new("bf-expansion-factor", DEFAULT_EXPANSION, 0, MAX_EXPANSION as i64);
/// Cuckoo filters (`CF.*`): RedisBloom 8's settings, bounds and defaults. A filter made by
/// `CF.ADD`/`CF.INSERT` gets `cf-initial-size` capacity and the other three; `CF.RESERVE`
/// takes its unspecified options from them too. `cf-max-expansions` is read on every insert.
pub static CF_BUCKET_SIZE: Bounded =
    Bounded::new("cf-bucket-size", cf::DEFAULT_BUCKET_SIZE as i64, 1, cf::MAX_BUCKET_SIZE as i64);
/// Capacity of a cuckoo filter made by `CF.ADD`/`CF.INSERT` without `CAPACITY`.
pub static CF_INITIAL_SIZE: Bounded =
    Bounded::new("cf-initial-size", cf::DEFAULT_CAPACITY as i64, 4, cf::MAX_CAPACITY_8X as i64);
/// Kick-outs an insert tries before growing the filter.
pub static CF_MAX_ITERATIONS: Bounded =
    Bounded::new("cf-max-iterations", cf::DEFAULT_MAX_ITERATIONS as i64, 1, 65535);
/// Growth factor of new cuckoo filters (0: never grow).
pub static CF_EXPANSION: Bounded =
    Bounded::new("cf-expansion-factor", cf::DEFAULT_EXPANSION as i64, 0, cf::MAX_EXPANSION as i64);
/// Sub-filters a cuckoo filter may reach; a filter that has them takes no more inserts.
pub static CF_MAX_EXPANSIONS: Bounded =
    Bounded::new("cf-max-expansions", cf::DEFAULT_MAX_EXPANSIONS as i64, 1, 65536);

/// Largest size (as `BF.INFO Size` / `CF.INFO Size` count) one filter may reach.
pub static MAX_FILTER_BYTES: AtomicI64 = AtomicI64::new(DEFAULT_MAX_FILTER_BYTES);

/// Whether new filters are made in RedisBloom's hashing and layout (`bf.redisbloom-scheme`, off
/// by default): for a replica of a RedisBloom primary during a live migration, so that filters
/// the primary creates meanwhile answer and dump exactly as RedisBloom's do.
pub static REDISBLOOM_SCHEME: AtomicBool = AtomicBool::new(false);

/// Whether new plain filters made without `LAYOUT` are blocked (`bf.layout blocked`; on Redis 8
/// also `bf-layout`): every probe of an item in one 512-bit block.
pub static BLOCKED_LAYOUT: AtomicBool = AtomicBool::new(false);

/// The `bf.layout` setting, `standard` or `blocked`, kept in [`BLOCKED_LAYOUT`].
pub struct LayoutSetting;

/// The value of `bf.layout` spelled `s` (any case), if it is one.
fn parse_layout_setting(s: &[u8]) -> Option<bool> {
    if s.eq_ignore_ascii_case(b"standard") {
        Some(false)
    } else if s.eq_ignore_ascii_case(b"blocked") {
        Some(true)
    } else {
        None
    }
}

impl ConfigurationValue<RedisString> for LayoutSetting {
    fn get(&self, _: &ConfigurationContext) -> RedisString {
        let blocked = BLOCKED_LAYOUT.load(Ordering::Relaxed);
        RedisString::create(None, if blocked { "blocked" } else { "standard" })
    }
    fn set(&self, _: &ConfigurationContext, val: RedisString) -> Result<(), RedisError> {
        match parse_layout_setting(val.as_slice()) {
            Some(blocked) => {
                BLOCKED_LAYOUT.store(blocked, Ordering::Relaxed);
                Ok(())
            }
            None => Err(RedisError::String(errors::config_layout(&shown_name("bf-layout")))),
        }
    }
}

/// `bf.compat` as a config: shows the release the module writes for (`compat.rs`). It is
/// immutable (the server refuses `CONFIG SET`); a redis.conf line `bf.compat` may only repeat
/// the module argument's value, since the types were registered before configs load.
struct CompatSetting;

impl ConfigurationValue<RedisString> for CompatSetting {
    fn get(&self, _: &ConfigurationContext) -> RedisString {
        RedisString::create(None, compat::compat().name())
    }
    fn set(&self, _: &ConfigurationContext, val: RedisString) -> Result<(), RedisError> {
        match Release::parse(&val.to_string_lossy()) {
            Some(r) if r == compat::compat() => Ok(()),
            _ => Err(RedisError::String(errors::config_compat(&val.to_string_lossy()))),
        }
    }
}

/// Sets `bf.compat` from the module arguments (`compat <release>`), before anything else is
/// registered: it decides the encoding version of the `MBbloom--` type (`compat.rs`).
pub fn compat_from_args(args: &[RedisString]) -> Result<(), String> {
    for pair in args.chunks(2) {
        if pair.len() == 2 && pair[0].to_string_lossy().eq_ignore_ascii_case("compat") {
            compat::set_from_arg(&pair[1].to_string_lossy())?;
        }
    }
    Ok(())
}

/// Whether this server registered RedisBloom 8's unprefixed names (`bf-error-rate`,
/// `cf-bucket-size`, …) as configs (Redis 8), set once when the configs are registered.
static UNPREFIXED: AtomicBool = AtomicBool::new(false);

/// The name an error message gives the setting RedisBloom 8 calls `redisbloom_name`: that
/// name where the server knows it (Redis 8), else the `bf.*` name the server knows
/// (`bf-error-rate` → `bf.error-rate`, `cf-bucket-size` → `bf.cf-bucket-size`).
fn shown_name(redisbloom_name: &str) -> String {
    if UNPREFIXED.load(Ordering::Relaxed) {
        redisbloom_name.to_string()
    } else {
        format!("bf.{}", redisbloom_name.strip_prefix("bf-").unwrap_or(redisbloom_name))
    }
}

/// The `bf.max-filter-bytes` setting: a size with an optional unit, kept in
/// [`MAX_FILTER_BYTES`]. A string config, not Redis' memory config, so that it takes `tb` as
/// well and a refusal names the units it takes.
pub struct MaxFilterBytes;

impl ConfigurationValue<RedisString> for MaxFilterBytes {
    fn get(&self, _: &ConfigurationContext) -> RedisString {
        RedisString::create(None, MAX_FILTER_BYTES.load(Ordering::Relaxed).to_string())
    }
    fn set(&self, _: &ConfigurationContext, val: RedisString) -> Result<(), RedisError> {
        let bytes = parse_max_filter_bytes(&val.to_string_lossy())
            .map_err(|e| RedisError::String(errors::config_value("bf.max-filter-bytes", &e)))?;
        MAX_FILTER_BYTES.store(bytes, Ordering::Relaxed);
        Ok(())
    }
}

/// Reads a per-filter byte limit: bytes with an optional unit (`k`, `kb`, `m`, `mb`, `g`, `gb`,
/// `t`, `tb`, any case), at least [`MIN_MAX_FILTER_BYTES`]; the end of an error message if not.
fn parse_max_filter_bytes(value: &str) -> Result<i64, String> {
    let bytes = parse_memory(value)
        .ok_or_else(|| format!("must be a size in bytes with an optional unit k, kb, m, mb, g, gb, t or tb, got '{value}'"))?;
    i64::try_from(bytes)
        .ok()
        .filter(|&v| v >= MIN_MAX_FILTER_BYTES)
        .ok_or_else(|| format!("must be at least {MIN_MAX_FILTER_BYTES} bytes, got '{value}'"))
}

/// Whether new filters get a seed derived from a secret (default; see `creation`) or the
/// fixed seed 0 (valkey-bloom's fixed seed for a filter in its layout).
pub static RANDOM_SEEDS: AtomicBool = AtomicBool::new(true);

/// Whether active defragmentation moves filters' memory (valkey-bloom's
/// `bloom-defrag-enabled`).
pub static DEFRAG_ENABLED: AtomicBool = AtomicBool::new(true);

/// The tightening ratio of a new filter in valkey-bloom's layout made without `TIGHTENING`
/// (valkey-bloom's `bloom-tightening-ratio`): a number in (0, 1), kept as its bits.
pub static TIGHTENING: Tightening = Tightening(AtomicU64::new(0x3FE0_0000_0000_0000)); // 0.5

/// The `bf.tightening-ratio` setting.
pub struct Tightening(AtomicU64);

impl Tightening {
    /// The current value.
    pub fn get(&self) -> f64 {
        f64::from_bits(self.0.load(Ordering::Relaxed))
    }
}

/// A tightening ratio, if `b` spells one in (0, 1).
fn parse_tightening(b: &[u8]) -> Option<f64> {
    parse_f64(b).filter(|&t| t > 0.0 && t < 1.0)
}

impl ConfigurationValue<RedisString> for Tightening {
    fn get(&self, _: &ConfigurationContext) -> RedisString {
        RedisString::create(None, Tightening::get(self).to_string())
    }
    fn set(&self, _: &ConfigurationContext, val: RedisString) -> Result<(), RedisError> {
        match parse_tightening(val.as_slice()) {
            Some(t) => {
                self.0.store(t.to_bits(), Ordering::Relaxed);
                Ok(())
            }
            // valkey-bloom's words: only it has the setting.
            None if parse_f64(val.as_slice()).is_none() => {
                Err(RedisError::Str(errors::CONFIG_NOT_A_FLOAT))
            }
            None => Err(RedisError::Str(errors::VALKEY_TIGHTENING_RANGE)),
        }
    }
}

const DEFAULT_ERROR_RATE: f64 = 0.01;
const DEFAULT_INITIAL_SIZE: i64 = 100;
const DEFAULT_EXPANSION: i64 = 2;
const DEFAULT_MAX_FILTER_BYTES: i64 = 4 << 30;
/// Smallest per-filter limit accepted: below this not even a default filter fits.
const MIN_MAX_FILTER_BYTES: i64 = 4096;

/// The error-rate setting: an f64 kept as its bits, validated on every set.
pub struct ErrorRate(AtomicU64);

impl ErrorRate {
    /// The current value.
    pub fn get(&self) -> f64 {
        f64::from_bits(self.0.load(Ordering::Relaxed))
    }
}

/// Whether `e` can be the default error rate of a new filter.
pub fn valid_error_rate(e: f64) -> bool {
    ChainParams::new(e, 1, DEFAULT_EXPANSION as u64).is_ok()
}

impl ConfigurationValue<RedisString> for ErrorRate {
    fn get(&self, _: &ConfigurationContext) -> RedisString {
        RedisString::create(None, ErrorRate::get(self).to_string())
    }
    fn set(&self, _: &ConfigurationContext, val: RedisString) -> Result<(), RedisError> {
        match parse_f64(val.as_slice()).filter(|&e| valid_error_rate(e)) {
            Some(e) => {
                self.0.store(capped_error(e).to_bits(), Ordering::Relaxed);
                Ok(())
            }
            // RedisBloom 8's wording (its config.c), which its flow tests and users look for,
            // under the name this server knows the setting by.
            None if parse_f64(val.as_slice()).is_none() => Err(RedisError::String(
                errors::config_not_a_number(&shown_name("bf-error-rate"), &val.to_string_lossy()),
            )),
            None => {
                Err(RedisError::String(errors::config_error_rate(&shown_name("bf-error-rate"))))
            }
        }
    }
}

/// An integer setting with its bounds. Redis would check a numeric config's bounds itself, but
/// with its own wording (`argument must be between 1 and 1073741824 inclusive`); the bounds are
/// checked here instead, so `CONFIG SET` answers as RedisBloom 8 does (`Value for
/// `bf-initial-size` must be in the range [1, 1073741824]`), under RedisBloom 8's name of the
/// setting whichever spelling was used.
pub struct Bounded {
    value: AtomicI64,
    name: &'static str,
    min: i64,
    max: i64,
}

impl Bounded {
    const fn new(name: &'static str, default: i64, min: i64, max: i64) -> Self {
        Bounded { value: AtomicI64::new(default), name, min, max }
    }

    /// The current value.
    pub fn get(&self) -> i64 {
        self.value.load(Ordering::Relaxed)
    }
}

impl ConfigurationValue<i64> for Bounded {
    fn get(&self, _: &ConfigurationContext) -> i64 {
        Bounded::get(self)
    }
    fn set(&self, _: &ConfigurationContext, val: i64) -> Result<(), RedisError> {
        if !(self.min..=self.max).contains(&val) {
            return Err(RedisError::String(errors::config_range(
                &shown_name(self.name),
                self.min,
                self.max,
            )));
        }
        self.value.store(val, Ordering::Relaxed);
        Ok(())
    }
}

/// The parameters an auto-created filter gets right now (each setting was validated when set;
/// the combination is checked here).
pub fn defaults() -> Result<ChainParams, FilterError> {
    ChainParams::new(ERROR_RATE.get(), INITIAL_SIZE.get() as u64, EXPANSION.get() as u64)
}

/// `cf-max-expansions` as the core takes it (65536 allows as many as a filter can have).
pub fn cf_max_filters() -> u16 {
    u16::try_from(CF_MAX_EXPANSIONS.get()).unwrap_or(u16::MAX)
}

/// The per-filter byte limit right now.
pub fn max_filter_bytes() -> u64 {
    MAX_FILTER_BYTES.load(Ordering::Relaxed) as u64
}

/// Where a setting's value lives, which says how it is read, checked and registered.
enum Holds {
    /// An integer within its bounds.
    Int(&'static Bounded),
    /// `yes` or `no`.
    Bool(&'static AtomicBool),
    /// `bf.error-rate`: a number in (0, 1), capped at 0.25.
    ErrorRate,
    /// `bf.max-filter-bytes`: a size with an optional unit.
    MaxFilterBytes,
    /// `bf.layout`: `standard` or `blocked`.
    Layout,
    /// `bf.tightening-ratio`: a number in (0, 1).
    Tightening,
}

/// One setting: its name (`bf.<name>` as a config, `<name>` as a module argument), the name
/// RedisBloom 8 gives it where it has one (registered without prefix on Redis 8, see
/// [`redis8_names`]; always taken as a module argument), the name valkey-bloom gives it where
/// it has one (a module argument, and a config `bf.<that name>` on every server), other
/// spellings a module argument may use, and where its value lives. A new setting is a row of
/// [`SETTINGS`].
struct Setting {
    name: &'static str,
    redisbloom: Option<&'static str>,
    valkey: Option<&'static str>,
    aliases: &'static [&'static str],
    holds: Holds,
}

/// Every setting.
static SETTINGS: [Setting; 16] = [
    Setting {
        name: "error-rate",
        redisbloom: Some("bf-error-rate"),
        valkey: Some("bloom-fp-rate"),
        aliases: &[],
        holds: Holds::ErrorRate,
    },
    Setting {
        name: "initial-size",
        redisbloom: Some("bf-initial-size"),
        valkey: Some("bloom-capacity"),
        aliases: &[],
        holds: Holds::Int(&INITIAL_SIZE),
    },
    Setting {
        name: "expansion-factor",
        redisbloom: Some("bf-expansion-factor"),
        valkey: Some("bloom-expansion"),
        aliases: &["expansion"],
        holds: Holds::Int(&EXPANSION),
    },
    Setting {
        name: "cf-bucket-size",
        redisbloom: Some("cf-bucket-size"),
        valkey: None,
        aliases: &[],
        holds: Holds::Int(&CF_BUCKET_SIZE),
    },
    Setting {
        name: "cf-initial-size",
        redisbloom: Some("cf-initial-size"),
        valkey: None,
        aliases: &[],
        holds: Holds::Int(&CF_INITIAL_SIZE),
    },
    Setting {
        name: "cf-max-iterations",
        redisbloom: Some("cf-max-iterations"),
        valkey: None,
        aliases: &[],
        holds: Holds::Int(&CF_MAX_ITERATIONS),
    },
    Setting {
        name: "cf-expansion-factor",
        redisbloom: Some("cf-expansion-factor"),
        valkey: None,
        aliases: &[],
        holds: Holds::Int(&CF_EXPANSION),
    },
    Setting {
        name: "cf-max-expansions",
        redisbloom: Some("cf-max-expansions"),
        valkey: None,
        aliases: &[],
        holds: Holds::Int(&CF_MAX_EXPANSIONS),
    },
    Setting {
        name: "max-filter-bytes",
        redisbloom: None,
        valkey: Some("bloom-memory-usage-limit"),
        aliases: &[],
        holds: Holds::MaxFilterBytes,
    },
    Setting {
        name: "random-seeds",
        redisbloom: None,
        valkey: Some("bloom-use-random-seed"),
        aliases: &[],
        holds: Holds::Bool(&RANDOM_SEEDS),
    },
    Setting {
        name: "huge-pages",
        redisbloom: None,
        valkey: None,
        aliases: &[],
        holds: Holds::Bool(&HUGE_PAGES),
    },
    Setting {
        name: "huge-pages-at-fault",
        redisbloom: None,
        valkey: None,
        aliases: &[],
        holds: Holds::Bool(&HUGE_PAGES_AT_FAULT),
    },
    Setting {
        name: "redisbloom-scheme",
        redisbloom: None,
        valkey: None,
        aliases: &[],
        holds: Holds::Bool(&REDISBLOOM_SCHEME),
    },
    // RedisBloom 8 has no such setting; its Redis 8 name follows its bf-* ones.
    Setting {
        name: "layout",
        redisbloom: Some("bf-layout"),
        valkey: None,
        aliases: &[],
        holds: Holds::Layout,
    },
    Setting {
        name: "tightening-ratio",
        redisbloom: None,
        valkey: Some("bloom-tightening-ratio"),
        aliases: &[],
        holds: Holds::Tightening,
    },
    Setting {
        name: "defrag-enabled",
        redisbloom: None,
        valkey: Some("bloom-defrag-enabled"),
        aliases: &[],
        holds: Holds::Bool(&DEFRAG_ENABLED),
    },
];

impl Setting {
    /// Whether a module argument spelled `arg` (lower case, `_` as `-`: RedisBloom 2.x wrote
    /// `ERROR_RATE`, `CF_MAX_EXPANSIONS`) names this setting.
    fn is_named(&self, arg: &str) -> bool {
        arg == self.name
            || self.redisbloom == Some(arg)
            || self.valkey == Some(arg)
            || self.aliases.contains(&arg)
    }

    /// The value before any module argument: the compiled-in default.
    fn default_value(&self) -> String {
        match self.holds {
            Holds::Int(b) => b.get().to_string(),
            Holds::Bool(b) => yes_no(b.load(Ordering::Relaxed)).to_string(),
            Holds::ErrorRate => DEFAULT_ERROR_RATE.to_string(),
            Holds::MaxFilterBytes => DEFAULT_MAX_FILTER_BYTES.to_string(),
            Holds::Layout => "standard".to_string(),
            Holds::Tightening => TIGHTENING.get().to_string(),
        }
    }

    /// A module argument's `value`, checked and in the form [`Setting::register`] takes; the
    /// error says why not, naming the argument as given (`arg`).
    fn start_value(&self, arg: &str, value: &str) -> Result<String, String> {
        match self.holds {
            Holds::Int(b) => value
                .parse::<i64>()
                .ok()
                .filter(|v| (b.min..=b.max).contains(v))
                .map(|v| v.to_string())
                .ok_or_else(|| {
                    format!("{arg} must be an integer in [{}, {}], got '{value}'", b.min, b.max)
                }),
            Holds::Bool(_) => yes_no_arg(arg, value).map(|b| yes_no(b).to_string()),
            Holds::ErrorRate => parse_f64(value.as_bytes())
                .filter(|&e| valid_error_rate(e))
                .map(|e| capped_error(e).to_string())
                .ok_or_else(|| format!("{arg} must be a number in (0, 1), got '{value}'")),
            Holds::MaxFilterBytes => parse_max_filter_bytes(value)
                .map(|v| v.to_string())
                .map_err(|e| format!("{arg} {e}")),
            Holds::Layout => match parse_layout_setting(value.as_bytes()) {
                Some(true) => Ok("blocked".to_string()),
                Some(false) => Ok("standard".to_string()),
                None => Err(format!("{arg} must be standard or blocked, got '{value}'")),
            },
            Holds::Tightening => parse_tightening(value.as_bytes())
                .map(|t| t.to_string())
                .ok_or_else(|| format!("{arg} must be a number in (0, 1), got '{value}'")),
        }
    }

    /// Registers the setting under `name` with `flags`, starting at `start` (from
    /// [`Setting::default_value`] or [`Setting::start_value`]). Integers take the full i64
    /// range for Redis: [`Bounded`] checks its bounds itself, in RedisBloom 8's words.
    fn register(&self, ctx: &Context, name: &str, start: &str, flags: ConfigurationFlags) {
        match self.holds {
            Holds::Int(b) => {
                let start = start.parse().unwrap_or_else(|_| b.get());
                register_i64_configuration(ctx, name, b, start, i64::MIN, i64::MAX, flags, None);
            }
            Holds::Bool(b) => {
                register_bool_configuration(ctx, name, b, start == "yes", flags, None)
            }
            Holds::ErrorRate => {
                register_string_configuration(ctx, name, &ERROR_RATE, start, flags, None)
            }
            Holds::MaxFilterBytes => {
                register_string_configuration(ctx, name, &MaxFilterBytes, start, flags, None)
            }
            Holds::Layout => {
                register_string_configuration(ctx, name, &LayoutSetting, start, flags, None)
            }
            Holds::Tightening => {
                register_string_configuration(ctx, name, &TIGHTENING, start, flags, None)
            }
        }
    }

    /// Registers `name` as another config of the setting ([`Alias`]), starting at `start`.
    fn register_alias(&self, ctx: &Context, name: &str, start: &str) {
        let flags = ConfigurationFlags::DEFAULT;
        match self.holds {
            Holds::Int(b) => {
                let value = start.parse().unwrap_or_else(|_| b.get());
                let alias = Alias::leak(b, start);
                register_i64_configuration(
                    ctx,
                    name,
                    alias,
                    value,
                    i64::MIN,
                    i64::MAX,
                    flags,
                    None,
                );
            }
            Holds::Bool(b) => {
                let alias = Alias::leak(b, start);
                register_bool_configuration(ctx, name, alias, start == "yes", flags, None)
            }
            Holds::ErrorRate => string_alias(ctx, name, &ERROR_RATE, start),
            Holds::MaxFilterBytes => string_alias(ctx, name, &MaxFilterBytes, start),
            Holds::Layout => string_alias(ctx, name, &LayoutSetting, start),
            Holds::Tightening => string_alias(ctx, name, &TIGHTENING, start),
        }
    }
}

/// Registers `name` as another config of the string setting `target`, starting at `start`.
fn string_alias<T: ConfigurationValue<RedisString>>(
    ctx: &Context,
    name: &str,
    target: &'static T,
    start: &str,
) {
    let alias = Alias::leak(target, start);
    register_string_configuration(ctx, name, alias, start, ConfigurationFlags::DEFAULT, None);
}

/// The tightening ratio of a new filter in valkey-bloom's layout made without `TIGHTENING`.
pub fn tightening_ratio() -> f64 {
    TIGHTENING.get()
}

/// Whether active defragmentation may move filters' memory (`bf.defrag-enabled`).
pub fn defrag_enabled() -> bool {
    DEFRAG_ENABLED.load(Ordering::Relaxed)
}

fn yes_no(b: bool) -> &'static str {
    if b { "yes" } else { "no" }
}

/// A yes/no module argument.
fn yes_no_arg(arg: &str, value: &str) -> Result<bool, String> {
    match value.to_ascii_lowercase().as_str() {
        "yes" => Ok(true),
        "no" => Ok(false),
        _ => Err(format!("{arg} must be yes or no, got '{value}'")),
    }
}

/// Reads the module arguments, `name value` pairs, into the starting value of each setting
/// (in [`SETTINGS`]' order) and whether the debug clock is on; refuses unknown names and bad
/// values with a message the server log shows when the module fails to load.
fn parse_module_args(args: &[RedisString]) -> Result<(Vec<String>, bool), String> {
    let mut start: Vec<String> = SETTINGS.iter().map(Setting::default_value).collect();
    let mut debug_clock = false;
    if args.len() % 2 != 0 {
        return Err("module arguments must be name/value pairs".into());
    }
    for pair in args.chunks(2) {
        let name = pair[0].to_string_lossy().to_ascii_lowercase().replace('_', "-");
        let value = pair[1].to_string_lossy();
        // Read (and checked) before the types were registered: compat_from_args.
        if name == "compat" {
            continue;
        }
        // Tests only: windowed filters follow BF.DEBUGCLOCK instead of the wall clock.
        if name == "window-debug-clock" {
            debug_clock = yes_no_arg(&name, &value)?;
            continue;
        }
        let Some(i) = SETTINGS.iter().position(|s| s.is_named(&name)) else {
            return Err(format!("unknown module argument '{name}'"));
        };
        start[i] = SETTINGS[i].start_value(&name, &value)?;
    }
    Ok((start, debug_clock))
}

/// Whether this server takes RedisBloom 8's unprefixed config names beside `bf.*`.
///
/// Redis 8 lets a module register a config without the `<module>.` prefix
/// (`REDISMODULE_CONFIG_UNPREFIXED`), under a name with at most one dot, optionally followed by
/// `|alias` (module.c, `moduleVerifyUnprefixedName`). RedisBloom 8 registers `bf-error-rate`,
/// `cf-bucket-size`, … that way; on Redis 8 scalebloom registers each setting RedisBloom 8 has
/// as `<its name>|bf.<name>`, so both its own name and RedisBloom 8's work in `CONFIG GET/SET`
/// and redis.conf. Older servers (Redis 7.x and Valkey, which reports Redis 7.2.4 here) refuse
/// the flag, so there they stay `bf.<name>` (prefixed by the server).
///
/// Redis 8 is told by its version and its name: Valkey reports its own version (8.x, 9.x)
/// through `RedisModule_GetServerVersion`, and Valkey 9 accepts unprefixed configs but not the
/// `|alias` syntax (`Invalid character | in Module resource name`), so a Valkey server
/// (`server_name:valkey` in `INFO server`) keeps the prefixed names.
fn redis8_names(ctx: &Context) -> bool {
    let valkey = ctx
        .server_info("server")
        .field("server_name")
        .is_some_and(|name| name.as_slice().eq_ignore_ascii_case(b"valkey"));
    !valkey && ctx.get_redis_version().is_ok_and(|v| v.major >= 8)
}

/// Registers the configs with their starting values. The caller then calls
/// `RedisModule_LoadConfigs` so redis.conf values apply. Returns the config names, for the
/// start-up log line.
pub fn register(ctx: &Context, args: &[RedisString]) -> Result<&'static str, String> {
    let (start, debug_clock) = parse_module_args(args)?;
    if debug_clock {
        super::clock::enable_debug_clock();
    }
    let unprefixed = redis8_names(ctx);
    UNPREFIXED.store(unprefixed, Ordering::Relaxed);
    for (setting, start) in SETTINGS.iter().zip(&start) {
        match setting.redisbloom {
            Some(theirs) if unprefixed => setting.register(
                ctx,
                &format!("{theirs}|bf.{}", setting.name),
                start,
                ConfigurationFlags::UNPREFIXED,
            ),
            _ => setting.register(ctx, setting.name, start, ConfigurationFlags::DEFAULT),
        }
    }
    let compat = compat::compat().name();
    register_string_configuration(
        ctx,
        "compat",
        &CompatSetting,
        compat,
        ConfigurationFlags::IMMUTABLE,
        None,
    );
    // After every setting's own name (see config_alias.rs), until the configs are loaded.
    super::config_alias::loading_starts();
    for (setting, start) in SETTINGS.iter().zip(&start) {
        if let Some(valkey) = setting.valkey {
            setting.register_alias(ctx, valkey, start);
        }
    }
    Ok(if unprefixed {
        "bf.*, and RedisBloom 8's bf-* and cf-* names"
    } else {
        "bf.* (this server has no unprefixed module configs for RedisBloom 8's bf-* and cf-* names)"
    })
}
