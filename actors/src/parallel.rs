//! Parallel block execution: helper threads run a block's transactions speculatively a little
//! ahead of its executor, against the block's state as committed so far; the executor validates
//! and commits them in block order and executes the rest itself, with exactly the results of
//! sequential execution.
//!
//! How a block runs when it is executed in parallel (`execute_block` decides when):
//!
//! 1. **Claim ahead.** `threads - 1` helper threads (scoped, living for the block) each claim
//!    the first transaction no one took at a lead ahead of the committer's position (`Claims`,
//!    `Lead`: the helper's measured run time over the committer's measured time per
//!    transaction, plus one), so that the run is done when the committer gets there, and no
//!    further (a run further ahead reads values older by more commits).
//! 2. **Speculate on what is committed.** A helper reads the block's state through `Published`
//!    (the block's multi-version memory: the newest committed version of each key, which the
//!    committer publishes after each commit) before the block's start state, so a run sees the
//!    transactions committed up to each of its reads. The run records every account and slot
//!    it read and keeps its result and state changes. Nothing else is shared.
//! 3. **Validate and commit in block order** (on the block's executor, the committer, in the
//!    one sequential loop of `block_exec.rs`). At transaction `i` the committer commits a
//!    helper's run if every key it read that the block wrote (the committer's own changes say
//!    which: a key the block never wrote reads from the start state on every thread) still
//!    holds the value read; otherwise it executes `i` again, there. A transaction no helper
//!    took it executes itself; one a helper is still running it waits for. EVM execution is a
//!    function of the values read, so a run whose reads all match produces exactly what
//!    sequential execution produces at `i`.
//!
//! The committer never speculates: a run it made would cost it the run and then its commit,
//! where executing in place costs the execution only. The two sides split the block by speed:
//! the helper takes what it can finish in time, the committer the rest.
//!
//! A run reads what is committed while it runs, so a transaction conflicts only with the few
//! neighbours still in flight: ERC-20 transfers among 1,000 holders rarely do. When neighbours
//! conflict often (a hot contract, a chain of dependent transfers, one sender's nonces), the
//! committer stops taking runs and executes each transaction in place as sequential execution
//! would (`Committer`'s hot mode, left after a back-off or when a run validates) and the
//! helpers pause: such a block costs a few wasted runs per back-off, not the committer's time.
//!
//! **A block of plain transfers reads ahead instead** (`ReadAhead`): when the transactions that
//! carry no input declare at least 80% of its gas, the helpers run none of them; they read each
//! upcoming transaction's sender and recipient from the snapshot, and the committer executes
//! every transaction itself, taking those accounts before the store. Such a transaction costs
//! about as much to read as to execute, and taking a helper's run of it over cost the committer
//! what executing it does.
//!
//! **The coinbase is lazy** (the trick pevm uses): every transaction credits its fee to the
//! coinbase, which would make every transaction conflict with every other. A run that did not
//! observe the coinbase (no BALANCE/EXTCODE*/CALL*/SELFDESTRUCT naming it, noted by the block
//! EVM's instructions (`exec::coinbase_seen`); it is not the sender or the `to`; no CREATE
//! transaction; no EIP-7702 authorizations; the coinbase not created or destroyed) has its
//! coinbase read validated on nonce and code hash only, and its coinbase balance committed as
//! the balance now plus what its run added (the fee).

use alloy_primitives::map::AddressMap;
use std::panic::AssertUnwindSafe;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Mutex, MutexGuard, OnceLock, PoisonError};
use std::time::{Duration, Instant};

use alloy_consensus::Transaction;
use alloy_primitives::{Address, Bloom, U256};
use crossbeam_utils::CachePadded;
use hearth_messages::executor::{BlockEnvSpec, BuildMode, PooledTx};
use hearth_storage::cpu::CallerCpu;
use hearth_storage::{ChainDb, EMPTY_CODE_HASH, StateView, StorageError, StoredAccount};
use revm::ExecuteEvm;
use revm::context::result::{EVMError, ExecutionResult, ResultAndState};
use revm::database_interface::Database;
use revm::state::{AccountInfo, EvmState};

pub(crate) mod published;
mod seqmap;

use crate::console::Captured;
use crate::exec::{
    AccountNow, BlockChanges, BlockEvm, CodeL1, ExecConfig, ExecDb, ParallelConfig, ParallelMode,
    PublishedValues, ReadLog, block_evm, coinbase_seen, forget_coinbase_seen, instrument, tx_env,
};
use published::Published;

/// Fewest transactions a block needs before `auto` runs it in parallel. Below it, starting the
/// workers and validating costs more than the block's execution (a scoped thread costs tens of
/// microseconds to start; a transfer executes in a few).
pub const MIN_PARALLEL_TXS: usize = 64;

/// In `auto`, a block whose busiest sender carries more than this share (in percent) of its
/// gas runs sequentially: a sender's later nonces cannot run before its earlier ones commit.
const MAX_SENDER_SHARE_PERCENT: u64 = 80;

/// A block where the transactions that carry no input (plain value transfers) declare at
/// least this share (in percent) of its gas reads ahead instead of speculating
/// ([`ReadAhead`]). By gas, not by count: a block of transfers with a few heavy calls among
/// them keeps speculating, which runs the heavy calls beside each other.
const READ_AHEAD_PLAIN_PERCENT: usize = 80;

/// What the last block executed on this thread did in parallel (for benches and tests).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ParallelStats {
    /// Whether the block took the parallel path.
    pub parallel: bool,
    /// Transactions whose speculative run reached validation.
    pub speculated: usize,
    /// Of those, transactions executed again at commit because a value they read had changed
    /// (or their speculative run failed).
    pub reexecuted: usize,
    /// Transactions the committer executed in place without a speculative run (no one had
    /// claimed it, or conflicts were frequent and its run was still going).
    pub direct: usize,
    /// Of those, transactions a helper was running when the committer executed them (the
    /// helper's run was wasted).
    pub abandoned: usize,
    /// Threads that ran the block (its executor and the helpers).
    pub threads: usize,
    /// The helpers read the block's accounts ahead instead of speculating (a block of plain
    /// transfers: `ReadAhead`).
    pub read_ahead: bool,
    /// How long the committer waited for helpers' runs still running when it reached them.
    pub waited: Duration,
    /// How long the block took before its transaction loop (its EVM, the pre-block calls, a
    /// parallel block's plan and board), sequential blocks too.
    pub setup_time: Duration,
    /// How long the block's transaction loop took (its helpers joined), sequential blocks
    /// too: the rest of the block's time is its set-up, roots and diff.
    pub loop_time: Duration,
    /// How long after the block's board was made its first helper was ready to claim (its
    /// thread started and its EVM made); `None`: no helper got that far.
    pub helper_start: Option<Duration>,
}

thread_local! {
    static LAST_STATS: std::cell::Cell<ParallelStats> = const {
        std::cell::Cell::new(ParallelStats {
            parallel: false,
            speculated: 0,
            reexecuted: 0,
            direct: 0,
            abandoned: 0,
            threads: 0,
            read_ahead: false,
            waited: Duration::ZERO,
            setup_time: Duration::ZERO,
            loop_time: Duration::ZERO,
            helper_start: None,
        })
    };
}

/// The statistics of the last block executed on the calling thread.
pub fn last_block_stats() -> ParallelStats {
    LAST_STATS.with(std::cell::Cell::get)
}

pub(crate) fn set_last_stats(stats: ParallelStats) {
    LAST_STATS.with(|s| s.set(stats));
}

