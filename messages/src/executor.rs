//! Messages to the executor pool (`ExecutorActor`s, one per thread) and its client.
//!
//! This module holds the call messages the executor answers ([`Call`], [`EstimateGas`],
//! [`GetTouchedSlots`]) and their replies. The client that admits requests and routes them to
//! the pool's threads lives in `executor/client.rs`, the pool's shared state and the
//! [`Admitted`] envelope in `executor/pool.rs`. The call request and block building are
//! defined in leaf modules (`request`, `block_build`) that the executor's other request
//! modules (`access_list`, `payload`, `simulate`, `trace`) import too, and re-exported here,
//! where other crates name them.

mod client;
mod inline;
mod pool;

use actix::Message;
use alloy_primitives::{Address, Bytes, U256};

pub use self::client::{ExecutorClient, among_others, current_arrival};
pub use self::inline::{BuildHere, InlineCalls};
pub use self::pool::{Admitted, ExecutorLane};
use crate::ExecError;
pub use crate::block_build::{
    BlockEnvSpec, BlockRules, BuildBlock, BuildMode, BuiltBlock, InvalidTx, PooledTx,
    next_gas_limit,
};
pub use crate::request::{AccountOverride, BlockOverrides, CallRequest, StateOverrides};

/// Runs a read-only call against the state after block `block`. Serves `eth_call`.
#[derive(Debug, Clone)]
pub struct Call {
    /// What to run.
    pub request: CallRequest,
    /// The block whose post-state and header the call sees.
    pub block: u64,
}

/// What a call that ran produced. A revert is an outcome, not an error.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CallOutcome {
    /// It returned.
    Success {
        /// Return data.
        output: Bytes,
        /// Gas used.
        gas_used: u64,
    },
    /// It reverted.
    Revert {
        /// Revert data.
        output: Bytes,
        /// Gas used.
        gas_used: u64,
    },
    /// It halted (out of gas, invalid opcode, ...).
    Halt {
        /// Why; it displays in geth's words where they exist.
        reason: HaltReason,
        /// Gas used.
        gas_used: u64,
    },
}

/// Why a call halted, as a type so that callers match on it (eth_estimateGas tells running out
/// of gas from the rest); its `Display` is geth's message (core/vm/errors.go), which clients
/// match on in turn.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum HaltReason {
    /// Out of gas (or the EVM time cap, which halts the call the same way).
    #[error("out of gas")]
    OutOfGas,
    /// An undefined or invalid (0xfe) opcode.
    #[error("invalid opcode")]
    InvalidOpcode,
    /// An opcode needed more stack items than there were.
    #[error("stack underflow")]
    StackUnderflow,
    /// The stack grew past 1024 items.
    #[error("stack limit reached 1024")]
    StackOverflow,
    /// A jump to a byte that is not a JUMPDEST.
    #[error("invalid jump destination")]
    InvalidJump,
    /// A state change inside a static call.
    #[error("write protection")]
    WriteProtection,
    /// The call stack grew past 1024 frames.
    #[error("max call depth exceeded")]
    CallTooDeep,
    /// A value transfer larger than the sender's balance.
    #[error("insufficient balance for transfer")]
    InsufficientBalance,
    /// A created contract's code is larger than the limit.
    #[error("max code size exceeded")]
    CodeSizeLimit,
    /// A create at an address that already has code or a nonce.
    #[error("contract address collision")]
    AddressCollision,
    /// A halt geth has no message of its own for, by revm's name for it.
    #[error("{0}")]
    Unmapped(String),
}

impl Message for Call {
    type Result = Result<CallOutcome, ExecError>;
}

/// Most bundles one eth_callMany may hold: eth_simulateV1's bound on blocks.
pub const MAX_CALL_BUNDLES: usize = crate::simulate::MAX_SIMULATE_BLOCKS as usize;
/// Most calls one eth_callMany may hold over all its bundles: eth_simulateV1's bound.
pub const MAX_CALL_MANY_CALLS: usize = crate::simulate::MAX_SIMULATE_CALLS;

/// Runs bundles of calls one after the other on the state after block `block`, each call
/// seeing what the calls before it wrote. Serves `eth_callMany` (anvil's and reth's): nothing
/// is written anywhere.
#[derive(Debug, Clone)]
pub struct CallMany {
    /// The block whose post-state and header the first bundle sees.
    pub block: u64,
    /// Block fields the first bundle starts from instead of the block's (the next block's,
    /// for `pending`).
    pub env: Option<BlockOverrides>,
    /// Account state to pretend before the first call.
    pub state_overrides: Option<std::sync::Arc<StateOverrides>>,
    /// The bundles, in order.
    pub bundles: Vec<CallBundle>,
    /// The gas all calls may use together (the RPC gas cap, as eth_simulateV1's calls share it):
    /// each call's limit is cut to what is left.
    pub gas_budget: u64,
    /// The most bytes of output the calls may return together (the response cap).
    pub max_output_bytes: usize,
}

/// One bundle of [`CallMany`]: its calls run in a block of their own, the one after the
/// previous bundle's (number and timestamp one more), with these fields changed from then on.
#[derive(Debug, Clone, Default)]
pub struct CallBundle {
    /// Block fields to set, for this bundle and the ones after it.
    pub block_overrides: Option<BlockOverrides>,
    /// The calls (their own overrides unused).
    pub calls: Vec<CallRequest>,
}

impl Message for CallMany {
    /// One outcome per call, per bundle.
    type Result = Result<Vec<Vec<CallOutcome>>, ExecError>;
}

/// Runs a read-only call like [`Call`] and reports the storage slots of `account` it read or
/// wrote. Serves the slot search of `anvil_dealERC20` and `anvil_setERC20Allowance`, which
/// then try each slot (as anvil does with the call's access list).
#[derive(Debug, Clone)]
pub struct GetTouchedSlots {
    /// What to run.
    pub request: CallRequest,
    /// The block whose post-state the call sees.
    pub block: u64,
    /// Whose slots to report.
    pub account: Address,
}

/// What [`GetTouchedSlots`] found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TouchedSlots {
    /// How the call ended.
    pub outcome: CallOutcome,
    /// The account's slots the call read or wrote, in ascending order.
    pub slots: Vec<U256>,
}

impl Message for GetTouchedSlots {
    type Result = Result<TouchedSlots, ExecError>;
}

/// Finds the smallest gas limit with which the request succeeds. Serves `eth_estimateGas`.
#[derive(Debug, Clone)]
pub struct EstimateGas {
    /// What to run.
    pub request: CallRequest,
    /// The block whose post-state the estimate uses.
    pub block: u64,
}

/// The result of an estimate: the gas, or the outcome that made every limit fail.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EstimateOutcome {
    /// The smallest gas limit that succeeds.
    Gas(u64),
    /// Even the highest limit fails with this outcome.
    Failed(CallOutcome),
}

impl Message for EstimateGas {
    type Result = Result<EstimateOutcome, ExecError>;
}
