//! The windowed filter: an Age-Partitioned Bloom Filter (APBF; Shtul, Baquero, Almeida, arXiv
//! 2001.03147) whose items expire, by time or by count.
//!
//! # The structure
//! `k + l` slices (bit arrays of `m` bits each) form a ring. Slice age 0 is the newest. An
//! insert sets one bit in each of the slices of ages `0..k`; a query answers "present" when
//! `k` slices in a row (any `k` consecutive ages) hold the item's bit. A generation ends after
//! `gen_ms` milliseconds (a time window) or `gen_items` inserts (a count window): the ring
//! turns by one — the oldest slice is cleared and becomes the newest. An item inserted in a
//! generation sits in ages `j..j+k` after `j` turns, so it is found for `l` more turns and
//! forgotten at turn `l + 1`, when its oldest slice is cleared:
//! - time: remembered at least `l·gen_ms ≥ window`; its leftover bits leave one slice per
//!   turn, so from `window + k·gen_ms` on (the slack: `k` generations, at most a quarter of the
//!   window since `l ≥ 4k`) it answers exactly as a never-added item;
//! - count: at least the last `l·gen_items ≥ capacity` items are remembered; items older than
//!   `capacity + k·gen_items` answer as never added.
//!
//! Sizing (which `k, l`; `m`) is in [`params`]; the byte formats in [`codec`].
//!
//! # Layout
//! New filters take the generations layout ([`WindowLayout::Generations`]): `k = 1`, so an
//! insert writes into the newest generation only, and the ring has [`params::GENERATIONS`]
//! generations (`l = GENERATIONS − 1` remembered besides the current one; the slack is one
//! generation, a quarter of the window). Each generation is a blocked Bloom filter (every probe
//! of an item in one 512-bit block, as in the Bloom chain's blocked layers, whose probe mask
//! it reuses), and an item's block is the same row in every generation: memory is rows of a
//! tag word and then one block per generation. An insert ORs the item's mask into the newest
//! generation's block of its row; a query tests the mask against every remembered
//! generation's block of the row (one row: `GENERATIONS` adjacent cache lines).
//!
//! Filters stored in encoding 1 or 2 keep their layout. Blocked ([`WindowLayout::Blocked`], encoding 2):
//! rows of `k + l + 1` words, a tag and then one word of each slice; an item's hash picks one
//! row, and in each slice's word of it one bit (a mix of the hash and the slice's physical
//! index); a query gathers the `k + l` bits and looks for a run of `k`. Sliced
//! ([`WindowLayout::Sliced`], encoding 1): one array per slice, a turn clears the oldest array.
//!
//! In both row layouts a turn clears nothing at once: the tag of a row is the ring's turn count
//! when a write last brought the row up to date, the slices (blocks) recycled by the turns
//! since then (ages `0..turns − tag`) read as empty, and the next write to the row zeroes them.
//! A turn costs O(1) however large the filter is.
//!
//! # Time
//! The core never reads a clock: every write and read takes `now` (ms). Writes move the ring
//! ([`WindowFilter::advance`]); time never goes back for a filter (a `now` below the latest one
//! seen counts as that one). Reads ([`WindowFilter::contains`]) do not write: they count the
//! turns that are due at `now` and treat the slices those turns would clear as empty. A write
//! after a long pause turns the ring at most `k + l` times (all clear), never once per missed
//! generation.
//!
//! # Bursts
//! A windowed filter never grows and never turns early (that would forget items younger than
//! the window). A time-window generation that receives more than `gen_items` items fills its
//! slices past ½: the false-positive rate rises, and [`WindowFilter::stats`] says so
//! (`saturated`, and the estimated rate now). Count windows cannot burst.

mod apbf;
pub mod codec;
#[cfg(all(target_arch = "x86_64", scalebloom_avx512))]
mod gen512;
mod holding;
pub mod params;
mod stats;

use super::guard::AllocGuard;
use super::mem::{Mover, Words, prefetch};
use crate::filter::FilterError;
use crate::filter::hash::{HashScheme, ItemHash, reduce};
use crate::filter::masks::probe_mask;
#[cfg(target_arch = "x86_64")]
use crate::filter::masks::{mask_vector, probe_mask_avx2};
use apbf::{age_mask, found, has_run, row_bit};
use holding::gen_test;
#[cfg(target_arch = "x86_64")]
use holding::{holding_avx2, wide_holding};
use params::{GEN_BLOCKS, GenBlocks};
pub use params::{WindowKind, WindowLayout, WindowParams};
pub use stats::WindowStats;

