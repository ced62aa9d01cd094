//! Generations and expiry: no false negative within the window, old items forgotten after the
//! slack, count windows, time that never goes back, blocked turns and stale rows.

use super::*;

/// Set bits of the slice of age `age` as queries see them (blocked rows' recycled slices read
/// as empty).
fn ones_at_age(f: &WindowFilter, age: usize) -> u32 {
    let p = f.at_age(age);
    match &f.store {
        Store::Sliced(slices) => slices[p].iter().map(|w| w.count_ones()).sum(),
        Store::Blocked(words) => {
            let slot = f.params.slot_words();
            words
                .chunks(f.params.row_words())
                .filter(|row| age >= f.stale(row[0]))
                .map(|row| row[1 + slot * p..1 + slot * (p + 1)].iter().map(|w| w.count_ones()))
                .map(|ones| ones.sum::<u32>())
                .sum()
        }
    }
}

#[test]
fn no_false_negative_within_the_window_and_all_forgotten_after_the_slack() {
    for layout in LAYOUTS {
        no_false_negative_in(layout);
    }
}

fn no_false_negative_in(layout: WindowLayout) {
    let t0 = 1_000_000;
    let mut f = time_filter_in(layout, 0.01, 10_000, 10 * MIN, t0);
    let slack = f.params().slack();
    // 10 000 items spread over the window, one every 60 ms.
    let items = names("x", 10_000);
    for (i, x) in items.iter().enumerate() {
        let t = t0 + i as u64 * 60;
        assert!(f.add(x.as_bytes(), t) || f.contains(x.as_bytes(), t));
    }
    let last_add = t0 + 9_999 * 60;
    // At the end of the window of the first item every item is still there.
    let now = t0 + 10 * MIN - 1;
    assert!(now >= last_add);
    for x in &items {
        assert!(f.contains(x.as_bytes(), now), "{x} forgotten early");
    }
    // Every item i is remembered until t_i + window, checked at that instant.
    for (i, x) in items.iter().enumerate().step_by(97) {
        let t = t0 + i as u64 * 60 + 10 * MIN - 1;
        assert!(f.contains(x.as_bytes(), t), "{x} forgotten before its window ended");
    }
    // After the last item's window + slack, nothing is left: reads see an empty filter.
    let later = last_add + 10 * MIN + slack;
    assert_eq!(f.items(later), 0);
    let left = items.iter().filter(|x| f.contains(x.as_bytes(), later)).count();
    assert_eq!(left, 0);
    // A write then actually clears (and only k + l turns, however long the pause).
    let mut g = f.clone();
    g.add(b"new", later + 365 * 24 * 3600 * 1000);
    let k = g.params().k as usize;
    // One item: one bit per slice it set (its probes' bits in the generations layout).
    let ones = if layout == WindowLayout::Generations {
        crate::filter::masks::probe_mask(g.params.probes, g.hash(b"new").h2)
    } else {
        [1, 0, 0, 0, 0, 0, 0, 0]
    };
    let ones: u32 = ones.iter().map(|w| w.count_ones()).sum();
    for age in 0..g.params().slices() {
        assert_eq!(ones_at_age(&g, age), if age < k { ones } else { 0 }, "age {age}");
    }
}

#[test]
fn old_items_answer_as_never_added_at_the_target_rate() {
    for layout in LAYOUTS {
        old_items_in(layout);
    }
}

fn old_items_in(layout: WindowLayout) {
    let t0 = 5;
    let mut f = time_filter_in(layout, 0.01, 20_000, MIN, t0);
    let slack = f.params().slack();
    let old = names("old", 20_000);
    for (i, x) in old.iter().enumerate() {
        f.add(x.as_bytes(), t0 + i as u64 * MIN / 20_000);
    }
    // A new window of other items.
    let t1 = t0 + MIN + slack;
    for (i, x) in names("new", 20_000).iter().enumerate() {
        f.add(x.as_bytes(), t1 + i as u64 * MIN / 20_000);
    }
    let now = t1 + MIN - 1;
    let old_hits = old.iter().filter(|x| f.contains(x.as_bytes(), now)).count() as f64;
    let fp = fp_rate(&f, now, 20_000);
    assert!(old_hits / 20_000.0 < 0.02, "old items answer {old_hits}");
    assert!(fp < 0.02, "fp {fp}");
    let s = f.stats(now);
    assert!(!s.saturated, "{s:?}");
    assert!(s.estimated_error <= 0.01 + 1e-9, "{s:?}");
}

#[test]
fn count_window_remembers_the_last_capacity_items() {
    for layout in LAYOUTS {
        count_window_in(layout);
    }
}

