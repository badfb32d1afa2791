//! The executor pool's client: admission by latency budget, routing to the least busy lane,
//! the fork-miss retry loop, the shutdown drain and the per-HTTP-request stage clock.

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::sync::atomic::Ordering::Relaxed;
use std::time::Duration;

use actix::{Message, Recipient};

use super::inline::{BuildHere, Inline, InlineCalls};
use super::pool::{Admitted, ExecutorLane, Pool, Slot};
use super::{
    Call, CallMany, CallOutcome, EstimateGas, EstimateOutcome, GetTouchedSlots, TouchedSlots,
};
use crate::ExecError;
use crate::access_list::{AccessListOutcome, CreateAccessList};
use crate::admission::{self, AdmissionLimits, Arrival, DelaySummary, Refusal, Stage};
use crate::block_build::{BuildBlock, BuiltBlock};
use crate::fork::misses::{self, ForkMisses};
use crate::payload::{BuildPayload, BuiltPayload};
use crate::simulate::{Simulate, SimulateError, SimulatedBlock};
use crate::trace::{Trace, TraceOutput};

tokio::task_local! {
    /// When the request being served reached the RPC front, and when its call was admitted and
    /// answered: set by [`ExecutorClient::timed`] around one HTTP request, read at its end into the
    /// pool's [`CallStages`](crate::admission::CallStages). A request served outside it (WebSocket,
    /// tests) records only the executor's stages.
    static REQUEST_CLOCK: RequestClock;
}

/// The instants of one request's stages (see [`Stage`]); cells, as the request's task is
/// polled on one thread at a time.
struct RequestClock {
    /// How its calls arrive: an HTTP request is its connection's only one ([`Arrival::Sole`])
    /// unless it is a batch ([`among_others`]).
    arrival: std::cell::Cell<Arrival>,
    entry: tokio::time::Instant,
    admitted: std::cell::Cell<Option<tokio::time::Instant>>,
    answered: std::cell::Cell<Option<tokio::time::Instant>>,
}

/// Marks the request being served (inside [`ExecutorClient::timed`]) as one of several its
/// connection has in flight (a JSON-RPC batch, whose items run concurrently): its calls are
/// then admitted by the plain budget ([`Arrival::Among`]).
pub fn among_others() {
    let _ = REQUEST_CLOCK.try_with(|clock| clock.arrival.set(Arrival::Among));
}

/// How the request being served arrives: [`Arrival::Sole`] inside [`ExecutorClient::timed`]
/// (an HTTP request) unless [`among_others`] marked it, [`Arrival::Among`] elsewhere.
pub fn current_arrival() -> Arrival {
    REQUEST_CLOCK.try_with(|clock| clock.arrival.get()).unwrap_or(Arrival::Among)
}

/// The front of the executor pool: it admits by latency budget (see [`crate::admission`]) and
/// sends each request to the lane (executor thread) holding the fewest, skipping executors
/// that have stopped; ties go round the lanes. A call whose expected wait on that lane is over
/// `--executor.max-queue-delay`, or that finds `--executor.max-queued` requests waiting, fails
/// at once with [`ExecError::Busy`]: the refusal costs an atomic or two and no executor work.
#[derive(Debug, Clone)]
pub struct ExecutorClient {
    pool: Arc<Pool>,
    /// Where calls are tried first, on the caller's thread (`inline`); `None`: every call goes
    /// to the pool.
    inline: Option<Arc<Inline>>,
}

impl ExecutorClient {
    /// Wraps one executor's recipients, admitting by `limits`.
    pub fn new(
        calls: Recipient<Admitted<Call>>,
        estimates: Recipient<Admitted<EstimateGas>>,
        builds: Recipient<Admitted<BuildBlock>>,
        touched: Recipient<Admitted<GetTouchedSlots>>,
        limits: AdmissionLimits,
    ) -> Self {
        let lane = ExecutorLane::new(calls, estimates, builds, touched);
        Self::with_lanes(vec![lane], limits)
    }

    /// A client over several executors (one lane each), admitting by `limits`. Each
    /// executor's mailbox must hold [`mailbox_for`](Self::mailbox_for) messages: the cap then
    /// guarantees a send never finds it full.
    ///
    /// # Panics
    /// When `lanes` is empty: a pool has at least one executor.
    pub fn with_lanes(lanes: Vec<ExecutorLane>, limits: AdmissionLimits) -> Self {
        assert!(!lanes.is_empty(), "an executor pool needs at least one executor");
        Self { pool: Arc::new(Pool::new(lanes.into(), limits)), inline: None }
    }

