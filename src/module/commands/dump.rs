//! BF.SCANDUMP and BF.LOADCHUNK: moving a filter in pieces, with RedisBloom's iterator protocol.
//! The byte formats and their validation are in `crate::filter::bloom::codec` (and `filter::bloom::redisbloom`),
//! the chunks in `crate::filter::bloom::chunks`.

use redis_module::{Context, ContextFlags, RedisString};

use super::{Key, core_err, notify, with_either};
use crate::filter::FilterError;
use crate::filter::bloom::Chain;
use crate::filter::bloom::chunks::{read_chunk, write_chunk};
use crate::filter::bloom::codec::{dump_header, parse_any_header};
use crate::filter::window::codec as wcodec;
use crate::module::args::{Args, parse_i64};
use crate::module::errors;
use crate::module::limits::ServerGuard;
use crate::module::reply::Reply;
use crate::module::types::window::WindowValue;

/// `BF.SCANDUMP key iterator` → `[next, data]`; iterator 0 gives the header, `[0, ""]` the end,
/// as does any negative iterator (as in RedisBloom). The key is checked before the iterator.
pub fn scandump(ctx: &Context, args: &Args) -> Reply {
    with_either(
        ctx,
        args,
        || Reply::err(errors::NOT_FOUND),
        |chain: &Chain| scan_step(args, || dump_header(chain), |at| read_chunk(chain, at)),
        |w: &WindowValue| {
            scan_step(
                args,
                || wcodec::dump_header(&w.filter),
                |at| wcodec::read_chunk(&w.filter, at),
            )
        },
    )
}

/// One BF.SCANDUMP step over any filter type: the iterator argument parsed, then `header()` at
/// iterator 0 or `chunk(iterator − 1)` (`None` past the end) in RedisBloom's reply shape.
fn scan_step(
    args: &Args,
    header: impl FnOnce() -> Vec<u8>,
    chunk: impl FnOnce(u64) -> Option<Vec<u8>>,
) -> Reply {
    let end = || Reply::Array(vec![Reply::Int(0), Reply::Bulk(Vec::new())]);
    match parse_i64(args.bytes(2)) {
        None => Reply::err(errors::SCANDUMP_ITER),
        Some(iter) if iter < 0 => end(),
        Some(0) => Reply::Array(vec![Reply::Int(1), Reply::Bulk(header())]),
        Some(iter) => match chunk(iter as u64 - 1) {
            None => end(),
            Some(data) => {
                Reply::Array(vec![Reply::Int(iter + data.len() as i64), Reply::Bulk(data)])
            }
        },
    }
}

/// `BF.LOADCHUNK` on a windowed filter: a header (iterator 1, [`wcodec::WINDOW_MAGIC`]) makes
/// one at a missing key, awaiting its chunks; a chunk goes into one that awaits them (or any,
/// from the replication stream and AOF replay).
fn loadchunk_window(ctx: &Context, args: &Args, iter: i64, key: &mut Key) -> Reply {
    let data = args.bytes(3);
    let key_name = args.key();
    let result = match key.value_mut::<WindowValue>() {
        Err(r) => return r,
        Ok(None) => match wcodec::parse_dump_header(data)
            .and_then(|meta| meta.allocate(&ServerGuard::for_command(ctx)))
        {
            Err(e) => Err(e),
            Ok(filter) => match key.set_value(WindowValue { filter, awaiting_chunks: true }) {
                Err(r) => return r,
                Ok(()) => Ok(()),
            },
        },
        Ok(Some(_)) if iter == 1 && !data.is_empty() => {
            return Reply::err(errors::LOADCHUNK_KEY_EXISTS);
        }
        Ok(Some(value)) => match chunk_offset(ctx, iter, data.len(), value.awaiting_chunks) {
            Err(r) => return r,
            Ok(offset) => wcodec::write_chunk(&mut value.filter, offset, data),
        },
    };
    loaded(ctx, &key_name, result)
}

