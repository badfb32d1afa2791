//! Tracing requests to the executor pool: geth-style (`debug_trace*`) and parity-style
//! (`trace_*`), and the fork schedule a replay follows.
//!
//! A trace runs on an executor thread like eth_call, admitted through `ExecutorClient::trace`.
//! The executor encodes the answer itself, as JSON text within `TraceBudget::max_bytes`, so a
//! large trace never exists as a tree of JSON values and is refused (`ExecError::TooLarge`) as
//! soon as it outgrows the response cap.

use std::fmt::Debug;
use std::time::Duration;

use actix::Message;
use alloy_consensus::{Block, Header, TxEnvelope};
use alloy_eips::eip7840::BlobParams;
use alloy_primitives::map::HashSet;
use alloy_rpc_types_trace::filter::TraceFilter;
use alloy_rpc_types_trace::geth::GethDebugTracingOptions;
use alloy_rpc_types_trace::parity::TraceType;
use revm::primitives::hardfork::SpecId;

use crate::ExecError;
use crate::request::CallRequest;

/// The parity trace kinds asked for (`trace`, `stateDiff`, `vmTrace`).
pub type TraceTypes = HashSet<TraceType>;

/// What to trace and how to answer. Serves the `debug_trace*` and `trace_*` methods.
#[derive(Debug, Clone)]
pub enum TraceJob {
    /// debug_traceTransaction: transaction `index` of stored block `block`, after the block's
    /// earlier transactions replayed on its parent's state.
    GethTransaction {
        /// The block holding the transaction.
        block: u64,
        /// Its position in the block.
        index: usize,
        /// Tracer and its configuration.
        options: Box<GethDebugTracingOptions>,
    },
    /// debug_traceBlockByNumber / debug_traceBlockByHash: every transaction of stored block
    /// `block`, each after the ones before it.
    GethBlock {
        /// The block.
        block: u64,
        /// Tracer and its configuration.
        options: Box<GethDebugTracingOptions>,
    },
    /// debug_traceBlock: a block given whole (decoded from RLP) on top of its stored parent.
    GethRawBlock {
        /// The block; its senders are recovered by the executor.
        block: Box<Block<TxEnvelope>>,
        /// The number of its parent, which must be stored.
        parent: u64,
        /// Tracer and its configuration.
        options: Box<GethDebugTracingOptions>,
    },
    /// debug_traceCall: a call on the state after block `block`, as eth_call runs it.
    GethCall {
        /// What to run (with its state and block overrides).
        request: Box<CallRequest>,
        /// The block whose post-state and header the call sees.
        block: u64,
        /// Tracer and its configuration.
        options: Box<GethDebugTracingOptions>,
    },
    /// trace_transaction (every trace) or trace_get (the one at `address`).
    ParityTransaction {
        /// The block holding the transaction.
        block: u64,
        /// Its position in the block.
        index: usize,
        /// trace_get's trace address; `None` answers every trace of the transaction.
        address: Option<Vec<usize>>,
    },
    /// trace_block: the traces of every transaction of stored block `block`, then its rewards
    /// (before the Merge).
    ParityBlock {
        /// The block.
        block: u64,
    },
    /// trace_replayTransaction.
    ParityReplayTransaction {
        /// The block holding the transaction.
        block: u64,
        /// Its position in the block.
        index: usize,
        /// What to report.
        types: TraceTypes,
    },
    /// trace_replayBlockTransactions.
    ParityReplayBlock {
        /// The block.
        block: u64,
        /// What to report for each transaction.
        types: TraceTypes,
    },
    /// trace_call (one call, answered as one object) or trace_callMany (each call sees the
    /// state the ones before it left; answered as an array).
    ParityCalls {
        /// The calls in order, each with what to report.
        calls: Vec<(CallRequest, TraceTypes)>,
        /// The block whose post-state and header the calls see.
        block: u64,
        /// Whether to answer an array (trace_callMany).
        many: bool,
    },
    /// hearth_traceTransactionDecoded: transaction `index` of stored block `block`, its call
    /// tree with the names the node knows (`--artifacts`, standard interfaces), as JSON.
    Decoded {
        /// The block holding the transaction.
        block: u64,
        /// Its position in the block.
        index: usize,
    },
    /// Otterscan's views of transaction `index` of stored block `block`
    /// (ots_traceTransaction, ots_getInternalOperations, ots_getTransactionError).
    Otterscan {
        /// The block holding the transaction.
        block: u64,
        /// Its position in the block.
        index: usize,
        /// Which view.
        view: OtsView,
    },
    /// `--print-traces`: the named call tree of every transaction of stored block `block`,
    /// printed to the log (target `trace`); answers `null`.
    PrintBlock {
        /// The block.
        block: u64,
    },
    /// trace_filter: the traces of blocks `from..=to` that match `filter`, after its `after`
    /// and within its `count`.
    ParityFilter {
        /// First block.
        from: u64,
        /// Last block.
        to: u64,
        /// Addresses, mode and paging.
        filter: Box<TraceFilter>,
    },
}

/// Otterscan's views of one transaction, each an answer shaped as Erigon's.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OtsView {
    /// ots_traceTransaction: every call frame (and self-destruct) in order, flat, with depth.
    Trace,
    /// ots_getInternalOperations: the value transfers, creates and self-destructs below the
    /// top frame.
    Operations,
    /// ots_getTransactionError: what a reverted transaction returned (`0x` otherwise).
    Error,
}

/// Bounds on one trace request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TraceBudget {
    /// The response cap: the encoded answer may not reach this many bytes.
    pub max_bytes: usize,
    /// How long the traced execution may run: a geth tracer's `timeout`, or `None` for the
    /// executor's EVM time cap (`--rpc.evm-timeout`).
    pub timeout: Option<Duration>,
}

/// Traces a transaction, a block or a call on the executor pool.
#[derive(Debug, Clone)]
pub struct Trace {
    /// What to trace.
    pub job: TraceJob,
    /// Its bounds.
    pub budget: TraceBudget,
}

/// A trace answer: the JSON text of the method's `result`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TraceOutput(pub Vec<u8>);

impl Message for Trace {
    type Result = Result<TraceOutput, ExecError>;
}

/// The rules one block executes under.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BlockForkRules {
    /// Its hard fork.
    pub spec: SpecId,
    /// Its blob schedule.
    pub blob_params: BlobParams,
}

/// The fork schedule of a chain whose rules change along it (an imported chain): a replay of
/// block N runs under block N's rules, as its import did. A dev chain has none and runs every
/// block under the executor's configured fork.
pub trait ForkSchedule: Debug + Send + Sync {
    /// The rules block `header` executes under.
    fn rules_for(&self, header: &Header) -> BlockForkRules;
}
