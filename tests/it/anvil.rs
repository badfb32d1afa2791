//! anvil's everyday dev methods through the RPC front of a whole node: the chain id, balances,
//! ERC-20 balances and allowances, node facts, logging, the clock, rolling back and reorging,
//! the pool, detailed mining, unsigned sends and the `anvil_` names of the `evm_` methods.
//! Each method: its answer's shape, what it changed, and bad input (-32602 for params, -32000
//! for what the state rules out) changing nothing.

use alloy_consensus::TxEnvelope;
use alloy_eips::eip2718::Encodable2718;
use alloy_primitives::{Address, B256, U256, keccak256};
use hearth::config::NodeConfig;
use serde_json::{Value, json};

use crate::support::{GENESIS_TIME, TestNode, fixtures, quantity};

fn manual() -> TestNode {
    let mut config = NodeConfig::for_tests();
    config.automine = false;
    TestNode::start_with(config)
}

fn raw(tx: &TxEnvelope) -> String {
    format!("0x{}", alloy_primitives::hex::encode(tx.encoded_2718()))
}

async fn block(node: &TestNode, tag: &str) -> Value {
    node.ok("eth_getBlockByNumber", json!([tag, false])).await
}

async fn balance(node: &TestNode, who: Address) -> U256 {
    let hex = node.ok("eth_getBalance", json!([who, "latest"])).await;
    U256::from_str_radix(hex.as_str().expect("hex").trim_start_matches("0x"), 16).expect("hex")
}

/// What a failed method must leave as it was: the head block, a few balances and the pool.
async fn unchanged(node: &TestNode) -> Value {
    let alice = node.signer(0).address();
    let bob = node.signer(1).address();
    json!([
        block(node, "latest").await,
        node.ok("eth_getBalance", json!([alice, "latest"])).await,
        node.ok("eth_getBalance", json!([bob, "latest"])).await,
        node.ok("txpool_content", json!([])).await,
        node.ok("eth_chainId", json!([])).await,
    ])
}

/// `(name, creation bytecode)` of tests/contracts/DevTokens.json.
fn dev_token_code(name: &str) -> String {
    let path =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/contracts/DevTokens.json");
    let text = std::fs::read_to_string(&path).expect("tests/contracts/DevTokens.json");
    let artifact: Value = serde_json::from_str(&text).expect("JSON");
    artifact[name]["bytecode"].as_str().expect("bytecode").to_owned()
}

/// Deploys `code` from account 0 and returns the contract address.
async fn deploy(node: &TestNode, code: String) -> Address {
    let from = node.signer(0).address();
    let hash = node.ok("eth_sendTransaction", json!([{"from": from, "data": code}])).await;
    let receipt = node.ok("eth_getTransactionReceipt", json!([hash])).await;
    assert_eq!(receipt["status"], "0x1", "deploy failed: {receipt}");
    receipt["contractAddress"].as_str().expect("address").parse().expect("address")
}

/// The three token layouts: DevToken, HashedToken, and a DevProxy in front of a HashedToken.
async fn tokens(node: &TestNode) -> [Address; 3] {
    let dev = deploy(node, dev_token_code("DevToken")).await;
    let hashed = deploy(node, dev_token_code("HashedToken")).await;
    let proxy_code = format!("{}{:0>64}", dev_token_code("DevProxy"), &hashed.to_string()[2..]);
    let proxy = deploy(node, proxy_code).await;
    [dev, hashed, proxy]
}

fn word(address: Address) -> String {
    format!("{:0>64}", &address.to_string()[2..].to_lowercase())
}

async fn token_call(node: &TestNode, token: Address, data: String) -> U256 {
    let out = node.ok("eth_call", json!([{"to": token, "data": data}, "latest"])).await;
    U256::from_str_radix(out.as_str().expect("hex").trim_start_matches("0x"), 16).expect("word")
}

async fn balance_of(node: &TestNode, token: Address, who: Address) -> U256 {
    token_call(node, token, format!("0x70a08231{}", word(who))).await
}

async fn allowance(node: &TestNode, token: Address, owner: Address, spender: Address) -> U256 {
    token_call(node, token, format!("0xdd62ed3e{}{}", word(owner), word(spender))).await
}

#[actix::test]
async fn set_chain_id_reaches_the_front_the_executors_and_the_pool() {
    let node = manual();
    let alice = node.signer(0);
    let bob = node.signer(1).address();
    // Pooled, signed for 31337.
    let pooled = fixtures::transfer(&alice, 0, bob, 1);
    node.ok("eth_sendRawTransaction", json!([raw(&pooled)])).await;

    assert_eq!(node.ok("anvil_setChainId", json!([5])).await, Value::Null);
    assert_eq!(node.ok("eth_chainId", json!([])).await, "0x5");
    assert_eq!(node.ok("net_version", json!([])).await, "5");
    assert_eq!(node.ok("txpool_status", json!([])).await["pending"], "0x0", "signed for 31337");
    // CHAINID in a call: PUSH the chain id, store it, return the word.
    let chain_id_code = "0x4660005260206000f3";
    let contract = Address::repeat_byte(0xc1);
    node.ok("anvil_setCode", json!([contract, chain_id_code])).await;
    let word = node.ok("eth_call", json!([{"to": contract}, "latest"])).await;
    assert_eq!(word, format!("0x{:064x}", 5));
    // eth_sendTransaction signs for the new id and the block executes it.
    let hash = node.ok("eth_sendTransaction", json!([{"from": alice.address(), "to": bob}])).await;
    assert_eq!(node.ok("eth_getTransactionByHash", json!([hash])).await["chainId"], "0x5");
    node.ok("evm_mine", json!([])).await;
    assert_eq!(node.ok("eth_getTransactionReceipt", json!([hash])).await["status"], "0x1");
    // A raw transaction signed for the old id is refused.
    let old = fixtures::transfer(&alice, 1, bob, 1);
    let (code, message, _) = node.err("eth_sendRawTransaction", json!([raw(&old)])).await;
    assert_eq!(code, -32000, "{message}");
    assert!(message.contains("chain id"), "{message}");
    // Hex works too.
    assert_eq!(node.ok("anvil_setChainId", json!(["0x7a69"])).await, Value::Null);
    assert_eq!(node.ok("eth_chainId", json!([])).await, "0x7a69");

    let before = unchanged(&node).await;
    for bad in [
        json!([]),
        json!([0]),
        json!(["x"]),
        json!([1, 2]),
        json!([-1]),
        json!(["0x8000000000000000"]),
    ] {
        assert_eq!(node.err("anvil_setChainId", bad.clone()).await.0, -32602, "{bad}");
    }
    assert_eq!(unchanged(&node).await, before);
}

