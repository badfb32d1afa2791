//! The pool admits only what block execution would take: each transaction a hostile tester got
//! admitted and then saw vanish at the next block (issue 15) is refused at
//! eth_sendRawTransaction with geth's code and message, leaving pool, nonce and chain as they
//! were. What block building refuses anyway (the state changed after admission) is reported:
//! a counter on /metrics, null from eth_getTransactionByHash, and the nonce freed.

use alloy_consensus::{SignableTransaction, TxEip1559, TxEip7702, TxEnvelope};
use alloy_eips::eip2718::Encodable2718;
use alloy_primitives::{Address, B256, Bytes, Signature, TxKind, U256};
use alloy_signer::SignerSync;
use alloy_signer_local::PrivateKeySigner;
use hearth::config::NodeConfig;
use hearth_messages::mempool::{GetPoolCounters, PoolCounters};
use hearth_rpc::Extensions;
use serde_json::{Value, json};

use crate::support::TestNode;

const CHAIN_ID: u64 = 31337;
const GWEI: u128 = 1_000_000_000;

/// An EIP-1559 transfer of 1 wei at 10 gwei from `signer`, edited by `edit`, then signed.
fn eip1559(signer: &PrivateKeySigner, nonce: u64, edit: impl FnOnce(&mut TxEip1559)) -> TxEnvelope {
    let mut tx = TxEip1559 {
        chain_id: CHAIN_ID,
        nonce,
        gas_limit: 21_000,
        max_fee_per_gas: 10 * GWEI,
        max_priority_fee_per_gas: GWEI,
        to: TxKind::Call(Address::repeat_byte(0xb0)),
        value: U256::from(1),
        access_list: Default::default(),
        input: Bytes::new(),
    };
    edit(&mut tx);
    let signature = signer.sign_hash_sync(&tx.signature_hash()).expect("signs");
    tx.into_signed(signature).into()
}

fn sign<T: SignableTransaction<Signature>>(signer: &PrivateKeySigner, tx: T) -> TxEnvelope
where
    alloy_consensus::Signed<T>: Into<TxEnvelope>,
{
    let signature = signer.sign_hash_sync(&tx.signature_hash()).expect("signs");
    tx.into_signed(signature).into()
}

fn raw(tx: &TxEnvelope) -> String {
    format!("0x{}", alloy_primitives::hex::encode(tx.encoded_2718()))
}

fn manual() -> NodeConfig {
    let mut config = NodeConfig::for_tests();
    config.automine = false;
    config
}

/// Sends `tx` and checks it is refused with -32000 and `message`, and that nothing changed:
/// the pool is empty, the sender's pending nonce is still 0, no block was made; then that the
/// nonce is free: a valid transfer with it is admitted and mined.
async fn assert_refused_cleanly(
    node: &TestNode,
    signer: &PrivateKeySigner,
    tx: &TxEnvelope,
    message: &str,
) {
    let sender = signer.address();
    let head = node.block_number().await;
    let (code, got, _) = node.err("eth_sendRawTransaction", json!([raw(tx)])).await;
    assert_eq!((code, got.as_str()), (-32000, message));
    assert_eq!(
        node.ok("txpool_status", json!([])).await,
        json!({"pending": "0x0", "queued": "0x0"})
    );
    assert_eq!(node.ok("eth_getTransactionCount", json!([sender, "pending"])).await, "0x0");
    assert_eq!(node.ok("eth_getTransactionByHash", json!([tx.tx_hash()])).await, Value::Null);
    assert_eq!(node.block_number().await, head, "no block was made");

    let valid = eip1559(signer, 0, |_| {});
    let hash = node.ok("eth_sendRawTransaction", json!([raw(&valid)])).await;
    let receipt = node.ok("eth_getTransactionReceipt", json!([hash])).await;
    assert_eq!(receipt["status"], "0x1", "the freed nonce took a valid transfer: {receipt}");
}

#[actix::test]
async fn a_type_4_transaction_without_authorizations_is_refused() {
    let node = TestNode::start();
    let alice = node.signer(0);
    let tx = sign(
        &alice,
        TxEip7702 {
            chain_id: CHAIN_ID,
            nonce: 0,
            gas_limit: 100_000,
            max_fee_per_gas: 10 * GWEI,
            max_priority_fee_per_gas: GWEI,
            to: Address::repeat_byte(0xb0),
            value: U256::ZERO,
            access_list: Default::default(),
            authorization_list: vec![],
            input: Bytes::new(),
        },
    );
    assert_refused_cleanly(&node, &alice, &tx, "EIP-7702 transaction with empty auth list").await;
}

