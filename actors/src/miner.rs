//! `MinerActor`: decides when blocks are made.
//!
//! Owns: the mining mode (automine, interval timer with a fixed or random block time, both, or
//! manual), the block gas limit and coinbase, the clock that stamps blocks with its offset, and
//! one-block overrides (next timestamp, base fee, prevrandao). Handles `AutoMine`, `MineBlocks`,
//! `MineSpaced`, `SetAutomine`, `SetIntervalMining`, `SetBlockParam`, `GetMiningStatus`,
//! `SaveClock` and `RestoreClock` (the clock side of evm_snapshot / evm_revert). The
//! interval timer runs on the tokio clock (`run_later`), so paused-time tests drive it. Sends `TakePending` and `TxsMined`
//! to the mempool, `BuildBlock` to the executor pool (through `ExecutorClient`) and
//! `CommitBlock` to the state owner. Execution never runs here: the miner only sequences, so
//! its mailbox keeps moving while a block executes. One block at a time: handlers are atomic
//! futures, so a second request waits in the (bounded) mailbox until the first block is
//! committed. Restart: never; it holds no state that is not in the chain.

use std::future::Future;
use std::num::NonZeroUsize;
use std::sync::Arc;
use std::time::Duration;

use actix::{
    Actor, ActorFutureExt, Addr, AsyncContext, AtomicResponse, Context, Handler, Recipient,
    SpawnHandle, WrapFuture,
};
use alloy_eips::eip1559::BaseFeeParams;
use alloy_primitives::{Address, B256, keccak256};
use hearth_messages::MineError;
use hearth_messages::executor::{BlockEnvSpec, BuildBlock, BuildMode, ExecutorClient};
use hearth_messages::mempool::{TakePending, TxsMined};
use hearth_messages::miner::{
    AutoMine, GetMiningStatus, IntervalMining, MineBlocks, MineSpaced, MiningStatus, RestoreClock,
    SaveClock, SetAutomine, SetBlockParam, SetIntervalMining,
};
use hearth_messages::state::CommitBlock;
use hearth_storage::{ChainDb, SealedBlock};
use tokio::time::Instant;
use tracing::{info, warn};

