//! The commit journal: how an acknowledged block survives `kill -9` without waiting for sled.
//!
//! sled keeps a batch in its own buffers until `flush`, and a flush hands the write to sled's
//! IO thread pool, which wakes every idle pool thread for each job. On this 2-core machine that
//! was a fifth of a dev node's CPU when every transaction is its own block. Instead, each batch
//! is also appended here as one `write` to a plain file before the head moves. Once `write`
//! returns, the bytes are the kernel's: a killed process cannot lose them. sled is flushed, and
//! the journal emptied, every [`CHECKPOINT_RECORDS`] batches or [`CHECKPOINT_BYTES`], at open
//! and at shutdown; opening a store replays whatever the journal still holds.
//!
//! A record is `len: u32 LE | crc32 of the payload: u32 LE | payload`, the payload a list of
//! operations `1 | key len: u32 | key | value len: u32 | value` (insert) or
//! `2 | key len: u32 | key` (remove). Every batch is blind writes of fixed bytes, so replaying a
//! record sled already holds changes nothing: replay needs no sequence numbers. Replay stops at
//! the first torn or corrupt record (a write cut short by a crash, never acknowledged).

use std::fs::File;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};

use crate::StorageError;

/// The journal's file name inside the store's directory.
pub(crate) const JOURNAL_FILE: &str = "hearth-journal";

/// After this many records, sled is flushed and the journal emptied. A flush costs about as
/// much as a few hundred small journal writes; replay after a crash reads at most this many.
pub(crate) const CHECKPOINT_RECORDS: u32 = 1_024;

/// After this many journal bytes, sled is flushed and the journal emptied (large blocks).
pub(crate) const CHECKPOINT_BYTES: u64 = 64 * 1024 * 1024;

const HEADER_LEN: usize = 8;
const INSERT: u8 = 1;
const REMOVE: u8 = 2;

/// One write to the store, as the bytes of its journal record: a list of inserts and removes
/// applied in order. Built by the block writer and dev patches, committed by `ChainDb`.
pub struct WriteBatch {
    /// Journal record: header space, then the encoded operations.
    pub(crate) record: Vec<u8>,
    /// How many operations the record holds.
    ops: usize,
}

impl Default for WriteBatch {
    fn default() -> Self {
        Self { record: vec![0; HEADER_LEN], ops: 0 }
    }
}

impl std::fmt::Debug for WriteBatch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WriteBatch").field("record_bytes", &self.record.len()).finish()
    }
}

impl WriteBatch {
    /// Sets `key` to `value`.
    pub fn insert(&mut self, key: impl AsRef<[u8]>, value: impl AsRef<[u8]>) {
        self.record.push(INSERT);
        push_bytes(&mut self.record, key.as_ref());
        push_bytes(&mut self.record, value.as_ref());
        self.ops += 1;
    }

    /// Removes `key`.
    pub fn remove(&mut self, key: impl AsRef<[u8]>) {
        self.record.push(REMOVE);
        push_bytes(&mut self.record, key.as_ref());
        self.ops += 1;
    }

    /// How many inserts and removes it holds.
    pub const fn len(&self) -> usize {
        self.ops
    }

    /// Whether it holds none.
    pub const fn is_empty(&self) -> bool {
        self.ops == 0
    }

    /// The operations as one sled batch: applied atomically, readers see all or none.
    pub(crate) fn to_sled(&self) -> sled::Batch {
        let mut batch = sled::Batch::default();
        for op in ops(&self.record[HEADER_LEN..]) {
            match op {
                Op::Insert(key, value) => batch.insert(key, value),
                Op::Remove(key) => batch.remove(key),
            }
        }
        batch
    }

