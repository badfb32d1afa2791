//! eth_simulateV1 on one executor thread: a chain of simulated blocks on top of a stored one.
//!
//! Follows execution-apis and geth (whose answers hive's rpc-compat suite records): the blocks
//! are put in order and gaps in their numbers filled with empty blocks; each block's header
//! starts from its parent (fee recipient, gas limit and difficulty carry over from block to
//! block, the time advances 12 s unless set); state overrides (with `movePrecompileToAddress`)
//! apply before the block's calls; the block runs the chain's block-level rules (EIP-4788 and
//! EIP-2935 system calls, withdrawals, EIP-7685 requests, pre-merge rewards) around its calls;
//! and it is sealed with real roots: the state root over the simulated state (our trie, through
//! `state_root_after`), transactions (the calls as unsigned transactions) and receipts. The
//! state carries from one block to the next in one `ExecDb` overlay; nothing is written.
//!
//! A call that cannot be a transaction here (nonce, fees, funds, intrinsic gas, a block without
//! the gas it asks for) fails the whole request with its -38xxx code; a call that runs and
//! reverts or halts is a result with status 0. Without `validation` the base fee is zero unless
//! overridden and nonces are not checked. The RPC gas cap is a budget the calls share. The EVM
//! time cap (`--rpc.evm-timeout`) bounds the whole request.

use std::time::Instant;

use alloy_consensus::transaction::RlpEcdsaEncodableTx;
use alloy_consensus::{
    Header, Receipt, ReceiptEnvelope, Signed, TxEip1559, TxEip4844, TxEip4844Variant, TxEip7702,
    TxEnvelope, TxLegacy,
};
use alloy_eips::eip1559::INITIAL_BASE_FEE;
use alloy_eips::eip2718::Encodable2718;
use alloy_eips::eip2930::AccessList;
use alloy_eips::eip2935::HISTORY_STORAGE_ADDRESS;
use alloy_eips::eip4788::BEACON_ROOTS_ADDRESS;
use alloy_eips::eip4844::DATA_GAS_PER_BLOB;
use alloy_eips::eip4895::Withdrawal;
use alloy_eips::eip6110::DEPOSIT_REQUEST_TYPE;
use alloy_eips::eip7002::{WITHDRAWAL_REQUEST_PREDEPLOY_ADDRESS, WITHDRAWAL_REQUEST_TYPE};
use alloy_eips::eip7251::{CONSOLIDATION_REQUEST_PREDEPLOY_ADDRESS, CONSOLIDATION_REQUEST_TYPE};
use alloy_eips::eip7685::Requests;
use alloy_eips::eip7702::SignedAuthorization;
use alloy_eips::eip7840::BlobParams;
use alloy_primitives::{
    Address, B256, Bloom, Bytes, Log, LogData, Signature, TxKind, U256, address, b256, keccak256,
};
use hearth_messages::ExecError;
use hearth_messages::simulate::{
    MAX_SIMULATE_BLOCKS, SimBlock, SimBlockOverrides, SimCall, SimCallError, SimCallResult, SimLog,
    Simulate, SimulateError, SimulatedBlock, TIMESTAMP_INCREMENT,
};
use hearth_messages::trace::ForkSchedule;
use hearth_storage::trie::ordered_root;
use hearth_storage::{BlockExtras, ChainDb, SealedBlock, StoredBody, receipts_root};
use revm::context::evm::Evm;
use revm::context::result::{EVMError, ExecutionResult, InvalidTransaction, Output};
use revm::context::{BlockEnv, CfgEnv, Context, TxEnv};
use revm::context_interface::block::BlobExcessGasAndPrice;
use revm::context_interface::either::Either;
use revm::context_interface::local::FrameStack;
use revm::handler::SystemCallCommitEvm;
use revm::handler::instructions::EthInstructions;
use revm::interpreter::interpreter_action::{
    CallInputs, CallOutcome, CallScheme, CallValue, CreateInputs, CreateOutcome,
};
use revm::primitives::hardfork::SpecId;
use revm::{InspectCommitEvm, Inspector, MainContext};

use crate::exec::{
    CodeL1, ConsoleTap, ExecConfig, ExecDb, MovablePrecompiles, TimeCap, blob_fraction,
    block_reward, capped_instructions, default_blob_params, deposit_requests, excess_blob_gas,
    exec_error, halt_message, withdrawals_root,
};

/// ERC-7528: the address ether `Transfer` logs are attributed to.
const TRANSFER_LOG_ADDRESS: Address = address!("eeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeee");
/// keccak256("Transfer(address,address,uint256)").
const TRANSFER_TOPIC: B256 =
    b256!("ddf252ad1be2c89b69c2b068fc378daa952ba7f163c4a11628f55a4df523b3ef");
/// One gwei in wei (withdrawal amounts are in gwei).
const GWEI: u64 = 1_000_000_000;

/// The inspector simulated calls run under (their time cap is kept by capped instructions,
/// `exec::capped_instructions`): geth's simulate log tracer: each frame's logs are kept until
/// the frame ends and dropped if it failed, and with `trace_transfers` every ether movement
/// (call value, create endowment, self-destruct balance) is logged as an ERC-7528 `Transfer`
/// where it happens. Log indexes count every log captured in the block, dropped ones included,
/// as geth's do.
#[derive(Debug)]
pub(crate) struct SimInspector {
    trace_transfers: bool,
    /// The logs of each open frame; the first is the transaction's.
    frames: Vec<Vec<SimLog>>,
    /// Per open create frame: where its endowment's `Transfer` log sits in its own frame,
    /// to receive the created address when the frame ends.
    creates: Vec<Option<usize>>,
    /// Logs captured so far in the block: the next log's index.
    count: u64,
}

