//! Messages to the `MempoolActor`.

use actix::Message;
use alloy_consensus::TxEnvelope;
use alloy_primitives::{Address, B256};

use crate::TxError;
use crate::block_build::{InvalidTx, PooledTx};

/// Decodes raw transaction bytes as eth_sendRawTransaction receives them: one EIP-2718
/// envelope (a legacy RLP list, or `type || rlp(fields)`), with nothing after it. The RPC front
/// and the conformance runner both decode with this, so they accept exactly the same bytes.
pub fn decode_tx(raw: &[u8]) -> Result<TxEnvelope, alloy_eips::eip2718::Eip2718Error> {
    use alloy_eips::eip2718::Decodable2718;
    TxEnvelope::decode_2718_exact(raw)
}

/// `tx` in its canonical (block) form: a blob transaction without its sidecar (network form),
/// anything else as it is. The hash and signature do not change: the sidecar is not signed.
/// Whatever goes into a block goes through this, so blocks never hold blobs.
pub fn without_sidecar(tx: &TxEnvelope) -> TxEnvelope {
    use alloy_consensus::{Signed, TxEip4844Variant};
    match tx {
        TxEnvelope::Eip4844(signed) if signed.tx().sidecar().is_some() => {
            let canonical = TxEip4844Variant::TxEip4844(signed.tx().tx().clone());
            TxEnvelope::Eip4844(Signed::new_unchecked(
                canonical,
                *signed.signature(),
                *signed.hash(),
            ))
        }
        other => other.clone(),
    }
}

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

/// Turns a transaction eth_sendTransaction filled into a sealed one once its nonce is known:
/// signs it with the sender's dev key, or gives it an impersonated sender's placeholder
/// signature.
pub type Seal = Box<dyn FnOnce(u64) -> Result<TxEnvelope, TxError> + Send>;

/// Admits a transaction eth_sendTransaction (or eth_sendUnsignedTransaction) filled for
/// `sender`. Without a nonce the pool gives it `sender`'s pending nonce and seals it in the
/// same step, so concurrent sends from one account get consecutive nonces instead of racing
/// for the same one. Replies with the transaction hash.
pub struct SubmitFilled {
    /// Who sends it.
    pub sender: Address,
    /// The caller's nonce, or `None` for the pending one.
    pub nonce: Option<u64>,
    /// How the sender vouches for it, which decides whether the pool takes it.
    pub signed_by: SignedBy,
    /// Seals the transaction with the nonce chosen.
    pub seal: Seal,
}

impl std::fmt::Debug for SubmitFilled {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SubmitFilled")
            .field("sender", &self.sender)
            .field("nonce", &self.nonce)
            .field("signed_by", &self.signed_by)
            .finish_non_exhaustive()
    }
}

impl Message for SubmitFilled {
    type Result = Result<B256, TxError>;
}

/// Who vouches for a transaction the node sealed itself.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SignedBy {
    /// Signed with the sender's dev key.
    DevKey,
    /// The sender has no key here and must be impersonated when the pool admits it.
    Impersonated,
    /// eth_sendUnsignedTransaction: executed as the sender whatever its impersonation, as
    /// anvil does.
    Unsigned,
}

/// Admits several signed transactions as one batch. Serves a JSON-RPC batch of
/// `eth_sendRawTransaction`. Each item is validated on its own (its own error), but the bounds
/// are all-or-nothing: when the valid items would not fit, the whole batch fails with
/// [`TxError::PoolFull`] and the pool is left exactly as it was.
#[derive(Debug, Clone)]
pub struct SubmitTxs {
    /// The signed transactions, in order.
    pub txs: Vec<TxEnvelope>,
}

impl Message for SubmitTxs {
    type Result = Result<Vec<Result<B256, TxError>>, TxError>;
}

/// Admits `submit`, then has `miner` automine before the answer goes back: the receipt
/// exists when the caller is answered, as with a submission followed by `AutoMine`, but the
/// request visits the pool's thread (which the miner shares) once instead of twice. The
/// answer is the submission's; automine's outcome is the miner's to report (the
/// transaction is admitted whatever happens next, and failing the request would make the
/// caller resend it).
#[derive(Debug)]
pub struct ThenMine<M> {
    /// What to admit.
    pub submit: M,
    /// The miner to ask for an automine run once something was admitted.
    pub miner: actix::Recipient<crate::ask::Ask<crate::miner::AutoMine>>,
}

