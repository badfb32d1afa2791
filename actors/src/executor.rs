//! `ExecutorActor`: one revm executor thread of the pool.
//!
//! Owns: a per-thread L1 of analysed code (in front of the shared `CodeCacheActor`) and a
//! read handle to the store. Handles `Call`, `EstimateGas`, `GetTouchedSlots`, `BuildBlock`
//! and `Trace` (in `trace.rs`). Sends `GetCode` / `InsertCode` to the L2. Each executor runs on an arbiter (OS thread) of its own
//! ([`start_pool`]); every sender goes through `ExecutorClient`, which holds the admission
//! bound and sends each request to the executor holding the fewest. Requests arrive wrapped in
//! `Admitted`, whose slot the handler releases as it returns. Its handlers are synchronous and
//! CPU-bound: the thread does nothing else.
//! Restart: stateless apart from caches. A panic while handling a request fails that request
//! (-32603) and resets the caches; the executor and its thread carry on.

use std::sync::Arc;

use alloy_consensus::{Header, Transaction};
use alloy_eips::Typed2718;
use alloy_eips::eip7840::BlobParams;
use alloy_primitives::{Address, B256, TxKind, U256};
use hearth_messages::ExecError;
use hearth_messages::access_list::{AccessListOutcome, CreateAccessList};
use hearth_messages::executor::{
    Admitted, BlockOverrides, BuildBlock, BuiltBlock, Call, CallOutcome, CallRequest, EstimateGas,
    EstimateOutcome, GetTouchedSlots, PooledTx, TouchedSlots,
};
use hearth_messages::payload::{BuildPayload, BuiltPayload};
use hearth_messages::simulate::{Simulate, SimulateError, SimulatedBlock};
use hearth_messages::trace::{BlockForkRules, ForkSchedule, Trace, TraceOutput};
use hearth_storage::ChainDb;
use revm::context::evm::Evm;
use revm::context::result::{
    EVMError, ExecResultAndState, ExecutionResult, HaltReason, InvalidTransaction, Output,
};
use revm::context::{BlockEnv, CfgEnv, Context, LocalContext, TxEnv};
use revm::context_interface::LocalContextTr;
use revm::context_interface::block::BlobExcessGasAndPrice;
use revm::context_interface::either::Either;
use revm::context_interface::local::FrameStack;
use revm::handler::EthFrame;
use revm::handler::instructions::EthInstructions;
use revm::interpreter::interpreter_action::{CallInputs, CallOutcome as FrameCallOutcome};
use revm::interpreter::interpreter_action::{CreateInputs, CreateOutcome};
use revm::primitives::hardfork::SpecId;
use revm::{InspectEvm, MainContext};

use crate::code_cache::{CodeL1, CodeL2};
use crate::exec_db::ExecDb;
use crate::precompiles::MovablePrecompiles;

/// Gas of a plain value transfer.
const TRANSFER_GAS: u64 = 21_000;

/// What every executor thread is configured with.
#[derive(Debug, Clone)]
pub struct ExecConfig {
    /// The chain id transactions must carry, read per call and per block (anvil_setChainId
    /// changes it at runtime).
    pub chain_id: hearth_messages::ChainId,
    /// The hard fork rules.
    pub spec: SpecId,
    /// The most gas an eth_call / eth_estimateGas may use.
    pub gas_cap: u64,
    /// The longest an eth_call / eth_estimateGas run may take (`None`: no cap).
    pub evm_timeout: Option<std::time::Duration>,
    /// The blob schedule of the chain's current fork (an imported chain's blob schedule may
    /// differ from the fork's defaults); `None` uses the fork's defaults.
    pub blob_params: Option<alloy_eips::eip7840::BlobParams>,
    /// Contract code size limit (`None`: the fork's, EIP-170's 24,576 bytes); initcode may be
    /// twice it. anvil's `--code-size-limit`.
    pub code_size_limit: Option<usize>,
    /// When and on how many threads a block runs in parallel (`--exec.parallel`,
    /// `--exec.threads`); see `parallel.rs`.
    pub parallel: crate::parallel::ParallelConfig,
}

/// EIP-7825: the gas limit cap of a transaction from Osaka on (2^24).
const OSAKA_TX_GAS_LIMIT_CAP: u64 = 1 << 24;

