//! The probe kernels of blocked layers ([`Rule::Blocked`](super::layer::Rule::Blocked)): every
//! probe of an item is a bit of one 512-bit block, so a kernel works on that block alone
//! (`&[u64; 8]`), wherever the layer's words are ([`Blocks`]).
//!
//! Probe `i` of an item is bit `x_i >> 55` of its block (the top 9 bits), `x_i = h2 · φ^i`
//! (wrapping, `φ` = [`BLOCK_PROBE_MUL`]): the same bits as the sequence `x_0 = h2`,
//! `x_{i+1} = x_i · φ` the layout is defined by, but every probe is one multiply by a
//! constant, independent of the others. What makes these kernels fast (callgrind,
//! bench/README.md):
//! - `k` is a compile-time constant up to [`BLOCKED_UNROLLED_MAX`] (fully unrolled, no loop
//!   counter); larger `k` takes the loop;
//! - tests of a whole item, where the CPU has AVX2, take 8 probes per 256-bit vector (after
//!   RocksDB's FastLocalBloom): the top 32 bits of the 8 products `h2 · φ^i` from 32-bit
//!   multiplies, the 32-bit word of each probe picked out of the block's two halves by
//!   permutes, one test of the block against the probe bits — no branch per probe;
//! - adds set the bits one by one (a bit set twice counts once) and count the probes they find
//!   set without a branch (on x86-64 a load, `bts`, `adc` and a store per probe); they and the
//!   scalar tests are also compiled with BMI2 where the CPU has it;
//! - hash scheme 4's `h2` (`lo · 2^32 + 1`) gives each probe from 32-bit arithmetic,
//!   `lo · φ^i_lo + φ^i_hi`: one multiply by an immediate and one add (`short_top`), the same
//!   bits as the 64-bit products.
//!
//! The baseline kernels are the reference: tests check every other kernel against them (and
//! them against a textbook model, in `tests/blocked.rs`).

use super::bits::SegmentTable;
use super::hash::{ItemHash, blocked_hash, reduce};
use super::params::{BLOCK_BITS, BLOCK_PROBE_BITS};
use super::xxh3short::Xxh3Seeded;

/// The multiplier from one probe of a blocked layer to the next.
pub const BLOCK_PROBE_MUL: u64 = 0x9E37_79B9_7F4A_7C15;

/// The largest probe count with unrolled kernels (blocked layers have 1–16 probes at the
/// error rates sizing allows down to 1e-5 per layer; a chain that tightens per layer may go
/// past it, which takes the loop).
pub const BLOCKED_UNROLLED_MAX: u32 = 16;

/// `φ^i` for `i` below [`BLOCKED_UNROLLED_MAX`].
const POWERS: [u64; BLOCKED_UNROLLED_MAX as usize] = {
    let mut p = [1u64; BLOCKED_UNROLLED_MAX as usize];
    let mut i = 1;
    while i < p.len() {
        p[i] = p[i - 1].wrapping_mul(BLOCK_PROBE_MUL);
        i += 1;
    }
    p
};

/// Words per block.
const BLOCK_WORDS: u64 = BLOCK_BITS / 64;

/// A layer's words seen as whole 512-bit blocks.
///
/// # Safety
/// [`Blocks::block`] and [`Blocks::block_mut`] must be sound for every `b` below
/// `bits() / 512` whenever `bits()` is a multiple of 512: kernels index unchecked on that.
pub unsafe trait Blocks {
    /// Bits in the array.
    fn bits(&self) -> u64;
    /// Block `b`: words `8b` to `8b + 7`.
    ///
    /// # Safety
    /// `bits()` is a multiple of 512 and `b < bits() / 512`.
    unsafe fn block(&self, b: u64) -> &[u64; 8];
    /// Block `b`, writable.
    ///
    /// # Safety
    /// As for [`Blocks::block`].
    unsafe fn block_mut(&mut self, b: u64) -> &mut [u64; 8];
}

// SAFETY: with `len · 64` a multiple of 512 and `b < len / 8`, words `8b..8b + 8` are in the
// slice.
unsafe impl Blocks for [u64] {
    #[inline(always)]
    fn bits(&self) -> u64 {
        self.len() as u64 * 64
    }
    #[inline(always)]
    unsafe fn block(&self, b: u64) -> &[u64; 8] {
        debug_assert!((b + 1) * BLOCK_WORDS <= self.len() as u64);
        // SAFETY: the caller's `b < len / 8` (above): the 8 words are inside the slice, and
        // `[u64; 8]` has the layout of 8 consecutive `u64`.
        unsafe { &*self.as_ptr().add((b * BLOCK_WORDS) as usize).cast::<[u64; 8]>() }
    }
    #[inline(always)]
    unsafe fn block_mut(&mut self, b: u64) -> &mut [u64; 8] {
        debug_assert!((b + 1) * BLOCK_WORDS <= self.len() as u64);
        // SAFETY: as in `block`, from the unique borrow of the slice.
        unsafe { &mut *self.as_mut_ptr().add((b * BLOCK_WORDS) as usize).cast::<[u64; 8]>() }
    }
}

