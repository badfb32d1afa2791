//! The work of each engine call, run as a future apart from the actor: checking a received
//! block on its parent, making a block the head (rewind, side-chain switch), recording safe and
//! finalized, building a payload. Each returns its answer and what the actor should keep.

use std::sync::Arc;

use alloy_consensus::Header;
use alloy_primitives::{B256, keccak256};
use hearth_messages::engine::{
    EngineError, ForkchoiceAnswer, ForkchoiceState, ForkchoiceUpdate, PayloadId, PayloadRequest,
    PayloadVerdict, ReceivedPayload,
};
use hearth_messages::executor::{
    BlockEnvSpec, BlockRules, BuildBlock, BuildMode, ExecutorClient, next_gas_limit,
};
use hearth_messages::mempool::{TakePending, TxsMined};
use hearth_messages::miner::{BetweenBlocks, GetMiningStatus, MinerClient, Rewind};
use hearth_messages::payload::{BuildPayload, BuiltPayload, ReceivedBlock};
use hearth_messages::state::{CommitBlock, SetForkchoice};
use hearth_messages::{ExecError, MineError, StateError};
use hearth_storage::{BlockDraft, ChainDb, ForkchoiceMarks};

use super::kept::{Kept, Learned, Side};

/// Byte budget of a payload's transactions taken from the pool (as the miner's blocks).
const PAYLOAD_MAX_TX_BYTES: usize = 10 * 1024 * 1024;

/// Who the engine actor talks to.
#[derive(Debug, Clone)]
pub struct EnginePeers {
    /// The executor pool: payloads built and received blocks checked.
    pub executor: ExecutorClient,
    /// The miner: commits between its blocks, rewinds, and the node's gas limit.
    pub miner: MinerClient,
    /// The mempool's pending transactions, for payloads built from the pool.
    pub take_pending: actix::Recipient<TakePending>,
    /// The mempool, told what a committed block included.
    pub txs_mined: actix::Recipient<TxsMined>,
    /// The state owner's safe and finalized marks.
    pub marks: actix::Recipient<SetForkchoice>,
    /// What the node prints of committed blocks (transaction lines, console.log output), as
    /// for the miner's.
    pub show: crate::exec::Show,
}

/// How the engine judges blocks.
#[derive(Debug, Clone, Copy, Default)]
pub struct EngineConfig {
    /// A block (or payload attributes) may carry its parent's timestamp: a rollup sequencer
    /// makes several blocks a second (`--engine.same-second-blocks`).
    pub same_second_blocks: bool,
    /// The blocks come from a dev chain's leader, followed by this read replica (`--follow`):
    /// the header fields its dev methods choose are taken as made.
    pub dev_leader: bool,
}

/// What one call works with: the chain (read), the peers, the settings.
#[derive(Debug, Clone)]
pub(super) struct Work {
    pub(super) db: ChainDb,
    pub(super) peers: EnginePeers,
    pub(super) config: EngineConfig,
}

/// What engine_newPayload does with a block, decided from what is known when it comes.
#[derive(Debug)]
pub(super) enum NewPlan {
    /// Answered at once (known, known invalid, or unknown parent), keeping what is listed.
    Answer(PayloadVerdict, Vec<Learned>),
    /// Execute it on this canonical parent.
    Check(Box<Header>),
}

/// What engine_forkchoiceUpdated does to make the named block the head.
#[derive(Debug)]
pub(super) enum Plan {
    /// The block is known invalid (its newest valid ancestor).
    Invalid(Option<B256>),
    /// The block is canonical, at this number (the head or an ancestor of it).
    Canonical(u64),
    /// The block ends a side chain that leaves the canonical chain after block `ancestor`:
    /// these blocks, oldest first.
    Switch { ancestor: u64, blocks: Vec<Side> },
    /// The block, or an ancestor of it, is unknown.
    Syncing,
}