/// One executor thread.
#[derive(Debug)]
pub struct ExecutorActor {
    pub(crate) db: ChainDb,
    pub(crate) config: ExecConfig,
    pub(crate) codes: CodeL1,
    /// Snapshot reads of calls, keyed by state root (see `ReadCache`).
    reads: crate::exec_db::ReadCache,
    /// EVM stacks and memory kept from one call to the next (see `EvmScratch`).
    scratch: EvmScratch,
    /// The chain's fork schedule, when its rules change along it (an imported chain): trace
    /// replays run each block under its own rules. `None`: every block under `config.spec`.
    pub(crate) forks: Option<Arc<dyn ForkSchedule>>,
}

impl ExecutorActor {
    /// An executor reading `db`, sharing analysed code through `l2` when given.
    pub fn new(db: ChainDb, config: ExecConfig, l2: Option<CodeL2>) -> Self {
        Self {
            db,
            config,
            codes: CodeL1::new(l2),
            reads: Default::default(),
            scratch: EvmScratch::new(SCRATCH_RETAINED_BYTES),
            forks: None,
        }
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
                    .unwrap_or_else(|| crate::block_exec::default_blob_params(self.config.spec)),
            },
        }
    }

    /// The rules of stored block `block`.
    pub(crate) fn rules_at_block(&self, block: u64) -> Result<BlockForkRules, ExecError> {
        let header = self.db.header(block)?.ok_or(ExecError::UnknownBlock)?;
        Ok(self.rules_at(&header))
    }

    /// The EVM configuration under `rules`: the fork, its blob schedule, the chain id and the
    /// code size limit.
    pub(crate) fn cfg_for(&self, rules: &BlockForkRules) -> CfgEnv {
        let mut cfg = CfgEnv::new_with_spec(rules.spec);
        cfg.chain_id = self.config.chain_id.get();
        cfg.limit_contract_code_size = self.config.code_size_limit;
        if rules.spec.is_enabled_in(SpecId::CANCUN) {
            cfg.max_blobs_per_tx = Some(rules.blob_params.max_blobs_per_tx);
            cfg.blob_base_fee_update_fraction =
                Some(u64::try_from(rules.blob_params.update_fraction).unwrap_or(u64::MAX));
        }
        cfg
    }

    /// The configuration, block environment and transaction eth_call runs `request` with
    /// (`gas` already capped) at block `header`. Shared with debug_traceCall and trace_call.
    pub(crate) fn call_env(
        &self,
        request: &CallRequest,
        header: &Header,
        gas: u64,
    ) -> (CfgEnv, BlockEnv, TxEnv) {
        let rules = self.rules_at(header);
        let mut cfg = self.cfg_for(&rules);
        // eth_call semantics, as geth: no fee unless a price is given, no nonce check unless a
        // nonce is given, calls may come from contract addresses, and the gas cap (not the
        // block's gas limit) bounds the call.
        let priced = request.gas_price.is_some() || request.max_fee_per_gas.is_some();
        cfg.disable_base_fee = !priced;
        cfg.disable_nonce_check = request.nonce.is_none();
        cfg.disable_eip3607 = true;
        cfg.disable_block_gas_limit = true;
        cfg.tx_chain_id_check = false;
        let tx = call_tx_env(request, gas, cfg.chain_id);
        let mut block_env = block_env_of(header, &rules.blob_params);
        if !priced {
            // geth runs an unpriced call with a zero base fee, so BASEFEE reads 0 there.
            block_env.basefee = 0;
        }
        if let Some(o) = &request.block_overrides {
            apply_block_overrides(&mut block_env, o);
        }
        (cfg, block_env, tx)
    }

    /// Runs `request` with `gas` against the post-state of `block`, without committing.
    fn run_call(
        &mut self,
        request: &CallRequest,
        block: u64,
        gas: u64,
    ) -> Result<ExecutionResult, ExecError> {
        self.run_call_then(request, block, gas, |done| done.result)
    }

    /// [`run_call`](Self::run_call), handing `pick` the result with the state the call read
    /// and wrote (accounts and the slots it touched).
    fn run_call_then<T>(
        &mut self,
        request: &CallRequest,
        block: u64,
        gas: u64,
        pick: impl FnOnce(ExecResultAndState<ExecutionResult>) -> T,
    ) -> Result<T, ExecError> {
        let header = self.db.header(block)?.ok_or(ExecError::UnknownBlock)?;
        let (cfg, block_env, tx) = self.call_env(request, &header, gas);
        let view = self.db.state_at(block);
        let root = self.db.state_root_at(block)?.ok_or(ExecError::UnknownBlock)?;
        self.reads.use_root(root);
        let mut db = ExecDb::new(view, &mut self.codes).with_read_cache(&mut self.reads);
        let spec = cfg.spec;
        let mut precompiles = MovablePrecompiles::new(spec);
        if let Some(overrides) = &request.state_overrides {
            precompiles.apply(overrides)?;
            db.apply_overrides(overrides)?;
        }
        let mut ctx = Context::mainnet().with_db(db).with_cfg(cfg).with_block(block_env);
        ctx.local = self.scratch.take_local();
        // Built field by field rather than with `build_mainnet`, which would allocate eight
        // fresh frames (a 32 KiB stack each) for every call; these come from the scratch.
        // (`Context::mainnet` still makes a 4 KiB buffer that the scratch's replaces.)
        let mut evm = Evm {
            ctx,
            inspector: CallGuard::new(self.config.evm_timeout),
            instruction: EthInstructions::new_mainnet_with_spec(spec),
            precompiles,
            frame_stack: self.scratch.take_frames(),
        };
        let result = evm.inspect_tx(tx).map(pick).map_err(exec_error);
        let Evm { ctx, inspector, frame_stack, .. } = evm;
        self.scratch.keep(frame_stack, ctx.local, inspector.max_depth);
        if inspector.expired
            && let Some(timeout) = self.config.evm_timeout
        {
            return Err(ExecError::Timeout { timeout_ms: timeout.as_millis() as u64 });
        }
        result
    }

    /// Runs an eth_call. Public so that benches can drive an executor without an actor system.
    pub fn call(&mut self, msg: Call) -> Result<CallOutcome, ExecError> {
        let cap = self.call_gas_cap(self.rules_at_block(msg.block)?.spec);
        let gas = msg.request.gas.unwrap_or(cap).min(cap);
        let result = self.run_call(&msg.request, msg.block, gas)?;
        Ok(outcome(result))
    }

    /// Runs a call and lists the slots of `msg.account` it read or wrote: revm's state after
    /// the call holds every slot it loaded, reverted or not.
    fn touched_slots(&mut self, msg: GetTouchedSlots) -> Result<TouchedSlots, ExecError> {
        let cap = self.call_gas_cap(self.rules_at_block(msg.block)?.spec);
        let gas = msg.request.gas.unwrap_or(cap).min(cap);
        let (result, mut slots) = self.run_call_then(&msg.request, msg.block, gas, |done| {
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
            && self.run_call(request, msg.block, TRANSFER_GAS).is_ok_and(|r| r.is_success())
        {
            return Ok(EstimateOutcome::Gas(TRANSFER_GAS));
        }
        let first = self.run_call(request, msg.block, hi)?;
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
        match self.run_call(request, block, gas) {
            Ok(result) => Ok(result.is_success()),
            Err(ExecError::Invalid(_)) => Ok(false),
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

    /// Builds a block and seals it with its state root, committing nothing
    /// (testing_buildBlockV1). The root is computed here, on the executor thread, like the
    /// block's execution: it is trie work the RPC front must not do.
    pub fn build_payload(&mut self, msg: BuildPayload) -> Result<BuiltPayload, ExecError> {
        let BuildPayload(mut build) = msg;
        // On a chain whose rules change along it, the block runs under the fork its number and
        // time fall in (a payload may cross a fork boundary the head has not).
        if let Some(forks) = &self.forks
            && build.env.spec.is_none()
        {
            let header = Header {
                number: build.env.number,
                timestamp: build.env.timestamp,
                ..Default::default()
            };
            let rules = forks.rules_for(&header);
            build.env.spec = Some(rules.spec);
            build.env.blob_params = Some(rules.blob_params);
        }
        let withdrawals = build.env.withdrawals.clone();
        let number = build.env.number;
        let BuiltBlock { draft, diff, requests, .. } = self.build_block(build)?;
        let mut header = draft.header;
        header.state_root = hearth_storage::state_root_after(&self.db, number, &diff)?;
        let hash = header.hash_slow();
        let base_fee = header.base_fee_per_gas;
        let mut fees = U256::ZERO;
        let mut cumulative = 0;
        for (tx, receipt) in draft.body.transactions.iter().zip(&draft.receipts) {
            let used = alloy_consensus::TxReceipt::cumulative_gas_used(receipt) - cumulative;
            cumulative += used;
            let tip = tx.effective_tip_per_gas(base_fee.unwrap_or_default()).unwrap_or_default();
            fees += U256::from(tip) * U256::from(used);
        }
        let extras = hearth_storage::BlockExtras { ommers: Vec::new(), withdrawals };
        let block = hearth_storage::SealedBlock {
            header,
            hash,
            body: draft.body,
            receipts: draft.receipts,
            extras,
        };
        Ok(BuiltPayload { block, requests, fees })
    }

    /// Executes a block on top of its parent: the miner's candidates (`BuildMode::Pack`) or a
    /// given block being imported (`BuildMode::Import`). Public so that block import and the
    /// conformance runners execute through exactly this path without an actor system.
    pub fn build_block(&mut self, msg: BuildBlock) -> Result<BuiltBlock, ExecError> {
        crate::block_exec::execute_block(&self.db, &mut self.codes, &self.config, msg)
    }
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
            .with_access_lists(addr.clone().recipient())
            .with_payloads(addr.recipient())
        })
        .collect()
}

impl ExecutorActor {
    /// Runs `work` so that a panic in it (in revm or here) fails this one request instead of
    /// ending the executor's thread, which nothing would restart. The caches are dropped
    /// afterwards: the panic may have left them half-written.
    fn contained<T>(
        &mut self,
        work: impl FnOnce(&mut Self) -> Result<T, ExecError>,
    ) -> Result<T, ExecError> {
        match std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| work(self))) {
            Ok(result) => result,
            Err(panic) => {
                let what = panic
                    .downcast_ref::<&str>()
                    .map(|s| (*s).to_owned())
                    .or_else(|| panic.downcast_ref::<String>().cloned())
                    .unwrap_or_else(|| "no message".to_owned());
                tracing::error!(target: "executor", panic = %what, "request panicked; caches reset");
                self.codes.clear();
                self.reads = Default::default();
                self.scratch = EvmScratch::new(self.scratch.retain_bytes);
                Err(ExecError::Panicked(what))
            }
        }
    }
}

