//! What a hostile tester broke (issue 15), each reproduced as it was reported and shown fixed:
//! a duration that overflowed the miner's clock, block counts that mined without end, a log
//! query that built gigabytes, and a dev chain its own importer refused.

use std::process::Command;

use hearth::config::NodeConfig;
use hearth_messages::miner::{GetMiningStatus, MineBlocks};
use serde_json::{Value, json};

use crate::process::{NodeProcess, TempDir};
use crate::support::{TestNode, fixtures, quantity};

/// A dev-account transfer goes through automine: the miner is alive and mining.
async fn assert_mines(node: &TestNode) {
    let from = node.signer(0).address();
    let before = node.block_number().await;
    let hash = node
        .ok(
            "eth_sendTransaction",
            json!([{"from": from, "to": node.signer(1).address(), "value": "0x1"}]),
        )
        .await;
    let receipt = node.ok("eth_getTransactionReceipt", json!([hash])).await;
    assert_eq!(receipt["status"], "0x1", "{receipt}");
    assert_eq!(node.block_number().await, before + 1);
    node.ok("evm_mine", json!([])).await;
    assert_eq!(node.block_number().await, before + 2);
}

#[actix::test]
async fn an_overflowing_block_time_is_refused_and_the_miner_keeps_mining() {
    let node = TestNode::start();
    // anvil's seconds: this used to panic the miner thread on its next timer arm, after which
    // every mining method answered "miner is unavailable: Mailbox has closed".
    let (code, message, _) =
        node.err("anvil_setIntervalMining", json!(["0x7fffffffffffffff"])).await;
    assert_eq!(code, -32602, "{message}");
    assert!(message.contains("too long"), "{message}");
    // Hardhat's milliseconds, alone and as a range.
    for params in [json!([u64::MAX]), json!([[1000, "0xffffffffffffffff"]])] {
        let (code, message, _) = node.err("evm_setIntervalMining", params).await;
        assert_eq!(code, -32602, "{message}");
    }
    let status = node.node.miner.send(GetMiningStatus).await.unwrap();
    assert_eq!(status.interval, None, "nothing was set");
    assert_mines(&node).await;
    // The longest allowed block time arms the timer without trouble.
    node.ok("anvil_setIntervalMining", json!([365 * 24 * 3600])).await;
    node.ok("anvil_setIntervalMining", json!([0])).await;
    assert_mines(&node).await;
}

#[actix::test]
async fn timestamps_past_the_end_of_time_are_refused_and_mining_goes_on() {
    let node = TestNode::start();
    let too_late = format!("{:#x}", i64::MAX as u64 + 1);
    assert_eq!(node.err("evm_setNextBlockTimestamp", json!([too_late])).await.0, -32602);
    assert_eq!(node.err("evm_mine", json!([too_late])).await.0, -32602);
    assert_eq!(node.err("evm_mine", json!([{"timestamp": too_late}])).await.0, -32602);
    // An increase that would push the clock past the last timestamp is refused, not saturated
    // (a saturated clock would leave no later second for the next block).
    let (code, message, _) = node.err("evm_increaseTime", json!([i64::MAX as u64])).await;
    assert_eq!(code, -32000, "{message}");
    assert!(message.contains("past the latest timestamp"), "{message}");
    assert_eq!(node.err("anvil_mine", json!(["0x2", "0xffffffffffffffff"])).await.0, -32602);
    assert_mines(&node).await;
}

#[actix::test]
async fn mining_counts_are_capped_where_they_are_parsed() {
    let mut config = NodeConfig::for_tests();
    config.rpc.max_mine_blocks = 300;
    let node = TestNode::start_with(config);
    // Each of these was accepted and mined ~6,500 blocks/s without end.
    for (method, params) in [
        ("evm_mine", json!([{"blocks": "0xffffffffffffffff"}])),
        ("anvil_mine", json!(["0xffffffffffffffff"])),
        ("hardhat_mine", json!(["0xffffffffffffffff"])),
        ("anvil_mine", json!([301])),
    ] {
        let (code, message, _) = node.err(method, params).await;
        assert_eq!(code, -32602, "{method}: {message}");
        assert!(message.contains("--dev.max-mine-blocks"), "{method}: {message}");
    }
    assert_eq!(node.block_number().await, 0, "nothing was mined");
    // At the cap it mines, in several chunks, every block once.
    node.ok("anvil_mine", json!([300])).await;
    assert_eq!(node.block_number().await, 300);
    node.ok("evm_mine", json!([{"blocks": 5}])).await;
    assert_eq!(node.block_number().await, 305);
}

