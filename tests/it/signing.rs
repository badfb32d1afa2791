//! Signing for the dev accounts (eth_sign, personal_sign, eth_signTypedData_v4,
//! eth_signTransaction) and EIP-7702 authorizations in the transaction object
//! (eth_sendTransaction, eth_call, eth_estimateGas, eth_simulateV1), through the JSON-RPC
//! front of an in-memory node. Signatures are checked by recovering the signer with alloy and,
//! for typed data, against the EIP-712 specification's own example hash.

use alloy_consensus::transaction::SignerRecoverable;
use alloy_consensus::{Transaction, TxEnvelope};
use alloy_eips::eip2718::Decodable2718;
use alloy_eips::eip7702::{Authorization, SignedAuthorization};
use alloy_primitives::{Address, B256, Bytes, Signature, U256, b256, eip191_hash_message};
use alloy_signer::SignerSync;
use alloy_signer_local::PrivateKeySigner;
use hearth::config::NodeConfig;
use serde_json::{Value, json};

use crate::support::{TestNode, quantity};

/// The EIP-712 specification's example: a Mail between two Persons.
fn spec_mail() -> Value {
    json!({
        "types": {
            "EIP712Domain": [
                {"name": "name", "type": "string"},
                {"name": "version", "type": "string"},
                {"name": "chainId", "type": "uint256"},
                {"name": "verifyingContract", "type": "address"}
            ],
            "Person": [{"name": "name", "type": "string"}, {"name": "wallet", "type": "address"}],
            "Mail": [
                {"name": "from", "type": "Person"},
                {"name": "to", "type": "Person"},
                {"name": "contents", "type": "string"}
            ]
        },
        "primaryType": "Mail",
        "domain": {
            "name": "Ether Mail",
            "version": "1",
            "chainId": 1,
            "verifyingContract": "0xCcCCccccCCCCcCCCCCCcCcCccCcCCCcCcccccccC"
        },
        "message": {
            "from": {"name": "Cow", "wallet": "0xCD2a3d9F938E13CD947Ec05AbC7FE734Df8DD826"},
            "to": {"name": "Bob", "wallet": "0xbBbBBBBbbBBBbbbBbbBbbbbBBbBbbbbBbBbbBBbB"},
            "contents": "Hello, Bob!"
        }
    })
}

/// The signing hash the EIP-712 specification gives for [`spec_mail`].
const SPEC_MAIL_HASH: B256 =
    b256!("be609aee343fb3c4b28e1df9e632fca64fcfaede20f02e86244efddf30957bd2");

/// Runtime code that returns the address it runs as (ADDRESS, MSTORE, RETURN 32 bytes).
const WHO_AM_I: &str = "3060005260206000f3";

fn signature(value: &Value) -> Signature {
    let bytes: Bytes = serde_json::from_value(value.clone()).expect("hex signature");
    assert_eq!(bytes.len(), 65, "r ‖ s ‖ v");
    assert!(matches!(bytes[64], 27 | 28), "v is 27 or 28: {value}");
    Signature::try_from(bytes.as_ref()).expect("a signature")
}

/// What the chain and pool look like: head, pending count, A0's pending nonce.
async fn chain_state(node: &TestNode) -> (u64, Value, Value) {
    let a0 = node.signer(0).address();
    (
        node.block_number().await,
        node.ok("txpool_status", json!([])).await,
        node.ok("eth_getTransactionCount", json!([a0, "pending"])).await,
    )
}

#[actix::test]
async fn messages_are_signed_as_eip191_by_the_dev_key() {
    let node = TestNode::start();
    let alice = node.signer(0);
    let data = "0xdeadbeef00";
    let signed = node.ok("eth_sign", json!([alice.address(), data])).await;
    let personal = node.ok("personal_sign", json!([data, alice.address()])).await;
    assert_eq!(signed, personal, "the same signature, arguments the other way round");
    let hash = eip191_hash_message([0xde, 0xad, 0xbe, 0xef, 0x00]);
    assert_eq!(signature(&signed).recover_address_from_prehash(&hash).unwrap(), alice.address());
    assert_eq!(signature(&signed), alice.sign_message_sync(&[0xde, 0xad, 0xbe, 0xef, 0]).unwrap());
    // Empty data signs too; text that is not hex is bad params, as in anvil.
    node.ok("eth_sign", json!([alice.address(), "0x"])).await;
    assert_eq!(node.err("eth_sign", json!([alice.address(), "hello"])).await.0, -32602);
    assert_eq!(node.err("eth_sign", json!([alice.address()])).await.0, -32602);
    assert_eq!(node.err("personal_sign", json!([data, alice.address(), "pw"])).await.0, -32602);
}

