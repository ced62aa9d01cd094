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
    /// An array of integers: the per-item answers of CF.INSERT / CF.INSERTNX, sent without one
    /// [`Reply`] per item.
    Ints(Vec<i64>),
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
pub fn send(context: &Context, reply: Reply) {
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
        Reply::Ints(values) => {
            raw::reply_with_array(ctx, values.len() as _);
            // Four at a time, as `Bools`.
            if let Some(reply_with_long_long) = api!(RedisModule_ReplyWithLongLong) {
                let mut fours = values.chunks_exact(4);
                for four in &mut fours {
                    for &v in four {
                        // SAFETY: `ctx` is the running command's live context (`Context`
                        // wraps it).
                        unsafe { reply_with_long_long(ctx, v) };
                    }
                }
                for &v in fours.remainder() {
                    // SAFETY: as above.
                    unsafe { reply_with_long_long(ctx, v) };
                }
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