#[actix::test]
async fn initcode_over_the_eip_3860_limit_is_refused() {
    let node = TestNode::start();
    let alice = node.signer(0);
    let tx = eip1559(&alice, 0, |tx| {
        tx.to = TxKind::Create;
        tx.value = U256::ZERO;
        tx.gas_limit = 10_000_000;
        tx.input = vec![0u8; 49_153].into();
    });
    let message = "max initcode size exceeded: code size 49153 limit 49152";
    assert_refused_cleanly(&node, &alice, &tx, message).await;
}

#[actix::test]
async fn a_value_of_2_pow_256_minus_1_is_refused_as_unaffordable() {
    let node = TestNode::start();
    let alice = node.signer(0);
    let tx = eip1559(&alice, 0, |tx| tx.value = U256::MAX);
    let message = format!(
        "insufficient funds for gas * price + value: address {} required balance exceeds 256 bits",
        alice.address()
    );
    assert_refused_cleanly(&node, &alice, &tx, &message).await;
    // The values that were refused before still are, with the balance in the message.
    for value in [U256::from(10).pow(U256::from(30)), U256::from(1) << 255] {
        let tx = eip1559(&alice, 1, |tx| tx.value = value);
        let (code, message, _) = node.err("eth_sendRawTransaction", json!([raw(&tx)])).await;
        assert_eq!(code, -32000);
        assert!(
            message.starts_with("insufficient funds for gas * price + value: address"),
            "{message}"
        );
    }
}

#[actix::test]
async fn a_nonce_of_2_pow_64_minus_1_is_refused_not_queued() {
    let node = TestNode::start();
    let alice = node.signer(0);
    let tx = eip1559(&alice, u64::MAX, |_| {});
    assert_refused_cleanly(&node, &alice, &tx, "nonce has max value").await;
}

#[actix::test]
async fn pooled_transactions_may_not_overdraw_the_balance_together() {
    let node = TestNode::start_with(manual());
    let key = PrivateKeySigner::from_bytes(&B256::repeat_byte(0x5a)).expect("key");
    let cost = U256::from(21_000 * 10 * GWEI + 1);
    let balance = cost * U256::from(2) - U256::from(1);
    node.ok("anvil_setBalance", json!([key.address(), balance])).await;

    let first = eip1559(&key, 0, |_| {});
    node.ok("eth_sendRawTransaction", json!([raw(&first)])).await;
    let second = eip1559(&key, 1, |_| {});
    let (code, message, _) = node.err("eth_sendRawTransaction", json!([raw(&second)])).await;
    assert_eq!(code, -32000);
    assert_eq!(
        message,
        format!(
            "insufficient funds for gas * price + value: balance {balance}, queued cost {cost}, \
             tx cost {cost}, overshot 1"
        )
    );
    // A replacement of the first counts only what it adds.
    let bumped = eip1559(&key, 0, |tx| {
        tx.max_fee_per_gas = 11 * GWEI;
        tx.max_priority_fee_per_gas = 2 * GWEI;
    });
    node.ok("eth_sendRawTransaction", json!([raw(&bumped)])).await;
    node.ok("evm_mine", json!([])).await;
    let receipt = node.ok("eth_getTransactionReceipt", json!([bumped.tx_hash()])).await;
    assert_eq!(receipt["status"], "0x1");
}