impl SimInspector {
    fn new(trace_transfers: bool) -> Self {
        Self { trace_transfers, frames: Vec::new(), creates: Vec::new(), count: 0 }
    }

    /// Starts a new block: log indexes start again at 0.
    fn start_block(&mut self) {
        self.count = 0;
    }

    /// The logs of the transaction that just ran (none when it failed).
    fn take_logs(&mut self) -> Vec<SimLog> {
        self.creates.clear();
        let logs = if self.frames.is_empty() { Vec::new() } else { self.frames.swap_remove(0) };
        self.frames.clear();
        logs
    }

    fn capture(&mut self, log: Log) {
        if let Some(frame) = self.frames.last_mut() {
            frame.push(SimLog { log, index: self.count });
            self.count += 1;
        }
    }

    fn transfer_log(from: Address, to: Address, value: U256) -> Log {
        let topics = vec![TRANSFER_TOPIC, from.into_word(), to.into_word()];
        let data = Bytes::copy_from_slice(&value.to_be_bytes::<32>());
        Log { address: TRANSFER_LOG_ADDRESS, data: LogData::new_unchecked(topics, data) }
    }

    /// Ends the innermost frame: its logs join its parent's when it succeeded; the
    /// transaction's own frame stays, emptied when the transaction failed.
    fn end_frame(&mut self, succeeded: bool) {
        if self.frames.len() > 1 {
            let logs = self.frames.pop().unwrap_or_default();
            if succeeded && let Some(parent) = self.frames.last_mut() {
                parent.extend(logs);
            }
        } else if !succeeded && let Some(top) = self.frames.first_mut() {
            top.clear();
        }
    }
}

impl<CTX> Inspector<CTX> for SimInspector {
    fn log(&mut self, _context: &mut CTX, log: Log) {
        self.capture(log);
    }

    fn call(&mut self, _context: &mut CTX, inputs: &mut CallInputs) -> Option<CallOutcome> {
        self.frames.push(Vec::new());
        // geth logs value moved by CALL only: DELEGATECALL moves none and CALLCODE moves it
        // from the caller to itself.
        if self.trace_transfers
            && inputs.scheme == CallScheme::Call
            && let CallValue::Transfer(value) = inputs.value
            && !value.is_zero()
        {
            self.capture(Self::transfer_log(inputs.caller, inputs.target_address, value));
        }
        None
    }

    fn call_end(&mut self, _context: &mut CTX, _inputs: &CallInputs, outcome: &mut CallOutcome) {
        self.end_frame(outcome.result.is_ok());
    }

    fn create(&mut self, _context: &mut CTX, inputs: &mut CreateInputs) -> Option<CreateOutcome> {
        self.frames.push(Vec::new());
        let mut pending = None;
        if self.trace_transfers && !inputs.value().is_zero() {
            // The new address is known when the frame ends; the log keeps its place.
            pending = Some(0);
            self.capture(Self::transfer_log(inputs.caller(), Address::ZERO, inputs.value()));
        }
        self.creates.push(pending);
        None
    }

    fn create_end(
        &mut self,
        _context: &mut CTX,
        inputs: &CreateInputs,
        outcome: &mut CreateOutcome,
    ) {
        if let Some(Some(position)) = self.creates.pop()
            && let (Some(created), Some(frame)) = (outcome.address, self.frames.last_mut())
            && let Some(entry) = frame.get_mut(position)
        {
            let from = inputs.caller();
            entry.log = Self::transfer_log(from, created, inputs.value());
        }
        self.end_frame(outcome.result.is_ok());
    }

    fn selfdestruct(&mut self, contract: Address, target: Address, value: U256) {
        if self.trace_transfers && !value.is_zero() {
            self.capture(Self::transfer_log(contract, target, value));
        }
    }
}

/// A block's place in the chain before it runs: number and time ordered and gap-filled.
struct Planned {
    block: SimBlock,
    number: u64,
    time: u64,
}

/// Puts the blocks in order as geth's `sanitizeChain` does: numbers default to the previous
/// block's plus one and must increase (a gap is filled with empty blocks 12 s apart), times
/// default to the previous block's plus 12 s and must increase, and the whole chain may
/// reach at most [`MAX_SIMULATE_BLOCKS`] blocks past the base.
fn plan(base: &Header, blocks: Vec<SimBlock>) -> Result<Vec<Planned>, SimulateError> {
    let mut planned = Vec::with_capacity(blocks.len());
    let (mut previous_number, mut previous_time) = (base.number, base.timestamp);
    for block in blocks {
        let number = block.overrides.number.unwrap_or(previous_number.saturating_add(1));
        if number <= previous_number {
            return Err(SimulateError::BlockNumberOrder { number, previous: previous_number });
        }
        if number - base.number > MAX_SIMULATE_BLOCKS {
            return Err(SimulateError::TooManyBlocks);
        }
        for gap in previous_number + 1..number {
            previous_time = previous_time.saturating_add(TIMESTAMP_INCREMENT);
            planned.push(Planned { block: SimBlock::default(), number: gap, time: previous_time });
        }
        let time = match block.overrides.time {
            Some(time) if time <= previous_time => {
                return Err(SimulateError::TimestampOrder { time, previous: previous_time });
            }
            Some(time) => time,
            None => previous_time.saturating_add(TIMESTAMP_INCREMENT),
        };
        previous_number = number;
        previous_time = time;
        planned.push(Planned { block, number, time });
    }
    Ok(planned)
}

