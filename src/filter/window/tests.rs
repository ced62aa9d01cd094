use super::apbf::{age_mask, found, group_mix, has_run, phys_bits_scalar, row_bit};
use super::codec::{
    dump_header, parse_dump_header, read_chunk, read_meta, read_rdb, read_rdb_v1, write_chunk,
    write_meta, write_rdb,
};
use super::params::{WindowKind, WindowLayout, choose_in};
use super::*;
use crate::filter::fields::FieldWriter;
use crate::filter::fields::SliceReader;
use crate::filter::mem::le_bytes;
use crate::filter::{MaxFilterBytes, Unlimited};

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

fn names(prefix: &str, n: usize) -> Vec<String> {
    (0..n).map(|i| format!("{prefix}:{i}")).collect()
}

fn fp_rate(f: &WindowFilter, now: u64, n: usize) -> f64 {
    let hits = names("absent", n).iter().filter(|x| f.contains(x.as_bytes(), now)).count();
    hits as f64 / n as f64
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
    for layout in LAYOUTS {
        rdb_round_trip_in(layout);
    }
}

fn rdb_round_trip_in(layout: WindowLayout) {
    let mut f = time_filter_in(layout, 0.01, 300, 5000, 100);
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
    assert!(matches!(e, FilterError::FilterLimit { .. }));
}

#[test]
fn corrupt_fields_are_refused() {
    for layout in LAYOUTS {
        corrupt_fields_in(layout);
    }
}

fn corrupt_fields_in(layout: WindowLayout) {
    // Begun long after time 0, so that a start time of 0 is a whole generation too early.
    let f = time_filter_in(layout, 0.01, 300, 5000, 1_000_000);
    let mut meta = Vec::new();
    super::codec::write_meta(&f, &mut meta);
    let fields = meta.len() / 8;
    assert!(read_meta(&mut SliceReader::new(&meta), layout).is_ok());
    // Flipping any field's high bits (or zeroing it) never passes validation silently, except
    // the seed (index 9, 10 after the probes of the generations layout), the counts of a time
    // window (any value is valid) and the turn count (tags are checked against it later).
    let seed = if layout == WindowLayout::Generations { 10 } else { 9 };
    for i in 0..fields {
        if i == seed || i >= seed + 4 {
            continue;
        }
        for v in [0u64, u64::MAX, 1 << 40] {
            let mut m = meta.clone();
            let orig = u64::from_le_bytes(m[i * 8..i * 8 + 8].try_into().unwrap());
            if v == orig || (i == 3 && f64::from_bits(v) == f64::from_bits(orig)) {
                continue;
            }
            m[i * 8..i * 8 + 8].copy_from_slice(&v.to_le_bytes());
            assert!(
                read_meta(&mut SliceReader::new(&m), layout).is_err(),
                "{layout:?} field {i} = {v}"
            );
        }
    }
}

#[test]
fn scandump_chunks_rebuild_the_filter() {
    for layout in LAYOUTS {
        scandump_in(layout);
    }
}