#[actix::test]
async fn a_long_mining_run_lets_other_miner_messages_through() {
    let node = TestNode::start();
    let miner = node.node.miner.clone();
    let run = miner.send(MineBlocks { count: 3_000, timestamp: None });
    let mut run = Box::pin(run);
    // Polled once, so the request is in the miner's mailbox before the status request.
    assert!(futures_util::poll!(&mut run).is_pending());
    let status = miner.send(GetMiningStatus).await.expect("the miner answers");
    assert!(status.automine);
    assert!(
        futures_util::poll!(&mut run).is_pending(),
        "the status was answered between two chunks, while the run goes on"
    );
    let last = run.await.expect("miner alive").expect("mined");
    assert_eq!(last, 3_000);
    assert_eq!(node.block_number().await, 3_000);
    assert_mines(&node).await;
}

#[actix::test]
async fn log_answers_stop_at_the_log_and_byte_caps() {
    or_skip!(crate::conformance::conformance_dir());
    let mut config = NodeConfig::for_tests();
    config.rpc.max_logs = 3;
    let node = TestNode::start_with(config);
    let token = node.deploy_bench_token().await;
    let from = node.signer(0).address();
    for i in 0..4u64 {
        let to = format!("{:0>64}", format!("{:x}", 0x1000 + i));
        node.ok(
            "eth_sendTransaction",
            json!([{"from": from, "to": token, "data": format!("0xa9059cbb{to}{:0>64}", "1")}]),
        )
        .await;
    }
    let all = json!([{"fromBlock": "0x0", "toBlock": "latest", "address": token}]);
    let (code, message, _) = node.err("eth_getLogs", all.clone()).await;
    assert_eq!((code, message.as_str()), (-32005, "query returned more than 3 results"));
    // Within the cap the answer is the usual array of log objects.
    let three = json!([{"fromBlock": "0x3", "toBlock": "latest", "address": token}]);
    let logs = node.ok("eth_getLogs", three).await;
    assert_eq!(logs.as_array().map(Vec::len), Some(3), "{logs}");
    assert_eq!(
        logs[0]["address"].as_str().map(str::to_lowercase),
        Some(token.to_string().to_lowercase())
    );
    assert_eq!(quantity(&logs[2]["blockNumber"]), 5);
    // The same for a filter's logs.
    let id = node.ok("eth_newFilter", all.clone()).await;
    assert_eq!(node.err("eth_getFilterLogs", json!([id])).await.0, -32005);

    let mut config = NodeConfig::for_tests();
    config.rpc.max_response_bytes = 3_000;
    let node = TestNode::start_with(config);
    let token = node.deploy_bench_token().await;
    for _ in 0..8 {
        node.ok(
            "eth_sendTransaction",
            json!([{"from": from, "to": token, "data": format!("0xa9059cbb{:0>64}{:0>64}", "beef", "1")}]),
        )
        .await;
    }
    let (code, message, _) = node.err("eth_getLogs", all).await;
    assert_eq!((code, message.as_str()), (-32005, "response too large: more than 3000 bytes"));
}

/// Runs the `hearth` binary with `args`; its exit status and stderr.
pub(crate) fn hearth(args: &[&str]) -> (bool, String) {
    let output = Command::new(env!("CARGO_BIN_EXE_hearth")).args(args).output().expect("runs");
    (output.status.success(), String::from_utf8_lossy(&output.stderr).into_owned())
}

#[test]
fn an_exported_dev_chain_imports_back_to_the_same_head() {
    or_skip!(crate::conformance::conformance_dir());
    let dir = TempDir::new("roundtrip");
    let (dev, copy) = (dir.path().join("dev"), dir.path().join("copy"));
    let node = NodeProcess::start(&dev, &[]);
    let from = "0xf39fd6e51aad88f6f4ce6ab8827279cfffb92266";
    node.ok(
        "eth_sendTransaction",
        json!([{"from": from, "data": fixtures::bench_token_bytecode()}]),
    );
    node.ok(
        "eth_sendTransaction",
        json!([{"from": from, "to": "0x00000000000000000000000000000000000000aa", "value": "0x5"}]),
    );
    node.ok("anvil_mine", json!([3]));
    let head: Value = node.ok("eth_getBlockByNumber", json!(["latest", false]));
    // The system contracts a Prague block calls into are in the dev genesis (EIP-7002's queue
    // was the contract the importer asked for and did not find).
    for system in [
        "0x0000F90827F1C53a10cb7A02335B175320002935",
        "0x00000961Ef480Eb55e80D19ad83579A64c007002",
        "0x0000BBdDc7CE488642fb579F8B00f3a590007251",
    ] {
        let code = node.ok("eth_getCode", json!([system, "0x0"]));
        assert!(code.as_str().is_some_and(|c| c.len() > 2), "{system} has no code");
    }
    node.stop();

    let (genesis, blocks) = (dir.path().join("genesis.json"), dir.path().join("chain.rlp"));
    let (ok, log) = hearth(&[
        "export",
        "--datadir",
        dev.to_str().unwrap(),
        "--genesis-out",
        genesis.to_str().unwrap(),
        blocks.to_str().unwrap(),
    ]);
    assert!(ok, "{log}");
    let (ok, log) = hearth(&[
        "import",
        "--genesis",
        genesis.to_str().unwrap(),
        "--datadir",
        copy.to_str().unwrap(),
        blocks.to_str().unwrap(),
    ]);
    assert!(ok, "{log}");
    let hash = head["hash"].as_str().unwrap();
    assert!(log.contains(&format!("head #5 {hash}")), "the summary names the same head: {log}");
}

