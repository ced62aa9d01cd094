//! Moving large bit-array segments into transparent huge pages once they are in use: the
//! kernel's THP mode, `madvise`/`mincore` on a segment's range, and the background thread
//! (`bf-hugepages`) that collapses a segment 2 MiB at a time. See the parent module's header
//! for why the first touch takes 4 KiB pages.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock};

/// Whether new large segments are moved into huge pages (`bf.huge-pages`). Existing segments
/// keep what they were allocated with.
pub static HUGE_PAGES: AtomicBool = AtomicBool::new(true);

/// Whether a new large segment is advised for huge pages when allocated, so that its first
/// touch takes 2 MiB faults (`bf.huge-pages-at-fault`, off by default). Cheap on some hosts
/// (bare metal: the first pass over a fresh 1 GiB filter at 0.26× RedisBloom's time, against
/// 0.75× in base pages) and milliseconds per fault on others (a VM whose host backs fresh
/// memory lazily: a 2.2 s first BF.MADD on a fresh 1 GiB filter, measured); which one a host
/// is cannot be told reliably in advance (a load-time probe of a few huge pages measured
/// 0.25 ms and 5 ms per fault minutes apart on the same VM), so it is the operator's choice.
pub static HUGE_PAGES_AT_FAULT: AtomicBool = AtomicBool::new(false);

/// Segments at least this large are moved. Smaller filters fit the TLB's reach with 4 KiB
/// pages (about 6 MiB on current x86 cores), and a range shorter than a few huge pages would
/// mostly be the unaligned ends that cannot use one.
pub const HUGE_PAGES_MIN_BYTES: usize = 4 << 20;

/// The huge page size of x86_64 and of 4 KiB-page arm64 kernels.
pub(crate) const HUGE_PAGE_BYTES: usize = 2 << 20;

/// Whether huge pages are for the module to ask for: the kernel's THP mode is `madvise`. Under
/// `always` every large region gets huge pages at fault time without asking (or none: Redis'
/// `disable-thp` turns THP off for its process then), under `never` none does, and the module
/// respects both. Read once per process.
pub(super) fn kernel_takes_advice() -> bool {
    static MADVISE_MODE: OnceLock<bool> = OnceLock::new();
    *MADVISE_MODE.get_or_init(|| {
        std::fs::read_to_string("/sys/kernel/mm/transparent_hugepage/enabled")
            .is_ok_and(|mode| mode.contains("[madvise]"))
    })
}

#[derive(Clone, Copy)]
pub(super) enum Advice {
    HugePages,
    NoHugePages,
    /// Move the range into huge pages now (copying it), rather than wait for khugepaged.
    Collapse,
    /// Map the range's pages writable now, as write faults would.
    PopulateWrite,
}

/// The huge-page-aligned part of `words`: `(start address, length)`, if it holds a whole huge
/// page.
pub(super) fn huge_page_range(words: &[u64]) -> Option<(usize, usize)> {
    let start = (words.as_ptr() as usize).next_multiple_of(HUGE_PAGE_BYTES);
    let end = (words.as_ptr() as usize + words.len() * 8) / HUGE_PAGE_BYTES * HUGE_PAGE_BYTES;
    (end > start).then(|| (start, end - start))
}

/// `madvise(start, len, advice)`: `Ok`, or the kernel's error number.
#[cfg(target_os = "linux")]
pub(super) fn madvise_range(start: usize, len: usize, advice: Advice) -> Result<(), i32> {
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
        Advice::HugePages => 14,     // MADV_HUGEPAGE
        Advice::NoHugePages => 15,   // MADV_NOHUGEPAGE
        Advice::Collapse => 25,      // MADV_COLLAPSE
        Advice::PopulateWrite => 23, // MADV_POPULATE_WRITE
    };
    // SAFETY: these advice values only change how the kernel backs a range (its page size;
    // MADV_COLLAPSE copies the contents into huge pages, atomically for concurrent accesses,
    // as khugepaged does; MADV_POPULATE_WRITE maps pages as write faults would), never the
    // contents or the mapping; the kernel checks the range
    // itself (an unmapped or unaligned one is refused with an error, nothing else happens).
    // Callers only pass ranges of live segments (see `HugeJob`).
    if unsafe { madvise(start as *mut std::ffi::c_void, len, advice) } == 0 {
        Ok(())
    } else {
        Err(std::io::Error::last_os_error().raw_os_error().unwrap_or(0))
    }
}

