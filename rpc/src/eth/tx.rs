//! Transactions: eth_sendRawTransaction, eth_sendTransaction, eth_sendUnsignedTransaction
//! (anvil's: sent as `from` whether or not it is impersonated), eth_getTransactionByHash,
//! eth_getTransactionReceipt.
//!
//! Sending admits the transaction to the mempool in a `ThenMine` (`SubmitTx`, `SubmitFilled`,
//! `SubmitTxs`): the pool admits it, then asks the miner, which shares its thread, to mine what
//! is pending (`AutoMine`) before answering, so with automine on the receipt exists when the
//! hash comes back. A transaction that reverts is still mined: its hash is returned and its
//! receipt has status 0.

use alloy_consensus::{
    SignableTransaction, Transaction as _, TxEip1559, TxEip2930, TxEip7702, TxEnvelope, TxLegacy,
};
use alloy_eips::eip2718::Encodable2718;
use alloy_eips::eip2930::AccessList;
use alloy_primitives::{Address, B256, Bytes, Signature, TxKind, U256};
use hearth_messages::mempool::{
    GetPooledTx, IsImpersonated, Seal, SignedBy, SubmitFilled, SubmitTx, SubmitTxs, ThenMine,
    decode_tx,
};
use hearth_messages::{SealedBlock, TxError};
use serde_json::Value;

use crate::core::RpcContext;
use crate::core::RpcError;
use crate::core::{Hot, Reply};
use crate::core::{Params, TxObject};
use crate::core::{pending_transaction, read_block, rpc_receipt, rpc_transaction, to_json};
use crate::eth::call::{At, estimate};
use crate::eth::fees::{SUGGESTED_TIP, latest_base_fee};

/// Decodes the argument of one eth_sendRawTransaction. A blob transaction comes in its network
/// form, with its sidecar; the pool refuses one without.
fn decode_raw(params: &Params) -> Result<TxEnvelope, RpcError> {
    params.at_most(1)?;
    let raw: Bytes = params.required(0)?;
    decode_signed(&raw)
}

/// A raw transaction, decoded; one sealed with the impersonation placeholder's shape is
/// refused (`mempool::placeholder_sender`: only the node makes those).
fn decode_signed(raw: &Bytes) -> Result<TxEnvelope, RpcError> {
    let tx = decode_tx(raw).map_err(|e| RpcError::TxDecode(e.to_string()))?;
    if hearth_messages::mempool::placeholder_sender(tx.signature()).is_some() {
        return Err(RpcError::Tx(hearth_messages::TxError::InvalidSignature));
    }
    Ok(tx)
}

/// eth_sendRawTransaction: `[signedTxBytes]`; the transaction hash.
pub(crate) async fn send_raw_transaction(
    ctx: &RpcContext,
    params: &Params,
) -> Result<Reply, RpcError> {
    let tx = decode_raw(params)?;
    Ok(Reply::Hot(Hot::Hash(submit_and_mine(ctx, tx).await?)))
}

/// The longest eth_sendRawTransactionSync waits for its block (anvil's bound).
const SYNC_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(30);

/// eth_sendRawTransactionSync (EIP-7966): `[signedTxBytes, timeoutMs?]`; the receipt once the
/// transaction is in a block: at once with automine, else when the miner's timer or an
/// evm_mine includes it. Past the timeout (at most, and by default, 30 s, as anvil; 0 is the
/// default) it answers code 4 "Transaction confirmation timeout" with the hash in `data`, and
/// the transaction stays pooled.
pub(crate) async fn send_raw_transaction_sync(
    ctx: &RpcContext,
    params: &Params,
) -> Result<Reply, RpcError> {
    params.at_most(2)?;
    let timeout = match params.optional::<crate::core::HexOrDecimal>(1)? {
        Some(ms) if ms.0 > 0 => std::time::Duration::from_millis(ms.0).min(SYNC_TIMEOUT),
        _ => SYNC_TIMEOUT,
    };
    let raw: Bytes = params.required(0)?;
    let tx = decode_signed(&raw)?;
    let hash = submit_and_mine(ctx, tx).await?;
    // Looked up in the chain's index, which a committed block updates: at once with automine;
    // otherwise every few milliseconds (a read of memory) until a block holds it.
    let deadline = tokio::time::Instant::now() + timeout;
    let mut step = std::time::Duration::from_millis(2);
    loop {
        if let Some((number, index)) = ctx.chain.tx_location(&hash)? {
            let block = read_block(ctx, number)?;
            return Ok(Reply::typed(
                block.and_then(|b| rpc_receipt(&b, index as usize, &ctx.forks)),
            ));
        }
        let now = tokio::time::Instant::now();
        if now >= deadline {
            return Err(RpcError::NotConfirmed { hash });
        }
        tokio::time::sleep(step.min(deadline - now)).await;
        step = (step * 2).min(std::time::Duration::from_millis(50));
    }
}

