//! The executors' call path run on the RPC worker's own thread (`InlineCalls`): a cheap call
//! answers without the trip to an executor thread and back.
//!
//! Each RPC worker thread gets its own [`ExecutorActor`] (not started as an actor: its call
//! method only), made on the thread's first call, so nothing is shared or locked. A call runs
//! there under a short time cap (`--executor.inline-budget`); one that hits it is handed to
//! the pool, which runs it again from the start under the node's own cap, and its target and
//! selector are remembered on that thread so that the next such call goes to the pool at once
//! (a contract whose getters are heavy wastes the budget once, not on every call). What an
//! RPC worker may not do is wait: a fork's reads may wait on the upstream, so on a fork every
//! call goes to the pool, and so does every call under `--print-traces` (a traced replay is
//! not cheap); and its executor keeps code in its own small cache only, reading what it lacks
//! from the store, never asking the shared code cache (an actor) and waiting for the reply.
//!
//! The same runner builds small blocks (`try_build`) on the thread that asks, which is the
//! miner's: a block whose transactions are given at most [`INLINE_BLOCK_GAS`] in all, never a
//! fork's. A build has no time cap, so the bound is on gas: a few transfers or token calls,
//! well under a millisecond; at worst (1M gas of the slowest opcodes and precompiles) tens of
//! milliseconds, which the pool's admissions on that thread then wait.

use std::cell::RefCell;
use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering::Relaxed};
use std::time::Duration;

use alloy_primitives::Address;
use hearth_messages::ExecError;
use hearth_messages::executor::{BuildBlock, BuildHere, Call, CallOutcome, InlineCalls};

use super::ExecutorActor;

/// Calls a thread remembers as too slow to run inline; past this many it forgets them all
/// (a bound on memory, and a second chance for contracts whose state changed).
const HEAVY_REMEMBERED: usize = 4096;

/// Runners a thread keeps executors for; past this many (tests start nodes by the dozen on one
/// thread) it drops them all.
const RUNNERS_PER_THREAD: usize = 8;

/// The most gas a block's transactions may be given for it to be built on the caller's thread
/// (the miner's, which the mempool shares): an automined block of a few transactions, whose
/// trip to an executor thread and back cost more than running it. A bound on how long a build
/// there can hold the pool's admissions (see the module docs); a block given more goes to the
/// pool.
const INLINE_BLOCK_GAS: u64 = 1_000_000;

/// How a call is recognised as "the same call" for [`HEAVY_REMEMBERED`]: its target (none for
/// a creation) and the first four bytes of its input (the selector).
type CallShape = (Option<Address>, [u8; 4]);

/// The inline runner of one node: how to make a thread's executor, and the time cap.
pub struct InlineExecutors {
    /// This runner's key in each thread's executors (several nodes may share a thread).
    id: usize,
    make: Arc<dyn Fn() -> ExecutorActor + Send + Sync>,
}

/// One thread's executor for one runner, with the call shapes that ran out of time there.
struct Here {
    executor: ExecutorActor,
    heavy: HashSet<CallShape>,
}

thread_local! {
    static EXECUTORS: RefCell<HashMap<usize, Here>> = RefCell::new(HashMap::new());
}

impl InlineExecutors {
    /// A runner whose threads each get the executor `make` returns, with its EVM time cap
    /// replaced by `budget` (calls only: a block build has no time cap). `make` runs on each
    /// thread at its first call or build, and must make an executor without the shared code
    /// cache (see the module docs).
    pub fn new(budget: Duration, make: impl Fn() -> ExecutorActor + Send + Sync + 'static) -> Self {
        static NEXT_ID: AtomicUsize = AtomicUsize::new(0);
        let make = move || {
            let mut executor = make();
            executor.config.evm_timeout = Some(budget);
            executor.retried_on_expiry = true;
            executor
        };
        Self { id: NEXT_ID.fetch_add(1, Relaxed), make: Arc::new(make) }
    }
}

impl std::fmt::Debug for InlineExecutors {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("InlineExecutors").field("id", &self.id).finish_non_exhaustive()
    }
}

