//! ots_getContractCreator: which transaction created a contract, and who (the account whose
//! CREATE or CREATE2 made it: a factory, or the sender of a deployment).
//!
//! The store records, with each account, the block its current storage began in (its
//! incarnation): for a contract a transaction created, the block of that creation. So the answer
//! is among that one block's transactions the address index lists for the address: the newest
//! whose frames create it with the code it holds now (a contract destroyed and made again in
//! one block is the later one). A contract with no code now (an EOA, one destroyed) gets `null`,
//! as in Erigon, and so does one whose code no local transaction brought: genesis, the fork
//! block and before, a dev patch, an EIP-7702 delegation.

use alloy_primitives::{Address, B256, Bytes};
use hearth_messages::storage::Direction;
use hearth_messages::trace::{OtsView, Trace, TraceBudget, TraceJob};
use serde::Deserialize;
use serde_json::{Value, json};

use crate::core::{Params, RpcContext, RpcError, head, read_block};
use crate::debug::trace::DEFAULT_TRACER_TIMEOUT;

/// The fields of an ots_traceTransaction entry this search reads.
#[derive(Debug, Deserialize)]
struct Frame {
    #[serde(rename = "type")]
    kind: String,
    from: Address,
    to: Address,
    output: Bytes,
}

/// The prefix of an EIP-7702 delegation designator: an account's "code" that no create made.
const DELEGATION_PREFIX: [u8; 3] = [0xef, 0x01, 0x00];

/// ots_getContractCreator: `[address]`; `{hash, creator}` or `null`.
pub(crate) async fn contract_creator(ctx: &RpcContext, p: &Params) -> Result<Value, RpcError> {
    p.at_most(1)?;
    let address: Address = p.required(0)?;
    let head = head(ctx)?;
    let Some(account) = ctx.chain.account(&address, head)? else { return Ok(Value::Null) };
    let code = ctx.chain.state_at(head).code_of(&address)?;
    let first_indexed = ctx.chain.address_index_from()?.unwrap_or(0);
    let block = account.incarnation;
    if code.is_empty() || code.starts_with(&DELEGATION_PREFIX) || block <= first_indexed {
        return Ok(Value::Null);
    }
    let mut candidates = Vec::new();
    ctx.chain.appearances(&address, Direction::Before, block + 1, |a| {
        if a.block != block {
            return false;
        }
        candidates.push(a.index as usize);
        true
    })?;
    // Newest first: the creation whose code the contract holds now.
    for index in candidates {
        if let Some(creator) = creator_in(ctx, &address, &code, block, index).await? {
            let Some(stored) = read_block(ctx, block)? else { return Ok(Value::Null) };
            let Some(tx) = stored.body.transactions.get(index) else { return Ok(Value::Null) };
            let hash: B256 = *tx.tx_hash();
            return Ok(json!({ "hash": hash, "creator": creator }));
        }
    }
    Ok(Value::Null)
}

/// Who created `address` with `code` in transaction `index` of `block`, if one of its frames
/// did.
async fn creator_in(
    ctx: &RpcContext,
    address: &Address,
    code: &Bytes,
    block: u64,
    index: usize,
) -> Result<Option<Address>, RpcError> {
    let budget = TraceBudget {
        max_bytes: ctx.limits.max_response_bytes,
        timeout: Some(DEFAULT_TRACER_TIMEOUT),
    };
    let job = TraceJob::Otterscan { block, index, view: OtsView::Trace };
    let output = ctx.executor.trace(Trace { job, budget }).await?;
    let frames: Vec<Frame> = serde_json::from_slice(&output.0)?;
    Ok(frames
        .iter()
        .rev()
        .find(|f| {
            f.to == *address && (f.kind == "CREATE" || f.kind == "CREATE2") && f.output == *code
        })
        .map(|f| f.from))
}
