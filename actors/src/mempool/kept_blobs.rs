//! Blob sidecars of transactions the chain included, kept for a while after the pool lets go
//! of them: blocks carry no sidecars, so without this a blob would be gone the moment its
//! transaction is mined. anvil_getBlobByHash and anvil_getBlobsByTransactionHash read them
//! (the pool's own blob transactions first). anvil keeps every sidecar it ever mined; here the
//! newest are kept up to a byte budget and the oldest go first, so a long-running node's memory
//! stays bounded.

use std::collections::{HashMap, VecDeque};
use std::sync::Arc;

use alloy_consensus::{Transaction, TxEnvelope};
use alloy_eips::eip4844::{BYTES_PER_BLOB, Blob};
use alloy_primitives::B256;

use super::blobs::sidecar;

/// Default bytes of mined blobs kept: 512 blobs, a few dozen full blocks.
pub const KEPT_BLOB_BYTES: usize = 512 * BYTES_PER_BLOB;

/// Mined blob transactions (in their network form, sidecar included), newest last. A clone
/// shares the transactions (an `Arc` each).
#[derive(Debug, Clone)]
pub struct KeptBlobs {
    /// Transaction hashes, oldest first.
    order: VecDeque<B256>,
    by_tx: HashMap<B256, Arc<TxEnvelope>>,
    /// Versioned hash -> the transaction holding it.
    by_versioned: HashMap<B256, B256>,
    bytes: usize,
    limit: usize,
}

impl Default for KeptBlobs {
    fn default() -> Self {
        Self::new(KEPT_BLOB_BYTES)
    }
}

/// The blobs `tx` carries in its sidecar (none for a transaction without one).
pub fn blobs_of(tx: &TxEnvelope) -> &[Blob] {
    sidecar(tx).map_or(&[], |s| s.blobs())
}

impl KeptBlobs {
    /// An empty store that keeps at most `limit` bytes of blobs.
    pub fn new(limit: usize) -> Self {
        Self {
            order: VecDeque::new(),
            by_tx: HashMap::new(),
            by_versioned: HashMap::new(),
            bytes: 0,
            limit,
        }
    }

    /// Keeps the sidecar of `tx` (mined as `hash`), dropping the oldest kept past the budget.
    /// A transaction without a sidecar is not kept.
    pub fn keep(&mut self, hash: B256, tx: Arc<TxEnvelope>) {
        let size = blobs_of(&tx).len() * BYTES_PER_BLOB;
        if size == 0 || size > self.limit || self.by_tx.contains_key(&hash) {
            return;
        }
        for versioned in tx.blob_versioned_hashes().unwrap_or_default() {
            self.by_versioned.insert(*versioned, hash);
        }
        self.by_tx.insert(hash, tx);
        self.order.push_back(hash);
        self.bytes += size;
        while self.bytes > self.limit
            && let Some(oldest) = self.order.pop_front()
        {
            self.forget(&oldest);
        }
    }

    fn forget(&mut self, hash: &B256) {
        let Some(tx) = self.by_tx.remove(hash) else { return };
        self.bytes -= blobs_of(&tx).len() * BYTES_PER_BLOB;
        for versioned in tx.blob_versioned_hashes().unwrap_or_default() {
            if self.by_versioned.get(versioned) == Some(hash) {
                self.by_versioned.remove(versioned);
            }
        }
    }

    /// The kept transaction `hash`.
    pub fn mined_tx(&self, hash: &B256) -> Option<&TxEnvelope> {
        self.by_tx.get(hash).map(Arc::as_ref)
    }

    /// The kept transaction holding the blob with versioned hash `versioned`.
    pub fn holding(&self, versioned: &B256) -> Option<&TxEnvelope> {
        self.by_versioned.get(versioned).and_then(|hash| self.mined_tx(hash))
    }

    /// [`KeptBlobs::mined_tx`], shared.
    pub fn mined_shared(&self, hash: &B256) -> Option<Arc<TxEnvelope>> {
        self.by_tx.get(hash).cloned()
    }

    /// [`KeptBlobs::holding`], shared.
    pub fn holding_shared(&self, versioned: &B256) -> Option<Arc<TxEnvelope>> {
        self.by_versioned.get(versioned).and_then(|hash| self.by_tx.get(hash)).cloned()
    }

    /// Drops everything (the chain was replaced).
    pub fn clear(&mut self) {
        *self = Self::new(self.limit);
    }
}

/// The blob with versioned hash `versioned` in `tx`, if `tx` carries it.
pub fn blob_in(tx: &TxEnvelope, versioned: &B256) -> Option<Blob> {
    let hashes = tx.blob_versioned_hashes()?;
    let index = hashes.iter().position(|h| h == versioned)?;
    blobs_of(tx).get(index).copied()
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloy_consensus::{SidecarBuilder, SimpleCoder, TxEip4844, TxEip4844WithSidecar};
    use alloy_primitives::Signature;

    fn blob_tx(nonce: u64, data: &[u8]) -> (B256, Arc<TxEnvelope>) {
        let sidecar: alloy_eips::eip4844::BlobTransactionSidecar =
            SidecarBuilder::<SimpleCoder>::from_slice(data).build().expect("sidecar");
        let tx = TxEip4844 {
            nonce,
            blob_versioned_hashes: sidecar.versioned_hashes().collect(),
            ..Default::default()
        };
        let signed = alloy_consensus::Signed::new_unhashed(
            alloy_consensus::TxEip4844Variant::from(TxEip4844WithSidecar::from_tx_and_sidecar(
                tx, sidecar,
            )),
            Signature::test_signature(),
        );
        let envelope = TxEnvelope::Eip4844(signed);
        (*envelope.tx_hash(), Arc::new(envelope))
    }

    #[test]
    fn mined_blobs_are_found_by_transaction_and_versioned_hash_until_the_budget_drops_them() {
        let mut kept = KeptBlobs::new(2 * BYTES_PER_BLOB);
        let (first, tx1) = blob_tx(0, b"first");
        let versioned = tx1.blob_versioned_hashes().expect("hashes")[0];
        kept.keep(first, Arc::clone(&tx1));
        assert_eq!(blobs_of(kept.mined_tx(&first).expect("kept")).len(), 1);
        let held = kept.holding(&versioned).expect("by versioned hash");
        assert_eq!(blob_in(held, &versioned), Some(blobs_of(&tx1)[0]));
        let (second, tx2) = blob_tx(1, b"second");
        let (third, tx3) = blob_tx(2, b"third");
        kept.keep(second, tx2);
        kept.keep(third, tx3);
        assert!(kept.mined_tx(&first).is_none(), "the oldest went past the budget");
        assert!(kept.holding(&versioned).is_none());
        assert!(kept.mined_tx(&second).is_some() && kept.mined_tx(&third).is_some());
        assert_eq!(kept.bytes, 2 * BYTES_PER_BLOB);
        kept.clear();
        assert!(kept.mined_tx(&third).is_none());
    }
}
