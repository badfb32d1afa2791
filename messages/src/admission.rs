//! Admission to the executor pool by latency budget.
//!
//! Owns the policy that `ExecutorClient` applies before it sends a call to an executor thread.
//! Nothing is admitted past `--executor.max-queued` waiting requests. Below that:
//! - a connection's only request in flight (an HTTP request that is not a batch: its client
//!   waits for this answer before it sends again) is admitted whatever its wait while the pool
//!   holds at most [`SOLE_PER_THREAD`] requests a thread and its thread's queue is not
//!   standing ([`closed_loop_admits`]): a closed loop's queue is bounded by its clients, so
//!   64 test-suite workers on a busy laptop are served, slowly, never refused;
//! - every other request (a batch's items, a WebSocket's concurrent requests, arrivals past
//!   those places or at a standing queue) is admitted while the wait it is expected to spend
//!   queued on its thread (the requests ahead of it times the thread's measured service time)
//!   is within `--executor.max-queue-delay` ([`decide`]).
//!
//! A thread's queue stands (CoDel's idea, [`StandingQueue`]) when a whole interval's requests
//! all waited past two budgets, or at once when a connection's only request is refused past
//! the closed-loop places: an open-loop overload or a retry storm outruns the thread, which a
//! closed loop never does. Refusals are at once (-32005), before any executor work: an
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

/// How a request stands to its connection when it arrives.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Arrival {
    /// Its connection's only request in flight (an HTTP request that is not a batch): its
    /// client waits for this answer before it sends again, so such clients never queue more
    /// than one request each, however slow the answer.
    Sole,
    /// One of several its connection has in flight (a batch's items, a WebSocket's
    /// concurrent requests), or one the front could not place: nothing bounds how many more
    /// follow, so the plain budget holds.
    Among,
}

/// Connections' only requests ([`Arrival::Sole`]) admitted whatever their expected wait, per
/// executor thread: a closed loop's clients each hold one request, so its queue is bounded by
/// their number, and refusing them only sends them straight back. 64 connections of
/// hashLoop(2000) while a spin loop holds one of the two cores wait 100-150 ms, over the
/// budget, and are all served; an open-loop overload on 512 connections fills these places
/// (64 calls of ~1.2 ms a thread, ~77 ms) and is refused by the budget past them.
pub const SOLE_PER_THREAD: usize = 64;

/// Whether a request that would make the pool hold `in_pool` requests (itself included) over
/// `threads` executor threads is admitted without a latency check: its connection's only
/// request, while the pool holds at most [`SOLE_PER_THREAD`] a thread and its lane has no
/// standing queue ([`StandingQueue`]). The queue cap (`--executor.max-queued`) still holds.
pub fn closed_loop_admits(
    arrival: Arrival,
    standing: bool,
    in_pool: usize,
    threads: usize,
) -> bool {
    arrival == Arrival::Sole && !standing && in_pool <= threads.saturating_mul(SOLE_PER_THREAD)
}

/// Decides by the latency budget for a call that would queue behind `ahead` requests (queued
/// or running) on the executor thread it would go to, whose calls take `service` each (`None`
/// until one has run) and whose expected waits are scaled by `scale` ([`WaitScale`], in units
/// of [`SCALE_ONE`]). A call that finds its thread idle always goes in; with a zero budget
/// nothing else does; otherwise it goes in while its scaled expected wait is within the
/// budget. Until a service time is known nothing but the queue cap limits the queue: a node
/// that has just started has not measured anything to refuse by. (A connection's only
/// request may go in before this is asked: [`closed_loop_admits`].)
pub fn decide(
    limits: AdmissionLimits,
    ahead: usize,
    service: Option<Duration>,
    scale: u64,
) -> Result<(), Refusal> {
    if ahead == 0 {
        return Ok(());
    }
    let budget = limits.max_queue_delay;
    let expected =
        service.map_or(Duration::ZERO, |service| scaled(expected_wait(ahead, service), scale));
    if budget.is_zero() || expected > budget {
        return Err(Refusal::QueueDelay { expected, budget });
    }
    Ok(())
}

