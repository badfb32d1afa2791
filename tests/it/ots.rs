//! Otterscan's methods end to end: address searches paged from the store's index (and the
//! index following a revert), the per-transaction views (frames, internal operations, revert
//! data), contract creators, block details and block pages, on the hand-assembled contracts of
//! the trace tests.

use alloy_primitives::{Address, Bytes, U256};
use serde_json::{Value, json};

use crate::support::TestNode;
use crate::trace::{
    Chain, FACTORY, SELF_DESTRUCTING_INIT, address_of, code, deploy, deploy_code, send,
};

/// DELEGATECALLs the address in its calldata, with all its gas and no data.
const DELEGATOR: &str = "6000 6000 6000 6000 600035 5a f4 00";
/// Returns NUMBER: a library for the delegator.
const LIBRARY: &str = "4360005260206000f3";
/// Reverts with one word of data, 0xaa.
const REVERTER: &str = "60aa 600052 60206000fd";

/// A value transfer from signer `from` to `to`, mined in its own block.
async fn transfer(node: &TestNode, from: usize, to: Address) -> String {
    let tx = json!({"from": node.signer(from).address(), "to": to, "value": "0x1"});
    node.ok("eth_sendTransaction", json!([tx])).await.as_str().expect("hash").to_owned()
}

fn hashes(page: &Value) -> Vec<String> {
    page["txs"]
        .as_array()
        .expect("txs")
        .iter()
        .map(|t| t["hash"].as_str().expect("shape").to_owned())
        .collect()
}

#[actix::test]
async fn searches_page_through_an_address_history_newest_first_and_follow_a_revert() {
    let node = TestNode::start();
    let target = Address::repeat_byte(0x77);
    let mut sent = Vec::new();
    for from in [1, 2, 1, 2] {
        sent.push(transfer(&node, from, target).await);
    }
    let newest: Vec<String> = sent.iter().rev().cloned().collect();

    let all = node.ok("ots_searchTransactionsBefore", json!([target, 0, 25])).await;
    assert_eq!(hashes(&all), newest);
    assert_eq!((all["firstPage"].as_bool(), all["lastPage"].as_bool()), (Some(true), Some(true)));
    let receipt = &all["receipts"][0];
    assert_eq!(receipt["transactionHash"], json!(newest[0]));
    assert!(receipt["timestamp"].is_u64(), "Erigon's timestamp is a number: {receipt}");

    // Pages of one, walked down by the oldest block shown, as Otterscan walks them.
    let mut walked = Vec::new();
    let mut page = node.ok("ots_searchTransactionsBefore", json!([target, 0, 1])).await;
    loop {
        walked.extend(hashes(&page));
        if page["lastPage"] == json!(true) {
            break;
        }
        let oldest = page["txs"][0]["blockNumber"].as_str().expect("shape").to_owned();
        let oldest = u64::from_str_radix(oldest.trim_start_matches("0x"), 16).expect("shape");
        page = node.ok("ots_searchTransactionsBefore", json!([target, oldest, 1])).await;
        assert_eq!(page["firstPage"], json!(false));
    }
    assert_eq!(walked, newest);

    let oldest = node.ok("ots_searchTransactionsAfter", json!([target, 0, 2])).await;
    assert_eq!(hashes(&oldest), vec![sent[1].clone(), sent[0].clone()], "newest first");
    assert_eq!(
        (oldest["firstPage"].as_bool(), oldest["lastPage"].as_bool()),
        (Some(false), Some(true))
    );
    let sender = node.signer(1).address();
    let by_sender = node.ok("ots_searchTransactionsBefore", json!([sender, 0, 25])).await;
    assert_eq!(hashes(&by_sender), vec![sent[2].clone(), sent[0].clone()]);

    // A transaction undone by evm_revert leaves the index with its block.
    let snapshot = node.ok("evm_snapshot", json!([])).await;
    transfer(&node, 3, target).await;
    assert_eq!(
        hashes(&node.ok("ots_searchTransactionsBefore", json!([target, 0, 25])).await).len(),
        5
    );
    assert_eq!(node.ok("evm_revert", json!([snapshot])).await, json!(true));
    let after = node.ok("ots_searchTransactionsBefore", json!([target, 0, 25])).await;
    assert_eq!(hashes(&after), newest);
    // ... and so does one dropped by anvil_rollback.
    transfer(&node, 3, target).await;
    node.ok("anvil_rollback", json!([1])).await;
    let rolled = node.ok("ots_searchTransactionsBefore", json!([target, 0, 25])).await;
    assert_eq!(hashes(&rolled), newest);

    // A library whose code runs by DELEGATECALL appears in the transaction, as in Erigon.
    let library = deploy(&node, &code(LIBRARY)).await;
    let delegator = deploy(&node, &code(DELEGATOR)).await;
    let delegated =
        send(&node, Some(delegator), crate::trace::address_word(library), 100_000).await;
    let used = node.ok("ots_searchTransactionsBefore", json!([library, 0, 25])).await;
    assert_eq!(hashes(&used).first(), Some(&delegated), "{used}");

    let (code, message, _) =
        node.err("ots_searchTransactionsBefore", json!([target, 0, 101])).await;
    assert_eq!(code, -32602, "{message}");
}