/// One transaction's speculative run.
#[derive(Debug)]
pub(crate) struct Speculated {
    /// Its result and state changes; `None` when the run failed (invalid transaction at its
    /// snapshot, a storage error, a panic): the transaction is executed again at commit, which
    /// gives the real outcome.
    outcome: Option<ResultAndState>,
    /// The bloom of its logs, made on the helper's thread (the committer's receipt takes it).
    bloom: Bloom,
    /// Accounts read, with the value read.
    accounts: Vec<(Address, Option<AccountInfo>)>,
    /// Slots read: (address, slot, value).
    slots: Vec<(Address, U256, U256)>,
    /// Whether it observed the coinbase in a way its balance could matter.
    observes_coinbase: bool,
    /// The helper that ran it, which frees it.
    helper: usize,
    /// What it sent to the console (nothing unless the block captures console output).
    console: Captured,
    /// The accounts its call instructions named, for the address index.
    called: Vec<Address>,
}

/// Where one transaction stands on the board.
#[derive(Debug, Default)]
enum Slot {
    /// No one has taken it: the committer executes it in place when it gets there.
    #[default]
    Free,
    /// A helper is running it.
    Claimed,
    /// A helper's run, boxed: some five hundred bytes, which the slots of a big block would
    /// otherwise hold inline (megabytes for the committer to fault in before the helpers
    /// start), and each handover would copy.
    Ran(Box<Speculated>),
    /// The committer got there: it took the run or executes the transaction itself; a run
    /// handed in now is not wanted (its helper frees it).
    Done,
}

/// What the committer found at the transaction it must commit next.
enum Arrival {
    /// A helper's run, to validate.
    Run(Box<Speculated>),
    /// No helper took it: the committer executes it.
    Mine,
    /// A helper is still running it.
    Busy,
}

/// What a helper found to claim.
enum Claim {
    /// This transaction, now the helper's to run.
    Run(usize),
    /// Nothing within reach now; `blocked`: some transaction there follows its sender's
    /// uncommitted one (a nonce chain).
    Nothing { blocked: bool },
    /// Nothing is left to claim in this block.
    End,
}

impl Speculated {
    const fn failed(helper: usize) -> Self {
        Self {
            outcome: None,
            bloom: Bloom::ZERO,
            accounts: Vec::new(),
            slots: Vec::new(),
            observes_coinbase: true,
            helper,
            console: Captured::new(),
            called: Vec::new(),
        }
    }
}

/// Runs `pooled` on `evm` (helper `helper`'s) without committing, recording what it read in
/// `log`.
fn speculate(
    evm: &mut BlockEvm<'_, (), Published>,
    pooled: &PooledTx,
    helper: usize,
    log: ReadLog,
) -> Speculated {
    let coinbase = evm.ctx.block.beneficiary;
    let named = pooled.sender == coinbase
        || pooled.tx.kind().to().is_none_or(|to| *to == coinbase)
        || pooled.tx.authorization_list().is_some_and(|list| !list.is_empty());
    forget_coinbase_seen();
    evm.ctx.journaled_state.database.start_log(log);
    // What an earlier run on this helper named is not this one's.
    evm.ctx.journaled_state.database.take_touched().clear();
    let outcome = evm.transact(tx_env(pooled)).ok();
    let console = evm.precompiles.take();
    let called = evm.ctx.journaled_state.database.take_touched();
    let log = evm.ctx.journaled_state.database.take_log();
    let remade = outcome
        .as_ref()
        .and_then(|o| o.state.get(&coinbase))
        .is_some_and(|a| a.is_created() || a.is_selfdestructed());
    let observes_coinbase = named || remade || coinbase_seen();
    let bloom =
        outcome.as_ref().map_or(Bloom::ZERO, |o| crate::log_bloom::logs_bloom(o.result.logs()));
    Speculated {
        outcome,
        bloom,
        accounts: log.accounts,
        slots: log.slots,
        observes_coinbase,
        helper,
        console,
        called,
    }
}

/// How many helper threads a block of `txs` gets under `config`, with the block's shape for
/// its board; `None`: it runs sequentially (and nothing was looked at).
pub(crate) fn plan(config: &ParallelConfig, txs: &[PooledTx]) -> Option<(usize, Shape)> {
    let threads = config.threads.get();
    match config.mode {
        ParallelMode::Never => return None,
        _ if txs.is_empty() => return None,
        ParallelMode::Auto if txs.len() < MIN_PARALLEL_TXS || threads < 2 => return None,
        _ => {}
    }
    let shape = Shape::of(txs);
    // One sender's chain of calls cannot be speculated; its plain transfers can still have
    // their recipients read ahead.
    if config.mode == ParallelMode::Auto && shape.one_sender_dominates && !shape.mostly_plain {
        return None;
    }
    // Stale helpers do every run: at least one.
    let helpers = if config.stale_helpers { (threads - 1).max(1) } else { threads - 1 };
    Some((helpers, shape))
}

/// How many threads the parts of a block after its transactions (the transactions and
/// receipts roots) are spread over: the parallel threads unless blocks run sequentially.
pub(crate) fn spread_threads(config: &ParallelConfig) -> usize {
    match config.mode {
        ParallelMode::Never => 1,
        ParallelMode::Auto | ParallelMode::Always => config.threads.get(),
    }
}

/// What a block's transactions look like to the scheduler, from a sample of at most
/// `SHAPE_SAMPLE` of them: each transaction's envelope is a cache miss of its own, and
/// reading all of a 10,000-call block's took half a millisecond on the block's executor
/// before any helper started. The shares only choose how the block runs; its results are
/// the same either way.
///
/// The sample follows the golden ratio's multiples (a Weyl sequence), not a fixed stride: a
/// block that interleaves kinds of transactions (a transfer, a call, a transfer...) has a
/// period a stride can fall in step with, and then sees one kind only.
#[derive(Debug)]
pub(crate) struct Shape {
    /// One sender carries more than `MAX_SENDER_SHARE_PERCENT` of the block's gas.
    one_sender_dominates: bool,
    /// The transactions that carry no input declare at least `READ_AHEAD_PLAIN_PERCENT` of
    /// the block's gas limits.
    mostly_plain: bool,
}

/// Most transactions whose gas the block's shape reads.
const SHAPE_SAMPLE: usize = 512;

impl Shape {
    pub(crate) fn of(txs: &[PooledTx]) -> Self {
        let mut sent: AddressMap<u64> = AddressMap::default();
        let (mut plain, mut total, mut weighed) = (0u128, 0u128, 0u64);
        for index in sample(txs.len(), SHAPE_SAMPLE) {
            let tx = &txs[index];
            let gas = tx.tx.gas_limit();
            total += u128::from(gas);
            if tx.tx.input().is_empty() {
                plain += u128::from(gas);
            }
            let weight = gas.max(21_000);
            weighed = weighed.saturating_add(weight);
            let sender = sent.entry(tx.sender).or_default();
            *sender = sender.saturating_add(weight);
        }
        let busiest = sent.values().copied().max().unwrap_or(0);
        Self {
            one_sender_dominates: u128::from(busiest) * 100
                > u128::from(weighed) * u128::from(MAX_SENDER_SHARE_PERCENT),
            mostly_plain: plain * 100 >= total * READ_AHEAD_PLAIN_PERCENT as u128,
        }
    }
}

