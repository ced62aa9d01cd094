//! One Bloom layer: a bit array sized for `capacity` items at one error rate, and the number of
//! items added to it. A counting layer has a counter of 4 or 8 bits where a plain layer has a
//! bit ([`Rule::Counting`], [`super::counting`]).

use super::bits::{BitArray, View, ViewMut};
use super::counting::{self, Width};
use super::hash::ItemHash;
use super::params::{LayerSize, RbLayerSize, layer_size};
use super::probe::{self, WordArray};
use crate::filter::BloomError;

/// How a layer turns an item's hash into bit positions: part of the data, like the hash scheme.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Rule {
    /// Native layers: enhanced double hashing, multiply-shift into `[0, bits)` ([`ItemHash::probes`]).
    Reduce,
    /// RedisBloom layers sized without rounding (`NOROUND`): `(a + i·b) mod bits`. RedisBloom
    /// 2.2.0–2.2.14 rounded such layers up to whole bytes, not 64-bit words: the array here is
    /// rounded up to a word, and the payload is how many bytes of it are padding (0–7), which
    /// are not part of the layer (its [`Layer::len_bits`] and [`Layer::bytes`] leave them out).
    Modulo(u8),
    /// RedisBloom layers sized to a power of two: `(a + i·b) mod 2^n2`, `2^n2 ≤ bits` (below 64
    /// bits RedisBloom still allocates 8 bytes; positions stay below `2^n2`).
    Pow2(u8),
    /// Native counting layers: the positions of [`Rule::Reduce`], each a counter of this many
    /// bits (4 or 8) in an array that many times larger ([`super::counting`]).
    Counting(Width),
}

impl Rule {
    /// The modulus of positions for a layer of `bits` bits (as [`Layer::len_bits`] counts).
    #[inline]
    pub fn modulus(self, bits: u64) -> u64 {
        match self {
            Rule::Pow2(n2) => 1u64 << n2,
            Rule::Reduce | Rule::Modulo(_) | Rule::Counting(_) => bits,
        }
    }

    /// RedisBloom's `n2` field for a layer with this rule.
    pub fn n2(self) -> u8 {
        match self {
            Rule::Pow2(n2) => n2,
            Rule::Reduce | Rule::Modulo(_) | Rule::Counting(_) => 0,
        }
    }
}

/// What a bit array handed to a layer holds, so its set-bit counts are known without a scan
/// where they can be: a fresh array (just allocated, all zero) counts 0; a loaded one is
/// counted. Counting a fresh array would read (and fault in) every page of it: a LOADCHUNK
/// header of a 1 GiB filter would touch 1 GiB before the first chunk arrives.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Contents {
    /// Bits from outside (RDB, RESTORE, a test): counted.
    Loaded,
    /// A zeroed array straight from `BitArray::new`: nothing set.
    Fresh,
}

/// One fixed-size Bloom filter inside a chain.
///
/// Only what the hot paths read is stored — capacity, probe count, item count, the number of
/// set bits and the bits (whose length is the bit count). The error rate and bits per entry
/// follow from the chain's parameters and the layer's position
/// ([`Chain::layer_size`](super::Chain::layer_size)). This keeps a layer at 64 bytes, part of
/// every filter's fixed memory (a jemalloc size class, as RedisBloom's `SBLink` + `bloom`).
#[derive(Debug, Clone, PartialEq)]
pub struct Layer {
    pub(super) capacity: u64,
    pub(super) items: u64,
    /// Bits set in `bits`: kept as adds set them (the kernels report how many they flipped) and
    /// recounted whenever bits arrive from outside (load, restore, chunks), so `BF.STATS` reads
    /// a layer's fill without a scan. Not persisted. In a counting layer: non-zero counters.
    pub(super) ones: u64,
    /// Counting layers: counters at their maximum (kept and recounted like `ones`); 0 otherwise.
    pub(super) saturated: u64,
    pub(super) hashes: u32,
    pub(super) rule: Rule,
    /// For RedisBloom layers: this layer's error is the chain's first layer error × 0.5 to the
    /// power `halvings` (RedisBloom stores each layer's error; every error it ever made is one of
    /// these). 0 and unused for native layers, whose error follows from their position.
    pub(super) halvings: u16,
    pub(super) bits: BitArray,
}