/// Whether an execution error is the block's fault (an invalid block), not the node's.
fn is_invalid_block(error: &ExecError) -> bool {
    !matches!(
        error,
        ExecError::Busy(_)
            | ExecError::Timeout { .. }
            | ExecError::Storage(_)
            | ExecError::Mailbox(_)
            | ExecError::Panicked(_)
            | ExecError::ShuttingDown
            | ExecError::ForkMisses(_)
            | ExecError::UnknownBlock
    )
}

impl Work {
    /// The number of `hash` when it is on the canonical chain.
    fn canonical(&self, hash: &B256) -> Result<Option<u64>, EngineError> {
        let Some(number) = self.db.block_number(hash)? else { return Ok(None) };
        Ok((self.db.block_hash(number)? == Some(*hash)).then_some(number))
    }

    fn head(&self) -> Result<(u64, Header), EngineError> {
        let number = self.db.head_number().unwrap_or_default();
        let header = self
            .db
            .header(number)?
            .ok_or(hearth_storage::StorageError::Corrupt { what: "the head header" })?;
        Ok((number, header))
    }

    pub(super) fn new_payload_plan(
        &self,
        kept: &Kept,
        block: &ReceivedPayload,
    ) -> Result<NewPlan, EngineError> {
        let answer = |verdict| Ok(NewPlan::Answer(verdict, Vec::new()));
        let parent = block.header.parent_hash;
        if self.canonical(&block.hash)?.is_some() {
            return answer(PayloadVerdict::Valid(block.hash));
        }
        // A dev leader's block is judged again each time: whether it checks depends on the dev
        // patches replayed before it (`follow::chase`), not on the block alone.
        let remembered = |hash| if self.config.dev_leader { None } else { kept.invalid(hash) };
        if let Some(ancestor) = remembered(&block.hash) {
            let error = "the block was found invalid before".to_owned();
            return answer(PayloadVerdict::Invalid { latest_valid_hash: ancestor, error });
        }
        if let Some(ancestor) = remembered(&parent) {
            let error = format!("its parent {parent} is invalid");
            let verdict = PayloadVerdict::Invalid { latest_valid_hash: ancestor, error };
            return Ok(NewPlan::Answer(verdict, vec![Learned::Invalid(block.hash, ancestor)]));
        }
        if let Some(Side::Checked(_)) = kept.side(&block.hash) {
            return answer(PayloadVerdict::Valid(block.hash));
        }
        if let Some(number) = self.canonical(&parent)? {
            let header = self.db.header(number)?.ok_or(hearth_storage::StorageError::Corrupt {
                what: "the header of a canonical block",
            })?;
            return Ok(NewPlan::Check(Box::new(header)));
        }
        // Kept unexecuted: it runs when a forkchoice update chooses it.
        let keep = vec![Learned::Side(Side::Unchecked(Arc::new(block.clone())))];
        let verdict = if self.reaches_canonical(kept, parent)? {
            PayloadVerdict::Accepted
        } else {
            PayloadVerdict::Syncing
        };
        Ok(NewPlan::Answer(verdict, keep))
    }

    /// Whether side block `hash` leads back through kept side blocks to the canonical chain.
    fn reaches_canonical(&self, kept: &Kept, mut hash: B256) -> Result<bool, EngineError> {
        for _ in 0..=super::kept::MAX_SIDE_BLOCKS {
            let Some(side) = kept.side(&hash) else { return Ok(false) };
            hash = side.parent_hash();
            if self.canonical(&hash)?.is_some() {
                return Ok(true);
            }
        }
        Ok(false)
    }

    pub(super) async fn new_payload(
        &self,
        plan: NewPlan,
        block: ReceivedPayload,
    ) -> (Result<PayloadVerdict, EngineError>, Vec<Learned>) {
        let parent = match plan {
            NewPlan::Answer(verdict, learned) => return (Ok(verdict), learned),
            NewPlan::Check(parent) => parent,
        };
        let parent_hash = block.header.parent_hash;
        let hash = block.hash;
        match self.check(*parent, Arc::new(block)).await {
            Ok(built) => {
                (Ok(PayloadVerdict::Valid(hash)), vec![Learned::Side(Side::Checked(built))])
            }
            Err(EngineError::Exec(error)) if is_invalid_block(&error) => {
                let verdict = PayloadVerdict::Invalid {
                    latest_valid_hash: Some(parent_hash),
                    error: error.to_string(),
                };
                (Ok(verdict), vec![Learned::Invalid(hash, Some(parent_hash))])
            }
            Err(error) => (Err(error), Vec::new()),
        }
    }