/// Indexes below `len` to look at: all of them when there are at most `most`, else `most`
/// spread over `0..len` by the fractional parts of multiples of the golden ratio.
fn sample(len: usize, most: usize) -> impl Iterator<Item = usize> {
    // 2^64 / golden ratio: each step adds it, and the sum's top bits are the fraction.
    const STEP: u64 = 0x9E37_79B9_7F4A_7C15;
    let all = len <= most;
    let len_wide = u128::from(u64::try_from(len).unwrap_or(u64::MAX));
    (0..len.min(most)).map(move |k| {
        if all {
            return k;
        }
        let fraction = u64::try_from(k).unwrap_or(u64::MAX).wrapping_mul(STEP);
        usize::try_from((u128::from(fraction) * len_wide) >> 64).unwrap_or(0)
    })
}

/// For each transaction, the index of the previous one from the same sender, `u32::MAX` when
/// there is none (a block never holds four billion transactions: gas bounds it far below).
fn same_sender_before(txs: &[PooledTx]) -> Vec<u32> {
    let mut last: AddressMap<u32> = AddressMap::default();
    txs.iter()
        .enumerate()
        .map(|(index, tx)| {
            let index = u32::try_from(index).unwrap_or(u32::MAX);
            last.insert(tx.sender, index).unwrap_or(u32::MAX)
        })
        .collect()
}

/// What one parallel block's threads share, for the block's lifetime only (it lives on the
/// block executor's stack; the helpers are scoped threads): each transaction's claim and
/// finished speculative run, the committer's position and the committed values. Its mutexes
/// are the block's own, each held for a claim, a handover, an insert or a lookup; nothing on
/// the request path ever sees them.
#[derive(Debug)]
pub(crate) struct Board<'a> {
    txs: &'a [PooledTx],
    /// Every transaction below it is committed (and published).
    position: CachePadded<AtomicUsize>,
    /// How far past `position` a helper may claim.
    window: usize,
    /// Per transaction, the index of the block's previous transaction from the same sender
    /// (`u32::MAX`: none): the dependency hint that keeps helpers off a nonce chain.
    ///
    /// Made by the first helper as it starts (a few hundred microseconds for 10,000
    /// transactions), while the committer already executes: until then the committer counts
    /// no nonce chain.
    same_sender_before: OnceLock<Vec<u32>>,
    /// Per transaction, where it stands ([`Slot`]); at `slot(index)`, so that neighbouring
    /// transactions (one taken by the committer while a helper claims another) do not share
    /// a cache line.
    runs: Vec<Mutex<Slot>>,
    /// What the committer committed so far, which helpers read.
    published: Published,
    /// A block of plain transfers: the helpers read its accounts ahead of the committer,
    /// which executes every transaction itself.
    read_ahead: Option<ReadAhead>,
    /// Per helper, what the committer is done with (the helper's runs and their state
    /// changes), for that helper to free: memory freed on another thread than the one that
    /// allocated it takes the allocator's arena lock, and the committer and helper then wait
    /// on each other (a fifth of a parallel ERC-20 block went to that lock's wake-ups).
    spent: Vec<CachePadded<Mutex<Spent>>>,
    /// The flags below are read by every helper's loop and rarely written: each on its own
    /// cache line, away from the counters the committer writes at every transaction.
    stop: CachePadded<AtomicBool>,
    /// The committer executes in place (conflicts are frequent): helpers pause rather than
    /// take the CPU time of a machine whose other core may be busy.
    hot: CachePadded<AtomicBool>,
    helpers: usize,
    /// Helpers still running.
    live: CachePadded<AtomicUsize>,
    /// A helper run's usual duration in nanoseconds (0: none measured yet), which bounds how
    /// long the committer waits for one.
    run_ns: CachePadded<AtomicU64>,
    /// Times the committer waited at least `HELPER_WAIT` for a helper's run still going: the
    /// helpers space their claims out when it grows (`Claims::gap`). Shorter waits, on cheap
    /// transactions, cost less than the conflicts that claims further ahead would bring.
    waits: CachePadded<AtomicUsize>,
    stale: bool,
    /// When the board was made, and nanoseconds after it the first helper was ready
    /// (`u64::MAX`: none yet), for the block's statistics.
    made: Instant,
    helper_ready_ns: AtomicU64,
    /// The committer's core when the board was made, which helpers keep off
    /// (`hearth_storage::cpu`).
    committer_cpu: CallerCpu,
}

fn locked<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    // A panic while holding one leaves a value that is whole (a push or a take).
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

impl<'a> Board<'a> {
    /// The board of a block of `txs`, of which at most `room` fit its gas limit.
    pub(crate) fn new(
        txs: &'a [PooledTx],
        config: &ParallelConfig,
        (helpers, shape): (usize, Shape),
        room: usize,
    ) -> Self {
        let plain = !config.stale_helpers && shape.mostly_plain;
        let read_ahead = plain.then(|| ReadAhead::new(room.min(txs.len())));
        // A block that reads ahead claims no run: it needs no run slots or sender hints.
        let speculates = read_ahead.is_none();
        Self {
            txs,
            position: CachePadded::new(AtomicUsize::new(0)),
            window: HELPER_WINDOW_PER_THREAD * (helpers + 1),
            same_sender_before: OnceLock::new(),
            // Whole rows of `RUN_STRIDE`, which `slot` spreads the transactions over.
            runs: (0..if speculates { txs.len().div_ceil(RUN_STRIDE) * RUN_STRIDE } else { 0 })
                .map(|_| Mutex::new(Slot::Free))
                .collect(),
            published: Published::default(),
            read_ahead,
            spent: (0..helpers).map(|_| CachePadded::default()).collect(),
            stop: CachePadded::new(AtomicBool::new(false)),
            hot: CachePadded::new(AtomicBool::new(false)),
            helpers,
            live: CachePadded::new(AtomicUsize::new(helpers)),
            run_ns: CachePadded::new(AtomicU64::new(0)),
            waits: CachePadded::new(AtomicUsize::new(0)),
            stale: config.stale_helpers,
            made: Instant::now(),
            helper_ready_ns: AtomicU64::new(u64::MAX),
            committer_cpu: CallerCpu::now(),
        }
    }

    /// Called by the committer once it started the helpers: lets one placed on its core run
    /// and move off it now (`CallerCpu::let_started_move`).
    pub(crate) fn helpers_started(&self) {
        self.committer_cpu.let_started_move();
    }

    /// Notes that a helper is ready to claim (the first one's time is kept).
    fn helper_ready(&self) {
        let ns = u64::try_from(self.made.elapsed().as_nanos()).unwrap_or(u64::MAX - 1);
        let _ = self.helper_ready_ns.compare_exchange(
            u64::MAX,
            ns,
            Ordering::AcqRel,
            Ordering::Acquire,
        );
    }

    pub(crate) const fn helpers(&self) -> usize {
        self.helpers
    }

    /// The block's read-ahead, when it reads ahead instead of speculating.
    pub(crate) const fn read_ahead(&self) -> Option<&ReadAhead> {
        self.read_ahead.as_ref()
    }

    /// Tells the helpers to stop after their current run (the block's loop ended).
    pub(crate) fn stop(&self) {
        self.stop.store(true, Ordering::Release);
    }

    /// Whether `index` follows a transaction of its sender that is not committed yet: its
    /// run now would read the sender's nonce before that transaction's and fail validation
    /// for certain. Stale helpers (a test mode that runs every transaction) ignore the hint.
    fn follows_uncommitted(&self, index: usize) -> bool {
        let before = self.hints()[index];
        !self.stale
            && before != u32::MAX
            && usize::try_from(before).unwrap_or(usize::MAX)
                >= self.position.load(Ordering::Acquire)
    }

