//! Miner modes on a paused tokio clock: the miner runs on the test's runtime with probes in
//! place of the pool, the executor and the state owner, so each `advance` shows exactly what
//! the timer did.

use std::sync::Arc;
use std::time::Duration;

use actix::{Actor, Addr, Context, Handler, ResponseFuture};
use alloy_consensus::Header;
use alloy_primitives::Address;
use hearth::config::NodeConfig;
use hearth_actors::miner::HeadWrites;
use hearth_actors::{MinerActor, MinerConfig, MinerPeers};
use hearth_messages::ExecError;
use hearth_messages::executor::{Admitted, BuildBlock, BuiltBlock, ExecutorClient};
use hearth_messages::mempool::{TakePending, TxsMined};
use hearth_messages::miner::{
    AutoMine, GetMiningStatus, IntervalMining, SetAutomine, SetIntervalMining,
};
use hearth_messages::state::CommitBlock;
use hearth_storage::{BlockDraft, SealedBlock, StateDiff, StoredBody};
use serde_json::json;
use tokio::sync::mpsc;

use crate::support::{GENESIS_TIME, Probe, TestNode, fixtures};

/// What the executor probe builds: an empty block on the parent with the requested stamp.
fn built(msg: &BuildBlock) -> BuiltBlock {
    let header = Header {
        number: msg.parent.number + 1,
        timestamp: msg.env.timestamp,
        gas_limit: msg.env.gas_limit,
        ..Default::default()
    };
    BuiltBlock {
        draft: BlockDraft {
            header,
            body: StoredBody { transactions: vec![], senders: vec![] },
            receipts: vec![],
            touched: Vec::new(),
        },
        diff: StateDiff::default(),
        invalid: vec![],
        requests: vec![],
        outputs: vec![],
        console: vec![],
        halts: vec![],
        built_here: false,
    }
}

/// An executor that takes `delay` (tokio time) to build each block.
struct SlowBuilder {
    delay: Duration,
}

impl Actor for SlowBuilder {
    type Context = Context<Self>;
}

impl Handler<Admitted<BuildBlock>> for SlowBuilder {
    type Result = ResponseFuture<Result<BuiltBlock, ExecError>>;

    fn handle(&mut self, msg: Admitted<BuildBlock>, _: &mut Context<Self>) -> Self::Result {
        let delay = self.delay;
        // `msg` (and its slot in the pool) lives until the build is done.
        Box::pin(async move {
            tokio::time::sleep(delay).await;
            Ok(built(&msg.request))
        })
    }
}

/// What a probed miner hands back: the miner, the commits it made, and the other probes'
/// receivers, which must stay alive for the probes to keep answering.
type Probed = (
    Addr<MinerActor>,
    mpsc::Receiver<CommitBlock>,
    (mpsc::Receiver<TakePending>, mpsc::Receiver<TxsMined>, Option<mpsc::Receiver<BuildBlock>>),
);

/// A miner on this runtime (call after `tokio::time::pause()`), building on a real genesis,
/// and the probe standing in for `CommitBlock`. `build_delay` makes block building take time.
fn probed_miner(
    node: &TestNode,
    automine: bool,
    interval: Option<IntervalMining>,
    build_delay: Option<Duration>,
) -> Probed {
    let (take_pending, asked) = Probe::<TakePending>::start(|_| vec![]);
    let (txs_mined, reported) = Probe::<TxsMined>::start(|_| false);
    let (calls, _) = Probe::start(|_| Err(ExecError::UnknownBlock));
    let (estimates, _) = Probe::start(|_| Err(ExecError::UnknownBlock));
    let (touched, _) = Probe::start(|_| Err(ExecError::UnknownBlock));
    let (builds, built_seen) = match build_delay {
        Some(delay) => (SlowBuilder { delay }.start().recipient(), None),
        None => {
            let (builds, seen) = Probe::start_as_executor(|msg: &BuildBlock| Ok(built(msg)));
            (builds, Some(seen))
        }
    };
    let (commit, commits) = Probe::<CommitBlock>::start(|msg| {
        let header = msg.draft.header.clone();
        Ok(Arc::new(SealedBlock {
            hash: header.hash_slow(),
            header,
            body: msg.draft.body.clone(),
            receipts: vec![],
            extras: Default::default(),
        }))
    });
    let miner = MinerActor::new(
        node.node.chain.clone(),
        MinerPeers {
            take_pending,
            txs_mined,
            executor: ExecutorClient::new(
                calls,
                estimates,
                builds,
                touched,
                hearth_messages::admission::AdmissionLimits::default(),
            ),
            commit,
            // Never asked here: the probed miner only mines.
            rollback: node.node.state.clone().recipient(),
            replace: node.node.state.clone().recipient(),
            head_writes: HeadWrites::of(&node.node.state),
            show: hearth_actors::Show::default(),
            settle: None,
        },
        MinerConfig {
            automine,
            interval,
            gas_limit: 30_000_000,
            coinbase: Address::ZERO,
            clock: Arc::new(|| GENESIS_TIME),
            seed: 7,
        },
    )
    .start_here(fixtures::one());
    (miner, commits, (asked, reported, built_seen))
}

