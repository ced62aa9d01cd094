//! BF.SCANDUMP and BF.LOADCHUNK: moving a filter in pieces, with RedisBloom's iterator protocol.
//! The byte formats and their validation are in `crate::filter::codec` (and `filter::redisbloom`),
//! the chunks in `crate::filter::chunks`.

use redis_module::{Context, ContextFlags};

use super::{Key, core_err, notify, with_either};
use crate::filter::chunks::{read_chunk, write_chunk};
use crate::filter::codec::{dump_header, parse_any_header};
use crate::filter::window::codec as wcodec;
use crate::filter::{BloomError, Chain};
use crate::module::args::{Args, parse_i64};
use crate::module::errors;
use crate::module::limits::ServerGuard;
use crate::module::reply::Reply;
use crate::module::types::window::WindowValue;

/// `BF.SCANDUMP key iterator` → `[next, data]`; iterator 0 gives the header, `[0, ""]` the end,
/// as does any negative iterator (as in RedisBloom). The key is checked before the iterator.
pub fn scandump(ctx: &Context, args: &Args) -> Reply {
    let end = || Reply::Array(vec![Reply::Int(0), Reply::Bulk(Vec::new())]);
    with_either(
        ctx,
        args,
        || Reply::err(errors::NOT_FOUND),
        |chain: &Chain| match parse_i64(args.bytes(2)) {
            None => Reply::err(errors::SCANDUMP_ITER),
            Some(iter) if iter < 0 => end(),
            Some(0) => Reply::Array(vec![Reply::Int(1), Reply::Bulk(dump_header(chain))]),
            Some(iter) => match read_chunk(chain, iter as u64 - 1) {
                None => end(),
                Some(data) => {
                    Reply::Array(vec![Reply::Int(iter + data.len() as i64), Reply::Bulk(data)])
                }
            },
        },
        |w: &WindowValue| match parse_i64(args.bytes(2)) {
            None => Reply::err(errors::SCANDUMP_ITER),
            Some(iter) if iter < 0 => end(),
            Some(0) => {
                Reply::Array(vec![Reply::Int(1), Reply::Bulk(wcodec::dump_header(&w.filter))])
            }
            Some(iter) => match wcodec::read_chunk(&w.filter, iter as u64 - 1) {
                None => end(),
                Some(data) => {
                    Reply::Array(vec![Reply::Int(iter + data.len() as i64), Reply::Bulk(data)])
                }
            },
        },
    )
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
        Ok(Some(value)) => {
            let Some(end) = u64::try_from(iter).ok().filter(|&i| i >= 1 && i >= data.len() as u64)
            else {
                return Reply::err(errors::BAD_DATA);
            };
            let trusted =
                ctx.get_flags().intersects(ContextFlags::REPLICATED | ContextFlags::LOADING);
            if !value.awaiting_chunks && !trusted {
                return Reply::err(errors::NOT_RESTORING);
            }
            match end.checked_sub(data.len() as u64 + 1) {
                None => Err(BloomError::ChunkOffset),
                Some(offset) => wcodec::write_chunk(&mut value.filter, offset, data),
            }
        }
    };
    match result {
        Ok(()) => {
            ctx.replicate_verbatim();
            notify(ctx, c"bf.loadchunk", &key_name);
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
/// [`Chain::awaiting_chunks`]: crate::filter::Chain::awaiting_chunks
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
        Ok(Some(chain)) => {
            // `iter` is 1 + the offset just past the chunk: at least 1, and at least the
            // chunk's length. Checked before anything else about the filter.
            let Some(end) = u64::try_from(iter).ok().filter(|&i| i >= 1 && i >= data.len() as u64)
            else {
                return Reply::err(errors::BAD_DATA);
            };
            let trusted =
                ctx.get_flags().intersects(ContextFlags::REPLICATED | ContextFlags::LOADING);
            if !chain.awaiting_chunks() && !trusted {
                return Reply::err(errors::NOT_RESTORING);
            }
            match end.checked_sub(data.len() as u64 + 1) {
                None => Err(BloomError::ChunkOffset),
                Some(offset) => write_chunk(chain, offset, data),
            }
        }
    };
    match result {
        Ok(()) => {
            ctx.replicate_verbatim();
            notify(ctx, c"bf.loadchunk", &key_name);
            Reply::Ok
        }
        Err(e) => core_err(&e),
    }
}