    /// The dependency hints (`same_sender_before`), made by the first helper to ask.
    fn hints(&self) -> &[u32] {
        self.same_sender_before.get_or_init(|| same_sender_before(self.txs))
    }

    /// Claims `index` for a helper if no one has taken it.
    fn try_claim(&self, index: usize) -> bool {
        let mut slot = locked(&self.runs[self.slot(index)]);
        let free = matches!(*slot, Slot::Free);
        if free {
            *slot = Slot::Claimed;
        }
        free
    }

    /// Where transaction `index`'s claim is kept in `runs`: consecutive transactions
    /// `RUN_STRIDE` slots apart (a slot is 16 bytes: four to a cache line), so that the lines
    /// the committer and a helper meet on belong to transactions many apart in time.
    fn slot(&self, index: usize) -> usize {
        let rows = self.runs.len() / RUN_STRIDE;
        (index % RUN_STRIDE) * rows + index / RUN_STRIDE
    }

    /// Hands a helper's run of `index` to the committer; the run comes back when the committer
    /// no longer wants it (it executed the transaction itself), for the helper to free.
    fn put(&self, index: usize, run: Box<Speculated>) -> Option<Box<Speculated>> {
        let mut slot = locked(&self.runs[self.slot(index)]);
        if matches!(*slot, Slot::Done) {
            return Some(run);
        }
        *slot = Slot::Ran(run);
        None
    }

    /// The committer reaches `index`: takes a helper's run of it, or takes the transaction
    /// when no helper has.
    fn arrive(&self, index: usize) -> Arrival {
        let mut slot = locked(&self.runs[self.slot(index)]);
        match std::mem::replace(&mut *slot, Slot::Done) {
            Slot::Ran(run) => Arrival::Run(run),
            // Stale helpers run every transaction: one not claimed yet is theirs to run.
            Slot::Free if self.stale && self.live.load(Ordering::Acquire) > 0 => {
                *slot = Slot::Free;
                Arrival::Busy
            }
            Slot::Claimed => {
                *slot = Slot::Claimed;
                Arrival::Busy
            }
            Slot::Free | Slot::Done => Arrival::Mine,
        }
    }

    /// The committer stops waiting for a helper's run of `index`: the run if it came in the
    /// meantime; otherwise the helper will free it.
    fn give_up(&self, index: usize) -> Option<Box<Speculated>> {
        match std::mem::replace(&mut *locked(&self.runs[self.slot(index)]), Slot::Done) {
            Slot::Ran(run) => Some(run),
            _ => None,
        }
    }

    /// Waits until the committer moves past `position` or the block's loop ends.
    fn wait_past(&self, position: usize) {
        let mut spins = 0u32;
        while self.position.load(Ordering::Acquire) == position
            && !self.stop.load(Ordering::Acquire)
        {
            spins += 1;
            if spins < 64 {
                std::hint::spin_loop();
            } else {
                std::thread::yield_now();
            }
        }
    }

    /// Whether helpers read the committed values.
    fn followed(&self) -> bool {
        self.helpers > 0 && !self.stale
    }

    /// Frees what the committer is done with of helper `me`'s runs, on the helper's thread
    /// where it was allocated (taking it in exchange for `freed`'s emptied vectors, so that
    /// neither side allocates to hand runs over), and keeps their read logs in `spare` for the
    /// next runs to record into (`SPARE_LOGS` at most).
    fn reclaim(&self, me: usize, freed: &mut Spent, spare: &mut Vec<ReadLog>) {
        std::mem::swap(&mut *locked(&self.spent[me]), freed);
        for run in freed.runs.drain(..) {
            let Speculated { accounts, slots, .. } = *run;
            if spare.len() < SPARE_LOGS && slots.capacity() <= SPARE_LOG_READS {
                spare.push(ReadLog { accounts, slots });
            }
        }
        freed.states.clear();
    }
}

/// The snapshot accounts a block of plain transfers reads (each transaction's sender and
/// recipient), read ahead of its committer by the helpers.
///
/// A plain transfer executes in a couple of microseconds once its two accounts are read, and
/// reading them from the store costs about as much again. A speculative run of it saves the
/// committer nothing: taking the run over (its state made on the other core, validated, then
/// committed) costs the committer what executing it does. So in such a block the committer
/// executes every transaction in order, as a sequential block does, and the helpers read the
/// accounts of the transactions ahead of it, each published once read, which the committer
/// takes without a lock; a transaction whose accounts are not read yet reads them from the
/// store itself. The results are those of sequential execution by construction: the values
/// are the snapshot's own, read through the same view.
#[derive(Debug)]
pub(crate) struct ReadAhead {
    /// Per transaction (the first that fit the block's gas limit: a packed pool may offer
    /// many more), its sender's and recipient's snapshot accounts, once read.
    read: Vec<OnceLock<[Option<ReadAccount>; 2]>>,
    /// The next transaction no helper has taken.
    next: AtomicUsize,
    /// The transactions root of the whole block, which a helper that has read everything
    /// computes while the committer is still executing (`root_taken`: one helper does);
    /// the block uses it when it includes every transaction.
    transactions_root: OnceLock<alloy_primitives::B256>,
    root_taken: AtomicBool,
}

/// An account as the snapshot holds it (`None`: absent), with its address.
type ReadAccount = (Address, Option<StoredAccount>);

/// How far ahead of the committer a helper that fell behind starts again: a read it starts
/// closer would not be done before the committer needs it.
const READ_AHEAD_LEAD: usize = 4;

impl ReadAhead {
    fn new(txs: usize) -> Self {
        Self {
            read: (0..txs).map(|_| OnceLock::new()).collect(),
            next: AtomicUsize::new(READ_AHEAD_LEAD),
            transactions_root: OnceLock::new(),
            root_taken: AtomicBool::new(false),
        }
    }

    /// The transactions root of all the block's transactions, when a helper computed it.
    pub(crate) fn transactions_root(&self) -> Option<alloy_primitives::B256> {
        self.transactions_root.get().copied()
    }

    /// Reads transaction `index`'s accounts from `view`. A read that fails is left out: the
    /// committer's own read of it reports the error.
    fn fill(&self, index: usize, tx: &PooledTx, view: &StateView) {
        let read = |address: Address| view.account(&address).ok().map(|account| (address, account));
        let recipient = tx.tx.kind().to().copied().filter(|to| *to != tx.sender);
        // Each transaction is taken by one helper.
        let _ = self.read[index].set([read(tx.sender), recipient.and_then(read)]);
    }
}

/// The committer's database reads the accounts helpers read ahead before the store.
impl PublishedValues for ReadAhead {
    /// The snapshot's account at `address` when transaction `index` names it and its
    /// accounts are read.
    fn snapshot_account(&self, index: usize, address: &Address) -> Option<Option<StoredAccount>> {
        let read = self.read.get(index)?.get()?;
        read.iter().flatten().find(|(a, _)| a == address).map(|(_, account)| account.clone())
    }
}

