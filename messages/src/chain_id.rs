//! The chain id, changeable at runtime (`anvil_setChainId`) and read on request paths.
//!
//! One value is shared by the RPC front (eth_chainId, net_version, signing for
//! eth_sendTransaction), the executors (CHAINID in calls and blocks) and the pool (which
//! transactions it admits). It is published like the head pointer: an atomic that readers load
//! once per request or block, no lock. Its one writer is the `MempoolActor`, which stores a
//! new id and drops the pooled transactions signed for the old one in the same handler, so no
//! admission runs under half of the change.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

/// The largest chain id accepted: a legacy (EIP-155) signature's `v` is `2 * id + 36` at
/// most, which must fit the 64 bits clients and revm keep it in.
pub const MAX_CHAIN_ID: u64 = (u64::MAX - 36) / 2;

/// A shared handle to the chain id. Clones see the same value.
#[derive(Debug, Clone)]
pub struct ChainId(Arc<AtomicU64>);

impl ChainId {
    /// A new handle holding `id`.
    pub fn new(id: u64) -> Self {
        Self(Arc::new(AtomicU64::new(id)))
    }

    /// The chain id now.
    pub fn get(&self) -> u64 {
        self.0.load(Ordering::Acquire)
    }

    /// Publishes a new chain id. Only the pool's `SetChainId` handler calls this (see the
    /// module docs), so that admissions and the id change together.
    pub fn set(&self, id: u64) {
        self.0.store(id, Ordering::Release);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clones_share_the_value() {
        let id = ChainId::new(31337);
        let reader = id.clone();
        id.set(5);
        assert_eq!(reader.get(), 5);
        // The largest id keeps a legacy v (2 * id + 36) within 64 bits.
        assert!(MAX_CHAIN_ID.checked_mul(2).and_then(|v| v.checked_add(36)).is_some());
        assert!((MAX_CHAIN_ID + 1).checked_mul(2).and_then(|v| v.checked_add(36)).is_none());
    }
}