    /// This client, trying every call on `runner` first, on the caller's thread: only calls it
    /// hands on reach the pool (see [`InlineCalls`]).
    #[must_use]
    pub fn with_inline(mut self, runner: Box<dyn InlineCalls>) -> Self {
        self.inline = Some(Arc::new(Inline::new(runner)));
        self
    }

    /// Calls answered on the caller's thread, and calls the inline runner handed on to the
    /// pool; `None` without a runner.
    pub fn inline_counts(&self) -> Option<[u64; 2]> {
        self.inline.as_ref().map(|inline| inline.counts())
    }

    /// Blocks built on the caller's thread (the miner's), and blocks the inline runner handed
    /// back to the pool (see [`InlineCalls::try_build`]); `None` without an inline runner.
    pub fn inline_block_counts(&self) -> Option<[u64; 2]> {
        self.inline.as_ref().map(|inline| inline.block_counts())
    }

    /// The mailbox each of `threads` executors needs under `limits`: every request the pool
    /// may hold (the queue cap, one running per thread) and the miner's block, which is never
    /// refused.
    pub const fn mailbox_for(threads: usize, limits: AdmissionLimits) -> usize {
        limits.max_queued.saturating_add(threads).saturating_add(1)
    }

    /// Takes a place for a request on the lane holding the fewest among the running executors;
    /// `sampled` requests (calls) feed the lane's service time and go round the lanes on ties.
    /// Block builds (not sampled) take the first of the least busy lanes, so back-to-back
    /// automined blocks run on one warm executor thread instead of alternating (one sender
    /// after 50,000 blocks: 1,657 -> 1,732 tx/s, means of 10 alternating runs: BENCHMARKS.md).
    /// The pool count must already include it.
    fn place(&self, sampled: bool) -> Slot {
        let lanes = &self.pool.lanes;
        let start = if sampled { self.pool.next.fetch_add(1, Relaxed) } else { 0 };
        let lane = self.least_busy(start);
        let depth = lanes[lane].in_flight.fetch_add(1, Relaxed) + 1;
        Slot::new(Arc::clone(&self.pool), lane, depth, sampled)
    }

    /// The running lane holding the fewest requests, ties going to the first from `start`
    /// round the lanes (`start` itself when none runs: the send then fails as closed).
    fn least_busy(&self, start: usize) -> usize {
        let lanes = &self.pool.lanes;
        let n = lanes.len();
        let start = start % n;
        (0..n)
            .map(|i| (start + i) % n)
            .filter(|&i| lanes[i].calls.connected())
            .min_by_key(|&i| lanes[i].in_flight.load(Relaxed))
            .unwrap_or(start)
    }

    /// A place for a request, or the refusal: the queue cap first (one atomic), then the
    /// expected wait on the lane it would go to.
    fn admit(&self, sampled: bool) -> Result<Slot, ExecError> {
        let pool = &self.pool;
        if pool.closing.load(Ordering::Acquire) {
            return Err(ExecError::ShuttingDown);
        }
        let cap = pool.limits.max_queued.saturating_add(pool.lanes.len());
        if !pool.count.try_enter(cap) {
            return Err(self.refuse(Refusal::QueueFull { max_queued: pool.limits.max_queued }));
        }
        let slot = self.place(sampled);
        let lane = &pool.lanes[slot.lane];
        match self.judge(lane, slot.depth - 1, pool.count.get(), current_arrival()) {
            Ok(()) => {
                if sampled {
                    let _ = REQUEST_CLOCK.try_with(|clock| clock.admitted.set(Some(slot.sent)));
                }
                Ok(slot)
            }
            // Dropping the slot gives both places back; it never began, so nothing is sampled.
            Err(refusal) => Err(self.refuse(refusal)),
        }
    }

    /// Whether the pool could refuse a call now: only when it holds at least one request per
    /// thread, since a call that finds its thread idle is always admitted. One atomic load,
    /// so the RPC front skips even the scan of a body while the pool has an idle thread.
    pub fn may_refuse(&self) -> bool {
        self.pool.count.get() >= self.pool.lanes.len()
    }