#[actix::test]
async fn add_balance_adds_and_saturates() {
    let node = TestNode::start();
    let who = Address::repeat_byte(0x77);
    assert_eq!(node.ok("anvil_addBalance", json!([who, "0x10"])).await, Value::Null);
    assert_eq!(node.ok("anvil_addBalance", json!([who, 1000])).await, Value::Null);
    assert_eq!(node.ok("anvil_addBalance", json!([who, "24"])).await, Value::Null);
    assert_eq!(balance(&node, who).await, U256::from(16 + 1000 + 24));
    let max = format!("0x{}", "f".repeat(64));
    node.ok("anvil_addBalance", json!([who, max])).await;
    assert_eq!(balance(&node, who).await, U256::MAX, "saturates");
    // The next block builds on it.
    node.ok("evm_mine", json!([])).await;
    assert_eq!(balance(&node, who).await, U256::MAX);

    let before = unchanged(&node).await;
    let alice = node.signer(0).address();
    for bad in [
        json!([alice]),
        json!(["0x12", "0x1"]),
        json!([alice, "-1"]),
        json!([alice, "0x"]),
        json!([alice, 1.5]),
        json!([alice, "0x1", 3]),
    ] {
        assert_eq!(node.err("anvil_addBalance", bad.clone()).await.0, -32602, "{bad}");
    }
    assert_eq!(unchanged(&node).await, before);
}

#[actix::test]
async fn deal_erc20_and_allowance_find_the_slot_of_every_layout() {
    let node = TestNode::start();
    let alice = node.signer(0).address();
    let bob = node.signer(1).address();
    let tokens = tokens(&node).await;
    for (i, token) in tokens.into_iter().enumerate() {
        let amount = U256::from(1_000 + i);
        assert_eq!(node.ok("anvil_dealERC20", json!([bob, token, amount])).await, Value::Null);
        assert_eq!(balance_of(&node, token, bob).await, amount, "token {i}");
        let big = format!("{}", 10u128.pow(30));
        node.ok("anvil_setERC20Balance", json!([alice, token, big])).await;
        assert_eq!(balance_of(&node, token, alice).await, U256::from(10u128.pow(30)));
        let allowed = U256::from(77 + i);
        let reply = node.ok("anvil_setERC20Allowance", json!([alice, bob, token, allowed])).await;
        assert_eq!(reply, Value::Null);
        assert_eq!(allowance(&node, token, alice, bob).await, allowed, "token {i}");
        assert_eq!(allowance(&node, token, bob, alice).await, U256::ZERO);
    }
    // DevToken keeps balances in the mapping at slot 4 and allowances at 5: the search wrote
    // exactly there.
    let dev = tokens[0];
    let slot = keccak256(
        [B256::left_padding_from(bob.as_slice()).0, U256::from(4).to_be_bytes()].concat(),
    );
    let stored = node.ok("eth_getStorageAt", json!([dev, slot, "latest"])).await;
    assert_eq!(stored, format!("0x{:064x}", 1_000));
    // The balance is real state: the token moves it, and blocks build on it.
    let transfer = format!("0xa9059cbb{}{:064x}", word(alice), 400);
    let hash =
        node.ok("eth_sendTransaction", json!([{"from": bob, "to": dev, "data": transfer}])).await;
    assert_eq!(node.ok("eth_getTransactionReceipt", json!([hash])).await["status"], "0x1");
    assert_eq!(balance_of(&node, dev, bob).await, U256::from(600));
}

#[actix::test]
async fn deal_erc20_refuses_what_has_no_slot_and_changes_nothing() {
    or_skip!(crate::conformance::conformance_dir());
    let node = TestNode::start();
    let alice = node.signer(0).address();
    let bob = node.signer(1).address();
    let bench = node.deploy_bench_token().await;
    let before = unchanged(&node).await;
    // No code at all.
    let (code, message, _) = node.err("anvil_dealERC20", json!([bob, bob, "0x1"])).await;
    assert_eq!(code, -32000);
    assert!(message.starts_with("Unable to set ERC20 balance, no slot found"), "{message}");
    assert!(message.contains("no code"), "{message}");
    // BenchToken has no allowance(): nothing the getter reads holds an allowance.
    let (code, message, _) =
        node.err("anvil_setERC20Allowance", json!([alice, bob, bench, "0x1"])).await;
    assert_eq!(code, -32000);
    assert!(message.starts_with("Unable to set ERC20 allowance, no slot found"), "{message}");
    for (method, bad) in [
        ("anvil_dealERC20", json!([bob, bench])),
        ("anvil_dealERC20", json!([bob, bench, "0x1", 4])),
        ("anvil_dealERC20", json!(["0x12", bench, "0x1"])),
        ("anvil_dealERC20", json!([bob, bench, "lots"])),
        ("anvil_setERC20Allowance", json!([alice, bob, bench])),
        ("anvil_setERC20Allowance", json!([alice, bob, "0x1", "0x1"])),
    ] {
        assert_eq!(node.err(method, bad.clone()).await.0, -32602, "{method} {bad}");
    }
    assert_eq!(unchanged(&node).await, before);
    // A getter reading 1,100 slots (a loop of SLOADs) is refused before any is tried.
    let greedy = Address::repeat_byte(0x9e);
    // PUSH2 1100; loop: n-1, SLOAD(n-1) while n > 0; then return a zero word.
    let code = "0x61044c5b801560135760019003805450600356\
                5b600060005260206000f3";
    node.ok("anvil_setCode", json!([greedy, code])).await;
    let before = unchanged(&node).await;
    let (code, message, _) = node.err("anvil_dealERC20", json!([bob, greedy, "0x1"])).await;
    assert_eq!(code, -32000);
    assert!(message.contains("touched 1100 storage slots; at most 1024"), "{message}");
    assert_eq!(unchanged(&node).await, before);
    // BenchToken's balanceOf is found all the same.
    node.ok("anvil_dealERC20", json!([bob, bench, "0x2a"])).await;
    assert_eq!(balance_of(&node, bench, bob).await, U256::from(42));
}

