//! Blob (EIP-4844) transactions over eth_sendRawTransaction: the network form with its sidecar
//! is checked (KZG proofs, versioned hashes, blob count, blob fee), pooled with the sidecar and
//! mined without it; blob gas in headers, receipts, eth_blobBaseFee and eth_feeHistory; the
//! pool's byte budget counts sidecars.

use alloy_consensus::{
    SidecarBuilder, SignableTransaction, Signed, SimpleCoder, TxEip4844, TxEip4844Variant,
    TxEnvelope,
};
use alloy_eips::eip2718::Encodable2718;
use alloy_eips::eip4844::{BlobTransactionSidecar, DATA_GAS_PER_BLOB};
use alloy_eips::eip7840::BlobParams;
use alloy_primitives::{Address, B256, Bytes, U256};
use alloy_signer::SignerSync;
use alloy_signer_local::PrivateKeySigner;
use hearth::config::NodeConfig;
use hearth_messages::mempool::without_sidecar;
use serde_json::{Value, json};

use crate::support::{TestNode, quantity};

const GWEI: u128 = 1_000_000_000;

fn manual() -> NodeConfig {
    let mut config = NodeConfig::for_tests();
    config.automine = false;
    config
}

/// A sidecar of `count` blobs (the same data in each: commitments may repeat).
fn sidecar(count: usize) -> BlobTransactionSidecar {
    let one: BlobTransactionSidecar =
        SidecarBuilder::<SimpleCoder>::from_slice(b"hearth blob").build().expect("builds");
    BlobTransactionSidecar {
        blobs: vec![one.blobs[0]; count],
        commitments: vec![one.commitments[0]; count],
        proofs: vec![one.proofs[0]; count],
    }
}

/// A signed blob transaction with `sidecar` attached (network form), hashes from the sidecar
/// unless `hashes` is given.
fn blob_tx(
    signer: &PrivateKeySigner,
    nonce: u64,
    blob_fee: u128,
    sidecar: BlobTransactionSidecar,
    hashes: Option<Vec<B256>>,
) -> TxEnvelope {
    let tx = TxEip4844 {
        chain_id: 31337,
        nonce,
        gas_limit: 21_000,
        max_fee_per_gas: 20 * GWEI,
        max_priority_fee_per_gas: GWEI,
        to: Address::repeat_byte(0xb0),
        value: U256::ZERO,
        access_list: Default::default(),
        blob_versioned_hashes: hashes.unwrap_or_else(|| sidecar.versioned_hashes().collect()),
        max_fee_per_blob_gas: blob_fee,
        input: Bytes::new(),
    };
    let signature = signer.sign_hash_sync(&tx.signature_hash()).expect("signs");
    let hash = *tx.clone().into_signed(signature).hash();
    let variant: TxEip4844Variant = tx.with_sidecar(sidecar).into();
    TxEnvelope::Eip4844(Signed::new_unchecked(variant, signature, hash))
}

fn raw(tx: &TxEnvelope) -> String {
    format!("0x{}", alloy_primitives::hex::encode(tx.encoded_2718()))
}

/// txpool_status as (pending, queued).
async fn pool_status(node: &TestNode) -> (u64, u64) {
    let status = node.ok("txpool_status", json!([])).await;
    (quantity(&status["pending"]), quantity(&status["queued"]))
}

