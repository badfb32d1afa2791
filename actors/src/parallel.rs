//! Parallel block execution: one speculative round on several threads, then validation and
//! commit in block order, with exactly the results of sequential execution.
//!
//! How a block runs when it is executed in parallel (`execute_block` decides when):
//!
//! 1. **Plan.** Transactions are grouped by dependency hints: the same sender, or the same
//!    `to` unless that `to` is known to be splittable (`ToHints`, learned from the blocks
//!    run in parallel before), puts two transactions in one group (union-find). Groups
//!    go to `threads` workers, largest first onto the least loaded (by gas limit), and each
//!    worker keeps block order.
//! 2. **Speculate.** Each worker (a scoped thread inside the executor that builds the block)
//!    runs its transactions in order against its own copy of the block's state after the
//!    pre-block system calls, plus what its own earlier transactions wrote. It records every
//!    account and slot each transaction read (the read set, with whether the value came from
//!    the pre-transaction state or from the worker's own writes) and keeps the transaction's
//!    result and state changes. Nothing is shared between workers while they run.
//! 3. **Validate and commit in block order** (on the block's executor thread, in the one
//!    sequential loop of `block_exec.rs`). A transaction is committed from its speculative run
//!    when every value it read equals what the block's state holds at that point; otherwise it
//!    is executed again, there, exactly as sequential execution would. EVM execution is a
//!    function of the values read, so a transaction whose reads all match produces exactly the
//!    result and writes sequential execution would.
//!
//! Validation is mostly hash lookups: a value read from the pre-transaction state is still
//! right if no committed transaction of this block wrote that key (`WriteSet`), so only keys
//! that were written are compared, and those are in the block's in-memory changes.
//!
//! **The coinbase is lazy** (the trick pevm uses): every transaction credits its fee to the
//! coinbase, which would make every transaction conflict with every other. A transaction that
//! does not observe the coinbase (`CoinbaseWatch`: no BALANCE/EXTCODE* of it, no call to, from
//! or at it, no SELFDESTRUCT or CREATE involving it, it is not the sender, no EIP-7702
//! authorizations) has its coinbase read validated on nonce and code hash only, and its
//! coinbase balance committed as the balance now plus what its run added (the fee).

use std::collections::{HashMap, HashSet};
use std::num::NonZeroUsize;
use std::str::FromStr;
use std::sync::Arc;

use alloy_consensus::Transaction;
use alloy_primitives::{Address, B256, TxKind, U256};
use arc_swap::ArcSwap;
use hearth_messages::executor::{BlockEnvSpec, BuildMode, PooledTx};
use hearth_storage::{ChainDb, EMPTY_CODE_HASH, StorageError};
use revm::bytecode::opcode;
use revm::context::result::{EVMError, ExecutionResult, ResultAndState};
use revm::database_interface::{Database, DatabaseCommit};
use revm::interpreter::interpreter_types::Jumps;
use revm::interpreter::{CallInputs, CallOutcome, CreateInputs, CreateOutcome, Interpreter};
use revm::state::{AccountInfo, EvmState};
use revm::{ExecuteEvm, InspectEvm};

use crate::block_exec::BlockEvm;
use crate::code_cache::CodeL1;
use crate::exec_db::{BlockChanges, ExecDb};
use crate::executor::{ExecConfig, tx_env};

/// Fewest transactions a block needs before `auto` runs it in parallel. Below it, starting the
/// workers and validating costs more than the block's execution (a scoped thread costs tens of
/// microseconds to start; a transfer executes in a few).
pub const MIN_PARALLEL_TXS: usize = 64;

/// Most threads `--exec.threads` accepts.
pub const MAX_EXEC_THREADS: usize = 64;

/// In `auto`, a plan whose busiest worker would carry more than this share (in percent) of
/// the block's gas runs sequentially: it would gain little and pay for validation.
const MAX_BUSIEST_SHARE_PERCENT: u64 = 80;

