//! Polling filters over JSON-RPC: eth_newBlockFilter, eth_newFilter, eth_getFilterChanges,
//! eth_getFilterLogs, eth_uninstallFilter (how viem and ethers watch blocks and logs over HTTP).

use serde_json::json;

use crate::support::TestNode;

#[actix::test]
async fn a_block_filter_reports_each_new_block_once() {
    let node = TestNode::start();
    let id = node.ok("eth_newBlockFilter", json!([])).await;
    assert_eq!(node.ok("eth_getFilterChanges", json!([id])).await, json!([]));
    node.ok("evm_mine", json!([])).await;
    node.ok("evm_mine", json!([])).await;
    let hashes = node.ok("eth_getFilterChanges", json!([id])).await;
    let block1 = node.ok("eth_getBlockByNumber", json!(["0x1", false])).await;
    let block2 = node.ok("eth_getBlockByNumber", json!(["0x2", false])).await;
    assert_eq!(hashes, json!([block1["hash"], block2["hash"]]));
    assert_eq!(node.ok("eth_getFilterChanges", json!([id])).await, json!([]), "reported once");

    assert_eq!(node.ok("eth_uninstallFilter", json!([id])).await, true);
    assert_eq!(node.ok("eth_uninstallFilter", json!([id])).await, false);
    let (code, message, _) = node.err("eth_getFilterChanges", json!([id])).await;
    assert_eq!((code, message.as_str()), (-32000, "filter not found"));
    assert_eq!(node.err("eth_getFilterChanges", json!(["nope"])).await.0, -32602);
}

#[actix::test]
async fn a_log_filter_reports_new_matching_logs_and_all_of_them_on_request() {
    or_skip!(crate::conformance::conformance_dir());
    let node = TestNode::start();
    let token = node.deploy_bench_token().await;
    let alice = node.signer(0).address();
    let bob = node.signer(1).address();
    let transfer_topic =
        alloy_primitives::keccak256("Transfer(address,address,uint256)").to_string();
    let criteria = json!({"fromBlock": "0x0", "address": token, "topics": [transfer_topic]});
    let id = node.ok("eth_newFilter", json!([criteria])).await;
    // Logs before the filter was installed are not "changes".
    assert_eq!(node.ok("eth_getFilterChanges", json!([id])).await, json!([]));

    let data = format!("0xa9059cbb{:0>64}{:064x}", alloy_primitives::hex::encode(bob), 5);
    for _ in 0..2 {
        node.ok("eth_sendTransaction", json!([{"from": alice, "to": token, "data": data}])).await;
    }
    // A transfer of ETH makes a block with no matching log.
    node.ok("eth_sendTransaction", json!([{"from": alice, "to": bob, "value": "0x1"}])).await;
    let changes = node.ok("eth_getFilterChanges", json!([id])).await;
    let changes = changes.as_array().unwrap();
    assert_eq!(changes.len(), 2, "{changes:?}");
    assert_eq!(changes[0]["blockNumber"], "0x2");
    assert_eq!(changes[1]["blockNumber"], "0x3");
    assert_eq!(node.ok("eth_getFilterChanges", json!([id])).await, json!([]));
    // eth_getFilterLogs answers the whole criteria: the mint and both transfers.
    let all = node.ok("eth_getFilterLogs", json!([id])).await;
    assert_eq!(all.as_array().unwrap().len(), 3);
    assert_eq!(all, node.ok("eth_getLogs", json!([criteria])).await);

    // A filter that ends at block 2 reports nothing past it.
    let bounded = node.ok("eth_newFilter", json!([{"toBlock": "0x2", "address": token}])).await;
    node.ok("eth_sendTransaction", json!([{"from": alice, "to": token, "data": data}])).await;
    assert_eq!(node.ok("eth_getFilterChanges", json!([bounded])).await, json!([]));

    let block_filter = node.ok("eth_newBlockFilter", json!([])).await;
    assert_eq!(node.err("eth_getFilterLogs", json!([block_filter])).await.0, -32000);
    let by_hash = json!([{"blockHash": format!("0x{}", "11".repeat(32))}]);
    assert_eq!(node.err("eth_newFilter", by_hash).await.0, -32602);
    assert!(node.ok("eth_newFilter", json!([{}])).await.is_string());
}

