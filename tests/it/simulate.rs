//! eth_simulateV1 on a dev chain: the roots of a simulated block equal those of the same block
//! mined for real, state carries from block to block, overrides and precompile moves apply,
//! logs and ether transfers are reported as geth reports them, and every bad request is a
//! clear error with execution-apis' code that changes nothing.

use std::time::Duration;

use alloy_primitives::{Address, B256, address, keccak256};
use alloy_signer::SignerSync;
use hearth::config::NodeConfig;
use revm::primitives::hardfork::SpecId;
use serde_json::{Value, json};

use crate::support::{TestNode, quantity};

/// Returns BLOCKHASH(NUMBER - 1).
const PREVIOUS_HASH: &str = "0x600143034060005260206000f3";
/// LOG1 with topic 0x01 and no data, then STOP.
const LOGGER: &str = "0x600160006000a100";
/// Reverts with the 32-byte word 0xaa.
const REVERTER: &str = "0x60aa60005260206000fd";
/// Loops forever.
const SPINNER: &str = "0x5b600056";

fn simulate(blocks: Value) -> Value {
    json!([{"blockStateCalls": blocks}, "latest"])
}

async fn pool_is_empty(node: &TestNode) -> bool {
    let status = node.ok("txpool_status", json!([])).await;
    status["pending"] == "0x0" && status["queued"] == "0x0"
}

#[actix::test]
async fn a_simulated_block_has_the_roots_of_the_same_block_mined() {
    for spec in [SpecId::SHANGHAI, SpecId::CANCUN, SpecId::PRAGUE, SpecId::OSAKA] {
        let mut config = NodeConfig::for_tests();
        config.spec = spec;
        same_roots_as_mined(TestNode::start_with(config), spec).await;
    }
}

async fn same_roots_as_mined(node: TestNode, spec: SpecId) {
    let from = node.signer(0).address();
    let to = address!("00000000000000000000000000000000000000b0");
    let tx = json!({
        "from": from, "to": to, "value": "0x2a", "gas": "0x5208",
        "maxFeePerGas": "0x77359400", "maxPriorityFeePerGas": "0x3b9aca00", "nonce": "0x0",
    });
    let hash = node.ok("eth_sendTransaction", json!([tx])).await;
    let receipt = node.ok("eth_getTransactionReceipt", json!([hash])).await;
    let mined = node.ok("eth_getBlockByNumber", json!([receipt["blockNumber"], false])).await;
    let overrides = json!({
        "time": mined["timestamp"], "feeRecipient": mined["miner"],
        "prevRandao": mined["mixHash"], "baseFeePerGas": mined["baseFeePerGas"],
        "gasLimit": mined["gasLimit"],
    });
    let call = json!({
        "from": from, "to": to, "value": "0x2a", "gas": "0x5208",
        "maxFeePerGas": "0x77359400", "maxPriorityFeePerGas": "0x3b9aca00",
    });
    let simulated = node
        .ok(
            "eth_simulateV1",
            json!([
                {"blockStateCalls": [{"blockOverrides": overrides, "calls": [call]}], "validation": true},
                "0x0"
            ]),
        )
        .await;
    let block = &simulated[0];
    for field in [
        "number",
        "parentHash",
        "stateRoot",
        "receiptsRoot",
        "logsBloom",
        "gasUsed",
        "gasLimit",
        "timestamp",
        "baseFeePerGas",
        "miner",
        "withdrawalsRoot",
        "requestsHash",
    ] {
        assert_eq!(block[field], mined[field], "{field} under {spec:?}");
    }
    // The call is unsigned, so its transaction (and the block hash) differ from the mined one.
    assert_ne!(block["transactionsRoot"], mined["transactionsRoot"]);
    assert_eq!(block["calls"][0]["status"], "0x1");
    assert_eq!(block["calls"][0]["gasUsed"], "0x5208");
    // Nothing was written: the chain and the pool are as they were.
    assert_eq!(node.block_number().await, 1);
    assert!(pool_is_empty(&node).await);
}