#[actix::test]
async fn typed_data_is_signed_over_the_eip712_hash() {
    let node = TestNode::start();
    let bob = node.signer(1);
    let signed = node.ok("eth_signTypedData_v4", json!([bob.address(), spec_mail()])).await;
    let recovered = signature(&signed).recover_address_from_prehash(&SPEC_MAIL_HASH).unwrap();
    assert_eq!(recovered, bob.address());
    // viem and ethers send the typed data as a JSON string.
    let as_string = spec_mail().to_string();
    assert_eq!(node.ok("eth_signTypedData_v4", json!([bob.address(), as_string])).await, signed);
}

#[actix::test]
async fn malformed_typed_data_is_bad_params_and_changes_nothing() {
    let node = TestNode::start();
    let alice = node.signer(0).address();
    let before = chain_state(&node).await;
    let mut no_types = spec_mail();
    no_types.as_object_mut().unwrap().remove("types");
    let mut wrong_primary = spec_mail();
    wrong_primary["primaryType"] = json!("Letter");
    let too_big = json!({
        "types": {"EIP712Domain": [{"name": "name", "type": "string"}],
                  "Small": [{"name": "v", "type": "uint8"}]},
        "primaryType": "Small", "domain": {"name": "x"}, "message": {"v": 256}
    });
    for (typed, says) in
        [(no_types, "types"), (wrong_primary, "Letter"), (too_big, "uint8"), (json!(5), "object")]
    {
        let (code, message, _) = node.err("eth_signTypedData_v4", json!([alice, typed])).await;
        assert_eq!(code, -32602, "{message}");
        assert!(message.contains(says), "{message} should name {says}");
    }
    let mut fits = json!({
        "types": {"EIP712Domain": [{"name": "name", "type": "string"}],
                  "Small": [{"name": "v", "type": "uint8"}]},
        "primaryType": "Small", "domain": {"name": "x"}, "message": {"v": 255}
    });
    node.ok("eth_signTypedData_v4", json!([alice, fits.clone()])).await;
    fits["message"]["v"] = json!("0xff");
    node.ok("eth_signTypedData_v4", json!([alice, fits])).await;
    assert_eq!(chain_state(&node).await, before);
}

#[actix::test]
async fn only_accounts_with_a_key_sign() {
    let node = TestNode::start();
    let stranger = Address::repeat_byte(0xc0);
    let before = chain_state(&node).await;
    // An impersonated account can send, but it has no key to sign with.
    node.ok("anvil_impersonateAccount", json!([stranger])).await;
    let requests = [
        ("eth_sign", json!([stranger, "0x01"])),
        ("personal_sign", json!(["0x01", stranger])),
        ("eth_signTypedData_v4", json!([stranger, spec_mail()])),
        ("eth_signTransaction", json!([{"from": stranger, "to": stranger, "gas": "0x5208"}])),
        ("eth_signTransaction", json!([{"to": stranger, "gas": "0x5208"}])),
    ];
    for (method, params) in requests {
        let (code, message, _) = node.err(method, params).await;
        assert_eq!((code, message.as_str()), (-32000, "unknown account"), "{method}");
    }
    assert_eq!(chain_state(&node).await, before);
}

#[actix::test]
async fn no_unlocked_accounts_refuses_every_signing_method() {
    let mut config = NodeConfig::for_tests();
    config.unlocked_accounts = false;
    let node = TestNode::start_with(config);
    let alice = node.signer(0).address();
    let requests = [
        ("eth_sign", json!([alice, "0x01"])),
        ("personal_sign", json!(["0x01", alice])),
        ("eth_signTypedData_v4", json!([alice, spec_mail()])),
        ("eth_signTransaction", json!([{"from": alice, "to": alice, "gas": "0x5208"}])),
        ("eth_sendTransaction", json!([{"from": alice, "to": alice, "gas": "0x5208"}])),
    ];
    for (method, params) in requests {
        let (code, message, _) = node.err(method, params).await;
        assert_eq!((code, message.as_str()), (-32000, "unknown account"), "{method}");
    }
}

