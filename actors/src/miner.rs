//! `MinerActor`: decides when blocks are made.
//!
//! - **Owns:** the mining mode (automine, interval timer with a fixed or random block time,
//!   both, or manual), the block gas limit and coinbase, the clock that stamps blocks with its
//!   offset, one-block overrides (next timestamp, base fee, prevrandao), the timestamp interval
//!   (anvil_setBlockTimestampInterval) and the clocks saved with evm_snapshot.
//! - **Takes:** `AutoMine` (as `Ask`, from the mempool after an admission, `ThenMine`),
//!   `MineBlocks`, `MineDetailed`, `MineSpaced`, `Rewind`
//!   (anvil_rollback / anvil_reorg: the state owner's `Rollback`, then the new blocks, as one
//!   run), `SetAutomine`, `SetIntervalMining`, `SetBlockParam`, `SetTime`,
//!   `SetTimestampInterval`, `GetMiningStatus`, and `BetweenBlocks` of `PatchState`,
//!   `TakeSnapshot`, `RevertTo` and `LoadState` (the head-state writes outside a block, passed
//!   on between two blocks; a snapshot saves the miner's clock, a revert turns it back);
//!   `ResetTo` (anvil_reset: the state owner's `ReplaceChain` between two
//!   blocks); and `StopMining` (shutdown: once the executor pool is closed no block starts, and
//!   the answer comes after the block in progress). The other messages come from `MinerClient`.
//! - **Sends:** `TakePending` and `TxsMined` to the mempool, `BuildBlock` through
//!   `ExecutorClient` (never refused: a small block is built on this thread by the inline
//!   runner, any other on the executor pool), `CommitBlock`, `Rollback`, `ReplaceChain` and
//!   the `BetweenBlocks` writes to the state owner, and, when the state owner shares this
//!   thread, `Settle` once a run that made blocks has been answered (`MinerPeers::settle`).
//! - **Mailbox:** `--actors.mailbox` (default 1024). One block at a time: handlers are atomic
//!   futures, so a second request waits in the mailbox until the first block is committed.
//! - **Restart:** `Restart` (`supervise`): a panic in a handler or a mining run fails that
//!   request (-32603) and the miner goes on from its settings; it holds no state that is not
//!   in the chain or its settings.
//!
//! **Core and shell.** `MinerCore` (`miner/core.rs`) holds the state and the rules without actix,
//! tokio or a wall clock: `clock.rs` the block clock (offset, one-block overrides, timestamp
//! interval, saved clocks), `schedule.rs` the interval timer, `series.rs` multi-block requests and
//! their chunks, `block.rs` what kind of block is mined and how it is stamped. Its methods take the
//! time as arguments, so `miner/model.rs` checks them against a plain model with proptest. This
//! file is the shell: each handler reads the clocks, calls the core, and carries out what it
//! decides; `job.rs` runs a block with the peers.
//!
//! The interval timer runs on the tokio clock (`run_later`), so paused-time tests drive it.
//! The miner only sequences: a block's run is a future apart from the handler, so the mailbox
//! keeps moving while a large block executes on the pool. A small one (at most 1M gas, see
//! `executor::inline`) executes on this thread, which the mempool shares, because its trip to
//! an executor thread cost more than running it.

mod block;
mod clock;
mod core;
mod job;
#[cfg(test)]
mod model;
mod schedule;
mod series;

use std::future::Future;
use std::num::NonZeroUsize;
use std::sync::Arc;
use std::time::Duration;

use actix::{
    Actor, ActorFutureExt, Addr, AsyncContext, AtomicResponse, Context, Handler, MailboxError,
    Recipient, ResponseFuture, SpawnHandle, WrapFuture,
};
use alloy_primitives::{Address, B256};
use hearth_messages::MineError;
use hearth_messages::executor::ExecutorClient;
use hearth_messages::mempool::{TakePending, TxsMined};
use hearth_messages::miner::{
    AutoMine, BetweenBlocks, GetMiningStatus, IntervalMining, MineBlocks, MineDetailed, MineSpaced,
    MinedBlock, Rewind, SetAutomine, SetBlockParam, SetIntervalMining, SetTime,
    SetTimestampInterval, StopMining,
};
use hearth_messages::reset::ResetTo;
use hearth_messages::state::{
    CommitBlock, LoadState, PatchState, ReplaceChain, RevertTo, Rollback, Settle, TakeSnapshot,
};
use hearth_storage::{ChainDb, SealedBlock};
use tokio::sync::oneshot;
use tokio::time::Instant;
use tracing::{info, warn};

