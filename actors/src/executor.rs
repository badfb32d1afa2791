//! `ExecutorActor`: one revm executor thread of the pool.
//!
//! - **Owns:** a per-thread L1 of analysed code (in front of the shared `CodeCacheActor`), the
//!   thread's EVM scratch (call frames and memory kept between calls, `exec/scratch.rs`)
//!   and a read handle to the store.
//! - **Takes:** `Admitted<M>` for `Call`, `EstimateGas`, `GetTouchedSlots`, `CreateAccessList`
//!   (`access_list.rs`), `Trace` (`trace.rs`), `Simulate` (`simulate.rs`), `BuildPayload` and
//!   `BuildBlock` (`block_exec.rs`). Every sender goes through `ExecutorClient`, which admits by
//!   latency budget (`hearth_messages::admission`) and sends each request to the executor
//!   holding the fewest; the handler releases the request's slot as it returns.
//! - **Sends:** `GetCode` / `InsertCode` to the L2 (`CodeL2`); nothing else: replies only.
//! - **Mailbox:** `ExecutorClient::mailbox_for` (`--executor.max-queued` + threads + 1, default
//!   1024 + threads + 1): every request admission lets in, plus the miner's block, so a send
//!   never finds it full.
//! - **Restart:** stateless apart from caches. A panic while handling a request fails that
//!   request (-32603) and resets the caches and scratch (its restart), counted in the pool's
//!   `RestartCounter` (`hearth_actor_restarts_total{actor="executor"}`); the executor and its
//!   thread carry on.
//!
//! Each executor runs on an arbiter (OS thread) of its own ([`start_pool`]); its handlers are
//! synchronous and CPU-bound, so the thread does nothing else. What a run needs (its
//! environment, database, scratch, and revm's refusals in geth's words) is the execution
//! kernel's (`exec.rs`); this module decides which runs a request makes.

use std::sync::Arc;

use alloy_consensus::{Header, Transaction};
use alloy_primitives::U256;
use hearth_messages::ExecError;
use hearth_messages::access_list::{AccessListOutcome, CreateAccessList};
use hearth_messages::executor::{
    Admitted, BuildBlock, BuiltBlock, Call, CallMany, CallOutcome, CallRequest, EstimateGas,
    EstimateOutcome, GetTouchedSlots, TouchedSlots,
};
use hearth_messages::fork::misses;
use hearth_messages::payload::{BuildPayload, BuiltPayload};
use hearth_messages::simulate::{Simulate, SimulateError, SimulatedBlock};
use hearth_messages::trace::{BlockForkRules, ForkSchedule, Trace, TraceOutput};
use hearth_storage::ChainDb;
use revm::ExecuteEvm;
use revm::context::evm::Evm;
use revm::context::result::{ExecResultAndState, ExecutionResult};
use revm::context::{BlockEnv, CfgEnv, Context, TxEnv};
use revm::context_interface::JournalTr;
use revm::primitives::hardfork::SpecId;

use crate::exec::{
    CodeL1, CodeL2, ConsoleTap, EvmScratch, ExecConfig, ExecDb, MovablePrecompiles, ReadCache,
    SCRATCH_RETAINED_BYTES, TimeCap, call_env_under, capped_instructions, default_blob_params,
    exec_error, outcome,
};

/// Gas of a plain value transfer.
const TRANSFER_GAS: u64 = 21_000;

/// EIP-7825: the gas limit cap of a transaction from Osaka on (2^24).
const OSAKA_TX_GAS_LIMIT_CAP: u64 = 1 << 24;

/// How much gas a call runs with.
#[derive(Debug, Clone, Copy)]
enum CallGas {
    /// The request's own limit, capped at the call gas cap of the block's rules (read from
    /// the header the call runs on, so the call reads it once).
    Requested,
    /// This much: an estimate's probe, already within the cap.
    Exactly(u64),
}

