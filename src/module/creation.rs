//! The settings that decide a new filter beyond its own command: the defaults of an
//! auto-created filter, the hash scheme, and the secret its seed is derived from.
//!
//! A filter's seed is `SipHash-1-3(secret, key name)`, or 0 with `bf.random-seeds no`. The
//! secret is random per process and never leaves the server except to its own replicas and
//! AOF, so clients cannot predict seeds, yet a replica given the same secret derives the same
//! seed from the same command. That lets a creating command (`BF.RESERVE`, an `BF.ADD` that
//! creates) replicate verbatim, as RedisBloom's do, instead of as a `BF.LOADCHUNK` header that
//! carries the seed: Redis' `RM_Replicate` costs a command lookup and new argument strings,
//! about a third of a filter creation.
//!
//! Every consumer of the stream must therefore interpret a creating command with the
//! settings of the server that ran it:
//! - A primary sends its settings as `BF.REPLCONF <blob>` before the first creating command
//!   after anything that may have started a new consumer or changed the settings: module load
//!   (restart, AOF replay), a fork (full sync, AOF rewrite), a replica connecting (including a
//!   partial resync), a role change, any `CONFIG SET`. Sending it again is harmless.
//! - A replica takes them from `BF.REPLCONF` (and passes it on to its AOF) and from its
//!   primary's RDB (module aux data), and keeps them in its own RDB, so a restarted replica
//!   that resumes by partial resync, or a replica of a replica, has them too.
//! - Commands from the replication link, from AOF replay, and any command on a replica use the
//!   stream's settings; a primary's clients use the server's own.
//!
//! The secret is in the stream, so it must stay out of everything the server logs or shows
//! about the stream:
//! - The backlog dump. A replica that answers its primary with an error logs the last 256 bytes
//!   of its replication backlog (`showLatestBacklog` in `replication.c`: 256 in Redis 7.0, 8.0
//!   and Valkey 8.x–9.x). A replica appends to its backlog only whole commands it has applied
//!   (`commandProcessed` feeds `reploff - prev_offset`; inside a primary's `MULTI` nothing until
//!   `EXEC`), and a primary whole propagated commands; so the dump always ends at a command
//!   boundary, and a `BF.REPLCONF` in the backlog is there whole, with everything after it.
//!   [`PADDING`], an argument after the settings that the replica ignores, puts at least
//!   [`PADDING`]`.len()` bytes (twice that window) between the secret and any such end.
//! - `MONITOR`, the slow log (and Valkey's `COMMANDLOG`): BF.REPLCONF is flagged `no-monitor
//!   no-slowlog`, and `internal` where the server has the flag (Redis 8). (It does not redact its
//!   arguments with `RedisModule_RedactClientCommandArgument`: on Valkey 8.1 that changes the
//!   arguments the command itself then reads.)
//! - Error replies and the `== CRITICAL ==` line that logs them: no error names the settings.

use std::collections::hash_map::RandomState;
use std::hash::{BuildHasher, Hasher};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, OnceLock, PoisonError};

use siphasher::sip::SipHasher13;

use super::call::Call;
use super::config;
use super::options::capped_error;
use super::replicate::replicate;
use crate::filter::FilterError;
use crate::filter::bloom::ChainParams;
use crate::filter::bloom::params::{MAX_CAPACITY, MAX_EXPANSION};
use crate::filter::hash::HashScheme;

/// The `cf-*` settings a cuckoo filter's creating command takes its unspecified options from
/// (`cf-max-expansions`, read on every insert, is not one of them).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CfDefaults {
    /// `cf-bucket-size`.
    pub bucket_size: u16,
    /// `cf-initial-size`: the capacity of a filter `CF.ADD`/`CF.INSERT` create.
    pub initial_size: u64,
    /// `cf-max-iterations`.
    pub max_iterations: u16,
    /// `cf-expansion-factor`.
    pub expansion: u16,
}

impl CfDefaults {
    /// This server's own `cf-*` settings.
    pub fn local() -> Self {
        // The settings are bounded (config.rs) within these types.
        CfDefaults {
            bucket_size: config::CF_BUCKET_SIZE.get() as u16,
            initial_size: config::CF_INITIAL_SIZE.get() as u64,
            max_iterations: config::CF_MAX_ITERATIONS.get() as u16,
            expansion: config::CF_EXPANSION.get() as u16,
        }
    }
}