fn count_window_in(layout: WindowLayout) {
    let p = choose_in(layout, WindowKind::Items, 0.01, 1000).unwrap();
    let mut f = WindowFilter::new(p, 1, 0, &Unlimited).unwrap();
    let items = names("c", 5000);
    for (i, x) in items.iter().enumerate() {
        f.add(x.as_bytes(), 0);
        // The last 1000 are all there.
        if i % 250 == 0 {
            for y in &items[i.saturating_sub(999)..=i] {
                assert!(f.contains(y.as_bytes(), 0), "{y} forgotten at {i}");
            }
        }
    }
    // Items older than capacity + one generation are forgotten (false positives aside).
    let forgotten = items[..5000 - 1000 - p.slack() as usize]
        .iter()
        .filter(|x| f.contains(x.as_bytes(), 0))
        .count();
    assert!(forgotten < 40, "{forgotten} old items still answer");
    // Time does not move a count window.
    assert!(f.contains(items[4999].as_bytes(), u64::MAX));
    assert!(f.items(0) >= 1000 && f.items(0) <= u64::from(p.l + 1) * p.gen_items);
}

#[test]
fn time_never_goes_back() {
    let mut f = time_filter(0.01, 100, 1000, 10_000);
    f.add(b"a", 20_000);
    // A write from an earlier clock counts as the latest time seen.
    f.add(b"b", 5_000);
    assert_eq!(f.last_ms(), 20_000);
    assert!(f.contains(b"a", 20_500) && f.contains(b"b", 20_500));
}

#[test]
fn the_same_writes_at_the_same_times_give_the_same_bits() {
    let mut a = time_filter(0.001, 500, 10_000, 1);
    let mut b = a.clone();
    for (i, x) in names("d", 3000).iter().enumerate() {
        a.add(x.as_bytes(), 1 + i as u64 * 7);
        b.add(x.as_bytes(), 1 + i as u64 * 7);
    }
    assert!(a == b);
}

#[test]
fn a_blocked_turn_writes_nothing_and_rows_catch_up_on_their_next_write() {
    let mut f = time_filter_in(WindowLayout::Blocked, 0.01, 1000, MIN, 0);
    let items = names("t", 1000);
    for x in &items {
        f.add(x.as_bytes(), 10);
    }
    let Store::Blocked(before) = f.store.clone() else { panic!("blocked") };
    let gen_ms = f.params().gen_ms;
    // Turns over the whole ring but k: the memory is untouched, and reads already see the
    // items' bits gone from the recycled slices.
    let n = f.params().slices() as u64;
    f.advance(10 + gen_ms * (n - 1));
    let Store::Blocked(after) = &f.store else { panic!("blocked") };
    assert!(&before == after);
    assert_eq!(f.turns, n - 1);
    for age in 0..f.params().slices() - 1 {
        assert_eq!(ones_at_age(&f, age), 0, "age {age}");
    }
    // A write brings its row up to date: only its own bits are left in it.
    f.add(b"fresh", 10 + gen_ms * (n - 1));
    let h = f.hash(b"fresh");
    let start = f.row_start(h);
    let Store::Blocked(words) = &f.store else { panic!("blocked") };
    let row = &words[start..start + f.params().row_words()];
    assert_eq!(row[0], f.turns);
    let k = f.params().k as usize;
    for age in 0..f.params().slices() - 1 {
        let ones = row[1 + f.at_age(age)].count_ones();
        assert_eq!(ones, u32::from(age < k), "age {age}");
    }
}

/// A read whose due turns reach past a stale row's recycled generations (the row's stale ages
/// `0..lo` and the valid ages `0..hi` with `lo > hi`) finds nothing in it: an item older than
/// the window is not found there.
#[test]
fn a_stale_row_read_with_more_turns_due_holds_nothing() {
    for layout in LAYOUTS {
        let mut f = time_filter_in(layout, 0.01, 100_000, MIN, 0);
        let gen_ms = f.params().gen_ms;
        let l = u64::from(f.params().l);
        f.add(b"old", 0);
        // Other writes turn the ring l − 1 times; the item's row is not written again.
        f.add(b"other", (l - 1) * gen_ms);
        assert!(f.contains(b"old", (l - 1) * gen_ms), "{layout:?}");
        // A read with enough turns due that the item's generation is gone.
        let later = (l - 1) * gen_ms + (f.params().k as u64 + 1) * gen_ms + gen_ms;
        assert!(!f.contains(b"old", later), "{layout:?}");
        assert!(!f.contains_many([b"old".as_slice()].into_iter(), later)[0], "{layout:?}");
    }
}