#[actix::test]
async fn node_info_and_metadata_report_the_node() {
    let node = TestNode::start();
    node.ok("evm_mine", json!([])).await;
    let head = block(&node, "latest").await;
    let info = node.ok("anvil_nodeInfo", json!([])).await;
    let names: Vec<&str> = info.as_object().expect("object").keys().map(String::as_str).collect();
    let mut expected = vec![
        "currentBlockNumber",
        "currentBlockTimestamp",
        "currentBlockHash",
        "hardFork",
        "transactionOrder",
        "environment",
        "forkConfig",
    ];
    expected.sort_unstable();
    let mut sorted = names.clone();
    sorted.sort_unstable();
    assert_eq!(sorted, expected);
    assert_eq!(info["currentBlockNumber"], "0x1");
    assert_eq!(info["currentBlockTimestamp"], json!(quantity(&head["timestamp"])));
    assert_eq!(info["currentBlockHash"], head["hash"]);
    assert_eq!(info["hardFork"], "Prague");
    assert_eq!(info["transactionOrder"], "fees");
    let env = &info["environment"];
    assert_eq!(env["chainId"], json!(31337));
    assert_eq!(env["gasLimit"], "0x1c9c380");
    assert_eq!(env["gasPrice"], node.ok("eth_gasPrice", json!([])).await);
    // The next block's base fee: an empty block lowers it by an eighth.
    let base = quantity(&head["baseFeePerGas"]);
    assert_eq!(quantity(&env["baseFee"]), base - base / 8);
    assert_eq!(
        info["forkConfig"],
        json!({"forkUrl": null, "forkBlockNumber": null, "forkRetryBackoff": null})
    );
    node.ok("evm_setBlockGasLimit", json!(["0x2000000"])).await;
    let info = node.ok("anvil_nodeInfo", json!([])).await;
    assert_eq!(info["environment"]["gasLimit"], "0x2000000", "the next blocks' limit");

    let meta = node.ok("anvil_metadata", json!([])).await;
    assert_eq!(meta["clientVersion"], node.ok("web3_clientVersion", json!([])).await);
    assert_eq!(meta["clientSemver"], env!("CARGO_PKG_VERSION"));
    assert_eq!(meta["chainId"], json!(31337));
    assert_eq!(meta["latestBlockNumber"], json!(1));
    assert_eq!(meta["latestBlockHash"], head["hash"]);
    assert_eq!(meta["forkedNetwork"], Value::Null);
    assert_eq!(meta["snapshots"], json!({}));
    let instance = meta["instanceId"].as_str().expect("hex");
    assert_eq!(instance.len(), 66);
    let id = node.ok("evm_snapshot", json!([])).await;
    let meta = node.ok("hardhat_metadata", json!([])).await;
    assert_eq!(meta["snapshots"], json!({ id.as_str().expect("id"): [1, head["hash"]] }));
    assert_eq!(meta["instanceId"], instance, "one id per run");
    node.ok("evm_revert", json!([id])).await;
    assert_eq!(node.ok("anvil_metadata", json!([])).await["snapshots"], json!({}));

    assert_eq!(node.err("anvil_nodeInfo", json!([1])).await.0, -32602);
    assert_eq!(node.err("anvil_metadata", json!([1])).await.0, -32602);
}

#[actix::test]
async fn logging_min_gas_price_and_the_timestamp_interval() {
    let node = TestNode::start();
    assert_eq!(node.ok("anvil_setLoggingEnabled", json!([false])).await, Value::Null);
    assert!(!node.node.logging.enabled());
    assert_eq!(node.ok("hardhat_setLoggingEnabled", json!([true])).await, true);
    assert!(node.node.logging.enabled());
    assert_eq!(node.err("anvil_setLoggingEnabled", json!([])).await.0, -32602);
    assert_eq!(node.err("anvil_setLoggingEnabled", json!(["no"])).await.0, -32602);
    assert!(node.node.logging.enabled());

    let (code, message, _) = node.err("anvil_setMinGasPrice", json!(["0x1"])).await;
    assert_eq!(
        (code, message.as_str()),
        (-32602, "anvil_setMinGasPrice is not supported when EIP-1559 is active")
    );
    assert_eq!(node.err("hardhat_setMinGasPrice", json!(["0x1"])).await.0, -32000);
    assert_eq!(node.err("anvil_setMinGasPrice", json!(["x"])).await.0, -32602);

    // Each next block 100 s after its parent, until removed.
    let start = quantity(&block(&node, "latest").await["timestamp"]);
    assert_eq!(node.ok("anvil_setBlockTimestampInterval", json!([100])).await, Value::Null);
    node.ok("anvil_mine", json!([2])).await;
    assert_eq!(quantity(&block(&node, "0x1").await["timestamp"]), start + 100);
    assert_eq!(quantity(&block(&node, "0x2").await["timestamp"]), start + 200);
    // An explicit timestamp still wins; the interval goes on from it.
    node.ok("evm_mine", json!([start + 1000])).await;
    node.ok("evm_mine", json!([])).await;
    assert_eq!(quantity(&block(&node, "0x4").await["timestamp"]), start + 1100);
    // Zero still moves a block one second past its parent.
    node.ok("anvil_setBlockTimestampInterval", json!(["0x0"])).await;
    node.ok("evm_mine", json!([])).await;
    assert_eq!(quantity(&block(&node, "0x5").await["timestamp"]), start + 1101);
    assert_eq!(node.ok("anvil_removeBlockTimestampInterval", json!([])).await, true);
    assert_eq!(node.ok("anvil_removeBlockTimestampInterval", json!([])).await, false);
    let before = unchanged(&node).await;
    for bad in [json!([]), json!([-1]), json!(["x"]), json!([1, 2]), json!(["0x8000000000000000"])]
    {
        assert_eq!(
            node.err("anvil_setBlockTimestampInterval", bad.clone()).await.0,
            -32602,
            "{bad}"
        );
    }
    assert_eq!(node.err("anvil_removeBlockTimestampInterval", json!([1])).await.0, -32602);
    assert_eq!(node.ok("anvil_removeBlockTimestampInterval", json!([])).await, false);
    assert_eq!(unchanged(&node).await, before);
}