use self::block::{BlockKind, BlockRules, Stamped};
use self::core::{MinerCore, Settings};
use self::job::{ChunkRun, MineJob, RunOutcome, Txs};
use self::schedule::Tick;
use self::series::{Series, SeriesStep, Spacing};
use crate::supervise::{Restart, RestartCounter, contain, contain_future, restarted};

/// Seconds since the Unix epoch. Injected so tests stamp blocks deterministically.
pub type Clock = Arc<dyn Fn() -> u64 + Send + Sync>;

/// What a contained block build hands back to the actor: its answer and the last block it
/// sealed, or the payload of the panic that stopped it.
type BuildOutcome<T> =
    Result<(Result<T, MineError>, Option<Arc<SealedBlock>>), Box<dyn std::any::Any + Send>>;

/// The wall clock.
pub fn system_clock() -> Clock {
    Arc::new(|| {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_secs())
            .unwrap_or_default()
    })
}

/// How the miner makes blocks.
#[derive(Clone)]
pub struct MinerConfig {
    /// Mine as soon as a transaction is admitted.
    pub automine: bool,
    /// Mine on the miner's own timer too (fixed block time or a random range).
    pub interval: Option<IntervalMining>,
    /// Gas limit of every block.
    pub gas_limit: u64,
    /// Fee recipient.
    pub coinbase: Address,
    /// Block timestamps come from here.
    pub clock: Clock,
    /// Seed of the generator that draws random block times.
    pub seed: u64,
}

impl std::fmt::Debug for MinerConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MinerConfig")
            .field("automine", &self.automine)
            .field("interval", &self.interval)
            .field("gas_limit", &self.gas_limit)
            .field("coinbase", &self.coinbase)
            .finish_non_exhaustive()
    }
}

/// The peers the miner talks to. Recipients, so tests can stand a `Probe` in for any of them.
#[derive(Debug, Clone)]
pub struct MinerPeers {
    /// The mempool's `TakePending`.
    pub take_pending: Recipient<TakePending>,
    /// The mempool's `TxsMined`.
    pub txs_mined: Recipient<TxsMined>,
    /// The executor pool.
    pub executor: ExecutorClient,
    /// The state owner's `CommitBlock`.
    pub commit: Recipient<CommitBlock>,
    /// The state owner's `Rollback` (anvil_rollback and anvil_reorg go through the miner, so
    /// that no block is being built on a head that goes away).
    pub rollback: Recipient<Rollback>,
    /// The state owner's `ReplaceChain` (anvil_reset goes through the miner for the same
    /// reason).
    pub replace: Recipient<ReplaceChain>,
    /// The state owner's writes of the head state outside a block, passed on between blocks
    /// (`BetweenBlocks`): a block being built would undo them when it commits.
    pub head_writes: HeadWrites,
    /// What the node prints of the blocks it mines (`report`): their transactions and
    /// console output.
    pub show: crate::exec::Show,
    /// The state owner's `Settle`, when it shares this thread (a chain in memory): sent once a
    /// run that made blocks (automine, evm_mine and friends, an interval tick) has been
    /// answered, so the last block's apply to the store runs while the thread waits for the
    /// next request rather than at the start of the next commit, on the next caller's path.
    /// `None` when the state owner has a thread of its own (it applies at once).
    pub settle: Option<Recipient<Settle>>,
}

/// The state owner's recipients for the head-state writes the miner passes on between blocks.
#[derive(Debug, Clone)]
pub struct HeadWrites {
    /// Dev patches (anvil_setBalance and friends).
    pub patch: Recipient<PatchState>,
    /// evm_snapshot.
    pub snapshot: Recipient<TakeSnapshot>,
    /// evm_revert.
    pub revert: Recipient<RevertTo>,
    /// anvil_loadState.
    pub load: Recipient<LoadState>,
}

