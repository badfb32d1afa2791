//! The everyday methods beyond the core set, on a dev chain: receipts by block, raw encodings,
//! headers and ommers, fee market facts, storage values, the node's mining facts, the pool by
//! sender, capabilities and fork configuration, access lists and testing_buildBlockV1.

use alloy_consensus::{Block, Header, TxEnvelope};
use alloy_eips::eip2718::{Decodable2718, Encodable2718};
use alloy_primitives::{Address, B256, Bytes, keccak256};
use alloy_rlp::Decodable;
use serde_json::{Value, json};

use crate::support::{TestNode, fixtures, quantity};

fn bytes(value: &Value) -> Vec<u8> {
    alloy_primitives::hex::decode(value.as_str().expect("hex string")).expect("hex")
}

/// A block with two transfers (automined one by one: blocks 1 and 2), returning the second
/// transaction's hash.
async fn two_transfers(node: &TestNode) -> B256 {
    let from = node.signer(0).address();
    let to = Address::repeat_byte(0x42);
    node.ok("eth_sendTransaction", json!([{"from": from, "to": to, "value": "0x1"}])).await;
    let hash =
        node.ok("eth_sendTransaction", json!([{"from": from, "to": to, "value": "0x2"}])).await;
    hash.as_str().expect("hash").parse().expect("hash")
}

#[actix::test]
async fn block_receipts_and_raw_encodings_match_the_single_ones() {
    let node = TestNode::start();
    let hash = two_transfers(&node).await;
    let receipt = node.ok("eth_getTransactionReceipt", json!([hash])).await;
    let by_number = node.ok("eth_getBlockReceipts", json!([receipt["blockNumber"]])).await;
    let by_hash = node.ok("eth_getBlockReceipts", json!([receipt["blockHash"]])).await;
    assert_eq!(by_number, json!([receipt]));
    assert_eq!(by_hash, by_number);
    assert_eq!(node.ok("eth_getBlockReceipts", json!(["0x0"])).await, json!([]));
    assert_eq!(node.ok("eth_getBlockReceipts", json!(["0x99"])).await, Value::Null);
    assert_eq!(node.ok("eth_getBlockReceipts", json!([B256::repeat_byte(1)])).await, Value::Null);

    // The raw header hashes to the block hash; the raw block decodes to the same header and
    // transactions; raw receipts and the raw transaction are their EIP-2718 bytes.
    let block = node.ok("eth_getBlockByNumber", json!(["latest", true])).await;
    let header = bytes(&node.ok("debug_getRawHeader", json!(["latest"])).await);
    assert_eq!(json!(keccak256(&header)), block["hash"]);
    let raw_block = bytes(&node.ok("debug_getRawBlock", json!([block["hash"]])).await);
    let decoded = Block::<TxEnvelope>::decode(&mut raw_block.as_slice()).expect("block RLP");
    assert_eq!(decoded.header, Header::decode(&mut header.as_slice()).expect("header RLP"));
    assert_eq!(json!(decoded.body.transactions[0].tx_hash()), json!(hash));
    let raw_tx = bytes(&node.ok("debug_getRawTransaction", json!([hash])).await);
    assert_eq!(raw_tx, decoded.body.transactions[0].encoded_2718());
    // The eth_ names answer the same bytes, by hash and by block and index; null past them.
    let raw = json!(format!("0x{}", alloy_primitives::hex::encode(&raw_tx)));
    assert_eq!(node.ok("eth_getRawTransactionByHash", json!([hash])).await, raw);
    let by_number = node.ok("eth_getRawTransactionByBlockNumberAndIndex", json!(["latest", "0x0"]));
    assert_eq!(by_number.await, raw);
    let by_hash =
        node.ok("eth_getRawTransactionByBlockHashAndIndex", json!([block["hash"], "0x0"]));
    assert_eq!(by_hash.await, raw);
    for (method, params) in [
        ("eth_getRawTransactionByHash", json!([B256::ZERO])),
        ("eth_getRawTransactionByBlockNumberAndIndex", json!(["latest", "0x9"])),
        ("eth_getRawTransactionByBlockNumberAndIndex", json!(["0x99", "0x0"])),
        ("eth_getRawTransactionByBlockHashAndIndex", json!([B256::ZERO, "0x0"])),
    ] {
        assert_eq!(node.ok(method, params).await, Value::Null, "{method}");
    }
    assert_eq!(node.err("eth_getRawTransactionByHash", json!([])).await.0, -32602);
    let raw_receipts = node.ok("debug_getRawReceipts", json!(["latest"])).await;
    let receipt_bytes = bytes(&raw_receipts[0]);
    let typed = alloy_consensus::ReceiptEnvelope::decode_2718(&mut receipt_bytes.as_slice())
        .expect("receipt");
    assert_eq!(json!(typed.cumulative_gas_used()), json!(21_000));
    assert_eq!(node.ok("debug_getRawTransaction", json!([B256::ZERO])).await, Value::Null);
    assert_eq!(node.ok("debug_getRawHeader", json!(["0x99"])).await, Value::Null);
    assert_eq!(node.err("debug_getRawBlock", json!([B256::repeat_byte(7)])).await.0, -32000);
    assert_eq!(node.err("debug_getRawBlock", json!(["2"])).await.0, -32602);
}