/// A helper of a block that reads ahead: takes the next transaction and reads its accounts,
/// starting again a little ahead of the committer when it caught up with it, until none is
/// left or the loop ends; then, if the loop goes on, computes the block's transactions root.
fn read_ahead(board: &Board<'_>, ahead: &ReadAhead, view: &StateView) {
    while !board.stop.load(Ordering::Acquire) {
        let index = ahead.next.fetch_add(1, Ordering::AcqRel);
        if index >= ahead.read.len() {
            break;
        }
        let Some(tx) = board.txs.get(index) else { break };
        let lead = board.position.load(Ordering::Acquire) + READ_AHEAD_LEAD;
        if index < lead {
            ahead.next.fetch_max(lead, Ordering::AcqRel);
            continue;
        }
        ahead.fill(index, tx, view);
    }
    // Everything is read and the committer is still executing: hash the block's transactions
    // meanwhile, which would otherwise come after its loop.
    // Only a block whose every transaction can fit may include them all.
    if ahead.read.len() == board.txs.len()
        && !board.stop.load(Ordering::Acquire)
        && !ahead.root_taken.swap(true, Ordering::AcqRel)
    {
        let root = hearth_storage::transactions_root_of(board.txs.iter().map(|tx| tx.tx.as_ref()));
        let _ = ahead.transactions_root.set(root);
    }
}

/// What a helper allocated and the committer is done with.
#[derive(Debug, Default)]
struct Spent {
    #[expect(
        clippy::vec_box,
        reason = "the boxes are what moves: the committer took them out of the board"
    )]
    runs: Vec<Box<Speculated>>,
    states: Vec<EvmState>,
}

/// Most read logs a helper keeps for reuse: a window's worth of runs in flight, and a bound on
/// what one transaction's many reads can leave retained.
const SPARE_LOGS: usize = 2 * HELPER_WINDOW_PER_THREAD;
/// Most slot reads a kept log has room for (84 bytes each): the log of a run that read more is
/// freed, not kept.
const SPARE_LOG_READS: usize = 1024;

/// How far apart consecutive transactions' slots are on the board (`Board::slot`).
const RUN_STRIDE: usize = 16;

/// How far past the committer's position a helper may claim, per thread of the block: a run
/// further ahead would read values older by more commits, and conflict more often.
const HELPER_WINDOW_PER_THREAD: usize = 8;

/// A helper's lead before it has measured one ([`Lead`]).
const LEAD_START: usize = 2;

/// How far ahead of the committer a helper claims: far enough that its run is done when the
/// committer gets there, and no further (a run further ahead reads values older by more
/// commits). Measured by the helper as it goes: its runs' duration over the committer's time
/// per transaction, plus one.
#[derive(Debug, Default)]
struct Lead {
    /// Moving averages, in nanoseconds (0: not measured yet).
    run_ns: u64,
    tx_ns: u64,
    /// When the committer was last seen to move, and where it was.
    seen: Option<(Instant, usize)>,
}

impl Lead {
    fn average(old: u64, new: u64) -> u64 {
        if old == 0 { new } else { old - old / 4 + new / 4 }
    }

    /// Notes the committer at `position` at `now`.
    fn committer_at(&mut self, now: Instant, position: usize) {
        match self.seen {
            Some((then, at)) if position > at => {
                let per_tx =
                    now.saturating_duration_since(then).as_nanos() / (position - at) as u128;
                self.tx_ns = Self::average(self.tx_ns, u64::try_from(per_tx).unwrap_or(u64::MAX));
                self.seen = Some((now, position));
            }
            Some(_) => {}
            None => self.seen = Some((now, position)),
        }
    }

    /// Notes that a run took `took`.
    fn ran(&mut self, took: Duration) {
        let took = u64::try_from(took.as_nanos()).unwrap_or(u64::MAX);
        self.run_ns = Self::average(self.run_ns, took);
    }

    /// Transactions past the committer's position to claim at, under `window`.
    fn get(&self, window: usize) -> usize {
        let lead = if self.run_ns == 0 || self.tx_ns == 0 {
            LEAD_START
        } else {
            usize::try_from(self.run_ns / self.tx_ns).unwrap_or(usize::MAX).saturating_add(2)
        };
        lead.clamp(1, window.saturating_sub(1).max(1))
    }
}

/// A helper's claims: where it may claim next, and how far ahead.
#[derive(Debug, Default)]
struct Claims {
    /// Past the helper's last claim.
    cursor: usize,
    lead: Lead,
    /// Transactions left to the committer between two of this helper's claims. A helper that
    /// claims on right after its last claim hands the committer runs faster than it makes
    /// them when its runs cost what the committer's executions do (heavy calls): the committer
    /// then catches up and waits. Each wait it reports (`Board::waits`) widens the gap by one;
    /// `GAP_EASE` looks without one narrow it again.
    gap: usize,
    /// `Board::waits` when last looked at, and looks since the gap last changed.
    waits_seen: usize,
    calm: usize,
}

/// Looks for a claim without a wait of the committer after which a helper narrows its gap.
const GAP_EASE: usize = 32;

impl Claims {
    /// The first transaction from the helper's lead ahead of `position` that no one took and
    /// that does not follow its sender's uncommitted one, within the board's window. Stale
    /// helpers take every transaction in order.
    fn next(&mut self, board: &Board<'_>, position: usize) -> Claim {
        let len = board.txs.len();
        if self.cursor.max(position + 1) >= len {
            return Claim::End;
        }
        let (from, to) = if board.stale {
            (self.cursor, len)
        } else {
            self.adjust_gap(board.waits.load(Ordering::Acquire));
            let from = (self.cursor + self.gap).max(position + self.lead.get(board.window));
            (from, (position + board.window).min(len))
        };
        let mut blocked = false;
        for index in from..to {
            if board.follows_uncommitted(index) {
                blocked = true;
            } else if board.try_claim(index) {
                self.cursor = index + 1;
                return Claim::Run(index);
            }
        }
        Claim::Nothing { blocked }
    }

    /// Widens the gap when the committer waited since the last look (`waits`), narrows it
    /// after `GAP_EASE` looks without.
    fn adjust_gap(&mut self, waits: usize) {
        if waits != self.waits_seen {
            self.waits_seen = waits;
            self.gap = (self.gap + 1).min(HELPER_WINDOW_PER_THREAD);
            self.calm = 0;
        } else {
            self.calm += 1;
            if self.calm >= GAP_EASE {
                self.gap = self.gap.saturating_sub(1);
                self.calm = 0;
            }
        }
    }
}

/// Everything a helper needs to build its block EVM.
pub(crate) struct SpecInput<'a> {
    pub(crate) db: &'a ChainDb,
    pub(crate) defaults: &'a ExecConfig,
    pub(crate) parent_number: u64,
    pub(crate) env: &'a BlockEnvSpec,
    pub(crate) mode: BuildMode,
    /// The block's changes after the pre-block system calls.
    pub(crate) start: &'a BlockChanges,
}

/// Counts a helper out when it ends, however it ends.
struct Alive<'b>(&'b AtomicUsize);

impl Drop for Alive<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::AcqRel);
    }
}

/// A helper's block EVM: the block's, from the block's changes after its pre-block system
/// calls, reading what the committer publishes (unless the helpers run stale).
fn helper_evm<'c>(
    input: &SpecInput<'_>,
    board: &'c Board<'_>,
    codes: &'c mut CodeL1,
) -> BlockEvm<'c, (), Published> {
    let (mut evm, _) =
        block_evm(input.db, codes, input.defaults, input.parent_number, input.env, ());
    instrument(&mut evm);
    evm.precompiles.capture(input.defaults.show.console_in(input.mode));
    evm.ctx.cfg.disable_eip3607 = input.mode == BuildMode::Pack;
    evm.ctx.journaled_state.database.set_changes(input.start.clone());
    if board.followed() {
        evm.ctx.journaled_state.database.read_published(&board.published);
    }
    evm
}