/// Seconds since the Unix epoch. Injected so tests stamp blocks deterministically.
pub type Clock = Arc<dyn Fn() -> u64 + Send + Sync>;

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
    timer: Option<SpawnHandle>,
    /// When the pending timer tick is due.
    tick_due: Instant,
    /// Start and end of the last block build, to tell a tick that came due during one.
    last_build: (Instant, Instant),
    ticks_skipped: u64,
    /// Clock state saved per live snapshot id, oldest first.
    saved_clocks: Vec<(u64, i64, Overrides)>,
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
            timer: None,
            tick_due: now,
            last_build: (now, now),
            ticks_skipped: 0,
            saved_clocks: Vec::new(),
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

    fn job(&self) -> MineJob {
        MineJob {
            db: self.db.clone(),
            peers: self.peers.clone(),
            config: self.config.clone(),
            time_offset: self.time_offset,
            next: self.next,
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
        AtomicResponse::new(Box::pin(run.into_actor(self).map(move |(result, last), act, _| {
            act.last_build = (started, Instant::now());
            if let Some(block) = last {
                act.after_block(&block, explicit_time);
            }
            result
        })))
    }

    /// One or more blocks were made, `block` the last: one-block overrides are used up, and an
    /// explicit timestamp moves the clock so that later blocks continue from it (as anvil).
    fn after_block(&mut self, block: &SealedBlock, explicit_time: bool) {
        if self.next.timestamp.take().is_some() || explicit_time {
            let now = (self.config.clock)() as i64;
            self.time_offset = block.header.timestamp as i64 - now;
        }
        self.next.base_fee = None;
        self.next.prevrandao = None;
    }

    /// (Re)arms the timer from now, or disarms it when interval mining is off.
    fn arm_timer(&mut self, ctx: &mut Context<Self>) {
        if let Some(handle) = self.timer.take() {
            ctx.cancel_future(handle);
        }
        let Some(interval) = self.config.interval else { return };
        let delay = self.draw(interval);
        self.tick_due = Instant::now() + delay;
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
        let due = self.tick_due;
        let (build_start, build_end) = self.last_build;
        if build_start <= due && due < build_end {
            let skipped = match interval {
                // Every due time the build covered is skipped; the grid stays in phase.
                IntervalMining::Fixed(block_time) => {
                    let late = build_end - due;
                    let missed = (late.as_nanos() / block_time.as_nanos().max(1)) as u32 + 1;
                    self.tick_due = due + block_time * missed;
                    u64::from(missed)
                }
                IntervalMining::Range { .. } => {
                    let delay = self.draw(interval);
                    self.tick_due = build_end + delay;
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
            IntervalMining::Fixed(block_time) => due + block_time,
            IntervalMining::Range { .. } => Instant::now() + self.draw(interval),
        };
        self.schedule(ctx);
        let job = self.job();
        let started = Instant::now();
        ctx.wait(
            async move {
                match job.mine_one(None, false).await {
                    Ok(mined) => mined.block,
                    Err(error) => {
                        warn!(target: "actors::miner", %error, "interval block failed");
                        None
                    }
                }
            }
            .into_actor(self)
            .map(move |block, act, _| {
                act.last_build = (started, Instant::now());
                if let Some(block) = block {
                    act.after_block(&block, false);
                }
            }),
        );
    }
}

/// Everything one mining run needs, detached from the actor so it can run as a future.
struct MineJob {
    db: ChainDb,
    peers: MinerPeers,
    config: MinerConfig,
    time_offset: i64,
    next: Overrides,
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
        let head = self.db.head_number().unwrap_or_default();
        let parent =
            self.db.header(head).map_err(|e| MineError::State(e.into()))?.ok_or(
                MineError::State(hearth_messages::StateError::NotNext { head, got: head }),
            )?;
        let next = if first { self.next } else { Overrides::default() };
        let base_fee = next.base_fee.unwrap_or_else(|| {
            alloy_eips::calc_next_block_base_fee(
                parent.gas_used,
                parent.gas_limit,
                parent.base_fee_per_gas.unwrap_or_default(),
                BaseFeeParams::ethereum(),
            )
        });
        let gas_limit = self.config.gas_limit;
        let max_bytes = BLOCK_MAX_TX_BYTES;
        let txs =
            self.peers.take_pending.send(TakePending { gas_limit, max_bytes, base_fee }).await?;
        if txs.is_empty() && only_if_pending {
            return Ok(Mined { block: None, pool_left: false });
        }
        let timestamp = match timestamp.or(next.timestamp) {
            Some(t) if t <= parent.timestamp => {
                return Err(MineError::Timestamp { parent: parent.timestamp, got: t });
            }
            Some(t) => t,
            None => {
                let now = ((self.config.clock)() as i64).saturating_add(self.time_offset);
                (now.max(0) as u64).max(parent.timestamp + 1)
            }
        };
        // Deterministic prevrandao per parent: a dev chain needs no real randomness.
        let env = BlockEnvSpec::dev(
            parent.number + 1,
            timestamp,
            self.config.coinbase,
            gas_limit,
            base_fee,
            next.prevrandao.unwrap_or_else(|| keccak256(parent.hash_slow())),
        );
        let built = self
            .peers
            .executor
            .build_block(BuildBlock { parent, env, txs, mode: BuildMode::Pack })
            .await?;
        let included: Vec<_> =
            built.draft.body.transactions.iter().map(|tx| *tx.tx_hash()).collect();
        let invalid = built.invalid;
        if included.is_empty() && only_if_pending {
            // Nothing executed (all invalid or too big): clean the pool, make no empty block.
            self.peers.txs_mined.send(TxsMined { included, invalid }).await?;
            return Ok(Mined { block: None, pool_left: false });
        }
        let block =
            self.peers.commit.send(CommitBlock { draft: built.draft, diff: built.diff }).await??;
        let pool_left = self.peers.txs_mined.send(TxsMined { included, invalid }).await?;
        Ok(Mined { block: Some(block), pool_left })
    }
}

/// What one `MineJob::mine_one` run made.
struct Mined {
    /// The block, unless none was made.
    block: Option<Arc<SealedBlock>>,
    /// Whether the pool still held transactions after the block (`false` when none was made:
    /// then nothing executable was there).
    pool_left: bool,
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
                        Ok(Mined { block: Some(block), pool_left }) => {
                            last = Some(block);
                            if !pool_left {
                                break;
                            }
                        }
                        Ok(Mined { block: None, .. }) => break,
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

/// Mines `count` blocks one after the other (empty ones too). The first is stamped
/// `timestamp` (`None`: the clock); after each block, `next(timestamp, block)` gives the next
/// one's. Replies with the last block number (the head when none was made) and the last block.
async fn mine_series(
    job: MineJob,
    count: u64,
    mut timestamp: Option<u64>,
    next: impl Fn(Option<u64>, &SealedBlock) -> Option<u64>,
) -> (Result<u64, MineError>, Option<Arc<SealedBlock>>) {
    let mut last: Option<Arc<SealedBlock>> = None;
    for i in 0..count {
        match job.mine_one_first(timestamp, false, i == 0).await {
            Ok(Mined { block: Some(block), .. }) => {
                timestamp = next(timestamp, &block);
                last = Some(block);
            }
            Ok(Mined { block: None, .. }) => {}
            Err(e) => return (Err(e), last),
        }
    }
    let number =
        last.as_ref().map_or_else(|| job.db.head_number().unwrap_or_default(), |b| b.number());
    (Ok(number), last)
}

impl Handler<MineBlocks> for MinerActor {
    type Result = AtomicResponse<Self, Result<u64, MineError>>;

    fn handle(&mut self, msg: MineBlocks, _ctx: &mut Self::Context) -> Self::Result {
        let job = self.job();
        let explicit_time = msg.timestamp.is_some();
        self.atomic(
            // A given timestamp stamps the first block; later ones follow it a second apart.
            mine_series(job, msg.count, msg.timestamp, |t, block| {
                t.map(|t| t.max(block.header.timestamp) + 1)
            }),
            explicit_time,
        )
    }
}

impl Handler<MineSpaced> for MinerActor {
    type Result = AtomicResponse<Self, Result<u64, MineError>>;

    fn handle(&mut self, msg: MineSpaced, _ctx: &mut Self::Context) -> Self::Result {
        let job = self.job();
        let interval = msg.interval.max(1);
        self.atomic(
            // The first block takes the clock; each later one comes `interval` seconds after.
            mine_series(job, msg.count, None, move |_, block| {
                Some(block.header.timestamp + interval)
            }),
            true,
        )
    }
}

impl Handler<SetIntervalMining> for MinerActor {
    type Result = ();

    fn handle(&mut self, msg: SetIntervalMining, ctx: &mut Self::Context) -> Self::Result {
        info!(target: "actors::miner", interval = ?msg.0, "interval mining set");
        self.config.interval = msg.0;
        self.arm_timer(ctx);
    }
}

impl Handler<SetAutomine> for MinerActor {
    type Result = ();

    fn handle(&mut self, msg: SetAutomine, _ctx: &mut Self::Context) -> Self::Result {
        info!(target: "actors::miner", automine = msg.0, "automine set");
        self.config.automine = msg.0;
    }
}

impl Handler<SaveClock> for MinerActor {
    type Result = ();

    fn handle(&mut self, msg: SaveClock, _ctx: &mut Self::Context) -> Self::Result {
        self.saved_clocks.push((msg.0, self.time_offset, self.next));
    }
}

impl Handler<RestoreClock> for MinerActor {
    type Result = ();

    fn handle(&mut self, msg: RestoreClock, _ctx: &mut Self::Context) -> Self::Result {
        if let Some(index) = self.saved_clocks.iter().position(|(id, _, _)| *id == msg.0) {
            let (_, offset, next) = self.saved_clocks[index];
            self.time_offset = offset;
            self.next = next;
            self.saved_clocks.truncate(index);
        }
    }
}

impl Handler<GetMiningStatus> for MinerActor {
    type Result = actix::MessageResult<GetMiningStatus>;

    fn handle(&mut self, _msg: GetMiningStatus, _ctx: &mut Self::Context) -> Self::Result {
        actix::MessageResult(MiningStatus {
            automine: self.config.automine,
            interval: self.config.interval,
            ticks_skipped: self.ticks_skipped,
        })
    }
}

impl Handler<SetBlockParam> for MinerActor {
    type Result = Result<u64, MineError>;

    fn handle(&mut self, msg: SetBlockParam, _ctx: &mut Self::Context) -> Self::Result {
        match msg {
            SetBlockParam::NextTimestamp(t) => {
                let head = self.db.head_number().unwrap_or_default();
                let parent = self.db.header(head).ok().flatten().map_or(0, |h| h.timestamp);
                if t <= parent {
                    return Err(MineError::Timestamp { parent, got: t });
                }
                self.next.timestamp = Some(t);
            }
            SetBlockParam::IncreaseTime(seconds) => {
                let seconds = i64::try_from(seconds).map_err(|_| {
                    MineError::Setting(format!("time increase {seconds} too large"))
                })?;
                self.time_offset = self.time_offset.saturating_add(seconds);
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
