//! Every error reply the module sends, written once.
//!
//! The wording is RedisBloom 8's, so clients and scripts that match on it keep working; the
//! replies RedisBloom lacks (limits it never had) say what was refused and which setting decides.

use crate::filter::FilterError;
use crate::filter::error::MergeRefusal;

pub const BAD_ERROR_RATE: &str = "ERR bad error rate";
pub const ERROR_RATE_RANGE: &str = "ERR error rate must be in the range (0.000000, 1.000000)";
pub const BAD_CAPACITY: &str = "ERR bad capacity";
pub const CAPACITY_RANGE: &str = "ERR capacity must be in the range [1, 1073741824]";
pub const NO_EXPANSION: &str = "ERR no expansion";
pub const BAD_EXPANSION: &str = "ERR bad expansion";
pub const EXPANSION_RANGE: &str = "ERR expansion must be in the range [0, 32768]";
pub const NONSCALING_EXPANSION: &str = "Nonscaling filters cannot expand";
pub const ITEM_EXISTS: &str = "ERR item exists";
pub const NOT_FOUND: &str = "ERR not found";
pub const WRONG_TYPE: &str = "WRONGTYPE Operation against a key holding the wrong kind of value";
pub const INVALID_INFO: &str = "Invalid information value";
pub const UNKNOWN_ARGUMENT: &str = "Unknown argument received";
pub const INSERT_BAD_CAPACITY: &str = "Bad capacity";
pub const INSERT_BAD_ERROR_RATE: &str = "Bad error rate";
pub const INSERT_BAD_EXPANSION: &str = "Bad expansion";
pub const SYNTAX: &str = "ERR syntax error";
pub const NONSCALING_FULL: &str = "ERR non scaling filter is full";
pub const PROBLEM_INSERTING: &str = "ERR problem inserting into filter";
pub const NO_MEMORY: &str = "ERR Insufficient memory to create filter";
pub const SCANDUMP_ITER: &str = "Second argument must be numeric";
pub const LOADCHUNK_ITER: &str = "ERR Second argument must be numeric";
pub const BAD_DATA: &str = "ERR received bad data";
/// RedisBloom answers `ERR received bad data` here too; the rest says why.
pub const LOADCHUNK_KEY_EXISTS: &str = "ERR received bad data: the key already exists, and a BF.LOADCHUNK header (iterator 1) only creates a new filter; DEL the key first or load under another name";
pub const CHUNK_OFFSET: &str = "ERR invalid offset - no link found";
pub const CHUNK_TOO_BIG: &str = "ERR invalid chunk - Too big for current filter";
pub const NOT_RESTORING: &str = "ERR BF.LOADCHUNK data chunks go only into a filter that its BF.LOADCHUNK header created and that has taken no add since; this key holds another filter";
pub const REPLCONF_INTERNAL: &str =
    "ERR BF.REPLCONF is internal: only a primary's replication stream or the AOF may send it";
pub const NOT_COUNTING: &str = "ERR not a counting filter: items can be deleted only from a filter created with COUNTING 4 or COUNTING 8";
pub const BAD_WINDOW: &str =
    "ERR WINDOW takes a duration (<n>ms, <n>s, <n>m, <n>h or <n>d, at most 2^40 ms) or ITEMS";
pub const WINDOW_OPTIONS: &str = "ERR a WINDOW filter never grows and has no counters: EXPANSION and COUNTING cannot go with WINDOW";
pub const WINDOWADD_INTERNAL: &str =
    "ERR BF.WINDOWADD is internal: only the replication stream and AOF replay may run it";
pub const WINDOW_SCANDUMP_INTO: &str =
    "ERR received bad data: a windowed filter's chunks go only into a windowed filter";
pub const BAD_COUNTING: &str = "ERR COUNTING must be 4 or 8 (bits per counter)";
pub const COUNTING_REDISBLOOM_SCHEME: &str = "ERR COUNTING filters use scalebloom's own hash scheme: not available while bf.redisbloom-scheme is yes";
pub const BAD_LAYOUT: &str = "ERR LAYOUT must be STANDARD or BLOCKED";
pub const COUNTING_BLOCKED: &str =
    "ERR LAYOUT BLOCKED has no counting form: COUNTING cannot go with LAYOUT BLOCKED";
