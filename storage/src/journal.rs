//! The commit journal: how an acknowledged block survives `kill -9` without waiting for sled,
//! and how a write of many keys is whole after a crash without a sled batch.
//!
//! sled keeps a write in its own buffers until `flush`, and a flush hands the write to sled's
//! IO thread pool, which wakes every idle pool thread for each job. On this 2-core machine that
//! was a fifth of a dev node's CPU when every transaction is its own block. Instead, each
//! commit (a block, a dev patch, a revert, a rollback) is appended here as one `write` to a
//! plain file before any of its keys is applied (now, or deferred until the state owner has
//! answered: `overlay`) and the head moves.
//! Once `write` returns, the bytes are the kernel's: a killed process cannot lose them. sled is
//! flushed, and the journal emptied, every [`CHECKPOINT_RECORDS`] batches or
//! [`CHECKPOINT_BYTES`], at open and at shutdown; opening a store replays what the journal
//! still holds.
//!
//! Every commit is applied to sled key by key, in order, through [`KeyWrites`], never as a
//! sled batch: a batch (or a transaction) switches on sled's process-wide `concurrency_control`
//! lock, after which every sled read of every thread takes it (`key_writes`). Each operation
//! is an idempotent insert or remove, so a commit cut short by a crash, an IO error or a panic
//! is completed by applying its whole record again: the journal then refuses further commits
//! (`applying`), and the next open replays the record.
//!
//! A record is `len: u32 LE | crc32 of the payload: u32 LE | payload`, the payload the commit's
//! sequence number (`u64 LE`) and then its operations, `1 | key len: u32 | key | value len:
//! u32 | value` (insert) or `2 | key len: u32 | key` (remove). Every batch also sets
//! `COMMIT_SEQ_KEY` to its number, last, so sled says which commits it holds whole: replay
//! applies only the records after that, in order, and stops at a gap or at the first torn or
//! corrupt record (a write cut short).
//!
//! A power loss or OS crash is the other case: sled may have persisted part of a commit while
//! the journal lost its record. How each kind of commit stays whole then ([`Recovery`]):
//! - A block's records are not fsynced (that cost a third of a sequential sender's
//!   throughput), so such a crash can lose the last acknowledged blocks, as it could lose
//!   sled's last half second. It must not corrupt what stays. So a block first writes
//!   `PENDING_KEY`: its sequence number and the keys only it writes (versions and records of
//!   its own block number, which did not exist before). sled recovers a prefix of its writes,
//!   so whenever any of those keys survived, the marker did too, and opening the store deletes
//!   them (and moves the head back to the last block whose header it has) when the marker's
//!   commit is not whole.
//! - A patch, revert or rollback overwrites and removes records that existed before, which no
//!   marker could undo, so its record is fsynced before its first key is applied: whatever
//!   part of it sled kept, the journal has all of it, and the earlier records too. These are
//!   dev operations, a few per test at most; a store in memory has no journal to sync.
//!   The journal is fsynced at open too, before replay, for the same reason: the records
//!   replayed must outlive what the replay writes to sled.

use std::fs::File;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::StorageError;
use crate::kv::Kv;
use crate::layout;
use crate::overlay::Overlay;

/// The journal's file name inside the store's directory.
pub(crate) const JOURNAL_FILE: &str = "hearth-journal";

/// After this many records, sled is flushed and the journal emptied. A flush costs about as
/// much as a few hundred small journal writes; replay after a crash reads at most this many.
pub(crate) const CHECKPOINT_RECORDS: u32 = 1_024;

/// After this many journal bytes, sled is flushed and the journal emptied (large blocks).
pub(crate) const CHECKPOINT_BYTES: u64 = 64 * 1024 * 1024;

/// `len` and `crc32`.
const HEADER_LEN: usize = 8;
/// The sequence number at the start of the payload.
const SEQ_LEN: usize = 8;
const INSERT: u8 = 1;
const REMOVE: u8 = 2;

/// One write to the store, as the bytes of its journal record: a list of inserts and removes
/// applied in order. Built by the block writer and dev patches, committed by `ChainDb`.
pub struct WriteBatch {
    /// Journal record: header and sequence space, then the encoded operations.
    pub(crate) record: Vec<u8>,
    /// How many operations the record holds.
    ops: usize,
    /// Whether any of them is a remove (such a batch is never deferred: `overlay`).
    removes: bool,
}

impl Default for WriteBatch {
    fn default() -> Self {
        Self { record: vec![0; HEADER_LEN + SEQ_LEN], ops: 0, removes: false }
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
        self.removes = true;
    }

    /// How many inserts and removes it holds.
    pub const fn len(&self) -> usize {
        self.ops
    }

    /// Whether it holds none.
    pub const fn is_empty(&self) -> bool {
        self.ops == 0
    }

