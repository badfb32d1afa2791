//! Message-sequence tests: actors driven by messages, peers replaced by probes, assertions on
//! replies and on exactly what each probe received.

use std::sync::Arc;
use std::task::Poll;
use std::time::Duration;

use alloy_primitives::{Address, B256, Bytes, U256};
use hearth::config::NodeConfig;
use hearth_actors::miner::HeadWrites;
use hearth_actors::{MinerActor, MinerConfig, MinerPeers};
use hearth_messages::admission::{
    AdmissionLimits, QUEUE_DELAY_BUCKETS_MICROS, Refusal, WARM_UP_CALLS,
};
use hearth_messages::ask::Ask;
use hearth_messages::executor::{
    Admitted, BlockEnvSpec, BuildBlock, BuildMode, BuiltBlock, Call, CallOutcome, CallRequest,
    ExecutorClient, ExecutorLane, PooledTx,
};
use hearth_messages::interest::Interest;
use hearth_messages::mempool::{
    PendingNonce, PoolSize, SubmitTx, SubmitTxs, TakePending, ThenMine, TxsMined,
};
use hearth_messages::miner::{AutoMine, BetweenBlocks, MineBlocks};
use hearth_messages::state::{
    AccountPatch, BlockCommitted, CommitBlock, ListSnapshots, PatchState, Settle, SubscribeBlocks,
};
use hearth_messages::{ExecError, StateError, TxError};
use hearth_storage::{BlockDraft, StateDiff, StoredBody};
use tokio::sync::mpsc;

use crate::support::{GENESIS_TIME, Probe, TestNode, fixtures};

/// Checks that a rejection is the expected one.
type IsExpected = fn(&TxError) -> bool;

fn manual_mining() -> NodeConfig {
    let mut config = NodeConfig::for_tests();
    config.automine = false;
    config
}

#[actix::test]
async fn state_actor_refuses_a_block_that_does_not_extend_the_head() {
    let node = TestNode::start();
    let draft = BlockDraft {
        header: alloy_consensus::Header { number: 5, ..Default::default() },
        body: StoredBody { transactions: vec![], senders: vec![] },
        receipts: vec![],
        touched: Vec::new(),
    };
    let parent_root = node.node.chain.state_root_at(0).unwrap().unwrap();
    let commit = CommitBlock { draft, diff: StateDiff::default(), parent_root, received: None };
    let reply = node.node.state.send(commit).await.unwrap();
    assert!(matches!(reply, Err(StateError::NotNext { head: 0, got: 5 })), "{reply:?}");
    assert_eq!(node.node.chain.head_number(), Some(0), "nothing was written");
}

/// A block's diff carries whole accounts: the state owner refuses one built on a head state
/// that a patch changed after its build began, and the patch stays.
#[actix::test]
async fn state_actor_refuses_a_block_built_before_the_head_state_changed() {
    let node = TestNode::start_with(manual_mining());
    let bob = node.signer(1).address();
    let built_on = node.node.chain.state_root_at(0).unwrap().unwrap();
    let patch = PatchState { address: bob, change: AccountPatch::Balance(U256::from(1_000)) };
    let head_root = node.node.state.send(patch).await.unwrap().unwrap();
    assert_ne!(head_root, built_on);
    let draft = BlockDraft {
        header: alloy_consensus::Header { number: 1, ..Default::default() },
        body: StoredBody { transactions: vec![], senders: vec![] },
        receipts: vec![],
        touched: Vec::new(),
    };
    let commit =
        CommitBlock { draft, diff: StateDiff::default(), parent_root: built_on, received: None };
    let reply = node.node.state.send(commit).await.unwrap();
    let refused = matches!(
        reply,
        Err(StateError::HeadChanged { number: 1, built_on: b, head_root: h })
            if b == built_on && h == head_root
    );
    assert!(refused, "{reply:?}");
    assert_eq!(node.node.chain.head_number(), Some(0), "nothing was written");
    let balance = node.node.chain.account(&bob, 0).unwrap().unwrap().balance;
    assert_eq!(balance, U256::from(1_000), "the patch stays");
}

/// A state owner sharing the miner's thread applies a committed block to the store 1 ms after
/// answering it, unless a `Settle` (the miner's, once the block is answered) comes first.
#[actix::test]
async fn a_state_owner_sharing_a_thread_settles_when_told_or_after_a_millisecond() {
    tokio::time::pause();
    let writer = hearth_storage::ChainWriter::in_memory().expect("store");
    let empty = |number| BlockDraft {
        header: alloy_consensus::Header { number, ..Default::default() },
        body: StoredBody { transactions: vec![], senders: vec![] },
        receipts: vec![],
        touched: Vec::new(),
    };
    let genesis = hearth_storage::write_block(&writer, empty(0), &StateDiff::default()).unwrap();
    let state =
        actix::Actor::start(hearth_actors::StateActor::new(writer.clone()).sharing_a_thread());
    let commit = |number| CommitBlock {
        draft: empty(number),
        diff: StateDiff::default(),
        parent_root: genesis.header.state_root,
        received: None,
    };

    // Time here moves in the timer wheel's millisecond slots.
    state.send(commit(1)).await.unwrap().unwrap();
    assert!(writer.owes_apply().unwrap(), "answered before the apply");
    tokio::task::yield_now().await;
    assert!(writer.owes_apply().unwrap(), "not applied in the same turn of the thread");
    tokio::time::sleep(Duration::from_millis(2)).await;
    assert!(!writer.owes_apply().unwrap(), "applied once the millisecond passed");

    state.send(commit(2)).await.unwrap().unwrap();
    assert!(writer.owes_apply().unwrap());
    state.send(Settle).await.unwrap();
    assert!(!writer.owes_apply().unwrap(), "applied when told, before the millisecond");
    state.send(commit(3)).await.unwrap().unwrap();
    tokio::time::sleep(Duration::from_millis(2)).await;
    assert!(!writer.owes_apply().unwrap());
    // Two commits back to back: the second applies the first and replaces its timer, and a
    // timer still applies the second. (Which of the two timers fires is not observable here:
    // the wheel's millisecond slots can put both deadlines in one.)
    state.send(commit(4)).await.unwrap().unwrap();
    state.send(commit(5)).await.unwrap().unwrap();
    assert!(writer.owes_apply().unwrap());
    tokio::time::sleep(Duration::from_millis(3)).await;
    assert!(!writer.owes_apply().unwrap(), "the last block is applied");
    assert_eq!(writer.head_number(), Some(5));
}