/// How many of the pages of `[start, start + len)` are resident (`mincore`); `None` if the
/// kernel refuses. `start` is page-aligned.
#[cfg(target_os = "linux")]
pub(super) fn resident_pages(start: usize, len: usize, page: usize) -> Option<usize> {
    // SAFETY: the C library's `int mincore(void *addr, size_t length, unsigned char *vec)`
    // and `long sysconf(int)`, with Rust types of the same size and ABI.
    unsafe extern "C" {
        fn mincore(addr: *mut std::ffi::c_void, length: usize, vec: *mut u8) -> std::ffi::c_int;
    }
    let mut vec = vec![0u8; len.div_ceil(page)];
    // SAFETY: `vec` has one byte per page of the range, which is what mincore writes; it only
    // reports on the range (which the caller keeps alive), never changes it.
    let rc = unsafe { mincore(start as *mut std::ffi::c_void, len, vec.as_mut_ptr()) };
    (rc == 0).then(|| vec.iter().filter(|&&b| b & 1 != 0).count())
}

/// The size of a base page.
#[cfg(target_os = "linux")]
pub(super) fn page_size() -> usize {
    // SAFETY: `long sysconf(int name)` of the C library (ABI as declared).
    unsafe extern "C" {
        fn sysconf(name: std::ffi::c_int) -> std::ffi::c_long;
    }
    const SC_PAGESIZE: std::ffi::c_int = 30; // glibc and musl on Linux
    // SAFETY: sysconf only reads a system value.
    let page = unsafe { sysconf(SC_PAGESIZE) };
    usize::try_from(page).ok().filter(|p| p.is_power_of_two()).unwrap_or(4096)
}

/// Segments handed to the huge-page thread that it has not finished with (`INFO bf`
/// `huge_pages_waiting`), and the bytes it moved into huge pages (`huge_pages_moved_bytes`).
pub(super) static JOBS_WAITING: AtomicU64 = AtomicU64::new(0);
pub(super) static MOVED_BYTES: AtomicU64 = AtomicU64::new(0);
/// The bytes the kernel refused to move (`huge_pages_refused_bytes`): 2 MiB ranges that
/// MADV_COLLAPSE turned down after every try (no huge page to be had, or a transient refusal
/// that lasted); they stay in 4 KiB pages and answer the same.
pub(super) static REFUSED_BYTES: AtomicU64 = AtomicU64::new(0);

/// `(segments waiting to be moved into huge pages, bytes moved so far)`.
pub fn huge_page_stats() -> (u64, u64) {
    (JOBS_WAITING.load(Ordering::Relaxed), MOVED_BYTES.load(Ordering::Relaxed))
}

/// Bytes of large arrays advised for huge pages when allocated (`huge_pages_at_fault_bytes`),
/// so that their first touch took huge pages: the kernel's count of such faults is
/// `thp_fault_alloc` in /proc/vmstat.
pub(super) static ADVISED_AT_FAULT_BYTES: AtomicU64 = AtomicU64::new(0);

/// Bytes of large arrays advised for huge pages when allocated, so far (`INFO bf`
/// `huge_pages_at_fault_bytes`).
pub fn huge_pages_advised_at_fault_bytes() -> u64 {
    ADVISED_AT_FAULT_BYTES.load(Ordering::Relaxed)
}

/// Bytes the kernel refused to move into huge pages so far (`INFO bf` `huge_pages_refused_bytes`).
pub fn huge_page_refused_bytes() -> u64 {
    REFUSED_BYTES.load(Ordering::Relaxed)
}