/// When blocks run in parallel (`--exec.parallel`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ParallelMode {
    /// Blocks of at least `MIN_PARALLEL_TXS` transactions whose plan spreads over threads.
    Auto,
    /// Every block with a transaction (the conformance runs use this to test the path).
    Always,
    /// Never: every block runs sequentially.
    #[default]
    Never,
}

impl FromStr for ParallelMode {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "auto" => Ok(Self::Auto),
            "always" => Ok(Self::Always),
            "never" => Ok(Self::Never),
            other => Err(format!("`{other}` is not a parallel mode; use auto, always or never")),
        }
    }
}

impl std::fmt::Display for ParallelMode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Self::Auto => "auto",
            Self::Always => "always",
            Self::Never => "never",
        })
    }
}

/// How blocks are executed: the mode and the threads a parallel block uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ParallelConfig {
    /// When.
    pub mode: ParallelMode,
    /// Worker threads of one parallel block (1 to `MAX_EXEC_THREADS`).
    pub threads: NonZeroUsize,
    /// Group transactions by sender and `to` (true), or deal them round-robin to the workers
    /// (false: the most conflicts between workers, which tests use to exercise validation).
    pub hints: bool,
}

impl Default for ParallelConfig {
    fn default() -> Self {
        Self { mode: ParallelMode::Never, threads: NonZeroUsize::MIN, hints: true }
    }
}

impl ParallelConfig {
    /// A configuration, refusing a thread count out of range with a message naming the flag.
    pub fn new(mode: ParallelMode, threads: usize) -> Result<Self, String> {
        match NonZeroUsize::new(threads) {
            Some(n) if threads <= MAX_EXEC_THREADS => Ok(Self { mode, threads: n, hints: true }),
            _ => Err(format!(
                "--exec.threads must be between 1 and {MAX_EXEC_THREADS}, got {threads}"
            )),
        }
    }
}

/// What the last block executed on this thread did in parallel (for benches and tests).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ParallelStats {
    /// Whether the block took the parallel path.
    pub parallel: bool,
    /// Transactions run speculatively.
    pub speculated: usize,
    /// Transactions executed again at commit because a value they read had changed (or their
    /// speculative run failed).
    pub reexecuted: usize,
    /// Workers the plan gave transactions to.
    pub workers: usize,
}

thread_local! {
    static LAST_STATS: std::cell::Cell<ParallelStats> = const {
        std::cell::Cell::new(ParallelStats { parallel: false, speculated: 0, reexecuted: 0, workers: 0 })
    };
}

/// The statistics of the last block executed on the calling thread.
pub fn last_block_stats() -> ParallelStats {
    LAST_STATS.with(std::cell::Cell::get)
}

pub(crate) fn set_last_stats(stats: ParallelStats) {
    LAST_STATS.with(|s| s.set(stats));
}

/// The reads of one transaction, in the order revm made them.
#[derive(Debug, Default)]
pub(crate) struct ReadLog {
    pub(crate) accounts: Vec<(Address, Option<AccountInfo>)>,
    pub(crate) slots: Vec<(Address, U256, U256)>,
}

/// The keys a set of transactions wrote (conservatively: touched accounts count as written).
#[derive(Debug, Default)]
struct WriteSet {
    accounts: HashSet<Address>,
    slots: HashSet<(Address, U256)>,
    /// Accounts with any slot written or their storage reset.
    storage_touched: HashSet<Address>,
    /// Accounts whose whole storage may read differently (created, self-destructed, left
    /// empty and so possibly deleted).
    reset: HashSet<Address>,
}

impl WriteSet {
    fn record(&mut self, state: &EvmState) {
        for (address, account) in state {
            if !account.is_touched() {
                continue;
            }
            self.accounts.insert(*address);
            if account.is_selfdestructed() || account.is_created() || account.info.is_empty() {
                self.reset.insert(*address);
                self.storage_touched.insert(*address);
            }
            for (slot, _) in account.changed_storage_slots() {
                self.slots.insert((*address, *slot));
                self.storage_touched.insert(*address);
            }
        }
    }