#[actix::test]
async fn headers_and_ommers_of_a_post_merge_chain() {
    let node = TestNode::start();
    two_transfers(&node).await;
    let block = node.ok("eth_getBlockByNumber", json!(["0x1", false])).await;
    let header = node.ok("eth_getHeaderByNumber", json!(["0x1"])).await;
    let by_hash = node.ok("eth_getHeaderByHash", json!([block["hash"]])).await;
    assert_eq!(header, by_hash);
    for (key, value) in header.as_object().expect("object") {
        assert_eq!(&block[key], value, "{key}");
    }
    assert!(header.get("transactions").is_none() && header.get("size").is_none());
    assert_eq!(node.ok("eth_getHeaderByNumber", json!(["0x99"])).await, Value::Null);
    // Dev blocks have no ommers.
    assert_eq!(node.ok("eth_getUncleCountByBlockNumber", json!(["0x1"])).await, "0x0");
    assert_eq!(node.ok("eth_getUncleCountByBlockHash", json!([block["hash"]])).await, "0x0");
    assert_eq!(node.ok("eth_getUncleCountByBlockNumber", json!(["0x99"])).await, Value::Null);
    let none = node.ok("eth_getUncleByBlockNumberAndIndex", json!(["0x1", "0x0"])).await;
    assert_eq!(none, Value::Null);
    let none = node.ok("eth_getUncleByBlockHashAndIndex", json!([block["hash"], "0x0"])).await;
    assert_eq!(none, Value::Null);
}

