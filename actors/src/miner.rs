//! `MinerActor`: decides when blocks are made.
//!
//! - **Owns:** the mining mode (automine, interval timer with a fixed or random block time,
//!   both, or manual), the block gas limit and coinbase, the clock that stamps blocks with its
//!   offset, one-block overrides (next timestamp, base fee, prevrandao), the timestamp interval
//!   (anvil_setBlockTimestampInterval) and the clocks saved with evm_snapshot.
//! - **Takes:** `AutoMine` (as `Ask`), `MineBlocks`, `MineDetailed`, `MineSpaced`, `Rewind`
//!   (anvil_rollback / anvil_reorg: the state owner's `Rollback`, then the new blocks, as one
//!   run), `SetAutomine`, `SetIntervalMining`, `SetBlockParam`, `SetTime`,
//!   `SetTimestampInterval`, `GetMiningStatus`, and `BetweenBlocks` of `PatchState`,
//!   `TakeSnapshot`, `RevertTo` and `LoadState` (the head-state writes outside a block, passed
//!   on between two blocks; a snapshot saves the miner's clock, a revert turns it back), all
//!   from `MinerClient`; `ResetTo` (anvil_reset: the state owner's `ReplaceChain` between two
//!   blocks); and `StopMining` (shutdown: once the executor pool is closed no block starts, and
//!   the answer comes after the block in progress).
//! - **Sends:** `TakePending` and `TxsMined` to the mempool, `BuildBlock` to the executor pool
//!   (through `ExecutorClient`, never refused), `CommitBlock`, `Rollback`, `ReplaceChain` and
//!   the `BetweenBlocks` writes to the state owner.
//! - **Mailbox:** `--actors.mailbox` (default 1024). One block at a time: handlers are atomic
//!   futures, so a second request waits in the mailbox until the first block is committed.
//! - **Restart:** `Restart` (`supervise`): a panic in a handler or a mining run fails that
//!   request (-32603) and the miner goes on from its settings; it holds no state that is not
//!   in the chain or its settings.
//!
//! The interval timer runs on the tokio clock (`run_later`), so paused-time tests drive it.
//! Execution never runs here: the miner only sequences, so its mailbox keeps moving while a
//! block executes.

use std::collections::VecDeque;
use std::future::Future;
use std::num::NonZeroUsize;
use std::sync::Arc;
use std::time::Duration;

use actix::{
    Actor, ActorFutureExt, Addr, AsyncContext, AtomicResponse, Context, Handler, MailboxError,
    Recipient, ResponseFuture, SpawnHandle, WrapFuture,
};
use alloy_primitives::{Address, B256, Bytes, keccak256};
use hearth_messages::MineError;
use hearth_messages::executor::{BlockEnvSpec, BuildBlock, BuildMode, ExecutorClient, PooledTx};
use hearth_messages::mempool::{TakePending, TxsMined};
use hearth_messages::miner::{
    AutoMine, BetweenBlocks, GetMiningStatus, IntervalMining, MAX_TIMESTAMP, MineBlocks,
    MineDetailed, MineSpaced, MinedBlock, MiningStatus, Rewind, SetAutomine, SetBlockParam,
    SetIntervalMining, SetTime, SetTimestampInterval, StopMining,
};
use hearth_messages::reset::ResetTo;
use hearth_messages::state::{
    CommitBlock, LoadState, PatchState, ReplaceChain, RevertTo, Rollback, TakeSnapshot,
};
use hearth_storage::trie::EMPTY_ROOT;
use hearth_storage::{ChainDb, SealedBlock};
use tokio::sync::oneshot;
use tokio::time::Instant;
use tracing::{debug, info, warn};

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

/// SplitMix64: a tiny seeded generator, enough to spread random block times (no crate needed,
/// and a seed makes runs repeatable).
#[derive(Debug, Clone)]
struct SplitMix64(u64);

impl SplitMix64 {
    fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// A duration drawn uniformly (to the millisecond) from `[min, max]`.
    fn between(&mut self, min: Duration, max: Duration) -> Duration {
        let (lo, hi) = (min.as_millis() as u64, max.as_millis() as u64);
        let span = hi.saturating_sub(lo).saturating_add(1);
        Duration::from_millis(lo + self.next_u64() % span)
    }
}

/// Settings that apply to the next block only, or change how blocks are stamped.
#[derive(Debug, Clone, Copy, Default)]
struct Overrides {
    timestamp: Option<u64>,
    base_fee: Option<u64>,
    prevrandao: Option<B256>,
    /// The time the clock was last set to (anvil_setTime): with a timestamp interval, the
    /// next block comes that interval after it rather than after its parent, as in anvil.
    time_set: Option<u64>,
}

