//! The two places Hearth tunes the operating system, each a single C call: glibc's mmap
//! threshold (memory) and the executor threads' scheduling priority (latency of shedding).
//! The workspace denies `unsafe`; these two functions allow it for one call each.

/// How much lower the executor threads' priority is than the rest of the node (a nice value).
///
/// Executors are CPU-bound; the RPC front and the actors are short bursts. When the executors
/// fill every core, an RPC worker at equal priority waits for its time slice behind them, and a
/// call that should be refused at once (-32005) waited tens of ms for that slice. A nice of 5
/// gives a waiting RPC worker about three times an executor's share, so admission and shedding
/// stay fast, while executors still get the cores whenever the front is idle.
pub const EXECUTOR_NICE: i32 = 5;

/// Makes glibc's malloc hand every allocation of 128 KiB or more straight back to the kernel.
///
/// By default glibc raises its mmap threshold to the size of the largest block freed so far
/// (up to 32 MiB): after one multi-megabyte block encoding is freed, every later 100-200 KB
/// buffer (a large transaction, its JSON body) comes from the heap arenas, whose freed space
/// is rarely returned. Under sustained ingest of large transactions that kept ~120 MiB of
/// freed memory resident (BENCHMARKS.md, sustained ingest). A fixed threshold stops that.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
#[allow(unsafe_code)]
pub fn bound_malloc_retention() {
    const M_MMAP_THRESHOLD: std::ffi::c_int = -3;
    unsafe extern "C" {
        fn mallopt(param: std::ffi::c_int, value: std::ffi::c_int) -> std::ffi::c_int;
    }
    // SAFETY: mallopt only sets a tuning parameter of the C allocator; it is called once,
    // before any thread is started, with a valid parameter and value.
    unsafe {
        mallopt(M_MMAP_THRESHOLD, 128 * 1024);
    }
}

/// Elsewhere the C allocator is left as it is.
#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
pub fn bound_malloc_retention() {}

/// Lowers the calling thread's scheduling priority by `increment` (added to its nice value; Linux
/// keeps the nice value per thread). A failure (a sandbox that forbids it) leaves the priority
/// as it was, which only costs latency, so it is logged and otherwise ignored.
#[cfg(target_os = "linux")]
#[allow(unsafe_code)]
pub fn lower_this_thread_priority(increment: i32) {
    unsafe extern "C" {
        fn nice(inc: std::ffi::c_int) -> std::ffi::c_int;
    }
    // SAFETY: nice takes a plain integer and changes only the calling thread's nice value
    // (glibc applies it with setpriority on the calling thread).
    let now = unsafe { nice(increment) };
    // -1 is also a valid result; errno tells a refusal from it.
    let refused =
        now == -1 && matches!(std::io::Error::last_os_error().raw_os_error(), Some(1 | 13));
    if refused {
        tracing::warn!(target: "node", increment, "could not lower an executor thread's priority");
    }
}

/// Elsewhere threads keep the default priority.
#[cfg(not(target_os = "linux"))]
pub fn lower_this_thread_priority(_increment: i32) {}
