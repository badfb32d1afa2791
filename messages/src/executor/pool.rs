//! The executor pool's shared state: its lanes (one per executor thread, with what each
//! measured), the places requests hold on them, and the [`Admitted`] envelope that carries a
//! place to the executor and gives it back when dropped.

use std::sync::Arc;
use std::sync::atomic::Ordering::Relaxed;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::time::Duration;

use actix::{Message, Recipient};
use crossbeam_utils::CachePadded;

use super::{Call, CallMany, EstimateGas, GetTouchedSlots};
use crate::ExecError;
use crate::access_list::CreateAccessList;
use crate::admission::{
    AdmissionLimits, CallStages, DelayHistogram, PoolCount, ServiceTime, Stage, StandingQueue,
    WaitScale,
};
use crate::block_build::BuildBlock;
use crate::payload::BuildPayload;
use crate::simulate::Simulate;
use crate::trace::Trace;

/// A request admitted to the executor pool, carrying its place there. The executor calls
/// [`begin`](Self::begin) as it starts the request; the place is released when this message
/// is dropped, at the end of the executor's handler, right after the request ran (or with the
/// mailbox of an executor that stopped). So "in the pool" means queued or running: an answer
/// the caller has not picked up yet holds no place, and a caller that went away does not free
/// one early. (actix drops such a caller's message unrun when the executor takes it off its
/// queue, and its place with it, without a service-time sample.)
#[derive(Debug)]
pub struct Admitted<M> {
    /// The request to run.
    pub request: M,
    /// Dropped with the message.
    pub(super) slot: Slot,
    /// Whether the run collects its fork misses instead of waiting for them
    /// (`fork::misses`): the client holds a copy of the request to run again.
    pub(super) collect: bool,
}

impl<M> Admitted<M> {
    /// Whether the executor runs it collecting fork misses (answering
    /// [`ExecError::ForkMisses`] when it had any) rather than waiting for the upstream.
    pub const fn collects_misses(&self) -> bool {
        self.collect
    }

    /// Marks the request as started: how long it waited joins the queue-delay histogram, and the
    /// time from now until the message is dropped joins the thread's service time (for calls). The
    /// executor's handler calls this first and returns its error, if any: once the pool is closing
    /// ([`ExecutorClient::close`](super::ExecutorClient::close)) a request other than a block build
    /// is not run but answered [`ExecError::ShuttingDown`]. A request never begun counts neither.
    pub fn begin(&mut self) -> Result<(), ExecError> {
        self.slot.begin()
    }
}

impl<M: Message> Message for Admitted<M> {
    type Result = M::Result;
}

/// One place in the pool and on a lane, released on drop.
pub(super) struct Slot {
    pool: Arc<Pool>,
    pub(super) lane: usize,
    /// Requests on the lane when it was sent, itself included.
    pub(super) depth: usize,
    pub(super) sent: tokio::time::Instant,
    /// Whether its run time is a call's service time: block builds, traces and payloads are
    /// not calls and would skew the time calls are admitted by.
    pub(super) sampled: bool,
    /// Whether the pool's closing answers it instead of running it (all but block builds).
    pub(super) ends_at_close: bool,
    started: Option<tokio::time::Instant>,
}

impl Slot {
    /// A place on lane `lane` of `pool`, sent now behind `depth - 1` others, not begun; one
    /// the pool's closing answers unrun unless the caller says otherwise.
    #[inline]
    pub(super) fn new(pool: Arc<Pool>, lane: usize, depth: usize, sampled: bool) -> Self {
        Self {
            pool,
            lane,
            depth,
            sent: tokio::time::Instant::now(),
            sampled,
            ends_at_close: true,
            started: None,
        }
    }

    fn begin(&mut self) -> Result<(), ExecError> {
        if self.ends_at_close && self.pool.closing.load(Ordering::Acquire) {
            return Err(ExecError::ShuttingDown);
        }
        let now = tokio::time::Instant::now();
        self.started = Some(now);
        let lane = &self.pool.lanes[self.lane];
        lane.delays.record(now - self.sent);
        let since_epoch =
            u64::try_from(now.duration_since(self.pool.epoch).as_nanos()).unwrap_or(u64::MAX);
        lane.standing.record(since_epoch, now - self.sent, self.pool.limits.max_queue_delay);
        if self.sampled {
            self.pool.lanes[self.lane].stages.record(Stage::Queue, now - self.sent);
        }
        Ok(())
    }
}

