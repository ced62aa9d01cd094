//! The memory of bit arrays: the one place where the core asks the allocator and the kernel
//! for anything directly. Everything `unsafe` about it is here, each block with its proof.
//!
//! - [`Words`] owns one zeroed allocation of `u64` words (a bit-array segment). It is
//!   allocated with `calloc` (Redis' `RedisModule_Calloc` inside Redis), so a fresh multi-GiB
//!   filter is lazily zeroed pages from the kernel, not written page by page; and a size the
//!   allocator refuses is an error, not an abort.
//! - Large segments are moved into transparent huge pages once they are in use (Linux only; the
//!   `bf.huge-pages` setting, on by default). Every probe of a large filter lands on a random
//!   page; with 4 KiB pages each one misses the TLB too, and a page walk costs several memory
//!   accesses (more under virtualisation). 2 MiB pages let the TLB cover a GiB: MADD and
//!   MEXISTS on a 1 GiB filter 1.3–2.8× faster, and the `fork` of a BGSAVE about 10× shorter
//!   (bench/README.md, "Huge pages"). But a segment is *not* advised `MADV_HUGEPAGE` when it is
//!   allocated: a 2 MiB first-touch fault is cheap on some hosts and costs milliseconds on
//!   others (a VM whose host backs large free blocks lazily: measured 1.75× RedisBloom's time
//!   for a first pass over a fresh 1 GiB filter), and it stalls the command that takes it. So
//!   the first touch takes 4 KiB pages, as RedisBloom's memory does, and a background thread
//!   ([`HugeJob`]) moves the segment into huge pages with `MADV_COLLAPSE` (Linux 6.1+), 2 MiB
//!   at a time, once nearly all of its pages are in use (`mincore`) — so it does not compete
//!   with the first pass's page faults, and never makes a barely used filter resident. Where
//!   the kernel has no `MADV_COLLAPSE`, the segment is advised `MADV_HUGEPAGE` then instead
//!   (khugepaged moves it, slowly), and the advice is withdrawn before the memory is freed.
//! - [`prefetch`]: the cache hint of the batched paths.
//! - [`Mover`] and [`relocate_boxed_slice`]: moving allocations when the server defragments
//!   its memory (Redis' active defrag hands the module `RedisModule_DefragAlloc`).

use std::alloc::Layout;
use std::ops::{Deref, DerefMut};
use std::ptr::NonNull;

use crate::filter::FilterError;

mod huge;
use huge::*;
pub use huge::{
    HUGE_PAGES, HUGE_PAGES_AT_FAULT, HUGE_PAGES_MIN_BYTES, HugeJob, hold_background_collapse,
    huge_page_refused_bytes, huge_page_stats, huge_pages_advised_at_fault_bytes,
};

// A segment handle is its allocation alone (its huge-page job is kept in a table by address).
const _: () = assert!(std::mem::size_of::<Words>() == 16);

/// One zeroed allocation of words: a bit-array segment.
#[derive(Default)]
pub struct Words {
    /// A large segment's move into huge pages, shared with the background thread, is kept in
    /// a table by the segment's address ([`HugeJob::of`]), and released (under its lock)
    /// before the memory is freed.
    words: Box<[u64]>,
}

impl Words {
    /// `n` zeroed words, or an error if the allocator refuses (nothing is aborted).
    #[inline]
    pub fn zeroed(n: u64) -> Result<Self, FilterError> {
        let n = usize::try_from(n).map_err(|_| FilterError::TooLarge)?;
        if n == 0 {
            return Ok(Self::default());
        }
        let layout = std::alloc::Layout::array::<u64>(n).map_err(|_| FilterError::TooLarge)?;
        // SAFETY: `layout` has a non-zero size (n > 0). A non-null result is a zeroed
        // allocation of exactly `layout` from the global allocator, valid as `n` initialised
        // `u64`s (all-zero bits are a valid u64), which is what `Box<[u64]>` of length `n` owns
        // and frees with the same layout.
        let words = unsafe {
            let ptr = std::alloc::alloc_zeroed(layout).cast::<u64>();
            if ptr.is_null() {
                return Err(FilterError::OutOfMemory);
            }
            Box::from_raw(std::ptr::slice_from_raw_parts_mut(ptr, n))
        };
        HugeJob::start(&words, true);
        Ok(Self { words })
    }

