//! Unit tests of the windowed filter: generations and expiry, encodings, reloads, accuracy and
//! the query kernels, each in its own child. This root holds what they share: time and count
//! windows of given parameters, item names, the measured false-positive rate.

// The children reach the filter's modules (`super::codec`, `super::holding`, …) through the glob
// below: no child is named after one of them.
use super::params::{WindowKind, WindowLayout, choose_in};
use super::*;
use crate::filter::Unlimited;

mod accuracy;
mod encoding;
mod expiry;
mod queries;
mod reloads;

const MIN: u64 = 60_000;

const LAYOUTS: [WindowLayout; 3] =
    [WindowLayout::Generations, WindowLayout::Blocked, WindowLayout::Sliced];

fn time_filter(error: f64, capacity: u64, window_ms: u64, t0: u64) -> WindowFilter {
    time_filter_in(WindowLayout::Blocked, error, capacity, window_ms, t0)
}

fn time_filter_in(
    layout: WindowLayout,
    error: f64,
    capacity: u64,
    window_ms: u64,
    t0: u64,
) -> WindowFilter {
    let p = choose_in(layout, WindowKind::Time { window_ms }, error, capacity).unwrap();
    WindowFilter::new(p, 7, t0, &Unlimited).unwrap()
}

fn names(prefix: &str, n: usize) -> Vec<String> {
    (0..n).map(|i| format!("{prefix}:{i}")).collect()
}

fn fp_rate(f: &WindowFilter, now: u64, n: usize) -> f64 {
    let hits = names("absent", n).iter().filter(|x| f.contains(x.as_bytes(), now)).count();
    hits as f64 / n as f64
}
