//! One typed view of a command's arguments, used by every command.
//!
//! Arguments are borrowed straight from Redis' argv (no copies, no reference-count traffic);
//! numbers are parsed with Redis' own strictness (`string2ll`: no `+`, no leading zeros, no
//! spaces; doubles: finite decimal or exponent notation, no trailing junk).

use std::mem::ManuallyDrop;

use redis_module::{RedisString, raw};

/// One argument in argv. Its bytes are read through `AsRef<[u8]>`, so a slice of them is a
/// batch of items for the core ([`Args::items`]).
#[repr(transparent)]
#[derive(Clone, Copy)]
pub struct Arg(*mut raw::RedisModuleString);

impl AsRef<[u8]> for Arg {
    #[inline(always)]
    fn as_ref(&self) -> &[u8] {
        string_bytes(self.0)
    }
}

/// The signature of `RedisModule_StringPtrLen`.
type StringPtrLen =
    unsafe extern "C" fn(*const raw::RedisModuleString, *mut usize) -> *const std::ffi::c_char;

/// `RedisModule_StringPtrLen` as a plain function pointer, never absent: the hot path of every
/// MADD/MEXISTS item calls through it (an indirect call, no test), where the `Option` in
/// `raw` costs a load, a test and a branch per item (the pointer is read again after every
/// call: the compiler cannot know the call leaves it alone). Until
/// [`init_string_ptr_len`] copies Redis' function in, it is [`no_string_ptr_len`].
///
/// Written once, by [`init_string_ptr_len`] in `RedisModule_OnLoad` right after
/// `RedisModule_Init`, before any command or callback of the module runs, and never again:
/// the API-pointer premise of `module/mod.rs` holds for it as for `raw`'s pointers.
static mut STRING_PTR_LEN: StringPtrLen = no_string_ptr_len;

/// What [`STRING_PTR_LEN`] holds until Redis' function is copied in (no Redis: a unit test):
/// every string is empty.
unsafe extern "C" fn no_string_ptr_len(
    _: *const raw::RedisModuleString,
    len: *mut usize,
) -> *const std::ffi::c_char {
    if !len.is_null() {
        // SAFETY: the caller passes a valid, writable `len` (or null, excluded above).
        unsafe { len.write(0) };
    }
    c"".as_ptr()
}

/// Copies Redis' `RedisModule_StringPtrLen` into `STRING_PTR_LEN`, the copy argv strings are
/// read through. Called once, from `RedisModule_OnLoad` right after `RedisModule_Init`.
pub fn init_string_ptr_len() {
    if let Some(f) = api!(RedisModule_StringPtrLen) {
        // SAFETY: OnLoad runs on the main thread before any code that reads the pointer
        // (commands, callbacks, other threads of the module), and this is its only write.
        unsafe { STRING_PTR_LEN = f };
    }
}

/// The bytes of an argv string, read with `RedisModule_StringPtrLen` directly (the hot path of
/// every MADD/MEXISTS item: the crate's `string_as_slice` is an out-of-line call around it).
#[inline(always)]
fn string_bytes<'a>(s: *mut raw::RedisModuleString) -> &'a [u8] {
    let mut len = std::mem::MaybeUninit::<usize>::uninit();
    // SAFETY: the pointer is read by value under the premise of `STRING_PTR_LEN` (written once
    // before any command runs). `s` is an argv string, valid for the whole command;
    // StringPtrLen writes its length to `len` (it always does for a non-null `len`, as does
    // `no_string_ptr_len`) and returns its buffer, which stays valid and unchanged while argv
    // lives ('a is argv's).
    unsafe {
        let ptr = STRING_PTR_LEN(s, len.as_mut_ptr());
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
/// (`1k` = 1000, `1kb` = 1024, as redis.conf reads sizes).
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
