//! Messages to the executor pool (`ExecutorActor`s, one per thread) and its client.

use std::sync::Arc;
use std::sync::atomic::Ordering::Relaxed;
use std::sync::atomic::{AtomicU64, AtomicUsize};
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
use tokio::sync::Semaphore;

use crate::ExecError;
use crate::access_list::{AccessListOutcome, CreateAccessList};
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
        /// Why, in geth's words where they exist.
        reason: String,
        /// Gas used.
        gas_used: u64,
    },
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

/// A request admitted to the executor pool, carrying its slot there: the admission permit and
/// the count on the lane it was sent to. The slot is released when this message is dropped,
/// which is at the end of the executor's handler, right after the request ran (or with the
/// mailbox of an executor that stopped). So "in flight" means queued or running in the pool:
/// an answer the caller has not picked up yet holds no slot, and a caller that went away
/// does not free one early. (actix drops such a caller's message unrun when the executor takes
/// it off its queue, and its slot with it.)
#[derive(Debug)]
pub struct Admitted<M> {
    /// The request to run.
    pub request: M,
    /// Held only to be dropped with the message.
    _slot: Slot,
}

impl<M: Message> Message for Admitted<M> {
    type Result = M::Result;
}

/// One place in the pool, released on drop.
struct Slot {
    _permit: tokio::sync::OwnedSemaphorePermit,
    lane: LaneGuard,
}

impl std::fmt::Debug for Slot {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Slot").field("lane", &self.lane.index).finish_non_exhaustive()
    }
}

/// One executor thread as the client sees it: its recipients and how many requests it holds.
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
    /// Requests sent to this lane and not run yet (padded: every RPC worker touches it).
    in_flight: CachePadded<AtomicUsize>,
    /// How long one request takes this lane, in nanoseconds: a moving average written as
    /// requests leave the lane (on its executor's thread), read only by calls that find the
    /// pool full. Zero until the first request.
    service_nanos: CachePadded<AtomicU64>,
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
            service_nanos: Default::default(),
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

/// Counts a request against its lane until the message carrying it is dropped, and then
/// updates the lane's service time. Lanes are FIFO, so a request sent when `depth` requests
/// (itself included) were on its lane spent about `depth` service times there.
struct LaneGuard {
    lanes: Arc<[ExecutorLane]>,
    index: usize,
    /// When it was sent; `None` for block builds, which are not calls and would skew the
    /// service time that calls are admitted by.
    sent: Option<tokio::time::Instant>,
    depth: u32,
}

impl Drop for LaneGuard {
    fn drop(&mut self) {
        let lane = &self.lanes[self.index];
        lane.in_flight.fetch_sub(1, Relaxed);
        let Some(sent) = self.sent else { return };
        let sample = sent.elapsed().as_nanos() as u64 / u64::from(self.depth.max(1));
        let old = lane.service_nanos.load(Relaxed);
        let new = if old == 0 { sample } else { old - old / 8 + sample / 8 };
        lane.service_nanos.store(new, Relaxed);
    }
}

/// At most this many calls per slot wait for one (a hard cap besides the expected wait).
const WAITING_PER_SLOT: usize = 16;

/// Counts a call waiting for a permit until it stops waiting, however it stops (admitted,
/// timed out, or dropped by its caller).
struct Waiting<'a>(&'a AtomicUsize);

impl<'a> Waiting<'a> {
    /// Joins the waiters if `worth(n)` says so, `n` being how many wait already.
    fn enter(waiting: &'a AtomicUsize, worth: impl Fn(usize) -> bool) -> Option<Self> {
        waiting.fetch_update(Relaxed, Relaxed, |n| worth(n).then_some(n + 1)).ok()?;
        Some(Self(waiting))
    }
}

impl Drop for Waiting<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Relaxed);
    }
}

