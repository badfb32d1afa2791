//! Messages to the executor pool (`ExecutorActor`s, one per thread) and its client.

use std::sync::Arc;
use std::sync::atomic::Ordering::Relaxed;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::time::Duration;

use actix::{Message, Recipient};
use alloy_consensus::{Header, TxEnvelope};
use alloy_eips::eip2930::AccessList;
use alloy_eips::eip4895::Withdrawal;
use alloy_eips::eip7702::SignedAuthorization;
use alloy_eips::eip7840::BlobParams;
use alloy_primitives::{Address, B256, Bytes, U256};
use crossbeam_utils::CachePadded;
use hearth_storage::{BlockDraft, StateDiff};
use revm::primitives::hardfork::SpecId;

use crate::ExecError;
use crate::access_list::{AccessListOutcome, CreateAccessList};
use crate::admission::{
    self, AdmissionLimits, Arrival, CallStages, DelayHistogram, DelaySummary, PoolCount, Refusal,
    ServiceTime, Stage, StandingQueue, WaitScale,
};
use crate::fork::misses::{self, ForkMisses};
use crate::payload::{BuildPayload, BuiltPayload};
use crate::simulate::{Simulate, SimulateError, SimulatedBlock};

/// The fields of an `eth_call` / `eth_estimateGas` request, already validated.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CallRequest {
    /// Sender; zero address when absent.
    pub from: Option<Address>,
    /// Callee; `None` runs `input` as init code.
    pub to: Option<Address>,
    /// Gas limit; the gas cap when absent.
    pub gas: Option<u64>,
    /// Legacy gas price.
    pub gas_price: Option<u128>,
    /// EIP-1559 fee cap.
    pub max_fee_per_gas: Option<u128>,
    /// EIP-1559 tip cap.
    pub max_priority_fee_per_gas: Option<u128>,
    /// Wei sent along.
    pub value: Option<U256>,
    /// Calldata.
    pub input: Bytes,
    /// Nonce to check; unchecked when absent.
    pub nonce: Option<u64>,
    /// EIP-2930 access list.
    pub access_list: Option<AccessList>,
    /// EIP-7702 authorizations, as signed (makes it a type-4 transaction). One whose
    /// signature does not recover, or whose chain id or nonce does not match, is skipped as
    /// block execution skips it; the call still runs.
    pub authorization_list: Option<Vec<SignedAuthorization>>,
    /// EIP-4844 blob versioned hashes (makes it a blob transaction: BLOBHASH reads them).
    pub blob_versioned_hashes: Option<Vec<B256>>,
    /// EIP-4844 blob fee cap.
    pub max_fee_per_blob_gas: Option<u128>,
    /// Account state to pretend for this call only (geth's state override set).
    pub state_overrides: Option<Arc<StateOverrides>>,
    /// Block fields to pretend for this call only.
    pub block_overrides: Option<BlockOverrides>,
}

/// Per-account overrides for one call, by address.
pub type StateOverrides = std::collections::BTreeMap<Address, AccountOverride>;

/// What to pretend about one account during a call.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AccountOverride {
    /// Replaces the balance.
    pub balance: Option<U256>,
    /// Replaces the nonce.
    pub nonce: Option<u64>,
    /// Replaces the code.
    pub code: Option<Bytes>,
    /// Replaces the whole storage: slots not listed read as zero.
    pub state: Option<std::collections::BTreeMap<U256, U256>>,
    /// Replaces only the listed slots.
    pub state_diff: Option<std::collections::BTreeMap<U256, U256>>,
    /// Moves the precompile at this address to another address (geth's
    /// `movePrecompileToAddress`); this address then runs its code, if any.
    pub move_precompile_to: Option<Address>,
}

/// Block fields to pretend during a call.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct BlockOverrides {
    /// NUMBER.
    pub number: Option<u64>,
    /// TIMESTAMP.
    pub timestamp: Option<u64>,
    /// GASLIMIT.
    pub gas_limit: Option<u64>,
    /// BASEFEE.
    pub base_fee: Option<u64>,
    /// COINBASE.
    pub coinbase: Option<Address>,
    /// PREVRANDAO.
    pub prevrandao: Option<B256>,
}

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

/// A transaction ready for a block: decoded, with its sender and hash.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PooledTx {
    /// The signed transaction.
    pub tx: Arc<TxEnvelope>,
    /// Its recovered sender.
    pub sender: Address,
    /// Its hash.
    pub hash: B256,
}

/// The environment of the block being built or imported: everything the block's execution
/// depends on besides its parent state and its transactions.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BlockEnvSpec {
    /// Block number (the parent's + 1 for a chain block).
    pub number: u64,
    /// Timestamp (seconds).
    pub timestamp: u64,
    /// Fee recipient.
    pub coinbase: Address,
    /// Block gas limit.
    pub gas_limit: u64,
    /// Base fee per gas (ignored before London).
    pub base_fee: u64,
    /// PREVRANDAO (the header's mix hash; used from the Merge on).
    pub prevrandao: B256,
    /// Difficulty (zero from the Merge on).
    pub difficulty: U256,
    /// Hard fork rules of this block; `None` uses the executor's configured spec.
    pub spec: Option<SpecId>,
    /// Chain id transactions must carry; `None` uses the executor's configured chain id.
    pub chain_id: Option<u64>,
    /// Excess blob gas of this block (Cancun on); `None` computes it from the parent (zero
    /// after a pre-Cancun parent).
    pub excess_blob_gas: Option<u64>,
    /// Blob schedule (target, max, base fee update fraction); `None` uses the fork's default.
    pub blob_params: Option<BlobParams>,
    /// EIP-4788 parent beacon block root (Cancun on); `None` is zero.
    pub parent_beacon_block_root: Option<B256>,
    /// EIP-4895 withdrawals, credited after the transactions (Shanghai on).
    pub withdrawals: Vec<Withdrawal>,
    /// Ommer headers, for the pre-merge ommer rewards.
    pub ommers: Vec<Header>,
    /// Extra data to put in the header.
    pub extra_data: Bytes,
    /// Whether the block-level rules run around the transactions.
    pub rules: BlockRules,
}