/// The executor client builds a small block on the asking thread and says so
/// (`BuiltBlock::built_here`, the miner's `block timings` line); a block given more than the
/// inline bound goes to the pool. Both give the same block.
#[actix::test]
async fn the_executor_client_says_where_a_block_was_built() {
    let node = TestNode::start_with(manual_mining());
    let alice = node.signer(0);
    let bob = node.signer(1).address();
    let parent = node.node.chain.sealed_header(0).unwrap().unwrap();
    let build = |gas_limit| {
        let tx = fixtures::eip1559(&alice, 0, Some(bob), U256::from(1), Bytes::new(), gas_limit);
        let pooled = PooledTx { hash: *tx.tx_hash(), sender: alice.address(), tx: Arc::new(tx) };
        BuildBlock {
            parent: parent.clone(),
            env: BlockEnvSpec::dev(
                1,
                GENESIS_TIME + 1,
                Address::ZERO,
                30_000_000,
                1_000_000_000,
                B256::ZERO,
            ),
            txs: vec![pooled],
            mode: BuildMode::Pack,
        }
    };
    let here = node.node.executor.build_block(build(21_000)).await.unwrap();
    let pool = node.node.executor.build_block(build(2_000_000)).await.unwrap();
    assert!(here.built_here, "a 21,000-gas block is built on the asking thread");
    assert!(!pool.built_here, "a 2M-gas block goes to the pool");
    assert_eq!(here.draft.receipts.len(), 1);
    assert_eq!(here.diff, pool.diff, "the same transfer, the same changes");
}

/// A miner on `node`'s chain and state owner, with the given pool probes and executor.
fn miner_on(
    node: &TestNode,
    take_pending: actix::Recipient<TakePending>,
    txs_mined: actix::Recipient<TxsMined>,
    executor: ExecutorClient,
    automine: bool,
    settle: Option<actix::Recipient<Settle>>,
) -> actix::Addr<MinerActor> {
    MinerActor::new(
        node.node.chain.clone(),
        MinerPeers {
            take_pending,
            txs_mined,
            executor,
            commit: node.node.state.clone().recipient(),
            rollback: node.node.state.clone().recipient(),
            replace: node.node.state.clone().recipient(),
            head_writes: HeadWrites::of(&node.node.state),
            show: hearth_actors::Show::default(),
            settle,
        },
        MinerConfig {
            automine,
            interval: None,
            gas_limit: 30_000_000,
            coinbase: Address::ZERO,
            clock: Arc::new(|| GENESIS_TIME),
            seed: 1,
        },
    )
    .start_bounded(fixtures::one())
}

/// Builds on the real executor, then tells the test the block is built and holds it (before
/// its commit) until the test lets it go.
struct GatedBuilder {
    real: ExecutorClient,
    began: mpsc::Sender<()>,
    gate: Arc<tokio::sync::Notify>,
}

impl actix::Actor for GatedBuilder {
    type Context = actix::Context<Self>;
}

impl actix::Handler<Admitted<BuildBlock>> for GatedBuilder {
    type Result = actix::ResponseFuture<Result<BuiltBlock, ExecError>>;

    fn handle(&mut self, msg: Admitted<BuildBlock>, _: &mut Self::Context) -> Self::Result {
        let (real, began, gate) = (self.real.clone(), self.began.clone(), Arc::clone(&self.gate));
        // `msg` (and its slot in the pool) lives until the build is done.
        Box::pin(async move {
            let built = real.build_block(msg.request.clone()).await;
            began.send(()).await.expect("the test waits for the build");
            gate.notified().await;
            built
        })
    }
}

/// A dev patch sent while a block is being built waits for that block, then applies on top
/// of it: the block commits (it is not refused for a changed head state) and the patch is
/// not undone by the block's diff. Before, the patch went to the state owner at once and the
/// block, built on the old balance, wrote it back (the crash soak's lost `anvil_setBalance`).
#[actix::test]
async fn a_patch_waits_for_the_block_being_built_and_survives_it() {
    let node = TestNode::start_with(manual_mining());
    let alice = node.signer(0);
    let bob = node.signer(1).address();
    let tx = fixtures::transfer(&alice, 0, bob, 7);
    let pooled = PooledTx { hash: *tx.tx_hash(), sender: alice.address(), tx: Arc::new(tx) };
    let (take_pending, _asked) = Probe::<TakePending>::start(move |_| vec![pooled.clone()]);
    let (txs_mined, _mined) = Probe::<TxsMined>::start(|_| false);
    let (began, mut building) = mpsc::channel(1);
    let gate = Arc::new(tokio::sync::Notify::new());
    let builder = actix::Actor::start(GatedBuilder {
        real: node.node.executor.clone(),
        began,
        gate: Arc::clone(&gate),
    });
    let (calls, _) = Probe::start(|_| Err(ExecError::UnknownBlock));
    let (estimates, _) = Probe::start(|_| Err(ExecError::UnknownBlock));
    let (touched, _) = Probe::start(|_| Err(ExecError::UnknownBlock));
    let executor = ExecutorClient::new(
        calls,
        estimates,
        builder.recipient(),
        touched,
        AdmissionLimits::default(),
    );
    let miner = miner_on(&node, take_pending, txs_mined, executor, false, None);

    // The block is built on bob's old balance and held before its commit: the order in which a
    // patch passed on at once was lost (built, patched, committed).
    let mining = tokio::spawn(miner.send(MineBlocks { count: 1, timestamp: None }));
    building.recv().await.unwrap();
    let set = U256::from(1_000_000);
    let patch = PatchState { address: bob, change: AccountPatch::Balance(set) };
    let mut patched = Box::pin(miner.send(BetweenBlocks(patch)));
    // The miner holds the patch while its block is in progress. (A patch passed on at once
    // would usually be written by the end of this round trip, but nothing orders the two: the
    // asserts after the commit are what fail then, on `HeadChanged` or on the balance.)
    node.node.state.send(ListSnapshots).await.unwrap();
    assert!(futures_util::poll!(&mut patched).is_pending(), "the patch waits for the block");

    gate.notify_one();
    assert_eq!(mining.await.unwrap().unwrap().unwrap(), 1, "the block commits");
    let root = patched.await.unwrap().unwrap();
    assert_eq!(node.node.chain.head_number(), Some(1));
    assert_eq!(node.node.chain.state_root_at(1).unwrap(), Some(root), "patched on block 1");
    let balance = node.node.chain.account(&bob, 1).unwrap().unwrap().balance;
    assert_eq!(balance, set, "the block did not undo the patch");
}

