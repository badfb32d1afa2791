//! hearth_getPatches: the dev patches made while a block was the head (anvil_setBalance,
//! anvil_setCode, anvil_setStorageAt, anvil_loadState, ...), in order, each with the state root
//! it left. A read replica replays them (`--follow`): they change state outside any block, so
//! the next block's state root cannot be checked without them.
//!
//! `[block, full, index]`: with `full` false (the default) each patch is its root only, which
//! a replica compares every round; with `full` true, each also lists the accounts it set
//! (whole fields, code included, and the slots it set). With `index`, only that patch (none
//! past the last): a replica fetches patches one at a time, so that an answer holds one.

use alloy_primitives::{B256, Bytes};
use alloy_rpc_types_eth::BlockNumberOrTag;
use hearth_messages::storage::PatchRecord;
use serde_json::{Map, Value, json};

use crate::core::{Params, RpcContext, RpcError, lookup_block};

/// hearth_getPatches: `[block, full?, index?]`; `null` for a block after the head.
pub(crate) fn get_patches(ctx: &RpcContext, params: &Params) -> Result<Value, RpcError> {
    params.at_most(3)?;
    let tag: BlockNumberOrTag = params.required(0)?;
    let full: bool = params.optional(1)?.unwrap_or(false);
    let index: Option<crate::core::HexOrDecimal> = params.optional(2)?;
    let Some(number) = lookup_block(ctx, tag)? else { return Ok(Value::Null) };
    let Some(header) = ctx.chain.header(number)? else { return Ok(Value::Null) };
    let mut patches = Vec::new();
    if full {
        let records = ctx.chain.patches_at(number)?;
        let skip = index.map_or(0, |i| usize::try_from(i.0).unwrap_or(usize::MAX));
        let take = if index.is_some() { 1 } else { usize::MAX };
        for record in records.iter().skip(skip).take(take) {
            patches.push(patch_json(ctx, record)?);
        }
    } else {
        for root in ctx.chain.patch_roots_at(number)? {
            patches.push(json!({"stateRoot": root}));
        }
    }
    Ok(json!({
        "number": format!("{number:#x}"),
        "stateRoot": header.state_root,
        "patches": patches,
    }))
}

/// One patch with the accounts it set.
fn patch_json(ctx: &RpcContext, record: &PatchRecord) -> Result<Value, RpcError> {
    let mut accounts = Vec::with_capacity(record.accounts.len());
    for account in &record.accounts {
        let code = code(ctx, account.code_hash)?;
        let storage: Map<String, Value> = account
            .storage
            .iter()
            .map(|slot| (format!("{:#x}", slot.slot), json!(format!("{:#x}", slot.value))))
            .collect();
        accounts.push(json!({
            "address": account.address,
            "nonce": format!("{:#x}", account.nonce),
            "balance": format!("{:#x}", account.balance),
            "code": code,
            "storage": storage,
        }));
    }
    Ok(json!({"stateRoot": record.root, "accounts": accounts}))
}

/// The code of `hash` (empty for the empty code's hash).
fn code(ctx: &RpcContext, hash: B256) -> Result<Bytes, RpcError> {
    if hash == alloy_primitives::KECCAK256_EMPTY {
        return Ok(Bytes::new());
    }
    ctx.chain.code(&hash)?.ok_or(RpcError::Storage(
        hearth_messages::storage::StorageError::Corrupt { what: "the code of a patched account" },
    ))
}
