//! The mempool's bounds (count and bytes), batch admission, eviction, size and fee rules, and
//! the txpool_* methods.

use alloy_consensus::{SignableTransaction, TxEip1559, TxEnvelope};
use alloy_eips::eip2718::Encodable2718;
use alloy_primitives::{Address, B256, Bytes, TxKind, U256};
use alloy_signer::SignerSync;
use alloy_signer_local::PrivateKeySigner;
use hearth::config::NodeConfig;
use hearth_messages::TxError;
use hearth_messages::mempool::{PoolSize, SubmitTx, SubmitTxs};
use serde_json::{Value, json};

use crate::support::{TestNode, fixtures, quantity};

const GWEI: u128 = 1_000_000_000;

fn manual(max_count: usize) -> NodeConfig {
    let mut config = NodeConfig::for_tests();
    config.automine = false;
    config.txpool_max_count = max_count.try_into().expect("non-zero");
    config
}

/// A transfer paying `max_fee` per gas (tip at most 1 gwei).
fn priced(signer: &PrivateKeySigner, nonce: u64, max_fee: u128) -> TxEnvelope {
    tipped(signer, nonce, max_fee, max_fee.min(GWEI))
}

/// A transfer with fee cap `max_fee` and tip `tip`.
fn tipped(signer: &PrivateKeySigner, nonce: u64, max_fee: u128, tip: u128) -> TxEnvelope {
    let tx = TxEip1559 {
        chain_id: 31337,
        nonce,
        gas_limit: 21_000,
        max_fee_per_gas: max_fee,
        max_priority_fee_per_gas: tip,
        to: TxKind::Call(Address::repeat_byte(0xb0)),
        value: U256::from(1),
        access_list: Default::default(),
        input: Bytes::new(),
    };
    let signature = signer.sign_hash_sync(&tx.signature_hash()).expect("signs");
    tx.into_signed(signature).into()
}

fn raw(tx: &TxEnvelope) -> String {
    format!("0x{}", alloy_primitives::hex::encode(tx.encoded_2718()))
}

#[actix::test]
async fn a_batch_that_would_cross_the_count_bound_is_refused_whole() {
    let node = TestNode::start_with(manual(3));
    let pool = &node.node.mempool;
    let (alice, bob) = (node.signer(0), node.signer(1));
    let first = vec![fixtures::transfer(&alice, 0, bob.address(), 1), priced(&bob, 0, 5 * GWEI)];
    let answers = pool.send(SubmitTxs { txs: first }).await.unwrap().unwrap();
    assert!(answers.iter().all(Result::is_ok), "{answers:?}");

    let over = vec![fixtures::transfer(&alice, 1, bob.address(), 1), priced(&bob, 1, 5 * GWEI)];
    let refused = pool.send(SubmitTxs { txs: over }).await.unwrap();
    assert_eq!(refused, Err(TxError::PoolFull));
    assert_eq!(pool.send(PoolSize).await.unwrap(), (2, 0), "the pool is exactly as it was");

    // Items fail on their own; only valid ones count against the bound.
    let mixed = vec![fixtures::transfer(&alice, 0, bob.address(), 9), priced(&bob, 1, 5 * GWEI)];
    let answers = pool.send(SubmitTxs { txs: mixed }).await.unwrap().unwrap();
    assert_eq!(answers[0], Err(TxError::ReplacementUnderpriced));
    assert!(answers[1].is_ok());
    assert_eq!(pool.send(PoolSize).await.unwrap(), (3, 0));
}

#[actix::test]
async fn the_byte_bound_counts_encoded_transactions() {
    let mut config = manual(100);
    let alice = PrivateKeySigner::from_bytes(&B256::repeat_byte(1)).unwrap();
    let size = priced(&alice, 0, GWEI).encode_2718_len();
    config.txpool_max_bytes = 2 * size + size / 2;
    let node = TestNode::start_with(config);
    let pool = &node.node.mempool;
    let (a, b, c) = (node.signer(0), node.signer(1), node.signer(2));
    pool.send(SubmitTx { tx: priced(&a, 0, 2 * GWEI) }).await.unwrap().unwrap();
    pool.send(SubmitTx { tx: priced(&b, 0, 2 * GWEI) }).await.unwrap().unwrap();
    // Not paying more than the cheapest: refused, nothing evicted.
    let same = pool.send(SubmitTx { tx: priced(&c, 0, 2 * GWEI) }).await.unwrap();
    assert_eq!(same, Err(TxError::PoolFull));
    assert_eq!(pool.send(PoolSize).await.unwrap(), (2, 0));
    // Paying more evicts one cheapest transaction and takes its room.
    pool.send(SubmitTx { tx: priced(&c, 0, 3 * GWEI) }).await.unwrap().unwrap();
    assert_eq!(pool.send(PoolSize).await.unwrap(), (2, 0));
}