/// The miner.
#[derive(Debug)]
pub struct MinerActor {
    db: ChainDb,
    peers: MinerPeers,
    config: MinerConfig,
    rng: SplitMix64,
    /// Seconds added to the clock (evm_increaseTime, evm_setNextBlockTimestamp).
    time_offset: i64,
    next: Overrides,
    /// Seconds between a block and its parent, instead of the clock
    /// (anvil_setBlockTimestampInterval).
    timestamp_interval: Option<u64>,
    timer: Option<SpawnHandle>,
    /// When the pending timer tick is due.
    tick_due: Instant,
    /// Start and end of the last block build, to tell a tick that came due during one.
    last_build: (Instant, Instant),
    ticks_skipped: u64,
    /// Clock state saved per live snapshot id, oldest first.
    saved_clocks: Vec<(u64, i64, Overrides)>,
    /// Multi-block requests not finished yet, oldest first.
    series: VecDeque<Series>,
    /// A chunk of a series is being mined.
    mining_series: bool,
    restarts: RestartCounter,
}

impl MinerActor {
    /// A miner building on `db`'s head.
    pub fn new(db: ChainDb, peers: MinerPeers, config: MinerConfig) -> Self {
        let now = Instant::now();
        Self {
            db,
            peers,
            rng: SplitMix64(config.seed),
            config,
            time_offset: 0,
            next: Overrides::default(),
            timestamp_interval: None,
            timer: None,
            tick_due: now,
            last_build: (now, now),
            ticks_skipped: 0,
            saved_clocks: Vec::new(),
            series: VecDeque::new(),
            mining_series: false,
            restarts: RestartCounter::default(),
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

    fn job(&self) -> MineJob {
        MineJob {
            db: self.db.clone(),
            peers: self.peers.clone(),
            config: self.config.clone(),
            time_offset: self.time_offset,
            next: self.next,
            timestamp_interval: self.timestamp_interval,
        }
    }

    /// Runs `run` as the only thing the actor does until it ends (blocks are built one at a
    /// time), then consumes the one-block overrides if a block was made. With
    /// `explicit_time`, the blocks' timestamps were chosen by the caller.
    fn atomic<T: 'static>(
        &mut self,
        run: impl Future<Output = (Result<T, MineError>, Option<Arc<SealedBlock>>)> + 'static,
        explicit_time: bool,
    ) -> AtomicResponse<Self, Result<T, MineError>> {
        let started = Instant::now();
        let run = contain_future(run);
        AtomicResponse::new(Box::pin(
            run.into_actor(self).map(move |outcome, act, ctx| {
                act.build_ended(started, outcome, explicit_time, ctx)
            }),
        ))
    }

    /// Where every contained block build ends, on the actor: records its timing, restarts the
    /// miner if it panicked, else consumes the one-block overrides if a block was made.
    fn build_ended<T>(
        &mut self,
        started: Instant,
        outcome: BuildOutcome<T>,
        explicit_time: bool,
        ctx: &mut Context<Self>,
    ) -> Result<T, MineError> {
        self.last_build = (started, Instant::now());
        let (result, last) = match outcome {
            Ok(outcome) => outcome,
            Err(panic) => return Err(self.restarted_after(&*panic, ctx)),
        };
        if let Some(block) = last {
            self.after_block(&block, explicit_time);
        }
        result
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

    /// One or more blocks were made, `block` the last: one-block overrides are used up, and an
    /// explicit timestamp moves the clock so that later blocks continue from it (as anvil).
    fn after_block(&mut self, block: &SealedBlock, explicit_time: bool) {
        if self.next.timestamp.take().is_some() || explicit_time {
            let now = i128::from((self.config.clock)());
            let offset = i128::from(block.header.timestamp) - now;
            self.time_offset = i64::try_from(offset).unwrap_or(i64::MAX);
        }
        self.next.base_fee = None;
        self.next.prevrandao = None;
        self.next.time_set = None;
    }

    /// (Re)arms the timer from now, or disarms it when interval mining is off.
    fn arm_timer(&mut self, ctx: &mut Context<Self>) {
        if let Some(handle) = self.timer.take() {
            ctx.cancel_future(handle);
        }
        let Some(interval) = self.config.interval else { return };
        let delay = self.draw(interval);
        self.tick_due = later(Instant::now(), delay);
        self.schedule(ctx);
    }

    fn draw(&mut self, interval: IntervalMining) -> Duration {
        match interval {
            IntervalMining::Fixed(block_time) => block_time,
            IntervalMining::Range { min, max } => self.rng.between(min, max),
        }
    }

    fn schedule(&mut self, ctx: &mut Context<Self>) {
        let delay = self.tick_due.saturating_duration_since(Instant::now());
        self.timer = Some(ctx.run_later(delay, |act, ctx| act.tick(ctx)));
    }

    /// A timer tick. A tick that came due while a block was being built (the actor does
    /// nothing else then, so it fires late) is skipped and counted, never made up for.
    fn tick(&mut self, ctx: &mut Context<Self>) {
        self.timer = None;
        let Some(interval) = self.config.interval else { return };
        if self.peers.executor.is_closed() {
            // Shutting down: no new block, and no next tick.
            return;
        }
        let due = self.tick_due;
        let (build_start, build_end) = self.last_build;
        if build_start <= due && due < build_end {
            let skipped = match interval {
                // Every due time the build covered is skipped; the grid stays in phase.
                IntervalMining::Fixed(block_time) => {
                    let late = build_end - due;
                    let missed = late.as_nanos() / block_time.as_nanos().max(1) + 1;
                    let missed = u32::try_from(missed).unwrap_or(u32::MAX);
                    self.tick_due = later(due, block_time.saturating_mul(missed));
                    u64::from(missed)
                }
                IntervalMining::Range { .. } => {
                    let delay = self.draw(interval);
                    self.tick_due = later(build_end, delay);
                    1
                }
            };
            self.ticks_skipped += skipped;
            warn!(target: "actors::miner", skipped, total = self.ticks_skipped, "block timer ticks skipped: a block was still being built");
            self.schedule(ctx);
            return;
        }
        // Fixed block times stay on their grid (no drift from how long building takes).
        self.tick_due = match interval {
            IntervalMining::Fixed(block_time) => later(due, block_time),
            IntervalMining::Range { .. } => later(Instant::now(), self.draw(interval)),
        };
        self.schedule(ctx);
        let job = self.job();
        let started = Instant::now();
        let run = contain_future(async move {
            match job.mine_one(None, false).await {
                Ok(mined) => mined.block,
                Err(error) => {
                    warn!(target: "actors::miner", %error, "interval block failed");
                    None
                }
            }
        });
        ctx.wait(run.into_actor(self).map(move |block, act, ctx| {
            act.last_build = (started, Instant::now());
            match block {
                Ok(Some(block)) => act.after_block(&block, false),
                Ok(None) => {}
                Err(panic) => {
                    act.restarted_after(&*panic, ctx);
                }
            }
        }));
    }
}

/// `at + delay`, or the furthest instant tokio's timer can wait for when that overflows.
/// Interval settings are capped at [`IntervalMining::MAX`] where they are parsed, so this only
/// keeps a clock that has run for ages (or a bug) from panicking the miner.
fn later(at: Instant, delay: Duration) -> Instant {
    at.checked_add(delay.min(IntervalMining::MAX)).unwrap_or(at)
}

/// Everything one mining run needs, detached from the actor so it can run as a future.
struct MineJob {
    db: ChainDb,
    peers: MinerPeers,
    config: MinerConfig,
    time_offset: i64,
    next: Overrides,
    timestamp_interval: Option<u64>,
}

impl MineJob {
    /// Builds and commits one block on the head. With `only_if_pending`, makes no block when
    /// nothing is executable. Returns the block, if one was made. One-block overrides apply
    /// while the head is still the one the job started on.
    async fn mine_one(
        &self,
        timestamp: Option<u64>,
        only_if_pending: bool,
    ) -> Result<Mined, MineError> {
        self.mine_one_first(timestamp, only_if_pending, true).await
    }

    async fn mine_one_first(
        &self,
        timestamp: Option<u64>,
        only_if_pending: bool,
        first: bool,
    ) -> Result<Mined, MineError> {
        self.mine_block(timestamp, only_if_pending, first, None).await
    }

    /// Builds and commits one block: with the pool's executable transactions, or exactly
    /// `given` ones (anvil_reorg's new blocks; invalid ones are left out).
    async fn mine_block(
        &self,
        timestamp: Option<u64>,
        only_if_pending: bool,
        first: bool,
        given: Option<Vec<PooledTx>>,
    ) -> Result<Mined, MineError> {
        // Shutting down: the block in progress (if any) finishes, no other one starts.
        if self.peers.executor.is_closed() {
            return Err(MineError::Exec(hearth_messages::ExecError::ShuttingDown));
        }
        let head = self.db.head_number().unwrap_or_default();
        let parent =
            self.db.header(head).map_err(|e| MineError::State(e.into()))?.ok_or(
                MineError::State(hearth_messages::StateError::NotNext { head, got: head }),
            )?;
        // What the state owner checks the block against: the head state it is built on.
        let parent_root = self
            .db
            .state_root_at(head)
            .map_err(|e| MineError::State(e.into()))?
            .unwrap_or(EMPTY_ROOT);
        let next = if first { self.next } else { Overrides::default() };
        let base_fee = next
            .base_fee
            .unwrap_or_else(|| hearth_messages::base_fee::next_base_fee(&parent).unwrap_or(0));
        let gas_limit = self.config.gas_limit;
        let max_bytes = BLOCK_MAX_TX_BYTES;
        let txs = match given {
            Some(txs) => txs,
            None => {
                let take = TakePending { gas_limit, max_bytes, base_fee };
                self.peers.take_pending.send(take).await?
            }
        };
        if txs.is_empty() && only_if_pending {
            return Ok(Mined { block: None, pool_left: false, outputs: Vec::new() });
        }
        let timestamp = match timestamp.or(next.timestamp) {
            Some(t) if t <= parent.timestamp => {
                return Err(MineError::Timestamp { parent: parent.timestamp, got: t });
            }
            Some(t) => t,
            None => stamp_after(
                next.time_set.unwrap_or(parent.timestamp),
                parent.timestamp,
                self.timestamp_interval,
                &self.config.clock,
                self.time_offset,
            )?,
        };
        if timestamp <= parent.timestamp {
            // Only a parent stamped u64::MAX gets here (an imported chain's): no later second
            // exists, so refuse rather than wrap around.
            return Err(MineError::Timestamp { parent: parent.timestamp, got: timestamp });
        }
        // Deterministic prevrandao per parent: a dev chain needs no real randomness.
        let env = BlockEnvSpec::dev(
            parent.number + 1,
            timestamp,
            self.config.coinbase,
            gas_limit,
            base_fee,
            next.prevrandao.unwrap_or_else(|| keccak256(parent.hash_slow())),
        );
        let build_started = Instant::now();
        let built = self
            .peers
            .executor
            .build_block(BuildBlock { parent, env, txs, mode: BuildMode::Pack })
            .await?;
        let built_at = Instant::now();
        let included: Vec<_> =
            built.draft.body.transactions.iter().map(|tx| *tx.tx_hash()).collect();
        let invalid = built.invalid;
        if included.is_empty() && only_if_pending {
            // Nothing executed (all invalid or too big): clean the pool, make no empty block.
            self.peers.txs_mined.send(TxsMined { included, invalid }).await?;
            return Ok(Mined { block: None, pool_left: false, outputs: Vec::new() });
        }
        let txs = included.len();
        let block = self
            .peers
            .commit
            .send(CommitBlock { draft: built.draft, diff: built.diff, parent_root })
            .await??;
        let committed_at = Instant::now();
        let pool_left = self.peers.txs_mined.send(TxsMined { included, invalid }).await?;
        // Where a block's time goes, for `scripts/mine-e2e.py`: building (execution, receipts,
        // the transactions root) on the executor pool, then the state owner's commit (the
        // state root and the durable write), then the pool's clean-up.
        debug!(
            target: "actors::miner",
            txs,
            build_us = (built_at - build_started).as_micros() as u64,
            commit_us = (committed_at - built_at).as_micros() as u64,
            pool_us = committed_at.elapsed().as_micros() as u64,
            "block timings"
        );
        Ok(Mined { block: Some(block), pool_left, outputs: built.outputs })
    }
}

/// The timestamp of a block after one stamped `parent` when nobody chose it: `last` (the
/// parent's timestamp, or the time the clock was set to since) plus the timestamp `interval`
/// when one is set, else the `clock` with its `offset`; always after `parent`.
fn stamp_after(
    last: u64,
    parent: u64,
    interval: Option<u64>,
    clock: &Clock,
    offset: i64,
) -> Result<u64, MineError> {
    let stamped = match interval {
        Some(interval) => {
            last.checked_add(interval).filter(|t| *t <= MAX_TIMESTAMP).ok_or_else(|| {
                MineError::Setting(format!(
                    "the timestamp interval of {interval} s takes the block after {last} past \
                     the latest timestamp allowed ({MAX_TIMESTAMP})"
                ))
            })?
        }
        None => {
            let now = i64::try_from(clock()).unwrap_or(i64::MAX);
            now.saturating_add(offset).max(0) as u64
        }
    };
    Ok(stamped.max(parent.saturating_add(1)))
}

/// What one `MineJob::mine_one` run made.
struct Mined {
    /// The block, unless none was made.
    block: Option<Arc<SealedBlock>>,
    /// Whether the pool still held transactions after the block (`false` when none was made:
    /// then nothing executable was there).
    pool_left: bool,
    /// What the block's transactions returned, in order (`None`: halted).
    outputs: Vec<Option<Bytes>>,
}

impl Actor for MinerActor {
    type Context = Context<Self>;

    fn started(&mut self, ctx: &mut Self::Context) {
        self.arm_timer(ctx);
    }
}

impl Handler<AutoMine> for MinerActor {
    type Result = AtomicResponse<Self, Result<Option<u64>, MineError>>;

    fn handle(&mut self, _msg: AutoMine, _ctx: &mut Self::Context) -> Self::Result {
        let job = self.job();
        let enabled = self.config.automine;
        self.atomic(
            async move {
                if !enabled {
                    return (Ok(None), None);
                }
                let mut last = None;
                let mut first = true;
                // Keep mining while executable transactions remain (e.g. more than one block
                // worth of gas arrived at once).
                loop {
                    match job.mine_one_first(None, true, first).await {
                        Ok(Mined { block: Some(block), pool_left, .. }) => {
                            last = Some(block);
                            if !pool_left {
                                break;
                            }
                        }
                        Ok(Mined { block: None, .. }) => break,
                        // The node began shutting down after an earlier block of this run:
                        // the caller's transaction may be in it, so that block is the answer.
                        Err(MineError::Exec(hearth_messages::ExecError::ShuttingDown))
                            if last.is_some() =>
                        {
                            break;
                        }
                        Err(e) => return (Err(e), last),
                    }
                    first = false;
                }
                (Ok(last.as_ref().map(|b| b.number())), last)
            },
            false,
        )
    }
}

/// How the blocks of a series after the first are stamped.
#[derive(Debug, Clone, Copy)]
enum Spacing {
    /// By the clock, unless the series was given a first timestamp: then each block follows
    /// the previous one a second later (evm_mine with a timestamp, anvil_mine without interval).
    Clock,
    /// Each block `0` seconds after the previous one (anvil_mine with an interval).
    Seconds(u64),
}

impl Spacing {
    /// The timestamp of the block after `block`, given the one `block` was asked to have.
    fn after(self, asked: Option<u64>, block: &SealedBlock) -> Option<u64> {
        match self {
            Self::Clock => asked.map(|t| t.max(block.header.timestamp).saturating_add(1)),
            Self::Seconds(interval) => Some(block.header.timestamp.saturating_add(interval)),
        }
    }
}

/// A request for several blocks (evm_mine, anvil_mine, hardhat_mine), mined in chunks of at
/// most [`MINE_CHUNK_BLOCKS`] between which the miner serves its mailbox.
#[derive(Debug)]
struct Series {
    /// Blocks still to mine.
    remaining: u64,
    /// The next block's timestamp, when the caller chose it.
    timestamp: Option<u64>,
    spacing: Spacing,
    /// The caller chose the timestamps: the clock follows the last block.
    explicit_time: bool,
    /// The next block is the series' first: one-block overrides apply to it.
    first: bool,
    /// Where the answer (or the first error) goes.
    reply: SeriesReply,
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

/// Most blocks one mining run builds before the miner serves its mailbox again: anvil_mine of
/// a hundred thousand blocks must not keep automine, interval ticks, settings or status out
/// for its whole run. A chunk is ~10 ms of empty blocks.
const MINE_CHUNK_BLOCKS: u64 = 64;

/// What one chunk of a series made: the last block number (the head when none was made) or
/// the error that stopped it, the last block, the timestamp asked for the block after it,
/// and, when asked to collect them, every block with its outputs.
type ChunkOutcome =
    (Result<u64, MineError>, Option<Arc<SealedBlock>>, Option<u64>, Vec<MinedBlock>);

/// Mines `count` blocks one after the other (empty ones too). The first is stamped
/// `timestamp` (`None`: the clock) and gets the one-block overrides when `first`; later ones
/// follow `spacing`. With `collect`, keeps every block and its transactions' outputs.
async fn mine_series(
    job: MineJob,
    count: u64,
    mut timestamp: Option<u64>,
    first: bool,
    spacing: Spacing,
    collect: bool,
) -> ChunkOutcome {
    let mut last: Option<Arc<SealedBlock>> = None;
    let mut mined = Vec::new();
    for i in 0..count {
        match job.mine_one_first(timestamp, false, first && i == 0).await {
            Ok(Mined { block: Some(block), outputs, .. }) => {
                timestamp = spacing.after(timestamp, &block);
                if collect {
                    mined.push(MinedBlock { block: Arc::clone(&block), outputs });
                }
                last = Some(block);
            }
            Ok(Mined { block: None, .. }) => {}
            Err(e) => return (Err(e), last, timestamp, mined),
        }
    }
    let number =
        last.as_ref().map_or_else(|| job.db.head_number().unwrap_or_default(), |b| b.number());
    (Ok(number), last, timestamp, mined)
}

impl MinerActor {
    /// Queues a series and answers when its last block is committed.
    fn queue_series(
        &mut self,
        ctx: &mut Context<Self>,
        count: u64,
        timestamp: Option<u64>,
        spacing: Spacing,
        explicit_time: bool,
    ) -> ResponseFuture<Result<u64, MineError>> {
        let (reply, answer) = oneshot::channel();
        self.push_series(ctx, count, timestamp, spacing, explicit_time, SeriesReply::Last(reply));
        Box::pin(
            async move { answer.await.unwrap_or(Err(MineError::Mailbox(MailboxError::Closed))) },
        )
    }

    fn push_series(
        &mut self,
        ctx: &mut Context<Self>,
        count: u64,
        timestamp: Option<u64>,
        spacing: Spacing,
        explicit_time: bool,
        reply: SeriesReply,
    ) {
        self.series.push_back(Series {
            remaining: count,
            timestamp,
            spacing,
            explicit_time,
            first: true,
            reply,
        });
        self.mine_next_chunk(ctx);
    }

    /// Mines the next chunk of the oldest series, unless a chunk is being mined. The actor
    /// does nothing else meanwhile (`ctx.wait`), so blocks are still built one at a time; once
    /// the chunk is committed the mailbox has its turn before the next chunk starts.
    fn mine_next_chunk(&mut self, ctx: &mut Context<Self>) {
        if self.mining_series {
            return;
        }
        let Some(mut series) = self.series.pop_front() else { return };
        self.mining_series = true;
        let chunk = series.remaining.min(MINE_CHUNK_BLOCKS);
        let collect = series.reply.wants_blocks();
        let run =
            mine_series(self.job(), chunk, series.timestamp, series.first, series.spacing, collect);
        let started = Instant::now();
        ctx.wait(contain_future(run).into_actor(self).map(move |outcome, act, ctx| {
            act.mining_series = false;
            act.last_build = (started, Instant::now());
            let (result, last, next, mined) = match outcome {
                Ok(outcome) => outcome,
                Err(panic) => {
                    series.reply.fail(act.restarted_after(&*panic, ctx));
                    return;
                }
            };
            if let Some(block) = &last {
                act.after_block(block, series.explicit_time);
            }
            if let SeriesReply::Detailed { mined: all, .. } = &mut series.reply {
                all.extend(mined);
            }
            series.remaining -= chunk;
            match result {
                Ok(number) if series.remaining == 0 => series.reply.finish(number),
                // Nobody waits for the rest: the caller went away.
                Ok(_) if series.reply.is_closed() => {}
                Ok(_) => {
                    series.first = false;
                    series.timestamp = next;
                    act.series.push_front(series);
                }
                Err(error) => series.reply.fail(error),
            }
            // Spawned, not called: the mailbox is served before the next chunk begins.
            ctx.spawn(
                actix::fut::ready(()).map(|(), act: &mut Self, ctx| act.mine_next_chunk(ctx)),
            );
        }));
    }
}

impl Handler<MineBlocks> for MinerActor {
    type Result = ResponseFuture<Result<u64, MineError>>;

    fn handle(&mut self, msg: MineBlocks, ctx: &mut Self::Context) -> Self::Result {
        let explicit_time = msg.timestamp.is_some();
        // A given timestamp stamps the first block; later ones follow it a second apart.
        self.queue_series(ctx, msg.count, msg.timestamp, Spacing::Clock, explicit_time)
    }
}

impl Handler<MineDetailed> for MinerActor {
    type Result = ResponseFuture<Result<Vec<MinedBlock>, MineError>>;

    fn handle(&mut self, msg: MineDetailed, ctx: &mut Self::Context) -> Self::Result {
        let explicit_time = msg.timestamp.is_some();
        let (reply, answer) = oneshot::channel();
        let reply = SeriesReply::Detailed { reply, mined: Vec::new() };
        self.push_series(ctx, msg.count, msg.timestamp, Spacing::Clock, explicit_time, reply);
        Box::pin(
            async move { answer.await.unwrap_or(Err(MineError::Mailbox(MailboxError::Closed))) },
        )
    }
}

impl Handler<Rewind> for MinerActor {
    type Result = AtomicResponse<Self, Result<u64, MineError>>;

    /// Rolls back, resets the clock and gas limit to the new head's (anvil's rollback), then
    /// mines the given blocks, all as one atomic run: no other block is built in between.
    fn handle(&mut self, msg: Rewind, _ctx: &mut Self::Context) -> Self::Result {
        let Rewind { depth, blocks } = msg;
        let rollback = self.peers.rollback.clone();
        let started = Instant::now();
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
            act.rewind_settings(&header);
            let job = act.job();
            let mine = contain_future(async move {
                let mut last = None;
                for (i, txs) in blocks.into_iter().enumerate() {
                    match job.mine_block(None, false, i == 0, Some(txs)).await {
                        Ok(Mined { block: Some(block), .. }) => last = Some(block),
                        Ok(Mined { block: None, .. }) => {}
                        Err(error) => return (Err(error), last),
                    }
                }
                let head = job.db.head_number().unwrap_or_default();
                (Ok(head), last)
            });
            futures_util::future::Either::Right(
                mine.into_actor(act)
                    .map(move |outcome, act, ctx| act.build_ended(started, outcome, false, ctx)),
            )
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
            act.time_offset = 0;
            act.next = Overrides::default();
            act.saved_clocks.clear();
            act.config.gas_limit = header.gas_limit.max(MIN_GAS_LIMIT);
            info!(target: "actors::miner", head = header.number, "mining on the reset chain");
            Ok(header)
        })))
    }
}

