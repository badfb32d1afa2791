//! Error types carried in replies.

use actix::MailboxError;
use alloy_primitives::{Address, B256, U256};
use hearth_storage::StorageError;
use revm::context::result::InvalidTransaction;

/// A call or block execution could not run. A revert is not an error (see `CallOutcome`).
#[derive(Debug, thiserror::Error)]
pub enum ExecError {
    /// Admission refused the request (its expected queueing delay was over the budget, or the
    /// queue was full): shed at once instead of queueing.
    #[error("limit exceeded: executor pool is busy: {0}")]
    Busy(crate::admission::Refusal),
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
    /// The transaction is not valid here for a reason the node states (a block-level rule, a
    /// transaction that cannot be replayed).
    #[error("{0}")]
    Invalid(String),
    /// revm refused the transaction before running it (nonce, balance, gas, fee checks), as a
    /// type: it displays in revm's words, and the RPC front answers it in geth's (the words
    /// client libraries match on) in its one error mapping.
    #[error("invalid transaction: {0}")]
    Rejected(InvalidTransaction),
    /// A traced execution ran past its tracer's `timeout` and was stopped.
    #[error(
        "execution timeout: the trace ran past {timeout_ms}ms; raise the tracer's \"timeout\" option"
    )]
    TraceTimeout {
        /// The timeout, in milliseconds.
        timeout_ms: u64,
    },
    /// A trace's answer grew past the response cap.
    #[error(
        "response too large: the trace is more than {max_bytes} bytes; trace less (a struct-log \"limit\", disableStack, a narrower range)"
    )]
    TraceTooLarge {
        /// The response cap.
        max_bytes: usize,
    },
    /// eth_callMany's outputs grew past the response cap.
    #[error(
        "response too large: the calls returned more than {max_bytes} bytes; send fewer calls or bundles"
    )]
    OutputTooLarge {
        /// The response cap.
        max_bytes: usize,
    },
    /// The calls of one request used up the RPC gas cap between them (`--rpc.gascap`), as
    /// eth_simulateV1's calls share it.
    #[error("RPC gas cap exhausted: need {need}, remaining {remaining}; send fewer calls")]
    GasCapExhausted {
        /// What the call used.
        need: u64,
        /// What was left of the cap.
        remaining: u64,
    },
    /// The tracer cannot run: its name or configuration is not one the executor knows.
    #[error("{0}")]
    Tracer(String),
    /// A trace could not be encoded as JSON (a bug: the trace types always encode).
    #[error("internal error: cannot encode the trace: {0}")]
    Encode(String),
    /// Storage failed underneath the EVM.
    #[error(transparent)]
    Storage(#[from] StorageError),
    /// The executor is gone (shutting down).
    #[error("executor mailbox: {0}")]
    Mailbox(#[from] MailboxError),
    /// The executor panicked on this request; the request failed, the executor carries on.
    #[error("internal error: the executor panicked ({0}); please report it with the request")]
    Panicked(String),
    /// The state overrides cannot apply (a precompile cannot move as asked).
    #[error(transparent)]
    Override(#[from] OverrideError),
    /// The node is shutting down: the request was queued or arrived after the drain began and
    /// was not run (SIGINT/SIGTERM; see `ExecutorClient::close`).
    #[error(
        "limit exceeded: the node is shutting down; the request was not run, retry against a running node"
    )]
    ShuttingDown,
    /// A collecting run read fork state its cache lacks (`fork::misses`): the pool's client
    /// fetches the keys and runs the request again, so this never reaches the RPC front.
    #[error("the request waits for the fork upstream")]
    ForkMisses(crate::fork::misses::ForkMisses),
}

