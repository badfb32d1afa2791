//! eth_getProof: EIP-1186 account and storage proofs at any block, in geth's response shape;
//! and eth_getAccount, the account as the state trie holds it (what a proof proves).
//!
//! The proofs come from `StateView::proof`, which walks Hearth's own state and storage tries as
//! of the requested block (every trie node is kept, so any past block can be proven). A
//! non-existent account is proven absent and reported as geth does: zero balance and nonce,
//! the empty code hash and the empty storage root, with an empty proof for each slot. On a
//! fork, the upstream's state (below the fork block, or never written here) is proven by the
//! upstream.

use alloy_primitives::{Address, B256, Bytes, U64, U256};
use hearth_messages::StateView;
use hearth_messages::storage::trie::EMPTY_ROOT;
use hearth_messages::storage::{EMPTY_CODE_HASH, ProofQuery, StorageError};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::core::RpcContext;
use crate::core::RpcError;
use crate::core::{FromParam, Params};
use crate::core::{state_block, to_json};
use alloy_rpc_types_eth::BlockId;

use crate::eth::state::{LATEST, block_arg};

/// Most storage keys one request may ask for: each costs a trie walk and a proof of up to a
/// few KiB, so an unbounded list would let one request do unbounded work.
pub(crate) const MAX_PROOF_KEYS: usize = 1024;

/// One storage key as the caller wrote it: like geth we accept 1 to 64 hex digits (a quantity
/// or a 32-byte word, leading zeros allowed) and read them as a big-endian number.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct ProofKey {
    /// The slot.
    pub(crate) slot: U256,
    /// Whether the key was given as a full 32-byte word (63 or 64 digits): geth echoes those
    /// as 32-byte hex and anything shorter as a quantity.
    pub(crate) full_word: bool,
}

impl ProofKey {
    /// The key as geth echoes it in `storageProof[i].key`.
    fn echo(&self) -> String {
        if self.full_word { B256::from(self.slot).to_string() } else { format!("{:#x}", self.slot) }
    }
}

impl FromParam for ProofKey {
    fn from_param(value: &Value) -> Result<Self, String> {
        let s = value.as_str().ok_or_else(|| "expected a hex storage key".to_owned())?;
        let digits = s
            .strip_prefix("0x")
            .or_else(|| s.strip_prefix("0X"))
            .ok_or_else(|| "hex string without 0x prefix".to_owned())?;
        if digits.is_empty() || digits.len() > 64 {
            return Err(format!(
                "hex string has length {}, want 1 to 64 for a storage key",
                digits.len()
            ));
        }
        if !digits.bytes().all(|b| b.is_ascii_hexdigit()) {
            return Err("invalid hex string".to_owned());
        }
        let slot = U256::from_str_radix(digits, 16).map_err(|e| format!("invalid key: {e}"))?;
        // geth pads an odd digit count to whole bytes before measuring the length.
        Ok(Self { slot, full_word: digits.len().div_ceil(2) == 32 })
    }
}

/// The `storageKeys` argument: an array of keys (`null` means none, as in geth).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ProofKeys(pub(crate) Vec<ProofKey>);

impl FromParam for ProofKeys {
    fn from_param(value: &Value) -> Result<Self, String> {
        let items =
            value.as_array().ok_or_else(|| "expected an array of storage keys".to_owned())?;
        if items.len() > MAX_PROOF_KEYS {
            return Err(format!(
                "too many storage keys: {}, want at most {MAX_PROOF_KEYS}",
                items.len()
            ));
        }
        items
            .iter()
            .enumerate()
            .map(|(i, item)| {
                ProofKey::from_param(item).map_err(|e| format!("storage key {i}: {e}"))
            })
            .collect::<Result<_, _>>()
            .map(Self)
    }
}

/// geth's `AccountResult`, field for field.
#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct AccountResult {
    address: Address,
    account_proof: Vec<Bytes>,
    pub(crate) balance: U256,
    pub(crate) code_hash: B256,
    pub(crate) nonce: U64,
    pub(crate) storage_hash: B256,
    storage_proof: Vec<StorageResult>,
}

/// geth's `StorageResult`: the key as echoed, the value as a quantity, and the proof.
#[derive(Debug, Serialize, Deserialize)]
struct StorageResult {
    key: String,
    value: U256,
    proof: Vec<Bytes>,
}

/// eth_getProof: `[address, storageKeys, block?]`.
pub(crate) fn get_proof(ctx: &RpcContext, params: &Params) -> Result<Value, RpcError> {
    params.at_most(3)?;
    let address: Address = params.required(0)?;
    let ProofKeys(keys) = params.optional(1)?.unwrap_or(ProofKeys(Vec::new()));
    let number = state_block(ctx, block_arg(params, 2)?)?;
    let slots: Vec<U256> = keys.iter().map(|k| k.slot).collect();
    let view = ctx.chain.state_at(number);
    if let Some(proof) = upstream_proof(&view, &address, &keys)? {
        return to_json(&proof);
    }
    // An upstream contract written here keeps the upstream's storage under the local one: a
    // slot never written here reads the upstream's value, which the local trie cannot prove.
    if let Some(slot) = view.upstream_slot(&address, &slots)? {
        return Err(RpcError::UnprovableSlot { address, slot });
    }
    let proof = view.proof(&address, &slots)?;
    let storage_proof = keys
        .iter()
        .zip(proof.storage)
        .map(|(key, slot)| StorageResult { key: key.echo(), value: slot.value, proof: slot.proof })
        .collect();
    let account = proof.account;
    to_json(&AccountResult {
        address,
        account_proof: proof.account_proof,
        balance: account.as_ref().map_or(U256::ZERO, |a| a.balance),
        code_hash: account.as_ref().map_or(EMPTY_CODE_HASH, |a| a.code_hash),
        nonce: U64::from(account.as_ref().map_or(0, |a| a.nonce)),
        storage_hash: account.as_ref().map_or(EMPTY_ROOT, |a| a.storage_root),
        storage_proof,
    })
}