#[actix::test]
async fn a_transaction_block_building_refuses_is_reported_and_its_nonce_freed() {
    let node = TestNode::start_with(manual());
    let (server, addr) = node.node.serve_rpc(Extensions::default()).expect("binds");
    let handle = server.handle();
    actix_web::rt::spawn(server);

    let key = PrivateKeySigner::from_bytes(&B256::repeat_byte(0x5b)).expect("key");
    let sender = key.address();
    node.ok("anvil_setBalance", json!([sender, U256::from(10).pow(U256::from(18))])).await;
    let first = eip1559(&key, 0, |_| {});
    let second = eip1559(&key, 1, |_| {});
    for tx in [&first, &second] {
        node.ok("eth_sendRawTransaction", json!([raw(tx)])).await;
    }
    // The balance goes after admission: block building now refuses nonce 0.
    node.ok("anvil_setBalance", json!([sender, "0x0"])).await;
    node.ok("evm_mine", json!([])).await;

    assert_eq!(node.ok("eth_getTransactionByHash", json!([first.tx_hash()])).await, Value::Null);
    assert_eq!(node.ok("eth_getTransactionCount", json!([sender, "pending"])).await, "0x0");
    // Nonce 1 waits behind the gap, as in geth.
    assert_eq!(
        node.ok("txpool_status", json!([])).await,
        json!({"pending": "0x0", "queued": "0x1"})
    );
    let counters = node.node.mempool.send(GetPoolCounters).await.expect("pool answers");
    assert_eq!(counters, PoolCounters { dropped_invalid: 1 });
    let metrics = tokio::task::spawn_blocking(move || crate::process::get(addr, "/metrics"))
        .await
        .expect("joins")
        .expect("GET /metrics");
    assert!(metrics.1.contains("\nhearth_mempool_dropped_invalid_total 1\n"), "{}", metrics.1);

    // Refilled, the sender fills the gap and both run.
    node.ok("anvil_setBalance", json!([sender, U256::from(10).pow(U256::from(18))])).await;
    let refill = eip1559(&key, 0, |tx| tx.value = U256::from(2));
    node.ok("eth_sendRawTransaction", json!([raw(&refill)])).await;
    node.ok("evm_mine", json!([])).await;
    for tx in [&refill, &second] {
        let receipt = node.ok("eth_getTransactionReceipt", json!([tx.tx_hash()])).await;
        assert_eq!(receipt["status"], "0x1", "{receipt}");
    }
    handle.stop(false).await;
}

/// Cheap eth_calls an HTTP connection sends on their own are answered on the RPC worker's own
/// thread and counted there; a batch's items go to the pool (its admission governs them); with
/// `--executor.inline-budget 0` every call goes to the pool and no counter is shown.
#[actix::test]
async fn cheap_calls_are_answered_on_the_rpc_worker_and_counted() {
    for inline in [true, false] {
        let mut config = NodeConfig::for_tests();
        if !inline {
            config.inline_budget = None;
        }
        let node = TestNode::start_with(config);
        let (server, addr) = node.node.serve_rpc(Extensions::default()).expect("binds");
        let handle = server.handle();
        actix_web::rt::spawn(server);
        // The identity precompile echoes its input: a call with an answer to check.
        let call = json!({"jsonrpc": "2.0", "id": 1, "method": "eth_call",
            "params": [{"to": "0x0000000000000000000000000000000000000004", "data": "0x2a"}, "latest"]});
        let batch = json!([call, call]);
        let (sole, batch, metrics) = tokio::task::spawn_blocking(move || {
            let sole: Vec<_> = (0..3)
                .map(|_| crate::process::post(addr, &call.to_string()).expect("POST"))
                .collect();
            let batch = crate::process::post(addr, &batch.to_string()).expect("POST batch");
            (sole, batch, crate::process::get(addr, "/metrics").expect("GET /metrics").1)
        })
        .await
        .expect("joins");
        for (status, body) in sole {
            assert_eq!(
                (status, serde_json::from_str::<Value>(&body).unwrap()["result"].clone()),
                (200, json!("0x2a")),
                "{body}"
            );
        }
        let answers: Value = serde_json::from_str(&batch.1).unwrap();
        assert_eq!(answers[0]["result"], "0x2a", "{answers}");
        assert_eq!(answers[1]["result"], "0x2a", "{answers}");
        // The batch's two calls are in neither count: they never reached the inline runner.
        let answered = "\nhearth_executor_inline_calls_total{outcome=\"answered\"} 3\n";
        let handed_on = "\nhearth_executor_inline_calls_total{outcome=\"handed_on\"} 0\n";
        if inline {
            assert!(metrics.contains(answered) && metrics.contains(handed_on), "{metrics}");
        } else {
            assert!(!metrics.contains("hearth_executor_inline_calls_total"), "{metrics}");
        }
        handle.stop(false).await;
    }
}
