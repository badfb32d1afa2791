//! Fork state brought into the fork cache before an actor that reads it on its own thread
//! needs it.
//!
//! The pool reads a sender's account when it admits a transaction (and answers a pending
//! nonce), on its one thread: on a fork, a sender the cache lacks would hold that thread for a
//! round trip to the upstream, and every other sender's transaction behind it. The front reads
//! the account first, collecting what it misses (`fork::misses`), and awaits the fetch without
//! holding anything, so concurrent senders' accounts go upstream together and the pool then
//! finds them cached.

use alloy_consensus::TxEnvelope;
use alloy_consensus::transaction::SignerRecoverable;
use alloy_primitives::Address;
use hearth_messages::fork::misses;
use hearth_messages::storage::StorageError;

use crate::core::RpcContext;
use crate::core::RpcError;
use crate::core::head;

/// Brings `addresses`' accounts at the head into the fork cache; nothing on a chain that is
/// not a fork. An upstream failure is the error a read would have met.
pub(crate) async fn accounts(ctx: &RpcContext, addresses: &[Address]) -> Result<(), RpcError> {
    if !ctx.executor.fork_reads() {
        return Ok(());
    }
    let number = head(ctx)?;
    let (read, missed) = misses::collect(|| {
        let view = ctx.chain.state_at(number);
        addresses.iter().try_for_each(|address| view.account(address).map(drop))
    });
    match missed {
        Some(missed) => missed
            .fetch()
            .await
            .map_err(|error| RpcError::Storage(StorageError::Fork(error.to_string()))),
        None => read.map_err(RpcError::Storage),
    }
}

/// [`accounts`] for the sender of a signed transaction (recovered only on a fork; a
/// transaction whose signature does not recover is left for the pool to refuse).
pub(crate) async fn sender(ctx: &RpcContext, tx: &TxEnvelope) -> Result<(), RpcError> {
    if !ctx.executor.fork_reads() {
        return Ok(());
    }
    match tx.recover_signer() {
        Ok(sender) => accounts(ctx, &[sender]).await,
        Err(_) => Ok(()),
    }
}
