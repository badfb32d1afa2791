//! eth_getProof over JSON-RPC: every proof the node answers verifies, with an independent
//! verifier (alloy-trie), against the state root that eth_getBlockByNumber reports for that
//! block: at every past block, for present and absent accounts and slots, after a contract
//! deploy and transfers. Also the geth-shaped fields and the error codes.

use alloy_primitives::{Address, B256, Bytes, U256, keccak256};
use alloy_trie::proof::verify_proof;
use alloy_trie::{Nibbles, TrieAccount};
use serde_json::{Value, json};

use crate::support::{TestNode, quantity};

/// keccak256 of empty code, as geth reports it for an account without code.
const EMPTY_CODE_HASH: &str = "0xc5d2460186f7233c927e7db2dcc703c0e500b653ca82273b7bfad8045d85a470";
/// The root of an empty trie, as geth reports it for an account without storage.
const EMPTY_ROOT: &str = "0x56e81f171bcc55a6ff8345e692c0f86e5b48e01b996cadc001622fb5e363b421";

pub(crate) fn u256(value: &Value) -> U256 {
    let s = value.as_str().unwrap_or_else(|| panic!("not a quantity: {value}"));
    U256::from_str_radix(s.trim_start_matches("0x"), 16).expect("hex quantity")
}

pub(crate) fn b256(value: &Value) -> B256 {
    value.as_str().unwrap_or_else(|| panic!("not a hash: {value}")).parse().expect("32-byte hex")
}

fn nodes(value: &Value) -> Vec<Bytes> {
    value
        .as_array()
        .unwrap_or_else(|| panic!("not a node list: {value}"))
        .iter()
        .map(|n| n.as_str().expect("hex node").parse().expect("hex bytes"))
        .collect()
}

/// The state root of block `block` as eth_getBlockByNumber reports it.
async fn state_root(node: &TestNode, block: &str) -> B256 {
    b256(&node.ok("eth_getBlockByNumber", json!([block, false])).await["stateRoot"])
}

/// Asks for a proof of `address` and `keys` at `block`, verifies every part of it against the
/// block's state root and returns the response.
async fn verified_proof(node: &TestNode, address: Address, keys: &[&str], block: &str) -> Value {
    let root = state_root(node, block).await;
    let result = node.ok("eth_getProof", json!([address, keys, block])).await;
    let fields = ["address", "accountProof", "balance", "codeHash", "nonce", "storageHash"];
    for field in fields.into_iter().chain(["storageProof"]) {
        assert!(result.get(field).is_some(), "no {field} in {result}");
    }
    assert_eq!(
        result["address"].as_str().map(str::to_lowercase),
        Some(address.to_string().to_lowercase())
    );
    // An account that does not exist is reported with geth's defaults and proven absent.
    let exists = node.ok("eth_getTransactionCount", json!([address, block])).await != "0x0"
        || node.ok("eth_getBalance", json!([address, block])).await != "0x0"
        || node.ok("eth_getCode", json!([address, block])).await != "0x";
    verify_against(&result, root, address, exists, keys, block);
    assert_eq!(result["balance"], node.ok("eth_getBalance", json!([address, block])).await);
    // eth_getAccount answers the same trie fields as the proof, which the verifier checked.
    let trie_account = node.ok("eth_getAccount", json!([address, block])).await;
    let expected = json!({
        "codeHash": result["codeHash"],
        "storageRoot": result["storageHash"],
        "balance": result["balance"],
        "nonce": result["nonce"],
    });
    assert_eq!(trie_account, expected, "eth_getAccount of {address} at {block}");

    let storage = result["storageProof"].as_array().expect("storageProof is an array");
    for (entry, key) in storage.iter().zip(keys) {
        let stored = node.ok("eth_getStorageAt", json!([address, key, block])).await;
        assert_eq!(
            u256(&entry["value"]),
            U256::from_be_bytes(b256(&stored).0),
            "slot {key} at {block}"
        );
    }
    result
}

/// Verifies an eth_getProof answer (`result`) with alloy-trie against state root `root`: the
/// account (proven present when `exists`, else absent with geth's defaults) and each slot of
/// `keys` with the value the answer gives. `at` names the block in messages.
pub(crate) fn verify_against(
    result: &Value,
    root: B256,
    address: Address,
    exists: bool,
    keys: &[&str],
    at: &str,
) {
    let account = TrieAccount {
        nonce: quantity(&result["nonce"]),
        balance: u256(&result["balance"]),
        storage_root: b256(&result["storageHash"]),
        code_hash: b256(&result["codeHash"]),
    };
    let expected = exists.then(|| alloy_rlp::encode(account));
    if !exists {
        assert_eq!(result["balance"], "0x0");
        assert_eq!(result["nonce"], "0x0");
        assert_eq!(result["codeHash"], EMPTY_CODE_HASH);
        assert_eq!(result["storageHash"], EMPTY_ROOT);
    }
    verify_proof(
        root,
        Nibbles::unpack(keccak256(address)),
        expected,
        &nodes(&result["accountProof"]),
    )
    .unwrap_or_else(|e| panic!("account proof of {address} at {at}: {e}"));
    let storage = result["storageProof"].as_array().expect("storageProof is an array");
    assert_eq!(storage.len(), keys.len());
    for (entry, key) in storage.iter().zip(keys) {
        let slot = U256::from_str_radix(key.trim_start_matches("0x"), 16).expect("hex key");
        let value = u256(&entry["value"]);
        let expected = (!value.is_zero()).then(|| alloy_rlp::encode(value));
        verify_proof(
            account.storage_root,
            Nibbles::unpack(keccak256(slot.to_be_bytes::<32>())),
            expected,
            &nodes(&entry["proof"]),
        )
        .unwrap_or_else(|e| panic!("proof of slot {key} of {address} at {at}: {e}"));
    }
}

