//! Signing with the dev accounts' keys: eth_sign, personal_sign, eth_signTypedData_v4 and
//! eth_signTransaction.
//!
//! Only an account whose key the node holds can sign: an impersonated account has no key
//! (anvil refuses it too), and with `--no-unlocked-accounts` the front holds no keys at all,
//! so every one of these answers -32000 "unknown account", as eth_sendTransaction does.
//! Messages are signed as EIP-191 personal messages, typed data through alloy's EIP-712
//! support (`alloy_dyn_abi::TypedData`), and signatures are returned as 65 bytes `r ‖ s ‖ v`
//! with `v` 27 or 28, the form every wallet and library recovers from.

use alloy_dyn_abi::TypedData;
use alloy_eips::eip2718::Encodable2718;
use alloy_primitives::{Address, B256, Bytes, Signature};
use alloy_signer::SignerSync;
use alloy_signer_local::PrivateKeySigner;
use serde_json::Value;

use crate::core::RpcContext;
use crate::core::RpcError;
use crate::core::to_json;
use crate::core::{Params, TxObject, json_kind};
use crate::eth::state::pending_nonce;
use crate::eth::tx::{Sealer, fill};

/// The dev key of `address`, or "unknown account".
fn signer_for(ctx: &RpcContext, address: Address) -> Result<&PrivateKeySigner, RpcError> {
    ctx.signers.iter().find(|s| s.address() == address).ok_or(RpcError::UnknownAccount)
}

/// A signature as the 65 bytes wallets return: `r ‖ s ‖ v`, `v` being 27 or 28.
fn signature_json(signature: &Signature) -> Result<Value, RpcError> {
    to_json(&Bytes::from(signature.as_bytes().to_vec()))
}

/// Signs `message` as an EIP-191 personal message (`"\x19Ethereum Signed Message:\n" ‖ len ‖
/// message`, hashed).
fn sign_message(signer: &PrivateKeySigner, message: &[u8]) -> Result<Value, RpcError> {
    signature_json(&signer.sign_message_sync(message)?)
}

/// eth_sign: `[address, data]`; the EIP-191 signature of `data` by `address`.
pub(crate) fn eth_sign(ctx: &RpcContext, params: &Params) -> Result<Value, RpcError> {
    params.at_most(2)?;
    let address: Address = params.required(0)?;
    let data: Bytes = params.required(1)?;
    sign_message(signer_for(ctx, address)?, &data)
}

/// personal_sign: `[data, address]` (eth_sign's arguments the other way round, as MetaMask
/// and ethers send them); the same signature.
pub(crate) fn personal_sign(ctx: &RpcContext, params: &Params) -> Result<Value, RpcError> {
    params.at_most(2)?;
    let data: Bytes = params.required(0)?;
    let address: Address = params.required(1)?;
    sign_message(signer_for(ctx, address)?, &data)
}

/// The members EIP-712 typed data must have, checked first so a missing one is named rather
/// than reported as a failed untagged decode.
const TYPED_DATA_FIELDS: [&str; 4] = ["types", "primaryType", "domain", "message"];

/// Decodes eth_signTypedData_v4's typed data: an object, or the same object as a JSON string
/// (what viem and ethers send).
fn typed_data(value: &Value) -> Result<TypedData, RpcError> {
    let bad = |reason: String| RpcError::InvalidParams(format!("invalid typed data: {reason}"));
    let parsed;
    let object = match value {
        Value::String(text) => {
            parsed = serde_json::from_str::<Value>(text).map_err(|e| bad(e.to_string()))?;
            &parsed
        }
        other => other,
    };
    let Some(members) = object.as_object() else {
        return Err(bad(format!("expected an object, got {}", json_kind(object))));
    };
    if let Some(missing) = TYPED_DATA_FIELDS.iter().find(|f| !members.contains_key(**f)) {
        return Err(bad(format!("missing field {missing:?}")));
    }
    serde_json::from_value(object.clone()).map_err(|e| bad(e.to_string()))
}