/// Where the slices' bits are.
#[derive(Clone, PartialEq)]
enum Store {
    /// One array per slice, by physical index.
    Sliced(Vec<Words>),
    /// Rows: the row's tag, then the slot of each slice (physical index) — a word (blocked),
    /// a 512-bit block (generations).
    Blocked(Words),
}

/// An age-partitioned Bloom filter with a time or count window.
#[derive(Clone, PartialEq)]
pub struct WindowFilter {
    params: WindowParams,
    seed: u64,
    store: Store,
    /// Items inserted while each slice (physical index) was the newest: its generation's count.
    counts: Vec<u64>,
    /// Physical index of the newest slice.
    head: usize,
    /// When the current generation began (ms; time windows advance it in steps of `gen_ms`).
    gen_start_ms: u64,
    /// The latest `now` a write brought.
    last_ms: u64,
    /// Turns of the ring so far (blocked layout; a catch-up that clears all counts `k + l`).
    /// A row whose tag is `t` reads its slices of ages `0..turns − t` as empty.
    turns: u64,
}

impl std::fmt::Debug for WindowFilter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WindowFilter")
            .field("params", &self.params)
            .field("head", &self.head)
            .field("counts", &self.counts)
            .field("gen_start_ms", &self.gen_start_ms)
            .field("last_ms", &self.last_ms)
            .field("turns", &self.turns)
            .finish_non_exhaustive()
    }
}

/// How many items ahead a batch fetches rows.
const AHEAD: usize = 4;

/// `f(filter, h)` for each of `hashes` in order, with `prefetch(filter, h)` called [`AHEAD`] items
/// before: the batched paths' loop, for reads (`&WindowFilter`) and writes (`&mut`) alike.
fn fetching_ahead<F>(
    hashes: &[ItemHash],
    mut filter: F,
    prefetch: impl Fn(&F, ItemHash),
    mut f: impl FnMut(&mut F, ItemHash) -> bool,
) -> Vec<bool> {
    for &h in hashes.iter().take(AHEAD) {
        prefetch(&filter, h);
    }
    (0..hashes.len())
        .map(|i| {
            if let Some(&h) = hashes.get(i + AHEAD) {
                prefetch(&filter, h);
            }
            f(&mut filter, hashes[i])
        })
        .collect()
}

/// Physical index of age `age` in a ring of `n` whose newest slice is `head` (both below `n`).
#[inline]
fn ring(head: usize, n: usize, age: usize) -> usize {
    // head < n and age < n, so one subtraction replaces a division.
    let p = head + age;
    if p >= n { p - n } else { p }
}

/// The bit an item has in physical slice `p` of the sliced layout: (word, mask).
#[inline]
fn sliced_bit(slice_bits: u64, h: ItemHash, p: usize) -> (usize, u64) {
    let x = h.h1.wrapping_add((p as u64).wrapping_mul(h.h2));
    let pos = reduce(x, slice_bits);
    ((pos / 64) as usize, 1u64 << (pos % 64))
}

/// Words in a row of the generations layout: the tag, then the blocks.
const GEN_ROW: usize = 1 + 8 * GEN_BLOCKS;
const _: () = assert!(GEN_ROW == 41, "the batched query's prefetches cover 41 words");

/// The words of physical slice `p`'s block in a row of the generations layout.
#[inline(always)]
fn gen_block(p: usize) -> std::ops::Range<usize> {
    1 + 8 * p..9 + 8 * p
}

impl WindowFilter {
    /// An empty filter whose first generation begins at `now_ms`; its memory is offered to
    /// `guard` first.
    pub fn new(
        params: WindowParams,
        seed: u64,
        now_ms: u64,
        guard: &dyn AllocGuard,
    ) -> Result<Self, FilterError> {
        params.validate()?;
        guard.admit(params.bytes(), params.bytes())?;
        let store = Self::zeroed_store(&params)?;
        Ok(Self {
            params,
            seed,
            counts: vec![0; params.slices()],
            store,
            head: 0,
            gen_start_ms: now_ms,
            last_ms: now_ms,
            turns: 0,
        })
    }