impl BlockEnvSpec {
    /// Re-executing a block someone else sealed (an import, a fork's replayed block): its
    /// header's number, timestamp, coinbase, gas limit, base fee, prevrandao, difficulty,
    /// excess blob gas, beacon root and extra data, all rules applied; the executor's spec,
    /// chain id and blob parameters, and no withdrawals or ommers, unless the caller sets them.
    pub fn of_header(header: &Header) -> Self {
        Self {
            number: header.number,
            timestamp: header.timestamp,
            coinbase: header.beneficiary,
            gas_limit: header.gas_limit,
            base_fee: header.base_fee_per_gas.unwrap_or_default(),
            prevrandao: header.mix_hash,
            difficulty: header.difficulty,
            spec: None,
            chain_id: None,
            excess_blob_gas: header.excess_blob_gas,
            blob_params: None,
            parent_beacon_block_root: header.parent_beacon_block_root,
            withdrawals: vec![],
            ommers: vec![],
            extra_data: header.extra_data.clone(),
            rules: BlockRules::Full,
        }
    }

    /// A dev-chain block: the executor's spec and chain id, no withdrawals, no ommers.
    pub fn dev(
        number: u64,
        timestamp: u64,
        coinbase: Address,
        gas_limit: u64,
        base_fee: u64,
        prevrandao: B256,
    ) -> Self {
        Self {
            number,
            timestamp,
            coinbase,
            gas_limit,
            base_fee,
            prevrandao,
            difficulty: U256::ZERO,
            spec: None,
            chain_id: None,
            excess_blob_gas: None,
            blob_params: None,
            parent_beacon_block_root: None,
            withdrawals: Vec::new(),
            ommers: Vec::new(),
            extra_data: Bytes::new(),
            rules: BlockRules::Full,
        }
    }
}

/// Which block-level rules apply around the transactions.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BlockRules {
    /// Everything a chain block does: system calls (EIP-4788, EIP-2935, EIP-7002, EIP-7251,
    /// when their contracts exist), withdrawals, requests, pre-merge rewards.
    Full,
    /// Only the transactions (state tests: no rewards, system calls or withdrawals).
    TransactionsOnly,
}

/// How the executor treats transactions that cannot go into the block.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BuildMode {
    /// Mining: skip what does not fit or is invalid, and report the invalid ones.
    Pack,
    /// Importing a given block: every transaction must be valid and fit, else the block is
    /// rejected with [`ExecError::Invalid`].
    Import,
}

/// Executes `txs` in order on top of `parent` and assembles the block. With
/// [`BuildMode::Pack`], transactions that do not fit the gas limit are left for later and ones
/// that fail validation are reported invalid; with [`BuildMode::Import`] either rejects the block.
#[derive(Debug, Clone)]
pub struct BuildBlock {
    /// The parent header.
    pub parent: Header,
    /// The new block's environment.
    pub env: BlockEnvSpec,
    /// Candidates in the order to try them.
    pub txs: Vec<PooledTx>,
    /// Mining or importing.
    pub mode: BuildMode,
}

/// A block executed but not yet committed.
#[derive(Debug, Clone)]
pub struct BuiltBlock {
    /// Header (without state root), body and receipts.
    pub draft: BlockDraft,
    /// What the block changes.
    pub diff: StateDiff,
    /// Transactions that failed validation and must leave the pool, with why.
    pub invalid: Vec<InvalidTx>,
    /// The EIP-7685 requests the block made (Prague on), each its type byte and data; the
    /// header carries their hash.
    pub requests: Vec<Bytes>,
    /// What each included transaction returned (revert data for a reverted one, `None` for a
    /// halted one), in block order: evm_mine_detailed shows it.
    pub outputs: Vec<Option<Bytes>>,
}

/// A transaction block building refused (revm's validation failed against the block's state),
/// which therefore leaves the pool without a receipt.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InvalidTx {
    /// Its hash.
    pub hash: B256,
    /// Why it was refused, in revm's words.
    pub reason: String,
}

impl Message for BuildBlock {
    type Result = Result<BuiltBlock, ExecError>;
}