impl HeadWrites {
    /// All four from one state owner.
    pub fn of<A>(state: &Addr<A>) -> Self
    where
        A: Actor
            + Handler<PatchState>
            + Handler<TakeSnapshot>
            + Handler<RevertTo>
            + Handler<LoadState>,
        A::Context: actix::dev::ToEnvelope<A, PatchState>
            + actix::dev::ToEnvelope<A, TakeSnapshot>
            + actix::dev::ToEnvelope<A, RevertTo>
            + actix::dev::ToEnvelope<A, LoadState>,
    {
        Self {
            patch: state.clone().recipient(),
            snapshot: state.clone().recipient(),
            revert: state.clone().recipient(),
            load: state.clone().recipient(),
        }
    }
}

/// The miner: the actix shell around `MinerCore`. Each handler unpacks its message, reads
/// the clocks, calls the core and carries out what it decides (runs a `MineJob`, arms the
/// timer, answers).
pub struct MinerActor {
    db: ChainDb,
    peers: MinerPeers,
    /// The wall clock blocks are stamped from.
    clock: Clock,
    core: MinerCore<SeriesReply>,
    /// Where the core's timer time counts from, on the tokio clock (paused-time tests move it).
    origin: Instant,
    timer: Option<SpawnHandle>,
    restarts: RestartCounter,
    /// A `SettleAfterAnswer` is queued (at most one: under load the mailbox is served first).
    settle_queued: bool,
}

impl std::fmt::Debug for MinerActor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MinerActor").field("core", &self.core).finish_non_exhaustive()
    }
}

impl MinerActor {
    /// A miner building on `db`'s head.
    pub fn new(db: ChainDb, peers: MinerPeers, config: MinerConfig) -> Self {
        let MinerConfig { automine, interval, gas_limit, coinbase, clock, seed } = config;
        let settings = Settings { automine, gas_limit, coinbase };
        Self {
            db,
            peers,
            clock,
            core: MinerCore::new(settings, interval, seed),
            origin: Instant::now(),
            timer: None,
            restarts: RestartCounter::default(),
            settle_queued: false,
        }
    }

    /// Starts the actor on its own arbiter with its mailbox bounded from the first message on.
    pub fn start_bounded(self, mailbox: NonZeroUsize) -> Addr<Self> {
        crate::bounded::start_on_own_thread(self, mailbox)
    }

    /// Starts the actor on the current thread's runtime (tests: its timer then follows a
    /// paused tokio clock), with its mailbox bounded from the first message on.
    pub fn start_here(self, mailbox: NonZeroUsize) -> Addr<Self> {
        Self::create(move |ctx| {
            ctx.set_mailbox_capacity(mailbox.get());
            self
        })
    }

    /// How many times the miner restarted after a panic (for `/metrics`).
    pub fn restart_counter(&self) -> RestartCounter {
        self.restarts.clone()
    }

    /// The wall clock, in seconds.
    fn now(&self) -> u64 {
        (self.clock)()
    }

    /// The timer's time: since the miner was made, on the tokio clock.
    fn at(&self) -> Duration {
        self.origin.elapsed()
    }

    /// The head's timestamp (0 when the head cannot be read).
    fn parent_timestamp(&self) -> u64 {
        let head = self.db.head_number().unwrap_or_default();
        self.db.header(head).ok().flatten().map_or(0, |h| h.timestamp)
    }

    fn job(&self, rules: BlockRules) -> MineJob {
        MineJob {
            db: self.db.clone(),
            peers: self.peers.clone(),
            clock: Arc::clone(&self.clock),
            rules,
        }
    }