#[actix::test]
async fn fee_market_storage_and_node_facts() {
    or_skip!(crate::conformance::conformance_dir());
    let node = TestNode::start();
    let token = node.deploy_bench_token().await;
    let head = node.ok("eth_getBlockByNumber", json!(["latest", false])).await;
    // EIP-1559 from the head's base fee and gas use.
    let (fee, used, limit) =
        (quantity(&head["baseFeePerGas"]), quantity(&head["gasUsed"]), quantity(&head["gasLimit"]));
    let next = alloy_eips::eip1559::calc_next_block_base_fee(
        used,
        limit,
        fee,
        alloy_eips::eip1559::BaseFeeParams::ethereum(),
    );
    assert_eq!(quantity(&node.ok("eth_baseFee", json!([])).await), next);
    assert_eq!(node.ok("eth_blobBaseFee", json!([])).await, "0x1");
    assert_eq!(node.ok("net_peerCount", json!([])).await, "0x0");
    assert_eq!(node.ok("eth_mining", json!([])).await, true, "automine is on");
    assert_eq!(node.ok("eth_coinbase", json!([])).await, json!(head["miner"]));
    let coinbase = Address::repeat_byte(0xcb);
    node.ok("anvil_setCoinbase", json!([coinbase])).await;
    assert_eq!(node.ok("eth_coinbase", json!([])).await, json!(coinbase));
    node.ok("evm_setAutomine", json!([false])).await;
    assert_eq!(node.ok("eth_mining", json!([])).await, false);

    let slot = B256::ZERO;
    let values = node.ok("eth_getStorageValues", json!([{token.to_string(): [slot, slot]}])).await;
    let single = node.ok("eth_getStorageAt", json!([token, slot, "latest"])).await;
    assert_eq!(values[alloy_primitives::hex::encode_prefixed(token)], json!([single, single]));
    assert_eq!(node.err("eth_getStorageValues", json!([{}])).await.0, -32602);
    let many: Vec<B256> = vec![slot; 1_025];
    assert_eq!(
        node.err("eth_getStorageValues", json!([{token.to_string(): many}])).await.0,
        -38026
    );
    let short = json!([{token.to_string(): ["0x01"]}]);
    assert_eq!(node.err("eth_getStorageValues", short).await.0, -32602);
}

#[actix::test]
async fn pool_by_sender_and_what_the_node_serves() {
    let node = TestNode::start();
    node.ok("evm_setAutomine", json!([false])).await;
    let alice = node.signer(1);
    let tx = fixtures::transfer(&alice, 0, Address::repeat_byte(9), 5);
    let raw = Bytes::from(tx.encoded_2718());
    node.ok("eth_sendRawTransaction", json!([raw])).await;
    let mine = node.ok("txpool_contentFrom", json!([alice.address()])).await;
    assert_eq!(mine["pending"]["0"]["hash"], json!(tx.tx_hash()));
    assert_eq!(mine["queued"], json!({}));
    let theirs = node.ok("txpool_contentFrom", json!([Address::ZERO])).await;
    assert_eq!(theirs, json!({"pending": {}, "queued": {}}));

    let capabilities = node.ok("eth_capabilities", json!([])).await;
    assert_eq!(capabilities["head"]["number"], "0x0");
    for resource in ["state", "tx", "logs", "receipts", "blocks", "stateproofs"] {
        assert_eq!(capabilities[resource], json!({"disabled": false, "oldestBlock": "0x0"}));
    }
    // The dev chain runs every fork from genesis: eth_config reports its current one from 0.
    let config = node.ok("eth_config", json!([])).await;
    assert_eq!(config["current"]["activationTime"], 0);
    assert_eq!(config["current"]["chainId"], "0x7a69");
    assert_eq!(
        config["current"]["precompiles"]["ECREC"],
        "0x0000000000000000000000000000000000000001"
    );
    assert!(config["current"]["systemContracts"]["HISTORY_STORAGE_ADDRESS"].is_string());
    assert_eq!(config["next"], Value::Null);
}

#[actix::test]
async fn access_lists_name_what_a_call_touches() {
    or_skip!(crate::conformance::conformance_dir());
    let node = TestNode::start();
    let token = node.deploy_bench_token().await;
    let from = node.signer(0).address();
    let calldata = fixtures::bench_calldata();
    let transfer =
        calldata["calldata"]["transfer(0x7099..79C8,1)"].as_str().expect("transfer calldata");
    let call = json!({"from": from, "to": token, "input": transfer});
    let answer = node.ok("eth_createAccessList", json!([call, "latest"])).await;
    let list = answer["accessList"].as_array().expect("access list");
    assert_eq!(list.len(), 1, "the token only (sender and recipient are left out): {answer}");
    assert_eq!(list[0]["address"], json!(token));
    assert_eq!(list[0]["storageKeys"].as_array().expect("keys").len(), 2, "two balances");
    // The call with that list costs what the node says.
    let mut with_list = call.clone();
    with_list["accessList"] = answer["accessList"].clone();
    let estimate = node.ok("eth_estimateGas", json!([with_list])).await;
    assert!(quantity(&answer["gasUsed"]) <= quantity(&estimate));
    assert!(answer.get("error").is_none());
    // A plain transfer touches nothing worth listing.
    let plain = json!({"from": from, "to": Address::repeat_byte(3), "value": "0x1"});
    let answer = node.ok("eth_createAccessList", json!([plain])).await;
    assert_eq!(answer, json!({"accessList": [], "gasUsed": "0x5208"}));
    // A failing call still gets its list, with the error.
    let always = calldata["calldata"]["alwaysRevert()"].as_str().expect("revert calldata");
    let failing = json!({"from": from, "to": token, "input": always});
    let answer = node.ok("eth_createAccessList", json!([failing])).await;
    assert_eq!(answer["error"], "execution reverted");
    assert_eq!(node.err("eth_createAccessList", json!([call, "0x99"])).await.0, -32000);
}

