//! `SeqMap`: a map with one writer and any number of readers that never lock, for a parallel
//! block's published values (`Published`).
//!
//! Why not mutexes: the committer writes a key at every commit while a helper reads keys at
//! every run. Taking a mutex is a write to its cache line, by the reader as much as by the
//! writer, so every lookup and every insert took the line from the other core (in `perf`, a
//! committer's lock and unlock were most of its publishing time). Here a read only reads: a
//! line moves to the reader's core when the writer changed it, and stays shared otherwise.
//!
//! How: open addressing with linear probing over fixed-size entries of atomic words, each
//! entry guarded by its own sequence number (a seqlock: odd while the writer rewrites it; a
//! reader copies the entry, then checks that the number did not change). Nothing is ever
//! removed, and an entry's key never changes once written. When a table is half full the
//! writer copies its keys into a table four times its size and from then on writes and reads
//! go there (a reader that still looks at the old table reads an older version, which is
//! allowed). All of it is plain atomics: no `unsafe`.
//!
//! A reader may see a value older than the writer's latest (it read just before the write).
//! That is the mix of versions a helper's view already allows: the committer validates every
//! value a run read against its own state. So is a read that misses a key being inserted.

use std::hash::{BuildHasher, Hasher};
use std::sync::OnceLock;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering, fence};

use alloy_primitives::map::DefaultHashBuilder;

/// Words per entry after its sequence number: room for the longest key and value (a slot's
/// address and index, seven words, and its writer and value, five).
const WORDS: usize = 15;

/// Entries of the first table. Each is 128 bytes: a table of 64 is 8 KiB, made (zeroed) when
/// the block starts. Small, because many blocks publish little or nothing (a block that reads
/// ahead publishes nothing): a first table of 1,024 cost a 3,000-transfer block 0.3 ms of its
/// 7, in page faults and zeroing; a block that publishes much grows it in a few copies.
const FIRST_ENTRIES: usize = 64;

/// Tables at most: the last is 64 * 4^15 entries, far more than memory holds, so a block's
/// map does not fill before memory does.
const MAX_TABLES: usize = 16;

/// One key and value, on two cache lines of their own.
#[derive(Debug, Default)]
#[repr(C, align(128))]
struct Entry {
    /// 0: empty. Odd: being written. Even: holds a key.
    seq: AtomicU64,
    words: [AtomicU64; WORDS],
}

#[derive(Debug)]
struct Table {
    entries: Box<[Entry]>,
    /// Keys written to it (the writer's count).
    len: AtomicUsize,
}

impl Table {
    fn new(entries: usize) -> Self {
        Self { entries: (0..entries).map(|_| Entry::default()).collect(), len: AtomicUsize::new(0) }
    }

    /// Where the probe for a key of hash `hash` starts.
    const fn home(&self, hash: u64) -> usize {
        // The length is a power of two; the hash's low bits are as good as its high ones.
        (hash as usize) & (self.entries.len() - 1)
    }

    const fn next(&self, at: usize) -> usize {
        (at + 1) & (self.entries.len() - 1)
    }

    /// Writes a key this table does not hold at its first empty entry (the writer's, with
    /// room left).
    fn insert_new<const K: usize, const V: usize>(
        &self,
        hash: u64,
        key: &[u64; K],
        value: &[u64; V],
    ) {
        let mut at = self.home(hash);
        while self.entries[at].seq.load(Ordering::Relaxed) != 0 {
            at = self.next(at);
        }
        self.len.fetch_add(1, Ordering::Relaxed);
        write(&self.entries[at], 0, Some(key), value);
    }
}

/// A map from keys of `K` words to values of `V` words (`K + V <= 15`), written by one thread.
pub(crate) struct SeqMap<const K: usize, const V: usize> {
    /// `MAX_TABLES` of them, made as needed, each four times the size of the one before.
    tables: Box<[OnceLock<Table>]>,
    /// Tables made so far: the newest is `tables[count - 1]`.
    count: AtomicUsize,
    /// Seeded per map: the keys (storage slots) come from transactions, and a hash that
    /// senders could predict would let them line up a block's keys on one probe.
    hasher: DefaultHashBuilder,
}

impl<const K: usize, const V: usize> std::fmt::Debug for SeqMap<K, V> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SeqMap").field("tables", &self.count.load(Ordering::Relaxed)).finish()
    }
}