impl<M> Message for ThenMine<M>
where
    M: Message,
    M::Result: Admits,
{
    type Result = M::Result;
}

/// Whether a submission's answer admitted anything (so whether there is something to mine).
pub trait Admits {
    /// At least one transaction went into the pool.
    fn admitted_any(&self) -> bool;
}

impl Admits for Result<B256, TxError> {
    fn admitted_any(&self) -> bool {
        self.is_ok()
    }
}

impl Admits for Result<Vec<Result<B256, TxError>>, TxError> {
    fn admitted_any(&self) -> bool {
        self.as_ref().is_ok_and(|items| items.iter().any(Result::is_ok))
    }
}

/// Starts (`true`) or stops impersonating `address`. Serves `anvil_impersonateAccount` and
/// `anvil_stopImpersonatingAccount`.
#[derive(Debug, Clone, Copy)]
pub struct SetImpersonated {
    /// The account.
    pub address: Address,
    /// Whether transactions may now be sent from it unsigned.
    pub enabled: bool,
}

impl Message for SetImpersonated {
    type Result = ();
}

/// Whether unsigned transactions from `0` are accepted (it is impersonated, or every account
/// is). eth_sendTransaction asks before it fills a transaction for an account without a key.
#[derive(Debug, Clone, Copy)]
pub struct IsImpersonated(pub Address);

impl Message for IsImpersonated {
    type Result = bool;
}

/// Impersonates every account (`true`) or only the listed ones. Serves
/// `anvil_autoImpersonateAccount`.
#[derive(Debug, Clone, Copy)]
pub struct SetAutoImpersonate(pub bool);

impl Message for SetAutoImpersonate {
    type Result = ();
}

/// Takes the executable transactions in price/nonce order, up to `gas_limit` of declared gas
/// and `max_bytes` of encoded transactions in total. They stay in the pool until `TxsMined`
/// removes them, so what does not fit waits for a later block.
#[derive(Debug, Clone, Copy)]
pub struct TakePending {
    /// Gas budget of the block.
    pub gas_limit: u64,
    /// Byte budget of the block's transactions.
    pub max_bytes: usize,
    /// Base fee of the block: transactions paying less wait.
    pub base_fee: u64,
}

impl Message for TakePending {
    type Result = Vec<PooledTx>;
}

/// A block was committed: drop what it included and what it found invalid. Answers whether
/// any transaction is left in the pool, so that automine asks for another block only then
/// (with one sequential sender the pool is empty after every block, and the extra
/// `TakePending` round trip was a tenth of a transaction's path). The pool reports every
/// invalid one it drops (a `warn` line and `hearth_mempool_dropped_invalid_total`).
#[derive(Debug, Clone)]
pub struct TxsMined {
    /// Hashes included in the block.
    pub included: Vec<B256>,
    /// Transactions that failed validation, with why.
    pub invalid: Vec<InvalidTx>,
}

impl Message for TxsMined {
    /// Whether the pool still holds transactions (executable or not).
    type Result = bool;
}

/// Looks up a pooled transaction. Serves `eth_getTransactionByHash` for pending transactions.
#[derive(Debug, Clone, Copy)]
pub struct GetPooledTx(pub B256);

impl Message for GetPooledTx {
    type Result = Option<PooledTx>;
}

/// A sender's pooled transaction by nonce. Serves eth_getTransactionBySenderAndNonce.
#[derive(Debug, Clone, Copy)]
pub struct GetPooledByNonce {
    /// The sender.
    pub sender: Address,
    /// The nonce.
    pub nonce: u64,
}

impl Message for GetPooledByNonce {
    type Result = Option<PooledTx>;
}

/// The sender's next nonce counting pooled transactions. Serves `eth_getTransactionCount`
/// with the `pending` tag.
#[derive(Debug, Clone, Copy)]
pub struct PendingNonce(pub Address);

impl Message for PendingNonce {
    type Result = Result<u64, TxError>;
}

/// The pool's counters for `/metrics`.
#[derive(Debug, Clone, Copy)]
pub struct GetPoolCounters;

/// What [`GetPoolCounters`] answers.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PoolCounters {
    /// Admitted transactions that block building later refused and the pool dropped.
    pub dropped_invalid: u64,
}

