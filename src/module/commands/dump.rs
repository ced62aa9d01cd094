//! BF.SCANDUMP and BF.LOADCHUNK: moving a filter in pieces, with RedisBloom's iterator protocol.
//! The byte formats and their validation are in `crate::filter::codec`.

use redis_module::Context;

use super::{ServerGuard, core_err, read_chain, store_chain, write_chain};
use crate::filter::codec::{chunk_at, dump_header, parse_dump_header, write_chunk};
use crate::module::args::{Args, parse_i64};
use crate::module::errors;
use crate::module::reply::Reply;
use crate::notify;

/// `BF.SCANDUMP key iterator` → `[next, data]`; iterator 0 gives the header, `[0, ""]` the end.
pub fn scandump(ctx: &Context, args: &Args) -> Reply {
    if args.len() != 3 {
        return Reply::WrongArity;
    }
    let Some(iter) = parse_i64(args.bytes(2)).filter(|&i| i >= 0) else {
        return Reply::err(errors::SCANDUMP_ITER);
    };
    let key = ctx.open_key(&args.key());
    let chain = match read_chain(&key) {
        Err(r) => return r,
        Ok(None) => return Reply::err(errors::NOT_FOUND),
        Ok(Some(c)) => c,
    };
    if iter == 0 {
        return Reply::Array(vec![Reply::Int(1), Reply::Bulk(dump_header(chain))]);
    }
    let offset = iter as u64 - 1;
    let Some((layer, inner, len)) = chunk_at(chain, offset) else {
        return Reply::Array(vec![Reply::Int(0), Reply::Bulk(Vec::new())]);
    };
    let mut data = Vec::with_capacity(len as usize);
    if let Err(e) =
        chain.layers()[layer].bits().read_bytes(inner, len, |b| data.extend_from_slice(b))
    {
        return core_err(&e);
    }
    Reply::Array(vec![Reply::Int(iter + len as i64), Reply::Bulk(data)])
}

/// `BF.LOADCHUNK key iterator data`: iterator 1 on a missing key creates the filter from a
/// header; later iterators write a chunk at byte `iterator − len − 1`.
pub fn loadchunk(ctx: &Context, args: &Args) -> Reply {
    if args.len() != 4 {
        return Reply::WrongArity;
    }
    let Some(iter) = parse_i64(args.bytes(2)).filter(|&i| i >= 0) else {
        return Reply::err(errors::LOADCHUNK_ITER);
    };
    let data = args.bytes(3);
    let key_name = args.key();
    let key = ctx.open_key_writable(&key_name);
    let result = match write_chain(&key) {
        Err(r) => return r,
        Ok(None) if iter == 1 => match parse_dump_header(data) {
            Err(e) => Err(e),
            Ok(meta) => match meta.allocate(&ServerGuard::new(ctx)) {
                Err(e) => Err(e),
                Ok(chain) => {
                    if let Err(r) = store_chain(&key, chain) {
                        return r;
                    }
                    Ok(())
                }
            },
        },
        Ok(None) => return Reply::err(errors::NOT_FOUND),
        Ok(Some(chain)) => match (iter as u64).checked_sub(data.len() as u64 + 1) {
            None => Err(crate::filter::BloomError::ChunkOffset),
            Some(offset) => write_chunk(chain, offset, data),
        },
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