/// A request admitted to the executor pool, carrying its place there. The executor calls
/// [`begin`](Self::begin) as it starts the request; the place is released when this message
/// is dropped, at the end of the executor's handler, right after the request ran (or with the
/// mailbox of an executor that stopped). So "in the pool" means queued or running: an answer
/// the caller has not picked up yet holds no place, and a caller that went away does not free
/// one early. (actix drops such a caller's message unrun when the executor takes it off its
/// queue, and its place with it, without a service-time sample.)
#[derive(Debug)]
pub struct Admitted<M> {
    /// The request to run.
    pub request: M,
    /// Dropped with the message.
    slot: Slot,
    /// Whether the run collects its fork misses instead of waiting for them
    /// (`fork::misses`): the client holds a copy of the request to run again.
    collect: bool,
}

impl<M> Admitted<M> {
    /// Whether the executor runs it collecting fork misses (answering
    /// [`ExecError::ForkMisses`] when it had any) rather than waiting for the upstream.
    pub const fn collects_misses(&self) -> bool {
        self.collect
    }

    /// Marks the request as started: how long it waited joins the queue-delay histogram, and
    /// the time from now until the message is dropped joins the thread's service time (for
    /// calls). The executor's handler calls this first and returns its error, if any: once the
    /// pool is closing ([`ExecutorClient::close`]) a request other than a block build is not
    /// run but answered [`ExecError::ShuttingDown`]. A request never begun counts neither.
    pub fn begin(&mut self) -> Result<(), ExecError> {
        self.slot.begin()
    }
}

impl<M: Message> Message for Admitted<M> {
    type Result = M::Result;
}

tokio::task_local! {
    /// When the request being served reached the RPC front, and when its call was admitted
    /// and answered: set by [`ExecutorClient::timed`] around one HTTP request, read at its end
    /// into the pool's [`CallStages`]. A request served outside it (WebSocket, tests) records
    /// only the executor's stages.
    static REQUEST_CLOCK: RequestClock;
}

/// The instants of one request's stages (see [`Stage`]); cells, as the request's task is
/// polled on one thread at a time.
struct RequestClock {
    /// How its calls arrive: an HTTP request is its connection's only one ([`Arrival::Sole`])
    /// unless it is a batch ([`among_others`]).
    arrival: std::cell::Cell<Arrival>,
    entry: tokio::time::Instant,
    admitted: std::cell::Cell<Option<tokio::time::Instant>>,
    answered: std::cell::Cell<Option<tokio::time::Instant>>,
}

/// One place in the pool and on a lane, released on drop.
struct Slot {
    pool: Arc<Pool>,
    lane: usize,
    /// Requests on the lane when it was sent, itself included.
    depth: usize,
    sent: tokio::time::Instant,
    /// Whether its run time is a call's service time: block builds, traces and payloads are
    /// not calls and would skew the time calls are admitted by.
    sampled: bool,
    /// Whether the pool's closing answers it instead of running it (all but block builds).
    ends_at_close: bool,
    started: Option<tokio::time::Instant>,
}

impl Slot {
    fn begin(&mut self) -> Result<(), ExecError> {
        if self.ends_at_close && self.pool.closing.load(Ordering::Acquire) {
            return Err(ExecError::ShuttingDown);
        }
        let now = tokio::time::Instant::now();
        self.started = Some(now);
        let lane = &self.pool.lanes[self.lane];
        lane.delays.record(now - self.sent);
        let since_epoch =
            u64::try_from(now.duration_since(self.pool.epoch).as_nanos()).unwrap_or(u64::MAX);
        lane.standing.record(since_epoch, now - self.sent, self.pool.limits.max_queue_delay);
        if self.sampled {
            self.pool.lanes[self.lane].stages.record(Stage::Queue, now - self.sent);
        }
        Ok(())
    }
}

impl Drop for Slot {
    fn drop(&mut self) {
        let lane = &self.pool.lanes[self.lane];
        lane.in_flight.fetch_sub(1, Relaxed);
        self.pool.count.leave();
        let Some(started) = self.started else { return };
        // Only the executor thread drops a request it began, one at a time, so the previous
        // end on this lane is the end of the request that ran before this one.
        let now = tokio::time::Instant::now();
        let since_epoch = |at: tokio::time::Instant| {
            u64::try_from(at.duration_since(self.pool.epoch).as_nanos()).unwrap_or(u64::MAX)
        };
        let previous_end = lane.last_end.swap(since_epoch(now), Relaxed);
        if self.sampled {
            // The thread's time for this call: from when it was free to take it (the end of
            // the request it queued behind, or its own start when it arrived after that end)
            // to its end. Between calls the thread also takes the next message off its
            // mailbox and may be preempted; counting that time makes the service time the
            // rate calls leave the queue at, which is what the expected wait needs.
            let free_from = if previous_end > since_epoch(self.sent) {
                previous_end
            } else {
                since_epoch(started)
            };
            let took = since_epoch(now).saturating_sub(free_from);
            // Whether it ended within the budget plus one service time of its admission, by
            // the service time it was admitted with (`WaitScale`).
            if let Some(service) = lane.service.get() {
                lane.scale.record(now - self.sent, self.pool.limits.max_queue_delay, service);
            }
            lane.service.record(Duration::from_nanos(took).max(now - started));
            lane.stages.record(Stage::Run, now - started);
        }
    }
}

impl std::fmt::Debug for Slot {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Slot").field("lane", &self.lane).finish_non_exhaustive()
    }
}

