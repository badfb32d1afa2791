//! Admission to the executor pool by latency budget.
//!
//! Owns the policy that `ExecutorClient` applies before it sends a call to an executor thread:
//! a call is admitted while the wait it is expected to spend queued on its thread (the requests
//! ahead of it times the thread's measured service time) is within `--executor.max-queue-delay`,
//! and while the pool holds fewer than `--executor.max-queued` waiting requests; otherwise it is
//! refused at once (-32005), before any executor work. Concurrency alone never refuses: eight
//! closed-loop clients of a 1 ms call queue for a few ms and are all served, while an open-loop
//! overload fills the queues up to the budget and the rest is shed in microseconds.
//!
//! Everything here is plain data and arithmetic on durations the caller measured, so the policy
//! is tested with synthetic service times and no clock. The measurements themselves (the
//! moving average of service time, the queue-delay histogram) are written only by the executor
//! thread that owns them and read by anyone.

use std::sync::atomic::Ordering::Relaxed;
use std::sync::atomic::{AtomicU64, AtomicUsize};
use std::time::Duration;

use crossbeam_utils::CachePadded;

/// Default `--executor.max-queue-delay`: a call is admitted while it is expected to wait at
/// most this long for its executor thread.
pub const DEFAULT_MAX_QUEUE_DELAY: Duration = Duration::from_millis(100);

/// Default `--executor.max-queued`: most requests waiting for an executor thread, pool-wide.
/// It only bounds memory: below it the latency budget decides. 1,024 holds every caller of a
/// 64-connection closed loop 16 times over, and even the cheapest call (a balance read,
/// ~20 µs) fills it only at ~10 ms of queued work on two threads, so the budget stays the rule;
/// a queued eth_call holds its decoded request (a few hundred bytes to a few KiB typically).
pub const DEFAULT_MAX_QUEUED: usize = 1024;

/// Largest `--executor.max-queue-delay`: beyond it a wait is a stall, not a queue.
pub const MAX_QUEUE_DELAY: Duration = Duration::from_secs(10);

/// Largest `--executor.max-queued`: each waiting request is a message in a mailbox.
pub const MAX_QUEUED: usize = 1 << 20;

/// Weight of a new sample in the service time's moving average: 1/8, so about 8 calls move
/// it most of the way to a new level, and one outlier moves it by an eighth.
const EWMA_SHIFT: u32 = 3;

/// What admission allows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AdmissionLimits {
    /// Longest expected queueing delay a call is admitted with; zero admits only a call that
    /// finds its executor thread idle.
    pub max_queue_delay: Duration,
    /// Most requests waiting for an executor thread over the whole pool (those running not
    /// counted).
    pub max_queued: usize,
}

impl Default for AdmissionLimits {
    fn default() -> Self {
        Self { max_queue_delay: DEFAULT_MAX_QUEUE_DELAY, max_queued: DEFAULT_MAX_QUEUED }
    }
}

/// Why a call was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum Refusal {
    /// Its expected wait was over the budget.
    #[error(
        "expected queueing delay {}us is over --executor.max-queue-delay {}us",
        expected.as_micros(),
        budget.as_micros()
    )]
    QueueDelay {
        /// The wait it was expected to have.
        expected: Duration,
        /// `--executor.max-queue-delay`.
        budget: Duration,
    },
    /// The pool already held `--executor.max-queued` waiting requests.
    #[error("{max_queued} requests are already queued (--executor.max-queued)")]
    QueueFull {
        /// `--executor.max-queued`.
        max_queued: usize,
    },
}