impl InlineCalls for InlineExecutors {
    fn try_call(&self, call: &Call) -> Option<Result<CallOutcome, ExecError>> {
        let shape = shape(call);
        self.with_here(|here| {
            if here.heavy.contains(&shape)
                || here.executor.config.show.traces
                || here.executor.db.fork().is_some()
            {
                return None;
            }
            match here.executor.contained(false, |executor| executor.call(call)) {
                Err(ExecError::Timeout { .. }) => {
                    if here.heavy.len() >= HEAVY_REMEMBERED {
                        here.heavy.clear();
                    }
                    here.heavy.insert(shape);
                    None
                }
                // The pool answers a panic as it would (and its executor says so in the log).
                Err(ExecError::Panicked(_)) => None,
                outcome => Some(outcome),
            }
        })
    }

    fn try_build(&self, build: BuildBlock) -> BuildHere {
        let gas = build.txs.iter().try_fold(0u64, |sum, tx| {
            sum.checked_add(alloy_consensus::Transaction::gas_limit(&*tx.tx))
        });
        if gas.is_none_or(|gas| gas > INLINE_BLOCK_GAS) {
            return BuildHere::HandedBack(build);
        }
        self.with_here(|here| {
            if here.executor.db.fork().is_some() {
                return BuildHere::HandedBack(build);
            }
            BuildHere::Built(here.executor.contained(false, |executor| executor.build_block(build)))
        })
    }
}

impl InlineExecutors {
    /// Runs `work` with this thread's executor for this runner, made on first use.
    fn with_here<T>(&self, work: impl FnOnce(&mut Here) -> T) -> T {
        EXECUTORS.with(|executors| {
            let mut executors = executors.borrow_mut();
            if !executors.contains_key(&self.id) && executors.len() >= RUNNERS_PER_THREAD {
                executors.clear();
            }
            let here = executors
                .entry(self.id)
                .or_insert_with(|| Here { executor: (self.make)(), heavy: HashSet::new() });
            work(here)
        })
    }
}

fn shape(call: &Call) -> CallShape {
    let input = call.request.input.as_ref();
    let mut selector = [0u8; 4];
    let n = input.len().min(4);
    selector[..n].copy_from_slice(&input[..n]);
    (call.request.to, selector)
}

#[cfg(test)]
mod tests {
    use alloy_primitives::{Bytes, address, hex};
    use hearth_messages::executor::CallRequest;

    use super::*;

    const CHEAP: Address = address!("00000000000000000000000000000000000000c1");
    const ENDLESS: Address = address!("00000000000000000000000000000000000000c2");

    /// Code that returns 32 bytes of `byte`.
    fn returning(byte: u8) -> String {
        format!("7f{}60005260206000f3", hex::encode([byte; 32]))
    }

    /// A chain whose `CHEAP` returns 32 bytes of `byte` and whose `ENDLESS` loops until its
    /// gas runs out (a JUMPDEST, then a jump back to it), with its inline runner.
    fn runner(budget: Duration, byte: u8) -> InlineExecutors {
        let cheap = returning(byte);
        let (reader, mut config) =
            super::super::test_chain([(CHEAP, cheap.as_str()), (ENDLESS, "5b600056")]);
        config.gas_cap = 1_000_000_000;
        InlineExecutors::new(budget, move || {
            ExecutorActor::new(reader.clone(), config.clone(), None)
        })
    }

    fn call(to: Address) -> Call {
        Call { request: CallRequest { to: Some(to), ..Default::default() }, block: 0 }
    }

    fn output(outcome: Option<Result<CallOutcome, ExecError>>) -> Bytes {
        match outcome {
            Some(Ok(CallOutcome::Success { output, .. })) => output,
            other => panic!("expected an answer inline, got {other:?}"),
        }
    }