/// One executor thread.
#[derive(Debug)]
pub struct ExecutorActor {
    pub(crate) db: ChainDb,
    pub(crate) config: ExecConfig,
    pub(crate) codes: CodeL1,
    /// Snapshot reads of calls, keyed by state root (see `ReadCache`).
    reads: ReadCache,
    /// EVM stacks and memory kept from one call or block to the next (see `EvmScratch`).
    pub(crate) scratch: EvmScratch,
    /// The chain's fork schedule, when its rules change along it (an imported chain): trace
    /// replays run each block under its own rules. `None`: every block under `config.spec`.
    pub(crate) forks: Option<Arc<dyn ForkSchedule>>,
    /// Restarts after a panic (shared by the pool's executors, for `/metrics`).
    restarts: crate::supervise::RestartCounter,
    /// A call that runs out of time is run again elsewhere (an inline executor's, `inline`):
    /// it prints nothing, so its console output appears once, from the run that finishes.
    retried_on_expiry: bool,
}

mod inline;
pub use inline::InlineExecutors;

/// Whether a call prints its console.log output, under which RPC method's name.
type Console = Option<&'static str>;

impl ExecutorActor {
    /// Threads a block's work may spread over (`--exec.threads`): parallel execution's
    /// workers, and sender recovery of an imported block.
    pub const fn threads(&self) -> usize {
        self.config.parallel.threads.get()
    }

    /// An executor reading `db`, sharing analysed code through `l2` when given.
    pub fn new(db: ChainDb, config: ExecConfig, l2: Option<CodeL2>) -> Self {
        Self {
            db,
            config,
            codes: CodeL1::new(l2),
            reads: Default::default(),
            scratch: EvmScratch::new(SCRATCH_RETAINED_BYTES),
            forks: None,
            restarts: Default::default(),
            retried_on_expiry: false,
        }
    }

    /// Counts this executor's restarts in `restarts` (one counter for the whole pool).
    #[must_use]
    pub fn with_restart_counter(mut self, restarts: crate::supervise::RestartCounter) -> Self {
        self.restarts = restarts;
        self
    }

    /// Replays (traces) each block under the rules `forks` gives it, instead of the configured
    /// spec: what a node on an imported chain that crossed forks needs.
    #[must_use]
    pub fn with_fork_schedule(mut self, forks: Arc<dyn ForkSchedule>) -> Self {
        self.forks = Some(forks);
        self
    }

    /// Sets how many bytes of EVM stacks and memory this thread keeps between calls
    /// ([`SCRATCH_RETAINED_BYTES`] by default). 0 keeps nothing, so every call allocates its
    /// EVM afresh: the allocation bench (`benches/call_allocs.rs`) compares the two.
    pub fn set_scratch_retention(&mut self, bytes: usize) {
        self.scratch = EvmScratch::new(bytes);
    }

    /// The most gas a call under `spec` may use: `--rpc.gascap`, and from Osaka no more than a
    /// transaction may carry (EIP-7825), as geth does, since revm rejects a call above that cap.
    pub(crate) const fn call_gas_cap(&self, spec: SpecId) -> u64 {
        if spec.is_enabled_in(SpecId::OSAKA) && self.config.gas_cap > OSAKA_TX_GAS_LIMIT_CAP {
            OSAKA_TX_GAS_LIMIT_CAP
        } else {
            self.config.gas_cap
        }
    }

    /// The rules block `header` runs under: its own fork's from the chain's schedule (an
    /// imported chain that crossed forks), else the configured fork's. A call, an estimate or a
    /// trace at block N runs under these, so PUSH0 is invalid at a pre-Shanghai block of a
    /// chain whose head is Osaka, and BLOBBASEFEE uses the block's own update fraction.
    pub(crate) fn rules_at(&self, header: &Header) -> BlockForkRules {
        match &self.forks {
            Some(forks) => forks.rules_for(header),
            None => BlockForkRules {
                spec: self.config.spec,
                blob_params: self
                    .config
                    .blob_params
                    .unwrap_or_else(|| default_blob_params(self.config.spec)),
            },
        }
    }

    /// The configuration, block environment and transaction eth_call runs `request` with
    /// (`gas` already capped) at block `header`. Shared with debug_traceCall and trace_call.
    pub(crate) fn call_env(
        &self,
        request: &CallRequest,
        header: &Header,
        gas: u64,
    ) -> (CfgEnv, BlockEnv, TxEnv) {
        call_env_under(&self.config, &self.rules_at(header), request, header, gas)
    }

    /// Runs `request` with `gas` against the post-state of `block`, without committing.
    fn run_call(
        &mut self,
        request: &CallRequest,
        block: u64,
        gas: u64,
        console: Console,
    ) -> Result<ExecutionResult, ExecError> {
        self.run_call_then(request, block, CallGas::Exactly(gas), console, |done| done.result)
    }