#[actix::test]
async fn set_time_moves_the_clock_both_ways_and_checks_its_value() {
    let node = TestNode::start();
    // The test clock stands still at GENESIS_TIME: the next block would be GENESIS_TIME + 1.
    let ahead = node.ok("anvil_setTime", json!([GENESIS_TIME + 1000])).await;
    assert_eq!(ahead, json!(999));
    node.ok("evm_mine", json!([])).await;
    assert_eq!(quantity(&block(&node, "latest").await["timestamp"]), GENESIS_TIME + 1000);
    node.ok("evm_mine", json!([])).await;
    assert_eq!(quantity(&block(&node, "latest").await["timestamp"]), GENESIS_TIME + 1001);
    // Milliseconds (above 10^12), and evm_setTime.
    node.ok("evm_setTime", json!([(GENESIS_TIME + 5000) * 1000])).await;
    node.ok("evm_mine", json!([])).await;
    assert_eq!(quantity(&block(&node, "latest").await["timestamp"]), GENESIS_TIME + 5000);
    // Back in time: blocks still follow their parent, a second apart.
    assert_eq!(node.ok("anvil_setTime", json!([GENESIS_TIME])).await, json!(0));
    node.ok("evm_mine", json!([])).await;
    assert_eq!(quantity(&block(&node, "latest").await["timestamp"]), GENESIS_TIME + 5001);
    // With a timestamp interval, the next block comes that interval after the time set, as
    // in anvil, not after its parent.
    node.ok("anvil_setBlockTimestampInterval", json!([10])).await;
    node.ok("anvil_setTime", json!([GENESIS_TIME + 6000])).await;
    node.ok("evm_mine", json!([])).await;
    assert_eq!(quantity(&block(&node, "latest").await["timestamp"]), GENESIS_TIME + 6010);
    node.ok("evm_mine", json!([])).await;
    assert_eq!(quantity(&block(&node, "latest").await["timestamp"]), GENESIS_TIME + 6020);
    node.ok("anvil_removeBlockTimestampInterval", json!([])).await;
    // A pending next-block timestamp is dropped by a reset.
    node.ok("evm_setNextBlockTimestamp", json!([GENESIS_TIME + 9000])).await;
    node.ok("anvil_setTime", json!([GENESIS_TIME + 7000])).await;
    node.ok("evm_mine", json!([])).await;
    assert_eq!(quantity(&block(&node, "latest").await["timestamp"]), GENESIS_TIME + 7000);

    let before = unchanged(&node).await;
    let (code, message, _) = node.err("anvil_setTime", json!(["0xffffffffffffffff"])).await;
    assert_eq!((code, message.as_str()), (-32602, "The timestamp is too big"));
    for bad in [
        json!([]),
        json!([-1]),
        json!(["soon"]),
        json!([1, 2]),
        json!([format!("0x1{}", "0".repeat(64))]),
    ] {
        assert_eq!(node.err("anvil_setTime", bad.clone()).await.0, -32602, "{bad}");
    }
    assert_eq!(unchanged(&node).await, before);
}

/// A chain of `n` blocks, each one transfer from account 0 to account 1; the hashes.
async fn transfers(node: &TestNode, n: u64) -> Vec<Value> {
    let alice = node.signer(0).address();
    let bob = node.signer(1).address();
    let mut hashes = Vec::new();
    for i in 0..n {
        let value = format!("{:#x}", 1_000 + i);
        hashes.push(
            node.ok("eth_sendTransaction", json!([{"from": alice, "to": bob, "value": value}]))
                .await,
        );
    }
    hashes
}

/// geth's debug_setHead takes the chain back to a block through the same rewind; a block at or
/// past the head changes nothing; bad params change nothing either.
#[actix::test]
async fn debug_set_head_rewinds_to_a_block() {
    let node = TestNode::start();
    let hashes = transfers(&node, 4).await;
    let at2 = block(&node, "0x2").await;
    assert_eq!(node.ok("debug_setHead", json!(["0x2"])).await, Value::Null);
    assert_eq!(node.block_number().await, 2);
    assert_eq!(block(&node, "latest").await, at2);
    assert_eq!(node.ok("eth_getTransactionReceipt", json!([hashes[3]])).await, Value::Null);
    assert_eq!(node.ok("debug_setHead", json!(["0x9"])).await, Value::Null);
    assert_eq!(node.block_number().await, 2, "a head past ours changes nothing");
    let before = unchanged(&node).await;
    for bad in [json!([]), json!(["two"]), json!([2]), json!(["0x1", 1])] {
        assert_eq!(node.err("debug_setHead", bad.clone()).await.0, -32602, "{bad}");
    }
    assert_eq!(unchanged(&node).await, before);
    assert_eq!(node.ok("debug_setHead", json!(["0x0"])).await, Value::Null);
    assert_eq!(node.block_number().await, 0);
}