    /// Runs `run` as the only thing the actor does until it ends (blocks are built one at a
    /// time), then tells the core the blocks it made, stamped as `stamped` says.
    fn atomic<T: 'static>(
        &mut self,
        run: impl Future<Output = RunOutcome<T>> + 'static,
        stamped: Stamped,
    ) -> AtomicResponse<Self, Result<T, MineError>> {
        let started = self.at();
        let run = contain_future(run);
        AtomicResponse::new(Box::pin(
            run.into_actor(self)
                .map(move |outcome, act, ctx| act.build_ended(started, outcome, stamped, ctx)),
        ))
    }

    /// Where every contained block build ends, on the actor: records its timing, restarts the
    /// miner if it panicked, else tells the core the blocks it made.
    fn build_ended<T>(
        &mut self,
        started: Duration,
        outcome: BuildOutcome<T>,
        stamped: Stamped,
        ctx: &mut Context<Self>,
    ) -> Result<T, MineError> {
        self.core.build_ran(started, self.at());
        let (result, last) = match outcome {
            Ok(outcome) => outcome,
            Err(panic) => return Err(self.restarted_after(&*panic, ctx)),
        };
        if let Some(block) = last {
            self.core.blocks_made(block.header.timestamp, stamped, self.now());
            // Handled after this run's answer is sent (`ctx.wait` sends it once this returns).
            self.settle_soon(ctx);
        }
        result
    }

    /// Has a state owner on this thread apply the block just made once the current answer is
    /// out: a notified message is handled after the running future has finished (and after
    /// the messages already in the mailbox), and it sends `Settle` from a task queued behind
    /// the ones the answer woke, so the caller has its answer before the state owner applies.
    /// At most one is queued.
    fn settle_soon(&mut self, ctx: &mut Context<Self>) {
        if self.peers.settle.is_some() && !self.settle_queued {
            self.settle_queued = true;
            ctx.notify(SettleAfterAnswer);
        }
    }

    /// Restarts the miner after a panic in one of its runs (the timer re-armed from its
    /// settings) and gives the error the run's caller gets.
    fn restarted_after(
        &mut self,
        panic: &(dyn std::any::Any + Send),
        ctx: &mut Context<Self>,
    ) -> MineError {
        let what = restarted(self, panic);
        self.arm_timer(ctx);
        MineError::Panicked(what)
    }

    /// Runs a handler's `work`, containing a panic in it (see [`contain`]).
    fn contained<T>(
        &mut self,
        ctx: &mut Context<Self>,
        work: impl FnOnce(&mut Self, &mut Context<Self>) -> T,
    ) -> Result<T, MineError> {
        let result = contain(self, |act| work(act, ctx));
        result.map_err(|what| {
            self.arm_timer(ctx);
            MineError::Panicked(what)
        })
    }

    /// (Re)arms the timer from now, or disarms it when interval mining is off.
    fn arm_timer(&mut self, ctx: &mut Context<Self>) {
        let due = self.core.arm(self.at());
        self.set_timer(ctx, due);
    }

    /// Cancels the pending tick, and schedules one at `due` (timer time) when given.
    fn set_timer(&mut self, ctx: &mut Context<Self>, due: Option<Duration>) {
        if let Some(handle) = self.timer.take() {
            ctx.cancel_future(handle);
        }
        if let Some(due) = due {
            let delay = due.saturating_sub(self.at());
            self.timer = Some(ctx.run_later(delay, |act, ctx| act.tick(ctx)));
        }
    }

    /// A timer tick: the core says whether it makes a block or was skipped.
    fn tick(&mut self, ctx: &mut Context<Self>) {
        self.timer = None;
        if self.peers.executor.is_closed() {
            // Shutting down: no new block, and no next tick.
            return;
        }
        match self.core.tick(self.at()) {
            Tick::Off => {}
            Tick::Skipped { skipped, total, next } => {
                warn!(target: "actors::miner", skipped, total, "block timer ticks skipped: a block was still being built");
                self.set_timer(ctx, Some(next));
            }
            Tick::Mine { next } => {
                self.set_timer(ctx, Some(next));
                self.mine_tick(ctx);
            }
        }
    }

    /// Mines the tick's block; the actor does nothing else meanwhile.
    fn mine_tick(&mut self, ctx: &mut Context<Self>) {
        let job = self.job(self.core.rules());
        let started = self.at();
        let run = contain_future(async move {
            match job.mine(BlockKind::Tick, Txs::Pool).await {
                Ok(mined) => mined.block,
                Err(error) => {
                    warn!(target: "actors::miner", %error, "interval block failed");
                    None
                }
            }
        });
        ctx.wait(run.into_actor(self).map(move |block, act, ctx| {
            act.core.build_ran(started, act.at());
            match block {
                Ok(Some(block)) => {
                    act.core.blocks_made(block.header.timestamp, Stamped::ByClock, act.now());
                    act.settle_soon(ctx);
                }
                Ok(None) => {}
                Err(panic) => {
                    act.restarted_after(&*panic, ctx);
                }
            }
        }));
    }
}

impl Actor for MinerActor {
    type Context = Context<Self>;

    fn started(&mut self, ctx: &mut Self::Context) {
        self.arm_timer(ctx);
    }
}

/// Sent to itself by a run that made a block (automine, evm_mine and friends, an interval
/// tick): passes `Settle` on to a state owner on this thread once the run's answer is out.
#[derive(actix::Message)]
#[rtype(result = "()")]
struct SettleAfterAnswer;

