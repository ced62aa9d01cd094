//! BF.MERGE, and `LIKE otherkey` of BF.RESERVE and BF.INSERT: a new filter that merges into
//! the other without a member ([`crate::filter::bloom::merge`]).

use super::{Key, core_err, notify};
use crate::filter::FilterError;
use crate::filter::bloom::Chain;
use crate::filter::bloom::merge::{empty_like, plan};
use crate::filter::error::MergeRefusal;
use crate::module::args::Args;
use crate::module::call::Call;
use crate::module::compat::{Compat, Release};
use crate::module::errors;
use crate::module::limits::ServerGuard;
use crate::module::reply::Reply;
use crate::module::types::window::WindowValue;

/// `BF.MERGE destkey sourcekey [sourcekey ...]`: afterwards `destkey` holds the union of the
/// sources and of what it held; created when missing. Every refusal (a key of another type, a
/// windowed filter, kinds one value cannot hold, the memory limits) comes before any change.
/// A source named twice, or naming `destkey`, is read once. Replicated verbatim: the merge
/// reads only bits, so a replica with the same filters makes the same value.
pub fn merge(ctx: &Call, args: &Args) -> Reply {
    if let Some(text) = Compat::refusal("BF.MERGE", Release::V1_0) {
        return Reply::Error(text);
    }
    let dest_name = args.key();
    let mut dest_key = Key::writable(ctx, &dest_name);
    let mut names: Vec<&[u8]> = vec![args.bytes(1)];
    let mut source_keys = Vec::with_capacity(args.len() - 2);
    for i in 2..args.len() {
        if names.contains(&args.bytes(i)) {
            continue;
        }
        names.push(args.bytes(i));
        source_keys.push(Key::open(ctx, &args.string(i), false));
    }
    if dest_key.holds::<WindowValue>() || source_keys.iter().any(|k| k.holds::<WindowValue>()) {
        return Reply::Error(errors::text(&FilterError::MergeRefused(MergeRefusal::Windows)));
    }
    let mut sources: Vec<&Chain> = Vec::with_capacity(source_keys.len());
    for key in &source_keys {
        match key.value::<Chain>() {
            Err(r) => return r,
            Ok(Some(chain)) => sources.push(chain),
            Ok(None) => {} // a missing source is an empty one, as PFMERGE takes it
        }
    }
    let guard = ServerGuard::for_command(ctx);
    let result = match dest_key.value_mut::<Chain>() {
        Err(r) => return r,
        Ok(Some(dest)) => match plan(Some(dest), &sources, &guard) {
            Err(e) => return core_err(&e),
            Ok(p) => {
                p.apply(dest);
                None
            }
        },
        Ok(None) => match plan(None, &sources, &guard) {
            Err(e) => return core_err(&e),
            Ok(p) => match p.into_chain() {
                Some(chain) => Some(chain),
                // No destination and no source filter: nothing to make.
                None => return Reply::err(errors::NOT_FOUND),
            },
        },
    };
    if let Some(chain) = result {
        if let Err(r) = dest_key.set_value(chain) {
            return r;
        }
    }
    ctx.replicate_verbatim();
    notify(ctx, c"bf.merge", &dest_name);
    Reply::Ok
}

/// The filter `LIKE` at argument `at` names: an empty Bloom chain of its shape, kind, scheme
/// and seed, admitted by the server's limits; or a windowed filter's parameters and seed.
pub enum Like {
    /// A chain to store.
    Chain(Chain),
    /// A windowed filter's parameters and seed (its clock is this server's).
    Window(crate::filter::window::WindowParams, u64),
}

/// Reads `LIKE otherkey` (argument `at`): the other key must hold a Bloom filter.
pub fn like(ctx: &Call, args: &Args, at: usize) -> Result<Like, Reply> {
    let other = Key::open(ctx, &args.string(at), false);
    if let Ok(Some(w)) = other.value::<WindowValue>() {
        return Ok(Like::Window(*w.filter.params(), w.filter.seed()));
    }
    match other.value::<Chain>()? {
        None => Err(Reply::err(errors::LIKE_NOT_FOUND)),
        Some(chain) => empty_like(chain, &ServerGuard::for_command(ctx))
            .map(Like::Chain)
            .map_err(|e| core_err(&e)),
    }
}
