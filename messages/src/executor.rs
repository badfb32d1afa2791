//! Messages to the executor pool (`ExecutorActor`s, one per thread) and its client.

use std::sync::Arc;

use actix::{Message, Recipient};
use alloy_consensus::{Header, TxEnvelope};
use alloy_eips::eip2930::AccessList;
use alloy_eips::eip4895::Withdrawal;
use alloy_eips::eip7840::BlobParams;
use alloy_primitives::{Address, B256, Bytes, U256};
use hearth_storage::{BlockDraft, StateDiff};
use revm::primitives::hardfork::SpecId;
use tokio::sync::Semaphore;

use crate::ExecError;

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
    /// Excess blob gas of this block (Cancun on); `None` is zero.
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
    /// Hashes of transactions that failed validation and must leave the pool.
    pub invalid: Vec<B256>,
}

impl Message for BuildBlock {
    type Result = Result<BuiltBlock, ExecError>;
}

/// One executor thread as the client sees it: its recipients and how many requests it holds.
#[derive(Debug)]
pub struct ExecutorLane {
    calls: Recipient<Call>,
    estimates: Recipient<EstimateGas>,
    builds: Recipient<BuildBlock>,
    /// Requests sent to this lane and not answered yet (padded: every RPC worker touches it).
    in_flight: crossbeam_utils::CachePadded<std::sync::atomic::AtomicUsize>,
}

impl ExecutorLane {
    /// The recipients of one executor (or of a stand-in, in tests).
    pub fn new(
        calls: Recipient<Call>,
        estimates: Recipient<EstimateGas>,
        builds: Recipient<BuildBlock>,
    ) -> Self {
        Self { calls, estimates, builds, in_flight: Default::default() }
    }
}

/// Counts a request against its lane until the executor has answered it.
struct LaneGuard {
    lanes: Arc<[ExecutorLane]>,
    index: usize,
}

impl Drop for LaneGuard {
    fn drop(&mut self) {
        self.lanes[self.index].in_flight.fetch_sub(1, std::sync::atomic::Ordering::Relaxed);
    }
}

/// An executor request being answered, with the admission permit and lane count it holds.
/// Normally both are released with the answer. A caller dropped before that hands the request
/// to a task of its own that waits for the answer and only then releases them: the executor
/// still runs the request, so its slot is still taken. (That task exists only on cancellation;
/// spawning one per request cost ~6% of cheap eth_calls.)
struct InFlight<M>
where
    M: Message + Send + 'static,
    M::Result: Send,
{
    request: Option<std::pin::Pin<Box<actix::dev::RecipientRequest<M>>>>,
    held: Option<(tokio::sync::OwnedSemaphorePermit, LaneGuard)>,
}

