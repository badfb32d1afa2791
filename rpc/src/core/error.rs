//! `RpcError`: every way a JSON-RPC request can fail, and its mapping to a JSON-RPC error
//! object (`code`, `message`, optional `data`).
//!
//! The codes follow DESIGN.md ("JSON-RPC conventions") and geth, which execution-apis follows:
//! `-32700` parse error, `-32600` invalid request, `-32601` method not found, `-32602` invalid
//! params, `3` execution reverted (revert bytes in `data`), `-32000` transaction rejected or
//! resource not found (geth's messages), `-32005` a limit was hit, `-32603` internal.
//! [`RpcError::code`] is one exhaustive `match`: a new variant (here or in the wrapped message
//! errors) does not compile until it picks a code.

use alloy_primitives::{Bytes, U256};
use hearth_messages::client::ActorError;
use hearth_messages::simulate::SimulateError;

use super::geth_words::{exec_message, invalid_call_code, mine_message, simulate_message};
use hearth_messages::storage::StorageError;
use hearth_messages::subscriptions::SubscriptionError;
use hearth_messages::{ExecError, MineError, StateError, TxError};
use serde_json::Value;

/// A failed JSON-RPC request.
#[derive(Debug, thiserror::Error)]
pub enum RpcError {
    /// The body is not valid JSON.
    #[error("parse error: {0}")]
    Parse(String),
    /// The JSON is not a JSON-RPC 2.0 request object (or batch of them).
    #[error("invalid request: {0}")]
    InvalidRequest(&'static str),
    /// No core method and no extension has this name.
    #[error("the method {0} does not exist/is not available")]
    MethodNotFound(String),
    /// The params are missing, malformed or contradictory; the message says which and why.
    #[error("{0}")]
    InvalidParams(String),
    /// The batch has more items than `RpcLimits::max_batch_items`.
    #[error("batch too large: {len} items, at most {max}")]
    BatchTooLarge {
        /// Items in the batch.
        len: usize,
        /// The configured bound.
        max: usize,
    },
    /// The encoded response is larger than `RpcLimits::max_response_bytes`.
    #[error("response too large: more than {max} bytes")]
    ResponseTooLarge {
        /// The configured bound.
        max: usize,
    },
    /// A transaction sent with eth_sendRawTransactionSync was not in a block within the
    /// timeout (EIP-7966; it stays pooled). Its hash is in `error.data`.
    #[error("Transaction confirmation timeout")]
    NotConfirmed {
        /// The transaction's hash.
        hash: alloy_primitives::B256,
    },
    /// `--ipc` holds its most connections; this one is closed.
    #[error("limit exceeded: {max} IPC connections open; close one")]
    IpcConnections {
        /// The bound.
        max: usize,
    },
    /// The EVM reverted; `output` is the revert data.
    #[error("{}", revert_message(output))]
    Reverted {
        /// The revert data, returned hex-encoded in `error.data`.
        output: Bytes,
    },
    /// The EVM halted (out of gas, invalid opcode, ...); the reason displays in geth's words.
    #[error("{reason}")]
    Halted {
        /// Why it halted.
        reason: hearth_messages::executor::HaltReason,
    },
    /// eth_estimateGas ran out of gas even at the highest limit it may use.
    #[error("gas required exceeds allowance ({allowance})")]
    GasExceedsAllowance {
        /// The highest gas limit tried.
        allowance: u64,
    },
    /// The executor says the estimate failed but reports a successful run.
    #[error("internal error: the estimate failed with a successful outcome")]
    EstimateInconsistent,
    /// eth_getProof on a fork for a slot of an upstream contract written here that was never
    /// written here itself: its value is the upstream's, which the local trie does not hold.
    #[error(
        "slot {slot:#x} of {address} holds the fork upstream's value, which the local trie of \
         an account changed here cannot prove: prove it at the fork block (the upstream's proof), \
         or prove only slots written here"
    )]
    UnprovableSlot {
        /// The account.
        address: alloy_primitives::Address,
        /// The slot.
        slot: alloy_primitives::U256,
    },
    /// A state query names a block after the head, or a hash we do not know.
    #[error("header not found")]
    HeaderNotFound,
    /// eth_getLogs names a block hash we do not know.
    #[error("unknown block")]
    UnknownBlock,
    /// eth_getLogs `fromBlock` is after `toBlock`.
    #[error("invalid block range params")]
    InvalidBlockRange,
    /// eth_getLogs spans more blocks than we scan for one request.
    #[error("query exceeds max block range {max}")]
    BlockRangeTooLarge {
        /// The bound on `toBlock - fromBlock + 1`.
        max: u64,
    },
    /// A log query matched more logs than `RpcLimits::max_logs` (`--rpc.max-logs`); the
    /// words are Infura's and Alchemy's, which clients read to split the range.
    #[error("query returned more than {max} results")]
    TooManyLogs {
        /// The bound on the logs of one answer.
        max: usize,
    },
    /// eth_getStorageValues asks for more slots than one request may read (geth's
    /// "client limit exceeded", -38026).
    #[error("too many slots (max {max})")]
    TooManySlots {
        /// The bound.
        max: usize,
    },
    /// An eth_simulateV1 payload beyond the bounds on blocks or calls (-38026).
    #[error("too many {what}: {count} > {max}")]
    TooManySimulated {
        /// What there are too many of.
        what: &'static str,
        /// How many were asked for.
        count: u64,
        /// The bound.
        max: u64,
    },
    /// eth_simulateV1 could not simulate; the code says why (execution-apis' -38xxx codes).
    #[error("{}", simulate_message(.0))]
    Simulate(SimulateError),
    /// testing_buildBlockV1 names a parent that is not the head (geth's message).
    #[error("parentHash is not current head: {parent}")]
    NotHead {
        /// The parent asked for.
        parent: alloy_primitives::B256,
    },
    /// testing_buildBlockV1 asks for a timestamp not after its parent's (geth's message).
    #[error("invalid timestamp, parent {parent} given {given}")]
    BuildTimestamp {
        /// The parent's timestamp.
        parent: u64,
        /// The timestamp asked for.
        given: u64,
    },
    /// eth_feeHistory names a newest block after the head.
    #[error("request beyond head block: requested {requested}, head {head}")]
    BeyondHead {
        /// The requested newest block.
        requested: u64,
        /// The head.
        head: u64,
    },
    /// A trace names a transaction that is not in the chain (geth's words).
    #[error("transaction not found")]
    TxNotFound,
    /// A trace names a block that is not in the chain: `#N` or its hash, as geth says it.
    #[error("block {0} not found")]
    BlockNotFound(String),
    /// A trace of block 0, which has no parent state to replay from (geth's words).
    #[error("genesis is not traceable")]
    GenesisNotTraceable,
    /// debug_traceBlock got bytes that do not decode as a block (geth's words).
    #[error("could not decode block: {0}")]
    BlockDecode(String),
    /// eth_sendTransaction from an address we hold no key for.
    #[error("unknown account")]
    UnknownAccount,
    /// eth_sendRawTransaction bytes that do not decode as an EIP-2718 transaction.
    #[error("rlp: {0}")]
    TxDecode(String),
    /// Signing a transaction for eth_sendTransaction failed.
    #[error("signing failed: {0}")]
    Signing(#[from] alloy_signer::Error),
    /// The executor could not run the request (a refusal in geth's words).
    #[error("{}", exec_message(.0))]
    Exec(#[from] ExecError),
    /// The mempool did not admit the transaction.
    #[error(transparent)]
    Tx(#[from] TxError),
    /// The miner could not mine (evm_mine).
    #[error("{}", mine_message(.0))]
    Mine(#[from] MineError),
    /// Reading the store failed (its messages name the store: "database error", "fork
    /// upstream", ...).
    #[error("{0}")]
    Storage(#[from] StorageError),
    /// A committed block lacks one of its records: the store is inconsistent.
    #[error("internal error: block {number} has no {what} in storage")]
    MissingRecord {
        /// The block.
        number: u64,
        /// Which record.
        what: &'static str,
    },
    /// A polling filter request failed.
    #[error(transparent)]
    Filter(hearth_messages::filters::FilterError),
    /// eth_subscribe or eth_unsubscribe over HTTP, which cannot carry notifications.
    #[error(
        "notifications not supported: eth_subscribe needs a WebSocket connection (ws:// on the same port)"
    )]
    NotificationsUnsupported,
    /// A subscription request failed.
    #[error(transparent)]
    Subscription(hearth_messages::subscriptions::SubscriptionError),
    /// An actor did not answer: its mailbox is full (-32005, retry later) or it is gone.
    #[error(transparent)]
    Actor(#[from] ActorError),
    /// A result could not be encoded as JSON.
    #[error("internal error: cannot encode the result: {0}")]
    Encode(#[from] serde_json::Error),
    /// The method panicked (a bug, in the core or an extension); the request fails and the
    /// front goes on serving.
    #[error("internal error: {0}")]
    Panicked(String),
    /// anvil_dealERC20 / anvil_setERC20Allowance found no storage slot of the token that its
    /// getter returns (anvil's words first).
    #[error(
        "Unable to set ERC20 {what}, no slot found: {}",
        if *has_code { "no storage slot the getter reads holds it" } else { "the token address has no code" }
    )]
    NoTokenSlot {
        /// `balance` or `allowance`.
        what: &'static str,
        /// The token.
        token: alloy_primitives::Address,
        /// Whether the token address has code at all.
        has_code: bool,
    },
    /// A dev method that this chain's rules rule out (Hardhat's -32000; anvil's variant of
    /// the same refusal is -32602, an `InvalidParams`).
    #[error("{0}")]
    Unsupported(String),
    /// anvil_reset could not build the new chain (the upstream did not answer, or lacks the
    /// block); the chain is unchanged. anvil's code: -32603.
    #[error("{0}")]
    ResetFailed(String),
    /// An Engine API call failed (a payload found invalid is an answer, not this).
    #[error("{0}")]
    Engine(#[from] hearth_messages::engine::EngineError),
    /// An Engine API request asks for more items than one answer holds (-38004).
    #[error("Too large request: {0}")]
    EngineTooLarge(String),
    /// An Engine API method version that does not serve the fork of the payload's timestamp
    /// (-38005).
    #[error("Unsupported fork: {0}")]
    UnsupportedFork(String),
    /// The leader answered a write this replica forwarded with an error: passed on as it
    /// came (its code, message and data).
    #[error("{message}")]
    Leader {
        /// The leader's code.
        code: i32,
        /// Its message.
        message: String,
        /// Its data, if any.
        data: Option<Value>,
    },
    /// A read replica could not forward a write, or its block did not arrive in time.
    #[error("{0}")]
    Follow(hearth_messages::follow::FollowError),
    /// A method that changes the chain or the node, sent to a read replica.
    #[error(
        "{method} changes the chain or the node, and this node is a read replica of {leader}: send it to the leader"
    )]
    ReplicaRefused {
        /// The method.
        method: String,
        /// The leader's URL.
        leader: String,
    },
    /// An extension method failed with its own code.
    #[error("{message}")]
    Extension {
        /// The code the extension chose.
        code: i32,
        /// Its message.
        message: String,
    },
}

impl RpcError {
    /// Whether the request named a block the chain does not have (or lost a record of one it
    /// had just read): what a read that raced anvil_reset sees.
    pub(crate) const fn is_missing_block(&self) -> bool {
        matches!(
            self,
            Self::HeaderNotFound
                | Self::UnknownBlock
                | Self::BlockNotFound(_)
                | Self::BeyondHead { .. }
                | Self::MissingRecord { .. }
                | Self::Exec(ExecError::UnknownBlock)
        )
    }

    /// The JSON-RPC `error.code` for this error.
    // long: the one exhaustive error -> code match (DESIGN.md's table), a row per variant.
    pub const fn code(&self) -> i32 {
        use hearth_messages::engine::EngineError;
        use hearth_messages::follow::FollowError;
        match self {
            Self::Engine(EngineError::UnknownPayload) => -38001,
            Self::Engine(EngineError::InvalidForkchoiceState(_)) => -38002,
            Self::Engine(EngineError::InvalidAttributes(_)) => -38003,
            Self::EngineTooLarge(_) => -38004,
            Self::UnsupportedFork(_) => -38005,
            Self::Engine(EngineError::Exec(error) | EngineError::Mine(MineError::Exec(error))) => {
                Self::exec_code(error)
            }
            Self::Engine(EngineError::Actor(ActorError::Full { .. })) => -32005,
            Self::Engine(_) => -32603,
            Self::Parse(_) => -32700,
            Self::InvalidRequest(_) => -32600,
            // geth answers eth_subscribe over HTTP with -32601 "notifications not supported".
            Self::MethodNotFound(_) | Self::NotificationsUnsupported => -32601,
            // anvil answers a rollback deeper than the chain as bad params.
            Self::InvalidParams(_)
            | Self::Mine(MineError::State(StateError::RollbackTooDeep { .. })) => -32602,
            Self::Reverted { .. } => 3,
            // EIP-7966's code (anvil's too).
            Self::NotConfirmed { .. } => 4,
            // Transaction rejected, call halted, or a resource not found: geth uses -32000.
            Self::Halted { .. }
            | Self::GasExceedsAllowance { .. }
            | Self::HeaderNotFound
            | Self::UnprovableSlot { .. }
            | Self::UnknownBlock
            | Self::InvalidBlockRange
            | Self::Filter(hearth_messages::filters::FilterError::NotFound)
            | Self::Subscription(SubscriptionError::UnknownConnection)
            | Self::BeyondHead { .. }
            | Self::NotHead { .. }
            | Self::BuildTimestamp { .. }
            | Self::TxNotFound
            | Self::BlockNotFound(_)
            | Self::GenesisNotTraceable
            | Self::BlockDecode(_)
            | Self::UnknownAccount
            | Self::TxDecode(_)
            | Self::Mine(MineError::Timestamp { .. } | MineError::Setting(_))
            | Self::NoTokenSlot { .. }
            | Self::Unsupported(_)
            | Self::Tx(
                TxError::InvalidSignature
                | TxError::WrongChainId { .. }
                | TxError::NonceTooLow { .. }
                | TxError::InsufficientFunds { .. }
                | TxError::IntrinsicGasTooLow { .. }
                | TxError::GasLimitTooHigh { .. }
                | TxError::TipAboveFeeCap
                | TxError::FloorDataGas { .. }
                | TxError::GasLimitAboveCap { .. }
                | TxError::NonceMax
                | TxError::InitCodeTooLarge { .. }
                | TxError::EmptyAuthList
                | TxError::TypeNotActive { .. }
                | TxError::CostOverflow { .. }
                | TxError::Overdraft { .. }
                | TxError::SenderNotEoa { .. }
                | TxError::Rejected(_)
                | TxError::ReplacementUnderpriced
                | TxError::AlreadyKnown
                | TxError::UnsupportedType
                | TxError::BlobSidecarMissing
                | TxError::TooManyBlobs { .. }
                | TxError::BlobSidecarShape { .. }
                | TxError::BlobSidecarVersion { .. }
                | TxError::BlobHashMismatch { .. }
                | TxError::InvalidBlobProof(_)
                | TxError::BlobFeeTooLow { .. }
                | TxError::Oversized { .. }
                | TxError::NotImpersonated(_),
            ) => -32000,
            // The EVM time cap stopped the call.
            Self::Mine(MineError::Exec(error)) => Self::exec_code(error),
            // A bound was hit: the caller may retry later.
            Self::BatchTooLarge { .. }
            | Self::ResponseTooLarge { .. }
            | Self::BlockRangeTooLarge { .. }
            | Self::TooManyLogs { .. }
            | Self::Tx(TxError::PoolFull)
            | Self::Actor(ActorError::Full { .. })
            | Self::Mine(MineError::State(StateError::DumpTooLarge { .. }))
            | Self::Filter(hearth_messages::filters::FilterError::TooMany { .. })
            | Self::IpcConnections { .. }
            | Self::Subscription(
                SubscriptionError::TooManyConnections { .. }
                | SubscriptionError::TooManySubscriptions { .. },
            ) => -32005,
            // The fork's upstream did not answer: geth-style server error, as anvil answers.
            Self::Storage(StorageError::Fork(_)) => -32000,
            // The node failed, not the request.
            Self::EstimateInconsistent
            | Self::ResetFailed(_)
            | Self::Signing(_)
            | Self::Storage(_)
            | Self::MissingRecord { .. }
            | Self::Actor(ActorError::Gone { .. } | ActorError::Mailbox { .. })
            | Self::Encode(_)
            | Self::Mine(
                MineError::State(
                    StateError::Storage(_)
                    | StateError::NotNext { .. }
                    | StateError::HeadChanged { .. }
                    | StateError::Panicked(_),
                )
                | MineError::Mailbox(_)
                | MineError::Panicked(_),
            )
            | Self::Panicked(_)
            | Self::Filter(hearth_messages::filters::FilterError::Panicked(_))
            | Self::Subscription(SubscriptionError::Panicked(_))
            | Self::Tx(
                TxError::Storage(_)
                | TxError::Mailbox(_)
                | TxError::Signing(_)
                | TxError::Panicked(_),
            ) => -32603,
            // execution-apis' "client adjustable limit exceeded".
            Self::TooManySlots { .. }
            | Self::TooManySimulated { .. }
            | Self::Simulate(SimulateError::TooManyBlocks) => -38026,
            Self::Simulate(error) => simulate_code(error),
            Self::Exec(error) => Self::exec_code(error),
            Self::Extension { code, .. } | Self::Leader { code, .. } => *code,
            Self::Follow(FollowError::TooManyWaiting(_))
            | Self::Follow(FollowError::Actor(ActorError::Full { .. })) => -32005,
            Self::Follow(FollowError::Actor(_)) => -32603,
            Self::Follow(
                FollowError::LeaderUnreachable { .. } | FollowError::NotImported { .. },
            )
            | Self::ReplicaRefused { .. } => -32000,
        }
    }

    /// The code of an executor error, wherever it is carried.
    pub const fn exec_code(error: &ExecError) -> i32 {
        match error {
            // A tracer the request named or configured badly.
            ExecError::Tracer(_) => -32602,
            // A call for another chain: anvil's -32003 (transaction rejected).
            ExecError::Rejected(hearth_messages::InvalidTransaction::InvalidChainId) => -32003,
            // Resource not found or call refused: geth uses -32000.
            ExecError::UnknownBlock
            | ExecError::Invalid(_)
            | ExecError::Rejected(_)
            | ExecError::GasCapExhausted { .. }
            | ExecError::Override(_) => -32000,
            // The EVM time cap (or a tracer's timeout) stopped the call.
            ExecError::Timeout { .. } | ExecError::TraceTimeout { .. } => -32002,
            // A bound was hit (the pool, a trace's size): the caller may retry or narrow.
            // A shutting-down node runs nothing more: unavailable, like a full pool.
            ExecError::Busy { .. }
            | ExecError::TraceTooLarge { .. }
            | ExecError::OutputTooLarge { .. }
            | ExecError::ShuttingDown => -32005,
            // The fork's upstream did not answer in time.
            // Misses are fetched by the pool's client and the request run again; one that got
            // here anyway is a fork read that did not complete, as an upstream failure is.
            ExecError::Storage(StorageError::Fork(_)) | ExecError::ForkMisses(_) => -32000,
            // The node failed, not the request.
            ExecError::Storage(_)
            | ExecError::Mailbox(_)
            | ExecError::Panicked(_)
            | ExecError::Encode(_) => -32603,
        }
    }

    /// The executor error inside this one, if any.
    fn exec_error(&self) -> Option<&ExecError> {
        match self {
            Self::Exec(error) | Self::Simulate(SimulateError::Exec(error)) => Some(error),
            _ => None,
        }
    }

    /// The JSON-RPC `error.data`, when the error carries any: the hex revert data of a revert.
    pub fn data(&self) -> Option<Value> {
        match self {
            Self::Reverted { output } => Some(Value::String(output.to_string())),
            Self::NotConfirmed { hash } => Some(Value::String(hash.to_string())),
            Self::Leader { data, .. } => data.clone(),
            _ => None,
        }
    }

    /// Whether this is the executor pool shedding load (or refusing it while the node shuts
    /// down); a single request failing this way is answered with HTTP 503 so that load
    /// balancers and clients back off.
    pub fn is_busy(&self) -> bool {
        matches!(self.exec_error(), Some(ExecError::Busy { .. } | ExecError::ShuttingDown))
    }
}

/// The code of a simulation error: execution-apis' -38xxx codes where it has one, geth's
/// otherwise (its plain errors are -32000), the pool's and executor's as for eth_call.
const fn simulate_code(error: &SimulateError) -> i32 {
    match error {
        SimulateError::TooManyBlocks => -38026,
        SimulateError::BlockNumberOrder { .. } => -38020,
        SimulateError::TimestampOrder { .. } => -38021,
        SimulateError::BlockGasLimit { .. } => -38015,
        SimulateError::InvalidCall { reason, .. } => invalid_call_code(reason),
        SimulateError::BlobCreate | SimulateError::SetCodeCreate => -32602,
        SimulateError::GasBudgetExhausted { .. } | SimulateError::ChainIdMismatch { .. } => -32000,
        SimulateError::Exec(error) => RpcError::exec_code(error),
    }
}

/// `Error(string)`: what `revert("reason")` and `require(cond, "reason")` return.
const ERROR_SELECTOR: [u8; 4] = [0x08, 0xc3, 0x79, 0xa0];
/// `Panic(uint256)`: what failed asserts, overflows, division by zero, ... return.
const PANIC_SELECTOR: [u8; 4] = [0x4e, 0x48, 0x7b, 0x71];

/// geth's message for revert data: "execution reverted", plus ": <reason>" when the data is
/// an ABI-encoded `Error(string)` or `Panic(uint256)`.
pub(crate) fn revert_message(output: &[u8]) -> String {
    match revert_reason(output) {
        Some(reason) => format!("execution reverted: {reason}"),
        None => "execution reverted".to_owned(),
    }
}

/// The human reason inside revert data, if it is a well-formed `Error(string)` or
/// `Panic(uint256)`.
fn revert_reason(output: &[u8]) -> Option<String> {
    let (selector, args) = output.split_first_chunk::<4>()?;
    if *selector == ERROR_SELECTOR {
        decode_abi_string(args)
    } else if *selector == PANIC_SELECTOR {
        let code = U256::try_from_be_slice(args.get(..32)?)?;
        Some(panic_reason(code))
    } else {
        None
    }
}

/// Decodes the single ABI `string` argument of `Error(string)`: a 32-byte offset, then at
/// that offset a 32-byte length and the UTF-8 bytes.
fn decode_abi_string(args: &[u8]) -> Option<String> {
    let offset = abi_word_as_usize(args.get(..32)?)?;
    let length_end = offset.checked_add(32)?;
    let length = abi_word_as_usize(args.get(offset..length_end)?)?;
    let bytes = args.get(length_end..length_end.checked_add(length)?)?;
    String::from_utf8(bytes.to_vec()).ok()
}

/// A 32-byte big-endian ABI word as a `usize`, if it fits.
fn abi_word_as_usize(word: &[u8]) -> Option<usize> {
    usize::try_from(U256::try_from_be_slice(word)?).ok()
}

/// geth's wording for Solidity panic codes (accounts/abi/abi.go).
fn panic_reason(code: U256) -> String {
    let known = match u64::try_from(code) {
        Ok(0x00) => Some("generic panic"),
        Ok(0x01) => Some("assert(false)"),
        Ok(0x11) => Some("arithmetic underflow or overflow"),
        Ok(0x12) => Some("division or modulo by zero"),
        Ok(0x21) => Some("enum overflow"),
        Ok(0x22) => Some("invalid encoded storage byte array accessed"),
        Ok(0x31) => Some("out-of-bounds array access; popping on an empty array"),
        Ok(0x32) => Some("out-of-bounds access of an array or bytesSlice"),
        Ok(0x41) => Some("out of memory"),
        Ok(0x51) => Some("uninitialized function"),
        _ => None,
    };
    match known {
        Some(reason) => reason.to_owned(),
        None => format!("unknown panic code: {code:#x}"),
    }
}

#[cfg(test)]
mod tests {
    use actix::MailboxError;
    use alloy_primitives::{Address, hex};
    use hearth_messages::admission::Refusal;
    use hearth_messages::ask::AskError;

    use super::*;

    /// ABI encoding of `Error("Not enough Ether provided.")`, as solc emits it.
    const REVERT_NOT_ENOUGH_ETHER: &str = "08c379a0\
        0000000000000000000000000000000000000000000000000000000000000020\
        000000000000000000000000000000000000000000000000000000000000001a\
        4e6f7420656e6f7567682045746865722070726f76696465642e000000000000";

    #[test]
    fn error_string_revert_has_the_reason_and_hex_data() {
        let output = Bytes::from(hex::decode(REVERT_NOT_ENOUGH_ETHER).unwrap());
        let err = RpcError::Reverted { output };
        assert_eq!(err.code(), 3);
        assert_eq!(err.to_string(), "execution reverted: Not enough Ether provided.");
        assert_eq!(err.data(), Some(Value::String(format!("0x{REVERT_NOT_ENOUGH_ETHER}"))));
    }

    #[test]
    fn empty_or_custom_revert_has_no_reason() {
        let empty = RpcError::Reverted { output: Bytes::new() };
        assert_eq!((empty.code(), empty.to_string()), (3, "execution reverted".to_owned()));
        assert_eq!(empty.data(), Some(Value::String("0x".into())));
        // A custom error selector is passed through as data only.
        let custom = RpcError::Reverted { output: Bytes::from_static(&[0xde, 0xad, 0xbe, 0xef]) };
        assert_eq!(custom.to_string(), "execution reverted");
    }

    #[test]
    fn truncated_error_string_is_not_decoded() {
        let mut bytes = hex::decode(REVERT_NOT_ENOUGH_ETHER).unwrap();
        bytes.truncate(4 + 64 + 10);
        assert_eq!(revert_message(&bytes), "execution reverted");
        // An offset that points far outside the data must not panic.
        let mut huge_offset = ERROR_SELECTOR.to_vec();
        huge_offset.extend_from_slice(&[0xff; 32]);
        assert_eq!(revert_message(&huge_offset), "execution reverted");
    }

    #[test]
    fn panic_codes_use_geths_words() {
        let mut output = PANIC_SELECTOR.to_vec();
        output.extend_from_slice(&U256::from(0x11).to_be_bytes::<32>());
        assert_eq!(revert_message(&output), "execution reverted: arithmetic underflow or overflow");
        let mut unknown = PANIC_SELECTOR.to_vec();
        unknown.extend_from_slice(&U256::from(0x99).to_be_bytes::<32>());
        assert_eq!(revert_message(&unknown), "execution reverted: unknown panic code: 0x99");
    }

    #[test]
    fn codes_follow_the_conventions() {
        let cases: Vec<(RpcError, i32)> = vec![
            (RpcError::Parse("eof".into()), -32700),
            (RpcError::InvalidRequest("empty batch"), -32600),
            (RpcError::MethodNotFound("eth_foo".into()), -32601),
            (RpcError::InvalidParams("bad".into()), -32602),
            (RpcError::HeaderNotFound, -32000),
            (RpcError::Halted { reason: hearth_messages::executor::HaltReason::OutOfGas }, -32000),
            (RpcError::Exec(ExecError::UnknownBlock), -32000),
            (RpcError::Exec(ExecError::Busy(Refusal::QueueFull { max_queued: 4 })), -32005),
            (RpcError::Exec(ExecError::Mailbox(MailboxError::Closed)), -32603),
            (RpcError::Exec(ExecError::Panicked("boom".into())), -32603),
            (RpcError::Tx(TxError::NonceTooLow { expected: 2, got: 1 }), -32000),
            (RpcError::Tx(TxError::NonceMax), -32000),
            (RpcError::Tx(TxError::InitCodeTooLarge { size: 2, limit: 1 }), -32000),
            (RpcError::Tx(TxError::EmptyAuthList), -32000),
            (RpcError::Tx(TxError::CostOverflow { sender: Address::ZERO, bits: 256 }), -32000),
            (RpcError::Tx(TxError::PoolFull), -32005),
            (RpcError::Tx(TxError::Mailbox("closed".into())), -32603),
            (RpcError::BatchTooLarge { len: 2, max: 1 }, -32005),
            (RpcError::ResponseTooLarge { max: 1 }, -32005),
            (RpcError::BlockRangeTooLarge { max: 1 }, -32005),
            (RpcError::TooManyLogs { max: 1 }, -32005),
            (RpcError::Mine(MineError::Timestamp { parent: 2, got: 1 }), -32000),
            (RpcError::Mine(MineError::Mailbox(MailboxError::Timeout)), -32603),
            (RpcError::Extension { code: 42, message: "x".into() }, 42),
            (RpcError::Panicked("boom".into()), -32603),
            (RpcError::NotificationsUnsupported, -32601),
            (RpcError::Subscription(SubscriptionError::TooManySubscriptions { max: 1 }), -32005),
            (RpcError::Actor(ActorError::Full { actor: "mempool" }), -32005),
            (RpcError::Actor(ActorError::asked("miner", AskError::Dropped)), -32603),
            (
                RpcError::Actor(ActorError::Mailbox {
                    actor: "state",
                    source: MailboxError::Closed,
                }),
                -32603,
            ),
        ];
        for (err, code) in cases {
            assert_eq!(err.code(), code, "{err}");
        }
    }

    #[test]
    fn geth_messages_pass_through() {
        let err = RpcError::Tx(TxError::InsufficientFunds {
            sender: Address::ZERO,
            balance: U256::from(1),
            cost: U256::from(2),
        });
        assert!(err.to_string().starts_with("insufficient funds for gas * price + value"));
        assert_eq!(
            RpcError::MethodNotFound("eth_foo".into()).to_string(),
            "the method eth_foo does not exist/is not available"
        );
        assert_eq!(
            RpcError::GasExceedsAllowance { allowance: 30_000 }.to_string(),
            "gas required exceeds allowance (30000)"
        );
        assert!(RpcError::Exec(ExecError::Busy(Refusal::QueueFull { max_queued: 1 })).is_busy());
        assert!(!RpcError::Tx(TxError::PoolFull).is_busy());
    }
}