/// The bounded front of the executor pool. It holds the bound: at most `max_in_flight`
/// requests are queued or running. A call that finds them all taken may wait for a slot, up to
/// the admission wait (none by default, [`with_admission_wait`](Self::with_admission_wait)),
/// when a slot is expected within that wait and fewer than 16 calls per slot wait already;
/// otherwise, or once that wait passes, it fails with [`ExecError::Busy`] rather than queueing
/// without limit. Each request
/// goes to the lane (executor thread) holding the fewest, skipping executors that have
/// stopped; ties go round the lanes.
#[derive(Debug, Clone)]
pub struct ExecutorClient {
    lanes: Arc<[ExecutorLane]>,
    /// Where the next search for the least busy lane starts (spreads ties).
    next: Arc<AtomicUsize>,
    permits: Arc<Semaphore>,
    max_in_flight: usize,
    /// The longest a call waits for a permit; zero fails at once.
    admission_wait: Duration,
    /// Calls waiting for a permit now. Touched only when no permit is free, so the padding
    /// keeps it off the cache line of the fast path.
    waiting: Arc<CachePadded<AtomicUsize>>,
}

impl ExecutorClient {
    /// Wraps one executor's recipients with an admission bound of `max_in_flight` and no
    /// admission wait.
    pub fn new(
        calls: Recipient<Admitted<Call>>,
        estimates: Recipient<Admitted<EstimateGas>>,
        builds: Recipient<Admitted<BuildBlock>>,
        touched: Recipient<Admitted<GetTouchedSlots>>,
        max_in_flight: usize,
    ) -> Self {
        let lane = ExecutorLane::new(calls, estimates, builds, touched);
        Self::with_lanes(vec![lane], max_in_flight)
    }

    /// A client over several executors (one lane each), with an admission bound of
    /// `max_in_flight` over all of them and no admission wait. Each executor's mailbox must
    /// hold `max_in_flight` messages: the bound then guarantees a send never finds it full.
    ///
    /// # Panics
    /// When `lanes` is empty: a pool has at least one executor.
    pub fn with_lanes(lanes: Vec<ExecutorLane>, max_in_flight: usize) -> Self {
        assert!(!lanes.is_empty(), "an executor pool needs at least one executor");
        Self {
            lanes: lanes.into(),
            next: Default::default(),
            permits: Arc::new(Semaphore::new(max_in_flight)),
            max_in_flight,
            admission_wait: Duration::ZERO,
            waiting: Default::default(),
        }
    }

    /// Lets a call that finds the pool at its bound wait up to `wait` for a slot (zero: fail
    /// at once). A refusal that the client retries at once turns more closed-loop clients than
    /// the bound into a retry storm that takes the CPU the admitted calls need; a wait of a few
    /// milliseconds hands the next free slot to the waiting call instead. A call is refused at
    /// once when its slot is not expected within `wait` (the lanes' service times and the
    /// calls waiting ahead of it say when), and waits beyond `wait` are refused.
    #[must_use]
    pub const fn with_admission_wait(mut self, wait: Duration) -> Self {
        self.admission_wait = wait;
        self
    }

    /// The lane holding the fewest requests among the running executors, counted until the
    /// guard drops; `sampled` requests (calls) feed the lane's service time and go round the
    /// lanes on ties. Block builds (not sampled) take the first of the least busy lanes, so
    /// back-to-back automined blocks run on one warm executor thread instead of alternating
    /// (one sender after 50,000 blocks: 1,657 -> 1,732 tx/s, means of 10 alternating runs:
    /// BENCHMARKS.md).
    fn lane(&self, sampled: bool) -> LaneGuard {
        let n = self.lanes.len();
        let start = if sampled { self.next.fetch_add(1, Relaxed) % n } else { 0 };
        let index = (0..n)
            .map(|i| (start + i) % n)
            .filter(|&i| self.lanes[i].calls.connected())
            .min_by_key(|&i| self.lanes[i].in_flight.load(Relaxed))
            .unwrap_or(start);
        let depth = self.lanes[index].in_flight.fetch_add(1, Relaxed) + 1;
        LaneGuard {
            lanes: Arc::clone(&self.lanes),
            index,
            sent: sampled.then(tokio::time::Instant::now),
            depth: u32::try_from(depth).unwrap_or(u32::MAX),
        }
    }