    /// [`run_call`](Self::run_call), handing `pick` the result with the state the call read
    /// and wrote (accounts and the slots it touched).
    fn run_call_then<T>(
        &mut self,
        request: &CallRequest,
        block: u64,
        gas: CallGas,
        console: Console,
        pick: impl FnOnce(ExecResultAndState<ExecutionResult>) -> T,
    ) -> Result<T, ExecError> {
        // One snapshot for the header, the state and its root: a reset between two of these
        // reads would otherwise mix two chains (and key one chain's reads by another's root).
        let pinned = self.db.pinned();
        let header = pinned.header(block)?.ok_or(ExecError::UnknownBlock)?;
        let gas = match gas {
            CallGas::Exactly(gas) => gas,
            CallGas::Requested => {
                let cap = self.call_gas_cap(self.rules_at(&header).spec);
                request.gas.unwrap_or(cap).min(cap)
            }
        };
        let (cfg, block_env, tx) = self.call_env(request, &header, gas);
        let view = pinned.state_at(block);
        let root = pinned.state_root_at(block)?.ok_or(ExecError::UnknownBlock)?;
        self.reads.use_root(root, pinned.generation());
        let mut db = ExecDb::new(view, &mut self.codes)
            .with_read_cache(&mut self.reads)
            .with_time_cap(TimeCap::new(self.config.evm_timeout));
        let spec = cfg.spec;
        let mut precompiles = ConsoleTap::new(MovablePrecompiles::new(spec));
        precompiles.capture(console.is_some() && self.config.show.console_log);
        if let Some(overrides) = &request.state_overrides {
            precompiles.inner.apply(overrides)?;
            db.apply_overrides(overrides)?;
        }
        // Built directly: `Context::mainnet().with_db(db)` would make a journal and a 4 KiB
        // memory buffer only to replace both (the scratch has the buffer), moving the whole
        // context once more on the way (about 2,000 instructions a call).
        let ctx = Context {
            block: block_env,
            tx: TxEnv::default(),
            cfg: CfgEnv::<SpecId>::default(),
            journaled_state: <revm::context::Journal<ExecDb<'_>> as JournalTr>::new(db),
            chain: (),
            local: self.scratch.take_local(),
            error: Ok(()),
        }
        .with_cfg(cfg);
        // Not `build_mainnet`, which allocates eight 32 KiB frames a call: they come from the
        // scratch. No inspector: the capped instructions keep the time cap (exec/time_cap.rs).
        let mut evm = Evm {
            ctx,
            inspector: (),
            instruction: capped_instructions(spec),
            precompiles,
            frame_stack: self.scratch.take_frames(),
        };
        let result = evm.transact(tx).map(pick).map_err(exec_error);
        let Evm { ctx, frame_stack, mut precompiles, .. } = evm;
        let db = &ctx.journaled_state.database;
        let (expired, max_depth) = (db.time_cap_expired(), db.max_call_depth());
        self.scratch.keep(frame_stack, ctx.local, max_depth);
        if let Some(method) = console
            && !(expired && self.retried_on_expiry)
        {
            crate::report::call_printed(&self.config.show, method, precompiles.take());
        }
        if expired && let Some(timeout) = self.config.evm_timeout {
            return Err(ExecError::Timeout { timeout_ms: timeout.as_millis() as u64 });
        }
        result
    }

    /// Runs an eth_call. Public so that benches can drive an executor without an actor system.
    pub fn call(&mut self, msg: &Call) -> Result<CallOutcome, ExecError> {
        let result = self.run_call_then(
            &msg.request,
            msg.block,
            CallGas::Requested,
            Some("eth_call"),
            |done| done.result,
        )?;
        if self.config.show.traces {
            self.print_call_trace(&msg.request, msg.block);
        }
        Ok(outcome(result))
    }

    /// Runs a call and lists the slots of `msg.account` it read or wrote: revm's state after
    /// the call holds every slot it loaded, reverted or not.
    fn touched_slots(&mut self, msg: GetTouchedSlots) -> Result<TouchedSlots, ExecError> {
        let (result, mut slots) =
            self.run_call_then(&msg.request, msg.block, CallGas::Requested, None, |done| {
                let slots: Vec<U256> = done
                    .state
                    .get(&msg.account)
                    .map(|account| account.storage.keys().copied().collect())
                    .unwrap_or_default();
                (done.result, slots)
            })?;
        // The state is a hash map: sort, so the search tries slots in a fixed order (anvil's
        // access list is ordered the same way).
        slots.sort_unstable();
        Ok(TouchedSlots { outcome: outcome(result), slots })
    }

