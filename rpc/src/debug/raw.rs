//! Consensus encodings of what the chain stores: debug_getRawHeader, debug_getRawBlock,
//! debug_getRawReceipts and debug_getRawTransaction (geth's debug namespace).
//!
//! Headers and blocks are RLP exactly as they would travel between nodes (an imported block
//! re-encodes to the bytes it came as), receipts and transactions are EIP-2718 envelopes. A
//! block named by number after the head is `null`; one named by a hash we do not know is
//! -32000, as in geth (whose by-hash lookup fails with "not found").

use alloy_consensus::{Block, BlockBody};
use alloy_eips::eip2718::Encodable2718;
use alloy_primitives::Bytes;
use alloy_rpc_types_eth::BlockId;
use hearth_messages::SealedBlock;
use serde_json::Value;

use crate::core::Params;
use crate::core::RpcContext;
use crate::core::RpcError;
use crate::core::{CappedJson, Reply};
use crate::core::{lookup_block, read_block, read_block_by_hash, to_json};

/// The block a raw getter names: `None` for a number after the head; an unknown hash fails.
fn named_block(ctx: &RpcContext, params: &Params) -> Result<Option<SealedBlock>, RpcError> {
    params.at_most(1)?;
    match params.required::<BlockId>(0)? {
        BlockId::Number(tag) => match lookup_block(ctx, tag)? {
            Some(number) => read_block(ctx, number),
            None => Ok(None),
        },
        BlockId::Hash(hash) => match read_block_by_hash(ctx, &hash.block_hash)? {
            Some(block) => Ok(Some(block)),
            None => Err(RpcError::UnknownBlock),
        },
    }
}

/// The block as it travels between nodes: header, transactions, ommers, and withdrawals from
/// Shanghai on.
pub(crate) fn block_rlp(block: &SealedBlock) -> Vec<u8> {
    let body = BlockBody {
        transactions: block.body.transactions.clone(),
        ommers: block.extras.ommers.clone(),
        withdrawals: block.header.withdrawals_root.map(|_| block.extras.withdrawals.clone().into()),
    };
    alloy_rlp::encode(Block { header: block.header.clone(), body })
}

/// debug_getRawHeader: `[block]`; the header's RLP.
pub(crate) fn get_raw_header(ctx: &RpcContext, params: &Params) -> Result<Value, RpcError> {
    let block = named_block(ctx, params)?;
    to_json(&block.map(|b| Bytes::from(alloy_rlp::encode(&b.header))))
}

/// debug_getRawBlock: `[block]`; the block's RLP. Encoded into a capped buffer: a block can
/// be as large as the gas limit allows.
pub(crate) fn get_raw_block(ctx: &RpcContext, params: &Params) -> Result<Reply, RpcError> {
    let mut out = CappedJson::new(&ctx.limits);
    match named_block(ctx, params)? {
        Some(block) => out.value(&Bytes::from(block_rlp(&block)))?,
        None => out.raw(b"null")?,
    }
    Ok(out.finish())
}

/// debug_getRawReceipts: `[block]`; each receipt's EIP-2718 bytes, in block order.
pub(crate) fn get_raw_receipts(ctx: &RpcContext, params: &Params) -> Result<Reply, RpcError> {
    let mut out = CappedJson::new(&ctx.limits);
    let Some(block) = named_block(ctx, params)? else {
        out.raw(b"null")?;
        return Ok(out.finish());
    };
    out.raw(b"[")?;
    for (i, receipt) in block.receipts.iter().enumerate() {
        if i > 0 {
            out.raw(b",")?;
        }
        out.value(&Bytes::from(receipt.encoded_2718()))?;
    }
    out.raw(b"]")?;
    Ok(out.finish())
}
