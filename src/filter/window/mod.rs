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
use super::mem::{Mover, Words};
pub use params::{WindowKind, WindowParams};

/// An age-partitioned Bloom filter with a time or count window.
#[derive(Clone, PartialEq)]
pub struct WindowFilter {
    params: WindowParams,
    seed: u64,
    /// The ring, by physical index; `slices[head]` is age 0.
    slices: Vec<Words>,
    /// Items inserted while each slice (physical index) was the newest: its generation's count.
    counts: Vec<u64>,
    /// Physical index of the newest slice.
    head: usize,
    /// When the current generation began (ms; time windows advance it in steps of `gen_ms`).
    gen_start_ms: u64,
    /// The latest `now` a write brought.
    last_ms: u64,
}

impl std::fmt::Debug for WindowFilter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WindowFilter")
            .field("params", &self.params)
            .field("head", &self.head)
            .field("counts", &self.counts)
            .field("gen_start_ms", &self.gen_start_ms)
            .field("last_ms", &self.last_ms)
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

impl WindowFilter {
    /// An empty filter whose first generation begins at `now_ms`; its slices are offered to
    /// `guard` first.
    pub fn new(
        params: WindowParams,
        seed: u64,
        now_ms: u64,
        guard: &dyn AllocGuard,
    ) -> Result<Self, BloomError> {
        params.validate()?;
        guard.admit(params.bytes(), params.bytes())?;
        let slices = (0..params.slices())
            .map(|_| Words::zeroed(params.slice_words()))
            .collect::<Result<Vec<_>, _>>()?;
        Ok(Self {
            params,
            seed,
            counts: vec![0; params.slices()],
            slices,
            head: 0,
            gen_start_ms: now_ms,
            last_ms: now_ms,
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
        // head < n and age < n (callers), so one subtraction replaces a division.
        let p = self.head + age;
        if p >= self.slices.len() { p - self.slices.len() } else { p }
    }

    /// Turns the ring once: the oldest slice is cleared and becomes the newest.
    fn turn(&mut self) {
        let n = self.slices.len();
        self.head = (self.head + n - 1) % n;
        self.slices[self.head].fill(0);
        self.counts[self.head] = 0;
    }

    /// Every generation ended (a write after a pause longer than the window): every slice is
    /// cleared. Each is swapped for a fresh zeroed allocation, whose pages the kernel zeroes
    /// lazily, rather than written over (a memset of the whole filter: ~0.3 s for 1 GiB);
    /// where the allocator refuses, the slice is written over instead. The ring's position
    /// does not matter when all is empty; it turns as many times as `turn` would have.
    fn clear_all(&mut self) {
        let words = self.params.slice_words();
        for s in &mut self.slices {
            match Words::zeroed(words) {
                Ok(fresh) => *s = fresh,
                Err(_) => s.fill(0),
            }
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
                if turns >= self.slices.len() as u64 {
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

    /// The bit an item has in physical slice `p`: (word, mask).
    #[inline]
    fn bit(&self, h: ItemHash, p: usize) -> (usize, u64) {
        let x = h.h1.wrapping_add((p as u64).wrapping_mul(h.h2));
        let pos = reduce(x, self.params.slice_bits);
        ((pos / 64) as usize, 1u64 << (pos % 64))
    }

    /// Whether the item's bit is set in the slice of age `age`.
    #[inline]
    fn hit(&self, h: ItemHash, age: usize) -> bool {
        let p = self.at_age(age);
        let (w, mask) = self.bit(h, p);
        self.slices[p][w] & mask != 0
    }

    /// Whether `k` consecutive slices among ages `0..valid` hold the item.
    ///
    /// Every run of `k` ages contains an age `i` with `i ≡ k − 1 (mod k)` past the last miss,
    /// so only those are probed first (the paper's skipping query): a miss at `i` rules out
    /// every run through `i`, and the next candidate is `i + k`; a hit is grown left and right
    /// into its maximal run, and after the miss `r` that ends it the next candidate is
    /// `r + k`. An absent item costs about `2(k + l)/k` probes instead of `k + l`.
    fn found(&self, h: ItemHash, valid: usize) -> bool {
        let k = self.params.k as usize;
        let mut i = k - 1;
        while i < valid {
            if !self.hit(h, i) {
                i += k;
                continue;
            }
            let mut run = 1;
            let mut left = i;
            while run < k && left > 0 && self.hit(h, left - 1) {
                left -= 1;
                run += 1;
            }
            let mut right = i + 1;
            while run < k && right < valid && self.hit(h, right) {
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

    /// Whether the item may have been added within the window, as seen at `now_ms` (no write:
    /// generations that ended are treated as gone).
    pub fn contains(&self, item: &[u8], now_ms: u64) -> bool {
        let valid = self.slices.len() - self.due_turns(now_ms);
        self.found(self.hash(item), valid)
    }

    /// Adds an item at `now_ms` (moving the window first). Returns whether it was new (not
    /// found before); an item found is refreshed all the same: it is remembered for a whole
    /// window from now.
    pub fn add(&mut self, item: &[u8], now_ms: u64) -> bool {
        self.advance(now_ms);
        if self.params.kind == WindowKind::Items && self.counts[self.head] >= self.params.gen_items
        {
            self.turn();
        }
        let h = self.hash(item);
        let new = !self.found(h, self.slices.len());
        for age in 0..self.params.k as usize {
            let p = self.at_age(age);
            let (w, mask) = self.bit(h, p);
            self.slices[p][w] |= mask;
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
        let n = self.slices.len();
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
        for s in &mut self.slices {
            // SAFETY: the caller keeps the `Mover` contract.
            unsafe { s.relocate(mv) };
        }
    }
}

#[cfg(test)]
mod tests;