    #[test]
    fn cheap_calls_answer_inline_and_slow_ones_are_handed_on_then_remembered() {
        let inline = runner(Duration::from_millis(2), 0x2a);
        assert_eq!(output(inline.try_call(&call(CHEAP))), Bytes::from([0x2a; 32]));
        let first = std::time::Instant::now();
        assert!(inline.try_call(&call(ENDLESS)).is_none(), "over the budget: to the pool");
        let first = first.elapsed();
        assert!(first >= Duration::from_millis(2), "it ran until the cap: {first:?}");
        let again = std::time::Instant::now();
        assert!(inline.try_call(&call(ENDLESS)).is_none(), "remembered: to the pool");
        assert!(again.elapsed() < first, "at once: {:?} against {first:?}", again.elapsed());
        assert_eq!(output(inline.try_call(&call(CHEAP))), Bytes::from([0x2a; 32]));
    }

    /// A block on the test chain's genesis of calls to `CHEAP` whose gas limits are `gas`,
    /// from an account that holds nothing: the base fee and the fee cap are zero.
    fn block(reader: &hearth_storage::ChainDb, gas: &[u64]) -> BuildBlock {
        use alloy_consensus::{SignableTransaction, TxEip1559};
        use alloy_primitives::{B256, Signature, TxKind};
        use hearth_messages::executor::{BlockEnvSpec, BuildMode, PooledTx};
        let sender = Address::repeat_byte(0x5e);
        let txs = (0u64..)
            .zip(gas)
            .map(|(nonce, &gas_limit)| {
                let tx = TxEip1559 {
                    chain_id: 1,
                    nonce,
                    gas_limit,
                    to: TxKind::Call(CHEAP),
                    ..Default::default()
                };
                let signed = tx.into_signed(Signature::test_signature());
                let hash = *signed.hash();
                PooledTx { tx: std::sync::Arc::new(signed.into()), sender, hash }
            })
            .collect();
        let parent = reader.sealed_header(0).expect("store").expect("genesis");
        let env = BlockEnvSpec::dev(1, 12, Address::ZERO, 30_000_000, 0, B256::ZERO);
        BuildBlock { parent, env, txs, mode: BuildMode::Pack }
    }

    #[test]
    fn small_blocks_are_built_on_the_caller_s_thread_and_larger_ones_handed_back() {
        let (reader, config) = super::super::test_chain([(CHEAP, returning(1).as_str())]);
        let make = {
            let (reader, config) = (reader.clone(), config.clone());
            move || ExecutorActor::new(reader.clone(), config.clone(), None)
        };
        let inline = InlineExecutors::new(Duration::from_millis(2), make);
        let half = INLINE_BLOCK_GAS / 2;
        let BuildHere::Built(here) = inline.try_build(block(&reader, &[half, half])) else {
            panic!("handed back");
        };
        let here = here.expect("builds");
        // What the pool's executor (no time budget) makes of the same block.
        let mut pool = ExecutorActor::new(reader.clone(), config, None);
        let there = pool.build_block(block(&reader, &[half, half])).expect("builds");
        assert_eq!(here.draft.body.transactions.len(), 2, "both ran: {:?}", here.invalid);
        assert_eq!(here.outputs, vec![Some(Bytes::from([1; 32])); 2], "CHEAP's answer, twice");
        assert_eq!(here.draft.header, there.draft.header);
        assert_eq!(here.draft.receipts, there.draft.receipts);
        assert_eq!(here.outputs, there.outputs);
        assert_eq!(here.diff, there.diff);
        for over in [vec![INLINE_BLOCK_GAS + 1], vec![half, half, 1], vec![u64::MAX, 2]] {
            let BuildHere::HandedBack(back) = inline.try_build(block(&reader, &over)) else {
                panic!("{over:?}: not handed back");
            };
            assert_eq!(back.txs.len(), over.len(), "handed back whole");
        }
    }

    #[test]
    fn runners_of_two_nodes_on_one_thread_keep_their_own_executors() {
        let a = runner(Duration::from_millis(50), 0xaa);
        let b = runner(Duration::from_millis(50), 0xbb);
        for _ in 0..2 {
            assert_eq!(output(a.try_call(&call(CHEAP))), Bytes::from([0xaa; 32]));
            assert_eq!(output(b.try_call(&call(CHEAP))), Bytes::from([0xbb; 32]));
        }
    }
}
