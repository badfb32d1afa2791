//! The block whose sled apply was deferred: durable (its journal record is written) and visible
//! to every reader through the published snapshot, but not yet in sled.
//!
//! Applying a one-transfer block to sled costs about 100 µs, the largest piece of the state
//! owner's work per block; the block is already safe once its journal record is written. So
//! the state owner may answer first and apply after (`BlockWriter::set_deferred_apply`,
//! `ChainWriter::settle`), while the miner, the RPC front and the client do their share of the
//! next transaction. Meanwhile the readers' snapshot carries this overlay, and readers look
//! here before they look in sled.
//!
//! An `Overlay` is immutable once built: it is shared by `Arc` inside the snapshot, so a reader
//! takes no lock to read it. Why reading here first and sled second is safe: the writer
//! publishes a snapshot without the overlay only after sled holds its keys, and a reader that
//! still holds the older snapshot finds the same values in both places. Only batches without
//! removes are deferred, so merging "newest version at or before N" from both sides is a plain
//! maximum.

use std::collections::BTreeMap;
use std::ops::Bound;

use sled::IVec;

/// The inserts of one deferred commit, by key (the last value of a key wins, as in sled).
#[derive(Debug, Default)]
pub(crate) struct Overlay {
    entries: BTreeMap<Vec<u8>, IVec>,
}

impl Overlay {
    /// The overlay of a commit whose inserts are `inserts`, in batch order.
    pub(crate) fn of<'a>(inserts: impl Iterator<Item = (&'a [u8], &'a [u8])>) -> Self {
        let mut entries = BTreeMap::new();
        for (key, value) in inserts {
            entries.insert(key.to_vec(), IVec::from(value));
        }
        Self { entries }
    }

    /// The deferred value of `key`, if the deferred commit wrote it.
    pub(crate) fn get(&self, key: &[u8]) -> Option<IVec> {
        self.entries.get(key).cloned()
    }

    /// The deferred entry with the largest key in `from..=to`.
    pub(crate) fn last_in(&self, from: &[u8], to: &[u8]) -> Option<(Vec<u8>, IVec)> {
        let range = (Bound::Included(from), Bound::Included(to));
        self.entries
            .range::<[u8], _>(range)
            .next_back()
            .map(|(key, value)| (key.clone(), value.clone()))
    }

    /// The deferred entries whose keys start with `prefix`, in key order.
    pub(crate) fn with_prefix(&self, prefix: &[u8]) -> Vec<(Vec<u8>, IVec)> {
        self.entries
            .range::<[u8], _>((Bound::Included(prefix), Bound::Unbounded))
            .take_while(|(key, _)| key.starts_with(prefix))
            .map(|(key, value)| (key.clone(), value.clone()))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lookups_see_the_deferred_keys() {
        let items: [(&[u8], &[u8]); 4] =
            [(b"a1", b"x"), (b"a2", b"y"), (b"b1", b"z"), (b"b1", b"w")];
        let overlay = Overlay::of(items.iter().copied());
        assert_eq!(overlay.get(b"a"), None);
        assert_eq!(overlay.get(b"a2").as_deref(), Some(&b"y"[..]));
        assert_eq!(overlay.get(b"b1").as_deref(), Some(&b"w"[..]), "the last insert wins");
        assert_eq!(overlay.last_in(b"a0", b"a9").unwrap().0, b"a2".to_vec());
        assert_eq!(overlay.last_in(b"a0", b"a1").unwrap().0, b"a1".to_vec());
        assert_eq!(overlay.last_in(b"c", b"d"), None);
        let keys: Vec<_> = overlay.with_prefix(b"a").into_iter().map(|(k, _)| k).collect();
        assert_eq!(keys, vec![b"a1".to_vec(), b"a2".to_vec()]);
    }
}