    /// Applies the operations one by one, in order. Unlike a sled batch this never seals
    /// sled's IO buffer, which costs two wake-ups of every idle sled IO thread per batch
    /// (sled 0.34's `pin_log`); a reader may see the first keys before the last, so writers
    /// put the keys that make a record reachable last.
    pub(crate) fn apply_in_order(&self, db: &sled::Db) -> sled::Result<()> {
        for op in ops(&self.record[HEADER_LEN..]) {
            match op {
                Op::Insert(key, value) => {
                    db.insert(key, value)?;
                }
                Op::Remove(key) => {
                    db.remove(key)?;
                }
            }
        }
        Ok(())
    }
}

/// One decoded operation of a record.
enum Op<'a> {
    Insert(&'a [u8], &'a [u8]),
    Remove(&'a [u8]),
}

/// The operations of a record's payload; stops early at a malformed one (never produced by
/// [`WriteBatch`]; `decode` checks whole payloads read back from disk).
fn ops(mut payload: &[u8]) -> impl Iterator<Item = Op<'_>> {
    fn bytes<'a>(payload: &mut &'a [u8]) -> Option<&'a [u8]> {
        let len = u32::from_le_bytes(payload.get(..4)?.try_into().ok()?) as usize;
        let value = payload.get(4..4 + len)?;
        *payload = &payload[4 + len..];
        Some(value)
    }
    std::iter::from_fn(move || {
        let (&op, rest) = payload.split_first()?;
        payload = rest;
        match op {
            INSERT => {
                let key = bytes(&mut payload)?;
                Some(Op::Insert(key, bytes(&mut payload)?))
            }
            REMOVE => Some(Op::Remove(bytes(&mut payload)?)),
            _ => None,
        }
    })
}

fn push_bytes(record: &mut Vec<u8>, bytes: &[u8]) {
    let len = u32::try_from(bytes.len()).expect("a key or value is far below 4 GiB");
    record.extend_from_slice(&len.to_le_bytes());
    record.extend_from_slice(bytes);
}

/// The open journal of an on-disk store. Only the state owner commits, so the lock around it
/// (in `ChainDb`) is never contended; readers never touch it.
#[derive(Debug)]
pub(crate) struct Journal {
    file: File,
    path: PathBuf,
    db: sled::Db,
    bytes: u64,
    records: u32,
}

impl Journal {
    /// Opens the journal in `dir`, replays what it holds into `db`, makes that durable and
    /// empties it. Returns the journal and how many records were replayed.
    pub(crate) fn open(dir: &Path, db: &sled::Db) -> Result<(Self, usize), StorageError> {
        let path = dir.join(JOURNAL_FILE);
        let mut file =
            File::options().read(true).append(true).create(true).open(&path).map_err(io(&path))?;
        let mut held = Vec::new();
        file.read_to_end(&mut held).map_err(io(&path))?;
        let replayed = replay(&held, db)?;
        let mut journal = Self { file, path, db: db.clone(), bytes: 0, records: 0 };
        if !held.is_empty() {
            journal.checkpoint()?;
        }
        Ok((journal, replayed))
    }

    /// Appends a batch's record in one `write`. Once this returns, a killed process cannot
    /// lose the batch. The caller applies the batch to sled next, then checkpoints if due.
    pub(crate) fn append(&mut self, record: &mut [u8]) -> Result<(), StorageError> {
        let payload_len = u32::try_from(record.len() - HEADER_LEN)
            .map_err(|_| StorageError::Corrupt { what: "journal record over 4 GiB" })?;
        let crc = crc32fast::hash(&record[HEADER_LEN..]);
        record[..4].copy_from_slice(&payload_len.to_le_bytes());
        record[4..HEADER_LEN].copy_from_slice(&crc.to_le_bytes());
        if let Err(error) = self.file.write_all(record) {
            // Cut off what part of the record did get written, so that later records stay
            // replayable; the commit fails either way.
            let _ = self.file.set_len(self.bytes);
            return Err(io(&self.path)(error));
        }
        self.bytes += record.len() as u64;
        self.records += 1;
        Ok(())
    }