/// The fork rules of a simulated block at `number` and `time` whose difficulty would be
/// `difficulty` before the merge: the chain's schedule for it when the chain's rules change
/// along it (an imported chain), else the executor's.
fn rules_at(
    config: &ExecConfig,
    forks: Option<&dyn ForkSchedule>,
    number: u64,
    time: u64,
    difficulty: U256,
) -> (SpecId, BlobParams) {
    match forks {
        Some(forks) => {
            let header = Header { number, timestamp: time, difficulty, ..Default::default() };
            let rules = forks.rules_for(&header);
            (rules.spec, rules.blob_params)
        }
        None => {
            let params = config.blob_params.unwrap_or_else(|| default_blob_params(config.spec));
            (config.spec, params)
        }
    }
}

/// The revm environment of one simulated call, and what geth would check.
struct CallPlan {
    tx: TxEnv,
    /// The call as it appears in the block: an unsigned transaction.
    envelope: TxEnvelope,
    /// Its consensus encoding (geth's for unsigned legacy transactions: v, r, s all zero).
    encoded: Vec<u8>,
    sender: Address,
    gas: u64,
    /// Fee fields all zero: without validation, geth skips the base fee check then.
    zero_fees: bool,
}

/// Fills `call`'s defaults as geth's `sanitizeCall` and `CallDefaults` do and builds the
/// transaction it stands for (geth's `ToTransaction` with the dynamic-fee type as default).
fn plan_call(
    call: &SimCall,
    nonce: u64,
    gas: u64,
    chain_id: u64,
    london: bool,
) -> Result<CallPlan, SimulateError> {
    if let Some(have) = call.chain_id
        && have != chain_id
    {
        return Err(SimulateError::ChainIdMismatch { have, want: chain_id });
    }
    let sender = call.from.unwrap_or_default();
    let fields = TxFields {
        call,
        nonce,
        gas,
        chain_id,
        value: call.value.unwrap_or_default(),
        kind: call.to.map_or(TxKind::Create, TxKind::Call),
        access_list: call.access_list.clone().unwrap_or_default(),
        max_fee: call.max_fee_per_gas.unwrap_or_default(),
        tip: call.max_priority_fee_per_gas.unwrap_or_default(),
    };
    let mut tx = TxEnv {
        caller: sender,
        gas_limit: gas,
        kind: fields.kind,
        value: fields.value,
        data: call.input.clone(),
        nonce,
        chain_id: Some(chain_id),
        access_list: fields.access_list.clone(),
        ..Default::default()
    };
    // Before London a call has a gas price (zero by default); from London on it has 1559
    // fee fields (zero by default) unless it names a gas price.
    let (envelope, encoded, zero_fees) =
        if let Some(price) = call.gas_price.or((!london).then_some(0)) {
            fields.legacy(&mut tx, price)
        } else if let Some(hashes) = &call.blob_versioned_hashes {
            fields.blob(&mut tx, hashes)?
        } else if let Some(authorizations) = &call.authorization_list {
            fields.set_code(&mut tx, authorizations)?
        } else {
            fields.dynamic(&mut tx)
        };
    Ok(CallPlan { tx, envelope, encoded, sender, gas, zero_fees })
}

/// What every transaction type a simulated call may stand for takes from it. Each builder
/// sets its type's fields of the call's revm transaction and gives the unsigned transaction
/// (v, r and s zero), its encoding, and whether its fee fields are all zero.
struct TxFields<'c> {
    call: &'c SimCall,
    nonce: u64,
    gas: u64,
    chain_id: u64,
    value: U256,
    kind: TxKind,
    access_list: AccessList,
    max_fee: u128,
    tip: u128,
}

/// An unsigned transaction, its encoding, and whether its fee fields are all zero.
type Unsigned = (TxEnvelope, Vec<u8>, bool);

/// The signature of an unsigned transaction: v, r and s zero.
const UNSIGNED: Signature = Signature::new(U256::ZERO, U256::ZERO, false);