impl Layer {
    /// Lets `mv` move the layer's bit array (active defragmentation).
    ///
    /// # Safety
    /// `mv` must keep the contract of [`Mover`](crate::filter::mem::Mover).
    pub unsafe fn relocate(&mut self, mv: &mut crate::filter::mem::Mover<'_>) {
        // SAFETY: the caller's contract on `mv`.
        unsafe { self.bits.relocate(mv) }
    }

    /// An empty layer for `capacity` items at `error`.
    pub fn new(capacity: u64, error: f64) -> Result<Self, BloomError> {
        Self::new_counting(&layer_size(capacity, error)?, 0)
    }

    /// An empty layer of `size` with counters of `width` bits (4 or 8), or plain bits when
    /// `width` is 0.
    pub fn new_counting(size: &LayerSize, width: Width) -> Result<Self, BloomError> {
        let bits = BitArray::new(counting::array_bits(size.bits, width)?)?;
        Self::from_parts(*size, 0, bits, width, Contents::Fresh)
    }

    /// An empty RedisBloom layer of `size`, `halvings` times tighter than the chain's first.
    pub fn new_redisbloom(size: &RbLayerSize, halvings: u16) -> Result<Self, BloomError> {
        let bits = BitArray::new(array_bits(size.bits))?;
        Self::from_redisbloom(size, halvings, 0, bits, Contents::Fresh)
    }

    /// A RedisBloom layer rebuilt from stored parts: `size.bits` must be a positive multiple
    /// of 8, `bits` must have it rounded up to a multiple of 64 ([`array_bits`]), the position
    /// modulus must not exceed it, and `items` must not exceed the capacity.
    pub fn from_redisbloom(
        size: &RbLayerSize,
        halvings: u16,
        items: u64,
        bits: BitArray,
        contents: Contents,
    ) -> Result<Self, BloomError> {
        if size.bits == 0 || size.bits % 8 != 0 || bits.len_bits() != array_bits(size.bits) {
            return Err(BloomError::BadData);
        }
        let pad = ((bits.len_bits() - size.bits) / 8) as u8;
        let rule = if size.n2 == 0 { Rule::Modulo(pad) } else { Rule::Pow2(size.n2) };
        if size.n2 >= 64 || rule.modulus(size.bits) > size.bits || items > size.capacity {
            return Err(BloomError::BadData);
        }
        if pad != 0 && size.n2 != 0 {
            return Err(BloomError::BadData);
        }
        let ones = match contents {
            Contents::Loaded => bits.count_ones(),
            Contents::Fresh => 0,
        };
        let capacity = size.capacity;
        Ok(Self { capacity, items, ones, saturated: 0, hashes: size.hashes, rule, halvings, bits })
    }

    /// How positions are computed.
    pub fn rule(&self) -> Rule {
        self.rule
    }

    /// See the field: the error is the first layer's × 0.5^halvings (RedisBloom layers).
    pub fn halvings(&self) -> u16 {
        self.halvings
    }

    /// A layer rebuilt from stored parts, with counters of `width` bits (0: plain bits). `bits`
    /// must have the length the sizing gives (× `width` for counters), `items` must not exceed
    /// the capacity (plain layers), and `width` must be 0, 4 or 8. Its non-zero and saturated counts are
    /// counted here for loaded bits, 0 for fresh ones ([`Contents`]).
    pub fn from_parts(
        size: LayerSize,
        items: u64,
        bits: BitArray,
        width: Width,
        contents: Contents,
    ) -> Result<Self, BloomError> {
        let rule = match width {
            0 => Rule::Reduce,
            w if counting::valid_width(u64::from(w)) => Rule::Counting(w),
            _ => return Err(BloomError::BadData),
        };
        // A counting layer counts every add of the items it holds, past its capacity too.
        let items_fit = width != 0 || items <= size.capacity;
        if bits.len_bits() != counting::array_bits(size.bits, width)? || !items_fit {
            return Err(BloomError::BadData);
        }
        let (ones, saturated) = match contents {
            Contents::Loaded => counting::array_counts(&bits, width),
            Contents::Fresh => (0, 0),
        };
        Ok(Self {
            capacity: size.capacity,
            items,
            ones,
            saturated,
            hashes: size.hashes,
            rule,
            halvings: 0,
            bits,
        })
    }