impl Refusal {
    /// Every reason, in the order [`index`](Self::index) numbers them, with its metric label.
    pub const REASONS: [&'static str; 2] = ["queue_delay", "queue_full"];

    /// Position of this reason in [`REASONS`](Self::REASONS).
    pub const fn index(&self) -> usize {
        match self {
            Self::QueueDelay { .. } => 0,
            Self::QueueFull { .. } => 1,
        }
    }
}

/// The wait of a call queued behind `ahead` requests on a thread that serves one per
/// `service`: all of those must finish first. The one running may be partly done; counting
/// it whole errs towards refusing early rather than admitting a call that waits too long.
pub fn expected_wait(ahead: usize, service: Duration) -> Duration {
    service.saturating_mul(u32::try_from(ahead).unwrap_or(u32::MAX))
}

/// Decides for a call that would queue behind `ahead` requests (queued or running) on the
/// executor thread it would go to, whose calls take `service` each (`None` until one has
/// run) and whose answers have lately come back up to `overshoot` later than estimated
/// ([`Overshoot`]). A call that finds its thread idle always goes in; with a zero budget
/// nothing else does; otherwise it goes in while its expected wait (`ahead` services plus the
/// overshoot) is within the budget. Until a service time is known nothing but the queue cap
/// limits the queue: a node that has just started has not measured anything to refuse by.
pub fn decide(
    limits: AdmissionLimits,
    ahead: usize,
    service: Option<Duration>,
    overshoot: Duration,
) -> Result<(), Refusal> {
    if ahead == 0 {
        return Ok(());
    }
    let budget = limits.max_queue_delay;
    let expected = service
        .map_or(Duration::ZERO, |service| expected_wait(ahead, service).saturating_add(overshoot));
    if budget.is_zero() || expected > budget {
        return Err(Refusal::QueueDelay { expected, budget });
    }
    Ok(())
}

/// The next value of a moving average of nanoseconds after `sample`; the first sample (while
/// the average is 0) is taken whole.
pub const fn ewma(average: u64, sample: u64) -> u64 {
    if average == 0 {
        // Zero means "none yet", so a 0 ns sample must not leave it there forever.
        if sample == 0 { 1 } else { sample }
    } else {
        average - (average >> EWMA_SHIFT) + (sample >> EWMA_SHIFT)
    }
}

/// One executor thread's service time per call: a moving average written by that thread as
/// each call finishes, read by admission on any thread.
#[derive(Debug, Default)]
pub struct ServiceTime(CachePadded<AtomicU64>);

impl ServiceTime {
    /// Folds in one call that ran for `took`. Called from one thread only (the executor's),
    /// so a load and a store cannot lose an update.
    pub fn record(&self, took: Duration) {
        let sample = u64::try_from(took.as_nanos()).unwrap_or(u64::MAX);
        self.0.store(ewma(self.0.load(Relaxed), sample), Relaxed);
    }

    /// The average, or `None` before the first call.
    pub fn get(&self) -> Option<Duration> {
        match self.0.load(Relaxed) {
            0 => None,
            nanos => Some(Duration::from_nanos(nanos)),
        }
    }
}

/// How much later than estimated one executor thread's calls have lately come back to their
/// callers: an upper envelope of (time from admission to answer) minus (the wait estimated at
/// admission plus one service time), written by the callers as answers arrive.
///
/// The estimate counts the calls ahead at their average run time; what it misses shows here:
/// the thread preempted between and during calls (executors run at a lower priority than the
/// RPC front), a service time that rose after the call was admitted, the answer waiting for a
/// busy RPC worker to pick it up. Under a 3x overload, with the run time as the only estimate,
/// admitted calls' queue waits reached 150-250 ms at p99 against the 100 ms budget
/// (BENCHMARKS.md). The envelope rises a quarter of the way
/// to a larger sample and falls 1/64 of the way to a smaller one, so it follows the slow tail
/// (about the 95th percentile) rather than the mean, and decays within ~100 calls once
/// answers come back on time.
#[derive(Debug, Default)]
pub struct Overshoot(CachePadded<AtomicU64>);

impl Overshoot {
    /// Folds in one answer that came back `late` after its estimate (zero when on time).
    pub fn record(&self, late: Duration) {
        let sample = u64::try_from(late.as_nanos()).unwrap_or(u64::MAX);
        // Callers on several RPC workers record at once: an update lost to a race only delays
        // the envelope by one sample, but fetch_update loses none.
        let _ = self.0.fetch_update(Relaxed, Relaxed, |now| Some(envelope(now, sample)));
    }

    /// The envelope now.
    pub fn get(&self) -> Duration {
        Duration::from_nanos(self.0.load(Relaxed))
    }
}

/// The next value of [`Overshoot`]'s envelope after `sample` (nanoseconds).
pub const fn envelope(now: u64, sample: u64) -> u64 {
    if sample > now { now + (sample - now) / 4 } else { now - (now - sample) / 64 }
}

/// Upper bounds of the queue-delay histogram's buckets, in microseconds: from a wake-up's
/// worth to past the default budget.
pub const QUEUE_DELAY_BUCKETS_MICROS: [u64; 14] = [
    50, 100, 250, 500, 1_000, 2_500, 5_000, 10_000, 25_000, 50_000, 100_000, 150_000, 250_000,
    1_000_000,
];

/// How long calls waited on one executor thread before they ran. Written by that thread only,
/// read by `/metrics`.
#[derive(Debug, Default)]
pub struct DelayHistogram {
    /// Calls per bucket (not cumulative); the last one is everything above the largest bound.
    buckets: [AtomicU64; QUEUE_DELAY_BUCKETS_MICROS.len() + 1],
    /// Total delay, in nanoseconds.
    sum_nanos: AtomicU64,
}

impl DelayHistogram {
    /// Counts one call that waited `delay`.
    pub fn record(&self, delay: Duration) {
        let micros = u64::try_from(delay.as_micros()).unwrap_or(u64::MAX);
        let bucket = QUEUE_DELAY_BUCKETS_MICROS
            .iter()
            .position(|&bound| micros <= bound)
            .unwrap_or(QUEUE_DELAY_BUCKETS_MICROS.len());
        self.buckets[bucket].fetch_add(1, Relaxed);
        let nanos = u64::try_from(delay.as_nanos()).unwrap_or(u64::MAX);
        self.sum_nanos.fetch_add(nanos, Relaxed);
    }