    /// Whether a read of `address` that returned `seen` may read differently now. An account
    /// with no nonce and no code reads differently when its storage changes (the EIP-7610
    /// marker of `ExecDb::basic`).
    fn account_dirty(&self, address: &Address, seen: &Option<AccountInfo>) -> bool {
        if self.accounts.contains(address) {
            return true;
        }
        let marker_possible = seen.as_ref().is_some_and(|info| {
            info.nonce == 0 && (info.code_hash == EMPTY_CODE_HASH || info.code_hash == B256::ZERO)
        });
        marker_possible && self.storage_touched.contains(address)
    }

    fn slot_dirty(&self, address: &Address, slot: &U256) -> bool {
        self.reset.contains(address) || self.slots.contains(&(*address, *slot))
    }
}

/// One transaction's speculative run.
#[derive(Debug)]
pub(crate) struct Speculated {
    /// Its result and state changes; `None` when the run failed (invalid transaction or a
    /// storage error): the transaction is executed again at commit, which gives the real error.
    outcome: Option<ResultAndState>,
    /// Accounts read: (address, value, whether it came from the pre-transaction state).
    accounts: Vec<(Address, Option<AccountInfo>, bool)>,
    /// Slots read: (address, slot, value, whether from the pre-transaction state).
    slots: Vec<(Address, U256, U256, bool)>,
    /// Whether it observed the coinbase in a way its balance could matter.
    observes_coinbase: bool,
}

impl Speculated {
    /// Whether the run read a storage slot an earlier transaction of its worker changed:
    /// whether it depended on a transaction it was grouped with. Account reads are left out:
    /// every call touches its target, so they would flag every grouped call; a target whose
    /// calls conflict on account fields is caught when it is split ([`ToHints::learn`]).
    fn read_worker_writes(&self) -> bool {
        self.slots.iter().any(|(_, _, _, from_start)| !from_start)
    }
}

/// Watches one transaction for anything that could make it depend on the coinbase's balance
/// or emptiness (see the module docs). Conservative: a flag only costs a precise validation.
#[derive(Debug)]
struct CoinbaseWatch {
    coinbase: Address,
    seen: bool,
}

impl CoinbaseWatch {
    fn touches(&mut self, address: Address) {
        if address == self.coinbase {
            self.seen = true;
        }
    }
}

impl<CTX> revm::Inspector<CTX> for CoinbaseWatch {
    fn step(&mut self, interp: &mut Interpreter, _context: &mut CTX) {
        if self.seen {
            return;
        }
        let op = interp.bytecode.opcode();
        if matches!(
            op,
            opcode::BALANCE | opcode::EXTCODESIZE | opcode::EXTCODECOPY | opcode::EXTCODEHASH
        ) && let Ok(word) = interp.stack.peek(0)
        {
            self.touches(Address::from_word(B256::from(word)));
        }
    }

    fn call(&mut self, _context: &mut CTX, inputs: &mut CallInputs) -> Option<CallOutcome> {
        self.touches(inputs.caller);
        self.touches(inputs.target_address);
        self.touches(inputs.bytecode_address);
        None
    }

    fn create(&mut self, _context: &mut CTX, inputs: &mut CreateInputs) -> Option<CreateOutcome> {
        self.touches(inputs.caller());
        None
    }

    fn create_end(&mut self, _context: &mut CTX, _inputs: &CreateInputs, out: &mut CreateOutcome) {
        if let Some(address) = out.address {
            self.touches(address);
        }
    }

    fn selfdestruct(&mut self, contract: Address, target: Address, _value: U256) {
        self.touches(contract);
        self.touches(target);
    }
}

/// Most contracts an executor thread keeps a hint for; past it the stalest is forgotten.
const TO_HINTS_MAX: usize = 1024;