#[actix::test]
async fn testing_build_block_builds_without_committing() {
    let node = TestNode::start();
    node.ok("evm_setAutomine", json!([false])).await;
    let head = node.ok("eth_getBlockByNumber", json!(["latest", false])).await;
    let attributes = json!({
        "timestamp": format!("{:#x}", quantity(&head["timestamp"]) + 12),
        "prevRandao": B256::repeat_byte(5),
        "suggestedFeeRecipient": Address::repeat_byte(0xfe),
        "withdrawals": [],
        "parentBeaconBlockRoot": B256::ZERO,
    });
    let alice = node.signer(2);
    let tx = fixtures::transfer(&alice, 0, Address::repeat_byte(8), 7);
    let raw = Bytes::from(tx.encoded_2718());
    let built =
        node.ok("testing_buildBlockV1", json!([head["hash"], attributes, [raw], "0x6869"])).await;
    let payload = &built["executionPayload"];
    assert_eq!(payload["parentHash"], head["hash"]);
    assert_eq!(payload["blockNumber"], "0x1");
    assert_eq!(payload["extraData"], "0x6869");
    assert_eq!(payload["feeRecipient"], json!(Address::repeat_byte(0xfe)));
    assert_eq!(payload["transactions"], json!([raw]));
    assert_eq!(payload["gasUsed"], "0x5208");
    assert!(quantity(&built["blockValue"]) > 0, "the tip goes to the fee recipient");
    assert_eq!(built["executionRequests"], json!([]));
    // Nothing was committed, and the same block built again is the same block.
    assert_eq!(node.block_number().await, 0);
    let again =
        node.ok("testing_buildBlockV1", json!([head["hash"], attributes, [raw], "0x6869"])).await;
    assert_eq!(again["executionPayload"]["blockHash"], payload["blockHash"]);
    // An empty list builds an empty block; a transaction that cannot go in fails the request.
    let empty = node.ok("testing_buildBlockV1", json!([head["hash"], attributes, []])).await;
    assert_eq!(empty["executionPayload"]["transactions"], json!([]));
    let bad = Bytes::from(fixtures::transfer(&alice, 5, Address::ZERO, 1).encoded_2718());
    assert_eq!(
        node.err("testing_buildBlockV1", json!([head["hash"], attributes, [bad]])).await.0,
        -32000
    );
    assert_eq!(
        node.err("testing_buildBlockV1", json!([B256::repeat_byte(1), attributes, []])).await.0,
        -32000
    );
    let mut stale = attributes.clone();
    stale["timestamp"] = head["timestamp"].clone();
    assert_eq!(node.err("testing_buildBlockV1", json!([head["hash"], stale, []])).await.0, -32000);
    let mut unknown = attributes;
    unknown["slotNumber"] = json!("0x1");
    assert_eq!(
        node.err("testing_buildBlockV1", json!([head["hash"], unknown, []])).await.0,
        -32602
    );
    assert_eq!(node.block_number().await, 0);
}