#[actix::test]
async fn subscribers_get_each_committed_block_once_in_order() {
    let node = TestNode::start();
    let (probe, mut seen) = Probe::<BlockCommitted>::start(|_| ());
    node.node.state.send(SubscribeBlocks(probe, Interest::always())).await.unwrap();

    let last =
        node.node.miner.send(MineBlocks { count: 2, timestamp: None }).await.unwrap().unwrap();
    assert_eq!(last, 2);
    assert_eq!(seen.recv().await.unwrap().block.number(), 1);
    assert_eq!(seen.recv().await.unwrap().block.number(), 2);
    assert!(seen.try_recv().is_err(), "exactly two notifications");
}

#[actix::test]
async fn mempool_orders_by_nonce_and_counts_pending_and_queued() {
    let node = TestNode::start_with(manual_mining());
    let alice = node.signer(0);
    let bob = node.signer(1).address();
    let pool = &node.node.mempool;

    let first =
        pool.send(SubmitTx { tx: fixtures::transfer(&alice, 0, bob, 1) }).await.unwrap().unwrap();
    assert_eq!(pool.send(PendingNonce(alice.address())).await.unwrap(), Ok(1));
    // Nonce 2 leaves a gap: queued, not executable, and the pending nonce stays at 1.
    pool.send(SubmitTx { tx: fixtures::transfer(&alice, 2, bob, 1) }).await.unwrap().unwrap();
    assert_eq!(pool.send(PoolSize).await.unwrap(), (1, 1));
    assert_eq!(pool.send(PendingNonce(alice.address())).await.unwrap(), Ok(1));

    let pending = pool
        .send(TakePending { gas_limit: 30_000_000, max_bytes: usize::MAX, base_fee: 1 })
        .await
        .unwrap();
    assert_eq!(pending.iter().map(|t| t.hash).collect::<Vec<_>>(), vec![first]);

    // Filling the gap makes both executable, in nonce order.
    pool.send(SubmitTx { tx: fixtures::transfer(&alice, 1, bob, 1) }).await.unwrap().unwrap();
    assert_eq!(pool.send(PoolSize).await.unwrap(), (3, 0));
    let nonces: Vec<u64> = pool
        .send(TakePending { gas_limit: 30_000_000, max_bytes: usize::MAX, base_fee: 1 })
        .await
        .unwrap()
        .iter()
        .map(|t| alloy_consensus::Transaction::nonce(t.tx.as_ref()))
        .collect();
    assert_eq!(nonces, vec![0, 1, 2]);
    // The gas budget cuts the list.
    let budget = pool
        .send(TakePending { gas_limit: 42_000, max_bytes: usize::MAX, base_fee: 1 })
        .await
        .unwrap();
    assert_eq!(budget.len(), 2);
    // So does the byte budget: two transfers need more than 1.5 of them.
    let one = pending_size(&node).await;
    let bytes = pool
        .send(TakePending { gas_limit: 30_000_000, max_bytes: one + one / 2, base_fee: 1 })
        .await
        .unwrap();
    assert_eq!(bytes.len(), 1);
}

/// The encoded size of the first pending transaction.
async fn pending_size(node: &TestNode) -> usize {
    let all = node
        .node
        .mempool
        .send(TakePending { gas_limit: u64::MAX, max_bytes: usize::MAX, base_fee: 0 })
        .await
        .expect("mempool answers");
    alloy_eips::eip2718::Encodable2718::encode_2718_len(all[0].tx.as_ref())
}

#[actix::test]
async fn mempool_rejections_leave_the_pool_as_it_was() {
    let node = TestNode::start_with(manual_mining());
    let alice = node.signer(0);
    let bob = node.signer(1).address();
    let pool = &node.node.mempool;
    pool.send(SubmitTx { tx: fixtures::transfer(&alice, 0, bob, 1) }).await.unwrap().unwrap();

    let poor = alloy_signer_local::PrivateKeySigner::from_bytes(&B256::repeat_byte(7)).unwrap();
    let cases: Vec<(alloy_consensus::TxEnvelope, IsExpected)> = vec![
        (fixtures::transfer(&alice, 0, bob, 1), |e| *e == TxError::AlreadyKnown),
        (fixtures::transfer(&alice, 0, bob, 2), |e| *e == TxError::ReplacementUnderpriced),
        (fixtures::legacy_transfer(&alice, 1, bob, 10_000_000_000, Some(1)), |e| {
            *e == TxError::WrongChainId { expected: 31337, got: 1 }
        }),
        (fixtures::transfer(&poor, 0, bob, 1), |e| matches!(e, TxError::InsufficientFunds { .. })),
        (fixtures::eip1559(&alice, 1, Some(bob), U256::ZERO, Bytes::new(), 20_000), |e| {
            matches!(e, TxError::IntrinsicGasTooLow { gas: 20_000, intrinsic: 21_000 })
        }),
        (fixtures::eip1559(&alice, 1, Some(bob), U256::ZERO, Bytes::new(), 40_000_000), |e| {
            matches!(e, TxError::GasLimitTooHigh { .. })
        }),
    ];
    for (tx, expected) in cases {
        let err = pool.send(SubmitTx { tx }).await.unwrap().expect_err("must be rejected");
        assert!(expected(&err), "unexpected error: {err}");
        assert_eq!(pool.send(PoolSize).await.unwrap(), (1, 0), "pool changed after: {err}");
    }
    // Mine it; now the same nonce is too low.
    node.node.miner.send(MineBlocks { count: 1, timestamp: None }).await.unwrap().unwrap();
    let err = pool
        .send(SubmitTx { tx: fixtures::transfer(&alice, 0, bob, 5) })
        .await
        .unwrap()
        .expect_err("nonce used");
    assert_eq!(err, TxError::NonceTooLow { expected: 1, got: 0 });
    assert_eq!(pool.send(PoolSize).await.unwrap(), (0, 0), "mined transaction left the pool");
}