    /// The refusal a call would meet now, counted as one, or `None` when it would be admitted
    /// (or the pool is closing or has no running executor: the ordinary path answers those).
    /// It takes no place: the RPC front asks this before it parses a request for an executor
    /// method, so that a call refused under a retry storm costs a scan of its body and this
    /// (a few atomics), the same rule as `admit` on the lane a call would go to.
    pub fn refuse_early(&self, arrival: Arrival) -> Option<ExecError> {
        let refusal = self.would_refuse(arrival)?;
        self.pool.refusals[refusal.index()].fetch_add(1, Relaxed);
        Some(ExecError::Busy(refusal))
    }

    /// [`refuse_early`](Self::refuse_early) for `calls` calls arriving together (the executor
    /// calls of one JSON-RPC batch): the rule is decided once and the refusal counted once per
    /// call. Admission would meet each of them with the same state, since a refused call
    /// takes no place and changes nothing the rule reads; `None` (admitted) counts nothing.
    pub fn refuse_early_many(&self, calls: u64) -> Option<ExecError> {
        let refusal = self.would_refuse(Arrival::Among)?;
        self.pool.refusals[refusal.index()].fetch_add(calls, Relaxed);
        Some(ExecError::Busy(refusal))
    }

    /// The refusal a call would meet now, without counting it: the same rule as `admit` on
    /// the lane `place` would pick next (the RPC front asks before it holds a quick retry,
    /// and counts only the answer it gives after the hold).
    pub fn would_refuse(&self, arrival: Arrival) -> Option<Refusal> {
        let pool = &self.pool;
        if pool.closing.load(Ordering::Acquire) {
            return None;
        }
        let cap = pool.limits.max_queued.saturating_add(pool.lanes.len());
        if pool.count.get() >= cap {
            return Some(Refusal::QueueFull { max_queued: pool.limits.max_queued });
        }
        let lane = &pool.lanes[self.least_busy(pool.next.load(Relaxed))];
        if !lane.calls.connected() {
            return None;
        }
        let ahead = lane.in_flight.load(Relaxed);
        // This arrival would be one more in the pool.
        self.judge(lane, ahead, pool.count.get() + 1, arrival).err()
    }

    /// The pool's rule for an arrival behind `ahead` requests on `lane`, the pool holding `in_pool`
    /// with it: a connection's only request goes in while the closed-loop places last
    /// ([`admission::closed_loop_admits`]), any other by the latency budget
    /// ([`admission::decide`]). A connection's only request refused marks the lane standing
    /// ([`StandingQueue::enter`](crate::admission::StandingQueue::enter)): arrivals outrun what a
    /// closed loop sends.
    fn judge(
        &self,
        lane: &ExecutorLane,
        ahead: usize,
        in_pool: usize,
        arrival: Arrival,
    ) -> Result<(), Refusal> {
        let threads = self.pool.lanes.len();
        let standing = lane.standing.get();
        if admission::closed_loop_admits(arrival, standing, in_pool, threads) {
            return Ok(());
        }
        let decided =
            admission::decide(self.pool.limits, ahead, lane.service.get(), lane.scale.get());
        if decided.is_err() && arrival == Arrival::Sole && !standing {
            lane.standing.enter();
        }
        decided
    }

    fn refuse(&self, refusal: Refusal) -> ExecError {
        self.pool.refusals[refusal.index()].fetch_add(1, Relaxed);
        ExecError::Busy(refusal)
    }

    /// Sends `request` with its place to its lane, which the executor releases once it has
    /// run the request, whether or not the caller still waits for the answer.
    async fn dispatch<M>(
        &self,
        slot: Slot,
        recipient: impl Fn(&ExecutorLane) -> Option<&Recipient<Admitted<M>>>,
        request: M,
        collect: bool,
    ) -> Result<M::Result, ExecError>
    where
        M: Message + Send + 'static,
        M::Result: Send,
    {
        let to = self.lane(&slot, recipient)?;
        // `send` enqueues at once (the mailbox has room for every place); the caller waits
        // for the answer. Once the pool closes, the executor answers each queued request
        // ShuttingDown as it reaches it (`Slot::begin`), after the one it runs (bounded by
        // the EVM timeout), so a drain answers every caller without waking them by a lock.
        let sampled = slot.sampled;
        // An executor that stopped during the drain, its mailbox unread, answers nothing.
        let answer = to.send(Admitted { request, slot, collect }).await.map_err(|e| {
            if self.is_closed() { ExecError::ShuttingDown } else { ExecError::from(e) }
        })?;
        if sampled {
            let now = tokio::time::Instant::now();
            let _ = REQUEST_CLOCK.try_with(|clock| clock.answered.set(Some(now)));
        }
        Ok(answer)
    }