// Each handler marks its request begun (the queue delay and service time admission uses),
// then runs `msg.request`; the rest of `msg`, its place in the pool, drops when the handler
// returns, so the place frees right after the request ran, before the answer is sent.

impl actix::Handler<Admitted<Call>> for ExecutorActor {
    type Result = Result<CallOutcome, ExecError>;

    fn handle(&mut self, mut msg: Admitted<Call>, _ctx: &mut Self::Context) -> Self::Result {
        msg.begin();
        self.contained(|executor| executor.call(msg.request))
    }
}

impl actix::Handler<Admitted<EstimateGas>> for ExecutorActor {
    type Result = Result<EstimateOutcome, ExecError>;

    fn handle(&mut self, mut msg: Admitted<EstimateGas>, _ctx: &mut Self::Context) -> Self::Result {
        msg.begin();
        self.contained(|executor| executor.estimate(msg.request))
    }
}

impl actix::Handler<Admitted<GetTouchedSlots>> for ExecutorActor {
    type Result = Result<TouchedSlots, ExecError>;

    fn handle(
        &mut self,
        mut msg: Admitted<GetTouchedSlots>,
        _ctx: &mut Self::Context,
    ) -> Self::Result {
        msg.begin();
        self.contained(|executor| executor.touched_slots(msg.request))
    }
}

