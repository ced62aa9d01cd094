//! The global allocator: Redis' allocator inside a server, the system's outside one.

use std::alloc::{GlobalAlloc, Layout, System};

/// Redis' allocator (so `INFO memory`, `maxmemory` and `MEMORY USAGE` see filter memory),
/// with `calloc` for zeroed allocations (a fresh multi-GiB filter is not memset page by page)
/// and `realloc` in place.
///
/// Without a Redis server (unit tests, benches, integration-test binaries linking the rlib)
/// `RedisModule_Alloc` is never set and the system allocator serves every call. Inside Redis
/// it is set by `RedisModule_Init` at the top of `RedisModule_OnLoad`, before any Rust code of
/// this module allocates, so one allocator serves every pointer's whole life either way.
pub struct BloomAlloc;

/// Rounds the size up to the alignment, as the `redis-module` crate's allocator does: jemalloc
/// aligns each size class to its size's largest power-of-two divisor.
fn redis_size(layout: Layout) -> usize {
    (layout.size() + layout.align() - 1) & !(layout.align() - 1)
}

// SAFETY: every method forwards to an allocator that meets `GlobalAlloc`'s contract for the
// rounded size (Redis' zmalloc, or `System` with the caller's own layout), and a pointer is
// always freed or reallocated by the allocator that made it (see `BloomAlloc`'s comment: the
// choice is fixed before the first allocation and never changes).
unsafe impl GlobalAlloc for BloomAlloc {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        match api!(RedisModule_Alloc) {
            // SAFETY: RedisModule_Alloc returns memory for `redis_size(layout)` bytes, aligned
            // for it (jemalloc/libc malloc align to the size class, at least the layout's
            // alignment, which `redis_size` folds into the size), or aborts on OOM.
            Some(alloc) => unsafe { alloc(redis_size(layout)).cast() },
            // SAFETY: the caller's layout is passed on unchanged, as `GlobalAlloc` requires.
            None => unsafe { System.alloc(layout) },
        }
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        match api!(RedisModule_Calloc) {
            // SAFETY: as in `alloc`; calloc returns zeroed memory.
            Some(calloc) => unsafe { calloc(1, redis_size(layout)).cast() },
            // SAFETY: the caller's layout is passed on unchanged.
            None => unsafe { System.alloc_zeroed(layout) },
        }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        match api!(RedisModule_Realloc) {
            // SAFETY: `ptr` came from RedisModule_Alloc/Calloc (the same allocator was chosen
            // when it was made); `new_size` with the old alignment is a valid layout, which
            // `GlobalAlloc::realloc`'s contract guarantees (it does not overflow isize).
            Some(realloc) => unsafe {
                let new = Layout::from_size_align_unchecked(new_size, layout.align());
                realloc(ptr.cast(), redis_size(new)).cast()
            },
            // SAFETY: `ptr` came from `System` with `layout`; the contract is passed on.
            None => unsafe { System.realloc(ptr, layout, new_size) },
        }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        match api!(RedisModule_Free) {
            // SAFETY: `ptr` came from RedisModule_Alloc/Calloc/Realloc and is freed once.
            Some(free) => unsafe { free(ptr.cast()) },
            // SAFETY: `ptr` came from `System` with `layout`.
            None => unsafe { System.dealloc(ptr, layout) },
        }
    }
}