impl Message for GetPoolCounters {
    type Result = PoolCounters;
}

/// How many transactions the pool holds: (executable, waiting on a nonce gap).
#[derive(Debug, Clone, Copy)]
pub struct PoolSize;

impl Message for PoolSize {
    type Result = (usize, usize);
}

/// Every pooled transaction, split as geth's txpool does. Serves `txpool_status`,
/// `txpool_content` and `txpool_inspect`.
#[derive(Debug, Clone, Copy)]
pub struct GetPoolContent;

/// The pool's transactions: `pending` can go into the next block (consecutive nonces from the
/// sender's state nonce, fee cap at least the next base fee); `queued` waits (a nonce gap, or a
/// fee cap below the base fee). Each list is in (sender, nonce) order.
#[derive(Debug, Clone, Default)]
pub struct PoolContent {
    /// Executable now.
    pub pending: Vec<PooledTx>,
    /// Waiting.
    pub queued: Vec<PooledTx>,
}

impl Message for GetPoolContent {
    type Result = PoolContent;
}

/// Removes one transaction (and nothing else) from the pool. Serves `anvil_dropTransaction`.
/// Replies with whether it was there.
#[derive(Debug, Clone, Copy)]
pub struct DropTx(pub B256);

impl Message for DropTx {
    type Result = bool;
}

/// The block gas limit changed: later admissions check against `0`. Sent with
/// `evm_setBlockGasLimit`.
#[derive(Debug, Clone, Copy)]
pub struct SetPoolGasLimit(pub u64);

impl Message for SetPoolGasLimit {
    type Result = ();
}

/// The state changed outside a block (a dev patch or a revert): drop what no longer applies.
#[derive(Debug, Clone, Copy)]
pub struct Revalidate;

impl Message for Revalidate {
    type Result = ();
}

/// Transactions were admitted to the pool (in admission order), each with its hash and
/// sender. Sent with `try_send` to the pool's subscribers (the filter and subscription
/// actors): a full subscriber misses it, admission never waits.
#[derive(Debug, Clone)]
pub struct TxsAdmitted(pub Vec<crate::executor::PooledTx>);

impl Message for TxsAdmitted {
    type Result = ();
}

/// Sets the chain id the pool admits (and publishes it to every reader of the shared
/// [`ChainId`](crate::ChainId)), dropping pooled transactions signed for another chain.
/// Serves `anvil_setChainId`. Replies with how many transactions were dropped.
#[derive(Debug, Clone, Copy)]
pub struct SetChainId(pub u64);

impl Message for SetChainId {
    type Result = usize;
}

/// Removes every pooled transaction. Serves `anvil_dropAllTransactions` and `anvil_reset`.
/// Replies with how many there were.
#[derive(Debug, Clone, Copy)]
pub struct DropAll {
    /// The chain was replaced (`anvil_reset`): the sidecars the pool kept of the old chain's
    /// mined blob transactions go too. `anvil_dropAllTransactions` keeps them.
    pub chain_replaced: bool,
}

impl Message for DropAll {
    type Result = usize;
}

/// Removes every pooled transaction from `0`. Serves `anvil_removePoolTransactions`.
/// Replies with how many there were.
#[derive(Debug, Clone, Copy)]
pub struct RemoveSender(pub Address);

impl Message for RemoveSender {
    type Result = usize;
}

/// Blobs of a blob transaction the pool holds, or that a block included recently (the pool
/// keeps their sidecars for a while, bounded). Serves `anvil_getBlobByHash` and
/// `anvil_getBlobsByTransactionHash`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GetBlobs {
    /// The one blob with this versioned hash.
    Versioned(B256),
    /// Every blob of the transaction with this hash, in order.
    Transaction(B256),
}

impl Message for GetBlobs {
    /// `None`: not known (or no longer kept).
    type Result = Option<Vec<alloy_eips::eip4844::Blob>>;
}

/// Blob transactions in their network form (sidecar included), pooled or kept after mining,
/// one answer per key (`None`: not known). Serves engine_getBlobsV1/V2 (by versioned hash: any
/// transaction holding that blob has the same blob and proof) and the blobs bundle of
/// engine_getPayload (by transaction hash: exactly the block's transaction).
#[derive(Debug, Clone)]
pub enum GetBlobTxs {
    /// A transaction holding each blob, by versioned hash.
    Versioned(Vec<B256>),
    /// Each transaction, by its hash.
    Transactions(Vec<B256>),
}

