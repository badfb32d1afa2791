//! Dev-chain methods through the RPC front of a whole node: block settings, state patches,
//! impersonation, dropping transactions, snapshots. Each method: success and a bad param.

use alloy_consensus::{SignableTransaction, TxEip1559, TxEnvelope};
use alloy_eips::eip2718::Encodable2718;
use alloy_primitives::{Address, B256, Bytes, Signature, TxKind, U256};
use alloy_signer_local::PrivateKeySigner;
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

async fn latest(node: &TestNode) -> Value {
    node.ok("eth_getBlockByNumber", json!(["latest", false])).await
}

#[actix::test]
async fn anvil_mine_spaces_blocks_and_checks_its_count() {
    let node = TestNode::start();
    node.ok("anvil_mine", json!(["0x3", "0xa"])).await;
    assert_eq!(node.block_number().await, 3);
    let ts = |b: Value| quantity(&b["timestamp"]);
    let one = ts(node.ok("eth_getBlockByNumber", json!(["0x1", false])).await);
    let three = ts(latest(&node).await);
    assert_eq!(three - one, 20, "10 s apart");
    assert_eq!(node.ok("hardhat_mine", json!([2])).await, true);
    assert_eq!(node.block_number().await, 5);
    assert_eq!(node.ok("anvil_mine", json!([])).await, Value::Null);
    assert_eq!(node.block_number().await, 6);
    assert_eq!(node.err("anvil_mine", json!([0])).await.0, -32602);
    assert_eq!(node.err("hardhat_mine", json!(["x"])).await.0, -32602);
    // Interval 0 (what viem's `mine({ blocks })` sends): no spacing, timestamps still rise.
    node.ok("anvil_mine", json!(["0x2", "0x0"])).await;
    assert_eq!(node.block_number().await, 8);
    let seven = ts(node.ok("eth_getBlockByNumber", json!(["0x7", false])).await);
    assert!(ts(latest(&node).await) > seven);
}

#[actix::test]
async fn block_settings_apply_to_the_next_block() {
    let node = TestNode::start();
    let coinbase = Address::repeat_byte(0xc0);
    let randao = B256::repeat_byte(0x42);
    node.ok("evm_setNextBlockTimestamp", json!([GENESIS_TIME + 100])).await;
    node.ok("anvil_setNextBlockBaseFeePerGas", json!(["0x2540be400"])).await;
    assert_eq!(node.ok("hardhat_setCoinbase", json!([coinbase])).await, true);
    node.ok("anvil_setPrevRandao", json!([randao])).await;
    assert_eq!(node.ok("evm_setBlockGasLimit", json!(["0x1c9c380"])).await, true);
    node.ok("evm_mine", json!([])).await;
    let block = latest(&node).await;
    assert_eq!(quantity(&block["timestamp"]), GENESIS_TIME + 100);
    assert_eq!(block["baseFeePerGas"], "0x2540be400");
    assert_eq!(
        block["miner"].as_str().unwrap().to_lowercase(),
        coinbase.to_string().to_lowercase()
    );
    assert_eq!(block["mixHash"], randao.to_string());
    assert_eq!(quantity(&block["gasLimit"]), 30_000_000);

    // One-block settings are used up; time continues from the set timestamp.
    node.ok("evm_mine", json!([])).await;
    let block = latest(&node).await;
    assert_eq!(quantity(&block["timestamp"]), GENESIS_TIME + 101);
    assert_eq!(quantity(&block["baseFeePerGas"]), 8_750_000_000, "derived from the parent");
    assert_ne!(block["mixHash"], randao.to_string());
    assert_eq!(
        block["miner"].as_str().unwrap().to_lowercase(),
        coinbase.to_string().to_lowercase()
    );

    assert_eq!(node.ok("evm_increaseTime", json!([1000])).await, json!(1100), "100 + 1000");
    node.ok("evm_mine", json!([])).await;
    assert_eq!(quantity(&latest(&node).await["timestamp"]), GENESIS_TIME + 1100);

    let (code, message, _) = node.err("evm_setNextBlockTimestamp", json!([GENESIS_TIME])).await;
    assert_eq!(code, -32000, "{message}");
    assert_eq!(node.err("evm_setNextBlockTimestamp", json!([])).await.0, -32602);
    assert_eq!(node.err("evm_increaseTime", json!(["soon"])).await.0, -32602);
    assert_eq!(node.err("evm_setBlockGasLimit", json!([100])).await.0, -32000);
    assert_eq!(node.err("evm_setBlockGasLimit", json!([])).await.0, -32602);
    assert_eq!(node.err("anvil_setNextBlockBaseFeePerGas", json!([true])).await.0, -32602);
    assert_eq!(node.err("anvil_setCoinbase", json!(["0x12"])).await.0, -32602);
    assert_eq!(node.err("anvil_setPrevRandao", json!(["0x12"])).await.0, -32602);
}