#[actix::test]
async fn state_and_block_hashes_carry_from_block_to_block() {
    let node = TestNode::start();
    let (a, b, c) =
        (Address::repeat_byte(0xa1), Address::repeat_byte(0xb2), Address::repeat_byte(0xc3));
    let reader = Address::repeat_byte(0xd4);
    let blocks = json!([
        {
            "stateOverrides": {a.to_string(): {"balance": "0x3e8"}, reader.to_string(): {"code": PREVIOUS_HASH}},
            "calls": [{"from": a, "to": b, "value": "0x3e8"}],
        },
        // Block numbers may skip: the gap is filled with empty blocks.
        {"blockOverrides": {"number": "0x4"}, "calls": [
            {"from": b, "to": c, "value": "0x3e8"},
            {"from": a, "to": reader},
        ]},
    ]);
    let result = node.ok("eth_simulateV1", simulate(blocks)).await;
    let blocks = result.as_array().expect("blocks");
    assert_eq!(blocks.len(), 4, "blocks 1 and 4 and the filled gap 2..=3");
    for (i, block) in blocks.iter().enumerate() {
        assert_eq!(quantity(&block["number"]), i as u64 + 1);
        if i > 0 {
            assert_eq!(block["parentHash"], blocks[i - 1]["hash"]);
            assert_eq!(
                quantity(&block["timestamp"]),
                quantity(&blocks[i - 1]["timestamp"]) + 12,
                "12 s apart by default"
            );
        }
    }
    assert!(blocks[1]["calls"].as_array().expect("calls").is_empty());
    // b received in block 1 what it sends on in block 4.
    assert_eq!(blocks[3]["calls"][0]["status"], "0x1", "{}", blocks[3]);
    // BLOCKHASH sees the simulated blocks: block 4 reads block 3's hash.
    assert_eq!(blocks[3]["calls"][1]["returnData"], blocks[2]["hash"]);
    assert_ne!(blocks[0]["stateRoot"], blocks[3]["stateRoot"]);
    // Each block hash is the hash of its header fields as returned.
    let mined = node.ok("eth_getBlockByNumber", json!(["latest", false])).await;
    assert_eq!(blocks[0]["parentHash"], mined["hash"]);
}

#[actix::test]
async fn logs_transfers_and_failures_are_reported_as_geth_reports_them() {
    let node = TestNode::start();
    let (sender, logger, reverter) =
        (Address::repeat_byte(0x51), Address::repeat_byte(0x52), Address::repeat_byte(0x53));
    let blocks = json!([{
        "stateOverrides": {
            sender.to_string(): {"balance": "0xde0b6b3a7640000"},
            logger.to_string(): {"code": LOGGER},
            reverter.to_string(): {"code": REVERTER},
        },
        "calls": [
            {"from": sender, "to": logger, "value": "0x5"},
            {"from": sender, "to": reverter, "value": "0x5"},
            {"from": sender, "to": logger},
        ],
    }]);
    let result = node
        .ok("eth_simulateV1", json!([{"blockStateCalls": blocks, "traceTransfers": true}]))
        .await;
    let calls = &result[0]["calls"];
    let first = calls[0]["logs"].as_array().expect("logs");
    // The value moved first (ERC-7528 Transfer of 0xeeee…eeee), then the contract's own log.
    assert_eq!(first.len(), 2);
    assert_eq!(first[0]["address"], "0xeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeee");
    assert_eq!(first[0]["topics"][1], json!(B256::left_padding_from(sender.as_slice())));
    assert_eq!(first[0]["topics"][2], json!(B256::left_padding_from(logger.as_slice())));
    assert_eq!(quantity(&first[0]["data"]), 5);
    assert_eq!(first[1]["address"], json!(logger));
    assert_eq!(
        (first[0]["logIndex"].clone(), first[1]["logIndex"].clone()),
        (json!("0x0"), json!("0x1"))
    );
    assert_eq!(first[0]["blockHash"], result[0]["hash"]);
    // A revert: status 0, code 3 with the revert data, no logs (its transfer log is dropped),
    // no return data.
    assert_eq!(calls[1]["status"], "0x0");
    assert_eq!(calls[1]["error"]["code"], 3);
    assert_eq!(calls[1]["error"]["data"], json!(B256::with_last_byte(0xaa)));
    assert_eq!(calls[1]["returnData"], "0x");
    assert!(calls[1]["logs"].as_array().expect("logs").is_empty());
    // geth counts log indexes over the block, dropped logs included.
    assert_eq!(calls[2]["logs"][0]["logIndex"], "0x3");
    // Only the contract logs are in the block's receipts (the bloom has the logger).
    assert_ne!(result[0]["logsBloom"], json!(alloy_primitives::Bloom::ZERO));
}