#[actix::test]
async fn transaction_views_show_frames_operations_and_revert_data() {
    let chain = Chain::start().await;
    let node = &chain.node;
    let from = node.signer(0).address();
    let frames = node.ok("ots_traceTransaction", json!([chain.nested])).await;
    let kinds: Vec<&str> = frames
        .as_array()
        .expect("shape")
        .iter()
        .map(|f| f["type"].as_str().expect("shape"))
        .collect();
    assert_eq!(kinds, ["CALL", "CALL", "STATICCALL"], "{frames}");
    assert_eq!((address_of(&frames[0]["from"]), frames[0]["depth"].as_u64()), (from, Some(0)));
    assert_eq!(address_of(&frames[1]["to"]), chain.callee);
    assert_eq!(frames[1]["output"], format!("0x{:064x}", 43));
    assert_eq!(frames[2]["value"], Value::Null, "a static call moves no value");
    assert_eq!(node.ok("ots_getInternalOperations", json!([chain.nested])).await, json!([]));

    // CREATE2 of a contract that self-destructs to its creator (the factory) while created.
    let init = Bytes::from(code(SELF_DESTRUCTING_INIT));
    let hash = send(node, Some(chain.factory), init, 200_000).await;
    let ops = node.ok("ots_getInternalOperations", json!([hash])).await;
    let types: Vec<u64> =
        ops.as_array().expect("shape").iter().map(|o| o["type"].as_u64().expect("shape")).collect();
    assert_eq!(types, [3, 1], "a create2, then the self-destruct: {ops}");
    assert_eq!(address_of(&ops[0]["from"]), chain.factory);
    assert_eq!(address_of(&ops[1]["to"]), chain.factory, "the beneficiary");
    let frames = node.ok("ots_traceTransaction", json!([hash])).await;
    assert_eq!(
        frames.as_array().expect("shape").last().expect("shape")["type"],
        "SELFDESTRUCT",
        "{frames}"
    );

    // A contract that calls out, then self-destructs: Erigon puts the SELFDESTRUCT one level
    // below the entry before it (the call), not below its own frame.
    let out = Address::repeat_byte(0x42);
    let caller_then_gone = format!("6000600060006000600073{out:x}5af150 33ff");
    let doomed = deploy(node, &code(&caller_then_gone)).await;
    let hash = send(node, Some(doomed), Bytes::new(), 200_000).await;
    let frames = node.ok("ots_traceTransaction", json!([hash])).await;
    let shape: Vec<(&str, u64)> = frames
        .as_array()
        .expect("frames")
        .iter()
        .map(|f| (f["type"].as_str().expect("type"), f["depth"].as_u64().expect("depth")))
        .collect();
    assert_eq!(shape, [("CALL", 0), ("CALL", 1), ("SELFDESTRUCT", 2)], "{frames}");

    let reverter = deploy(node, &code(REVERTER)).await;
    let reverted = send(node, Some(reverter), Bytes::new(), 100_000).await;
    let data = node.ok("ots_getTransactionError", json!([reverted])).await;
    assert_eq!(data, format!("0x{:064x}", 0xaa));
    assert_eq!(node.ok("ots_getTransactionError", json!([chain.nested])).await, "0x");
    let unknown = format!("0x{}", "ab".repeat(32));
    let (code, message, _) = node.err("ots_getTransactionError", json!([unknown])).await;
    assert_eq!((code, message.as_str()), (-32000, "transaction not found"));
}