#[actix::test]
async fn state_patches_are_visible_at_once_and_the_next_block_builds_on_them() {
    let node = TestNode::start();
    let fresh = PrivateKeySigner::from_bytes(&B256::repeat_byte(9)).unwrap();
    let who = fresh.address();
    let contract = Address::repeat_byte(0xcc);

    assert_eq!(node.ok("anvil_setBalance", json!([who, "0xde0b6b3a7640000"])).await, Value::Null);
    assert_eq!(node.ok("eth_getBalance", json!([who, "latest"])).await, "0xde0b6b3a7640000");
    assert_eq!(node.ok("hardhat_setNonce", json!([who, "0x5"])).await, true);
    assert_eq!(node.ok("eth_getTransactionCount", json!([who, "latest"])).await, "0x5");
    // Runtime: return SLOAD(0).
    let code = "0x60005460005260206000f3";
    node.ok("anvil_setCode", json!([contract, code])).await;
    assert_eq!(node.ok("eth_getCode", json!([contract, "latest"])).await, code);
    node.ok("hardhat_setStorageAt", json!([contract, "0x0", format!("0x{:064x}", 42)])).await;
    let slot = node.ok("eth_getStorageAt", json!([contract, "0x0", "latest"])).await;
    assert_eq!(
        U256::from_str_radix(slot.as_str().unwrap().trim_start_matches("0x"), 16).unwrap(),
        U256::from(42)
    );
    let called = node.ok("eth_call", json!([{"to": contract}, "latest"])).await;
    assert_eq!(called, format!("0x{:064x}", 42));
    // A balance set twice keeps the last value; the nonce set before stays.
    node.ok("anvil_setBalance", json!([who, "0x1bc16d674ec80000"])).await;
    assert_eq!(node.ok("eth_getTransactionCount", json!([who, "latest"])).await, "0x5");

    // The patched account sends a transaction; the block builds on the patched state.
    let tx = fixtures::transfer(&fresh, 5, Address::repeat_byte(0xb0), 1);
    let hash = node.ok("eth_sendRawTransaction", json!([raw(&tx)])).await;
    let receipt = node.ok("eth_getTransactionReceipt", json!([hash])).await;
    assert_eq!(receipt["status"], "0x1");
    assert_eq!(node.ok("eth_getTransactionCount", json!([who, "latest"])).await, "0x6");
    assert_eq!(
        node.ok("eth_call", json!([{"to": contract}, "latest"])).await,
        format!("0x{:064x}", 42)
    );
    // A second block (an empty one) still agrees on the state root chain.
    node.ok("evm_mine", json!([])).await;
    let head = latest(&node).await;
    let parent = node.ok("eth_getBlockByNumber", json!([head["number"], false])).await;
    assert_eq!(head["stateRoot"], parent["stateRoot"]);

    for (method, params) in [
        ("anvil_setBalance", json!([who])),
        ("hardhat_setBalance", json!(["0x12", "0x1"])),
        ("anvil_setNonce", json!([who, "five"])),
        ("anvil_setCode", json!([contract, "0x123"])),
        ("anvil_setStorageAt", json!([contract, "0x0"])),
        ("hardhat_setStorageAt", json!([contract, "0x0", "0x1", 4])),
    ] {
        assert_eq!(node.err(method, params.clone()).await.0, -32602, "{method} {params}");
    }
}