impl TxFields<'_> {
    /// A legacy transaction (type 1 with an access list) at gas price `price`.
    fn legacy(self, tx: &mut TxEnv, price: u128) -> Unsigned {
        tx.tx_type = if self.call.access_list.is_some() { 1 } else { 0 };
        tx.gas_price = price;
        let legacy = TxLegacy {
            chain_id: None,
            nonce: self.nonce,
            gas_price: price,
            gas_limit: self.gas,
            to: self.kind,
            value: self.value,
            input: self.call.input.clone(),
        };
        let encoded = unsigned_legacy_encoding(&legacy);
        let hash = keccak256(&encoded);
        (TxEnvelope::Legacy(Signed::new_unchecked(legacy, UNSIGNED, hash)), encoded, price == 0)
    }

    /// Sets the dynamic fees of a type-2, 3 or 4 transaction.
    fn dynamic_fees(&self, tx: &mut TxEnv, tx_type: u8) {
        tx.tx_type = tx_type;
        tx.gas_price = self.max_fee;
        tx.gas_priority_fee = Some(self.tip);
    }

    /// Whether the dynamic fee fields are all zero.
    const fn zero_fees(&self) -> bool {
        self.max_fee == 0 && self.tip == 0
    }

    /// An EIP-4844 transaction carrying blobs `hashes` (it cannot create).
    fn blob(self, tx: &mut TxEnv, hashes: &[B256]) -> Result<Unsigned, SimulateError> {
        let TxKind::Call(to) = self.kind else { return Err(SimulateError::BlobCreate) };
        let blob_fee = self.call.max_fee_per_blob_gas.unwrap_or_default();
        self.dynamic_fees(tx, 3);
        tx.blob_hashes = hashes.to_vec();
        tx.max_fee_per_blob_gas = blob_fee;
        let zero_fees = self.zero_fees();
        let blob = TxEip4844 {
            chain_id: self.chain_id,
            nonce: self.nonce,
            gas_limit: self.gas,
            max_fee_per_gas: self.max_fee,
            max_priority_fee_per_gas: self.tip,
            to,
            value: self.value,
            access_list: self.access_list,
            blob_versioned_hashes: hashes.to_vec(),
            max_fee_per_blob_gas: blob_fee,
            input: self.call.input.clone(),
        };
        let signed = alloy_consensus::SignableTransaction::into_signed(
            TxEip4844Variant::TxEip4844(blob),
            UNSIGNED,
        );
        let envelope = TxEnvelope::Eip4844(signed);
        let encoded = envelope.encoded_2718();
        Ok((envelope, encoded, zero_fees))
    }

    /// An EIP-7702 transaction with `authorizations` (it cannot create).
    fn set_code(
        self,
        tx: &mut TxEnv,
        authorizations: &[SignedAuthorization],
    ) -> Result<Unsigned, SimulateError> {
        let TxKind::Call(to) = self.kind else { return Err(SimulateError::SetCodeCreate) };
        self.dynamic_fees(tx, 4);
        tx.authorization_list = authorizations.iter().cloned().map(Either::Left).collect();
        let zero_fees = self.zero_fees();
        let set_code = TxEip7702 {
            chain_id: self.chain_id,
            nonce: self.nonce,
            gas_limit: self.gas,
            max_fee_per_gas: self.max_fee,
            max_priority_fee_per_gas: self.tip,
            to,
            value: self.value,
            access_list: self.access_list,
            authorization_list: authorizations.to_vec(),
            input: self.call.input.clone(),
        };
        let envelope = TxEnvelope::Eip7702(alloy_consensus::SignableTransaction::into_signed(
            set_code, UNSIGNED,
        ));
        let encoded = envelope.encoded_2718();
        Ok((envelope, encoded, zero_fees))
    }

    /// An EIP-1559 transaction: what a call without a gas price, blobs or authorizations
    /// stands for.
    fn dynamic(self, tx: &mut TxEnv) -> Unsigned {
        self.dynamic_fees(tx, 2);
        let zero_fees = self.zero_fees();
        let dynamic = TxEip1559 {
            chain_id: self.chain_id,
            nonce: self.nonce,
            gas_limit: self.gas,
            max_fee_per_gas: self.max_fee,
            max_priority_fee_per_gas: self.tip,
            to: self.kind,
            value: self.value,
            access_list: self.access_list,
            input: self.call.input.clone(),
        };
        let envelope = TxEnvelope::Eip1559(alloy_consensus::SignableTransaction::into_signed(
            dynamic, UNSIGNED,
        ));
        let encoded = envelope.encoded_2718();
        (envelope, encoded, zero_fees)
    }
}

/// An unsigned legacy transaction as geth encodes it: its fields, then v, r and s as zero.
fn unsigned_legacy_encoding(tx: &TxLegacy) -> Vec<u8> {
    let payload_length = tx.rlp_encoded_fields_length() + 3;
    let mut out = Vec::with_capacity(payload_length + 4);
    alloy_rlp::Header { list: true, payload_length }.encode(&mut out);
    tx.rlp_encode_fields(&mut out);
    out.extend_from_slice(&[alloy_rlp::EMPTY_STRING_CODE; 3]);
    out
}

/// geth's nonce checks, which it makes before any other (revm checks fees first): equal to
/// the sender's nonce, and below the highest nonce (EIP-2681).
fn check_nonce(sender: Address, nonce: u64, state: u64, gas: u64) -> Result<(), SimulateError> {
    let reason = if nonce > state {
        InvalidTransaction::NonceTooHigh { tx: nonce, state }
    } else if nonce < state {
        InvalidTransaction::NonceTooLow { tx: nonce, state }
    } else if state == u64::MAX {
        InvalidTransaction::NonceOverflowInTransaction
    } else {
        return Ok(());
    };
    Err(SimulateError::InvalidCall { reason, sender, gas })
}

/// The base fee of a block after `parent` by EIP-1559 (the initial base fee after a
/// pre-London parent).
fn next_base_fee(parent: &Header) -> u64 {
    hearth_messages::base_fee::next_base_fee(parent).unwrap_or(INITIAL_BASE_FEE)
}

type SimEvm<'a> = Evm<
    Context<BlockEnv, TxEnv, CfgEnv, ExecDb<'a>>,
    SimInspector,
    EthInstructions<
        revm::interpreter::interpreter::EthInterpreter,
        Context<BlockEnv, TxEnv, CfgEnv, ExecDb<'a>>,
    >,
    ConsoleTap<MovablePrecompiles>,
    revm::handler::EthFrame,
>;