/// The eth_sendRawTransaction items of one JSON-RPC batch (their raw `params`), admitted as
/// one pool batch: each item answers its hash or its own error, and when the pool cannot take
/// them all, every decoded item answers the shared "txpool is full". Automine runs once after.
pub(crate) async fn send_raw_batch(
    ctx: &RpcContext,
    items: Vec<Option<Value>>,
) -> Vec<Result<Value, RpcError>> {
    let decoded: Vec<Result<TxEnvelope, RpcError>> =
        items.into_iter().map(|p| decode_raw(&Params::new(p))).collect();
    let txs: Vec<TxEnvelope> = decoded.iter().flatten().cloned().collect();
    let admitted = if txs.is_empty() {
        Ok(Vec::new())
    } else {
        let submit = ThenMine { submit: SubmitTxs { txs }, miner: ctx.miner.auto_mine.clone() };
        match ctx.mempool.submit_txs_then_mine(submit).await {
            Ok(result) => result.map_err(RpcError::Tx),
            Err(e) => Err(e.into()),
        }
    };
    let mut answers = admitted.as_ref().ok().map(|r| r.iter());
    decoded
        .into_iter()
        .map(|item| {
            item?;
            match (&admitted, answers.as_mut().and_then(Iterator::next)) {
                (Err(shared), _) => Err(shared_error(shared)),
                (Ok(_), Some(Ok(hash))) => to_json(hash),
                (Ok(_), Some(Err(e))) => Err(RpcError::Tx(e.clone())),
                (Ok(_), None) => Err(RpcError::Tx(TxError::Mailbox("missing answer".into()))),
            }
        })
        .collect()
}

/// The error shared by every item of a refused batch.
fn shared_error(error: &RpcError) -> RpcError {
    match error {
        RpcError::Tx(e) => RpcError::Tx(e.clone()),
        other => RpcError::Tx(TxError::Mailbox(other.to_string())),
    }
}

/// eth_sendTransaction: `[txObject]`; fills what is missing and sends it like
/// eth_sendRawTransaction, signed with the dev key of `from`. From an impersonated address it
/// sends the transaction unsigned (the pool executes it as `from`). The nonce, unless given,
/// is chosen by the pool as it admits the transaction (`SubmitFilled`): concurrent sends from
/// one account then get consecutive nonces.
pub(crate) async fn send_transaction(ctx: &RpcContext, params: &Params) -> Result<Value, RpcError> {
    params.at_most(1)?;
    let request: TxObject = params.required(0)?;
    let from = request.from.ok_or(RpcError::UnknownAccount)?;
    request.refuse_blobs("eth_sendTransaction")?;
    // Checked before filling: an unknown account must not surface as a failed estimate.
    let sealer = sealer_for(ctx, from).await?;
    let nonce = request.nonce;
    let filled = fill(ctx, from, request).await?;
    submit_filled(ctx, from, nonce, filled, sealer).await
}

/// eth_sendUnsignedTransaction: `[txObject]` with a `from`; like eth_sendTransaction, but sent
/// unsigned as `from` whatever its key or impersonation (anvil's method for scripts that act
/// as any account).
pub(crate) async fn send_unsigned_transaction(
    ctx: &RpcContext,
    params: &Params,
) -> Result<Value, RpcError> {
    params.at_most(1)?;
    let request: TxObject = params.required(0)?;
    let from = request.from.ok_or_else(|| {
        RpcError::InvalidParams(
            "No Signer available: eth_sendUnsignedTransaction needs `from`".into(),
        )
    })?;
    request.refuse_blobs("eth_sendUnsignedTransaction")?;
    let nonce = request.nonce;
    let filled = fill(ctx, from, request).await?;
    submit_filled(ctx, from, nonce, filled, Sealer::Unsigned).await
}