pub const BLOCKED_REDISBLOOM_SCHEME: &str = "ERR LAYOUT BLOCKED uses scalebloom's own hash scheme: not available while bf.redisbloom-scheme is yes";
pub const WINDOW_BLOCKED: &str =
    "ERR a WINDOW filter has its own layout: LAYOUT BLOCKED cannot go with WINDOW";
pub const ERROR_TOO_SMALL: &str =
    "ERR error rate too small: a layer's error would fall below 1e-19 (more than 64 hashes)";
pub const WINDOW_NO_DELETE: &str = "ERR a windowed filter has no deletes: its items expire by themselves (BF.DEL and BF.MDEL take filters created with COUNTING 4 or COUNTING 8)";
pub const WINDOW_NO_DEBUG: &str =
    "ERR a windowed filter has no layers to show: BF.STATS describes its window and generations";

pub const DEBUG_CLOCK_OFF: &str =
    "ERR the debug clock is off: load the module with `window-debug-clock yes` (tests only)";
pub const DEBUG_CLOCK_USAGE: &str = "ERR BF.DEBUGCLOCK GET | SET <ms> | ADVANCE <ms>";

/// A `BF.REPLCONF` whose settings fail validation (`why`).
pub fn replconf_refused(why: &str) -> String {
    format!("ERR BF.REPLCONF: {why}")
}

/// A cuckoo filter option whose value is not an integer (RedisBloom's words).
pub fn cf_cannot_parse(option: &str) -> String {
    format!("Couldn't parse {option}")
}

/// `CONFIG SET` of a setting (named as the server knows it) to a value it refuses, `why`
/// saying so.
pub fn config_value(name: &str, why: &str) -> String {
    format!("Value for `{name}` {why}")
}

/// `CONFIG SET` of an error rate that is not a number (RedisBloom 8's words, its config.c).
pub fn config_not_a_number(name: &str, value: &str) -> String {
    config_value(name, &format!("is not a number: '{value}'"))
}

/// `CONFIG SET` of an error rate out of range (RedisBloom 8's words).
pub fn config_error_rate(name: &str) -> String {
    config_value(name, "must be in the range (0.000000, 1.000000)")
}

/// `CONFIG SET` of an integer out of its bounds (RedisBloom 8's words).
pub fn config_range(name: &str, min: i64, max: i64) -> String {
    config_value(name, &format!("must be in the range [{min}, {max}]"))
}

/// `CONFIG SET bf.layout` to something else than its two values.
pub fn config_layout(name: &str) -> String {
    config_value(name, "must be standard or blocked")
}

/// A redis.conf `bf.compat` line that differs from the module argument (or its default).
pub fn config_compat(value: &str) -> String {
    format!(
        "bf.compat is set by the module argument (loadmodule ... compat <release>), not to '{value}' here"
    )
}

/// A creation option given twice.
pub fn repeated_option(name: &str) -> String {
    format!("ERR {name} is given more than once")
}

/// An option of cuckoo filters given to a Bloom filter command.
pub fn cuckoo_option(name: &str) -> String {
    format!(
        "ERR {name} is an option of cuckoo filters (CF.RESERVE, CF.INSERT), not of Bloom filters"
    )
}

/// An option of Bloom filters given to a cuckoo filter command.
pub fn bloom_option(name: &str) -> String {
    format!(
        "ERR {name} is an option of Bloom filters (BF.RESERVE, BF.INSERT), not of cuckoo filters"
    )
}

/// A cuckoo filter `CF.ADD` or `CF.INSERT` would make from `cf-initial-size` with
/// `cf-bucket-size` slots per bucket, which do not fit.
pub fn cf_initial_size_too_small(initial_size: u64, bucket_size: u16) -> String {
    format!(
        "ERR Could not create filter: cf-initial-size ({initial_size}) is below 2 * cf-bucket-size ({bucket_size})"
    )
}