#[actix::test]
async fn precompiles_move_where_overrides_say() {
    let node = TestNode::start();
    let signer = node.signer(3);
    let digest = keccak256(b"hearth");
    let signature = signer.sign_hash_sync(&digest).expect("signs");
    let mut input = digest.to_vec();
    input.extend_from_slice(&B256::with_last_byte(27 + u8::from(signature.v())).0);
    input.extend_from_slice(&signature.r().to_be_bytes::<32>());
    input.extend_from_slice(&signature.s().to_be_bytes::<32>());
    let input = alloy_primitives::Bytes::from(input);
    let moved = Address::with_last_byte(0x99).create(7);
    let blocks = json!([{
        "stateOverrides": {"0x0000000000000000000000000000000000000001": {"movePrecompileToAddress": moved}},
        "calls": [
            {"to": moved, "input": input},
            {"to": "0x0000000000000000000000000000000000000001", "input": input},
        ],
    }]);
    let result = node.ok("eth_simulateV1", simulate(blocks)).await;
    let calls = &result[0]["calls"];
    assert_eq!(calls[0]["returnData"], json!(B256::left_padding_from(signer.address().as_slice())));
    assert_eq!(calls[1]["returnData"], "0x", "0x01 holds no code once ecrecover moved");
    // eth_call honours the same override.
    let overrides =
        json!({"0x0000000000000000000000000000000000000001": {"movePrecompileToAddress": moved}});
    let output =
        node.ok("eth_call", json!([{"to": moved, "input": input}, "latest", overrides])).await;
    assert_eq!(output, json!(B256::left_padding_from(signer.address().as_slice())));
    // Moving what is not a precompile is geth's -32000.
    let bad = json!([{"stateOverrides": {moved.to_string(): {"movePrecompileToAddress": Address::ZERO}}}]);
    assert_eq!(node.err("eth_simulateV1", simulate(bad)).await.0, -32000);
}

