//! `Kv`: the ordered key-value tree a chain's records live in: sled for a store on disk, a
//! `BTreeMap` in this process for a store in memory.
//!
//! A store in memory (a dev node without `--datadir`, as a test suite starts it, and the
//! tests) never reopens what it wrote, so sled's log, page cache and crash recovery are work
//! without a use there: applying a one-transfer block to a temporary sled tree cost 190-330 µs
//! (leaf copies, splits, the log's serialization, its writes to `/dev/shm`), about 30% of the
//! node's CPU under automine, and its reverse range scans a few microseconds each
//! (BENCHMARKS.md, "Session 20"). The map holds the same keys and values, sorted the same way
//! (bytewise), so every layer above reads and writes both alike. Its memory is the data it
//! holds, as the temporary sled tree's files in `/dev/shm` were, with each key in a 72-byte
//! slot of the tree's nodes ([`MapKey`]).
//!
//! The map sits behind a `RwLock`: readers take it shared for one lookup or one step of an
//! iterator, the state owner takes it exclusively for one key's insert or remove (well under
//! a microsecond), so a reader never waits for a whole block's apply. Iterators hold no lock
//! between steps: each step finds the next key past the last one it returned, as sled's
//! iterators do, so a step sees writes made after the iterator was created.

use std::collections::BTreeMap;
use std::ops::{Bound, RangeBounds};
use std::sync::{Arc, RwLock};

use sled::IVec;

use crate::KeyWrites;

/// The tree a chain's records live in.
#[derive(Clone)]
pub(crate) enum Kv {
    /// On disk (or a store opened from a directory).
    Sled(sled::Db),
    /// In this process only.
    Memory(Arc<MemoryTree>),
}

impl std::fmt::Debug for Kv {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Sled(_) => f.write_str("Kv::Sled"),
            Self::Memory(_) => f.write_str("Kv::Memory"),
        }
    }
}

/// The entries of a store in memory.
#[derive(Debug, Default)]
pub(crate) struct MemoryTree {
    entries: RwLock<Entries>,
}

type Entries = BTreeMap<MapKey, IVec>;

/// Bytes a [`MapKey`] holds in place: the layout's longest common key, a storage version
/// (`layout::storage_key`, 69 bytes).
const INLINE_KEY: usize = 70;

/// A key of the map, held in place up to [`INLINE_KEY`] bytes. A search compares the key
/// against up to eleven keys per node of the tree: kept in the node, they are read from the
/// node's own memory, where a `Vec` key cost one more cache miss each (the map's inserts were
/// 10% of a one-sender node's time, most of it in those comparisons; BENCHMARKS.md, session 21).
/// Ordered as its bytes are.
#[derive(Clone)]
enum MapKey {
    Inline(u8, [u8; INLINE_KEY]),
    Heap(Box<[u8]>),
}

// Tag, length and 70 bytes: a key costs 72 bytes in a node, against a `Vec`'s 24 plus its heap
// block (32-80 bytes for the layout's keys).
const _: () = assert!(size_of::<MapKey>() == 72);

impl MapKey {
    fn new(key: &[u8]) -> Self {
        match u8::try_from(key.len()) {
            Ok(len) if key.len() <= INLINE_KEY => {
                let mut bytes = [0; INLINE_KEY];
                bytes[..key.len()].copy_from_slice(key);
                Self::Inline(len, bytes)
            }
            _ => Self::Heap(key.into()),
        }
    }

    fn as_slice(&self) -> &[u8] {
        match self {
            Self::Inline(len, bytes) => &bytes[..usize::from(*len)],
            Self::Heap(bytes) => bytes,
        }
    }
}

impl std::borrow::Borrow<[u8]> for MapKey {
    fn borrow(&self) -> &[u8] {
        self.as_slice()
    }
}

impl PartialEq for MapKey {
    fn eq(&self, other: &Self) -> bool {
        self.as_slice() == other.as_slice()
    }
}

impl Eq for MapKey {}

impl PartialOrd for MapKey {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for MapKey {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.as_slice().cmp(other.as_slice())
    }
}