impl Handler<SettleAfterAnswer> for MinerActor {
    type Result = ();

    fn handle(&mut self, _msg: SettleAfterAnswer, _ctx: &mut Self::Context) {
        self.settle_queued = false;
        let Some(settle) = self.peers.settle.clone() else { return };
        // A task of its own, queued behind the tasks the answer woke (evm_mine's answer goes
        // through one more task, the handler's response future), and once more behind what
        // they wake: the block's apply comes after the caller has its answer. A full mailbox
        // drops the nudge: the state owner's own timer, or the next commit, applies the block.
        actix::spawn(async move {
            tokio::task::yield_now().await;
            let _ = settle.try_send(Settle);
        });
    }
}

impl Handler<AutoMine> for MinerActor {
    type Result = AtomicResponse<Self, Result<Option<u64>, MineError>>;

    fn handle(&mut self, _msg: AutoMine, _ctx: &mut Self::Context) -> Self::Result {
        let job = self.core.automine().map(|rules| self.job(rules));
        self.atomic(
            async move {
                match job {
                    Some(job) => job.mine_pending().await,
                    None => (Ok(None), None),
                }
            },
            Stamped::ByClock,
        )
    }
}

/// What a series answers.
#[derive(Debug)]
enum SeriesReply {
    /// The last block's number (evm_mine, anvil_mine).
    Last(oneshot::Sender<Result<u64, MineError>>),
    /// Every block mined, with its transactions' outputs (evm_mine_detailed), gathered chunk
    /// by chunk.
    Detailed { reply: oneshot::Sender<Result<Vec<MinedBlock>, MineError>>, mined: Vec<MinedBlock> },
}

impl SeriesReply {
    fn wants_blocks(&self) -> bool {
        matches!(self, Self::Detailed { .. })
    }

    fn is_closed(&self) -> bool {
        match self {
            Self::Last(reply) => reply.is_closed(),
            Self::Detailed { reply, .. } => reply.is_closed(),
        }
    }

    /// The series is done, `last` its last block.
    fn finish(self, last: u64) {
        // A caller that went away gets nothing, and needs nothing.
        let _ = match self {
            Self::Last(reply) => reply.send(Ok(last)).map_err(drop),
            Self::Detailed { reply, mined } => reply.send(Ok(mined)).map_err(drop),
        };
    }

    fn fail(self, error: MineError) {
        let _ = match self {
            Self::Last(reply) => reply.send(Err(error)).map_err(drop),
            Self::Detailed { reply, .. } => reply.send(Err(error)).map_err(drop),
        };
    }
}

/// The answer of a queued series, once its reply comes.
fn answer<T: Send + 'static>(
    answer: oneshot::Receiver<Result<T, MineError>>,
) -> ResponseFuture<Result<T, MineError>> {
    Box::pin(async move { answer.await.unwrap_or(Err(MineError::Mailbox(MailboxError::Closed))) })
}

impl MinerActor {
    /// Queues a series and starts mining it unless a chunk is being mined.
    fn push_series(&mut self, ctx: &mut Context<Self>, series: Series<SeriesReply>) {
        self.core.push_series(series);
        self.mine_next_chunk(ctx);
    }

    /// Mines the next chunk of the oldest series, unless a chunk is being mined. The actor
    /// does nothing else meanwhile (`ctx.wait`), so blocks are still built one at a time; once
    /// the chunk is committed the mailbox has its turn before the next chunk starts.
    fn mine_next_chunk(&mut self, ctx: &mut Context<Self>) {
        let Some((series, chunk)) = self.core.next_chunk() else { return };
        let collect = series.reply.wants_blocks();
        let run = self.job(self.core.rules()).mine_chunk(chunk, collect);
        let started = self.at();
        ctx.wait(
            contain_future(run)
                .into_actor(self)
                .map(move |outcome, act, ctx| act.chunk_ended(series, started, outcome, ctx)),
        );
    }

