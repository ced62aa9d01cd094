//! The code of each kind of layer ([`LayerKind`]): what a chain's layers hold and how an
//! item's positions are found, for the kind read once per call ([`Kind`](super::kind::Kind),
//! chosen by [`super::dispatch`]).
//!
//! A chain is of one kind for good — every layer follows the same [`Rule`](super::layer::Rule) family, checked
//! when the chain is built or loaded — so the kind is read once per call into the chain
//! ([`Chain::kind`]) and the call then runs code made for that kind alone ([`super::dispatch`]): no
//! per-probe or per-layer test of what the layer is. The kinds:
//!
//! - [`Plain`]: native layers, one bit per position, the unrolled probe kernels of
//!   [`super::probe`];
//! - [`Counting`] (in [`super::counting`], with everything else about counting): native
//!   positions, a counter of `W` bits (4 or 8) per position;
//! - [`Blocked`]: native layers of bits in 512-bit blocks, every probe of an item inside the
//!   one block its hash picks ([`Rule::Blocked`](super::layer::Rule::Blocked));
//! - [`RedisBloom`]: layers in RedisBloom's layout, positions `(a + i·b) mod M` with `M` the
//!   layer's bits or `2^n2` ([`Rule::Modulo`](super::layer::Rule::Modulo), [`Rule::Pow2`](super::layer::Rule::Pow2)).
//!
//! [`Counting`]: super::counting::Counting
//! [`RedisBloom`]: super::redisbloom_layout::RedisBloom

use super::bits::{View, ViewMut};
use super::blocked::{self, BlockedKernels, ItemsKernels};
use super::chain::Chain;
use super::layer::Layer;
use super::probe::{self, WordArray};
use crate::filter::FilterError;
use crate::filter::guard::AllocGuard;
use crate::filter::hash::xxh3short::Xxh3Seeded;
use crate::filter::hash::{HashScheme, ItemHash};

/// Items per block in [`Chain::contains_many`] and [`Chain::add_many`]: enough probes in flight
/// to cover memory latency (16 items × up to ~10 probes), few enough that the prefetched lines
/// stay in L1 until they are used.
pub const BATCH: usize = 16;

/// What one kind of layer does with an item's hash. Every method assumes the layer is of this
/// kind (the chain's kind, [`Chain::kind`]); none checks it.
pub trait LayerKind {
    /// Whether the layer holds `h`: every probe set (every counter non-zero).
    fn holds(layer: &Layer, h: ItemHash) -> bool;

    /// Counts `h` in the layer whatever it held: sets its probes (increments its counters)
    /// and counts the item.
    fn insert(layer: &mut Layer, h: ItemHash);

    /// Tests and inserts in one pass: whether the layer did not hold `h` before. A plain
    /// layer counts the item only then (an item already present writes nothing); a counting
    /// layer always counts it.
    fn insert_if_new(layer: &mut Layer, h: ItemHash) -> bool;

    /// Starts loading the cache lines `hashes` probe: every probe of each item, or, with
    /// `candidates_only`, first every item's first probe and then the other probes of the
    /// items whose first probe is set (an absent item usually stops at its first probe, so it
    /// costs one miss, not `k`). Hints only: nothing changes.
    fn prefetch(layer: &Layer, hashes: &[ItemHash], candidates_only: bool);

    /// What the prefetch of a block in a chain's only layer keeps for that block's kernels
    /// ([`LayerKind::prefetch_keeping`]): the RedisBloom kind keeps the positions it divided
    /// out, so that each is computed once; `()` for the kinds whose positions cost less to
    /// compute again than to keep.
    type Kept: Default;

    /// Whether [`LayerKind::prefetch_keeping`] can keep anything: where not, the batched paths
    /// compile to the plain prefetch alone.
    const KEEPS: bool = false;

    /// Items per prefetched part of the batched paths ([`BATCH`] unless
    /// a kind touches fewer lines per item): every line of a part is prefetched before its
    /// first item is probed, so the first item waits one memory latency per part, and the
    /// part's lines must still be in L1 when probed.
    const PART: usize = BATCH;

    /// [`LayerKind::prefetch`] of a chain's only layer, keeping in `kept` what
    /// [`LayerKind::holds_block`] and [`LayerKind::insert_block`] can reuse for the same
    /// `hashes` in the same layer; whether it kept anything. The default keeps nothing.
    #[inline]
    fn prefetch_keeping(
        layer: &Layer,
        hashes: &[ItemHash],
        candidates_only: bool,
        _kept: &mut Self::Kept,
    ) -> bool {
        Self::prefetch(layer, hashes, candidates_only);
        false
    }

