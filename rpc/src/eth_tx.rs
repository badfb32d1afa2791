//! Transactions: eth_sendRawTransaction, eth_sendTransaction, eth_getTransactionByHash,
//! eth_getTransactionReceipt.
//!
//! Sending admits the transaction to the mempool (`SubmitTx`), then asks the miner to mine
//! what is pending (`AutoMine`) before answering, so with automine on the receipt exists when
//! the hash comes back. A transaction that reverts is still mined: its hash is returned and its
//! receipt has status 0.

use alloy_consensus::{SignableTransaction, TxEip1559, TxEip2930, TxEnvelope, TxLegacy};
use alloy_eips::eip2718::Decodable2718;
use alloy_primitives::{B256, Bytes, Signature, TxKind};
use alloy_signer::SignerSync;
use alloy_signer_local::PrivateKeySigner;
use hearth_messages::TxError;
use hearth_messages::mempool::{GetPooledTx, SubmitTx};
use hearth_messages::miner::AutoMine;
use serde_json::Value;

use crate::blocks::{head, pending_transaction, read_block, rpc_receipt, rpc_transaction, to_json};
use crate::call::estimate;
use crate::context::RpcContext;
use crate::error::RpcError;
use crate::eth::pending_nonce;
use crate::fees::{SUGGESTED_TIP, latest_base_fee};
use crate::params::{Params, TxObject};

/// The EIP-2718 type byte of blob transactions, which need sidecars we do not handle.
const BLOB_TX_TYPE: u8 = 3;

/// eth_sendRawTransaction: `[signedTxBytes]`; the transaction hash.
pub(crate) async fn send_raw_transaction(
    ctx: &RpcContext,
    params: &Params,
) -> Result<Value, RpcError> {
    params.at_most(1)?;
    let raw: Bytes = params.required(0)?;
    // Checked before decoding: a blob transaction in network form (with its sidecar) would
    // otherwise fail as an RLP error instead of saying what is unsupported.
    if raw.first() == Some(&BLOB_TX_TYPE) {
        return Err(TxError::UnsupportedType.into());
    }
    let tx = TxEnvelope::decode_2718_exact(&raw).map_err(|e| RpcError::TxDecode(e.to_string()))?;
    to_json(&submit_and_mine(ctx, tx).await?)
}

/// eth_sendTransaction: `[txObject]`; signs with the dev key of `from`, fills what is missing,
/// and sends it like eth_sendRawTransaction.
pub(crate) async fn send_transaction(ctx: &RpcContext, params: &Params) -> Result<Value, RpcError> {
    params.at_most(1)?;
    let request: TxObject = params.required(0)?;
    let signer = request
        .from
        .and_then(|from| ctx.signers.iter().find(|s| s.address() == from))
        .ok_or(RpcError::UnknownAccount)?;
    let tx = fill_and_sign(ctx, signer, request).await?;
    to_json(&submit_and_mine(ctx, tx).await?)
}