/// The settings a creating command is interpreted with.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Settings {
    /// SipHash key the seeds are derived from.
    pub secret: [u64; 2],
    /// `bf.random-seeds`: derived seeds (true) or seed 0.
    pub random_seeds: bool,
    /// `bf.redisbloom-scheme`: new filters in RedisBloom's hashing.
    pub redisbloom_scheme: bool,
    /// `bf.layout blocked`: new plain filters made without `LAYOUT` are blocked (unless
    /// `redisbloom_scheme`, whose filters keep RedisBloom's layout).
    pub blocked_layout: bool,
    /// New standard filters (plain and counting) in hash scheme 5 (the probes stepped by a
    /// full-width curvature); `false` from a stream whose standard filters are scheme 1: a
    /// replica or AOF replay then builds them in scheme 1, as the stream's writer does.
    pub curved: bool,
    /// `bf.error-rate`, `bf.initial-size`, `bf.expansion-factor`: an auto-created filter's.
    pub error_rate: f64,
    pub initial_size: u64,
    pub expansion: u64,
    /// The `cf-*` defaults of a new cuckoo filter; `None` from a version-1 stream (a build
    /// that replicated each cuckoo filter it created as its `CF.LOADCHUNK` header, so its
    /// stream never needs them): then the server's own.
    pub cf: Option<CfDefaults>,
}

/// The argument after the settings in `BF.REPLCONF`: the replica ignores it; its length keeps
/// the secret out of the replication traffic Redis may log (see the module docs). A replica
/// that reads the log finds this text at the end of the dump.
pub const PADDING: &[u8] = concat!(
    "scalebloom: this argument only pads BF.REPLCONF. A replica that answers its primary ",
    "with an error logs the last 256 bytes of replication traffic it applied (Latest backlog ",
    "is ...). The settings before this argument hold the seed secret: the padding keeps them ",
    "out of that window. ",
    "scalebloom: this argument only pads BF.REPLCONF. A replica that answers its primary ",
    "with an error logs the last 256 bytes of replication traffic it applied (Latest backlog ",
    "is ...). The settings before this argument hold the seed secret: the padding keeps them ",
    "out of that window. "
)
.as_bytes();

/// The most bytes of replication traffic Redis or Valkey logs (`showLatestBacklog`).
const BACKLOG_DUMP_LEN: usize = 256;
const _: () = assert!(PADDING.len() >= 2 * BACKLOG_DUMP_LEN);

/// Format version of the encoded settings (first byte): 2 adds the `cf-*` defaults to
/// version 1's fields. Version 1 is read too (AOF files and primaries that write it).
const VERSION: u8 = 2;
const VERSION_1: u8 = 1;
/// Version 1's length: version, secret, flags, error rate, initial size, expansion.
pub const ENCODED_LEN_V1: usize = 1 + 16 + 1 + 8 + 8 + 8;
/// Encoded length: version 1's fields, then `cf-bucket-size`, `cf-max-iterations`,
/// `cf-expansion-factor` (u16 each) and `cf-initial-size` (u64).
pub const ENCODED_LEN: usize = ENCODED_LEN_V1 + 2 + 2 + 2 + 8;
const FLAG_RANDOM_SEEDS: u8 = 1;
const FLAG_REDISBLOOM_SCHEME: u8 = 2;
/// `bf.layout blocked`. A build before blocked filters refuses settings with it ("unknown
/// flags"), as a replica must refuse what it cannot reproduce.
const FLAG_BLOCKED_LAYOUT: u8 = 4;
/// New standard filters in hash scheme 5. A build without scheme 5 refuses it ("unknown
/// flags"); without it, new standard filters are made in scheme 1, as the primary (or the
/// AOF's writer) that sent settings without it makes them.
const FLAG_CURVED: u8 = 8;
const ALL_FLAGS: u8 =
    FLAG_RANDOM_SEEDS | FLAG_REDISBLOOM_SCHEME | FLAG_BLOCKED_LAYOUT | FLAG_CURVED;