    /// [`LayerKind::holds`] for each of `hashes`, appended to `out`, where this kind has a
    /// kernel for a whole block; `false`, doing nothing, where not. `scheme`: the chain's hash
    /// scheme, which made every one of `hashes` (a kernel may rely on its shape). `kept`: what
    /// [`LayerKind::prefetch_keeping`] kept of the same `hashes` in this layer, if it did.
    #[inline]
    fn holds_block(
        _layer: &Layer,
        _hashes: &[ItemHash],
        _scheme: HashScheme,
        _kept: Option<&Self::Kept>,
        _out: &mut Vec<bool>,
    ) -> bool {
        false
    }

    /// [`LayerKind::insert_if_new`] for each of `hashes` in order, appending the results to
    /// `out`, where this kind has a kernel for a whole block and the layer has room for all
    /// of them (so it cannot fill up part-way); returns how many were new. `None`, changing
    /// nothing, where not. `scheme` and `kept` as in [`LayerKind::holds_block`].
    #[inline]
    fn insert_block(
        _layer: &mut Layer,
        _h: &[ItemHash],
        _scheme: HashScheme,
        _kept: Option<&Self::Kept>,
        _out: &mut Vec<bool>,
    ) -> Option<u64> {
        None
    }

    /// [`LayerKind::holds_block`] of `items` hashed with `scheme` and `seed` in the same loop
    /// (no hash stored and read again), for a chain's only layer when nothing is prefetched;
    /// `false`, doing nothing, where this kind has no such kernel for `scheme`.
    #[inline]
    fn holds_items<T: AsRef<[u8]>>(
        _layer: &Layer,
        _items: &[T],
        _scheme: HashScheme,
        _seed: u64,
        _out: &mut Vec<bool>,
    ) -> bool {
        false
    }

    /// [`LayerKind::insert_block`] of `items` hashed with `scheme` and `seed` in the same
    /// loop, for a chain's only layer when nothing is prefetched: adds as many of `items`, from
    /// the first, as the layer has room for whatever they are (so it cannot fill up
    /// part-way), appending their results to `out`; returns how many it took. 0, changing
    /// nothing, where this kind has no such kernel for `scheme`.
    #[inline]
    fn insert_items<T: AsRef<[u8]>>(
        _layer: &mut Layer,
        _items: &[T],
        _scheme: HashScheme,
        _seed: u64,
        _out: &mut Vec<bool>,
    ) -> usize {
        0
    }

    /// Adds `h` to the chain: `Ok(true)` if no layer held it. The item is new if no layer
    /// holds it. Older layers are only read; the last layer, when it has room, is tested and
    /// set in one pass ([`LayerKind::insert_if_new`]). Counting chains add otherwise
    /// ([`super::counting`]).
    #[inline(always)]
    fn add(chain: &mut Chain, h: ItemHash, guard: &dyn AllocGuard) -> Result<bool, FilterError> {
        let (last, first, between) = chain.layers.split_last_mut();
        // Plain loops, not `any` nor a chained iterator: the adapter would be compiled out of
        // line around the inlined kernel, a call per add even when there is no older layer.
        for layer in between.iter().rev() {
            if Self::holds(layer, h) {
                return Ok(false);
            }
        }
        if let Some(first) = first {
            if Self::holds(first, h) {
                return Ok(false);
            }
        }
        if last.is_full() {
            return add_past_full::<Self>(chain, h, guard);
        }
        Ok(Self::insert_if_new(last, h))
    }
}

/// The rare end of [`LayerKind::add`]: the last layer is full, so a new item needs a new
/// layer (or is refused). Kept out of line so the common path stays small.
#[cold]
#[inline(never)]
fn add_past_full<K: LayerKind + ?Sized>(
    chain: &mut Chain,
    h: ItemHash,
    guard: &dyn AllocGuard,
) -> Result<bool, FilterError> {
    if K::holds(chain.layers.last(), h) {
        return Ok(false);
    }
    chain.grow(guard)?;
    K::insert(chain.layers.last_mut(), h);
    Ok(true)
}

/// Native layers of bits: scheme 5's (`C`) or scheme 1's probe sequence, multiply-shift into
/// `[0, bits)` ([`ItemHash::probes_in`]), through the unrolled kernels of [`super::probe`].
pub struct Plain<const C: bool>;

impl<const C: bool> LayerKind for Plain<C> {
    #[inline(always)]
    fn holds(layer: &Layer, h: ItemHash) -> bool {
        match layer.bits.view() {
            View::One(words) => probe::all_set(words, layer.hashes, C, h),
            View::Many(table) => probe::all_set(table, layer.hashes, C, h),
        }
    }

    #[inline]
    fn insert(layer: &mut Layer, h: ItemHash) {
        for p in h.probes_in(C, layer.bits.len_bits(), layer.hashes) {
            layer.ones += u64::from(!layer.bits.set(p));
        }
        layer.items += 1;
    }