#[actix::test]
async fn a_blob_transaction_is_pooled_with_its_sidecar_and_mined_without_it() {
    let node = TestNode::start_with(manual());
    let alice = node.signer(0);
    let tx = blob_tx(&alice, 0, GWEI, sidecar(1), None);
    let hash = node.ok("eth_sendRawTransaction", json!([raw(&tx)])).await;
    assert_eq!(hash, json!(tx.tx_hash()));

    // Pending, it is served with its sidecar, as anvil serves it.
    let pending = node.ok("eth_getTransactionByHash", json!([hash])).await;
    assert_eq!(pending["blockNumber"], Value::Null);
    assert_eq!(pending["blobs"].as_array().map(Vec::len), Some(1), "{}", pending["commitments"]);
    assert_eq!(pending["commitments"].as_array().map(Vec::len), Some(1));
    assert_eq!(pending["proofs"].as_array().map(Vec::len), Some(1));
    let content = node.ok("txpool_content", json!([])).await;
    let sender = content["pending"].as_object().and_then(|by_sender| by_sender.values().next());
    let pooled = &sender.expect("one sender pending")["0"];
    assert_eq!(pooled["blobs"].as_array().map(Vec::len), Some(1));

    node.ok("evm_mine", json!([])).await;
    let receipt = node.ok("eth_getTransactionReceipt", json!([hash])).await;
    assert_eq!(receipt["status"], "0x1");
    assert_eq!(quantity(&receipt["blobGasUsed"]), DATA_GAS_PER_BLOB);
    assert_eq!(receipt["blobGasPrice"], "0x1");
    let block = node.ok("eth_getBlockByNumber", json!(["latest", false])).await;
    assert_eq!(quantity(&block["blobGasUsed"]), DATA_GAS_PER_BLOB);
    assert_eq!(block["excessBlobGas"], "0x0");

    // Mined, it is the canonical transaction: no sidecar in the answer, the raw transaction or
    // the block, whose hash covers the canonical form.
    let mined = node.ok("eth_getTransactionByHash", json!([hash])).await;
    assert!(mined.get("blobs").is_none(), "{mined}");
    let canonical = without_sidecar(&tx);
    let raw_mined = node.ok("debug_getRawTransaction", json!([hash])).await;
    assert_eq!(raw_mined, json!(raw(&canonical)));
    let raw_block = node.ok("debug_getRawBlock", json!(["latest"])).await;
    let bytes: Bytes = serde_json::from_value(raw_block).expect("hex");
    let decoded: alloy_consensus::Block<TxEnvelope> =
        alloy_rlp::Decodable::decode(&mut bytes.as_ref()).expect("a block");
    assert_eq!(decoded.body.transactions, vec![canonical]);
    assert_eq!(json!(decoded.header.hash_slow()), block["hash"]);
    assert_eq!(pool_status(&node).await, (0, 0));
}

/// A blob transaction whose `to` is empty (a creation), which the type does not allow: built by
/// hand, since no library encodes one.
fn blob_create_raw(signer: &PrivateKeySigner) -> String {
    use alloy_rlp::Encodable;
    let side = sidecar(1);
    let hashes: Vec<B256> = side.versioned_hashes().collect();
    let mut fields = Vec::new();
    31337u64.encode(&mut fields);
    0u64.encode(&mut fields);
    GWEI.encode(&mut fields);
    (20 * GWEI).encode(&mut fields);
    100_000u64.encode(&mut fields);
    fields.push(0x80); // to: empty
    U256::ZERO.encode(&mut fields);
    Bytes::new().encode(&mut fields);
    alloy_eips::eip2930::AccessList::default().encode(&mut fields);
    GWEI.encode(&mut fields);
    hashes.encode(&mut fields);
    let mut unsigned = vec![3u8];
    alloy_rlp::Header { list: true, payload_length: fields.len() }.encode(&mut unsigned);
    unsigned.extend_from_slice(&fields);
    let signature = signer.sign_hash_sync(&alloy_primitives::keccak256(&unsigned)).expect("signs");
    let mut signed_fields = fields;
    signature.v().encode(&mut signed_fields);
    signature.r().encode(&mut signed_fields);
    signature.s().encode(&mut signed_fields);
    let mut body = Vec::new();
    alloy_rlp::Header { list: true, payload_length: signed_fields.len() }.encode(&mut body);
    body.extend_from_slice(&signed_fields);
    side.rlp_encode_fields(&mut body);
    let mut out = vec![3u8];
    alloy_rlp::Header { list: true, payload_length: body.len() }.encode(&mut out);
    out.extend_from_slice(&body);
    format!("0x{}", alloy_primitives::hex::encode(out))
}

