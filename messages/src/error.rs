//! Error types carried in replies.

use actix::MailboxError;
use alloy_primitives::{Address, U256};
use hearth_storage::StorageError;

/// A call or block execution could not run. A revert is not an error (see `CallOutcome`).
#[derive(Debug, thiserror::Error)]
pub enum ExecError {
    /// All executor permits are taken (and stayed taken through the admission wait, if any):
    /// shed the request instead of queueing it.
    #[error("limit exceeded: executor pool is busy ({max_in_flight} calls in flight)")]
    Busy {
        /// The admission bound that was hit.
        max_in_flight: usize,
    },
    /// The requested block is not in the chain.
    #[error("header not found")]
    UnknownBlock,
    /// The call ran past the EVM time cap (`--rpc.evm-timeout`) and was stopped.
    #[error(
        "execution aborted (timeout = {timeout_ms}ms); raise --rpc.evm-timeout or lower the gas"
    )]
    Timeout {
        /// The cap, in milliseconds.
        timeout_ms: u64,
    },
    /// revm refused the transaction before running it (nonce, balance, gas, fee checks).
    #[error("{0}")]
    Invalid(String),
    /// Storage failed underneath the EVM.
    #[error(transparent)]
    Storage(#[from] StorageError),
    /// The executor is gone (shutting down).
    #[error("executor mailbox: {0}")]
    Mailbox(#[from] MailboxError),
    /// The executor panicked on this request; the request failed, the executor carries on.
    #[error("internal error: the executor panicked ({0}); please report it with the request")]
    Panicked(String),
}

/// A transaction was not admitted to the pool. Messages follow geth's wording.
#[derive(Debug, Clone, thiserror::Error, PartialEq, Eq)]
pub enum TxError {
    /// The signature does not recover to a sender.
    #[error("invalid transaction signature")]
    InvalidSignature,
    /// The transaction is for another chain.
    #[error("invalid chain id: have {got}, want {expected}")]
    WrongChainId {
        /// The chain's id.
        expected: u64,
        /// The transaction's chain id.
        got: u64,
    },
    /// The nonce was already used.
    #[error("nonce too low: next nonce {expected}, tx nonce {got}")]
    NonceTooLow {
        /// The sender's next nonce.
        expected: u64,
        /// The transaction's nonce.
        got: u64,
    },
    /// The sender cannot pay for gas and value.
    #[error(
        "insufficient funds for gas * price + value: address {sender} have {balance} want {cost}"
    )]
    InsufficientFunds {
        /// The sender.
        sender: Address,
        /// What it has.
        balance: U256,
        /// What the transaction may cost.
        cost: U256,
    },
    /// The gas limit is below the intrinsic cost.
    #[error("intrinsic gas too low: gas {gas}, minimum needed {intrinsic}")]
    IntrinsicGasTooLow {
        /// The transaction's gas limit.
        gas: u64,
        /// What it needs at least.
        intrinsic: u64,
    },
    /// The gas limit is above the block gas limit.
    #[error("exceeds block gas limit: gas {gas}, block limit {block_limit}")]
    GasLimitTooHigh {
        /// The transaction's gas limit.
        gas: u64,
        /// The block gas limit.
        block_limit: u64,
    },
    /// The priority fee is above the fee cap.
    #[error("max priority fee per gas higher than max fee per gas")]
    TipAboveFeeCap,
    /// A same-nonce transaction is already pending and this one does not pay 10% more.
    #[error("replacement transaction underpriced")]
    ReplacementUnderpriced,
    /// Already known.
    #[error("already known")]
    AlreadyKnown,
    /// A type this node does not accept (blob transactions need sidecars).
    #[error("transaction type not supported")]
    UnsupportedType,
    /// The pool is at its bound.
    #[error("txpool is full")]
    PoolFull,
    /// The encoded transaction is larger than the pool accepts (geth's 128 KiB).
    #[error("oversized data: transaction size {size}, limit {max}")]
    Oversized {
        /// Encoded size in bytes.
        size: usize,
        /// The limit.
        max: usize,
    },
    /// Impersonated sending from an address that is not impersonated.
    #[error("account {0} is not impersonated")]
    NotImpersonated(Address),
    /// Signing with a dev account's key failed.
    #[error("signing failed: {0}")]
    Signing(String),
    /// Reading the state for validation failed.
    #[error("state unavailable: {0}")]
    Storage(String),
    /// The pool is gone (shutting down).
    #[error("mempool mailbox: {0}")]
    Mailbox(String),
}

/// Committing a block failed.
#[derive(Debug, thiserror::Error)]
pub enum StateError {
    /// The store failed; the state owner stops the node.
    #[error(transparent)]
    Storage(#[from] StorageError),
    /// The block does not extend the head.
    #[error("block {got} does not extend head {head}")]
    NotNext {
        /// The current head.
        head: u64,
        /// The block's number.
        got: u64,
    },
    /// The state owner panicked while writing; it stops the node, whose journal replays on
    /// the next start.
    #[error("internal error in the state owner: {0}; the node is stopping")]
    Panicked(String),
}

/// Mining failed.
#[derive(Debug, thiserror::Error)]
pub enum MineError {
    /// Executing the block failed.
    #[error(transparent)]
    Exec(#[from] ExecError),
    /// Committing it failed.
    #[error(transparent)]
    State(#[from] StateError),
    /// A peer actor is gone.
    #[error("miner peer mailbox: {0}")]
    Mailbox(#[from] MailboxError),
    /// A block setting that cannot be used (e.g. a gas limit below a transfer).
    #[error("invalid block setting: {0}")]
    Setting(String),
    /// The requested timestamp is not after the parent's.
    #[error("timestamp {got} must be greater than the parent's {parent}")]
    Timestamp {
        /// The parent timestamp.
        parent: u64,
        /// The requested one.
        got: u64,
    },
    /// The miner panicked while serving this request; it restarted and serves the next.
    #[error("internal error in the miner: {0}")]
    Panicked(String),
}