// SAFETY: see `SegmentTable::block` (a block never spans two segments).
unsafe impl Blocks for SegmentTable {
    #[inline(always)]
    fn bits(&self) -> u64 {
        super::probe::WordArray::bits(self)
    }
    #[inline(always)]
    unsafe fn block(&self, b: u64) -> &[u64; 8] {
        // SAFETY: the caller's contract is `SegmentTable::block`'s.
        unsafe { self.block(b) }
    }
    #[inline(always)]
    unsafe fn block_mut(&mut self, b: u64) -> &mut [u64; 8] {
        // SAFETY: as in `block`.
        unsafe { self.block_mut(b) }
    }
}

/// The block `h` probes in an array of `bits` bits (whole blocks): `reduce(h1, bits / 512)`,
/// below `bits / 512`.
#[inline(always)]
pub fn block_index(bits: u64, h: ItemHash) -> u64 {
    reduce(h.h1, bits / BLOCK_BITS)
}

/// The block of `words` that `h` probes.
#[inline(always)]
pub fn block_of<A: Blocks + ?Sized>(words: &A, h: ItemHash) -> &[u64; 8] {
    debug_assert!(words.bits() % BLOCK_BITS == 0);
    // SAFETY: blocked layers are whole blocks (checked when built), and `block_index` is
    // below `bits / 512`.
    unsafe { words.block(block_index(words.bits(), h)) }
}

/// The block of `words` that `h` probes, writable.
#[inline(always)]
pub fn block_of_mut<A: Blocks + ?Sized>(words: &mut A, h: ItemHash) -> &mut [u64; 8] {
    debug_assert!(words.bits() % BLOCK_BITS == 0);
    let b = block_index(words.bits(), h);
    // SAFETY: as in `block_of`.
    unsafe { words.block_mut(b) }
}

/// The bit of the block that probe `i` of `h2` tests (`K` > 0: `i < K ≤ 16`, a constant).
#[inline(always)]
fn probe_bit(x: u64) -> u32 {
    (x >> (64 - BLOCK_PROBE_BITS)) as u32
}

/// Whether `h2` is a hash scheme 4 `h2` (`lo · 2^32 + 1`): its probes then come from 32-bit
/// arithmetic ([`short_top`]). Any `h2` whose low half is 1 takes that path, whatever its
/// scheme: the bits are the same.
#[inline(always)]
pub(crate) fn is_short(h2: u64) -> bool {
    h2 as u32 == 1
}

/// The top 32 bits of `h2 · φ^i` for an `h2 = lo · 2^32 + 1` (scheme 4), from 32-bit
/// arithmetic: `lo · φ^i_lo + φ^i_hi` (mod 2^32), one multiply by a constant and one add.
///
/// Why: `h2 · P = lo · P · 2^32 + P` (mod 2^64). The first term is `(lo · P_lo mod 2^32) · 2^32`
/// (its low 32 bits are 0), and `P = P_hi · 2^32 + P_lo`: the low 32 bits of the sum are
/// `P_lo` with no carry out, and its top 32 bits are `lo · P_lo + P_hi` (mod 2^32). Probe `i`
/// (the top 9 bits) is `t >> 23`: 64-bit word `t >> 29`, bit `(t >> 23) & 63` of it.
#[inline(always)]
fn short_top(lo: u32, i: usize) -> u32 {
    lo.wrapping_mul(POWER_HALVES.0[i]).wrapping_add(POWER_HALVES.1[i])
}