/// State overrides that contradict themselves or the fork's precompiles (geth's messages).
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum OverrideError {
    /// `movePrecompileToAddress` on an address that holds no precompile.
    #[error("account {0} is not a precompile")]
    NotAPrecompile(Address),
    /// `movePrecompileToAddress` onto an address the same overrides also set.
    #[error("account {0} is already overridden")]
    MoveTargetOverridden(Address),
    /// An override of an address a precompile was just moved to.
    #[error("account {0} has already been overridden by a precompile")]
    OverriddenByPrecompile(Address),
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
    /// The gas limit does not cover the EIP-7623 calldata floor (Prague on).
    #[error("insufficient gas for floor data gas cost: gas {gas}, minimum needed {floor}")]
    FloorDataGas {
        /// The transaction's gas limit.
        gas: u64,
        /// The floor its calldata costs.
        floor: u64,
    },
    /// The gas limit is above the per-transaction cap of EIP-7825 (Osaka on).
    #[error("transaction gas limit too high (cap: {cap}, tx: {gas})")]
    GasLimitAboveCap {
        /// The transaction's gas limit.
        gas: u64,
        /// The cap.
        cap: u64,
    },
    /// The nonce is 2^64-1, which EIP-2681 forbids (the sender's nonce could not be raised).
    #[error("nonce has max value")]
    NonceMax,
    /// A contract creation whose initcode is larger than EIP-3860 allows (Shanghai on).
    #[error("max initcode size exceeded: code size {size} limit {limit}")]
    InitCodeTooLarge {
        /// The initcode's length in bytes.
        size: usize,
        /// The fork's limit.
        limit: usize,
    },
    /// An EIP-7702 transaction without authorizations.
    #[error("EIP-7702 transaction with empty auth list")]
    EmptyAuthList,
    /// A transaction type the chain's fork does not have yet (type 1 before Berlin, 2 before
    /// London, 3 before Cancun, 4 before Prague).
    #[error("transaction type not supported: type {ty} rejected, pool not yet in {fork}")]
    TypeNotActive {
        /// The EIP-2718 type.
        ty: u8,
        /// The fork that introduces it.
        fork: &'static str,
    },
    /// `gas * price + value` does not fit the width the executor computes it in: 256 bits
    /// for the whole cost (geth's rule), and revm also refuses `gas * price` above 128 bits.
    #[error(
        "insufficient funds for gas * price + value: address {sender} required balance exceeds {bits} bits"
    )]
    CostOverflow {
        /// The sender.
        sender: Address,
        /// The width exceeded.
        bits: u16,
    },
    /// Each transaction alone is affordable, but with the sender's other pooled transactions
    /// the balance would not cover them all (geth's overdraft check).
    #[error(
        "insufficient funds for gas * price + value: balance {balance}, queued cost {queued}, tx cost {cost}, overshot {overshot}",
        overshot = queued.saturating_add(*cost).saturating_sub(*balance)
    )]
    Overdraft {
        /// The sender's balance.
        balance: U256,
        /// What the sender's other pooled transactions may cost.
        queued: U256,
        /// What this one may cost.
        cost: U256,
    },
    /// The sender has code that is not an EIP-7702 delegation (EIP-3607).
    #[error("sender not an eoa: address {sender}, codehash: {code_hash}")]
    SenderNotEoa {
        /// The sender.
        sender: Address,
        /// Its code hash.
        code_hash: B256,
    },
    /// Any other rule revm's validation refuses the transaction by (blob fields, mostly),
    /// in revm's words.
    #[error("invalid transaction: {0}")]
    Rejected(InvalidTransaction),
    /// A same-nonce transaction is already pending and this one does not pay 10% more.
    #[error("replacement transaction underpriced")]
    ReplacementUnderpriced,
    /// Already known.
    #[error("already known")]
    AlreadyKnown,
    /// A type this node does not accept.
    #[error("transaction type not supported")]
    UnsupportedType,
    /// A blob transaction sent in its canonical (block) form: the pool needs the blobs.
    #[error(
        "blob transaction without its sidecar: send it in the network form \
         rlp([tx_payload_body, blobs, commitments, proofs]) so the blobs can be checked"
    )]
    BlobSidecarMissing,
    /// More blobs than the fork allows in one transaction.
    #[error("too many blobs in transaction: have {have}, max {max} per transaction")]
    TooManyBlobs {
        /// The transaction's blob count.
        have: usize,
        /// The fork's limit.
        max: u64,
    },
    /// The sidecar's blobs, commitments or proofs do not line up with the versioned hashes.
    #[error(
        "blob sidecar does not match the transaction: {hashes} versioned hashes, {blobs} blobs, \
         {commitments} commitments, {proofs} proofs (want {want_proofs} proofs)"
    )]
    BlobSidecarShape {
        /// Versioned hashes in the transaction.
        hashes: usize,
        /// Blobs in the sidecar.
        blobs: usize,
        /// Commitments in the sidecar.
        commitments: usize,
        /// Proofs (blob proofs, or cell proofs) in the sidecar.
        proofs: usize,
        /// How many proofs the sidecar's version needs for that many blobs.
        want_proofs: usize,
    },
    /// A sidecar version the fork does not take (EIP-7594 cell proofs before Osaka).
    #[error(
        "blob sidecar version {version} is not valid before {fork}: use blob proofs (version 0)"
    )]
    BlobSidecarVersion {
        /// The sidecar's wrapper version.
        version: u8,
        /// The fork that introduces it.
        fork: &'static str,
    },
    /// A versioned hash is not the hash of its commitment.
    #[error(
        "blob versioned hash {index} does not match its commitment: have {have}, commitment hashes to {expected}"
    )]
    BlobHashMismatch {
        /// The blob's index.
        index: usize,
        /// The hash the transaction carries.
        have: B256,
        /// The hash of the sidecar's commitment.
        expected: B256,
    },
    /// The KZG proofs do not prove the blobs against their commitments.
    #[error("invalid blob sidecar: {0}")]
    InvalidBlobProof(String),
    /// The blob fee cap is below the next block's blob base fee (anvil refuses it too).
    #[error(
        "max fee per blob gas less than block blob gas fee: maxFeePerBlobGas {cap}, blob base fee {blob_base_fee}"
    )]
    BlobFeeTooLow {
        /// The transaction's blob fee cap.
        cap: u128,
        /// The next block's blob base fee.
        blob_base_fee: u128,
    },
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
    /// The mempool panicked serving this request; it rebuilt its pool and serves the next.
    #[error("internal error in the mempool: {0}")]
    Panicked(String),
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
    /// The block was built on a head state that has changed since (a write outside a block
    /// that did not wait for the block in progress): writing it would undo that change.
    #[error(
        "block {number} was built on state root {built_on}, but the head state is now \
         {head_root}: it changed while the block was built, so the block is not written; \
         build it again"
    )]
    HeadChanged {
        /// The block's number.
        number: u64,
        /// The root it was built on.
        built_on: B256,
        /// The head state's root now.
        head_root: B256,
    },
    /// A rollback asked to drop more blocks than there are after genesis.
    #[error(
        "Rollback depth must not exceed current chain height: current height {head}, depth {depth}"
    )]
    RollbackTooDeep {
        /// The head's number.
        head: u64,
        /// The depth asked for.
        depth: u64,
    },
    /// The state owner panicked while writing; it stops the node, whose journal replays on
    /// the next start.
    #[error("internal error in the state owner: {0}; the node is stopping")]
    Panicked(String),
    /// A state dump would be larger than a load accepts.
    #[error(
        "the state is too large to dump: its JSON would pass {max_json_bytes} bytes, the most \
         a load accepts"
    )]
    DumpTooLarge {
        /// The bound.
        max_json_bytes: usize,
    },
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
