//! The pool as geth shows it: txpool_status, txpool_content, txpool_contentFrom,
//! txpool_inspect.
//!
//! Pending transactions can go into the next block (consecutive nonces from the sender's state
//! nonce, fee cap at least the next base fee); queued ones wait on a nonce gap or a base fee.
//! Within each, transactions are grouped by sender (checksummed) and keyed by decimal nonce.

use std::collections::BTreeMap;

use alloy_consensus::Transaction;
use alloy_eips::eip2718::Encodable2718;
use alloy_primitives::Bytes;
use alloy_primitives::{Address, TxKind};
use hearth_messages::executor::PooledTx;
use hearth_messages::mempool::{GetPoolContent, PoolContent, TakePending, without_sidecar};
use hearth_messages::miner::GetMiningStatus;
use serde_json::{Value, json};

use crate::core::Params;
use crate::core::RpcContext;
use crate::core::RpcError;
use crate::core::pending_transaction;
use crate::core::{CappedJson, Reply};

async fn content(ctx: &RpcContext, params: &Params) -> Result<PoolContent, RpcError> {
    params.at_most(0)?;
    pool_content(ctx).await
}

async fn pool_content(ctx: &RpcContext) -> Result<PoolContent, RpcError> {
    Ok(ctx.mempool.pool_content(GetPoolContent).await?)
}

/// txpool_status: `[]`; `{pending, queued}` counts as hex quantities.
pub(crate) async fn status(ctx: &RpcContext, params: &Params) -> Result<Value, RpcError> {
    let content = content(ctx, params).await?;
    Ok(json!({
        "pending": format!("{:#x}", content.pending.len()),
        "queued": format!("{:#x}", content.queued.len()),
    }))
}

/// txpool_content: `[]`; every pooled transaction as an RPC transaction object.
pub(crate) async fn content_method(ctx: &RpcContext, params: &Params) -> Result<Reply, RpcError> {
    let content = content(ctx, params).await?;
    encode(ctx, &content, |out, pooled| out.value(&pending_transaction(pooled)))
}