#[actix::test]
async fn a_replacement_with_a_ten_percent_bump_replaces() {
    let node = TestNode::start_with(manual_mining());
    let alice = node.signer(0);
    let bob = node.signer(1).address();
    let pool = &node.node.mempool;
    pool.send(SubmitTx {
        tx: fixtures::legacy_transfer(&alice, 0, bob, 10_000_000_000, Some(31337)),
    })
    .await
    .unwrap()
    .unwrap();
    let bumped = fixtures::legacy_transfer(&alice, 0, bob, 11_000_000_000, Some(31337));
    let hash = pool.send(SubmitTx { tx: bumped }).await.unwrap().unwrap();
    let pending = pool
        .send(TakePending { gas_limit: 30_000_000, max_bytes: usize::MAX, base_fee: 1 })
        .await
        .unwrap();
    assert_eq!(pending.iter().map(|t| t.hash).collect::<Vec<_>>(), vec![hash]);
}

/// Stands in for the miner behind `ThenMine`: hands each automine request to the test, which
/// answers it when it chooses.
struct HeldMiner(mpsc::UnboundedSender<Ask<AutoMine>>);

impl actix::Actor for HeldMiner {
    type Context = actix::Context<Self>;
}

impl actix::Handler<Ask<AutoMine>> for HeldMiner {
    type Result = ();
    fn handle(&mut self, ask: Ask<AutoMine>, _: &mut Self::Context) {
        let _ = self.0.send(ask);
    }
}

/// `ThenMine` admits in the pool's visit, then asks the miner once, and answers only after the
/// miner has; what admits nothing asks nothing.
#[actix::test]
async fn then_mine_answers_after_the_miner_and_asks_only_when_something_was_admitted() {
    let node = TestNode::start_with(manual_mining());
    let alice = node.signer(0);
    let bob = node.signer(1).address();
    let pool = &node.node.mempool;
    let (asks, mut asked) = mpsc::unbounded_channel();
    let miner = actix::Actor::start(HeldMiner(asks)).recipient();

    let tx = fixtures::transfer(&alice, 0, bob, 1);
    let mut answer =
        Box::pin(pool.send(ThenMine { submit: SubmitTx { tx: tx.clone() }, miner: miner.clone() }));
    let ask = tokio::select! {
        ask = asked.recv() => ask.expect("the miner is asked"),
        answer = &mut answer => panic!("answered before the miner was asked: {answer:?}"),
    };
    assert_eq!(pool.send(PoolSize).await.unwrap(), (1, 0), "admitted before the miner's run");
    assert!(futures_util::poll!(&mut answer).is_pending(), "the answer waits for the miner");
    ask.reply.send(Ok(Some(1))).unwrap();
    assert_eq!(answer.await.unwrap(), Ok(*tx.tx_hash()));

    // A refusal asks nothing; a batch asks once if any item went in, and not at all if none did.
    // The held miner never answers: were it asked here, the answer would never come.
    let unasked = Duration::from_secs(5);
    let refused = pool.send(ThenMine { submit: SubmitTx { tx: tx.clone() }, miner: miner.clone() });
    let refused = tokio::time::timeout(unasked, refused).await.expect("answered at once").unwrap();
    assert_eq!(refused, Err(TxError::AlreadyKnown));
    let next = fixtures::transfer(&alice, 1, bob, 1);
    let batch = pool.send(ThenMine {
        submit: SubmitTxs { txs: vec![tx.clone(), next.clone()] },
        miner: miner.clone(),
    });
    let batch = tokio::spawn(batch);
    asked.recv().await.expect("asked once for the batch").reply.send(Ok(None)).unwrap();
    let answers = batch.await.unwrap().unwrap().unwrap();
    assert_eq!(answers, vec![Err(TxError::AlreadyKnown), Ok(*next.tx_hash())]);
    let nothing = pool.send(ThenMine { submit: SubmitTxs { txs: vec![next] }, miner });
    let nothing = tokio::time::timeout(unasked, nothing).await.expect("answered at once");
    let nothing = nothing.unwrap().unwrap();
    assert_eq!(nothing, vec![Err(TxError::AlreadyKnown)]);
    assert!(asked.try_recv().is_err(), "asked exactly twice in all");
}