    /// All-zero memory for `params` (validated).
    fn zeroed_store(params: &WindowParams) -> Result<Store, FilterError> {
        Ok(match params.layout {
            WindowLayout::Sliced => Store::Sliced(
                (0..params.slices())
                    .map(|_| Words::zeroed(params.slice_words()))
                    .collect::<Result<Vec<_>, _>>()?,
            ),
            WindowLayout::Blocked | WindowLayout::Generations => {
                Store::Blocked(Words::zeroed(params.bytes() / 8)?)
            }
        })
    }

    /// The parameters.
    pub fn params(&self) -> &WindowParams {
        &self.params
    }

    /// The hash seed.
    pub fn seed(&self) -> u64 {
        self.seed
    }

    /// Bytes of bit arrays (`BF.INFO Size`).
    pub fn bytes(&self) -> u64 {
        self.params.bytes()
    }

    /// Bytes the value takes in memory.
    pub fn memory_usage(&self) -> u64 {
        self.bytes() + self.counts.len() as u64 * 8 + std::mem::size_of::<Self>() as u64
    }

    /// The latest time a write brought.
    pub fn last_ms(&self) -> u64 {
        self.last_ms
    }

    /// Turns due at `now` since the current generation began (0 for a count window), capped
    /// at the ring size (more clear nothing more).
    fn due_turns(&self, now_ms: u64) -> usize {
        match self.params.kind {
            WindowKind::Items => 0,
            WindowKind::Time { .. } => {
                let elapsed = now_ms.max(self.last_ms).saturating_sub(self.gen_start_ms);
                let turns = elapsed / self.params.gen_ms;
                usize::try_from(turns).unwrap_or(usize::MAX).min(self.params.slices())
            }
        }
    }

    /// Physical index of the slice of age `age`.
    #[inline]
    fn at_age(&self, age: usize) -> usize {
        ring(self.head, self.params.slices(), age)
    }

    /// Turns the ring once: the oldest slice becomes the newest, empty (cleared now in the
    /// sliced layout, row by row on their next write in the blocked one).
    fn turn(&mut self) {
        let n = self.params.slices();
        self.head = (self.head + n - 1) % n;
        self.counts[self.head] = 0;
        match &mut self.store {
            Store::Sliced(slices) => slices[self.head].fill(0),
            Store::Blocked(_) => self.count_turns(1),
        }
    }

    /// Counts `t` turns (at most the ring's size). The count stays within the loader's bound
    /// ([`codec::MAX_TURNS`]): no filter turns 2^62 times, but a loaded count is trusted, and
    /// one forged at the bound would pass it on the next turn, and the value saved then be
    /// refused on reload (`DEBUG RELOAD` and a restart abort Redis). Before it would pass, the
    /// count is rebased ([`rebase_turns`](Self::rebase_turns)), which changes no answer.
    fn count_turns(&mut self, t: u64) {
        // turns ≤ MAX_TURNS (loaded, or kept so here) and t ≤ k + l: no overflow.
        if self.turns + t > codec::MAX_TURNS {
            self.rebase_turns();
        }
        self.turns += t;
    }

    /// Sets the turn count to the ring's size `n` and moves every row's tag with it, keeping
    /// the ages each row reads as empty (`min(turns − tag, n)`, see [`stale`](Self::stale)):
    /// every later read and write answers as it would have. O(rows), for a forged count only.
    #[cold]
    fn rebase_turns(&mut self) {
        let n = self.params.slices() as u64;
        let (turns, row_words) = (self.turns, self.params.row_words());
        if let Store::Blocked(words) = &mut self.store {
            for row in words.chunks_exact_mut(row_words) {
                row[0] = n - turns.saturating_sub(row[0]).min(n);
            }
        }
        self.turns = n;
    }

    /// Every generation ended (a write after a pause longer than the window): every slice is
    /// emptied. Blocked: `k + l` turns are counted, which makes every row's slices read as
    /// empty. Sliced: each slice is swapped for a fresh zeroed allocation, whose pages the
    /// kernel zeroes lazily, rather than written over (a memset of the whole filter: ~0.3 s
    /// for 1 GiB); where the allocator refuses, the slice is written over instead. The ring's
    /// position does not matter when all is empty.
    fn clear_all(&mut self) {
        let words = self.params.slice_words();
        match &mut self.store {
            Store::Sliced(slices) => {
                for s in slices {
                    match Words::zeroed(words) {
                        Ok(fresh) => *s = fresh,
                        Err(_) => s.fill(0),
                    }
                }
            }
            Store::Blocked(_) => self.count_turns(self.params.slices() as u64),
        }
        self.counts.fill(0);
    }