#[actix::test]
async fn bad_blob_transactions_are_refused_and_change_nothing() {
    let node = TestNode::start_with(manual());
    let alice = node.signer(0);
    let good = sidecar(1);
    let mut wrong_proof = good.clone();
    wrong_proof.proofs[0] = sidecar_of(b"another blob").proofs[0];
    let other_hash = sidecar_of(b"another blob").versioned_hashes().collect();
    let network = raw(&blob_tx(&alice, 0, GWEI, good.clone(), None));
    let cases: Vec<(&str, String, i64, &str)> = vec![
        (
            "canonical form",
            raw(&without_sidecar(&blob_tx(&alice, 0, GWEI, good.clone(), None))),
            -32000,
            "blob transaction without its sidecar",
        ),
        (
            "wrong proof",
            raw(&blob_tx(&alice, 0, GWEI, wrong_proof, None)),
            -32000,
            "invalid blob sidecar",
        ),
        (
            "commitment not matching the versioned hash",
            raw(&blob_tx(&alice, 0, GWEI, good.clone(), Some(other_hash))),
            -32000,
            "does not match its commitment",
        ),
        // Prague allows 9 blobs per transaction.
        (
            "too many blobs",
            raw(&blob_tx(&alice, 0, GWEI, sidecar(10), None)),
            -32000,
            "too many blobs in transaction: have 10, max 9",
        ),
        ("zero blobs", raw(&blob_tx(&alice, 0, GWEI, sidecar(0), None)), -32000, "empty blobs"),
        (
            "blob fee cap below the blob base fee",
            raw(&blob_tx(&alice, 0, 0, good.clone(), None)),
            -32000,
            "max fee per blob gas less than block blob gas fee",
        ),
        // Undecodable, in geth's words ("rlp: ..."): a blob transaction has no creation form.
        ("a creation", blob_create_raw(&alice), -32000, "rlp: "),
        ("truncated sidecar", network[..network.len() - 1000].to_owned(), -32000, "rlp: "),
    ];
    for (what, raw, code, message) in cases {
        let (got_code, got_message, _) = node.err("eth_sendRawTransaction", json!([raw])).await;
        assert_eq!(got_code, code, "{what}: {got_message}");
        assert!(got_message.contains(message), "{what}: {got_message}");
        assert_eq!(pool_status(&node).await, (0, 0), "{what} left something in the pool");
    }
    node.ok("evm_mine", json!([])).await;
    let block = node.ok("eth_getBlockByNumber", json!(["latest", false])).await;
    assert_eq!(block["transactions"], json!([]));
    assert_eq!(block["blobGasUsed"], "0x0");
}

fn sidecar_of(data: &[u8]) -> BlobTransactionSidecar {
    SidecarBuilder::<SimpleCoder>::from_slice(data).build().expect("builds")
}

#[actix::test]
async fn sustained_blob_ingest_stays_within_the_pool_byte_budget() {
    let mut config = manual();
    config.txpool_max_bytes = 1 << 20;
    let node = TestNode::start_with(config);
    let side = sidecar(1);
    let size = blob_tx(&node.signer(0), 0, GWEI, side.clone(), None).encode_2718_len();
    let (mut admitted, mut refused) = (0usize, 0usize);
    // 40 blob transactions (over 5 MiB of blobs) into a 1 MiB pool, at the same price.
    for nonce in 0..4 {
        for i in 0..10 {
            let tx = blob_tx(&node.signer(i), nonce, GWEI, side.clone(), None);
            let reply = node.call("eth_sendRawTransaction", json!([raw(&tx)])).await;
            match reply.get("error") {
                None => admitted += 1,
                Some(error) => {
                    assert_eq!(error["code"], -32005, "{error}");
                    assert_eq!(error["message"], "txpool is full");
                    refused += 1;
                }
            }
        }
    }
    let held = (1 << 20) / size;
    assert_eq!((admitted, refused), (held, 40 - held), "each blob transaction is {size} bytes");
    let (pending, queued) = pool_status(&node).await;
    assert_eq!((pending + queued) as usize, held);
    // Mining frees the budget: a refused one is admitted now.
    node.ok("evm_mine", json!([])).await;
    assert_eq!(pool_status(&node).await, (0, 0));
    let tx = blob_tx(&node.signer(9), 0, GWEI, side, None);
    node.ok("eth_sendRawTransaction", json!([raw(&tx)])).await;
}

