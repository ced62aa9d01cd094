//! ns per item of adds and queries: a windowed filter against a plain nonscaling Bloom filter
//! at the same error rate and capacity (the core only, no server). Run with
//! `cargo run --release --example window_speed` (`WINDOW_SPEED_N` items per window, 1 000 000 by
//! default; a small one suits callgrind; `WINDOW_SPEED_LAYOUT` = `blocked`, `generations` or
//! `sliced` runs that layout of the windowed filter, by default the one new filters get).

use std::time::Instant;

use scalebloom::filter::Unlimited;
use scalebloom::filter::bloom::{Chain, ChainParams};
use scalebloom::filter::hash::HashScheme;
use scalebloom::filter::window::WindowFilter;
use scalebloom::filter::window::params::{WindowKind, WindowLayout, choose, choose_in};

fn main() {
    let n =
        std::env::var("WINDOW_SPEED_N").ok().and_then(|v| v.parse().ok()).unwrap_or(1_000_000u64);
    for error in [0.01, 0.001] {
        let items: Vec<String> = (0..n).map(|i| format!("item:{i}")).collect();
        let absent: Vec<String> = (0..n).map(|i| format!("absent:{i}")).collect();
        let kind = WindowKind::Time { window_ms: 60_000 };
        let p = match std::env::var("WINDOW_SPEED_LAYOUT").as_deref() {
            Ok("blocked") => choose_in(WindowLayout::Blocked, kind, error, n),
            Ok("generations") => choose_in(WindowLayout::Generations, kind, error, n),
            Ok("sliced") => choose_in(WindowLayout::Sliced, kind, error, n),
            _ => choose(kind, error, n),
        }
        .expect("params");
        let mut w = WindowFilter::new(p, 1, 0, &Unlimited).expect("window");
        let t = Instant::now();
        for (i, x) in items.iter().enumerate() {
            w.add(x.as_bytes(), i as u64 * 60_000 / n);
        }
        let w_add = t.elapsed().as_nanos() as f64 / n as f64;
        let now = 60_000 - 1;
        let t = Instant::now();
        let w_fp = absent.iter().filter(|x| w.contains(x.as_bytes(), now)).count();
        let w_q = t.elapsed().as_nanos() as f64 / n as f64;
        let t = Instant::now();
        let w_hits = items.iter().filter(|x| w.contains(x.as_bytes(), now)).count();
        let w_qp = t.elapsed().as_nanos() as f64 / n as f64;
        assert_eq!(w_hits as u64, n);
        // Batches of 100, as BF.MADD / BF.MEXISTS run them (rows fetched ahead).
        let mut wb = WindowFilter::new(p, 1, 0, &Unlimited).expect("window");
        let t = Instant::now();
        for (b, batch) in items.chunks(100).enumerate() {
            let now = b as u64 * 100 * 60_000 / n;
            wb.add_many(batch.iter().map(|x| x.as_bytes()), now);
        }
        let wb_add = t.elapsed().as_nanos() as f64 / n as f64;
        let t = Instant::now();
        let mut wb_fp = 0;
        for batch in absent.chunks(100) {
            let r = wb.contains_many(batch.iter().map(|x| x.as_bytes()), now);
            wb_fp += r.iter().filter(|&&b| b).count();
        }
        let wb_q = t.elapsed().as_nanos() as f64 / n as f64;

        let cp = ChainParams::new(error, n, 0).expect("chain params");
        let mut c = Chain::new(cp, HashScheme::Xxh3Enhanced, 1, &Unlimited).expect("chain");
        let t = Instant::now();
        for x in &items {
            let _ = c.add(x.as_bytes(), &Unlimited);
        }
        let c_add = t.elapsed().as_nanos() as f64 / n as f64;
        let t = Instant::now();
        let c_fp = absent.iter().filter(|x| c.contains(x.as_bytes())).count();
        let c_q = t.elapsed().as_nanos() as f64 / n as f64;
        let mut cb = Chain::new(cp, HashScheme::Xxh3Enhanced, 1, &Unlimited).expect("chain");
        let t = Instant::now();
        for batch in items.chunks(100) {
            let mut r = Vec::new();
            let _ = cb.add_many(batch, &Unlimited, &mut r);
        }
        let cb_add = t.elapsed().as_nanos() as f64 / n as f64;
        let t = Instant::now();
        for batch in absent.chunks(100) {
            let mut r = Vec::new();
            cb.contains_many(batch, &mut r);
        }
        let cb_q = t.elapsed().as_nanos() as f64 / n as f64;
        println!(
            "  batches of 100: window add {wb_add:.0} ns, absent query {wb_q:.0} ns (fp {:.4}); \
             plain add {cb_add:.0} ns, absent query {cb_q:.0} ns (ratios {:.2} / {:.2})",
            wb_fp as f64 / n as f64,
            wb_add / cb_add,
            wb_q / cb_q
        );
        println!(
            "error {error}: window ({:?}, k={} l={}, {:.1} bits per item): add {w_add:.0} ns, absent query \
             {w_q:.0} ns, present query {w_qp:.0} ns, fp {:.4}; plain ({} MiB): add {c_add:.0} \
             ns, absent query {c_q:.0} ns, fp {:.4}",
            p.layout,
            p.k,
            p.l,
            p.bytes() as f64 * 8.0 / n as f64,
            w_fp as f64 / n as f64,
            c.info_size() >> 20,
            c_fp as f64 / n as f64
        );
    }
}
