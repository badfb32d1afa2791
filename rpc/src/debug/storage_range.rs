//! debug_storageRangeAt: `[blockHash, txIndex, address, keyStart, maxResult]`, geth's page of
//! an account's storage in hashed-key order: `{storage: {keccak(slot): {key: slot, value}},
//! nextKey}` (`nextKey` null on the last page).
//!
//! geth serves the state before transaction `txIndex` of the block by re-executing it. Hearth
//! keeps state per block, so it serves the two states it holds: before the block's first
//! transaction (`txIndex` 0 of a block that has transactions: the parent's state) and after its
//! last (`txIndex` equal to the block's transaction count, or 0 of a block without any, which
//! geth refuses or answers alike); an index inside the block is refused. A fork of this node
//! asks for the fork block's storage this way (`actors::fork`), one page per contract.

use alloy_primitives::{Address, B256, Bytes, keccak256};
use hearth_messages::storage::{SlotsError, storage_slots};
use serde_json::{Map, Value, json};

use crate::core::RpcContext;
use crate::core::RpcError;
use crate::core::{HexOrDecimal, Params};

/// Most entries one page may ask for.
pub(crate) const MAX_RESULTS: u64 = 10_000;

/// Most distinct slots an account may have for its storage to be paged (each page sorts them
/// all by hash); a larger one is refused with -32000.
pub(crate) const MAX_ACCOUNT_SLOTS: usize = 100_000;

/// debug_storageRangeAt.
pub(crate) fn storage_range_at(ctx: &RpcContext, params: &Params) -> Result<Value, RpcError> {
    params.at_most(5)?;
    let hash: B256 = params.required(0)?;
    let HexOrDecimal(tx_index) = params.required(1)?;
    let address: Address = params.required(2)?;
    let start: Bytes = params.required(3)?;
    let HexOrDecimal(max) = params.required(4)?;
    if start.len() > 32 {
        return Err(RpcError::InvalidParams(format!(
            "keyStart: at most 32 bytes, got {}",
            start.len()
        )));
    }
    if max > MAX_RESULTS {
        return Err(RpcError::InvalidParams(format!(
            "maxResult: at most {MAX_RESULTS}, got {max}"
        )));
    }
    let number = ctx.chain.block_number(&hash)?.ok_or(RpcError::UnknownBlock)?;
    let transactions = ctx.chain.body(number)?.map_or(0, |b| b.transactions.len() as u64);
    let at = match tx_index {
        i if i == transactions => number,
        0 => number.checked_sub(1).ok_or(RpcError::GenesisNotTraceable)?,
        i if i > transactions => {
            return Err(RpcError::Unsupported(format!(
                "transaction index {i} out of range for block {hash}"
            )));
        }
        i => {
            return Err(RpcError::Unsupported(format!(
                "transaction index {i}: only the state before a block's first transaction (0) \
                 or after its last ({transactions}) is served"
            )));
        }
    };
    let slots =
        storage_slots(&ctx.chain, &address, at, MAX_ACCOUNT_SLOTS).map_err(|e| match e {
            SlotsError::Storage(e) => RpcError::Storage(e),
            other => RpcError::Unsupported(format!("{other}; debug_storageRangeAt cannot page it")),
        })?;
    let mut hashed: Vec<(B256, B256, B256)> = slots
        .into_iter()
        .map(|(slot, value)| {
            let slot = B256::from(slot);
            (keccak256(slot), slot, B256::from(value))
        })
        .filter(|(key, _, _)| key.as_slice() >= start.as_ref())
        .collect();
    hashed.sort_unstable_by_key(|(key, _, _)| *key);
    let take = usize::try_from(max).unwrap_or(usize::MAX).min(hashed.len());
    let next = hashed.get(take).map(|(key, _, _)| *key);
    let mut storage = Map::new();
    for (key, slot, value) in hashed.into_iter().take(take) {
        storage.insert(key.to_string(), json!({"key": slot, "value": value}));
    }
    Ok(json!({"storage": storage, "nextKey": next}))
}