/// The miner, with a probe in place of the mempool: it asks for pending transactions, builds
/// on the real executor and state owner, reports exactly what it mined, and asks for another
/// block only while the pool says transactions are left.
#[actix::test]
async fn miner_mines_what_the_pool_offers_and_reports_it() {
    tokio::time::pause();
    let node = TestNode::start_with(manual_mining());
    let alice = node.signer(0);
    let bob = node.signer(1).address();
    let pooled = |nonce| {
        let tx = fixtures::transfer(&alice, nonce, bob, 7);
        PooledTx { hash: *tx.tx_hash(), sender: alice.address(), tx: Arc::new(tx) }
    };
    // A pool that offers each queued transaction once, one per block, and answers `TxsMined`
    // with whether any is still queued.
    let queue = Arc::new(std::sync::Mutex::new(std::collections::VecDeque::new()));
    let offers = Arc::clone(&queue);
    let (take_pending, mut asked) = Probe::<TakePending>::start(move |_| {
        offers.lock().unwrap().pop_front().into_iter().collect::<Vec<PooledTx>>()
    });
    let left = Arc::clone(&queue);
    let (txs_mined, mut mined) =
        Probe::<TxsMined>::start(move |_| !left.lock().unwrap().is_empty());
    // A state owner sharing the miner's thread is told to settle each block once the block's
    // answer is out: the task awaiting the answer runs before the `Settle` arrives (tasks on
    // one thread run in the order they were woken).
    let (settle, mut settled) = Probe::<Settle>::start(|_| ());
    let executor = node.node.executor.clone();
    let miner = miner_on(&node, take_pending, txs_mined, executor, true, Some(settle));

    // One transaction: one block, and no second ask, as the pool said nothing was left.
    let first = pooled(0);
    queue.lock().unwrap().push_back(first.clone());
    let asking = miner.clone();
    let answered = actix::spawn(async move {
        let answer = asking.send(AutoMine).await.unwrap().unwrap();
        (answer, settled.try_recv().is_ok(), settled)
    });
    let (answer, settled_first, mut settled) = answered.await.unwrap();
    assert_eq!(answer, Some(1));
    assert!(!settled_first, "Settle was sent before the block's answer");
    assert!(settled.recv().await.is_some(), "told to settle once the block was answered");
    let report = mined.recv().await.unwrap();
    assert_eq!((report.included, report.invalid), (vec![first.hash], vec![]));
    assert_eq!(asked.recv().await.unwrap().gas_limit, 30_000_000);
    assert!(asked.try_recv().is_err(), "asked once");
    assert_eq!(node.node.chain.head_number(), Some(1));
    let header = node.node.chain.header(1).unwrap().unwrap();
    assert_eq!(header.timestamp, GENESIS_TIME + 1, "one second after genesis");

    // Two left after the first block: the miner keeps going until the pool is empty.
    queue.lock().unwrap().extend([pooled(1), pooled(2)]);
    assert_eq!(miner.send(AutoMine).await.unwrap().unwrap(), Some(3));
    for _ in 0..2 {
        assert!(asked.recv().await.is_some());
        assert_eq!(mined.recv().await.unwrap().included.len(), 1);
    }
    assert!(asked.try_recv().is_err(), "asked once per block");

    // Nothing pending: automine asks, and makes no block.
    assert_eq!(miner.send(AutoMine).await.unwrap().unwrap(), None);
    assert!(asked.recv().await.is_some());
    assert!(mined.try_recv().is_err(), "no empty block is reported");
    assert_eq!(node.node.chain.head_number(), Some(3));
    // One Settle per run that made a block (the second run made two), none for no block.
    assert!(settled.recv().await.is_some());
    tokio::task::yield_now().await;
    assert!(settled.try_recv().is_err(), "no Settle without a block");

    // evm_mine's series too, once its answer is out.
    let asking = miner.clone();
    let answered = actix::spawn(async move {
        let answer = asking.send(MineBlocks { count: 2, timestamp: None }).await.unwrap().unwrap();
        (answer, settled.try_recv().is_ok(), settled)
    });
    let (answer, settled_first, mut settled) = answered.await.unwrap();
    assert_eq!(answer, 5);
    assert!(!settled_first, "Settle was sent before evm_mine's answer");
    assert!(settled.recv().await.is_some(), "told to settle after evm_mine");
}

/// `call` fails with `Busy` for `reason` on its first poll: refused at once, never queued.
async fn assert_refused_at_once<F>(call: &mut std::pin::Pin<Box<F>>, reason: &str)
where
    F: std::future::Future<Output = Result<CallOutcome, ExecError>>,
{
    let refused = futures_util::poll!(call);
    assert!(
        matches!(&refused, Poll::Ready(Err(ExecError::Busy(r))) if Refusal::REASONS[r.index()] == reason),
        "refused for {reason} on its first poll: {refused:?}"
    );
}

fn success() -> Result<CallOutcome, ExecError> {
    Ok(CallOutcome::Success { output: Bytes::new(), gas_used: 0 })
}

fn call(block: u64) -> Call {
    Call { request: CallRequest::default(), block }
}

const MS: Duration = Duration::from_millis(1);

fn limits(max_queue_delay: Duration, max_queued: usize) -> AdmissionLimits {
    AdmissionLimits { max_queue_delay, max_queued }
}

/// A client admitting by `limits` over one executor probe that keeps each request it gets, and
/// so its place, until the test drops it; the test plays the executor thread, calling
/// `begin` and advancing paused time for the service time it wants measured.
fn holding_pool(limits: AdmissionLimits) -> (ExecutorClient, mpsc::Receiver<Admitted<Call>>) {
    let (calls, running) = Probe::<Admitted<Call>>::start(|_| success());
    let (estimates, _) = Probe::start(|_| Err(ExecError::UnknownBlock));
    let (builds, _) = Probe::start(|_| Err(ExecError::UnknownBlock));
    let (touched, _) = Probe::start(|_| Err(ExecError::UnknownBlock));
    (ExecutorClient::new(calls, estimates, builds, touched, limits), running)
}

/// Runs one call on a holding pool's only thread for `took` of paused time, so the client
/// learns that service time.
async fn teach(
    client: &ExecutorClient,
    running: &mut mpsc::Receiver<Admitted<Call>>,
    took: Duration,
) {
    // A thread's service time counts once it has run its warm-up calls.
    for _ in 0..WARM_UP_CALLS {
        assert!(client.call(call(0)).await.is_ok());
        let mut held = running.recv().await.expect("the probe got the call");
        held.begin().expect("the pool is open");
        tokio::time::advance(took).await;
        drop(held);
    }
}

/// A client with no queue (one request in the pool at a time) over an executor probe that
/// answers every call at once, and the receiver of the calls it saw.
fn answering_pool() -> (ExecutorClient, mpsc::Receiver<Call>) {
    let (calls, seen) = Probe::start_as_executor(|_: &Call| success());
    let (estimates, _) = Probe::start(|_| Err(ExecError::UnknownBlock));
    let (builds, _) = Probe::start(|_| Err(ExecError::UnknownBlock));
    let (touched, _) = Probe::start(|_| Err(ExecError::UnknownBlock));
    (ExecutorClient::new(calls, estimates, builds, touched, limits(100 * MS, 0)), seen)
}

#[actix::test]
async fn executor_client_sheds_load_beyond_its_queue_cap() {
    let (client, mut seen) = answering_pool();

    let first = client.call(call(0));
    tokio::pin!(first);
    assert!(futures_util::poll!(&mut first).is_pending(), "first call admitted and waiting");
    assert_eq!(client.in_flight(), 1);
    let second = client.call(call(0)).await;
    assert!(
        matches!(second, Err(ExecError::Busy(Refusal::QueueFull { max_queued: 0 }))),
        "{second:?}"
    );
    assert!(first.await.is_ok());
    assert_eq!(client.in_flight(), 0, "place returned");
    assert!(client.call(call(0)).await.is_ok(), "admitted again once a place is free");
    assert_eq!(seen.recv().await.unwrap().block, 0);
    assert!(seen.recv().await.is_some());
    assert!(seen.try_recv().is_err(), "the shed call never reached the pool");
    assert_eq!(client.refusals(), [0, 1]);
}