/// On a fork, the upstream's proof of `address` and `keys` in `view`, when the state proven is
/// the upstream's: below the fork block, the upstream's at that block; from the fork block on,
/// for an account this node never wrote, the upstream's at the fork block (the account is as it
/// was there). Its proof is against that upstream block's root, which the local trie (holding
/// only what was written here) does not have. An account written here (a dev account, a patch,
/// a local block) is proven from the local trie (`None`), never a mix of the two. Fetched once,
/// then cached like other fork reads; the keys are echoed as this node echoes them.
pub(crate) fn upstream_proof(
    view: &StateView,
    address: &Address,
    keys: &[ProofKey],
) -> Result<Option<AccountResult>, RpcError> {
    // The fork of the snapshot the view reads (an anvil_reset may have replaced the chain since).
    let Some(fork) = view.db().fork() else { return Ok(None) };
    let number = match view.number() {
        below if below < fork.block() => below,
        _ if !view.is_local(address)? => fork.block(),
        _ => return Ok(None),
    };
    let slots = keys.iter().map(|k| k.slot).collect();
    let query = ProofQuery { number, address: *address, slots };
    let json = fork.proof(&query)?;
    let mut proof: AccountResult = serde_json::from_slice(&json).map_err(|e| {
        RpcError::Storage(StorageError::Fork(format!("the upstream's eth_getProof answer: {e}")))
    })?;
    if proof.address != query.address || proof.storage_proof.len() != keys.len() {
        return Err(RpcError::Storage(StorageError::Fork(
            "the upstream's eth_getProof answer proves something else".to_owned(),
        )));
    }
    for (slot, key) in proof.storage_proof.iter_mut().zip(keys) {
        slot.key = key.echo();
    }
    Ok(Some(proof))
}

/// The fields of an account in the state trie, as geth's eth_getAccount answers them.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
struct TrieAccount {
    code_hash: B256,
    storage_root: B256,
    balance: U256,
    nonce: U64,
}

/// eth_getAccount: `[address, block?]`; the account as the state trie holds it (`codeHash`,
/// `storageRoot`, `balance`, `nonce`). An absent account answers the empty one, as geth does.
/// On a fork, an account of the upstream's state (below the fork block, or never written here)
/// is read from the upstream's proof, the one place its storage root is known.
pub(crate) fn get_account(
    ctx: &RpcContext,
    (address, block): (Address, Option<BlockId>),
) -> Result<Value, RpcError> {
    let number = state_block(ctx, block.unwrap_or(LATEST))?;
    let view = ctx.chain.state_at(number);
    if let Some(proof) = upstream_proof(&view, &address, &[])? {
        return to_json(&TrieAccount {
            code_hash: proof.code_hash,
            storage_root: proof.storage_hash,
            balance: proof.balance,
            nonce: proof.nonce,
        });
    }
    let account = view.proof(&address, &[])?.account;
    to_json(&TrieAccount {
        code_hash: account.as_ref().map_or(EMPTY_CODE_HASH, |a| a.code_hash),
        storage_root: account.as_ref().map_or(EMPTY_ROOT, |a| a.storage_root),
        balance: account.as_ref().map_or(U256::ZERO, |a| a.balance),
        nonce: U64::from(account.map_or(0, |a| a.nonce)),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn key(value: Value) -> Result<ProofKey, String> {
        ProofKey::from_param(&value)
    }

    #[test]
    fn keys_take_quantities_and_words_and_echo_like_geth() {
        let word = format!("0x{:064x}", 5);
        assert_eq!(key(json!(word)).map(|k| k.echo()), Ok(word));
        assert_eq!(key(json!("0x0")).map(|k| k.echo()), Ok("0x0".to_owned()));
        assert_eq!(key(json!("0x0005")).map(|k| k.echo()), Ok("0x5".to_owned()));
        let odd = format!("0x{}", "f".repeat(63));
        assert!(key(json!(odd)).is_ok_and(|k| k.full_word));
        assert!(key(json!(format!("0x{}", "0".repeat(65)))).is_err());
        assert!(key(json!("0x")).is_err());
        assert!(key(json!("5")).is_err());
        assert!(key(json!("0xzz")).is_err());
        assert!(key(json!(5)).is_err());
    }

    #[test]
    fn key_lists_are_bounded() {
        let many = Value::Array(vec![json!("0x1"); MAX_PROOF_KEYS + 1]);
        assert!(ProofKeys::from_param(&many).is_err());
        let ok = Value::Array(vec![json!("0x1"); MAX_PROOF_KEYS]);
        assert_eq!(ProofKeys::from_param(&ok).map(|k| k.0.len()), Ok(MAX_PROOF_KEYS));
        assert!(ProofKeys::from_param(&json!("0x1")).is_err());
    }
}