/// Runs a simulation. See the module docs.
pub(crate) fn simulate(
    db: &ChainDb,
    codes: &mut CodeL1,
    config: &ExecConfig,
    forks: Option<&dyn ForkSchedule>,
    msg: Simulate,
) -> Result<Vec<SimulatedBlock>, SimulateError> {
    let base = db.header(msg.base)?.ok_or(ExecError::UnknownBlock)?;
    let planned = plan(&base, msg.blocks)?;
    let deadline = config.evm_timeout.map(|timeout| Instant::now() + timeout);
    let spec = config.spec;
    let exec_db = ExecDb::new(db.state_at(msg.base), codes).with_time_cap(TimeCap::until(deadline));
    let instruction = capped_instructions(spec);
    let mut evm: SimEvm<'_> = Evm {
        ctx: Context::mainnet().with_db(exec_db).with_cfg(CfgEnv::new_with_spec(spec)),
        inspector: SimInspector::new(msg.trace_transfers),
        instruction,
        precompiles: ConsoleTap::new(MovablePrecompiles::new(spec)),
        frame_stack: FrameStack::new_prealloc(8),
    };
    let mut run = Run {
        db,
        config,
        validation: msg.validation,
        budget: msg.gas_budget,
        deadline_ms: config.evm_timeout.map(|t| t.as_millis() as u64),
        base: msg.base,
    };
    // The header fields each block starts from: the previous block's (geth's makeHeaders).
    let mut carried = (base.beneficiary, base.gas_limit, base.difficulty);
    let mut parent = base;
    let mut out = Vec::with_capacity(planned.len());
    for Planned { block, number, time } in planned {
        // The time cap bounds the sealing too (state roots over a growing overlay), not only
        // the EVM: past it, no further block starts.
        if deadline.is_some_and(|deadline| Instant::now() >= deadline) {
            let timeout_ms = run.deadline_ms.unwrap_or_default();
            return Err(ExecError::Timeout { timeout_ms }.into());
        }
        let o = &block.overrides;
        // geth's makeHeaders: the difficulty carries over until the merge, then is zero.
        let (spec, blob_params) = rules_at(config, forks, number, time, carried.2);
        let merged = spec.is_enabled_in(SpecId::MERGE);
        carried = (
            o.fee_recipient.unwrap_or(carried.0),
            o.gas_limit.unwrap_or(carried.1),
            o.difficulty.unwrap_or(if merged { U256::ZERO } else { carried.2 }),
        );
        // The block's own rules: its EVM's instructions and state-clearing rule follow them.
        evm.instruction = capped_instructions(spec);
        evm.ctx
            .journaled_state
            .database
            .set_clear_empty(spec.is_enabled_in(SpecId::SPURIOUS_DRAGON));
        let (coinbase, gas_limit, difficulty) = carried;
        let place = Place { number, time, coinbase, gas_limit, difficulty, spec, blob_params };
        let sealed = run.block(&mut evm, &parent, block, &place)?;
        evm.ctx.journaled_state.database.set_block_hash(number, sealed.block.hash);
        parent = sealed.block.header.clone();
        out.push(sealed);
    }
    Ok(out)
}

/// What stays the same over a simulation's blocks.
struct Run<'d> {
    db: &'d ChainDb,
    config: &'d ExecConfig,
    validation: bool,
    /// Gas the calls may still use together.
    budget: u64,
    deadline_ms: Option<u64>,
    base: u64,
}

/// A simulated block's place in the chain: its number and time, the header fields it carries
/// from its parent (fee recipient, gas limit, difficulty: geth's makeHeaders) and its fork's
/// rules.
struct Place {
    number: u64,
    time: u64,
    coinbase: Address,
    gas_limit: u64,
    difficulty: U256,
    spec: SpecId,
    blob_params: BlobParams,
}

impl Place {
    /// Whether the block's rules include `fork`'s.
    fn is(&self, fork: SpecId) -> bool {
        self.spec.is_enabled_in(fork)
    }
}

/// The header fields of a simulated block that follow from its parent and its overrides.
struct Opening {
    parent_hash: B256,
    base_fee: Option<u64>,
    excess_blob_gas: Option<u64>,
    prevrandao: B256,
    beacon_root: Option<B256>,
    withdrawals: Vec<Withdrawal>,
}

/// What a simulated block's calls accumulate: its body, the calls' encodings, receipts and
/// results, the logs of those that succeeded (for the deposit requests), its gas and bloom.
struct SimBody {
    body: StoredBody,
    encodings: Vec<Vec<u8>>,
    receipts: Vec<ReceiptEnvelope>,
    results: Vec<SimCallResult>,
    all_logs: Vec<Log>,
    gas_used: u64,
    blob_gas_used: u64,
    logs_bloom: Bloom,
}

impl SimBody {
    fn with_room(calls: usize) -> Self {
        Self {
            body: StoredBody { transactions: Vec::new(), senders: Vec::new() },
            encodings: Vec::with_capacity(calls),
            receipts: Vec::with_capacity(calls),
            results: Vec::with_capacity(calls),
            all_logs: Vec::new(),
            gas_used: 0,
            blob_gas_used: 0,
            logs_bloom: Bloom::ZERO,
        }
    }
}