    /// Adds this histogram's counts into `into`.
    pub fn add_to(&self, into: &mut DelaySummary) {
        for (total, bucket) in into.buckets.iter_mut().zip(&self.buckets) {
            *total += bucket.load(Relaxed);
        }
        into.sum += Duration::from_nanos(self.sum_nanos.load(Relaxed));
    }
}

/// Queue delays summed over the pool, for `/metrics`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DelaySummary {
    /// Calls per bucket of [`QUEUE_DELAY_BUCKETS_MICROS`], not cumulative; the last one is
    /// everything above the largest bound.
    pub buckets: [u64; QUEUE_DELAY_BUCKETS_MICROS.len() + 1],
    /// Total delay.
    pub sum: Duration,
}

impl DelaySummary {
    /// Calls counted.
    pub fn count(&self) -> u64 {
        self.buckets.iter().sum()
    }
}

/// Requests in the pool (waiting or running), capped: taking a place fails once the pool holds
/// `cap`. Touched by every admitted request, so it sits on its own cache line.
#[derive(Debug, Default)]
pub struct PoolCount(CachePadded<AtomicUsize>);

impl PoolCount {
    /// Takes a place if fewer than `cap` are taken; `false` when none was free.
    pub fn try_enter(&self, cap: usize) -> bool {
        self.0.fetch_update(Relaxed, Relaxed, |n| (n < cap).then_some(n + 1)).is_ok()
    }

    /// Takes a place whatever the cap (block building, which must not be refused).
    pub fn enter(&self) {
        self.0.fetch_add(1, Relaxed);
    }

    /// Gives a place back.
    pub fn leave(&self) {
        self.0.fetch_sub(1, Relaxed);
    }