impl std::fmt::Debug for MapKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "MapKey({})", alloy_primitives::hex::encode(self.as_slice()))
    }
}

impl MemoryTree {
    /// The entries, for reading. A panic while the lock was held cannot have left the map
    /// half-changed (each write is one `insert` or `remove`), so a poisoned lock is used as is.
    fn read(&self) -> std::sync::RwLockReadGuard<'_, Entries> {
        self.entries.read().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    fn write(&self) -> std::sync::RwLockWriteGuard<'_, Entries> {
        self.entries.write().unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

impl Kv {
    /// An empty tree in memory.
    pub(crate) fn memory() -> Self {
        Self::Memory(Arc::default())
    }

    /// The value of `key`.
    pub(crate) fn get(&self, key: impl AsRef<[u8]>) -> sled::Result<Option<IVec>> {
        match self {
            Self::Sled(db) => db.get(key),
            Self::Memory(tree) => Ok(tree.read().get(key.as_ref()).cloned()),
        }
    }

    /// Sets `key` to `value` (on sled through [`KeyWrites`]: never a batch).
    pub(crate) fn insert(
        &self,
        key: impl AsRef<[u8]>,
        value: impl AsRef<[u8]>,
    ) -> sled::Result<()> {
        match self {
            Self::Sled(db) => KeyWrites::new(db).insert(key, value),
            Self::Memory(tree) => {
                // Allocated, and the old value freed, outside the lock: readers wait for the
                // map's own work only.
                let (key, value) = (MapKey::new(key.as_ref()), IVec::from(value.as_ref()));
                let old = tree.write().insert(key, value);
                drop(old);
                Ok(())
            }
        }
    }

    /// Removes `key` (nothing when it is absent).
    pub(crate) fn remove(&self, key: impl AsRef<[u8]>) -> sled::Result<()> {
        match self {
            Self::Sled(db) => KeyWrites::new(db).remove(key),
            Self::Memory(tree) => {
                let old = tree.write().remove_entry(key.as_ref());
                drop(old);
                Ok(())
            }
        }
    }

    /// The entries with keys in `range`, in key order (either end first).
    pub(crate) fn range<K: AsRef<[u8]>, R: RangeBounds<K>>(&self, range: R) -> KvIter {
        match self {
            Self::Sled(db) => KvIter::Sled(Box::new(db.range(range))),
            Self::Memory(tree) => KvIter::Memory(MemoryIter {
                tree: Arc::clone(tree),
                low: owned(range.start_bound()),
                high: owned(range.end_bound()),
            }),
        }
    }

    /// Every entry, in key order.
    #[cfg(test)]
    pub(crate) fn iter(&self) -> KvIter {
        self.range::<&[u8], _>(..)
    }

    /// The entries whose keys start with `prefix`, in key order.
    pub(crate) fn scan_prefix(&self, prefix: impl AsRef<[u8]>) -> KvIter {
        let prefix = prefix.as_ref();
        match self {
            Self::Sled(db) => KvIter::Sled(Box::new(db.scan_prefix(prefix))),
            Self::Memory(tree) => KvIter::Memory(MemoryIter {
                tree: Arc::clone(tree),
                low: Bound::Included(IVec::from(prefix)),
                high: successor(prefix).map_or(Bound::Unbounded, |end| Bound::Excluded(end.into())),
            }),
        }
    }

    /// Makes what was written durable (nothing to do in memory).
    pub(crate) fn flush(&self) -> sled::Result<()> {
        match self {
            Self::Sled(db) => db.flush().map(drop),
            Self::Memory(_) => Ok(()),
        }
    }
}

fn owned<K: AsRef<[u8]>>(bound: Bound<&K>) -> Bound<IVec> {
    match bound {
        Bound::Included(key) => Bound::Included(IVec::from(key.as_ref())),
        Bound::Excluded(key) => Bound::Excluded(IVec::from(key.as_ref())),
        Bound::Unbounded => Bound::Unbounded,
    }
}

/// The smallest key greater than every key starting with `prefix` (`None`: there is none,
/// the prefix is empty or all `0xff`).
fn successor(prefix: &[u8]) -> Option<Vec<u8>> {
    let mut next = prefix.to_vec();
    while let Some(last) = next.pop() {
        if last < u8::MAX {
            next.push(last + 1);
            return Some(next);
        }
    }
    None
}

/// The entries of a range of a [`Kv`], from either end.
pub(crate) enum KvIter {
    /// Boxed: sled's iterator is four times the size of the other.
    Sled(Box<sled::Iter>),
    Memory(MemoryIter),
}

impl KvIter {
    /// The keys only.
    pub(crate) fn keys(self) -> impl DoubleEndedIterator<Item = sled::Result<IVec>> {
        self.map(|entry| entry.map(|(key, _)| key))
    }
}

impl Iterator for KvIter {
    type Item = sled::Result<(IVec, IVec)>;

