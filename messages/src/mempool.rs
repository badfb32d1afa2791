//! Messages to the `MempoolActor`.

use actix::Message;
use alloy_consensus::TxEnvelope;
use alloy_primitives::{Address, B256};

use crate::TxError;
use crate::executor::PooledTx;

/// Validates and admits a signed transaction. Serves `eth_sendRawTransaction` and
/// `eth_sendTransaction`. Replies with the transaction hash.
#[derive(Debug, Clone)]
pub struct SubmitTx {
    /// The signed transaction.
    pub tx: TxEnvelope,
}

impl Message for SubmitTx {
    type Result = Result<B256, TxError>;
}

/// Takes the executable transactions in price/nonce order, up to `gas_limit` in total.
/// They stay in the pool until `TxsMined` removes them.
#[derive(Debug, Clone, Copy)]
pub struct TakePending {
    /// Gas budget of the block.
    pub gas_limit: u64,
    /// Base fee of the block: transactions paying less wait.
    pub base_fee: u64,
}

impl Message for TakePending {
    type Result = Vec<PooledTx>;
}

/// A block was committed: drop what it included and what it found invalid.
#[derive(Debug, Clone)]
pub struct TxsMined {
    /// Hashes included in the block.
    pub included: Vec<B256>,
    /// Hashes that failed validation.
    pub invalid: Vec<B256>,
}

impl Message for TxsMined {
    type Result = ();
}

/// Looks up a pooled transaction. Serves `eth_getTransactionByHash` for pending transactions.
#[derive(Debug, Clone, Copy)]
pub struct GetPooledTx(pub B256);

impl Message for GetPooledTx {
    type Result = Option<PooledTx>;
}

/// The sender's next nonce counting pooled transactions. Serves `eth_getTransactionCount`
/// with the `pending` tag.
#[derive(Debug, Clone, Copy)]
pub struct PendingNonce(pub Address);

impl Message for PendingNonce {
    type Result = Result<u64, TxError>;
}

/// How many transactions the pool holds: (executable, waiting on a nonce gap).
#[derive(Debug, Clone, Copy)]
pub struct PoolSize;

impl Message for PoolSize {
    type Result = (usize, usize);
}
