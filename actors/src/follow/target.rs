//! A replica's own node as the target of following: each leader block goes to this node's
//! engine actor as a received payload (the path engine_newPayload takes, without the JSON),
//! then a forkchoice update makes it the head.

use std::sync::Arc;

use alloy_consensus::transaction::SignerRecoverable;
use alloy_consensus::{Header, TxEnvelope};
use alloy_primitives::{Address, B256};
use hearth_messages::client::ActorError;
use hearth_messages::engine::{
    EngineClient, EngineError, ForkchoiceState, ForkchoiceUpdate, NewPayload, PayloadVerdict,
    ReceivedPayload,
};
use hearth_messages::executor::PooledTx;
use hearth_messages::miner::{BetweenBlocks, MinerClient};
use hearth_messages::state::LoadState;
use hearth_storage::{BlockExtras, ChainDb, StorageError};

use super::chase::{Diverged, FollowTarget};
use super::leader::{LeaderBlock, LeaderError, LeaderPatch};

/// Why a round of following failed.
#[derive(Debug, thiserror::Error)]
pub enum FollowFailure {
    /// The leader did not answer, or answered something unusable.
    #[error(transparent)]
    Leader(#[from] LeaderError),
    /// This node's chain cannot follow the leader's from where it is.
    #[error(transparent)]
    Diverged(#[from] Diverged),
    /// A leader block did not check on this node: the replica stops at its parent.
    #[error(
        "the leader's block {number} ({hash}) is {verdict} here: {why}; this replica stays at block {}",
        number.saturating_sub(1)
    )]
    Refused {
        /// The block's number.
        number: u64,
        /// Its hash.
        hash: B256,
        /// The verdict (INVALID, SYNCING, ACCEPTED).
        verdict: &'static str,
        /// Why, when the node said.
        why: String,
    },
    /// A dev patch of the leader's, replayed here, left another state root.
    #[error(
        "the leader's dev patch at block {head} leaves state root {theirs} there and {ours} here; this replica stays at block {head}"
    )]
    Patch {
        /// The head the patch was made at.
        head: u64,
        /// The leader's root after it.
        theirs: B256,
        /// This node's.
        ours: B256,
    },
    /// The engine actor failed for a reason of this node's.
    #[error(transparent)]
    Engine(#[from] EngineError),
    /// The engine actor did not answer.
    #[error(transparent)]
    Actor(#[from] ActorError),
    /// Reading this node's chain failed.
    #[error(transparent)]
    Storage(#[from] StorageError),
    /// Replaying a dev patch failed for a reason of this node's.
    #[error(transparent)]
    Mine(#[from] hearth_messages::MineError),
}

/// This node, reached through its engine actor (blocks) and its miner (dev patches, between
/// blocks as every dev change).
#[derive(Debug, Clone)]
pub struct EngineTarget {
    engine: EngineClient,
    miner: MinerClient,
    db: ChainDb,
}

impl EngineTarget {
    /// The node whose engine is `engine`, whose miner is `miner` and whose chain `db` reads.
    pub const fn new(engine: EngineClient, miner: MinerClient, db: ChainDb) -> Self {
        Self { engine, miner, db }
    }

    async fn choose(&self, hash: B256, number: u64) -> Result<(), FollowFailure> {
        // Safe and finalized are not named: they keep meaning the head, as on a dev leader.
        let state = ForkchoiceState { head: hash, safe: B256::ZERO, finalized: B256::ZERO };
        let answer =
            self.engine.forkchoice_updated(ForkchoiceUpdate { state, attributes: None }).await??;
        match answer.status {
            PayloadVerdict::Valid(_) => Ok(()),
            other => Err(refused(number, hash, &other)),
        }
    }
}

fn refused(number: u64, hash: B256, verdict: &PayloadVerdict) -> FollowFailure {
    let (verdict, why) = match verdict {
        PayloadVerdict::Valid(_) => ("VALID", String::new()),
        PayloadVerdict::Invalid { error, .. } => ("INVALID", error.clone()),
        PayloadVerdict::Syncing => ("SYNCING", "its parent is unknown".to_owned()),
        PayloadVerdict::Accepted => ("ACCEPTED", "its parent was not executed".to_owned()),
    };
    FollowFailure::Refused { number, hash, verdict, why }
}

/// The sender of a transaction a dev leader mined for an impersonated account
/// (`anvil_impersonateAccount`): its signature is Hearth's placeholder, which names it. The
/// leader's impersonation is its choice, as its blocks' other inputs are (its RPC refuses a
/// raw transaction of that shape); the execution that follows is checked.
fn impersonated_sender(tx: &TxEnvelope) -> Option<Address> {
    hearth_messages::mempool::placeholder_sender(tx.signature())
}

impl FollowTarget for EngineTarget {
    type Error = FollowFailure;

    async fn head(&self) -> Result<(u64, B256), FollowFailure> {
        let number = self.db.head_number().unwrap_or_default();
        Ok((number, self.db.block_hash(number)?.unwrap_or_default()))
    }

    async fn hash_at(&self, number: u64) -> Result<Option<B256>, FollowFailure> {
        Ok(self.db.block_hash(number)?)
    }

    async fn import(&self, block: LeaderBlock) -> Result<(), FollowFailure> {
        let hash = block.header.hash_slow();
        let number = block.header.number;
        let has_withdrawals = block.body.withdrawals.is_some();
        let mut txs = Vec::with_capacity(block.body.transactions.len());
        for (index, tx) in block.body.transactions.into_iter().enumerate() {
            let Some(sender) = impersonated_sender(&tx).or_else(|| tx.recover_signer().ok()) else {
                let why = format!("transaction {index} has an invalid signature");
                return Err(FollowFailure::Refused { number, hash, verdict: "INVALID", why });
            };
            let tx_hash = *tx.tx_hash();
            txs.push(PooledTx { tx: Arc::new(tx), sender, hash: tx_hash });
        }
        let withdrawals = block.body.withdrawals.map(|w| w.into_inner()).unwrap_or_default();
        let received = ReceivedPayload {
            header: block.header,
            hash,
            txs,
            extras: BlockExtras { ommers: block.body.ommers, withdrawals },
            has_withdrawals,
        };
        match self.engine.new_payload(NewPayload(received)).await?? {
            PayloadVerdict::Valid(_) => self.choose(hash, number).await,
            other => Err(refused(number, hash, &other)),
        }
    }

    async fn rewind_to(&self, header: &Header, hash: B256) -> Result<(), FollowFailure> {
        self.choose(hash, header.number).await
    }

    async fn patched_root(&self, number: u64) -> Result<Option<B256>, FollowFailure> {
        Ok(self.db.state_root_at(number)?)
    }

    async fn apply_patch(&self, patch: LeaderPatch) -> Result<(), FollowFailure> {
        let head = self.db.head_number().unwrap_or_default();
        let load = LoadState { accounts: patch.accounts };
        let root = self.miner.load_state(BetweenBlocks(load)).await??;
        if root != patch.root {
            return Err(FollowFailure::Patch { head, theirs: patch.root, ours: root });
        }
        tracing::info!(target: "follow", block = head, %root, "replayed a dev patch of the leader's");
        Ok(())
    }
}
