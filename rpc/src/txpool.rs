//! The pool as geth shows it: txpool_status, txpool_content, txpool_inspect.
//!
//! Pending transactions can go into the next block (consecutive nonces from the sender's state
//! nonce, fee cap at least the next base fee); queued ones wait on a nonce gap or a base fee.
//! Within each, transactions are grouped by sender (checksummed) and keyed by decimal nonce.

use std::collections::BTreeMap;

use alloy_consensus::Transaction;
use alloy_primitives::TxKind;
use hearth_messages::executor::PooledTx;
use hearth_messages::mempool::{GetPoolContent, PoolContent};
use serde_json::{Map, Value, json};

use crate::blocks::{pending_transaction, to_json};
use crate::context::RpcContext;
use crate::error::RpcError;
use crate::params::Params;

async fn content(ctx: &RpcContext, params: &Params) -> Result<PoolContent, RpcError> {
    params.at_most(0)?;
    ctx.controls
        .pool_content
        .send(GetPoolContent)
        .await
        .map_err(|e| RpcError::mailbox("mempool", e))
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
pub(crate) async fn content_method(ctx: &RpcContext, params: &Params) -> Result<Value, RpcError> {
    let content = content(ctx, params).await?;
    let entry = |tx: &PooledTx| to_json(&pending_transaction(tx));
    Ok(json!({
        "pending": group(&content.pending, entry)?,
        "queued": group(&content.queued, entry)?,
    }))
}

/// txpool_inspect: `[]`; each pooled transaction as geth's one-line summary,
/// "to: value wei + gas × price wei" ("contract creation: ..." for deployments).
pub(crate) async fn inspect(ctx: &RpcContext, params: &Params) -> Result<Value, RpcError> {
    let content = content(ctx, params).await?;
    let entry = |pooled: &PooledTx| Ok(Value::String(summary(pooled)));
    Ok(json!({
        "pending": group(&content.pending, entry)?,
        "queued": group(&content.queued, entry)?,
    }))
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

/// `{sender: {nonce: entry(tx)}}`, senders and nonces in order.
fn group(
    txs: &[PooledTx],
    entry: impl Fn(&PooledTx) -> Result<Value, RpcError>,
) -> Result<Value, RpcError> {
    let mut by_sender: BTreeMap<_, BTreeMap<u64, Value>> = BTreeMap::new();
    for pooled in txs {
        by_sender.entry(pooled.sender).or_default().insert(pooled.tx.nonce(), entry(pooled)?);
    }
    let mut out = Map::new();
    for (sender, nonces) in by_sender {
        let nonces: Map<String, Value> =
            nonces.into_iter().map(|(nonce, v)| (nonce.to_string(), v)).collect();
        out.insert(sender.to_string(), Value::Object(nonces));
    }
    Ok(Value::Object(out))
}
