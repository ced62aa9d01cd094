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
//! New filters are blocked ([`WindowLayout::Blocked`]): memory is rows of `k + l + 1` words, a
//! tag and then one word of each slice. An item's hash picks one row, and in each slice's word
//! of it one bit (a mix of the hash and the slice's physical index), so an insert or a query
//! reads one row — a few adjacent cache lines — instead of one line per slice. A turn clears
//! nothing at once: the tag of a row is the ring's turn count when a write last brought the row
//! up to date, the slices recycled by the turns since then (ages `0..turns − tag`) read as
//! empty, and the next write to the row zeroes them. A turn costs O(1) however large the filter
//! is. Filters written before (encoding 1) keep their layout ([`WindowLayout::Sliced`]: one
//! array per slice, a turn clears the oldest array).
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

pub mod codec;
pub mod params;

use super::BloomError;
use super::bloom::hash::{HashScheme, ItemHash, reduce};
use super::guard::AllocGuard;
use super::mem::{Mover, Words, prefetch};
pub use params::{WindowKind, WindowLayout, WindowParams};

/// Where the slices' bits are.
#[derive(Clone, PartialEq)]
enum Store {
    /// One array per slice, by physical index.
    Sliced(Vec<Words>),
    /// Rows of `k + l + 1` words: the row's tag, then the word of each slice (physical index).
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

/// What `BF.STATS` reports of a windowed filter.
#[derive(Debug, Clone, PartialEq)]
pub struct WindowStats {
    /// Target error rate.
    pub target_error: f64,
    /// Estimated false-positive rate of a query now (from each slice's item count).
    pub estimated_error: f64,
    /// Items added in generations still remembered.
    pub items: u64,
    /// Age of the oldest remembered generation: ms since it began (time), or items added
    /// since it began (count).
    pub oldest_age: u64,
    /// Whether the estimated error rate now is above the target (generations received more
    /// than the slices were sized for).
    pub saturated: bool,
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

/// Six bits of each of eight slices' positions: a mix (splitmix64's finalizer) of the item's
/// second hash and the group `g` of eight physical slices. Independent from group to group (a
/// linear step such as `h2 + p·c` would make two items that agree in one slice agree in all).
#[inline]
fn group_mix(h2: u64, g: usize) -> u64 {
    let z = h2 ^ (g as u64 + 1).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    let z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    let z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// Slices per [`group_mix`] (eight groups make the 64 slices of one mask word).
const GROUP: usize = 8;

/// The bit an item has in the word of physical slice `p` of its row (blocked layout).
#[inline]
fn row_bit(h2: u64, p: usize) -> u64 {
    let z = group_mix(h2, p / GROUP) >> (6 * (p % GROUP));
    1u64 << (z & 63)
}

/// A set of ages (at most 256: `k + l ≤ 200`), one bit each.
type AgeMask = [u64; 4];

/// The item's bit of each slice of a group (up to eight slices; `z` the group's
/// [`group_mix`]), as up to eight bits.
#[inline(always)]
fn group_bits(group: &[u64], z: u64) -> u64 {
    let mut bits = 0u64;
    for (j, &w) in group.iter().enumerate() {
        bits |= ((w >> ((z >> (6 * j)) & 63)) & 1) << j;
    }
    bits
}

/// Bit `p` of the result is whether physical slice `p` holds the item's bit in its row
/// (`slots`: the row's slice words by physical index). No branch on the data: every slice is
/// read, eight positions per mix. The scalar model of [`phys_bits_avx2`].
#[inline]
fn phys_bits_scalar(slots: &[u64], h2: u64) -> AgeMask {
    let mut phys = [0u64; 4];
    for (g, group) in slots.chunks(GROUP).enumerate() {
        phys[g / 8] |= group_bits(group, group_mix(h2, g)) << ((g % 8) * GROUP);
    }
    phys
}

/// [`phys_bits_scalar`] four slices per instruction: the four 6-bit positions of a half group
/// are spread into lanes (a variable shift of the mix), each slice word is shifted so that the
/// item's bit lands in bit 63 of its lane, and the lanes' sign bits are gathered (movemask).
/// The last partial group goes through the scalar path.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
fn phys_bits_avx2(slots: &[u64], h2: u64) -> AgeMask {
    use std::arch::x86_64::*;
    // Group g's eight bits are byte g of the little-endian mask: one byte store per group
    // (k + l ≤ 200 slices make at most 25 groups).
    let mut bytes = [0u8; 32];
    let lo_shifts = _mm256_setr_epi64x(0, 6, 12, 18);
    let hi_shifts = _mm256_setr_epi64x(24, 30, 36, 42);
    let six = _mm256_set1_epi64x(63);
    let mut groups = slots.chunks_exact(GROUP);
    for (g, group) in (&mut groups).enumerate() {
        let z = _mm256_set1_epi64x(group_mix(h2, g) as i64);
        // 63 − pos: the item's bit of each word shifted up into the lane's sign bit.
        let lo_up = _mm256_xor_si256(_mm256_and_si256(_mm256_srlv_epi64(z, lo_shifts), six), six);
        let hi_up = _mm256_xor_si256(_mm256_and_si256(_mm256_srlv_epi64(z, hi_shifts), six), six);
        // SAFETY: `group` is 8 words; each unaligned 256-bit load reads 4 of them.
        let (lo, hi) = unsafe {
            (
                _mm256_loadu_si256(group.as_ptr().cast()),
                _mm256_loadu_si256(group.as_ptr().add(4).cast()),
            )
        };
        let lo_bits = _mm256_movemask_pd(_mm256_castsi256_pd(_mm256_sllv_epi64(lo, lo_up)));
        let hi_bits = _mm256_movemask_pd(_mm256_castsi256_pd(_mm256_sllv_epi64(hi, hi_up)));
        bytes[g] = (lo_bits | hi_bits << 4) as u8;
    }
    let rest = groups.remainder();
    if !rest.is_empty() {
        bytes[slots.len() / GROUP] = group_bits(rest, group_mix(h2, slots.len() / GROUP)) as u8;
    }
    std::array::from_fn(|i| {
        u64::from_le_bytes(bytes[i * 8..i * 8 + 8].try_into().expect("eight bytes"))
    })
}

/// [`phys_bits_scalar`], by AVX2 where the CPU has it.
#[inline]
fn phys_bits(slots: &[u64], h2: u64) -> AgeMask {
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("avx2") {
        // SAFETY: the CPU has AVX2 (checked just above).
        return unsafe { phys_bits_avx2(slots, h2) };
    }
    phys_bits_scalar(slots, h2)
}

/// Bit `age` of the result is whether the slice of that age holds the item's bit in its row
/// (`slots`: the row's slice words by physical index; `head`: physical index of age 0): the
/// slices' bits gathered in physical order ([`phys_bits`]) and then rotated into age order.
#[inline]
fn age_mask(slots: &[u64], h2: u64, head: usize) -> AgeMask {
    let phys = phys_bits(slots, h2);
    if head == 0 {
        return phys;
    }
    // Age a is physical (a + head) mod n; bits past n are ignored by `has_run`'s range.
    let (low, high) = (shr(phys, head), shl(phys, slots.len() - head));
    [low[0] | high[0], low[1] | high[1], low[2] | high[2], low[3] | high[3]]
}

/// `m` shifted towards higher ages by `s` (< 256): bit `i + s` of the result is bit `i` of `m`.
#[inline]
fn shl(m: AgeMask, s: usize) -> AgeMask {
    let (words, bits) = (s / 64, s % 64);
    let mut out = [0u64; 4];
    for (i, o) in out.iter_mut().enumerate().skip(words) {
        let lo = m[i - words];
        let below = if i > words { m[i - words - 1] } else { 0 };
        *o = if bits == 0 { lo } else { (lo << bits) | (below >> (64 - bits)) };
    }
    out
}

/// `m` shifted towards lower ages by `s` (< 256): bit `i` of the result is bit `i + s` of `m`.
#[inline]
fn shr(m: AgeMask, s: usize) -> AgeMask {
    let (words, bits) = (s / 64, s % 64);
    let mut out = [0u64; 4];
    for (i, o) in out.iter_mut().enumerate() {
        let lo = m.get(i + words).copied().unwrap_or(0);
        let hi = m.get(i + words + 1).copied().unwrap_or(0);
        *o = if bits == 0 { lo } else { (lo >> bits) | (hi << (64 - bits)) };
    }
    out
}

/// Whether `m` holds `k` consecutive ages within `lo..hi`.
#[inline]
fn has_run(m: AgeMask, k: usize, lo: usize, hi: usize) -> bool {
    let mut y = [0u64; 4];
    for (i, w) in y.iter_mut().enumerate() {
        let (a, b) = (i * 64, i * 64 + 64);
        let from = lo.clamp(a, b) - a;
        let to = hi.clamp(a, b) - a;
        let keep = if to <= from { 0 } else { (u64::MAX >> (64 - (to - from))) << from };
        *w = m[i] & keep;
    }
    // After each step, bit i of y says that ages i..i + len all hit.
    let mut len = 1;
    while len * 2 <= k {
        let t = shr(y, len);
        for (w, t) in y.iter_mut().zip(t) {
            *w &= t;
        }
        len *= 2;
    }
    if len < k {
        let t = shr(y, k - len);
        for (w, t) in y.iter_mut().zip(t) {
            *w &= t;
        }
    }
    y.iter().any(|&w| w != 0)
}

/// Whether `k` consecutive ages among `lo..hi` hit.
///
/// Every run of `k` ages contains an age `i` with `i ≡ lo + k − 1 (mod k)` past the last miss,
/// so only those are probed first (the paper's skipping query): a miss at `i` rules out every
/// run through `i`, and the next candidate is `i + k`; a hit is grown left and right into its
/// maximal run, and after the miss `r` that ends it the next candidate is `r + k`. An absent
/// item costs about `2(k + l)/k` probes instead of `k + l`.
#[inline]
fn found(k: usize, lo: usize, hi: usize, hit: impl Fn(usize) -> bool) -> bool {
    let mut i = lo + k - 1;
    while i < hi {
        if !hit(i) {
            i += k;
            continue;
        }
        let mut run = 1;
        let mut left = i;
        while run < k && left > lo && hit(left - 1) {
            left -= 1;
            run += 1;
        }
        let mut right = i + 1;
        while run < k && right < hi && hit(right) {
            right += 1;
            run += 1;
        }
        if run >= k {
            return true;
        }
        // `right` is a miss (or the end): the next run lies wholly after it.
        i = right + k;
    }
    false
}

impl WindowFilter {
    /// An empty filter whose first generation begins at `now_ms`; its memory is offered to
    /// `guard` first.
    pub fn new(
        params: WindowParams,
        seed: u64,
        now_ms: u64,
        guard: &dyn AllocGuard,
    ) -> Result<Self, BloomError> {
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
    fn zeroed_store(params: &WindowParams) -> Result<Store, BloomError> {
        Ok(match params.layout {
            WindowLayout::Sliced => Store::Sliced(
                (0..params.slices())
                    .map(|_| Words::zeroed(params.slice_words()))
                    .collect::<Result<Vec<_>, _>>()?,
            ),
            WindowLayout::Blocked => Store::Blocked(Words::zeroed(params.bytes() / 8)?),
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
            Store::Blocked(_) => self.turns += 1,
        }
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
            Store::Blocked(_) => self.turns += self.params.slices() as u64,
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

    /// Whether `k` consecutive slices among ages `0..valid` hold the item.
    fn found_hash(&self, h: ItemHash, valid: usize) -> bool {
        let k = self.params.k as usize;
        let (head, n) = (self.head, self.params.slices());
        match &self.store {
            Store::Sliced(slices) => found(k, 0, valid, |age| {
                let p = ring(head, n, age);
                let (w, mask) = sliced_bit(self.params.slice_bits, h, p);
                slices[p][w] & mask != 0
            }),
            Store::Blocked(words) => {
                let start = self.row_start(h);
                let row = &words[start..start + n + 1];
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

    /// Items added in generations still remembered at `now_ms`.
    pub fn items(&self, now_ms: u64) -> u64 {
        let due = self.due_turns(now_ms);
        let l = self.params.l as usize;
        if due > l {
            return 0;
        }
        (0..=l - due).fold(0u64, |sum, age| sum.saturating_add(self.counts[self.at_age(age)]))
    }
    /// How full the filter is at `now_ms`, and what a query's error is now.
    pub fn stats(&self, now_ms: u64) -> WindowStats {
        let due = self.due_turns(now_ms);
        let n = self.params.slices();
        let k = self.params.k as usize;
        let m = self.params.slice_bits as f64;
        // Slice of age a holds the items of generations of ages a−k+1 ..= a.
        let fills: Vec<f64> = (0..n - due)
            .map(|a| {
                let items = (a.saturating_sub(k - 1)..=a)
                    .fold(0u64, |s, b| s.saturating_add(self.counts[self.at_age(b)]));
                1.0 - (-(items as f64) / m).exp()
            })
            .collect();
        // Ages `0..due` are the generations that began since (empty).
        let mut all = vec![0.0; due];
        all.extend(fills);
        let estimated_error = params::false_positive(&all, k);
        let l = self.params.l as usize;
        let oldest_age = match self.params.kind {
            WindowKind::Time { .. } if due <= l => {
                // The oldest remembered generation that holds items; the generation of real
                // age a began a·gen_ms before the current one.
                (0..=l - due)
                    .rev()
                    .find(|&a| self.counts[self.at_age(a)] > 0)
                    .map(|a| {
                        let began = self.gen_start_ms.saturating_sub(a as u64 * self.params.gen_ms);
                        now_ms.max(self.last_ms).saturating_sub(began)
                    })
                    .unwrap_or(0)
            }
            WindowKind::Time { .. } => 0,
            WindowKind::Items => self.items(now_ms),
        };
        WindowStats {
            target_error: self.params.error,
            estimated_error,
            items: self.items(now_ms),
            oldest_age,
            saturated: estimated_error > self.params.error,
        }
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