    /// A chunk's run ended: the core says what comes of its series, the shell answers.
    fn chunk_ended(
        &mut self,
        mut series: Series<SeriesReply>,
        started: Duration,
        outcome: Result<ChunkRun, Box<dyn std::any::Any + Send>>,
        ctx: &mut Context<Self>,
    ) {
        self.core.build_ran(started, self.at());
        let ChunkRun { result, chunk, last, mined } = match outcome {
            Ok(run) => run,
            Err(panic) => {
                self.core.chunk_panicked();
                series.reply.fail(self.restarted_after(&*panic, ctx));
                return;
            }
        };
        if let SeriesReply::Detailed { mined: all, .. } = &mut series.reply {
            all.extend(mined);
        }
        let waiting = !series.reply.is_closed();
        if last.is_some() {
            // Handled after the answer below, and before the next chunk.
            self.settle_soon(ctx);
        }
        let last = last.map(|block| block.header.timestamp);
        match self.core.chunk_ended(series, &chunk, result, last, self.now(), waiting) {
            SeriesStep::Finished { reply, last } => reply.finish(last),
            SeriesStep::Failed { reply, error } => reply.fail(error),
            // Nobody waits for the rest of an abandoned one: the caller went away.
            SeriesStep::Continues | SeriesStep::Abandoned => {}
        }
        // Spawned, not called: the mailbox is served before the next chunk begins.
        ctx.spawn(actix::fut::ready(()).map(|(), act: &mut Self, ctx| act.mine_next_chunk(ctx)));
    }
}

impl Handler<MineBlocks> for MinerActor {
    type Result = ResponseFuture<Result<u64, MineError>>;

    fn handle(&mut self, msg: MineBlocks, ctx: &mut Self::Context) -> Self::Result {
        let (reply, receiver) = oneshot::channel();
        // A given timestamp stamps the first block; later ones follow it a second apart.
        let stamped = if msg.timestamp.is_some() { Stamped::ByCaller } else { Stamped::ByClock };
        let reply = SeriesReply::Last(reply);
        self.push_series(
            ctx,
            Series::new(msg.count, msg.timestamp, Spacing::Clock, stamped, reply),
        );
        answer(receiver)
    }
}

impl Handler<MineDetailed> for MinerActor {
    type Result = ResponseFuture<Result<Vec<MinedBlock>, MineError>>;

    fn handle(&mut self, msg: MineDetailed, ctx: &mut Self::Context) -> Self::Result {
        let (reply, receiver) = oneshot::channel();
        let stamped = if msg.timestamp.is_some() { Stamped::ByCaller } else { Stamped::ByClock };
        let reply = SeriesReply::Detailed { reply, mined: Vec::new() };
        self.push_series(
            ctx,
            Series::new(msg.count, msg.timestamp, Spacing::Clock, stamped, reply),
        );
        answer(receiver)
    }
}

impl Handler<MineSpaced> for MinerActor {
    type Result = ResponseFuture<Result<u64, MineError>>;

    fn handle(&mut self, msg: MineSpaced, ctx: &mut Self::Context) -> Self::Result {
        let (reply, receiver) = oneshot::channel();
        // The first block takes the clock; each later one comes `interval` seconds after.
        let spacing = Spacing::Seconds(msg.interval.max(1));
        let reply = SeriesReply::Last(reply);
        self.push_series(ctx, Series::new(msg.count, None, spacing, Stamped::ByCaller, reply));
        answer(receiver)
    }
}

impl Handler<Rewind> for MinerActor {
    type Result = AtomicResponse<Self, Result<u64, MineError>>;

    /// Rolls back, resets the clock and gas limit to the new head's (anvil's rollback), then
    /// mines the given blocks, all as one atomic run: no other block is built in between.
    fn handle(&mut self, msg: Rewind, _ctx: &mut Self::Context) -> Self::Result {
        let Rewind { depth, blocks } = msg;
        let rollback = self.peers.rollback.clone();
        let started = self.at();
        let rolled = contain_future(async move {
            rollback
                .send(Rollback { depth })
                .await
                .map_err(MineError::from)?
                .map_err(MineError::from)
        });
        let run = rolled.into_actor(self).then(move |outcome, act, ctx| {
            let header = match outcome {
                Ok(Ok(header)) => header,
                Ok(Err(error)) => {
                    return futures_util::future::Either::Left(actix::fut::ready(Err(error)));
                }
                Err(panic) => {
                    let error = act.restarted_after(&*panic, ctx);
                    return futures_util::future::Either::Left(actix::fut::ready(Err(error)));
                }
            };
            // The next blocks follow the new head: its timestamp, its gas limit.
            act.core.rewound(header.timestamp, header.gas_limit, act.now());
            let mine = contain_future(act.job(act.core.rules()).mine_given(blocks));
            futures_util::future::Either::Right(mine.into_actor(act).map(
                move |outcome, act, ctx| act.build_ended(started, outcome, Stamped::ByClock, ctx),
            ))
        });
        AtomicResponse::new(Box::pin(run))
    }
}

