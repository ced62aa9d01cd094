//! SCANDUMP and LOADCHUNK of every type, with RedisBloom's iterator protocol (see
//! `types/chunked.rs`): `BF.SCANDUMP`/`BF.LOADCHUNK` take Bloom chains and windowed filters,
//! `CF.SCANDUMP`/`CF.LOADCHUNK` cuckoo filters; each type brings its bytes and its family's
//! words, the steps are written here once.

use super::{Key, notify, with_either};
use crate::filter::bloom::Chain;
use crate::filter::window::codec::is_window_header;
use crate::module::args::Args;
use crate::module::call::Call;
use crate::module::reply::Reply;
use crate::module::types::bloom::BLOOM_CHUNKS;
use crate::module::types::chunked::{Chunked, Dialect};
use crate::module::types::cuckoo::{CUCKOO_CHUNKS, CuckooValue};
use crate::module::types::window::WindowValue;

/// `BF.SCANDUMP key iterator` → `[next, data]`: iterator 0 gives the header, `[0, ""]` the end,
/// as does any negative iterator (as in RedisBloom). The key is checked before the iterator.
pub fn scandump(ctx: &Call, args: &Args) -> Reply {
    scan::<Chain, WindowValue>(ctx, args)
}

/// `CF.SCANDUMP key iterator` → `[next, data]`; `[0, nil]` at the end (and at once for a
/// filter with no items, as RedisBloom). The iterator is checked before the key.
pub fn cf_scandump(ctx: &Call, args: &Args) -> Reply {
    scan::<CuckooValue, CuckooValue>(ctx, args)
}

/// A SCANDUMP step of a key holding a `T` or a `U` (of one family: `T`'s dialect answers).
fn scan<T: Chunked, U: Chunked>(ctx: &Call, args: &Args) -> Reply {
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

/// `BF.LOADCHUNK key iterator data`: a header (iterator 1) at a missing key makes a Bloom
/// chain or, by its magic, a windowed filter; a chunk goes into the filter at the key.
///
/// Into an existing filter, as RedisBloom answers: a header is refused as `ERR received bad
/// data` (followed by the reason, the key exists); an iterator below 1 or below the chunk's
/// length (its offset would be negative) is `ERR received bad data`; an offset past the end
/// `ERR invalid offset - no link found`.
pub fn loadchunk(ctx: &Call, args: &Args) -> Reply {
    let it = match (BLOOM_CHUNKS.load_iterator)(args.bytes(2)) {
        Ok(it) => it,
        Err(r) => return r,
    };
    let mut key = Key::writable(ctx, &args.key());
    let empty = matches!(key.value::<Chain>(), Ok(None));
    if key.holds::<WindowValue>() || (empty && it == 1 && is_window_header(args.bytes(3))) {
        load::<WindowValue>(ctx, args, it, &mut key)
    } else {
        load::<Chain>(ctx, args, it, &mut key)
    }
}

/// `CF.LOADCHUNK key iterator data`: iterator 1 creates the filter a header describes (on a
/// missing key); later iterators write a chunk. Every chunk is replicated (RedisBloom #1014
/// lost them on failover).
pub fn cf_loadchunk(ctx: &Call, args: &Args) -> Reply {
    match (CUCKOO_CHUNKS.load_iterator)(args.bytes(2)) {
        Ok(it) => load::<CuckooValue>(ctx, args, it, &mut Key::writable(ctx, &args.key())),
        Err(r) => r,
    }
}

/// One LOADCHUNK of a `T` at `key`: iterator 1 at a missing key makes a value from the header,
/// awaiting its chunks; another iterator writes a chunk into a value that awaits them (or
/// into any, from the replication link or AOF replay). Replicated as sent and notified when it
/// changed the key.
fn load<T: Chunked>(ctx: &Call, args: &Args, it: i64, key: &mut Key) -> Reply {
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