fn scandump_in(layout: WindowLayout) {
    let p = choose_in(layout, WindowKind::Items, 0.01, 50_000).unwrap();
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

#[test]
fn encoding_1_data_loads_as_a_sliced_filter_that_works() {
    let mut f = time_filter_in(WindowLayout::Sliced, 0.01, 2000, 10 * MIN, 100);
    let items = names("v1", 2000);
    for (i, x) in items.iter().enumerate() {
        f.add(x.as_bytes(), 100 + i as u64);
    }
    // Encoding 1: the sliced fields, then each slice; no layout word.
    let mut v1 = Vec::new();
    write_meta(&f, &mut v1);
    let Store::Sliced(slices) = &f.store else { panic!("sliced") };
    for s in slices {
        v1.bytes(&le_bytes(s));
    }
    let mut g = read_rdb_v1(&mut SliceReader::new(&v1), &Unlimited).unwrap();
    assert!(g == f);
    assert_eq!(g.params().layout, WindowLayout::Sliced);
    assert!(items.iter().all(|x| g.contains(x.as_bytes(), 100 + 5 * MIN)));
    // It keeps working, and saves in encoding 2 as what it is.
    g.add(b"later", 100 + 5 * MIN);
    let mut v2 = Vec::new();
    write_rdb(&g, &mut v2);
    assert!(read_rdb(&mut SliceReader::new(&v2), &Unlimited).unwrap() == g);
    // Encoding-1 bytes are not encoding 2, nor the reverse.
    assert!(read_rdb(&mut SliceReader::new(&v1), &Unlimited).is_err());
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

#[test]
fn row_tags_past_the_turn_count_are_refused() {
    let mut f = time_filter(0.01, 300, 5000, 100);
    for (i, x) in names("g", 300).iter().enumerate() {
        f.add(x.as_bytes(), 100 + i as u64 * 40);
    }
    assert!(f.turns > 0);
    let mut buf = Vec::new();
    write_rdb(&f, &mut buf);
    assert!(read_rdb(&mut SliceReader::new(&buf), &Unlimited).is_ok());
    // The first row's tag is the first word of the memory (after its length).
    let mut meta = vec![0u8; 8];
    write_meta(&f, &mut meta);
    let tag_at = meta.len() + 8;
    let mut bad = buf.clone();
    bad[tag_at..tag_at + 8].copy_from_slice(&(f.turns + 1).to_le_bytes());
    assert!(read_rdb(&mut SliceReader::new(&bad), &Unlimited).is_err());
    // A chunk with such a tag is refused too, and nothing is written.
    let mut g = f.clone();
    let mut chunk = read_chunk(&f, 0).unwrap();
    chunk[..8].copy_from_slice(&(f.turns + 1).to_le_bytes());
    assert!(write_chunk(&mut g, 0, &chunk).is_err());
    assert!(g == f);
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

#[test]
fn the_mask_query_agrees_with_the_skipping_query() {
    let mut x = 0x1234_5678_9abc_def0u64;
    let mut next = move || {
        x = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
        group_mix(x, 0)
    };
    let mut runs = 0;
    for _ in 0..20_000 {
        let n = 1 + (next() % 200) as usize;
        let k = 1 + (next() % n.min(40) as u64) as usize;
        let (a, b) = ((next() % (n as u64 + 1)) as usize, (next() % (n as u64 + 1)) as usize);
        let (lo, hi) = (a.min(b), a.max(b));
        let dense = next() % 2 == 0;
        let mut m = [0u64; 4];
        for w in &mut m {
            *w = next() | next() | if dense { next() | next() } else { 0 };
        }
        let expected = found(k, lo, hi, |age| m[age / 64] >> (age % 64) & 1 == 1);
        runs += usize::from(expected);
        assert_eq!(has_run(m, k, lo, hi), expected, "n {n} k {k} lo {lo} hi {hi} {m:x?}");
    }
    assert!(runs > 1000, "{runs}");
}

#[test]
fn the_age_mask_reads_each_slice_at_the_item_bit() {
    for n in [5usize, 63, 64, 65, 99, 128, 155, 200] {
        for head in [0, 1, n / 2, n - 1] {
            let h2 = 0xdead_beef_1234_5677u64.wrapping_mul(n as u64 + 1) | 1;
            // Slices of even physical index hold the item's bit, odd ones every bit but it.
            let slots: Vec<u64> =
                (0..n).map(|p| if p % 2 == 0 { row_bit(h2, p) } else { !row_bit(h2, p) }).collect();
            let m = age_mask(&slots, h2, head);
            for age in 0..n {
                let p = (head + age) % n;
                assert_eq!(m[age / 64] >> (age % 64) & 1 == 1, p % 2 == 0, "n {n} head {head}");
            }
        }
    }
}

/// Random block-test cases (probes, probe hash, the item's mask, a row's blocks): each block
/// holds the mask, or all of it but random bits, on random other bits.
fn random_block_cases(
    seed: u64,
    n: usize,
) -> impl Iterator<Item = (u32, u64, [u64; 8], GenBlocks)> {
    let mut x = seed;
    let mut next = move || {
        x = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
        group_mix(x, 3)
    };
    (0..n).map(move |_| {
        let (k, h2) = (1 + (next() % 16) as u32, next());
        let mask = crate::filter::masks::probe_mask(k, h2);
        let blocks: GenBlocks = std::array::from_fn(|i| {
            let w = next() & next();
            if next() % 3 == 0 { w | mask[i % 8] } else { w | (mask[i % 8] & next()) }
        });
        (k, h2, mask, blocks)
    })
}

#[cfg(target_arch = "x86_64")]
#[test]
fn the_avx2_generation_test_agrees_with_the_scalar_one() {
    assert!(std::arch::is_x86_feature_detected!("avx2"), "this test needs an AVX2 CPU");
    let mut seen = [0u32; 32];
    for (_, _, mask, blocks) in random_block_cases(0x5eed_f00d_0000_0001, 20_000) {
        let expected = super::holding::holding_scalar(&blocks, &mask);
        seen[expected as usize] += 1;
        // SAFETY: the CPU has AVX2 (asserted above).
        assert_eq!(unsafe { super::holding_avx2(&blocks, &mask) }, expected);
    }
    assert!(seen.iter().filter(|&&c| c > 0).count() > 16, "{seen:?}");
}

#[cfg(target_arch = "x86_64")]
#[test]
fn the_avx2_row_test_agrees_with_the_scalar_one_on_random_rows() {
    // A machine without AVX2 cannot run the vector path: the test says so rather than pass.
    assert!(std::arch::is_x86_feature_detected!("avx2"), "this test needs an AVX2 CPU");
    let mut x = 0x0bad_cafe_f00d_1234u64;
    let mut next = move || {
        x = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
        group_mix(x, 7)
    };
    let mut ones = 0u32;
    for _ in 0..20_000 {
        let n = 1 + (next() % 200) as usize;
        let h2 = next();
        let dense = next() % 2 == 0;
        // Rows that hold the item's bit in about half the slices, on random other bits.
        let slots: Vec<u64> = (0..n)
            .map(|p| {
                let w = next() & if dense { next() } else { next() & next() };
                if next() % 2 == 0 { w | row_bit(h2, p) } else { w & !row_bit(h2, p) }
            })
            .collect();
        let expected = phys_bits_scalar(&slots, h2);
        ones += expected.iter().map(|w| w.count_ones()).sum::<u32>();
        // SAFETY: the CPU has AVX2 (asserted above).
        let got = unsafe { super::apbf::phys_bits_avx2(&slots, h2) };
        assert_eq!(got, expected, "n {n} h2 {h2:x}");
    }
    assert!(ones > 100_000, "{ones}");
}

/// Values of the layouts other than the generations layout, as the fuzz seeds keep them
/// (a mode byte, then the RDB value; made by `examples/fuzz_seeds.rs` from 60 items `w0`…`w59`
/// added at 1000 + 37·i ms): encoding 2 blocked, and the sliced layout under encoding 2.
#[test]
fn committed_values_of_the_older_layouts_load() {
    let seeds: [(&[u8], WindowLayout); 3] = [
        (include_bytes!("../../../fuzz/seeds/window_codec/time-1s-rdb.bin"), WindowLayout::Blocked),
        (include_bytes!("../../../fuzz/seeds/window_codec/items-rdb.bin"), WindowLayout::Blocked),
        (
            include_bytes!("../../../fuzz/seeds/window_codec/sliced-time-1s-rdb.bin"),
            WindowLayout::Sliced,
        ),
    ];
    for (bytes, layout) in seeds {
        let mut f = read_rdb(&mut SliceReader::new(&bytes[1..]), &Unlimited).unwrap();
        assert_eq!(f.params().layout, layout);
        let now = f.last_ms();
        assert_eq!(now, 1000 + 59 * 37);
        assert!(f.contains(b"w59", now) && f.contains(b"w50", now), "{layout:?}");
        f.add(b"later", now + 1);
        assert!(f.contains(b"later", now + 1));
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

/// The batched query (AVX-512F where the CPU has it, else AVX2, else the per-item path) gives
/// each item the per-item query's answer, at probe counts from 4 to 16 and with rows stale by
/// every number of turns (a count window turned 0..=6 times past its items).
#[test]
fn the_batched_query_answers_as_the_per_item_query() {
    let mut probes_seen = Vec::new();
    for error in [0.2, 0.05, 0.01, 0.001, 0.0001] {
        let p = choose_in(WindowLayout::Generations, WindowKind::Items, error, 2000).unwrap();
        probes_seen.push(p.probes);
        let mut f = WindowFilter::new(p, 7, 0, &Unlimited).unwrap();
        let items = names("b", 3000);
        let absent = names("never", 3000);
        for x in &items {
            f.add(x.as_bytes(), 0);
        }
        for turn in 0..=6 {
            for batch in [&items, &absent] {
                let got = f.contains_many(batch.iter().map(|x| x.as_bytes()), 0);
                for (x, got) in batch.iter().zip(got) {
                    assert_eq!(got, f.contains(x.as_bytes(), 0), "{x} at {error}, turn {turn}");
                }
            }
            // A turn: new items fill the newest generation and the ring moves on.
            for x in names(&format!("t{turn}-"), p.gen_items as usize) {
                f.add(x.as_bytes(), 0);
            }
        }
    }
    assert!(probes_seen.iter().any(|&k| k <= 8) && probes_seen.iter().any(|&k| k > 8));
}

/// [`super::gen512::holding`] for a run-time probe count (1..=16).
#[cfg(all(target_arch = "x86_64", scalebloom_avx512))]
#[target_feature(enable = "avx512f,avx2,bmi2")]
fn holding_avx512(blocks: &GenBlocks, k: u32, h2: u64) -> u32 {
    macro_rules! by_probes {
        ($($k:literal)*) => {
            match k {
                // SAFETY: this function is compiled with AVX-512F and runs only where the CPU
                // has it (its caller checks); `$k` is in 1..=16.
                $($k => unsafe { super::gen512::holding::<$k>(blocks, h2) },)*
                _ => unreachable!("1..=16 probes"),
            }
        };
    }
    by_probes!(1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16)
}

/// The AVX-512F block test against the scalar one, on blocks that hold the mask, or all of it
/// but random bits. It needs a CPU with AVX-512F; on others the AVX2 test above and the batched
/// query's test cover what runs there, and this one says it did not run.
#[cfg(all(target_arch = "x86_64", scalebloom_avx512))]
#[test]
fn avx512_block_test_matches_the_scalar_test() {
    if !std::arch::is_x86_feature_detected!("avx512f") {
        eprintln!("avx512_block_test_matches_the_scalar_test: this CPU has no AVX-512F: not run");
        return;
    }
    let mut seen = [0u32; 32];
    for (k, h2, mask, blocks) in random_block_cases(0x0dd5_eed5_0000_0001, 40_000) {
        let expected = super::holding::holding_scalar(&blocks, &mask);
        seen[expected as usize] += 1;
        // SAFETY: the CPU has AVX-512F (checked above).
        assert_eq!(unsafe { holding_avx512(&blocks, k, h2) }, expected, "k {k}");
    }
    assert!(seen.iter().filter(|&&c| c > 0).count() > 16, "{seen:?}");
}

/// `f` saved and loaded again (RDB and `BF.SCANDUMP` → `BF.LOADCHUNK`): both must load, equal.
/// Every state that writes can reach from a loaded value must pass, or a restart refuses the
/// data the server saved itself.
fn assert_reloads(f: &WindowFilter, what: &str) {
    let mut buf = Vec::new();
    write_rdb(f, &mut buf);
    let back = read_rdb(&mut SliceReader::new(&buf), &Unlimited)
        .unwrap_or_else(|e| panic!("{what}: the saved value is refused ({e:?}): {f:?}"));
    assert!(back == *f, "{what}: the reload changed the filter");
    let meta = parse_dump_header(&dump_header(f))
        .unwrap_or_else(|e| panic!("{what}: the dump header is refused ({e:?})"));
    let mut g = meta.allocate(&Unlimited).unwrap();
    let mut off = 0;
    while let Some(chunk) = read_chunk(f, off) {
        write_chunk(&mut g, off, &chunk).unwrap_or_else(|e| panic!("{what}: chunk {off}: {e:?}"));
        off += chunk.len() as u64;
    }
    assert!(g == *f, "{what}: the dump changed the filter");
}

/// The RDB value of `f` with its turn count set to `turns`, loaded.
fn with_forged_turns(f: &WindowFilter, turns: u64) -> WindowFilter {
    let mut buf = Vec::new();
    write_rdb(f, &mut buf);
    let mut meta = Vec::new();
    write_meta(f, &mut meta);
    // The layout word, then the fields; the turn count is the last.
    buf[meta.len()..meta.len() + 8].copy_from_slice(&turns.to_le_bytes());
    read_rdb(&mut SliceReader::new(&buf), &Unlimited).expect("a turn count up to the bound loads")
}

/// A value loaded with its turn count forged at the loader's bound takes writes that turn the
/// ring (one turn, and a pause that clears it all): the count stays within the bound, the
/// value saved after them loads again, and every answer is the one a count far from the bound
/// gives.
#[test]
fn a_forged_turn_count_at_the_bound_survives_turns_and_reloads() {
    for layout in [WindowLayout::Generations, WindowLayout::Blocked] {
        let mut f = time_filter_in(layout, 0.01, 300, 5000, 100);
        for x in names("a", 200) {
            f.add(x.as_bytes(), 100);
        }
        let mut g = with_forged_turns(&f, super::codec::MAX_TURNS);
        let mut far = with_forged_turns(&f, super::codec::MAX_TURNS - 1_000_000);
        let (gen_ms, n) = (f.params().gen_ms, f.params().slices() as u64);
        let probes: Vec<String> =
            ["a", "b", "c", "absent"].iter().flat_map(|p| names(p, 200)).collect();
        for (step, now) in
            [(0u64, 100), (1, 100 + gen_ms), (2, 100 + 2 * gen_ms), (3, 100 + (n + 3) * gen_ms)]
        {
            let batch = ["b", "c", "b", "c"][step as usize];
            for w in [&mut g, &mut far] {
                for x in names(batch, 200) {
                    w.add(x.as_bytes(), now);
                }
            }
            assert!(g.turns <= super::codec::MAX_TURNS, "{layout:?} step {step}: {}", g.turns);
            assert_reloads(&g, &format!("{layout:?} step {step}"));
            for t in [now, now + gen_ms, now + 3 * gen_ms] {
                for x in &probes {
                    assert_eq!(
                        g.contains(x.as_bytes(), t),
                        far.contains(x.as_bytes(), t),
                        "{layout:?} step {step}: {x} at {t}"
                    );
                }
            }
            assert!(names(batch, 200).iter().all(|x| g.contains(x.as_bytes(), now)));
        }
    }
}