    /// Moves the window to `now_ms` (a write): turns the ring once per generation that ended,
    /// at most `k + l` times. Returns whether anything changed.
    pub fn advance(&mut self, now_ms: u64) -> bool {
        let now = now_ms.max(self.last_ms);
        let mut changed = now != self.last_ms;
        self.last_ms = now;
        if let WindowKind::Time { .. } = self.params.kind {
            let turns = (now - self.gen_start_ms) / self.params.gen_ms;
            if turns > 0 {
                // turns·gen_ms ≤ now − gen_start: no overflow.
                self.gen_start_ms += turns * self.params.gen_ms;
                if turns >= self.params.slices() as u64 {
                    self.clear_all();
                } else {
                    for _ in 0..turns {
                        self.turn();
                    }
                }
                changed = true;
            }
        }
        changed
    }

    fn hash(&self, item: &[u8]) -> ItemHash {
        HashScheme::Xxh3Enhanced.hash(item, self.seed)
    }

    /// The first word of the item's row (blocked layout).
    #[inline]
    fn row_start(&self, h: ItemHash) -> usize {
        // reduce(…, rows) < rows, and rows × row_words words are allocated.
        reduce(h.h1, self.params.rows()) as usize * self.params.row_words()
    }

    /// Ages of a row with tag `tag` that turns since recycled (read as empty): `0..stale`.
    #[inline]
    fn stale(&self, tag: u64) -> usize {
        // A tag above `turns` is refused on load; saturating all the same.
        usize::try_from(self.turns.saturating_sub(tag))
            .unwrap_or(usize::MAX)
            .min(self.params.slices())
    }

    /// Whether a generation among ages `lo..hi` (`lo ≤ hi ≤ GEN_BLOCKS`) holds the item
    /// (probe hash `h2`) in `row` (generations layout). Every block is tested (no branch on
    /// the data), the hits rotated from physical into age order and kept in `lo..hi`.
    #[inline]
    fn gen_found(&self, row: &[u64], h2: u64, lo: usize, hi: usize) -> bool {
        let blocks: &GenBlocks =
            row[1..].try_into().expect("validated: a row is a tag and GEN_BLOCKS blocks");
        self.in_ages(gen_test(blocks, self.params.probes, h2), lo, hi)
    }

    /// Whether `hits` (bit `p`: physical block `p` holds the item) has a block of age in
    /// `lo..hi` (`lo ≤ hi ≤ GEN_BLOCKS`): the hits rotated from physical into age order.
    #[inline(always)]
    fn in_ages(&self, hits: u32, lo: usize, hi: usize) -> bool {
        // Age a is physical (head + a) mod n (head < n); bits past n are masked off.
        let (head, n) = (self.head as u32, GEN_BLOCKS as u32);
        let by_age = hits >> head | hits.checked_shl(n - head).unwrap_or(0);
        // A row stale past the valid ages (`lo ≥ hi`: due turns on a read) has none.
        let ages = if lo < hi { (1u32 << hi) - (1u32 << lo) } else { 0 };
        by_age & ages != 0
    }

    /// [`contains_many`](Self::contains_many)'s loop for the generations layout, compiled with
    /// AVX2 and BMI2 as one function (the probe mask, the block test and the row's bookkeeping
    /// inlined; the CPU's features tested once per batch). Precondition: the generations
    /// layout.
    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx2,bmi2")]
    fn gen_contains_many_avx2(&self, hashes: &[ItemHash], valid: usize) -> Vec<bool> {
        // SAFETY: this function is compiled with AVX2 and BMI2 and runs only where the CPU has
        // them.
        unsafe { self.gen_contains_many_by::<false>(hashes, valid) }
    }