    fn ops(&self) -> impl Iterator<Item = Op<'_>> {
        ops(&self.record[HEADER_LEN + SEQ_LEN..])
    }

    /// Its operations on the keys of one record kind (`layout::ACCOUNT`, `layout::STORAGE`,
    /// ...), in order: the key, and the value (`None`: removed).
    pub(crate) fn ops_on(&self, prefix: u8) -> impl Iterator<Item = (&[u8], Option<&[u8]>)> {
        self.ops().filter_map(move |op| match op {
            Op::Insert(key, value) if key.first() == Some(&prefix) => Some((key, Some(value))),
            Op::Remove(key) if key.first() == Some(&prefix) => Some((key, None)),
            _ => None,
        })
    }

    /// The keys it writes or removes, in order (a key may repeat).
    pub(crate) fn keys(&self) -> impl Iterator<Item = &[u8]> {
        self.ops().map(|op| match op {
            Op::Insert(key, _) | Op::Remove(key) => key,
        })
    }

    /// Its inserts (all its operations when it has no removes).
    fn inserts(&self) -> impl Iterator<Item = (&[u8], &[u8])> {
        self.ops().filter_map(|op| match op {
            Op::Insert(key, value) => Some((key, value)),
            Op::Remove(_) => None,
        })
    }

    /// Applies the operations one by one, in order. Unlike a sled batch this takes no sled
    /// lock (`key_writes`) and never seals sled's IO buffer, which costs two wake-ups of every
    /// idle sled IO thread per batch (sled 0.34's `pin_log`); a reader may see the first keys
    /// before the last, so writers put the keys that make a record reachable last.
    pub(crate) fn apply(&self, writes: &Kv) -> sled::Result<()> {
        apply_ops(ops(&self.record[HEADER_LEN + SEQ_LEN..]), writes)
    }

    /// Applies the first `count` operations only: a commit cut short (crash tests).
    #[cfg(test)]
    pub(crate) fn apply_first(&self, writes: &Kv, count: usize) -> sled::Result<()> {
        apply_ops(self.ops().take(count), writes)
    }

    /// The `PENDING_KEY` value for this batch as commit `seq`: the sequence number, then the
    /// keys only it writes (see the module docs), each `len: u32 LE | key`.
    fn pending_marker(&self, seq: u64) -> Vec<u8> {
        let mut marker = seq.to_le_bytes().to_vec();
        for op in self.ops() {
            let (Op::Insert(key, _) | Op::Remove(key)) = op;
            if layout::belongs_to_one_block(key) {
                push_bytes(&mut marker, key);
            }
        }
        marker
    }
}

/// Applies `ops` in order, each an idempotent insert or remove.
fn apply_ops<'a>(ops: impl Iterator<Item = Op<'a>>, writes: &Kv) -> sled::Result<()> {
    for op in ops {
        match op {
            Op::Insert(key, value) => writes.insert(key, value)?,
            Op::Remove(key) => writes.remove(key)?,
        }
    }
    Ok(())
}

/// One decoded operation of a record.
enum Op<'a> {
    Insert(&'a [u8], &'a [u8]),
    Remove(&'a [u8]),
}

/// Reads one `len: u32 LE | bytes` field off the front of `payload`.
fn field<'a>(payload: &mut &'a [u8]) -> Option<&'a [u8]> {
    let len = u32::from_le_bytes(payload.get(..4)?.try_into().ok()?) as usize;
    let value = payload.get(4..4 + len)?;
    *payload = &payload[4 + len..];
    Some(value)
}

/// The operations of a record's payload; stops early at a malformed one (never produced by
/// [`WriteBatch`]; `decode` checks whole payloads read back from disk).
fn ops(mut payload: &[u8]) -> impl Iterator<Item = Op<'_>> {
    std::iter::from_fn(move || {
        let (&op, rest) = payload.split_first()?;
        payload = rest;
        match op {
            INSERT => {
                let key = field(&mut payload)?;
                Some(Op::Insert(key, field(&mut payload)?))
            }
            REMOVE => Some(Op::Remove(field(&mut payload)?)),
            _ => None,
        }
    })
}

fn push_bytes(record: &mut Vec<u8>, bytes: &[u8]) {
    let len = u32::try_from(bytes.len()).expect("a key or value is far below 4 GiB");
    record.extend_from_slice(&len.to_le_bytes());
    record.extend_from_slice(bytes);
}

/// The sequence number of the last commit sled holds whole (0 for none).
fn committed_seq(db: &Kv) -> Result<u64, StorageError> {
    match db.get(layout::COMMIT_SEQ_KEY)? {
        None => Ok(0),
        Some(v) => Ok(layout::be_u64(&v).ok_or(StorageError::Corrupt { what: "commit sequence" })?),
    }
}

