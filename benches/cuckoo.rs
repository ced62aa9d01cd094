//! Criterion benches of the cuckoo core (`src/filter/cuckoo`), no Redis involved.
//!
//! What is measured, per item (throughput in items): on 8-bit filters whose slots take 1 MiB
//! (in cache) and 64 MiB (DRAM: every bucket a cache miss), and a 16-bit filter of 64 MiB,
//! - `exists_hit` / `exists_miss`: `CF.MEXISTS` of a batch of present / absent items, one by
//!   one (`contains` in a loop) and batched (`contains_many`: hash the block, prefetch both
//!   buckets of every item, then test);
//! - `insert`: `CF.INSERT` of a batch of fresh items (`insert_many`), into a filter kept between
//!   half and 3/4 full (a new one replaces it outside the timed part);
//! - `add`: `CF.ADD` one by one of fresh items, same filter state;
//! - `delete`: `CF.DEL` of a batch of present items (added back outside the timed part).
//!
//! `cargo bench --bench cuckoo` runs them all in a couple of minutes; `-- 64MiB` a subset.

use std::hint::black_box;
use std::time::{Duration, Instant};

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use scalebloom::filter::Unlimited;
use scalebloom::filter::cuckoo::{CuckooFilter, CuckooParams, FingerprintWidth, Insert};

/// Items per iteration: one CF.INSERT / CF.MEXISTS batch.
const BATCH: usize = 1024;
/// Filters benched: label, slot bytes, fingerprint width.
const SIZES: &[(&str, u64, FingerprintWidth)] = &[
    ("1MiB", 1 << 20, FingerprintWidth::W8),
    ("64MiB", 64 << 20, FingerprintWidth::W8),
    ("64MiB-fp16", 64 << 20, FingerprintWidth::W16),
];
/// Item length in bytes.
const ITEM_LEN: usize = 16;
/// Most present (and absent) items in the pools.
const POOL_MAX: usize = 1 << 19;

fn item(tag: u8, i: u64) -> [u8; ITEM_LEN] {
    let mut b = [b'.'; ITEM_LEN];
    b[0] = tag;
    b[1..9].copy_from_slice(&i.to_le_bytes());
    b
}

/// An empty filter whose slots take `bytes` (bucket size 2, no growth needed).
fn empty(bytes: u64, w: FingerprintWidth) -> (CuckooFilter, u64) {
    let capacity = bytes / w.bytes();
    let p = CuckooParams::new(capacity, 2, 20, 1).expect("valid");
    (CuckooFilter::new(&p, w, &Unlimited).expect("fits in memory"), capacity)
}

fn fill(f: &mut CuckooFilter, tag: u8, from: u64, n: u64) {
    for i in from..from + n {
        assert_eq!(f.add(&item(tag, i), false, 32, &Unlimited), Ok(Insert::Inserted));
    }
}

fn config() -> Criterion {
    Criterion::default()
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(2))
        .sample_size(20)
}

fn benches(c: &mut Criterion) {
    for &(label, bytes, width) in SIZES {
        let (mut f, capacity) = empty(bytes, width);
        let pool = ((capacity / 2) as usize).min(POOL_MAX) / BATCH * BATCH;
        fill(&mut f, b'h', 0, pool as u64);
        let hit: Vec<[u8; ITEM_LEN]> = (0..pool as u64).map(|i| item(b'h', i)).collect();
        let miss: Vec<[u8; ITEM_LEN]> = (0..pool as u64).map(|i| item(b'm', i)).collect();
        let mut g = c.benchmark_group(format!("cuckoo/{label}"));
        g.throughput(Throughput::Elements(BATCH as u64));
        for (name, items) in [("exists_hit", &hit), ("exists_miss", &miss)] {
            let mut at = 0;
            g.bench_function(format!("{name}/one_by_one"), |b| {
                b.iter(|| {
                    let batch = &items[at..at + BATCH];
                    at = (at + BATCH) % pool;
                    batch.iter().filter(|i| f.contains(&i[..])).count()
                })
            });
            let mut out = Vec::with_capacity(BATCH);
            g.bench_function(format!("{name}/batched"), |b| {
                b.iter(|| {
                    let batch = &items[at..at + BATCH];
                    at = (at + BATCH) % pool;
                    out.clear();
                    f.contains_many(batch, &mut out);
                    black_box(&out);
                })
            });
        }
        // Inserts and adds of fresh items, keeping the filter between 1/2 and 3/4 full.
        let mut next = 0u64;
        let mut live = f.clone();
        let mut results = Vec::with_capacity(BATCH);
        for (name, batched) in [("insert/batched", true), ("add/one_by_one", false)] {
            g.bench_function(name, |b| {
                b.iter_custom(|iters| {
                    let mut total = Duration::ZERO;
                    for _ in 0..iters {
                        if pool as u64 + next + BATCH as u64 > capacity * 3 / 4 {
                            live = f.clone();
                            next = 0;
                        }
                        let fresh: Vec<[u8; ITEM_LEN]> =
                            (next..next + BATCH as u64).map(|i| item(b'f', i)).collect();
                        next += BATCH as u64;
                        let start = Instant::now();
                        if batched {
                            results.clear();
                            live.insert_many(&fresh, false, 32, &Unlimited, &mut results).unwrap();
                        } else {
                            for i in &fresh {
                                black_box(live.add(i, false, 32, &Unlimited).unwrap());
                            }
                        }
                        total += start.elapsed();
                    }
                    total
                })
            });
        }
        let mut at = 0;
        g.bench_function("delete/one_by_one", |b| {
            b.iter_custom(|iters| {
                let mut total = Duration::ZERO;
                for _ in 0..iters {
                    let batch = &hit[at..at + BATCH];
                    at = (at + BATCH) % pool;
                    let start = Instant::now();
                    for i in batch {
                        black_box(f.delete(&i[..]));
                    }
                    total += start.elapsed();
                    for i in batch {
                        f.add(&i[..], false, 32, &Unlimited).unwrap();
                    }
                }
                total
            })
        });
        g.finish();
    }
}

criterion_group! {
    name = cuckoo;
    config = config();
    targets = benches
}
criterion_main!(cuckoo);