/// Whether every one of the `k` probes of `h2` is set in `block`. `K` > 0 is `k` as a constant;
/// `short` is [`is_short`] of `h2` (a constant where the batch's scheme makes it one).
#[inline(always)]
fn all_set_scalar<const K: u32>(block: &[u64; 8], k: u32, h2: u64, short: bool) -> bool {
    debug_assert_eq!(short, is_short(h2));
    // `wrapping_shr`/`wrapping_shl` take the shift mod 64, as `bt`/`bts` do: no mask.
    let test = |p: u32| block[(p >> 6) as usize].wrapping_shr(p) & 1 == 1;
    if K > 0 && short {
        let lo = (h2 >> 32) as u32;
        (0..K as usize).all(|i| {
            let t = short_top(lo, i);
            block[(t >> 29) as usize].wrapping_shr(t >> 23) & 1 == 1
        })
    } else if K > 0 {
        (0..K as usize).all(|i| test(probe_bit(h2.wrapping_mul(POWERS[i]))))
    } else {
        let mut x = h2;
        for _ in 0..k {
            if !test(probe_bit(x)) {
                return false;
            }
            x = x.wrapping_mul(BLOCK_PROBE_MUL);
        }
        true
    }
}

/// Sets the `k` probes of `h2` in `block`; how many of them were set already: `k` minus the
/// bits it set (a bit two probes share counts as set the second time). No branch per probe.
/// `short` is [`is_short`] of `h2`.
#[inline(always)]
fn set_probes_scalar<const K: u32>(block: &mut [u64; 8], k: u32, h2: u64, short: bool) -> u32 {
    debug_assert_eq!(short, is_short(h2));
    let mut set = 0u32;
    if K > 0 && short {
        // The same bits as below (see `short_top`): bit `t >> 23` of the block.
        let lo = (h2 >> 32) as u32;
        for i in 0..K as usize {
            set_block_bit(block, short_top(lo, i) >> 23, &mut set);
        }
    } else if K > 0 {
        for &power in &POWERS[..K as usize] {
            set_block_bit(block, probe_bit(h2.wrapping_mul(power)), &mut set);
        }
    } else {
        // The reference loop, in plain Rust (the tests check the others against it).
        let (mut x, mut flipped) = (h2, 0);
        for _ in 0..k {
            let p = probe_bit(x);
            flipped += set_bit(block, (p >> 6) as usize, p);
            x = x.wrapping_mul(BLOCK_PROBE_MUL);
        }
        set = k - flipped;
    }
    set
}

/// Sets bit `bit` (below 512) of `block`, adding 1 to `set` if it was set already.
#[inline(always)]
fn set_block_bit(block: &mut [u64; 8], bit: u32, set: &mut u32) {
    debug_assert!(bit < 512);
    // SAFETY: `(bit >> 6) & 7` is below 8.
    unsafe { set_word_bit(block, (bit >> 6) as usize & 7, bit, set) }
}