/// How a commit stays whole if the machine (not only the process) stops part-way through
/// applying it (module docs).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Recovery {
    /// A new block: the keys of its own number are listed in a `PENDING_KEY` marker written
    /// first, and deleted at open when the journal lost the record. Not fsynced.
    Block,
    /// A dev patch, revert or rollback, which overwrites or removes existing records: its
    /// record is fsynced before it is applied, so it is always replayed.
    Synced,
}

/// The writer's side of a store: numbers commits, journals them (on disk) and applies them to
/// sled, now or deferred (`overlay`). It lives in the `ChainWriter` (the state owner's), behind
/// a lock that only writers take: readers cannot reach it.
#[derive(Debug)]
pub(crate) struct Journal {
    /// The journal file (`None` for a store in memory, which has nothing to make durable).
    file: Option<JournalFile>,
    /// The tree it applies commits to (on sled, through `KeyWrites`: never a batch).
    db: Kv,
    /// The last commit's sequence number.
    seq: u64,
    /// Set while a journaled batch is being applied. Still set after a failure or a panic
    /// there: the journal then refuses commits and checkpoints, so that the record stays for
    /// the replay at the next open to complete.
    applying: bool,
    /// A commit journaled (and published in the readers' snapshot as an overlay) but not yet
    /// applied to sled.
    deferred: Option<Deferred>,
    /// Tests: the next apply stops with an error after this many operations, as a crash or
    /// an IO error part-way through would leave it.
    #[cfg(test)]
    fail_after: Option<usize>,
}

#[derive(Debug)]
struct JournalFile {
    file: File,
    path: PathBuf,
    /// Bytes and records written since the last checkpoint.
    bytes: u64,
    records: u32,
}

/// What [`Journal::commit`] did.
#[derive(Debug)]
pub(crate) struct Committed {
    /// How long applying took (a deferred commit's, and this one's unless it is deferred).
    pub(crate) applied: Duration,
    /// How long the journal write took.
    pub(crate) journaled: Duration,
    /// This commit's inserts when its apply is deferred: readers must find them here until
    /// the next settle.
    pub(crate) deferred: Option<Arc<Overlay>>,
}

#[derive(Debug)]
struct Deferred {
    seq: u64,
    batch: WriteBatch,
    recovery: Recovery,
}

impl Journal {
    /// Opens the journal in `dir`: replays the commits it holds that `db` lacks, removes what
    /// a commit cut short by a crash left behind, makes that durable and empties the journal.
    /// Returns the journal and how many records were replayed.
    pub(crate) fn open(dir: &Path, db: &Kv) -> Result<(Self, usize), StorageError> {
        let path = dir.join(JOURNAL_FILE);
        let mut file =
            File::options().read(true).append(true).create(true).open(&path).map_err(io(&path))?;
        let mut held = Vec::new();
        file.read_to_end(&mut held).map_err(io(&path))?;
        if !held.is_empty() {
            // What replay writes to sled may reach the disk before the records it came from
            // (written before a kill, never synced): make them durable first.
            file.sync_data().map_err(io(&path))?;
        }
        let (replayed, seq) = replay(&held, db, committed_seq(db)?)?;
        let cleaned = remove_partial_commit(db, seq)?;
        let file = JournalFile { file, path, bytes: 0, records: 0 };
        let mut journal = Self::new(Some(file), db, seq);
        if !held.is_empty() || cleaned {
            journal.checkpoint()?;
        }
        Ok((journal, replayed))
    }

    /// The writer of a store in memory: no file, nothing to replay.
    pub(crate) fn in_memory(db: &Kv) -> Result<Self, StorageError> {
        Ok(Self::new(None, db, committed_seq(db)?))
    }

    fn new(file: Option<JournalFile>, db: &Kv, seq: u64) -> Self {
        Self {
            file,
            db: db.clone(),
            seq,
            applying: false,
            deferred: None,
            #[cfg(test)]
            fail_after: None,
        }
    }