impl Run<'_> {
    /// Runs one block at `place` on top of `parent` and seals it.
    fn block(
        &mut self,
        evm: &mut SimEvm<'_>,
        parent: &Header,
        block: SimBlock,
        place: &Place,
    ) -> Result<SimulatedBlock, SimulateError> {
        let SimBlock { overrides: o, state_overrides, calls } = block;
        let opening = self.opening(parent, &o, place);
        self.configure(evm, &o, place, &opening);
        evm.precompiles = ConsoleTap::new(MovablePrecompiles::new(place.spec));
        evm.precompiles.inner.apply(&state_overrides).map_err(ExecError::from)?;
        evm.ctx.journaled_state.database.apply_overrides(&state_overrides)?;
        evm.inspector.start_block();
        system_calls_before(evm, place, &opening)?;
        // After the system calls: each simulated call prints its own console output.
        evm.precompiles.capture(self.config.show.console_log);
        let mut out = SimBody::with_room(calls.len());
        for call in &calls {
            let (plan, state_nonce) = self.prepare(evm, call, place, out.gas_used)?;
            let ran = self.execute(evm, &plan, state_nonce);
            let printed = evm.precompiles.take();
            crate::report::call_printed(&self.config.show, "eth_simulateV1", printed);
            self.record(evm, place, plan, ran?, &mut out)?;
        }
        let requests = after_calls(evm, place, &opening.withdrawals, &out.all_logs)?;
        // The system calls run under the cap too, and one it stopped reports no error of its
        // own (its writes or requests are left out): the cap is asked before sealing.
        self.within_cap(evm)?;
        self.seal(evm, place, opening, out, &requests)
    }

    /// An error when the time cap stopped what ran (`exec::capped_instructions`).
    fn within_cap(&self, evm: &SimEvm<'_>) -> Result<(), SimulateError> {
        if evm.ctx.journaled_state.database.time_cap_expired() {
            let timeout_ms = self.deadline_ms.unwrap_or_default();
            return Err(ExecError::Timeout { timeout_ms }.into());
        }
        Ok(())
    }

    /// The header fields the block at `place` takes from `parent` and its overrides `o`.
    fn opening(&self, parent: &Header, o: &SimBlockOverrides, place: &Place) -> Opening {
        let cancun = place.is(SpecId::CANCUN);
        let base_fee = place
            .is(SpecId::LONDON)
            .then(|| o.base_fee.unwrap_or(if self.validation { next_base_fee(parent) } else { 0 }));
        let excess_blob_gas = cancun.then(|| {
            if parent.excess_blob_gas.is_some() {
                excess_blob_gas(parent, &place.blob_params)
            } else {
                0
            }
        });
        let withdrawals = if place.is(SpecId::SHANGHAI) {
            o.withdrawals.clone().unwrap_or_default()
        } else {
            Vec::new()
        };
        Opening {
            parent_hash: parent.hash_slow(),
            base_fee,
            excess_blob_gas,
            prevrandao: o.prev_randao.unwrap_or_default(),
            beacon_root: cancun.then(|| o.beacon_root.unwrap_or_default()),
            withdrawals,
        }
    }

    /// Sets `evm`'s configuration and block environment for the block at `place`.
    fn configure(
        &self,
        evm: &mut SimEvm<'_>,
        o: &SimBlockOverrides,
        place: &Place,
        opening: &Opening,
    ) {
        let blob_params = &place.blob_params;
        let mut cfg = CfgEnv::new_with_spec(place.spec);
        cfg.chain_id = self.config.chain_id.get();
        cfg.limit_contract_code_size = self.config.code_size_limit;
        cfg.disable_eip3607 = true;
        cfg.disable_block_gas_limit = true;
        cfg.tx_gas_limit_cap = Some(u64::MAX);
        cfg.disable_nonce_check = !self.validation;
        if place.is(SpecId::CANCUN) {
            cfg.max_blobs_per_tx = Some(blob_params.max_blobs_per_tx);
            cfg.blob_base_fee_update_fraction = Some(blob_fraction(blob_params));
        }
        evm.ctx.cfg = cfg;
        evm.ctx.block = BlockEnv {
            number: U256::from(place.number),
            beneficiary: place.coinbase,
            timestamp: U256::from(place.time),
            gas_limit: place.gas_limit,
            basefee: opening.base_fee.unwrap_or_default(),
            difficulty: place.difficulty,
            prevrandao: place.difficulty.is_zero().then_some(opening.prevrandao),
            blob_excess_gas_and_price: opening.excess_blob_gas.map(|excess| {
                BlobExcessGasAndPrice {
                    excess_blob_gas: excess,
                    blob_gasprice: o
                        .blob_base_fee
                        .unwrap_or_else(|| blob_params.calc_blob_fee(excess)),
                }
            }),
            ..Default::default()
        };
    }

    /// `call`'s plan as the block's next transaction (after `gas_used` of the block's gas),
    /// once geth's checks of its gas and nonce pass; with the sender's nonce in the state.
    fn prepare(
        &self,
        evm: &mut SimEvm<'_>,
        call: &SimCall,
        place: &Place,
        gas_used: u64,
    ) -> Result<(CallPlan, u64), SimulateError> {
        let remaining = place.gas_limit - gas_used;
        let asked = call.gas.unwrap_or(remaining);
        if remaining < asked {
            return Err(SimulateError::BlockGasLimit { remaining, required: asked });
        }
        let gas = asked.min(self.budget);
        let sender = call.from.unwrap_or_default();
        let state_nonce = revm::Database::basic(&mut evm.ctx.journaled_state.database, sender)?
            .map_or(0, |a| a.nonce);
        let nonce = call.nonce.unwrap_or(state_nonce);
        if self.validation {
            check_nonce(sender, nonce, state_nonce, gas)?;
        }
        let london = place.is(SpecId::LONDON);
        let mut plan = plan_call(call, nonce, gas, self.config.chain_id.get(), london)?;
        if !self.validation && nonce == u64::MAX {
            // revm refuses the highest nonce even unchecked; geth runs such a call (the
            // nonce is not checked) and wraps the sender's nonce. The transaction keeps
            // its nonce; revm, which does not read it unchecked, gets one below.
            plan.tx.nonce = u64::MAX - 1;
        }
        Ok((plan, state_nonce))
    }

    /// Runs `plan` and commits it, with the logs geth's log tracer kept of it. A call that
    /// cannot be a transaction fails the whole request.
    fn execute(
        &self,
        evm: &mut SimEvm<'_>,
        plan: &CallPlan,
        state_nonce: u64,
    ) -> Result<(ExecutionResult, Vec<SimLog>), SimulateError> {
        // Without validation, geth skips the base fee check for calls without fees.
        evm.ctx.cfg.disable_base_fee = !self.validation && plan.zero_fees;
        let result = match evm.inspect_tx_commit(plan.tx.clone()) {
            Ok(result) => result,
            Err(EVMError::Transaction(e)) => {
                return Err(SimulateError::InvalidCall {
                    reason: e,
                    sender: plan.sender,
                    gas: plan.gas,
                });
            }
            Err(other) => return Err(exec_error(other).into()),
        };
        let logs = evm.inspector.take_logs();
        self.within_cap(evm)?;
        // geth increments a nonce with wrap-around where revm saturates: a call from an
        // account at the highest nonce leaves it at zero there.
        if state_nonce == u64::MAX && plan.tx.kind.is_call() {
            evm.ctx.journaled_state.database.set_nonce(plan.sender, 0)?;
        }
        Ok((result, logs))
    }

    /// Adds the call that ran (`plan`, `result` with the logs kept of it) to the block: its
    /// gas out of the request's budget, its receipt, result and transaction.
    fn record(
        &mut self,
        evm: &mut SimEvm<'_>,
        place: &Place,
        plan: CallPlan,
        (result, logs): (ExecutionResult, Vec<SimLog>),
        out: &mut SimBody,
    ) -> Result<(), SimulateError> {
        let used = result.tx_gas_used();
        if used > self.budget {
            return Err(SimulateError::GasBudgetExhausted { need: used, remaining: self.budget });
        }
        self.budget -= used;
        out.gas_used += used;
        out.blob_gas_used += plan.tx.blob_hashes.len() as u64 * DATA_GAS_PER_BLOB;
        let max_used_gas = result.gas().total_gas_spent().max(used);
        let (success, receipt_logs, return_data, error) = call_result(result);
        if success {
            out.all_logs.extend(receipt_logs.iter().cloned());
        }
        // Before Byzantium (EIP-658) a receipt carries the state root after its call.
        let status = if place.is(SpecId::BYZANTIUM) {
            alloy_consensus::Eip658Value::Eip658(success)
        } else {
            let diff = evm.ctx.journaled_state.database.diff_so_far();
            let root = hearth_storage::state_root_after(self.db, self.base + 1, &diff)?;
            alloy_consensus::Eip658Value::PostState(root)
        };
        let receipt = Receipt { status, cumulative_gas_used: out.gas_used, logs: receipt_logs };
        let receipt = ReceiptEnvelope::from_typed(plan.envelope.tx_type(), receipt.with_bloom());
        out.logs_bloom.accrue_bloom(&alloy_consensus::TxReceipt::bloom(&receipt));
        out.receipts.push(receipt);
        out.results.push(SimCallResult { return_data, logs, gas_used: used, max_used_gas, error });
        out.encodings.push(plan.encoded);
        out.body.senders.push(plan.sender);
        out.body.transactions.push(plan.envelope);
        Ok(())
    }

    /// Seals the block at `place`: its state root over the simulated state, its header and
    /// hash.
    fn seal(
        &self,
        evm: &mut SimEvm<'_>,
        place: &Place,
        opening: Opening,
        out: SimBody,
        requests: &Requests,
    ) -> Result<SimulatedBlock, SimulateError> {
        let diff = evm.ctx.journaled_state.database.diff_so_far();
        let state_root = hearth_storage::state_root_after(self.db, self.base + 1, &diff)?;
        let Opening { parent_hash, base_fee, excess_blob_gas, prevrandao, beacon_root, .. } =
            opening;
        let header = Header {
            parent_hash,
            ommers_hash: alloy_consensus::constants::EMPTY_OMMER_ROOT_HASH,
            beneficiary: place.coinbase,
            state_root,
            transactions_root: ordered_root(
                out.encodings.into_iter().enumerate().map(|(i, tx)| (alloy_rlp::encode(i), tx)),
            ),
            receipts_root: receipts_root(&out.receipts),
            logs_bloom: out.logs_bloom,
            difficulty: place.difficulty,
            number: place.number,
            gas_limit: place.gas_limit,
            gas_used: out.gas_used,
            timestamp: place.time,
            extra_data: Bytes::new(),
            mix_hash: prevrandao,
            nonce: Default::default(),
            base_fee_per_gas: base_fee,
            withdrawals_root: place
                .is(SpecId::SHANGHAI)
                .then(|| withdrawals_root(&opening.withdrawals)),
            blob_gas_used: place.is(SpecId::CANCUN).then_some(out.blob_gas_used),
            excess_blob_gas,
            parent_beacon_block_root: beacon_root,
            requests_hash: place.is(SpecId::PRAGUE).then(|| requests.requests_hash()),
            ..Default::default()
        };
        let hash = header.hash_slow();
        let extras = BlockExtras { ommers: Vec::new(), withdrawals: opening.withdrawals };
        let block = SealedBlock { header, hash, body: out.body, receipts: out.receipts, extras };
        Ok(SimulatedBlock { block, calls: out.results })
    }
}