#[actix::test]
async fn sign_transaction_fills_and_signs_but_sends_nothing() {
    let node = TestNode::start();
    let alice = node.signer(0);
    let bob = node.signer(1).address();
    // One sent first, so the filled nonce must be the pending one (1), not 0.
    node.ok("eth_sendTransaction", json!([{"from": alice.address(), "to": bob, "value": "0x1"}]))
        .await;
    let before = chain_state(&node).await;
    let raw = node.ok("eth_signTransaction", json!([{"from": alice.address(), "to": bob}])).await;
    let bytes: Bytes = serde_json::from_value(raw.clone()).unwrap();
    let tx = TxEnvelope::decode_2718(&mut bytes.as_ref()).expect("EIP-2718 bytes");
    assert_eq!(tx.recover_signer().unwrap(), alice.address());
    assert_eq!((tx.tx_type() as u8, tx.nonce(), tx.gas_limit()), (2, 1, 21_000));
    assert_eq!(tx.chain_id(), Some(quantity(&node.ok("eth_chainId", json!([])).await)));
    assert_eq!(chain_state(&node).await, before, "nothing sent");
    // A legacy one with the caller's fields, then the signed bytes really send.
    let legacy = json!([{"from": alice.address(), "to": bob, "gasPrice": "0x77359400",
                         "gas": "0x5208", "nonce": "0x1", "value": "0x2"}]);
    let raw_legacy = node.ok("eth_signTransaction", legacy).await;
    let bytes: Bytes = serde_json::from_value(raw_legacy.clone()).unwrap();
    let tx = TxEnvelope::decode_2718(&mut bytes.as_ref()).unwrap();
    assert_eq!(
        (tx.tx_type() as u8, tx.gas_price(), tx.value()),
        (0, Some(2_000_000_000), U256::from(2))
    );
    let hash = node.ok("eth_sendRawTransaction", json!([raw_legacy])).await;
    let receipt = node.ok("eth_getTransactionReceipt", json!([hash])).await;
    assert_eq!(receipt["status"], "0x1");
    // Blob fields cannot be filled into a transaction the node could sign.
    let blob = json!([{"from": alice.address(), "to": bob, "blobVersionedHashes": [B256::ZERO],
                       "maxFeePerBlobGas": "0x1", "maxFeePerGas": "0x1"}]);
    let (code, message, _) = node.err("eth_signTransaction", blob).await;
    assert_eq!(code, -32602);
    assert!(message.contains("blob"), "{message}");
}

#[actix::test]
async fn unknown_transaction_fields_are_named_not_dropped() {
    let node = TestNode::start();
    let alice = node.signer(0).address();
    let before = chain_state(&node).await;
    let tx = json!({"from": alice, "to": alice, "maxFeePerGass": "0x1"});
    for (method, params) in [
        ("eth_call", json!([tx.clone(), "latest"])),
        ("eth_estimateGas", json!([tx.clone()])),
        ("eth_sendTransaction", json!([tx.clone()])),
        ("eth_signTransaction", json!([tx.clone()])),
        ("eth_createAccessList", json!([tx.clone()])),
        ("debug_traceCall", json!([tx.clone(), "latest"])),
    ] {
        let (code, message, _) = node.err(method, params).await;
        assert_eq!(code, -32602, "{method}");
        assert!(message.contains("maxFeePerGass"), "{method}: {message}");
    }
    assert_eq!(chain_state(&node).await, before);
    // Every GenericTransaction member is understood.
    let full = json!({"type": "0x2", "nonce": "0x0", "to": alice, "from": alice, "gas": "0x7530",
        "value": "0x0", "input": "0x", "data": "0x", "maxPriorityFeePerGas": "0x0",
        "maxFeePerGas": "0x174876e800", "accessList": [], "chainId": "0x7a69"});
    node.ok("eth_call", json!([full, "latest"])).await;
    let (code, message, _) = node.err("eth_call", json!([{"to": alice, "type": "2"}])).await;
    assert_eq!(code, -32602);
    assert!(message.contains("type"), "{message}");
}

/// `signer`'s authorization for `delegate` at `nonce` on `chain_id`.
fn authorize(
    signer: &PrivateKeySigner,
    chain_id: u64,
    delegate: Address,
    nonce: u64,
) -> SignedAuthorization {
    let authorization = Authorization { chain_id: U256::from(chain_id), address: delegate, nonce };
    let signature = signer.sign_hash_sync(&authorization.signature_hash()).expect("signs");
    authorization.into_signed(signature)
}