impl Settings {
    /// The parameters of a filter created without any (BF.ADD, BF.MADD) or with some
    /// (BF.INSERT). Each setting was validated on its own; whether the combination can be
    /// built is for `Chain::new` to say, as the chain is built next.
    pub fn defaults(&self) -> Result<ChainParams, FilterError> {
        ChainParams::in_ranges(self.error_rate, self.initial_size, self.expansion)
    }

    /// The `cf-*` defaults of a new cuckoo filter.
    pub fn cf_defaults(&self) -> CfDefaults {
        self.cf.unwrap_or_else(CfDefaults::local)
    }

    /// The hash scheme of a new standard non-counting filter.
    pub fn scheme(&self) -> HashScheme {
        if self.redisbloom_scheme { HashScheme::Murmur64 } else { self.standard_scheme() }
    }

    /// The hash scheme of a new standard filter in scalebloom's hashing (plain or counting).
    pub fn standard_scheme(&self) -> HashScheme {
        if self.curved { HashScheme::Xxh3Curved } else { HashScheme::Xxh3Enhanced }
    }

    /// The seed of a new filter at `key`.
    pub fn seed(&self, key: &[u8]) -> u64 {
        if !self.random_seeds {
            return 0;
        }
        let mut h = SipHasher13::new_with_keys(self.secret[0], self.secret[1]);
        h.write(key);
        h.finish()
    }

    /// The explicit little-endian encoding `BF.REPLCONF` and the RDB aux data carry.
    pub fn encode(&self) -> [u8; ENCODED_LEN] {
        let mut out = [0u8; ENCODED_LEN];
        out[0] = VERSION;
        out[1..9].copy_from_slice(&self.secret[0].to_le_bytes());
        out[9..17].copy_from_slice(&self.secret[1].to_le_bytes());
        out[17] = if self.random_seeds { FLAG_RANDOM_SEEDS } else { 0 }
            | if self.redisbloom_scheme { FLAG_REDISBLOOM_SCHEME } else { 0 }
            | if self.blocked_layout { FLAG_BLOCKED_LAYOUT } else { 0 }
            | if self.curved { FLAG_CURVED } else { 0 };
        out[18..26].copy_from_slice(&self.error_rate.to_bits().to_le_bytes());
        out[26..34].copy_from_slice(&self.initial_size.to_le_bytes());
        out[34..42].copy_from_slice(&self.expansion.to_le_bytes());
        let cf = self.cf_defaults();
        out[42..44].copy_from_slice(&cf.bucket_size.to_le_bytes());
        out[44..46].copy_from_slice(&cf.max_iterations.to_le_bytes());
        out[46..48].copy_from_slice(&cf.expansion.to_le_bytes());
        out[48..56].copy_from_slice(&cf.initial_size.to_le_bytes());
        out
    }

    /// Decodes and validates [`Settings::encode`]'s bytes: every field must be a value the
    /// server's own configuration could hold.
    pub fn decode(bytes: &[u8]) -> Result<Settings, &'static str> {
        let version = *bytes.first().ok_or("bad length")?;
        let len = match version {
            VERSION => ENCODED_LEN,
            VERSION_1 => ENCODED_LEN_V1,
            _ if bytes.len() == ENCODED_LEN || bytes.len() == ENCODED_LEN_V1 => {
                return Err("unknown version");
            }
            _ => return Err("bad length"),
        };
        if bytes.len() != len {
            return Err("bad length");
        }
        let u64_at = |at: usize| {
            let mut b = [0u8; 8];
            b.copy_from_slice(&bytes[at..at + 8]);
            u64::from_le_bytes(b)
        };
        let flags = bytes[17];
        if flags & !ALL_FLAGS != 0 {
            return Err("unknown flags");
        }
        let error_rate = f64::from_bits(u64_at(18));
        if !config::valid_error_rate(error_rate) || capped_error(error_rate) != error_rate {
            return Err("bad error rate");
        }
        let initial_size = u64_at(26);
        if !(1..=MAX_CAPACITY).contains(&initial_size) {
            return Err("bad initial size");
        }
        let expansion = u64_at(34);
        if expansion > MAX_EXPANSION {
            return Err("bad expansion");
        }
        let cf = if version == VERSION_1 { None } else { Some(decode_cf(bytes)?) };
        Ok(Settings {
            secret: [u64_at(1), u64_at(9)],
            random_seeds: flags & FLAG_RANDOM_SEEDS != 0,
            redisbloom_scheme: flags & FLAG_REDISBLOOM_SCHEME != 0,
            blocked_layout: flags & FLAG_BLOCKED_LAYOUT != 0,
            curved: flags & FLAG_CURVED != 0,
            error_rate,
            initial_size,
            expansion,
            cf,
        })
    }
}