#[actix::test]
async fn blob_gas_and_the_blob_base_fee_follow_the_blocks() {
    let node = TestNode::start_with(manual());
    let alice = node.signer(0);
    let prague = BlobParams::prague();
    // Admitted while the blob base fee is 1 wei, paying at most that, behind a nonce gap.
    let bob = node.signer(1);
    let waiting = blob_tx(&bob, 1, 1, sidecar(1), None);
    node.ok("eth_sendRawTransaction", json!([raw(&waiting)])).await;
    // 9 blobs a block, 3 over Prague's target of 6: the excess grows 3 blobs' gas a block and
    // after a dozen blocks the blob base fee leaves 1 wei.
    let mut excess = 0u64;
    for nonce in 0..12u64 {
        let fee = prague.calc_blob_fee(excess);
        let tx = blob_tx(&alice, nonce, 1000, sidecar(9), None);
        node.ok("eth_sendRawTransaction", json!([raw(&tx)])).await;
        node.ok("evm_mine", json!([])).await;
        let block = node.ok("eth_getBlockByNumber", json!(["latest", false])).await;
        assert_eq!(quantity(&block["blobGasUsed"]), 9 * DATA_GAS_PER_BLOB);
        assert_eq!(quantity(&block["excessBlobGas"]), excess, "block {}", block["number"]);
        let receipt = node.ok("eth_getTransactionReceipt", json!([tx.tx_hash()])).await;
        assert_eq!(u128::from(quantity(&receipt["blobGasPrice"])), fee);
        assert_eq!(
            u128::from(quantity(&node.ok("eth_blobBaseFee", json!([])).await)),
            fee,
            "the head's blob base fee"
        );
        excess += 3 * DATA_GAS_PER_BLOB;
    }
    let last = prague.calc_blob_fee(excess - 3 * DATA_GAS_PER_BLOB);
    assert!(last > 1, "the blob base fee rose: {last}");
    let history = node.ok("eth_feeHistory", json!([3, "latest", []])).await;
    let fees: Vec<u128> = history["baseFeePerBlobGas"]
        .as_array()
        .expect("fees")
        .iter()
        .map(|v| u128::from(quantity(v)))
        .collect();
    let want: Vec<u128> = (0..4u64)
        .map(|back| prague.calc_blob_fee(excess - (3 - back).min(3) * 3 * DATA_GAS_PER_BLOB))
        .collect();
    assert_eq!(fees, want);
    assert_eq!(history["blobGasUsedRatio"], json!([1.0, 1.0, 1.0]));

    // Its gap filled now that the blob fee is 2 wei, the blob transaction waits (queued), as in
    // geth's blob pool: it is neither mined nor dropped.
    let fill = crate::support::fixtures::transfer(&bob, 0, Address::repeat_byte(0xb0), 1);
    node.ok("eth_sendRawTransaction", json!([raw(&fill)])).await;
    node.ok("evm_mine", json!([])).await;
    let block = node.ok("eth_getBlockByNumber", json!(["latest", false])).await;
    assert_eq!(block["transactions"], json!([fill.tx_hash()]));
    assert_eq!(pool_status(&node).await, (0, 1));
    let pooled = node.ok("eth_getTransactionByHash", json!([waiting.tx_hash()])).await;
    assert_eq!(pooled["blockNumber"], Value::Null);
}