    #[inline(always)]
    fn insert_if_new(layer: &mut Layer, h: ItemHash) -> bool {
        let hashes = layer.hashes;
        let flipped = match layer.bits.view_mut() {
            ViewMut::One(words) => probe::set_clear(words, hashes, C, h),
            ViewMut::Many(table) => probe::set_clear(table, hashes, C, h),
        };
        layer.ones += u64::from(flipped);
        layer.items += u64::from(flipped > 0);
        flipped > 0
    }

    fn prefetch(layer: &Layer, hashes: &[ItemHash], candidates_only: bool) {
        match layer.bits.view() {
            View::One(words) => {
                prefetch_plain::<_, C>(words, layer.hashes, hashes, candidates_only)
            }
            View::Many(table) => {
                prefetch_plain::<_, C>(table, layer.hashes, hashes, candidates_only)
            }
        }
    }

    /// Nothing kept: a native position is a multiply and a shift.
    type Kept = ();

    #[inline]
    fn holds_block(
        layer: &Layer,
        hashes: &[ItemHash],
        _: HashScheme,
        _: Option<&()>,
        out: &mut Vec<bool>,
    ) -> bool {
        let k = layer.hashes;
        let kernels = probe::Kernels::<[u64]>::for_hashes(k, C);
        holds_each(layer, out, |words, out| {
            out.extend(hashes.iter().map(|&h| kernels.all_set(words, k, h)));
        })
    }

    #[inline]
    fn insert_block(
        layer: &mut Layer,
        hashes: &[ItemHash],
        _: HashScheme,
        _: Option<&()>,
        out: &mut Vec<bool>,
    ) -> Option<u64> {
        let k = layer.hashes;
        let kernels = probe::Kernels::<[u64]>::for_hashes(k, C);
        insert_each(layer, hashes.len(), out, |words, out| {
            let (mut new, mut flipped) = (0, 0);
            for &h in hashes {
                let n = kernels.set_clear(words, k, h);
                flipped += u64::from(n);
                new += u64::from(n > 0);
                out.push(n > 0);
            }
            (new, flipped)
        })
    }
}