/// The `cf-*` defaults of a version-2 encoding, each within its setting's bounds.
fn decode_cf(bytes: &[u8]) -> Result<CfDefaults, &'static str> {
    use crate::filter::cuckoo::params as cf;
    let u16_at = |at: usize| u16::from_le_bytes([bytes[at], bytes[at + 1]]);
    let mut b = [0u8; 8];
    b.copy_from_slice(&bytes[48..56]);
    let d = CfDefaults {
        bucket_size: u16_at(42),
        max_iterations: u16_at(44),
        expansion: u16_at(46),
        initial_size: u64::from_le_bytes(b),
    };
    if !(1..=cf::MAX_BUCKET_SIZE).contains(&d.bucket_size) {
        return Err("bad cf bucket size");
    }
    if d.max_iterations == 0 {
        return Err("bad cf max iterations");
    }
    if d.expansion > cf::MAX_EXPANSION {
        return Err("bad cf expansion");
    }
    // `cf-initial-size`'s bounds (config.rs).
    if !(4..=cf::MAX_CAPACITY_8X).contains(&d.initial_size) {
        return Err("bad cf initial size");
    }
    Ok(d)
}

/// This process' secret, drawn on first use from the standard library's randomly keyed
/// SipHash (`RandomState`, seeded from the OS).
fn local_secret() -> [u64; 2] {
    static SECRET: OnceLock<[u64; 2]> = OnceLock::new();
    *SECRET.get_or_init(|| {
        let state = RandomState::new();
        [state.hash_one(0u8), state.hash_one(1u8)]
    })
}

/// The settings of the stream this server follows (its primary's, or its AOF's during
/// replay); `None` on a primary.
static STREAM: Mutex<Option<Settings>> = Mutex::new(None);

/// Whether `STREAM` holds settings: read without the lock (and without asking Redis for the
/// context flags) on a primary's every creation.
static HAS_STREAM: AtomicBool = AtomicBool::new(false);

/// Whether the next creating command on a primary must send `BF.REPLCONF` first.
static PENDING: AtomicBool = AtomicBool::new(true);

/// This server's own settings.
pub fn local() -> Settings {
    let relaxed = Ordering::Relaxed;
    Settings {
        secret: local_secret(),
        random_seeds: config::RANDOM_SEEDS.load(relaxed),
        redisbloom_scheme: config::REDISBLOOM_SCHEME.load(relaxed),
        blocked_layout: config::BLOCKED_LAYOUT.load(relaxed),
        curved: true,
        error_rate: config::ERROR_RATE.get(),
        initial_size: config::INITIAL_SIZE.get() as u64,
        expansion: config::EXPANSION.get() as u64,
        cf: Some(CfDefaults::local()),
    }
}

fn stream() -> Option<Settings> {
    *STREAM.lock().unwrap_or_else(PoisonError::into_inner)
}

/// The settings a creating command uses: the stream's when it [follows
/// it](Call::follows_stream) and the server has them; its origin is asked for only on a
/// server that has a stream's settings.
pub fn for_command(call: &Call) -> Settings {
    if !HAS_STREAM.load(Ordering::Relaxed) || !call.follows_stream() {
        return local();
    }
    stream().unwrap_or_else(local)
}

/// The `cf-*` defaults a creating command uses: `for_command(call).cf_defaults()`, without
/// building the other settings when the server's own apply (the usual case).
pub fn cf_for_command(call: &Call) -> CfDefaults {
    if !HAS_STREAM.load(Ordering::Relaxed) || !call.follows_stream() {
        return CfDefaults::local();
    }
    stream().unwrap_or_else(local).cf_defaults()
}