    /// The words of `bytes` (little-endian), in a fresh zeroed allocation; `None` unless the
    /// length is a whole number of words.
    pub fn from_le_bytes(bytes: &[u8]) -> Result<Self, FilterError> {
        if bytes.len() % 8 != 0 {
            return Err(FilterError::BadData);
        }
        let mut words = Self::zeroed(bytes.len() as u64 / 8)?;
        set_from_le_bytes(&mut words, bytes);
        Ok(words)
    }

    /// Takes ownership of `n` words that a loader has already filled, without copying them: a
    /// segment read from an RDB file keeps the buffer the server read it into. A large one is
    /// moved into huge pages by the background thread once loading ends (its pages are all in
    /// use) — in the load itself that copy would double the load time.
    ///
    /// # Safety
    /// `ptr` is non-null, aligned for `u64`, points to `n` initialised words, and was allocated
    /// by an allocator that the global allocator's `dealloc` frees correctly for
    /// `Layout::array::<u64>(n)` (inside Redis: any `RedisModule_Alloc` pointer, since the
    /// module's global allocator frees with `RedisModule_Free`). Nothing else frees or uses it.
    pub unsafe fn adopt(ptr: *mut u64, n: usize) -> Self {
        // SAFETY: the caller's contract is exactly what `Box::from_raw` needs for `[u64]` of
        // length `n`.
        let words = unsafe { Box::from_raw(std::ptr::slice_from_raw_parts_mut(ptr, n)) };
        HugeJob::start(&words, false);
        Self { words }
    }

    /// Whether this segment was handed to the background thread to be moved into huge pages
    /// (whether it gets them is up to the kernel).
    pub fn moves_to_huge_pages(&self) -> bool {
        HugeJob::of(&self.words).is_some()
    }
}

impl Words {
    /// Lets `mv` move this segment (active defragmentation). A segment handed to the huge-page
    /// thread stays where it is: the thread holds its address, and a multi-MiB allocation is
    /// not what defragmentation moves.
    ///
    /// # Safety
    /// `mv` must keep the contract of [`Mover`].
    pub unsafe fn relocate(&mut self, mv: &mut Mover<'_>) {
        if HugeJob::of(&self.words).is_none() {
            // SAFETY: the caller's contract on `mv`.
            unsafe { relocate_boxed_slice(&mut self.words, mv) }
        }
    }
}

impl Drop for Words {
    /// Runs before `words` is freed: the huge-page thread is stopped from touching the range
    /// first (waiting for a step in progress, at most one 2 MiB collapse).
    fn drop(&mut self) {
        if let Some(job) = HugeJob::take(&self.words) {
            job.release();
        }
    }
}

impl Deref for Words {
    type Target = [u64];
    #[inline(always)]
    fn deref(&self) -> &[u64] {
        &self.words
    }
}

impl DerefMut for Words {
    #[inline(always)]
    fn deref_mut(&mut self) -> &mut [u64] {
        &mut self.words
    }
}

impl Clone for Words {
    /// A copy allocated as [`Words::zeroed`] allocates (`COPY` of a filter). Panics if the
    /// allocator refuses; the module's callbacks turn that into a failed command.
    fn clone(&self) -> Self {
        let mut copy = Self::zeroed(self.words.len() as u64).unwrap_or_else(|e| {
            panic!("cannot allocate a copy of {} words: {e:?}", self.words.len())
        });
        copy.copy_from_slice(&self.words);
        copy
    }
}

impl PartialEq for Words {
    fn eq(&self, other: &Self) -> bool {
        self.words == other.words
    }
}

impl Eq for Words {}

/// Moves one allocation, for the server's defragmentation (`RedisModule_DefragAlloc` inside
/// Redis): given the start of a live allocation of the global allocator and its layout, it
/// answers `None` when the allocation stays where it is (it is then untouched and still
/// valid), or `Some(new)`: a new allocation of the global allocator, large enough and aligned
/// for the layout, holding a bitwise copy of the old one's bytes, the old one freed.
pub type Mover<'a> = dyn FnMut(NonNull<u8>, Layout) -> Option<NonNull<u8>> + 'a;

/// For tests of `relocate`: a [`Mover`] that moves every allocation it is offered to a fresh
/// copy, and holds the old ones until it is dropped, so that the new allocations cannot reuse
/// their addresses and every move is visible.
#[cfg(test)]
#[derive(Default)]
pub(crate) struct CopyingMover {
    /// The allocations moved away from, freed on drop.
    pub(crate) moved: Vec<(NonNull<u8>, Layout)>,
}