    /// Sends `request` to the chosen lane with its slot (the permit and the lane's count),
    /// which the executor releases once it has run the request, whether or not the caller
    /// still waits for the answer. The counts stay exact and the mailbox never fills.
    async fn dispatch<M>(
        &self,
        permit: tokio::sync::OwnedSemaphorePermit,
        recipient: impl Fn(&ExecutorLane) -> &Recipient<Admitted<M>>,
        request: M,
        sampled: bool,
    ) -> Result<M::Result, ExecError>
    where
        M: Message + Send + 'static,
        M::Result: Send,
    {
        let lane = self.lane(sampled);
        let to = recipient(&self.lanes[lane.index]);
        // `send` enqueues at once; the caller only waits for the answer.
        let answer = to.send(Admitted { request, _slot: Slot { _permit: permit, lane } });
        Ok(answer.await?)
    }

    /// Runs `call` on the pool. When the pool is at its bound it waits for a slot if one is
    /// expected within the admission wait, at most that long; otherwise it fails with
    /// [`ExecError::Busy`].
    pub async fn call(&self, call: Call) -> Result<CallOutcome, ExecError> {
        let permit = self.admit().await?;
        self.dispatch(permit, |lane| &lane.calls, call, true).await?
    }

    /// Runs an estimate on the pool, admitted as [`call`](Self::call) is.
    pub async fn estimate_gas(&self, estimate: EstimateGas) -> Result<EstimateOutcome, ExecError> {
        let permit = self.admit().await?;
        self.dispatch(permit, |lane| &lane.estimates, estimate, true).await?
    }

    /// Runs a trace on the pool, admitted as [`call`](Self::call) is. Fails with
    /// [`ExecError::Mailbox`] on a pool whose executors serve no traces (a test's stand-in).
    pub async fn trace(
        &self,
        trace: crate::trace::Trace,
    ) -> Result<crate::trace::TraceOutput, ExecError> {
        let permit = self.admit().await?;
        // Not sampled, as block builds: a trace (a replay, often a long one) would inflate the
        // service time that cheap calls are admitted by.
        let lane = self.lane(false);
        let Some(to) = &self.lanes[lane.index].traces else {
            return Err(ExecError::Mailbox(actix::MailboxError::Closed));
        };
        let answer = to.send(Admitted { request: trace, _slot: Slot { _permit: permit, lane } });
        answer.await?
    }

    /// Runs a call that reports the slots it touched, admitted as [`call`](Self::call) is.
    pub async fn touched_slots(&self, request: GetTouchedSlots) -> Result<TouchedSlots, ExecError> {
        let permit = self.admit().await?;
        self.dispatch(permit, |lane| &lane.touched, request, true).await?
    }

    /// Runs an eth_simulateV1 request on the pool, admitted as [`call`](Self::call) is, on a
    /// lane that can simulate (every lane of a real pool can).
    pub async fn simulate(&self, simulate: Simulate) -> Result<Vec<SimulatedBlock>, SimulateError> {
        let permit = self.admit().await?;
        let lane = self.lane(true);
        let Some(to) = &self.lanes[lane.index].simulations else {
            return Err(ExecError::Mailbox(actix::MailboxError::Closed).into());
        };
        let answer = to.send(Admitted { request: simulate, _slot: Slot { _permit: permit, lane } });
        answer.await.map_err(ExecError::from)?
    }

    /// Runs an eth_createAccessList request on the pool, admitted as [`call`](Self::call) is.
    pub async fn create_access_list(
        &self,
        request: CreateAccessList,
    ) -> Result<AccessListOutcome, ExecError> {
        let permit = self.admit().await?;
        let lane = self.lane(true);
        let Some(to) = &self.lanes[lane.index].access_lists else {
            return Err(ExecError::Mailbox(actix::MailboxError::Closed));
        };
        to.send(Admitted { request, _slot: Slot { _permit: permit, lane } }).await?
    }