    /// Journals `batch` as the next commit (after applying a deferred one), fsynced when
    /// `recovery` says so, then applies it to sled key by key (after its `PENDING_KEY` marker
    /// for a block on disk). When `defer`, and the batch has no removes, applying waits for the next
    /// [`Self::settle`] or commit, and the returned overlay holds its inserts: the caller
    /// publishes it to readers until then.
    /// Returns how long applying (a deferred commit's and this one's) and journaling took.
    pub(crate) fn commit(
        &mut self,
        mut batch: WriteBatch,
        recovery: Recovery,
        defer: bool,
    ) -> Result<Committed, StorageError> {
        if self.applying {
            return Err(StorageError::Corrupt {
                what: "commit journal (an earlier commit failed half-way; restart the node to complete it)",
            });
        }
        let mut applied = self.settle()?;
        let seq = self.seq + 1;
        batch.insert(layout::COMMIT_SEQ_KEY, seq.to_be_bytes());
        batch.record[HEADER_LEN..HEADER_LEN + SEQ_LEN].copy_from_slice(&seq.to_le_bytes());
        let started = Instant::now();
        self.append(&mut batch.record, recovery == Recovery::Synced)?;
        self.seq = seq;
        let journaled = started.elapsed();
        let mut deferred = None;
        if defer && !batch.removes {
            deferred = Some(Arc::new(Overlay::of(batch.inserts())));
            self.deferred = Some(Deferred { seq, batch, recovery });
        } else {
            applied += self.apply(seq, &batch, recovery)?;
        }
        Ok(Committed { applied, journaled, deferred })
    }

    /// Whether a deferred commit waits for [`Journal::settle`].
    pub(crate) const fn owes_apply(&self) -> bool {
        self.deferred.is_some()
    }

    /// Applies the deferred commit, if any, to sled; returns how long that took.
    pub(crate) fn settle(&mut self) -> Result<Duration, StorageError> {
        let Some(Deferred { seq, batch, recovery }) = self.deferred.take() else {
            return Ok(Duration::ZERO);
        };
        self.apply(seq, &batch, recovery)
    }

    /// Applies commit `seq` key by key, a block's after its marker. On an error `applying`
    /// stays set: the record is replayed, whole, at the next open.
    fn apply(
        &mut self,
        seq: u64,
        batch: &WriteBatch,
        recovery: Recovery,
    ) -> Result<Duration, StorageError> {
        let started = Instant::now();
        self.applying = true;
        if recovery == Recovery::Block && self.file.is_some() {
            self.db.insert(layout::PENDING_KEY, batch.pending_marker(seq))?;
        }
        #[cfg(test)]
        if let Some(count) = self.fail_after.take() {
            batch.apply_first(&self.db, count)?;
            return Err(StorageError::Corrupt { what: "commit cut short by a test" });
        }
        batch.apply(&self.db)?;
        self.applying = false;
        Ok(started.elapsed())
    }

    /// Makes the next apply stop with an error after `count` operations (crash tests).
    #[cfg(test)]
    pub(crate) fn fail_next_apply_after(&mut self, count: usize) {
        self.fail_after = Some(count);
    }

    /// Appends a record in one `write`. Once this returns, a killed process cannot lose it;
    /// with `sync`, neither can a power loss.
    fn append(&mut self, record: &mut [u8], sync: bool) -> Result<(), StorageError> {
        let Some(journal) = &mut self.file else { return Ok(()) };
        let payload_len = u32::try_from(record.len() - HEADER_LEN)
            .map_err(|_| StorageError::Corrupt { what: "journal record over 4 GiB" })?;
        let crc = crc32fast::hash(&record[HEADER_LEN..]);
        record[..4].copy_from_slice(&payload_len.to_le_bytes());
        record[4..HEADER_LEN].copy_from_slice(&crc.to_le_bytes());
        let written = journal.file.write_all(record);
        let written = if sync { written.and_then(|()| journal.file.sync_data()) } else { written };
        if let Err(error) = written {
            // Cut off what part of the record did get written, so that later records stay
            // replayable; if even that fails, stop journaling.
            if journal.file.set_len(journal.bytes).is_err() {
                self.applying = true;
            }
            return Err(io(&journal.path)(error));
        }
        journal.bytes += record.len() as u64;
        journal.records += 1;
        Ok(())
    }

    /// Checkpoints when enough has been journaled since the last checkpoint and nothing is
    /// deferred (so that a commit waits for a flush only when it must). A failure is logged
    /// and the checkpoint retried at the next chance: the commits are durable in the journal.
    pub(crate) fn checkpoint_if_due(&mut self) {
        if self.due()
            && self.deferred.is_none()
            && let Err(error) = self.checkpoint()
        {
            tracing::warn!(target: "storage", %error, "journal checkpoint failed; retried after the next commit");
        }
    }

    /// Whether enough has been journaled since the last checkpoint to flush sled.
    fn due(&self) -> bool {
        self.file
            .as_ref()
            .is_some_and(|f| f.records >= CHECKPOINT_RECORDS || f.bytes >= CHECKPOINT_BYTES)
    }

    /// Applies what is deferred, makes everything sled holds durable, then empties the
    /// journal. Refused while a commit is cut short: its record must stay for the replay.
    pub(crate) fn checkpoint(&mut self) -> Result<(), StorageError> {
        if self.applying {
            return Err(StorageError::Corrupt {
                what: "commit journal (a commit failed half-way; kept for replay at the next open)",
            });
        }
        self.settle()?;
        let Some(journal) = &mut self.file else { return Ok(()) };
        self.db.flush()?;
        journal.file.set_len(0).map_err(io(&journal.path))?;
        journal.bytes = 0;
        journal.records = 0;
        Ok(())
    }
}