impl actix::Handler<Admitted<Trace>> for ExecutorActor {
    type Result = Result<TraceOutput, ExecError>;

    fn handle(&mut self, mut msg: Admitted<Trace>, _ctx: &mut Self::Context) -> Self::Result {
        msg.begin();
        self.contained(|executor| executor.trace(msg.request))
    }
}

impl actix::Handler<Admitted<Simulate>> for ExecutorActor {
    type Result = Result<Vec<SimulatedBlock>, SimulateError>;

    fn handle(&mut self, mut msg: Admitted<Simulate>, _ctx: &mut Self::Context) -> Self::Result {
        msg.begin();
        self.contained(|executor| Ok(executor.simulate(msg.request)))?
    }
}

impl actix::Handler<Admitted<CreateAccessList>> for ExecutorActor {
    type Result = Result<AccessListOutcome, ExecError>;

    fn handle(
        &mut self,
        mut msg: Admitted<CreateAccessList>,
        _ctx: &mut Self::Context,
    ) -> Self::Result {
        msg.begin();
        self.contained(|executor| executor.create_access_list(msg.request))
    }
}

impl actix::Handler<Admitted<BuildPayload>> for ExecutorActor {
    type Result = Result<BuiltPayload, ExecError>;

    fn handle(
        &mut self,
        mut msg: Admitted<BuildPayload>,
        _ctx: &mut Self::Context,
    ) -> Self::Result {
        msg.begin();
        self.contained(|executor| executor.build_payload(msg.request))
    }
}

