//! eth_simulateV1: the request an executor runs as one chain of simulated blocks on top of a
//! stored block, what it answers, and why it may refuse.
//!
//! The RPC front decodes and range-checks the request (limits on blocks and calls, strict
//! fields); the executor orders the blocks, fills gaps, runs every call and seals each block
//! with real roots over the simulated state, carrying that state from block to block. Nothing
//! is written anywhere: the simulated blocks exist only in the answer.

use actix::Message;
use alloy_eips::eip4895::Withdrawal;
use alloy_primitives::{Address, B256, Bytes, Log, U256};
use hearth_storage::SealedBlock;
use revm::context::result::InvalidTransaction;

use crate::ExecError;
use crate::request::{CallRequest, StateOverrides};

/// Most blocks one request may simulate, gaps included (geth's bound).
pub const MAX_SIMULATE_BLOCKS: u64 = 256;
/// Most calls one simulated block may hold (geth's bound).
pub const MAX_CALLS_PER_BLOCK: usize = 5_000;
/// Most calls one request may hold over all its blocks (geth's bound).
pub const MAX_SIMULATE_CALLS: usize = 10_000;
/// Seconds between a simulated block and the one before it when no time is given (geth's).
pub const TIMESTAMP_INCREMENT: u64 = 12;

/// Runs `blocks` one after the other on top of the state after block `base`. Serves
/// `eth_simulateV1`.
#[derive(Debug, Clone)]
pub struct Simulate {
    /// The stored block the simulation builds on.
    pub base: u64,
    /// The blocks to simulate, in order (gaps in their numbers are filled with empty blocks).
    pub blocks: Vec<SimBlock>,
    /// Report ether transfers as ERC-7528 `Transfer` logs of 0xeeee…eeee.
    pub trace_transfers: bool,
    /// Check calls as a block would (nonces, fees, balances against the fee cap) and price
    /// them at the real base fee; otherwise the base fee is zero unless overridden.
    pub validation: bool,
    /// The gas all calls of the request may use together (the RPC gas cap): each call's
    /// limit is cut to what is left, and each call's use is taken from it.
    pub gas_budget: u64,
}

/// One block of a simulation: header overrides, state overrides applied before its calls, and
/// its calls.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SimBlock {
    /// Header fields to set.
    pub overrides: SimBlockOverrides,
    /// Account state to set before the block's calls (and precompiles to move).
    pub state_overrides: StateOverrides,
    /// The calls, in order.
    pub calls: Vec<SimCall>,
}

/// Header fields a simulated block may set; the rest follow from its parent.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SimBlockOverrides {
    /// Block number (after the previous block's; a gap is filled with empty blocks).
    pub number: Option<u64>,
    /// Difficulty.
    pub difficulty: Option<U256>,
    /// Timestamp (after the previous block's).
    pub time: Option<u64>,
    /// Gas limit (later blocks keep it).
    pub gas_limit: Option<u64>,
    /// Fee recipient (later blocks keep it).
    pub fee_recipient: Option<Address>,
    /// PREVRANDAO (the header's mix hash).
    pub prev_randao: Option<B256>,
    /// Base fee per gas.
    pub base_fee: Option<u64>,
    /// Blob base fee (the BLOBBASEFEE the calls see; not a header field).
    pub blob_base_fee: Option<u128>,
    /// EIP-4788 parent beacon block root.
    pub beacon_root: Option<B256>,
    /// Withdrawals credited after the calls.
    pub withdrawals: Option<Vec<Withdrawal>>,
}

/// A call of a simulated block: the one transaction request, defaults still unfilled (its
/// gas defaults to what is left of the block's, its nonce to the sender's; its own overrides
/// stay `None`, the block's apply).
pub type SimCall = CallRequest;