#[cfg(test)]
impl CopyingMover {
    /// Moves `p` (a live allocation of the global allocator with `layout`) to a copy.
    pub(crate) fn copy(&mut self, p: NonNull<u8>, layout: Layout) -> Option<NonNull<u8>> {
        // SAFETY: `layout` is the allocation's own (non-zero) layout; the new allocation gets
        // a bitwise copy of its bytes, and the old one is freed (on drop) with the same
        // layout and never used by its owner again (the `Mover` contract).
        unsafe {
            let new = std::alloc::alloc(layout);
            std::ptr::copy_nonoverlapping(p.as_ptr(), new, layout.size());
            self.moved.push((p, layout));
            NonNull::new(new)
        }
    }
}

#[cfg(test)]
impl Drop for CopyingMover {
    fn drop(&mut self) {
        for (p, layout) in self.moved.drain(..) {
            // SAFETY: allocated by the global allocator with `layout`, freed once.
            unsafe { std::alloc::dealloc(p.as_ptr(), layout) };
        }
    }
}

/// Lets `mv` move the allocation behind a boxed slice; the box then owns the new one. Empty
/// slices and zero-sized elements own no allocation and are left alone.
///
/// # Safety
/// `mv` must keep the contract of [`Mover`].
pub unsafe fn relocate_boxed_slice<T>(b: &mut Box<[T]>, mv: &mut Mover<'_>) {
    let len = b.len();
    let Ok(layout) = Layout::array::<T>(len) else { return };
    if layout.size() == 0 {
        return;
    }
    let Some(old) = NonNull::new(b.as_mut_ptr().cast::<u8>()) else { return };
    if let Some(new) = mv(old, layout) {
        // SAFETY: by `mv`'s contract `new` is an allocation of the global allocator for
        // `layout`, aligned for `T`, holding the `len` elements bitwise (moved, not copied: the
        // old allocation is freed without dropping them). The box is overwritten without
        // dropping its old value, whose memory is already freed; the new box owns the
        // elements and frees `new` with `layout`, as `Box<[T]>` of length `len` does.
        unsafe {
            let moved =
                Box::from_raw(std::ptr::slice_from_raw_parts_mut(new.as_ptr().cast::<T>(), len));
            std::ptr::write(b, moved);
        }
    }
}

/// The set bits in `bytes`, a word at a time, with the CPU's `POPCNT` where it has one (not
/// part of the x86_64 baseline: without it each count is a dozen instructions, and counting a
/// 16 MiB `BF.LOADCHUNK` chunk byte by byte cost more than the rest of the command).
pub fn count_ones_bytes(bytes: &[u8]) -> u64 {
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("popcnt") {
        // SAFETY: the CPU has POPCNT (checked just above), the only feature the function enables.
        return unsafe { count_ones_popcnt(bytes) };
    }
    count_ones_words(bytes)
}

/// [`count_ones_bytes`], portable.
#[inline(always)]
fn count_ones_words(bytes: &[u8]) -> u64 {
    let mut words = bytes.chunks_exact(8);
    let mut n = 0u64;
    for w in &mut words {
        // chunks_exact(8) yields 8-byte slices only.
        n += u64::from(u64::from_ne_bytes(w.try_into().expect("8-byte chunk")).count_ones());
    }
    n + words.remainder().iter().map(|b| u64::from(b.count_ones())).sum::<u64>()
}

/// [`count_ones_words`] compiled with `POPCNT`.
///
/// # Safety
/// The CPU has the `popcnt` feature.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "popcnt")]
unsafe fn count_ones_popcnt(bytes: &[u8]) -> u64 {
    count_ones_words(bytes)
}

