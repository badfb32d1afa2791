//! The Engine API driven as a rollup sequencer (ev-node's `execution/evm` client) and a
//! consensus client drive it, over HTTP with a JWT: payloads built from attributes and
//! transactions, checked, chosen as head, rewound, reorganised, refused.

use alloy_consensus::TxEnvelope;
use alloy_eips::eip2718::Encodable2718;
use alloy_primitives::{Address, B256};
use alloy_rpc_types_engine::{ExecutionPayloadV3, ForkchoiceState, JwtSecret};
use hearth::config::{AuthRpc, NodeConfig};
use hearth::engine_api::{EngineApi, EngineCallError};
use serde_json::{Value, json};

use crate::process::TempDir;
use crate::support::{TestNode, fixtures, quantity};

/// A node with automine off and its Engine API port on loopback, and a client of that port.
struct EngineNode {
    node: TestNode,
    api: EngineApi,
    _dir: TempDir,
}

impl EngineNode {
    fn start() -> Self {
        let dir = TempDir::new("engine-driver");
        let mut config = NodeConfig::for_tests();
        config.automine = false;
        config.authrpc = Some(AuthRpc {
            addr: "127.0.0.1:0".parse().expect("loopback"),
            jwt_secret: dir.path().join("jwt.hex"),
            same_second_blocks: false,
        });
        let node = TestNode::start_with(config);
        let (server, addr) = node.node.serve_engine().expect("binds").expect("configured");
        actix_rt::spawn(server);
        let hex = std::fs::read_to_string(dir.path().join("jwt.hex")).expect("secret written");
        let api = EngineApi::new(format!("http://{addr}"), JwtSecret::from_hex(hex).expect("hex"));
        Self { node, api, _dir: dir }
    }

    async fn engine(&self, method: &str, params: Value) -> Value {
        self.api.call(method, params).await.unwrap_or_else(|e| panic!("{method}: {e}"))
    }

    async fn engine_err(&self, method: &str, params: Value) -> i64 {
        match self.api.call(method, params).await {
            Err(EngineCallError::Rpc { code, .. }) => code,
            other => panic!("{method} should fail: {other:?}"),
        }
    }

    async fn block(&self, tag: Value) -> Value {
        self.node.ok("eth_getBlockByNumber", json!([tag, false])).await
    }

    /// forkchoiceUpdatedV3 to `head` (safe: head) with `attributes`; its answer.
    async fn choose(&self, head: B256, finalized: B256, attributes: Value) -> Value {
        let state = ForkchoiceState {
            head_block_hash: head,
            safe_block_hash: head,
            finalized_block_hash: finalized,
        };
        self.engine("engine_forkchoiceUpdatedV3", json!([state, attributes])).await
    }

    /// A payload built on `parent` (hash, timestamp) from `transactions` (raw), fetched with
    /// getPayloadV4: (payload, execution requests).
    async fn build(&self, parent: (B256, u64), transactions: Value) -> (Value, Value) {
        let attributes = json!({
            "timestamp": format!("{:#x}", parent.1 + 1),
            "prevRandao": B256::repeat_byte(7),
            "suggestedFeeRecipient": Address::repeat_byte(0xfe),
            "withdrawals": [],
            "parentBeaconBlockRoot": B256::repeat_byte(9),
            "transactions": transactions,
            "gasLimit": "0x1c9c380",
        });
        let chosen = self.choose(parent.0, B256::ZERO, attributes).await;
        assert_eq!(chosen["payloadStatus"]["status"], "VALID", "{chosen}");
        let id = chosen["payloadId"].clone();
        let built = self.engine("engine_getPayloadV4", json!([id])).await;
        (built["executionPayload"].clone(), built["executionRequests"].clone())
    }

    async fn new_payload(&self, payload: &Value, requests: &Value) -> Value {
        let root = B256::repeat_byte(9);
        self.engine("engine_newPayloadV4", json!([payload, [], root, requests])).await
    }
}

fn hash_of(value: &Value) -> B256 {
    value.as_str().and_then(|s| s.parse().ok()).unwrap_or_else(|| panic!("not a hash: {value}"))
}