    /// Executes `block` on `parent` (canonical) and checks it.
    async fn check(
        &self,
        parent: Header,
        block: Arc<ReceivedPayload>,
    ) -> Result<Arc<BuiltPayload>, EngineError> {
        let block = Arc::unwrap_or_clone(block);
        let env = BlockEnvSpec {
            withdrawals: block.extras.withdrawals.clone(),
            ..BlockEnvSpec::of_header(&block.header)
        };
        let parent = alloy_consensus::Sealed::new(parent);
        let build = BuildBlock { parent, env, txs: block.txs, mode: BuildMode::Import };
        let received = ReceivedBlock {
            header: block.header,
            extras: block.extras,
            has_withdrawals: block.has_withdrawals,
            same_second: self.config.same_second_blocks,
            dev_leader: self.config.dev_leader,
        };
        let request = BuildPayload { build, received: Some(received) };
        Ok(Arc::new(self.peers.executor.build_payload(request).await?))
    }

    pub(super) fn head_plan(&self, kept: &Kept, head: B256) -> Result<Plan, EngineError> {
        if head.is_zero() {
            return Ok(Plan::Invalid(None));
        }
        // A dev leader's block is judged again (see `new_payload_plan`).
        if !self.config.dev_leader
            && let Some(ancestor) = kept.invalid(&head)
        {
            return Ok(Plan::Invalid(ancestor));
        }
        if let Some(number) = self.canonical(&head)? {
            return Ok(Plan::Canonical(number));
        }
        let mut blocks = Vec::new();
        let mut hash = head;
        // Walk back through side blocks to the canonical chain (at most every side block).
        while let Some(side) = kept.side(&hash) {
            hash = side.parent_hash();
            blocks.push(side.clone());
            if let Some(ancestor) = self.canonical(&hash)? {
                blocks.reverse();
                return Ok(Plan::Switch { ancestor, blocks });
            }
            if blocks.len() > super::kept::MAX_SIDE_BLOCKS {
                break;
            }
        }
        Ok(Plan::Syncing)
    }

    pub(super) async fn forkchoice(
        &self,
        plan: Plan,
        update: ForkchoiceUpdate,
    ) -> (Result<ForkchoiceAnswer, EngineError>, Vec<Learned>) {
        let mut learned = Vec::new();
        // Safe and finalized must be on the new head's chain: checked before anything moves.
        if let Err(error) = self.check_marks(&plan, update.state) {
            return (Err(error), learned);
        }
        let status = match self.make_head(plan, &mut learned).await {
            Ok(status) => status,
            Err(error) => return (Err(error), learned),
        };
        let valid = matches!(status, PayloadVerdict::Valid(_));
        if !valid {
            return (Ok(ForkchoiceAnswer { status, payload_id: None }), learned);
        }
        if let Err(error) = self.set_marks(update.state).await {
            return (Err(error), learned);
        }
        let payload_id = match update.attributes {
            None => None,
            Some(request) => match self.build(request).await {
                Ok((id, built)) => {
                    learned.push(Learned::Payload(id, built));
                    Some(id)
                }
                Err(error) => return (Err(error), learned),
            },
        };
        (Ok(ForkchoiceAnswer { status, payload_id }), learned)
    }