/// Sets bit `bit mod 64` of word `word` of `block`, adding 1 to `set` if it was set already.
///
/// On x86-64 the word is loaded, its bit tested and set in a register (`bts r64, r64`, one
/// micro-op), the old bit added to `set` (`adc`) and the word stored: 4 instructions, where
/// the compiler makes 6 of the same (it tests a copy of the word after setting it). Not `bts`
/// on memory, which is 2 instructions but microcoded (about 10 micro-ops): measured slower.
///
/// # Safety
/// `word` is below 8 (unchecked: the AVX2 add computes it by a shift that keeps it so).
#[inline(always)]
pub(super) unsafe fn set_word_bit(block: &mut [u64; 8], word: usize, bit: u32, set: &mut u32) {
    debug_assert!(word < 8);
    #[cfg(target_arch = "x86_64")]
    {
        let _old: u64;
        // SAFETY: the load and the store are of word `word` (below 8: the caller's
        // precondition) of `block`, which is borrowed mutably: in bounds and exclusive. `bts`
        // on a register takes the bit mod 64 and leaves the old bit in CF, which `adc` adds to
        // `set`. No stack use; the flags are clobbered (asm's default).
        unsafe {
            std::arch::asm!(
                "mov {w}, qword ptr [{p} + {i} * 8]",
                "bts {w}, {b}",
                "adc {s:e}, 0",
                "mov qword ptr [{p} + {i} * 8], {w}",
                p = in(reg) block.as_mut_ptr(),
                i = in(reg) word,
                b = in(reg) u64::from(bit),
                s = inout(reg) *set,
                w = out(reg) _old,
                options(nostack),
            );
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        *set += 1 - set_bit(block, word, bit);
    }
}

/// Sets bit `bit mod 64` of word `word` (below 8) of `block`; 1 if it was clear, else 0. The
/// shifts take their count mod 64, as `bt`/`bts` do: no mask.
#[inline(always)]
fn set_bit(block: &mut [u64; 8], word: usize, bit: u32) -> u32 {
    let w = &mut block[word];
    let clear = ((!*w).wrapping_shr(bit) & 1) as u32;
    *w |= 1u64.wrapping_shl(bit);
    clear
}

/// `f(p)` for the bit `p` of each of the `k` probes of `h2`, in order: the bits
/// [`set_probes_scalar`] sets. `K` > 0 is `k` as a constant (unrolled); `K` = 0 takes the loop.
#[inline(always)]
fn each_probe<const K: u32>(k: u32, h2: u64, mut f: impl FnMut(u32)) {
    if K > 0 && is_short(h2) {
        // The same bits as below (see `short_top`).
        let lo = (h2 >> 32) as u32;
        (0..K as usize).for_each(|i| f(short_top(lo, i) >> 23));
    } else if K > 0 {
        (0..K as usize).for_each(|i| f(probe_bit(h2.wrapping_mul(POWERS[i]))));
    } else {
        let mut x = h2;
        for _ in 0..k {
            f(probe_bit(x));
            x = x.wrapping_mul(BLOCK_PROBE_MUL);
        }
    }
}

/// The block of only the `k` probes of `h2`: what [`set_probes_scalar`] sets in an empty block.
#[inline(always)]
fn mask_scalar<const K: u32>(k: u32, h2: u64) -> [u64; 8] {
    let mut mask = [0u64; 8];
    each_probe::<K>(k, h2, |p| mask[(p >> 6) as usize] |= 1u64.wrapping_shl(p));
    mask
}

/// The item's probe mask in a 512-bit block: the bits its `k` probes set (`h2` its probe
/// hash), for structures that test or set one item in several blocks (the windowed filter's
/// generations). Unrolled for `k` up to [`BLOCKED_UNROLLED_MAX`]; inlined, so that it takes
/// the caller's CPU features (BMI2 shifts).
#[inline(always)]
pub fn probe_mask(k: u32, h2: u64) -> [u64; 8] {
    macro_rules! unrolled {
        ($($n:literal)*) => {
            match k {
                $($n => mask_scalar::<$n>(k, h2),)*
                _ => mask_scalar::<0>(k, h2),
            }
        };
    }
    unrolled!(1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16)
}

/// Tests a blocked item (block, probe count, `h2`). `unsafe fn` only because some kernels need
/// CPU features beyond the baseline; [`BlockedKernels::for_hashes`] hands out only those this
/// CPU has.
type AllSet = unsafe fn(&[u64; 8], u32, u64) -> bool;
/// Adds a blocked item: sets its probes, returns how many bits were clear.
type SetClear = unsafe fn(&mut [u64; 8], u32, u64) -> u32;
/// Tests every one of a batch of items in one array (words, probe count, hashes, answers).
type AllSetMany = unsafe fn(&[u64], u32, &[ItemHash], bool, &mut Vec<bool>);
/// Adds every one of a batch of items in order (words, probe count, hashes, answers: whether
/// each was new); returns (items new, bits set).
type SetClearMany = unsafe fn(&mut [u64], u32, &[ItemHash], bool, &mut Vec<bool>) -> (u64, u64);

/// The kernels for one probe count, chosen once per batch (see [`super::probe::Kernels`]): one
/// item at a time, and whole batches over one slice, where the item's code is inlined into
/// the loop (no call per item, the constants loaded once).
///
/// Invariant: every kernel held runs on this CPU.
#[derive(Clone, Copy)]
pub struct BlockedKernels {
    all_set: AllSet,
    set_clear: SetClear,
    all_set_many: AllSetMany,
    set_clear_many: SetClearMany,
}

/// The batch loop of [`AllSetMany`] around an inlined one-item test (`test(block, h2, short)`,
/// `short` being [`is_short`] of `h2`). With `all_short` (every `h2` is short: hash scheme 4)
/// the loop passes `true`, a constant: no test of `h2` per item.
#[inline(always)]
fn all_set_many_with(
    words: &[u64],
    hashes: &[ItemHash],
    all_short: bool,
    out: &mut Vec<bool>,
    test: impl Fn(&[u64; 8], u64, bool) -> bool,
) {
    if all_short {
        out.extend(hashes.iter().map(|&h| test(block_of(words, h), h.h2, true)));
    } else {
        out.extend(hashes.iter().map(|&h| test(block_of(words, h), h.h2, is_short(h.h2))));
    }
}

/// The batch loop of [`SetClearMany`] around an inlined one-item add (`set(block, h2, short)`
/// returns how many of the item's `k` probes were set already; `short` as in
/// [`all_set_many_with`], and so is `all_short`).
#[inline(always)]
fn set_clear_many_with(
    words: &mut [u64],
    k: u32,
    hashes: &[ItemHash],
    all_short: bool,
    out: &mut Vec<bool>,
    set: impl Fn(&mut [u64; 8], u64, bool) -> u32,
) -> (u64, u64) {
    // Counted per item: the probes found set; the bits set are the probes less those, summed
    // once at the end, and the new items are counted from the answers after the loop (a
    // vectorised count of bytes, not two instructions per item).
    let mut found = 0u64;
    let start = out.len();
    out.reserve(hashes.len());
    // Written in place: no capacity check per item, as `push` has.
    let slots = &mut out.spare_capacity_mut()[..hashes.len()];
    let mut add_all = |short_of: fn(u64) -> bool| {
        for (slot, &h) in slots.iter_mut().zip(hashes) {
            let already = set(block_of_mut(words, h), h.h2, short_of(h.h2));
            found += u64::from(already);
            slot.write(already < k);
        }
    };
    if all_short {
        add_all(|_| true)
    } else {
        add_all(is_short)
    }
    // SAFETY: `reserve` made room for `hashes.len()` more, and the loop wrote every one of the
    // first `hashes.len()` spare slots (the zip runs over all of them: both are that long).
    unsafe { out.set_len(start + hashes.len()) };
    let new = out[start..].iter().map(|&b| u64::from(b)).sum();
    // `found` ≤ `k · len` (each item finds at most `k`); `k · len` < 2^64 (`len` < 2^59).
    (new, u64::from(k) * hashes.len() as u64 - found)
}

/// Hashes `item` (scheme 4, `xxh3`'s seed) and starts loading its block of the `blocks`
/// blocks at `words`: the block's address and the item's `h2`. The adds of `set_clear_items_*`
/// call it one item ahead (the address is kept, not computed again).
///
/// # Safety
/// `words` points to `blocks` whole blocks (`8 · blocks` words), valid for as long as the
/// returned address is used.
#[inline(always)]
unsafe fn hash_ahead<T: AsRef<[u8]>>(
    words: *mut u64,
    blocks: u64,
    xxh3: &Xxh3Seeded,
    item: &T,
) -> (*mut [u64; 8], u64) {
    let h = blocked_hash(xxh3.hash(item.as_ref()));
    // The block's byte offset, `b · 64`.
    let offset = reduce(h.h1, blocks) << 6;
    // SAFETY: `offset` is `64b` for a `b` below `blocks` (`reduce`), so bytes `64b..64b + 64`
    // (words `8b..8b + 8`) are inside the caller's `8 · blocks` words; `[u64; 8]` has the
    // layout of 8 consecutive `u64`, and the offset is a multiple of 8 (aligned).
    let block = unsafe { words.cast::<u8>().add(offset as usize).cast::<[u64; 8]>() };
    // SAFETY: as above: `block` points into the words.
    crate::filter::mem::prefetch(unsafe { &(*block)[0] });
    (block, h.h2)
}

/// Defines the one-item and batch kernels of one feature set (`$features`, or none: the
/// baseline) from the inlined bodies `$all_set` and `$set_clear`.
macro_rules! kernel_set {
    ($all_set:ident, $set_clear:ident, $all_many:ident, $set_many:ident,
     $all_items:ident, $set_items:ident,
     $all_body:ident, $set_body:ident $(, $features:literal)?) => {
        $(#[target_feature(enable = $features)])?
        unsafe fn $all_set<const K: u32>(block: &[u64; 8], k: u32, h2: u64) -> bool {
            // SAFETY: this function's own precondition (the CPU has `$features`).
            unsafe { $all_body::<K>(block, k, h2, is_short(h2)) }
        }

        $(#[target_feature(enable = $features)])?
        unsafe fn $set_clear<const K: u32>(block: &mut [u64; 8], k: u32, h2: u64) -> u32 {
            // SAFETY: this function's own precondition (the CPU has `$features`).
            k - unsafe { $set_body::<K>(block, k, h2, is_short(h2)) }
        }

        $(#[target_feature(enable = $features)])?
        unsafe fn $all_many<const K: u32>(
            words: &[u64],
            k: u32,
            hashes: &[ItemHash],
            all_short: bool,
            out: &mut Vec<bool>,
        ) {
            // SAFETY: this function's own precondition (the CPU has `$features`).
            let test = |b: &[u64; 8], h2, short| unsafe { $all_body::<K>(b, k, h2, short) };
            all_set_many_with(words, hashes, all_short, out, test)
        }

        $(#[target_feature(enable = $features)])?
        unsafe fn $set_many<const K: u32>(
            words: &mut [u64],
            k: u32,
            hashes: &[ItemHash],
            all_short: bool,
            out: &mut Vec<bool>,
        ) -> (u64, u64) {
            // SAFETY: this function's own precondition (the CPU has `$features`).
            let set = |b: &mut [u64; 8], h2, short| unsafe { $set_body::<K>(b, k, h2, short) };
            set_clear_many_with(words, k, hashes, all_short, out, set)
        }

        // The hash-and-probe kernels ([`items`]): the loops of `all_set_many_with` and
        // `set_clear_many_with` written out, the item hashed inside (closures passed to those
        // were compiled out of line for a generic item type: a call per item).
        $(#[target_feature(enable = $features)])?
        unsafe fn $all_items<T: AsRef<[u8]>, const K: u32>(
            words: &[u64],
            k: u32,
            items: &[T],
            xxh3: &Xxh3Seeded,
            out: &mut Vec<bool>,
        ) {
            let start = out.len();
            out.reserve(items.len());
            // Written in place, as in `$set_items` below.
            let slots = &mut out.spare_capacity_mut()[..items.len()];
            for (slot, item) in slots.iter_mut().zip(items) {
                let h = blocked_hash(xxh3.hash(item.as_ref()));
                // SAFETY: this function's own precondition (the CPU has `$features`).
                slot.write(unsafe { $all_body::<K>(block_of(words, h), k, h.h2, true) });
            }
            // SAFETY: `reserve` made room for `items.len()` more, and the loop wrote every one
            // of the first `items.len()` spare slots (the zip runs over all of them).
            unsafe { out.set_len(start + items.len()) };
        }

        $(#[target_feature(enable = $features)])?
        unsafe fn $set_items<T: AsRef<[u8]>, const K: u32>(
            words: &mut [u64],
            k: u32,
            items: &[T],
            xxh3: &Xxh3Seeded,
            out: &mut Vec<bool>,
        ) -> (u64, u64) {
            // As in `set_clear_many_with`, with each item hashed one step ahead of its add and
            // its block's line prefetched then: in this loop the next block's address waits
            // for a call and a hash, and an add that missed the cache held back the adds after
            // it (BF.MADD 10% slower in time than hashing the batch first, on a filter the
            // size of L2).
            let Some((first, rest)) = items.split_first() else {
                return (0, 0);
            };
            let mut found = 0u64;
            let start = out.len();
            out.reserve(items.len());
            let slots = &mut out.spare_capacity_mut()[..items.len()];
            // Blocked layers are whole blocks (checked when built): `words` is `8 · blocks`
            // words, addressed through `base` alone until the loops end.
            let blocks = words.len() as u64 / BLOCK_WORDS;
            let base = words.as_mut_ptr();
            // `slots` and `items` are as long (not empty): each slot but the last is written
            // in the loop, while the item after its own is hashed, the last after it.
            let Some((last, slots)) = slots.split_last_mut() else {
                return (0, 0);
            };
            // SAFETY: `base` is `8 · blocks` words (above), borrowed mutably for this whole
            // function (the precondition of `hash_ahead`, here and in the loop).
            let mut current = unsafe { hash_ahead(base, blocks, xxh3, first) };
            // `k` as the constant it is in the unrolled kernels (one register fewer).
            let k_ = if K > 0 { K } else { k };
            for (slot, next) in slots.iter_mut().zip(rest) {
                // SAFETY: as above.
                let following = unsafe { hash_ahead(base, blocks, xxh3, next) };
                // SAFETY: `current` is a block of the words and its `h2` (`hash_ahead`), no
                // other reference to which is live; the CPU has `$features` (this function's
                // own precondition).
                let already = unsafe { $set_body::<K>(&mut *current.0, k_, current.1, true) };
                found += u64::from(already);
                slot.write(already < k_);
                current = following;
            }
            // SAFETY: as in the loop.
            let already = unsafe { $set_body::<K>(&mut *current.0, k_, current.1, true) };
            found += u64::from(already);
            last.write(already < k_);
            // SAFETY: `reserve` made room for `items.len()` more, and every one of the first
            // `items.len()` spare slots was written: `items.len() - 1` in the loop (the zip
            // runs over all of them: `slots` less the last and `rest` are that long), then the
            // last.
            unsafe { out.set_len(start + items.len()) };
            let new = out[start..].iter().map(|&b| u64::from(b)).sum();
            // `found` ≤ `k · len` (each item finds at most `k`); `k · len` < 2^64.
            (new, u64::from(k) * items.len() as u64 - found)
        }
    };
}

/// [`all_set_scalar`] as an `unsafe fn`, to share the kernel macro with the AVX2 body.
#[inline(always)]
unsafe fn all_set_scalar_unsafe<const K: u32>(
    block: &[u64; 8],
    k: u32,
    h2: u64,
    short: bool,
) -> bool {
    all_set_scalar::<K>(block, k, h2, short)
}

kernel_set!(
    all_set_base,
    set_clear_base,
    all_set_many_base,
    set_clear_many_base,
    all_set_items_base,
    set_clear_items_base,
    all_set_scalar_unsafe,
    set_probes_scalar_unsafe
);

// Precondition of the `_bmi2` kernels: the CPU has BMI2.
#[cfg(target_arch = "x86_64")]
kernel_set!(
    all_set_bmi2,
    set_clear_bmi2,
    all_set_many_bmi2,
    set_clear_many_bmi2,
    all_set_items_bmi2,
    set_clear_items_bmi2,
    all_set_scalar_unsafe,
    set_probes_scalar_unsafe,
    "bmi2"
);

// Precondition of the `_avx2` kernels: the CPU has AVX2 and BMI2.
#[cfg(target_arch = "x86_64")]
kernel_set!(
    all_set_avx2,
    set_clear_avx2,
    all_set_many_avx2,
    set_clear_many_avx2,
    all_set_items_avx2,
    set_clear_items_avx2,
    all_set_vector,
    set_probes_vector,
    "avx2,bmi2"
);

#[cfg(target_arch = "x86_64")]
mod vector;
#[cfg(target_arch = "x86_64")]
pub use vector::probe_mask_avx2;
#[cfg(target_arch = "x86_64")]
use vector::{all_set_vector, set_probes_vector};
#[cfg(target_arch = "x86_64")]
pub(crate) use vector::{mask_vector, probe_tops};

/// The low and high 32-bit halves of `φ^i` (eight per vector in the AVX2 kernels).
const POWER_HALVES: ([u32; 16], [u32; 16]) = {
    let (mut lo, mut hi) = ([0u32; 16], [0u32; 16]);
    let mut i = 0;
    while i < 16 {
        lo[i] = POWERS[i] as u32;
        hi[i] = (POWERS[i] >> 32) as u32;
        i += 1;
    }
    (lo, hi)
};

/// [`set_probes_scalar`] as an `unsafe fn`, to share the kernel macro with the AVX2 body.
#[inline(always)]
unsafe fn set_probes_scalar_unsafe<const K: u32>(
    block: &mut [u64; 8],
    k: u32,
    h2: u64,
    short: bool,
) -> u32 {
    set_probes_scalar::<K>(block, k, h2, short)
}

/// Generates the kernel table for `$k` from the `const K` kernels of one feature set.
macro_rules! blocked_table {
    ($k:expr, $all_set:ident, $set_clear:ident, $all_many:ident, $set_many:ident) => {
        blocked_table!(@pick $k, $all_set, $set_clear, $all_many, $set_many;
            1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16)
    };
    (@pick $k:expr, $all_set:ident, $set_clear:ident, $all_many:ident, $set_many:ident;
     $($n:literal)*) => {
        match $k {
            $($n => BlockedKernels {
                all_set: $all_set::<$n>,
                set_clear: $set_clear::<$n>,
                all_set_many: $all_many::<$n>,
                set_clear_many: $set_many::<$n>,
            },)*
            // Past the unrolled ones (and 0, which no layer has), `K = 0` reads the count.
            _ => BlockedKernels {
                all_set: all_set_base::<0>,
                set_clear: set_clear_base::<0>,
                all_set_many: all_set_many_base::<0>,
                set_clear_many: set_clear_many_base::<0>,
            },
        }
    };
}

impl BlockedKernels {
    /// The best kernels this CPU runs for `k` probes (AVX2 tests and BMI2 adds where it has
    /// them), from a table made once per process: a load, not a feature test and a table match
    /// per call.
    #[inline]
    pub fn for_hashes(k: u32) -> Self {
        static BEST: std::sync::OnceLock<[BlockedKernels; BLOCKED_UNROLLED_MAX as usize + 1]> =
            std::sync::OnceLock::new();
        let best = BEST.get_or_init(|| std::array::from_fn(|k| Self::detect(k as u32)));
        // Index 0 holds the loop, which also serves every `k` past the unrolled ones.
        best[if k <= BLOCKED_UNROLLED_MAX { k as usize } else { 0 }]
    }

    /// The best kernels this CPU runs for `k` probes: AVX2 tests and BMI2 adds, else BMI2 for
    /// both, else the baseline ones.
    fn detect(k: u32) -> Self {
        #[cfg(target_arch = "x86_64")]
        if std::arch::is_x86_feature_detected!("bmi2") {
            if std::arch::is_x86_feature_detected!("avx2") {
                return Self::avx2(k);
            }
            return Self::bmi2(k);
        }
        Self::baseline(k)
    }

    /// The kernels compiled for the target's baseline.
    pub fn baseline(k: u32) -> Self {
        blocked_table!(k, all_set_base, set_clear_base, all_set_many_base, set_clear_many_base)
    }

    /// The kernels compiled with BMI2. Only where the CPU has it (the struct's invariant).
    #[cfg(target_arch = "x86_64")]
    fn bmi2(k: u32) -> Self {
        blocked_table!(k, all_set_bmi2, set_clear_bmi2, all_set_many_bmi2, set_clear_many_bmi2)
    }

    /// The kernels compiled with AVX2 and BMI2. Only where the CPU has both.
    #[cfg(target_arch = "x86_64")]
    fn avx2(k: u32) -> Self {
        blocked_table!(k, all_set_avx2, set_clear_avx2, all_set_many_avx2, set_clear_many_avx2)
    }

    /// Every kernel set this CPU runs for `k` (baseline first): for the tests.
    #[cfg(test)]
    pub fn all_variants(k: u32) -> Vec<(&'static str, Self)> {
        let mut v = vec![("baseline", Self::baseline(k))];
        #[cfg(target_arch = "x86_64")]
        if std::arch::is_x86_feature_detected!("bmi2") {
            v.push(("bmi2", Self::bmi2(k)));
            if std::arch::is_x86_feature_detected!("avx2") {
                v.push(("avx2", Self::avx2(k)));
            }
        }
        v
    }

    /// Whether every probe of `h` is set in `words`.
    #[inline(always)]
    pub fn all_set<A: Blocks + ?Sized>(self, words: &A, k: u32, h: ItemHash) -> bool {
        // SAFETY: the struct's invariant: only kernels this CPU runs are held.
        unsafe { (self.all_set)(block_of(words, h), k, h.h2) }
    }

    /// Sets the probes of `h` in `words`; how many bits were clear.
    #[inline(always)]
    pub fn set_clear<A: Blocks + ?Sized>(self, words: &mut A, k: u32, h: ItemHash) -> u32 {
        // SAFETY: as in `all_set`.
        unsafe { (self.set_clear)(block_of_mut(words, h), k, h.h2) }
    }

    /// [`BlockedKernels::all_set`] for each of `hashes` in one slice, appended to `out`.
    /// `all_short`: every hash is of scheme 4 (its `h2` is `lo · 2^32 + 1`), so the kernel
    /// need not test each; `false` is always right, `true` only then.
    #[inline(always)]
    pub fn all_set_many(
        self,
        words: &[u64],
        k: u32,
        hashes: &[ItemHash],
        all_short: bool,
        out: &mut Vec<bool>,
    ) {
        // SAFETY: as in `all_set`.
        unsafe { (self.all_set_many)(words, k, hashes, all_short, out) }
    }

    /// [`BlockedKernels::set_clear`] for each of `hashes` in order in one slice, appending
    /// whether each was new to `out`; returns (items new, bits set). `all_short` as in
    /// [`BlockedKernels::all_set_many`].
    #[inline(always)]
    pub fn set_clear_many(
        self,
        words: &mut [u64],
        k: u32,
        hashes: &[ItemHash],
        all_short: bool,
        out: &mut Vec<bool>,
    ) -> (u64, u64) {
        // SAFETY: as in `all_set`.
        unsafe { (self.set_clear_many)(words, k, hashes, all_short, out) }
    }

    /// [`BlockedKernels::all_set`] on a block already found.
    #[cfg(test)]
    pub fn all_set_in(self, block: &[u64; 8], k: u32, h2: u64) -> bool {
        // SAFETY: as in `all_set`.
        unsafe { (self.all_set)(block, k, h2) }
    }

    /// [`BlockedKernels::set_clear`] on a block already found.
    #[cfg(test)]
    pub fn set_clear_in(self, block: &mut [u64; 8], k: u32, h2: u64) -> u32 {
        // SAFETY: as in `all_set`.
        unsafe { (self.set_clear)(block, k, h2) }
    }
}

/// Starts loading the one cache line `h` probes in `words`.
#[inline(always)]
pub fn prefetch<A: Blocks + ?Sized>(words: &A, h: ItemHash) {
    crate::filter::mem::prefetch(&block_of(words, h)[0]);
}

mod items;
pub use items::ItemsKernels;

#[cfg(test)]
mod tests;