    /// Whether enough has been journaled since the last checkpoint to flush sled now.
    pub(crate) const fn due(&self) -> bool {
        self.records >= CHECKPOINT_RECORDS || self.bytes >= CHECKPOINT_BYTES
    }

    /// Makes everything sled holds durable, then empties the journal.
    pub(crate) fn checkpoint(&mut self) -> Result<(), StorageError> {
        self.db.flush()?;
        self.file.set_len(0).map_err(io(&self.path))?;
        self.bytes = 0;
        self.records = 0;
        Ok(())
    }
}

impl Drop for Journal {
    fn drop(&mut self) {
        // A clean shutdown leaves nothing to replay; a failure here only means replay at open.
        if self.records > 0
            && let Err(error) = self.checkpoint()
        {
            tracing::warn!(target: "storage", %error, "journal checkpoint at shutdown failed");
        }
    }
}

/// Applies every whole record in `held` to `db`, in order; stops at the first torn or corrupt
/// one. Returns how many were applied.
fn replay(held: &[u8], db: &sled::Db) -> Result<usize, StorageError> {
    let mut rest = held;
    let mut applied = 0;
    while rest.len() >= HEADER_LEN {
        let len = u32::from_le_bytes(rest[..4].try_into().expect("4 bytes")) as usize;
        let crc = u32::from_le_bytes(rest[4..HEADER_LEN].try_into().expect("4 bytes"));
        let Some(payload) = rest.get(HEADER_LEN..HEADER_LEN + len) else { break };
        if crc32fast::hash(payload) != crc {
            break;
        }
        let Some(batch) = decode(payload) else { break };
        db.apply_batch(batch)?;
        applied += 1;
        rest = &rest[HEADER_LEN + len..];
    }
    if !rest.is_empty() {
        tracing::warn!(
            target: "storage",
            ignored_bytes = rest.len(),
            "journal ends in a torn record (a write cut short by a crash); it was never acknowledged"
        );
    }
    Ok(applied)
}

/// The sled batch a record's payload encodes, or `None` when it is malformed.
fn decode(payload: &[u8]) -> Option<sled::Batch> {
    let mut batch = sled::Batch::default();
    let mut consumed = 0;
    for op in ops(payload) {
        match op {
            Op::Insert(key, value) => {
                consumed += 9 + key.len() + value.len();
                batch.insert(key, value);
            }
            Op::Remove(key) => {
                consumed += 5 + key.len();
                batch.remove(key);
            }
        }
    }
    (consumed == payload.len()).then_some(batch)
}

