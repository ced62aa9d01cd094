//! The memory of bit arrays: the one place where the core asks the allocator and the kernel
//! for anything directly. Everything `unsafe` about it is here, each block with its proof.
//!
//! - [`Words`] owns one zeroed allocation of `u64` words (a bit-array segment). It is
//!   allocated with `calloc` (Redis' `RedisModule_Calloc` inside Redis), so a fresh multi-GiB
//!   filter is lazily zeroed pages from the kernel, not written page by page; and a size the
//!   allocator refuses is an error, not an abort.
//! - Large segments ask the kernel for transparent huge pages (`madvise(MADV_HUGEPAGE)`,
//!   Linux only; the `bf.huge-pages` setting, on by default). Every probe of a large filter
//!   lands on a random page; with 4 KiB pages each one misses the TLB too, and a page walk
//!   costs several memory accesses (more under virtualisation). 2 MiB pages let the TLB cover
//!   a GiB. Measured in bench/README.md ("Huge pages: what they cost and save"): MADD and
//!   MEXISTS on a 1 GiB filter 1.3–2.8× faster, and the `fork` of a BGSAVE about 10× shorter,
//!   with no more copy-on-write cost per write during a save. The advice is given back (`MADV_NOHUGEPAGE`, the default of
//!   the kernel's `madvise` mode) before the memory is freed, so the allocator never reuses
//!   huge-page-backed memory for small objects — the reason Redis itself avoids THP.
//! - [`prefetch`]: the cache hint of the batched paths.
//! - [`Mover`] and [`relocate_boxed_slice`]: moving allocations when the server defragments
//!   its memory (Redis' active defrag hands the module `RedisModule_DefragAlloc`).

use std::alloc::Layout;
use std::ops::{Deref, DerefMut};
use std::ptr::NonNull;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicBool, Ordering};

use super::BloomError;

/// Whether new large segments ask for huge pages (`bf.huge-pages`). Existing segments keep what
/// they were allocated with.
pub static HUGE_PAGES: AtomicBool = AtomicBool::new(true);

/// Segments at least this large are advised. Smaller filters fit the TLB's reach with 4 KiB
/// pages (about 6 MiB on current x86 cores), and an advised range shorter than a few huge
/// pages would mostly be the unaligned ends that cannot use one.
pub const HUGE_PAGES_MIN_BYTES: usize = 4 << 20;

/// The huge page size of x86_64 and of 4 KiB-page arm64 kernels.
const HUGE_PAGE_BYTES: usize = 2 << 20;

/// One zeroed allocation of words: a bit-array segment.
#[derive(Default)]
pub struct Words {
    words: Box<[u64]>,
    /// Whether the inner huge-page-aligned range was advised `MADV_HUGEPAGE` (undone on drop).
    huge: bool,
}

impl Words {
    /// `n` zeroed words, or an error if the allocator refuses (nothing is aborted).
    pub fn zeroed(n: u64) -> Result<Self, BloomError> {
        let n = usize::try_from(n).map_err(|_| BloomError::TooLarge)?;
        if n == 0 {
            return Ok(Self::default());
        }
        let layout = std::alloc::Layout::array::<u64>(n).map_err(|_| BloomError::TooLarge)?;
        // SAFETY: `layout` has a non-zero size (n > 0). A non-null result is a zeroed
        // allocation of exactly `layout` from the global allocator, valid as `n` initialised
        // `u64`s (all-zero bits are a valid u64), which is what `Box<[u64]>` of length `n` owns
        // and frees with the same layout.
        let words = unsafe {
            let ptr = std::alloc::alloc_zeroed(layout).cast::<u64>();
            if ptr.is_null() {
                return Err(BloomError::OutOfMemory);
            }
            Box::from_raw(std::ptr::slice_from_raw_parts_mut(ptr, n))
        };
        let huge = n * 8 >= HUGE_PAGES_MIN_BYTES
            && HUGE_PAGES.load(Ordering::Relaxed)
            && kernel_takes_advice()
            && advise(&words, Advice::HugePages);
        Ok(Self { words, huge })
    }

    /// The words of `bytes` (little-endian), in a fresh zeroed allocation; `None` unless the
    /// length is a whole number of words.
    pub fn from_le_bytes(bytes: &[u8]) -> Result<Self, BloomError> {
        if bytes.len() % 8 != 0 {
            return Err(BloomError::BadData);
        }
        let mut words = Self::zeroed(bytes.len() as u64 / 8)?;
        set_from_le_bytes(&mut words, bytes);
        Ok(words)
    }

