//! Blobs for the consensus layer: engine_getBlobsV1/V2 (by versioned hash, from the pool and
//! the sidecars kept after mining) and the blobs bundle of engine_getPayloadV3+.
//!
//! V1 answers a blob with its one KZG proof (EIP-4844 sidecars); V2 with its 128 cell proofs
//! (EIP-7594). A sidecar of the other kind is converted (the cell proofs computed), as the
//! blob transactions the pool took before Osaka carry the first kind.

use std::sync::Arc;

use alloy_consensus::{Transaction, TxEnvelope};
use alloy_eips::eip4844::BlobTransactionSidecar;
use alloy_eips::eip7594::{BlobTransactionSidecarEip7594, BlobTransactionSidecarVariant};
use alloy_primitives::B256;
use hearth_messages::mempool::GetBlobTxs;
use hearth_messages::payload::BuiltPayload;
use serde_json::{Value, json};

use super::port::engine;
use crate::core::{Params, RpcContext, RpcError};

/// Most versioned hashes one engine_getBlobs call asks for (the spec's 128).
const MAX_BLOB_HASHES: usize = 128;

/// The sidecar of a (network-form) blob transaction.
fn sidecar_of(tx: &TxEnvelope) -> Option<&BlobTransactionSidecarVariant> {
    match tx {
        TxEnvelope::Eip4844(signed) => signed.tx().sidecar(),
        _ => None,
    }
}

fn as_4844(sidecar: &BlobTransactionSidecarVariant) -> Option<BlobTransactionSidecar> {
    sidecar.clone().into_eip4844()
}

fn as_7594(sidecar: &BlobTransactionSidecarVariant) -> Option<BlobTransactionSidecarEip7594> {
    sidecar.clone().try_into_eip7594().ok()
}

/// engine_getBlobsV`version`: `[versionedHashes]`.
pub(crate) async fn get_blobs(
    ctx: &RpcContext,
    params: &Params,
    version: u8,
) -> Result<Value, RpcError> {
    engine(ctx)?;
    params.at_most(1)?;
    let hashes: Vec<B256> = params.required(0)?;
    if hashes.len() > MAX_BLOB_HASHES {
        return Err(RpcError::EngineTooLarge(format!(
            "{} versioned hashes, at most {MAX_BLOB_HASHES}",
            hashes.len()
        )));
    }
    let holders = ctx.mempool.get_blob_txs(GetBlobTxs::Versioned(hashes.clone())).await?;
    let mut answers = Vec::with_capacity(hashes.len());
    for (versioned, holder) in hashes.iter().zip(holders) {
        let sidecar = holder.as_deref().and_then(sidecar_of);
        let answer = sidecar.and_then(|s| blob_answer(s, versioned, version));
        if version >= 2 && answer.is_none() {
            // V2 answers all or nothing.
            return Ok(Value::Null);
        }
        answers.push(answer.unwrap_or(Value::Null));
    }
    Ok(Value::Array(answers))
}

/// One blob and its proof(s), or `None` when the sidecar cannot give them.
fn blob_answer(
    sidecar: &BlobTransactionSidecarVariant,
    versioned: &B256,
    version: u8,
) -> Option<Value> {
    if version == 1 {
        let sidecar = as_4844(sidecar)?;
        let index = sidecar.versioned_hash_index(versioned)?;
        return Some(json!({"blob": sidecar.blobs[index], "proof": sidecar.proofs[index]}));
    }
    let sidecar = as_7594(sidecar)?;
    let index = sidecar.versioned_hash_index(versioned)?;
    let per_blob = sidecar.cell_proofs.len() / sidecar.blobs.len().max(1);
    let proofs = &sidecar.cell_proofs[index * per_blob..(index + 1) * per_blob];
    Some(json!({"blob": sidecar.blobs[index], "proofs": proofs}))
}

/// The hashes of a payload's blob transactions, in block order.
fn blob_tx_hashes(built: &BuiltPayload) -> Vec<B256> {
    let mut hashes = Vec::new();
    for tx in &built.block.body.transactions {
        if tx.blob_versioned_hashes().is_some_and(|h| !h.is_empty()) {
            hashes.push(*tx.tx_hash());
        }
    }
    hashes
}

/// The blobs bundle of a built payload: every blob of its blob transactions, in order, with
/// commitments and proofs (`cells`: the 128 cell proofs per blob of getPayloadV5). A blob
/// transaction whose sidecar is no longer known fails the call (-32603), since a bundle that
/// misses one would make the block unusable to the consensus layer.
pub(crate) async fn bundle(
    ctx: &RpcContext,
    built: &Arc<BuiltPayload>,
    cells: bool,
) -> Result<Value, RpcError> {
    // By transaction hash: another transaction may share a blob and hold different ones.
    let blob_txs = blob_tx_hashes(built);
    let (mut commitments, mut proofs, mut blobs) = (Vec::new(), Vec::new(), Vec::new());
    if !blob_txs.is_empty() {
        let holders = ctx.mempool.get_blob_txs(GetBlobTxs::Transactions(blob_txs)).await?;
        for holder in holders {
            let sidecar = holder.as_deref().and_then(sidecar_of).ok_or_else(|| {
                RpcError::Panicked("a blob transaction's sidecar is no longer kept".into())
            })?;
            let missing = || RpcError::Panicked("a blob sidecar could not be converted".into());
            if cells {
                let sidecar = as_7594(sidecar).ok_or_else(missing)?;
                commitments.extend(sidecar.commitments);
                proofs.extend(sidecar.cell_proofs);
                blobs.extend(sidecar.blobs);
            } else {
                let sidecar = as_4844(sidecar).ok_or_else(missing)?;
                commitments.extend(sidecar.commitments);
                proofs.extend(sidecar.proofs);
                blobs.extend(sidecar.blobs);
            }
        }
    }
    Ok(json!({"commitments": commitments, "proofs": proofs, "blobs": blobs}))
}