    /// Binary search for the smallest gas limit that succeeds, as geth does.
    fn estimate(&mut self, msg: EstimateGas) -> Result<EstimateOutcome, ExecError> {
        let header = self.db.header(msg.block)?.ok_or(ExecError::UnknownBlock)?;
        let request = &msg.request;
        let cap = self.call_gas_cap(self.rules_at(&header).spec);
        let mut hi = request.gas.unwrap_or(header.gas_limit).min(cap);
        // A plain transfer to an account without code always costs exactly 21,000. Not with
        // authorizations, which may give the callee code (geth's rule too). A transfer that
        // cannot run at 21,000 (an access list's intrinsic gas) takes the search below, whose
        // first run reports any real error.
        if let Some(to) = request.to
            && request.input.is_empty()
            && request.state_overrides.is_none()
            && request.authorization_list.is_none()
            && self.db.state_at(msg.block).code_of(&to)?.is_empty()
            && hi >= TRANSFER_GAS
            && self.run_call(request, msg.block, TRANSFER_GAS, None).is_ok_and(|r| r.is_success())
        {
            return Ok(EstimateOutcome::Gas(TRANSFER_GAS));
        }
        // The first run prints what the call logs to the console; the search's runs would
        // print it again and again.
        let first = self.run_call(request, msg.block, hi, Some("eth_estimateGas"))?;
        if !first.is_success() {
            return Ok(EstimateOutcome::Failed(outcome(first)));
        }
        let used = first.tx_gas_used();
        let mut lo = used.saturating_sub(1);
        // Most calls succeed with what they used plus the 63/64 reserve: try that first.
        let optimistic = (used + 2_300) * 64 / 63;
        if optimistic < hi {
            if self.succeeds_with(request, msg.block, optimistic)? {
                hi = optimistic;
            } else {
                lo = optimistic;
            }
        }
        while lo + 1 < hi {
            let mid = lo + (hi - lo) / 2;
            if self.succeeds_with(request, msg.block, mid)? {
                hi = mid;
            } else {
                lo = mid;
            }
        }
        Ok(EstimateOutcome::Gas(hi))
    }

    /// Whether `request` succeeds with `gas`, for the estimate's search. The call already ran
    /// with more gas, so a refusal before running can only be about this gas: below the
    /// intrinsic gas (which refunds can bring the used gas under, EIP-7702's for instance) or
    /// the EIP-7623 floor. geth counts those as failures too and searches on.
    fn succeeds_with(
        &mut self,
        request: &CallRequest,
        block: u64,
        gas: u64,
    ) -> Result<bool, ExecError> {
        match self.run_call(request, block, gas, None) {
            Ok(result) => Ok(result.is_success()),
            Err(ExecError::Invalid(_) | ExecError::Rejected(_)) => Ok(false),
            Err(other) => Err(other),
        }
    }

    /// Runs an eth_simulateV1 request (see `simulate`). Public so that tests and benches can
    /// drive an executor without an actor system.
    pub fn simulate(&mut self, msg: Simulate) -> Result<Vec<SimulatedBlock>, SimulateError> {
        crate::simulate::simulate(
            &self.db,
            &mut self.codes,
            &self.config,
            self.forks.as_deref(),
            msg,
        )
    }

    /// Runs an eth_callMany request (see `call_many`). Public so that tests can drive an
    /// executor without an actor system.
    pub fn call_many(&mut self, msg: CallMany) -> Result<Vec<Vec<CallOutcome>>, ExecError> {
        // One snapshot for the header and the state (see `run_call_then`).
        let pinned = self.db.pinned();
        let header = pinned.header(msg.block)?.ok_or(ExecError::UnknownBlock)?;
        let rules = self.rules_at(&header);
        let cap = self.call_gas_cap(rules.spec);
        let at = crate::call_many::At { db: &pinned, header: &header, rules, cap };
        crate::call_many::call_many(at, &mut self.codes, &self.config, msg)
    }