/// Adopts a stream's settings (`BF.REPLCONF`, RDB aux data).
pub fn adopt(settings: Settings) {
    *STREAM.lock().unwrap_or_else(PoisonError::into_inner) = Some(settings);
    HAS_STREAM.store(true, Ordering::Relaxed);
}

/// What this server's RDB keeps: the stream's settings, if it follows one.
pub fn for_rdb() -> Option<Settings> {
    stream()
}

/// Something may have started a new consumer of the stream or changed the settings: the next
/// creating command sends them again.
pub fn mark_pending() {
    PENDING.store(true, Ordering::Relaxed);
}

/// The server became a primary (or finished loading as one): it follows no stream now, and
/// sends its own settings before its next creation.
pub fn become_primary() {
    *STREAM.lock().unwrap_or_else(PoisonError::into_inner) = None;
    HAS_STREAM.store(false, Ordering::Relaxed);
    mark_pending();
}

/// Before a creating command replicates verbatim: on a primary, sends `BF.REPLCONF <settings>
/// <padding>` if anything since the last one may need them. Commands that follow the stream
/// pass on the stream's own `BF.REPLCONF` instead. The origin is asked for only when a send
/// is due.
pub fn announce_if_pending(call: &Call) {
    if !PENDING.load(Ordering::Relaxed)
        || call.follows_stream()
        || !PENDING.swap(false, Ordering::Relaxed)
    {
        return;
    }
    let blob = local().encode();
    replicate!(call, c"BF.REPLCONF", Bytes(&blob), Bytes(PADDING));
}