/// [`Plain::prefetch`] over one kind of word array.
#[inline(always)]
fn prefetch_plain<A: WordArray + ?Sized, const C: bool>(
    words: &A,
    k: u32,
    hashes: &[ItemHash],
    candidates_only: bool,
) {
    let kernels = probe::Kernels::<A>::for_hashes(k, C);
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

/// Native layers of bits in blocks of 512 bits ([`Rule::Blocked`](super::layer::Rule::Blocked)), after RocksDB's
/// FastLocalBloom: `h1` picks the block by multiply-shift (`(h1 · blocks) >> 64`), and probe
/// `i` is bit `x_i >> 55` of it (the top 9 bits), where `x_0 = h2` and `x_{i+1} = x_i · φ`
/// (`φ` = [`BLOCK_PROBE_MUL`](crate::filter::masks::BLOCK_PROBE_MUL), odd; RocksDB does the same on 32 bits). The bits an item probes
/// are one cache line: one miss per item per layer, whatever `k` is. The kernels are in
/// [`super::blocked`].
pub struct Blocked;

impl Blocked {
    /// Sets the probes of `h`, adds the bits it set to the layer's count and returns how many
    /// that was.
    #[inline(always)]
    fn set_probes(layer: &mut Layer, h: ItemHash) -> u64 {
        let k = layer.hashes;
        let kernels = BlockedKernels::for_hashes(k);
        let flipped = match layer.bits.view_mut() {
            ViewMut::One(words) => kernels.set_clear(words, k, h),
            ViewMut::Many(table) => kernels.set_clear(table, k, h),
        };
        layer.ones += u64::from(flipped);
        u64::from(flipped)
    }
}

impl LayerKind for Blocked {
    /// One line per item, so four times [`BATCH`]'s items (a whole
    /// [`HASH_BATCH`](super::block::HASH_BATCH)) still prefetch fewer lines than a standard part
    /// (16 × k): the first item's wait for memory is shared by 64 items. On the 1 GiB filter
    /// of bench part `large` (Intel Xeon KVM guest, one run each) BF.MEXISTS took
    /// 50–51 ns per item, present and absent, with parts of 16, 46 with parts of 32, and 43
    /// with parts of 64 (47 with 32 in the same hour); the second BF.MADD pass 58, 51, and 52
    /// (55). Standard parts of 32 items were no faster there (present lookups 183 ns against
    /// 171 with 16), so they stay at 16.
    const PART: usize = 4 * BATCH;

    #[inline(always)]
    fn holds(layer: &Layer, h: ItemHash) -> bool {
        let k = layer.hashes;
        let kernels = BlockedKernels::for_hashes(k);
        match layer.bits.view() {
            View::One(words) => kernels.all_set(words, k, h),
            View::Many(table) => kernels.all_set(table, k, h),
        }
    }

    #[inline]
    fn insert(layer: &mut Layer, h: ItemHash) {
        Self::set_probes(layer, h);
        layer.items += 1;
    }

    #[inline(always)]
    fn insert_if_new(layer: &mut Layer, h: ItemHash) -> bool {
        let flipped = Self::set_probes(layer, h);
        layer.items += u64::from(flipped > 0);
        flipped > 0
    }

    fn prefetch(layer: &Layer, hashes: &[ItemHash], _candidates_only: bool) {
        // One line per item: the first probe's line is every probe's.
        match layer.bits.view() {
            View::One(words) => hashes.iter().for_each(|&h| blocked::prefetch(words, h)),
            View::Many(table) => hashes.iter().for_each(|&h| blocked::prefetch(table, h)),
        }
    }

    /// Nothing kept: an item's block is a multiply and a shift.
    type Kept = ();

    #[inline]
    fn holds_block(
        layer: &Layer,
        hashes: &[ItemHash],
        scheme: HashScheme,
        _: Option<&()>,
        out: &mut Vec<bool>,
    ) -> bool {
        let k = layer.hashes;
        let kernels = BlockedKernels::for_hashes(k);
        holds_each(layer, out, |words, out| {
            kernels.all_set_many(words, k, hashes, scheme == HashScheme::Xxh3Blocked, out)
        })
    }

    #[inline]
    fn insert_block(
        layer: &mut Layer,
        hashes: &[ItemHash],
        scheme: HashScheme,
        _: Option<&()>,
        out: &mut Vec<bool>,
    ) -> Option<u64> {
        let k = layer.hashes;
        let kernels = BlockedKernels::for_hashes(k);
        insert_each(layer, hashes.len(), out, |words, out| {
            kernels.set_clear_many(words, k, hashes, scheme == HashScheme::Xxh3Blocked, out)
        })
    }

    #[inline]
    fn holds_items<T: AsRef<[u8]>>(
        layer: &Layer,
        items: &[T],
        scheme: HashScheme,
        seed: u64,
        out: &mut Vec<bool>,
    ) -> bool {
        if scheme != HashScheme::Xxh3Blocked {
            return false;
        }
        let k = layer.hashes;
        let kernels = ItemsKernels::<T>::for_hashes(k);
        holds_each(layer, out, |words, out| {
            kernels.all_set_items(words, k, items, &Xxh3Seeded::new(seed), out)
        })
    }

    #[inline]
    fn insert_items<T: AsRef<[u8]>>(
        layer: &mut Layer,
        items: &[T],
        scheme: HashScheme,
        seed: u64,
        out: &mut Vec<bool>,
    ) -> usize {
        if scheme != HashScheme::Xxh3Blocked {
            return 0;
        }
        // The layer's room (`items ≤ capacity` always holds; saturating all the same).
        let room = layer.capacity.saturating_sub(layer.items);
        let items = &items[..items.len().min(usize::try_from(room).unwrap_or(usize::MAX))];
        let k = layer.hashes;
        let kernels = ItemsKernels::<T>::for_hashes(k);
        let taken = insert_each(layer, items.len(), out, |words, out| {
            kernels.set_clear_items(words, k, items, &Xxh3Seeded::new(seed), out)
        });
        if taken.is_some() { items.len() } else { 0 }
    }
}

/// The shape every kind's [`LayerKind::holds_block`] (and [`LayerKind::holds_items`]) has
/// over a layer of one slice: `holds_all` appends an answer per item to `out`; `false`
/// (nothing done) for a segmented layer.
#[inline(always)]
fn holds_each(
    layer: &Layer,
    out: &mut Vec<bool>,
    holds_all: impl FnOnce(&[u64], &mut Vec<bool>),
) -> bool {
    let View::One(words) = layer.bits.view() else {
        return false;
    };
    holds_all(words, out);
    true
}

/// The shape every kind's [`LayerKind::insert_block`] (and [`LayerKind::insert_items`]) has
/// over a layer of one slice with room for all `len` items: `set_all` adds each in order,
/// appends whether it was new to `out` and returns (items new, bits set), which the layer
/// counts; `None`, changing nothing, where that does not hold.
#[inline(always)]
fn insert_each(
    layer: &mut Layer,
    len: usize,
    out: &mut Vec<bool>,
    set_all: impl FnOnce(&mut [u64], &mut Vec<bool>) -> (u64, u64),
) -> Option<u64> {
    if layer.items.checked_add(len as u64)? > layer.capacity {
        return None;
    }
    let ViewMut::One(words) = layer.bits.view_mut() else {
        return None;
    };
    let (new, flipped) = set_all(words, out);
    layer.items += new;
    layer.ones += flipped;
    Some(new)
}