/// Sets the payload's block hash to its block's (as a builder would), beacon root 0x09..09
/// and no requests.
fn rehash(payload: &mut ExecutionPayloadV3) {
    let sidecar = alloy_rpc_types_engine::ExecutionPayloadSidecar::v4(
        alloy_rpc_types_engine::CancunPayloadFields::new(B256::repeat_byte(9), vec![]),
        alloy_rpc_types_engine::PraguePayloadFields::new(alloy_eips::eip7685::Requests::default()),
    );
    let block = alloy_rpc_types_engine::ExecutionPayload::V3(payload.clone())
        .try_into_block_with_sidecar::<TxEnvelope>(&sidecar)
        .expect("a block");
    payload.payload_inner.payload_inner.block_hash = block.header.hash_slow();
}

fn raw(tx: &TxEnvelope) -> String {
    format!("0x{}", alloy_primitives::hex::encode(tx.encoded_2718()))
}

/// How many rounds the sequencer test runs (`ENGINE_DRIVER_ROUNDS` for a longer run).
fn rounds() -> u64 {
    std::env::var("ENGINE_DRIVER_ROUNDS").ok().and_then(|r| r.parse().ok()).unwrap_or(1000)
}

#[actix::test]
async fn a_sequencer_drives_a_thousand_blocks_with_a_rollback_and_the_chain_reimports() {
    let engine = EngineNode::start();
    let node = &engine.node;
    // InitChain: the genesis chosen as head, safe and finalized.
    let genesis = hash_of(&engine.block(json!("0x0")).await["hash"]);
    let init = engine.choose(genesis, genesis, Value::Null).await;
    assert_eq!(init["payloadStatus"]["status"], "VALID", "{init}");
    let signer = node.signer(1);
    let to = Address::repeat_byte(0x42);
    let (mut nonce, mut finalized) = (0u64, genesis);
    let (mut parent, mut parent_time) =
        (genesis, quantity(&engine.block(json!("0x0")).await["timestamp"]));
    let rounds = rounds();
    let started = std::time::Instant::now();
    for round in 1..=rounds {
        // Transactions arrive meanwhile, through the public port.
        for _ in 0..2 {
            let tx = fixtures::transfer(&signer, nonce, to, 1);
            node.ok("eth_sendRawTransaction", json!([raw(&tx)])).await;
            nonce += 1;
        }
        // GetTxs, then a payload of exactly those.
        let txs = node.ok("txpoolExt_getTxs", json!([])).await;
        assert_eq!(txs.as_array().map(Vec::len), Some(2), "round {round}: {txs}");
        let (payload, requests) = engine.build((parent, parent_time), txs).await;
        let status = engine.new_payload(&payload, &requests).await;
        assert_eq!(status["status"], "VALID", "round {round}: {status}");
        let hash = hash_of(&payload["blockHash"]);
        if round % 10 == 0 {
            // SetFinal.
            finalized = hash;
        }
        let chosen = engine.choose(hash, finalized, Value::Null).await;
        assert_eq!(chosen["payloadStatus"]["status"], "VALID", "round {round}: {chosen}");
        (parent, parent_time) = (hash, quantity(&payload["timestamp"]));
        if round == rounds / 2 {
            // One rollback of 5 blocks: the head goes back, durably, and the sequencer goes on
            // from there (the sender's next nonce is the chain's again).
            let target = engine.block(json!(format!("{:#x}", round - 5))).await;
            let back = hash_of(&target["hash"]);
            let fin = if quantity(&engine.block(json!("finalized")).await["number"]) <= round - 5 {
                finalized
            } else {
                back
            };
            let rolled = engine.choose(back, fin, Value::Null).await;
            assert_eq!(rolled["payloadStatus"]["status"], "VALID", "{rolled}");
            assert_eq!(node.block_number().await, round - 5);
            finalized = fin;
            (parent, parent_time) = (back, quantity(&target["timestamp"]));
            let count =
                node.ok("eth_getTransactionCount", json!([signer.address(), "latest"])).await;
            nonce = quantity(&count);
        }
    }
    let elapsed = started.elapsed();
    eprintln!(
        "engine driver: {rounds} rounds in {:.2} s, {:.0} blocks/s",
        elapsed.as_secs_f64(),
        rounds as f64 / elapsed.as_secs_f64()
    );
    let head = engine.block(json!("latest")).await;
    assert_eq!(hash_of(&head["hash"]), parent);
    assert_eq!(quantity(&head["number"]), rounds - 5);
    assert_eq!(hash_of(&engine.block(json!("finalized")).await["hash"]), finalized);
    assert_eq!(hash_of(&engine.block(json!("safe")).await["hash"]), parent);

    // Exported and imported again into a fresh store: the same head.
    let dir = TempDir::new("engine-export");
    let (chain, genesis_file) = (dir.path().join("chain.rlp"), dir.path().join("genesis.json"));
    hearth::chainfile::export_chain(&node.node.chain, None, None, &chain).expect("export");
    hearth::chainfile::export_genesis(&node.node.chain, &genesis_file).expect("genesis");
    let genesis = hearth::genesis::Genesis::read(&genesis_file).expect("genesis reads");
    let fresh = hearth_storage::ChainWriter::in_memory().expect("store");
    let summary =
        hearth::chainfile::import_chain(&fresh, &genesis, &[chain], false).expect("imports");
    assert_eq!(summary.head_hash, parent);
}