#[actix::test]
async fn rollback_drops_the_newest_blocks_and_their_transactions() {
    let node = TestNode::start();
    let alice = node.signer(0).address();
    let bob = node.signer(1).address();
    let hashes = transfers(&node, 5).await;
    let at3 = json!([
        block(&node, "0x3").await,
        node.ok("eth_getBalance", json!([alice, "0x3"])).await,
        node.ok("eth_getBalance", json!([bob, "0x3"])).await,
        node.ok("eth_getTransactionCount", json!([alice, "0x3"])).await,
    ]);
    assert_eq!(node.ok("anvil_rollback", json!([2])).await, Value::Null);
    assert_eq!(node.block_number().await, 3);
    let now = json!([
        block(&node, "latest").await,
        node.ok("eth_getBalance", json!([alice, "latest"])).await,
        node.ok("eth_getBalance", json!([bob, "latest"])).await,
        node.ok("eth_getTransactionCount", json!([alice, "latest"])).await,
    ]);
    assert_eq!(now, at3, "the head is block 3 as it was");
    for hash in &hashes[3..] {
        assert_eq!(node.ok("eth_getTransactionReceipt", json!([hash])).await, Value::Null);
        assert_eq!(node.ok("eth_getTransactionByHash", json!([hash])).await, Value::Null);
    }
    assert_eq!(block(&node, "0x4").await, Value::Null);
    assert_eq!(node.ok("txpool_status", json!([])).await["pending"], "0x0", "not put back");
    // The chain goes on from block 3, stamped from its time on.
    let time3 = quantity(&at3[0]["timestamp"]);
    let again = transfers(&node, 1).await;
    let receipt = node.ok("eth_getTransactionReceipt", json!([again[0]])).await;
    assert_eq!(receipt["blockNumber"], "0x4");
    assert_eq!(block(&node, "0x4").await["parentHash"], at3[0]["hash"]);
    assert_eq!(quantity(&block(&node, "0x4").await["timestamp"]), time3 + 1);
    // No depth is one block; depth 0 is nothing.
    assert_eq!(node.ok("anvil_rollback", json!([])).await, Value::Null);
    assert_eq!(node.block_number().await, 3);
    assert_eq!(node.ok("anvil_rollback", json!([null])).await, Value::Null);
    assert_eq!(node.block_number().await, 2);
    assert_eq!(node.ok("anvil_rollback", json!([0])).await, Value::Null);
    assert_eq!(node.block_number().await, 2);

    let before = unchanged(&node).await;
    let (code, message, _) = node.err("anvil_rollback", json!([3])).await;
    assert_eq!(code, -32602);
    assert_eq!(
        message,
        "Rollback depth must not exceed current chain height: current height 2, depth 3"
    );
    for bad in [json!([-1]), json!(["x"]), json!([1, 2]), json!(["0x10000000000000000"])] {
        assert_eq!(node.err("anvil_rollback", bad.clone()).await.0, -32602, "{bad}");
    }
    assert_eq!(unchanged(&node).await, before);
    // Back to genesis is allowed.
    node.ok("anvil_rollback", json!([2])).await;
    assert_eq!(node.block_number().await, 0);
    assert_eq!(node.ok("eth_getTransactionCount", json!([alice, "latest"])).await, "0x0");
}

#[actix::test]
async fn rollback_keeps_older_snapshots_and_ends_newer_ones() {
    let node = TestNode::start();
    let bob = node.signer(1).address();
    transfers(&node, 2).await;
    let early = node.ok("evm_snapshot", json!([])).await;
    node.ok("anvil_setBalance", json!([bob, "0x1"])).await;
    transfers(&node, 2).await;
    node.ok("anvil_setStorageAt", json!([bob, "0x1", "0x2"])).await;
    let late = node.ok("evm_snapshot", json!([])).await;
    node.ok("anvil_rollback", json!([1])).await;
    assert_eq!(node.block_number().await, 3);
    let meta = node.ok("anvil_metadata", json!([])).await;
    let live: Vec<&String> = meta["snapshots"].as_object().expect("map").keys().collect();
    assert_eq!(live, vec![early.as_str().expect("id")], "the snapshot on block 4 ended");
    assert_eq!(node.ok("evm_revert", json!([late])).await, false);
    // The older one still takes the chain back, with the patch made on its head.
    assert_eq!(node.ok("evm_revert", json!([early])).await, true);
    assert_eq!(node.block_number().await, 2);
    assert_ne!(balance(&node, bob).await, U256::from(1));
    assert_eq!(
        node.ok("eth_getStorageAt", json!([bob, "0x1", "latest"])).await,
        format!("0x{:064x}", 0)
    );
}