pub const INTERNAL: &str =
    "ERR internal error in scalebloom: the command was aborted, see the server log";

/// The reply text for a core error met while creating or growing a filter.
pub fn text(e: &FilterError) -> String {
    let s = match e {
        FilterError::ErrorRange => ERROR_RATE_RANGE,
        FilterError::CapacityRange => CAPACITY_RANGE,
        FilterError::ExpansionRange => EXPANSION_RANGE,
        FilterError::ErrorTooSmall => ERROR_TOO_SMALL,
        FilterError::NonscalingFull => NONSCALING_FULL,
        FilterError::TooManyLayers | FilterError::TooLarge | FilterError::BadParameter => {
            PROBLEM_INSERTING
        }
        FilterError::OutOfMemory => NO_MEMORY,
        FilterError::BadData => BAD_DATA,
        FilterError::ChunkOffset => CHUNK_OFFSET,
        FilterError::ChunkTooBig => CHUNK_TOO_BIG,
        FilterError::NotCounting => NOT_COUNTING,
        // A cuckoo filter's own refusals, which its commands answer with `cuckoo_text`.
        FilterError::CapacityTooSmall
        | FilterError::BucketSizeRange
        | FilterError::MaxIterationsRange
        | FilterError::MaxExpansions
        | FilterError::BadHeader
        | FilterError::UnsupportedEncoding(_)
        | FilterError::Unsupported => return cuckoo_text(e),
        FilterError::FilterLimit { needed, limit } => {
            return format!(
                "ERR filter would need {needed} bytes, over the per-filter limit bf.max-filter-bytes ({limit})"
            );
        }
        FilterError::MaxMemory { needed } => {
            return format!(
                "OOM allocating {needed} bytes for the filter would exceed 'maxmemory'"
            );
        }
        FilterError::MergeRefused(why) => merge_refusal(*why),
    };
    s.to_string()
}

// ---- BF.MERGE and LIKE ----

/// `BF.MERGE`'s refusals: what one value cannot hold.
pub fn merge_refusal(why: MergeRefusal) -> &'static str {
    match why {
        MergeRefusal::CountingWithPlain => {
            "ERR cannot merge a counting filter with a plain one: the result could not delete items"
        }
        MergeRefusal::CounterWidths => {
            "ERR cannot merge counting filters of different counter widths (COUNTING 4 and 8)"
        }
        MergeRefusal::RedisBloomLayout => {
            "ERR filters in RedisBloom's layout merge only with filters in that layout"
        }
        MergeRefusal::TooManyParts => {
            "ERR the merge would keep more than 64 filters apart in one key; create the sources with LIKE so that they merge into one"
        }
        MergeRefusal::Windows => {
            "ERR BF.MERGE takes Bloom filters without a window: windowed filters do not merge"
        }
    }
}

/// `BF.RESERVE`/`BF.INSERT ... LIKE otherkey` when `otherkey` holds no filter.
pub const LIKE_NOT_FOUND: &str = "ERR LIKE: the key it names holds no Bloom filter";
/// `LIKE` with options that set what it copies.
pub const LIKE_WITH_OPTIONS: &str = "ERR LIKE copies the other filter's capacity, error rate and options: give no CAPACITY, ERROR, EXPANSION, NONSCALING, COUNTING, WINDOW or LAYOUT with it";

// ---- cuckoo filters (RedisBloom 8's words) ----

pub const CF_CAPACITY_RANGE: &str = "Capacity must be in the range [2 * BUCKETSIZE, 1073741824]";
pub const CF_INSERT_CAPACITY_RANGE: &str =
    "Capacity must be in the range [cf-bucket-size * 2, 1073741824]";