#[actix::test]
async fn executor_client_sends_each_call_to_the_least_busy_executor() {
    let (calls_a, mut seen_a) = Probe::start_as_executor(|_: &Call| success());
    let (calls_b, mut seen_b) = Probe::start_as_executor(|_: &Call| success());
    let lane = |calls| {
        let (estimates, _) = Probe::start(|_| Err(ExecError::UnknownBlock));
        let (builds, _) = Probe::start(|_| Err(ExecError::UnknownBlock));
        let (touched, _) = Probe::start(|_| Err(ExecError::UnknownBlock));
        ExecutorLane::new(calls, estimates, builds, touched)
    };
    let client =
        ExecutorClient::with_lanes(vec![lane(calls_a), lane(calls_b)], AdmissionLimits::default());

    // The first call is sent to lane A and not run yet, so the second goes to lane B.
    let first = client.call(call(1));
    tokio::pin!(first);
    assert!(futures_util::poll!(&mut first).is_pending());
    assert!(client.call(call(2)).await.is_ok());
    assert!(first.await.is_ok());
    assert_eq!(seen_a.recv().await.unwrap().block, 1);
    assert_eq!(seen_b.recv().await.unwrap().block, 2);
    // Both idle again: the next call goes to the first lane.
    assert!(client.call(call(3)).await.is_ok());
    assert_eq!(seen_a.recv().await.unwrap().block, 3);
    assert!(seen_b.try_recv().is_err());
}

#[actix::test]
async fn a_cancelled_call_keeps_its_place_until_the_executor_takes_it_off_its_queue() {
    let (client, mut running) = holding_pool(limits(100 * MS, 1));

    // The caller goes away (a closed socket) after its call was queued.
    let mut first = Box::pin(client.call(call(1)));
    assert!(futures_util::poll!(&mut first).is_pending());
    drop(first);
    assert_eq!(client.in_flight(), 1, "still queued for the executor");
    let mut second = Box::pin(client.call(call(2)));
    assert!(futures_util::poll!(&mut second).is_pending());
    let mut refused = Box::pin(client.call(call(3)));
    assert_refused_at_once(&mut refused, "queue_full").await;
    // The executor takes its queue in order. actix drops a message whose caller has gone
    // instead of handling it, and the place goes with the message, unmeasured.
    let held = running.recv().await.unwrap();
    assert_eq!(held.request.block, 2, "the cancelled call was not run");
    assert_eq!(client.in_flight(), 1, "only the running call holds a place");
    assert!(second.await.is_ok());
    assert_eq!(client.in_flight(), 1, "answered, but still running until the executor is done");
    drop(held);
    assert_eq!(client.in_flight(), 0);
    assert!(running.try_recv().is_err());
    assert_eq!(client.service_times(), vec![None], "nothing began, so nothing was measured");
}

#[actix::test]
async fn an_answer_not_yet_read_holds_no_place() {
    let (client, mut seen) = answering_pool();

    let mut first = Box::pin(client.call(call(1)));
    assert!(futures_util::poll!(&mut first).is_pending());
    assert_eq!(seen.recv().await.unwrap().block, 1, "the executor ran it");
    // Its caller has not picked the answer up, yet the place is free for the next call.
    assert_eq!(client.in_flight(), 0);
    assert!(client.call(call(2)).await.is_ok());
    assert!(first.await.is_ok());
}

#[actix::test]
async fn closed_loop_callers_beyond_the_threads_queue_instead_of_being_refused() {
    tokio::time::pause();
    let (client, mut running) = holding_pool(AdmissionLimits::default());
    teach(&client, &mut running, MS).await;

    // 64 callers of a 1 ms call on one thread: the last expects 63 ms, within 100 ms.
    let mut callers: Vec<_> = (0..64).map(|i| Box::pin(client.call(call(i)))).collect();
    for caller in &mut callers {
        assert!(futures_util::poll!(caller).is_pending(), "queued, not refused");
    }
    assert_eq!(client.in_flight(), 64);
    assert_eq!(client.refusals(), [0, 0]);
    // They run in order as the thread frees.
    for i in 0..64 {
        let mut held = running.recv().await.unwrap();
        assert_eq!(held.request.block, i);
        held.begin().expect("the pool is open");
        tokio::time::advance(MS).await;
    }
    for caller in callers {
        assert!(caller.await.is_ok());
    }
}

#[actix::test]
async fn a_call_expected_to_wait_past_the_budget_is_refused_at_once() {
    tokio::time::pause();
    let (client, mut running) = holding_pool(AdmissionLimits::default());
    teach(&client, &mut running, 10 * MS).await;

    // 10 ms per call, 100 ms budget: 10 ahead (100 ms) still goes in, the 11th ahead does not.
    let mut queued: Vec<_> = (0..11).map(|i| Box::pin(client.call(call(i)))).collect();
    for caller in &mut queued {
        assert!(futures_util::poll!(caller).is_pending());
    }
    let mut late = Box::pin(client.call(call(99)));
    assert_refused_at_once(&mut late, "queue_delay").await;
    assert_eq!(client.refusals(), [1, 0]);
    assert_eq!(client.in_flight(), 11, "the refused call took no place");

    // Once the thread has run one, the queue is 100 ms long again: one more goes in.
    let mut held = running.recv().await.unwrap();
    held.begin().expect("the pool is open");
    tokio::time::advance(10 * MS).await;
    drop(held);
    let mut again = Box::pin(client.call(call(100)));
    assert!(futures_util::poll!(&mut again).is_pending());
}

#[actix::test]
async fn the_queue_cap_refuses_what_nothing_measured_would() {
    tokio::time::pause();
    let (client, mut running) = holding_pool(limits(100 * MS, 2));
    // Nothing has run, so no service time is known: only the cap (2 waiting, 1 running).
    let mut admitted: Vec<_> = (0..3).map(|i| Box::pin(client.call(call(i)))).collect();
    for caller in &mut admitted {
        assert!(futures_util::poll!(caller).is_pending());
    }
    let mut one_more = Box::pin(client.call(call(9)));
    assert_refused_at_once(&mut one_more, "queue_full").await;
    drop(admitted);
    while let Ok(held) = running.try_recv() {
        drop(held);
    }
}