/// A helper thread of a parallel block: claims transactions in block order and runs each
/// against the block's state as committed when it claimed it, until none is left or the
/// block's loop ends.
pub(crate) fn run_helper(input: &SpecInput<'_>, board: &Board<'_>, me: usize) {
    let _alive = Alive(&board.live);
    // On the committer's core a helper only takes the committer's time.
    board.committer_cpu.avoid();
    if let Some(ahead) = &board.read_ahead {
        board.helper_ready();
        read_ahead(board, ahead, &input.db.state_at(input.parent_number));
        return;
    }
    let mut codes = CodeL1::new(None);
    let mut evm = helper_evm(input, board, &mut codes);
    board.hints();
    board.helper_ready();
    // What the committer handed back, taken in exchange for these emptied vectors: both
    // keep their capacity, so neither side allocates to hand runs over.
    let mut freed = Spent::default();
    // The read logs of runs the committer is done with, for the next runs to record into
    // (`SPARE_LOGS` at most): two vectors each, grown as a run reads.
    let mut spare: Vec<ReadLog> = Vec::with_capacity(SPARE_LOGS);
    let mut claims = Claims::default();
    // Looks in a row that found nothing to claim but one sender's next transactions (a nonce
    // chain, which the committer executes in place one by one). Looking again at every
    // commit takes the position's cache line from the committer for nothing: pause instead.
    let mut blocked = 0usize;
    while !board.stop.load(Ordering::Acquire) {
        board.reclaim(me, &mut freed, &mut spare);
        if board.hot.load(Ordering::Acquire) || blocked >= SKIP_STREAK {
            blocked = 0;
            std::thread::sleep(HOT_PAUSE);
            continue;
        }
        let position = board.position.load(Ordering::Acquire);
        let started = Instant::now();
        claims.lead.committer_at(started, position);
        let index = match claims.next(board, position) {
            Claim::Run(index) => index,
            Claim::End => break,
            Claim::Nothing { blocked: chain } => {
                blocked = if chain { blocked + 1 } else { 0 };
                board.wait_past(position);
                continue;
            }
        };
        blocked = 0;
        let pooled = &board.txs[index];
        // The run reads the committed values as they are at each read; the committer compares
        // each value it read of a key the block wrote (`Committer::validate`).
        let log = spare.pop().unwrap_or_default();
        let run =
            std::panic::catch_unwind(AssertUnwindSafe(|| speculate(&mut evm, pooled, me, log)));
        let Ok(run) = run else {
            // The EVM may be left half-way: give the transaction back to the committer, stop.
            board.put(index, Box::new(Speculated::failed(me)));
            break;
        };
        claims.lead.ran(started.elapsed());
        board.run_ns.store(claims.lead.run_ns, Ordering::Relaxed);
        // A run the committer no longer wants is freed here.
        drop(board.put(index, Box::new(run)));
    }
}

/// Consecutive failed validations after which the committer executes in place (hot mode).
const HOT_STREAK: usize = 3;
/// Transactions a hot mode lasts at first unless a run validates; doubled (up to the maximum)
/// each time it is entered again, halved by each run that validates.
const HOT_BACKOFF_MIN: usize = 32;
const HOT_BACKOFF_MAX: usize = 1024;
/// The least the committer waits for a helper's run of the transaction it must commit next
/// (the helper's lead fell short) before it executes the transaction itself: a few cheap
/// transactions' worth; twice a run's usual time when that is longer.
const HELPER_WAIT: Duration = Duration::from_micros(20);
/// Wasted runs after which a block where they outnumber the validated ones continues
/// without helpers.
const GIVE_UP_WASTED: usize = 24;
/// Transactions in a row the committer executed in place because each follows its sender's
/// transaction within the helpers' window (one sender's nonce chain, which no helper can run
/// ahead of) after which the block continues without helpers: enough that a few senders'
/// interleaved chains keep them.
const GIVE_UP_CHAINED: usize = 64;
/// How long a helper sleeps between looks while the committer is in hot mode.
const HOT_PAUSE: Duration = Duration::from_micros(50);
/// Looks in a row in which a helper found nothing to claim but transactions that follow their
/// sender's uncommitted one, before it pauses for `HOT_PAUSE`: so that a block of one
/// sender's transactions costs the committer no more than a sequential block does.
const SKIP_STREAK: usize = 8;

/// The commit side of a parallel block, on the block's executor: validates each transaction's
/// speculative run in block order, or executes it in place.
#[derive(Debug)]
pub(crate) struct Committer<'b, 'a> {
    board: &'b Board<'a>,
    coinbase: Address,
    stats: ParallelStats,
    /// Failed validations in a row.
    streak: usize,
    /// Transactions still to execute in place without speculating (hot mode), and the next
    /// hot mode's length.
    hot_left: usize,
    backoff: usize,
    /// Wasted runs in this block (failed or abandoned).
    wasted: usize,
    /// Transactions in a row executed in place that no helper could run ahead (each follows
    /// its sender's transaction within the window).
    chained: usize,
    /// The helpers were stopped for the rest of the block: it runs sequentially.
    alone: bool,
}

impl<'b, 'a> Committer<'b, 'a> {
    pub(crate) fn new(board: &'b Board<'a>, coinbase: Address) -> Self {
        let stats = ParallelStats {
            parallel: true,
            threads: board.helpers + 1,
            read_ahead: board.read_ahead.is_some(),
            ..Default::default()
        };
        Self {
            board,
            coinbase,
            stats,
            streak: 0,
            hot_left: 0,
            backoff: HOT_BACKOFF_MIN,
            wasted: 0,
            chained: 0,
            // A block that reads ahead speculates nothing: the committer executes every
            // transaction, as when the helpers are stopped.
            alone: board.read_ahead.is_some(),
        }
    }

    pub(crate) fn stats(&self) -> ParallelStats {
        let ready = self.board.helper_ready_ns.load(Ordering::Acquire);
        ParallelStats {
            helper_start: (ready != u64::MAX).then(|| Duration::from_nanos(ready)),
            ..self.stats
        }
    }

    /// Runs transaction `index` as sequential execution would at this point of the block and
    /// commits it; every transaction below `index` the loop did not run was skipped. With the
    /// result comes its logs' bloom when a speculative run already made it.
    pub(crate) fn run(
        &mut self,
        evm: &mut BlockEvm<'_, (), ReadAhead>,
        index: usize,
        pooled: &PooledTx,
    ) -> Result<(ExecutionResult, Option<Bloom>), EVMError<StorageError>> {
        let board = self.board;
        let executed = self.execute(evm, index, pooled);
        let result = executed.map(|(ResultAndState { result, state }, bloom, helper)| {
            let db = &mut evm.ctx.journaled_state.database;
            // Publishing is for the helpers' reads only (validation reads this database's own
            // changes): once they are stopped, or when there are none, commits just commit.
            if board.helpers > 0 && !self.alone {
                db.commit_publishing(index, &state, &board.published, &self.coinbase);
                // No room to publish (not reached before memory runs out): helpers would read
                // ever staler values, so the block goes on alone.
                if board.published.is_full() {
                    self.go_alone();
                }
            } else {
                db.commit_ref(&state);
            }
            if let Some(helper) = helper {
                locked(&board.spent[helper]).states.push(state);
            }
            (result, bloom)
        });
        board.position.store(index + 1, Ordering::Release);
        result
    }