impl Handler<ResetTo> for MinerActor {
    type Result = AtomicResponse<Self, Result<alloy_consensus::Header, MineError>>;

    /// Has the state owner publish the new chain, then runs the clock from its head as at a
    /// start: no offset, no one-block settings, no saved clocks (their snapshots are gone),
    /// the head's gas limit. The mining mode, coinbase and timestamp interval stay, as anvil
    /// 1.7.1 keeps them. Atomic like a block: no block is being built while the chain changes.
    fn handle(&mut self, msg: ResetTo, _ctx: &mut Self::Context) -> Self::Result {
        let replace = self.peers.replace.clone();
        let replaced = contain_future(async move {
            replace
                .send(ReplaceChain(msg.chain))
                .await
                .map_err(MineError::from)?
                .map_err(MineError::from)
        });
        AtomicResponse::new(Box::pin(replaced.into_actor(self).map(|outcome, act, ctx| {
            let header = match outcome {
                Ok(result) => result?,
                Err(panic) => return Err(act.restarted_after(&*panic, ctx)),
            };
            act.core.reset(header.gas_limit);
            info!(target: "actors::miner", head = header.number, "mining on the reset chain");
            Ok(header)
        })))
    }
}

impl Handler<SetIntervalMining> for MinerActor {
    type Result = ();

    fn handle(&mut self, msg: SetIntervalMining, ctx: &mut Self::Context) -> Self::Result {
        info!(target: "actors::miner", interval = ?msg.0, "interval mining set");
        let _ = self.contained(ctx, |act, ctx| {
            let due = act.core.set_interval(msg.0, act.at());
            act.set_timer(ctx, due);
        });
    }
}

impl Handler<StopMining> for MinerActor {
    type Result = ();

    fn handle(&mut self, _msg: StopMining, ctx: &mut Self::Context) {
        self.set_timer(ctx, None);
        info!(target: "actors::miner", "mining stopped for shutdown");
    }
}

impl Handler<SetAutomine> for MinerActor {
    type Result = ();

    fn handle(&mut self, msg: SetAutomine, _ctx: &mut Self::Context) -> Self::Result {
        info!(target: "actors::miner", automine = msg.0, "automine set");
        self.core.set_automine(msg.0);
    }
}

impl MinerActor {
    /// Passes one head-state write to the state owner as an atomic future: no block is being
    /// built meanwhile, and none starts before `then` has run on the actor with the answer.
    fn between_blocks<T: 'static>(
        &mut self,
        write: impl Future<Output = Result<Result<T, hearth_messages::StateError>, MailboxError>>
        + 'static,
        then: impl FnOnce(&mut MinerCore<SeriesReply>, &T) + 'static,
    ) -> AtomicResponse<Self, Result<T, MineError>> {
        let write = contain_future(async move { Ok::<T, MineError>(write.await??) });
        AtomicResponse::new(Box::pin(write.into_actor(self).map(|outcome, act, ctx| {
            let answer = match outcome {
                Ok(result) => result?,
                Err(panic) => return Err(act.restarted_after(&*panic, ctx)),
            };
            then(&mut act.core, &answer);
            Ok(answer)
        })))
    }
}

impl Handler<BetweenBlocks<PatchState>> for MinerActor {
    type Result = AtomicResponse<Self, Result<B256, MineError>>;

    fn handle(&mut self, msg: BetweenBlocks<PatchState>, _ctx: &mut Self::Context) -> Self::Result {
        let write = self.peers.head_writes.patch.send(msg.0);
        self.between_blocks(write, |_, _| {})
    }
}

impl Handler<BetweenBlocks<LoadState>> for MinerActor {
    type Result = AtomicResponse<Self, Result<B256, MineError>>;

    fn handle(&mut self, msg: BetweenBlocks<LoadState>, _ctx: &mut Self::Context) -> Self::Result {
        let write = self.peers.head_writes.load.send(msg.0);
        self.between_blocks(write, |_, _| {})
    }
}