/// One simulated block: sealed like a real one, with what each call did.
#[derive(Debug, Clone)]
pub struct SimulatedBlock {
    /// Header (with real state, transactions and receipts roots), the calls as unsigned
    /// transactions (zero signatures) with their senders, receipts.
    pub block: SealedBlock,
    /// One result per call, in order.
    pub calls: Vec<SimCallResult>,
}

/// What one simulated call did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SimCallResult {
    /// Return (or revert) data.
    pub return_data: Bytes,
    /// Its logs (and, with `trace_transfers`, its ether transfers), none when it failed.
    pub logs: Vec<SimLog>,
    /// Gas used, after refunds.
    pub gas_used: u64,
    /// The most gas it had used at any point: before refunds (or the EIP-7623 floor).
    pub max_used_gas: u64,
    /// How it failed, when it did.
    pub error: Option<SimCallError>,
}

/// A log of a simulated call, with its index in the block.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SimLog {
    /// Address, topics and data.
    pub log: Log,
    /// Its `logIndex`: counted over the block in emission order (as geth counts, so logs of
    /// frames that reverted leave gaps).
    pub index: u64,
}

/// Why a simulated call failed (the call still counts, with status 0).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SimCallError {
    /// It reverted with this data (JSON-RPC code 3).
    Reverted(Bytes),
    /// It halted: out of gas, invalid opcode, ... (code -32015), in geth's words.
    Halted(String),
}

/// Why a simulation as a whole failed.
#[derive(Debug, thiserror::Error)]
pub enum SimulateError {
    /// More blocks than [`MAX_SIMULATE_BLOCKS`], gaps included.
    #[error("too many blocks")]
    TooManyBlocks,
    /// A block number not above the previous block's.
    #[error("block numbers must be in order: {number} <= {previous}")]
    BlockNumberOrder {
        /// The block's number.
        number: u64,
        /// The previous block's.
        previous: u64,
    },
    /// A timestamp not above the previous block's.
    #[error("block timestamps must be in order: {time} <= {previous}")]
    TimestampOrder {
        /// The block's timestamp.
        time: u64,
        /// The previous block's.
        previous: u64,
    },
    /// A call asks for more gas than the block has left.
    #[error("block gas limit reached: remaining: {remaining}, required: {required}")]
    BlockGasLimit {
        /// Gas left in the block.
        remaining: u64,
        /// The call's gas limit.
        required: u64,
    },
    /// A call is not a valid transaction here: revm's reason, as a type (each rule has its
    /// own JSON-RPC code; the RPC front words it as geth does).
    #[error("err: {reason} (supplied gas {gas})")]
    InvalidCall {
        /// The rule it broke.
        reason: InvalidTransaction,
        /// The call's sender (geth names it in its nonce messages).
        sender: Address,
        /// The call's gas limit.
        gas: u64,
    },
    /// The calls used up the request's gas budget (the RPC gas cap).
    #[error("RPC gas cap exhausted: need {need}, remaining {remaining}")]
    GasBudgetExhausted {
        /// What the call used.
        need: u64,
        /// What was left.
        remaining: u64,
    },
    /// A call names another chain.
    #[error("chainId does not match node's (have={have}, want={want})")]
    ChainIdMismatch {
        /// The call's chain id.
        have: u64,
        /// The chain's.
        want: u64,
    },
    /// A blob transaction must call an address.
    #[error("blob transactions cannot create contracts: give a to address")]
    BlobCreate,
    /// A set-code (EIP-7702) transaction must call an address.
    #[error("transactions with an authorizationList cannot create contracts: give a to address")]
    SetCodeCreate,
    /// The executor could not run the simulation (unknown block, storage, time cap, ...).
    #[error(transparent)]
    Exec(#[from] ExecError),
}

impl From<hearth_storage::StorageError> for SimulateError {
    fn from(error: hearth_storage::StorageError) -> Self {
        Self::Exec(ExecError::Storage(error))
    }
}

impl Message for Simulate {
    type Result = Result<Vec<SimulatedBlock>, SimulateError>;
}