    /// Places taken now.
    pub fn get(&self) -> usize {
        self.0.load(Relaxed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: Duration = Duration::from_millis(1);

    fn limits(budget: Duration) -> AdmissionLimits {
        AdmissionLimits { max_queue_delay: budget, ..AdmissionLimits::default() }
    }

    #[test]
    fn an_idle_thread_always_admits() {
        assert_eq!(decide(limits(Duration::ZERO), 0, Some(MS * 500), Duration::ZERO), Ok(()));
        assert_eq!(decide(limits(100 * MS), 0, None, Duration::ZERO), Ok(()));
    }

    #[test]
    fn closed_loop_clients_below_capacity_queue_within_the_budget() {
        // 64 closed-loop clients of a 1 ms call on two threads: at most 31 ahead on a thread.
        assert_eq!(decide(limits(100 * MS), 31, Some(MS), Duration::ZERO), Ok(()));
        // A cheap call (20 us) admits hundreds ahead.
        assert_eq!(
            decide(limits(100 * MS), 4_000, Some(Duration::from_micros(20)), Duration::ZERO),
            Ok(())
        );
    }

    #[test]
    fn a_call_expected_to_wait_past_the_budget_is_refused_with_its_estimate() {
        assert_eq!(
            decide(limits(100 * MS), 100, Some(MS), Duration::ZERO),
            Ok(()),
            "exactly the budget"
        );
        assert_eq!(
            decide(limits(100 * MS), 101, Some(MS), Duration::ZERO),
            Err(Refusal::QueueDelay { expected: 101 * MS, budget: 100 * MS })
        );
        // A 10 ms call: the eleventh in line is refused.
        assert!(decide(limits(100 * MS), 10, Some(10 * MS), Duration::ZERO).is_ok());
        assert!(decide(limits(100 * MS), 11, Some(10 * MS), Duration::ZERO).is_err());
    }

    #[test]
    fn the_overshoot_counts_against_the_budget_but_never_refuses_an_idle_thread() {
        // 60 ahead of a 1 ms call: 60 ms, within; with answers lately 50 ms late, 110 ms.
        assert!(decide(limits(100 * MS), 60, Some(MS), 40 * MS).is_ok());
        assert_eq!(
            decide(limits(100 * MS), 60, Some(MS), 50 * MS),
            Err(Refusal::QueueDelay { expected: 110 * MS, budget: 100 * MS })
        );
        assert!(decide(limits(100 * MS), 0, Some(MS), Duration::from_secs(5)).is_ok());
    }

    #[test]
    fn the_overshoot_envelope_rises_fast_and_falls_slowly() {
        assert_eq!(envelope(0, 400), 100, "a quarter of the way up");
        assert_eq!(envelope(6_400, 0), 6_300, "1/64 of the way down");
        let overshoot = Overshoot::default();
        for _ in 0..20 {
            overshoot.record(50 * MS);
        }
        assert!(overshoot.get() > 49 * MS, "{:?}", overshoot.get());
        // About 100 answers on time take it most of the way back down.
        for _ in 0..150 {
            overshoot.record(Duration::ZERO);
        }
        assert!(overshoot.get() < 5 * MS, "{:?}", overshoot.get());
    }

    #[test]
    fn a_zero_budget_refuses_whenever_the_thread_is_taken() {
        let refused = decide(limits(Duration::ZERO), 1, None, Duration::ZERO);
        assert_eq!(
            refused,
            Err(Refusal::QueueDelay { expected: Duration::ZERO, budget: Duration::ZERO })
        );
        assert!(
            decide(limits(Duration::ZERO), 1, Some(Duration::from_nanos(1)), Duration::ZERO)
                .is_err()
        );
    }

    #[test]
    fn nothing_measured_yet_refuses_nothing_the_cap_allows() {
        assert_eq!(decide(limits(MS), 1_000, None, Duration::ZERO), Ok(()));
    }

    #[test]
    fn the_expected_wait_saturates_instead_of_overflowing() {
        assert_eq!(expected_wait(usize::MAX, Duration::MAX), Duration::MAX);
        assert!(
            decide(
                limits(MAX_QUEUE_DELAY),
                usize::MAX,
                Some(Duration::from_secs(1)),
                Duration::ZERO
            )
            .is_err()
        );
    }

    #[test]
    fn the_moving_average_starts_at_the_first_sample_and_moves_an_eighth_per_sample() {
        assert_eq!(ewma(0, 800), 800);
        assert_eq!(ewma(0, 0), 1, "zero stays 'none yet' only until a sample");
        assert_eq!(ewma(800, 1_600), 900);
        assert_eq!(ewma(800, 0), 700);
        // A level change: about 20 samples move it 95% of the way.
        let mut average = ewma(0, 1_000);
        for _ in 0..24 {
            average = ewma(average, 10_000);
        }
        assert!((9_500..=10_000).contains(&average), "{average}");
    }

    #[test]
    fn a_service_time_is_none_until_a_call_ran() {
        let service = ServiceTime::default();
        assert_eq!(service.get(), None);
        service.record(Duration::from_micros(800));
        assert_eq!(service.get(), Some(Duration::from_micros(800)));
        service.record(Duration::from_micros(1_600));
        assert_eq!(service.get(), Some(Duration::from_micros(900)));
    }

    #[test]
    fn queue_delays_land_in_their_buckets() {
        let histogram = DelayHistogram::default();
        histogram.record(Duration::ZERO);
        histogram.record(Duration::from_micros(50));
        histogram.record(Duration::from_micros(51));
        histogram.record(100 * MS);
        histogram.record(Duration::from_secs(5));
        let mut summary = DelaySummary::default();
        histogram.add_to(&mut summary);
        histogram.add_to(&mut summary);
        assert_eq!(summary.count(), 10);
        assert_eq!(summary.buckets[0], 4, "0 and 50 us, twice");
        assert_eq!(summary.buckets[1], 2, "51 us");
        assert_eq!(summary.buckets[10], 2, "100 ms is in the 100 ms bucket");
        assert_eq!(summary.buckets[QUEUE_DELAY_BUCKETS_MICROS.len()], 2, "past the last bound");
        assert_eq!(
            summary.sum,
            2 * (Duration::from_micros(101) + 100 * MS + Duration::from_secs(5))
        );
    }

    #[test]
    fn the_pool_count_holds_its_cap_but_block_building_passes() {
        let count = PoolCount::default();
        assert!(count.try_enter(2));
        assert!(count.try_enter(2));
        assert!(!count.try_enter(2), "full");
        count.enter();
        assert_eq!(count.get(), 3);
        count.leave();
        count.leave();
        assert!(!count.try_enter(1));
        assert!(count.try_enter(2));
    }

    #[test]
    fn refusals_name_their_reason_and_what_to_change() {
        let delay = Refusal::QueueDelay { expected: 150 * MS, budget: 100 * MS };
        assert_eq!(Refusal::REASONS[delay.index()], "queue_delay");
        assert_eq!(
            delay.to_string(),
            "expected queueing delay 150000us is over --executor.max-queue-delay 100000us"
        );
        let full = Refusal::QueueFull { max_queued: 1024 };
        assert_eq!(Refusal::REASONS[full.index()], "queue_full");
        assert_eq!(full.to_string(), "1024 requests are already queued (--executor.max-queued)");
    }
}