    /// Admits and runs a read-only request, collecting its fork misses: when its run missed
    /// fork state the cache lacks, the keys are fetched without holding a thread (all at
    /// once, `ForkMisses::fetch`) and the request is admitted and run again, up to
    /// [`misses::MAX_ROUNDS`] times, then once more with reads that wait. The wait for the
    /// upstream is spent outside the pool: it is neither queueing nor service time.
    async fn run<M>(
        &self,
        sampled: bool,
        recipient: impl Fn(&ExecutorLane) -> Option<&Recipient<Admitted<M>>> + Copy,
        request: M,
    ) -> Result<M::Result, ExecError>
    where
        M: Message + Clone + Send + 'static,
        M::Result: Send + ForkRetry,
    {
        let mut round = 0;
        loop {
            let slot = self.admit(sampled)?;
            // Off a fork nothing misses: the request goes as it is, with no copy kept.
            if round == misses::MAX_ROUNDS || !self.pool.fork_reads.load(Relaxed) {
                return self.dispatch(slot, recipient, request, false).await;
            }
            match self.dispatch(slot, recipient, request.clone(), true).await?.missed() {
                Ok(answer) => return Ok(answer),
                Err(misses) => {
                    misses.fetch().await.map_err(|error| {
                        ExecError::Storage(hearth_storage::StorageError::Fork(error.to_string()))
                    })?;
                    round += 1;
                }
            }
        }
    }

    /// Sends a block build to its lane and waits for it whatever happens: the miner's block in
    /// progress finishes even while the pool closes (the miner stops after it).
    async fn dispatch_to_end<M>(
        &self,
        slot: Slot,
        recipient: impl Fn(&ExecutorLane) -> Option<&Recipient<Admitted<M>>>,
        request: M,
    ) -> Result<M::Result, ExecError>
    where
        M: Message + Send + 'static,
        M::Result: Send,
    {
        let to = self.lane(&slot, recipient)?;
        let mut slot = slot;
        slot.ends_at_close = false;
        Ok(to.send(Admitted { request, slot, collect: false }).await?)
    }

    /// The recipient of `slot`'s lane for one message type; a lane without one is closed.
    fn lane<'p, M>(
        &'p self,
        slot: &Slot,
        recipient: impl Fn(&'p ExecutorLane) -> Option<&'p Recipient<Admitted<M>>>,
    ) -> Result<&'p Recipient<Admitted<M>>, ExecError>
    where
        M: Message + Send + 'static,
        M::Result: Send,
    {
        recipient(&self.pool.lanes[slot.lane])
            .ok_or(ExecError::Mailbox(actix::MailboxError::Closed))
    }

    /// Tells the pool whether its chain is a fork (the node at start, `anvil_reset` after a
    /// switch): its read-only requests then run collecting their fork misses, which costs a
    /// copy of each request (kept to run it again). A request on a fork sent without it waits
    /// for the upstream on its executor thread, as every read did before.
    pub fn set_fork_reads(&self, fork: bool) {
        self.pool.fork_reads.store(fork, Relaxed);
    }

    /// Whether the chain is a fork ([`set_fork_reads`](Self::set_fork_reads)): one relaxed load,
    /// for the front's reads to ask before they collect their own misses.
    pub fn fork_reads(&self) -> bool {
        self.pool.fork_reads.load(Relaxed)
    }

    /// Starts the shutdown drain: new requests are refused [`ExecError::ShuttingDown`], and
    /// every request still queued is answered so by its executor when it reaches it, unrun
    /// (right after the request it runs now, which finishes); block builds run to their end
    /// (the miner stops after its block). Idempotent.
    pub fn close(&self) {
        self.pool.closing.store(true, Ordering::Release);
    }