impl Drop for Slot {
    fn drop(&mut self) {
        let lane = &self.pool.lanes[self.lane];
        lane.in_flight.fetch_sub(1, Relaxed);
        self.pool.count.leave();
        let Some(started) = self.started else { return };
        // Only the executor thread drops a request it began, one at a time, so the previous
        // end on this lane is the end of the request that ran before this one.
        let now = tokio::time::Instant::now();
        let since_epoch = |at: tokio::time::Instant| {
            u64::try_from(at.duration_since(self.pool.epoch).as_nanos()).unwrap_or(u64::MAX)
        };
        let previous_end = lane.last_end.swap(since_epoch(now), Relaxed);
        if self.sampled {
            // The thread's time for this call: from when it was free to take it (the end of
            // the request it queued behind, or its own start when it arrived after that end)
            // to its end. Between calls the thread also takes the next message off its
            // mailbox and may be preempted; counting that time makes the service time the
            // rate calls leave the queue at, which is what the expected wait needs.
            let free_from = if previous_end > since_epoch(self.sent) {
                previous_end
            } else {
                since_epoch(started)
            };
            let took = since_epoch(now).saturating_sub(free_from);
            // Whether it ended within the budget plus one service time of its admission, by
            // the service time it was admitted with (`WaitScale`).
            if let Some(service) = lane.service.get() {
                lane.scale.record(now - self.sent, self.pool.limits.max_queue_delay, service);
            }
            lane.service.record(Duration::from_nanos(took).max(now - started));
            lane.stages.record(Stage::Run, now - started);
        }
    }
}

impl std::fmt::Debug for Slot {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Slot").field("lane", &self.lane).finish_non_exhaustive()
    }
}

/// One executor thread as the client sees it: its recipients, how many requests it holds and
/// what its calls measured.
#[derive(Debug)]
pub struct ExecutorLane {
    pub(super) calls: Recipient<Admitted<Call>>,
    pub(super) estimates: Recipient<Admitted<EstimateGas>>,
    pub(super) builds: Recipient<Admitted<BuildBlock>>,
    pub(super) touched: Recipient<Admitted<GetTouchedSlots>>,
    /// Traces (`debug_trace*`, `trace_*`); `None` for a stand-in that serves none.
    pub(super) traces: Option<Recipient<Admitted<Trace>>>,
    /// eth_simulateV1 runs; `None` on stand-ins that only serve calls and blocks.
    pub(super) simulations: Option<Recipient<Admitted<Simulate>>>,
    /// eth_callMany runs; `None` on stand-ins.
    pub(super) call_bundles: Option<Recipient<Admitted<CallMany>>>,
    /// eth_createAccessList runs; `None` on stand-ins.
    pub(super) access_lists: Option<Recipient<Admitted<CreateAccessList>>>,
    /// testing_buildBlockV1 runs; `None` on stand-ins.
    pub(super) payloads: Option<Recipient<Admitted<BuildPayload>>>,
    /// Requests sent to this lane and not finished (padded: every RPC worker touches it).
    pub(super) in_flight: CachePadded<AtomicUsize>,
    /// How long one call takes on this lane, written by its executor thread.
    pub(super) service: ServiceTime,
    /// How long requests waited on this lane before they ran, written by its executor thread.
    pub(super) delays: DelayHistogram,
    /// When the last request that ran on this lane ended, in nanoseconds since the pool's
    /// epoch (0: none yet); written by its executor thread.
    last_end: CachePadded<AtomicU64>,
    /// How much this lane's expected waits are scaled so that its calls' p99 keeps the budget.
    pub(super) scale: WaitScale,
    /// Whether its requests' waits show a standing queue (written by its executor thread).
    pub(super) standing: StandingQueue,
    /// The stages its executor thread times (queue, run), apart from the front's.
    pub(super) stages: CallStages,
}