    /// Bits per counter of a counting layer; 0 for a plain one.
    pub fn width(&self) -> Width {
        match self.rule {
            Rule::Counting(w) => w,
            _ => 0,
        }
    }

    /// Counters at their maximum (counting layers).
    pub fn saturated(&self) -> u64 {
        self.saturated
    }

    /// Items this layer is built for.
    pub fn capacity(&self) -> u64 {
        self.capacity
    }

    /// Probes per item.
    pub fn hashes(&self) -> u32 {
        self.hashes
    }

    /// Bits in the layer — the array's, less any padding bytes (see [`Rule::Modulo`]) — or
    /// counters in a counting layer: what its sizing calls bits.
    #[inline]
    pub fn len_bits(&self) -> u64 {
        match self.rule {
            Rule::Modulo(pad) => self.bits.len_bits() - 8 * u64::from(pad),
            Rule::Counting(w) => self.bits.len_bits() / u64::from(w),
            _ => self.bits.len_bits(),
        }
    }

    /// Bytes of the array (of bits or counters), less any padding.
    pub fn bytes(&self) -> u64 {
        match self.rule {
            Rule::Modulo(pad) => self.bits.len_bytes() - u64::from(pad),
            _ => self.bits.len_bytes(),
        }
    }

    /// Items added to this layer.
    pub fn items(&self) -> u64 {
        self.items
    }

    /// The bit array.
    pub fn bits(&self) -> &BitArray {
        &self.bits
    }

    /// Bits set (see the field).
    pub fn ones(&self) -> u64 {
        self.ones
    }

    /// Positions an item's probes range over: the bits, or for RedisBloom's power-of-two
    /// layers `2^n2` of them. The denominator of the layer's fill.
    pub fn positions(&self) -> u64 {
        self.rule.modulus(self.len_bits())
    }

    /// Overwrites the bytes at `[offset, offset + data.len())` of the array (a chunked
    /// restore), keeping the counts of set bits (non-zero and saturated counters) right: the
    /// range is counted out before and in after.
    pub fn write_bytes(&mut self, offset: u64, data: &[u8]) -> Result<(), BloomError> {
        let width = self.width();
        let (mut ones, mut saturated) = (0u64, 0u64);
        // One call maps the pages, instead of a read fault and then a write fault per page.
        self.bits.prefault_bytes(offset, data.len() as u64);
        if width == 0 {
            // Plain bits: count out, copy and count in, in one pass.
            let (before, after) = self.bits.replace_bytes(offset, data)?;
            debug_assert!(before <= self.ones);
            self.ones = self.ones.saturating_sub(before) + after;
            return Ok(());
        }
        self.bits.read_bytes(offset, data.len() as u64, |b| {
            let (n, s) = counting::byte_counts(b, width);
            ones += n;
            saturated += s;
        })?;
        self.bits.write_bytes(offset, data)?;
        debug_assert!(ones <= self.ones && saturated <= self.saturated);
        let (n, s) = counting::byte_counts(data, width);
        self.ones = self.ones.saturating_sub(ones) + n;
        self.saturated = self.saturated.saturating_sub(saturated) + s;
        Ok(())
    }

    /// Whether the layer holds as many items as it was sized for.
    pub fn is_full(&self) -> bool {
        self.items >= self.capacity
    }

    /// Whether every probe of `h` is set.
    #[inline(always)]
    pub fn contains(&self, h: ItemHash) -> bool {
        if self.rule != Rule::Reduce {
            return self.contains_by_rule(h);
        }
        match self.bits.view() {
            View::One(words) => probe::all_set(words, self.hashes, h),
            View::Many(table) => probe::all_set(table, self.hashes, h),
        }
    }