#[actix::test]
async fn a_panicking_miner_handler_fails_one_request_and_the_node_keeps_mining() {
    use hearth_actors::supervise::PanicForTest;
    use hearth_messages::MineError;

    let node = TestNode::start();
    let failed = node.node.miner.send(PanicForTest("boom")).await.expect("the mailbox stays open");
    assert!(matches!(&failed, Err(MineError::Panicked(what)) if what == "boom"), "{failed:?}");
    let restarts: Vec<_> = node.node.restarts.iter().map(|(name, c)| (*name, c.get())).collect();
    assert!(restarts.contains(&("miner", 1)), "{restarts:?}");
    assert!(restarts.contains(&("filters", 0)), "{restarts:?}");
    // The executors' restarts are on /metrics too (counted in their own unit test).
    assert!(restarts.contains(&("executor", 0)), "{restarts:?}");
    // The same actor, rebuilt from its settings, mines the next transaction.
    assert_mines(&node).await;
    node.ok("anvil_setIntervalMining", json!([1])).await;
    let status = node.node.miner.send(GetMiningStatus).await.unwrap();
    assert!(status.interval.is_some());
}

#[actix::test]
async fn a_panicking_method_fails_its_request_and_the_front_goes_on() {
    use std::sync::Arc;

    let node = TestNode::start();
    let mut extensions = hearth_rpc::Extensions::default();
    extensions.register(
        "test_panic",
        Arc::new(|params: Value| {
            Box::pin(async move {
                if params.is_array() {
                    panic!("an extension's bug");
                }
                Ok(Value::Null)
            })
        }),
    );
    let ctx = node.node.rpc_context(extensions);
    let body = json!({"jsonrpc": "2.0", "id": 7, "method": "test_panic", "params": []});
    let reply = hearth_rpc::handle_body(&ctx, body.to_string().as_bytes()).await;
    let answer: Value = serde_json::from_slice(&reply.body.expect("an answer")).unwrap();
    assert_eq!(answer["id"], 7);
    assert_eq!(answer["error"]["code"], -32603, "{answer}");
    assert!(answer["error"]["message"].as_str().unwrap().contains("an extension's bug"));
    assert_eq!(ctx.metrics.panics(), 1);
    // A batch with the panicking method answers its other items.
    let batch = json!([
        {"jsonrpc": "2.0", "id": 1, "method": "test_panic", "params": []},
        {"jsonrpc": "2.0", "id": 2, "method": "eth_chainId"}
    ]);
    let reply = hearth_rpc::handle_body(&ctx, batch.to_string().as_bytes()).await;
    let answers: Value = serde_json::from_slice(&reply.body.expect("answers")).unwrap();
    assert_eq!(answers[0]["error"]["code"], -32603);
    assert_eq!(answers[1]["result"], "0x7a69");
    assert_mines(&node).await;
}

#[actix::test]
async fn the_pools_content_stops_at_the_response_cap() {
    let mut config = NodeConfig::for_tests();
    config.automine = false;
    config.rpc.max_response_bytes = 4_000;
    let node = TestNode::start_with(config);
    let from = node.signer(0).address();
    let send = json!([{"from": from, "to": node.signer(1).address(), "value": "0x1"}]);
    node.ok("eth_sendTransaction", send.clone()).await;
    let content = node.ok("txpool_content", json!([])).await;
    let sender = from.to_checksum(None);
    assert_eq!(
        content["pending"][&sender]["0"]["from"].as_str().map(str::to_lowercase),
        Some(sender.to_lowercase())
    );
    assert_eq!(content["queued"], json!({}));
    let inspect = node.ok("txpool_inspect", json!([])).await;
    assert!(inspect["pending"][&sender]["0"].as_str().unwrap().contains("21000 gas"), "{inspect}");
    // Built into one capped buffer: a pool larger than the cap is refused, not built whole.
    for _ in 0..10 {
        node.ok("eth_sendTransaction", send.clone()).await;
    }
    let (code, message, _) = node.err("txpool_content", json!([])).await;
    assert_eq!((code, message.as_str()), (-32005, "response too large: more than 4000 bytes"));
    assert_eq!(node.ok("txpool_status", json!([])).await["pending"], "0xb");
}