/// One executor thread as the client sees it: its recipients, how many requests it holds and
/// what its calls measured.
#[derive(Debug)]
pub struct ExecutorLane {
    calls: Recipient<Admitted<Call>>,
    estimates: Recipient<Admitted<EstimateGas>>,
    builds: Recipient<Admitted<BuildBlock>>,
    touched: Recipient<Admitted<GetTouchedSlots>>,
    /// Traces (`debug_trace*`, `trace_*`); `None` for a stand-in that serves none.
    traces: Option<Recipient<Admitted<crate::trace::Trace>>>,
    /// eth_simulateV1 runs; `None` on stand-ins that only serve calls and blocks.
    simulations: Option<Recipient<Admitted<Simulate>>>,
    /// eth_createAccessList runs; `None` on stand-ins.
    access_lists: Option<Recipient<Admitted<CreateAccessList>>>,
    /// testing_buildBlockV1 runs; `None` on stand-ins.
    payloads: Option<Recipient<Admitted<BuildPayload>>>,
    /// Requests sent to this lane and not finished (padded: every RPC worker touches it).
    in_flight: CachePadded<AtomicUsize>,
    /// How long one call takes on this lane, written by its executor thread.
    service: ServiceTime,
    /// How long requests waited on this lane before they ran, written by its executor thread.
    delays: DelayHistogram,
    /// When the last request that ran on this lane ended, in nanoseconds since the pool's
    /// epoch (0: none yet); written by its executor thread.
    last_end: CachePadded<AtomicU64>,
    /// How much this lane's expected waits are scaled so that its calls' p99 keeps the budget.
    scale: WaitScale,
    /// Whether its requests' waits show a standing queue (written by its executor thread).
    standing: StandingQueue,
    /// The stages its executor thread times (queue, run), apart from the front's.
    stages: CallStages,
}

impl ExecutorLane {
    /// The recipients of one executor (or of a stand-in, in tests).
    pub fn new(
        calls: Recipient<Admitted<Call>>,
        estimates: Recipient<Admitted<EstimateGas>>,
        builds: Recipient<Admitted<BuildBlock>>,
        touched: Recipient<Admitted<GetTouchedSlots>>,
    ) -> Self {
        Self {
            calls,
            estimates,
            builds,
            touched,
            traces: None,
            simulations: None,
            access_lists: None,
            payloads: None,
            in_flight: Default::default(),
            service: ServiceTime::default(),
            delays: DelayHistogram::default(),
            last_end: Default::default(),
            scale: WaitScale::default(),
            standing: StandingQueue::default(),
            stages: CallStages::default(),
        }
    }

    /// Lets this lane serve traces too.
    #[must_use]
    pub fn with_traces(mut self, traces: Recipient<Admitted<crate::trace::Trace>>) -> Self {
        self.traces = Some(traces);
        self
    }

    /// Lets this lane run eth_createAccessList requests.
    #[must_use]
    pub fn with_access_lists(mut self, lists: Recipient<Admitted<CreateAccessList>>) -> Self {
        self.access_lists = Some(lists);
        self
    }

    /// Lets this lane build testing_buildBlockV1 payloads.
    #[must_use]
    pub fn with_payloads(mut self, payloads: Recipient<Admitted<BuildPayload>>) -> Self {
        self.payloads = Some(payloads);
        self
    }

    /// Lets this lane run eth_simulateV1 requests.
    #[must_use]
    pub fn with_simulate(mut self, simulations: Recipient<Admitted<Simulate>>) -> Self {
        self.simulations = Some(simulations);
        self
    }
}

/// Marks the request being served (inside [`ExecutorClient::timed`]) as one of several its
/// connection has in flight (a JSON-RPC batch, whose items run concurrently): its calls are
/// then admitted by the plain budget ([`Arrival::Among`]).
pub fn among_others() {
    let _ = REQUEST_CLOCK.try_with(|clock| clock.arrival.set(Arrival::Among));
}

/// How the request being served arrives: [`Arrival::Sole`] inside [`ExecutorClient::timed`]
/// (an HTTP request) unless [`among_others`] marked it, [`Arrival::Among`] elsewhere.
pub fn current_arrival() -> Arrival {
    REQUEST_CLOCK.try_with(|clock| clock.arrival.get()).unwrap_or(Arrival::Among)
}

/// What every clone of a client shares: the lanes, the pool-wide count and the refusals.
#[derive(Debug)]
struct Pool {
    lanes: Box<[ExecutorLane]>,
    limits: AdmissionLimits,
    /// Requests in the pool, waiting or running; capped at `max_queued` + one per lane.
    count: PoolCount,
    /// Where the next search for the least busy lane starts (spreads ties).
    next: CachePadded<AtomicUsize>,
    /// Refusals by [`Refusal::index`]; bumped only when refusing.
    refusals: [CachePadded<AtomicU64>; 2],
    /// `true` once the node began shutting down ([`ExecutorClient::close`]): nothing new is
    /// admitted, and each request still queued is answered [`ExecError::ShuttingDown`] when
    /// its executor reaches it, unrun. An atomic, not a channel callers wait on: a call's path
    /// takes no lock (a tokio `watch` takes an `RwLock` to read and a `Mutex` to wait).
    closing: AtomicBool,
    /// What the lanes' `last_end` times count from.
    epoch: tokio::time::Instant,
    /// Whether the chain is a fork, whose read-only requests then run collecting their fork
    /// misses ([`ExecutorClient::set_fork_reads`]); elsewhere no copy of a request is kept.
    fork_reads: AtomicBool,
    /// Where admitted calls' time went in the RPC front ([`ExecutorClient::timed`]); the
    /// executors' stages are the lanes'.
    stages: CallStages,
}

