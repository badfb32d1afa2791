//! What an in-place commit overwrote, kept for the snapshots published before it.
//!
//! A block commit only adds keys that no older snapshot looks at (versions of a later block,
//! and the records leading to them, written last). A dev patch, an `evm_revert` or a rollback
//! instead rewrites or removes records that an older snapshot may be reading (the head block's
//! own versions, the reverted blocks' records), key by key while readers run. So before it
//! applies such a commit, the writer records, for every snapshot still alive, the value each
//! of the commit's keys holds ([`Preimages`]); a reader of one of those snapshots that finds a
//! key recorded takes the recorded value instead of sled's. A request pinned to a snapshot
//! therefore reads the state it started on to the end, whatever is patched meanwhile.
//!
//! Why the reader checks *after* its sled read: the writer stores the pre-images (and sets
//! [`Rewritten`]'s flag, with release) before it writes the first key. A reader whose sled read
//! returned a rewritten value has synchronised with that write, so its next load of the flag
//! and the pre-images sees them; a reader that finds no pre-images read sled before the
//! rewrite began. Checking first would leave a window between the check and the read. The
//! flag costs a read one atomic load while nothing has been rewritten, which is almost always.

use std::collections::BTreeMap;
use std::ops::Bound;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use arc_swap::ArcSwapOption;
use sled::IVec;

/// Keys rewritten after a snapshot was published, each with the value it held for that
/// snapshot (`None`: it did not exist).
#[derive(Debug, Default, Clone)]
pub(crate) struct Preimages {
    entries: BTreeMap<Vec<u8>, Option<IVec>>,
}

impl Preimages {
    /// Records `key`'s value before the commit.
    pub(crate) fn record(&mut self, key: &[u8], value: Option<IVec>) {
        self.entries.entry(key.to_vec()).or_insert(value);
    }

    /// Whether it holds no key.
    pub(crate) fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// `Some(value)` when `key` was rewritten: its value for the snapshot.
    pub(crate) fn get(&self, key: &[u8]) -> Option<&Option<IVec>> {
        self.entries.get(key)
    }

    /// The largest rewritten key in `from..=to` that existed for the snapshot, with its value.
    pub(crate) fn last_present_in(&self, from: &[u8], to: &[u8]) -> Option<(IVec, IVec)> {
        self.entries.range::<[u8], _>((Bound::Included(from), Bound::Included(to))).rev().find_map(
            |(key, value)| value.as_ref().map(|v| (IVec::from(key.as_slice()), v.clone())),
        )
    }

    /// The rewritten keys that start with `prefix`, with their values for the snapshot.
    pub(crate) fn with_prefix<'a>(
        &'a self,
        prefix: &'a [u8],
    ) -> impl Iterator<Item = (&'a Vec<u8>, &'a Option<IVec>)> + 'a {
        self.entries
            .range::<[u8], _>((Bound::Included(prefix), Bound::Unbounded))
            .take_while(move |(key, _)| key.starts_with(prefix))
    }
}

/// One snapshot's pre-images: none until an in-place commit follows the snapshot. Only the
/// writer stores; a clone is a new snapshot, after which nothing has been rewritten yet.
#[derive(Debug, Default)]
pub(crate) struct Rewritten {
    /// Set, with release, once `preimages` holds something.
    any: AtomicBool,
    preimages: ArcSwapOption<Preimages>,
}

impl Clone for Rewritten {
    fn clone(&self) -> Self {
        Self::default()
    }
}

impl Rewritten {
    /// The pre-images recorded so far. Call it after the sled read it corrects (module docs).
    pub(crate) fn load(&self) -> Option<Arc<Preimages>> {
        if !self.any.load(Ordering::Acquire) {
            return None;
        }
        self.preimages.load_full()
    }

    /// Adds `new`'s keys to the recorded ones (the writer, before it applies the commit). A
    /// key already recorded keeps its older value: that is the one the snapshot saw.
    pub(crate) fn add(&self, new: &Arc<Preimages>) {
        let merged = match self.preimages.load_full() {
            None => Arc::clone(new),
            Some(old) => {
                let mut merged = Preimages::clone(&old);
                for (key, value) in &new.entries {
                    merged.record(key, value.clone());
                }
                Arc::new(merged)
            }
        };
        self.preimages.store(Some(merged));
        self.any.store(true, Ordering::Release);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_first_recorded_value_of_a_key_wins_and_absent_keys_are_skipped() {
        let slot = Rewritten::default();
        assert!(slot.load().is_none());
        let mut first = Preimages::default();
        first.record(b"a1", Some(IVec::from(&b"old"[..])));
        first.record(b"a3", None);
        slot.add(&Arc::new(first));
        let mut second = Preimages::default();
        second.record(b"a1", Some(IVec::from(&b"newer"[..])));
        second.record(b"a2", Some(IVec::from(&b"x"[..])));
        slot.add(&Arc::new(second));
        let pre = slot.load().expect("recorded");
        assert_eq!(pre.get(b"a1"), Some(&Some(IVec::from(&b"old"[..]))));
        assert_eq!(pre.get(b"a3"), Some(&None));
        assert_eq!(pre.get(b"b"), None);
        let (key, _) = pre.last_present_in(b"a0", b"a9").expect("a2 existed");
        assert_eq!(key.as_ref(), b"a2", "a3 did not exist for the snapshot");
        assert_eq!(pre.with_prefix(b"a").count(), 3);
        assert!(Rewritten::clone(&slot).load().is_none(), "a clone is a new snapshot");
    }
}