    /// Takes ownership of `n` words that a loader has already filled, without copying them: a
    /// segment read from an RDB file keeps the buffer the server read it into. A large one is
    /// advised for huge pages; its pages were faulted in small by the loader, so a background
    /// thread then moves it into huge pages (`collapse_in_background`) while the server goes
    /// on — in the load itself that copy would double the load time.
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
        let huge = n * 8 >= HUGE_PAGES_MIN_BYTES
            && HUGE_PAGES.load(Ordering::Relaxed)
            && kernel_takes_advice()
            && advise(&words, Advice::HugePages);
        if huge {
            collapse_in_background(&words);
        }
        Self { words, huge }
    }

    /// Whether this segment asked for huge pages (whether it got them is up to the kernel).
    pub fn advised_huge(&self) -> bool {
        self.huge
    }
}

impl Words {
    /// Lets `mv` move this segment (active defragmentation). A segment advised for huge pages
    /// stays where it is: its advice must be withdrawn from the memory it was given to before
    /// that memory is freed, and a multi-MiB allocation is not what defragmentation moves.
    ///
    /// # Safety
    /// `mv` must keep the contract of [`Mover`].
    pub unsafe fn relocate(&mut self, mv: &mut Mover<'_>) {
        if !self.huge {
            // SAFETY: the caller's contract on `mv`.
            unsafe { relocate_boxed_slice(&mut self.words, mv) }
        }
    }
}