fn manual_node() -> TestNode {
    let mut config = NodeConfig::for_tests();
    config.automine = false;
    TestNode::start_with(config)
}

/// Lets every ready task run. A short sleep is what makes the runtime poll its timer driver
/// (plain yields do not); tokio timers have millisecond resolution, so each settle moves the
/// paused clock by about 2 ms, which the tests leave room for.
async fn settle() {
    for _ in 0..2 {
        tokio::time::sleep(Duration::from_micros(1)).await;
        for _ in 0..50 {
            tokio::task::yield_now().await;
        }
    }
}

/// Room left for the clock movement of `settle`.
const SLACK: Duration = Duration::from_millis(20);

const SECOND: Duration = Duration::from_secs(1);

#[actix::test]
async fn each_block_time_yields_exactly_one_block() {
    tokio::time::pause();
    let node = manual_node();
    let block_time = Duration::from_millis(2500);
    let (_miner, mut commits, _keep) =
        probed_miner(&node, false, Some(IntervalMining::Fixed(block_time)), None);
    settle().await;
    assert!(commits.try_recv().is_err(), "nothing before the first block time");
    for _ in 0..3 {
        tokio::time::advance(block_time - SLACK).await;
        settle().await;
        assert!(commits.try_recv().is_err(), "no block before the block time");
        tokio::time::advance(SLACK).await;
        settle().await;
        let commit = commits.try_recv().expect("one block per block time");
        assert_eq!(commit.draft.header.number, 1, "the probe never moves the head");
        assert!(commits.try_recv().is_err(), "exactly one block");
    }
}

#[actix::test]
async fn modes_switch_at_run_time() {
    tokio::time::pause();
    let node = manual_node();
    let (miner, mut commits, _keep) = probed_miner(&node, false, None, None);
    tokio::time::advance(10 * SECOND).await;
    settle().await;
    assert!(commits.try_recv().is_err(), "manual: no timer");

    miner.send(SetIntervalMining(IntervalMining::fixed(SECOND).unwrap())).await.unwrap();
    tokio::time::advance(SECOND).await;
    settle().await;
    assert!(commits.try_recv().is_ok());
    assert!(commits.try_recv().is_err());

    miner.send(SetAutomine(true)).await.unwrap();
    let status = miner.send(GetMiningStatus).await.unwrap();
    assert!(status.automine, "both at once");
    assert_eq!(status.interval, Some(IntervalMining::Fixed(SECOND)));
    assert_eq!(miner.send(AutoMine).await.unwrap().unwrap(), None, "nothing pending");

    miner.send(SetIntervalMining(None)).await.unwrap();
    tokio::time::advance(5 * SECOND).await;
    settle().await;
    assert!(commits.try_recv().is_err(), "interval off: no more timer blocks");

    // A random range: every block comes between min and max after the previous one.
    let range = IntervalMining::range(SECOND, 3 * SECOND).unwrap();
    miner.send(SetIntervalMining(Some(range))).await.unwrap();
    let mut blocks = 0;
    let mut since_last = Duration::ZERO;
    for _ in 0..30_000 / 100 {
        tokio::time::advance(Duration::from_millis(100)).await;
        settle().await;
        since_last += Duration::from_millis(100);
        if commits.try_recv().is_ok() {
            assert!(since_last >= SECOND && since_last <= 3 * SECOND, "{since_last:?}");
            blocks += 1;
            since_last = Duration::ZERO;
        }
    }
    assert!((10..=30).contains(&blocks), "{blocks} blocks in 30 s of 1..3 s block times");
}