#[actix::test]
async fn a_zero_budget_admits_only_onto_an_idle_thread() {
    tokio::time::pause();
    let (client, mut running) = holding_pool(limits(Duration::ZERO, 1024));
    assert!(client.call(call(1)).await.is_ok());
    let first = running.recv().await.unwrap();

    let mut second = Box::pin(client.call(call(2)));
    assert_refused_at_once(&mut second, "queue_delay").await;
    drop(first);
    assert!(client.call(call(3)).await.is_ok(), "idle again");
}

#[actix::test]
async fn queue_delay_and_service_time_are_measured_from_when_the_executor_begins() {
    tokio::time::pause();
    let (client, mut running) = holding_pool(AdmissionLimits::default());
    teach(&client, &mut running, MS).await;
    let mut first = Box::pin(client.call(call(1)));
    let mut second = Box::pin(client.call(call(2)));
    assert!(futures_util::poll!(&mut first).is_pending());
    assert!(futures_util::poll!(&mut second).is_pending());

    let mut held = running.recv().await.unwrap();
    tokio::time::advance(5 * MS).await;
    held.begin().expect("the pool is open");
    tokio::time::advance(MS).await;
    drop(held);
    let mut held = running.recv().await.unwrap();
    held.begin().expect("the pool is open");
    tokio::time::advance(3 * MS).await;
    drop(held);

    assert_eq!(client.service_times(), vec![Some(MS + (2 * MS) / 8)], "1 ms, then 3 ms at 1/8");
    let delays = client.queue_delays();
    assert_eq!(delays.count(), WARM_UP_CALLS + 2);
    assert_eq!(delays.sum, 11 * MS, "5 ms and 6 ms");
    let bucket = |micros| QUEUE_DELAY_BUCKETS_MICROS.iter().position(|&b| b == micros).unwrap();
    assert_eq!(delays.buckets[bucket(5_000)], 1);
    assert_eq!(delays.buckets[bucket(10_000)], 1);
    assert!(first.await.is_ok() && second.await.is_ok());
}

#[actix::test]
async fn executor_runs_calls_against_past_blocks() {
    let node = TestNode::start();
    let alice = node.signer(0);
    let bob = node.signer(1).address();
    // A contract that returns BALANCE(bob): runtime = BALANCE(PUSH20 bob) MSTORE RETURN.
    let mut runtime = vec![0x73];
    runtime.extend_from_slice(bob.as_slice());
    runtime.extend_from_slice(&[0x31, 0x60, 0x00, 0x52, 0x60, 0x20, 0x60, 0x00, 0xf3]);
    node.node
        .mempool
        .send(SubmitTx { tx: fixtures::transfer(&alice, 0, bob, 1_000) })
        .await
        .unwrap()
        .unwrap();
    node.node.miner.send(AutoMine).await.unwrap().unwrap();

    let before = node
        .node
        .executor
        .call(Call {
            request: CallRequest { input: deploy_and_run(&runtime), ..Default::default() },
            block: 0,
        })
        .await
        .unwrap();
    let after = node
        .node
        .executor
        .call(Call {
            request: CallRequest { input: deploy_and_run(&runtime), ..Default::default() },
            block: 1,
        })
        .await
        .unwrap();
    let balance = |o: &CallOutcome| match o {
        CallOutcome::Success { output, .. } => U256::from_be_slice(output),
        other => panic!("call failed: {other:?}"),
    };
    assert_eq!(balance(&after) - balance(&before), U256::from(1_000));
    let unknown =
        node.node.executor.call(Call { request: CallRequest::default(), block: 99 }).await;
    assert!(matches!(unknown, Err(ExecError::UnknownBlock)));
}

/// Init code that runs `runtime` directly (a create call's output is what it returns).
fn deploy_and_run(runtime: &[u8]) -> Bytes {
    Bytes::copy_from_slice(runtime)
}

/// Holds its mailbox shut until released, then answers pings: a stand-in for a busy actor.
struct Busy;

impl actix::Actor for Busy {
    type Context = actix::Context<Self>;
}

struct Hold(tokio::sync::oneshot::Receiver<()>);

impl actix::Message for Hold {
    type Result = ();
}

impl actix::Handler<Hold> for Busy {
    type Result = actix::AtomicResponse<Self, ()>;

    fn handle(&mut self, msg: Hold, _ctx: &mut Self::Context) -> Self::Result {
        use actix::WrapFuture;
        actix::AtomicResponse::new(Box::pin(
            async move {
                let _ = msg.0.await;
            }
            .into_actor(self),
        ))
    }
}

struct Ping;

impl actix::Message for Ping {
    type Result = u8;
}

impl actix::Handler<Ping> for Busy {
    type Result = u8;

    fn handle(&mut self, _msg: Ping, _ctx: &mut Self::Context) -> u8 {
        7
    }
}

hearth_messages::answer_asks!(Busy: Ping);

#[actix::test]
async fn a_full_mailbox_is_an_immediate_rejection_and_admitted_asks_are_answered() {
    use actix::Actor;
    use hearth_messages::ask::{AskError, ask};

    let addr = Busy::create(|ctx| {
        ctx.set_mailbox_capacity(2);
        Busy
    });
    let (release, hold) = tokio::sync::oneshot::channel();
    addr.try_send(Hold(hold)).unwrap();
    let pings = addr.clone().recipient::<hearth_messages::ask::Ask<Ping>>();
    let (mut admitted, mut full) = (Vec::new(), 0);
    for _ in 0..10 {
        let mut request = Box::pin(ask(&pings, Ping));
        match futures_util::poll!(&mut request) {
            Poll::Ready(Err(AskError::Full)) => full += 1,
            Poll::Pending => admitted.push(request),
            other => panic!("unexpected {other:?}"),
        }
    }
    assert!(full >= 5, "the bound holds: {full} of 10 rejected at once");
    assert!(!admitted.is_empty());
    release.send(()).unwrap();
    for request in admitted {
        assert_eq!(request.await, Ok(7), "every admitted request gets its reply");
    }
}