    /// -38002 unless each of safe and finalized (when named) is on the chain the plan makes:
    /// canonical at or below where it keeps the canonical chain, or a block of its branch.
    fn check_marks(&self, plan: &Plan, state: ForkchoiceState) -> Result<(), EngineError> {
        let (kept_to, branch): (u64, &[Side]) = match plan {
            Plan::Canonical(number) => (*number, &[]),
            Plan::Switch { ancestor, blocks } => (*ancestor, blocks),
            Plan::Invalid(_) | Plan::Syncing => return Ok(()),
        };
        for (name, hash) in [("safe", state.safe), ("finalized", state.finalized)] {
            if hash.is_zero() || branch.iter().any(|side| side.hash() == hash) {
                continue;
            }
            if self.canonical(&hash)?.is_none_or(|number| number > kept_to) {
                return Err(EngineError::InvalidForkchoiceState(format!(
                    "the {name} block {hash} is not on the new head's chain"
                )));
            }
        }
        Ok(())
    }

    /// Makes the planned block the head; answers its status.
    async fn make_head(
        &self,
        plan: Plan,
        learned: &mut Vec<Learned>,
    ) -> Result<PayloadVerdict, EngineError> {
        match plan {
            Plan::Invalid(latest_valid_hash) => Ok(PayloadVerdict::Invalid {
                latest_valid_hash,
                error: "the head block is invalid".to_owned(),
            }),
            Plan::Syncing => Ok(PayloadVerdict::Syncing),
            Plan::Canonical(number) => {
                self.rewind_to(number, learned).await?;
                let hash = self.db.block_hash(number)?.unwrap_or_default();
                Ok(PayloadVerdict::Valid(hash))
            }
            Plan::Switch { ancestor, blocks } => {
                self.rewind_to(ancestor, learned).await?;
                self.commit_all(blocks, learned).await
            }
        }
    }

    /// Rewinds the chain to block `number` (durably, through the miner) when it is below the
    /// head; the blocks dropped are told to log subscribers as removed, and kept as side
    /// blocks (the oldest `MAX_SIDE_BLOCKS` of them), so a later update can choose them again.
    async fn rewind_to(&self, number: u64, learned: &mut Vec<Learned>) -> Result<(), EngineError> {
        let head = self.db.head_number().unwrap_or_default();
        if number < head {
            let last = head.min(number.saturating_add(super::kept::MAX_SIDE_BLOCKS as u64));
            for dropped in number + 1..=last {
                if let Some(block) = self.db.sealed_block(dropped)? {
                    let received = received_of(&block);
                    learned.push(Learned::Side(Side::Unchecked(Arc::new(received))));
                }
            }
            let rewind = Rewind { depth: head - number, blocks: Vec::new() };
            self.peers.miner.rewind(rewind).await??;
        }
        Ok(())
    }

    /// Commits a side chain's blocks in order on the head; the first invalid one stops it.
    async fn commit_all(
        &self,
        blocks: Vec<Side>,
        learned: &mut Vec<Learned>,
    ) -> Result<PayloadVerdict, EngineError> {
        let mut last_valid = self.head()?.1.hash_slow();
        let mut failed: Option<String> = None;
        for side in blocks {
            let hash = side.hash();
            if failed.is_some() {
                learned.push(Learned::Invalid(hash, Some(last_valid)));
                continue;
            }
            match self.commit(side).await {
                Ok(()) => {
                    learned.push(Learned::Committed(hash));
                    last_valid = hash;
                }
                Err(EngineError::Exec(error)) if is_invalid_block(&error) => {
                    learned.push(Learned::Invalid(hash, Some(last_valid)));
                    failed = Some(error.to_string());
                }
                Err(error) => return Err(error),
            }
        }
        Ok(match failed {
            None => PayloadVerdict::Valid(last_valid),
            Some(error) => PayloadVerdict::Invalid { latest_valid_hash: Some(last_valid), error },
        })
    }

