//! Accuracy, stats and size: a burst raises the estimated error, bytes per item match the
//! formula, and steady-state false positives stay at or under the target.

use super::*;

#[test]
fn a_burst_raises_the_error_but_forgets_nothing_early() {
    let t0 = 0;
    let mut f = time_filter(0.01, 1000, MIN, t0);
    let burst = names("b", 10_000);
    for x in &burst {
        f.add(x.as_bytes(), t0 + 10);
    }
    let s = f.stats(t0 + 20);
    assert!(s.saturated);
    assert!(s.estimated_error > 0.01, "{s:?}");
    assert!(fp_rate(&f, t0 + 20, 5000) > 0.01);
    let now = t0 + 10 + MIN - 1;
    assert!(burst.iter().all(|x| f.contains(x.as_bytes(), now)));
}

#[test]
fn bytes_per_item_near_the_formula() {
    for layout in LAYOUTS {
        let p = choose_in(layout, WindowKind::Items, 0.01, 1_000_000).unwrap();
        let bits_per_item = p.bytes() as f64 * 8.0 / 1_000_000.0;
        // The paper's formula; the blocked layout adds its fill margin and a tag word per row.
        // Generations: k + l blocked filters for l windows' shares, a tag per row.
        let formula = match layout {
            WindowLayout::Sliced => params::bits_per_item(p.k, p.l),
            WindowLayout::Blocked => {
                params::bits_per_item(p.k, p.l) * params::blocked_factor(p.k) * p.row_words() as f64
                    / p.slices() as f64
            }
            WindowLayout::Generations => {
                let per_gen = p.slice_bits as f64 / p.gen_items as f64;
                per_gen * p.row_words() as f64 / (8.0 * f64::from(p.l))
            }
        };
        assert!((bits_per_item - formula).abs() / formula < 0.01, "{bits_per_item} vs {formula}");
        eprintln!("{layout:?}: {bits_per_item:.2} bits per window item");
    }
    // The generations layout's table (docs/windowed.md).
    for error in [0.1, 0.01, 0.001, 0.0001] {
        let p = choose_in(WindowLayout::Generations, WindowKind::Items, error, 1_000_000).unwrap();
        let bits = p.bytes() as f64 * 8.0 / 1_000_000.0;
        eprintln!("generations {error}: {} probes, {bits:.2} bits per window item", p.probes);
    }
}

/// Measured false-positive rate in steady state: items arrive at `capacity` per window for
/// four windows; absent items are probed at eight moments of the last two.
fn steady_state_fp(layout: WindowLayout, error: f64, capacity: u64) -> (f64, f64) {
    let window = 100 * MIN;
    let mut f = time_filter_in(layout, error, capacity, window, 0);
    let per_ms = capacity as f64 / window as f64;
    let total = 4 * capacity;
    let probes = 40_000;
    let mut rates = Vec::new();
    let mut next_probe = 2 * capacity;
    for i in 0..total {
        let t = (i as f64 / per_ms) as u64;
        f.add(format!("in:{i}").as_bytes(), t);
        if i == next_probe {
            let hits =
                (0..probes).filter(|j| f.contains(format!("out:{i}:{j}").as_bytes(), t)).count();
            rates.push(hits as f64 / probes as f64);
            next_probe += capacity / 4;
        }
    }
    let mean = rates.iter().sum::<f64>() / rates.len() as f64;
    let max = rates.iter().copied().fold(0.0, f64::max);
    (mean, max)
}

#[test]
fn steady_state_false_positives_at_or_under_the_target() {
    for (error, capacity) in [(0.01, 100_000), (0.001, 100_000)] {
        for layout in LAYOUTS {
            let (mean, max) = steady_state_fp(layout, error, capacity);
            let p = choose_in(layout, WindowKind::Items, error, capacity).unwrap();
            let bits = p.bytes() as f64 * 8.0 / capacity as f64;
            eprintln!(
                "{layout:?} error {error}: k={} l={} {bits:.2} bits per window item, fp mean \
                 {mean:.5} max {max:.5}",
                p.k, p.l
            );
            assert!(mean <= error, "{layout:?} {error}: mean fp {mean}");
        }
    }
}