    /// Sets every probe of `h` (increments every counter) and counts the item.
    #[inline]
    pub fn insert(&mut self, h: ItemHash) {
        if let Rule::Counting(w) = self.rule {
            self.increment(h, w);
            return;
        }
        if self.rule != Rule::Reduce {
            self.set_modular(h);
        } else {
            for p in h.probes(self.len_bits(), self.hashes) {
                self.ones += u64::from(!self.bits.set(p));
            }
        }
        self.items += 1;
    }

    /// [`Layer::contains`] for the kinds other than native plain layers: counting layers
    /// (every counter non-zero) and RedisBloom's rules. Out of line, so the plain path that
    /// inlines `contains` stays small.
    fn contains_by_rule(&self, h: ItemHash) -> bool {
        match self.rule {
            Rule::Counting(w) => self.holds_counted(h, w),
            _ => self.contains_redisbloom(h),
        }
    }

    /// The modulus of the positions under a RedisBloom rule (checked against the array when
    /// the layer was built).
    fn modulus(&self) -> Modulus {
        self.rule.modulus(self.len_bits())
    }

    /// [`Layer::contains`] for RedisBloom's rules: positions mod the rule's modulus; stops at
    /// the first clear bit, as RedisBloom's `bloom_check` does.
    fn contains_redisbloom(&self, h: ItemHash) -> bool {
        let (k, modulus) = (self.hashes, self.modulus());
        match self.bits.view() {
            View::One(words) => all_set_modular(words, k, modulus, h),
            View::Many(table) => all_set_modular(table, k, modulus, h),
        }
    }

    /// Tests and sets in one pass: sets the probes of `h` that are clear and, if any was, counts
    /// the item and returns `true`. Same answer and same bits as `!contains(h)` followed by
    /// `insert(h)`, with each probed word visited once; an item already present writes nothing.
    /// A counting layer increments the item's counters whatever it held (and returns whether it did
    /// not hold the item before).
    #[inline]
    pub fn insert_if_new(&mut self, h: ItemHash) -> bool {
        if self.rule != Rule::Reduce {
            if let Rule::Counting(w) = self.rule {
                // A counting layer always counts the item; "new" is whether it held it before.
                return !self.increment(h, w);
            }
            let flipped = self.set_modular(h);
            self.items += u64::from(flipped > 0);
            return flipped > 0;
        }
        let hashes = self.hashes;
        let flipped = match self.bits.view_mut() {
            ViewMut::One(words) => probe::set_clear(words, hashes, h),
            ViewMut::Many(table) => probe::set_clear(table, hashes, h),
        };
        self.ones += u64::from(flipped);
        self.items += u64::from(flipped > 0);
        flipped > 0
    }

    /// Sets the probes of `h` under a RedisBloom rule (positions mod the rule's modulus), adds
    /// the bits it set to the layer's count and returns how many that was.
    fn set_modular(&mut self, h: ItemHash) -> u64 {
        let (k, modulus) = (self.hashes, self.modulus());
        let flipped = match self.bits.view_mut() {
            ViewMut::One(words) => set_modular_in(words, k, modulus, h),
            ViewMut::Many(table) => set_modular_in(table, k, modulus, h),
        };
        self.ones += flipped;
        flipped
    }

    /// [`Layer::insert_if_new`] for each of `hashes` in order, appending the results to `out`,
    /// when the layer has room for all of them (so it cannot fill up part-way) and is not a
    /// counting layer (a native plain layer must also be one segment); returns how many were
    /// new. `None`, changing nothing, when that does not hold.
    #[inline]
    pub fn insert_block(&mut self, hashes: &[ItemHash], out: &mut Vec<bool>) -> Option<u64> {
        if let Rule::Counting(_) = self.rule {
            return None;
        }
        if self.items.checked_add(hashes.len() as u64)? > self.capacity {
            return None;
        }
        if self.rule != Rule::Reduce {
            return Some(self.insert_block_modular(hashes, out));
        }
        let k = self.hashes;
        let kernels = probe::Kernels::<[u64]>::for_hashes(k);
        let ViewMut::One(words) = self.bits.view_mut() else {
            return None;
        };
        let (mut new, mut flipped) = (0, 0);
        for &h in hashes {
            let n = kernels.set_clear(words, k, h);
            flipped += u64::from(n);
            new += u64::from(n > 0);
            out.push(n > 0);
        }
        self.items += new;
        self.ones += flipped;
        Some(new)
    }

