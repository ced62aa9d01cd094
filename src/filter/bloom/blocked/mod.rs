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
//!
//! The probes' bits in a block are [`crate::filter::masks`]' (the windowed filter shares them).
//! This file holds the blocks of a layer ([`Blocks`], [`block_of`]) and the scalar one-item
//! test and add every kernel is built from. The kernels
//! made from them, per probe count and CPU feature set, are in `kernels` ([`BlockedKernels`]),
//! their AVX2 bodies in `vector`, the kernels that also hash each item in `items`
//! ([`ItemsKernels`]).

use super::bits::SegmentTable;
use crate::filter::hash::{ItemHash, reduce};
use crate::filter::masks::{
    BLOCK_BITS, BLOCK_PROBE_MUL, BLOCKED_UNROLLED_MAX, POWERS, is_short, probe_bit, short_top,
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

/// Starts loading the one cache line `h` probes in `words`.
#[inline(always)]
pub fn prefetch<A: Blocks + ?Sized>(words: &A, h: ItemHash) {
    crate::filter::mem::prefetch(&block_of(words, h)[0]);
}

mod kernels;
pub use kernels::BlockedKernels;

#[cfg(target_arch = "x86_64")]
mod vector;

mod items;
pub use items::ItemsKernels;

#[cfg(test)]
mod tests;
