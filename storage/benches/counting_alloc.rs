//! A counting wrapper around the system allocator, shared by the benches that report
//! allocations (this crate's `trie_commit` and the root crate's `call_allocs`, which includes
//! this file by path). Implementing `GlobalAlloc` needs `unsafe`: the workspace denies it, and
//! this file alone allows it.

#![allow(unsafe_code)]

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

/// The system allocator, counting allocation calls and bytes requested per thread (a `realloc`
/// counts as one allocation of its new size: it may move the block).
///
/// Per thread, because sled's background threads allocate at any time: the figures are what
/// the measuring thread itself allocated.
struct Counting;

thread_local! {
    // `const` initialisers with no destructor: reading them never allocates, which an
    // allocator's bookkeeping must not do.
    static ALLOCS: Cell<u64> = const { Cell::new(0) };
    static BYTES: Cell<u64> = const { Cell::new(0) };
}

/// Every thread's allocations together, for the benches that measure a whole node (a request
/// crosses the RPC worker, an executor thread, the state actor...). Only summed when
/// `PROCESS_WIDE` is on, so the per-thread figures pay no shared atomic.
static ALL_ALLOCS: AtomicU64 = AtomicU64::new(0);
static ALL_BYTES: AtomicU64 = AtomicU64::new(0);
static PROCESS_WIDE: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// Counts one allocation of `size` bytes on this thread (nothing during thread teardown,
/// when the counters may be gone), and process-wide when that is on.
fn count(size: usize) {
    let _ = ALLOCS.try_with(|n| n.set(n.get() + 1));
    let _ = BYTES.try_with(|n| n.set(n.get() + size as u64));
    if PROCESS_WIDE.load(Relaxed) {
        ALL_ALLOCS.fetch_add(1, Relaxed);
        ALL_BYTES.fetch_add(size as u64, Relaxed);
    }
}

// SAFETY: every method forwards to `System` with the caller's arguments unchanged, so it keeps
// `System`'s guarantees; the counters are plain thread-local cells and never allocate.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        count(layout.size());
        // SAFETY: forwarded unchanged; the caller upholds `alloc`'s contract.
        unsafe { System.alloc(layout) }
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        count(layout.size());
        // SAFETY: forwarded unchanged; the caller upholds `alloc_zeroed`'s contract.
        unsafe { System.alloc_zeroed(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: forwarded unchanged; `ptr` came from `System` through this wrapper.
        unsafe { System.dealloc(ptr, layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        count(new_size);
        // SAFETY: forwarded unchanged; `ptr` came from `System` through this wrapper.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

/// Allocation calls and bytes so far on this thread.
pub(crate) fn allocated() -> (u64, u64) {
    (ALLOCS.with(Cell::get), BYTES.with(Cell::get))
}

/// Allocation calls and bytes so far on every thread, counted from the first call on (the
/// root crate's `call_allocs` measures a whole node with it; `trie_commit` does not).
#[allow(dead_code)]
pub(crate) fn allocated_everywhere() -> (u64, u64) {
    PROCESS_WIDE.store(true, Relaxed);
    (ALL_ALLOCS.load(Relaxed), ALL_BYTES.load(Relaxed))
}