/// Parallel blocks a "splittable" hint lasts after it was last confirmed; then the `to` is
/// grouped again (the safe default) until a block shows again that it can be split.
const TO_HINT_BLOCKS: u64 = 64;

/// A `to` is judged on blocks with at least this many transactions to it, and counts as
/// dependent when at least 1 / [`TO_HINT_SHARE`] of them depended on an earlier one.
const TO_HINT_MIN_TXS: usize = 4;
const TO_HINT_SHARE: usize = 4;

/// Which call targets may be split between workers, learned from the blocks run in parallel. Transactions to the same `to` are grouped on one worker unless
/// that `to` is known to be splittable: most popular contracts are hot spots (a counter, a
/// pool's reserves, a token's total supply), and splitting a hot spot costs every
/// transaction a second run. A block shows which is which both ways: run grouped, a
/// transaction that read what an earlier one of its worker wrote (other than its sender's
/// own account) depended on it; run split, a transaction that had to run again conflicted.
/// Published through an `ArcSwap` like the chain's snapshots: a block's plan and commit use
/// the hints loaded when it started, and the block that learned something publishes a new
/// copy when it ends (blocks are built one at a time, by the miner or an import). No lock;
/// bounded to [`TO_HINTS_MAX`] targets per map.
#[derive(Debug, Default, Clone)]
pub(crate) struct ToHints {
    /// Splittable targets, with the block count when that was last seen.
    splittable: HashMap<Address, u64>,
    /// Targets whose calls depended on each other (grouped) or conflicted (split), with the
    /// block count when they last did: kept grouped for [`TO_HINT_BLOCKS`] whatever a grouped
    /// block shows, and not probed again meanwhile.
    hot: HashMap<Address, u64>,
    blocks: u64,
}

/// What one parallel block saw of the transactions to one `to`.
#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct ToSeen {
    /// Transactions to it.
    sent: usize,
    /// Of those, how many depended on an earlier transaction of their worker (grouped) or
    /// had to run again at commit (split).
    dependent: usize,
}

static TO_HINTS: std::sync::LazyLock<ArcSwap<ToHints>> =
    std::sync::LazyLock::new(|| ArcSwap::from_pointee(ToHints::default()));

/// The hints a block starts with.
pub(crate) fn to_hints() -> Arc<ToHints> {
    TO_HINTS.load_full()
}

impl ToHints {
    fn splittable(&self, to: &Address) -> bool {
        self.splittable.get(to).is_some_and(|&at| self.blocks - at < TO_HINT_BLOCKS)
    }

    /// Whether no block has said yet whether `to`'s calls can be split.
    fn unknown(&self, to: &Address) -> bool {
        !self.splittable(to)
            && self.hot.get(to).is_none_or(|&at| self.blocks - at >= TO_HINT_BLOCKS)
    }

    /// Whether `txs` call a target no block has judged yet often enough to judge it: `auto`
    /// then runs the block in parallel even when its plan is lopsided, as the probe that
    /// learns it (a grouped block costs the parallel path's overhead, not a second run).
    fn worth_probing(&self, txs: &[PooledTx]) -> bool {
        let mut calls: HashMap<Address, usize> = HashMap::new();
        txs.iter().any(|tx| match tx.tx.kind() {
            TxKind::Call(to) if self.unknown(&to) => {
                let count = calls.entry(to).or_default();
                *count += 1;
                *count >= TO_HINT_MIN_TXS
            }
            _ => false,
        })
    }