impl actix::Handler<Admitted<BuildBlock>> for ExecutorActor {
    type Result = Result<BuiltBlock, ExecError>;

    fn handle(&mut self, mut msg: Admitted<BuildBlock>, _ctx: &mut Self::Context) -> Self::Result {
        msg.begin();
        self.contained(|executor| executor.build_block(msg.request))
    }
}

pub(crate) fn exec_error(error: EVMError<hearth_storage::StorageError>) -> ExecError {
    match error {
        EVMError::Database(e) => ExecError::Storage(e),
        EVMError::Transaction(e) => ExecError::Invalid(geth_message(&e)),
        other => ExecError::Invalid(other.to_string()),
    }
}

/// revm's reason for refusing a call or transaction before running it, in geth's words
/// (core/error.go): client libraries tell these errors apart by their text (ethers and viem
/// look for "insufficient funds", "nonce too low", "intrinsic gas too low", ...). revm's own
/// text for the rest.
pub(crate) fn geth_message(error: &InvalidTransaction) -> String {
    use InvalidTransaction as E;
    match error {
        E::LackOfFundForMaxFee { fee, balance } => {
            format!("insufficient funds for gas * price + value: have {balance} want {fee}")
        }
        E::NonceTooLow { tx, state } => format!("nonce too low: next nonce {state}, tx nonce {tx}"),
        E::NonceTooHigh { tx, state } => {
            format!("nonce too high: next nonce {state}, tx nonce {tx}")
        }
        E::CallGasCostMoreThanGasLimit { initial_gas, gas_limit } => {
            format!("intrinsic gas too low: have {gas_limit}, want {initial_gas}")
        }
        E::GasFloorMoreThanGasLimit { gas_floor, gas_limit } => {
            format!("insufficient gas for floor data gas cost: have {gas_limit}, want {gas_floor}")
        }
        E::GasPriceLessThanBasefee => "max fee per gas less than block base fee".to_owned(),
        // The pool's refusal for the same rule, so an estimate and a send of one transaction
        // say the same thing.
        E::BlobGasPriceGreaterThanMax { block_blob_gas_price, tx_max_fee_per_blob_gas } => {
            hearth_messages::TxError::BlobFeeTooLow {
                cap: *tx_max_fee_per_blob_gas,
                blob_base_fee: *block_blob_gas_price,
            }
            .to_string()
        }
        E::PriorityFeeGreaterThanMaxFee => {
            "max priority fee per gas higher than max fee per gas".to_owned()
        }
        E::CallerGasLimitMoreThanBlock => "exceeds block gas limit".to_owned(),
        E::RejectCallerWithCode => "sender not an eoa".to_owned(),
        E::CreateInitCodeSizeLimit => "max initcode size exceeded".to_owned(),
        E::TxGasLimitGreaterThanCap { gas_limit, cap } => {
            format!("transaction gas limit too high (cap: {cap}, tx: {gas_limit})")
        }
        other => other.to_string(),
    }
}

fn outcome(result: ExecutionResult) -> CallOutcome {
    let gas_used = result.tx_gas_used();
    match result {
        ExecutionResult::Success { output, .. } => {
            let output = match output {
                Output::Call(bytes) | Output::Create(bytes, _) => bytes,
            };
            CallOutcome::Success { output, gas_used }
        }
        ExecutionResult::Revert { output, .. } => CallOutcome::Revert { output, gas_used },
        ExecutionResult::Halt { reason, .. } => {
            CallOutcome::Halt { reason: halt_message(&reason), gas_used }
        }
    }
}

