//! The block methods: eth_getBlockByNumber / ByHash, eth_getBlockTransactionCountByNumber /
//! ByHash and eth_getTransactionByBlock{Number,Hash}AndIndex. Block tags resolve and blocks
//! become RPC objects in `core` (`tags`, `json`).

use alloy_primitives::{B256, Bytes, U256};
use alloy_rpc_types_eth::{Block, BlockNumberOrTag};
use hearth_messages::SealedBlock;
use serde_json::Value;

use crate::core::{
    Params, Reply, RpcContext, RpcError, lookup_block, quantity, read_block, read_block_by_hash,
    rpc_block, rpc_transaction, to_json,
};

// ---- RPC objects ---------------------------------------------------------------------------

/// eth_getBlockByNumber: `[block, fullTransactions]`; `null` after the head.
pub(crate) fn get_block_by_number(ctx: &RpcContext, params: &Params) -> Result<Reply, RpcError> {
    params.at_most(2)?;
    let tag: BlockNumberOrTag = params.required(0)?;
    let full: bool = params.required(1)?;
    let block = match lookup_block(ctx, tag)? {
        Some(number) => read_block(ctx, number)?,
        None => None,
    };
    block.map(|b| upstream_block(ctx, &b, full)).transpose().map(Reply::typed)
}

/// `block` as an RPC object; an upstream block of a fork (at or below its fork block) with
/// the total difficulty and size the upstream reported with it, so the answer is the
/// upstream's (anvil reports a size one more than the block's RLP).
fn upstream_block(ctx: &RpcContext, block: &SealedBlock, full: bool) -> Result<Block, RpcError> {
    let mut rpc = rpc_block(block, full);
    if let Some(fork) = ctx.chain.fork()
        && block.number() <= fork.block()
    {
        let (total_difficulty, size) = fork.block_report(block.number())?;
        rpc.header.total_difficulty = total_difficulty;
        if let Some(size) = size {
            rpc.header.size = Some(U256::from(size));
        }
    }
    Ok(rpc)
}

/// eth_getBlockByHash: `[hash, fullTransactions]`; `null` when unknown.
pub(crate) fn get_block_by_hash(ctx: &RpcContext, params: &Params) -> Result<Reply, RpcError> {
    params.at_most(2)?;
    let hash: B256 = params.required(0)?;
    let full: bool = params.required(1)?;
    let block = read_block_by_hash(ctx, &hash)?;
    block.map(|b| upstream_block(ctx, &b, full)).transpose().map(Reply::typed)
}

/// eth_getBlockTransactionCountByNumber: `[block]`; `null` after the head.
pub(crate) fn tx_count_by_number(ctx: &RpcContext, params: &Params) -> Result<Value, RpcError> {
    params.at_most(1)?;
    let tag: BlockNumberOrTag = params.required(0)?;
    let body = match lookup_block(ctx, tag)? {
        Some(number) => ctx.chain.body(number)?,
        None => None,
    };
    Ok(body.map_or(Value::Null, |b| quantity(b.transactions.len() as u64)))
}

/// eth_getBlockTransactionCountByHash: `[hash]`; `null` when unknown.
pub(crate) fn tx_count_by_hash(ctx: &RpcContext, params: &Params) -> Result<Value, RpcError> {
    params.at_most(1)?;
    let hash: B256 = params.required(0)?;
    let body = match ctx.chain.block_number(&hash)? {
        Some(number) => ctx.chain.body(number)?,
        None => None,
    };
    Ok(body.map_or(Value::Null, |b| quantity(b.transactions.len() as u64)))
}

/// eth_getTransactionByBlockNumberAndIndex: `[block, index]`; `null` when out of range.
pub(crate) fn tx_by_number_and_index(ctx: &RpcContext, params: &Params) -> Result<Value, RpcError> {
    params.at_most(2)?;
    let tag: BlockNumberOrTag = params.required(0)?;
    let index: u64 = params.required(1)?;
    let block = match lookup_block(ctx, tag)? {
        Some(number) => read_block(ctx, number)?,
        None => None,
    };
    to_json(&block.and_then(|b| rpc_transaction(&b, usize::try_from(index).ok()?)))
}

/// eth_getTransactionByBlockHashAndIndex: `[hash, index]`; `null` when out of range.
pub(crate) fn tx_by_hash_and_index(ctx: &RpcContext, params: &Params) -> Result<Value, RpcError> {
    params.at_most(2)?;
    let hash: B256 = params.required(0)?;
    let index: u64 = params.required(1)?;
    let block = read_block_by_hash(ctx, &hash)?;
    to_json(&block.and_then(|b| rpc_transaction(&b, usize::try_from(index).ok()?)))
}

/// Transaction `index` of `block` as its EIP-2718 bytes, `None` when out of range.
fn raw_transaction(block: &hearth_messages::SealedBlock, index: u64) -> Option<Bytes> {
    let tx = block.body.transactions.get(usize::try_from(index).ok()?)?;
    Some(Bytes::from(alloy_eips::eip2718::Encodable2718::encoded_2718(tx)))
}

/// eth_getRawTransactionByBlockNumberAndIndex: `[block, index]`; the transaction's EIP-2718
/// bytes, `null` when there is no such block or index (anvil's and geth's answers).
pub(crate) fn raw_tx_by_number_and_index(
    ctx: &RpcContext,
    (tag, index): (BlockNumberOrTag, u64),
) -> Result<Value, RpcError> {
    let block = match lookup_block(ctx, tag)? {
        Some(number) => read_block(ctx, number)?,
        None => None,
    };
    to_json(&block.and_then(|b| raw_transaction(&b, index)))
}

/// eth_getRawTransactionByBlockHashAndIndex: `[hash, index]`; as the above, by block hash.
pub(crate) fn raw_tx_by_hash_and_index(
    ctx: &RpcContext,
    (hash, index): (B256, u64),
) -> Result<Value, RpcError> {
    let block = read_block_by_hash(ctx, &hash)?;
    to_json(&block.and_then(|b| raw_transaction(&b, index)))
}