    /// The outcome of `index` at this point of the block: its speculative run's if still valid,
    /// else an execution here.
    fn execute(
        &mut self,
        evm: &mut BlockEvm<'_, (), ReadAhead>,
        index: usize,
        pooled: &PooledTx,
    ) -> Result<(ResultAndState, Option<Bloom>, Option<usize>), EVMError<StorageError>> {
        let board = self.board;
        if let Some(mut run) = self.helper_run(index) {
            self.chained = 0;
            self.stats.speculated += 1;
            let db = &mut evm.ctx.journaled_state.database;
            let bloom = run.bloom;
            let helper = run.helper;
            let console = std::mem::take(&mut run.console);
            let called = std::mem::take(&mut run.called);
            let validated = self.validate(db, &mut run).map_err(EVMError::Database);
            locked(&board.spent[helper]).runs.push(run);
            if let Some(outcome) = validated? {
                // The block loop takes the console output from the committer's tap, which
                // did not run this one: it gets the helper's.
                evm.precompiles.put(console);
                // And the accounts its calls named (the commit adds the ones it touched).
                evm.ctx.journaled_state.database.put_touched(called);
                self.streak = 0;
                // One run that validates among frequent conflicts (a hot contract, where a
                // helper's run now and then lands right after the commit it needed) must not
                // restart the back-off from its shortest: halve it.
                self.backoff = (self.backoff / 2).max(HOT_BACKOFF_MIN);
                self.set_hot(0);
                return Ok((outcome, Some(bloom), Some(helper)));
            }
            self.stats.reexecuted += 1;
            self.wasted();
            return evm.transact(tx_env(pooled)).map(|outcome| (outcome, None, None));
        }
        self.stats.direct += 1;
        if self.hot_left > 0 {
            self.set_hot(self.hot_left - 1);
        } else if !self.alone {
            self.note_chain(index);
        }
        evm.transact(tx_env(pooled)).map(|outcome| (outcome, None, None))
    }

    /// A helper's run of `index`, waiting a little for one still running; `None` when no
    /// helper took `index` (the committer executes it).
    fn helper_run(&mut self, index: usize) -> Option<Box<Speculated>> {
        let board = self.board;
        if self.alone {
            return None;
        }
        let mut waiting: Option<Instant> = None;
        let mut spins = 0u32;
        loop {
            match board.arrive(index) {
                Arrival::Run(run) => {
                    let waited = waiting.map_or(Duration::ZERO, |w| w.elapsed());
                    self.stats.waited += waited;
                    // A long wait says the helpers claim too close together (heavy calls).
                    if waited >= HELPER_WAIT {
                        board.waits.fetch_add(1, Ordering::AcqRel);
                    }
                    return Some(run);
                }
                Arrival::Mine => return None,
                Arrival::Busy => {}
            }
            if board.stale {
                // The helpers run every transaction: wait for this one unless none is left.
                if board.live.load(Ordering::Acquire) == 0 {
                    return board.give_up(index);
                }
                std::thread::yield_now();
                continue;
            }
            // When conflicts are frequent the helper's run is likely stale: execute here.
            if self.hot_left > 0 {
                let run = board.give_up(index);
                self.stats.abandoned += usize::from(run.is_none());
                return run;
            }
            // Wait for the helper's run, which is cheaper than running it again: it started
            // before the committer got here, so it is usually nearly done. A helper that does
            // not deliver within twice a run's usual time has likely lost its core (a busy
            // machine): execute here and count its run as wasted, so that repeated misses
            // pause the helpers as conflicts do.
            let started = *waiting.get_or_insert_with(Instant::now);
            spins += 1;
            if !spins.is_multiple_of(64) {
                std::hint::spin_loop();
                continue;
            }
            let patience =
                HELPER_WAIT.max(Duration::from_nanos(board.run_ns.load(Ordering::Relaxed)) * 2);
            let waited = started.elapsed();
            if waited > patience {
                self.stats.waited += waited;
                board.waits.fetch_add(1, Ordering::AcqRel);
                let run = board.give_up(index);
                if run.is_none() {
                    self.stats.abandoned += 1;
                    self.wasted();
                }
                return run;
            }
            std::thread::yield_now();
        }
    }

    /// Counts `index`, executed in place, toward a nonce chain when it follows its sender's
    /// transaction within the helpers' window (no helper could run it ahead); a long chain
    /// is better run alone, without publishing every commit for helpers that cannot use it.
    fn note_chain(&mut self, index: usize) {
        let before = self
            .board
            .same_sender_before
            .get()
            .and_then(|hints| hints.get(index).copied())
            .unwrap_or(u32::MAX);
        let near = before != u32::MAX
            && index.saturating_sub(usize::try_from(before).unwrap_or(0)) <= self.board.window;
        self.chained = if near { self.chained + 1 } else { 0 };
        if self.chained >= GIVE_UP_CHAINED {
            self.go_alone();
        }
    }

    /// A helper's run was wasted (it failed validation, or the committer executed its
    /// transaction first); after `HOT_STREAK` in a row the committer goes hot.
    fn wasted(&mut self) {
        self.streak += 1;
        self.wasted += 1;
        // Stale helpers run every transaction: the committer never goes hot there.
        if self.board.stale {
            return;
        }
        // A block whose speculation mostly fails (a hot contract, a chain of dependent
        // transfers) is better run alone: a helper running beside the committer slows it even
        // when the helper's work is thrown away (they share caches, memory and, on a busy
        // machine, the core), so after enough waste the rest of the block is sequential.
        let validated = self.stats.speculated - self.stats.reexecuted;
        if self.wasted >= GIVE_UP_WASTED && self.wasted > validated {
            self.go_alone();
            return;
        }
        if self.streak >= HOT_STREAK {
            self.streak = 0;
            self.set_hot(self.backoff);
            self.backoff = (self.backoff * 2).min(HOT_BACKOFF_MAX);
        }
    }

    /// Stops the helpers: the rest of the block runs sequentially here.
    fn go_alone(&mut self) {
        self.alone = true;
        self.set_hot(0);
        self.board.stop();
    }

    /// Enters (or leaves, with 0) hot mode for `left` transactions executed in place.
    fn set_hot(&mut self, left: usize) {
        if (self.hot_left > 0) != (left > 0) {
            self.board.hot.store(left > 0, Ordering::Release);
        }
        self.hot_left = left;
    }