    /// [`gen_contains_many_avx2`](Self::gen_contains_many_avx2) with the AVX-512F block test
    /// (`gen512`). Precondition: the generations layout.
    #[cfg(all(target_arch = "x86_64", scalebloom_avx512))]
    #[target_feature(enable = "avx512f,avx2,bmi2")]
    fn gen_contains_many_avx512(&self, hashes: &[ItemHash], valid: usize) -> Vec<bool> {
        // SAFETY: this function is compiled with AVX-512F, AVX2 and BMI2 and runs only where
        // the CPU has them.
        unsafe { self.gen_contains_many_by::<true>(hashes, valid) }
    }

    /// The batched query's loop made for the filter's probe count: `K` its count up to 16 (the
    /// probes unrolled; the AVX-512F test if `WIDE`), or `K` = 0 with the AVX2 mask test for
    /// any other count.
    ///
    /// # Safety
    /// The CPU has AVX2 and BMI2, and AVX-512F if `WIDE`; inlined only into functions
    /// compiled with them.
    #[cfg(target_arch = "x86_64")]
    #[inline(always)]
    unsafe fn gen_contains_many_by<const WIDE: bool>(
        &self,
        hashes: &[ItemHash],
        valid: usize,
    ) -> Vec<bool> {
        macro_rules! by_probes {
            ($($k:literal)*) => {
                // SAFETY: the caller's precondition (the CPU's features); each `K` is the
                // probes, in 1..=16, and the AVX-512F test (`WIDE`) only with such a `K`.
                unsafe {
                    match self.params.probes {
                        $($k => self.gen_contains_many_k::<$k, WIDE>(hashes, valid),)*
                        _ => self.gen_contains_many_k::<0, false>(hashes, valid),
                    }
                }
            };
        }
        by_probes!(1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16)
    }

    /// [`gen_contains_many_avx2`](Self::gen_contains_many_avx2) for `K` probes (1..=16), or
    /// any number (`K` = 0); with the AVX-512F block test if `WIDE`. Precondition: the
    /// generations layout; `K` is 0 or the probes; the CPU has AVX2 and BMI2, and AVX-512F if
    /// `WIDE` (then `K` is not 0); inlined only into functions compiled with them.
    #[cfg(target_arch = "x86_64")]
    #[inline(always)]
    unsafe fn gen_contains_many_k<const K: u32, const WIDE: bool>(
        &self,
        hashes: &[ItemHash],
        valid: usize,
    ) -> Vec<bool> {
        debug_assert!(K == 0 || K == self.params.probes);
        debug_assert!(!WIDE || K > 0);
        let Store::Blocked(words) = &self.store else { unreachable!("rows") };
        let (rows, probes, turns) = (self.params.rows(), self.params.probes, self.turns);
        // The row of hash `h`: its tag and GEN_BLOCKS blocks (reduce(…, rows) < rows, and
        // rows × GEN_ROW words are allocated).
        let row_of = |h: ItemHash| -> &[u64; GEN_ROW] {
            let start = reduce(h.h1, rows) as usize * GEN_ROW;
            words[start..start + GEN_ROW].try_into().expect("a slice of GEN_ROW words")
        };
        // Its cache lines: one prefetch every 64 bytes from its first word to its last (word
        // 40: GEN_ROW is 41), unrolled.
        let fetch = |h: ItemHash| {
            let row = row_of(h);
            for w in [0, 8, 16, 24, 32, GEN_ROW - 1] {
                prefetch(&row[w]);
            }
        };
        // By the row's stale ages `0..s` (s ≤ GEN_BLOCKS): the physical blocks whose ages are
        // in `s..valid` ([`in_ages`](Self::in_ages) for every hit pattern, made once).
        let live: [u32; GEN_BLOCKS + 1] = std::array::from_fn(|s| {
            (0..GEN_BLOCKS as u32)
                .filter(|&p| self.in_ages(1 << p, s, valid))
                .fold(0, |m, p| m | 1 << p)
        });
        for &h in hashes.iter().take(AHEAD) {
            fetch(h);
        }
        // A loop, not an iterator's `map`: a closure is not compiled with this function's CPU
        // features, and the mask and test would become calls (measured: 219 ns per item
        // against 33).
        let mut out = Vec::with_capacity(hashes.len());
        for (i, &h) in hashes.iter().enumerate() {
            if let Some(&next) = hashes.get(i + AHEAD) {
                fetch(next);
            }
            let row = row_of(h);
            let blocks: &GenBlocks = row[1..].try_into().expect("GEN_ROW − 1 words");
            // As `stale`: a tag above `turns` is refused on load; saturating all the same.
            let stale = turns.saturating_sub(row[0]).min(GEN_BLOCKS as u64) as usize;
            let hits = if WIDE {
                // SAFETY: the caller's precondition: the CPU has AVX-512F and `K` is the
                // probes, in 1..=16.
                unsafe { wide_holding::<K>(blocks, h.h2) }
            } else {
                let mask = if K == 0 {
                    // SAFETY: the caller's precondition: the CPU has AVX2 and BMI2.
                    unsafe { probe_mask_avx2(probes, h.h2) }
                } else {
                    // SAFETY: the caller's precondition: the CPU has AVX2; `K` is in 1..=16.
                    unsafe { mask_vector::<K>(h.h2) }
                };
                // SAFETY: the caller's precondition: the CPU has AVX2.
                unsafe { holding_avx2(blocks, &mask) }
            };
            out.push(hits & live[stale] != 0);
        }
        out
    }