fn io(path: &Path) -> impl Fn(std::io::Error) -> StorageError + '_ {
    move |source| StorageError::Journal { path: path.to_owned(), source }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn temp_dir(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!(
            "hearth-journal-{name}-{}-{}",
            std::process::id(),
            rand_suffix()
        ));
        std::fs::create_dir_all(&dir).expect("temp dir");
        dir
    }

    fn rand_suffix() -> u64 {
        use std::time::{SystemTime, UNIX_EPOCH};
        SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_nanos() as u64).unwrap_or(0)
    }

    fn record(ops: &[(&[u8], Option<&[u8]>)]) -> Vec<u8> {
        let mut batch = WriteBatch::default();
        for (key, value) in ops {
            match value {
                Some(value) => batch.insert(*key, *value),
                None => batch.remove(*key),
            }
        }
        batch.record
    }

    #[test]
    fn records_replay_into_a_store_that_never_saw_them() {
        let dir = temp_dir("replay");
        let writer = sled::Config::new().temporary(true).open().expect("sled");
        let (mut journal, replayed) = Journal::open(&dir, &writer).expect("journal");
        assert_eq!(replayed, 0);
        journal.append(&mut record(&[(b"a", Some(b"1")), (b"b", Some(b"2"))])).unwrap();
        journal.append(&mut record(&[(b"a", None), (b"c", Some(b"3"))])).unwrap();
        // The process dies here: no checkpoint, and the store the journal fed is gone.
        std::mem::forget(journal);

        let fresh = sled::Config::new().temporary(true).open().expect("sled");
        let (_journal, replayed) = Journal::open(&dir, &fresh).expect("journal");
        assert_eq!(replayed, 2);
        assert_eq!(fresh.get(b"a").unwrap(), None);
        assert_eq!(fresh.get(b"b").unwrap().as_deref(), Some(&b"2"[..]));
        assert_eq!(fresh.get(b"c").unwrap().as_deref(), Some(&b"3"[..]));
        assert_eq!(std::fs::metadata(dir.join(JOURNAL_FILE)).unwrap().len(), 0, "emptied");
        std::fs::remove_dir_all(&dir).ok();
    }

    #[test]
    fn replay_stops_at_a_torn_record() {
        let dir = temp_dir("torn");
        let mut whole = record(&[(b"k", Some(b"whole"))]);
        let mut torn = record(&[(b"k", Some(b"torn")), (b"x", Some(b"y"))]);
        // Fill both headers the way `append` does, then cut the second record short.
        for r in [&mut whole, &mut torn] {
            let len = (r.len() - HEADER_LEN) as u32;
            let crc = crc32fast::hash(&r[HEADER_LEN..]);
            r[..4].copy_from_slice(&len.to_le_bytes());
            r[4..8].copy_from_slice(&crc.to_le_bytes());
        }
        let mut bytes = whole;
        bytes.extend_from_slice(&torn[..torn.len() - 3]);
        std::fs::write(dir.join(JOURNAL_FILE), &bytes).unwrap();

        let db = sled::Config::new().temporary(true).open().expect("sled");
        let (_journal, replayed) = Journal::open(&dir, &db).expect("journal");
        assert_eq!(replayed, 1);
        assert_eq!(db.get(b"k").unwrap().as_deref(), Some(&b"whole"[..]));
        assert_eq!(db.get(b"x").unwrap(), None, "nothing of the torn record applied");
        std::fs::remove_dir_all(&dir).ok();
    }

    #[test]
    fn a_corrupt_record_is_not_applied() {
        let dir = temp_dir("corrupt");
        let mut r = record(&[(b"k", Some(b"v"))]);
        let len = (r.len() - HEADER_LEN) as u32;
        let crc = crc32fast::hash(&r[HEADER_LEN..]);
        r[..4].copy_from_slice(&len.to_le_bytes());
        r[4..8].copy_from_slice(&crc.to_le_bytes());
        let last = r.len() - 1;
        r[last] ^= 0xff;
        std::fs::write(dir.join(JOURNAL_FILE), &r).unwrap();

        let db = sled::Config::new().temporary(true).open().expect("sled");
        let (_journal, replayed) = Journal::open(&dir, &db).expect("journal");
        assert_eq!(replayed, 0);
        assert_eq!(db.get(b"k").unwrap(), None);
        std::fs::remove_dir_all(&dir).ok();
    }

    #[test]
    fn a_checkpoint_empties_the_journal_once_due() {
        let dir = temp_dir("checkpoint");
        let db = sled::Config::new().temporary(true).open().expect("sled");
        let (mut journal, _) = Journal::open(&dir, &db).expect("journal");
        for i in 0..CHECKPOINT_RECORDS - 1 {
            journal.append(&mut record(&[(&i.to_be_bytes(), Some(b"v"))])).unwrap();
        }
        assert!(journal.bytes > 0);
        assert!(!journal.due());
        journal.append(&mut record(&[(b"last", Some(b"v"))])).unwrap();
        assert!(journal.due());
        journal.checkpoint().unwrap();
        assert_eq!((journal.bytes, journal.records), (0, 0));
        assert_eq!(std::fs::metadata(dir.join(JOURNAL_FILE)).unwrap().len(), 0);
        std::fs::remove_dir_all(&dir).ok();
    }
}
