//! Measures what one turn of a windowed filter's ring costs on a 1 GiB filter at 1%: with the
//! row layouts (generations, new filters' layout, and blocked) a turn only counts (rows catch
//! up on their next write), so it costs nothing that grows with the filter; the sliced layout
//! of encoding-1 filters (99 slices) clears
//! the oldest slice (a memset of ~10 MiB) and is measured too. Run with
//! `cargo run --release --example window_shift`.

use std::time::Instant;

use scalebloom::filter::Unlimited;
use scalebloom::filter::window::WindowFilter;
use scalebloom::filter::window::params::{WindowKind, WindowLayout, choose_in};

fn main() {
    for (layout, capacity) in [
        (WindowLayout::Generations, 470_000_000),
        (WindowLayout::Blocked, 410_000_000),
        (WindowLayout::Sliced, 436_000_000),
    ] {
        measure(layout, capacity);
    }
}

fn measure(layout: WindowLayout, capacity: u64) {
    let window_ms = 3_600_000;
    let p = choose_in(layout, WindowKind::Time { window_ms }, 0.01, capacity).expect("params");
    println!(
        "{layout:?}: k={} l={} slices={} slice={} MiB total={} MiB",
        p.k,
        p.l,
        p.slices(),
        (p.slice_bits / 8) >> 20,
        p.bytes() >> 20
    );
    let mut f = WindowFilter::new(p, 1, 0, &Unlimited).expect("filter");
    // Fault every page in (a filter in use), one generation at a time.
    let mut now = 0;
    for g in 0..p.slices() as u64 {
        now += p.gen_ms;
        f.add(format!("touch{g}").as_bytes(), now);
    }
    let mut worst = 0f64;
    let mut total = 0f64;
    for _ in 0..20 {
        now += p.gen_ms;
        let t = Instant::now();
        f.advance(now);
        let ms = t.elapsed().as_secs_f64() * 1e3;
        worst = worst.max(ms);
        total += ms;
    }
    println!("one turn: mean {:.2} ms, worst {:.2} ms (of 20)", total / 20.0, worst);
    let t = Instant::now();
    f.advance(now + 100 * window_ms);
    println!(
        "catching up after a long pause (every slice cleared): {:.1} ms",
        t.elapsed().as_secs_f64() * 1e3
    );
}
