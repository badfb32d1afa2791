//! The places Hearth tunes the operating system, each a C call or two: glibc's malloc (its
//! mmap threshold, for memory; its arena count, for threads that allocate at once) and the
//! executor threads' scheduling priority (latency of shedding). The workspace denies
//! `unsafe`; these functions allow it for those calls.

/// How much lower the executor threads' priority is than the rest of the node (a nice value).
///
/// Executors are CPU-bound; the RPC front and the actors are short bursts. When the executors
/// fill every core, an RPC worker at equal priority waits for its time slice behind them, and a
/// call that should be refused at once (-32005) waited tens of ms for that slice. A nice of 5
/// gives a waiting RPC worker about three times an executor's share, so admission and shedding
/// stay fast, while executors still get the cores whenever the front is idle.
pub const EXECUTOR_NICE: i32 = 5;

/// Fewest malloc arenas allowed (glibc's own cap is 8 per core): one per thread the node runs
/// at once, with room for a big block's scoped threads.
pub const MIN_MALLOC_ARENAS: usize = 64;

/// Tunes glibc's malloc, once, before any thread starts.
///
/// - Every allocation of 128 KiB or more goes straight back to the kernel. By default glibc
///   raises its mmap threshold to the size of the largest block freed so far (up to 32 MiB):
///   after one multi-megabyte block encoding is freed, every later 100-200 KB buffer (a large
///   transaction, its JSON body) comes from the heap arenas, whose freed space is rarely
///   returned. Under sustained ingest of large transactions that kept ~120 MiB of freed memory
///   resident (BENCHMARKS.md, sustained ingest). A fixed threshold stops that.
/// - Each thread may have an arena of its own ([`MIN_MALLOC_ARENAS`]). Past its cap (16 arenas
///   on 2 cores) glibc hands a new thread an arena another thread uses, and the node runs 16
///   threads when idle, before a block's scoped threads (helpers, the roots' and the state
///   commit's lanes) start: a commit's lane thread drew its caller's arena, and the two took
///   turns on its lock. The state root of a 2,000-transfer block took 25.5 ms against 10.9 ms
///   with an arena each, and which thread drew the shared arena depended on how many had
///   started before, so `--exec.parallel auto` mined that block 0.75x as fast as `never`
///   (BENCHMARKS.md, session 10). A cap set in the environment (`MALLOC_ARENA_MAX`, or
///   `glibc.malloc.arena_max` in `GLIBC_TUNABLES`, as a container bounding memory sets it) is
///   kept.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
#[allow(unsafe_code)]
pub fn tune_malloc() {
    const M_MMAP_THRESHOLD: std::ffi::c_int = -3;
    const M_ARENA_MAX: std::ffi::c_int = -8;
    unsafe extern "C" {
        fn mallopt(param: std::ffi::c_int, value: std::ffi::c_int) -> std::ffi::c_int;
    }
    // SAFETY: mallopt only sets a tuning parameter of the C allocator; it is called before any
    // thread is started, with a valid parameter and value.
    unsafe {
        mallopt(M_MMAP_THRESHOLD, 128 * 1024);
    }
    let capped_by_env = std::env::var_os("MALLOC_ARENA_MAX").is_some()
        || std::env::var("GLIBC_TUNABLES").is_ok_and(|t| t.contains("malloc.arena_max"));
    if capped_by_env {
        return;
    }
    let cores = std::thread::available_parallelism().map_or(1, std::num::NonZeroUsize::get);
    let arenas = std::ffi::c_int::try_from(cores.saturating_mul(8).max(MIN_MALLOC_ARENAS))
        .unwrap_or(std::ffi::c_int::MAX);
    // SAFETY: as above.
    unsafe {
        mallopt(M_ARENA_MAX, arenas);
    }
}

/// Elsewhere the C allocator is left as it is.
#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
pub fn tune_malloc() {}

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