    /// Commits one side block on the head: as checked when its parent's state is still the
    /// one it was checked on, else checked again on the head first (once: a dev patch came
    /// between the check and the commit).
    async fn commit(&self, side: Side) -> Result<(), EngineError> {
        let (number, head) = self.head()?;
        let head_hash = self.db.block_hash(number)?.unwrap_or_default();
        if side.parent_hash() != head_hash {
            // The node made a block of its own since the rewind (automine, --block-time,
            // evm_mine): not the block's fault.
            return Err(EngineError::HeadMoved { head: head_hash, parent: side.parent_hash() });
        }
        let built = match side {
            Side::Checked(built) => built,
            Side::Unchecked(received) => self.check(head.clone(), received).await?,
        };
        let built = match self.commit_checked(&built).await {
            Err(EngineError::Mine(MineError::State(StateError::HeadChanged { .. }))) => {
                let again = self.check(head, Arc::new(received_of(&built.block))).await?;
                self.commit_checked(&again).await?;
                again
            }
            other => {
                other?;
                built
            }
        };
        let included = built.block.body.transactions.iter().map(|tx| *tx.tx_hash()).collect();
        self.peers
            .txs_mined
            .send(TxsMined { included, invalid: Vec::new() })
            .await
            .map_err(MineError::from)?;
        Ok(())
    }

    /// Has the miner commit `built` between its blocks.
    async fn commit_checked(&self, built: &BuiltPayload) -> Result<(), EngineError> {
        let block = &built.block;
        tracing::debug!(target: "actors::engine", number = block.header.number, hash = %block.hash, "committing");
        let draft = BlockDraft {
            header: block.header.clone(),
            body: block.body.clone(),
            receipts: block.receipts.clone(),
            touched: built.ran.touched.clone(),
        };
        let commit = CommitBlock {
            draft,
            diff: (*built.diff).clone(),
            parent_root: built.parent_root,
            received: Some(block.extras.clone()),
        };
        let committed = self.peers.miner.commit_block(BetweenBlocks(commit)).await??;
        tracing::debug!(target: "actors::engine", number = block.header.number, "committed");
        let ran = crate::report::Ran { outputs: &built.ran.outputs, halts: &built.ran.halts };
        crate::report::block_mined(&self.peers.show, &committed, ran, built.ran.console.clone());
        Ok(())
    }

    /// Records safe and finalized, each of which must be on the head's chain (or zero).
    async fn set_marks(&self, state: ForkchoiceState) -> Result<(), EngineError> {
        let head = self.db.head_number().unwrap_or_default();
        let mark = |name: &str, hash: B256| -> Result<Option<(u64, B256)>, EngineError> {
            if hash.is_zero() {
                return Ok(None);
            }
            match self.canonical(&hash)? {
                Some(number) if number <= head => Ok(Some((number, hash))),
                _ => Err(EngineError::InvalidForkchoiceState(format!(
                    "the {name} block {hash} is not on the head's chain"
                ))),
            }
        };
        let marks = ForkchoiceMarks {
            safe: mark("safe", state.safe)?,
            finalized: mark("finalized", state.finalized)?,
        };
        if let (Some((safe, _)), Some((finalized, _))) = (marks.safe, marks.finalized)
            && finalized > safe
        {
            return Err(EngineError::InvalidForkchoiceState(format!(
                "the finalized block {finalized} is after the safe block {safe}"
            )));
        }
        if marks != self.db.forkchoice_marks()? {
            self.peers.marks.send(SetForkchoice(marks)).await.map_err(MineError::from)??;
        }
        Ok(())
    }