impl Handler<MineSpaced> for MinerActor {
    type Result = ResponseFuture<Result<u64, MineError>>;

    fn handle(&mut self, msg: MineSpaced, ctx: &mut Self::Context) -> Self::Result {
        // The first block takes the clock; each later one comes `interval` seconds after.
        self.queue_series(ctx, msg.count, None, Spacing::Seconds(msg.interval.max(1)), true)
    }
}

impl Handler<SetIntervalMining> for MinerActor {
    type Result = ();

    fn handle(&mut self, msg: SetIntervalMining, ctx: &mut Self::Context) -> Self::Result {
        info!(target: "actors::miner", interval = ?msg.0, "interval mining set");
        let _ = self.contained(ctx, |act, ctx| {
            act.config.interval = msg.0;
            act.arm_timer(ctx);
        });
    }
}

impl Handler<StopMining> for MinerActor {
    type Result = ();

    fn handle(&mut self, _msg: StopMining, ctx: &mut Self::Context) {
        if let Some(handle) = self.timer.take() {
            ctx.cancel_future(handle);
        }
        info!(target: "actors::miner", "mining stopped for shutdown");
    }
}

impl Handler<SetAutomine> for MinerActor {
    type Result = ();

    fn handle(&mut self, msg: SetAutomine, _ctx: &mut Self::Context) -> Self::Result {
        info!(target: "actors::miner", automine = msg.0, "automine set");
        self.config.automine = msg.0;
    }
}