#[actix::test]
async fn impersonated_accounts_send_unsigned_and_raw_transactions_cannot() {
    let node = TestNode::start();
    let whale = Address::repeat_byte(0x77);
    let bob = node.signer(1).address();
    node.ok("anvil_setBalance", json!([whale, "0xde0b6b3a7640000"])).await;
    let send = json!([{"from": whale, "to": bob, "value": "0x10"}]);
    assert_eq!(node.err("eth_sendTransaction", send.clone()).await.1, "unknown account");

    assert_eq!(node.ok("anvil_impersonateAccount", json!([whale])).await, Value::Null);
    let hash = node.ok("eth_sendTransaction", send.clone()).await;
    let receipt = node.ok("eth_getTransactionReceipt", json!([hash])).await;
    assert_eq!(receipt["status"], "0x1");
    assert_eq!(receipt["from"].as_str().unwrap().to_lowercase(), whale.to_string().to_lowercase());
    let tx = node.ok("eth_getTransactionByHash", json!([hash])).await;
    assert_eq!(tx["from"].as_str().unwrap().to_lowercase(), whale.to_string().to_lowercase());

    // The same unsigned transaction sent raw is judged by its (placeholder) signature only.
    let unsigned = TxEip1559 {
        chain_id: 31337,
        nonce: 1,
        gas_limit: 21_000,
        max_fee_per_gas: 10_000_000_000,
        max_priority_fee_per_gas: 1_000_000_000,
        to: TxKind::Call(bob),
        value: U256::from(16),
        access_list: Default::default(),
        input: Bytes::new(),
    };
    let placeholder = Signature::new(U256::from_be_slice(whale.as_slice()), U256::from(1), false);
    let forged: TxEnvelope = unsigned.into_signed(placeholder).into();
    let (code, message, _) = node.err("eth_sendRawTransaction", json!([raw(&forged)])).await;
    assert_eq!(code, -32000, "{message}");
    assert_eq!(node.ok("eth_getTransactionCount", json!([whale, "latest"])).await, "0x1");

    assert_eq!(node.ok("hardhat_stopImpersonatingAccount", json!([whale])).await, true);
    assert_eq!(node.err("eth_sendTransaction", send.clone()).await.1, "unknown account");
    node.ok("anvil_autoImpersonateAccount", json!([true])).await;
    node.ok("eth_sendTransaction", send.clone()).await;
    node.ok("anvil_autoImpersonateAccount", json!([false])).await;
    assert_eq!(node.err("eth_sendTransaction", send).await.1, "unknown account");

    assert_eq!(node.err("anvil_impersonateAccount", json!(["0x12"])).await.0, -32602);
    assert_eq!(node.err("anvil_stopImpersonatingAccount", json!([])).await.0, -32602);
    assert_eq!(node.err("anvil_autoImpersonateAccount", json!(["yes"])).await.0, -32602);
}

#[actix::test]
async fn dropped_transactions_leave_the_pool() {
    let node = manual();
    let alice = node.signer(0);
    let tx = fixtures::transfer(&alice, 0, node.signer(1).address(), 1);
    let hash = node.ok("eth_sendRawTransaction", json!([raw(&tx)])).await;
    assert_eq!(node.ok("anvil_dropTransaction", json!([hash])).await, hash);
    assert_eq!(node.ok("txpool_status", json!([])).await["pending"], "0x0");
    assert_eq!(node.ok("anvil_dropTransaction", json!([hash])).await, Value::Null);
    assert_eq!(node.ok("hardhat_dropTransaction", json!([hash])).await, false);
    assert_eq!(node.err("anvil_dropTransaction", json!(["0x12"])).await.0, -32602);
}