impl ExecutorLane {
    /// The recipients of one executor (or of a stand-in, in tests).
    pub fn new(
        calls: Recipient<Admitted<Call>>,
        estimates: Recipient<Admitted<EstimateGas>>,
        builds: Recipient<Admitted<BuildBlock>>,
        touched: Recipient<Admitted<GetTouchedSlots>>,
    ) -> Self {
        Self {
            calls,
            estimates,
            builds,
            touched,
            traces: None,
            simulations: None,
            call_bundles: None,
            access_lists: None,
            payloads: None,
            in_flight: Default::default(),
            service: ServiceTime::default(),
            delays: DelayHistogram::default(),
            last_end: Default::default(),
            scale: WaitScale::default(),
            standing: StandingQueue::default(),
            stages: CallStages::default(),
        }
    }

    /// Lets this lane serve traces too.
    #[must_use]
    pub fn with_traces(mut self, traces: Recipient<Admitted<Trace>>) -> Self {
        self.traces = Some(traces);
        self
    }

    /// Lets this lane run eth_createAccessList requests.
    #[must_use]
    pub fn with_access_lists(mut self, lists: Recipient<Admitted<CreateAccessList>>) -> Self {
        self.access_lists = Some(lists);
        self
    }

    /// Lets this lane build testing_buildBlockV1 payloads.
    #[must_use]
    pub fn with_payloads(mut self, payloads: Recipient<Admitted<BuildPayload>>) -> Self {
        self.payloads = Some(payloads);
        self
    }

    /// Lets this lane run eth_callMany requests.
    #[must_use]
    pub fn with_call_many(mut self, bundles: Recipient<Admitted<CallMany>>) -> Self {
        self.call_bundles = Some(bundles);
        self
    }

    /// Lets this lane run eth_simulateV1 requests.
    #[must_use]
    pub fn with_simulate(mut self, simulations: Recipient<Admitted<Simulate>>) -> Self {
        self.simulations = Some(simulations);
        self
    }
}

/// What every clone of a client shares: the lanes, the pool-wide count and the refusals.
#[derive(Debug)]
pub(super) struct Pool {
    pub(super) lanes: Box<[ExecutorLane]>,
    pub(super) limits: AdmissionLimits,
    /// Requests in the pool, waiting or running; capped at `max_queued` + one per lane.
    pub(super) count: PoolCount,
    /// Where the next search for the least busy lane starts (spreads ties).
    pub(super) next: CachePadded<AtomicUsize>,
    /// Refusals by [`Refusal::index`](crate::admission::Refusal::index); bumped only when refusing.
    pub(super) refusals: [CachePadded<AtomicU64>; 2],
    /// `true` once the node began shutting down
    /// ([`ExecutorClient::close`](super::ExecutorClient::close)): nothing new is admitted, and each
    /// request still queued is answered [`ExecError::ShuttingDown`] when its executor reaches it,
    /// unrun. An atomic, not a channel callers wait on: a call's path takes no lock (a tokio
    /// `watch` takes an `RwLock` to read and a `Mutex` to wait).
    pub(super) closing: AtomicBool,
    /// What the lanes' `last_end` times count from.
    epoch: tokio::time::Instant,
    /// Whether the chain is a fork, whose read-only requests then run collecting their fork misses
    /// ([`ExecutorClient::set_fork_reads`](super::ExecutorClient::set_fork_reads)); elsewhere no
    /// copy of a request is kept.
    pub(super) fork_reads: AtomicBool,
    /// Where admitted calls' time went in the RPC front
    /// ([`ExecutorClient::timed`](super::ExecutorClient::timed)); the executors' stages are the
    /// lanes'.
    pub(super) stages: CallStages,
}

impl Pool {
    /// A pool over `lanes`, admitting by `limits`, open, not on a fork, counting from now.
    pub(super) fn new(lanes: Box<[ExecutorLane]>, limits: AdmissionLimits) -> Self {
        Self {
            lanes,
            limits,
            count: PoolCount::default(),
            next: Default::default(),
            refusals: Default::default(),
            closing: AtomicBool::new(false),
            epoch: tokio::time::Instant::now(),
            fork_reads: AtomicBool::new(false),
            stages: CallStages::default(),
        }
    }
}