impl MinerActor {
    /// Passes one head-state write to the state owner as an atomic future: no block is being
    /// built meanwhile, and none starts before `then` has run on the actor with the answer.
    fn between_blocks<T: 'static>(
        &mut self,
        write: impl Future<Output = Result<Result<T, hearth_messages::StateError>, MailboxError>>
        + 'static,
        then: impl FnOnce(&mut Self, &T) + 'static,
    ) -> AtomicResponse<Self, Result<T, MineError>> {
        let write = contain_future(async move { Ok::<T, MineError>(write.await??) });
        AtomicResponse::new(Box::pin(write.into_actor(self).map(|outcome, act, ctx| {
            let answer = match outcome {
                Ok(result) => result?,
                Err(panic) => return Err(act.restarted_after(&*panic, ctx)),
            };
            then(act, &answer);
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
        self.between_blocks(write, |act, id| {
            act.saved_clocks.push((*id, act.time_offset, act.next));
        })
    }
}

impl Handler<BetweenBlocks<RevertTo>> for MinerActor {
    type Result = AtomicResponse<Self, Result<bool, MineError>>;

    /// Reverts the state owner to the snapshot; when it knew the id, turns the clock back to
    /// what was saved with it and forgets that and every later save.
    fn handle(&mut self, msg: BetweenBlocks<RevertTo>, _ctx: &mut Self::Context) -> Self::Result {
        let id = msg.0.0;
        let write = self.peers.head_writes.revert.send(msg.0);
        self.between_blocks(write, move |act, reverted| {
            if !*reverted {
                return;
            }
            if let Some(index) = act.saved_clocks.iter().position(|(saved, _, _)| *saved == id) {
                let (_, offset, next) = act.saved_clocks[index];
                act.time_offset = offset;
                act.next = next;
                act.saved_clocks.truncate(index);
            }
        })
    }
}

impl Handler<GetMiningStatus> for MinerActor {
    type Result = actix::MessageResult<GetMiningStatus>;

    fn handle(&mut self, _msg: GetMiningStatus, _ctx: &mut Self::Context) -> Self::Result {
        actix::MessageResult(MiningStatus {
            automine: self.config.automine,
            interval: self.config.interval,
            ticks_skipped: self.ticks_skipped,
            coinbase: self.config.coinbase,
            gas_limit: self.config.gas_limit,
            next_timestamp: self.next_timestamp(),
        })
    }
}

impl Handler<SetBlockParam> for MinerActor {
    type Result = Result<u64, MineError>;

    fn handle(&mut self, msg: SetBlockParam, ctx: &mut Self::Context) -> Self::Result {
        self.contained(ctx, |act, _| act.set_block_param(msg))?
    }
}

impl Handler<SetTime> for MinerActor {
    type Result = Result<u64, MineError>;

    fn handle(&mut self, msg: SetTime, ctx: &mut Self::Context) -> Self::Result {
        self.contained(ctx, |act, _| act.set_time(msg.0))?
    }
}

impl Handler<SetTimestampInterval> for MinerActor {
    type Result = bool;

    fn handle(&mut self, msg: SetTimestampInterval, _ctx: &mut Self::Context) -> Self::Result {
        info!(target: "actors::miner", interval = ?msg.0, "block timestamp interval set");
        std::mem::replace(&mut self.timestamp_interval, msg.0).is_some()
    }
}

impl MinerActor {
    /// The timestamp the next block would get now, by the same rules as mining: its override,
    /// else the timestamp interval or the clock, always after the head's.
    fn next_timestamp(&self) -> u64 {
        let head = self.db.head_number().unwrap_or_default();
        let parent = self.db.header(head).ok().flatten().map_or(0, |h| h.timestamp);
        match self.next.timestamp {
            Some(t) => t,
            // Past the latest timestamp the interval cannot stamp a block; say where it points.
            None => stamp_after(
                self.next.time_set.unwrap_or(parent),
                parent,
                self.timestamp_interval,
                &self.config.clock,
                self.time_offset,
            )
            .unwrap_or(MAX_TIMESTAMP),
        }
    }

    /// After a rollback to `head`: later blocks are stamped from its timestamp on and get its
    /// gas limit, as anvil resets its environment to the common block.
    fn rewind_settings(&mut self, head: &alloy_consensus::Header) {
        let now = i64::try_from((self.config.clock)()).unwrap_or(i64::MAX);
        let timestamp = i64::try_from(head.timestamp).unwrap_or(i64::MAX);
        self.time_offset = timestamp.saturating_sub(now);
        self.next = Overrides::default();
        self.config.gas_limit = head.gas_limit.max(MIN_GAS_LIMIT);
    }

    /// Serves [`SetTime`]: the clock now reads `timestamp`, and a pending next-block timestamp
    /// is dropped (anvil's time reset). Answers how far `timestamp` is past what the next
    /// block would have been stamped.
    fn set_time(&mut self, timestamp: u64) -> Result<u64, MineError> {
        if timestamp > MAX_TIMESTAMP {
            return Err(MineError::Setting(format!(
                "timestamp {timestamp} is past the latest allowed {MAX_TIMESTAMP}"
            )));
        }
        let before = self.next_timestamp();
        let now = i64::try_from((self.config.clock)()).unwrap_or(i64::MAX);
        // Both are within 0..=i64::MAX, so the difference fits.
        self.time_offset = timestamp as i64 - now;
        self.next.timestamp = None;
        self.next.time_set = Some(timestamp);
        info!(target: "actors::miner", timestamp, offset = self.time_offset, "clock set");
        Ok(timestamp.saturating_sub(before))
    }

    /// Serves [`SetBlockParam`]: answers the clock's offset afterwards.
    fn set_block_param(&mut self, msg: SetBlockParam) -> Result<u64, MineError> {
        match msg {
            SetBlockParam::NextTimestamp(t) => {
                if t > MAX_TIMESTAMP {
                    return Err(MineError::Setting(format!(
                        "timestamp {t} is past the latest allowed {MAX_TIMESTAMP}"
                    )));
                }
                let head = self.db.head_number().unwrap_or_default();
                let parent = self.db.header(head).ok().flatten().map_or(0, |h| h.timestamp);
                if t <= parent {
                    return Err(MineError::Timestamp { parent, got: t });
                }
                self.next.timestamp = Some(t);
            }
            SetBlockParam::IncreaseTime(seconds) => {
                // The clock must stay within MAX_TIMESTAMP, or no later block could be stamped.
                let now = i64::try_from((self.config.clock)()).unwrap_or(i64::MAX);
                let offset = i64::try_from(seconds)
                    .ok()
                    .and_then(|s| self.time_offset.checked_add(s))
                    .filter(|offset| now.checked_add(*offset).is_some())
                    .ok_or_else(|| {
                        MineError::Setting(format!(
                            "time increase {seconds} would take the clock past the latest \
                             timestamp allowed ({MAX_TIMESTAMP})"
                        ))
                    })?;
                self.time_offset = offset;
            }
            SetBlockParam::GasLimit(gas) => {
                if gas < MIN_GAS_LIMIT {
                    return Err(MineError::Setting(format!(
                        "gas limit {gas} is below {MIN_GAS_LIMIT}"
                    )));
                }
                self.config.gas_limit = gas;
            }
            SetBlockParam::NextBaseFee(fee) => self.next.base_fee = Some(fee),
            SetBlockParam::Coinbase(address) => self.config.coinbase = address,
            SetBlockParam::PrevRandao(value) => self.next.prevrandao = Some(value),
        }
        Ok(self.time_offset.max(0) as u64)
    }
}

impl Restart for MinerActor {
    const NAME: &'static str = "miner";

    /// The settings (mode, block time, gas limit, coinbase, clock offset, saved clocks) stay;
    /// what a run was in the middle of goes: one-block overrides, and the queued series, whose
    /// callers get an error. The caller re-arms the timer from the settings.
    fn restart(&mut self) {
        self.next = Overrides::default();
        self.mining_series = false;
        for series in self.series.drain(..) {
            series.reply.fail(MineError::Panicked("the miner restarted".into()));
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

/// Byte budget of one block's transactions: what geth's default RPC and p2p limits keep a
/// block under, so a block of many calldata-heavy transactions still propagates.
const BLOCK_MAX_TX_BYTES: usize = 10 * 1024 * 1024;

/// The smallest block gas limit: one transfer.
const MIN_GAS_LIMIT: u64 = 21_000;

// The RPC front asks for automine with `ask` (fail fast when the mailbox is full).
hearth_messages::answer_asks!(MinerActor: AutoMine);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn random_block_times_stay_in_range_and_repeat_with_the_seed() {
        let (min, max) = (Duration::from_millis(1000), Duration::from_millis(3000));
        let draws = |seed| {
            let mut rng = SplitMix64(seed);
            (0..1000).map(|_| rng.between(min, max)).collect::<Vec<_>>()
        };
        let first = draws(7);
        assert!(first.iter().all(|d| (min..=max).contains(d)));
        assert_eq!(first, draws(7), "same seed, same block times");
        assert_ne!(first, draws(8));
        assert!(first.contains(&min) || first.iter().any(|d| *d < Duration::from_millis(1010)));
        let same = SplitMix64(1).between(min, min);
        assert_eq!(same, min);
    }
}
