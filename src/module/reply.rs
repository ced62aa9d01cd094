//! Replies as values. Command handlers build a whole [`Reply`] before anything is sent, so a
//! handler that fails half-way never leaves a client with half a reply; [`send`] sends it.

use std::ffi::{CString, c_int};

use redis_module::{Context, raw};

/// One reply, in the shapes BF.* commands use.
#[derive(Debug, Clone, PartialEq)]
pub enum Reply {
    /// `+OK`.
    Ok,
    /// An integer.
    Int(i64),
    /// A RESP3 boolean; RESP2 clients get `:1` / `:0`.
    Bool(bool),
    /// A double (RESP3); RESP2 clients get it as a bulk string.
    Double(f64),
    /// A bulk string.
    Bulk(Vec<u8>),
    /// A null.
    Null,
    /// An array.
    Array(Vec<Reply>),
    /// An array of RESP3 booleans (`:1` / `:0` for RESP2), optionally ending with an error:
    /// the per-item answers of BF.MADD, BF.INSERT and BF.MEXISTS, one byte per item rather than
    /// one [`Reply`] per item.
    Bools(Vec<bool>, Option<String>),
    /// An array of `len` integers, each 1 but those listed as (index, value) in increasing
    /// index order: the per-item answers of CF.INSERT / CF.INSERTNX (1: inserted, the usual
    /// outcome), sent without one [`Reply`] or one vector entry per item. With `bools`, each
    /// is sent as a RESP3 boolean, true for 1 (`:1` / `:0` to RESP2 clients).
    Ones { len: usize, except: Vec<(usize, i64)>, bools: bool },
    /// A map with simple-string keys; RESP2 clients get a flat array of key, value, ….
    Map(Vec<(&'static str, Reply)>),
    /// An error reply (the text as sent, including its code such as `ERR`).
    Error(String),
    /// The standard wrong-number-of-arguments error, naming the command as the client sent it.
    WrongArity,
}

impl Reply {
    /// An error reply from static text.
    pub fn err(s: &str) -> Self {
        Reply::Error(s.to_string())
    }
}

/// Sends a reply built by a handler, to the client of the running command `ctx`.
///
/// A boolean, the reply of BF.ADD, BF.EXISTS and the other single-item commands, is sent
/// right here, in the caller; every other shape by `send_other`.
#[inline(always)]
pub fn send(context: &Context, reply: Reply) {
    if let Reply::Bool(b) = reply {
        if let Some(reply_with_bool) = api!(RedisModule_ReplyWithBool) {
            // SAFETY: `context` wraps the running command's live context.
            unsafe { reply_with_bool(context.ctx, c_int::from(b)) };
        }
        // A boolean owns nothing: skip the drop glue of the whole enum.
        std::mem::forget(reply);
        return;
    }
    send_other(context, reply);
}

/// [`send`] of any shape.
#[inline(never)]
fn send_other(context: &Context, reply: Reply) {
    let ctx = context.ctx;
    match reply {
        Reply::Ok => {
            raw::reply_with_simple_string(ctx, c"OK".as_ptr());
        }
        Reply::Int(v) => {
            raw::reply_with_long_long(ctx, v);
        }
        Reply::Bool(b) => {
            raw::reply_with_bool(ctx, c_int::from(b));
        }
        Reply::Double(x) => {
            raw::reply_with_double(ctx, x);
        }
        Reply::Bulk(b) => {
            raw::reply_with_string_buffer(ctx, b.as_ptr().cast(), b.len());
        }
        Reply::Null => {
            raw::reply_with_null(ctx);
        }
        Reply::Array(items) => {
            raw::reply_with_array(ctx, items.len() as _);
            for item in items {
                send(context, item);
            }
        }
        Reply::Bools(values, error) => {
            raw::reply_with_array(ctx, (values.len() + usize::from(error.is_some())) as _);
            // The per-item loop of MADD/MEXISTS replies: the function pointer is looked up once
            // rather than through the crate's per-call wrapper.
            // Four at a time: the loop's count, compare and branch once per four calls.
            if let Some(reply_with_bool) = api!(RedisModule_ReplyWithBool) {
                let mut fours = values.chunks_exact(4);
                for four in &mut fours {
                    for &b in four {
                        // SAFETY: `ctx` is the running command's live context (`Context`
                        // wraps it).
                        unsafe { reply_with_bool(ctx, c_int::from(b)) };
                    }
                }
                for &b in fours.remainder() {
                    // SAFETY: as above.
                    unsafe { reply_with_bool(ctx, c_int::from(b)) };
                }
            }
            if let Some(text) = error {
                send(context, Reply::Error(text));
            }
        }
        Reply::Ones { len, except, bools } => {
            raw::reply_with_array(ctx, len as _);
            if bools {
                if let Some(reply_with_bool) = api!(RedisModule_ReplyWithBool) {
                    send_ones(len, &except, |v| {
                        // SAFETY: `ctx` is the running command's live context (`Context`
                        // wraps it).
                        unsafe { reply_with_bool(ctx, c_int::from(v == 1)) };
                    });
                }
            } else if let Some(reply_with_long_long) = api!(RedisModule_ReplyWithLongLong) {
                send_ones(len, &except, |v| {
                    // SAFETY: as above.
                    unsafe { reply_with_long_long(ctx, v) };
                });
            }
        }
        Reply::Map(fields) => {
            raw::reply_with_map(ctx, fields.len() as _);
            for (name, value) in fields {
                let name = CString::new(name).unwrap_or_default();
                raw::reply_with_simple_string(ctx, name.as_ptr());
                send(context, value);
            }
        }
        Reply::Error(text) => {
            let text = CString::new(text.replace(['\0', '\r', '\n'], " ")).unwrap_or_default();
            raw::reply_with_error(ctx, text.as_ptr());
        }
        Reply::WrongArity => {
            if let Some(wrong_arity) = api!(RedisModule_WrongArity) {
                // SAFETY: `ctx` is the running command's live context (`Context` wraps it).
                unsafe { wrong_arity(ctx) };
            }
        }
    }
}

/// The elements of [`Reply::Ones`], each through `one`: runs of 1 between the listed values,
/// four per loop turn (as `Bools`).
#[inline(always)]
fn send_ones(len: usize, except: &[(usize, i64)], one: impl Fn(i64)) {
    let ones = |n: usize| {
        for _ in 0..n / 4 {
            for _ in 0..4 {
                one(1);
            }
        }
        for _ in 0..n % 4 {
            one(1);
        }
    };
    let mut next = 0;
    for &(i, v) in except {
        // Indexes below `len`, increasing: each run is `next..i`. (Others, never made, are
        // skipped: every index of `0..len` still gets one element, in order, so the array has
        // the length announced.)
        if i < next || i >= len {
            continue;
        }
        ones(i - next);
        one(v);
        next = i + 1;
    }
    ones(len - next);
}

#[cfg(test)]
mod tests {
    use super::send_ones;
    use std::cell::RefCell;

    fn sent(len: usize, except: &[(usize, i64)]) -> Vec<i64> {
        let out = RefCell::new(Vec::new());
        send_ones(len, except, |v| out.borrow_mut().push(v));
        out.into_inner()
    }

    #[test]
    fn ones_with_the_listed_values_in_place() {
        assert_eq!(sent(0, &[]), Vec::<i64>::new());
        assert_eq!(sent(9, &[]), vec![1; 9]);
        assert_eq!(sent(6, &[(0, -1), (3, 0), (5, -1)]), vec![-1, 1, 1, 0, 1, -1]);
        assert_eq!(sent(3, &[(1, 0), (2, 0)]), vec![1, 0, 0]);
    }

    #[test]
    fn ones_keep_their_length_whatever_the_list() {
        // Out of order, repeated and out-of-range entries (never made) are skipped.
        assert_eq!(sent(4, &[(2, 0), (1, -1), (2, -1), (7, 0)]), vec![1, 1, 0, 1]);
    }
}
