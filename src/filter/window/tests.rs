use super::codec::{
    dump_header, parse_dump_header, read_chunk, read_meta, read_rdb, write_chunk, write_rdb,
};
use super::params::{WindowKind, choose};
use super::*;
use crate::filter::fields::SliceReader;
use crate::filter::{MaxFilterBytes, Unlimited};

const MIN: u64 = 60_000;

fn time_filter(error: f64, capacity: u64, window_ms: u64, t0: u64) -> WindowFilter {
    let p = choose(WindowKind::Time { window_ms }, error, capacity).unwrap();
    WindowFilter::new(p, 7, t0, &Unlimited).unwrap()
}

fn names(prefix: &str, n: usize) -> Vec<String> {
    (0..n).map(|i| format!("{prefix}:{i}")).collect()
}

fn fp_rate(f: &WindowFilter, now: u64, n: usize) -> f64 {
    let hits = names("absent", n).iter().filter(|x| f.contains(x.as_bytes(), now)).count();
    hits as f64 / n as f64
}

#[test]
fn no_false_negative_within_the_window_and_all_forgotten_after_the_slack() {
    let t0 = 1_000_000;
    let mut f = time_filter(0.01, 10_000, 10 * MIN, t0);
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
    for age in 0..g.slices.len() {
        let ones: u32 = g.slices[g.at_age(age)].iter().map(|w| w.count_ones()).sum();
        assert_eq!(ones, u32::from(age < k), "age {age}");
    }
}

#[test]
fn old_items_answer_as_never_added_at_the_target_rate() {
    let t0 = 5;
    let mut f = time_filter(0.01, 20_000, MIN, t0);
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
    let p = choose(WindowKind::Items, 0.01, 1000).unwrap();
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
fn rdb_round_trip_and_every_truncation_refused() {
    let mut f = time_filter(0.01, 300, 5000, 100);
    for (i, x) in names("r", 900).iter().enumerate() {
        f.add(x.as_bytes(), 100 + i as u64 * 9);
    }
    let mut buf = Vec::new();
    write_rdb(&f, &mut buf);
    let back = read_rdb(&mut SliceReader::new(&buf), &Unlimited).unwrap();
    assert!(back == f);
    for cut in (0..buf.len()).step_by(13) {
        assert!(read_rdb(&mut SliceReader::new(&buf[..cut]), &Unlimited).is_err(), "cut {cut}");
    }
    // The guard is asked before the slices are read.
    let e = read_rdb(&mut SliceReader::new(&buf), &MaxFilterBytes(64)).unwrap_err();
    assert!(matches!(e, BloomError::FilterLimit { .. }));
}

#[test]
fn corrupt_fields_are_refused() {
    let f = time_filter(0.01, 300, 5000, 100);
    let mut meta = Vec::new();
    super::codec::write_meta(&f, &mut meta);
    let fields = meta.len() / 8;
    assert!(read_meta(&mut SliceReader::new(&meta)).is_ok());
    // Flipping any field's high bits (or zeroing it) never passes validation silently, except
    // the seed (index 9) and the counts of a time window (any value is valid).
    for i in 0..fields {
        if i == 9 || i >= 13 {
            continue;
        }
        for v in [0u64, u64::MAX, 1 << 40] {
            let mut m = meta.clone();
            let orig = u64::from_le_bytes(m[i * 8..i * 8 + 8].try_into().unwrap());
            if v == orig || (i == 3 && f64::from_bits(v) == f64::from_bits(orig)) {
                continue;
            }
            m[i * 8..i * 8 + 8].copy_from_slice(&v.to_le_bytes());
            assert!(read_meta(&mut SliceReader::new(&m)).is_err(), "field {i} = {v}");
        }
    }
}

#[test]
fn scandump_chunks_rebuild_the_filter() {
    let p = choose(WindowKind::Items, 0.01, 50_000).unwrap();
    let mut f = WindowFilter::new(p, 3, 9, &Unlimited).unwrap();
    for x in names("s", 60_000) {
        f.add(x.as_bytes(), 9);
    }
    let meta = parse_dump_header(&dump_header(&f)).unwrap();
    let mut g = meta.allocate(&Unlimited).unwrap();
    let mut off = 0;
    while let Some(chunk) = read_chunk(&f, off) {
        write_chunk(&mut g, off, &chunk).unwrap();
        off += chunk.len() as u64;
    }
    assert_eq!(off, f.bytes());
    assert!(g == f);
    assert!(write_chunk(&mut g, off, &[0; 8]).is_err());
    assert!(write_chunk(&mut g, 3, &[0; 8]).is_err());
    let mut h = dump_header(&f);
    h.push(0);
    assert!(parse_dump_header(&h).is_err());
}

#[test]
fn bytes_per_item_near_the_formula() {
    let p = choose(WindowKind::Items, 0.01, 1_000_000).unwrap();
    let bits_per_item = p.bytes() as f64 * 8.0 / 1_000_000.0;
    let formula = params::bits_per_item(p.k, p.l);
    assert!((bits_per_item - formula).abs() / formula < 0.01, "{bits_per_item} vs {formula}");
}