/// The EIP-712 signing hash of `data`: resolves the types and encodes the message against them
/// (a missing type, a wrong primary type or a value out of its type's range fails here).
fn typed_data_hash(data: &TypedData) -> Result<B256, RpcError> {
    data.eip712_signing_hash()
        .map_err(|e| RpcError::InvalidParams(format!("invalid typed data: {e}")))
}

/// eth_signTypedData_v4: `[address, typedData]`; the EIP-712 signature.
pub(crate) fn sign_typed_data_v4(ctx: &RpcContext, params: &Params) -> Result<Value, RpcError> {
    params.at_most(2)?;
    let address: Address = params.required(0)?;
    let raw: Value = params.required(1)?;
    // Decoded and hashed before the account is looked up: malformed data is the caller's
    // error whoever signs it.
    let hash = typed_data_hash(&typed_data(&raw)?)?;
    let signer = signer_for(ctx, address)?;
    signature_json(&signer.sign_hash_sync(&hash)?)
}

/// eth_signTransaction: `[txObject]` with a `from` the node holds a key for; fills nonce (the
/// pending one), gas and fees as eth_sendTransaction does and answers the signed transaction's
/// EIP-2718 bytes. Nothing is sent: the pool and the chain do not change.
pub(crate) async fn sign_transaction(ctx: &RpcContext, params: &Params) -> Result<Value, RpcError> {
    params.at_most(1)?;
    let request: TxObject = params.required(0)?;
    let from = request.from.ok_or(RpcError::UnknownAccount)?;
    request.refuse_blobs("eth_signTransaction")?;
    let key = B256::from_slice(&signer_for(ctx, from)?.credential().to_bytes());
    let nonce = match request.nonce {
        Some(nonce) => nonce,
        None => pending_nonce(ctx, from).await?,
    };
    let filled = fill(ctx, from, request).await?;
    let signed = Sealer::Key(key).seal(from, filled, nonce)?;
    to_json(&Bytes::from(signed.encoded_2718()))
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn mail() -> Value {
        json!({
            "types": {
                "EIP712Domain": [
                    {"name": "name", "type": "string"},
                    {"name": "chainId", "type": "uint256"}
                ],
                "Person": [{"name": "name", "type": "string"}, {"name": "wallet", "type": "address"}],
                "Mail": [
                    {"name": "from", "type": "Person"},
                    {"name": "to", "type": "Person"},
                    {"name": "contents", "type": "string"}
                ]
            },
            "primaryType": "Mail",
            "domain": {"name": "Ether Mail", "chainId": 1},
            "message": {
                "from": {"name": "Cow", "wallet": "0xCD2a3d9F938E13CD947Ec05AbC7FE734Df8DD826"},
                "to": {"name": "Bob", "wallet": "0xbBbBBBBbbBBBbbbBbbBbbbbBBbBbbbbBbBbbBBbB"},
                "contents": "Hello, Bob!"
            }
        })
    }

    #[test]
    fn typed_data_decodes_from_an_object_or_its_json_string() {
        let object = typed_data_hash(&typed_data(&mail()).unwrap()).unwrap();
        let text = typed_data_hash(&typed_data(&Value::String(mail().to_string())).unwrap());
        assert_eq!(object, text.unwrap());
    }

    #[test]
    fn malformed_typed_data_names_what_is_wrong() {
        let message = |value: Value| {
            let result = typed_data(&value).and_then(|data| typed_data_hash(&data));
            match result {
                Err(RpcError::InvalidParams(message)) => message,
                other => panic!("expected invalid params, got {other:?}"),
            }
        };
        let mut no_types = mail();
        no_types.as_object_mut().unwrap().remove("types");
        assert!(message(no_types).contains("missing field \"types\""));
        let mut wrong_primary = mail();
        wrong_primary["primaryType"] = json!("Letter");
        assert!(message(wrong_primary).contains("Letter"));
        let small = json!({
            "types": {"EIP712Domain": [], "T": [{"name": "v", "type": "uint8"}]},
            "primaryType": "T", "domain": {}, "message": {"v": 256}
        });
        assert!(message(small).contains("uint8"));
        assert!(message(json!("not json")).contains("invalid typed data"));
        assert!(message(json!(7)).contains("expected an object, got a number"));
    }
}