/// A call's outcome as eth_simulateV1 reports it: whether it succeeded, its logs, the data it
/// returned (none for a failed call: geth puts the revert data in the error) and its error.
fn call_result(result: ExecutionResult) -> (bool, Vec<Log>, Bytes, Option<SimCallError>) {
    match result {
        ExecutionResult::Success { logs, output, .. } => {
            let data = match output {
                Output::Call(bytes) | Output::Create(bytes, _) => bytes,
            };
            (true, logs, data, None)
        }
        ExecutionResult::Revert { logs, output, .. } => {
            (false, logs, Bytes::new(), Some(SimCallError::Reverted(output)))
        }
        ExecutionResult::Halt { logs, reason, .. } => {
            (false, logs, Bytes::new(), Some(SimCallError::Halted(halt_message(&reason))))
        }
    }
}

/// The system calls that open a simulated block: EIP-4788 (the beacon root, from Cancun) and
/// EIP-2935 (the parent's hash, from Prague), each only when its contract has code.
fn system_calls_before(
    evm: &mut SimEvm<'_>,
    place: &Place,
    opening: &Opening,
) -> Result<(), SimulateError> {
    if place.is(SpecId::CANCUN)
        && let Some(root) = opening.beacon_root
        && evm.ctx.journaled_state.database.has_code(BEACON_ROOTS_ADDRESS)?
    {
        evm.system_call_commit(BEACON_ROOTS_ADDRESS, Bytes::copy_from_slice(root.as_slice()))
            .map_err(exec_error)?;
    }
    if place.is(SpecId::PRAGUE)
        && evm.ctx.journaled_state.database.has_code(HISTORY_STORAGE_ADDRESS)?
    {
        let parent_hash = Bytes::copy_from_slice(opening.parent_hash.as_slice());
        evm.system_call_commit(HISTORY_STORAGE_ADDRESS, parent_hash).map_err(exec_error)?;
    }
    Ok(())
}