    /// Whether [`close`](Self::close) was called.
    pub fn is_closed(&self) -> bool {
        self.pool.closing.load(Ordering::Acquire)
    }

    /// Runs `call` on the caller's thread when the inline runner finishes it within its
    /// budget, else on the pool, or fails at once with [`ExecError::Busy`]. Only a request that
    /// is its connection's sole one runs inline: a batch's items (up to a thousand) or a
    /// WebSocket's would hold the worker for each item's budget in turn, where on the pool they
    /// run side by side under admission.
    pub async fn call(&self, call: Call) -> Result<CallOutcome, ExecError> {
        if let Some(inline) = &self.inline
            && current_arrival() == Arrival::Sole
            && let Some(outcome) = inline.try_call(&call)
        {
            return outcome;
        }
        self.run(true, |lane| Some(&lane.calls), call).await?
    }

    /// Runs an estimate on the pool, admitted as [`call`](Self::call) is.
    pub async fn estimate_gas(&self, estimate: EstimateGas) -> Result<EstimateOutcome, ExecError> {
        self.run(true, |lane| Some(&lane.estimates), estimate).await?
    }

    /// Runs a trace on the pool, admitted as [`call`](Self::call) is. Fails with
    /// [`ExecError::Mailbox`] on a pool whose executors serve no traces (a test's stand-in).
    pub async fn trace(&self, trace: Trace) -> Result<TraceOutput, ExecError> {
        // Not sampled, as block builds: a trace (a replay, often a long one) would inflate the
        // service time that cheap calls are admitted by.
        self.run(false, |lane| lane.traces.as_ref(), trace).await?
    }

    /// Runs a call that reports the slots it touched, admitted as [`call`](Self::call) is.
    pub async fn touched_slots(&self, request: GetTouchedSlots) -> Result<TouchedSlots, ExecError> {
        self.run(true, |lane| Some(&lane.touched), request).await?
    }

    /// Runs an eth_simulateV1 request on the pool, admitted as [`call`](Self::call) is, on a
    /// lane that can simulate (every lane of a real pool can).
    pub async fn simulate(&self, simulate: Simulate) -> Result<Vec<SimulatedBlock>, SimulateError> {
        self.run(true, |lane| lane.simulations.as_ref(), simulate).await?
    }

    /// Runs an eth_callMany request on the pool, admitted as [`call`](Self::call) is.
    pub async fn call_many(&self, request: CallMany) -> Result<Vec<Vec<CallOutcome>>, ExecError> {
        self.run(true, |lane| lane.call_bundles.as_ref(), request).await?
    }

    /// Runs an eth_createAccessList request on the pool, admitted as [`call`](Self::call) is.
    pub async fn create_access_list(
        &self,
        request: CreateAccessList,
    ) -> Result<AccessListOutcome, ExecError> {
        self.run(true, |lane| lane.access_lists.as_ref(), request).await?
    }

    /// Builds and seals a block without committing it (testing_buildBlockV1), admitted as
    /// [`call`](Self::call) is: unlike the miner's blocks, a request may be refused.
    pub async fn build_payload(&self, request: BuildPayload) -> Result<BuiltPayload, ExecError> {
        let slot = self.admit(false)?;
        self.dispatch(slot, |lane| lane.payloads.as_ref(), request, false).await?
    }

    /// Builds a block: a small one on the caller's thread when there is an inline runner
    /// (see [`InlineCalls::try_build`]), else on the pool. Block building is never refused:
    /// the miner must not drop a block because calls are busy. On the pool it queues behind
    /// the calls already admitted to its lane and counts like any request (the miner builds
    /// one block at a time).
    pub async fn build_block(&self, build: BuildBlock) -> Result<BuiltBlock, ExecError> {
        let build = match &self.inline {
            Some(inline) => match inline.try_build(build) {
                BuildHere::Built(built) => {
                    return built.map(|built| BuiltBlock { built_here: true, ..built });
                }
                BuildHere::HandedBack(build) => build,
            },
            None => build,
        };
        self.pool.count.enter();
        let slot = self.place(false);
        self.dispatch_to_end(slot, |lane| Some(&lane.builds), build).await?
    }

