//! SCANDUMP and LOADCHUNK of every type, with RedisBloom's iterator protocol (see
//! `types/chunked.rs`): each type brings its bytes and its family's words, the steps are
//! written here once, and each family's commands file calls them for its types
//! (`BF.SCANDUMP`/`BF.LOADCHUNK` for Bloom chains and windowed filters, `CF.SCANDUMP`/
//! `CF.LOADCHUNK` for cuckoo filters).

use super::{Key, notify, with_either};
use crate::module::args::Args;
use crate::module::call::Call;
use crate::module::reply::Reply;
use crate::module::types::chunked::{Chunked, Dialect};

/// A SCANDUMP step of a key holding a `T` or a `U` (of one family: `T`'s dialect answers).
pub fn scan<T: Chunked, U: Chunked>(ctx: &Call, args: &Args) -> Reply {
    let d: &Dialect = T::DIALECT;
    let iterator = || (d.scan_iterator)(args.bytes(2));
    if d.iterator_first {
        if let Err(r) = iterator() {
            return r;
        }
    }
    with_either(
        ctx,
        args,
        || Reply::err(d.not_found),
        |v: &T| iterator().map_or_else(|r| r, |it| step(v, d, it)),
        |v: &U| iterator().map_or_else(|r| r, |it| step(v, d, it)),
    )
}

/// The reply of one SCANDUMP step at iterator `it` (`None`: the end).
fn step<T: Chunked>(value: &T, d: &Dialect, it: Option<u64>) -> Reply {
    let end = || Reply::Array(vec![Reply::Int(0), (d.end)()]);
    let int = |v: u64| Reply::Int(i64::try_from(v).unwrap_or(i64::MAX));
    match it {
        _ if value.dumps_nothing() => end(),
        None => end(),
        Some(0) => Reply::Array(vec![Reply::Int(1), Reply::Bulk(value.header())]),
        Some(it) => match value.chunk(it) {
            Some((next, data)) => Reply::Array(vec![int(next), Reply::Bulk(data.into_owned())]),
            None => end(),
        },
    }
}

/// `LOADCHUNK key iterator data` of a family whose keys hold one type, `T`.
pub fn loadchunk<T: Chunked>(ctx: &Call, args: &Args) -> Reply {
    match (T::DIALECT.load_iterator)(args.bytes(2)) {
        Ok(it) => load::<T>(ctx, args, it, &mut Key::writable(ctx, &args.key())),
        Err(r) => r,
    }
}

/// One LOADCHUNK of a `T` at `key`: iterator 1 at a missing key makes a value from the header,
/// awaiting its chunks; another iterator writes a chunk into a value that awaits them (or
/// into any, from the replication link or AOF replay). Replicated as sent and notified when it
/// changed the key.
pub fn load<T: Chunked>(ctx: &Call, args: &Args, it: i64, key: &mut Key) -> Reply {
    let d: &Dialect = T::DIALECT;
    let data = args.bytes(3);
    let header = it == 1 && !(d.empty_header_is_chunk && data.is_empty());
    let done = match key.value_mut::<T>() {
        Err(r) => Err(r),
        Ok(None) if it == 1 => T::from_header(ctx, data).and_then(|value| key.set_value(value)),
        Ok(None) => Err(Reply::err(d.not_found)),
        Ok(Some(_)) if header => Err(Reply::err(d.key_exists)),
        Ok(Some(value)) => T::chunk_position(it, data.len()).and_then(|at| {
            if !value.awaiting_chunks() && !ctx.trusted() {
                return Err(Reply::err(d.not_restoring));
            }
            value.write_chunk(at, data)
        }),
    };
    match done {
        Ok(()) => {
            ctx.replicate_verbatim();
            notify(ctx, d.event, &args.key());
            Reply::Ok
        }
        Err(r) => r,
    }
}