impl Message for GetBlobTxs {
    type Result = Vec<Option<std::sync::Arc<alloy_consensus::TxEnvelope>>>;
}

crate::actor_client! {
    /// The `MempoolActor`'s client: how the RPC front submits, looks up and controls pooled
    /// transactions. Request-path messages are `ask`ed (a full mailbox answers -32005 at once);
    /// dev-chain controls wait for room.
    pub struct MempoolClient for "mempool" {
        /// Admits a signed transaction (eth_sendRawTransaction), then automines before
        /// answering.
        ask submit_tx_then_mine: ThenMine<SubmitTx>,
        /// Admits what eth_sendTransaction filled, choosing its nonce, then automines before
        /// answering.
        ask submit_filled_then_mine: ThenMine<SubmitFilled>,
        /// Admits a JSON-RPC batch of raw transactions as one pool batch, then automines
        /// before answering.
        ask submit_txs_then_mine: ThenMine<SubmitTxs>,
        /// Finds a pending transaction by hash.
        ask get_pooled_tx: GetPooledTx,
        /// Finds a sender's pending transaction by nonce.
        ask get_pooled_by_nonce: GetPooledByNonce,
        /// Blobs of a pooled or recently mined blob transaction.
        ask get_blobs: GetBlobs,
        /// The transactions holding blobs, by versioned hash (engine_getBlobs).
        ask get_blob_txs: GetBlobTxs,
        /// What the next block would take from the pool (txpoolExt_getTxs); nothing leaves it.
        ask pending_for_block: TakePending,
        /// The next nonce counting pending transactions.
        ask pending_nonce: PendingNonce,
        /// Whether an account without a dev key may send unsigned (it is impersonated).
        ask is_impersonated: IsImpersonated,
        /// The (executable, queued) counts, for `GET /metrics`.
        ask pool_size: PoolSize,
        /// The pool's counters (transactions dropped as invalid), for `GET /metrics`.
        ask pool_counters: GetPoolCounters,
        /// Starts / stops impersonating one account.
        send set_impersonated: SetImpersonated,
        /// Impersonates every account.
        send set_auto_impersonate: SetAutoImpersonate,
        /// The pending and queued transactions (txpool_*).
        send pool_content: GetPoolContent,
        /// Removes one pooled transaction.
        send drop_tx: DropTx,
        /// Tells the pool the state changed outside a block.
        send revalidate: Revalidate,
        /// Tells the pool the block gas limit changed.
        send set_pool_gas_limit: SetPoolGasLimit,
        /// anvil_setChainId: the pool publishes the new id.
        send set_chain_id: SetChainId,
        /// anvil_dropAllTransactions.
        send drop_all: DropAll,
        /// anvil_removePoolTransactions.
        send remove_sender: RemoveSender,
    }
}

/// The signature Hearth seals a transaction of an impersonated account with: no key made it,
/// it only makes the hash unique per sender (r is the sender's address, s is 1; a real
/// signature's s is a random 256-bit number). [`placeholder_sender`] reads it back.
pub fn placeholder_signature(sender: alloy_primitives::Address) -> alloy_primitives::Signature {
    use alloy_primitives::U256;
    alloy_primitives::Signature::new(U256::from_be_slice(sender.as_slice()), U256::from(1), false)
}

/// The sender a [`placeholder_signature`] names (`None`: not one). The RPC front refuses a raw
/// transaction of this shape, so that a placeholder in a block always means the leader's
/// impersonation (a read replica reads the sender from it).
pub fn placeholder_sender(
    signature: &alloy_primitives::Signature,
) -> Option<alloy_primitives::Address> {
    use alloy_primitives::{Address, B256, U256};
    let r = signature.r();
    (signature.s() == U256::from(1) && r < (U256::from(1) << 160))
        .then(|| Address::from_word(B256::from(r)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_placeholder_names_its_sender_and_a_real_signature_none() {
        let sender = alloy_primitives::Address::repeat_byte(0xab);
        assert_eq!(placeholder_sender(&placeholder_signature(sender)), Some(sender));
        let real = alloy_primitives::Signature::new(
            alloy_primitives::U256::from(7) << 200,
            alloy_primitives::U256::from(1),
            false,
        );
        assert_eq!(placeholder_sender(&real), None);
    }
}