/// One large segment's move into huge pages, shared by its [`Words`](super::Words) and the background thread
/// (`mover`). The thread never reads or writes the segment's memory: it asks the
/// kernel about the range (`mincore`) and to collapse it (`MADV_COLLAPSE`), which is safe on
/// memory the main thread is writing (the kernel copies the pages atomically for concurrent
/// accesses, as khugepaged does). What must not happen is a call on the range after the
/// segment's memory is freed (by then it may belong to another allocation, which would be
/// collapsed into huge pages, or to nothing). So each call is made holding `state`, after
/// checking `released`; [`Words`](super::Words)' drop sets `released` holding it, before freeing — a `DEL`
/// (or a lazy free, on Redis' background thread) waits for at most one step in progress.
/// The jobs of live segments, by the segment's address: a segment's handle
/// ([`Words`](super::Words)) stays at 16 bytes, part of every filter's fixed memory, instead of
/// carrying its job. Only segments of at least [`HUGE_PAGES_MIN_BYTES`] are ever in it (a few
/// per GiB of filters), and only their creation, free and defragmentation look it up. An entry
/// is taken out before its segment is freed, so an address is never in it twice.
static LIVE_JOBS: Mutex<std::collections::BTreeMap<usize, Arc<HugeJob>>> =
    Mutex::new(std::collections::BTreeMap::new());

pub struct HugeJob {
    /// The huge-page-aligned part of the segment.
    start: usize,
    len: usize,
    state: Mutex<JobState>,
    /// Signalled when the thread is finished with the job (for tests to wait on).
    #[cfg(test)]
    finished: std::sync::Condvar,
}

#[derive(Default)]
pub(super) struct JobState {
    /// The segment is being freed: no more calls on the range.
    released: bool,
    /// `MADV_HUGEPAGE` was given (a kernel without `MADV_COLLAPSE`): withdrawn on release,
    /// so the allocator never reuses huge-page-advised memory for small objects.
    advised: bool,
    /// Bytes of the range collapsed into huge pages.
    moved: usize,
    /// The thread is finished with the job.
    finished: bool,
}

/// Locks a job's state; a poisoned lock (a panic while held: none of the code under it panics)
/// still gives the state, whose fields are always consistent.
pub(super) fn lock<T>(state: &Mutex<T>) -> MutexGuard<'_, T> {
    state.lock().unwrap_or_else(|e| e.into_inner())
}

impl HugeJob {
    /// The job of a new segment, if it is one for huge pages: large, the setting on, the
    /// kernel's THP mode `madvise`, Linux. With `bf.huge-pages-at-fault yes`, a `fresh` segment
    /// (allocated zeroed, not yet in use) is advised `MADV_HUGEPAGE` at once: its first touch
    /// takes 2 MiB pages and nothing is left for the thread (the job only withdraws the advice
    /// before the memory is freed). Otherwise it is handed to the thread, to be collapsed once
    /// in use.
    pub(super) fn start(words: &[u64], fresh: bool) -> Option<Arc<Self>> {
        if !cfg!(target_os = "linux")
            || words.len() * 8 < HUGE_PAGES_MIN_BYTES
            || !HUGE_PAGES.load(Ordering::Relaxed)
            || !kernel_takes_advice()
        {
            return None;
        }
        let (start, len) = huge_page_range(words)?;
        // Advised now (at fault time), the job is finished from the start: it only withdraws
        // the advice on release, and the thread never sees it.
        #[cfg(target_os = "linux")]
        let at_fault = fresh
            && HUGE_PAGES_AT_FAULT.load(Ordering::Relaxed)
            && madvise_range(start, len, Advice::HugePages).is_ok();
        #[cfg(not(target_os = "linux"))]
        let at_fault = {
            let _ = fresh;
            false
        };
        let state = JobState { advised: at_fault, finished: at_fault, ..JobState::default() };
        let job = Arc::new(Self {
            start,
            len,
            state: Mutex::new(state),
            #[cfg(test)]
            finished: std::sync::Condvar::new(),
        });
        if at_fault {
            ADVISED_AT_FAULT_BYTES.fetch_add(len as u64, Ordering::Relaxed);
        } else if !to_mover(Msg::Job(Arc::clone(&job))) {
            return None;
        }
        lock(&LIVE_JOBS).insert(words.as_ptr() as usize, Arc::clone(&job));
        Some(job)
    }