#[actix::test]
async fn reorg_replaces_blocks_with_the_given_transactions() {
    let node = manual();
    let alice = node.signer(0);
    let bob = node.signer(1);
    for _ in 0..3 {
        node.ok(
            "eth_sendTransaction",
            json!([{"from": alice.address(), "to": bob.address(), "value": "0x1"}]),
        )
        .await;
        node.ok("evm_mine", json!([])).await;
    }
    let old4 = block(&node, "0x3").await;
    // A pooled transaction stays pooled: the reorg mines only what it is given.
    let waiting = node
        .ok(
            "eth_sendTransaction",
            json!([{"from": bob.address(), "to": alice.address(), "value": "0x2"}]),
        )
        .await;
    let nonce =
        quantity(&node.ok("eth_getTransactionCount", json!([alice.address(), "0x1"])).await);
    let signed = fixtures::transfer(&alice, nonce + 1, bob.address(), 7);
    let pairs = json!([
        [raw(&signed), 1],
        [{"to": bob.address(), "value": "0x5"}, 0],
    ]);
    assert_eq!(node.ok("anvil_reorg", json!([2, pairs])).await, Value::Null);
    assert_eq!(node.block_number().await, 3, "depth blocks mined again");
    let new2 = node.ok("eth_getBlockByNumber", json!(["0x2", true])).await;
    let new3 = node.ok("eth_getBlockByNumber", json!(["0x3", true])).await;
    assert_ne!(new3["hash"], old4["hash"]);
    assert_eq!(new2["transactions"].as_array().expect("txs").len(), 1);
    assert_eq!(new2["transactions"][0]["value"], "0x5");
    assert_eq!(
        quantity(&new2["transactions"][0]["nonce"]),
        nonce,
        "from the first account at block 1's nonce"
    );
    assert_eq!(new3["transactions"][0]["hash"], signed.tx_hash().to_string());
    assert_eq!(node.ok("txpool_status", json!([])).await["pending"], "0x1");
    assert!(node.ok("eth_getTransactionByHash", json!([waiting])).await["blockHash"].is_null());
    // Named arguments, as anvil's options object.
    assert_eq!(
        node.ok("anvil_reorg", json!({"depth": 1, "tx_block_pairs": []})).await,
        Value::Null
    );
    assert_eq!(node.block_number().await, 3);
    assert_eq!(block(&node, "0x3").await["transactions"], json!([]));

    let before = unchanged(&node).await;
    let (code, message, _) = node.err("anvil_reorg", json!([4, []])).await;
    assert_eq!(code, -32602, "{message}");
    assert!(message.starts_with("Reorg depth must not exceed current chain height"), "{message}");
    for bad in [
        json!([]),
        json!([1, [["0x02", 1]]]),
        json!([1, [["0xzz", 0]]]),
        json!([1, [[7, 0]]]),
        json!([1, "x"]),
        json!([-1, []]),
        json!({"tx_block_pairs": []}),
        json!([1, [], 3]),
        json!([200_000, []]),
    ] {
        assert_eq!(node.err("anvil_reorg", bad.clone()).await.0, -32602, "{bad}");
    }
    // A transaction that does not decode fails before anything changes.
    assert_eq!(node.err("anvil_reorg", json!([1, [["0x02f8", 0]]])).await.0, -32602);
    assert_eq!(unchanged(&node).await, before);
}

#[actix::test]
async fn drop_all_and_remove_pool_transactions_empty_the_pool() {
    let node = manual();
    let alice = node.signer(0).address();
    let bob = node.signer(1).address();
    for _ in 0..2 {
        node.ok("eth_sendTransaction", json!([{"from": alice, "to": bob, "value": "0x1"}])).await;
    }
    node.ok("eth_sendTransaction", json!([{"from": bob, "to": alice, "value": "0x1"}])).await;
    assert_eq!(node.ok("txpool_status", json!([])).await["pending"], "0x3");
    assert_eq!(node.ok("anvil_removePoolTransactions", json!([bob])).await, Value::Null);
    assert_eq!(node.ok("txpool_status", json!([])).await["pending"], "0x2");
    assert_eq!(node.ok("anvil_removePoolTransactions", json!([bob])).await, Value::Null);
    let before = unchanged(&node).await;
    assert_eq!(node.err("anvil_removePoolTransactions", json!([])).await.0, -32602);
    assert_eq!(node.err("anvil_removePoolTransactions", json!(["0x12"])).await.0, -32602);
    assert_eq!(node.err("anvil_dropAllTransactions", json!([1])).await.0, -32602);
    assert_eq!(unchanged(&node).await, before);
    assert_eq!(node.ok("anvil_dropAllTransactions", json!([])).await, Value::Null);
    assert_eq!(
        node.ok("txpool_status", json!([])).await,
        json!({"pending": "0x0", "queued": "0x0"})
    );
    // The nonce is free again.
    node.ok("eth_sendTransaction", json!([{"from": alice, "to": bob, "value": "0x1"}])).await;
    node.ok("evm_mine", json!([])).await;
    assert_eq!(node.ok("eth_getTransactionCount", json!([alice, "latest"])).await, "0x1");
}

#[actix::test]
async fn mine_detailed_answers_the_blocks_with_outputs_and_revert_reasons() {
    or_skip!(crate::conformance::conformance_dir());
    let node = manual();
    let alice = node.signer(0).address();
    let deploy = node
        .ok(
            "eth_sendTransaction",
            json!([{"from": alice, "data": fixtures::bench_token_bytecode()}]),
        )
        .await;
    let token = alice.create(0);
    // alwaysRevert(), sent with its own gas (an estimate would refuse it).
    let revert = node
        .ok(
            "eth_sendTransaction",
            json!([{"from": alice, "to": token, "data": "0x9fb37853", "gas": "0x30000"}]),
        )
        .await;
    let blocks = node.ok("evm_mine_detailed", json!([])).await;
    let blocks = blocks.as_array().expect("array");
    assert_eq!(blocks.len(), 1);
    let mined = &blocks[0];
    assert_eq!(mined["number"], "0x1");
    assert_eq!(mined["hash"], block(&node, "latest").await["hash"]);
    let txs = mined["transactions"].as_array().expect("full transactions");
    assert_eq!(txs.len(), 2);
    assert_eq!(txs[0]["hash"], deploy);
    assert_eq!(
        txs[0]["output"],
        node.ok("eth_getCode", json!([token, "latest"])).await,
        "the deployed code"
    );
    assert!(txs[0].get("revertReason").is_none());
    assert_eq!(txs[1]["hash"], revert);
    assert_eq!(txs[1]["revertReason"], "BenchToken: always reverts");
    assert!(txs[1]["output"].as_str().expect("hex").starts_with("0x08c379a0"));

    let blocks = node
        .ok("anvil_mine_detailed", json!([{"blocks": 3, "timestamp": GENESIS_TIME + 50}]))
        .await;
    let numbers: Vec<&Value> =
        blocks.as_array().expect("array").iter().map(|b| &b["number"]).collect();
    assert_eq!(numbers, vec!["0x2", "0x3", "0x4"]);
    assert_eq!(quantity(&blocks[0]["timestamp"]), GENESIS_TIME + 50);
    assert_eq!(blocks[0]["transactions"], json!([]));
    let before = unchanged(&node).await;
    for bad in [json!([{"blocks": 0}]), json!([{"blocks": 10_001}]), json!(["x"]), json!([1, 2])] {
        assert_eq!(node.err("evm_mine_detailed", bad.clone()).await.0, -32602, "{bad}");
    }
    assert_eq!(unchanged(&node).await, before);
}