/// Deploys [`WHO_AM_I`] from account 0; its address.
async fn deploy_who_am_i(node: &TestNode) -> Address {
    // PUSH9 runtime, PUSH1 0, MSTORE, RETURN(23, 9).
    let init = format!("0x68{WHO_AM_I}60005260096017f3");
    let from = node.signer(0).address();
    let hash = node.ok("eth_sendTransaction", json!([{"from": from, "data": init}])).await;
    let receipt = node.ok("eth_getTransactionReceipt", json!([hash])).await;
    assert_eq!(receipt["status"], "0x1");
    let address: Address =
        serde_json::from_value(receipt["contractAddress"].clone()).expect("an address");
    assert_eq!(node.ok("eth_getCode", json!([address, "latest"])).await, format!("0x{WHO_AM_I}"));
    address
}

fn word(address: Address) -> String {
    format!("0x{:0>64}", alloy_primitives::hex::encode(address))
}

#[actix::test]
async fn send_transaction_delegates_an_eoa_with_an_authorization_list() {
    let node = TestNode::start();
    let chain_id = quantity(&node.ok("eth_chainId", json!([])).await);
    let contract = deploy_who_am_i(&node).await;
    let (sponsor, bob) = (node.signer(0), node.signer(1));
    let auth = authorize(&bob, chain_id, contract, 0);
    let tx = json!({"from": sponsor.address(), "to": bob.address(), "authorizationList": [auth]});
    let hash = node.ok("eth_sendTransaction", json!([tx])).await;
    let mined = node.ok("eth_getTransactionByHash", json!([hash])).await;
    assert_eq!(mined["type"], "0x4");
    assert_eq!(mined["authorizationList"][0]["address"], json!(contract));
    let receipt = node.ok("eth_getTransactionReceipt", json!([hash])).await;
    assert_eq!(receipt["status"], "0x1");
    let code = node.ok("eth_getCode", json!([bob.address(), "latest"])).await;
    assert_eq!(code, format!("0xef0100{}", alloy_primitives::hex::encode(contract)));
    // Bob's account now runs the contract's code, as itself.
    let out = node.ok("eth_call", json!([{"to": bob.address()}, "latest"])).await;
    assert_eq!(out, word(bob.address()));
    // The authority's nonce moved.
    let nonce = node.ok("eth_getTransactionCount", json!([bob.address(), "latest"])).await;
    assert_eq!(nonce, "0x1");
}

#[actix::test]
async fn calls_see_an_authorization_without_committing_it() {
    let node = TestNode::start();
    let chain_id = quantity(&node.ok("eth_chainId", json!([])).await);
    let contract = deploy_who_am_i(&node).await;
    let carol = node.signer(2);
    let auth = json!([authorize(&carol, chain_id, contract, 0)]);
    let before = chain_state(&node).await;
    let plain = json!({"to": carol.address()});
    let delegated = json!({"to": carol.address(), "authorizationList": auth});
    assert_eq!(node.ok("eth_call", json!([plain.clone(), "latest"])).await, "0x");
    let out = node.ok("eth_call", json!([delegated.clone(), "latest"])).await;
    assert_eq!(out, word(carol.address()));
    let plain_gas = quantity(&node.ok("eth_estimateGas", json!([plain])).await);
    let delegated_gas = quantity(&node.ok("eth_estimateGas", json!([delegated.clone()])).await);
    // An authorization costs 25,000 gas, 12,500 of it refunded for an existing account.
    assert!(delegated_gas >= plain_gas + 12_500, "{plain_gas} then {delegated_gas}");
    // eth_simulateV1 runs it as a type-4 transaction.
    let payload = json!([{"blockStateCalls": [{"calls": [{"from": node.signer(0).address(),
        "to": carol.address(), "authorizationList": auth}]}]}, "latest"]);
    let simulated = node.ok("eth_simulateV1", payload).await;
    let call = &simulated[0]["calls"][0];
    assert_eq!(call["status"], "0x1", "{simulated}");
    assert_eq!(call["returnData"], word(carol.address()));
    // Nothing was committed.
    assert_eq!(node.ok("eth_getCode", json!([carol.address(), "latest"])).await, "0x");
    assert_eq!(chain_state(&node).await, before);
}