#[actix::test]
async fn a_connection_s_only_request_is_admitted_past_the_budget_and_a_batch_s_item_is_not() {
    tokio::time::pause();
    let (client, mut running) = holding_pool(AdmissionLimits::default());
    teach(&client, &mut running, 10 * MS).await;
    // 20 requests held on the only thread (the probe keeps their places): a 21st call expects
    // 200 ms, twice the budget.
    for _ in 0..20 {
        assert!(client.timed(client.call(call(1))).await.is_ok());
    }
    // An HTTP request, its connection's only one (inside `timed`): admitted.
    assert!(client.timed(client.call(call(2))).await.is_ok(), "a closed loop's request");
    assert_eq!(client.in_flight(), 21);
    // A batch's item, and a request outside any HTTP request (WebSocket): refused at once.
    let mut item = Box::pin(client.timed(async {
        hearth_messages::executor::among_others();
        client.call(call(3)).await
    }));
    assert_refused_at_once(&mut item, "queue_delay").await;
    let mut outside = Box::pin(client.call(call(4)));
    assert_refused_at_once(&mut outside, "queue_delay").await;
    assert_eq!(client.standing_queues(), vec![false], "refusing another arrival stands nothing");
    drop(running);
}

/// A fork backend stand-in that keeps each fetch until the test answers it.
struct HeldFetches(mpsc::UnboundedSender<hearth_messages::fork::Fetch>);

impl actix::Actor for HeldFetches {
    type Context = actix::Context<Self>;
}

impl actix::Handler<hearth_messages::fork::Fetch> for HeldFetches {
    type Result = ();

    fn handle(&mut self, msg: hearth_messages::fork::Fetch, _ctx: &mut Self::Context) {
        let _ = self.0.send(msg);
    }
}

#[actix::test]
async fn a_call_that_missed_fork_state_holds_no_place_while_it_is_fetched_and_runs_again() {
    use hearth_messages::fork::misses::{self, MissSource};
    use hearth_messages::fork::{ForkKey, ForkValue};
    use std::sync::atomic::{AtomicU32, Ordering};

    let (fetches, mut asked) = mpsc::unbounded_channel();
    let backend = actix::Actor::start(HeldFetches(fetches));
    let source = MissSource { backend: backend.recipient(), wait: Duration::from_secs(5) };
    let key = ForkKey::Storage(Address::repeat_byte(7), U256::from(1));
    let (_, missed) = misses::collect(|| misses::note(&key, || source.clone()));
    let missed = missed.expect("one key missed");
    // The executor: the first run (collecting) misses the key; the run after the fetch reads it.
    let runs = Arc::new(AtomicU32::new(0));
    let counted = Arc::clone(&runs);
    let (calls, mut seen) = Probe::<Admitted<Call>>::start(move |msg| {
        assert!(msg.collects_misses(), "the client keeps a copy to run again");
        match counted.fetch_add(1, Ordering::Relaxed) {
            0 => Err(ExecError::ForkMisses(missed.clone())),
            _ => success(),
        }
    });
    let (estimates, _) = Probe::start(|_| Err(ExecError::UnknownBlock));
    let (builds, _) = Probe::start(|_| Err(ExecError::UnknownBlock));
    let (touched, _) = Probe::start(|_| Err(ExecError::UnknownBlock));
    let client = ExecutorClient::new(calls, estimates, builds, touched, AdmissionLimits::default());
    client.set_fork_reads(true);

    let mut answer = Box::pin(client.call(call(5)));
    assert!(futures_util::poll!(&mut answer).is_pending());
    let first = seen.recv().await.expect("the first run");
    drop(first);
    // The call goes on only when polled: it reads the misses, hands the key to the backend.
    let fetch = loop {
        if let Ok(fetch) = asked.try_recv() {
            break fetch;
        }
        assert!(futures_util::poll!(&mut answer).is_pending());
        tokio::task::yield_now().await;
    };
    assert_eq!(fetch.key, key);
    assert!(futures_util::poll!(&mut answer).is_pending(), "waiting for the upstream");
    assert_eq!(client.in_flight(), 0, "the wait holds no place in the pool");
    fetch.reply.send(Ok(ForkValue::Storage(U256::from(9))));
    assert!(answer.await.is_ok(), "run again once fetched");
    assert_eq!(seen.recv().await.expect("the second run").request.block, 5);
    assert_eq!(runs.load(Ordering::Relaxed), 2);
    assert!(asked.try_recv().is_err(), "nothing else fetched");
}

/// One call that reads the code of more contracts than tokio's per-task budget (128 replies)
/// through the shared code cache: each L1 miss asks the L2 and waits for its reply on the
/// executor's thread. Before the wait ran outside the budget, the 129th reply was never seen
/// and the executor hung for good.
#[actix::test]
async fn a_call_reading_hundreds_of_contracts_code_is_answered() {
    let node = crate::support::TestNode::start();
    let from = node.signer(0).address();
    let mut probe = String::from("0x");
    for i in 0..200u32 {
        // Runtime `PUSH32 i; STOP`: a distinct code hash per contract.
        let runtime = format!("7f{i:064x}00");
        let init = format!("0x6021600c60003960216000f3{runtime}");
        let hash =
            node.ok("eth_sendTransaction", serde_json::json!([{"from": from, "data": init}])).await;
        let receipt = node.ok("eth_getTransactionReceipt", serde_json::json!([hash])).await;
        let address = receipt["contractAddress"].as_str().expect("a contract").to_lowercase();
        // PUSH20 address; EXTCODESIZE; POP
        probe.push_str(&format!("73{}3b50", &address[2..]));
    }
    probe.push_str("00");
    let call = serde_json::json!([{"from": from, "data": probe}, "latest"]);
    let answered = tokio::time::timeout(Duration::from_secs(30), node.ok("eth_call", call.clone()));
    assert_eq!(answered.await.expect("answered, not hung"), "0x");
    let estimate = serde_json::json!([{"from": from, "data": probe}]);
    let answered =
        tokio::time::timeout(Duration::from_secs(30), node.ok("eth_estimateGas", estimate));
    assert!(answered.await.expect("answered, not hung").is_string());
}