    /// Whether `k` consecutive slices among ages `0..valid` hold the item.
    fn found_hash(&self, h: ItemHash, valid: usize) -> bool {
        let k = self.params.k as usize;
        let (head, n) = (self.head, self.params.slices());
        if self.params.layout == WindowLayout::Generations {
            let Store::Blocked(words) = &self.store else { unreachable!("rows") };
            let start = self.row_start(h);
            let row = &words[start..start + self.params.row_words()];
            return self.gen_found(row, h.h2, self.stale(row[0]), valid);
        }
        match &self.store {
            Store::Sliced(slices) => found(k, 0, valid, |age| {
                let p = ring(head, n, age);
                let (w, mask) = sliced_bit(self.params.slice_bits, h, p);
                slices[p][w] & mask != 0
            }),
            Store::Blocked(words) => {
                let start = self.row_start(h);
                let row = &words[start..start + self.params.row_words()];
                has_run(age_mask(&row[1..], h.h2, head), k, self.stale(row[0]), valid)
            }
        }
    }

    /// Whether the item may have been added within the window, as seen at `now_ms` (no write:
    /// generations that ended are treated as gone).
    pub fn contains(&self, item: &[u8], now_ms: u64) -> bool {
        let valid = self.params.slices() - self.due_turns(now_ms);
        self.found_hash(self.hash(item), valid)
    }

