//! The block whose sled apply was deferred: durable (its journal record is written) and visible
//! to every reader, but not yet in sled.
//!
//! Applying a one-transfer block to sled costs about 100 µs, the largest piece of the state
//! owner's work per block; the block is already safe once its journal record is written. So
//! the state owner may answer first and apply after (`ChainDb::commit_block_deferred`,
//! `ChainDb::settle`), while the miner, the RPC front and the client do their share of the
//! next transaction. Meanwhile readers look here before they look in sled.
//!
//! Why reading here first and sled second is safe: a key leaves the overlay only after sled
//! holds it. A reader that misses here either looked before the block was committed (and so
//! never learnt of its head or hashes) or after the key was applied, and finds it in sled.
//! Only batches without removes are deferred, so merging "newest version at or before N" from
//! both sides is a plain maximum.

use std::collections::BTreeMap;
use std::ops::Bound;
use std::sync::RwLock;
use std::sync::atomic::{AtomicUsize, Ordering};

use sled::IVec;

use crate::StorageError;

/// Each key of the deferred commits with the commit that last wrote it and its value.
type Entries = BTreeMap<Vec<u8>, (u64, IVec)>;

/// The keys of deferred commits, each with its newest value and the commit that wrote it.
#[derive(Debug, Default)]
pub(crate) struct Overlay {
    entries: RwLock<Entries>,
    /// `entries.len()`, readable without the lock: readers skip the lock while nothing is
    /// deferred, which is all the time for a store written by anything but the state owner.
    len: AtomicUsize,
}

impl Overlay {
    /// Makes commit `seq`'s inserts visible.
    pub(crate) fn insert<'a>(
        &self,
        seq: u64,
        inserts: impl Iterator<Item = (&'a [u8], &'a [u8])>,
    ) -> Result<(), StorageError> {
        let mut entries = self.write()?;
        for (key, value) in inserts {
            entries.insert(key.to_vec(), (seq, IVec::from(value)));
        }
        self.len.store(entries.len(), Ordering::Release);
        Ok(())
    }

    /// Forgets commit `seq`'s keys, once sled holds them (a later commit's value of a key
    /// stays).
    pub(crate) fn release<'a>(
        &self,
        seq: u64,
        keys: impl Iterator<Item = &'a [u8]>,
    ) -> Result<(), StorageError> {
        let mut entries = self.write()?;
        for key in keys {
            if entries.get(key).is_some_and(|(written_by, _)| *written_by == seq) {
                entries.remove(key);
            }
        }
        self.len.store(entries.len(), Ordering::Release);
        Ok(())
    }

    /// The deferred value of `key`, if a deferred commit wrote it.
    pub(crate) fn get(&self, key: &[u8]) -> Result<Option<IVec>, StorageError> {
        if self.is_empty() {
            return Ok(None);
        }
        Ok(self.read()?.get(key).map(|(_, value)| value.clone()))
    }

    /// The deferred entry with the largest key in `from..=to`.
    pub(crate) fn last_in(
        &self,
        from: &[u8],
        to: &[u8],
    ) -> Result<Option<(Vec<u8>, IVec)>, StorageError> {
        if self.is_empty() {
            return Ok(None);
        }
        let entries = self.read()?;
        let range = (Bound::Included(from), Bound::Included(to));
        Ok(entries
            .range::<[u8], _>(range)
            .next_back()
            .map(|(key, (_, value))| (key.clone(), value.clone())))
    }

    /// The deferred entries whose keys start with `prefix`, in key order.
    pub(crate) fn with_prefix(&self, prefix: &[u8]) -> Result<Vec<(Vec<u8>, IVec)>, StorageError> {
        if self.is_empty() {
            return Ok(Vec::new());
        }
        let entries = self.read()?;
        Ok(entries
            .range::<[u8], _>((Bound::Included(prefix), Bound::Unbounded))
            .take_while(|(key, _)| key.starts_with(prefix))
            .map(|(key, (_, value))| (key.clone(), value.clone()))
            .collect())
    }

    fn is_empty(&self) -> bool {
        self.len.load(Ordering::Acquire) == 0
    }

    fn read(&self) -> Result<std::sync::RwLockReadGuard<'_, Entries>, StorageError> {
        self.entries.read().map_err(|_| poisoned())
    }

    fn write(&self) -> Result<std::sync::RwLockWriteGuard<'_, Entries>, StorageError> {
        self.entries.write().map_err(|_| poisoned())
    }
}

fn poisoned() -> StorageError {
    StorageError::Corrupt { what: "deferred block overlay (a writer panicked)" }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pairs<'a>(items: &'a [(&'a [u8], &'a [u8])]) -> impl Iterator<Item = (&'a [u8], &'a [u8])> {
        items.iter().copied()
    }

    #[test]
    fn lookups_see_deferred_keys_until_released() {
        let overlay = Overlay::default();
        assert_eq!(overlay.get(b"a").unwrap(), None);
        overlay.insert(1, pairs(&[(b"a1", b"x"), (b"a2", b"y"), (b"b1", b"z")])).unwrap();
        assert_eq!(overlay.get(b"a2").unwrap().as_deref(), Some(&b"y"[..]));
        assert_eq!(overlay.last_in(b"a0", b"a9").unwrap().unwrap().0, b"a2".to_vec());
        assert_eq!(overlay.last_in(b"a0", b"a1").unwrap().unwrap().0, b"a1".to_vec());
        assert_eq!(overlay.last_in(b"c", b"d").unwrap(), None);
        let keys: Vec<_> = overlay.with_prefix(b"a").unwrap().into_iter().map(|(k, _)| k).collect();
        assert_eq!(keys, vec![b"a1".to_vec(), b"a2".to_vec()]);

        // A key a later commit rewrote stays when the earlier one is released.
        overlay.insert(2, pairs(&[(b"b1", b"w")])).unwrap();
        overlay.release(1, [&b"a1"[..], b"a2", b"b1"].into_iter()).unwrap();
        assert_eq!(overlay.get(b"a1").unwrap(), None);
        assert_eq!(overlay.get(b"b1").unwrap().as_deref(), Some(&b"w"[..]));
        overlay.release(2, [&b"b1"[..]].into_iter()).unwrap();
        assert!(overlay.is_empty());
    }
}