    /// Builds a payload on the head from `request`; answers its id.
    async fn build(
        &self,
        request: PayloadRequest,
    ) -> Result<(PayloadId, Arc<BuiltPayload>), EngineError> {
        let (number, parent) = self.head()?;
        let later = request.timestamp > parent.timestamp
            || (self.config.same_second_blocks && request.timestamp == parent.timestamp);
        if !later {
            return Err(EngineError::InvalidAttributes(format!(
                "timestamp {} is not after the head's {}",
                request.timestamp, parent.timestamp
            )));
        }
        let status = self.peers.miner.mining_status(GetMiningStatus).await?;
        let gas_limit =
            request.gas_limit.unwrap_or_else(|| next_gas_limit(parent.gas_limit, status.gas_limit));
        let base_fee = hearth_messages::base_fee::next_base_fee(&parent).unwrap_or(0);
        let (txs, mode) = match &request.transactions {
            Some(txs) => (txs.clone(), BuildMode::Pack),
            None => {
                let take = TakePending { gas_limit, max_bytes: PAYLOAD_MAX_TX_BYTES, base_fee };
                let pending = self.peers.take_pending.send(take).await.map_err(MineError::from)?;
                (pending, BuildMode::Pack)
            }
        };
        let env = BlockEnvSpec {
            withdrawals: request.withdrawals.clone().unwrap_or_default(),
            parent_beacon_block_root: request.parent_beacon_block_root,
            rules: BlockRules::Full,
            ..BlockEnvSpec::dev(
                number + 1,
                request.timestamp,
                request.fee_recipient,
                gas_limit,
                base_fee,
                request.prev_randao,
            )
        };
        let parent = alloy_consensus::Sealed::new(parent);
        let id = payload_id(parent.hash(), &request);
        let build = BuildBlock { parent, env, txs, mode };
        let built = self.peers.executor.build_payload(BuildPayload::build(build)).await?;
        Ok((id, Arc::new(built)))
    }
}

/// A stored or built block as a received one, to check (again) on a parent.
fn received_of(block: &hearth_storage::SealedBlock) -> ReceivedPayload {
    let txs = block
        .body
        .transactions
        .iter()
        .zip(&block.body.senders)
        .map(|(tx, sender)| hearth_messages::executor::PooledTx {
            tx: Arc::new(tx.clone()),
            sender: *sender,
            hash: *tx.tx_hash(),
        })
        .collect();
    ReceivedPayload {
        header: block.header.clone(),
        hash: block.hash,
        txs,
        extras: block.extras.clone(),
        has_withdrawals: block.header.withdrawals_root.is_some(),
    }
}

/// A payload's id: the first 8 bytes of a hash of its parent and everything the attributes
/// say, so the same request on the same head gets the same id (as geth and reth give).
fn payload_id(parent: B256, request: &PayloadRequest) -> PayloadId {
    let mut bytes = Vec::with_capacity(256);
    bytes.extend_from_slice(parent.as_slice());
    bytes.extend_from_slice(&request.timestamp.to_be_bytes());
    bytes.extend_from_slice(request.prev_randao.as_slice());
    bytes.extend_from_slice(request.fee_recipient.as_slice());
    for withdrawal in request.withdrawals.iter().flatten() {
        bytes.extend_from_slice(&withdrawal.index.to_be_bytes());
        bytes.extend_from_slice(&withdrawal.validator_index.to_be_bytes());
        bytes.extend_from_slice(withdrawal.address.as_slice());
        bytes.extend_from_slice(&withdrawal.amount.to_be_bytes());
    }
    bytes.extend_from_slice(request.parent_beacon_block_root.unwrap_or_default().as_slice());
    for tx in request.transactions.iter().flatten() {
        bytes.extend_from_slice(tx.hash.as_slice());
    }
    bytes.extend_from_slice(&request.gas_limit.unwrap_or_default().to_be_bytes());
    let hash = keccak256(bytes);
    let mut id = [0u8; 8];
    id.copy_from_slice(&hash[..8]);
    id
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_payload_id_follows_every_attribute() {
        let request = PayloadRequest {
            timestamp: 10,
            prev_randao: B256::ZERO,
            fee_recipient: alloy_primitives::Address::ZERO,
            withdrawals: None,
            parent_beacon_block_root: None,
            transactions: None,
            gas_limit: None,
        };
        let id = payload_id(B256::ZERO, &request);
        assert_eq!(id, payload_id(B256::ZERO, &request));
        assert_ne!(id, payload_id(B256::with_last_byte(1), &request));
        assert_ne!(
            id,
            payload_id(B256::ZERO, &PayloadRequest { timestamp: 11, ..request.clone() })
        );
        assert_ne!(id, payload_id(B256::ZERO, &PayloadRequest { gas_limit: Some(1), ..request }));
    }
}
