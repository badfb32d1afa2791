//! The shell's side of mining: a `MineJob` carries one run out with the peers (take the pool's
//! transactions, build through the executor client, commit on the state owner, report to the
//! pool), following the [`BlockRules`] the core copied out for it. It runs as a future apart
//! from the actor, so the actor's mailbox keeps moving while a block executes on the pool (a
//! small block is built on this thread: `executor::inline`).

use std::sync::Arc;

use alloy_consensus::{Header, Sealed};
use alloy_primitives::{B256, Bytes, keccak256};
use hearth_messages::executor::{BlockEnvSpec, BuildBlock, BuildMode, BuiltBlock, PooledTx};
use hearth_messages::mempool::{TakePending, TxsMined};
use hearth_messages::miner::MinedBlock;
use hearth_messages::state::CommitBlock;
use hearth_messages::{ExecError, MineError, StateError};
use hearth_storage::trie::EMPTY_ROOT;
use hearth_storage::{ChainDb, SealedBlock};
use tokio::time::Instant;
use tracing::debug;

use super::block::{BlockKind, BlockRules, Position};
use super::series::Chunk;
use super::{Clock, MinerPeers};

/// Byte budget of one block's transactions: what geth's default RPC and p2p limits keep a
/// block under, so a block of many calldata-heavy transactions still propagates.
const BLOCK_MAX_TX_BYTES: usize = 10 * 1024 * 1024;

/// Where a block's transactions come from.
#[derive(Debug)]
pub(super) enum Txs {
    /// The pool's executable ones, as many as fit.
    Pool,
    /// Exactly these (anvil_reorg's new blocks; invalid ones are left out).
    Given(Vec<PooledTx>),
}

/// What one block run made.
#[derive(Debug)]
pub(super) struct Mined {
    /// The block, unless none was made.
    pub(super) block: Option<Arc<SealedBlock>>,
    /// Whether the pool still held transactions after the block (`false` when none was made:
    /// then nothing executable was there).
    pub(super) pool_left: bool,
    /// What the block's transactions returned, in order (`None`: halted).
    pub(super) outputs: Vec<Option<Bytes>>,
}

impl Mined {
    const NONE: Self = Self { block: None, pool_left: false, outputs: Vec::new() };
}

/// What a run hands back to the actor: its answer and the last block it sealed.
pub(super) type RunOutcome<T> = (Result<T, MineError>, Option<Arc<SealedBlock>>);

/// What one chunk of a series made: the last block number (the head when none was made) or
/// the error that stopped it, the chunk as it ended (the timestamp asked for the block after
/// it), the last block and, when asked to collect them, every block with its outputs.
#[derive(Debug)]
pub(super) struct ChunkRun {
    pub(super) result: Result<u64, MineError>,
    pub(super) chunk: Chunk,
    pub(super) last: Option<Arc<SealedBlock>>,
    pub(super) mined: Vec<MinedBlock>,
}

/// The block under construction: its parent, the state root it is built on, its base fee.
struct Base {
    parent: Sealed<Header>,
    parent_root: B256,
    base_fee: u64,
}

/// Everything one mining run needs, detached from the actor so it can run as a future.
pub(super) struct MineJob {
    pub(super) db: ChainDb,
    pub(super) peers: MinerPeers,
    pub(super) clock: Clock,
    pub(super) rules: BlockRules,
}