/// How a transaction the node fills gets its signature.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Sealer {
    /// Signed with this dev key.
    Key(B256),
    /// Unsigned (a placeholder signature), from an impersonated account: the pool refuses it
    /// if impersonation ends before it is admitted.
    Impersonated,
    /// Unsigned, admitted as its sender regardless (eth_sendUnsignedTransaction).
    Unsigned,
}

impl Sealer {
    /// `filled` with `nonce`, signed or sealed with a placeholder for `from`.
    pub(crate) fn seal(
        self,
        from: Address,
        filled: Filled,
        nonce: u64,
    ) -> Result<TxEnvelope, TxError> {
        let filled = filled.with_nonce(nonce);
        match self {
            Self::Key(key) => {
                let signature = sign(key, filled.signature_hash())
                    .map_err(|e| TxError::Signing(e.to_string()))?;
                Ok(filled.seal(signature))
            }
            // Such a transaction reaches the pool only as an impersonated `SubmitFilled`, which
            // takes the sender as given; eth_sendRawTransaction refuses the placeholder's shape.
            Self::Impersonated | Self::Unsigned => {
                Ok(filled.seal(hearth_messages::mempool::placeholder_signature(from)))
            }
        }
    }

    const fn signed_by(self) -> SignedBy {
        match self {
            Self::Key(_) => SignedBy::DevKey,
            Self::Impersonated => SignedBy::Impersonated,
            Self::Unsigned => SignedBy::Unsigned,
        }
    }
}

/// How `from` can send: with its dev key, or impersonated; otherwise "unknown account".
pub(crate) async fn sealer_for(ctx: &RpcContext, from: Address) -> Result<Sealer, RpcError> {
    if let Some(signer) = ctx.signers.iter().find(|s| s.address() == from) {
        return Ok(Sealer::Key(B256::from_slice(&signer.credential().to_bytes())));
    }
    let impersonated = ctx.mempool.is_impersonated(IsImpersonated(from)).await?;
    if impersonated { Ok(Sealer::Impersonated) } else { Err(RpcError::UnknownAccount) }
}

/// Admits a filled transaction from `from`, the pool choosing the nonce unless `nonce` is
/// given, then lets the miner mine; answers the hash.
async fn submit_filled(
    ctx: &RpcContext,
    from: Address,
    nonce: Option<u64>,
    filled: Filled,
    sealer: Sealer,
) -> Result<Value, RpcError> {
    let seal: Seal = Box::new(move |nonce| sealer.seal(from, filled, nonce));
    let submit = SubmitFilled { sender: from, nonce, signed_by: sealer.signed_by(), seal };
    let submit = ThenMine { submit, miner: ctx.miner.auto_mine.clone() };
    let started = std::time::Instant::now();
    let hash = match ctx.mempool.submit_filled_then_mine(submit).await? {
        Ok(hash) => hash,
        // Impersonation stopped after the check above: the account is unknown to this node.
        Err(TxError::NotImpersonated(_)) => return Err(RpcError::UnknownAccount),
        Err(e) => return Err(e.into()),
    };
    // Where a sequential send's time goes (issue 38): the pool's admission (nonce, signature,
    // checks) and automine's whole run, with the one hop there and back (the miner's "block
    // timings" line splits the run).
    tracing::debug!(
        target: "rpc::eth_tx",
        submit_and_mine_us = started.elapsed().as_micros() as u64,
        "send timings"
    );
    to_json(&hash)
}

/// Signs `hash` with libsecp256k1, several times faster than the pure-Rust k256 behind
/// `PrivateKeySigner::sign_hash_sync` (signing was the largest user-space cost of a sequential
/// eth_sendTransaction). Both derive the nonce by RFC 6979, so the signature is the same.
fn sign(secret: B256, hash: B256) -> Result<Signature, alloy_signer::Error> {
    alloy_consensus::crypto::secp256k1::sign_message(secret, hash)
        .map_err(alloy_signer::Error::other)
}