/// What a simulated block runs after its calls: `withdrawals` (Shanghai on), requests (Prague
/// on: the deposits in `logs`, and the EIP-7002 and EIP-7251 system calls, which add nothing
/// when they fail) and the pre-merge reward. The block's requests.
fn after_calls(
    evm: &mut SimEvm<'_>,
    place: &Place,
    withdrawals: &[Withdrawal],
    logs: &[Log],
) -> Result<Requests, SimulateError> {
    let exec_db = &mut evm.ctx.journaled_state.database;
    if place.is(SpecId::SHANGHAI) {
        for withdrawal in withdrawals {
            let amount = U256::from(withdrawal.amount) * U256::from(GWEI);
            exec_db.credit(withdrawal.address, amount)?;
        }
    }
    let mut requests = Requests::default();
    if place.is(SpecId::PRAGUE) {
        requests.push_request_with_type(DEPOSIT_REQUEST_TYPE, deposit_requests(logs)?);
        for (address, kind) in [
            (WITHDRAWAL_REQUEST_PREDEPLOY_ADDRESS, WITHDRAWAL_REQUEST_TYPE),
            (CONSOLIDATION_REQUEST_PREDEPLOY_ADDRESS, CONSOLIDATION_REQUEST_TYPE),
        ] {
            if !evm.ctx.journaled_state.database.has_code(address)? {
                continue;
            }
            let result = evm.system_call_commit(address, Bytes::new()).map_err(exec_error)?;
            if let ExecutionResult::Success { output: Output::Call(data), .. } = result {
                requests.push_request_with_type(kind, data);
            }
        }
    }
    let reward = block_reward(place.spec);
    if !place.difficulty.is_zero() && !reward.is_zero() {
        evm.ctx.journaled_state.database.credit(place.coinbase, reward)?;
    }
    Ok(requests)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn block(number: Option<u64>, time: Option<u64>) -> SimBlock {
        let mut block = SimBlock::default();
        block.overrides.number = number;
        block.overrides.time = time;
        block
    }

    #[test]
    fn blocks_are_ordered_and_gaps_filled_as_geth_does() {
        let base = Header { number: 10, timestamp: 100, ..Default::default() };
        let planned = plan(&base, vec![block(None, None), block(Some(14), None)]).expect("plan");
        let placed: Vec<(u64, u64)> = planned.iter().map(|p| (p.number, p.time)).collect();
        assert_eq!(placed, [(11, 112), (12, 124), (13, 136), (14, 148)]);
        let err = plan(&base, vec![block(Some(12), None), block(Some(12), None)]);
        assert!(matches!(err, Err(SimulateError::BlockNumberOrder { number: 12, previous: 12 })));
        let err = plan(&base, vec![block(None, Some(100))]);
        assert!(matches!(err, Err(SimulateError::TimestampOrder { time: 100, previous: 100 })));
        assert!(plan(&base, vec![block(Some(10 + MAX_SIMULATE_BLOCKS), None)]).is_ok());
        let err = plan(&base, vec![block(Some(11 + MAX_SIMULATE_BLOCKS), None)]);
        assert!(matches!(err, Err(SimulateError::TooManyBlocks)));
    }

    #[test]
    fn an_unsigned_legacy_call_encodes_with_zero_v_r_s() {
        let tx = TxLegacy {
            chain_id: None,
            nonce: 3,
            gas_price: 7,
            gas_limit: 21_000,
            to: TxKind::Call(Address::repeat_byte(1)),
            value: U256::from(5),
            input: Bytes::new(),
        };
        let encoded = unsigned_legacy_encoding(&tx);
        let header = alloy_rlp::Header::decode(&mut encoded.as_slice()).expect("a list");
        assert!(header.list);
        // The last three fields, v, r and s, are empty strings (zero).
        assert_eq!(&encoded[encoded.len() - 3..], &[alloy_rlp::EMPTY_STRING_CODE; 3]);
        assert_eq!(header.payload_length + header.length(), encoded.len());
    }

    #[test]
    fn geths_nonce_checks_come_first() {
        let sender = Address::repeat_byte(9);
        let rule = |nonce, state| match check_nonce(sender, nonce, state, 21_000) {
            Err(SimulateError::InvalidCall { reason, .. }) => Some(reason),
            _ => None,
        };
        assert_eq!(rule(1, 0), Some(InvalidTransaction::NonceTooHigh { tx: 1, state: 0 }));
        assert_eq!(rule(0, 1), Some(InvalidTransaction::NonceTooLow { tx: 0, state: 1 }));
        assert_eq!(rule(u64::MAX, u64::MAX), Some(InvalidTransaction::NonceOverflowInTransaction));
        assert_eq!(rule(4, 4), None);
    }
}
