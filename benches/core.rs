//! Criterion benches of the pure core (`src/filter`), no Redis involved.
//!
//! What is measured: `Chain::add` and `Chain::contains` (items present and absent) on
//! nonscaling 1% chains whose bit array is 1 MiB (fits in L2/L3), 64 MiB and 1 GiB (DRAM: every
//! probe is a cache miss), for items of 16 and 100 bytes. Throughput is in items, so criterion
//! prints ns per item and items per second.
//!
//! Every iteration handles one batch of [`BATCH`] items, as BF.MADD / BF.MEXISTS do, two ways:
//! one by one (`Chain::contains` / `Chain::add` in a loop) and batched (`Chain::contains_many` /
//! `Chain::add_many`: hash the block, prefetch the probed lines, then test or set), so the gain of
//! batching is read off one group.
//!
//! The state each bench sees:
//! - `contains_hit`: items from a pool that was added to the filter first (up to half its
//!   capacity, at most [`POOL_MAX`] items), taken batch after batch, so every probe is set and
//!   all `k` probes are tested;
//! - `contains_miss`: items never added; most stop at their first probe on a sparse filter;
//! - `add`: fresh items every batch, into the same filter; when it reaches 3/4 of its capacity a
//!   new empty filter replaces it outside the timed part (only the 1 MiB filter gets that far).
//!
//! Counting filters (`counting4/…`, `counting8/…`: 4- and 8-bit counters, so 4× and 8× the
//! memory of the plain filter of the same capacity, named by that plain size) get the same
//! benches plus `delete`: one batch of present items deleted per iteration (and added back
//! outside the timed part, so the filter stays as it was).
//!
//! `cargo bench --bench core` runs them all in a few minutes (short warm-up and measurement, see
//! [`config`]); `cargo bench --bench core -- 64MiB` runs a subset. Memory: one filter at a time,
//! at most 1 GiB plus ~100 MiB of items.

use std::hint::black_box;
use std::time::{Duration, Instant};

use criterion::measurement::WallTime;
use criterion::{BenchmarkGroup, Criterion, Throughput, criterion_group, criterion_main};
use scalebloom::filter::Unlimited;
use scalebloom::filter::bloom::params::layer_size;
use scalebloom::filter::bloom::{Chain, ChainParams};
use scalebloom::filter::hash::HashScheme;

/// Items per iteration: one BF.MADD / BF.MEXISTS batch.
const BATCH: usize = 1024;
/// Most items in the pool of present (and of absent) items. Enough to spread over every page
/// of the 1 GiB filter, small enough to build in well under a second.
const POOL_MAX: usize = 1 << 19;
/// Error rate of every benched filter.
const ERROR: f64 = 0.01;
/// Bit-array sizes benched: label and bytes.
const SIZES: &[(&str, u64)] = &[("1MiB", 1 << 20), ("64MiB", 64 << 20), ("1GiB", 1 << 30)];
/// Item lengths benched, in bytes.
const ITEM_LENS: &[usize] = &[16, 100];

/// The largest capacity whose nonscaling layer at [`ERROR`] has at most `bytes` bytes of bits.
fn capacity_for(bytes: u64) -> u64 {
    let bytes_of = |cap: u64| layer_size(cap, ERROR).expect("benched sizes are valid").bytes();
    let bpe = -ERROR.ln() / std::f64::consts::LN_2.powi(2);
    let mut cap = (bytes as f64 * 8.0 / bpe) as u64;
    while bytes_of(cap) > bytes {
        cap -= 1;
    }
    while bytes_of(cap + 1) <= bytes {
        cap += 1;
    }
    cap
}

/// `count` distinct items of `len` bytes in one buffer: a tag byte (which pool), the index
/// little-endian, then filler. Different tags never collide.
struct Items {
    len: usize,
    data: Vec<u8>,
}

impl Items {
    fn new(tag: u8, first: u64, count: usize, len: usize) -> Self {
        let mut items = Self { len, data: vec![b'.'; count * len] };
        items.fill(tag, first);
        items
    }

    /// Rewrites every item in place as `tag`, index `first`, `first + 1`, ...
    fn fill(&mut self, tag: u8, first: u64) {
        for (i, item) in self.data.chunks_exact_mut(self.len).enumerate() {
            item[0] = tag;
            item[1..9].copy_from_slice(&(first + i as u64).to_le_bytes());
        }
    }

    fn slices(&self) -> Vec<&[u8]> {
        self.data.chunks_exact(self.len).collect()
    }
}