    /// Runs `request` (one HTTP request, from its body read to its reply) timing the stages
    /// of the call it makes, if it is admitted: how long before admission, in the pool and
    /// after the answer (see [`Stage`]), counted in [`stage_buckets`](Self::stage_buckets). A
    /// request refused or making no call records nothing; a request making several records
    /// its last.
    pub async fn timed<F: std::future::Future>(&self, request: F) -> F::Output {
        let clock = RequestClock {
            arrival: std::cell::Cell::new(Arrival::Sole),
            entry: tokio::time::Instant::now(),
            admitted: Default::default(),
            answered: Default::default(),
        };
        REQUEST_CLOCK
            .scope(clock, async {
                let output = request.await;
                let _ = REQUEST_CLOCK.try_with(|clock| {
                    let (Some(admitted), Some(answered)) =
                        (clock.admitted.get(), clock.answered.get())
                    else {
                        return;
                    };
                    let now = tokio::time::Instant::now();
                    let stages = &self.pool.stages;
                    stages.record(Stage::Front, admitted.saturating_duration_since(clock.entry));
                    stages.record(Stage::Pool, answered.saturating_duration_since(admitted));
                    stages.record(Stage::After, now.saturating_duration_since(answered));
                    stages.record(Stage::Total, now.saturating_duration_since(clock.entry));
                });
                output
            })
            .await
    }

    /// Each lane's verdict on its queue ([`StandingQueue`](crate::admission::StandingQueue)):
    /// `true` where a standing queue holds its connections' only requests to the plain budget too.
    pub fn standing_queues(&self) -> Vec<bool> {
        self.pool.lanes.iter().map(|lane| lane.standing.get()).collect()
    }

    /// Admitted calls per bucket of [`admission::STAGE_BUCKETS_MICROS`] for `stage`, over the
    /// pool (see [`timed`](Self::timed)).
    pub fn stage_buckets(&self, stage: Stage) -> [u64; admission::STAGE_BUCKETS_MICROS.len() + 1] {
        let mut buckets = [0; admission::STAGE_BUCKETS_MICROS.len() + 1];
        self.pool.stages.add_to(stage, &mut buckets);
        for lane in &self.pool.lanes {
            lane.stages.add_to(stage, &mut buckets);
        }
        buckets
    }

    /// What admission allows.
    pub fn limits(&self) -> AdmissionLimits {
        self.pool.limits
    }

    /// Requests in the pool now (queued or running).
    pub fn in_flight(&self) -> usize {
        self.pool.count.get()
    }

    /// Refusals since start, by [`Refusal::REASONS`].
    pub fn refusals(&self) -> [u64; 2] {
        let [delay, full] = &self.pool.refusals;
        [delay.load(Relaxed), full.load(Relaxed)]
    }

    /// How long requests waited for their executor thread, over the pool, since start.
    pub fn queue_delays(&self) -> DelaySummary {
        let mut summary = DelaySummary::default();
        for lane in &self.pool.lanes {
            lane.delays.add_to(&mut summary);
        }
        summary
    }

    /// Each lane's expected-wait scale ([`WaitScale`](crate::admission::WaitScale)) as a factor
    /// (1.0 = the plain estimate).
    pub fn wait_scales(&self) -> Vec<f64> {
        let one = admission::SCALE_ONE as f64;
        self.pool.lanes.iter().map(|lane| lane.scale.get() as f64 / one).collect()
    }

    /// Each lane's service time per call (`None` before its first call).
    pub fn service_times(&self) -> Vec<Option<Duration>> {
        self.pool.lanes.iter().map(|lane| lane.service.get()).collect()
    }
}

/// An executor answer that may say its run missed fork state (`ExecError::ForkMisses`), for
/// the pool's client to fetch and run the request again.
trait ForkRetry: Sized {
    /// The misses, or the answer as it stands.
    fn missed(self) -> Result<Self, ForkMisses>;
}

impl<T> ForkRetry for Result<T, ExecError> {
    fn missed(self) -> Result<Self, ForkMisses> {
        match self {
            Err(ExecError::ForkMisses(misses)) => Err(misses),
            answer => Ok(answer),
        }
    }
}

impl<T> ForkRetry for Result<T, SimulateError> {
    fn missed(self) -> Result<Self, ForkMisses> {
        match self {
            Err(SimulateError::Exec(ExecError::ForkMisses(misses))) => Err(misses),
            answer => Ok(answer),
        }
    }
}