#[actix::test]
async fn a_richer_newcomer_evicts_the_cheapest_with_its_followers() {
    let node = TestNode::start_with(manual(3));
    let pool = &node.node.mempool;
    let (alice, bob, carol, dave) =
        (node.signer(0), node.signer(1), node.signer(2), node.signer(3));
    let a0 = pool.send(SubmitTx { tx: priced(&alice, 0, 2 * GWEI) }).await.unwrap().unwrap();
    let a1 = pool.send(SubmitTx { tx: priced(&alice, 1, 5 * GWEI) }).await.unwrap().unwrap();
    let b0 = pool.send(SubmitTx { tx: priced(&bob, 0, 10 * GWEI) }).await.unwrap().unwrap();

    let c0 = pool.send(SubmitTx { tx: priced(&carol, 0, 20 * GWEI) }).await.unwrap().unwrap();
    let content = node.ok("txpool_content", json!([])).await;
    let pending = content["pending"].as_object().unwrap();
    let hashes: Vec<&str> = pending
        .values()
        .flat_map(|n| n.as_object().unwrap().values())
        .map(|tx| tx["hash"].as_str().unwrap())
        .collect();
    assert_eq!(hashes.len(), 2, "alice's nonce 1 could no longer run, so it went too: {content}");
    for gone in [a0, a1] {
        assert!(!hashes.contains(&gone.to_string().as_str()));
    }
    for kept in [b0, c0] {
        assert!(hashes.contains(&kept.to_string().as_str()));
    }
    // Room for one more; then a cheaper one is refused and changes nothing.
    pool.send(SubmitTx { tx: priced(&dave, 0, 3 * GWEI) }).await.unwrap().unwrap();
    let cheap = pool.send(SubmitTx { tx: priced(&alice, 0, 2 * GWEI) }).await.unwrap();
    assert_eq!(cheap, Err(TxError::PoolFull));
    assert_eq!(pool.send(PoolSize).await.unwrap(), (3, 0));
}

#[actix::test]
async fn oversized_transactions_are_rejected_and_low_fee_caps_wait() {
    let node = TestNode::start_with(manual(100));
    let pool = &node.node.mempool;
    let alice = node.signer(0);
    let big = fixtures::eip1559(
        &alice,
        0,
        Some(Address::ZERO),
        U256::ZERO,
        Bytes::from(vec![1u8; 130 * 1024]),
        29_000_000,
    );
    let err = pool.send(SubmitTx { tx: big }).await.unwrap().unwrap_err();
    assert!(matches!(err, TxError::Oversized { max: 131_072, .. }), "{err}");
    assert!(err.to_string().starts_with("oversized data"));

    // The next base fee is 0.875 gwei: a 0.5 gwei fee cap is kept, queued, not rejected.
    pool.send(SubmitTx { tx: priced(&alice, 0, GWEI / 2) }).await.unwrap().unwrap();
    assert_eq!(
        node.ok("txpool_status", json!([])).await,
        json!({"pending": "0x0", "queued": "0x1"})
    );
    node.ok("evm_mine", json!([])).await;
    assert_eq!(node.ok("txpool_status", json!([])).await["queued"], "0x1", "still waiting");
}

#[actix::test]
async fn txpool_methods_show_pending_and_queued() {
    let node = TestNode::start_with(manual(100));
    let alice = node.signer(0);
    let bob = node.signer(1).address();
    let first = fixtures::transfer(&alice, 0, bob, 1);
    let gapped = fixtures::transfer(&alice, 2, bob, 1);
    node.ok("eth_sendRawTransaction", json!([raw(&first)])).await;
    node.ok("eth_sendRawTransaction", json!([raw(&gapped)])).await;

    assert_eq!(
        node.ok("txpool_status", json!([])).await,
        json!({"pending": "0x1", "queued": "0x1"})
    );
    let sender = alice.address().to_string();
    let content = node.ok("txpool_content", json!([])).await;
    assert_eq!(content["pending"][&sender]["0"]["hash"], first.tx_hash().to_string());
    assert_eq!(content["queued"][&sender]["2"]["nonce"], "0x2");
    assert_eq!(content["pending"][&sender]["0"]["blockNumber"], json!(null));
    let inspect = node.ok("txpool_inspect", json!([])).await;
    assert_eq!(
        inspect["pending"][&sender]["0"],
        format!("{bob}: 1 wei + 21000 gas × 10000000000 wei")
    );
    assert_eq!(
        inspect["queued"][&sender]["2"],
        format!("{bob}: 1 wei + 21000 gas × 10000000000 wei")
    );

    for method in ["txpool_status", "txpool_content", "txpool_inspect"] {
        assert_eq!(node.err(method, json!([1])).await.0, -32602, "{method}");
    }
}