/// geth's wording for the common halts, so clients that match on messages keep working.
pub(crate) fn halt_message(reason: &HaltReason) -> String {
    match reason {
        HaltReason::OutOfGas(_) => "out of gas".to_owned(),
        HaltReason::OpcodeNotFound | HaltReason::InvalidFEOpcode => "invalid opcode".to_owned(),
        HaltReason::StackUnderflow => "stack underflow".to_owned(),
        HaltReason::StackOverflow => "stack limit reached 1024".to_owned(),
        HaltReason::InvalidJump => "invalid jump destination".to_owned(),
        HaltReason::StateChangeDuringStaticCall => "write protection".to_owned(),
        HaltReason::CallTooDeep => "max call depth exceeded".to_owned(),
        HaltReason::OutOfFunds => "insufficient balance for transfer".to_owned(),
        HaltReason::CreateContractSizeLimit => "max code size exceeded".to_owned(),
        HaltReason::CreateCollision => "contract address collision".to_owned(),
        other => format!("{other:?}"),
    }
}

/// Most bytes of EVM stacks and memory an executor thread keeps between calls, so that the
/// next call allocates no stacks or memory buffer: its pooled call frames (a 1024-word stack, 32 KiB, each; revm
/// pools them eight at a time) and the EVM memory buffer. After a call that needed more (a deep
/// call chain, a large memory expansion) the thread drops them and starts the next call with
/// fresh ones, so what a thread holds between calls never exceeds this.
pub const SCRATCH_RETAINED_BYTES: usize = 1 << 20;

/// Bytes one pooled call frame holds: the frame itself and its stack's buffer.
const FRAME_BYTES: usize = size_of::<EthFrame>() + revm::interpreter::STACK_LIMIT * 32;

/// What revm allocates per call and an executor thread reuses: the call frames and the shared
/// memory buffer (`LocalContext`). They carry no state from one call to the next: revm
/// re-initialises a frame before using it, and the buffer is cleared here.
#[derive(Debug)]
struct EvmScratch {
    frames: Option<FrameStack<EthFrame>>,
    local: Option<LocalContext>,
    /// Frames the kept `frames` holds: its high-water mark (revm's pool never shrinks).
    frames_held: usize,
    retain_bytes: usize,
}

impl EvmScratch {
    fn new(retain_bytes: usize) -> Self {
        Self { frames: None, local: None, frames_held: 0, retain_bytes }
    }

    fn take_frames(&mut self) -> FrameStack<EthFrame> {
        self.frames.take().unwrap_or_else(|| FrameStack::new_prealloc(8))
    }

    fn take_local(&mut self) -> LocalContext {
        self.local.take().unwrap_or_default()
    }

    /// Keeps what a call used when it fits the retention bound; `max_depth` is the deepest
    /// frame the call reached (0: the top frame only). The pool holds as many frames as the
    /// deepest call it ever served (revm grows it eight at a time and never shrinks it).
    fn keep(&mut self, frames: FrameStack<EthFrame>, mut local: LocalContext, max_depth: usize) {
        let frames_held = self.frames_held.max((max_depth + 1).next_multiple_of(8));
        let memory = local.shared_memory_buffer().borrow().capacity();
        if frames_held * FRAME_BYTES + memory <= self.retain_bytes {
            local.clear();
            self.frames = Some(frames);
            self.local = Some(local);
            self.frames_held = frames_held;
        } else {
            self.frames_held = 0;
        }
    }
}

/// The inspector every call runs under. It stops a call that runs past its time cap: revm has
/// no clock of its own, so it looks at the time every `CHECK_EVERY` instructions (an
/// `Instant::now` per instruction would cost more than most instructions); once the cap has
/// passed it halts every frame it sees, so the whole call unwinds at once. It also records the
/// deepest frame, which bounds what `EvmScratch` keeps.
#[derive(Debug)]
pub(crate) struct CallGuard {
    at: Option<std::time::Instant>,
    steps: u32,
    /// Whether the cap was reached (every frame since has been halted).
    pub(crate) expired: bool,
    depth: usize,
    max_depth: usize,
}

impl CallGuard {
    const CHECK_EVERY: u32 = 4096;

    fn new(timeout: Option<std::time::Duration>) -> Self {
        Self::until(timeout.map(|t| std::time::Instant::now() + t))
    }

    /// A guard that halts whatever still runs at `deadline` (`None`: never), so that several
    /// transactions can share one time cap (eth_simulateV1).
    pub(crate) const fn until(deadline: Option<std::time::Instant>) -> Self {
        Self { at: deadline, steps: 0, expired: false, depth: 0, max_depth: 0 }
    }

    fn enter(&mut self) {
        // `call` / `create` run for the top frame too, so depth 1 is the top frame.
        self.depth += 1;
        self.max_depth = self.max_depth.max(self.depth.saturating_sub(1));
    }
}