/// The interval a [`StandingQueue`] judges, in units of the budget: one budget's worth.
pub const STANDING_INTERVAL_BUDGETS: u32 = 1;

/// The smallest wait of an interval over which a queue starts standing, in budgets: two. A
/// closed loop on a busy machine waits up to ~1.5 budgets ([`SOLE_PER_THREAD`]); an overload of
/// heavier calls whose connections fit the closed-loop places waits longer.
pub const STANDING_ENTER_BUDGETS: u64 = 2;

/// Whole intervals in a row whose smallest wait was under a quarter budget before a standing
/// queue is over: under an overload the refused clients' retries come in waves (the front
/// holds quick retries for `RETRY_PAUSE`), and a lane drained between two waves for one
/// interval has not caught up; ten intervals (one second at the default budget) of short
/// waits have.
pub const STANDING_EXIT_INTERVALS: u32 = 10;

/// One lane's test for a standing queue, CoDel's idea: the smallest wait (admission to
/// start) of the requests that started during an interval of one budget. A burst, or a closed
/// loop of clients the lane serves in about the budget, has requests that waited less; an
/// overload that outruns the lane (open-loop arrivals, a retry storm of heavy calls) has none.
/// The queue starts standing when a whole interval's smallest wait was over two budgets
/// ([`STANDING_ENTER_BUDGETS`]), or at once when a connection's only request is refused
/// ([`enter`](Self::enter)), and stops after [`STANDING_EXIT_INTERVALS`] intervals in a
/// row whose smallest waits were under a quarter budget: a queue that refusals hold at the
/// budget still stands (its waits stay near the budget), and only a lane that has caught up
/// clears it. While it stands, connections' only requests are judged by the budget too.
/// Written by the lane's executor thread as each request starts, read by admission anywhere.
#[derive(Debug, Default)]
pub struct StandingQueue(CachePadded<StandingState>);

#[derive(Debug, Default)]
struct StandingState {
    /// When the interval under way began, in nanoseconds since the pool's epoch (at least 1);
    /// 0 before the first request.
    since: AtomicU64,
    /// The smallest wait in it so far, in nanoseconds.
    smallest: AtomicU64,
    /// The verdict so far.
    standing: std::sync::atomic::AtomicBool,
    /// Intervals in a row with short waits while standing.
    calm: std::sync::atomic::AtomicU32,
}

impl StandingQueue {
    /// Counts one request that started at `now` (nanoseconds since the pool's epoch) after
    /// waiting `waited`, against the `budget`. Called from one thread only (the executor's).
    pub fn record(&self, now: u64, waited: Duration, budget: Duration) {
        let state = &self.0;
        let waited = u64::try_from(waited.as_nanos()).unwrap_or(u64::MAX);
        let budget_ns = u64::try_from(budget.as_nanos()).unwrap_or(u64::MAX);
        let interval = budget_ns.saturating_mul(u64::from(STANDING_INTERVAL_BUDGETS)).max(1);
        let since = state.since.load(Relaxed);
        let smallest = state.smallest.load(Relaxed);
        if since != 0 && now.saturating_sub(since) < interval {
            if waited < smallest {
                state.smallest.store(waited, Relaxed);
            }
            return;
        }
        if since != 0 {
            if state.standing.load(Relaxed) {
                let calm = if smallest < budget_ns / 4 { state.calm.load(Relaxed) + 1 } else { 0 };
                state.calm.store(calm, Relaxed);
                if calm >= STANDING_EXIT_INTERVALS {
                    state.standing.store(false, Relaxed);
                }
            } else if smallest > budget_ns.saturating_mul(STANDING_ENTER_BUDGETS) {
                state.calm.store(0, Relaxed);
                state.standing.store(true, Relaxed);
            }
        }
        state.since.store(now.max(1), Relaxed);
        state.smallest.store(waited, Relaxed);
    }