/// The front of the executor pool: it admits by latency budget (see [`crate::admission`]) and
/// sends each request to the lane (executor thread) holding the fewest, skipping executors
/// that have stopped; ties go round the lanes. A call whose expected wait on that lane is over
/// `--executor.max-queue-delay`, or that finds `--executor.max-queued` requests waiting, fails
/// at once with [`ExecError::Busy`]: the refusal costs an atomic or two and no executor work.
#[derive(Debug, Clone)]
pub struct ExecutorClient {
    pool: Arc<Pool>,
}

impl ExecutorClient {
    /// Wraps one executor's recipients, admitting by `limits`.
    pub fn new(
        calls: Recipient<Admitted<Call>>,
        estimates: Recipient<Admitted<EstimateGas>>,
        builds: Recipient<Admitted<BuildBlock>>,
        touched: Recipient<Admitted<GetTouchedSlots>>,
        limits: AdmissionLimits,
    ) -> Self {
        let lane = ExecutorLane::new(calls, estimates, builds, touched);
        Self::with_lanes(vec![lane], limits)
    }

    /// A client over several executors (one lane each), admitting by `limits`. Each
    /// executor's mailbox must hold [`mailbox_for`](Self::mailbox_for) messages: the cap then
    /// guarantees a send never finds it full.
    ///
    /// # Panics
    /// When `lanes` is empty: a pool has at least one executor.
    pub fn with_lanes(lanes: Vec<ExecutorLane>, limits: AdmissionLimits) -> Self {
        assert!(!lanes.is_empty(), "an executor pool needs at least one executor");
        Self {
            pool: Arc::new(Pool {
                lanes: lanes.into(),
                limits,
                count: PoolCount::default(),
                next: Default::default(),
                refusals: Default::default(),
                closing: AtomicBool::new(false),
                epoch: tokio::time::Instant::now(),
                fork_reads: AtomicBool::new(false),
                stages: CallStages::default(),
            }),
        }
    }

    /// The mailbox each of `threads` executors needs under `limits`: every request the pool
    /// may hold (the queue cap, one running per thread) and the miner's block, which is never
    /// refused.
    pub const fn mailbox_for(threads: usize, limits: AdmissionLimits) -> usize {
        limits.max_queued.saturating_add(threads).saturating_add(1)
    }

    /// Takes a place for a request on the lane holding the fewest among the running executors;
    /// `sampled` requests (calls) feed the lane's service time and go round the lanes on ties.
    /// Block builds (not sampled) take the first of the least busy lanes, so back-to-back
    /// automined blocks run on one warm executor thread instead of alternating (one sender
    /// after 50,000 blocks: 1,657 -> 1,732 tx/s, means of 10 alternating runs: BENCHMARKS.md).
    /// The pool count must already include it.
    fn place(&self, sampled: bool) -> Slot {
        let lanes = &self.pool.lanes;
        let start = if sampled { self.pool.next.fetch_add(1, Relaxed) } else { 0 };
        let lane = self.least_busy(start);
        let depth = lanes[lane].in_flight.fetch_add(1, Relaxed) + 1;
        Slot {
            pool: Arc::clone(&self.pool),
            lane,
            depth,
            sent: tokio::time::Instant::now(),
            sampled,
            ends_at_close: true,
            started: None,
        }
    }

    /// The running lane holding the fewest requests, ties going to the first from `start`
    /// round the lanes (`start` itself when none runs: the send then fails as closed).
    fn least_busy(&self, start: usize) -> usize {
        let lanes = &self.pool.lanes;
        let n = lanes.len();
        let start = start % n;
        (0..n)
            .map(|i| (start + i) % n)
            .filter(|&i| lanes[i].calls.connected())
            .min_by_key(|&i| lanes[i].in_flight.load(Relaxed))
            .unwrap_or(start)
    }

    /// A place for a request, or the refusal: the queue cap first (one atomic), then the
    /// expected wait on the lane it would go to.
    fn admit(&self, sampled: bool) -> Result<Slot, ExecError> {
        let pool = &self.pool;
        if pool.closing.load(Ordering::Acquire) {
            return Err(ExecError::ShuttingDown);
        }
        let cap = pool.limits.max_queued.saturating_add(pool.lanes.len());
        if !pool.count.try_enter(cap) {
            return Err(self.refuse(Refusal::QueueFull { max_queued: pool.limits.max_queued }));
        }
        let slot = self.place(sampled);
        let lane = &pool.lanes[slot.lane];
        match self.judge(lane, slot.depth - 1, pool.count.get(), current_arrival()) {
            Ok(()) => {
                if sampled {
                    let _ = REQUEST_CLOCK.try_with(|clock| clock.admitted.set(Some(slot.sent)));
                }
                Ok(slot)
            }
            // Dropping the slot gives both places back; it never began, so nothing is sampled.
            Err(refusal) => Err(self.refuse(refusal)),
        }
    }

    /// Whether the pool could refuse a call now: only when it holds at least one request per
    /// thread, since a call that finds its thread idle is always admitted. One atomic load,
    /// so the RPC front skips even the scan of a body while the pool has an idle thread.
    pub fn may_refuse(&self) -> bool {
        self.pool.count.get() >= self.pool.lanes.len()
    }