    /// The job of the live segment `words`, if it was handed to the thread ([`HugeJob::start`]).
    pub(super) fn of(words: &[u64]) -> Option<Arc<Self>> {
        if words.len() * 8 < HUGE_PAGES_MIN_BYTES {
            return None;
        }
        lock(&LIVE_JOBS).get(&(words.as_ptr() as usize)).cloned()
    }

    /// Takes the job of the segment `words` out of the table, before the segment is freed.
    pub(super) fn take(words: &[u64]) -> Option<Arc<Self>> {
        if words.len() * 8 < HUGE_PAGES_MIN_BYTES {
            return None;
        }
        lock(&LIVE_JOBS).remove(&(words.as_ptr() as usize))
    }

    /// Stops the thread from touching the range again (waiting for a step in progress), and
    /// withdraws any `MADV_HUGEPAGE` advice: the segment is about to be freed.
    pub(super) fn release(&self) {
        let mut state = lock(&self.state);
        state.released = true;
        #[cfg(target_os = "linux")]
        if state.advised {
            let _ = madvise_range(self.start, self.len, Advice::NoHugePages);
            state.advised = false;
        }
    }

    /// One look at the job by the thread: `true` when it is finished with it (moved, given to
    /// khugepaged, given up, or released), `false` to look again later (not yet in use).
    #[cfg(target_os = "linux")]
    pub(super) fn step(&self, page: usize, quiet: bool) -> bool {
        // In use: at least 7/8 of its pages resident, and the process no longer faulting pages
        // in fast (`quiet`). Until then a collapse (which holds the process' memory map lock
        // while it copies) would stall those faults. Counted in bounded pieces, each under the
        // lock.
        const PIECE: usize = 64 << 20;
        let mut resident = 0;
        for off in (0..self.len).step_by(PIECE) {
            let state = lock(&self.state);
            if state.released {
                return true;
            }
            match resident_pages(self.start + off, PIECE.min(self.len - off), page) {
                Some(n) => resident += n,
                None => return true,
            }
        }
        let pages = self.len / page;
        if resident < pages - pages / 8 || !quiet {
            return false;
        }
        for off in (0..self.len).step_by(HUGE_PAGE_BYTES) {
            if off > 0 {
                pause();
            }
            if COLLAPSE_HELD.load(Ordering::Relaxed) {
                // A load began: look again when it ends (ranges already moved are skipped
                // quickly then: the kernel finds them huge).
                return false;
            }
            let mut state = lock(&self.state);
            if state.released {
                return true;
            }
            let began = std::time::Instant::now();
            let mut collapsed = madvise_range(self.start + off, HUGE_PAGE_BYTES, Advice::Collapse);
            // EAGAIN and EBUSY are transient refusals (a page of the range locked, on a per-CPU
            // LRU list not yet drained, or faulting in while the kernel scanned it; the memory
            // cgroup unable to charge a huge page right now): try again, a few times, after the
            // usual rest, with the job's lock released meanwhile.
            let mut tries = 1;
            while matches!(collapsed, Err(EAGAIN | EBUSY)) && tries < COLLAPSE_TRIES {
                drop(state);
                LAST_STEP.with(|t| t.set(began.elapsed()));
                pause();
                state = lock(&self.state);
                if state.released {
                    return true;
                }
                collapsed = madvise_range(self.start + off, HUGE_PAGE_BYTES, Advice::Collapse);
                tries += 1;
            }
            LAST_STEP.with(|t| t.set(began.elapsed()));
            match collapsed {
                Ok(()) => {
                    MOVED_BYTES.fetch_add(HUGE_PAGE_BYTES as u64, Ordering::Relaxed);
                    state.moved += HUGE_PAGE_BYTES;
                }
                // EINVAL on the first range: no MADV_COLLAPSE (Linux before 6.1). Advise the
                // segment instead; khugepaged moves it, more slowly.
                Err(22) if off == 0 => {
                    state.advised = madvise_range(self.start, self.len, Advice::HugePages).is_ok();
                    return true;
                }
                // No huge page to be had now (ENOMEM, or a transient refusal after every try):
                // this range stays in 4 KiB pages.
                Err(_) => {
                    REFUSED_BYTES.fetch_add(HUGE_PAGE_BYTES as u64, Ordering::Relaxed);
                }
            }
        }
        true
    }
}

