//! Polling filters: eth_newFilter, eth_newBlockFilter, eth_newPendingTransactionFilter,
//! eth_getFilterChanges, eth_getFilterLogs, eth_uninstallFilter. The `FilterActor` keeps each filter's cursor; this module reads what a
//! poll covers from the chain (block hashes, or logs through the same bloom-checked scan as
//! eth_getLogs). Filter ids are quantities. An unknown or expired id is -32000 "filter not
//! found", as geth answers.

use alloy_rpc_types_eth::{BlockNumberOrTag, Filter, FilterBlockOption};
use hearth_messages::filters::{
    FilterError, FilterKind, GetFilter, InstallFilter, PollFilter, UninstallFilter,
};
use serde_json::Value;

use crate::core::Params;
use crate::core::Reply;
use crate::core::RpcContext;
use crate::core::RpcError;
use crate::core::{head, quantity, tag_number, to_json};
use crate::eth::logs::{block_range, encode_logs_after, encode_matching_logs};

/// eth_newFilter: `[filter]`; logs from blocks after the current head.
pub(crate) async fn new_filter(ctx: &RpcContext, params: &Params) -> Result<Value, RpcError> {
    params.at_most(1)?;
    let filter: Filter = params.required(0)?;
    if matches!(filter.block_option, FilterBlockOption::AtBlockHash(_)) {
        return Err(RpcError::InvalidParams(
            "a filter cannot be installed for a block hash".into(),
        ));
    }
    install(ctx, FilterKind::Logs(Box::new(filter))).await
}

/// eth_newPendingTransactionFilter: `[]`; hashes of transactions admitted to the pool from now.
pub(crate) async fn new_pending_transaction_filter(
    ctx: &RpcContext,
    params: &Params,
) -> Result<Value, RpcError> {
    params.at_most(0)?;
    install(ctx, FilterKind::PendingTxs).await
}

/// eth_newBlockFilter: `[]`; hashes of blocks after the current head.
pub(crate) async fn new_block_filter(ctx: &RpcContext, params: &Params) -> Result<Value, RpcError> {
    params.at_most(0)?;
    install(ctx, FilterKind::Blocks).await
}

async fn install(ctx: &RpcContext, kind: FilterKind) -> Result<Value, RpcError> {
    let head = head(ctx)?;
    let id = ctx.filters.install(InstallFilter { kind, head }).await?.map_err(RpcError::Filter)?;
    Ok(quantity(id))
}

/// eth_getFilterChanges: `[id]`; what happened since the last poll.
pub(crate) async fn get_filter_changes(
    ctx: &RpcContext,
    params: &Params,
) -> Result<Reply, RpcError> {
    params.at_most(1)?;
    let id: u64 = params.required(0)?;
    let head = head(ctx)?;
    let poll = ctx.filters.poll(PollFilter { id, head }).await?.map_err(RpcError::Filter)?;
    match poll.kind {
        FilterKind::PendingTxs => to_json(&poll.pending).map(Reply::Value),
        FilterKind::Blocks => {
            let mut hashes = Vec::new();
            for number in poll.from..=poll.to {
                if let Some(hash) = ctx.chain.block_hash(number)? {
                    hashes.push(hash);
                }
            }
            to_json(&hashes).map(Reply::Value)
        }
        FilterKind::Logs(filter) => {
            // Only the part of the new range that the filter's own fromBlock/toBlock allow.
            let (from, to) = match filter.block_option {
                FilterBlockOption::Range { from_block, to_block } => {
                    let from = match from_block {
                        Some(tag) => tag_number(ctx, tag, head)?.max(poll.from),
                        None => poll.from,
                    };
                    let to = match to_block.filter(|b| {
                        !matches!(b, BlockNumberOrTag::Latest | BlockNumberOrTag::Pending)
                    }) {
                        Some(tag) => tag_number(ctx, tag, head)?.min(poll.to),
                        None => poll.to,
                    };
                    (from, to)
                }
                FilterBlockOption::AtBlockHash(_) => (1, 0),
            };
            // Logs a rewind undid come first, `removed: true`, as geth sends them.
            encode_logs_after(ctx, &poll.removed, &filter, from, to)
        }
    }
}

/// eth_getFilterLogs: `[id]`; every log the (log) filter's criteria match, as eth_getLogs.
pub(crate) async fn get_filter_logs(ctx: &RpcContext, params: &Params) -> Result<Reply, RpcError> {
    params.at_most(1)?;
    let id: u64 = params.required(0)?;
    let kind = ctx.filters.get(GetFilter(id)).await?.map_err(RpcError::Filter)?;
    let FilterKind::Logs(filter) = kind else {
        // geth: a block filter has no logs to give.
        return Err(RpcError::Filter(FilterError::NotFound));
    };
    let Some((from, to)) = block_range(ctx, &filter.block_option)? else {
        return Ok(Reply::Value(Value::Array(Vec::new())));
    };
    encode_matching_logs(ctx, &filter, from, to)
}

/// eth_uninstallFilter: `[id]`; `true` when the filter existed.
pub(crate) async fn uninstall_filter(ctx: &RpcContext, params: &Params) -> Result<Value, RpcError> {
    params.at_most(1)?;
    let id: u64 = params.required(0)?;
    let removed = ctx.filters.uninstall(UninstallFilter(id)).await?;
    Ok(Value::Bool(removed))
}