    /// Builds a block and seals it with its state root, committing nothing
    /// (testing_buildBlockV1, engine payloads), or checks a received one (`msg.received`,
    /// engine_newPayload). The root is computed here, on the executor thread, like the
    /// block's execution: it is trie work the RPC front must not do.
    pub fn build_payload(&mut self, msg: BuildPayload) -> Result<BuiltPayload, ExecError> {
        let BuildPayload { mut build, received } = msg;
        // On a chain whose rules change along it, the block runs under the fork its number and
        // time fall in (a payload may cross a fork boundary the head has not).
        let at = Header {
            number: build.env.number,
            timestamp: build.env.timestamp,
            ..Default::default()
        };
        let rules = self.rules_at(&at);
        if self.forks.is_some() && build.env.spec.is_none() {
            build.env.spec = Some(rules.spec);
            build.env.blob_params = Some(rules.blob_params);
        }
        if let Some(received) = &received {
            self.check_received_header(&build.parent, received, rules)?;
        }
        let withdrawals = build.env.withdrawals.clone();
        let number = build.env.number;
        let parent_root =
            self.db.state_root_at(build.parent.number)?.unwrap_or(hearth_storage::trie::EMPTY_ROOT);
        let BuiltBlock { mut draft, diff, requests, outputs, console, halts, .. } =
            self.build_block(build)?;
        let touched = std::mem::take(&mut draft.touched);
        let ran = hearth_messages::payload::PayloadRun { outputs, halts, console, touched };
        let state_root = hearth_storage::state_root_after(&self.db, number, &diff)?;
        let (header, extras) = match received {
            Some(received) => {
                crate::block_check::check_derived_fields(&received.header, &draft.header)
                    .map_err(|mismatch| ExecError::Invalid(mismatch.to_string()))?;
                if received.header.state_root != state_root {
                    return Err(ExecError::Invalid(format!(
                        "state root in the header is {}, execution gives {state_root}",
                        received.header.state_root
                    )));
                }
                (received.header, received.extras)
            }
            None => {
                let header = Header { state_root, ..draft.header };
                (header, hearth_storage::BlockExtras { ommers: Vec::new(), withdrawals })
            }
        };
        let hash = header.hash_slow();
        let fees = priority_fees(&draft.body, &draft.receipts, header.base_fee_per_gas);
        let block = hearth_storage::SealedBlock {
            header,
            hash,
            body: draft.body,
            receipts: draft.receipts,
            extras,
        };
        Ok(BuiltPayload {
            block,
            requests,
            fees,
            diff: std::sync::Arc::new(diff),
            parent_root,
            ran,
        })
    }

    /// The header rules a received block must meet against its parent, under `rules`.
    fn check_received_header(
        &self,
        parent: &Header,
        received: &hearth_messages::payload::ReceivedBlock,
        rules: hearth_messages::trace::BlockForkRules,
    ) -> Result<(), ExecError> {
        let fork_rules = crate::block_check::ForkRules {
            spec: rules.spec,
            blob_params: rules.blob_params,
            chain_id: self.config.chain_id.get(),
        };
        let body = (received.extras.ommers.len(), received.has_withdrawals);
        let succession = if received.same_second {
            crate::block_check::Succession::SameSecondAllowed
        } else {
            crate::block_check::Succession::Later
        };
        let header = &received.header;
        if received.dev_leader {
            crate::block_check::validate_dev_header(parent, header, body, &fork_rules)
        } else {
            crate::block_check::validate_header_with(parent, header, body, &fork_rules, succession)
        }
        .map_err(|why| ExecError::Invalid(format!("invalid header: {why}")))
    }

    /// Executes a block on top of its parent: the miner's candidates (`BuildMode::Pack`) or a
    /// given block being imported (`BuildMode::Import`). Public so that block import and the
    /// conformance runners execute through exactly this path without an actor system.
    pub fn build_block(&mut self, msg: BuildBlock) -> Result<BuiltBlock, ExecError> {
        crate::block_exec::execute_block(
            &self.db,
            &mut self.codes,
            &mut self.scratch,
            &self.config,
            msg,
        )
    }
}

