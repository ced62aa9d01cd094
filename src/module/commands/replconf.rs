//! BF.REPLCONF: the creation settings a primary sends down its replication stream and AOF
//! (see `creation`). Only the replication link and AOF replay may run it.

use crate::module::args::Args;
use crate::module::call::Call;
use crate::module::creation::{self, Settings};
use crate::module::errors;
use crate::module::reply::Reply;

/// `BF.REPLCONF settings [padding]`: adopts a primary's creation settings and passes them on
/// (to this server's AOF; a replica of this replica gets the primary's stream as it is). The
/// padding (`creation::PADDING`, absent from an AOF written without it) is ignored.
pub fn replconf(ctx: &Call, args: &Args) -> Reply {
    if !ctx.trusted() {
        return Reply::err(errors::REPLCONF_INTERNAL);
    }
    if args.len() > 3 {
        return Reply::WrongArity;
    }
    match Settings::decode(args.bytes(1)) {
        Ok(settings) => {
            creation::adopt(settings);
            ctx.replicate_verbatim();
            Reply::Ok
        }
        Err(why) => Reply::Error(errors::replconf_refused(why)),
    }
}