/// `EAGAIN` and `EBUSY`: MADV_COLLAPSE refused a range for a transient reason.
#[cfg(target_os = "linux")]
const EAGAIN: i32 = 11;
#[cfg(target_os = "linux")]
const EBUSY: i32 = 16;

/// How many times the thread asks MADV_COLLAPSE for one 2 MiB range that it refuses with
/// `EAGAIN` or `EBUSY` before leaving the range in 4 KiB pages.
#[cfg(target_os = "linux")]
const COLLAPSE_TRIES: u32 = 4;

thread_local! {
    /// How long the huge-page thread's last collapse took.
    static LAST_STEP: std::cell::Cell<std::time::Duration> = const { std::cell::Cell::new(std::time::Duration::ZERO) };
}

/// Between two 2 MiB collapses the thread rests seven times as long as the last one took (at
/// most 200 ms): a collapse holds back every access to its range until the copy is done (and
/// the process' page faults, for the memory map lock), so while it runs, a busy filter's
/// commands wait — every batch probes every 2 MiB of a large filter. Working one eighth of the
/// time bounds that cost to about an eighth of the time a collapse runs; a GiB takes 8× its
/// collapse time to move (measured: seconds where a huge page is cheap to get, about a minute
/// on a VM where it costs milliseconds).
#[cfg(target_os = "linux")]
pub(super) fn pause() {
    let last = LAST_STEP.with(|t| t.get());
    std::thread::sleep((last * 7).min(std::time::Duration::from_millis(200)));
}

/// Whether the huge-page thread waits (while the server loads its data: collapses would
/// compete with the loader for the CPU and for the process' page tables, and make the load
/// slower).
pub(super) static COLLAPSE_HELD: AtomicBool = AtomicBool::new(false);

/// Holds the huge-page thread back (`true`, when the server starts loading its data) or lets
/// it run, with everything queued meanwhile (`false`, when loading ends).
pub fn hold_background_collapse(hold: bool) {
    COLLAPSE_HELD.store(hold, Ordering::Relaxed);
    if !hold {
        to_mover(Msg::Release);
    }
}

/// A message to the huge-page thread.
pub(super) enum Msg {
    /// A new segment to move.
    Job(Arc<HugeJob>),
    /// The thread is no longer held: look at the queued jobs.
    Release,
}

/// Sends to the huge-page thread, started on first use; whether it could be sent (the thread
/// runs). Off Linux there is no thread.
pub(super) fn to_mover(msg: Msg) -> bool {
    #[cfg(target_os = "linux")]
    {
        use std::sync::mpsc::{Sender, channel};
        static WORKER: OnceLock<Option<Mutex<Sender<Msg>>>> = OnceLock::new();
        let worker = WORKER.get_or_init(|| {
            let (tx, rx) = channel::<Msg>();
            let spawned =
                std::thread::Builder::new().name("bf-hugepages".into()).spawn(move || mover(rx));
            spawned.ok().map(|_| Mutex::new(tx))
        });
        let Some(tx) = worker else { return false };
        let is_job = matches!(msg, Msg::Job(_));
        if is_job {
            JOBS_WAITING.fetch_add(1, Ordering::Relaxed);
        }
        let sent = tx.lock().unwrap_or_else(|e| e.into_inner()).send(msg).is_ok();
        if is_job && !sent {
            JOBS_WAITING.fetch_sub(1, Ordering::Relaxed);
        }
        sent
    }
    #[cfg(not(target_os = "linux"))]
    {
        let _ = msg;
        false
    }
}