/// What a block's transactions pay its fee recipient above the base fee, in wei.
fn priority_fees(
    body: &hearth_storage::StoredBody,
    receipts: &[alloy_consensus::ReceiptEnvelope],
    base_fee: Option<u64>,
) -> U256 {
    let mut fees = U256::ZERO;
    let mut cumulative = 0;
    for (tx, receipt) in body.transactions.iter().zip(receipts) {
        let used = alloy_consensus::TxReceipt::cumulative_gas_used(receipt) - cumulative;
        cumulative += used;
        let tip = tx.effective_tip_per_gas(base_fee.unwrap_or_default()).unwrap_or_default();
        fees += U256::from(tip) * U256::from(used);
    }
    fees
}

impl actix::Actor for ExecutorActor {
    type Context = actix::Context<Self>;
}

/// Starts `threads` executors, each on an arbiter (OS thread) of its own with a mailbox of
/// `mailbox`, and returns their lanes for an `ExecutorClient`. `make` builds each executor on
/// its new thread (so it can also set per-thread things, such as priority).
///
/// Why not actix's `SyncArbiter`: every message to a `SyncArbiter` passes through the actix
/// System thread, which forwards it into the workers' queue, and idle workers spin on that
/// queue with `sched_yield`. Profiled under eth_call load that was a third of the node's CPU;
/// with one arbiter per executor a request goes from the RPC worker straight to its executor.
pub fn start_pool<F>(
    threads: usize,
    mailbox: std::num::NonZeroUsize,
    make: F,
) -> Vec<hearth_messages::executor::ExecutorLane>
where
    F: Fn() -> ExecutorActor + Send + Clone + 'static,
{
    (0..threads.max(1))
        .map(|_| {
            let arbiter = actix::Arbiter::new();
            let make = make.clone();
            let addr =
                <ExecutorActor as actix::Actor>::start_in_arbiter(&arbiter.handle(), move |ctx| {
                    ctx.set_mailbox_capacity(mailbox.get());
                    make()
                });
            hearth_messages::executor::ExecutorLane::new(
                addr.clone().recipient(),
                addr.clone().recipient(),
                addr.clone().recipient(),
                addr.clone().recipient(),
            )
            .with_traces(addr.clone().recipient())
            .with_simulate(addr.clone().recipient())
            .with_call_many(addr.clone().recipient())
            .with_access_lists(addr.clone().recipient())
            .with_payloads(addr.recipient())
        })
        .collect()
}

impl ExecutorActor {
    /// Runs `work` so that a panic in it (in revm or here) fails this one request instead of
    /// ending the executor's thread, which nothing would restart. The caches are dropped
    /// afterwards: the panic may have left them half-written. With `collect`, fork reads that
    /// miss the cache do not wait (`fork::misses`): when the run had any, its answer is
    /// [`ExecError::ForkMisses`], for the pool's client to fetch them and send it again.
    fn contained<T>(
        &mut self,
        collect: bool,
        work: impl FnOnce(&mut Self) -> Result<T, ExecError>,
    ) -> Result<T, ExecError> {
        let run = |executor: &mut Self| {
            std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| work(executor)))
        };
        let (caught, missed) =
            if collect { misses::collect(|| run(self)) } else { (run(self), None) };
        let result = match caught {
            Ok(result) => result,
            Err(panic) => {
                let what = panic
                    .downcast_ref::<&str>()
                    .map(|s| (*s).to_owned())
                    .or_else(|| panic.downcast_ref::<String>().cloned())
                    .unwrap_or_else(|| "no message".to_owned());
                self.restarts.bump();
                tracing::error!(target: "executor", panic = %what, restarts = self.restarts.get(), "request panicked; caches reset");
                self.codes.clear();
                self.reads = Default::default();
                self.scratch = EvmScratch::new(self.scratch.retain_bytes);
                Err(ExecError::Panicked(what))
            }
        };
        match missed {
            Some(misses) => {
                // The run read stand-ins for what it missed, and the read cache keeps reads.
                self.reads.clear();
                Err(ExecError::ForkMisses(misses))
            }
            None => result,
        }
    }
}

// Each handler marks its request begun (the queue delay and service time admission uses),
// then runs `msg.request`; the rest of `msg`, its place in the pool, drops when the handler
// returns, so the place frees right after the request ran, before the answer is sent.

impl actix::Handler<Admitted<Call>> for ExecutorActor {
    type Result = Result<CallOutcome, ExecError>;