impl<CTX> revm::Inspector<CTX> for CallGuard {
    fn step(&mut self, interp: &mut revm::interpreter::Interpreter, _context: &mut CTX) {
        let Some(at) = self.at else { return };
        self.steps = self.steps.wrapping_add(1);
        if !self.expired
            && self.steps.is_multiple_of(Self::CHECK_EVERY)
            && std::time::Instant::now() >= at
        {
            self.expired = true;
        }
        if self.expired {
            interp.halt(revm::interpreter::InstructionResult::OutOfGas);
        }
    }

    fn call(&mut self, _context: &mut CTX, _inputs: &mut CallInputs) -> Option<FrameCallOutcome> {
        self.enter();
        None
    }

    fn call_end(&mut self, _context: &mut CTX, _inputs: &CallInputs, _out: &mut FrameCallOutcome) {
        self.depth = self.depth.saturating_sub(1);
    }

    fn create(&mut self, _context: &mut CTX, _inputs: &mut CreateInputs) -> Option<CreateOutcome> {
        self.enter();
        None
    }

    fn create_end(&mut self, _context: &mut CTX, _inputs: &CreateInputs, _out: &mut CreateOutcome) {
        self.depth = self.depth.saturating_sub(1);
    }
}

/// Applies an eth_call's block overrides to the environment it runs in.
pub(crate) fn apply_block_overrides(env: &mut BlockEnv, o: &BlockOverrides) {
    if let Some(number) = o.number {
        env.number = U256::from(number);
    }
    if let Some(timestamp) = o.timestamp {
        env.timestamp = U256::from(timestamp);
    }
    if let Some(gas_limit) = o.gas_limit {
        env.gas_limit = gas_limit;
    }
    if let Some(base_fee) = o.base_fee {
        env.basefee = base_fee;
    }
    if let Some(coinbase) = o.coinbase {
        env.beneficiary = coinbase;
    }
    if let Some(prevrandao) = o.prevrandao {
        env.prevrandao = Some(prevrandao);
    }
}

/// The block environment a call at block `header` sees: that block's own header.
/// The block environment of stored block `header`, its blob gas price under `blob_params`
/// (the block's own fork's schedule).
pub(crate) fn block_env_of(header: &Header, blob_params: &BlobParams) -> BlockEnv {
    BlockEnv {
        number: U256::from(header.number),
        beneficiary: header.beneficiary,
        timestamp: U256::from(header.timestamp),
        gas_limit: header.gas_limit,
        basefee: header.base_fee_per_gas.unwrap_or_default(),
        difficulty: header.difficulty,
        prevrandao: Some(header.mix_hash),
        blob_excess_gas_and_price: Some(BlobExcessGasAndPrice::new(
            header.excess_blob_gas.unwrap_or_default(),
            u64::try_from(blob_params.update_fraction).unwrap_or(u64::MAX),
        )),
        ..Default::default()
    }
}

/// The revm transaction eth_call runs for `request`. Its type follows from the fields given,
/// as geth's `ToMessage` decides: authorizations make a type-4 transaction, blob hashes a
/// type-3 one (both with dynamic fees), a fee cap a type-2 one, an access list a type-1 one.
pub(crate) fn call_tx_env(request: &CallRequest, gas: u64, chain_id: u64) -> TxEnv {
    // A gas price given for a dynamic-fee type is both its caps, as geth runs such a call.
    let dynamic = Some(request.max_priority_fee_per_gas.or(request.gas_price).unwrap_or(0));
    let max_fee = request.max_fee_per_gas.or(request.gas_price).unwrap_or(0);
    let legacy_type = if request.access_list.is_some() { 1 } else { 0 };
    let (tx_type, gas_price, priority) = if request.authorization_list.is_some() {
        (4, max_fee, dynamic)
    } else if request.blob_versioned_hashes.is_some() {
        (3, max_fee, dynamic)
    } else {
        match (request.max_fee_per_gas, request.gas_price) {
            (Some(max_fee), _) => (2, max_fee, dynamic),
            (None, Some(price)) => (legacy_type, price, None),
            (None, None) => (legacy_type, 0, None),
        }
    };
    TxEnv {
        tx_type,
        caller: request.from.unwrap_or(Address::ZERO),
        gas_limit: gas,
        gas_price,
        kind: request.to.map_or(TxKind::Create, TxKind::Call),
        value: request.value.unwrap_or_default(),
        data: request.input.clone(),
        nonce: request.nonce.unwrap_or_default(),
        chain_id: Some(chain_id),
        access_list: request.access_list.clone().unwrap_or_default(),
        gas_priority_fee: priority,
        blob_hashes: request.blob_versioned_hashes.clone().unwrap_or_default(),
        max_fee_per_blob_gas: request.max_fee_per_blob_gas.unwrap_or_default(),
        authorization_list: request
            .authorization_list
            .iter()
            .flatten()
            .cloned()
            .map(Either::Left)
            .collect(),
    }
}