#[actix::test]
async fn a_side_block_is_kept_until_chosen_and_a_choice_of_it_reorganises_the_chain() {
    let engine = EngineNode::start();
    let genesis = engine.block(json!("0x0")).await;
    let base = (hash_of(&genesis["hash"]), quantity(&genesis["timestamp"]));
    // A contract creation whose init code logs (PUSH1 0 PUSH1 0 LOG0), watched by a filter.
    let init = alloy_primitives::Bytes::from_static(&[0x60, 0x00, 0x60, 0x00, 0xa0]);
    let signer = engine.node.signer(1);
    let tx = fixtures::eip1559(&signer, 0, None, alloy_primitives::U256::ZERO, init, 100_000);
    let filter = engine.node.ok("eth_newFilter", json!([{}])).await;
    let (a, requests) = engine.build(base, json!([raw(&tx)])).await;
    let (b, _) = engine.build((base.0, base.1 + 1), json!([])).await;
    assert_ne!(a["blockHash"], b["blockHash"]);
    for payload in [&a, &b] {
        assert_eq!(engine.new_payload(payload, &requests).await["status"], "VALID");
    }
    // Neither is the head until chosen.
    assert_eq!(engine.node.block_number().await, 0);
    let chosen = engine.choose(hash_of(&a["blockHash"]), B256::ZERO, Value::Null).await;
    assert_eq!(chosen["payloadStatus"]["status"], "VALID", "{chosen}");
    assert_eq!(engine.block(json!("latest")).await["hash"], a["blockHash"]);
    let logged = engine.node.ok("eth_getFilterChanges", json!([filter])).await;
    assert_eq!(logged[0]["removed"], false, "{logged}");
    // B's parent is the genesis too: choosing B drops A (a reorg) and B becomes block 1.
    let chosen = engine.choose(hash_of(&b["blockHash"]), B256::ZERO, Value::Null).await;
    assert_eq!(chosen["payloadStatus"]["status"], "VALID", "{chosen}");
    let head = engine.block(json!("latest")).await;
    assert_eq!((head["hash"].clone(), quantity(&head["number"])), (b["blockHash"].clone(), 1));
    let gone = engine.node.ok("eth_getTransactionByHash", json!([tx.tx_hash()])).await;
    assert!(gone.is_null() || gone["blockNumber"].is_null(), "{gone}");
    // A head whose safe or finalized block it would drop: -38002, and nothing moves.
    let state = json!({"headBlockHash": genesis["hash"], "safeBlockHash": B256::ZERO,
        "finalizedBlockHash": b["blockHash"]});
    let refused = engine.api.call("engine_forkchoiceUpdatedV3", json!([state, null])).await;
    assert!(matches!(refused, Err(EngineCallError::Rpc { code: -38002, .. })), "{refused:?}");
    assert_eq!(engine.block(json!("latest")).await["hash"], b["blockHash"]);
    // The log of the block the reorg dropped comes back removed, as geth sends it.
    let removed = engine.node.ok("eth_getFilterChanges", json!([filter])).await;
    assert_eq!(removed.as_array().map(Vec::len), Some(1), "{removed}");
    assert_eq!(removed[0]["removed"], true, "{removed}");
    assert_eq!(removed[0]["blockHash"], a["blockHash"], "{removed}");

    // A (was dropped by the reorg, and is kept): choosing it again switches back.
    let back = engine.choose(hash_of(&a["blockHash"]), B256::ZERO, Value::Null).await;
    assert_eq!(back["payloadStatus"]["status"], "VALID", "{back}");
    assert_eq!(engine.block(json!("latest")).await["hash"], a["blockHash"]);
    let again = engine.choose(hash_of(&b["blockHash"]), B256::ZERO, Value::Null).await;
    assert_eq!(again["payloadStatus"]["status"], "VALID", "{again}");
    // A child of a side block that is itself not executed yet is ACCEPTED, and one of an
    // unknown block SYNCING; a choice of an unknown head is SYNCING and changes nothing.
    let (c, _) =
        engine.build((hash_of(&b["blockHash"]), quantity(&b["timestamp"])), json!([])).await;
    let mut orphan: ExecutionPayloadV3 = serde_json::from_value(json!({
        "parentHash": B256::repeat_byte(0xaa), "feeRecipient": Address::ZERO,
        "stateRoot": B256::ZERO, "receiptsRoot": B256::ZERO, "logsBloom": format!("0x{}", "00".repeat(256)),
        "prevRandao": B256::ZERO, "blockNumber": "0x9", "gasLimit": "0x1c9c380", "gasUsed": "0x0",
        "timestamp": c["timestamp"], "extraData": "0x", "baseFeePerGas": "0x7",
        "blockHash": B256::ZERO, "transactions": [], "withdrawals": [], "blobGasUsed": "0x0",
        "excessBlobGas": "0x0",
    }))
    .expect("a V3 payload");
    rehash(&mut orphan);
    let syncing = engine.new_payload(&json!(orphan), &json!([])).await;
    assert_eq!(syncing["status"], "SYNCING", "{syncing}");
    let unknown = engine.choose(B256::repeat_byte(0xbb), B256::ZERO, Value::Null).await;
    assert_eq!(unknown["payloadStatus"]["status"], "SYNCING", "{unknown}");
    assert_eq!(engine.block(json!("latest")).await["hash"], b["blockHash"]);
}