    fn handle(&mut self, mut msg: Admitted<Call>, _ctx: &mut Self::Context) -> Self::Result {
        msg.begin()?;
        let collect = msg.collects_misses();
        self.contained(collect, |executor| executor.call(&msg.request))
    }
}

impl actix::Handler<Admitted<CallMany>> for ExecutorActor {
    type Result = Result<Vec<Vec<CallOutcome>>, ExecError>;

    fn handle(&mut self, mut msg: Admitted<CallMany>, _ctx: &mut Self::Context) -> Self::Result {
        msg.begin()?;
        let collect = msg.collects_misses();
        self.contained(collect, |executor| executor.call_many(msg.request))
    }
}

impl actix::Handler<Admitted<EstimateGas>> for ExecutorActor {
    type Result = Result<EstimateOutcome, ExecError>;

    fn handle(&mut self, mut msg: Admitted<EstimateGas>, _ctx: &mut Self::Context) -> Self::Result {
        msg.begin()?;
        let collect = msg.collects_misses();
        self.contained(collect, |executor| executor.estimate(msg.request))
    }
}

impl actix::Handler<Admitted<GetTouchedSlots>> for ExecutorActor {
    type Result = Result<TouchedSlots, ExecError>;

    fn handle(
        &mut self,
        mut msg: Admitted<GetTouchedSlots>,
        _ctx: &mut Self::Context,
    ) -> Self::Result {
        msg.begin()?;
        let collect = msg.collects_misses();
        self.contained(collect, |executor| executor.touched_slots(msg.request))
    }
}

impl actix::Handler<Admitted<Trace>> for ExecutorActor {
    type Result = Result<TraceOutput, ExecError>;

    fn handle(&mut self, mut msg: Admitted<Trace>, _ctx: &mut Self::Context) -> Self::Result {
        msg.begin()?;
        let collect = msg.collects_misses();
        self.contained(collect, |executor| executor.trace(msg.request))
    }
}

impl actix::Handler<Admitted<Simulate>> for ExecutorActor {
    type Result = Result<Vec<SimulatedBlock>, SimulateError>;

    fn handle(&mut self, mut msg: Admitted<Simulate>, _ctx: &mut Self::Context) -> Self::Result {
        msg.begin()?;
        let collect = msg.collects_misses();
        self.contained(collect, |executor| Ok(executor.simulate(msg.request)))?
    }
}

impl actix::Handler<Admitted<CreateAccessList>> for ExecutorActor {
    type Result = Result<AccessListOutcome, ExecError>;

    fn handle(
        &mut self,
        mut msg: Admitted<CreateAccessList>,
        _ctx: &mut Self::Context,
    ) -> Self::Result {
        msg.begin()?;
        let collect = msg.collects_misses();
        self.contained(collect, |executor| executor.create_access_list(msg.request))
    }
}

impl actix::Handler<Admitted<BuildPayload>> for ExecutorActor {
    type Result = Result<BuiltPayload, ExecError>;

    fn handle(
        &mut self,
        mut msg: Admitted<BuildPayload>,
        _ctx: &mut Self::Context,
    ) -> Self::Result {
        msg.begin()?;
        let collect = msg.collects_misses();
        self.contained(collect, |executor| executor.build_payload(msg.request))
    }
}

impl actix::Handler<Admitted<BuildBlock>> for ExecutorActor {
    type Result = Result<BuiltBlock, ExecError>;

    fn handle(&mut self, mut msg: Admitted<BuildBlock>, _ctx: &mut Self::Context) -> Self::Result {
        msg.begin()?;
        let collect = msg.collects_misses();
        self.contained(collect, |executor| executor.build_block(msg.request))
    }
}