impl<const K: usize, const V: usize> Default for SeqMap<K, V> {
    fn default() -> Self {
        Self::with_tables(FIRST_ENTRIES, MAX_TABLES)
    }
}

impl<const K: usize, const V: usize> SeqMap<K, V> {
    const FITS: () = assert!(K + V <= WORDS && K > 0);

    /// A map whose first table has `entries` entries (a power of two), and `tables` tables at
    /// most.
    fn with_tables(entries: usize, tables: usize) -> Self {
        let () = Self::FITS;
        debug_assert!(entries.is_power_of_two() && tables > 0);
        let map = Self {
            tables: (0..tables).map(|_| OnceLock::new()).collect(),
            count: AtomicUsize::new(1),
            hasher: DefaultHashBuilder::default(),
        };
        let _ = map.tables[0].set(Table::new(entries));
        map
    }

    fn hash(&self, key: &[u64; K]) -> u64 {
        // Word by word: hashing the key as one slice of bytes took the slow path for long
        // inputs at every lookup.
        let mut hasher = self.hasher.build_hasher();
        for word in key {
            hasher.write_u64(*word);
        }
        hasher.finish()
    }

    /// The value of `key` as last written, `None` when it was not (as far as this read saw).
    /// Lock-free: it only reads, and retries an entry the writer is rewriting.
    pub(crate) fn get(&self, key: &[u64; K]) -> Option<[u64; V]> {
        let hash = self.hash(key);
        let count = self.count.load(Ordering::Acquire);
        let table = self.tables[count - 1].get()?;
        let mut at = table.home(hash);
        loop {
            match read(&table.entries[at]) {
                None => return None,
                Some(words) if words[..K] == key[..] => {
                    let mut value = [0u64; V];
                    value.copy_from_slice(&words[K..K + V]);
                    return Some(value);
                }
                Some(_) => at = table.next(at),
            }
        }
    }

    /// Writes `value` at `key`. Only one thread may ever call this on a map (the block's
    /// committer); readers may run meanwhile. `false`: no room left (not reached before the
    /// process runs out of memory); the write was not made.
    pub(crate) fn put(&self, key: &[u64; K], value: &[u64; V]) -> bool {
        let hash = self.hash(key);
        let count = self.count.load(Ordering::Relaxed);
        let Some(table) = self.tables[count - 1].get() else { return false };
        // A key the newest table holds is rewritten in place; any other goes to its first
        // empty entry, in a new table when this one is half full.
        let mut at = table.home(hash);
        loop {
            let entry = &table.entries[at];
            // The writer's own words: no other thread changes them.
            let seq = entry.seq.load(Ordering::Relaxed);
            if seq == 0 {
                break;
            }
            if (0..K).all(|i| entry.words[i].load(Ordering::Relaxed) == key[i]) {
                write::<K, V>(entry, seq, None, value);
                return true;
            }
            at = table.next(at);
        }
        if 2 * (table.len.load(Ordering::Relaxed) + 1) <= table.entries.len() {
            table.len.fetch_add(1, Ordering::Relaxed);
            write(&table.entries[at], 0, Some(key), value);
            return true;
        }
        // Every key moves to the bigger table, so that a read probes one table only (the
        // moved half of a table is a few hundred entries: amortized, a copy per insert).
        let Some(slot) = self.tables.get(count) else { return false };
        let bigger = Table::new(table.entries.len() * 4);
        for entry in &*table.entries {
            if entry.seq.load(Ordering::Relaxed) == 0 {
                continue;
            }
            let words: [u64; WORDS] =
                std::array::from_fn(|i| entry.words[i].load(Ordering::Relaxed));
            let mut moved = [0u64; K];
            moved.copy_from_slice(&words[..K]);
            let mut held = [0u64; V];
            held.copy_from_slice(&words[K..K + V]);
            bigger.insert_new(self.hash(&moved), &moved, &held);
        }
        bigger.insert_new(hash, key, value);
        if slot.set(bigger).is_err() {
            return false;
        }
        // Readers that see the new count see the new table, made before it.
        self.count.store(count + 1, Ordering::Release);
        true
    }
}