impl Handler<BetweenBlocks<TakeSnapshot>> for MinerActor {
    type Result = AtomicResponse<Self, Result<u64, MineError>>;

    /// Takes the state owner's snapshot and saves the clock (time offset and next-block
    /// settings) under its id, so that evm_revert also turns the clock back, as Hardhat does.
    fn handle(
        &mut self,
        msg: BetweenBlocks<TakeSnapshot>,
        _ctx: &mut Self::Context,
    ) -> Self::Result {
        let write = self.peers.head_writes.snapshot.send(msg.0);
        self.between_blocks(write, |core, id| core.snapshot_taken(*id))
    }
}

impl Handler<BetweenBlocks<RevertTo>> for MinerActor {
    type Result = AtomicResponse<Self, Result<bool, MineError>>;

    /// Reverts the state owner to the snapshot; when it knew the id, turns the clock back to
    /// what was saved with it and forgets that and every later save.
    fn handle(&mut self, msg: BetweenBlocks<RevertTo>, _ctx: &mut Self::Context) -> Self::Result {
        let id = msg.0.0;
        let write = self.peers.head_writes.revert.send(msg.0);
        self.between_blocks(write, move |core, reverted| core.reverted(id, *reverted))
    }
}

impl Handler<BetweenBlocks<CommitBlock>> for MinerActor {
    type Result = AtomicResponse<Self, Result<Arc<SealedBlock>, MineError>>;

    /// Commits a block built or checked elsewhere (the Engine API's), between two of this
    /// miner's: the state owner then checks it extends the head state it was executed on.
    fn handle(
        &mut self,
        msg: BetweenBlocks<CommitBlock>,
        _ctx: &mut Self::Context,
    ) -> Self::Result {
        let write = self.peers.commit.send(msg.0);
        self.between_blocks(write, |_, _| {})
    }
}

impl Handler<GetMiningStatus> for MinerActor {
    type Result = actix::MessageResult<GetMiningStatus>;

    fn handle(&mut self, _msg: GetMiningStatus, _ctx: &mut Self::Context) -> Self::Result {
        actix::MessageResult(self.core.status(self.parent_timestamp(), self.now()))
    }
}

impl Handler<SetBlockParam> for MinerActor {
    type Result = Result<u64, MineError>;

    fn handle(&mut self, msg: SetBlockParam, ctx: &mut Self::Context) -> Self::Result {
        let (parent, now) = (self.parent_timestamp(), self.now());
        self.contained(ctx, |act, _| act.core.set_block_param(msg, parent, now))?
    }
}

impl Handler<SetTime> for MinerActor {
    type Result = Result<u64, MineError>;

    fn handle(&mut self, msg: SetTime, ctx: &mut Self::Context) -> Self::Result {
        let (parent, now) = (self.parent_timestamp(), self.now());
        let past = self.contained(ctx, |act, _| act.core.set_time(msg.0, parent, now))??;
        let offset = self.core.offset_secs();
        info!(target: "actors::miner", timestamp = msg.0, offset, "clock set");
        Ok(past)
    }
}

impl Handler<SetTimestampInterval> for MinerActor {
    type Result = bool;

    fn handle(&mut self, msg: SetTimestampInterval, _ctx: &mut Self::Context) -> Self::Result {
        info!(target: "actors::miner", interval = ?msg.0, "block timestamp interval set");
        self.core.set_timestamp_interval(msg.0)
    }
}

impl Restart for MinerActor {
    const NAME: &'static str = "miner";

    /// The core is rebuilt from what outlives a run (see `MinerCore::restart`); the queued
    /// series' callers get an error. The caller re-arms the timer from the settings.
    fn restart(&mut self) {
        for reply in self.core.restart() {
            reply.fail(MineError::Panicked("the miner restarted".into()));
        }
    }

    fn restarts(&self) -> &RestartCounter {
        &self.restarts
    }
}

#[cfg(feature = "test-hooks")]
impl Handler<crate::supervise::PanicForTest> for MinerActor {
    type Result = Result<(), MineError>;

    fn handle(
        &mut self,
        msg: crate::supervise::PanicForTest,
        ctx: &mut Self::Context,
    ) -> Self::Result {
        self.contained(ctx, |_, _| panic!("{}", msg.0))
    }
}

// The RPC front asks for automine with `ask` (fail fast when the mailbox is full).
hearth_messages::answer_asks!(MinerActor: AutoMine);