    /// Builds and seals a block without committing it (testing_buildBlockV1), admitted as
    /// [`call`](Self::call) is: unlike the miner's blocks, a request may be refused.
    pub async fn build_payload(&self, request: BuildPayload) -> Result<BuiltPayload, ExecError> {
        let permit = self.admit().await?;
        let lane = self.lane(false);
        let Some(to) = &self.lanes[lane.index].payloads else {
            return Err(ExecError::Mailbox(actix::MailboxError::Closed));
        };
        to.send(Admitted { request, _slot: Slot { _permit: permit, lane } }).await?
    }

    /// Builds a block. Block building waits for a permit rather than failing: the miner must
    /// not drop a block because calls are busy, but it still never exceeds the bound.
    pub async fn build_block(&self, build: BuildBlock) -> Result<BuiltBlock, ExecError> {
        let permit = Arc::clone(&self.permits)
            .acquire_owned()
            .await
            .map_err(|_| ExecError::Mailbox(actix::MailboxError::Closed))?;
        self.dispatch(permit, |lane| &lane.builds, build, false).await?
    }

    /// The admission bound.
    pub const fn max_in_flight(&self) -> usize {
        self.max_in_flight
    }

    /// Requests currently admitted (queued or running in the pool).
    pub fn in_flight(&self) -> usize {
        self.max_in_flight - self.permits.available_permits()
    }

    /// Calls currently waiting for a slot.
    pub fn waiting(&self) -> usize {
        self.waiting.load(Relaxed)
    }

    /// A permit at once when one is free, else the slow path.
    async fn admit(&self) -> Result<tokio::sync::OwnedSemaphorePermit, ExecError> {
        match Arc::clone(&self.permits).try_acquire_owned() {
            Ok(permit) => Ok(permit),
            Err(_) => self.wait_for_permit().await,
        }
    }

    /// How long a call with `ahead` calls waiting before it would wait for a slot: every
    /// lane frees one per service time, and it needs the `ahead + 1`-th.
    fn expected_wait(&self, ahead: usize) -> Duration {
        // Lanes that have not run anything yet have no service time and do not count.
        let (sum, measured) = self
            .lanes
            .iter()
            .map(|lane| lane.service_nanos.load(Relaxed))
            .filter(|&s| s > 0)
            .fold((0u64, 0u64), |(sum, n), s| (sum.saturating_add(s), n + 1));
        let per_slot = sum / measured.max(1) / self.lanes.len() as u64;
        Duration::from_nanos(per_slot.saturating_mul(ahead as u64 + 1))
    }

    /// Waits for a permit in the semaphore's FIFO queue, so the next slot freed goes to the
    /// call that waited longest, for at most the admission wait, and only when the slot is
    /// expected within it: cheap calls (a slot every few µs) queue up to the cap, while calls
    /// behind slow ones are refused at once instead of waiting for a refusal. The wait stays
    /// short and bounded, and anything beyond it is refused within a few milliseconds.
    async fn wait_for_permit(&self) -> Result<tokio::sync::OwnedSemaphorePermit, ExecError> {
        let busy = ExecError::Busy { max_in_flight: self.max_in_flight };
        if self.admission_wait.is_zero() {
            return Err(busy);
        }
        // Up to one waiting call per slot always waits (a closed-loop client per slot beyond
        // the bound, even while contention slows the calls); more wait only while their slot
        // is expected within the wait.
        let worth = |ahead| {
            ahead < self.max_in_flight
                || (ahead < WAITING_PER_SLOT.saturating_mul(self.max_in_flight)
                    && self.expected_wait(ahead) <= self.admission_wait)
        };
        let Some(_waiting) = Waiting::enter(&self.waiting, worth) else {
            return Err(busy);
        };
        let permit = Arc::clone(&self.permits).acquire_owned();
        match tokio::time::timeout(self.admission_wait, permit).await {
            Ok(Ok(permit)) => Ok(permit),
            Ok(Err(_closed)) => Err(ExecError::Mailbox(actix::MailboxError::Closed)),
            Err(_elapsed) => Err(busy),
        }
    }
}
