//! Replies as values. Command handlers build a whole [`Reply`] before anything is sent, so a
//! handler that fails half-way never leaves a client with half a reply; `lib.rs` sends it.

/// One reply, in the shapes BF.* commands use.
#[derive(Debug, Clone, PartialEq)]
pub enum Reply {
    /// `+OK`.
    Ok,
    /// An integer.
    Int(i64),
    /// A RESP3 boolean; RESP2 clients get `:1` / `:0`.
    Bool(bool),
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