/// A filled, unsigned transaction of one of the types eth_sendTransaction makes.
pub(crate) enum Filled {
    Legacy(TxLegacy),
    Eip2930(TxEip2930),
    Eip1559(TxEip1559),
    Eip7702(TxEip7702),
}

impl Filled {
    fn with_nonce(mut self, nonce: u64) -> Self {
        match &mut self {
            Self::Legacy(tx) => tx.nonce = nonce,
            Self::Eip2930(tx) => tx.nonce = nonce,
            Self::Eip1559(tx) => tx.nonce = nonce,
            Self::Eip7702(tx) => tx.nonce = nonce,
        }
        self
    }

    fn signature_hash(&self) -> B256 {
        match self {
            Self::Legacy(tx) => tx.signature_hash(),
            Self::Eip2930(tx) => tx.signature_hash(),
            Self::Eip1559(tx) => tx.signature_hash(),
            Self::Eip7702(tx) => tx.signature_hash(),
        }
    }

    fn seal(self, signature: Signature) -> TxEnvelope {
        match self {
            Self::Legacy(tx) => tx.into_signed(signature).into(),
            Self::Eip2930(tx) => tx.into_signed(signature).into(),
            Self::Eip1559(tx) => tx.into_signed(signature).into(),
            Self::Eip7702(tx) => tx.into_signed(signature).into(),
        }
    }
}

/// Fills chain id, gas and fees as geth does. The nonce is the caller's or 0: the pool sets
/// the pending one when it admits the transaction ([`Filled::with_nonce`]).
pub(crate) async fn fill(
    ctx: &RpcContext,
    from: Address,
    request: TxObject,
) -> Result<Filled, RpcError> {
    // The pool reads the sender when it admits the transaction, on its own thread.
    crate::eth::fork_warm::accounts(ctx, &[from]).await?;
    let chain_id = fillable(ctx, &request)?;
    let gas_limit = match request.gas {
        Some(gas) => gas,
        None => estimate_for_fill(ctx, from, &request).await?,
    };
    let fields = Common {
        chain_id,
        nonce: request.nonce.unwrap_or_default(),
        gas_limit,
        to: request.to.map_or(TxKind::Create, TxKind::Call),
        value: request.value.unwrap_or_default(),
        input: request.input.clone().unwrap_or_default(),
    };
    // A gasPrice means a legacy transaction (EIP-2930 when it has an access list); so does a
    // node-wide `--gas-price` when the request names no fee at all.
    let fixed_price = ctx.gas_price.filter(|_| {
        request.max_fee_per_gas.is_none() && request.max_priority_fee_per_gas.is_none()
    });
    if let Some(authorization_list) = request.authorization_list.clone() {
        // The decoder refused a missing `to`; a node-wide price is both caps.
        let TxKind::Call(to) = fields.to else {
            return Err(RpcError::InvalidParams("authorizationList needs a \"to\"".into()));
        };
        let (max_fee_per_gas, max_priority_fee_per_gas) = match fixed_price {
            Some(price) => (price, price),
            None => dynamic_fees(ctx, request.max_fee_per_gas, request.max_priority_fee_per_gas)?,
        };
        return Ok(Filled::Eip7702(TxEip7702 {
            chain_id,
            nonce: fields.nonce,
            gas_limit,
            max_fee_per_gas,
            max_priority_fee_per_gas,
            to,
            value: fields.value,
            access_list: request.access_list.unwrap_or_default(),
            authorization_list,
            input: fields.input,
        }));
    }
    if let Some(gas_price) = request.gas_price.or(fixed_price) {
        return Ok(fields.priced(gas_price, request.access_list));
    }
    let (max_fee_per_gas, max_priority_fee_per_gas) =
        dynamic_fees(ctx, request.max_fee_per_gas, request.max_priority_fee_per_gas)?;
    Ok(Filled::Eip1559(TxEip1559 {
        chain_id,
        nonce: fields.nonce,
        gas_limit,
        max_fee_per_gas,
        max_priority_fee_per_gas,
        to: fields.to,
        value: fields.value,
        access_list: request.access_list.unwrap_or_default(),
        input: fields.input,
    }))
}