#[actix::test]
async fn a_bad_payload_is_invalid_and_bad_calls_get_the_specs_codes() {
    let engine = EngineNode::start();
    let genesis = engine.block(json!("0x0")).await;
    let base = (hash_of(&genesis["hash"]), quantity(&genesis["timestamp"]));
    let (good, requests) = engine.build(base, json!([])).await;

    // A wrong state root with a block hash that matches it: executed and found invalid.
    let mut bad: ExecutionPayloadV3 = serde_json::from_value(good.clone()).expect("V3");
    bad.payload_inner.payload_inner.state_root = B256::repeat_byte(1);
    rehash(&mut bad);
    let invalid = engine.new_payload(&json!(bad), &requests).await;
    assert_eq!(invalid["status"], "INVALID", "{invalid}");
    assert_eq!(invalid["latestValidHash"], genesis["hash"], "{invalid}");
    assert!(invalid["validationError"].as_str().is_some_and(|e| e.contains("state root")));
    let chosen =
        engine.choose(bad.payload_inner.payload_inner.block_hash, B256::ZERO, Value::Null).await;
    assert_eq!(chosen["payloadStatus"]["status"], "INVALID", "{chosen}");
    // A block hash that is not the block's: INVALID, nothing executed.
    let mut tampered = good.clone();
    tampered["blockHash"] = json!(B256::repeat_byte(3));
    assert_eq!(engine.new_payload(&tampered, &requests).await["status"], "INVALID");
    assert_eq!(engine.node.block_number().await, 0);

    let root = B256::repeat_byte(9);
    // The wrong version for the payload's fork (a Prague chain): -38005.
    assert_eq!(engine.engine_err("engine_newPayloadV3", json!([good, [], root])).await, -38005);
    assert_eq!(engine.engine_err("engine_newPayloadV2", json!([good])).await, -32602);
    let mut missing = good.clone();
    missing.as_object_mut().map(|o| o.remove("stateRoot"));
    assert_eq!(
        engine.engine_err("engine_newPayloadV4", json!([missing, [], root, []])).await,
        -32602
    );
    assert_eq!(
        engine.engine_err("engine_newPayloadV4", json!([good, [], root, ["0x01"]])).await,
        -32602
    );
    assert_eq!(
        engine.engine_err("engine_getPayloadV4", json!(["0x0102030405060708"])).await,
        -38001
    );
    let state = json!({"headBlockHash": genesis["hash"], "safeBlockHash": B256::ZERO,
        "finalizedBlockHash": B256::repeat_byte(5)});
    assert_eq!(engine.engine_err("engine_forkchoiceUpdatedV3", json!([state, null])).await, -38002);
    let stale = json!({"timestamp": genesis["timestamp"], "prevRandao": root,
        "suggestedFeeRecipient": Address::ZERO, "withdrawals": [], "parentBeaconBlockRoot": root});
    let state = json!({"headBlockHash": genesis["hash"], "safeBlockHash": B256::ZERO,
        "finalizedBlockHash": B256::ZERO});
    assert_eq!(
        engine.engine_err("engine_forkchoiceUpdatedV3", json!([state, stale])).await,
        -38003
    );
    assert_eq!(
        engine.engine_err("engine_forkchoiceUpdatedV2", json!([state, stale])).await,
        -32602
    );
    // ev-reth's gasLimit attribute: below the consensus minimum or above an i64, -38003.
    for gas_limit in ["0x0", "0x1387", "0x8000000000000000", "0xffffffffffffffff"] {
        let attributes = json!({"timestamp": "0xffffffff", "prevRandao": root,
            "suggestedFeeRecipient": Address::ZERO, "withdrawals": [], "parentBeaconBlockRoot": root,
            "gasLimit": gas_limit});
        let code =
            engine.engine_err("engine_forkchoiceUpdatedV3", json!([state, attributes])).await;
        assert_eq!(code, -38003, "gasLimit {gas_limit}");
    }
    assert_eq!(
        engine.engine_err("engine_getPayloadBodiesByRangeV1", json!(["0x1", "0x801"])).await,
        -38004
    );
    assert_eq!(
        engine.engine_err("engine_getPayloadBodiesByRangeV1", json!(["0x0", "0x1"])).await,
        -32602
    );
    let many: Vec<B256> = (0..129).map(|_| B256::ZERO).collect();
    assert_eq!(engine.engine_err("engine_getBlobsV1", json!([many])).await, -38004);
    assert_eq!(engine.node.block_number().await, 0);
}

