//! One typed view of a command's arguments, used by every command.
//!
//! Arguments are borrowed straight from Redis' argv (no copies, no reference-count traffic);
//! numbers are parsed with Redis' own strictness (`string2ll`: no `+`, no leading zeros, no
//! spaces; doubles: finite decimal or exponent notation, no trailing junk).

use std::mem::ManuallyDrop;
use std::sync::atomic::{AtomicPtr, Ordering};

use redis_module::{RedisString, raw};

/// One argument in argv. Its bytes are read through `AsRef<[u8]>`, so a slice of them is a
/// batch of items for the core ([`Args::items`]).
#[repr(transparent)]
#[derive(Clone, Copy)]
pub struct Arg(*mut raw::RedisModuleString);

impl Arg {
    /// The argv string itself, for the module API.
    #[inline(always)]
    pub fn raw(self) -> *mut raw::RedisModuleString {
        self.0
    }
}

impl AsRef<[u8]> for Arg {
    #[inline(always)]
    fn as_ref(&self) -> &[u8] {
        string_bytes(self.0)
    }
}

/// `RedisModule_StringPtrLen`'s type.
type StringPtrLen =
    unsafe extern "C" fn(*const raw::RedisModuleString, *mut usize) -> *const std::ffi::c_char;

/// The function [`string_bytes`] calls: [`resolve_string_ptr_len`] until that has run once,
/// then `RedisModule_StringPtrLen` itself. It holds only values of type [`StringPtrLen`], cast
/// to `*mut ()`. Read with one plain load and called directly (the hot path of every batched
/// item), where the API pointer (`api!`) costs a load through the GOT, a second load and a
/// null test per item.
static STRING_PTR_LEN: AtomicPtr<()> = AtomicPtr::new(resolve_string_ptr_len as *mut ());

/// The first call of [`STRING_PTR_LEN`]: reads the API pointer (set by `RedisModule_Init`
/// before any command, see the API-pointer premise in `module/mod.rs`), keeps it in
/// [`STRING_PTR_LEN`] for the later calls and forwards this one. Before Init (no API: unit
/// tests) every string reads as empty, as `string_bytes` did with a missing pointer.
unsafe extern "C" fn resolve_string_ptr_len(
    s: *const raw::RedisModuleString,
    len: *mut usize,
) -> *const std::ffi::c_char {
    match api!(RedisModule_StringPtrLen) {
        Some(f) => {
            STRING_PTR_LEN.store(f as *mut (), Ordering::Relaxed);
            // SAFETY: forwarded as received: the caller's contract is StringPtrLen's.
            unsafe { f(s, len) }
        }
        None => {
            // SAFETY: `len` is the caller's valid `usize` slot (string_bytes passes a local).
            unsafe { len.write(0) };
            c"".as_ptr()
        }
    }
}

/// The bytes of an argv string, read with `RedisModule_StringPtrLen` directly (the hot path of
/// every MADD/MEXISTS item: the crate's `string_as_slice` is an out-of-line call around it).
#[inline(always)]
pub(crate) fn string_bytes<'a>(s: *mut raw::RedisModuleString) -> &'a [u8] {
    let f = STRING_PTR_LEN.load(Ordering::Relaxed);
    // SAFETY: STRING_PTR_LEN only ever holds a `StringPtrLen` (its initial value and the
    // API's pointer, both of that type, cast to `*mut ()`), so this casts it back to the
    // type it had; a fn pointer and `*mut ()` have the same size.
    let ptr_len = unsafe { std::mem::transmute::<*mut (), StringPtrLen>(f) };
    // Not zeroed first (an instruction per item): both functions write it.
    let mut len = std::mem::MaybeUninit::<usize>::uninit();
    // SAFETY: `s` is an argv string, valid for the whole command; StringPtrLen returns its
    // buffer and writes its length (`RM_StringPtrLen` writes `*len` on every path when `len`
    // is not null), which stay valid and unchanged while argv lives ('a is argv's); the
    // resolver forwards to it or returns a static empty string and writes length 0.
    unsafe {
        let ptr = ptr_len(s, len.as_mut_ptr());
        std::slice::from_raw_parts(ptr.cast::<u8>(), len.assume_init())
    }
}

/// A command's argv, borrowed for the duration of the command.
pub struct Args<'a> {
    ctx: *mut raw::RedisModuleCtx,
    argv: &'a [*mut raw::RedisModuleString],
}

impl<'a> Args<'a> {
    /// Wraps Redis' argv (`argv[0]` is the command name).
    pub fn new(ctx: *mut raw::RedisModuleCtx, argv: &'a [*mut raw::RedisModuleString]) -> Self {
        Self { ctx, argv }
    }

    /// Number of arguments including the command name.
    pub fn len(&self) -> usize {
        self.argv.len()
    }

    /// Whether there are no arguments at all (Redis always passes the command name).
    pub fn is_empty(&self) -> bool {
        self.argv.is_empty()
    }

