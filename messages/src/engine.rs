//! Messages to the `EngineActor`, which owns what the Engine API keeps between calls: the
//! payloads it built, the blocks it received off the canonical chain (side blocks), the blocks
//! it found invalid, and which block the consensus client chose as head, safe and finalized.
//!
//! The RPC front decodes and checks each call's shape (versions, fields, block hash); the
//! actor does what needs the chain: execution on the executor pool, commits through the miner
//! (between its blocks), rewinds, and the safe and finalized marks through the state owner.

use std::sync::Arc;

use actix::Message;
use alloy_consensus::Header;
use alloy_eips::eip4895::Withdrawal;
use alloy_primitives::{Address, B256};
use hearth_storage::BlockExtras;

use crate::block_build::PooledTx;
use crate::client::ActorError;
use crate::payload::BuiltPayload;
use crate::{ExecError, MineError, StateError};

/// An 8-byte payload id, as engine_forkchoiceUpdated answers it.
pub type PayloadId = [u8; 8];

/// A payload's status, as the Engine API names them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PayloadVerdict {
    /// Executed on its parent and every check passed (`latest_valid_hash`: itself, or the head).
    Valid(B256),
    /// A rule is broken: `latest_valid_hash` is the newest valid ancestor (`None`: unknown).
    Invalid {
        /// The newest valid ancestor, when known.
        latest_valid_hash: Option<B256>,
        /// Which rule, in words.
        error: String,
    },
    /// Its parent (or an ancestor) is unknown: nothing can be said yet.
    Syncing,
    /// Kept, not executed: its parent is a side block not executed yet.
    Accepted,
}

/// A block an engine_newPayload call sent, decoded, its hash checked against the payload's, its
/// senders recovered.
#[derive(Debug, Clone)]
pub struct ReceivedPayload {
    /// The header exactly as sent (the block is stored with it).
    pub header: Header,
    /// Its hash (the payload's `blockHash`, checked).
    pub hash: B256,
    /// The transactions, in order, with their senders.
    pub txs: Vec<PooledTx>,
    /// Its withdrawals (and no ommers: a payload has none).
    pub extras: BlockExtras,
    /// Whether the payload carried a withdrawals list.
    pub has_withdrawals: bool,
}

/// engine_newPayload: check `0` on its parent and keep it (it does not become the head).
#[derive(Debug, Clone)]
pub struct NewPayload(pub ReceivedPayload);

impl Message for NewPayload {
    type Result = Result<PayloadVerdict, EngineError>;
}

/// The three blocks a forkchoice update names (a zero hash: not named).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ForkchoiceState {
    /// The new head.
    pub head: B256,
    /// The safe block.
    pub safe: B256,
    /// The finalized block.
    pub finalized: B256,
}

/// What the consensus client (or a sequencer) decides about the next block: with a forkchoice
/// update, the node builds a payload on the new head from these.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PayloadRequest {
    /// The block's timestamp.
    pub timestamp: u64,
    /// PREVRANDAO.
    pub prev_randao: B256,
    /// The fee recipient.
    pub fee_recipient: Address,
    /// Withdrawals (from Shanghai).
    pub withdrawals: Option<Vec<Withdrawal>>,
    /// The parent beacon block root (from Cancun).
    pub parent_beacon_block_root: Option<B256>,
    /// Exactly these transactions, in order, leaving out those that cannot go in (ev-reth's
    /// extension, which a rollup sequencer uses); `None`: the pool's.
    pub transactions: Option<Vec<PooledTx>>,
    /// The block's gas limit (ev-reth's extension); `None`: the parent's, moved toward the
    /// node's gas limit by the consensus step.
    pub gas_limit: Option<u64>,
}

/// engine_forkchoiceUpdated: make `state.head` the head (rewinding to an ancestor, or switching
/// to a side chain), record safe and finalized, and build a payload when `attributes` say so.
#[derive(Debug, Clone)]
pub struct ForkchoiceUpdate {
    /// The three blocks.
    pub state: ForkchoiceState,
    /// What to build on the new head, if anything.
    pub attributes: Option<PayloadRequest>,
}

/// What a forkchoice update answers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ForkchoiceAnswer {
    /// The head's status.
    pub status: PayloadVerdict,
    /// The id of the payload being built, when attributes were given and the head is valid.
    pub payload_id: Option<PayloadId>,
}

impl Message for ForkchoiceUpdate {
    type Result = Result<ForkchoiceAnswer, EngineError>;
}

/// engine_getPayload: the payload built under this id.
#[derive(Debug, Clone, Copy)]
pub struct GetPayload(pub PayloadId);

impl Message for GetPayload {
    type Result = Result<Arc<BuiltPayload>, EngineError>;
}

/// Why an engine call failed (a payload found invalid is not an error: it is a verdict).
#[derive(Debug, thiserror::Error)]
pub enum EngineError {
    /// engine_getPayload with an id this node did not give (or has dropped).
    #[error("Unknown payload")]
    UnknownPayload,
    /// The safe or finalized block is not on the head's chain.
    #[error("Invalid forkchoice state: {0}")]
    InvalidForkchoiceState(String),
    /// The payload attributes cannot build a block on the head.
    #[error("Invalid payload attributes: {0}")]
    InvalidAttributes(String),
    /// The head is not the parent of the block being committed: the node made a block of its
    /// own meanwhile (run it with `--no-mining` under a consensus client).
    #[error(
        "the head {head} moved while the update ran (the node made a block of its own; run it with --no-mining): block parent {parent}; send the update again"
    )]
    HeadMoved {
        /// The head now.
        head: B256,
        /// The block's parent.
        parent: B256,
    },
    /// Executing failed for a reason that is the node's, not the block's.
    #[error(transparent)]
    Exec(#[from] ExecError),
    /// Committing or rewinding failed.
    #[error(transparent)]
    Mine(#[from] MineError),
    /// The state owner failed.
    #[error(transparent)]
    State(#[from] StateError),
    /// Reading the chain failed.
    #[error(transparent)]
    Storage(#[from] hearth_storage::StorageError),
    /// A peer actor did not answer.
    #[error(transparent)]
    Actor(#[from] ActorError),
    /// The engine actor panicked on this request; it serves the next.
    #[error("internal error in the engine actor: {0}")]
    Panicked(String),
}

impl EngineError {
    /// The JSON-RPC code of this error: the Engine API's own, else the core's for its cause.
    pub const fn engine_code(&self) -> Option<i32> {
        match self {
            Self::UnknownPayload => Some(-38001),
            Self::InvalidForkchoiceState(_) => Some(-38002),
            Self::InvalidAttributes(_) => Some(-38003),
            _ => None,
        }
    }
}

crate::actor_client! {
    /// The `EngineActor`'s client. Every call is an `ask`: a full mailbox is -32005 at once.
    pub struct EngineClient for "engine" {
        /// engine_newPayloadV*.
        ask new_payload: NewPayload,
        /// engine_forkchoiceUpdatedV*.
        ask forkchoice_updated: ForkchoiceUpdate,
        /// engine_getPayloadV*.
        ask get_payload: GetPayload,
    }
}