/// The chain id a request may be filled for (its own must match), after refusing what cannot
/// be signed: a type-4 transaction priced with gasPrice (a call may price one so, with both
/// caps, as geth runs it; a transaction to sign carries the dynamic fee fields).
fn fillable(ctx: &RpcContext, request: &TxObject) -> Result<u64, RpcError> {
    let chain_id = ctx.chain_id.get();
    if let Some(got) = request.chain_id
        && got != chain_id
    {
        return Err(TxError::WrongChainId { expected: chain_id, got }.into());
    }
    if request.authorization_list.is_some() && request.gas_price.is_some() {
        return Err(RpcError::InvalidParams(
            "authorizationList makes a type-4 transaction, which pays with maxFeePerGas and \
             maxPriorityFeePerGas, not gasPrice"
                .into(),
        ));
    }
    Ok(chain_id)
}

/// The gas limit of a request that names none: estimated on the head's state in the next
/// block's environment (the block it will be mined in, as anvil estimates); the nonce is left
/// unchecked because pooled transactions may already have moved it past the head's.
async fn estimate_for_fill(
    ctx: &RpcContext,
    from: Address,
    request: &TxObject,
) -> Result<u64, RpcError> {
    let next = crate::eth::call::NextBlock::of(ctx).await?;
    let call = || {
        let call = TxObject { from: Some(from), nonce: None, ..request.clone() };
        let at = At::head(ctx)?;
        let mut request = call.into_call_request(ctx.limits.gas_cap);
        request.block_overrides = Some(next.overrides(at.number(), None));
        Ok((request, at))
    };
    estimate(ctx, call).await
}

/// The fields every filled transaction type has.
struct Common {
    chain_id: u64,
    nonce: u64,
    gas_limit: u64,
    to: TxKind,
    value: U256,
    input: Bytes,
}

impl Common {
    /// A transaction priced with one gas price: EIP-2930 with an access list, else legacy.
    fn priced(self, gas_price: u128, access_list: Option<AccessList>) -> Filled {
        let Self { chain_id, nonce, gas_limit, to, value, input } = self;
        match access_list {
            Some(access_list) => Filled::Eip2930(TxEip2930 {
                chain_id,
                nonce,
                gas_price,
                gas_limit,
                to,
                value,
                access_list,
                input,
            }),
            None => Filled::Legacy(TxLegacy {
                chain_id: Some(chain_id),
                nonce,
                gas_price,
                gas_limit,
                to,
                value,
                input,
            }),
        }
    }
}

/// The fee cap and tip of a dynamic-fee transaction: the caller's, else twice the head's base
/// fee plus the suggested tip, and that tip.
fn dynamic_fees(
    ctx: &RpcContext,
    max_fee_per_gas: Option<u128>,
    max_priority_fee_per_gas: Option<u128>,
) -> Result<(u128, u128), RpcError> {
    let base_fee = u128::from(latest_base_fee(ctx)?);
    let max_fee_per_gas = max_fee_per_gas.unwrap_or(2 * base_fee + SUGGESTED_TIP);
    // A default tip never exceeds an explicit fee cap; an explicit one is the caller's to check.
    let max_priority_fee_per_gas =
        max_priority_fee_per_gas.unwrap_or(SUGGESTED_TIP.min(max_fee_per_gas));
    Ok((max_fee_per_gas, max_priority_fee_per_gas))
}

/// Admits `tx` to the mempool, then lets the miner mine what is pending.
async fn submit_and_mine(ctx: &RpcContext, tx: TxEnvelope) -> Result<B256, RpcError> {
    crate::eth::fork_warm::sender(ctx, &tx).await?;
    let submit = ThenMine { submit: SubmitTx { tx }, miner: ctx.miner.auto_mine.clone() };
    Ok(ctx.mempool.submit_tx_then_mine(submit).await??)
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
    let pooled = ctx.mempool.get_pooled_tx(GetPooledTx(hash)).await?;
    to_json(&pooled.map(|p| pending_transaction(&p)))
}