    /// [`Layer::insert_block`] under RedisBloom's rules (either view of the array).
    fn insert_block_modular(&mut self, hashes: &[ItemHash], out: &mut Vec<bool>) -> u64 {
        let (k, modulus) = (self.hashes, self.modulus());
        let (mut new, mut flipped) = (0, 0);
        let mut each = |n: u64| {
            flipped += n;
            new += u64::from(n > 0);
            out.push(n > 0);
        };
        match self.bits.view_mut() {
            ViewMut::One(words) => {
                hashes.iter().for_each(|&h| each(set_modular_in(words, k, modulus, h)));
            }
            ViewMut::Many(table) => {
                hashes.iter().for_each(|&h| each(set_modular_in(table, k, modulus, h)));
            }
        }
        self.items += new;
        self.ones += flipped;
        new
    }

    /// [`Layer::contains`] for each of `hashes`, appended to `out`; `false`, doing nothing, for
    /// a counting layer, or a native plain layer of more than one segment.
    #[inline]
    pub fn contains_block(&self, hashes: &[ItemHash], out: &mut Vec<bool>) -> bool {
        if let Rule::Counting(_) = self.rule {
            return false;
        }
        if self.rule != Rule::Reduce {
            let (k, modulus) = (self.hashes, self.modulus());
            match self.bits.view() {
                View::One(words) => {
                    out.extend(hashes.iter().map(|&h| all_set_modular(words, k, modulus, h)));
                }
                View::Many(table) => {
                    out.extend(hashes.iter().map(|&h| all_set_modular(table, k, modulus, h)));
                }
            }
            return true;
        }
        let k = self.hashes;
        let kernels = probe::Kernels::<[u64]>::for_hashes(k);
        let View::One(words) = self.bits.view() else {
            return false;
        };
        out.extend(hashes.iter().map(|&h| kernels.all_set(words, k, h)));
        true
    }

    /// Starts loading the cache lines that `hashes` probe: every probe of each item
    /// (`Purpose::Add` in the chain's batches), or, with `candidates_only`, first every item's
    /// first probe and then the remaining probes of the items whose first probe is set (an
    /// absent item usually stops at its first probe, so it costs one miss, not `k`). Hints
    /// only: nothing changes.
    pub fn prefetch_block(&self, hashes: &[ItemHash], candidates_only: bool) {
        if let Rule::Counting(w) = self.rule {
            // The same two steps over counter positions (bit `p · w` holds counter `p`).
            let (k, positions, w) = (self.hashes, self.len_bits(), u64::from(w));
            if candidates_only {
                hashes.iter().flat_map(|h| h.probes(positions, k).take(1)).for_each(|p| {
                    self.bits.prefetch(p * w);
                });
            }
            for h in hashes {
                let mut probes = h.probes(positions, k);
                if candidates_only {
                    match probes.next() {
                        Some(first) if self.bits.counter(first, w as u8) != 0 => {}
                        _ => continue,
                    }
                }
                probes.for_each(|p| self.bits.prefetch(p * w));
            }
            return;
        }
        if self.rule != Rule::Reduce {
            let (k, modulus) = (self.hashes, self.modulus());
            return match self.bits.view() {
                View::One(words) => prefetch_modular(words, k, modulus, hashes, candidates_only),
                View::Many(table) => prefetch_modular(table, k, modulus, hashes, candidates_only),
            };
        }
        match self.bits.view() {
            View::One(words) => prefetch_block(words, self.hashes, hashes, candidates_only),
            View::Many(table) => prefetch_block(table, self.hashes, hashes, candidates_only),
        }
    }
}