#[actix::test]
async fn payload_bodies_and_blobs_are_served_to_the_consensus_layer() {
    let engine = EngineNode::start();
    let genesis = engine.block(json!("0x0")).await;
    let base = (hash_of(&genesis["hash"]), quantity(&genesis["timestamp"]));
    let tx = fixtures::transfer(&engine.node.signer(1), 0, Address::repeat_byte(1), 5);
    let (payload, requests) = engine.build(base, json!([raw(&tx)])).await;
    assert_eq!(engine.new_payload(&payload, &requests).await["status"], "VALID");
    let hash = hash_of(&payload["blockHash"]);
    engine.choose(hash, B256::ZERO, Value::Null).await;
    let bodies =
        engine.engine("engine_getPayloadBodiesByHashV1", json!([[hash, B256::ZERO]])).await;
    assert_eq!(bodies[0]["transactions"], json!([raw(&tx)]), "{bodies}");
    assert_eq!(bodies[0]["withdrawals"], json!([]));
    assert!(bodies[1].is_null());
    let range = engine.engine("engine_getPayloadBodiesByRangeV1", json!(["0x1", "0x10"])).await;
    assert_eq!(range.as_array().map(Vec::len), Some(1), "cut at the head: {range}");
    // No blob known: V1 answers null for it, V2 null for the whole list.
    let blobs = engine.engine("engine_getBlobsV1", json!([[B256::repeat_byte(1)]])).await;
    assert_eq!(blobs, json!([null]));
    assert_eq!(
        engine.engine("engine_getBlobsV2", json!([[B256::repeat_byte(1)]])).await,
        Value::Null
    );
}