impl Drop for Journal {
    fn drop(&mut self) {
        // Nothing to replay after a clean shutdown; a failure here (or a commit cut short)
        // only means replay at the next open.
        if (self.deferred.is_some() || self.file.as_ref().is_some_and(|f| f.records > 0))
            && !self.applying
            && let Err(error) = self.checkpoint()
        {
            tracing::warn!(target: "storage", %error, "journal checkpoint at shutdown failed");
        }
    }
}

/// Applies, in order, the whole records in `held` whose commits come after `committed` (the
/// last one sled holds whole); stops at a gap or at the first torn or corrupt record. Returns
/// how many were applied and the last commit now whole.
fn replay(held: &[u8], db: &Kv, committed: u64) -> Result<(usize, u64), StorageError> {
    let mut rest = held;
    let mut seq = committed;
    let mut applied = 0;
    while rest.len() >= HEADER_LEN {
        let len = u32::from_le_bytes(rest[..4].try_into().expect("4 bytes")) as usize;
        let crc = u32::from_le_bytes(rest[4..HEADER_LEN].try_into().expect("4 bytes"));
        let Some(payload) = rest.get(HEADER_LEN..HEADER_LEN + len) else { break };
        if len < SEQ_LEN || crc32fast::hash(payload) != crc {
            break;
        }
        let record_seq = u64::from_le_bytes(payload[..SEQ_LEN].try_into().expect("8 bytes"));
        let operations = &payload[SEQ_LEN..];
        if !well_formed(operations) {
            break;
        }
        if record_seq == seq + 1 {
            // Key by key, like the first time: a crash here replays the record again.
            apply_ops(ops(operations), db)?;
            seq = record_seq;
            applied += 1;
        } else if record_seq > seq + 1 {
            break; // a gap: what follows cannot be applied in order
        }
        rest = &rest[HEADER_LEN + len..];
    }
    if !rest.is_empty() {
        tracing::warn!(
            target: "storage",
            at = held.len() - rest.len(),
            ignored_bytes = rest.len(),
            "journal ends in a torn or unreadable record; commits from there on are not replayed \
             (a write cut short by a crash, or commits lost with the OS)"
        );
    }
    Ok((applied, seq))
}

/// Deletes what a block commit cut short left in sled: its marker names a commit after
/// `committed` (the last whole one). Returns whether there was such a commit. Key by key, the
/// marker last, so a crash in here leaves the marker for the next open to finish the job.
fn remove_partial_commit(db: &Kv, committed: u64) -> Result<bool, StorageError> {
    let Some(marker) = db.get(layout::PENDING_KEY)? else { return Ok(false) };
    let corrupt = || StorageError::Corrupt { what: "pending commit marker" };
    let (seq, mut keys) = marker.split_at_checked(8).ok_or_else(corrupt)?;
    let seq = u64::from_le_bytes(seq.try_into().expect("8 bytes"));
    if seq <= committed {
        return Ok(false);
    }
    let mut removed = 0;
    while !keys.is_empty() {
        db.remove(field(&mut keys).ok_or_else(corrupt)?)?;
        removed += 1;
    }
    // The head pointer is written after the block's records: it may name the block just
    // removed. Point it at the newest block the store still has.
    if let Some(head) = db.get(layout::HEAD_KEY)?.as_deref().and_then(layout::be_u64)
        && db.get(layout::number_key(layout::HEADER, head))?.is_none()
    {
        let from = layout::number_key(layout::HEADER, 0);
        let to = layout::number_key(layout::HEADER, head);
        match db.range(from..=to).keys().next_back().transpose()? {
            Some(key) => db.insert(layout::HEAD_KEY, &key[1..])?,
            None => db.remove(layout::HEAD_KEY)?,
        }
    }
    db.remove(layout::PENDING_KEY)?;
    tracing::warn!(
        target: "storage",
        commit = seq,
        removed,
        "removed the keys of a commit cut short by a crash (its journal record was lost)"
    );
    Ok(true)
}

/// Whether `payload` is a whole list of operations (nothing malformed, nothing left over).
fn well_formed(payload: &[u8]) -> bool {
    let consumed: usize = ops(payload)
        .map(|op| match op {
            Op::Insert(key, value) => 9 + key.len() + value.len(),
            Op::Remove(key) => 5 + key.len(),
        })
        .sum();
    consumed == payload.len()
}