/// [`Layer::prefetch_block`] over one kind of word array.
#[inline(always)]
fn prefetch_block<A: probe::WordArray + ?Sized>(
    words: &A,
    k: u32,
    hashes: &[ItemHash],
    candidates_only: bool,
) {
    let kernels = probe::Kernels::<A>::for_hashes(k);
    if !candidates_only {
        hashes.iter().for_each(|&h| kernels.prefetch(words, k, h));
        return;
    }
    hashes.iter().for_each(|&h| probe::prefetch_first(words, h));
    for &h in hashes {
        if probe::first_probe_set(words, h) {
            kernels.prefetch(words, k, h);
        }
    }
}

/// The bits of the array that holds a RedisBloom layer of `bits` bits: rounded up to whole
/// 64-bit words.
pub fn array_bits(bits: u64) -> u64 {
    bits.div_ceil(64) * 64
}

/// The modulus of a RedisBloom rule's positions (never 0: a layer has at least one bit).
type Modulus = u64;

/// Whether every probe of `h` under a RedisBloom rule is set: positions `(h1 + i·h2) mod
/// modulus` in 64-bit wrapping arithmetic (as [`ItemHash::modular_probes`]), stopping at the
/// first clear one as RedisBloom's `bloom_check` does. `modulus ≤ words.bits()` (checked when
/// the layer was built), as in [`prefetch_modular`].
#[inline(always)]
fn all_set_modular<A: WordArray + ?Sized>(
    words: &A,
    k: u32,
    modulus: Modulus,
    h: ItemHash,
) -> bool {
    debug_assert!(modulus <= words.bits());
    let mut x = h.h1;
    for _ in 0..k {
        let p = x % modulus;
        // SAFETY: `p < modulus ≤ bits`, so `p / 64 < bits / 64`.
        if (unsafe { *words.word(p >> 6) } >> (p & 63)) & 1 == 0 {
            return false;
        }
        x = x.wrapping_add(h.h2);
    }
    true
}

/// Sets every probe of `h` under a RedisBloom rule (positions as in [`all_set_modular`]);
/// how many were clear.
#[inline(always)]
fn set_modular_in<A: WordArray + ?Sized>(
    words: &mut A,
    k: u32,
    modulus: Modulus,
    h: ItemHash,
) -> u64 {
    debug_assert!(modulus <= words.bits());
    let (mut x, mut flipped) = (h.h1, 0);
    for _ in 0..k {
        let p = x % modulus;
        // SAFETY: `p < modulus ≤ bits`, so `p / 64 < bits / 64`.
        let w = unsafe { words.word_mut(p >> 6) };
        let mask = 1u64 << (p & 63);
        flipped += u64::from(*w & mask == 0);
        *w |= mask;
        x = x.wrapping_add(h.h2);
    }
    flipped
}

/// [`Layer::prefetch_block`] for RedisBloom's rules, over one kind of word array.
/// `modulus ≤ words.bits()` (checked when the layer was built), so every position `p` below it
/// has its word `p / 64` below `bits / 64`: the precondition of [`WordArray::word`].
fn prefetch_modular<A: WordArray + ?Sized>(
    words: &A,
    k: u32,
    modulus: Modulus,
    hashes: &[ItemHash],
    candidates_only: bool,
) {
    debug_assert!(modulus <= words.bits());
    let word = |p: u64| {
        // SAFETY: `p < modulus ≤ bits`, so `p / 64 < bits / 64` (see above).
        unsafe { words.word(p >> 6) }
    };
    if candidates_only {
        hashes.iter().for_each(|h| crate::filter::mem::prefetch(word(h.h1 % modulus)));
    }
    for h in hashes {
        let first = h.h1 % modulus;
        if candidates_only && (*word(first) >> (first & 63)) & 1 == 0 {
            continue;
        }
        let mut x = h.h1;
        for _ in 0..k {
            crate::filter::mem::prefetch(word(x % modulus));
            x = x.wrapping_add(h.h2);
        }
    }
}
