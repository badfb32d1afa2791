//! Every JSON-RPC method of the dev chain, with its error paths, through the same body
//! handler the HTTP server uses.

use alloy_eips::eip2718::Encodable2718;
use alloy_primitives::{Address, Bytes, U256};
use hearth::config::NodeConfig;
use serde_json::{Value, json};

use crate::support::{TestNode, fixtures, quantity};

const ONE_ETH_HEX: &str = "0xde0b6b3a7640000";

fn hex(bytes: &[u8]) -> String {
    format!("0x{}", alloy_primitives::hex::encode(bytes))
}

#[actix::test]
async fn transport_errors_use_the_standard_codes() {
    let node = TestNode::start();
    let code = |v: &Value| v["error"]["code"].as_i64().unwrap();
    assert_eq!(code(&node.raw("{not json").await.unwrap()), -32700);
    assert_eq!(code(&node.raw("[]").await.unwrap()), -32600);
    assert_eq!(code(&node.raw("42").await.unwrap()), -32600);
    assert_eq!(code(&node.raw(r#"{"jsonrpc":"2.0","id":1}"#).await.unwrap()), -32600);
    assert_eq!(node.err("eth_noSuchMethod", json!([])).await.0, -32601);
    assert_eq!(node.err("eth_getBalance", json!(["0x1234", "latest"])).await.0, -32602);
    assert_eq!(node.err("eth_getBalance", json!([])).await.0, -32602);
    // A notification gets no response, and changes nothing it should not.
    assert!(
        node.raw(r#"{"jsonrpc":"2.0","method":"eth_blockNumber","params":[]}"#).await.is_none()
    );
    // A batch answers each item on its own, in order.
    let batch = node
        .raw(
            r#"[{"jsonrpc":"2.0","id":1,"method":"eth_chainId","params":[]},
                 {"jsonrpc":"2.0","id":2,"method":"nope","params":[]},
                 17]"#,
        )
        .await
        .unwrap();
    let items = batch.as_array().unwrap();
    assert_eq!(items.len(), 3);
    assert_eq!(items[0]["result"], "0x7a69");
    assert_eq!(items[1]["error"]["code"], -32601);
    assert_eq!(items[2]["error"]["code"], -32600);
}

#[actix::test]
async fn chain_identity_and_accounts() {
    let node = TestNode::start();
    // Hardhat's network helpers accept a node whose answer starts with `anvil`.
    assert_eq!(node.ok("web3_clientVersion", json!([])).await, hearth_rpc::client_version());
    assert!(hearth_rpc::client_version().starts_with("anvil/v"));
    assert_eq!(node.ok("net_version", json!([])).await, "31337");
    assert_eq!(node.ok("net_listening", json!([])).await, true);
    assert_eq!(node.ok("eth_chainId", json!([])).await, "0x7a69");
    assert_eq!(node.ok("eth_syncing", json!([])).await, false);
    assert_eq!(node.ok("eth_blockNumber", json!([])).await, "0x0");
    let accounts = node.ok("eth_accounts", json!([])).await;
    assert_eq!(accounts.as_array().unwrap().len(), 10);
    assert_eq!(
        accounts[0].as_str().unwrap().to_lowercase(),
        "0xf39fd6e51aad88f6f4ce6ab8827279cfffb92266"
    );
    let balance = node.ok("eth_getBalance", json!([accounts[0], "latest"])).await;
    assert_eq!(balance, "0x21e19e0c9bab2400000", "10,000 ETH");
    assert_eq!(node.ok("eth_getBalance", json!([Address::ZERO, "earliest"])).await, "0x0");
    let (code, message, _) = node.err("eth_getBalance", json!([accounts[0], "0x10"])).await;
    assert_eq!((code, message.as_str()), (-32000, "header not found"));
}

#[actix::test]
async fn raw_transactions_of_every_type_are_mined_with_receipts() {
    let node = TestNode::start();
    let alice = node.signer(0);
    let bob = node.signer(1).address();
    let legacy = fixtures::legacy_transfer(&alice, 0, bob, 2_000_000_000, Some(31337));
    let eip1559 = fixtures::transfer(&alice, 1, bob, 5);
    let eip2930 = {
        use alloy_consensus::{SignableTransaction, TxEip2930};
        use alloy_signer::SignerSync;
        let tx = TxEip2930 {
            chain_id: 31337,
            nonce: 2,
            gas_price: 2_000_000_000,
            gas_limit: 30_000,
            to: alloy_primitives::TxKind::Call(bob),
            value: U256::from(3),
            access_list: Default::default(),
            input: Bytes::new(),
        };
        let sig = alice.sign_hash_sync(&tx.signature_hash()).unwrap();
        alloy_consensus::TxEnvelope::from(tx.into_signed(sig))
    };
    for (i, tx) in [legacy, eip1559, eip2930].into_iter().enumerate() {
        let hash = node.ok("eth_sendRawTransaction", json!([hex(&tx.encoded_2718())])).await;
        assert_eq!(hash.as_str().unwrap(), tx.tx_hash().to_string());
        let receipt = node.ok("eth_getTransactionReceipt", json!([hash])).await;
        assert_eq!(receipt["status"], "0x1");
        assert_eq!(receipt["blockNumber"], format!("{:#x}", i + 1));
        assert_eq!(receipt["gasUsed"], "0x5208");
        assert_eq!(receipt["type"], format!("{:#x}", [0, 2, 1][i]));
        let by_hash = node.ok("eth_getTransactionByHash", json!([hash])).await;
        assert_eq!(by_hash["blockNumber"], format!("{:#x}", i + 1));
        assert_eq!(
            by_hash["from"].as_str().unwrap().to_lowercase(),
            alice.address().to_string().to_lowercase()
        );
    }
    assert_eq!(node.block_number().await, 3);
    assert_eq!(
        quantity(&node.ok("eth_getTransactionCount", json!([alice.address(), "latest"])).await),
        3
    );
    assert_eq!(
        node.ok("eth_getTransactionByHash", json!([format!("0x{}", "11".repeat(32))])).await,
        Value::Null
    );
    assert_eq!(
        node.ok("eth_getTransactionReceipt", json!([format!("0x{}", "11".repeat(32))])).await,
        Value::Null
    );
}

#[actix::test]
async fn rejected_raw_transactions_change_nothing() {
    let node = TestNode::start();
    let alice = node.signer(0);
    let bob = node.signer(1).address();
    node.ok(
        "eth_sendRawTransaction",
        json!([hex(&fixtures::transfer(&alice, 0, bob, 1).encoded_2718())]),
    )
    .await;
    let before = node.ok("eth_getBlockByNumber", json!(["latest", false])).await;

    let (code, message, _) = node.err("eth_sendRawTransaction", json!(["0xdeadbeef"])).await;
    assert!(code == -32602 || code == -32000, "bad RLP: {code} {message}");
    let stale = fixtures::transfer(&alice, 0, bob, 2);
    let (code, message, _) =
        node.err("eth_sendRawTransaction", json!([hex(&stale.encoded_2718())])).await;
    assert_eq!(code, -32000);
    assert!(message.starts_with("nonce too low"), "{message}");
    let other_chain = fixtures::legacy_transfer(&alice, 1, bob, 2_000_000_000, Some(1));
    let (code, message, _) =
        node.err("eth_sendRawTransaction", json!([hex(&other_chain.encoded_2718())])).await;
    assert_eq!(code, -32000);
    assert!(message.contains("chain id"), "{message}");

    assert_eq!(node.ok("eth_getBlockByNumber", json!(["latest", false])).await, before);
    assert_eq!(
        quantity(&node.ok("eth_getTransactionCount", json!([alice.address(), "pending"])).await),
        1
    );
}

#[actix::test]
async fn send_transaction_signs_for_dev_accounts_only() {
    let node = TestNode::start();
    let alice = node.signer(0).address();
    let bob = node.signer(1).address();
    let hash = node
        .ok("eth_sendTransaction", json!([{"from": alice, "to": bob, "value": ONE_ETH_HEX}]))
        .await;
    // Automine: the receipt exists as soon as the hash is returned.
    let receipt = node.ok("eth_getTransactionReceipt", json!([hash])).await;
    assert_eq!(receipt["status"], "0x1");
    assert_eq!(node.ok("eth_getBalance", json!([bob, "latest"])).await, "0x21e27c1806e59a40000");
    let (code, message, _) = node
        .err("eth_sendTransaction", json!([{"from": Address::repeat_byte(9), "to": bob}]))
        .await;
    assert_eq!(code, -32000);
    assert!(message.contains("unknown account"), "{message}");
    // With a value the account cannot pay, the answer is still "unknown account" (checked
    // before any estimate), as the peers' probe expects.
    let (code, message, _) = node
        .err(
            "eth_sendTransaction",
            json!([{"from": Address::repeat_byte(9), "to": bob, "value": "0x1"}]),
        )
        .await;
    assert_eq!((code, message.as_str()), (-32000, "unknown account"));
}

#[actix::test]
async fn blocks_by_number_and_hash() {
    let node = TestNode::start();
    let alice = node.signer(0).address();
    let bob = node.signer(1).address();
    let tx =
        node.ok("eth_sendTransaction", json!([{"from": alice, "to": bob, "value": "0x1"}])).await;

    let genesis = node.ok("eth_getBlockByNumber", json!(["earliest", false])).await;
    assert_eq!(genesis["number"], "0x0");
    let by_tag = node.ok("eth_getBlockByNumber", json!(["latest", false])).await;
    let by_number = node.ok("eth_getBlockByNumber", json!(["0x1", false])).await;
    assert_eq!(by_tag, by_number);
    for tag in ["pending", "safe", "finalized"] {
        assert_eq!(node.ok("eth_getBlockByNumber", json!([tag, false])).await["number"], "0x1");
    }
    assert_eq!(by_number["parentHash"], genesis["hash"]);
    assert_eq!(by_number["transactions"], json!([tx]));
    assert_eq!(by_number["gasUsed"], "0x5208");
    for field in [
        "stateRoot",
        "transactionsRoot",
        "receiptsRoot",
        "logsBloom",
        "baseFeePerGas",
        "timestamp",
        "size",
    ] {
        assert!(by_number[field].is_string(), "{field} missing: {by_number}");
    }
    assert_ne!(by_number["stateRoot"], genesis["stateRoot"]);
    let by_hash = node.ok("eth_getBlockByHash", json!([by_number["hash"], true])).await;
    assert_eq!(by_hash["hash"], by_number["hash"]);
    assert_eq!(by_hash["transactions"][0]["hash"], tx);
    assert_eq!(by_hash["transactions"][0]["blockHash"], by_number["hash"]);

    assert_eq!(node.ok("eth_getBlockByNumber", json!(["0x9", false])).await, Value::Null);
    assert_eq!(
        node.ok("eth_getBlockByHash", json!([format!("0x{}", "ab".repeat(32)), false])).await,
        Value::Null
    );
    assert_eq!(node.ok("eth_getBlockTransactionCountByNumber", json!(["0x1"])).await, "0x1");
    assert_eq!(
        node.ok("eth_getBlockTransactionCountByHash", json!([by_number["hash"]])).await,
        "0x1"
    );
    assert_eq!(node.ok("eth_getBlockTransactionCountByNumber", json!(["0x0"])).await, "0x0");
    let first = node.ok("eth_getTransactionByBlockNumberAndIndex", json!(["0x1", "0x0"])).await;
    assert_eq!(first["hash"], tx);
    let same =
        node.ok("eth_getTransactionByBlockHashAndIndex", json!([by_number["hash"], "0x0"])).await;
    assert_eq!(same, first);
    assert_eq!(
        node.ok("eth_getTransactionByBlockNumberAndIndex", json!(["0x1", "0x1"])).await,
        Value::Null
    );
    let (code, _, _) = node.err("eth_getBlockByNumber", json!(["latest"])).await;
    assert_eq!(code, -32602, "the full-transactions flag is required");
}

#[actix::test]
async fn contracts_calls_reverts_and_estimates() {
    or_skip!(crate::conformance::conformance_dir());
    let node = TestNode::start();
    let calldata = fixtures::bench_calldata();
    let token = node.deploy_bench_token().await;
    assert_eq!(
        token.to_string(),
        calldata["contract"].as_str().unwrap(),
        "same address as on every peer"
    );
    let call = |name: &str| json!([{"to": token, "data": calldata["calldata"][name]}, "latest"]);

    let balance = node.ok("eth_call", call("balanceOf(0xf39F..2266)")).await;
    assert_eq!(balance, calldata["expected"]["balanceOf(0xf39F..2266)"]);
    let hash_loop = node.ok("eth_call", call("hashLoop(2000)")).await;
    assert_eq!(hash_loop, calldata["expected"]["hashLoop(2000)"]);

    let (code, message, data) = node.err("eth_call", call("alwaysRevert()")).await;
    assert_eq!(code, 3);
    assert_eq!(message, "execution reverted: BenchToken: always reverts");
    assert!(data.as_str().unwrap().starts_with("0x08c379a0"), "Error(string) data: {data}");
    let (code, _, data) = node.err("eth_call", call("customRevert()")).await;
    assert_eq!(code, 3);
    assert!(data.as_str().unwrap().len() > 10, "custom error data: {data}");

    // input and data are both accepted; when both are given they must agree.
    let input = calldata["calldata"]["totalSupply()"].clone();
    let supply = node.ok("eth_call", json!([{"to": token, "input": input}, "latest"])).await;
    assert_eq!(
        supply,
        node.ok("eth_call", json!([{"to": token, "data": input, "input": input}, "latest"])).await
    );
    let (code, _, _) = node
        .err("eth_call", json!([{"to": token, "data": "0x01", "input": "0x02"}, "latest"]))
        .await;
    assert_eq!(code, -32602);
    // A call that runs out of gas.
    let (code, message, _) = node
        .err("eth_call", json!([{"to": token, "data": calldata["calldata"]["hashLoop(2000)"], "gas": "0x6000"}, "latest"]))
        .await;
    assert_eq!(code, -32000);
    assert!(message.contains("out of gas"), "{message}");

    let alice = node.signer(0).address();
    let transfer = node
        .ok(
            "eth_estimateGas",
            json!([{"from": alice, "to": node.signer(1).address(), "value": "0x1"}]),
        )
        .await;
    assert_eq!(transfer, "0x5208");
    // Refusals before execution use geth's words, which client libraries tell apart by text
    // (ethers' INSUFFICIENT_FUNDS, viem's NonceTooLowError, ...).
    let bob = node.signer(1).address();
    let too_much = json!([{"from": alice, "to": bob, "value": "0x52b7d2dcc80cd2e4000000"}]);
    let (code, message, _) = node.err("eth_estimateGas", too_much).await;
    assert_eq!(code, -32000);
    assert!(message.starts_with("insufficient funds for gas * price + value: have "), "{message}");
    let (code, message, _) =
        node.err("eth_call", json!([{"from": alice, "to": bob, "nonce": "0x0"}, "latest"])).await;
    assert_eq!((code, message.as_str()), (-32000, "nonce too low: next nonce 1, tx nonce 0"));
    let estimate = quantity(
        &node
            .ok(
                "eth_estimateGas",
                json!([{"to": token, "data": calldata["calldata"]["hashLoop(2000)"]}]),
            )
            .await,
    );
    let anvil = calldata["gas"]["hashLoop(2000) eth_estimateGas (anvil)"].as_u64().unwrap();
    assert!(estimate.abs_diff(anvil) * 100 < anvil, "estimate {estimate} vs anvil {anvil}");
    // The estimate is enough, and one less is not... or close to it (binary search is exact).
    let run = |gas: u64| {
        node.call("eth_call", json!([{"to": token, "data": calldata["calldata"]["hashLoop(2000)"], "gas": format!("{gas:#x}")}, "latest"]))
    };
    assert!(run(estimate).await.get("error").is_none());
    assert!(run(estimate - 1).await.get("error").is_some());
    let (code, message, _) = node
        .err(
            "eth_estimateGas",
            json!([{"to": token, "data": calldata["calldata"]["alwaysRevert()"]}]),
        )
        .await;
    assert_eq!((code, message.as_str()), (3, "execution reverted: BenchToken: always reverts"));

    assert!(node.ok("eth_getCode", json!([token, "latest"])).await.as_str().unwrap().len() > 100);
    let supply_slot = node.ok("eth_getStorageAt", json!([token, "0x0", "latest"])).await;
    assert_eq!(supply_slot, format!("0x{:064x}", U256::from(10u64).pow(U256::from(24))));
}

#[actix::test]
async fn logs_filter_by_range_hash_address_and_topics() {
    or_skip!(crate::conformance::conformance_dir());
    let node = TestNode::start();
    let token = node.deploy_bench_token().await;
    let alice = node.signer(0).address();
    let bob = node.signer(1).address();
    let carol = node.signer(2).address();
    let topic = |a: Address| format!("0x{:0>64}", alloy_primitives::hex::encode(a.as_slice()));
    for to in [bob, carol] {
        let data = format!("0xa9059cbb{}{:064x}", &topic(to)[2..], 5);
        node.ok("eth_sendTransaction", json!([{"from": alice, "to": token, "data": data}])).await;
    }
    let transfer_sig =
        format!("{}", alloy_primitives::keccak256("Transfer(address,address,uint256)"));

    let all = node.ok("eth_getLogs", json!([{"fromBlock": "0x0"}])).await;
    assert_eq!(all.as_array().unwrap().len(), 3, "mint + two transfers: {all}");
    assert_eq!(all[0]["blockNumber"], "0x1");
    assert_eq!(all[2]["logIndex"], "0x0");
    assert_eq!(all[2]["removed"], false);
    let by_address =
        node.ok("eth_getLogs", json!([{"fromBlock": "earliest", "address": [token, bob]}])).await;
    assert_eq!(by_address, all);
    let none = node.ok("eth_getLogs", json!([{"fromBlock": "0x0", "address": bob}])).await;
    assert_eq!(none, json!([]));
    let to_bob = node
        .ok(
            "eth_getLogs",
            json!([{"fromBlock": "0x0", "topics": [transfer_sig, Value::Null, topic(bob)]}]),
        )
        .await;
    assert_eq!(to_bob.as_array().unwrap().len(), 1);
    let either = node.ok("eth_getLogs", json!([{"fromBlock": "0x0", "topics": [Value::Null, Value::Null, [topic(bob), topic(carol)]]}])).await;
    assert_eq!(either.as_array().unwrap().len(), 2);
    let block3 = node.ok("eth_getBlockByNumber", json!(["0x3", false])).await;
    let by_hash = node.ok("eth_getLogs", json!([{"blockHash": block3["hash"]}])).await;
    assert_eq!(by_hash.as_array().unwrap().len(), 1);
    assert_eq!(by_hash[0]["transactionHash"], block3["transactions"][0]);
    let only_range = node.ok("eth_getLogs", json!([{"fromBlock": "0x2", "toBlock": "0x2"}])).await;
    assert_eq!(only_range.as_array().unwrap().len(), 1);
    let (code, _, _) =
        node.err("eth_getLogs", json!([{"fromBlock": "0x3", "toBlock": "0x1"}])).await;
    assert!(code == -32000 || code == -32602);
    let (code, _, _) =
        node.err("eth_getLogs", json!([{"blockHash": block3["hash"], "fromBlock": "0x1"}])).await;
    assert_eq!(code, -32602);
}

#[actix::test]
async fn fees_and_mining() {
    let node = TestNode::start();
    assert_eq!(node.ok("eth_maxPriorityFeePerGas", json!([])).await, "0x3b9aca00");
    assert!(quantity(&node.ok("eth_gasPrice", json!([])).await) >= 1_000_000_000);
    assert_eq!(node.ok("evm_mine", json!([])).await, "0x0");
    node.ok("evm_mine", json!([format!("{:#x}", 1_800_000_000u64)])).await;
    assert_eq!(node.block_number().await, 2);
    let block = node.ok("eth_getBlockByNumber", json!(["latest", false])).await;
    assert_eq!(quantity(&block["timestamp"]), 1_800_000_000);
    let (code, _, _) = node.err("evm_mine", json!([format!("{:#x}", 1_000u64)])).await;
    assert_ne!(code, 0, "a timestamp before the parent's is refused");

    let history = node.ok("eth_feeHistory", json!(["0x2", "latest", [25, 75]])).await;
    assert_eq!(history["oldestBlock"], "0x1");
    assert_eq!(history["baseFeePerGas"].as_array().unwrap().len(), 3);
    assert_eq!(history["gasUsedRatio"].as_array().unwrap().len(), 2);
    assert_eq!(history["reward"].as_array().unwrap().len(), 2);
    // Empty blocks: the base fee falls by 1/8 each block.
    let fees: Vec<u64> =
        history["baseFeePerGas"].as_array().unwrap().iter().map(quantity).collect();
    assert!(fees.windows(2).all(|w| w[1] < w[0]), "{fees:?}");
}

#[actix::test]
async fn pending_nonce_counts_pooled_transactions_when_not_automining() {
    let mut config = NodeConfig::for_tests();
    config.automine = false;
    let node = TestNode::start_with(config);
    let alice = node.signer(0);
    let bob = node.signer(1).address();
    let hash = node
        .ok(
            "eth_sendRawTransaction",
            json!([hex(&fixtures::transfer(&alice, 0, bob, 1).encoded_2718())]),
        )
        .await;
    assert_eq!(node.block_number().await, 0, "no automine");
    assert_eq!(
        node.ok("eth_getTransactionCount", json!([alice.address(), "pending"])).await,
        "0x1"
    );
    assert_eq!(node.ok("eth_getTransactionCount", json!([alice.address(), "latest"])).await, "0x0");
    let pending = node.ok("eth_getTransactionByHash", json!([hash])).await;
    assert_eq!(pending["hash"], hash);
    assert_eq!(pending["blockNumber"], Value::Null);
    assert_eq!(node.ok("eth_getTransactionReceipt", json!([hash])).await, Value::Null);
    node.ok("evm_mine", json!([])).await;
    assert_eq!(node.ok("eth_getTransactionReceipt", json!([hash])).await["blockNumber"], "0x1");
}

#[actix::test]
async fn eth_call_takes_state_and_block_overrides() {
    or_skip!(crate::conformance::conformance_dir());
    let node = TestNode::start();
    let token = node.deploy_bench_token().await;
    let calldata = fixtures::bench_calldata();
    let stranger = Address::repeat_byte(0x77);
    let balance_of =
        |who: Address| format!("0x70a08231{:0>64}", alloy_primitives::hex::encode(who));
    // balanceOf[who] is at keccak(who . 1).
    let slot_of = |who: Address| {
        let mut key = [0u8; 64];
        key[12..32].copy_from_slice(who.as_slice());
        key[63] = 1;
        alloy_primitives::keccak256(key)
    };
    let word = |n: u64| format!("0x{n:064x}");

    // stateDiff changes one slot and keeps the rest.
    let overrides =
        json!({token.to_string(): {"stateDiff": {slot_of(stranger).to_string(): word(42)}}});
    let got = node
        .ok("eth_call", json!([{"to": token, "data": balance_of(stranger)}, "latest", overrides]))
        .await;
    assert_eq!(got, word(42));
    let supply = node.ok("eth_call", json!([{"to": token, "data": calldata["calldata"]["totalSupply()"]}, "latest", overrides])).await;
    assert_ne!(supply, word(0), "other slots kept");
    // state replaces the whole storage: every other slot reads zero.
    let overrides = json!({token.to_string(): {"state": {slot_of(stranger).to_string(): word(7)}}});
    let supply = node.ok("eth_call", json!([{"to": token, "data": calldata["calldata"]["totalSupply()"]}, "latest", overrides])).await;
    assert_eq!(supply, word(0));
    // Nothing was written: without overrides the chain is as it was.
    assert_eq!(
        node.ok("eth_call", json!([{"to": token, "data": balance_of(stranger)}, "latest"])).await,
        word(0)
    );

    // Balance and code overrides: code that returns SELFBALANCE, at an address with no code.
    let code = "0x4760005260206000f3";
    let overrides = json!({stranger.to_string(): {"balance": "0x1234", "code": code}});
    assert_eq!(
        node.ok("eth_call", json!([{"to": stranger}, "latest", overrides])).await,
        word(0x1234)
    );
    // Block overrides: code returning NUMBER, then TIMESTAMP.
    let number_code = json!({stranger.to_string(): {"code": "0x4360005260206000f3"}});
    let got = node
        .ok("eth_call", json!([{"to": stranger}, "latest", number_code, {"number": "0x539"}]))
        .await;
    assert_eq!(got, word(0x539));
    let time_code = json!({stranger.to_string(): {"code": "0x4260005260206000f3"}});
    let got =
        node.ok("eth_call", json!([{"to": stranger}, "latest", time_code, {"time": "0x10"}])).await;
    assert_eq!(got, word(0x10));
    // The estimate sees overrides too.
    let gas = node.ok("eth_estimateGas", json!([{"to": stranger}, "latest", time_code])).await;
    assert!(crate::support::quantity(&gas) > 21_000);

    // Bad overrides are -32602.
    let both = json!({token.to_string(): {"state": {}, "stateDiff": {}}});
    assert_eq!(node.err("eth_call", json!([{"to": token}, "latest", both])).await.0, -32602);
    let unknown = json!({token.to_string(): {"balanse": "0x1"}});
    assert_eq!(node.err("eth_call", json!([{"to": token}, "latest", unknown])).await.0, -32602);
    assert_eq!(
        node.err("eth_call", json!([{"to": token}, "latest", {"0x12": {}}])).await.0,
        -32602
    );
}

#[actix::test]
async fn a_call_past_the_evm_time_cap_is_stopped_with_32002() {
    or_skip!(crate::conformance::conformance_dir());
    let mut config = NodeConfig::for_tests();
    config.evm_timeout = std::time::Duration::from_millis(20);
    config.rpc.gas_cap = 2_000_000_000;
    let node = TestNode::start_with(config);
    let token = node.deploy_bench_token().await;
    // hashLoop(10^7) needs ~2.5G gas: far more work than 20 ms.
    let data = format!("0x67151319{:064x}", 10_000_000u64);
    let (code, message, _) = node
        .err("eth_call", json!([{"to": token, "data": data, "gas": "0x77359400"}, "latest"]))
        .await;
    assert_eq!(code, -32002, "{message}");
    assert!(message.contains("timeout"), "{message}");
    // A call within the cap still answers.
    let short = format!("0x67151319{:064x}", 10u64);
    assert!(node.ok("eth_call", json!([{"to": token, "data": short}, "latest"])).await.is_string());
}

/// Runs `code` (at a fresh address) under a 20 ms EVM time cap and a 2G gas cap, and requires
/// the call to be stopped with -32002 well within five seconds.
async fn assert_stopped_by_the_time_cap(code: String) {
    let mut config = NodeConfig::for_tests();
    config.evm_timeout = std::time::Duration::from_millis(20);
    config.rpc.gas_cap = 2_000_000_000;
    let node = TestNode::start_with(config);
    let target = "0x00000000000000000000000000000000000c0de1";
    node.ok("anvil_setCode", json!([target, code])).await;
    let started = std::time::Instant::now();
    let (code, message, _) =
        node.err("eth_call", json!([{"to": target, "gas": "0x77359400"}, "latest"])).await;
    assert_eq!(code, -32002, "{message}");
    assert!(message.contains("timeout"), "{message}");
    assert!(started.elapsed() < std::time::Duration::from_secs(5), "{:?}", started.elapsed());
}

/// The time cap holds for code with no jump at all: a contract that calls itself fifty times
/// in a row makes a tree of millions of frames within the gas (about 28 s of work here), which
/// a cap kept only at jumps would not stop.
#[actix::test]
async fn a_call_tree_without_jumps_is_stopped_by_the_evm_time_cap() {
    // PUSH0 x5 (no value, no data), ADDRESS, GAS, CALL, POP: a call to itself with all its gas.
    assert_stopped_by_the_time_cap(format!("0x{}00", "5f5f5f5f5f305af150".repeat(50))).await;
}

/// ... and for straight-line code with neither a jump nor a call, where each instruction is
/// heavy: 200 hashes of 4 MiB of memory (190M gas, over a second of work here) are stopped by
/// a 20 ms cap, because a hash counts towards it by its size. (A cap that read the clock every
/// 4,096 instructions, as the inspector before it did, never read it in these 800.)
#[actix::test]
async fn straight_line_hashing_is_stopped_by_the_evm_time_cap() {
    // PUSH4 0x00400000, PUSH0, KECCAK256, POP: hash the first 4 MiB of memory, drop the hash.
    assert_stopped_by_the_time_cap(format!("0x{}00", "63004000005f2050".repeat(200))).await;
}

/// A size operand no memory could hold (2^256 - 1 bytes to hash) is counted towards the time cap
/// without overflow, and the call fails out of gas as any EVM's does: no executor panic.
#[actix::test]
async fn a_hash_of_an_impossible_size_is_out_of_gas() {
    let node = TestNode::start();
    // PUSH32 2^256-1 (the size), PUSH0 (the offset), KECCAK256, STOP.
    let code = format!("0x7f{}5f2000", "ff".repeat(32));
    let target = "0x00000000000000000000000000000000000c0de3";
    node.ok("anvil_setCode", json!([target, code])).await;
    let (code, message, _) = node.err("eth_call", json!([{"to": target}, "latest"])).await;
    assert_eq!((code, message.as_str()), (-32000, "out of gas"));
    assert_eq!(node.ok("eth_blockNumber", json!([])).await, "0x0", "the node still answers");
}

/// The executors' read cache is keyed by state root: a dev patch or a revert changes what a
/// call sees at once, with no stale read from a warm cache.
#[actix::test]
async fn calls_see_patches_and_reverts_at_once() {
    or_skip!(crate::conformance::conformance_dir());
    let node = TestNode::start();
    let token = node.deploy_bench_token().await;
    let total_supply = json!([{"to": token, "data": "0x18160ddd"}, "latest"]);
    let word = |n: u64| format!("0x{n:064x}");
    let original = node.ok("eth_call", total_supply.clone()).await;
    // Warm both executor threads' caches.
    for _ in 0..4 {
        assert_eq!(node.ok("eth_call", total_supply.clone()).await, original);
    }
    node.ok("anvil_setStorageAt", json!([token, "0x0", word(7)])).await;
    for _ in 0..4 {
        assert_eq!(node.ok("eth_call", total_supply.clone()).await, word(7), "patch seen at once");
    }
    let snapshot = node.ok("evm_snapshot", json!([])).await;
    node.ok("anvil_setStorageAt", json!([token, "0x0", word(9)])).await;
    node.ok("evm_mine", json!([])).await;
    for _ in 0..4 {
        assert_eq!(node.ok("eth_call", total_supply.clone()).await, word(9));
    }
    assert_eq!(node.ok("evm_revert", json!([snapshot])).await, true);
    for _ in 0..4 {
        assert_eq!(node.ok("eth_call", total_supply.clone()).await, word(7), "revert seen at once");
    }
}

#[actix::test]
async fn concurrent_sends_from_one_account_get_consecutive_nonces() {
    // A test suite that fires `Promise.all` of sends from one account: every one must land,
    // whether the node holds the key or the account is impersonated.
    let mut config = NodeConfig::for_tests();
    config.automine = false;
    let node = TestNode::start_with(config);
    let alice = node.signer(0).address();
    let whale = Address::repeat_byte(0x77);
    let bob = node.signer(1).address();
    node.ok("anvil_setBalance", json!([whale, ONE_ETH_HEX])).await;
    node.ok("anvil_impersonateAccount", json!([whale])).await;

    let sends = [alice, whale].into_iter().flat_map(|from| {
        // With gas given, so that only the nonce is left for the node to choose.
        (0..8).map(move |_| json!([{"from": from, "to": bob, "value": "0x1", "gas": "0x5208"}]))
    });
    let sends: Vec<_> = sends.map(|params| node.call("eth_sendTransaction", params)).collect();
    for reply in futures_util::future::join_all(sends).await {
        assert!(reply["result"].is_string(), "every send is admitted: {reply}");
    }
    for from in [alice, whale] {
        assert_eq!(node.ok("eth_getTransactionCount", json!([from, "pending"])).await, "0x8");
    }
    node.ok("evm_mine", json!([])).await;
    for from in [alice, whale] {
        assert_eq!(node.ok("eth_getTransactionCount", json!([from, "latest"])).await, "0x8");
    }
}

/// A client that keeps its HTTP connection (Hardhat's, through undici) and reuses it after a
/// pause finds it open, and is told how long it stays so (`Keep-Alive: timeout=`).
#[test]
fn an_idle_keep_alive_connection_stays_open_and_says_for_how_long() {
    use std::io::{Read, Write};
    let node = crate::process::NodeProcess::spawn(&["--http.port", "0"]);
    let mut stream = std::net::TcpStream::connect(node.addr).expect("connects");
    let body = r#"{"jsonrpc":"2.0","id":1,"method":"eth_chainId","params":[]}"#;
    let ask = |stream: &mut std::net::TcpStream| -> String {
        write!(
            stream,
            "POST / HTTP/1.1\r\nHost: {}\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
            node.addr,
            body.len()
        )
        .expect("sends");
        let mut answer = vec![0; 4096];
        let n = stream.read(&mut answer).expect("an answer on the same connection");
        String::from_utf8_lossy(&answer[..n]).into_owned()
    };
    let first = ask(&mut stream);
    assert!(first.to_lowercase().contains("keep-alive: timeout=60"), "{first}");
    assert!(first.contains("0x7a69"), "{first}");
    // Idle past actix-web's default keep-alive (5 s), which closed it unannounced. This test
    // waits on purpose: the idle time is what it checks.
    std::thread::sleep(std::time::Duration::from_secs(6));
    assert!(ask(&mut stream).contains("0x7a69"), "the connection was kept");
    assert_eq!(hearth_rpc::KEEP_ALIVE, std::time::Duration::from_secs(60));
}

#[actix::test]
async fn send_raw_transaction_sync_answers_the_receipt_or_times_out() {
    let node = TestNode::start();
    let alice = node.signer(0);
    let bob = node.signer(1).address();
    // Automine: the receipt at once, as eth_getTransactionReceipt gives it.
    let raw = hex(&fixtures::transfer(&alice, 0, bob, 1).encoded_2718());
    let receipt = node.ok("eth_sendRawTransactionSync", json!([raw])).await;
    let hash = receipt["transactionHash"].clone();
    assert_eq!(receipt, node.ok("eth_getTransactionReceipt", json!([hash])).await);
    assert_eq!(receipt["status"], "0x1");
    // Without mining: code 4 with the hash once the timeout passes; the transaction stays
    // pooled and the next block holds it.
    node.ok("evm_setAutomine", json!([false])).await;
    let raw = fixtures::transfer(&alice, 1, bob, 2).encoded_2718();
    let (code, message, data) =
        node.err("eth_sendRawTransactionSync", json!([hex(&raw), 30])).await;
    assert_eq!((code, message.as_str()), (4, "Transaction confirmation timeout"));
    let pending = node.ok("eth_getTransactionByHash", json!([data])).await;
    assert_eq!(pending["blockNumber"], Value::Null);
    node.ok("evm_mine", json!([])).await;
    assert_eq!(node.ok("eth_getTransactionReceipt", json!([data])).await["status"], "0x1");
    // A bad transaction is refused as by eth_sendRawTransaction, with nothing to wait for.
    let refused = node.err("eth_sendRawTransaction", json!(["0x02"])).await;
    assert_eq!(node.err("eth_sendRawTransactionSync", json!(["0x02"])).await, refused);
}