/// Overwrites `words` with `bytes` (each word little-endian; `bytes` exactly `words.len() × 8`
/// long, or nothing is written and `None` returned), counting the set bits before and after in
/// the same pass: `(ones before, ones after)`. One pass over the memory instead of three (count,
/// copy, count) for a `BF.LOADCHUNK` chunk.
pub fn replace_counting(words: &mut [u64], bytes: &[u8]) -> Option<(u64, u64)> {
    if bytes.len() != std::mem::size_of_val(words) {
        return None;
    }
    #[cfg(all(target_arch = "x86_64", scalebloom_avx512))]
    if std::arch::is_x86_feature_detected!("avx512vpopcntdq") {
        // SAFETY: the CPU has AVX512-VPOPCNTDQ (checked just above), which implies AVX-512F,
        // the two features the function enables; the lengths are equal (checked above).
        return Some(unsafe { replace_counting_avx512(words, bytes) });
    }
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("popcnt") {
        // SAFETY: the CPU has POPCNT (checked just above), the only feature the function enables.
        return Some(unsafe { replace_counting_popcnt(words, bytes) });
    }
    Some(replace_counting_words(words, bytes))
}

/// [`replace_counting`] after its length check, portable.
#[inline(always)]
fn replace_counting_words(words: &mut [u64], bytes: &[u8]) -> (u64, u64) {
    let (mut old, mut new) = (0u64, 0u64);
    for (w, b) in words.iter_mut().zip(bytes.chunks_exact(8)) {
        // chunks_exact(8) yields 8-byte slices only.
        let v = u64::from_le_bytes(b.try_into().expect("8-byte chunk"));
        old += u64::from(w.count_ones());
        new += u64::from(v.count_ones());
        *w = v;
    }
    (old, new)
}

/// [`replace_counting_words`] compiled with `POPCNT`.
///
/// # Safety
/// The CPU has the `popcnt` feature.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "popcnt")]
unsafe fn replace_counting_popcnt(words: &mut [u64], bytes: &[u8]) -> (u64, u64) {
    replace_counting_words(words, bytes)
}

/// [`replace_counting_words`] eight words at a time with AVX-512's `vpopcntq` (a 1 GiB
/// `BF.LOADCHUNK` import spent ~80 ms of its ~680 counting with scalar `popcnt`); the tail
/// word by word.
///
/// # Safety
/// The CPU has AVX-512F and AVX512-VPOPCNTDQ; `bytes.len() == words.len() * 8`.
#[cfg(all(target_arch = "x86_64", scalebloom_avx512))]
#[allow(
    clippy::incompatible_msrv,
    reason = "compiled only with Rust 1.89 or newer (cfg scalebloom_avx512, set by build.rs)"
)]
#[target_feature(enable = "avx512f,avx512vpopcntdq")]
unsafe fn replace_counting_avx512(words: &mut [u64], bytes: &[u8]) -> (u64, u64) {
    use std::arch::x86_64::*;
    let whole = words.len() / 8;
    let (mut old, mut new) = (_mm512_setzero_si512(), _mm512_setzero_si512());
    for i in 0..whole {
        // SAFETY: words `8i .. 8i + 8` and bytes `64i .. 64i + 64` are in bounds (i < whole
        // = words.len() / 8, and bytes is 8 × as long); unaligned loads and store, the CPU's
        // features as the caller guarantees.
        unsafe {
            let w = words.as_mut_ptr().add(8 * i).cast::<__m512i>();
            let b = _mm512_loadu_si512(bytes.as_ptr().add(64 * i).cast());
            old = _mm512_add_epi64(old, _mm512_popcnt_epi64(_mm512_loadu_si512(w)));
            new = _mm512_add_epi64(new, _mm512_popcnt_epi64(b));
            _mm512_storeu_si512(w, b);
        }
    }
    let (o, n) = replace_counting_words(&mut words[whole * 8..], &bytes[whole * 64..]);
    // The lane sums are at most 64 × the words counted each, far below 2^64. (No closure
    // here: a closure is not compiled with the function's target features.)
    let (old, new) = (_mm512_reduce_add_epi64(old) as u64, _mm512_reduce_add_epi64(new) as u64);
    (old + o, new + n)
}