/// A chain whose genesis holds `contracts` (address and code in hex, spaces allowed), read
/// under Prague with a 50M gas cap and a 5 s time cap, for the executors' tests.
#[cfg(test)]
fn test_chain<'a>(
    contracts: impl IntoIterator<Item = (alloy_primitives::Address, &'a str)>,
) -> (ChainDb, ExecConfig) {
    use alloy_primitives::{Bytes, U256, hex, keccak256};
    use hearth_storage::{
        AccountChange, AccountFields, BlockDraft, StateDiff, StoredBody, write_block,
    };
    let db = hearth_storage::ChainWriter::in_memory().expect("store");
    let mut diff = StateDiff::default();
    for (address, code) in contracts {
        let code = Bytes::from(hex::decode(code.replace(' ', "")).expect("hex"));
        let code_hash = keccak256(&code);
        diff.codes.insert(code_hash, code);
        let info = AccountFields { nonce: 1, balance: U256::ZERO, code_hash };
        let change =
            AccountChange { info: Some(info), storage_wiped: false, storage: Default::default() };
        diff.accounts.insert(address, change);
    }
    let header = alloy_consensus::Header { gas_limit: 30_000_000, ..Default::default() };
    let body = StoredBody { transactions: vec![], senders: vec![] };
    write_block(&db, BlockDraft { header, body, receipts: vec![], touched: Vec::new() }, &diff)
        .expect("genesis");
    let config = ExecConfig {
        chain_id: hearth_messages::ChainId::new(1),
        spec: SpecId::PRAGUE,
        gas_cap: 50_000_000,
        evm_timeout: Some(std::time::Duration::from_secs(5)),
        blob_params: None,
        code_size_limit: None,
        parallel: crate::exec::ParallelConfig::default(),
        show: crate::exec::Show::default(),
    };
    (db.reader(), config)
}

#[cfg(test)]
mod tests {
    use alloy_primitives::{Address, Bytes, address};

    use super::*;

    /// Writes 0xff…ff to memory word 0 and returns it.
    const DIRTY: &str =
        "7fffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff60005260206000f3";
    /// Returns (mload(0), msize after it): fresh memory reads zero and is one word long.
    const FRESH: &str = "600051600052596020526040 6000f3";
    /// Touches byte 2 MiB of memory (more than the scratch may keep) and stops.
    const HUGE: &str = "600162200000 5300";

    fn executor() -> (ExecutorActor, [Address; 3]) {
        let contracts = [
            address!("00000000000000000000000000000000000000d1"),
            address!("00000000000000000000000000000000000000f2"),
            address!("0000000000000000000000000000000000000b16"),
        ];
        let (db, config) = test_chain(contracts.iter().copied().zip([DIRTY, FRESH, HUGE]));
        (ExecutorActor::new(db, config, None), contracts)
    }

    fn call(executor: &mut ExecutorActor, to: Address) -> Bytes {
        let request = CallRequest { to: Some(to), ..Default::default() };
        match executor.call(&Call { request, block: 0 }).expect("call runs") {
            CallOutcome::Success { output, .. } => output,
            other => panic!("call to {to} failed: {other:?}"),
        }
    }

    #[test]
    fn reused_scratch_leaks_nothing_between_calls() {
        let (mut executor, [dirty, fresh, _]) = executor();
        let clean = call(&mut executor, fresh);
        assert_eq!(call(&mut executor, dirty), Bytes::from([0xff; 32]));
        assert!(executor.scratch.local.is_some(), "a small call's scratch is kept");
        // The memory the previous call left dirty reads as zero, and is one word long.
        assert_eq!(call(&mut executor, fresh), clean);
        assert_eq!(clean[..32], [0; 32]);
        assert_eq!(U256::from_be_slice(&clean[32..]), U256::from(32));
    }

    #[test]
    fn a_panicking_request_fails_alone_and_the_executor_carries_on() {
        let (mut executor, [dirty, fresh, _]) = executor();
        call(&mut executor, dirty);
        let failed = executor.contained(false, |_| -> Result<(), ExecError> { panic!("boom") });
        assert!(matches!(&failed, Err(ExecError::Panicked(what)) if what == "boom"), "{failed:?}");
        assert!(executor.scratch.local.is_none(), "caches reset after the panic");
        assert_eq!(executor.restarts.get(), 1, "the restart is counted");
        let output = call(&mut executor, fresh);
        assert_eq!(output[..32], [0; 32], "the next call runs normally");
    }

    #[test]
    fn scratch_beyond_the_retention_bound_is_dropped() {
        let (mut executor, [_, fresh, huge]) = executor();
        call(&mut executor, fresh);
        assert!(executor.scratch.frames.is_some());
        call(&mut executor, huge);
        assert!(executor.scratch.frames.is_none(), "2 MiB of memory is more than it may keep");
        assert!(executor.scratch.local.is_none());
        // The next call starts afresh and keeps its (small) scratch again.
        call(&mut executor, fresh);
        assert!(executor.scratch.local.is_some());
    }
}
