//! Payloads: the request an executor answers with a whole block executed on its parent and
//! sealed, without committing it. Serves testing_buildBlockV1 and the Engine API (a payload
//! built from attributes, and a received `engine_newPayload` block checked).

use actix::Message;
use std::sync::Arc;

use alloy_consensus::Header;
use alloy_primitives::{B256, Bytes, U256};
use hearth_storage::{BlockExtras, SealedBlock, StateDiff};

use crate::ExecError;
use crate::block_build::BuildBlock;

/// Builds the block `build` describes and seals it with its state root, writing nothing.
/// With `received`, the block is one sent from outside: it is executed in import mode and
/// checked, and sealed with its own header.
#[derive(Debug, Clone)]
pub struct BuildPayload {
    /// The parent, environment and transactions.
    pub build: BuildBlock,
    /// The block as received, when it is one to check rather than one to build.
    pub received: Option<ReceivedBlock>,
}

impl BuildPayload {
    /// A block to build (testing_buildBlockV1, engine_forkchoiceUpdated's attributes).
    pub const fn build(build: BuildBlock) -> Self {
        Self { build, received: None }
    }
}

/// A block sent from outside (engine_newPayload), to execute on its parent and check: every
/// header rule against the parent, every field execution derives, and the state root. Any
/// broken rule is [`ExecError::Invalid`] naming it.
#[derive(Debug, Clone)]
pub struct ReceivedBlock {
    /// The header as received: the block is stored with it, so its hash is the sender's.
    pub header: Header,
    /// Its ommers and withdrawals, stored beside it.
    pub extras: BlockExtras,
    /// Whether the block carries a withdrawals list (empty or not): from Shanghai it must.
    pub has_withdrawals: bool,
    /// Whether its timestamp may equal its parent's (a rollup sequencer's sub-second blocks).
    pub same_second: bool,
    /// Whether it is a dev chain leader's block that a read replica follows: the header fields
    /// the leader's dev methods choose are taken as made (`block_check::validate_dev_header`).
    pub dev_leader: bool,
}

/// A sealed block that was built and not committed, with what an execution payload reports
/// besides the block.
#[derive(Debug, Clone)]
pub struct BuiltPayload {
    /// The block, its header complete (state root, hash).
    pub block: SealedBlock,
    /// Its EIP-7685 requests, type byte first, empty ones left out.
    pub requests: Vec<Bytes>,
    /// What its transactions pay the fee recipient (priority fees), in wei.
    pub fees: U256,
    /// What it changes, on top of its parent's state: committing it needs no second run.
    pub diff: Arc<StateDiff>,
    /// The state root `diff` applies to (the parent's, after any dev patch): the state owner
    /// refuses the commit if the head's is not this one.
    pub parent_root: B256,
    /// What its transactions returned and printed, for the lines the node prints once the
    /// block is committed (as the miner's blocks have).
    pub ran: PayloadRun,
}

/// What a payload's transactions returned, why any halted, and what they printed with
/// console.log (see [`crate::executor::BuiltBlock`]).
#[derive(Debug, Clone, Default)]
pub struct PayloadRun {
    /// Return or revert data per transaction (`None`: halted).
    pub outputs: Vec<Option<Bytes>>,
    /// (position, reason) of the halted ones.
    pub halts: Vec<(usize, revm::context::result::HaltReason)>,
    /// (position, lines) of those that printed.
    pub console: Vec<(usize, crate::console::ConsoleLines)>,
    /// The accounts each transaction touched, for the address index (`BlockDraft::touched`).
    pub touched: Vec<Vec<alloy_primitives::Address>>,
}

impl Message for BuildPayload {
    type Result = Result<BuiltPayload, ExecError>;
}