/// A filter of one size, with the pools of present and absent items of one length.
struct Fixture {
    params: ChainParams,
    /// Bits per counter; 0 for a plain filter.
    width: u8,
    chain: Chain,
    item_len: usize,
    hit: Items,
    miss: Items,
    /// Index of the next fresh item for `add`.
    next_fresh: u64,
}

impl Fixture {
    fn new(bytes: u64, item_len: usize) -> Self {
        Self::with_width(bytes, item_len, 0)
    }

    fn with_width(bytes: u64, item_len: usize, width: u8) -> Self {
        let capacity = capacity_for(bytes);
        let params = ChainParams::new(ERROR, capacity, 0).expect("valid parameters");
        let pool = ((capacity / 2) as usize).min(POOL_MAX) / BATCH * BATCH;
        let hit = Items::new(b'h', 0, pool, item_len);
        let miss = Items::new(b'm', 0, pool, item_len);
        let mut chain = Self::empty(params, width);
        for item in hit.slices() {
            chain.add(item, &Unlimited).expect("pool fits the filter");
        }
        Self { params, width, chain, item_len, hit, miss, next_fresh: 0 }
    }

    fn empty(params: ChainParams, width: u8) -> Chain {
        if width == 0 {
            return Chain::new(params, HashScheme::Xxh3Enhanced, 0x5eed, &Unlimited)
                .expect("filter fits in memory");
        }
        Chain::new_counting(params, 0x5eed, width, &Unlimited).expect("filter fits in memory")
    }
}

/// Which pool a contains bench reads.
#[derive(Clone, Copy)]
enum Which {
    Hit,
    Miss,
}

/// Benches a read-only operation over one batch of pool items per iteration, cycling through
/// the pool. `op` returns how many items it found present (kept from the optimizer).
fn contains(
    g: &mut BenchmarkGroup<'_, WallTime>,
    fx: &Fixture,
    name: &str,
    which: Which,
    op: impl Fn(&Chain, &[&[u8]]) -> usize,
) {
    let pool = match which {
        Which::Hit => fx.hit.slices(),
        Which::Miss => fx.miss.slices(),
    };
    let mut at = 0;
    g.bench_function(name, |b| {
        b.iter(|| {
            let batch = &pool[at..at + BATCH];
            at = (at + BATCH) % pool.len();
            black_box(op(&fx.chain, black_box(batch)))
        })
    });
}

/// Benches adding one batch of never-seen items per iteration. Making the items and replacing
/// a filter that reached 3/4 of its capacity happen outside the timed part.
fn add(
    g: &mut BenchmarkGroup<'_, WallTime>,
    fx: &mut Fixture,
    name: &str,
    op: impl Fn(&mut Chain, &[&[u8]]) -> usize,
) {
    let limit = fx.params.capacity * 3 / 4;
    let mut fresh = Items::new(b'a', 0, BATCH, fx.item_len);
    g.bench_function(name, |b| {
        b.iter_custom(|iters| {
            let mut timed = Duration::ZERO;
            for _ in 0..iters {
                if fx.chain.items() + BATCH as u64 > limit {
                    fx.chain = Fixture::empty(fx.params, fx.width);
                }
                fresh.fill(b'a', fx.next_fresh);
                fx.next_fresh += BATCH as u64;
                let batch = fresh.slices();
                let start = Instant::now();
                black_box(op(&mut fx.chain, black_box(&batch)));
                timed += start.elapsed();
            }
            timed
        })
    });
}

/// Benches deleting one batch of present items per iteration (counting filters), cycling
/// through the pool; each batch is added back outside the timed part.
fn delete(
    g: &mut BenchmarkGroup<'_, WallTime>,
    fx: &mut Fixture,
    name: &str,
    op: impl Fn(&mut Chain, &[&[u8]]) -> usize,
) {
    let pool = fx.hit.slices();
    let mut at = 0;
    g.bench_function(name, |b| {
        b.iter_custom(|iters| {
            let mut timed = Duration::ZERO;
            for _ in 0..iters {
                let batch = &pool[at..at + BATCH];
                at = (at + BATCH) % pool.len();
                let start = Instant::now();
                let deleted = black_box(op(&mut fx.chain, black_box(batch)));
                timed += start.elapsed();
                assert_eq!(deleted, BATCH, "every pool item is present");
                for item in batch {
                    fx.chain.add(item, &Unlimited).expect("room: the item was just deleted");
                }
            }
            timed
        })
    });
}