impl MineJob {
    /// Builds and commits one block of `kind` on the head from `txs`. Returns the block, if
    /// one was made (a kind that skips empty blocks makes none when nothing executes).
    pub(super) async fn mine(&self, kind: BlockKind, txs: Txs) -> Result<Mined, MineError> {
        // Shutting down: the block in progress (if any) finishes, no other one starts.
        if self.peers.executor.is_closed() {
            return Err(MineError::Exec(ExecError::ShuttingDown));
        }
        let base = self.base(kind)?;
        let take_started = Instant::now();
        let txs = match txs {
            Txs::Given(txs) => txs,
            Txs::Pool => self.take_pending(base.base_fee).await?,
        };
        let take_us = take_started.elapsed().as_micros() as u64;
        if txs.is_empty() && kind.skips_empty() {
            return Ok(Mined::NONE);
        }
        let timestamp = self.rules.stamp(kind, base.parent.timestamp, (self.clock)())?;
        // Deterministic prevrandao per parent: a dev chain needs no real randomness.
        let prevrandao =
            self.rules.prevrandao(kind).unwrap_or_else(|| keccak256(base.parent.hash()));
        let env = BlockEnvSpec::dev(
            base.parent.number + 1,
            timestamp,
            self.rules.coinbase,
            self.rules.gas_limit,
            base.base_fee,
            prevrandao,
        );
        self.build_and_commit(kind, base, env, txs, take_us).await
    }

    /// The head the block goes on, the state root the state owner checks it against, and its
    /// base fee (the override, else the parent's EIP-1559 successor).
    fn base(&self, kind: BlockKind) -> Result<Base, MineError> {
        let head = self.db.head_number().unwrap_or_default();
        let parent = self
            .db
            .sealed_header(head)
            .map_err(|e| MineError::State(e.into()))?
            .ok_or(MineError::State(StateError::NotNext { head, got: head }))?;
        let parent_root = self
            .db
            .state_root_at(head)
            .map_err(|e| MineError::State(e.into()))?
            .unwrap_or(EMPTY_ROOT);
        let base_fee = self
            .rules
            .base_fee(kind)
            .unwrap_or_else(|| hearth_messages::base_fee::next_base_fee(&parent).unwrap_or(0));
        Ok(Base { parent, parent_root, base_fee })
    }

    async fn take_pending(&self, base_fee: u64) -> Result<Vec<PooledTx>, MineError> {
        let gas_limit = self.rules.gas_limit;
        let take = TakePending { gas_limit, max_bytes: BLOCK_MAX_TX_BYTES, base_fee };
        Ok(self.peers.take_pending.send(take).await?)
    }

    /// Has the executor client build the block (here if small, else on the pool), then the
    /// state owner commit it, and tells the pool what went in.
    async fn build_and_commit(
        &self,
        kind: BlockKind,
        base: Base,
        env: BlockEnvSpec,
        txs: Vec<PooledTx>,
        take_us: u64,
    ) -> Result<Mined, MineError> {
        let build_started = Instant::now();
        let build = BuildBlock { parent: base.parent, env, txs, mode: BuildMode::Pack };
        let built: BuiltBlock = self.peers.executor.build_block(build).await?;
        let built_at = Instant::now();
        let included: Vec<_> =
            built.draft.body.transactions.iter().map(|tx| *tx.tx_hash()).collect();
        let invalid = built.invalid;
        if included.is_empty() && kind.skips_empty() {
            // Nothing executed (all invalid or too big): clean the pool, make no empty block.
            self.peers.txs_mined.send(TxsMined { included, invalid }).await?;
            return Ok(Mined::NONE);
        }
        let txs = included.len();
        let commit = CommitBlock {
            draft: built.draft,
            diff: built.diff,
            parent_root: base.parent_root,
            received: None,
        };
        let block = self.peers.commit.send(commit).await??;
        let committed_at = Instant::now();
        let ran = crate::report::Ran { outputs: &built.outputs, halts: &built.halts };
        crate::report::block_mined(&self.peers.show, &block, ran, built.console);
        if self.peers.show.traces && txs > 0 {
            self.print_traces(block.number()).await;
        }
        let pool_left = self.peers.txs_mined.send(TxsMined { included, invalid }).await?;
        // Where a block's time goes, for `scripts/mine-e2e.py`: building (execution, receipts,
        // the transactions root; on this thread for a block of at most 1M gas, `built_here`,
        // else on the executor pool), then the state owner's commit (the state root and the
        // durable write), then the pool's clean-up.
        debug!(
            target: "actors::miner",
            txs,
            take_us,
            build_us = (built_at - build_started).as_micros() as u64,
            built_here = built.built_here,
            commit_us = (committed_at - built_at).as_micros() as u64,
            pool_us = committed_at.elapsed().as_micros() as u64,
            "block timings"
        );
        Ok(Mined { block: Some(block), pool_left, outputs: built.outputs })
    }