#[actix::test]
async fn revert_goes_back_to_the_snapshot_and_the_chain_goes_on() {
    let node = TestNode::start();
    let alice = node.signer(0).address();
    let bob = node.signer(1).address();
    let balance = node.ok("eth_getBalance", json!([bob, "latest"])).await;
    let root = latest(&node).await["stateRoot"].clone();

    let time = quantity(&latest(&node).await["timestamp"]);
    let id = node.ok("evm_snapshot", json!([])).await;
    assert_eq!(id, "0x1");
    node.ok("evm_increaseTime", json!([3600])).await;
    // A patch at the snapshot's own head, then blocks, then a patch on a later head.
    node.ok("anvil_setBalance", json!([bob, "0x1"])).await;
    let hash =
        node.ok("eth_sendTransaction", json!([{"from": alice, "to": bob, "value": "0x5"}])).await;
    node.ok("evm_mine", json!([])).await;
    node.ok("anvil_setStorageAt", json!([bob, "0x1", "0x2"])).await;
    let later = node.ok("evm_snapshot", json!([])).await;
    assert_eq!(later, "0x2");
    assert_eq!(node.block_number().await, 2);

    assert_eq!(node.ok("evm_revert", json!([id])).await, true);
    assert_eq!(node.block_number().await, 0);
    assert_eq!(node.ok("eth_getBalance", json!([bob, "latest"])).await, balance);
    assert_eq!(
        node.ok("eth_getStorageAt", json!([bob, "0x1", "latest"])).await,
        format!("0x{:064x}", 0)
    );
    assert_eq!(node.ok("eth_getTransactionReceipt", json!([hash])).await, Value::Null);
    assert_eq!(node.ok("eth_getBlockByNumber", json!(["0x1", false])).await, Value::Null);
    assert_eq!(node.ok("eth_getTransactionCount", json!([alice, "latest"])).await, "0x0");
    // Used up, with every later snapshot.
    assert_eq!(node.ok("evm_revert", json!([id])).await, false);
    assert_eq!(node.ok("evm_revert", json!([later])).await, false);

    // The chain goes on from the snapshot's state.
    let again =
        node.ok("eth_sendTransaction", json!([{"from": alice, "to": bob, "value": "0x5"}])).await;
    assert_eq!(again, hash, "same transaction, same hash, mined anew");
    let receipt = node.ok("eth_getTransactionReceipt", json!([again])).await;
    assert_eq!(receipt["blockNumber"], "0x1");
    let block1 = node.ok("eth_getBlockByNumber", json!(["0x1", false])).await;
    assert_eq!(quantity(&block1["timestamp"]), time + 1, "the clock went back too");
    let block1 = node.ok("eth_getBlockByNumber", json!(["0x1", false])).await;
    assert_eq!(
        block1["parentHash"],
        node.ok("eth_getBlockByNumber", json!(["0x0", false])).await["hash"]
    );
    assert_ne!(block1["stateRoot"], root);

    assert_eq!(node.err("evm_revert", json!(["x"])).await.0, -32602);
    assert_eq!(node.err("evm_revert", json!([])).await.0, -32602);
    assert_eq!(node.err("evm_snapshot", json!([1])).await.0, -32602);
}

/// Returns (block.number, block.timestamp) as two words.
const NUMBER_AND_TIME: &str = "0x435f524260205260405ff3";

#[actix::test]
async fn calls_and_estimates_at_pending_run_in_the_next_block_as_anvil_runs_them() {
    let node = TestNode::start();
    let clock = Address::repeat_byte(0xc1).to_string();
    node.ok("anvil_setCode", json!([clock, NUMBER_AND_TIME])).await;
    node.ok("evm_mine", json!([])).await;
    let head = quantity(&latest(&node).await["number"]);
    let head_time = quantity(&latest(&node).await["timestamp"]);
    let next = head_time + 1_000;
    node.ok("evm_setNextBlockTimestamp", json!([next])).await;
    let words = |number: u64, time: u64| format!("0x{number:064x}{time:064x}");
    let call = |block: Option<&str>| {
        let tx = json!({"to": clock});
        let params = match block {
            Some(block) => json!([tx, block]),
            None => json!([tx]),
        };
        node.ok("eth_call", params)
    };
    // `pending`: the next block's number and timestamp; no block and `latest`: the head's
    // (anvil 1.7.1's answers, asked with the same contract).
    assert_eq!(call(Some("pending")).await, words(head + 1, next));
    assert_eq!(call(None).await, words(head, head_time));
    assert_eq!(call(Some("latest")).await, words(head, head_time));
    // The request's own block overrides win.
    let overridden =
        node.ok("eth_call", json!([{"to": clock}, "pending", null, {"time": "0x7"}])).await;
    assert_eq!(overridden, words(head + 1, 7));

    // A contract that reverts until `block.timestamp >= next`: hardhat-ethers' estimate at
    // `pending` succeeds, and the transaction mined with that gas succeeds too.
    let gate = Address::repeat_byte(0xc2).to_string();
    let code = format!("0x4267{next:016x}11600f57005b5f5ffd");
    node.ok("anvil_setCode", json!([gate, code])).await;
    let from = node.signer(0).address().to_string();
    let tx = json!({"from": from, "to": gate});
    let (code, _, _) = node.err("eth_estimateGas", json!([tx, "latest"])).await;
    assert_eq!(code, 3, "reverts in the head's environment");
    let gas = node.ok("eth_estimateGas", json!([tx, "pending"])).await;
    assert_eq!(node.ok("eth_estimateGas", json!([tx])).await, gas, "no block: pending, as anvil");
    let hash =
        node.ok("eth_sendTransaction", json!([{"from": from, "to": gate, "gas": gas}])).await;
    let receipt = node.ok("eth_getTransactionReceipt", json!([hash])).await;
    assert_eq!(receipt["status"], "0x1", "{receipt}");
    assert_eq!(quantity(&latest(&node).await["timestamp"]), next);
}