/// Replicates a command that created a filter, verbatim, after the creation settings when due
/// ([`announce_if_pending`]): a replica or AOF replay derives the same parameters and seed from
/// the same command.
pub fn replicate_creating_command(call: &Call) {
    announce_if_pending(call);
    call.replicate_verbatim();
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> Settings {
        Settings {
            secret: [0x0123_4567_89ab_cdef, 0xfedc_ba98_7654_3210],
            random_seeds: true,
            redisbloom_scheme: false,
            blocked_layout: false,
            curved: true,
            error_rate: 0.01,
            initial_size: 100,
            expansion: 2,
            cf: Some(CfDefaults {
                bucket_size: 4,
                initial_size: 4096,
                max_iterations: 7,
                expansion: 2,
            }),
        }
    }

    #[test]
    fn round_trips() {
        for (random_seeds, redisbloom_scheme) in [(true, false), (false, true), (true, true)] {
            let s = Settings { random_seeds, redisbloom_scheme, expansion: 0, ..sample() };
            assert_eq!(Settings::decode(&s.encode()), Ok(s));
        }
        let blocked = Settings { blocked_layout: true, ..sample() };
        assert_eq!(blocked.encode()[17], FLAG_RANDOM_SEEDS | FLAG_BLOCKED_LAYOUT | FLAG_CURVED);
        assert_eq!(Settings::decode(&blocked.encode()), Ok(blocked));
    }

    /// A stream without the curved flag makes scheme 1 standard filters, plain and counting,
    /// as its writer does; this build's own settings make scheme 5.
    #[test]
    fn the_standard_scheme_follows_the_curved_flag() {
        let older = Settings { curved: false, ..sample() };
        assert_eq!(older.encode()[17], FLAG_RANDOM_SEEDS);
        assert_eq!(Settings::decode(&older.encode()), Ok(older));
        assert_eq!(older.scheme(), HashScheme::Xxh3Enhanced);
        assert_eq!(older.standard_scheme(), HashScheme::Xxh3Enhanced);
        assert_eq!(sample().scheme(), HashScheme::Xxh3Curved);
        assert!(local().curved);
        let rb = Settings { redisbloom_scheme: true, ..sample() };
        assert_eq!(rb.scheme(), HashScheme::Murmur64);
    }

    #[test]
    fn layout_is_explicit_little_endian() {
        let b = sample().encode();
        assert_eq!(b.len(), ENCODED_LEN);
        assert_eq!(b.len(), 56);
        assert_eq!(b[0], 2);
        assert_eq!(&b[1..9], &0x0123_4567_89ab_cdef_u64.to_le_bytes());
        assert_eq!(b[17], FLAG_RANDOM_SEEDS | FLAG_CURVED);
        assert_eq!(&b[18..26], &0.01f64.to_bits().to_le_bytes());
        assert_eq!(&b[26..34], &100u64.to_le_bytes());
        assert_eq!(&b[34..42], &2u64.to_le_bytes());
        assert_eq!(&b[42..48], &[4, 0, 7, 0, 2, 0]);
        assert_eq!(&b[48..56], &4096u64.to_le_bytes());
    }

    /// Version 1 (no `cf-*` defaults): its 42 bytes decode, with
    /// no cuckoo defaults (the server's own are used).
    #[test]
    fn reads_version_1() {
        let mut v1 = sample().encode()[..ENCODED_LEN_V1].to_vec();
        v1[0] = 1;
        assert_eq!(Settings::decode(&v1), Ok(Settings { cf: None, ..sample() }));
        let mut long = sample().encode().to_vec();
        long[0] = 1;
        assert_eq!(Settings::decode(&long), Err("bad length"));
        let mut short = v1.clone();
        short[0] = 2;
        assert_eq!(Settings::decode(&short), Err("bad length"));
    }

    #[test]
    fn refuses_what_a_config_could_not_hold() {
        let good = sample().encode();
        let with = |at: usize, bytes: &[u8]| {
            let mut b = good;
            b[at..at + bytes.len()].copy_from_slice(bytes);
            Settings::decode(&b)
        };
        assert_eq!(Settings::decode(&good[..55]), Err("bad length"));
        assert_eq!(Settings::decode(&[good.as_slice(), &[0]].concat()), Err("bad length"));
        assert_eq!(Settings::decode(&[]), Err("bad length"));
        assert_eq!(with(0, &[3]), Err("unknown version"));
        assert_eq!(with(17, &[16]), Err("unknown flags"));
        for bad in [0.0, -0.01, 1.0, 0.5, f64::NAN, f64::INFINITY] {
            assert_eq!(with(18, &f64::to_bits(bad).to_le_bytes()), Err("bad error rate"), "{bad}");
        }
        assert_eq!(with(26, &0u64.to_le_bytes()), Err("bad initial size"));
        assert_eq!(with(26, &(MAX_CAPACITY + 1).to_le_bytes()), Err("bad initial size"));
        assert_eq!(with(34, &(MAX_EXPANSION + 1).to_le_bytes()), Err("bad expansion"));
        assert!(with(26, &MAX_CAPACITY.to_le_bytes()).is_ok());
        assert!(with(34, &MAX_EXPANSION.to_le_bytes()).is_ok());
        assert_eq!(with(42, &0u16.to_le_bytes()), Err("bad cf bucket size"));
        assert_eq!(with(42, &256u16.to_le_bytes()), Err("bad cf bucket size"));
        assert_eq!(with(44, &0u16.to_le_bytes()), Err("bad cf max iterations"));
        assert_eq!(with(46, &32769u16.to_le_bytes()), Err("bad cf expansion"));
        assert!(with(46, &0u16.to_le_bytes()).is_ok());
        assert_eq!(with(48, &3u64.to_le_bytes()), Err("bad cf initial size"));
        assert_eq!(with(48, &((1u64 << 30) + 1).to_le_bytes()), Err("bad cf initial size"));
        assert!(with(48, &(1u64 << 30).to_le_bytes()).is_ok());
    }

    #[test]
    fn seeds_depend_on_secret_and_key_only() {
        let s = sample();
        assert_eq!(s.seed(b"user:1"), s.seed(b"user:1"));
        assert_ne!(s.seed(b"user:1"), s.seed(b"user:2"));
        let other = Settings { secret: [1, 2], ..s };
        assert_ne!(s.seed(b"user:1"), other.seed(b"user:1"));
        assert_eq!(Settings { random_seeds: false, ..s }.seed(b"user:1"), 0);
        // Pinned: a change of derivation would make replicas of older primaries diverge.
        assert_eq!(s.seed(b"user:1"), 7_275_410_155_110_044_493);
    }
}