/// Where a BF.LOADCHUNK chunk of `len` bytes at iterator `iter` goes in an existing filter:
/// `iter` is 1 + the offset just past the chunk, so at least 1 and at least `len` (checked
/// before anything else about the filter). Only a filter that awaits its chunks takes one from
/// a client; replicated commands and AOF replay are not checked, as the primary (or the server
/// that wrote the AOF) already was.
fn chunk_offset(ctx: &Context, iter: i64, len: usize, awaiting_chunks: bool) -> Result<u64, Reply> {
    let Some(end) = u64::try_from(iter).ok().filter(|&i| i >= 1 && i >= len as u64) else {
        return Err(Reply::err(errors::BAD_DATA));
    };
    let trusted = ctx.get_flags().intersects(ContextFlags::REPLICATED | ContextFlags::LOADING);
    if !awaiting_chunks && !trusted {
        return Err(Reply::err(errors::NOT_RESTORING));
    }
    end.checked_sub(len as u64 + 1).ok_or_else(|| core_err(&FilterError::ChunkOffset))
}

/// The reply to a BF.LOADCHUNK, replicated as sent and notified when it changed the key.
fn loaded(ctx: &Context, key_name: &RedisString, result: Result<(), FilterError>) -> Reply {
    match result {
        Ok(()) => {
            ctx.replicate_verbatim();
            notify(ctx, c"bf.loadchunk", key_name);
            Reply::Ok
        }
        Err(e) => core_err(&e),
    }
}

/// `BF.LOADCHUNK key iterator data`: iterator 1 on a missing key creates the filter from a
/// header; later iterators write a chunk at byte `iterator − len − 1`, into a filter that a
/// header created and that has taken no add since ([`Chain::awaiting_chunks`]) — never into
/// another filter, whose bits it would silently replace. Replicated commands and AOF replay
/// are not checked: the primary (or the server that wrote the AOF) already was.
///
/// [`Chain::awaiting_chunks`]: crate::filter::bloom::Chain::awaiting_chunks
///
/// Into an existing filter, as RedisBloom answers: a header (iterator 1) is refused as
/// `ERR received bad data`, followed by the reason (the key exists); an iterator below 1 or below the chunk's
/// length (its offset would be negative) is `ERR received bad data`; an offset past the end
/// `ERR invalid offset - no link found`.
pub fn loadchunk(ctx: &Context, args: &Args) -> Reply {
    let Some(iter) = parse_i64(args.bytes(2)) else {
        return Reply::err(errors::LOADCHUNK_ITER);
    };
    let data = args.bytes(3);
    let key_name = args.key();
    let mut key = Key::writable(ctx, &key_name);
    let empty = matches!(key.value::<Chain>(), Ok(None));
    if key.holds::<WindowValue>() || (empty && iter == 1 && wcodec::is_window_header(data)) {
        return loadchunk_window(ctx, args, iter, &mut key);
    }
    let result = match key.value_mut::<Chain>() {
        Err(r) => return r,
        Ok(None) if iter == 1 => {
            match parse_any_header(data)
                .and_then(|meta| meta.allocate(&ServerGuard::for_command(ctx)))
            {
                Err(e) => Err(e),
                Ok(chain) => match key.set_value(chain) {
                    Err(r) => return r,
                    Ok(()) => Ok(()),
                },
            }
        }
        Ok(None) => return Reply::err(errors::NOT_FOUND),
        // Iterator 1 is where a header goes; an existing key takes none.
        Ok(Some(_)) if iter == 1 && !data.is_empty() => {
            return Reply::err(errors::LOADCHUNK_KEY_EXISTS);
        }
        Ok(Some(chain)) => match chunk_offset(ctx, iter, data.len(), chain.awaiting_chunks()) {
            Err(r) => return r,
            Ok(offset) => write_chunk(chain, offset, data),
        },
    };
    loaded(ctx, &key_name, result)
}
