//! eth_getBlockReceipts: every receipt of one block, as eth_getTransactionReceipt shows each.
//!
//! A block of many log-heavy transactions has a large answer, so the receipts are encoded one
//! by one into a buffer capped at the response limit (-32005 past it), never gathered into a
//! JSON tree first.

use alloy_rpc_types_eth::BlockId;

use crate::core::Params;
use crate::core::RpcContext;
use crate::core::RpcError;
use crate::core::{CappedJson, Reply};
use crate::core::{lookup_block, read_block, read_block_by_hash, rpc_receipt};

/// eth_getBlockReceipts: `[block]` (number, tag or hash); `null` for a block after the head
/// or a hash we do not know.
pub(crate) fn get_block_receipts(ctx: &RpcContext, params: &Params) -> Result<Reply, RpcError> {
    params.at_most(1)?;
    let block = match params.required::<BlockId>(0)? {
        BlockId::Number(tag) => match lookup_block(ctx, tag)? {
            Some(number) => read_block(ctx, number)?,
            None => None,
        },
        BlockId::Hash(hash) => read_block_by_hash(ctx, &hash.block_hash)?,
    };
    let mut out = CappedJson::new(&ctx.limits);
    let Some(block) = block else {
        out.raw(b"null")?;
        return Ok(out.finish());
    };
    out.raw(b"[")?;
    for index in 0..block.receipts.len() {
        if index > 0 {
            out.raw(b",")?;
        }
        let receipt = rpc_receipt(&block, index, &ctx.forks)
            .ok_or(RpcError::MissingRecord { number: block.number(), what: "receipt" })?;
        out.value(&receipt)?;
    }
    out.raw(b"]")?;
    Ok(out.finish())
}