    /// The bytes of argument `i` (0 is the command name). `i < len()`.
    pub fn bytes(&self, i: usize) -> &'a [u8] {
        string_bytes(self.argv[i])
    }

    /// Arguments `from..` as byte slices.
    pub fn rest(&self, from: usize) -> impl ExactSizeIterator<Item = &'a [u8]> + '_ {
        self.items(from).iter().map(|a| string_bytes(a.0))
    }

    /// Arguments `from..` as a slice the batched core paths take directly: argv itself, each
    /// element read as bytes when the core hashes it (no vector of slices built first).
    pub fn items(&self, from: usize) -> &'a [Arg] {
        let argv: &'a [*mut raw::RedisModuleString] = &self.argv[from.min(self.argv.len())..];
        // SAFETY: `Arg` is `repr(transparent)` over `*mut RedisModuleString`, so the two slice
        // types have the same layout; the lifetime is argv's.
        unsafe { &*(std::ptr::from_ref(argv) as *const [Arg]) }
    }

    /// The key (argument 1) as a RedisString borrowed from argv. `ManuallyDrop`: argv owns it,
    /// so dropping our view must not release it.
    pub fn key(&self) -> ManuallyDrop<RedisString> {
        ManuallyDrop::new(RedisString::from_redis_module_string(self.ctx, self.argv[1]))
    }

    /// Argument `i` (`i < len()`) as a RedisString borrowed from argv (another key a command
    /// names), as [`Args::key`].
    pub fn string(&self, i: usize) -> ManuallyDrop<RedisString> {
        ManuallyDrop::new(RedisString::from_redis_module_string(self.ctx, self.argv[i]))
    }

    /// The key (argument 1) as an argv string.
    pub fn key_arg(&self) -> Arg {
        Arg(self.argv[1])
    }

    /// Whether argument `i` equals `keyword`, ignoring ASCII case.
    pub fn is(&self, i: usize, keyword: &str) -> bool {
        self.bytes(i).eq_ignore_ascii_case(keyword.as_bytes())
    }
}

/// Parses a signed 64-bit integer exactly as Redis' `string2ll` does.
pub fn parse_i64(b: &[u8]) -> Option<i64> {
    let (negative, digits) = match b {
        [b'-', rest @ ..] => (true, rest),
        _ => (false, b),
    };
    // No empty number, no leading zero, no "-0".
    if digits.is_empty() || (digits[0] == b'0' && (digits.len() > 1 || negative)) {
        return None;
    }
    let mut v: i64 = 0;
    for &c in digits {
        if !c.is_ascii_digit() {
            return None;
        }
        let d = i64::from(c - b'0');
        v = v.checked_mul(10)?;
        v = if negative { v.checked_sub(d)? } else { v.checked_add(d)? };
    }
    Some(v)
}

/// Parses a double: decimal or exponent notation, finite, no surrounding junk.
pub fn parse_f64(b: &[u8]) -> Option<f64> {
    let s = std::str::from_utf8(b).ok()?;
    let plain = !s.is_empty()
        && s.bytes().all(|c| c.is_ascii_digit() || matches!(c, b'.' | b'-' | b'+' | b'e' | b'E'));
    if !plain {
        return None; // refuses "inf", "nan", spaces, hex
    }
    s.parse::<f64>().ok().filter(|v| v.is_finite())
}

/// Parses a byte size: a non-negative integer with an optional k/kb/m/mb/g/gb suffix
/// (`1k` = 1000, `1kb` = 1024, as redis.conf reads sizes), or t/tb.
pub fn parse_memory(s: &str) -> Option<u64> {
    let lower = s.to_ascii_lowercase();
    let split = lower.find(|c: char| !c.is_ascii_digit()).unwrap_or(lower.len());
    let (num, unit) = lower.split_at(split);
    let n: u64 = num.parse().ok()?;
    let mul: u64 = match unit {
        "" | "b" => 1,
        "k" => 1000,
        "kb" => 1024,
        "m" => 1000 * 1000,
        "mb" => 1024 * 1024,
        "g" => 1000 * 1000 * 1000,
        "gb" => 1024 * 1024 * 1024,
        "t" => 1000 * 1000 * 1000 * 1000,
        "tb" => 1024 * 1024 * 1024 * 1024,
        _ => return None,
    };
    n.checked_mul(mul)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn integers_are_parsed_like_string2ll() {
        assert_eq!(parse_i64(b"0"), Some(0));
        assert_eq!(parse_i64(b"-12"), Some(-12));
        assert_eq!(parse_i64(b"9223372036854775807"), Some(i64::MAX));
        for bad in [
            &b""[..],
            b"+5",
            b"007",
            b"-0",
            b"1.0",
            b" 1",
            b"1 ",
            b"9223372036854775808",
            b"abc",
            b"-",
        ] {
            assert_eq!(parse_i64(bad), None, "{:?}", std::str::from_utf8(bad));
        }
    }

    #[test]
    fn doubles_refuse_junk_and_non_finite() {
        assert_eq!(parse_f64(b"0.01"), Some(0.01));
        assert_eq!(parse_f64(b"1e-3"), Some(0.001));
        assert_eq!(parse_f64(b".5"), Some(0.5));
        for bad in [&b""[..], b"abc", b"inf", b"nan", b"0.01x", b" 0.1", b"1e999", b"0x10"] {
            assert_eq!(parse_f64(bad), None, "{:?}", std::str::from_utf8(bad));
        }
    }

    #[test]
    fn memory_sizes_take_units() {
        assert_eq!(parse_memory("4gb"), Some(4 << 30));
        assert_eq!(parse_memory("4GB"), Some(4 << 30));
        assert_eq!(parse_memory("1k"), Some(1000));
        assert_eq!(parse_memory("123"), Some(123));
        assert_eq!(parse_memory("12x"), None);
        assert_eq!(parse_memory(""), None);
        assert_eq!(parse_memory("99999999999gb"), None);
    }
}