#[actix::test]
async fn a_tick_due_while_a_block_is_built_is_skipped_and_counted() {
    tokio::time::pause();
    let node = manual_node();
    let started = tokio::time::Instant::now();
    // Building takes 2.5 block times: the ticks due at 2 s and 3 s fall inside the build of
    // the 1 s block, those at 5 s and 6 s inside the build of the 4 s block.
    let (miner, mut commits, _keep) = probed_miner(
        &node,
        false,
        Some(IntervalMining::Fixed(SECOND)),
        Some(Duration::from_millis(2500)),
    );
    let mut blocks_at = Vec::new();
    // Up to 6.6 s: after the second block, before the 7 s tick starts a third build.
    while started.elapsed() < Duration::from_millis(6600) {
        tokio::time::advance(Duration::from_millis(10)).await;
        settle().await;
        while commits.try_recv().is_ok() {
            blocks_at.push(started.elapsed());
        }
    }
    let secs: Vec<u64> = blocks_at.iter().map(|d| d.as_millis() as u64 / 100).collect();
    // Blocks land at 3.5 s and 6.5 s (tenths of a second, rounded down by the 10 ms steps).
    assert_eq!(secs, vec![35, 65], "{blocks_at:?}");
    assert_eq!(miner.send(GetMiningStatus).await.unwrap().ticks_skipped, 4);
}

#[actix::test]
async fn mining_controls_over_rpc() {
    let node = TestNode::start();
    assert_eq!(node.ok("anvil_getAutomine", json!([])).await, true);
    assert_eq!(node.ok("evm_setAutomine", json!([false])).await, true);
    assert_eq!(node.ok("hardhat_getAutomine", json!([])).await, false);
    let alice = node.signer(0).address();
    let bob = node.signer(1).address();
    let hash =
        node.ok("eth_sendTransaction", json!([{"from": alice, "to": bob, "value": "0x1"}])).await;
    assert_eq!(node.block_number().await, 0, "automine off: the transaction waits");
    assert_eq!(node.ok("txpool_status", json!([])).await["pending"], "0x1");
    node.ok("evm_mine", json!([])).await;
    assert!(node.ok("eth_getTransactionReceipt", json!([hash])).await.is_object());
    assert_eq!(node.err("evm_setAutomine", json!(["yes"])).await.0, -32602);

    assert_eq!(node.ok("evm_setIntervalMining", json!([60_000])).await, true);
    assert_eq!(node.ok("evm_setIntervalMining", json!([[1000, 2000]])).await, true);
    assert_eq!(node.ok("evm_setIntervalMining", json!([0])).await, true);
    for bad in [json!([[3000, 1000]]), json!([[0, 0]]), json!([-5]), json!(["soon"]), json!([])] {
        let (code, message, _) = node.err("evm_setIntervalMining", bad.clone()).await;
        assert_eq!(code, -32602, "{bad}: {message}");
    }
    // anvil's own method takes seconds (viem's "anvil" test client sends seconds to
    // evm_setIntervalMining too, which Hearth reads as Hardhat's milliseconds).
    let interval = || async { node.node.miner.send(GetMiningStatus).await.unwrap().interval };
    assert_eq!(node.ok("anvil_setIntervalMining", json!(["0x2"])).await, serde_json::Value::Null);
    assert_eq!(interval().await, Some(IntervalMining::Fixed(Duration::from_secs(2))));
    // anvil_getIntervalMining answers in seconds, as anvil does.
    assert_eq!(node.ok("anvil_getIntervalMining", json!([])).await, json!(2));
    assert_eq!(node.ok("evm_setIntervalMining", json!([2])).await, true);
    assert_eq!(interval().await, Some(IntervalMining::Fixed(Duration::from_millis(2))));
    assert_eq!(node.ok("anvil_getIntervalMining", json!([])).await, json!(0.002));
    assert_eq!(node.ok("evm_setIntervalMining", json!([[1000, 2000]])).await, true);
    assert_eq!(node.ok("anvil_getIntervalMining", json!([])).await, json!([1, 2]));
    assert_eq!(node.err("anvil_getIntervalMining", json!([1])).await.0, -32602);
    assert_eq!(node.ok("anvil_setIntervalMining", json!([0])).await, serde_json::Value::Null);
    assert_eq!(interval().await, None);
    assert_eq!(node.ok("anvil_getIntervalMining", json!([])).await, serde_json::Value::Null);
    assert_eq!(node.err("anvil_setIntervalMining", json!([-1])).await.0, -32602);
}