/// A copy of `entry`'s words, consistent with one write of it; `None` when it is empty.
fn read(entry: &Entry) -> Option<[u64; WORDS]> {
    let mut spins = 0u32;
    loop {
        let before = entry.seq.load(Ordering::Acquire);
        if before == 0 {
            return None;
        }
        if before.is_multiple_of(2) {
            let words: [u64; WORDS] =
                std::array::from_fn(|i| entry.words[i].load(Ordering::Relaxed));
            // The copy happens before the second look at the sequence number.
            fence(Ordering::Acquire);
            if entry.seq.load(Ordering::Relaxed) == before {
                return Some(words);
            }
        }
        // The writer is in the middle of this entry: a dozen stores, unless it lost its core.
        spins += 1;
        if spins < 64 {
            std::hint::spin_loop();
        } else {
            std::thread::yield_now();
        }
    }
}

/// Rewrites `entry` (sequence number `seq` now): its key too when `key` is given (a new entry).
fn write<const K: usize, const V: usize>(
    entry: &Entry,
    seq: u64,
    key: Option<&[u64; K]>,
    value: &[u64; V],
) {
    entry.seq.store(seq + 1, Ordering::Relaxed);
    // Readers that see a word below see the odd number above (or a later one).
    fence(Ordering::Release);
    if let Some(key) = key {
        for (word, k) in entry.words.iter().zip(key) {
            word.store(*k, Ordering::Relaxed);
        }
    }
    for (word, v) in entry.words[K..].iter().zip(value) {
        word.store(*v, Ordering::Relaxed);
    }
    entry.seq.store(seq + 2, Ordering::Release);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_key_reads_as_last_written_across_tables() {
        let map = SeqMap::<2, 3>::with_tables(4, MAX_TABLES);
        assert_eq!(map.get(&[1, 2]), None);
        for k in 0..100u64 {
            assert!(map.put(&[k, k + 1], &[k, 0, k * 2]));
        }
        // 100 keys outgrew the first table of 4 (and the next ones).
        assert!(map.count.load(Ordering::Relaxed) > 2);
        // Keys written before a growth moved with it, and are rewritten where they now are.
        for k in (0..100u64).step_by(3) {
            assert!(map.put(&[k, k + 1], &[k, 1, 7]));
        }
        for k in 0..100u64 {
            let want = if k % 3 == 0 { [k, 1, 7] } else { [k, 0, k * 2] };
            assert_eq!(map.get(&[k, k + 1]), Some(want), "key {k}");
        }
        assert_eq!(map.get(&[5, 5]), None);
        assert_eq!(map.get(&[0, 0]), None);
    }

    #[test]
    fn a_full_map_refuses_a_new_key_and_keeps_what_it_holds() {
        // Two tables, of 4 and 16 entries: the second takes the first's two keys and is
        // filled to half.
        let map = SeqMap::<1, 1>::with_tables(4, 2);
        let mut written = 0u64;
        while map.put(&[written], &[written]) {
            written += 1;
        }
        assert_eq!(written, 8);
        for k in 0..written {
            assert_eq!(map.get(&[k]), Some([k]));
        }
        assert_eq!(map.get(&[written]), None);
        // A key the map holds is still rewritten in place.
        assert!(map.put(&[0], &[90]));
        assert_eq!(map.get(&[0]), Some([90]));
    }

    /// One thread writes, another reads at the same time: every read sees a value that was
    /// written for that key, whole (never a mix of two writes' words). Few keys and wide
    /// values, rewritten often, so that reads land in the middle of writes.
    #[test]
    fn a_reader_never_sees_a_torn_value() {
        const KEYS: u64 = 3;
        let map = SeqMap::<1, 14>::with_tables(4, MAX_TABLES);
        let rounds = 300_000u64;
        std::thread::scope(|s| {
            s.spawn(|| {
                for round in 1..=rounds {
                    let key = round % KEYS;
                    assert!(map.put(&[key], &[round; 14]));
                }
            });
            s.spawn(|| {
                let mut seen = 0u64;
                while seen + KEYS < rounds {
                    for key in 0..KEYS {
                        if let Some(value) = map.get(&[key]) {
                            assert!(value.iter().all(|w| *w == value[0]), "torn: {value:?}");
                            assert_eq!(value[0] % KEYS, key);
                            seen = seen.max(value[0]);
                        }
                    }
                }
            });
        });
    }
}
