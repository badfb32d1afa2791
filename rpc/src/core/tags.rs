//! Block-tag resolution: what `latest`, `pending`, `safe`, a number or a hash names against the
//! head, and reading whole blocks from the store.
//!
//! On a dev chain there are no reorgs and every block is final, so "pending", "safe" and
//! "finalized" all mean the head, until a consensus client names safe and finalized blocks
//! (engine_forkchoiceUpdated): those tags then answer them. A state query for a block after the head is "header not
//! found"; a block lookup for one answers `null`.

use alloy_primitives::B256;
use alloy_rpc_types_eth::{BlockId, BlockNumberOrTag};
use hearth_messages::SealedBlock;

use super::context::RpcContext;
use super::error::RpcError;

/// The head block number; it exists once genesis is committed.
pub(crate) fn head(ctx: &RpcContext) -> Result<u64, RpcError> {
    ctx.chain.head_number().ok_or(RpcError::HeaderNotFound)
}

/// Whether `block` names the head by a tag (`latest`, `pending`, `safe`, `finalized`: a dev
/// chain has no other), and so follows the head when it moves.
pub(crate) const fn names_head(block: &BlockId) -> bool {
    matches!(
        block,
        BlockId::Number(
            BlockNumberOrTag::Latest
                | BlockNumberOrTag::Pending
                | BlockNumberOrTag::Safe
                | BlockNumberOrTag::Finalized
        )
    )
}

/// The number a tag stands for, given the head (it may be above the head). The safe and
/// finalized marks are read only for those tags.
pub(crate) fn tag_number(
    ctx: &RpcContext,
    tag: BlockNumberOrTag,
    head: u64,
) -> Result<u64, RpcError> {
    Ok(match tag {
        BlockNumberOrTag::Number(number) => number,
        BlockNumberOrTag::Earliest => 0,
        BlockNumberOrTag::Latest | BlockNumberOrTag::Pending => head,
        BlockNumberOrTag::Safe | BlockNumberOrTag::Finalized => {
            let marks = ctx.chain.forkchoice_marks()?.at_most(head);
            let mark = if tag == BlockNumberOrTag::Safe { marks.safe } else { marks.finalized };
            mark.map_or(head, |(number, _)| number)
        }
    })
}

/// The block a state query reads at: a number after the head or an unknown hash is
/// "header not found" (-32000), as in geth.
pub(crate) fn state_block(ctx: &RpcContext, block: BlockId) -> Result<u64, RpcError> {
    let head = head(ctx)?;
    let number = match block {
        BlockId::Number(tag) => tag_number(ctx, tag, head)?,
        // Every stored block is canonical on a dev chain, so requireCanonical holds.
        BlockId::Hash(hash) => {
            ctx.chain.block_number(&hash.block_hash)?.ok_or(RpcError::HeaderNotFound)?
        }
    };
    if number > head {
        return Err(RpcError::HeaderNotFound);
    }
    Ok(number)
}

/// The block a lookup names, or `None` when it is after the head (the answer is `null`).
pub(crate) fn lookup_block(
    ctx: &RpcContext,
    tag: BlockNumberOrTag,
) -> Result<Option<u64>, RpcError> {
    let head = head(ctx)?;
    let number = tag_number(ctx, tag, head)?;
    Ok((number <= head).then_some(number))
}

/// Block `number` with its hash, body and receipts, or `None` if it is not stored.
pub(crate) fn read_block(ctx: &RpcContext, number: u64) -> Result<Option<SealedBlock>, RpcError> {
    Ok(ctx.chain.sealed_block(number)?)
}

/// The block with hash `hash`, or `None` if we do not know it.
pub(crate) fn read_block_by_hash(
    ctx: &RpcContext,
    hash: &B256,
) -> Result<Option<SealedBlock>, RpcError> {
    match ctx.chain.block_number(hash)? {
        Some(number) => read_block(ctx, number),
        None => Ok(None),
    }
}
