//! The clock that moves windowed filters (`BF.RESERVE … WINDOW <duration>`): the server's wall
//! clock in ms, or — only when the module was loaded with `window-debug-clock yes` — a debug
//! clock that `BF.DEBUGCLOCK` sets and advances, so tests move time without sleeping.
//!
//! Only a primary's clock decides anything: writes on windowed keys replicate with the time
//! they ran at (`BF.WINDOWADD key <ms> …`), so a replica's or an AOF replay's clock never moves
//! a window (reads on a replica use its own clock, and write nothing).

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

use super::args::{Args, parse_i64};
use super::call::Call;
use super::errors;
use super::reply::Reply;

/// Whether the debug clock is on (`window-debug-clock yes` at module load; never changed
/// after).
pub static DEBUG_CLOCK: AtomicBool = AtomicBool::new(false);
/// The debug clock's time, in ms.
static DEBUG_NOW: AtomicU64 = AtomicU64::new(0);

/// Milliseconds since the Unix epoch, by the debug clock when it is on.
pub fn now_ms() -> u64 {
    if DEBUG_CLOCK.load(Ordering::Relaxed) {
        return DEBUG_NOW.load(Ordering::Relaxed);
    }
    SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_millis() as u64).unwrap_or(0)
}

/// Turns the debug clock on at load, starting at the wall clock's time.
pub fn enable_debug_clock() {
    DEBUG_NOW.store(now_ms(), Ordering::Relaxed);
    DEBUG_CLOCK.store(true, Ordering::Relaxed);
}

/// `BF.DEBUGCLOCK GET | SET <ms> | ADVANCE <ms>`: reads or moves the debug clock; the reply is
/// its time after the call. Refused unless the debug clock is on.
pub fn debugclock(_ctx: &Call, args: &Args) -> Reply {
    if !DEBUG_CLOCK.load(Ordering::Relaxed) {
        return Reply::err(errors::DEBUG_CLOCK_OFF);
    }
    let value = || {
        (args.len() == 3)
            .then(|| parse_i64(args.bytes(2)).and_then(|v| u64::try_from(v).ok()))
            .flatten()
    };
    if args.len() == 2 && args.is(1, "GET") {
    } else if args.is(1, "SET") {
        let Some(v) = value() else { return Reply::err(errors::DEBUG_CLOCK_USAGE) };
        DEBUG_NOW.store(v, Ordering::Relaxed);
    } else if args.is(1, "ADVANCE") {
        let Some(v) = value() else { return Reply::err(errors::DEBUG_CLOCK_USAGE) };
        let now = DEBUG_NOW.load(Ordering::Relaxed).saturating_add(v);
        DEBUG_NOW.store(now, Ordering::Relaxed);
    } else {
        return Reply::err(errors::DEBUG_CLOCK_USAGE);
    }
    Reply::Int(i64::try_from(DEBUG_NOW.load(Ordering::Relaxed)).unwrap_or(i64::MAX))
}