    /// The refusal a call would meet now, counted as one, or `None` when it would be admitted
    /// (or the pool is closing or has no running executor: the ordinary path answers those).
    /// It takes no place: the RPC front asks this before it parses a request for an executor
    /// method, so that a call refused under a retry storm costs a scan of its body and this
    /// (a few atomics), the same rule as `admit` on the lane a call would go to.
    pub fn refuse_early(&self, arrival: Arrival) -> Option<ExecError> {
        let refusal = self.would_refuse(arrival)?;
        self.pool.refusals[refusal.index()].fetch_add(1, Relaxed);
        Some(ExecError::Busy(refusal))
    }

    /// [`refuse_early`](Self::refuse_early) for `calls` calls arriving together (the executor
    /// calls of one JSON-RPC batch): the rule is decided once and the refusal counted once per
    /// call. Admission would meet each of them with the same state, since a refused call
    /// takes no place and changes nothing the rule reads; `None` (admitted) counts nothing.
    pub fn refuse_early_many(&self, calls: u64) -> Option<ExecError> {
        let refusal = self.would_refuse(Arrival::Among)?;
        self.pool.refusals[refusal.index()].fetch_add(calls, Relaxed);
        Some(ExecError::Busy(refusal))
    }

    /// The refusal a call would meet now, without counting it: the same rule as `admit` on
    /// the lane `place` would pick next (the RPC front asks before it holds a quick retry,
    /// and counts only the answer it gives after the hold).
    pub fn would_refuse(&self, arrival: Arrival) -> Option<Refusal> {
        let pool = &self.pool;
        if pool.closing.load(Ordering::Acquire) {
            return None;
        }
        let cap = pool.limits.max_queued.saturating_add(pool.lanes.len());
        if pool.count.get() >= cap {
            return Some(Refusal::QueueFull { max_queued: pool.limits.max_queued });
        }
        let lane = &pool.lanes[self.least_busy(pool.next.load(Relaxed))];
        if !lane.calls.connected() {
            return None;
        }
        let ahead = lane.in_flight.load(Relaxed);
        // This arrival would be one more in the pool.
        self.judge(lane, ahead, pool.count.get() + 1, arrival).err()
    }

    /// The pool's rule for an arrival behind `ahead` requests on `lane`, the pool holding
    /// `in_pool` with it: a connection's only request goes in while the closed-loop places
    /// last ([`admission::closed_loop_admits`]), any other by the latency budget
    /// ([`admission::decide`]). A connection's only request refused marks the lane standing
    /// ([`StandingQueue::enter`]): arrivals outrun what a closed loop sends.
    fn judge(
        &self,
        lane: &ExecutorLane,
        ahead: usize,
        in_pool: usize,
        arrival: Arrival,
    ) -> Result<(), Refusal> {
        let threads = self.pool.lanes.len();
        let standing = lane.standing.get();
        if admission::closed_loop_admits(arrival, standing, in_pool, threads) {
            return Ok(());
        }
        let decided =
            admission::decide(self.pool.limits, ahead, lane.service.get(), lane.scale.get());
        if decided.is_err() && arrival == Arrival::Sole && !standing {
            lane.standing.enter();
        }
        decided
    }

    fn refuse(&self, refusal: Refusal) -> ExecError {
        self.pool.refusals[refusal.index()].fetch_add(1, Relaxed);
        ExecError::Busy(refusal)
    }

    /// Sends `request` with its place to its lane, which the executor releases once it has
    /// run the request, whether or not the caller still waits for the answer.
    async fn dispatch<M>(
        &self,
        slot: Slot,
        recipient: impl Fn(&ExecutorLane) -> Option<&Recipient<Admitted<M>>>,
        request: M,
        collect: bool,
    ) -> Result<M::Result, ExecError>
    where
        M: Message + Send + 'static,
        M::Result: Send,
    {
        let to = self.lane(&slot, recipient)?;
        // `send` enqueues at once (the mailbox has room for every place); the caller waits
        // for the answer. Once the pool closes, the executor answers each queued request
        // ShuttingDown as it reaches it (`Slot::begin`), after the one it runs (bounded by
        // the EVM timeout), so a drain answers every caller without waking them by a lock.
        let sampled = slot.sampled;
        // An executor that stopped during the drain, its mailbox unread, answers nothing.
        let answer = to.send(Admitted { request, slot, collect }).await.map_err(|e| {
            if self.is_closed() { ExecError::ShuttingDown } else { ExecError::from(e) }
        })?;
        if sampled {
            let now = tokio::time::Instant::now();
            let _ = REQUEST_CLOCK.try_with(|clock| clock.answered.set(Some(now)));
        }
        Ok(answer)
    }