/// eth_getTransactionReceipt: `[hash]`; `null` while unknown or pending.
pub(crate) fn get_transaction_receipt(
    ctx: &RpcContext,
    params: &Params,
) -> Result<Reply, RpcError> {
    params.at_most(1)?;
    let hash: B256 = params.required(0)?;
    let Some((number, index)) = ctx.chain.tx_location(&hash)? else {
        return Ok(Reply::Value(Value::Null));
    };
    let block = read_block(ctx, number)?;
    Ok(Reply::typed(block.and_then(|b| rpc_receipt(&b, index as usize, &ctx.forks))))
}

/// eth_getTransactionBySenderAndNonce (anvil's): `[sender, nonce]`; the pooled transaction
/// with that nonce, else the mined one ([`mined_by_sender_and_nonce`]), else `null`.
pub(crate) async fn get_transaction_by_sender_and_nonce(
    ctx: &RpcContext,
    (sender, nonce): (Address, u64),
) -> Result<Value, RpcError> {
    let pooled = hearth_messages::mempool::GetPooledByNonce { sender, nonce };
    if let Some(pooled) = ctx.mempool.get_pooled_by_nonce(pooled).await? {
        return to_json(&pending_transaction(&pooled));
    }
    let found = mined_by_sender_and_nonce(ctx, sender, nonce)?;
    to_json(&found.and_then(|(block, index)| rpc_transaction(&block, index)))
}

/// The mined transaction of `sender` with `nonce`: its block and position, or `None`. The
/// sender's nonce only grows from block to block, so the block holding it is the first whose
/// state has a higher one: a binary search over the archive's states (log2 of the chain's
/// length reads), then one block's transactions, as anvil finds it.
pub(crate) fn mined_by_sender_and_nonce(
    ctx: &RpcContext,
    sender: Address,
    nonce: u64,
) -> Result<Option<(SealedBlock, usize)>, RpcError> {
    let head = ctx.chain.head_number().unwrap_or_default();
    let nonce_at = |number: u64| -> Result<u64, RpcError> {
        Ok(ctx.chain.state_at(number).account(&sender)?.map_or(0, |a| a.nonce))
    };
    if head == 0 || nonce >= nonce_at(head)? {
        return Ok(None);
    }
    // The first block after which the sender's nonce is past `nonce`.
    let (mut low, mut high) = (1, head);
    while low < high {
        let mid = low + (high - low) / 2;
        if nonce_at(mid)? > nonce {
            high = mid;
        } else {
            low = mid + 1;
        }
    }
    let Some(block) = read_block(ctx, low)? else { return Ok(None) };
    let found = block
        .body
        .transactions
        .iter()
        .zip(&block.body.senders)
        .position(|(tx, from)| *from == sender && tx.nonce() == nonce);
    Ok(found.map(|index| (block, index)))
}

/// eth_getRawTransactionByHash (and geth's debug_getRawTransaction): `[hash]`; the
/// transaction's EIP-2718 bytes, mined or pooled, `null` when unknown.
pub(crate) async fn get_raw_transaction(
    ctx: &RpcContext,
    (hash,): (B256,),
) -> Result<Value, RpcError> {
    if let Some((number, index)) = ctx.chain.tx_location(&hash)?
        && let Some(body) = ctx.chain.body(number)?
        && let Some(tx) = body.transactions.get(index as usize)
    {
        return to_json(&Bytes::from(tx.encoded_2718()));
    }
    let pooled = ctx.mempool.get_pooled_tx(GetPooledTx(hash)).await?;
    to_json(&pooled.map(|p| Bytes::from(p.tx.encoded_2718())))
}

#[cfg(test)]
mod tests {
    use alloy_signer::SignerSync;

    use super::*;

    #[test]
    fn libsecp_signatures_match_the_signer_and_recover() {
        let signers: Vec<_> =
            (0..4).map(|_| alloy_signer_local::PrivateKeySigner::random()).collect();
        for (i, signer) in signers.iter().enumerate() {
            let hash = alloy_primitives::keccak256([i as u8; 7]);
            let fast =
                sign(B256::from_slice(&signer.credential().to_bytes()), hash).expect("signs");
            assert_eq!(fast, signer.sign_hash_sync(&hash).expect("signs"));
            assert_eq!(
                fast.recover_address_from_prehash(&hash).expect("recovers"),
                signer.address()
            );
        }
    }
}
