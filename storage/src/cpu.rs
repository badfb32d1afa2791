//! Keeping a thread that shares its caller's work off the caller's core.
//!
//! A parallel block's helpers, the roots' hashing threads, the state commit's lanes and the
//! sender recovery each split one job between the calling thread and a few scoped threads.
//! Such a thread is only worth anything on another core: on the caller's, it takes the
//! caller's time slices, and the job runs slower than on the caller alone. Yet a new thread
//! is often placed on its parent's core, and waits there (4 ms slices) until the load balancer
//! moves it: on this project's 2-vCPU virtual machines (whose kernel is booted with
//! `sched_vcpu_pack`) a third of a big block's helpers ran a handful of transactions before
//! the block was done (BENCHMARKS.md, sessions 8 and 9). So each such thread starts by
//! leaving the caller's core out of the cores it may run on. Nothing else changes: the caller
//! is not pinned, the thread may use every other core the process may, and a process that may
//! use one core only is left alone. The restriction ends with the thread.
//!
//! Two C calls (`sched_getcpu`, `sched_setaffinity`), on 64-bit Linux; elsewhere nothing
//! happens.

/// The core a thread ran on when it split its work, for the threads it starts to avoid.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CallerCpu(Option<usize>);

impl CallerCpu {
    /// The calling thread's core now (none when the system does not say).
    pub fn now() -> Self {
        Self(imp::current())
    }

    /// Keeps the calling thread (one the caller started) off the caller's core, when the
    /// process may run on another. Best effort: a refusal (a sandbox) changes nothing.
    pub fn avoid(self) {
        if let Some(cpu) = self.0 {
            imp::avoid(cpu);
        }
    }

    /// Called by the caller once it started its threads: a new thread placed on the caller's
    /// core can only move off it ([`avoid`](Self::avoid)) when it first runs, and without this
    /// it waits for the caller's time slice to end. One yield lets it run now: a block's
    /// helper was ready 0.4-5.2 ms after the block's board without it, 0.25-0.64 ms with it
    /// (BENCHMARKS.md, session 10).
    pub fn let_started_move(self) {
        if self.0.is_some() {
            std::thread::yield_now();
        }
    }
}

#[cfg(all(target_os = "linux", target_pointer_width = "64"))]
mod imp {
    use std::ffi::c_int;

    /// Words of a `cpu_set_t` (1,024 cores).
    const WORDS: usize = 16;

    #[allow(unsafe_code)]
    unsafe extern "C" {
        fn sched_getcpu() -> c_int;
        fn sched_getaffinity(pid: c_int, size: usize, mask: *mut u64) -> c_int;
        fn sched_setaffinity(pid: c_int, size: usize, mask: *const u64) -> c_int;
    }

    #[allow(unsafe_code)]
    pub(super) fn current() -> Option<usize> {
        // SAFETY: takes nothing, returns the core or -1.
        let cpu = unsafe { sched_getcpu() };
        usize::try_from(cpu).ok()
    }

    /// The cores the calling thread may run on.
    #[allow(unsafe_code)]
    pub(super) fn allowed() -> Option<[u64; WORDS]> {
        let mut mask = [0u64; WORDS];
        // SAFETY: `mask` is `WORDS * 8` bytes, the size passed; pid 0 is the calling thread.
        let status = unsafe { sched_getaffinity(0, WORDS * 8, mask.as_mut_ptr()) };
        (status == 0).then_some(mask)
    }

    #[allow(unsafe_code)]
    pub(super) fn avoid(cpu: usize) {
        let Some(mut mask) = allowed() else { return };
        let (word, bit) = (cpu / 64, 1u64 << (cpu % 64));
        if word >= WORDS || mask[word] & bit == 0 {
            return;
        }
        mask[word] &= !bit;
        if mask.iter().all(|w| *w == 0) {
            return;
        }
        // SAFETY: as in `allowed`; the mask only narrows the thread's own set.
        unsafe { sched_setaffinity(0, WORDS * 8, mask.as_ptr()) };
    }
}

#[cfg(not(all(target_os = "linux", target_pointer_width = "64")))]
mod imp {
    pub(super) const fn current() -> Option<usize> {
        None
    }

    pub(super) const fn avoid(_cpu: usize) {}
}

#[cfg(all(test, target_os = "linux", target_pointer_width = "64"))]
mod tests {
    use super::*;

    #[test]
    fn a_started_thread_leaves_out_its_callers_core_when_another_is_allowed() {
        let caller = CallerCpu::now();
        let Some(cpu) = caller.0 else { return };
        let before = imp::allowed().expect("the thread's cores");
        let others = before.iter().map(|w| w.count_ones()).sum::<u32>() > 1;
        let after = std::thread::scope(|s| {
            s.spawn(|| {
                caller.avoid();
                (imp::allowed().expect("the thread's cores"), imp::current())
            })
            .join()
            .expect("the thread")
        });
        let (mask, ran_on) = after;
        let has = |m: &[u64; 16], c: usize| m[c / 64] & (1 << (c % 64)) != 0;
        if others {
            assert!(!has(&mask, cpu), "core {cpu} is still allowed");
            assert_ne!(ran_on, Some(cpu));
            for c in (0..1024).filter(|&c| c != cpu) {
                assert_eq!(has(&mask, c), has(&before, c), "core {c}");
            }
        } else {
            // One core only: nothing to move to, nothing changed.
            assert_eq!(mask, before);
        }
        // The caller itself is not restricted.
        assert_eq!(imp::allowed(), Some(before));
    }
}