    /// Admits and runs a read-only request, collecting its fork misses: when its run missed
    /// fork state the cache lacks, the keys are fetched without holding a thread (all at
    /// once, `ForkMisses::fetch`) and the request is admitted and run again, up to
    /// [`misses::MAX_ROUNDS`] times, then once more with reads that wait. The wait for the
    /// upstream is spent outside the pool: it is neither queueing nor service time.
    async fn run<M>(
        &self,
        sampled: bool,
        recipient: impl Fn(&ExecutorLane) -> Option<&Recipient<Admitted<M>>> + Copy,
        request: M,
    ) -> Result<M::Result, ExecError>
    where
        M: Message + Clone + Send + 'static,
        M::Result: Send + ForkRetry,
    {
        let mut round = 0;
        loop {
            let slot = self.admit(sampled)?;
            // Off a fork nothing misses: the request goes as it is, with no copy kept.
            if round == misses::MAX_ROUNDS || !self.pool.fork_reads.load(Relaxed) {
                return self.dispatch(slot, recipient, request, false).await;
            }
            match self.dispatch(slot, recipient, request.clone(), true).await?.missed() {
                Ok(answer) => return Ok(answer),
                Err(misses) => {
                    misses.fetch().await.map_err(|error| {
                        ExecError::Storage(hearth_storage::StorageError::Fork(error.to_string()))
                    })?;
                    round += 1;
                }
            }
        }
    }

    /// Sends a block build to its lane and waits for it whatever happens: the miner's block in
    /// progress finishes even while the pool closes (the miner stops after it).
    async fn dispatch_to_end<M>(
        &self,
        slot: Slot,
        recipient: impl Fn(&ExecutorLane) -> Option<&Recipient<Admitted<M>>>,
        request: M,
    ) -> Result<M::Result, ExecError>
    where
        M: Message + Send + 'static,
        M::Result: Send,
    {
        let to = self.lane(&slot, recipient)?;
        let mut slot = slot;
        slot.ends_at_close = false;
        Ok(to.send(Admitted { request, slot, collect: false }).await?)
    }

    /// The recipient of `slot`'s lane for one message type; a lane without one is closed.
    fn lane<'p, M>(
        &'p self,
        slot: &Slot,
        recipient: impl Fn(&'p ExecutorLane) -> Option<&'p Recipient<Admitted<M>>>,
    ) -> Result<&'p Recipient<Admitted<M>>, ExecError>
    where
        M: Message + Send + 'static,
        M::Result: Send,
    {
        recipient(&self.pool.lanes[slot.lane])
            .ok_or(ExecError::Mailbox(actix::MailboxError::Closed))
    }

    /// Tells the pool whether its chain is a fork (the node at start, `anvil_reset` after a
    /// switch): its read-only requests then run collecting their fork misses, which costs a
    /// copy of each request (kept to run it again). A request on a fork sent without it waits
    /// for the upstream on its executor thread, as every read did before.
    pub fn set_fork_reads(&self, fork: bool) {
        self.pool.fork_reads.store(fork, Relaxed);
    }

    /// Whether the chain is a fork ([`set_fork_reads`](Self::set_fork_reads)): one relaxed load,
    /// for the front's reads to ask before they collect their own misses.
    pub fn fork_reads(&self) -> bool {
        self.pool.fork_reads.load(Relaxed)
    }

    /// Starts the shutdown drain: new requests are refused [`ExecError::ShuttingDown`], and
    /// every request still queued is answered so by its executor when it reaches it, unrun
    /// (right after the request it runs now, which finishes); block builds run to their end
    /// (the miner stops after its block). Idempotent.
    pub fn close(&self) {
        self.pool.closing.store(true, Ordering::Release);
    }

    /// Whether [`close`](Self::close) was called.
    pub fn is_closed(&self) -> bool {
        self.pool.closing.load(Ordering::Acquire)
    }

    /// Runs `call` on the pool, or fails at once with [`ExecError::Busy`].
    pub async fn call(&self, call: Call) -> Result<CallOutcome, ExecError> {
        self.run(true, |lane| Some(&lane.calls), call).await?
    }

    /// Runs an estimate on the pool, admitted as [`call`](Self::call) is.
    pub async fn estimate_gas(&self, estimate: EstimateGas) -> Result<EstimateOutcome, ExecError> {
        self.run(true, |lane| Some(&lane.estimates), estimate).await?
    }

    /// Runs a trace on the pool, admitted as [`call`](Self::call) is. Fails with
    /// [`ExecError::Mailbox`] on a pool whose executors serve no traces (a test's stand-in).
    pub async fn trace(
        &self,
        trace: crate::trace::Trace,
    ) -> Result<crate::trace::TraceOutput, ExecError> {
        // Not sampled, as block builds: a trace (a replay, often a long one) would inflate the
        // service time that cheap calls are admitted by.
        self.run(false, |lane| lane.traces.as_ref(), trace).await?
    }

    /// Runs a call that reports the slots it touched, admitted as [`call`](Self::call) is.
    pub async fn touched_slots(&self, request: GetTouchedSlots) -> Result<TouchedSlots, ExecError> {
        self.run(true, |lane| Some(&lane.touched), request).await?
    }

    /// Runs an eth_simulateV1 request on the pool, admitted as [`call`](Self::call) is, on a
    /// lane that can simulate (every lane of a real pool can).
    pub async fn simulate(&self, simulate: Simulate) -> Result<Vec<SimulatedBlock>, SimulateError> {
        self.run(true, |lane| lane.simulations.as_ref(), simulate).await?
    }

    /// Runs an eth_createAccessList request on the pool, admitted as [`call`](Self::call) is.
    pub async fn create_access_list(
        &self,
        request: CreateAccessList,
    ) -> Result<AccessListOutcome, ExecError> {
        self.run(true, |lane| lane.access_lists.as_ref(), request).await?
    }