    /// The run's outcome if every value it read is still what the block holds, with the
    /// coinbase balance rebased when the coinbase is lazy; `None`: run it again.
    fn validate(
        &self,
        db: &mut ExecDb<'_, ReadAhead>,
        run: &mut Speculated,
    ) -> Result<Option<ResultAndState>, StorageError> {
        let Some(mut outcome) = run.outcome.take() else { return Ok(None) };
        let lazy_coinbase = !run.observes_coinbase;
        let mut coinbase_read = None;
        // The coinbase's balance now, when the loop below read it (the rebase needs it too).
        let mut coinbase_now = None;
        for (address, seen) in &run.accounts {
            let lazy = lazy_coinbase && *address == self.coinbase;
            if lazy {
                coinbase_read.get_or_insert(seen.as_ref().map_or(U256::ZERO, |i| i.balance));
            }
            // What the block never wrote reads as the snapshot does on every thread.
            let now = match db.account_now(address) {
                AccountNow::Snapshot => continue,
                AccountNow::Known(now) => now,
                AccountNow::Read => db.basic(*address)?,
            };
            if lazy {
                coinbase_now = Some(now.as_ref().map_or(U256::ZERO, |i| i.balance));
            }
            let same = if lazy { same_but_balance(&now, seen) } else { same_account(&now, seen) };
            if !same {
                return Ok(None);
            }
        }
        for (address, slot, seen) in &run.slots {
            if db.slot_now(address, slot).is_some_and(|now| now != *seen) {
                return Ok(None);
            }
        }
        if !lazy_coinbase {
            return Ok(Some(outcome));
        }
        let Some(account) = outcome.state.get_mut(&self.coinbase) else {
            return Ok(Some(outcome));
        };
        // The run credited the fee to the balance it read; credit it to the balance now.
        let Some(read) = coinbase_read else { return Ok(None) };
        let written = account.info.balance;
        if written < read || written == U256::MAX {
            return Ok(None);
        }
        let now = match coinbase_now {
            Some(balance) => balance,
            None => db.basic(self.coinbase)?.map_or(U256::ZERO, |i| i.balance),
        };
        let Some(balance) = now.checked_add(written - read) else { return Ok(None) };
        account.info.balance = balance;
        Ok(Some(outcome))
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
    use alloy_consensus::{SignableTransaction, TxEip1559};
    use alloy_primitives::{Signature, TxKind};
    use std::sync::Arc;

    /// `n` calls from distinct senders (input, so the block speculates rather than reads ahead).
    fn calls(n: u8) -> Vec<PooledTx> {
        (0..n)
            .map(|i| {
                let tx = TxEip1559 {
                    chain_id: 1,
                    gas_limit: 50_000,
                    to: TxKind::Call(Address::with_last_byte(0xcc)),
                    input: vec![i].into(),
                    ..Default::default()
                };
                let signed = tx.into_signed(Signature::test_signature());
                let hash = *signed.hash();
                PooledTx { tx: Arc::new(signed.into()), sender: Address::with_last_byte(i), hash }
            })
            .collect()
    }

    /// A transaction from sender `from`: a plain transfer (21,000 gas, no input) or a call.
    fn tx(from: u16, plain: bool) -> PooledTx {
        let tx = TxEip1559 {
            chain_id: 1,
            gas_limit: if plain { 21_000 } else { 60_000 },
            to: TxKind::Call(Address::with_last_byte(0xcc)),
            input: if plain { Vec::new() } else { vec![1] }.into(),
            ..Default::default()
        };
        let signed = tx.into_signed(Signature::test_signature());
        let hash = *signed.hash();
        let sender = Address::left_padding_from(&from.to_be_bytes());
        PooledTx { tx: Arc::new(signed.into()), sender, hash }
    }

    #[test]
    fn a_sample_is_everything_up_to_its_size_and_even_across_periods_past_it() {
        assert_eq!(sample(10, 512).collect::<Vec<_>>(), (0..10).collect::<Vec<_>>());
        let picked: Vec<usize> = sample(12_000, 512).collect();
        assert_eq!(picked.len(), 512);
        assert!(picked.iter().all(|&i| i < 12_000));
        // A stride would land on one residue of a period that divides it; these spread.
        for period in [2usize, 3, 4, 12, 24] {
            let mut hits = vec![0usize; period];
            for &i in &picked {
                hits[i % period] += 1;
            }
            let even = 512 / period;
            assert!(
                hits.iter().all(|&h| h.abs_diff(even) <= even / 4 + 2),
                "period {period}: {hits:?}"
            );
        }
    }

    #[test]
    fn a_blocks_shape_sees_interleaved_kinds_and_a_dominating_sender() {
        // Calls between every pair of transfers: under a fifth of the gas is plain.
        let interleaved: Vec<PooledTx> = (0..6_000u16).map(|i| tx(i, i % 3 == 0)).collect();
        let shape = Shape::of(&interleaved);
        assert!(!shape.mostly_plain && !shape.one_sender_dominates);
        let transfers: Vec<PooledTx> = (0..6_000u16).map(|i| tx(i, true)).collect();
        assert!(Shape::of(&transfers).mostly_plain);
        // Nine in ten transactions from one sender.
        let one: Vec<PooledTx> =
            (0..6_000u16).map(|i| tx(if i % 10 == 0 { i } else { 0 }, false)).collect();
        assert!(Shape::of(&one).one_sender_dominates);
    }

    fn board(txs: &[PooledTx]) -> Board<'_> {
        let config = ParallelConfig::new(ParallelMode::Always, 2).expect("config");
        Board::new(txs, &config, (1, Shape::of(txs)), txs.len())
    }

    fn ran() -> Box<Speculated> {
        Box::new(Speculated::failed(0))
    }

    #[test]
    fn a_transaction_goes_to_whoever_takes_it_first_and_a_late_run_returns_to_its_helper() {
        let txs = calls(4);
        let board = board(&txs);
        // No helper took 0: the committer executes it, and no helper can take it after.
        assert!(matches!(board.arrive(0), Arrival::Mine));
        assert!(!board.try_claim(0));
        // A helper's run handed in before the committer gets there is the committer's.
        assert!(board.try_claim(1));
        assert!(!board.try_claim(1), "a claim is taken once");
        assert!(board.put(1, ran()).is_none());
        assert!(matches!(board.arrive(1), Arrival::Run(_)));
        // Still running when the committer gets there: it waits, then gives up; the run
        // handed in after that goes back to the helper, which frees it.
        assert!(board.try_claim(2));
        assert!(matches!(board.arrive(2), Arrival::Busy));
        assert!(board.give_up(2).is_none());
        assert!(board.put(2, ran()).is_some());
        // Handed in between the committer's look and its giving up: the committer takes it.
        assert!(board.try_claim(3));
        assert!(matches!(board.arrive(3), Arrival::Busy));
        assert!(board.put(3, ran()).is_none());
        assert!(board.give_up(3).is_some());
    }

    #[test]
    fn a_helper_claims_ahead_of_the_committer_within_its_window() {
        let txs = calls(40);
        let board = board(&txs);
        let mut claims = Claims::default();
        // Before anything is measured, the starting lead.
        assert!(matches!(claims.next(&board, 0), Claim::Run(i) if i == LEAD_START));
        assert!(matches!(claims.next(&board, 0), Claim::Run(i) if i == LEAD_START + 1));
        // Runs twice a transaction's time: two ahead, plus two.
        let now = Instant::now();
        claims.lead.committer_at(now, 10);
        claims.lead.committer_at(now + Duration::from_micros(50), 20);
        claims.lead.ran(Duration::from_micros(10));
        assert_eq!(claims.lead.get(board.window), 4);
        assert!(matches!(claims.next(&board, 20), Claim::Run(24)));
        // Never past the window, however long the runs.
        claims.lead.ran(Duration::from_secs(1));
        assert_eq!(claims.lead.get(board.window), board.window - 1);
        // Everything within the window taken: nothing now; past the end: nothing ever.
        for index in 25..36 {
            board.try_claim(index);
        }
        assert!(matches!(claims.next(&board, 20), Claim::Nothing { blocked: false }));
        assert!(matches!(claims.next(&board, 39), Claim::End));
    }

    #[test]
    fn a_long_wait_of_the_committer_spaces_the_claims_and_calm_closes_them_again() {
        let mut claims = Claims::default();
        claims.adjust_gap(0);
        assert_eq!(claims.gap, 0);
        claims.adjust_gap(1);
        claims.adjust_gap(2);
        assert_eq!(claims.gap, 2, "one step per wait reported");
        for _ in 0..GAP_EASE {
            claims.adjust_gap(2);
        }
        assert_eq!(claims.gap, 1);
        for _ in 0..10 * GAP_EASE {
            claims.adjust_gap(2);
        }
        assert_eq!(claims.gap, 0);
        for waits in 3..100 {
            claims.adjust_gap(waits);
        }
        assert_eq!(claims.gap, HELPER_WINDOW_PER_THREAD, "bounded");
    }
}