#[actix::test]
async fn an_osaka_chain_takes_cell_proofs_and_six_blobs_a_transaction() {
    let mut config = manual();
    config.spec = revm::primitives::hardfork::SpecId::OSAKA;
    let node = TestNode::start_with(config);
    let alice = node.signer(0);
    // EIP-7594's version-1 sidecar: 128 cell proofs a blob.
    let settings = alloy_eips::eip4844::env_settings::EnvKzgSettings::Default;
    let cells = sidecar(1).try_into_7594(settings.get()).expect("cell proofs");
    let hashes = cells.versioned_hashes().collect();
    let tx = {
        let plain = blob_tx(&alice, 0, GWEI, sidecar(1), Some(hashes));
        let TxEnvelope::Eip4844(signed) = without_sidecar(&plain) else { unreachable!() };
        let (variant, signature, hash) = signed.into_parts();
        let inner = TxEip4844::from(variant);
        let with =
            inner.with_sidecar(alloy_eips::eip7594::BlobTransactionSidecarVariant::Eip7594(cells));
        TxEnvelope::Eip4844(Signed::new_unchecked(with.into(), signature, hash))
    };
    let hash = node.ok("eth_sendRawTransaction", json!([raw(&tx)])).await;
    node.ok("evm_mine", json!([])).await;
    let receipt = node.ok("eth_getTransactionReceipt", json!([hash])).await;
    assert_eq!(quantity(&receipt["blobGasUsed"]), DATA_GAS_PER_BLOB);
    // Osaka allows 6 blobs per transaction (EIP-7594).
    let (code, message, _) = node
        .err("eth_sendRawTransaction", json!([raw(&blob_tx(&alice, 1, GWEI, sidecar(7), None))]))
        .await;
    assert_eq!(
        (code, message.as_str()),
        (-32000, "too many blobs in transaction: have 7, max 6 per transaction")
    );
}

#[actix::test]
async fn blobs_of_pooled_and_mined_transactions_are_served_by_hash() {
    let node = TestNode::start_with(manual());
    let alice = node.signer(0);
    let one = sidecar_of(b"first blob");
    let two = sidecar_of(b"second blob");
    let blobs = BlobTransactionSidecar {
        blobs: vec![one.blobs[0], two.blobs[0]],
        commitments: vec![one.commitments[0], two.commitments[0]],
        proofs: vec![one.proofs[0], two.proofs[0]],
    };
    let tx = blob_tx(&alice, 0, GWEI, blobs.clone(), None);
    let hash = node.ok("eth_sendRawTransaction", json!([raw(&tx)])).await;
    let versioned: Vec<B256> = blobs.versioned_hashes().collect();
    let expect_all = json!([blobs.blobs[0], blobs.blobs[1]]);
    let by_tx = json!([hash]);
    // Pooled, then mined (the block carries no sidecar; the pool kept it).
    assert_eq!(node.ok("anvil_getBlobsByTransactionHash", by_tx.clone()).await, expect_all);
    node.ok("evm_mine", json!([])).await;
    assert_eq!(pool_status(&node).await, (0, 0));
    assert_eq!(node.ok("anvil_getBlobsByTransactionHash", by_tx.clone()).await, expect_all);
    for (i, versioned) in versioned.iter().enumerate() {
        let blob = node.ok("anvil_getBlobByHash", json!([versioned])).await;
        assert_eq!(blob, json!(blobs.blobs[i]));
    }
    // Unknown hashes are null; a hash that is not 32 bytes is -32602.
    let unknown = B256::repeat_byte(1);
    assert_eq!(node.ok("anvil_getBlobByHash", json!([unknown])).await, Value::Null);
    assert_eq!(node.ok("anvil_getBlobsByTransactionHash", json!([unknown])).await, Value::Null);
    let (code, _, _) = node.err("anvil_getBlobByHash", json!(["0x01"])).await;
    assert_eq!(code, -32602);
    // Dropping the pool's transactions keeps what was mined; a reset replaces the chain, and
    // its blobs go with it.
    node.ok("anvil_dropAllTransactions", json!([])).await;
    assert_eq!(node.ok("anvil_getBlobsByTransactionHash", by_tx.clone()).await, expect_all);
    node.ok("anvil_reset", json!([])).await;
    assert_eq!(node.ok("anvil_getBlobsByTransactionHash", by_tx.clone()).await, Value::Null);
}