    /// `--print-traces`: has the executor pool replay block `number` and print its named call
    /// trees, before the block is answered, so the output reads in the order blocks were made.
    /// A trace the pool refuses (busy) is said, not retried.
    async fn print_traces(&self, number: u64) {
        use hearth_messages::trace::{Trace, TraceBudget, TraceJob};
        let budget = TraceBudget { max_bytes: usize::MAX, timeout: None };
        let job = Trace { job: TraceJob::PrintBlock { block: number }, budget };
        if let Err(error) = self.peers.executor.trace(job).await {
            tracing::warn!(target: "trace", block = number, %error, "the block's call trees were not printed");
        }
    }

    /// Automine's run: keeps mining while executable transactions remain (e.g. more than one
    /// block worth of gas arrived at once). Answers the last block's number.
    pub(super) async fn mine_pending(&self) -> RunOutcome<Option<u64>> {
        let mut last: Option<Arc<SealedBlock>> = None;
        let mut position = Position::First;
        loop {
            match self.mine(BlockKind::Auto(position), Txs::Pool).await {
                Ok(Mined { block: Some(block), pool_left, .. }) => {
                    last = Some(block);
                    if !pool_left {
                        break;
                    }
                }
                Ok(Mined { block: None, .. }) => break,
                // The node began shutting down after an earlier block of this run: the
                // caller's transaction may be in it, so that block is the answer.
                Err(MineError::Exec(ExecError::ShuttingDown)) if last.is_some() => break,
                Err(e) => return (Err(e), last),
            }
            position = Position::Later;
        }
        (Ok(last.as_ref().map(|b| b.number())), last)
    }

    /// Mines the blocks of `chunk` one after the other (empty ones too). With `collect`, keeps
    /// every block and its transactions' outputs.
    pub(super) async fn mine_chunk(self, mut chunk: Chunk, collect: bool) -> ChunkRun {
        let mut last: Option<Arc<SealedBlock>> = None;
        let mut mined = Vec::new();
        for i in 0..chunk.count {
            match self.mine(chunk.block(i), Txs::Pool).await {
                Ok(Mined { block: Some(block), outputs, .. }) => {
                    chunk.mined(block.header.timestamp);
                    if collect {
                        mined.push(MinedBlock { block: Arc::clone(&block), outputs });
                    }
                    last = Some(block);
                }
                Ok(Mined { block: None, .. }) => {}
                Err(e) => return ChunkRun { result: Err(e), chunk, last, mined },
            }
        }
        let number =
            last.as_ref().map_or_else(|| self.db.head_number().unwrap_or_default(), |b| b.number());
        ChunkRun { result: Ok(number), chunk, last, mined }
    }

    /// anvil_reorg's run: one block of exactly the given transactions each. Answers the head.
    pub(super) async fn mine_given(self, blocks: Vec<Vec<PooledTx>>) -> RunOutcome<u64> {
        let mut last = None;
        for (i, txs) in (0u64..).zip(blocks) {
            match self.mine(BlockKind::Reorg(Position::First.nth(i)), Txs::Given(txs)).await {
                Ok(Mined { block: Some(block), .. }) => last = Some(block),
                Ok(Mined { block: None, .. }) => {}
                Err(error) => return (Err(error), last),
            }
        }
        let head = self.db.head_number().unwrap_or_default();
        (Ok(head), last)
    }
}