#[actix::test]
async fn a_json_rpc_batch_of_raw_transactions_is_one_pool_batch() {
    let mut config = NodeConfig::for_tests();
    config.txpool_max_count = 2.try_into().unwrap();
    let node = TestNode::start_with(config);
    let (alice, bob) = (node.signer(0), node.signer(1));
    let item = |id: u64, tx: &TxEnvelope| json!({"jsonrpc": "2.0", "id": id, "method": "eth_sendRawTransaction", "params": [raw(tx)]});
    let three = json!([
        item(1, &fixtures::transfer(&alice, 0, bob.address(), 1)),
        item(2, &fixtures::transfer(&alice, 1, bob.address(), 1)),
        {"jsonrpc": "2.0", "id": 9, "method": "eth_chainId", "params": []},
        item(3, &fixtures::transfer(&bob, 0, alice.address(), 1)),
    ]);
    let reply = node.raw(&three.to_string()).await.unwrap();
    for i in [0, 1, 3] {
        assert_eq!(reply[i]["error"]["code"], -32005, "{reply}");
        assert_eq!(reply[i]["error"]["message"], "txpool is full");
    }
    assert_eq!(reply[2]["result"], "0x7a69", "other items answer as usual");
    assert_eq!(node.block_number().await, 0, "nothing was admitted");

    // Two fit: both admitted at once and, with automine, mined into one block.
    let bad = json!({"jsonrpc": "2.0", "id": 5, "method": "eth_sendRawTransaction", "params": ["0x02ff"]});
    let two = json!([
        item(1, &fixtures::transfer(&alice, 0, bob.address(), 1)),
        bad,
        item(2, &fixtures::transfer(&bob, 0, alice.address(), 1)),
    ]);
    let reply = node.raw(&two.to_string()).await.unwrap();
    assert_eq!(reply[1]["error"]["code"], -32000, "an undecodable item fails alone: {reply}");
    assert_eq!(node.block_number().await, 1);
    for i in [0, 2] {
        let receipt = node.ok("eth_getTransactionReceipt", json!([reply[i]["result"]])).await;
        assert_eq!(quantity(&receipt["blockNumber"]), 1);
    }
}

#[actix::test]
async fn blocks_take_the_best_paying_first_and_what_does_not_fit_waits() {
    let mut config = manual(100);
    config.gas_limit = 50_000;
    let node = TestNode::start_with(config);
    let (a, b, c) = (node.signer(0), node.signer(1), node.signer(2));
    let mut hashes = Vec::new();
    for (signer, tip) in [(&a, GWEI), (&b, 3 * GWEI), (&c, 2 * GWEI)] {
        let tx = tipped(signer, 0, 10 * GWEI, tip);
        hashes.push(node.ok("eth_sendRawTransaction", json!([raw(&tx)])).await);
    }
    let [cheap, rich, mid] = <[Value; 3]>::try_from(hashes).unwrap();
    node.ok("evm_mine", json!([])).await;
    let block = node.ok("eth_getBlockByNumber", json!(["0x1", false])).await;
    let txs = block["transactions"].as_array().unwrap();
    assert_eq!(txs, &vec![rich, mid], "two transfers fill a 50,000 gas block, best tip first");
    assert_eq!(node.ok("txpool_status", json!([])).await["pending"], "0x1", "the third waits");
    node.ok("evm_mine", json!([])).await;
    let block = node.ok("eth_getBlockByNumber", json!(["0x2", false])).await;
    assert_eq!(block["transactions"], json!([cheap]), "and goes in the next block");
    assert_eq!(node.ok("txpool_status", json!([])).await["pending"], "0x0");
}

#[actix::test]
async fn txpool_ext_get_txs_lists_what_the_next_block_takes_and_leaves_it_pooled() {
    let node = TestNode::start_with(manual(100));
    let (alice, bob) = (node.signer(0), node.signer(1));
    // Bob's pays more, so it comes first; Alice's nonce 5 waits on a gap.
    let sent = [
        tipped(&alice, 0, 20 * GWEI, GWEI),
        tipped(&bob, 0, 20 * GWEI, 3 * GWEI),
        tipped(&alice, 1, 20 * GWEI, GWEI),
        priced(&alice, 5, 20 * GWEI),
    ];
    for tx in &sent {
        node.ok("eth_sendRawTransaction", json!([raw(tx)])).await;
    }
    let listed = node.ok("txpoolExt_getTxs", json!([])).await;
    let expected = json!([raw(&sent[1]), raw(&sent[0]), raw(&sent[2])]);
    assert_eq!(listed, expected);
    assert_eq!(
        node.ok("txpool_status", json!([])).await,
        json!({"pending": "0x3", "queued": "0x1"})
    );
    let (code, _, _) = node.err("txpoolExt_getTxs", json!([1])).await;
    assert_eq!(code, -32602);
    node.ok("evm_mine", json!([])).await;
    assert_eq!(node.ok("txpoolExt_getTxs", json!([])).await, json!([]));
}
