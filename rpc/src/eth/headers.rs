//! Headers and ommers: eth_getHeaderByNumber / ByHash, eth_getUncleCountByBlockNumber / ByHash
//! and eth_getUncleByBlockNumberAndIndex / ByHashAndIndex.
//!
//! Ommers exist only before the merge: a post-merge block (every dev block) has none, so its
//! count is zero and every index is `null`, while an imported pre-merge block answers with the
//! ommer headers it was imported with. As geth, an ommer is shown as a block without a body.

use alloy_consensus::Header as ConsensusHeader;
use alloy_primitives::{B256, U256};
use alloy_rpc_types_eth::{BlockNumberOrTag, Header};
use serde_json::Value;

use crate::core::Params;
use crate::core::RpcContext;
use crate::core::RpcError;
use crate::core::{lookup_block, quantity, read_block, read_block_by_hash, to_json};

/// `header` as an RPC header object (geth's RPCMarshalHeader: the block's fields, no body and
/// no size).
const fn rpc_header(header: ConsensusHeader, hash: B256) -> Header {
    Header { hash, inner: header, total_difficulty: None, size: None }
}

/// eth_getHeaderByNumber: `[block]`; `null` after the head.
pub(crate) fn get_header_by_number(ctx: &RpcContext, params: &Params) -> Result<Value, RpcError> {
    params.at_most(1)?;
    let tag: BlockNumberOrTag = params.required(0)?;
    let Some(number) = lookup_block(ctx, tag)? else { return Ok(Value::Null) };
    let (Some(header), Some(hash)) = (ctx.chain.header(number)?, ctx.chain.block_hash(number)?)
    else {
        return Ok(Value::Null);
    };
    to_json(&rpc_header(header, hash))
}

/// eth_getHeaderByHash: `[hash]`; `null` when unknown.
pub(crate) fn get_header_by_hash(ctx: &RpcContext, params: &Params) -> Result<Value, RpcError> {
    params.at_most(1)?;
    let hash: B256 = params.required(0)?;
    let Some(number) = ctx.chain.block_number(&hash)? else { return Ok(Value::Null) };
    let Some(header) = ctx.chain.header(number)? else { return Ok(Value::Null) };
    to_json(&rpc_header(header, hash))
}

/// The ommer headers of the block a number or tag names; `None` after the head.
fn ommers_by_number(
    ctx: &RpcContext,
    tag: BlockNumberOrTag,
) -> Result<Option<Vec<ConsensusHeader>>, RpcError> {
    let Some(number) = lookup_block(ctx, tag)? else { return Ok(None) };
    Ok(read_block(ctx, number)?.map(|b| b.extras.ommers))
}

/// The ommer headers of the block with `hash`; `None` when unknown.
fn ommers_by_hash(ctx: &RpcContext, hash: &B256) -> Result<Option<Vec<ConsensusHeader>>, RpcError> {
    Ok(read_block_by_hash(ctx, hash)?.map(|b| b.extras.ommers))
}

/// eth_getUncleCountByBlockNumber: `[block]`; `null` after the head.
pub(crate) fn uncle_count_by_number(ctx: &RpcContext, params: &Params) -> Result<Value, RpcError> {
    params.at_most(1)?;
    let tag: BlockNumberOrTag = params.required(0)?;
    Ok(ommers_by_number(ctx, tag)?.map_or(Value::Null, |o| quantity(o.len() as u64)))
}

/// eth_getUncleCountByBlockHash: `[hash]`; `null` when unknown.
pub(crate) fn uncle_count_by_hash(ctx: &RpcContext, params: &Params) -> Result<Value, RpcError> {
    params.at_most(1)?;
    let hash: B256 = params.required(0)?;
    Ok(ommers_by_hash(ctx, &hash)?.map_or(Value::Null, |o| quantity(o.len() as u64)))
}

/// Ommer `index` as geth shows it: a block with no body (no `transactions` member, no
/// ommers of its own), whose size is that of `[header, [], []]`.
fn uncle_at(ommers: Option<Vec<ConsensusHeader>>, index: u64) -> Result<Value, RpcError> {
    let Some(ommer) = ommers.and_then(|mut o| {
        usize::try_from(index).ok().filter(|i| *i < o.len()).map(|i| o.swap_remove(i))
    }) else {
        return Ok(Value::Null);
    };
    let hash = ommer.hash_slow();
    // Two empty lists (transactions, ommers) of one byte each after the header.
    let payload = alloy_rlp::Encodable::length(&ommer) + 2;
    let size = alloy_rlp::length_of_length(payload) + payload;
    let mut header = rpc_header(ommer, hash);
    header.size = Some(U256::from(size));
    let mut json = to_json(&header)?;
    if let Value::Object(fields) = &mut json {
        fields.insert("uncles".to_owned(), Value::Array(Vec::new()));
    }
    Ok(json)
}

/// eth_getUncleByBlockNumberAndIndex: `[block, index]`; `null` when there is none.
pub(crate) fn uncle_by_number_and_index(
    ctx: &RpcContext,
    params: &Params,
) -> Result<Value, RpcError> {
    params.at_most(2)?;
    let tag: BlockNumberOrTag = params.required(0)?;
    let index: u64 = params.required(1)?;
    uncle_at(ommers_by_number(ctx, tag)?, index)
}

/// eth_getUncleByBlockHashAndIndex: `[hash, index]`; `null` when there is none.
pub(crate) fn uncle_by_hash_and_index(
    ctx: &RpcContext,
    params: &Params,
) -> Result<Value, RpcError> {
    params.at_most(2)?;
    let hash: B256 = params.required(0)?;
    let index: u64 = params.required(1)?;
    uncle_at(ommers_by_hash(ctx, &hash)?, index)
}
