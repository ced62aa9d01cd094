//! A command's arguments for `COMMAND DOCS` (redis-cli shows its hints from them): how a row of
//! the command table (`registry.rs`) writes them, and their conversion to the module API's
//! arrays.

use std::ffi::{CStr, c_int};

use redis_module::raw;

/// One argument of a command.
pub struct Arg {
    name: &'static CStr,
    kind: ArgKind,
    /// The keyword that introduces the argument (`EXPANSION n`), or that it is (`NONSCALING`).
    token: Option<&'static CStr>,
    optional: bool,
    multiple: bool,
}

/// What an argument is.
pub enum ArgKind {
    /// The command's key (key spec 0).
    Key,
    /// Another key the command reads (key spec 1): `LIKE`'s, BF.MERGE's sources.
    OtherKey,
    String,
    Integer,
    Double,
    /// Just the token.
    Token,
    /// One of these.
    OneOf(&'static [Arg]),
    /// These, in order, after the token.
    Block(&'static [Arg]),
}

impl Arg {
    /// The other keys (key spec 1) among `args`: `Some(Some(token))` for one introduced by a
    /// keyword (`LIKE otherkey`), `Some(None)` for keys from the argument after the command's
    /// key to the end (BF.MERGE's sources), `None` when there are none.
    pub fn other_keys(args: &[Arg]) -> Option<Option<&'static CStr>> {
        args.iter().find(|a| matches!(a.kind, ArgKind::OtherKey)).map(|a| a.token)
    }

    /// A required argument.
    pub const fn new(name: &'static CStr, kind: ArgKind) -> Arg {
        Arg { name, kind, token: None, optional: false, multiple: false }
    }
    /// An optional `TOKEN value`.
    pub const fn option(name: &'static CStr, token: &'static CStr, kind: ArgKind) -> Arg {
        Arg { name, kind, token: Some(token), optional: true, multiple: false }
    }
    /// An optional bare keyword.
    pub const fn flag(name: &'static CStr, token: &'static CStr) -> Arg {
        Arg::option(name, token, ArgKind::Token)
    }
    /// Given once or more.
    pub const fn multiple(self) -> Arg {
        Arg { multiple: true, ..self }
    }
    /// Optional.
    pub const fn optional(self) -> Arg {
        Arg { optional: true, ..self }
    }
    /// Introduced by (or, for [`ArgKind::Token`], being) `token`.
    pub const fn token(self, token: &'static CStr) -> Arg {
        Arg { token: Some(token), ..self }
    }
}

/// `args` as the module API's zero-terminated array; the arrays (the nested ones too) are
/// kept in `keep`, which must outlive their use. Strings are `'static`.
pub fn c_args(
    args: &[Arg],
    keep: &mut Vec<Vec<raw::RedisModuleCommandArg>>,
) -> *mut raw::RedisModuleCommandArg {
    let mut out: Vec<raw::RedisModuleCommandArg> = args
        .iter()
        .map(|a| {
            let (type_, subargs) = match a.kind {
                ArgKind::Key | ArgKind::OtherKey => {
                    (raw::RedisModuleCommandArgType_REDISMODULE_ARG_TYPE_KEY, None)
                }
                ArgKind::String => {
                    (raw::RedisModuleCommandArgType_REDISMODULE_ARG_TYPE_STRING, None)
                }
                ArgKind::Integer => {
                    (raw::RedisModuleCommandArgType_REDISMODULE_ARG_TYPE_INTEGER, None)
                }
                ArgKind::Double => {
                    (raw::RedisModuleCommandArgType_REDISMODULE_ARG_TYPE_DOUBLE, None)
                }
                ArgKind::Token => {
                    (raw::RedisModuleCommandArgType_REDISMODULE_ARG_TYPE_PURE_TOKEN, None)
                }
                ArgKind::OneOf(sub) => {
                    (raw::RedisModuleCommandArgType_REDISMODULE_ARG_TYPE_ONEOF, Some(sub))
                }
                ArgKind::Block(sub) => {
                    (raw::RedisModuleCommandArgType_REDISMODULE_ARG_TYPE_BLOCK, Some(sub))
                }
            };
            let mut flags = 0;
            if a.optional {
                flags |= raw::REDISMODULE_CMD_ARG_OPTIONAL;
            }
            if a.multiple {
                flags |= raw::REDISMODULE_CMD_ARG_MULTIPLE;
            }
            raw::RedisModuleCommandArg {
                name: a.name.as_ptr(),
                type_,
                // A command's key is its key spec 0; the other keys it reads are spec 1.
                key_spec_index: match a.kind {
                    ArgKind::Key => 0,
                    ArgKind::OtherKey => 1,
                    _ => -1,
                },
                token: a.token.map_or(std::ptr::null(), CStr::as_ptr),
                summary: std::ptr::null(),
                since: std::ptr::null(),
                flags: flags as c_int,
                deprecated_since: std::ptr::null(),
                subargs: subargs.map_or(std::ptr::null_mut(), |sub| c_args(sub, keep)),
                display_text: std::ptr::null(),
            }
        })
        .collect();
    // SAFETY: the struct holds only raw pointers and integers, for which all-zero bits are
    // valid (null pointers, 0): the terminator the API expects.
    out.push(unsafe { std::mem::zeroed() });
    let ptr = out.as_mut_ptr();
    keep.push(out); // moving the Vec keeps its buffer where it is
    ptr
}