    /// [`contains`](Self::contains) of each item, in order: the rows of the next items are
    /// fetched while the current one is probed.
    pub fn contains_many<'a>(
        &self,
        items: impl ExactSizeIterator<Item = &'a [u8]>,
        now_ms: u64,
    ) -> Vec<bool> {
        let valid = self.params.slices() - self.due_turns(now_ms);
        let hashes: Vec<ItemHash> = items.map(|x| self.hash(x)).collect();
        #[cfg(all(target_arch = "x86_64", scalebloom_avx512))]
        if self.params.layout == WindowLayout::Generations
            && std::arch::is_x86_feature_detected!("avx512f")
            && std::arch::is_x86_feature_detected!("bmi2")
        {
            // SAFETY: the CPU has AVX-512F (so AVX2) and BMI2 (checked just above).
            return unsafe { self.gen_contains_many_avx512(&hashes, valid) };
        }
        #[cfg(target_arch = "x86_64")]
        if self.params.layout == WindowLayout::Generations
            && std::arch::is_x86_feature_detected!("avx2")
            && std::arch::is_x86_feature_detected!("bmi2")
        {
            // SAFETY: the CPU has AVX2 and BMI2 (checked just above).
            return unsafe { self.gen_contains_many_avx2(&hashes, valid) };
        }
        fetching_ahead(&hashes, self, |w, h| w.prefetch_row(h), |w, h| w.found_hash(h, valid))
    }

    /// Starts loading the item's row (blocked layout; nothing for the sliced one).
    #[inline]
    fn prefetch_row(&self, h: ItemHash) {
        if let Store::Blocked(words) = &self.store {
            let start = self.row_start(h);
            let row = &words[start..start + self.params.row_words()];
            for w in row.iter().step_by(8) {
                prefetch(w);
            }
            prefetch(&row[row.len() - 1]);
        }
    }

    /// Adds an item at `now_ms` (moving the window first). Returns whether it was new (not
    /// found before); an item found is refreshed all the same: it is remembered for a whole
    /// window from now.
    pub fn add(&mut self, item: &[u8], now_ms: u64) -> bool {
        let h = self.hash(item);
        self.add_hash(h, now_ms)
    }

    /// [`add`](Self::add) of each item, in order: the rows of the next items are fetched while
    /// the current one is written.
    pub fn add_many<'a>(
        &mut self,
        items: impl ExactSizeIterator<Item = &'a [u8]>,
        now_ms: u64,
    ) -> Vec<bool> {
        let hashes: Vec<ItemHash> = items.map(|x| self.hash(x)).collect();
        fetching_ahead(&hashes, self, |w, h| w.prefetch_row(h), |w, h| w.add_hash(h, now_ms))
    }

    fn add_hash(&mut self, h: ItemHash, now_ms: u64) -> bool {
        self.advance(now_ms);
        if self.params.kind == WindowKind::Items && self.counts[self.head] >= self.params.gen_items
        {
            self.turn();
        }
        if self.params.layout == WindowLayout::Generations {
            return self.add_generations(h);
        }
        let n = self.params.slices();
        let k = self.params.k as usize;
        let head = self.head;
        let turns = self.turns;
        let slice_bits = self.params.slice_bits;
        let start = self.row_start(h);
        let new = !self.found_hash(h, n);
        match &mut self.store {
            Store::Sliced(slices) => {
                for age in 0..k {
                    let p = ring(head, n, age);
                    let (w, mask) = sliced_bit(slice_bits, h, p);
                    slices[p][w] |= mask;
                }
            }
            Store::Blocked(words) => {
                let row = &mut words[start..start + n + 1];
                // Bring the row up to date: the slices recycled since its last write are
                // zeroed (`found_hash` read them as empty), and its tag says so.
                let stale = usize::try_from(turns.saturating_sub(row[0])).unwrap_or(n).min(n);
                for age in 0..stale {
                    row[1 + ring(head, n, age)] = 0;
                }
                row[0] = turns;
                for age in 0..k {
                    let p = ring(head, n, age);
                    row[1 + p] |= row_bit(h.h2, p);
                }
                debug_assert!(has_run(age_mask(&row[1..], h.h2, head), k, 0, n));
            }
        }
        self.counts[self.head] = self.counts[self.head].saturating_add(1);
        new
    }

    /// [`add_hash`](Self::add_hash) of the generations layout, the window moved: the item's
    /// mask is ORed into the newest generation's block of its row.
    fn add_generations(&mut self, h: ItemHash) -> bool {
        let (head, n) = (self.head, self.params.slices());
        let turns = self.turns;
        let start = self.row_start(h);
        let row_words = self.params.row_words();
        let Store::Blocked(words) = &self.store else { unreachable!("rows") };
        let row = &words[start..start + row_words];
        let found = self.gen_found(row, h.h2, self.stale(row[0]), n);
        let mask = probe_mask(self.params.probes, h.h2);
        let Store::Blocked(words) = &mut self.store else { unreachable!("rows") };
        let row = &mut words[start..start + row_words];
        // Bring the row up to date: the generations recycled since its last write are zeroed
        // (`gen_found` read them as empty), and its tag says so.
        let stale = usize::try_from(turns.saturating_sub(row[0])).unwrap_or(n).min(n);
        for age in 0..stale {
            row[gen_block(ring(head, n, age))].fill(0);
        }
        row[0] = turns;
        for (w, m) in row[gen_block(head)].iter_mut().zip(&mask) {
            *w |= m;
        }
        self.counts[head] = self.counts[head].saturating_add(1);
        !found
    }

    /// Offers each slice to `mv` (active defragmentation).
    ///
    /// # Safety
    /// `mv` keeps the [`Mover`] contract.
    pub unsafe fn relocate(&mut self, mv: &mut Mover<'_>) {
        match &mut self.store {
            Store::Sliced(slices) => {
                for s in slices {
                    // SAFETY: the caller keeps the `Mover` contract.
                    unsafe { s.relocate(mv) };
                }
            }
            // SAFETY: the caller keeps the `Mover` contract.
            Store::Blocked(words) => unsafe { words.relocate(mv) },
        }
    }
}

#[cfg(test)]
mod tests;