    /// Notes one parallel block: what it saw of each `to`.
    fn learn(&mut self, seen: &HashMap<Address, ToSeen>) {
        self.blocks += 1;
        let blocks = self.blocks;
        self.splittable.retain(|_, at| blocks - *at < TO_HINT_BLOCKS);
        self.hot.retain(|_, at| blocks - *at < TO_HINT_BLOCKS);
        for (to, seen) in seen {
            if seen.sent < TO_HINT_MIN_TXS {
                continue;
            }
            let dependent = seen.dependent * TO_HINT_SHARE >= seen.sent;
            if dependent {
                self.splittable.remove(to);
                self.hot.insert(*to, blocks);
            } else if !self.hot.contains_key(to) {
                self.splittable.insert(*to, blocks);
            }
        }
        for map in [&mut self.splittable, &mut self.hot] {
            while map.len() > TO_HINTS_MAX {
                let stalest = map.iter().min_by_key(|(_, at)| **at).map(|(a, _)| *a);
                map.remove(&stalest.expect("not empty"));
            }
        }
    }
}

/// Publishes what a parallel block showed about its call targets, for the plans of the
/// blocks after it.
pub(crate) fn learn_to_hints(committer: &Committer) {
    // Onto the hints published now, not the ones the block started with: two blocks built at
    // once (an import beside the miner, tests) each add what they saw, neither loses the other's.
    TO_HINTS.rcu(|now| {
        let mut next = ToHints::clone(now);
        next.learn(&committer.seen_to);
        next
    });
}

/// Forgets the call-target hints (benches and tests that measure a first block).
pub fn forget_to_hints() {
    TO_HINTS.store(Arc::new(ToHints::default()));
}

/// Whether `txs` should run in parallel under `config`, and with which plan.
pub(crate) fn plan(
    config: &ParallelConfig,
    hints: &ToHints,
    txs: &[PooledTx],
) -> Option<Vec<Vec<usize>>> {
    let threads = config.threads.get();
    match config.mode {
        ParallelMode::Never => return None,
        ParallelMode::Auto if txs.len() < MIN_PARALLEL_TXS || threads < 2 => return None,
        ParallelMode::Auto | ParallelMode::Always if txs.is_empty() => return None,
        _ => {}
    }
    if !config.hints {
        let count = threads.min(txs.len());
        let mut workers = vec![Vec::new(); count];
        for i in 0..txs.len() {
            workers[i % count].push(i);
        }
        return Some(workers);
    }
    let groups = dependency_groups(txs, hints);
    let mut weights: Vec<(u64, Vec<usize>)> = groups
        .into_iter()
        .map(|members| {
            let gas = members.iter().map(|&i| txs[i].tx.gas_limit().max(21_000)).sum::<u64>();
            (gas, members)
        })
        .collect();
    // Largest first onto the least loaded worker (LPT); ties keep block order.
    weights.sort_by(|a, b| b.0.cmp(&a.0).then(a.1[0].cmp(&b.1[0])));
    let mut workers: Vec<(u64, Vec<usize>)> = vec![(0, Vec::new()); threads];
    for (gas, members) in weights {
        let lightest =
            workers.iter_mut().min_by_key(|(load, _)| *load).expect("at least one worker");
        lightest.0 += gas;
        lightest.1.extend(members);
    }
    let total: u64 = workers.iter().map(|w| w.0).sum();
    let busiest = workers.iter().map(|w| w.0).max().unwrap_or(0);
    if config.mode == ParallelMode::Auto
        && u128::from(busiest) * 100 > u128::from(total) * u128::from(MAX_BUSIEST_SHARE_PERCENT)
        && !hints.worth_probing(txs)
    {
        return None;
    }
    Some(
        workers
            .into_iter()
            .map(|(_, mut members)| {
                members.sort_unstable();
                members
            })
            .filter(|m| !m.is_empty())
            .collect(),
    )
}