#[actix::test]
async fn a_badly_signed_authorization_is_skipped_not_fatal() {
    let node = TestNode::start();
    let chain_id = quantity(&node.ok("eth_chainId", json!([])).await);
    let contract = deploy_who_am_i(&node).await;
    let carol = node.signer(2);
    let mut auth = serde_json::to_value(authorize(&carol, chain_id, contract, 0)).unwrap();
    // An s above the curve order's half (and r of the wrong point) recovers no authority.
    auth["s"] = json!("0xffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff00");
    let call = json!({"to": carol.address(), "authorizationList": [auth]});
    assert_eq!(node.ok("eth_call", json!([call, "latest"])).await, "0x", "no delegation");
    // An authorization for another chain is skipped as well.
    let other_chain = authorize(&carol, chain_id + 1, contract, 0);
    let call = json!({"to": carol.address(), "authorizationList": [other_chain]});
    assert_eq!(node.ok("eth_call", json!([call, "latest"])).await, "0x");
    // A malformed one (no yParity) is bad params, and so is a type-4 call that creates.
    let mut no_parity = serde_json::to_value(authorize(&carol, chain_id, contract, 0)).unwrap();
    no_parity.as_object_mut().unwrap().remove("yParity");
    let call = json!({"to": carol.address(), "authorizationList": [no_parity]});
    let (code, message, _) = node.err("eth_call", json!([call, "latest"])).await;
    assert_eq!(code, -32602);
    assert!(message.contains("yParity"), "{message}");
    let call = json!({"authorizationList": [], "data": "0x00"});
    let (code, message, _) = node.err("eth_call", json!([call, "latest"])).await;
    assert_eq!(code, -32602, "{message}");
    // An empty list breaks EIP-7702's rule, as geth reports it.
    let call = json!({"to": carol.address(), "authorizationList": []});
    let (code, message, _) = node.err("eth_call", json!([call, "latest"])).await;
    assert_eq!(code, -32000, "{message}");
    assert!(message.contains("authorization"), "{message}");
    // A bad authorization in a sent transaction is skipped too: the transaction is mined.
    let tx = json!({"from": node.signer(0).address(), "to": carol.address(),
                    "authorizationList": [auth]});
    let hash = node.ok("eth_sendTransaction", json!([tx])).await;
    let receipt = node.ok("eth_getTransactionReceipt", json!([hash])).await;
    assert_eq!(receipt["status"], "0x1");
    assert_eq!(node.ok("eth_getCode", json!([carol.address(), "latest"])).await, "0x");
}

#[actix::test]
async fn a_signed_type4_transaction_sends_raw() {
    let node = TestNode::start();
    let chain_id = quantity(&node.ok("eth_chainId", json!([])).await);
    let contract = deploy_who_am_i(&node).await;
    let (sponsor, dave) = (node.signer(0).address(), node.signer(3));
    let auth = authorize(&dave, chain_id, contract, 0);
    let tx = json!({"from": sponsor, "to": dave.address(), "authorizationList": [auth]});
    let raw = node.ok("eth_signTransaction", json!([tx])).await;
    let bytes: Bytes = serde_json::from_value(raw.clone()).expect("hex");
    let decoded = TxEnvelope::decode_2718(&mut bytes.as_ref()).expect("EIP-2718 bytes");
    assert_eq!(decoded.tx_type() as u8, 4);
    assert_eq!(decoded.authorization_list().map(<[_]>::len), Some(1));
    assert_eq!(node.ok("eth_getCode", json!([dave.address(), "latest"])).await, "0x", "not sent");
    let hash = node.ok("eth_sendRawTransaction", json!([raw])).await;
    let receipt = node.ok("eth_getTransactionReceipt", json!([hash])).await;
    assert_eq!((receipt["status"].as_str(), receipt["type"].as_str()), (Some("0x1"), Some("0x4")));
    let out = node.ok("eth_call", json!([{"to": dave.address()}, "latest"])).await;
    assert_eq!(out, word(dave.address()));
}

#[actix::test]
async fn an_account_delegates_itself() {
    let node = TestNode::start();
    let chain_id = quantity(&node.ok("eth_chainId", json!([])).await);
    let contract = deploy_who_am_i(&node).await;
    let erin = node.signer(4);
    // The sender's nonce moves before authorizations are applied: the authorization carries
    // the next one.
    let auth = authorize(&erin, chain_id, contract, 1);
    let tx = json!({"from": erin.address(), "to": erin.address(), "authorizationList": [auth]});
    let out = node.ok("eth_call", json!([tx.clone(), "latest"])).await;
    assert_eq!(out, word(erin.address()));
    let hash = node.ok("eth_sendTransaction", json!([tx])).await;
    let receipt = node.ok("eth_getTransactionReceipt", json!([hash])).await;
    assert_eq!(receipt["status"], "0x1");
    let code = node.ok("eth_getCode", json!([erin.address(), "latest"])).await;
    assert_eq!(code, format!("0xef0100{}", alloy_primitives::hex::encode(contract)));
    let nonce = node.ok("eth_getTransactionCount", json!([erin.address(), "latest"])).await;
    assert_eq!(nonce, "0x2", "one for the transaction, one for the authorization");
}