fn delete_each(chain: &mut Chain, items: &[&[u8]]) -> usize {
    items.iter().filter(|item| chain.delete(item).expect("a counting filter")).count()
}

fn delete_batched(chain: &mut Chain, items: &[&[u8]]) -> usize {
    let mut out = Vec::with_capacity(items.len());
    chain.delete_many(items, &mut out).expect("a counting filter");
    out.iter().filter(|&&d| d).count()
}

/// The one-by-one paths (BF.ADD / BF.EXISTS, one item per command).
fn contains_each(chain: &Chain, items: &[&[u8]]) -> usize {
    items.iter().filter(|item| chain.contains(item)).count()
}

fn add_each(chain: &mut Chain, items: &[&[u8]]) -> usize {
    items
        .iter()
        .filter(|item| {
            chain.add(item, &Unlimited).expect("the filter is replaced before it is full")
        })
        .count()
}

/// The batched paths BF.MADD / BF.MEXISTS use: hash the block, prefetch, then test or set.
fn contains_batched(chain: &Chain, items: &[&[u8]]) -> usize {
    let mut out = Vec::with_capacity(items.len());
    chain.contains_many(items, &mut out);
    out.iter().filter(|&&present| present).count()
}

fn add_batched(chain: &mut Chain, items: &[&[u8]]) -> usize {
    let mut out = Vec::with_capacity(items.len());
    chain.add_many(items, &Unlimited, &mut out).expect("the filter is replaced before it is full");
    out.iter().filter(|&&new| new).count()
}

/// All benches of one filter size and item length. Read-only benches first: `add` changes the
/// filter. Batched variants are one more `contains(...)` / `add(...)` line each.
fn bench_filter(c: &mut Criterion, size: &str, bytes: u64, item_len: usize) {
    let mut fx = Fixture::new(bytes, item_len);
    let mut g = c.benchmark_group(format!("{size}/{item_len}B"));
    g.throughput(Throughput::Elements(BATCH as u64));
    contains(&mut g, &fx, "contains_hit", Which::Hit, contains_each);
    contains(&mut g, &fx, "contains_hit_batched", Which::Hit, contains_batched);
    contains(&mut g, &fx, "contains_miss", Which::Miss, contains_each);
    contains(&mut g, &fx, "contains_miss_batched", Which::Miss, contains_batched);
    add(&mut g, &mut fx, "add", add_each);
    add(&mut g, &mut fx, "add_batched", add_batched);
    g.finish();
}

/// The counting benches of one counter width, plain-equivalent size and item length.
fn bench_counting(c: &mut Criterion, width: u8, size: &str, bytes: u64, item_len: usize) {
    let mut fx = Fixture::with_width(bytes, item_len, width);
    let mut g = c.benchmark_group(format!("counting{width}/{size}/{item_len}B"));
    g.throughput(Throughput::Elements(BATCH as u64));
    contains(&mut g, &fx, "contains_hit", Which::Hit, contains_each);
    contains(&mut g, &fx, "contains_hit_batched", Which::Hit, contains_batched);
    contains(&mut g, &fx, "contains_miss", Which::Miss, contains_each);
    delete(&mut g, &mut fx, "delete", delete_each);
    delete(&mut g, &mut fx, "delete_batched", delete_batched);
    add(&mut g, &mut fx, "add", add_each);
    add(&mut g, &mut fx, "add_batched", add_batched);
    g.finish();
}

/// Plain-equivalent sizes of the counting benches: 1 MiB (4 or 8 MiB of counters, in cache on
/// most servers) and 64 MiB (256 or 512 MiB: every probe a cache miss).
const COUNTING_SIZES: &[(&str, u64)] = &[("1MiB", 1 << 20), ("64MiB", 64 << 20)];

fn core(c: &mut Criterion) {
    for &(size, bytes) in SIZES {
        for &len in ITEM_LENS {
            bench_filter(c, size, bytes, len);
        }
    }
    for width in [4, 8] {
        for &(size, bytes) in COUNTING_SIZES {
            bench_counting(c, width, size, bytes, 16);
        }
    }
}

/// Short warm-up and measurement: 36 benches in a few minutes. The numbers of interest differ
/// by tens of percent, far above what longer sampling would resolve on a shared machine.
fn config() -> Criterion {
    Criterion::default()
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(2))
        .sample_size(20)
}

criterion_group! {
    name = benches;
    config = config();
    targets = core
}
criterion_main!(benches);