fn io(path: &Path) -> impl Fn(std::io::Error) -> StorageError + '_ {
    move |source| StorageError::Journal { path: path.to_owned(), source }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A scratch directory, removed when dropped (however the test ends).
    struct TempDir(PathBuf);

    impl std::ops::Deref for TempDir {
        type Target = Path;

        fn deref(&self) -> &Path {
            &self.0
        }
    }

    impl Drop for TempDir {
        fn drop(&mut self) {
            std::fs::remove_dir_all(&self.0).ok();
        }
    }

    fn temp_dir(name: &str) -> TempDir {
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos());
        let dir = std::env::temp_dir()
            .join(format!("hearth-journal-{name}-{}-{nanos}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("temp dir");
        TempDir(dir)
    }

    fn store() -> Kv {
        Kv::Sled(sled::Config::new().temporary(true).open().expect("sled"))
    }

    fn batch(ops: &[(&[u8], Option<&[u8]>)]) -> WriteBatch {
        let mut batch = WriteBatch::default();
        for (key, value) in ops {
            match value {
                Some(value) => batch.insert(*key, *value),
                None => batch.remove(*key),
            }
        }
        batch
    }

    fn get(db: &Kv, key: &[u8]) -> Option<Vec<u8>> {
        db.get(key).expect("read").map(|v| v.to_vec())
    }

    fn open(dir: &Path, db: &Kv) -> Result<(Journal, usize), StorageError> {
        Journal::open(dir, db)
    }

    /// Commits `batches` through a journal in `dir` over `db` (synced, as a block, or a
    /// deferred block, in turn), then "crashes": nothing is checkpointed and the last deferred
    /// commit never reaches sled.
    fn commit_and_crash(dir: &Path, db: &Kv, batches: Vec<WriteBatch>) {
        let (mut journal, _) = open(dir, db).expect("journal");
        for (i, batch) in batches.into_iter().enumerate() {
            let recovery = if i % 3 == 0 { Recovery::Synced } else { Recovery::Block };
            journal.commit(batch, recovery, i % 3 == 2).expect("commit");
        }
        crash(journal);
    }

    /// The process dies with `journal` open: its drop checkpoints nothing (as when a commit was
    /// cut short), and its handle on the store goes, so that a temporary store is removed
    /// (forgetting the journal left one file per test in /dev/shm).
    fn crash(mut journal: Journal) {
        journal.applying = true;
        drop(journal);
    }

    fn journal_len(dir: &Path) -> u64 {
        std::fs::metadata(dir.join(JOURNAL_FILE)).expect("journal file").len()
    }

    #[test]
    fn commits_replay_into_a_store_that_never_saw_them() {
        let dir = temp_dir("replay");
        let batches = vec![
            batch(&[(b"a", Some(b"1")), (b"b", Some(b"2"))]),
            batch(&[(b"a", None), (b"c", Some(b"3"))]),
            batch(&[(b"d", Some(b"4"))]),
        ];
        commit_and_crash(&dir, &store(), batches);

        let fresh = store();
        let (_journal, replayed) = open(&dir, &fresh).expect("journal");
        assert_eq!(replayed, 3);
        assert_eq!(get(&fresh, b"a"), None);
        assert_eq!(get(&fresh, b"b").as_deref(), Some(&b"2"[..]));
        assert_eq!(get(&fresh, b"c").as_deref(), Some(&b"3"[..]));
        assert_eq!(get(&fresh, b"d").as_deref(), Some(&b"4"[..]), "the deferred commit too");
        assert_eq!(committed_seq(&fresh).unwrap(), 3);
        assert_eq!(journal_len(&dir), 0, "emptied once replayed");
    }

    #[test]
    fn replay_stops_at_a_torn_or_corrupt_record() {
        let dir = temp_dir("torn");
        let batches = vec![batch(&[(b"k", Some(b"whole"))]), batch(&[(b"k", Some(b"torn"))])];
        commit_and_crash(&dir, &store(), batches);
        let path = dir.join(JOURNAL_FILE);
        let mut bytes = std::fs::read(&path).unwrap();
        bytes.truncate(bytes.len() - 3);
        std::fs::write(&path, &bytes).unwrap();
        let db = store();
        assert_eq!(open(&dir, &db).expect("journal").1, 1);
        assert_eq!(get(&db, b"k").as_deref(), Some(&b"whole"[..]));

        let dir = temp_dir("corrupt");
        commit_and_crash(&dir, &store(), vec![batch(&[(b"k", Some(b"v"))])]);
        let path = dir.join(JOURNAL_FILE);
        let mut bytes = std::fs::read(&path).unwrap();
        let last = bytes.len() - 1;
        bytes[last] ^= 0xff;
        std::fs::write(&path, &bytes).unwrap();
        let db = store();
        assert_eq!(open(&dir, &db).expect("journal").1, 0);
        assert_eq!(get(&db, b"k"), None, "a record failing its checksum is not applied");
    }

    #[test]
    fn replay_applies_only_commits_after_the_stores_and_stops_at_a_gap() {
        let dir = temp_dir("seq");
        let batches = (1..=3u8).map(|i| batch(&[(b"k", Some(&[i][..]))])).collect();
        commit_and_crash(&dir, &store(), batches);
        let bytes = std::fs::read(dir.join(JOURNAL_FILE)).unwrap();

        // sled kept commits 1 and 2 (and its own later writes): only 3 is replayed.
        let db = store();
        db.insert(layout::COMMIT_SEQ_KEY, 2u64.to_be_bytes()).unwrap();
        assert_eq!(open(&dir, &db).expect("journal").1, 1);
        assert_eq!(get(&db, b"k").as_deref(), Some(&[3u8][..]));

        // sled kept all three: an older record never overwrites newer state.
        std::fs::write(dir.join(JOURNAL_FILE), &bytes).unwrap();
        let db = store();
        db.insert(layout::COMMIT_SEQ_KEY, 3u64.to_be_bytes()).unwrap();
        db.insert(b"k", [9u8]).unwrap();
        assert_eq!(open(&dir, &db).expect("journal").1, 0);
        assert_eq!(get(&db, b"k").as_deref(), Some(&[9u8][..]));

        // A journal that starts after a commit sled lacks cannot be replayed in order.
        let dir = temp_dir("gap");
        let ahead = store();
        ahead.insert(layout::COMMIT_SEQ_KEY, 5u64.to_be_bytes()).unwrap();
        commit_and_crash(&dir, &ahead, vec![batch(&[(b"k", Some(b"6"))])]);
        let db = store();
        assert_eq!(open(&dir, &db).expect("journal").1, 0);
        assert_eq!(get(&db, b"k"), None);
    }

    #[test]
    fn a_commit_cut_short_without_its_record_is_removed_at_open() {
        let account = [&[layout::ACCOUNT][..], &[7; 28]].concat();
        let node = [&[layout::TRIE_NODE][..], &[8; 32]].concat();
        let header = layout::number_key(layout::HEADER, 1);
        let block = batch(&[
            (&node, Some(b"node")),
            (&account, Some(b"version")),
            (&header, Some(b"header")),
            (layout::HEAD_KEY, Some(&1u64.to_be_bytes())),
        ]);
        // sled persisted the marker and the first two keys of commit 1; the journal lost it.
        let db = store();
        db.insert(layout::PENDING_KEY, block.pending_marker(1)).unwrap();
        db.insert(&node, &b"node"[..]).unwrap();
        db.insert(&account, &b"version"[..]).unwrap();
        let dir = temp_dir("partial");
        open(&dir, &db).expect("journal");
        assert_eq!(get(&db, &account), None, "the block's own version is gone");
        assert!(get(&db, &node).is_some(), "trie nodes are shared by content and stay");
        assert_eq!(get(&db, layout::PENDING_KEY), None);

        // ... and every key up to the head pointer: the head goes back to block 0.
        let db = store();
        db.insert(layout::number_key(layout::HEADER, 0), &b"genesis"[..]).unwrap();
        db.insert(layout::HEAD_KEY, 0u64.to_be_bytes()).unwrap();
        db.insert(layout::PENDING_KEY, block.pending_marker(1)).unwrap();
        db.insert(layout::COMMIT_SEQ_KEY, 0u64.to_be_bytes()).unwrap();
        block.apply_first(&db, 4).unwrap();
        assert_eq!(get(&db, layout::HEAD_KEY).as_deref(), Some(&1u64.to_be_bytes()[..]));
        open(&dir, &db).expect("journal");
        assert_eq!(get(&db, &header), None);
        assert_eq!(get(&db, layout::HEAD_KEY).as_deref(), Some(&0u64.to_be_bytes()[..]));

        // A marker of a commit sled holds whole is left alone.
        let db = store();
        db.insert(layout::PENDING_KEY, block.pending_marker(1)).unwrap();
        db.insert(&account, &b"version"[..]).unwrap();
        db.insert(layout::COMMIT_SEQ_KEY, 1u64.to_be_bytes()).unwrap();
        open(&dir, &db).expect("journal");
        assert!(get(&db, &account).is_some());
    }

    #[test]
    fn a_checkpoint_empties_the_journal_once_due_and_never_mid_commit() {
        let dir = temp_dir("checkpoint");
        let db = store();
        let (mut journal, _) = open(&dir, &db).expect("journal");
        for i in 0..CHECKPOINT_RECORDS {
            assert!(!journal.due());
            journal
                .commit(batch(&[(&i.to_be_bytes(), Some(b"v"))]), Recovery::Block, true)
                .unwrap();
            journal.checkpoint_if_due();
        }
        assert!(journal.due());
        journal.checkpoint_if_due();
        assert!(journal.due(), "not while a commit is deferred");
        journal.settle().unwrap();
        journal.checkpoint_if_due();
        let file = journal.file.as_ref().unwrap();
        assert_eq!((file.bytes, file.records), (0, 0));
        assert_eq!(journal_len(&dir), 0);
        assert!(get(&db, &(CHECKPOINT_RECORDS - 1).to_be_bytes()).is_some(), "settled first");

        // A commit that failed while being applied keeps its record for the next open.
        journal.commit(batch(&[(b"x", Some(b"y"))]), Recovery::Block, false).unwrap();
        journal.applying = true;
        assert!(journal.checkpoint().is_err());
        assert!(journal.commit(batch(&[(b"z", Some(b"w"))]), Recovery::Block, false).is_err());
        drop(journal);
        assert!(journal_len(&dir) > 0, "not emptied at drop either");
    }

    /// The state `ops` leaves when applied in order to a store holding `before`.
    fn applied(
        before: &[(&[u8], &[u8])],
        ops: &[(&[u8], Option<&[u8]>)],
    ) -> Vec<(Vec<u8>, Vec<u8>)> {
        let db = store();
        for (key, value) in before {
            db.insert(key, *value).unwrap();
        }
        batch(ops).apply(&db).unwrap();
        contents(&db)
    }

    /// Everything but the journal's bookkeeping.
    fn contents(db: &Kv) -> Vec<(Vec<u8>, Vec<u8>)> {
        db.range::<&[u8], _>(..)
            .map(|entry| entry.unwrap())
            .filter(|(key, _)| {
                key.as_ref() != layout::COMMIT_SEQ_KEY && key.as_ref() != layout::PENDING_KEY
            })
            .map(|(key, value)| (key.to_vec(), value.to_vec()))
            .collect()
    }

    /// A commit that overwrites and removes existing keys, cut short after each of its
    /// operations in turn (the process dies there: sled keeps what was applied), is whole
    /// after the store is opened again, and so is the commit after it; both kinds of commit.
    #[test]
    fn a_commit_cut_short_after_any_key_is_whole_after_reopening() {
        let before: &[(&[u8], &[u8])] = &[(b"a", b"1"), (b"b", b"2"), (b"c", b"3")];
        let ops: &[(&[u8], Option<&[u8]>)] = &[
            (b"a", None),
            (b"b", Some(b"two")),
            (b"d", Some(b"4")),
            (b"a", Some(b"again")),
            (b"c", None),
        ];
        let next: &[(&[u8], Option<&[u8]>)] = &[(b"e", Some(b"5"))];
        let whole = applied(&applied_pairs(&applied(before, ops)), next);
        // One more than the batch's operations: COMMIT_SEQ_KEY is applied last.
        for cut in 0..=ops.len() {
            for recovery in [Recovery::Synced, Recovery::Block] {
                let dir = temp_dir("cut");
                let db = store();
                for (key, value) in before {
                    db.insert(key, *value).unwrap();
                }
                let (mut journal, _) = open(&dir, &db).unwrap();
                journal.commit(batch(&[(b"z", Some(b"first"))]), recovery, false).unwrap();
                journal.fail_next_apply_after(cut);
                assert!(journal.commit(batch(ops), recovery, false).is_err(), "cut at {cut}");
                assert!(journal.commit(batch(next), recovery, false).is_err(), "refused");
                crash(journal);

                let (mut journal, replayed) = open(&dir, &db).unwrap();
                assert_eq!(replayed, 1, "cut at {cut}, {recovery:?}");
                journal.commit(batch(next), recovery, false).unwrap();
                drop(journal);
                let mut got = contents(&db);
                got.retain(|(key, _)| key != b"z");
                assert_eq!(got, whole, "cut at {cut}, {recovery:?}");
                assert_eq!(committed_seq(&db).unwrap(), 3);
            }
        }
    }

    fn applied_pairs(pairs: &[(Vec<u8>, Vec<u8>)]) -> Vec<(&[u8], &[u8])> {
        pairs.iter().map(|(k, v)| (k.as_slice(), v.as_slice())).collect()
    }

    /// A block on disk writes its marker before its keys; a synced commit needs none.
    #[test]
    fn only_a_block_writes_a_pending_marker() {
        for (recovery, marked) in [(Recovery::Synced, false), (Recovery::Block, true)] {
            let dir = temp_dir("marker");
            let db = store();
            let (mut journal, _) = open(&dir, &db).unwrap();
            journal.fail_next_apply_after(0);
            assert!(journal.commit(batch(&[(b"k", None)]), recovery, false).is_err());
            assert_eq!(get(&db, layout::PENDING_KEY).is_some(), marked, "{recovery:?}");
            crash(journal);
        }
    }
}