/// Groups of transaction indexes that share a sender, or a `to` not known to be splittable
/// (union-find).
fn dependency_groups(txs: &[PooledTx], hints: &ToHints) -> Vec<Vec<usize>> {
    fn find(parent: &mut [usize], mut i: usize) -> usize {
        while parent[i] != i {
            parent[i] = parent[parent[i]];
            i = parent[i];
        }
        i
    }
    let mut parent: Vec<usize> = (0..txs.len()).collect();
    let mut first_of: HashMap<Address, usize> = HashMap::new();
    for (i, tx) in txs.iter().enumerate() {
        let mut keys = vec![tx.sender];
        if let TxKind::Call(to) = tx.tx.kind()
            && !hints.splittable(&to)
        {
            keys.push(to);
        }
        for key in keys {
            let first = *first_of.entry(key).or_insert(i);
            let (a, b) = (find(&mut parent, first), find(&mut parent, i));
            if a != b {
                parent[b.max(a)] = a.min(b);
            }
        }
    }
    let mut groups: HashMap<usize, Vec<usize>> = HashMap::new();
    for i in 0..txs.len() {
        let root = find(&mut parent, i);
        groups.entry(root).or_default().push(i);
    }
    groups.into_values().collect()
}

/// Everything a worker needs to build its block EVM.
pub(crate) struct SpecInput<'a> {
    pub(crate) db: &'a ChainDb,
    pub(crate) defaults: &'a ExecConfig,
    pub(crate) parent_number: u64,
    pub(crate) env: &'a BlockEnvSpec,
    pub(crate) mode: BuildMode,
    pub(crate) txs: &'a [PooledTx],
    /// The block's changes after the pre-block system calls.
    pub(crate) start: &'a BlockChanges,
}

/// Runs every transaction of `plan` speculatively, one scoped thread per worker.
pub(crate) fn speculate(input: &SpecInput<'_>, plan: &[Vec<usize>]) -> Vec<Option<Speculated>> {
    let mut out: Vec<Option<Speculated>> = Vec::with_capacity(input.txs.len());
    out.resize_with(input.txs.len(), || None);
    let results: Vec<Vec<(usize, Speculated)>> = std::thread::scope(|scope| {
        let handles: Vec<_> =
            plan.iter().map(|indexes| scope.spawn(move || run_worker(input, indexes))).collect();
        // A worker that panicked leaves its transactions to the sequential commit.
        handles.into_iter().map(|h| h.join().unwrap_or_default()).collect()
    });
    for (index, spec) in results.into_iter().flatten() {
        out[index] = Some(spec);
    }
    out
}

fn run_worker(input: &SpecInput<'_>, indexes: &[usize]) -> Vec<(usize, Speculated)> {
    let mut codes = CodeL1::new(None);
    let watch = CoinbaseWatch { coinbase: input.env.coinbase, seen: false };
    let (mut evm, _) = crate::block_exec::block_evm(
        input.db,
        &mut codes,
        input.defaults,
        input.parent_number,
        input.env,
        watch,
    );
    evm.ctx.cfg.disable_eip3607 = input.mode == BuildMode::Pack;
    evm.ctx.journaled_state.database.set_changes(input.start.clone());
    let mut own = WriteSet::default();
    let mut done = Vec::with_capacity(indexes.len());
    for &index in indexes {
        let pooled = &input.txs[index];
        evm.inspector.seen = pooled.sender == input.env.coinbase
            || pooled.tx.authorization_list().is_some_and(|list| !list.is_empty());
        evm.ctx.journaled_state.database.start_log();
        let outcome = evm.inspect_tx(tx_env(pooled)).ok();
        let log = evm.ctx.journaled_state.database.take_log();
        let accounts = log
            .accounts
            .into_iter()
            .map(|(address, info)| {
                let from_start = !own.account_dirty(&address, &info);
                (address, info, from_start)
            })
            .collect();
        let slots = log
            .slots
            .into_iter()
            .map(|(address, slot, value)| (address, slot, value, !own.slot_dirty(&address, &slot)))
            .collect();
        if let Some(outcome) = &outcome {
            own.record(&outcome.state);
            evm.ctx.journaled_state.database.commit(outcome.state.clone());
        }
        done.push((
            index,
            Speculated { outcome, accounts, slots, observes_coinbase: evm.inspector.seen },
        ));
    }
    done
}