impl Drop for Words {
    fn drop(&mut self) {
        if self.huge {
            advise(&self.words, Advice::NoHugePages);
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

/// Whether the kernel acts on `MADV_HUGEPAGE` advice: its THP mode is `madvise`. Under
/// `always` every large region gets huge pages without advice (or none: Redis' `disable-thp`
/// turns THP off for its process then), under `never` none does. Read once per process.
fn kernel_takes_advice() -> bool {
    static MADVISE_MODE: OnceLock<bool> = OnceLock::new();
    *MADVISE_MODE.get_or_init(|| {
        std::fs::read_to_string("/sys/kernel/mm/transparent_hugepage/enabled")
            .is_ok_and(|mode| mode.contains("[madvise]"))
    })
}

#[derive(Clone, Copy)]
enum Advice {
    HugePages,
    NoHugePages,
    /// Move the range into huge pages now (copying it), rather than wait for khugepaged.
    Collapse,
}

/// The huge-page-aligned part of `words`: `(start address, length)`, if it holds a whole huge
/// page.
fn huge_page_range(words: &[u64]) -> Option<(usize, usize)> {
    let start = (words.as_ptr() as usize).next_multiple_of(HUGE_PAGE_BYTES);
    let end = (words.as_ptr() as usize + words.len() * 8) / HUGE_PAGE_BYTES * HUGE_PAGE_BYTES;
    (end > start).then(|| (start, end - start))
}

/// Gives `advice` for the huge-page-aligned part of `words`; whether the kernel accepted it.
#[cfg(target_os = "linux")]
fn advise(words: &[u64], advice: Advice) -> bool {
    huge_page_range(words).is_some_and(|(start, len)| madvise_range(start, len, advice))
}

/// `madvise(start, len, advice)`; whether the kernel accepted it.
#[cfg(target_os = "linux")]
fn madvise_range(start: usize, len: usize, advice: Advice) -> bool {
    // SAFETY: the declaration is the C library's `int madvise(void *addr, size_t len, int
    // advice)` (POSIX, glibc and musl alike), with Rust types of the same size and ABI.
    unsafe extern "C" {
        fn madvise(
            addr: *mut std::ffi::c_void,
            len: usize,
            advice: std::ffi::c_int,
        ) -> std::ffi::c_int;
    }
    let advice = match advice {
        Advice::HugePages => 14,   // MADV_HUGEPAGE
        Advice::NoHugePages => 15, // MADV_NOHUGEPAGE
        Advice::Collapse => 25,    // MADV_COLLAPSE
    };
    // SAFETY: these advice values only change how the kernel backs a range (its page size;
    // MADV_COLLAPSE copies the contents into huge pages), never the contents or the mapping,
    // so they are harmless for any range of this process; the kernel checks the range itself
    // (an unmapped or unaligned one is refused with an error, nothing else happens).
    unsafe { madvise(start as *mut std::ffi::c_void, len, advice) == 0 }
}

#[cfg(not(target_os = "linux"))]
fn advise(_: &[u64], _: Advice) -> bool {
    false
}

/// Hands the huge-page-aligned part of `words` to a background thread that asks the kernel to
/// move it into huge pages now (`MADV_COLLAPSE`, Linux 6.1+), rather than wait for khugepaged
/// (about 16 MiB per 10 s with its default settings, so many minutes for a large filter).
/// Best effort: where the kernel refuses (older kernels, a range advised otherwise since), the
/// `MADV_HUGEPAGE` advice still lets khugepaged do it later.
///
/// The thread only ever gives this advice, which changes how pages are backed, never what they
/// hold; so it is harmless even for a range freed or reused in the meantime (the kernel refuses
/// unmapped and `MADV_NOHUGEPAGE` ranges, and a reused range keeps its new contents).
#[cfg(target_os = "linux")]
fn collapse_in_background(words: &[u64]) {
    if let Some((start, len)) = huge_page_range(words) {
        to_collapser(Collapse::Range(start, len));
    }
}

/// Whether the collapser waits (while the server loads its data: the collapse would compete
/// with the loader for the CPU and for the process' page tables, and make the load slower).
static COLLAPSE_HELD: AtomicBool = AtomicBool::new(false);

/// Holds background collapses back (`true`, when the server starts loading its data) or lets
/// them run, with everything queued meanwhile (`false`, when loading ends).
pub fn hold_background_collapse(hold: bool) {
    COLLAPSE_HELD.store(hold, Ordering::Relaxed);
    #[cfg(target_os = "linux")]
    if !hold {
        to_collapser(Collapse::Release);
    }
}

/// A message to the collapse thread.
#[cfg(target_os = "linux")]
enum Collapse {
    /// A huge-page-aligned range to collapse.
    Range(usize, usize),
    /// Collapses are no longer held: run the queued ones.
    Release,
}

/// Sends to the collapse thread, started on first use (nothing happens if it cannot start).
#[cfg(target_os = "linux")]
fn to_collapser(msg: Collapse) {
    use std::sync::mpsc::{Sender, channel};
    static WORKER: OnceLock<Option<Sender<Collapse>>> = OnceLock::new();
    let worker = WORKER.get_or_init(|| {
        let (tx, rx) = channel::<Collapse>();
        let spawned = std::thread::Builder::new().name("bf-collapse".into()).spawn(move || {
            let mut queued = Vec::new();
            for msg in rx {
                if let Collapse::Range(start, len) = msg {
                    queued.push((start, len));
                }
                if !COLLAPSE_HELD.load(Ordering::Relaxed) {
                    for (start, len) in queued.drain(..) {
                        madvise_range(start, len, Advice::Collapse);
                    }
                }
            }
        });
        spawned.ok().map(|_| tx)
    });
    if let Some(tx) = worker {
        let _ = tx.send(msg);
    }
}

#[cfg(not(target_os = "linux"))]
fn collapse_in_background(_: &[u64]) {}

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
    #[cfg(target_arch = "x86_64")]
    // SAFETY: `_mm_prefetch` only hints the cache; it reads nothing architecturally and is
    // defined for any address. SSE, which it needs, is part of the x86_64 baseline.
    unsafe {
        use std::arch::x86_64::{_MM_HINT_T0, _mm_prefetch};
        _mm_prefetch::<_MM_HINT_T0>((word as *const u64).cast());
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = word;
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
                w.advised_huge(),
                n * 8 >= HUGE_PAGES_MIN_BYTES && cfg!(target_os = "linux") && kernel_takes_advice()
            );
        }
    }

    /// Large segments are advised when the kernel takes advice, small ones never; and the
    /// memory reads and writes the same either way (the advice only changes page sizes).
    #[test]
    fn only_large_segments_ask_for_huge_pages() {
        assert!(!Words::zeroed(1000).unwrap().advised_huge());
        let mut big = Words::zeroed((HUGE_PAGES_MIN_BYTES / 8) as u64 * 2).unwrap();
        assert_eq!(big.advised_huge(), cfg!(target_os = "linux") && kernel_takes_advice());
        let last = big.len() - 1;
        big[last] = u64::MAX;
        big[0] = 1;
        assert_eq!(big.iter().map(|w| w.count_ones()).sum::<u32>(), 65);
    }

    #[test]
    fn refused_sizes_are_errors() {
        assert_eq!(Words::zeroed(u64::MAX).err(), Some(BloomError::TooLarge));
    }
}