    fn next(&mut self) -> Option<Self::Item> {
        match self {
            Self::Sled(iter) => iter.next(),
            Self::Memory(iter) => iter.step(false).map(Ok),
        }
    }
}

impl DoubleEndedIterator for KvIter {
    fn next_back(&mut self) -> Option<Self::Item> {
        match self {
            Self::Sled(iter) => iter.next_back(),
            Self::Memory(iter) => iter.step(true).map(Ok),
        }
    }
}

/// A range of a [`MemoryTree`] not yet returned: each step looks it up again under the read
/// lock and narrows it past the entry it returns (the returned key itself, shared: one copy of
/// the key per step).
pub(crate) struct MemoryIter {
    tree: Arc<MemoryTree>,
    low: Bound<IVec>,
    high: Bound<IVec>,
}

impl MemoryIter {
    fn step(&mut self, from_the_back: bool) -> Option<(IVec, IVec)> {
        if is_empty(&self.low, &self.high) {
            return None;
        }
        let entries = self.tree.read();
        let mut range = entries.range::<[u8], _>((bound_ref(&self.low), bound_ref(&self.high)));
        let (key, value) = if from_the_back { range.next_back() } else { range.next() }?;
        let (key, value) = (IVec::from(key.as_slice()), value.clone());
        drop(entries);
        if from_the_back {
            self.high = Bound::Excluded(key.clone());
        } else {
            self.low = Bound::Excluded(key.clone());
        }
        Some((key, value))
    }
}

fn bound_ref(bound: &Bound<IVec>) -> Bound<&[u8]> {
    match bound {
        Bound::Included(key) => Bound::Included(key.as_ref()),
        Bound::Excluded(key) => Bound::Excluded(key.as_ref()),
        Bound::Unbounded => Bound::Unbounded,
    }
}

/// Whether no key lies between `low` and `high` (`BTreeMap::range` panics on such bounds when
/// the start is past the end, or both are the same excluded key).
fn is_empty(low: &Bound<IVec>, high: &Bound<IVec>) -> bool {
    match (low, high) {
        (Bound::Included(l), Bound::Included(h)) => l > h,
        (Bound::Included(l) | Bound::Excluded(l), Bound::Excluded(h))
        | (Bound::Excluded(l), Bound::Included(h)) => l >= h,
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    type KeyRange<'a> = (Bound<&'a [u8]>, Bound<&'a [u8]>);

    /// Map keys sort as their bytes do, held in place or not (either side of 70 bytes, keys
    /// that are prefixes of others, `0x00` and `0xff` tails).
    #[test]
    fn map_keys_sort_as_their_bytes() {
        let mut keys: Vec<Vec<u8>> = Vec::new();
        for len in [0, 1, 9, 29, 69, 70, 71, 100] {
            for fill in [0x00, 0x7f, 0xff] {
                let mut key = vec![fill; len];
                keys.push(key.clone());
                key.push(0x00);
                keys.push(key);
            }
        }
        let mut bytes = keys.clone();
        bytes.sort();
        bytes.dedup();
        let mut mapped: Vec<MapKey> = keys.iter().map(|key| MapKey::new(key)).collect();
        mapped.sort();
        mapped.dedup();
        let back: Vec<&[u8]> = mapped.iter().map(MapKey::as_slice).collect();
        assert_eq!(back, bytes.iter().map(Vec::as_slice).collect::<Vec<_>>());
        assert!(matches!(MapKey::new(&[1; 70]), MapKey::Inline(70, _)));
        assert!(matches!(MapKey::new(&[1; 71]), MapKey::Heap(_)));
    }

    /// Both kinds of tree, filled alike.
    fn trees(entries: &[(&[u8], &[u8])]) -> [Kv; 2] {
        let sled = Kv::Sled(sled::Config::new().temporary(true).open().expect("sled"));
        let trees = [sled, Kv::memory()];
        for tree in &trees {
            for (key, value) in entries {
                tree.insert(key, value).unwrap();
            }
        }
        trees
    }

    fn keys(iter: impl Iterator<Item = sled::Result<(IVec, IVec)>>) -> Vec<Vec<u8>> {
        iter.map(|entry| entry.unwrap().0.to_vec()).collect()
    }

    /// Every read the store makes answers the same from sled and from memory.
    #[test]
    fn memory_answers_as_sled_does() {
        let entries: [(&[u8], &[u8]); 7] = [
            (b"a", b"1"),
            (b"a\x00", b"2"),
            (b"a\xff", b"3"),
            (b"a\xff\xff", b"4"),
            (b"b", b"5"),
            (b"\xff", b"6"),
            (b"\xff\xff", b"7"),
        ];
        let [sled, memory] = trees(&entries);
        let ranges: [KeyRange<'_>; 8] = [
            (Bound::Included(b"a"), Bound::Included(b"b")),
            (Bound::Excluded(b"a"), Bound::Excluded(b"b")),
            (Bound::Included(b"a\x00"), Bound::Unbounded),
            (Bound::Unbounded, Bound::Included(b"a\xff")),
            (Bound::Included(b"b"), Bound::Included(b"b")),
            (Bound::Excluded(b"b"), Bound::Excluded(b"b")),
            (Bound::Included(b"c"), Bound::Included(b"a")),
            (Bound::Unbounded, Bound::Unbounded),
        ];
        for range in ranges {
            let (forward, back) = (
                |kv: &Kv| keys(kv.range::<&[u8], _>(range)),
                |kv: &Kv| keys(kv.range::<&[u8], _>(range).rev()),
            );
            assert_eq!(forward(&sled), forward(&memory), "{range:?}");
            assert_eq!(back(&sled), back(&memory), "{range:?} from the back");
        }
        for prefix in [&b""[..], b"a", b"a\xff", b"\xff", b"c"] {
            assert_eq!(keys(sled.scan_prefix(prefix)), keys(memory.scan_prefix(prefix)));
            let back = |kv: &Kv| keys(kv.scan_prefix(prefix).rev());
            assert_eq!(back(&sled), back(&memory), "{prefix:?} from the back");
        }
        // Both ends of one iterator meet without repeating an entry.
        let mut both = memory.range::<&[u8], _>(..);
        let (first, last) = (both.next().unwrap().unwrap().0, both.next_back().unwrap().unwrap().0);
        assert_eq!((&first[..], &last[..]), (&b"a"[..], &b"\xff\xff"[..]));
        assert_eq!(both.count(), 5);
        for tree in [&sled, &memory] {
            tree.remove(b"b").unwrap();
            tree.remove(b"absent").unwrap();
            assert_eq!(tree.get(b"b").unwrap(), None);
            assert_eq!(tree.get(b"a\x00").unwrap().as_deref(), Some(&b"2"[..]));
            tree.insert(b"a", b"new").unwrap();
            assert_eq!(tree.get(b"a").unwrap().as_deref(), Some(&b"new"[..]));
        }
    }

    /// An iterator holds no lock between steps: a writer goes on, and the next step sees what
    /// it wrote past the iterator's position.
    #[test]
    fn an_iterator_never_blocks_the_writer() {
        let [_, memory] = trees(&[(b"k1", b"1"), (b"k3", b"3")]);
        let mut iter = memory.scan_prefix(b"k");
        assert_eq!(&iter.next().unwrap().unwrap().0[..], b"k1");
        memory.insert(b"k2", b"2").unwrap();
        memory.remove(b"k3").unwrap();
        assert_eq!(keys(iter), vec![b"k2".to_vec()]);
    }
}