#[actix::test]
async fn send_unsigned_transaction_sends_from_any_account() {
    let node = TestNode::start();
    let stranger = Address::repeat_byte(0x5a);
    let bob = node.signer(1).address();
    node.ok("anvil_setBalance", json!([stranger, "0xde0b6b3a7640000"])).await;
    let hash = node
        .ok("eth_sendUnsignedTransaction", json!([{"from": stranger, "to": bob, "value": "0x64"}]))
        .await;
    let receipt = node.ok("eth_getTransactionReceipt", json!([hash])).await;
    assert_eq!(receipt["status"], "0x1");
    assert_eq!(receipt["from"], stranger.to_string().to_lowercase());
    assert_eq!(node.ok("eth_getTransactionCount", json!([stranger, "latest"])).await, "0x1");
    // eth_sendTransaction still needs the account to be impersonated.
    let (code, message, _) =
        node.err("eth_sendTransaction", json!([{"from": stranger, "to": bob}])).await;
    assert_eq!((code, message.as_str()), (-32000, "unknown account"));

    let before = unchanged(&node).await;
    let (code, message, _) = node.err("eth_sendUnsignedTransaction", json!([{"to": bob}])).await;
    assert_eq!(code, -32602);
    assert!(message.starts_with("No Signer available"), "{message}");
    assert_eq!(node.err("eth_sendUnsignedTransaction", json!([])).await.0, -32602);
    assert_eq!(node.err("eth_sendUnsignedTransaction", json!(["0x12"])).await.0, -32602);
    let broke = Address::repeat_byte(0x5b);
    let (code, _, _) = node
        .err("eth_sendUnsignedTransaction", json!([{"from": broke, "to": bob, "value": "0x1"}]))
        .await;
    assert_eq!(code, -32000, "no funds");
    assert_eq!(unchanged(&node).await, before);
}

#[actix::test]
async fn anvil_names_of_the_evm_methods_answer_as_anvil() {
    let node = TestNode::start();
    let id = node.ok("anvil_snapshot", json!([])).await;
    assert_eq!(id, "0x1");
    assert_eq!(node.ok("anvil_increaseTime", json!([100])).await, json!(100));
    let next = GENESIS_TIME + 500;
    assert_eq!(node.ok("anvil_setNextBlockTimestamp", json!([next])).await, Value::Null);
    assert_eq!(node.ok("anvil_setBlockGasLimit", json!(["0x1c9c381"])).await, true);
    assert_eq!(node.ok("anvil_setAutomine", json!([false])).await, Value::Null);
    assert_eq!(node.ok("evm_setAutomine", json!([true])).await, true);
    node.ok("evm_mine", json!([])).await;
    let mined = block(&node, "latest").await;
    assert_eq!(quantity(&mined["timestamp"]), next);
    assert_eq!(quantity(&mined["gasLimit"]), 30_000_001);
    // A timestamp not after the parent's: anvil's -32602 under its name, -32000 under evm_.
    let (code, message, _) = node.err("anvil_setNextBlockTimestamp", json!([next])).await;
    assert_eq!(code, -32602);
    assert!(message.starts_with("Timestamp error"), "{message}");
    assert_eq!(node.err("evm_setNextBlockTimestamp", json!([next])).await.0, -32000);
    // anvil_revert takes the id as a number too.
    assert_eq!(node.ok("anvil_revert", json!([1])).await, true);
    assert_eq!(node.block_number().await, 0);
    assert_eq!(node.ok("anvil_revert", json!(["0x1"])).await, false);
    assert_eq!(node.err("anvil_revert", json!([])).await.0, -32602);
    assert_eq!(node.err("anvil_snapshot", json!([1])).await.0, -32602);
    assert_eq!(node.err("anvil_increaseTime", json!(["soon"])).await.0, -32602);
    assert_eq!(node.err("anvil_setAutomine", json!([])).await.0, -32602);
    assert_eq!(node.err("anvil_setBlockGasLimit", json!([100])).await.0, -32000);
}

/// A rollback is durable: a node killed right after it serves the shorter chain on restart.
#[test]
fn a_rollback_survives_kill_9() {
    use crate::process::{NodeProcess, TempDir};
    const ALICE: &str = "0xf39fd6e51aad88f6f4ce6ab8827279cfffb92266";
    const BOB: &str = "0x70997970c51812dc3a010c7d01b50e0d17dc79c8";
    let dir = TempDir::new("rollback");
    let node = NodeProcess::start(dir.path(), &[]);
    let mut hashes = Vec::new();
    for _ in 0..4 {
        hashes.push(
            node.ok("eth_sendTransaction", json!([{"from": ALICE, "to": BOB, "value": "0x1"}])),
        );
    }
    let block2 = node.ok("eth_getBlockByNumber", json!(["0x2", true]));
    let bob_at_2 = node.ok("eth_getBalance", json!([BOB, "0x2"]));
    assert_eq!(node.ok("anvil_rollback", json!([2])), Value::Null);
    node.kill_9();

    let node = NodeProcess::start(dir.path(), &[]);
    assert_eq!(node.ok("eth_blockNumber", json!([])), "0x2");
    assert_eq!(node.ok("eth_getBlockByNumber", json!(["latest", true])), block2);
    assert_eq!(node.ok("eth_getBalance", json!([BOB, "latest"])), bob_at_2);
    for hash in &hashes[2..] {
        assert_eq!(node.ok("eth_getTransactionReceipt", json!([hash])), Value::Null);
    }
    // And the chain goes on from block 2.
    node.ok("eth_sendTransaction", json!([{"from": ALICE, "to": BOB, "value": "0x1"}]));
    assert_eq!(node.ok("eth_blockNumber", json!([])), "0x3");
}

