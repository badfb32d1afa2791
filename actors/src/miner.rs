//! `MinerActor`: decides when blocks are made.
//!
//! Owns: the mining mode (automine on or off), the block gas limit and coinbase, and the clock
//! that stamps blocks. Handles `AutoMine` and `MineBlocks`. Sends `TakePending` and `TxsMined`
//! to the mempool, `BuildBlock` to the executor pool (through `ExecutorClient`) and
//! `CommitBlock` to the state owner. Execution never runs here: the miner only sequences, so
//! its mailbox keeps moving while a block executes. One block at a time: handlers are atomic
//! futures, so a second request waits in the (bounded) mailbox until the first block is
//! committed. Restart: never; it holds no state that is not in the chain.

use std::num::NonZeroUsize;
use std::sync::Arc;

use actix::{Actor, ActorFutureExt, Addr, AtomicResponse, Context, Handler, Recipient, WrapFuture};
use alloy_eips::eip1559::BaseFeeParams;
use alloy_primitives::{Address, keccak256};
use hearth_messages::MineError;
use hearth_messages::executor::{BlockEnvSpec, BuildBlock, BuildMode, ExecutorClient};
use hearth_messages::mempool::{TakePending, TxsMined};
use hearth_messages::miner::{AutoMine, MineBlocks};
use hearth_messages::state::CommitBlock;
use hearth_storage::{ChainDb, SealedBlock};

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
    /// Gas limit of every block.
    pub gas_limit: u64,
    /// Fee recipient.
    pub coinbase: Address,
    /// Block timestamps come from here.
    pub clock: Clock,
}

impl std::fmt::Debug for MinerConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MinerConfig")
            .field("automine", &self.automine)
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

/// The miner.
#[derive(Debug)]
pub struct MinerActor {
    db: ChainDb,
    peers: MinerPeers,
    config: MinerConfig,
}

impl MinerActor {
    /// A miner building on `db`'s head.
    pub fn new(db: ChainDb, peers: MinerPeers, config: MinerConfig) -> Self {
        Self { db, peers, config }
    }

    /// Starts the actor on its own arbiter with its mailbox bounded from the first message on.
    pub fn start_bounded(self, mailbox: NonZeroUsize) -> Addr<Self> {
        let arbiter = actix::Arbiter::new();
        Self::start_in_arbiter(&arbiter.handle(), move |ctx| {
            ctx.set_mailbox_capacity(mailbox.get());
            self
        })
    }

    fn job(&self) -> MineJob {
        MineJob { db: self.db.clone(), peers: self.peers.clone(), config: self.config.clone() }
    }
}

/// Everything one mining run needs, detached from the actor so it can run as a future.
struct MineJob {
    db: ChainDb,
    peers: MinerPeers,
    config: MinerConfig,
}

impl MineJob {
    /// Builds and commits one block on the head. With `only_if_pending`, makes no block when
    /// nothing is executable. Returns the block, if one was made.
    async fn mine_one(
        &self,
        timestamp: Option<u64>,
        only_if_pending: bool,
    ) -> Result<Option<Arc<SealedBlock>>, MineError> {
        let head = self.db.head_number().unwrap_or_default();
        let parent =
            self.db.header(head).map_err(|e| MineError::State(e.into()))?.ok_or(
                MineError::State(hearth_messages::StateError::NotNext { head, got: head }),
            )?;
        let base_fee = alloy_eips::calc_next_block_base_fee(
            parent.gas_used,
            parent.gas_limit,
            parent.base_fee_per_gas.unwrap_or_default(),
            BaseFeeParams::ethereum(),
        );
        let gas_limit = self.config.gas_limit;
        let txs = self.peers.take_pending.send(TakePending { gas_limit, base_fee }).await?;
        if txs.is_empty() && only_if_pending {
            return Ok(None);
        }
        let timestamp = match timestamp {
            Some(t) if t <= parent.timestamp => {
                return Err(MineError::Timestamp { parent: parent.timestamp, got: t });
            }
            Some(t) => t,
            None => (self.config.clock)().max(parent.timestamp + 1),
        };
        // Deterministic prevrandao per parent: a dev chain needs no real randomness.
        let env = BlockEnvSpec::dev(
            parent.number + 1,
            timestamp,
            self.config.coinbase,
            gas_limit,
            base_fee,
            keccak256(parent.hash_slow()),
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
            return Ok(None);
        }
        let block =
            self.peers.commit.send(CommitBlock { draft: built.draft, diff: built.diff }).await??;
        self.peers.txs_mined.send(TxsMined { included, invalid }).await?;
        Ok(Some(block))
    }
}

impl Actor for MinerActor {
    type Context = Context<Self>;
}

impl Handler<AutoMine> for MinerActor {
    type Result = AtomicResponse<Self, Result<Option<u64>, MineError>>;

    fn handle(&mut self, _msg: AutoMine, _ctx: &mut Self::Context) -> Self::Result {
        let job = self.job();
        let enabled = self.config.automine;
        AtomicResponse::new(Box::pin(
            async move {
                if !enabled {
                    return Ok(None);
                }
                let mut last = None;
                // Keep mining while executable transactions remain (e.g. more than one block
                // worth of gas arrived at once).
                while let Some(block) = job.mine_one(None, true).await? {
                    last = Some(block.number());
                }
                Ok(last)
            }
            .into_actor(self)
            .map(|result, _, _| result),
        ))
    }
}

impl Handler<MineBlocks> for MinerActor {
    type Result = AtomicResponse<Self, Result<u64, MineError>>;

    fn handle(&mut self, msg: MineBlocks, _ctx: &mut Self::Context) -> Self::Result {
        let job = self.job();
        AtomicResponse::new(Box::pin(
            async move {
                let mut last = job.db.head_number().unwrap_or_default();
                let mut timestamp = msg.timestamp;
                for _ in 0..msg.count {
                    if let Some(block) = job.mine_one(timestamp, false).await? {
                        last = block.number();
                        timestamp = timestamp.map(|t| t.max(block.header.timestamp) + 1);
                    }
                }
                Ok(last)
            }
            .into_actor(self)
            .map(|result, _, _| result),
        ))
    }
}