/// The huge-page thread: keeps the jobs it was sent, and looks at each when due — first soon,
/// then less and less often (up to every 2 s) while its segment is not yet in use.
#[cfg(target_os = "linux")]
pub(super) fn mover(rx: std::sync::mpsc::Receiver<Msg>) {
    use std::sync::mpsc::RecvTimeoutError;
    use std::time::{Duration, Instant};
    const FIRST: Duration = Duration::from_millis(50);
    const LONGEST: Duration = Duration::from_secs(2);
    struct Queued {
        job: Arc<HugeJob>,
        due: Instant,
        wait: Duration,
    }
    let page = page_size();
    let mut queued: Vec<Queued> = Vec::new();
    let mut last_rss = 0;
    loop {
        let held = COLLAPSE_HELD.load(Ordering::Relaxed);
        let msg = match queued.iter().map(|q| q.due).min() {
            Some(due) if !held => {
                match rx.recv_timeout(due.saturating_duration_since(Instant::now())) {
                    Ok(msg) => Some(msg),
                    Err(RecvTimeoutError::Timeout) => None,
                    Err(RecvTimeoutError::Disconnected) => return,
                }
            }
            _ => match rx.recv() {
                Ok(msg) => Some(msg),
                Err(_) => return,
            },
        };
        if let Some(Msg::Job(job)) = msg {
            queued.push(Queued { job, due: Instant::now() + FIRST, wait: FIRST });
        }
        if COLLAPSE_HELD.load(Ordering::Relaxed) {
            continue;
        }
        let now = Instant::now();
        let quiet = rss_quiet(&mut last_rss);
        queued.retain_mut(|q| {
            if q.due > now && !q.job.is_released() {
                return true;
            }
            if q.job.step(page, quiet) {
                q.job.finish();
                JOBS_WAITING.fetch_sub(1, Ordering::Relaxed);
                return false;
            }
            q.wait = (q.wait * 2).min(LONGEST);
            q.due = Instant::now() + q.wait;
            true
        });
    }
}

/// Whether the process' resident memory grew by less than 4 MiB since the last look (`statm`):
/// while it grows fast, something is faulting pages in (a first pass over a new filter, a
/// `BF.LOADCHUNK` restore), and a collapse would hold the memory map lock those faults need.
/// The thread waits for that to settle. `true` where it cannot tell.
#[cfg(target_os = "linux")]
pub(super) fn rss_quiet(last: &mut u64) -> bool {
    let Some(pages) = std::fs::read_to_string("/proc/self/statm")
        .ok()
        .and_then(|s| s.split_whitespace().nth(1).and_then(|r| r.parse::<u64>().ok()))
    else {
        return true;
    };
    let bytes = pages.saturating_mul(page_size() as u64);
    let quiet = bytes < last.saturating_add(4 << 20);
    *last = bytes;
    quiet
}

impl HugeJob {
    /// Marks the job finished (the thread no longer looks at it).
    #[cfg(target_os = "linux")]
    pub(super) fn finish(&self) {
        lock(&self.state).finished = true;
        #[cfg(test)]
        self.finished.notify_all();
    }

    /// Waits until the thread is finished with the job; `(bytes collapsed, advised)`.
    #[cfg(test)]
    pub(super) fn wait_finished(&self) -> (usize, bool) {
        let mut state = lock(&self.state);
        while !state.finished {
            state = self.finished.wait(state).unwrap_or_else(|e| e.into_inner());
        }
        (state.moved, state.advised)
    }

    /// Whether the range is advised `MADV_HUGEPAGE` now.
    #[cfg(test)]
    pub(super) fn is_advised(&self) -> bool {
        lock(&self.state).advised
    }

    /// Whether the segment was freed (the thread then drops the job at once).
    #[cfg(target_os = "linux")]
    pub(super) fn is_released(&self) -> bool {
        lock(&self.state).released
    }
}