/// anvil_setLoggingEnabled reaches the node's log output: a block committed while logging is
/// off leaves no line, one committed after it is back on does (warnings would stay).
#[test]
fn set_logging_enabled_silences_the_log_lines() {
    use std::io::{BufRead, BufReader};
    use std::process::{Command, Stdio};
    const ALICE: &str = "0xf39fd6e51aad88f6f4ce6ab8827279cfffb92266";
    /// Kills the node however the test ends, a failed assertion included.
    struct Killed(std::process::Child);
    impl Drop for Killed {
        fn drop(&mut self) {
            let _ = self.0.kill();
            let _ = self.0.wait();
        }
    }
    let mut child = Killed(
        Command::new(env!("CARGO_BIN_EXE_hearth"))
            .args(["--ephemeral", "--http.port", "0"])
            .env("RUST_LOG", "info")
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("hearth starts"),
    );
    // Both streams into one channel, line by line (the log may go to either).
    let (lines, seen) = std::sync::mpsc::channel::<String>();
    let out = BufReader::new(child.0.stdout.take().expect("stdout"));
    let err = BufReader::new(child.0.stderr.take().expect("stderr"));
    let to_out = lines.clone();
    std::thread::spawn(move || {
        out.lines().map_while(Result::ok).for_each(|l| drop(to_out.send(l)))
    });
    std::thread::spawn(move || err.lines().map_while(Result::ok).for_each(|l| drop(lines.send(l))));
    let next = || seen.recv_timeout(std::time::Duration::from_secs(30)).expect("a log line");
    let addr: std::net::SocketAddr = loop {
        let line = next();
        if let Some(rest) = line.split("listening on http://").nth(1) {
            break rest.split_whitespace().next().expect("address").parse().expect("address");
        }
    };
    let call = |method: &str, params: Value| {
        let body = json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params});
        let (_, answer) = crate::process::post(addr, &body.to_string()).expect("answers");
        let answer: Value = serde_json::from_str(&answer).expect("JSON");
        assert!(answer.get("error").is_none(), "{method}: {answer}");
        answer["result"].clone()
    };
    let send = || call("eth_sendTransaction", json!([{"from": ALICE, "to": ALICE}]));

    assert_eq!(call("anvil_setLoggingEnabled", json!([false])), Value::Null);
    send(); // block 1, while logging is off
    assert_eq!(call("anvil_setLoggingEnabled", json!([true])), Value::Null);
    send(); // block 2
    // The state owner writes its commit lines in order: block 1's would come before block 2's.
    loop {
        let line = next();
        assert!(
            !(line.contains("block committed") && line.contains("number=1 ")),
            "a block committed while logging was off was logged: {line}"
        );
        if line.contains("block committed") && line.contains("number=2 ") {
            break;
        }
    }
}

/// An impersonated account with code (a multisig, a token, a timelock) sends, as in anvil and
/// Hardhat: EIP-3607 holds for signed transactions, not for those the node seals itself; and
/// a trace of the block replays it.
#[actix::test]
async fn an_impersonated_contract_sends() {
    or_skip!(crate::conformance::conformance_dir());
    let node = TestNode::start();
    let token = node.deploy_bench_token().await;
    node.ok("anvil_setBalance", json!([token, "0xde0b6b3a7640000"])).await;
    node.ok("anvil_impersonateAccount", json!([token])).await;
    let to = node.signer(1).address();
    let before = balance(&node, to).await;
    let hash =
        node.ok("eth_sendTransaction", json!([{"from": token, "to": to, "value": "0x7"}])).await;
    let receipt = node.ok("eth_getTransactionReceipt", json!([hash])).await;
    assert_eq!(receipt["status"], "0x1", "{receipt}");
    assert_eq!(balance(&node, to).await, before + U256::from(7));
    let trace = node.ok("debug_traceTransaction", json!([hash, {"tracer": "callTracer"}])).await;
    assert_eq!(trace["value"], "0x7", "{trace}");
}

#[actix::test]
async fn a_senders_transaction_is_found_by_its_nonce_mined_or_pooled() {
    let node = TestNode::start();
    let (alice, bob) = (node.signer(0).address(), node.signer(1).address());
    // Alice's five transactions among Bob's and empty blocks: blocks where her nonce stays.
    let mut hashes = Vec::new();
    for i in 0..5u64 {
        for _ in 0..i {
            node.ok("evm_mine", json!([])).await;
            node.ok("eth_sendTransaction", json!([{"from": bob, "to": bob, "value": "0x1"}])).await;
        }
        let tx = json!([{"from": alice, "to": bob, "value": format!("{:#x}", i + 1)}]);
        hashes.push(node.ok("eth_sendTransaction", tx).await);
    }
    for (nonce, hash) in hashes.iter().enumerate() {
        let found = node
            .ok("eth_getTransactionBySenderAndNonce", json!([alice, format!("{nonce:#x}")]))
            .await;
        assert_eq!(&found["hash"], hash, "nonce {nonce}");
        assert_eq!(found["nonce"], format!("{nonce:#x}"));
    }
    let none = node.ok("eth_getTransactionBySenderAndNonce", json!([alice, "0x5"])).await;
    assert_eq!(none, Value::Null);
    // A pooled one is found before it is mined (no block yet).
    node.ok("anvil_setAutomine", json!([false])).await;
    let pending = node.ok("eth_sendTransaction", json!([{"from": alice, "to": bob}])).await;
    let found = node.ok("eth_getTransactionBySenderAndNonce", json!([alice, "0x5"])).await;
    assert_eq!(found["hash"], pending);
    assert_eq!(found["blockNumber"], Value::Null);
    let stranger = Address::repeat_byte(0x77);
    let none = node.ok("eth_getTransactionBySenderAndNonce", json!([stranger, "0x0"])).await;
    assert_eq!(none, Value::Null);
}
