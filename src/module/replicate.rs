//! Replicating a command other than the one running, written once for every type:
//! `replicate!` takes typed parts and builds the
//! `RedisModule_Replicate` call and its format string from them, so no command writes a
//! format by hand and no part can disagree with its format letter.
//!
//! Nothing is copied on this side: argv strings go by reference (`s`, `v`), bytes and words
//! by pointer (`b`, `c`), and Redis copies what it keeps. (The crate's `Context::replicate`
//! creates and frees a string per argument, which costs more than the write it replicates.)
//!
//! Parts:
//! - `Arg(a)`: one argv string ([`Arg`], e.g. [`Args::key_arg`](super::args::Args::key_arg)).
//! - `Args(s)`: argv strings (`&[Arg]`), e.g. the items that went in.
//! - `Int(n)`: an `i64`.
//! - `Bytes(b)`: a byte string (`&[u8]`).
//! - `Word(w)`: a NUL-terminated keyword (`&CStr`).

use std::ffi::{CStr, c_char, c_longlong};

use redis_module::raw;

use super::args::Arg;

/// A part `Arg(a)`: the argv string behind `a`.
#[inline(always)]
pub fn arg(a: Arg) -> *mut raw::RedisModuleString {
    a.raw()
}

/// A part `Args(s)`: a pointer to `s.len()` argv strings (`Arg` is `repr(transparent)` over
/// the argv pointer) and their count.
#[inline(always)]
pub fn args(s: &[Arg]) -> (*mut *mut raw::RedisModuleString, usize) {
    (s.as_ptr().cast::<*mut raw::RedisModuleString>().cast_mut(), s.len())
}

/// A part `Int(n)`.
#[inline(always)]
pub fn int(n: i64) -> c_longlong {
    n as c_longlong
}

/// A part `Bytes(b)`: its pointer and length.
#[inline(always)]
pub fn bytes(b: &[u8]) -> (*const c_char, usize) {
    (b.as_ptr().cast::<c_char>(), b.len())
}

/// A part `Word(w)`.
#[inline(always)]
pub fn word(w: &CStr) -> *const c_char {
    w.as_ptr()
}

/// `replicate!(call, c"CMD", Part(value), …)`: replicates `CMD` with the parts in order (see
/// the module docs for the parts), after the running command's own effects, inside its
/// `MULTI`/`EXEC` when it has more than one. Each part appends its letter to the format and
/// its value(s), converted by the typed function of the same name, to the arguments, so the
/// format and the arguments are made from the same list.
macro_rules! replicate {
    ($call:expr, $cmd:expr $(, $kind:ident($val:expr))* $(,)?) => {
        $crate::module::replicate::replicate!(@part $call, $cmd, [], [], []; $($kind($val),)*)
    };
    (@part $call:expr, $cmd:expr, [$($f:literal)*], [$($b:stmt;)*], [$($a:expr),*];
        Arg($v:expr), $($rest:tt)*) => {
        $crate::module::replicate::replicate!(@part $call, $cmd, [$($f)* "s"],
            [$($b;)* let s = $crate::module::replicate::arg($v);], [$($a,)* s]; $($rest)*)
    };
    (@part $call:expr, $cmd:expr, [$($f:literal)*], [$($b:stmt;)*], [$($a:expr),*];
        Args($v:expr), $($rest:tt)*) => {
        $crate::module::replicate::replicate!(@part $call, $cmd, [$($f)* "v"],
            [$($b;)* let (v, n) = $crate::module::replicate::args($v);], [$($a,)* v, n];
            $($rest)*)
    };
    (@part $call:expr, $cmd:expr, [$($f:literal)*], [$($b:stmt;)*], [$($a:expr),*];
        Int($v:expr), $($rest:tt)*) => {
        $crate::module::replicate::replicate!(@part $call, $cmd, [$($f)* "l"],
            [$($b;)* let l = $crate::module::replicate::int($v);], [$($a,)* l]; $($rest)*)
    };
    (@part $call:expr, $cmd:expr, [$($f:literal)*], [$($b:stmt;)*], [$($a:expr),*];
        Bytes($v:expr), $($rest:tt)*) => {
        $crate::module::replicate::replicate!(@part $call, $cmd, [$($f)* "b"],
            [$($b;)* let (b, n) = $crate::module::replicate::bytes($v);], [$($a,)* b, n];
            $($rest)*)
    };
    (@part $call:expr, $cmd:expr, [$($f:literal)*], [$($b:stmt;)*], [$($a:expr),*];
        Word($v:expr), $($rest:tt)*) => {
        $crate::module::replicate::replicate!(@part $call, $cmd, [$($f)* "c"],
            [$($b;)* let c = $crate::module::replicate::word($v);], [$($a,)* c]; $($rest)*)
    };
    (@part $call:expr, $cmd:expr, [$($f:literal)*], [$($b:stmt;)*], [$($a:expr),*]; ) => {{
        let cmd: &::std::ffi::CStr = $cmd;
        let ctx: *mut ::redis_module::raw::RedisModuleCtx = $call.ctx;
        $($b)*
        if let Some(replicate) = api!(RedisModule_Replicate) {
            // SAFETY: `ctx` is the running command's context and `cmd` a NUL-terminated name.
            // The format is made of one letter per part, each followed in the arguments by
            // exactly what `RM_Replicate` reads for it, from the typed function of the part:
            // `s` a RedisModuleString (an argv string, alive for the command), `v` a
            // (RedisModuleString**, size_t) vector of argv strings, `l` a long long, `b` a
            // (char*, size_t) buffer, `c` a NUL-terminated string; the borrowed values live
            // until the call returns, and Redis copies or retains what it keeps.
            unsafe {
                replicate(ctx, cmd.as_ptr(), concat!($($f,)* "\0").as_ptr().cast() $(, $a)*);
            }
        }
    }};
}

pub(crate) use replicate;