pub const CF_BUCKET_SIZE_RANGE: &str = "BUCKETSIZE: value must be in the range [1, 255]";
pub const CF_MAX_ITERATIONS_RANGE: &str = "MAXITERATIONS: value must be in the range [1, 65535]";
pub const CF_EXPANSION_RANGE: &str = "EXPANSION: value must be in the range [0, 32768]";
pub const CF_FINGERPRINT_RANGE: &str = "FINGERPRINT: value must be 8, 16 or 32";
pub const CF_DEL_NOT_FOUND: &str = "Not found";
pub const CF_COMPACT_NOT_FOUND: &str = "Cuckoo filter was not found";
pub const CF_MAX_EXPANSIONS: &str = "Maximum expansions reached";
pub const CF_FULL: &str = "Filter is full";
pub const CF_INSERT_NO_MEMORY: &str = "ERR Insufficient memory";
pub const CF_CANNOT_CREATE: &str = "ERR Could not create filter";
pub const CF_INVALID_POSITION: &str = "Invalid position";
pub const CF_INVALID_HEADER: &str = "Invalid header";
pub const CF_BAD_HEADER: &str = "Couldn't create filter!";
pub const CF_BAD_CHUNK: &str = "Couldn't load chunk!";
pub const CF_NOT_RESTORING: &str = "ERR CF.LOADCHUNK data chunks go only into a filter that its CF.LOADCHUNK header created and that has taken no other write since; this key holds another filter";

/// A `CF.LOADCHUNK` header from a client with more sub-filters than `cf-max-expansions`.
pub fn cf_header_max_filters(filters: u16, max: u16) -> String {
    format!("ERR the header describes {filters} sub-filters, more than cf-max-expansions ({max})")
}

/// The reply when making a cuckoo filter failed (CF.RESERVE, an insert that creates, a
/// CF.LOADCHUNK header): RedisBloom's words, or what refused the memory.
pub fn cf_create(e: &FilterError) -> String {
    match e {
        FilterError::OutOfMemory => NO_MEMORY.to_string(),
        e if e.is_limit() || *e == FilterError::CapacityTooSmall => cuckoo_text(e),
        _ => CF_CANNOT_CREATE.to_string(),
    }
}

/// The reply text of a cuckoo filter's core error.
pub fn cuckoo_text(e: &FilterError) -> String {
    let s = match e {
        FilterError::CapacityTooSmall => CF_CAPACITY_RANGE,
        FilterError::BucketSizeRange => CF_BUCKET_SIZE_RANGE,
        FilterError::MaxIterationsRange => CF_MAX_ITERATIONS_RANGE,
        FilterError::ExpansionRange => CF_EXPANSION_RANGE,
        FilterError::TooLarge => CF_CANNOT_CREATE,
        FilterError::MaxExpansions => CF_MAX_EXPANSIONS,
        FilterError::OutOfMemory => CF_INSERT_NO_MEMORY,
        FilterError::BadData => CF_BAD_HEADER,
        FilterError::BadHeader => CF_INVALID_HEADER,
        FilterError::ChunkOffset | FilterError::ChunkTooBig => CF_BAD_CHUNK,
        FilterError::UnsupportedEncoding(_) | FilterError::Unsupported => CF_BAD_HEADER,
        // The guard's refusals (the per-filter limit, `maxmemory`), and what only a Bloom
        // filter refuses, read as for a Bloom filter.
        FilterError::FilterLimit { .. }
        | FilterError::MaxMemory { .. }
        | FilterError::ErrorRange
        | FilterError::CapacityRange
        | FilterError::ErrorTooSmall
        | FilterError::BadParameter
        | FilterError::NonscalingFull
        | FilterError::TooManyLayers
        | FilterError::NotCounting
        | FilterError::MergeRefused(_) => return text(e),
    };
    s.to_string()
}

/// valkey-bloom's `BF.LOAD` on an existing key (the server's own `RESTORE` text).
pub const VALKEY_KEY_EXISTS: &str = "BUSYKEY Target key name already exists.";
/// valkey-bloom's refusal of a `BF.LOAD` payload that does not decode.
pub const VALKEY_DECODE: &str = "ERR bloom object decoding failed";
/// valkey-bloom's refusal of a `BF.LOAD` payload of another version.
pub const VALKEY_UNSUPPORTED_VERSION: &str =
    "ERR bloom object decoding failed. Unsupported version";
