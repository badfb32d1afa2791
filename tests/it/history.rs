//! Archive state: every block's state stays readable, and proofs at any block verify against
//! that block's state root with an independent verifier (alloy-trie).

use alloy_primitives::{Address, U256, keccak256};
use alloy_trie::Nibbles;
use alloy_trie::proof::verify_proof;
use hearth_storage::StateView;
use serde_json::json;

use crate::support::{TestNode, quantity};

fn verify_account(
    view: &StateView,
    root: alloy_primitives::B256,
    address: Address,
    slots: &[U256],
) {
    let proof = view.proof(&address, slots).expect("proof");
    let expected = proof.account.as_ref().map(|a| a.trie_value());
    verify_proof(root, Nibbles::unpack(keccak256(address)), expected, &proof.account_proof)
        .unwrap_or_else(|e| panic!("account proof of {address} at {}: {e}", view.number()));
    let storage_root =
        proof.account.as_ref().map_or(hearth_storage::trie::EMPTY_ROOT, |a| a.storage_root);
    for slot in &proof.storage {
        let expected = (!slot.value.is_zero()).then(|| alloy_rlp::encode(slot.value));
        verify_proof(
            storage_root,
            Nibbles::unpack(keccak256(slot.slot.to_be_bytes::<32>())),
            expected,
            &slot.proof,
        )
        .unwrap_or_else(|e| panic!("slot {} proof at {}: {e}", slot.slot, view.number()));
    }
}

#[actix::test]
async fn proofs_verify_at_every_block_and_past_state_is_served() {
    or_skip!(crate::conformance::conformance_dir());
    let node = TestNode::start();
    let alice = node.signer(0).address();
    let bob = node.signer(1).address();
    let token = node.deploy_bench_token().await;
    let mut bob_balances = vec![];
    for value in 1..=3u64 {
        node.ok(
            "eth_sendTransaction",
            json!([{"from": alice, "to": bob, "value": format!("{value:#x}")}]),
        )
        .await;
        let transfer = format!("0xa9059cbb{:0>64}{:064x}", hex_of(bob), value);
        node.ok("eth_sendTransaction", json!([{"from": alice, "to": token, "data": transfer}]))
            .await;
        bob_balances.push(node.ok("eth_getBalance", json!([bob, "latest"])).await);
    }
    let head = node.block_number().await;
    assert_eq!(head, 7);

    // balanceOf[bob] lives at keccak(bob . 1): the mapping is slot 1 in BenchToken.
    let mut key = [0u8; 64];
    key[12..32].copy_from_slice(bob.as_slice());
    key[63] = 1;
    let bob_slot = U256::from_be_bytes(keccak256(key).0);
    for number in 0..=head {
        let view = node.node.chain.state_at(number);
        let root = node.node.chain.header(number).unwrap().unwrap().state_root;
        for address in [alice, bob, token, Address::repeat_byte(0x42)] {
            verify_account(&view, root, address, &[U256::ZERO, bob_slot, U256::from(7)]);
        }
    }
    // Past balances, nonces, code and storage are what they were at each block.
    for (i, expected) in bob_balances.iter().enumerate() {
        let block = format!("{:#x}", 3 + 2 * i as u64);
        assert_eq!(&node.ok("eth_getBalance", json!([bob, block])).await, expected);
    }
    assert_eq!(node.ok("eth_getCode", json!([token, "0x0"])).await, "0x");
    assert_ne!(node.ok("eth_getCode", json!([token, "0x1"])).await, "0x");
    assert_eq!(quantity(&node.ok("eth_getTransactionCount", json!([alice, "0x1"])).await), 1);
    let slot = format!("{bob_slot:#x}");
    let at = |n: u64| node.ok("eth_getStorageAt", json!([token, slot.clone(), format!("{n:#x}")]));
    assert_eq!(
        U256::from_str_radix(at(1).await.as_str().unwrap().trim_start_matches("0x"), 16).unwrap(),
        U256::ZERO
    );
    assert_eq!(
        U256::from_str_radix(at(7).await.as_str().unwrap().trim_start_matches("0x"), 16).unwrap(),
        U256::from(6)
    );
    // eth_call at a past block sees that block's state.
    let balance_of = format!("0x70a08231{:0>64}", hex_of(bob));
    let at_block_3 = node.ok("eth_call", json!([{"to": token, "data": balance_of}, "0x3"])).await;
    assert_eq!(
        U256::from_str_radix(at_block_3.as_str().unwrap().trim_start_matches("0x"), 16).unwrap(),
        U256::from(1)
    );
}

fn hex_of(address: Address) -> String {
    alloy_primitives::hex::encode(address.as_slice())
}