/// txpool_contentFrom: `[address]`; that sender's pooled transactions,
/// `{"pending": {nonce: tx}, "queued": {nonce: tx}}`, nonces in order.
pub(crate) async fn content_from(ctx: &RpcContext, params: &Params) -> Result<Reply, RpcError> {
    params.at_most(1)?;
    let sender: Address = params.required(0)?;
    let content = pool_content(ctx).await?;
    let mut out = CappedJson::new(&ctx.limits);
    out.raw(br#"{"pending":"#)?;
    by_nonce(&mut out, content.pending.iter().filter(|p| p.sender == sender).collect())?;
    out.raw(br#","queued":"#)?;
    by_nonce(&mut out, content.queued.iter().filter(|p| p.sender == sender).collect())?;
    out.raw(b"}")?;
    Ok(out.finish())
}

/// `{nonce: tx}` for one sender's transactions, nonces (decimal) in order.
fn by_nonce(out: &mut CappedJson, mut txs: Vec<&PooledTx>) -> Result<(), RpcError> {
    txs.sort_by_key(|pooled| pooled.tx.nonce());
    out.raw(b"{")?;
    for (i, pooled) in txs.into_iter().enumerate() {
        if i > 0 {
            out.raw(b",")?;
        }
        out.value(&pooled.tx.nonce().to_string())?;
        out.raw(b":")?;
        out.value(&pending_transaction(pooled))?;
    }
    out.raw(b"}")
}

/// txpool_inspect: `[]`; each pooled transaction as geth's one-line summary,
/// "to: value wei + gas × price wei" ("contract creation: ..." for deployments).
pub(crate) async fn inspect(ctx: &RpcContext, params: &Params) -> Result<Reply, RpcError> {
    let content = content(ctx, params).await?;
    encode(ctx, &content, |out, pooled| out.value(&summary(pooled)))
}

/// `{"pending": groups, "queued": groups}`, encoded as it is written: a pool of 100,000 large
/// transactions must not be turned into a `Value` tree of all of them before the response cap
/// refuses the answer (50,000 pooled transactions took the node from 75 to 630 MiB that way).
fn encode(
    ctx: &RpcContext,
    content: &PoolContent,
    entry: impl Fn(&mut CappedJson, &PooledTx) -> Result<(), RpcError>,
) -> Result<Reply, RpcError> {
    let mut out = CappedJson::new(&ctx.limits);
    out.raw(br#"{"pending":"#)?;
    group(&mut out, &content.pending, &entry)?;
    out.raw(br#","queued":"#)?;
    group(&mut out, &content.queued, &entry)?;
    out.raw(b"}")?;
    Ok(out.finish())
}

/// geth's summary line. The price is the fee cap for EIP-1559 transactions, as geth prints.
fn summary(pooled: &PooledTx) -> String {
    let tx = pooled.tx.as_ref();
    let to = match tx.kind() {
        TxKind::Call(to) => to.to_string(),
        TxKind::Create => "contract creation".to_owned(),
    };
    format!("{to}: {} wei + {} gas × {} wei", tx.value(), tx.gas_limit(), tx.max_fee_per_gas())
}

/// `{sender: {nonce: entry(tx)}}`, senders (checksummed) and nonces in order; `txs` comes from
/// the pool sorted by sender, then nonce.
fn group(
    out: &mut CappedJson,
    txs: &[PooledTx],
    entry: &impl Fn(&mut CappedJson, &PooledTx) -> Result<(), RpcError>,
) -> Result<(), RpcError> {
    let mut by_sender: BTreeMap<Address, Vec<&PooledTx>> = BTreeMap::new();
    for pooled in txs {
        by_sender.entry(pooled.sender).or_default().push(pooled);
    }
    out.raw(b"{")?;
    for (i, (sender, mut txs)) in by_sender.into_iter().enumerate() {
        txs.sort_by_key(|pooled| pooled.tx.nonce());
        if i > 0 {
            out.raw(b",")?;
        }
        out.value(&sender.to_checksum(None))?;
        out.raw(b":{")?;
        for (j, pooled) in txs.into_iter().enumerate() {
            if j > 0 {
                out.raw(b",")?;
            }
            out.value(&pooled.tx.nonce().to_string())?;
            out.raw(b":")?;
            entry(out, pooled)?;
        }
        out.raw(b"}")?;
    }
    out.raw(b"}")
}

/// Most bytes of transactions one txpoolExt_getTxs answer holds (what a block takes, as the
/// miner caps a block's transactions).
pub(crate) const GET_TXS_MAX_BYTES: usize = 10 * 1024 * 1024;

/// txpoolExt_getTxs (ev-reth's, which evstack's ev-node sequencer calls): `[]`; the pooled
/// transactions the next block would take, in the order the miner would take them (fee, then
/// nonce), as EIP-2718 bytes in the form a block holds (a blob transaction without its sidecar),
/// capped by the next block's gas limit and by [`GET_TXS_MAX_BYTES`]. They stay pooled.
pub(crate) async fn get_txs(ctx: &RpcContext, params: &Params) -> Result<Value, RpcError> {
    params.at_most(0)?;
    let number = crate::core::head(ctx)?;
    let head =
        ctx.chain.header(number)?.ok_or(RpcError::MissingRecord { number, what: "header" })?;
    let gas_limit = ctx.miner.mining_status(GetMiningStatus).await?.gas_limit;
    let base_fee = hearth_messages::base_fee::next_base_fee(&head).unwrap_or(0);
    let take = TakePending { gas_limit, max_bytes: GET_TXS_MAX_BYTES, base_fee };
    let pending = ctx.mempool.pending_for_block(take).await?;
    let raw: Vec<Bytes> =
        pending.iter().map(|p| Bytes::from(without_sidecar(&p.tx).encoded_2718())).collect();
    Ok(json!(raw))
}