impl<M> std::future::Future for InFlight<M>
where
    M: Message + Send + 'static,
    M::Result: Send,
{
    type Output = Result<M::Result, actix::MailboxError>;

    fn poll(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Self::Output> {
        let Some(request) = self.request.as_mut() else {
            return std::task::Poll::Ready(Err(actix::MailboxError::Closed));
        };
        let answer = std::task::ready!(request.as_mut().poll(cx));
        self.request = None;
        self.held = None;
        std::task::Poll::Ready(answer)
    }
}

impl<M> Drop for InFlight<M>
where
    M: Message + Send + 'static,
    M::Result: Send,
{
    fn drop(&mut self) {
        if let (Some(request), Some(held)) = (self.request.take(), self.held.take()) {
            actix::spawn(async move {
                let _ = request.await;
                drop(held);
            });
        }
    }
}

/// The bounded front of the executor pool. It holds the bound: at most `max_in_flight`
/// requests are queued or running, and one more fails at once with [`ExecError::Busy`]
/// instead of waiting. Each request goes to the lane (executor thread) holding the fewest,
/// skipping executors that have stopped; ties go round the lanes.
#[derive(Debug, Clone)]
pub struct ExecutorClient {
    lanes: Arc<[ExecutorLane]>,
    /// Where the next search for the least busy lane starts (spreads ties).
    next: Arc<std::sync::atomic::AtomicUsize>,
    permits: Arc<Semaphore>,
    max_in_flight: usize,
}

impl ExecutorClient {
    /// Wraps one executor's recipients with an admission bound of `max_in_flight`.
    pub fn new(
        calls: Recipient<Call>,
        estimates: Recipient<EstimateGas>,
        builds: Recipient<BuildBlock>,
        max_in_flight: usize,
    ) -> Self {
        Self::with_lanes(vec![ExecutorLane::new(calls, estimates, builds)], max_in_flight)
    }

    /// A client over several executors (one lane each), with an admission bound of
    /// `max_in_flight` over all of them. Each executor's mailbox must hold `max_in_flight`
    /// messages: the bound then guarantees a send never finds it full.
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
        }
    }

    /// The lane holding the fewest requests among the running executors, counted until the
    /// guard drops.
    fn lane(&self) -> LaneGuard {
        use std::sync::atomic::Ordering::Relaxed;
        let n = self.lanes.len();
        let start = self.next.fetch_add(1, Relaxed) % n;
        let index = (0..n)
            .map(|i| (start + i) % n)
            .filter(|&i| self.lanes[i].calls.connected())
            .min_by_key(|&i| self.lanes[i].in_flight.load(Relaxed))
            .unwrap_or(start);
        self.lanes[index].in_flight.fetch_add(1, Relaxed);
        LaneGuard { lanes: Arc::clone(&self.lanes), index }
    }

    /// Sends `msg` to the chosen lane, holding the permit and the lane's count until the
    /// executor answers, also when the caller goes away first (a closed socket, a dropped HTTP
    /// request): see [`InFlight`]. The counts stay exact and the mailbox never fills.
    async fn dispatch<M>(
        &self,
        permit: tokio::sync::OwnedSemaphorePermit,
        recipient: impl Fn(&ExecutorLane) -> &Recipient<M>,
        msg: M,
    ) -> Result<M::Result, ExecError>
    where
        M: Message + Send + 'static,
        M::Result: Send,
    {
        let guard = self.lane();
        // `send` enqueues at once; the request only waits for the answer.
        let request = recipient(&self.lanes[guard.index]).send(msg);
        Ok(InFlight { request: Some(Box::pin(request)), held: Some((permit, guard)) }.await?)
    }

    /// Runs `call` on the pool, or fails at once when the pool is at its bound.
    pub async fn call(&self, call: Call) -> Result<CallOutcome, ExecError> {
        let permit = self.admit()?;
        self.dispatch(permit, |lane| &lane.calls, call).await?
    }

    /// Runs an estimate on the pool, or fails at once when the pool is at its bound.
    pub async fn estimate_gas(&self, estimate: EstimateGas) -> Result<EstimateOutcome, ExecError> {
        let permit = self.admit()?;
        self.dispatch(permit, |lane| &lane.estimates, estimate).await?
    }

    /// Builds a block. Block building waits for a permit rather than failing: the miner must
    /// not drop a block because calls are busy, but it still never exceeds the bound.
    pub async fn build_block(&self, build: BuildBlock) -> Result<BuiltBlock, ExecError> {
        let permit = Arc::clone(&self.permits)
            .acquire_owned()
            .await
            .map_err(|_| ExecError::Mailbox(actix::MailboxError::Closed))?;
        self.dispatch(permit, |lane| &lane.builds, build).await?
    }

    /// The admission bound.
    pub const fn max_in_flight(&self) -> usize {
        self.max_in_flight
    }

    /// Requests currently admitted.
    pub fn in_flight(&self) -> usize {
        self.max_in_flight - self.permits.available_permits()
    }

    fn admit(&self) -> Result<tokio::sync::OwnedSemaphorePermit, ExecError> {
        Arc::clone(&self.permits)
            .try_acquire_owned()
            .map_err(|_| ExecError::Busy { max_in_flight: self.max_in_flight })
    }
}