#[actix::test]
async fn a_pending_transaction_filter_reports_admitted_hashes() {
    let node = TestNode::start();
    let id = node.ok("eth_newPendingTransactionFilter", json!([])).await;
    let alice = node.signer(0).address();
    let bob = node.signer(1).address();
    let first =
        node.ok("eth_sendTransaction", json!([{"from": alice, "to": bob, "value": "0x1"}])).await;
    let second =
        node.ok("eth_sendTransaction", json!([{"from": alice, "to": bob, "value": "0x2"}])).await;
    // The admission notice is sent before the submit's reply, and the filter actor handles its
    // mailbox in order, so the poll sees both.
    assert_eq!(node.ok("eth_getFilterChanges", json!([id])).await, json!([first, second]));
    assert_eq!(node.ok("eth_getFilterChanges", json!([id])).await, json!([]));
    assert_eq!(node.err("eth_getFilterLogs", json!([id])).await.0, -32000);
    assert_eq!(node.err("eth_newPendingTransactionFilter", json!([1])).await.0, -32602);
}

/// Creation code of a contract that logs one word (0xff, LOG0) whenever it is called.
const LOGGER: &str = "0x600b600a5f39600b5ff360ff60005260206000a000";

/// Deploys [`LOGGER`]; its address.
async fn logger(node: &TestNode) -> serde_json::Value {
    let alice = node.signer(0).address();
    let hash = node.ok("eth_sendTransaction", json!([{"from": alice, "data": LOGGER}])).await;
    node.ok("eth_getTransactionReceipt", json!([hash])).await["contractAddress"].clone()
}

/// Calls the logger in a mined transaction; its one log as eth_getLogs gives it.
async fn log_once(node: &TestNode, logger: &serde_json::Value) -> serde_json::Value {
    let alice = node.signer(0).address();
    let hash = node.ok("eth_sendTransaction", json!([{"from": alice, "to": logger}])).await;
    let receipt = node.ok("eth_getTransactionReceipt", json!([hash])).await;
    receipt["logs"][0].clone()
}

#[actix::test]
async fn a_log_filter_reports_logs_a_rewind_undid_as_removed_then_the_new_ones() {
    let node = TestNode::start();
    let logger = logger(&node).await;
    let id = node.ok("eth_newFilter", json!([{"address": logger}])).await;
    let blocks = node.ok("eth_newBlockFilter", json!([])).await;
    let snapshot = node.ok("evm_snapshot", json!([])).await;
    let first = log_once(&node, &logger).await;
    let second = log_once(&node, &logger).await;
    assert_eq!(node.ok("eth_getFilterChanges", json!([id])).await, json!([first, second]));
    node.ok("eth_getFilterChanges", json!([blocks])).await;

    // evm_revert undoes both: newest first, `removed: true`, then the replacing block's log.
    assert_eq!(node.ok("evm_revert", json!([snapshot])).await, true);
    let replacing = log_once(&node, &logger).await;
    let removed = |mut log: serde_json::Value| {
        log["removed"] = json!(true);
        log
    };
    let changes = node.ok("eth_getFilterChanges", json!([id])).await;
    assert_eq!(changes, json!([removed(second), removed(first.clone()), replacing]));
    // The block filter reports the replacing block, at a number it had reported before.
    let replacing_block = node.ok("eth_getBlockByNumber", json!(["latest", false])).await;
    assert_eq!(
        node.ok("eth_getFilterChanges", json!([blocks])).await,
        json!([replacing_block["hash"]])
    );

    // anvil_rollback the same way; a log the filter never reported is not reported removed.
    let _unreported = log_once(&node, &logger).await;
    node.ok("anvil_rollback", json!([2])).await;
    let changes = node.ok("eth_getFilterChanges", json!([id])).await;
    assert_eq!(changes, json!([removed(replacing)]));
}