    /// Whether the lane has a standing queue.
    pub fn get(&self) -> bool {
        self.0.standing.load(Relaxed)
    }

    /// Marks the queue standing now: a connection's only request found the closed-loop places
    /// taken ([`SOLE_PER_THREAD`]) and was refused by the budget, so more requests arrive than
    /// any closed loop the places hold and the lane serves in the budget. The waits it would
    /// take for the measured test to see this are the ones an overload's p99 cannot afford.
    /// Called from any thread; it races only with [`record`](Self::record), which leaves a
    /// standing queue only after calm intervals.
    pub fn enter(&self) {
        self.0.calm.store(0, Relaxed);
        self.0.standing.store(true, Relaxed);
    }
}

/// `wait` times `scale` / [`SCALE_ONE`], saturating.
pub fn scaled(wait: Duration, scale: u64) -> Duration {
    let nanos = wait.as_nanos().saturating_mul(u128::from(scale)) / u128::from(SCALE_ONE);
    Duration::from_nanos(u64::try_from(nanos).unwrap_or(u64::MAX))
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

/// Calls a thread runs before its service time counts for admission. The first calls on a
/// thread pay one-time costs later ones do not (the contract's code read and analysed, the
/// EVM scratch grown, the store's pages brought in): a fresh node's first `hashLoop(2000)`
/// took several times its steady 1.3 ms, and taken as the service time it had 64 closed-loop
/// clients refused until the average came down. Until then only the queue cap limits the
/// queue, as before any call had run.
pub const WARM_UP_CALLS: u64 = 8;

/// One executor thread's service time per call: a moving average written by that thread as
/// each call finishes, read by admission on any thread. Over the first [`WARM_UP_CALLS`] it
/// holds the shortest run seen (the one least inflated by one-time costs) and reads as none
/// yet; from then on each call moves it by an eighth ([`ewma`]).
#[derive(Debug, Default)]
pub struct ServiceTime(CachePadded<ServiceSamples>);

#[derive(Debug, Default)]
struct ServiceSamples {
    /// The average, in nanoseconds; 0 before the first call.
    average: AtomicU64,
    /// Calls folded in, counted up to [`WARM_UP_CALLS`].
    calls: AtomicU64,
}

impl ServiceTime {
    /// Folds in one call that ran for `took`. Called from one thread only (the executor's),
    /// so a load and a store cannot lose an update.
    pub fn record(&self, took: Duration) {
        let sample = u64::try_from(took.as_nanos()).unwrap_or(u64::MAX).max(1);
        let samples = &self.0;
        let average = samples.average.load(Relaxed);
        let calls = samples.calls.load(Relaxed);
        let next = if calls < WARM_UP_CALLS {
            samples.calls.store(calls + 1, Relaxed);
            if average == 0 { sample } else { average.min(sample) }
        } else {
            ewma(average, sample)
        };
        samples.average.store(next, Relaxed);
    }

    /// The average, or `None` before the thread has run [`WARM_UP_CALLS`] calls.
    pub fn get(&self) -> Option<Duration> {
        if self.0.calls.load(Relaxed) < WARM_UP_CALLS {
            return None;
        }
        match self.0.average.load(Relaxed) {
            0 => None,
            nanos => Some(Duration::from_nanos(nanos)),
        }
    }
}

/// [`WaitScale`]'s fixed-point one (a factor of 1.0).
pub const SCALE_ONE: u64 = 1 << 16;

/// Largest [`WaitScale`]: twice the plain estimate. A lane whose calls keep ending late for a
/// reason no scale fixes (a call behind a long trace) then admits half its usual queue, not
/// nothing: 32 closed-loop callers of a 1 ms call on one thread still expect 64 ms.
pub const SCALE_MAX: u64 = 2 * SCALE_ONE;

/// How far one late call raises the scale (1/64, about 1.6%) and one call on time lowers it:
/// 199 on-time calls undo one late one, so the scale settles where about one call in 200
/// (0.5%) ends late, below the 1% the p99 allows.
const SCALE_UP: u64 = SCALE_ONE / 64;
const SCALE_DOWN: u64 = SCALE_UP / 199;

/// How much one executor thread's expected waits are scaled up so that its admitted calls'
/// 99th percentile, not their mean, stays within the budget plus one service time.
///
/// Under an overload every admitted call is admitted near the budget, so the plain estimate
/// (the calls ahead times the average run time) is right on average and late for about half of
/// them: a run of slow calls, the thread preempted by the front and the load, a service time
/// that rose after admission, all push a queue that was admitted together past the budget
/// together. The scale is learned from the outcome it controls: each call whose time from
/// admission to the end of its run exceeds the budget plus one service time raises it by 1/64,
/// each other call lowers it by 1/199 of that, so it rises within a few late calls and settles
/// where 0.5% end late (a stochastic quantile estimate). It is never below 1 (the plain
/// estimate) nor above [`SCALE_MAX`], and it is written only by the thread whose calls it
/// counts.
#[derive(Debug, Default)]
pub struct WaitScale(CachePadded<AtomicU64>);

impl WaitScale {
    /// Counts one call that took `took` from admission to the end of its run, against the
    /// `budget` plus one `service` time. Called from one thread only (the executor's).
    pub fn record(&self, took: Duration, budget: Duration, service: Duration) {
        let now = self.get();
        let next = if took > budget.saturating_add(service) {
            (now + SCALE_UP).min(SCALE_MAX)
        } else {
            now.saturating_sub(SCALE_DOWN).max(SCALE_ONE)
        };
        self.0.store(next, Relaxed);
    }

    /// The scale, in units of [`SCALE_ONE`] (at least one).
    pub fn get(&self) -> u64 {
        self.0.load(Relaxed).max(SCALE_ONE)
    }
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

/// Upper bounds of the call-stage histograms' buckets, in microseconds: fine around the
/// default budget, where an admitted call's tail is decided (the queue-delay histogram's
/// buckets are too coarse there to tell 105 ms from 145 ms).
pub const STAGE_BUCKETS_MICROS: [u64; 26] = [
    100, 250, 500, 1_000, 2_000, 5_000, 10_000, 20_000, 40_000, 60_000, 80_000, 90_000, 95_000,
    100_000, 102_500, 105_000, 107_500, 110_000, 115_000, 120_000, 130_000, 150_000, 200_000,
    300_000, 500_000, 1_000_000,
];

/// The stages of an admitted call's time in the node, each a histogram in [`CallStages`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stage {
    /// From the RPC front taking the request (its body read) to admission: parsing and
    /// routing, and any wait for the front's worker thread.
    Front,
    /// From admission to the executor thread starting the call (its queueing delay).
    Queue,
    /// From the executor thread starting the call to its end.
    Run,
    /// From admission to the caller resuming with the answer: queue, run, and the hand-back
    /// to the front's worker.
    Pool,
    /// From the caller resuming to the reply leaving the front's handler (encoding).
    After,
    /// From the front taking the request to the reply leaving its handler.
    Total,
}

impl Stage {
    /// Every stage, in [`index`](Self::index) order, with its metric label.
    pub const LABELS: [&'static str; 6] = ["front", "queue", "run", "pool", "after", "total"];

    /// Position of this stage in [`LABELS`](Self::LABELS).
    pub const fn index(self) -> usize {
        self as usize
    }
}

/// Where an admitted call's time went, one fine histogram per [`Stage`]: how far over the
/// budget the admitted calls' tail goes, and in which stage. Each record is one relaxed
/// atomic add. Each stage's row sits on cache lines of its own, and the executor pool keeps
/// one set per executor thread for the stages that thread times (queue, run) apart from the
/// set the RPC front writes: a closed loop at 64 connections records six stages per call,
/// and rows shared between the front's worker and the executors bounced their lines between
/// the two cores on every call.
#[derive(Debug, Default)]
pub struct CallStages {
    counts: [CachePadded<[AtomicU64; STAGE_BUCKETS_MICROS.len() + 1]>; Stage::LABELS.len()],
}

impl CallStages {
    /// Counts one call that spent `took` in `stage`.
    pub fn record(&self, stage: Stage, took: Duration) {
        let micros = u64::try_from(took.as_micros()).unwrap_or(u64::MAX);
        let bucket = STAGE_BUCKETS_MICROS
            .iter()
            .position(|&bound| micros <= bound)
            .unwrap_or(STAGE_BUCKETS_MICROS.len());
        self.counts[stage.index()][bucket].fetch_add(1, Relaxed);
    }

    /// Calls per bucket of [`STAGE_BUCKETS_MICROS`] (not cumulative; the last one is
    /// everything above the largest bound) for `stage`.
    pub fn buckets(&self, stage: Stage) -> [u64; STAGE_BUCKETS_MICROS.len() + 1] {
        std::array::from_fn(|i| self.counts[stage.index()][i].load(Relaxed))
    }

    /// Adds this set's counts for `stage` into `into` (the pool sums its sets).
    pub fn add_to(&self, stage: Stage, into: &mut [u64; STAGE_BUCKETS_MICROS.len() + 1]) {
        for (total, count) in into.iter_mut().zip(self.counts[stage.index()].iter()) {
            *total += count.load(Relaxed);
        }
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

    const ONE: u64 = SCALE_ONE;

    #[test]
    fn an_idle_thread_always_admits() {
        assert_eq!(decide(limits(Duration::ZERO), 0, Some(MS * 500), ONE), Ok(()));
        assert_eq!(decide(limits(100 * MS), 0, None, ONE), Ok(()));
        assert_eq!(decide(limits(100 * MS), 0, Some(MS), SCALE_MAX), Ok(()));
    }

    #[test]
    fn closed_loop_clients_below_capacity_queue_within_the_budget() {
        // 64 closed-loop clients of a 1 ms call on two threads: at most 31 ahead on a thread,
        // within the budget even at the largest scale.
        assert_eq!(decide(limits(100 * MS), 31, Some(MS), ONE), Ok(()));
        assert_eq!(decide(limits(100 * MS), 31, Some(MS), SCALE_MAX), Ok(()));
        // A cheap call (20 us) admits hundreds ahead.
        assert_eq!(decide(limits(100 * MS), 4_000, Some(Duration::from_micros(20)), ONE), Ok(()));
    }

    #[test]
    fn a_call_expected_to_wait_past_the_budget_is_refused_with_its_estimate() {
        assert_eq!(decide(limits(100 * MS), 100, Some(MS), ONE), Ok(()), "exactly the budget");
        assert_eq!(
            decide(limits(100 * MS), 101, Some(MS), ONE),
            Err(Refusal::QueueDelay { expected: 101 * MS, budget: 100 * MS })
        );
        // A 10 ms call: the eleventh in line is refused.
        assert!(decide(limits(100 * MS), 10, Some(10 * MS), ONE).is_ok());
        assert!(decide(limits(100 * MS), 11, Some(10 * MS), ONE).is_err());
    }

    #[test]
    fn the_scale_stretches_the_expected_wait() {
        // 80 ahead of a 1 ms call: 80 ms, within; scaled by 1.25, 100 ms; by 1.5, 120 ms.
        assert!(decide(limits(100 * MS), 80, Some(MS), ONE).is_ok());
        assert!(decide(limits(100 * MS), 80, Some(MS), ONE + ONE / 4).is_ok());
        assert_eq!(
            decide(limits(100 * MS), 80, Some(MS), ONE + ONE / 2),
            Err(Refusal::QueueDelay { expected: 120 * MS, budget: 100 * MS })
        );
        assert_eq!(scaled(Duration::MAX, SCALE_MAX), Duration::from_nanos(u64::MAX));
    }

    #[test]
    fn the_scale_rises_on_late_calls_and_settles_where_one_in_200_is_late() {
        let scale = WaitScale::default();
        assert_eq!(scale.get(), ONE, "the plain estimate until a call ends late");
        let (budget, service) = (100 * MS, MS);
        scale.record(101 * MS, budget, service);
        assert_eq!(scale.get(), ONE, "within budget + one service time is on time");
        scale.record(102 * MS, budget, service);
        assert_eq!(scale.get(), ONE + ONE / 64);
        for _ in 0..1_000 {
            scale.record(Duration::from_secs(1), budget, service);
        }
        assert_eq!(scale.get(), SCALE_MAX, "capped");
        for _ in 0..1_000_000 {
            scale.record(MS, budget, service);
        }
        assert_eq!(scale.get(), ONE, "never below the plain estimate");
        // One late call in 200 holds it; one in 100 raises it.
        let steady = |late_every: usize| {
            let scale = WaitScale::default();
            scale.record(Duration::from_secs(1), budget, service);
            let start = scale.get();
            for i in 1..=20_000 {
                let took = if i % late_every == 0 { Duration::from_secs(1) } else { MS };
                scale.record(took, budget, service);
            }
            scale.get() as i64 - start as i64
        };
        assert!(steady(200).abs() <= (ONE / 16) as i64, "{}", steady(200));
        assert!(steady(100) > (ONE / 4) as i64, "{}", steady(100));
    }

    #[test]
    fn a_connection_s_only_request_takes_a_closed_loop_place_whatever_its_wait() {
        // Two threads: 128 places. 64 closed-loop connections fit, 129 requests do not.
        assert!(closed_loop_admits(Arrival::Sole, false, 64, 2));
        assert!(closed_loop_admits(Arrival::Sole, false, 128, 2));
        assert!(!closed_loop_admits(Arrival::Sole, false, 129, 2), "past the places");
        assert!(!closed_loop_admits(Arrival::Sole, true, 1, 2), "a standing queue");
        assert!(!closed_loop_admits(Arrival::Among, false, 1, 2), "a batch's item");
        // The latency rule alone would refuse the 64th of a 10 ms call (630 ms ahead).
        assert!(decide(limits(100 * MS), 63, Some(10 * MS), ONE).is_err());
    }

    /// Feeds `queue` one request starting every `every` for `span`, each having waited `waited`
    /// (nanoseconds since the epoch start at `from`); the time after.
    fn feed(
        queue: &StandingQueue,
        from: u64,
        span: Duration,
        every: Duration,
        waited: Duration,
    ) -> u64 {
        let mut now = from;
        let end = from + span.as_nanos() as u64;
        while now < end {
            queue.record(now, waited, 100 * MS);
            now += every.as_nanos() as u64;
        }
        now
    }

    #[test]
    fn a_queue_stands_once_a_whole_interval_waited_past_two_budgets_and_not_before() {
        let queue = StandingQueue::default();
        // A closed loop on a busy machine: every request waits 150 ms, over the budget.
        let now = feed(&queue, 1, Duration::from_secs(2), MS, 150 * MS);
        assert!(!queue.get(), "150 ms waits are no standing queue");
        // One request in an interval that waited less keeps it from standing.
        let mut now = now;
        for _ in 0..5 {
            now = feed(&queue, now, 90 * MS, MS, 250 * MS);
            now = feed(&queue, now, 10 * MS, MS, 20 * MS);
        }
        assert!(!queue.get(), "an interval with a short wait in it");
        // Every request of a whole interval waited past two budgets.
        let now = feed(&queue, now, 300 * MS, MS, 250 * MS);
        assert!(queue.get());
        // Held at the budget by refusals, it still stands; one calm interval does not end it.
        let now = feed(&queue, now, Duration::from_secs(2), MS, 90 * MS);
        let now = feed(&queue, now, 100 * MS, MS, MS);
        let now = feed(&queue, now, 100 * MS, MS, 90 * MS);
        assert!(queue.get(), "a lane drained between two waves has not caught up");
        // Ten calm intervals in a row do.
        feed(&queue, now, Duration::from_millis(1_500), MS, MS);
        assert!(!queue.get());
    }

    #[test]
    fn a_refused_only_request_marks_the_queue_standing_at_once() {
        let queue = StandingQueue::default();
        queue.enter();
        assert!(queue.get());
        // Calm intervals end it as they end a measured one.
        feed(&queue, 1, Duration::from_millis(1_500), MS, MS);
        assert!(!queue.get());
    }

    #[test]
    fn a_zero_budget_refuses_whenever_the_thread_is_taken() {
        let refused = decide(limits(Duration::ZERO), 1, None, ONE);
        assert_eq!(
            refused,
            Err(Refusal::QueueDelay { expected: Duration::ZERO, budget: Duration::ZERO })
        );
        assert!(decide(limits(Duration::ZERO), 1, Some(Duration::from_nanos(1)), ONE).is_err());
    }

    #[test]
    fn nothing_measured_yet_refuses_nothing_the_cap_allows() {
        assert_eq!(decide(limits(MS), 1_000, None, ONE), Ok(()));
    }

    #[test]
    fn the_expected_wait_saturates_instead_of_overflowing() {
        assert_eq!(expected_wait(usize::MAX, Duration::MAX), Duration::MAX);
        assert!(
            decide(limits(MAX_QUEUE_DELAY), usize::MAX, Some(Duration::from_secs(1)), SCALE_MAX)
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
    fn a_service_time_is_none_until_the_warm_up_ran_and_then_starts_at_its_shortest_call() {
        let service = ServiceTime::default();
        assert_eq!(service.get(), None);
        // A cold first call (code analysed, scratch grown), then steady ones.
        service.record(Duration::from_micros(9_000));
        for _ in 1..WARM_UP_CALLS {
            assert_eq!(service.get(), None, "no refusal by delay during the warm-up");
            service.record(Duration::from_micros(800));
        }
        assert_eq!(service.get(), Some(Duration::from_micros(800)), "the cold call is not kept");
        service.record(Duration::from_micros(1_600));
        assert_eq!(service.get(), Some(Duration::from_micros(900)));
    }

    #[test]
    fn a_fresh_thread_admits_a_64_connection_closed_loop_through_its_cold_first_call() {
        // 64 closed-loop clients arrive at once on two threads; the first call on each took
        // 20 ms (cold), every later one 1.3 ms. Each completion brings its client straight
        // back with 31 ahead: none is refused, during the warm-up or after it.
        let service = ServiceTime::default();
        service.record(Duration::from_millis(20));
        for _ in 0..64 {
            assert_eq!(decide(limits(100 * MS), 31, service.get(), ONE), Ok(()));
            service.record(Duration::from_micros(1_300));
        }
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
    fn call_stages_count_each_stage_in_its_own_fine_buckets() {
        let stages = CallStages::default();
        stages.record(Stage::Queue, 101 * MS);
        stages.record(Stage::Queue, 99 * MS);
        stages.record(Stage::Total, Duration::from_secs(3));
        let queue = stages.buckets(Stage::Queue);
        let at = |micros| STAGE_BUCKETS_MICROS.iter().position(|&b| b == micros).unwrap();
        assert_eq!(queue[at(100_000)], 1, "99 ms");
        assert_eq!(queue[at(102_500)], 1, "101 ms");
        assert_eq!(queue.iter().sum::<u64>(), 2);
        assert_eq!(stages.buckets(Stage::Total)[STAGE_BUCKETS_MICROS.len()], 1, "past the last");
        assert_eq!(stages.buckets(Stage::Run).iter().sum::<u64>(), 0);
        assert_eq!(Stage::LABELS[Stage::After.index()], "after");
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
