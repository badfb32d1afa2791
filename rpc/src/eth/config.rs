//! The chain's fork schedule as the RPC front reports it: eth_config (EIP-7910).
//!
//! The node gives the front its genesis configuration's forks ([`ChainForks`]); eth_config
//! describes the timestamped fork the head is under (`current`), the next scheduled one and the
//! last one, each with its activation time (0 when active from genesis), blob schedule, chain
//! id, EIP-2124 fork id, precompiles (by their EIP-7910 names) and system contracts, as geth
//! does. A chain whose head is before its first timestamped fork (Shanghai) answers `current:
//! null`.

use serde_json::{Value, json};

use crate::core::Params;
use crate::core::RpcContext;
use crate::core::RpcError;
use crate::core::head;

/// eth_config: `[]`; `{current, next, last}` as EIP-7910 describes them.
pub(crate) fn config(ctx: &RpcContext, params: &Params) -> Result<Value, RpcError> {
    params.at_most(0)?;
    // A fork's first local block is its fork block; the upstream's genesis is not here.
    let first = ctx.chain.fork().map_or(0, |fork| fork.block());
    let genesis = ctx
        .chain
        .header(first)?
        .ok_or(RpcError::MissingRecord { number: first, what: "header" })?;
    let genesis_hash = genesis.hash_slow();
    let number = head(ctx)?;
    let head =
        ctx.chain.header(number)?.ok_or(RpcError::MissingRecord { number, what: "header" })?;
    let forks = &ctx.forks;
    let describe =
        |index: usize| forks.describe(index, ctx.chain_id.get(), genesis_hash, genesis.timestamp);
    let current = forks.active_at(head.timestamp);
    let next = match current {
        Some(index) => (index + 1 < forks.time_forks.len()).then_some(index + 1),
        None => (!forks.time_forks.is_empty()).then_some(0),
    };
    let last = next.map(|_| forks.time_forks.len() - 1);
    Ok(json!({
        "current": current.map(describe),
        "next": next.map(describe),
        "last": last.map(describe),
    }))
}