/// valkey-bloom's error rate (or tightening ratio) out of range in a payload.
pub const VALKEY_ERROR_RANGE: &str = "ERR (0 < error rate range < 1)";
/// valkey-bloom's expansion out of range.
pub const VALKEY_BAD_EXPANSION: &str = "ERR bad expansion";
/// valkey-bloom's capacity past `i64`, given or reached by scaling.
pub const VALKEY_BAD_CAPACITY: &str = "ERR bad capacity";
/// valkey-bloom's layer count at its bound.
pub const VALKEY_MAX_FILTERS: &str = "ERR bloom object reached max number of filters";
/// valkey-bloom's scale-out whose error would underflow.
pub const VALKEY_FP_ZERO: &str = "ERR false positive degrades to 0 on scale out";
/// valkey-bloom's `VALIDATESCALETO` past the memory limit.
pub const VALKEY_SCALE_TO_LIMIT: &str =
    "ERR provided VALIDATESCALETO causes bloom object to exceed memory limit";
/// valkey-bloom's `SEED` of another length than 32 bytes.
pub const VALKEY_BAD_SEED: &str = "ERR invalid seed";
/// valkey-bloom's `TIGHTENING` that is not a number.
pub const VALKEY_BAD_TIGHTENING: &str = "ERR bad tightening ratio";
/// valkey-bloom's `TIGHTENING` outside (0, 1).
pub const VALKEY_TIGHTENING_RANGE: &str = "ERR (0 < tightening ratio range < 1)";
/// valkey-bloom's `CONFIG SET` of a number setting to something else.
pub const CONFIG_NOT_A_FLOAT: &str = "Invalid floating-point value";
/// valkey-bloom's `VALIDATESCALETO 0`.
pub const VALKEY_CAPACITY_ZERO: &str = "ERR (capacity should be larger than 0)";
/// valkey-bloom's `NONSCALING` beside `VALIDATESCALETO`.
pub const VALKEY_NONSCALING_SCALE_TO: &str =
    "ERR cannot use NONSCALING and VALIDATESCALETO options together";
/// A valkey-bloom option (`SEED`, `TIGHTENING`, `VALIDATESCALETO`) beside one that makes
/// another kind of filter.
pub const VALKEY_OTHER_KIND: &str = "ERR SEED, TIGHTENING and VALIDATESCALETO make a valkey-bloom filter, which takes no COUNTING, WINDOW or LAYOUT";
/// valkey-bloom's `VALIDATESCALETO` past the error underflow.
pub const VALKEY_SCALE_TO_FP_ZERO: &str =
    "ERR provided VALIDATESCALETO causes false positive to degrade to 0";

/// The reply text of a refusal of a valkey-bloom filter: valkey-bloom's where only it has the
/// case, RedisBloom's (this module's) where both have one (a full nonscaling filter, limits).
pub fn valkey_text(e: &crate::filter::valkey::ValkeyError) -> String {
    use crate::filter::valkey::ValkeyError as E;
    match e {
        E::Decode => VALKEY_DECODE,
        E::UnsupportedVersion => VALKEY_UNSUPPORTED_VERSION,
        E::ErrorRateRange => VALKEY_ERROR_RANGE,
        E::BadExpansion => VALKEY_BAD_EXPANSION,
        E::BadCapacity => VALKEY_BAD_CAPACITY,
        E::NonScalingFull => NONSCALING_FULL,
        E::MaxFilters => VALKEY_MAX_FILTERS,
        E::FalsePositiveZero => VALKEY_FP_ZERO,
        E::ScaleToExceedsLimit => VALKEY_SCALE_TO_LIMIT,
        E::ScaleToFalsePositiveZero => VALKEY_SCALE_TO_FP_ZERO,
        E::TooLarge => return text(&FilterError::TooLarge),
        E::Alloc(e) => return text(e),
    }
    .to_string()
}