    /// Builds and seals a block without committing it (testing_buildBlockV1), admitted as
    /// [`call`](Self::call) is: unlike the miner's blocks, a request may be refused.
    pub async fn build_payload(&self, request: BuildPayload) -> Result<BuiltPayload, ExecError> {
        let slot = self.admit(false)?;
        self.dispatch(slot, |lane| lane.payloads.as_ref(), request, false).await?
    }

    /// Builds a block. Block building is never refused: the miner must not drop a block
    /// because calls are busy. It queues behind the calls already admitted to its lane and
    /// counts in the pool like any request (the miner builds one block at a time).
    pub async fn build_block(&self, build: BuildBlock) -> Result<BuiltBlock, ExecError> {
        self.pool.count.enter();
        let slot = self.place(false);
        self.dispatch_to_end(slot, |lane| Some(&lane.builds), build).await?
    }

    /// Runs `request` (one HTTP request, from its body read to its reply) timing the stages
    /// of the call it makes, if it is admitted: how long before admission, in the pool and
    /// after the answer (see [`Stage`]), counted in [`stage_buckets`](Self::stage_buckets). A
    /// request refused or making no call records nothing; a request making several records
    /// its last.
    pub async fn timed<F: std::future::Future>(&self, request: F) -> F::Output {
        let clock = RequestClock {
            arrival: std::cell::Cell::new(Arrival::Sole),
            entry: tokio::time::Instant::now(),
            admitted: Default::default(),
            answered: Default::default(),
        };
        REQUEST_CLOCK
            .scope(clock, async {
                let output = request.await;
                let _ = REQUEST_CLOCK.try_with(|clock| {
                    let (Some(admitted), Some(answered)) =
                        (clock.admitted.get(), clock.answered.get())
                    else {
                        return;
                    };
                    let now = tokio::time::Instant::now();
                    let stages = &self.pool.stages;
                    stages.record(Stage::Front, admitted.saturating_duration_since(clock.entry));
                    stages.record(Stage::Pool, answered.saturating_duration_since(admitted));
                    stages.record(Stage::After, now.saturating_duration_since(answered));
                    stages.record(Stage::Total, now.saturating_duration_since(clock.entry));
                });
                output
            })
            .await
    }

    /// Each lane's verdict on its queue ([`StandingQueue`]): `true` where a standing queue
    /// holds its connections' only requests to the plain budget too.
    pub fn standing_queues(&self) -> Vec<bool> {
        self.pool.lanes.iter().map(|lane| lane.standing.get()).collect()
    }

    /// Admitted calls per bucket of [`admission::STAGE_BUCKETS_MICROS`] for `stage`, over the
    /// pool (see [`timed`](Self::timed)).
    pub fn stage_buckets(&self, stage: Stage) -> [u64; admission::STAGE_BUCKETS_MICROS.len() + 1] {
        let mut buckets = [0; admission::STAGE_BUCKETS_MICROS.len() + 1];
        self.pool.stages.add_to(stage, &mut buckets);
        for lane in &self.pool.lanes {
            lane.stages.add_to(stage, &mut buckets);
        }
        buckets
    }

    /// What admission allows.
    pub fn limits(&self) -> AdmissionLimits {
        self.pool.limits
    }

    /// Requests in the pool now (queued or running).
    pub fn in_flight(&self) -> usize {
        self.pool.count.get()
    }

    /// Refusals since start, by [`Refusal::REASONS`].
    pub fn refusals(&self) -> [u64; 2] {
        let [delay, full] = &self.pool.refusals;
        [delay.load(Relaxed), full.load(Relaxed)]
    }

    /// How long requests waited for their executor thread, over the pool, since start.
    pub fn queue_delays(&self) -> DelaySummary {
        let mut summary = DelaySummary::default();
        for lane in &self.pool.lanes {
            lane.delays.add_to(&mut summary);
        }
        summary
    }

    /// Each lane's expected-wait scale ([`WaitScale`]) as a factor (1.0 = the plain estimate).
    pub fn wait_scales(&self) -> Vec<f64> {
        let one = admission::SCALE_ONE as f64;
        self.pool.lanes.iter().map(|lane| lane.scale.get() as f64 / one).collect()
    }

    /// Each lane's service time per call (`None` before its first call).
    pub fn service_times(&self) -> Vec<Option<Duration>> {
        self.pool.lanes.iter().map(|lane| lane.service.get()).collect()
    }
}

/// An executor answer that may say its run missed fork state (`ExecError::ForkMisses`), for
/// the pool's client to fetch and run the request again.
pub trait ForkRetry: Sized {
    /// The misses, or the answer as it stands.
    fn missed(self) -> Result<Self, ForkMisses>;
}

impl<T> ForkRetry for Result<T, ExecError> {
    fn missed(self) -> Result<Self, ForkMisses> {
        match self {
            Err(ExecError::ForkMisses(misses)) => Err(misses),
            answer => Ok(answer),
        }
    }
}

impl<T> ForkRetry for Result<T, SimulateError> {
    fn missed(self) -> Result<Self, ForkMisses> {
        match self {
            Err(SimulateError::Exec(ExecError::ForkMisses(misses))) => Err(misses),
            answer => Ok(answer),
        }
    }
}
