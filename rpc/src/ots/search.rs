//! ots_searchTransactionsBefore / After: an address's transactions, a page at a time, from
//! the store's address index.
//!
//! Paging is Erigon's: a page holds at least `pageSize` transactions, in whole blocks (the
//! rest of the last block's are added), newest first either way. Before(B) reads blocks below
//! B (B = 0: from the head), After(A) blocks above A (A = 0: from genesis). `firstPage` and
//! `lastPage` say whether a newer or an older page exists: Before(0) is the first page,
//! After(0) the last, and otherwise the search itself finds out by looking one block further.

use alloy_primitives::Address;
use hearth_messages::storage::{Appearance, Direction};
use serde_json::{Value, json};

use crate::core::{HexOrDecimal, Params, RpcContext, RpcError, read_block, rpc_receipt, to_json};

/// Most transactions a page may ask for (Erigon's default limit is 25, anvil has none); a page
/// may hold more, to finish its last block.
const MAX_PAGE_SIZE: u64 = 100;

/// ots_searchTransactionsBefore: `[address, block, pageSize]`.
pub(crate) fn search_before(ctx: &RpcContext, p: &Params) -> Result<Value, RpcError> {
    search(ctx, p, Direction::Before)
}

/// ots_searchTransactionsAfter: `[address, block, pageSize]`.
pub(crate) fn search_after(ctx: &RpcContext, p: &Params) -> Result<Value, RpcError> {
    search(ctx, p, Direction::After)
}

fn search(ctx: &RpcContext, p: &Params, direction: Direction) -> Result<Value, RpcError> {
    p.at_most(3)?;
    let address: Address = p.required(0)?;
    let block = p.required::<HexOrDecimal>(1)?.0;
    let size = p.required::<HexOrDecimal>(2)?.0;
    if size > MAX_PAGE_SIZE {
        return Err(RpcError::InvalidParams(format!(
            "page size {size} is over the most a search takes, {MAX_PAGE_SIZE}"
        )));
    }
    let bound = match (direction, block) {
        (Direction::Before, 0) => u64::MAX,
        _ => block,
    };
    let (found, more) = page(ctx, &address, direction, bound, size)?;
    let (first_page, last_page) = match direction {
        Direction::Before => (block == 0, !more),
        Direction::After => (!more, block == 0),
    };
    let mut txs = Vec::with_capacity(found.len());
    let mut receipts = Vec::with_capacity(found.len());
    let mut blocks = found.iter().map(|a| a.block).collect::<Vec<_>>();
    blocks.dedup();
    for number in blocks {
        // A revert may take a block away between the index's read and this one: what is gone
        // is left out, as if the search had come a moment later.
        let Some(block) = read_block(ctx, number)? else { continue };
        let timestamp = block.header.timestamp;
        for appearance in found.iter().filter(|a| a.block == number) {
            let index = appearance.index as usize;
            let Some(tx) = crate::core::rpc_transaction(&block, index) else { continue };
            txs.push(to_json(&tx)?);
            let mut receipt = to_json(&rpc_receipt(&block, index, &ctx.forks))?;
            if let Value::Object(fields) = &mut receipt {
                // Erigon's is a JSON number (Otterscan reads either).
                fields.insert("timestamp".into(), Value::from(timestamp));
            }
            receipts.push(receipt);
        }
    }
    let mut answer = json!({
        "txs": txs,
        "receipts": receipts,
        "firstPage": first_page,
        "lastPage": last_page,
    });
    // The index starts at the store's first block: a fork's fork block, whose upstream
    // history the node does not hold. A search that reached it says so.
    let from = ctx.chain.address_index_from()?.unwrap_or(0);
    let reached = match direction {
        Direction::Before => !more,
        Direction::After => block < from,
    };
    if from > 0 && reached {
        answer["indexedFrom"] = Value::from(from);
    }
    Ok(answer)
}

/// The page's transactions, newest first, and whether another (older for Before, newer for
/// After) holds more.
fn page(
    ctx: &RpcContext,
    address: &Address,
    direction: Direction,
    bound: u64,
    size: u64,
) -> Result<(Vec<Appearance>, bool), RpcError> {
    let mut found: Vec<Appearance> = Vec::new();
    let mut more = false;
    ctx.chain.appearances(address, direction, bound, |appearance| {
        let full = found.len() as u64 >= size.max(1);
        if full && found.last().is_some_and(|last| last.block != appearance.block) {
            more = true;
            return false;
        }
        found.push(appearance);
        true
    })?;
    if direction == Direction::After {
        found.reverse();
    }
    Ok((found, more))
}
