//! `CF.STATS key`: how full a cuckoo filter is and whether it takes more items, in
//! `BF.STATS`'s shape (a map in RESP3, a flat array in RESP2 with the doubles as strings).
//! scalebloom's own command: RedisBloom has none.

use super::with_value;
use crate::module::args::Args;
use crate::module::call::Call;
use crate::module::config;
use crate::module::errors;
use crate::module::limits::ServerGuard;
use crate::module::reply::Reply;
use crate::module::types::cuckoo::CuckooValue;

/// `CF.STATS key`: `Capacity`, `Items`, `Load factor`, `Load factor of newest filter`,
/// `Number of filters`, `Max filters`, `Saturated`, in that order (clients parse them). The
/// saturation checks are an insert's: `cf-max-expansions`, and whether the next sub-filter
/// passes `bf.max-filter-bytes` and `maxmemory` for a client's command (see
/// `CuckooFilter::stats`).
pub fn stats(ctx: &Call, args: &Args) -> Reply {
    with_value(
        ctx,
        args,
        || Reply::err(errors::NOT_FOUND),
        |v: &CuckooValue| {
            let guard = ServerGuard::for_command(ctx);
            let s = v.filter.stats(config::cf_max_filters(), &guard);
            let int = |x: u64| Reply::Int(i64::try_from(x).unwrap_or(i64::MAX));
            Reply::Map(vec![
                ("Capacity", int(s.capacity)),
                ("Items", int(s.items)),
                ("Load factor", Reply::Double(s.load)),
                ("Load factor of newest filter", Reply::Double(s.newest_load)),
                ("Number of filters", int(s.filters)),
                ("Max filters", int(s.max_filters)),
                ("Saturated", Reply::Int(i64::from(s.saturated))),
            ])
        },
    )
}