#[actix::test]
async fn bad_requests_get_execution_apis_codes_and_change_nothing() {
    let node = TestNode::start();
    let poor = Address::repeat_byte(0x77);
    let cases: Vec<(Value, i64)> = vec![
        (json!([{"blockStateCalls": vec![json!({}); 1_000]}]), -38026),
        (json!([{"blockStateCalls": vec![json!({}); 257]}]), -38026),
        (simulate(json!([{"blockOverrides": {"number": "0x200"}}])), -38026),
        (simulate(json!([])), -32602),
        (json!([{"blockStateCalls": [{}], "tracetransfers": true}]), -32602),
        (simulate(json!([{"calls": [{"form": poor}]}])), -32602),
        (simulate(json!([{"stateOverrides": {"0x12": {"balance": "0x1"}}}])), -32602),
        (simulate(json!([{"stateOverrides": {poor.to_string(): {"balance": "0x01"}}}])), -32602),
        (
            simulate(
                json!([{"blockOverrides": {"number": "0x5"}}, {"blockOverrides": {"number": "0x3"}}]),
            ),
            -38020,
        ),
        (simulate(json!([{"blockOverrides": {"time": "0x1"}}])), -38021),
        (simulate(json!([{"calls": [{"from": poor, "to": poor, "value": "0x1"}]}])), -38014),
        (simulate(json!([{"calls": [{"from": poor, "to": poor, "gas": "0x1"}]}])), -38013),
        (
            simulate(
                json!([{"blockOverrides": {"gasLimit": "0x5208"}, "calls": [{"from": poor, "to": poor, "gas": "0x5208"}, {"from": poor, "to": poor, "gas": "0x5208"}]}]),
            ),
            -38015,
        ),
        (
            json!([{"blockStateCalls": [{"calls": [{"from": poor, "to": poor, "nonce": "0x1"}]}], "validation": true}]),
            -38011,
        ),
        (
            json!([{"blockStateCalls": [{"stateOverrides": {poor.to_string(): {"nonce": "0x2"}}, "calls": [{"from": poor, "to": poor, "nonce": "0x1"}]}], "validation": true}]),
            -38010,
        ),
        (json!([{"blockStateCalls": [{}]}, "0x10"]), -32000),
    ];
    for (params, code) in cases {
        let (got, message, _) = node.err("eth_simulateV1", params.clone()).await;
        assert_eq!(got, code, "{params}: {message}");
        assert!(!message.is_empty());
    }
    assert_eq!(node.block_number().await, 0);
    assert!(pool_is_empty(&node).await);
}

#[actix::test]
async fn the_evm_time_cap_bounds_a_whole_simulation() {
    let mut config = NodeConfig::for_tests();
    config.evm_timeout = Duration::from_millis(5);
    let node = TestNode::start_with(config);
    let spinner = Address::repeat_byte(0x5e);
    let blocks = json!([{"stateOverrides": {spinner.to_string(): {"code": SPINNER}}, "calls": [{"to": spinner}]}]);
    let started = std::time::Instant::now();
    let (code, message, _) = node.err("eth_simulateV1", simulate(blocks)).await;
    assert_eq!(code, -32002, "{message}");
    assert!(started.elapsed() < Duration::from_secs(20), "stopped by the cap");
    assert_eq!(node.block_number().await, 0);
}

#[actix::test]
async fn full_transactions_show_the_calls_as_unsigned_transactions() {
    let node = TestNode::start();
    let (a, b) = (Address::repeat_byte(0x1a), Address::repeat_byte(0x1b));
    let blocks = json!([{
        "stateOverrides": {a.to_string(): {"balance": "0xde0b6b3a7640000"}},
        "calls": [
            {"from": a, "to": b, "value": "0x1"},
            {"from": a, "to": b, "gasPrice": "0x0", "value": "0x1"},
        ],
    }]);
    let result = node
        .ok("eth_simulateV1", json!([{"blockStateCalls": blocks, "returnFullTransactions": true}]))
        .await;
    let txs = result[0]["transactions"].as_array().expect("transactions");
    assert_eq!((txs[0]["type"].clone(), txs[1]["type"].clone()), (json!("0x2"), json!("0x0")));
    for (i, tx) in txs.iter().enumerate() {
        assert_eq!(tx["from"], json!(a));
        assert_eq!(quantity(&tx["nonce"]), i as u64, "nonces follow the sender's");
        assert_eq!(
            (tx["r"].clone(), tx["s"].clone(), tx["v"].clone()),
            (json!("0x0"), json!("0x0"), json!("0x0"))
        );
        assert_eq!(tx["blockHash"], result[0]["hash"]);
    }
    assert_eq!(txs[0]["gas"], result[0]["gasLimit"], "a call without gas may use the block's");
}

/// Adds one to slot 0 and returns the new value.
const COUNTER: &str = "0x600054600101806000556000526020 6000f3";
/// Returns (NUMBER, TIMESTAMP).
const CLOCK: &str = "0x4360005242602052604060 00f3";