/// Asks the kernel to map the pages under `words` writable now, in one call
/// (`MADV_POPULATE_WRITE`, Linux 5.14+), rather than one fault per page on first access — and,
/// for a range about to be read and then overwritten (a `BF.LOADCHUNK` chunk replacing bytes,
/// whose old bits are counted first), rather than two faults per page (a read of a fresh page
/// maps the shared zero page, the write then copies it). Best effort: contents never change,
/// and a refusal (an older kernel, no memory at hand) leaves the pages to fault as before.
pub fn populate_for_write(words: &mut [u64]) {
    #[cfg(target_os = "linux")]
    {
        if words.is_empty() {
            return;
        }
        let page = page_size();
        let start = words.as_ptr() as usize / page * page;
        let end = (words.as_ptr() as usize + std::mem::size_of_val(words)).next_multiple_of(page);
        // The pages holding `words` (borrowed mutably: nothing else uses them meanwhile),
        // rounded out to whole pages: the partial pages at the ends belong to the same live
        // mapping, and populating a page maps it as a write fault would, without changing any
        // byte of it.
        let _ = madvise_range(start, end - start, Advice::PopulateWrite);
    }
    #[cfg(not(target_os = "linux"))]
    let _ = words;
}

/// The bytes of `words` in the stored order (each word little-endian): on little-endian targets
/// the words' own memory, borrowed (no copy of a 64 MiB segment for an RDB save, a SCANDUMP
/// chunk or a digest); elsewhere a converted copy.
pub fn le_bytes(words: &[u64]) -> std::borrow::Cow<'_, [u8]> {
    if cfg!(target_endian = "little") {
        // SAFETY: the slice covers exactly the memory of `words` (len × 8 bytes, which cannot
        // overflow: the words already fit in memory), borrowed for the same lifetime and only
        // read; u64 has no padding, so every byte is initialised, and u8 needs no alignment.
        // On a little-endian target these bytes are each word's little-endian encoding.
        std::borrow::Cow::Borrowed(unsafe {
            std::slice::from_raw_parts(words.as_ptr().cast::<u8>(), std::mem::size_of_val(words))
        })
    } else {
        std::borrow::Cow::Owned(words.iter().flat_map(|w| w.to_le_bytes()).collect())
    }
}

/// Sets `words` from `bytes` in the stored order (each word little-endian); `bytes` must be
/// exactly `words.len() × 8` long, or nothing is written and `false` is returned.
pub fn set_from_le_bytes(words: &mut [u64], bytes: &[u8]) -> bool {
    if bytes.len() != std::mem::size_of_val(words) {
        return false;
    }
    if cfg!(target_endian = "little") {
        let (ptr, len) = (words.as_mut_ptr().cast::<u8>(), bytes.len());
        // SAFETY: the slice covers exactly the memory of `words` (`len` is its size, checked
        // above), borrowed mutably while `words` is; any bytes written make valid u64s (every
        // bit pattern is one), and on a little-endian target each word's little-endian encoding.
        let target = unsafe { std::slice::from_raw_parts_mut(ptr, len) };
        target.copy_from_slice(bytes);
    } else {
        for (w, chunk) in words.iter_mut().zip(bytes.chunks_exact(8)) {
            // chunks_exact(8) yields 8-byte slices only.
            *w = u64::from_le_bytes(chunk.try_into().expect("8-byte chunk"));
        }
    }
    true
}

/// Asks the CPU to start loading the cache line of `word`, so that a later read or write of it
/// does not wait for memory. Only a hint: it changes no state and never faults. A no-op on
/// targets without a stable prefetch.
#[inline(always)]
pub fn prefetch(word: &u64) {
    prefetch_any(word)
}