#[actix::test]
async fn malformed_payloads_and_forkchoice_states_get_the_specs_answers_and_change_nothing() {
    let engine = EngineNode::start();
    let genesis = engine.block(json!("0x0")).await;
    let base = (hash_of(&genesis["hash"]), quantity(&genesis["timestamp"]));
    let tx = fixtures::transfer(&engine.node.signer(1), 0, Address::repeat_byte(1), 5);
    let (good, requests) = engine.build(base, json!([raw(&tx)])).await;
    let root = B256::repeat_byte(9);
    let long = format!("0x{}", "ab".repeat(1024));
    let odd_values = [
        Value::Null,
        json!(123),
        json!("0x"),
        json!("0xzz"),
        json!([]),
        json!({}),
        json!(long),
        json!(-1),
    ];
    // Every field removed, then given each odd value; then one unknown field; then lists far
    // too long (transactions of garbage, withdrawals of nonsense).
    let mut cases: Vec<Value> = Vec::new();
    for field in good.as_object().expect("object").keys() {
        let mut removed = good.clone();
        removed.as_object_mut().map(|o| o.remove(field));
        cases.push(removed);
        for odd in &odd_values {
            let mut changed = good.clone();
            changed[field.as_str()] = odd.clone();
            cases.push(changed);
        }
    }
    let mut extra = good.clone();
    extra["surprise"] = json!("0x01");
    cases.push(extra);
    let mut garbage = good.clone();
    garbage["transactions"] = json!(vec!["0x00"; 20_000]);
    cases.push(garbage);
    let mut withdrawals = good.clone();
    withdrawals["withdrawals"] = json!(vec![json!({"index": "0x0"}); 5_000]);
    cases.push(withdrawals);
    let statuses = ["VALID", "INVALID", "SYNCING", "ACCEPTED"];
    for (i, case) in cases.iter().enumerate() {
        let params = json!([case, [], root, requests]);
        match engine.api.call("engine_newPayloadV4", params).await {
            Ok(status) => {
                let named = status["status"].as_str().unwrap_or_default();
                assert!(statuses.contains(&named), "case {i}: {status}");
                // Only the untouched payload (a field set to what it was) may be VALID.
                if named == "VALID" {
                    assert_eq!(status["latestValidHash"], good["blockHash"], "case {i}");
                }
            }
            Err(EngineCallError::Rpc { code, .. }) => {
                assert!([-32602, -38005].contains(&code), "case {i}: code {code}");
            }
            Err(e) => panic!("case {i}: {e}"),
        }
    }
    // Odd forkchoice states and attributes: refused with the spec's codes.
    let zero = B256::ZERO;
    for (state, attributes) in [
        (json!({}), Value::Null),
        (json!({"headBlockHash": "0x12"}), Value::Null),
        (json!([zero, zero, zero]), Value::Null),
        (
            json!({"headBlockHash": zero, "safeBlockHash": zero, "finalizedBlockHash": zero, "x": 1}),
            Value::Null,
        ),
        (
            json!({"headBlockHash": genesis["hash"], "safeBlockHash": zero, "finalizedBlockHash": zero}),
            json!({"timestamp": "0xffffffffffffffffff"}),
        ),
        (
            json!({"headBlockHash": genesis["hash"], "safeBlockHash": zero, "finalizedBlockHash": zero}),
            json!("attributes"),
        ),
    ] {
        let answer =
            engine.api.call("engine_forkchoiceUpdatedV3", json!([state, attributes])).await;
        match answer {
            Err(EngineCallError::Rpc { code: -32602, .. }) => {}
            other => panic!("{state} {attributes}: {other:?}"),
        }
    }
    // A zero head is INVALID; the chain never moved.
    let zeros = json!({"headBlockHash": zero, "safeBlockHash": zero, "finalizedBlockHash": zero});
    let answer = engine.engine("engine_forkchoiceUpdatedV3", json!([zeros, null])).await;
    assert_eq!(answer["payloadStatus"]["status"], "INVALID", "{answer}");
    assert_eq!(engine.node.block_number().await, 0);
    assert_eq!(engine.block(json!("latest")).await["hash"], genesis["hash"]);
}