/// balanceOf[holder] of BenchToken lives at keccak(holder . 1): the mapping is slot 1.
fn balance_slot(holder: Address) -> U256 {
    let mut key = [0u8; 64];
    key[12..32].copy_from_slice(holder.as_slice());
    key[63] = 1;
    U256::from_be_bytes(keccak256(key).0)
}

#[actix::test]
async fn proofs_verify_against_every_past_state_root() {
    or_skip!(crate::conformance::conformance_dir());
    let node = TestNode::start();
    let alice = node.signer(0).address();
    let bob = node.signer(1).address();
    let absent = Address::repeat_byte(0x42);
    let token = node.deploy_bench_token().await;
    for value in 1..=3u64 {
        node.ok(
            "eth_sendTransaction",
            json!([{"from": alice, "to": bob, "value": format!("{value:#x}")}]),
        )
        .await;
        let transfer =
            format!("0xa9059cbb{:0>64}{:064x}", alloy_primitives::hex::encode(bob), value);
        node.ok("eth_sendTransaction", json!([{"from": alice, "to": token, "data": transfer}]))
            .await;
    }
    let head = node.block_number().await;
    assert_eq!(head, 7);

    // Slot keys as 32-byte words and as quantities; present and absent slots.
    let bob_word = format!("{}", B256::from(balance_slot(bob)));
    let alice_quantity = format!("{:#x}", balance_slot(alice));
    let keys = [bob_word.as_str(), alice_quantity.as_str(), "0x0", "0x7"];
    for number in 0..=head {
        let block = format!("{number:#x}");
        for address in [alice, bob, token, absent] {
            let result = verified_proof(&node, address, &keys, &block).await;
            // Keys come back as geth echoes them: 32-byte words as words, the rest as quantities.
            let echoed: Vec<&str> = result["storageProof"]
                .as_array()
                .expect("array")
                .iter()
                .map(|e| e["key"].as_str().expect("key"))
                .collect();
            assert_eq!(echoed, keys);
        }
    }

    // The token holds bob's balance after the transfers, and nothing before the deploy.
    let latest = verified_proof(&node, token, &[&bob_word], "latest").await;
    assert_eq!(latest["storageProof"][0]["value"], "0x6");
    assert_ne!(latest["storageHash"], EMPTY_ROOT);
    assert_ne!(latest["codeHash"], EMPTY_CODE_HASH);
    let before = verified_proof(&node, token, &[&bob_word], "0x0").await;
    assert_eq!(before["storageHash"], EMPTY_ROOT);
    assert_eq!(before["storageProof"][0]["value"], "0x0");
    assert_eq!(before["storageProof"][0]["proof"], json!([]));
    // Tags and EIP-1898 block objects name the same blocks.
    let by_tag = node.ok("eth_getProof", json!([alice, [], "latest"])).await;
    let by_number = node.ok("eth_getProof", json!([alice, [], format!("{head:#x}")])).await;
    assert_eq!(by_tag, by_number);
    let hash = node.ok("eth_getBlockByNumber", json!(["0x3", false])).await["hash"].clone();
    let by_hash = node.ok("eth_getProof", json!([alice, null, {"blockHash": hash}])).await;
    assert_eq!(by_hash, node.ok("eth_getProof", json!([alice, [], "0x3"])).await);
}

#[actix::test]
async fn bad_params_and_unknown_blocks_are_errors() {
    let node = TestNode::start();
    let alice = node.signer(0).address();
    let (code, message, _) = node.err("eth_getProof", json!([alice, [], "0x5"])).await;
    assert_eq!((code, message.as_str()), (-32000, "header not found"));
    let unknown_hash = B256::repeat_byte(0x11);
    let (code, message, _) =
        node.err("eth_getProof", json!([alice, [], {"blockHash": unknown_hash}])).await;
    assert_eq!((code, message.as_str()), (-32000, "header not found"));
    for params in [
        json!([]),
        json!(["0x1234", [], "latest"]),
        json!([alice, ["0x"], "latest"]),
        json!([alice, ["1"], "latest"]),
        json!([alice, [format!("0x{}", "1".repeat(65))], "latest"]),
        json!([alice, "0x1", "latest"]),
        json!([alice, [], "latest", "extra"]),
        json!([alice, [], "0x1g"]),
        json!([alice, vec!["0x1"; 1025], "latest"]),
    ] {
        let (code, _, _) = node.err("eth_getProof", params.clone()).await;
        assert_eq!(code, -32602, "{params}");
    }
}