/// The commit side of a parallel block: the speculative runs, what the committed transactions
/// wrote, and the counts.
#[derive(Debug)]
pub(crate) struct Committer {
    specs: Vec<Option<Speculated>>,
    written: WriteSet,
    coinbase: Address,
    stats: ParallelStats,
    /// The hints the block was planned with, and what it showed of each call target.
    hints: Arc<ToHints>,
    seen_to: HashMap<Address, ToSeen>,
}

impl Committer {
    pub(crate) fn new(
        specs: Vec<Option<Speculated>>,
        coinbase: Address,
        workers: usize,
        hints: Arc<ToHints>,
    ) -> Self {
        let speculated = specs.iter().filter(|s| s.is_some()).count();
        Self {
            specs,
            written: WriteSet::default(),
            coinbase,
            stats: ParallelStats { parallel: true, speculated, reexecuted: 0, workers },
            hints,
            seen_to: HashMap::new(),
        }
    }

    pub(crate) const fn stats(&self) -> ParallelStats {
        self.stats
    }

    /// Runs transaction `index` as sequential execution would at this point of the block:
    /// commits its speculative run if still valid, else executes it again here.
    pub(crate) fn run(
        &mut self,
        evm: &mut BlockEvm<'_, ()>,
        index: usize,
        pooled: &PooledTx,
    ) -> Result<ExecutionResult, EVMError<StorageError>> {
        let to = match pooled.tx.kind() {
            TxKind::Call(to) => Some(to),
            TxKind::Create => None,
        };
        // How the plan treated `to`.
        let grouped = to.is_some_and(|to| !self.hints.splittable(&to));
        let spec = self.specs.get_mut(index).and_then(Option::take);
        if let Some(to) = to {
            let seen = self.seen_to.entry(to).or_default();
            seen.sent += 1;
            if grouped && spec.as_ref().is_some_and(|s| s.read_worker_writes()) {
                seen.dependent += 1;
            }
        }
        if let Some(spec) = spec
            && let Some(coinbase_balance) = self
                .validate(&mut evm.ctx.journaled_state.database, &spec)
                .map_err(EVMError::Database)?
            && let Some(outcome) = spec.outcome
        {
            let ResultAndState { result, mut state } = outcome;
            if let (Some(balance), Some(account)) =
                (coinbase_balance, state.get_mut(&self.coinbase))
            {
                account.info.balance = balance;
            }
            self.written.record(&state);
            evm.ctx.journaled_state.database.commit(state);
            return Ok(result);
        }
        self.stats.reexecuted += 1;
        if let Some(to) = to
            && !grouped
        {
            self.seen_to.entry(to).or_default().dependent += 1;
        }
        let outcome = evm.transact(tx_env(pooled))?;
        self.written.record(&outcome.state);
        evm.ctx.journaled_state.database.commit(outcome.state);
        Ok(outcome.result)
    }

    /// `Some` if every value `spec` read is still what the block holds, with the coinbase
    /// balance to commit instead of the run's when the coinbase is lazy; `None`: run it again.
    fn validate(
        &self,
        db: &mut ExecDb<'_>,
        spec: &Speculated,
    ) -> Result<Option<Option<U256>>, StorageError> {
        let Some(outcome) = &spec.outcome else { return Ok(None) };
        let lazy_coinbase = !spec.observes_coinbase;
        let mut coinbase_read = None;
        for (address, seen, from_start) in &spec.accounts {
            let lazy = lazy_coinbase && *address == self.coinbase;
            if lazy {
                coinbase_read = Some(seen.as_ref().map_or(U256::ZERO, |i| i.balance));
            }
            if *from_start && !self.written.account_dirty(address, seen) {
                continue;
            }
            let now = db.basic(*address)?;
            let same = if lazy { same_but_balance(&now, seen) } else { same_account(&now, seen) };
            if !same {
                return Ok(None);
            }
        }
        for (address, slot, seen, from_start) in &spec.slots {
            if *from_start && !self.written.slot_dirty(address, slot) {
                continue;
            }
            if db.storage(*address, *slot)? != *seen {
                return Ok(None);
            }
        }
        let Some(account) = outcome.state.get(&self.coinbase).filter(|_| lazy_coinbase) else {
            return Ok(Some(None));
        };
        // The run credited the fee to the balance it read; credit it to the balance now.
        let Some(read) = coinbase_read else { return Ok(None) };
        let written = account.info.balance;
        if written < read || written == U256::MAX {
            return Ok(None);
        }
        let now = db.basic(self.coinbase)?.map_or(U256::ZERO, |i| i.balance);
        Ok(now.checked_add(written - read).map(Some))
    }
}