/// [`prefetch`] of the cache line holding any value.
#[inline(always)]
pub fn prefetch_any<T>(value: &T) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: `_mm_prefetch` only hints the cache; it reads nothing architecturally and is
    // defined for any address. SSE, which it needs, is part of the x86_64 baseline.
    unsafe {
        use std::arch::x86_64::{_MM_HINT_T0, _mm_prefetch};
        _mm_prefetch::<_MM_HINT_T0>((value as *const T).cast());
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = value;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn zeroed_words_are_zero_writable_and_cloned_equal() {
        let mut w = Words::zeroed(1000).unwrap();
        assert!(w.iter().all(|&x| x == 0));
        w[999] = 7;
        let c = w.clone();
        assert!(c == w);
        assert_eq!(c[999], 7);
        assert_eq!(Words::zeroed(0).unwrap().len(), 0);
    }

    #[test]
    fn byte_views_are_little_endian_both_ways() {
        let mut w = [0x0807_0605_0403_0201u64, 0x100f_0e0d_0c0b_0a09];
        let bytes: Vec<u8> = (1..=16).collect();
        assert_eq!(&*le_bytes(&w), &bytes[..]);
        assert!(set_from_le_bytes(&mut w, &[0xff; 16]));
        assert_eq!(w, [u64::MAX; 2]);
        assert!(!set_from_le_bytes(&mut w, &[0; 15]));
        assert_eq!(w, [u64::MAX; 2], "a wrong length writes nothing");
    }

    #[test]
    fn words_from_bytes_are_little_endian_and_whole() {
        let w = Words::from_le_bytes(&[1, 0, 0, 0, 0, 0, 0, 0x80, 2, 0, 0, 0, 0, 0, 0, 0]).unwrap();
        assert_eq!(&*w, &[0x8000_0000_0000_0001, 2]);
        assert!(Words::from_le_bytes(&[0; 9]).is_err());
    }

    #[test]
    fn adopted_words_keep_their_contents_and_free_cleanly() {
        for n in [3usize, (HUGE_PAGES_MIN_BYTES / 8) * 2] {
            let mut v = vec![0u64; n].into_boxed_slice();
            v[0] = 11;
            v[n - 1] = 22;
            let ptr = Box::into_raw(v).cast::<u64>();
            // SAFETY: a boxed slice of `n` u64s from the global allocator, handed over whole.
            let w = unsafe { Words::adopt(ptr, n) };
            assert_eq!((w.len(), w[0], w[n - 1]), (n, 11, 22));
            assert_eq!(
                w.moves_to_huge_pages(),
                n * 8 >= HUGE_PAGES_MIN_BYTES && cfg!(target_os = "linux") && kernel_takes_advice()
            );
        }
    }

    /// Large segments are handed to the huge-page thread when the kernel's THP mode is
    /// `madvise`, small ones never; and the memory reads and writes the same either way.
    #[test]
    fn only_large_segments_move_to_huge_pages() {
        assert!(!Words::zeroed(1000).unwrap().moves_to_huge_pages());
        let mut big = Words::zeroed((HUGE_PAGES_MIN_BYTES / 8) as u64 * 2).unwrap();
        assert_eq!(big.moves_to_huge_pages(), cfg!(target_os = "linux") && kernel_takes_advice());
        let last = big.len() - 1;
        big[last] = u64::MAX;
        big[0] = 1;
        assert_eq!(big.iter().map(|w| w.count_ones()).sum::<u32>(), 65);
    }

    /// A segment that is in use (every page written) is collapsed into huge pages by the
    /// thread — or, on a kernel without MADV_COLLAPSE, advised for khugepaged — and keeps its
    /// contents, including writes made while the thread works.
    #[test]
    #[cfg(target_os = "linux")]
    fn segments_in_use_are_moved_and_keep_their_contents() {
        if !kernel_takes_advice() {
            return; // nothing to move under THP `never` or `always` (asserted above)
        }
        let n = 16 << 20 >> 3;
        let mut w = Words::zeroed(n as u64).unwrap();
        for (i, x) in w.iter_mut().enumerate() {
            *x = (i as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15);
        }
        let job = HugeJob::of(&w).unwrap();
        // Writes while the thread may be collapsing (the kernel keeps them).
        for i in (0..n).step_by(4099) {
            w[i] = !w[i];
        }
        let (moved, advised) = job.wait_finished();
        assert!(moved >= 12 << 20 || advised, "moved {moved} bytes, advised {advised}");
        for (i, x) in w.iter().enumerate() {
            let v = (i as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15);
            assert_eq!(*x, if i % 4099 == 0 { !v } else { v }, "word {i}");
        }
    }

    /// With `bf.huge-pages-at-fault yes`, a new large segment is advised for huge pages at
    /// once (the thread has nothing left to do: the job is finished from the start) and keeps
    /// its contents; the advice is withdrawn when it is freed. A segment adopted from a loader
    /// (already in use) still goes to the thread.
    #[test]
    #[cfg(target_os = "linux")]
    fn segments_advised_at_fault_need_no_move() {
        if !kernel_takes_advice() {
            return; // nothing is advised under THP `never` or `always` (asserted above)
        }
        HUGE_PAGES_AT_FAULT.store(true, std::sync::atomic::Ordering::Relaxed);
        let before = huge_pages_advised_at_fault_bytes();
        let n = 8 << 20 >> 3;
        let mut w = Words::zeroed(n as u64).unwrap();
        let job = HugeJob::of(&w).unwrap();
        assert_eq!(job.wait_finished(), (0, true), "advised at allocation, nothing to move");
        assert!(huge_pages_advised_at_fault_bytes() - before >= 6 << 20);
        for (i, x) in w.iter_mut().enumerate() {
            *x = i as u64;
        }
        assert!(w.iter().enumerate().all(|(i, x)| *x == i as u64));
        drop(w);
        assert!(job.is_released());
        assert!(!job.is_advised(), "advice withdrawn before the free");

        let mut filled = std::mem::ManuallyDrop::new(vec![7u64; n].into_boxed_slice());
        // SAFETY: the pointer and length of a boxed slice from the global allocator, whose
        // ownership passes to the `Words` (the box is never dropped: ManuallyDrop).
        let adopted = unsafe { Words::adopt(filled.as_mut_ptr(), n) };
        let job = HugeJob::of(&adopted).unwrap();
        assert!(!job.is_advised(), "loaded data is not advised at allocation");
        drop(adopted);
        HUGE_PAGES_AT_FAULT.store(false, std::sync::atomic::Ordering::Relaxed);
    }

    /// Segments freed while the thread looks at them or collapses them: the drop waits for the
    /// step in progress, and the thread never touches the range afterwards.
    #[test]
    #[cfg(target_os = "linux")]
    fn segments_freed_during_a_move_are_released() {
        for round in 0..8 {
            let mut w = Words::zeroed(8 << 20 >> 3).unwrap();
            w.fill(round);
            let job = HugeJob::of(&w);
            drop(w);
            if let Some(job) = job {
                assert!(job.is_released());
                job.wait_finished();
            }
        }
    }

    #[test]
    fn counted_ones_equal_the_bytewise_count() {
        let bytes: Vec<u8> =
            (0..1000u32).map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8).collect();
        for (a, b) in [(0, 0), (0, 1000), (3, 997), (5, 12), (8, 16), (1, 2)] {
            let want: u64 = bytes[a..b].iter().map(|x| u64::from(x.count_ones())).sum();
            assert_eq!(count_ones_bytes(&bytes[a..b]), want, "{a}..{b}");
            assert_eq!(count_ones_words(&bytes[a..b]), want, "{a}..{b}");
        }
    }

    #[test]
    fn replacing_counts_before_and_after() {
        let mut w = [0x0f0fu64, u64::MAX, 0];
        let bytes: Vec<u8> = [1u64, 3, 7].iter().flat_map(|x| x.to_le_bytes()).collect();
        assert_eq!(replace_counting(&mut w, &bytes), Some((8 + 64, 1 + 2 + 3)));
        assert_eq!(w, [1, 3, 7]);
        assert_eq!(replace_counting(&mut w, &bytes[..23]), None);
        assert_eq!(w, [1, 3, 7], "a wrong length writes nothing");
    }

    /// Every length (whole vectors of eight words and the tail), against a word-by-word count:
    /// the vector path where the CPU has one, the scalar one elsewhere.
    #[test]
    fn replacing_counts_every_length_as_word_by_word() {
        let mut rng = crate::filter::testrng::XorShift::default();
        let mut next = || rng.next_u64();
        for len in 0..70 {
            let old: Vec<u64> = (0..len).map(|_| next()).collect();
            let new: Vec<u64> = (0..len).map(|_| next()).collect();
            let bytes: Vec<u8> = new.iter().flat_map(|v| v.to_le_bytes()).collect();
            let ones = |v: &[u64]| v.iter().map(|w| u64::from(w.count_ones())).sum::<u64>();
            let mut w = old.clone();
            assert_eq!(replace_counting(&mut w, &bytes), Some((ones(&old), ones(&new))), "{len}");
            assert_eq!(w, new, "{len} words");
        }
    }

    /// Populating pages for writing changes no byte, inside the slice or around it.
    #[test]
    fn populating_for_write_changes_nothing() {
        let mut w = Words::zeroed(3 << 20 >> 3).unwrap();
        for (i, x) in w.iter_mut().enumerate().step_by(97) {
            *x = i as u64 | 1;
        }
        let before = w.clone();
        populate_for_write(&mut w[1000..300_000]);
        populate_for_write(&mut w[5..6]);
        populate_for_write(&mut []);
        assert!(w == before);
    }

    #[test]
    fn refused_sizes_are_errors() {
        assert_eq!(Words::zeroed(u64::MAX).err(), Some(FilterError::TooLarge));
    }
}