/// Fills nonce, chain id, gas and fees as geth does, then signs.
async fn fill_and_sign(
    ctx: &RpcContext,
    signer: &PrivateKeySigner,
    request: TxObject,
) -> Result<TxEnvelope, RpcError> {
    let chain_id = ctx.chain_id;
    if let Some(got) = request.chain_id
        && got != chain_id
    {
        return Err(TxError::WrongChainId { expected: chain_id, got }.into());
    }
    let nonce = match request.nonce {
        Some(nonce) => nonce,
        None => pending_nonce(ctx, signer.address()).await?,
    };
    let gas_limit = match request.gas {
        Some(gas) => gas,
        None => {
            // Estimated at the head; the nonce is left unchecked because pooled transactions
            // may already have moved it past the head's.
            let call = TxObject { from: Some(signer.address()), nonce: None, ..request.clone() };
            estimate(ctx, call.into_call_request(ctx.limits.gas_cap), head(ctx)?).await?
        }
    };
    let to = request.to.map_or(TxKind::Create, TxKind::Call);
    let value = request.value.unwrap_or_default();
    let input = request.input.unwrap_or_default();

    // A gasPrice means a legacy transaction (EIP-2930 when it has an access list).
    if let Some(gas_price) = request.gas_price {
        return match request.access_list {
            Some(access_list) => sign(
                signer,
                TxEip2930 { chain_id, nonce, gas_price, gas_limit, to, value, access_list, input },
            ),
            None => sign(
                signer,
                TxLegacy {
                    chain_id: Some(chain_id),
                    nonce,
                    gas_price,
                    gas_limit,
                    to,
                    value,
                    input,
                },
            ),
        };
    }
    let base_fee = u128::from(latest_base_fee(ctx)?);
    let max_fee_per_gas = request.max_fee_per_gas.unwrap_or(2 * base_fee + SUGGESTED_TIP);
    // A default tip never exceeds an explicit fee cap; an explicit one is the caller's to check.
    let max_priority_fee_per_gas =
        request.max_priority_fee_per_gas.unwrap_or(SUGGESTED_TIP.min(max_fee_per_gas));
    sign(
        signer,
        TxEip1559 {
            chain_id,
            nonce,
            gas_limit,
            max_fee_per_gas,
            max_priority_fee_per_gas,
            to,
            value,
            access_list: request.access_list.unwrap_or_default(),
            input,
        },
    )
}

/// Signs `tx` with `signer` into an envelope.
fn sign<T>(signer: &PrivateKeySigner, tx: T) -> Result<TxEnvelope, RpcError>
where
    T: SignableTransaction<Signature>,
    TxEnvelope: From<alloy_consensus::Signed<T>>,
{
    let signature = signer.sign_hash_sync(&tx.signature_hash())?;
    Ok(tx.into_signed(signature).into())
}

/// Admits `tx` to the mempool, then lets the miner mine what is pending.
async fn submit_and_mine(ctx: &RpcContext, tx: TxEnvelope) -> Result<B256, RpcError> {
    let hash = ctx
        .submit_tx
        .send(SubmitTx { tx })
        .await
        .map_err(|e| RpcError::mailbox("mempool", e))??;
    // The transaction is admitted whatever happens next: failing the request now would make
    // the caller resend it ("already known"). A mining failure is the miner's to report.
    match ctx.auto_mine.send(AutoMine).await {
        Ok(Ok(_)) => {}
        Ok(Err(error)) => {
            tracing::warn!(target: "rpc::eth_tx", %hash, %error, "automine after submit failed");
        }
        Err(error) => {
            tracing::warn!(target: "rpc::eth_tx", %hash, %error, "miner unavailable after submit");
        }
    }
    Ok(hash)
}

/// eth_getTransactionByHash: `[hash]`; a mined transaction, else a pending one (block fields
/// `null`), else `null`.
pub(crate) async fn get_transaction_by_hash(
    ctx: &RpcContext,
    params: &Params,
) -> Result<Value, RpcError> {
    params.at_most(1)?;
    let hash: B256 = params.required(0)?;
    if let Some((number, index)) = ctx.chain.tx_location(&hash)?
        && let Some(block) = read_block(ctx, number)?
    {
        return to_json(&rpc_transaction(&block, index as usize));
    }
    let pooled = ctx
        .get_pooled_tx
        .send(GetPooledTx(hash))
        .await
        .map_err(|e| RpcError::mailbox("mempool", e))?;
    to_json(&pooled.map(|p| pending_transaction(&p)))
}

/// eth_getTransactionReceipt: `[hash]`; `null` while unknown or pending.
pub(crate) fn get_transaction_receipt(
    ctx: &RpcContext,
    params: &Params,
) -> Result<Value, RpcError> {
    params.at_most(1)?;
    let hash: B256 = params.required(0)?;
    let Some((number, index)) = ctx.chain.tx_location(&hash)? else {
        return Ok(Value::Null);
    };
    let block = read_block(ctx, number)?;
    to_json(&block.and_then(|b| rpc_receipt(&b, index as usize)))
}
