//! anvil_getBlobByHash and anvil_getBlobsByTransactionHash: the blobs of a blob transaction the
//! pool holds, or that a block included recently (the pool keeps the sidecars of mined blob
//! transactions, the newest 64 MiB of blobs; anvil keeps them all). Unknown, or no longer kept:
//! `null`, as anvil answers an unknown one.

use alloy_primitives::B256;
use hearth_messages::mempool::GetBlobs;
use serde_json::Value;

use crate::core::{Params, RpcContext, RpcError, to_json};

/// anvil_getBlobByHash: `[versionedHash]`; the blob (131,072 bytes, hex) or `null`.
pub(crate) async fn blob_by_hash(ctx: &RpcContext, params: &Params) -> Result<Value, RpcError> {
    params.at_most(1)?;
    let versioned: B256 = params.required(0)?;
    let blobs = ctx.mempool.get_blobs(GetBlobs::Versioned(versioned)).await?;
    to_json(&blobs.and_then(|mut blobs| blobs.pop()))
}

/// anvil_getBlobsByTransactionHash: `[txHash]`; the transaction's blobs in order, or `null`.
pub(crate) async fn blobs_by_transaction(
    ctx: &RpcContext,
    params: &Params,
) -> Result<Value, RpcError> {
    params.at_most(1)?;
    let hash: B256 = params.required(0)?;
    to_json(&ctx.mempool.get_blobs(GetBlobs::Transaction(hash)).await?)
}