#[actix::test]
async fn creators_are_the_direct_creator_and_nonces_find_their_transaction() {
    let chain = Chain::start().await;
    let node = &chain.node;
    let from = node.signer(0).address();
    let creator = node.ok("ots_getContractCreator", json!([chain.factory])).await;
    assert_eq!(address_of(&creator["creator"]), from);
    let receipt = node.ok("eth_getTransactionReceipt", json!([creator["hash"]])).await;
    assert_eq!(address_of(&receipt["contractAddress"]), chain.factory);

    // A contract the factory made: its creator is the factory.
    let runtime = code(FACTORY);
    let hash = send(node, Some(chain.factory), deploy_code(&runtime), 300_000).await;
    let frames = node.ok("ots_traceTransaction", json!([hash])).await;
    let child = address_of(&frames[1]["to"]);
    let found = node.ok("ots_getContractCreator", json!([child])).await;
    assert_eq!(
        (address_of(&found["creator"]), found["hash"].clone()),
        (chain.factory, json!(hash))
    );
    assert_eq!(node.ok("ots_getContractCreator", json!([from])).await, Value::Null, "an EOA");
    assert_eq!(node.ok("ots_hasCode", json!([child, "latest"])).await, json!(true));
    assert_eq!(node.ok("ots_hasCode", json!([child, "0x1"])).await, json!(false));

    let first = node.ok("ots_getTransactionBySenderAndNonce", json!([from, 0])).await;
    let tx = node.ok("eth_getTransactionByHash", json!([first])).await;
    assert_eq!((tx["nonce"].as_str(), address_of(&tx["from"])), (Some("0x0"), from));
    assert_eq!(
        node.ok("ots_getTransactionBySenderAndNonce", json!([from, 1000])).await,
        Value::Null
    );
}

#[actix::test]
async fn block_details_and_pages_count_from_the_end_of_the_block() {
    let node = TestNode::start();
    node.ok("evm_setAutomine", json!([false])).await;
    let target = Address::repeat_byte(0x55);
    let mut sent = Vec::new();
    for _ in 0..3 {
        let tx = json!({"from": node.signer(1).address(), "to": target, "value": "0x2", "data": "0x0102030405"});
        sent.push(node.ok("eth_sendTransaction", json!([tx])).await);
    }
    node.ok("evm_mine", json!([])).await;
    let number = node.block_number().await;

    let details = node.ok("ots_getBlockDetails", json!([number])).await;
    assert_eq!(details["block"]["transactionCount"], json!(3));
    assert_eq!(details["block"]["logsBloom"], Value::Null);
    assert!(details["block"].get("transactions").is_none());
    let mut fees = U256::ZERO;
    for hash in &sent {
        let r = node.ok("eth_getTransactionReceipt", json!([hash])).await;
        let gas: U256 = r["gasUsed"].as_str().expect("shape").parse().expect("shape");
        let price: U256 = r["effectiveGasPrice"].as_str().expect("shape").parse().expect("shape");
        fees += gas * price;
    }
    assert_eq!(details["totalFees"], json!(fees));
    let by_hash = node.ok("ots_getBlockDetailsByHash", json!([details["block"]["hash"]])).await;
    assert_eq!(by_hash, details);

    let page = node.ok("ots_getBlockTransactions", json!([number, 0, 2])).await;
    let shown: Vec<Value> = page["fullblock"]["transactions"]
        .as_array()
        .expect("shape")
        .iter()
        .map(|t| t["hash"].clone())
        .collect();
    assert_eq!(shown, vec![sent[1].clone(), sent[2].clone()], "page 0: the last two");
    assert_eq!(page["fullblock"]["transactions"][0]["input"], "0x01020304", "the selector only");
    assert_eq!(page["fullblock"]["transactionCount"], json!(3));
    assert_eq!(page["receipts"][0]["logs"], Value::Null);
    let older = node.ok("ots_getBlockTransactions", json!([number, 1, 2])).await;
    assert_eq!(older["fullblock"]["transactions"][0]["hash"], sent[0]);
    let past = node.ok("ots_getBlockTransactions", json!([number, 5, 2])).await;
    assert_eq!(past["receipts"], json!([]));

    let header = node.ok("erigon_getHeaderByNumber", json!([number])).await;
    assert_eq!(header["hash"], details["block"]["hash"]);
    assert!(header.get("transactions").is_none() && header.get("size").is_none());
    let (_, message, _) = node.err("ots_getBlockDetails", json!([number + 10])).await;
    assert!(message.contains("not found"), "{message}");
    assert_eq!(node.ok("ots_getApiLevel", json!([])).await, json!(8));
}