#[actix::test]
async fn a_payload_built_from_the_pool_carries_its_blob_bundle_and_get_blobs_serves_it() {
    use alloy_consensus::{
        SidecarBuilder, SignableTransaction, Signed, SimpleCoder, TxEip4844, TxEip4844Variant,
    };
    use alloy_eips::eip4844::BlobTransactionSidecar;
    use alloy_signer::SignerSync;

    let engine = EngineNode::start();
    let sidecar: BlobTransactionSidecar =
        SidecarBuilder::<SimpleCoder>::from_slice(b"engine blob").build().expect("builds");
    let versioned: Vec<B256> = sidecar.versioned_hashes().collect();
    let tx = TxEip4844 {
        chain_id: 31337,
        nonce: 0,
        gas_limit: 21_000,
        max_fee_per_gas: 20_000_000_000,
        max_priority_fee_per_gas: 1_000_000_000,
        to: Address::repeat_byte(0xb0),
        value: alloy_primitives::U256::ZERO,
        access_list: Default::default(),
        blob_versioned_hashes: versioned.clone(),
        max_fee_per_blob_gas: 1_000_000_000,
        input: Default::default(),
    };
    let signer = engine.node.signer(2);
    let signature = signer.sign_hash_sync(&tx.signature_hash()).expect("signs");
    let hash = *tx.clone().into_signed(signature).hash();
    let variant: TxEip4844Variant = tx.with_sidecar(sidecar.clone()).into();
    let network = TxEnvelope::Eip4844(Signed::new_unchecked(variant, signature, hash));
    engine.node.ok("eth_sendRawTransaction", json!([raw(&network)])).await;

    // Pooled: engine_getBlobsV1 has it (V2 converts it to cell proofs).
    let blobs = engine.engine("engine_getBlobsV1", json!([[versioned[0]]])).await;
    assert_eq!(blobs[0]["proof"], json!(sidecar.proofs[0]), "{}", blobs[0]["proof"]);
    let cells = engine.engine("engine_getBlobsV2", json!([[versioned[0]]])).await;
    assert_eq!(cells[0]["proofs"].as_array().map(Vec::len), Some(128));

    // Attributes without `transactions`: the payload takes the pool's, with the bundle.
    let genesis = engine.block(json!("0x0")).await;
    let attributes = json!({
        "timestamp": format!("{:#x}", quantity(&genesis["timestamp"]) + 1),
        "prevRandao": B256::ZERO, "suggestedFeeRecipient": Address::ZERO,
        "withdrawals": [], "parentBeaconBlockRoot": B256::ZERO,
    });
    let chosen = engine.choose(hash_of(&genesis["hash"]), B256::ZERO, attributes).await;
    let built = engine.engine("engine_getPayloadV4", json!([chosen["payloadId"]])).await;
    assert_eq!(built["executionPayload"]["transactions"].as_array().map(Vec::len), Some(1));
    assert_eq!(built["executionPayload"]["blobGasUsed"], "0x20000");
    let bundle = &built["blobsBundle"];
    assert_eq!(bundle["commitments"], json!(sidecar.commitments), "{bundle}");
    assert_eq!(bundle["proofs"], json!(sidecar.proofs));
    assert_eq!(bundle["blobs"].as_array().map(Vec::len), Some(1));
    // The V5 form is Osaka's: refused for a Prague payload.
    let v5 = engine.api.call("engine_getPayloadV5", json!([chosen["payloadId"]])).await;
    assert!(matches!(v5, Err(EngineCallError::Rpc { code: -38005, .. })), "{v5:?}");
    // Once mined, the blob is still served (kept after mining).
    let payload = &built["executionPayload"];
    let root = B256::ZERO;
    let status = engine
        .engine(
            "engine_newPayloadV4",
            json!([payload, versioned, root, built["executionRequests"]]),
        )
        .await;
    assert_eq!(status["status"], "VALID", "{status}");
    engine.choose(hash_of(&payload["blockHash"]), B256::ZERO, Value::Null).await;
    assert_eq!(engine.node.block_number().await, 1);
    let blobs = engine.engine("engine_getBlobsV1", json!([[versioned[0]]])).await;
    assert_eq!(blobs[0]["proof"], json!(sidecar.proofs[0]));
}

#[actix::test]
async fn a_payload_larger_than_the_public_ports_body_limit_goes_through_the_engine_port() {
    let engine = EngineNode::start();
    let genesis = engine.block(json!("0x0")).await;
    let signer = engine.node.signer(3);
    // 25 transactions of 110 KB of calldata: 2.75 MB, 5.5 MB as hex, over the public port's
    // 5 MB, within one block's gas.
    let txs: Vec<String> = (0..25)
        .map(|nonce| {
            let data = alloy_primitives::Bytes::from(vec![0u8; 110_000]);
            let gas = 21_000 + 10 * 110_000;
            raw(&fixtures::eip1559(
                &signer,
                nonce,
                Some(Address::repeat_byte(2)),
                Default::default(),
                data,
                gas,
            ))
        })
        .collect();
    let base = (hash_of(&genesis["hash"]), quantity(&genesis["timestamp"]));
    let (payload, requests) = engine.build(base, json!(txs)).await;
    assert_eq!(payload["transactions"].as_array().map(Vec::len), Some(25));
    let status = engine.new_payload(&payload, &requests).await;
    assert_eq!(status["status"], "VALID", "{status}");
}