fn word(n: u64) -> String {
    format!("0x{n:064x}")
}

#[actix::test]
async fn call_many_runs_bundles_in_order_on_one_state_and_changes_nothing() {
    let node = TestNode::start();
    node.ok("evm_mine", json!([])).await;
    let head = node.block_number().await;
    let header = node.ok("eth_getBlockByNumber", json!(["latest", false])).await;
    let time = quantity(&header["timestamp"]);
    let (counter, clock, reverter) = (
        "0x00000000000000000000000000000000000c0c00",
        "0x00000000000000000000000000000000000c0c01",
        "0x00000000000000000000000000000000000c0c02",
    );
    let overrides = json!({
        counter: {"code": COUNTER.replace(' ', "")},
        clock: {"code": CLOCK.replace(' ', "")},
        reverter: {"code": REVERTER},
    });
    let bundles = json!([
        {"transactions": [{"to": counter}, {"to": counter}, {"to": clock}]},
        {"transactions": [{"to": counter}, {"to": clock}, {"to": reverter}], "blockOverride": {"number": "0x100"}},
        {"transactions": [{"to": clock}]},
    ]);
    let answer =
        node.ok("eth_callMany", json!([bundles, {"blockNumber": "latest"}, overrides])).await;
    let clock_at = |number: u64, time: u64| format!("{}{}", word(number), &word(time)[2..]);
    assert_eq!(
        answer,
        json!([
            [{"value": word(1)}, {"value": word(2)}, {"value": clock_at(head, time)}],
            [{"value": word(3)}, {"value": clock_at(0x100, time + 1)}, {"error": "execution reverted"}],
            [{"value": clock_at(0x101, time + 2)}],
        ])
    );
    // At `pending`: the next block's number and the timestamp evm_setNextBlockTimestamp set.
    node.ok("evm_setNextBlockTimestamp", json!([time + 100])).await;
    let pending =
        json!([[{"transactions": [{"to": clock}]}], {"blockNumber": "pending"}, overrides]);
    let answer = node.ok("eth_callMany", pending).await;
    assert_eq!(answer, json!([[{"value": clock_at(head + 1, time + 100)}]]));
    // Nothing was written: the counter's slot is still empty, no block was made.
    assert_eq!(node.block_number().await, head);
    assert_eq!(node.ok("eth_getStorageAt", json!([counter, "0x0", "latest"])).await, word(0));
    // Bad requests are -32602 with what is wrong.
    for (params, says) in [
        (json!([[]]), "bundles are empty."),
        (json!([[{"transactions": [{"to": "0x01"}]}]]), "bundle 0"),
        (json!([[{"transactions": []}], {"transactionIndex": 1}]), "transactionIndex"),
        (json!([{"transactions": []}]), "array of bundles"),
    ] {
        let (code, message, _) = node.err("eth_callMany", params.clone()).await;
        assert_eq!(code, -32602, "{params}");
        assert!(message.contains(says), "{params}: {message}");
    }
    // The calls share the RPC gas cap: a second spinner finds nothing left of it.
    let spinner = "0x00000000000000000000000000000000000c0c03";
    let spin = json!({spinner: {"code": SPINNER}});
    let two = json!([[{"transactions": [{"to": spinner}, {"to": spinner}]}], {}, spin]);
    let (code, message, _) = node.err("eth_callMany", two).await;
    assert_eq!(code, -32000, "{message}");
    let one = json!([[{"transactions": [{"to": spinner}]}], {}, spin]);
    let answer = node.ok("eth_callMany", one).await;
    assert!(answer[0][0]["error"].is_string(), "{answer}");
    // A call that is no transaction (value beyond the sender's balance) fails the request.
    let broke = json!([[{"transactions": [{"from": counter, "to": clock, "value": "0x1"}]}]]);
    let (code, message, _) = node.err("eth_callMany", broke).await;
    assert_eq!(code, -32000, "{message}");
}