fn same_account(a: &Option<AccountInfo>, b: &Option<AccountInfo>) -> bool {
    match (a, b) {
        (None, None) => true,
        (Some(a), Some(b)) => {
            a.balance == b.balance && a.nonce == b.nonce && a.code_hash == b.code_hash
        }
        _ => false,
    }
}

/// Nonce and code hash equal, an absent account reading as nonce 0 without code.
fn same_but_balance(a: &Option<AccountInfo>, b: &Option<AccountInfo>) -> bool {
    let fields = |x: &Option<AccountInfo>| {
        x.as_ref().map_or((0, EMPTY_CODE_HASH), |i| (i.nonce, i.code_hash))
    };
    fields(a) == fields(b)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn seen(list: &[(u8, usize, usize)]) -> HashMap<Address, ToSeen> {
        list.iter()
            .map(|&(a, sent, dependent)| (Address::with_last_byte(a), ToSeen { sent, dependent }))
            .collect()
    }

    #[test]
    fn a_to_is_split_once_a_block_shows_its_transactions_independent() {
        let mut hints = ToHints::default();
        assert!(!hints.splittable(&Address::with_last_byte(1)), "unknown targets are grouped");
        // 1: none depended (a view-heavy contract); 2: every one (a counter); 3: 3 of 1,000
        // (a token between distinct holders); 4: too few transactions to say.
        hints.learn(&seen(&[(1, 500, 0), (2, 500, 499), (3, 1000, 3), (4, 3, 0)]));
        let split = |h: &ToHints, a| h.splittable(&Address::with_last_byte(a));
        assert!(split(&hints, 1) && !split(&hints, 2) && split(&hints, 3) && !split(&hints, 4));
        let unknown = |h: &ToHints, a| h.unknown(&Address::with_last_byte(a));
        assert!(!unknown(&hints, 1) && !unknown(&hints, 2) && unknown(&hints, 4));
        // Split, a quarter of 3's transactions ran again: grouped from the next block on, and
        // kept grouped even when a grouped block shows no slot dependency (its calls may
        // conflict on account fields, which grouped blocks do not measure).
        hints.learn(&seen(&[(3, 16, 4)]));
        assert!(!split(&hints, 3) && split(&hints, 1));
        hints.learn(&seen(&[(3, 16, 0)]));
        assert!(!split(&hints, 3));
    }

    #[test]
    fn a_hint_lapses_after_its_blocks_and_the_hints_stay_bounded() {
        let mut hints = ToHints::default();
        hints.learn(&seen(&[(1, 8, 0)]));
        for _ in 0..TO_HINT_BLOCKS - 1 {
            hints.learn(&HashMap::new());
            assert!(hints.splittable(&Address::with_last_byte(1)));
        }
        hints.learn(&HashMap::new());
        assert!(!hints.splittable(&Address::with_last_byte(1)));
        assert!(hints.splittable.is_empty());

        let many: HashMap<Address, ToSeen> = (0..TO_HINTS_MAX as u64 + 10)
            .map(|i| {
                (Address::left_padding_from(&i.to_be_bytes()), ToSeen { sent: 4, dependent: 0 })
            })
            .collect();
        hints.learn(&many);
        assert_eq!(hints.splittable.len(), TO_HINTS_MAX);
    }
}