/// The revm transaction for a signed, pooled transaction.
pub(crate) fn tx_env(pooled: &PooledTx) -> TxEnv {
    let tx = pooled.tx.as_ref();
    TxEnv {
        tx_type: tx.ty(),
        caller: pooled.sender,
        gas_limit: tx.gas_limit(),
        gas_price: tx.max_fee_per_gas(),
        kind: tx.kind(),
        value: tx.value(),
        data: tx.input().clone(),
        nonce: tx.nonce(),
        chain_id: tx.chain_id(),
        access_list: tx.access_list().cloned().unwrap_or_default(),
        gas_priority_fee: tx.max_priority_fee_per_gas(),
        blob_hashes: tx.blob_versioned_hashes().map(<[B256]>::to_vec).unwrap_or_default(),
        max_fee_per_blob_gas: tx.max_fee_per_blob_gas().unwrap_or_default(),
        authorization_list: tx
            .authorization_list()
            .map(|list| list.iter().cloned().map(Either::Left).collect())
            .unwrap_or_default(),
    }
}

#[cfg(test)]
mod tests {
    use alloy_primitives::{Bytes, address, hex, keccak256};
    use hearth_storage::{
        AccountChange, AccountFields, BlockDraft, StateDiff, StoredBody, write_block,
    };

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
        let db = hearth_storage::ChainWriter::in_memory().expect("store");
        let mut diff = StateDiff::default();
        for (address, code) in contracts.iter().zip([DIRTY, FRESH, HUGE]) {
            let code = Bytes::from(hex::decode(code.replace(' ', "")).expect("hex"));
            let code_hash = keccak256(&code);
            diff.codes.insert(code_hash, code);
            let info = AccountFields { nonce: 1, balance: U256::ZERO, code_hash };
            diff.accounts.insert(
                *address,
                AccountChange {
                    info: Some(info),
                    storage_wiped: false,
                    storage: Default::default(),
                },
            );
        }
        let header = Header { gas_limit: 30_000_000, ..Default::default() };
        let body = StoredBody { transactions: vec![], senders: vec![] };
        write_block(&db, BlockDraft { header, body, receipts: vec![] }, &diff).expect("genesis");
        let config = ExecConfig {
            chain_id: hearth_messages::ChainId::new(1),
            spec: SpecId::PRAGUE,
            gas_cap: 50_000_000,
            evm_timeout: Some(std::time::Duration::from_secs(5)),
            blob_params: None,
            code_size_limit: None,
            parallel: crate::parallel::ParallelConfig::default(),
        };
        (ExecutorActor::new(db.reader(), config, None), contracts)
    }

    fn call(executor: &mut ExecutorActor, to: Address) -> Bytes {
        let request = CallRequest { to: Some(to), ..Default::default() };
        match executor.call(Call { request, block: 0 }).expect("call runs") {
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
        let failed = executor.contained(|_| -> Result<(), ExecError> { panic!("boom") });
        assert!(matches!(&failed, Err(ExecError::Panicked(what)) if what == "boom"), "{failed:?}");
        assert!(executor.scratch.local.is_none(), "caches reset after the panic");
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

    #[test]
    fn a_low_blob_fee_cap_reads_as_the_pools_refusal() {
        let low = InvalidTransaction::BlobGasPriceGreaterThanMax {
            block_blob_gas_price: 2,
            tx_max_fee_per_blob_gas: 1,
        };
        let pool = hearth_messages::TxError::BlobFeeTooLow { cap: 1, blob_base_fee: 2 };
        assert_eq!(geth_message(&low), pool.to_string());
        assert_eq!(
            geth_message(&low),
            "max fee per blob gas less than block blob gas fee: maxFeePerBlobGas 1, blob base fee 2"
        );
    }
}
