//! `ChainDb`: the readers' handle to Hearth's store; `ChainWriter`: the state owner's.
//!
//! Readers take no lock that the writer takes. What a reader needs beyond sled's records (the
//! head number, the head block's header, hash and state root, the deferred block's keys
//! (`overlay`) and the newest versions of recently written accounts and slots (`versions`)) is
//! one immutable [`Snapshot`] that the writer publishes after each commit, settle, patch and
//! revert by swapping an `Arc` (`arc_swap`). A reader loads it once per read, or once per
//! request through [`ChainDb::state_at`], and never writes to anything shared. Records in sled
//! are versioned: later blocks write new versions under larger keys, so what a snapshot at
//! block N reads stays valid while N+1 commits. The journal, and the lock around it, belong to
//! the [`ChainWriter`] alone.
//!
//! sled itself is a concurrent B-tree whose reads are lock-free as long as the process never
//! calls a sled batch, transaction or checksum: the first such call switches on sled 0.34's
//! process-wide `concurrency_control` lock, taken by every read from then on. Hearth writes
//! key by key only (`key_writes`), so it stays off; the journal gives multi-key writes their
//! crash atomicity instead. Readers are kept apart from a write in progress by versions: a
//! block writes only keys of its own number, and the records that lead to it (header, hash
//! indexes) after the rest. A dev patch, revert or rollback rewrites or removes records of
//! the head's (or later) number in place; before it does, the writer records what those keys
//! held in every snapshot still alive (`rewrites`), so a request pinned to one reads the state
//! it started on to the end.

use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

use alloy_consensus::{Header, ReceiptEnvelope, Sealed};
use alloy_primitives::{Address, B256, Bytes, U256};
use alloy_rlp::Decodable;
use arc_swap::ArcSwap;

use crate::journal::{Journal, Recovery};
use crate::kv::Kv;
use crate::layout::{self, be_u64};
use crate::overlay::Overlay;
use crate::records::{BlockExtras, SealedBlock, StoredAccount, StoredBody};
use crate::rewrites::{Preimages, Rewritten};
use crate::trie::NodeSource;
use crate::versions::{AccountChanges, AccountVersions, Newest, SlotChanges, SlotVersions};
use crate::{StorageError, WriteBatch};

/// A reader's handle to the store. Cheap to clone; every clone sees the snapshots the one
/// writer publishes (or, for a handle pinned by [`ChainDb::state_at`], one snapshot).
#[derive(Clone)]
pub struct ChainDb {
    /// The snapshot the writer published last.
    published: Arc<ArcSwap<Snapshot>>,
    /// When set, every read uses this snapshot instead (one request's view).
    pinned: Option<Arc<Snapshot>>,
    /// Tests: ignore the snapshot's head block and account versions (read the store).
    #[cfg(test)]
    uncached: bool,
}

impl std::fmt::Debug for ChainDb {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ChainDb")
            .field("head", &self.head_number())
            .field("pinned", &self.pinned.is_some())
            .field("fork", &self.fork().is_some())
            .finish_non_exhaustive()
    }
}

/// The chain itself: the tree holding its records (`kv`) and, for a fork, the upstream state
/// under them. Published inside every [`Snapshot`], so that replacing the whole chain
/// (anvil_reset, [`ChainWriter::replace_chain`]) is one swap like a commit: a request pinned
/// to an older snapshot finishes on the chain it started on, the next one sees the new chain.
pub(crate) struct Generation {
    /// Unique in this process: tells chains apart whose state roots are equal (two forks of
    /// one upstream at different blocks have the same local root).
    id: u64,
    db: Kv,
    /// The upstream state under a forked chain, read where no local record exists.
    fork: Option<Arc<dyn crate::ForkSource>>,
}

impl Generation {
    fn new(db: Kv, fork: Option<Arc<dyn crate::ForkSource>>) -> Self {
        static NEXT: AtomicU64 = AtomicU64::new(1);
        Self { id: NEXT.fetch_add(1, Ordering::Relaxed), db, fork }
    }
}

impl std::fmt::Debug for Generation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Generation").field("fork", &self.fork).finish_non_exhaustive()
    }
}

/// What a reader needs besides sled's versioned records, as of one commit: immutable once
/// published.
#[derive(Debug, Clone)]
pub(crate) struct Snapshot {
    /// The chain this snapshot is of.
    chain: Arc<Generation>,
    /// The last committed block, or [`NO_HEAD`] before genesis.
    head: u64,
    /// The head block decoded: every transaction and call reads the head's header and state
    /// root (the next block's parent, the base fee, the call's environment), and a sled
    /// lookup with an RLP decode costs microseconds each time. `None`: read the store.
    block: Option<Arc<HeadBlock>>,
    /// The committed block not yet applied to sled, if any; every read looks here first.
    overlay: Option<Arc<Overlay>>,
    /// The newest version of recently written accounts.
    accounts: AccountVersions,
    /// The newest value of recently written storage slots.
    slots: SlotVersions,
    /// What in-place commits after this snapshot overwrote in sled (`rewrites`).
    rewritten: Rewritten,
}

impl Snapshot {
    /// Nothing but the chain and its head number: every read goes to sled.
    fn bare(chain: Arc<Generation>, head: u64) -> Self {
        Self {
            chain,
            head,
            block: None,
            overlay: None,
            accounts: AccountVersions::default(),
            slots: SlotVersions::default(),
            rewritten: Rewritten::default(),
        }
    }
}

/// What the snapshot keeps of the head block.
#[derive(Debug)]
pub(crate) struct HeadBlock {
    pub(crate) header: Header,
    pub(crate) hash: B256,
    /// The root of the head's state: the header's, or the one dev patches left.
    pub(crate) state_root: B256,
}

impl HeadBlock {
    /// A block just committed, whose state root is its header's.
    pub(crate) const fn committed(header: Header, hash: B256) -> Self {
        let state_root = header.state_root;
        Self { header, hash, state_root }
    }
}

/// The snapshot one read works with: the handle's pinned one, or the published one.
enum Loaded<'a> {
    Pinned(&'a Arc<Snapshot>),
    Live(arc_swap::Guard<Arc<Snapshot>>),
}

impl std::ops::Deref for Loaded<'_> {
    type Target = Snapshot;
    fn deref(&self) -> &Snapshot {
        match self {
            Self::Pinned(snapshot) => snapshot,
            Self::Live(guard) => guard,
        }
    }
}

const NO_HEAD: u64 = u64::MAX;

/// The page cache a store opens with: a cap on the pages sled keeps decoded in memory, not an
/// allocation (a small state uses what it needs). sled's own default is 1 GiB; a state of a
/// million accounts is a ~2 GB store, and with 1 GiB its block writes spend a third of their
/// time reading evicted pages back (1,000-account block: 118 ms with 1 GiB, 78 ms with 4 GiB;
/// BENCHMARKS.md). Stores larger than the cache still work, they only read more. A node on
/// disk opens with `--cache.db` (128 MiB by default), which keeps its memory flat under
/// sustained ingest; import, export and the benches use this default. A store in memory has
/// no page cache (`kv`).
pub const DEFAULT_PAGE_CACHE_BYTES: u64 = 4 * 1024 * 1024 * 1024;

/// Where the next temporary sled store keeps its files: `hearth-mem-PID-N` in `/dev/shm` (RAM) when
/// there is one, else the temp dir. sled removes a temporary store when it is dropped, but a
/// process that exits without dropping it (a killed node, a test binary whose actors still
/// hold the store) used to leave sled's `pagecache.tmp.*` behind in /dev/shm, in RAM, for good:
/// 13 GB of them after a day of test runs here. So each process first removes the stores of
/// processes that no longer run. Every temporary sled store of the node (a fork cache without a
/// path; a chain in memory is a map since session 20, `kv`) is placed here, so one sweep covers
/// them all.
pub fn temporary_store_dir() -> std::path::PathBuf {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let base = sweep_temporary_stores();
    let n = NEXT.fetch_add(1, Ordering::Relaxed);
    base.join(format!("hearth-mem-{}-{n}", std::process::id()))
}

/// Removes, once per process, the temporary stores of processes that no longer run, and
/// returns the directory they live in. Every in-memory chain calls it too, though it opens no
/// files: a node without a fork cache path would otherwise never sweep what killed processes
/// (older builds among them) left in `/dev/shm`.
fn sweep_temporary_stores() -> std::path::PathBuf {
    static SWEPT: std::sync::Once = std::sync::Once::new();
    let shm = Path::new("/dev/shm");
    let base = if shm.is_dir() { shm.to_path_buf() } else { std::env::temp_dir() };
    SWEPT.call_once(|| sweep_dead_stores(&base));
    base
}

/// Removes the in-memory stores under `base` whose process has exited (Linux: no `/proc/PID`).
fn sweep_dead_stores(base: &Path) {
    if !Path::new("/proc/self").exists() {
        return; // no way to tell a live process from a dead one
    }
    let Ok(entries) = std::fs::read_dir(base) else { return };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(pid) = name
            .to_str()
            .and_then(|n| n.strip_prefix("hearth-mem-"))
            .and_then(|rest| rest.split('-').next())
        else {
            continue;
        };
        if !Path::new("/proc").join(pid).exists() {
            let _ = std::fs::remove_dir_all(entry.path());
        }
    }
}

/// The state owner's handle: the one that commits. It reads like a [`ChainDb`] (it derefs to
/// one) and hands out readers ([`ChainWriter::reader`]); the commit journal, and the lock
/// around it, are reachable from writers only. The node gives its writer to the state actor;
/// clones exist for tools and tests that write from one thread at a time.
#[derive(Debug, Clone)]
pub struct ChainWriter {
    reader: ChainDb,
    /// Numbers commits, makes them durable on disk and applies them to sled. Only the state
    /// owner commits, so the lock is never contended; no reader can reach it.
    journal: Arc<Mutex<Journal>>,
    /// Every snapshot published that a reader may still hold: an in-place commit records what
    /// it overwrites in each (`rewrites`). Only publications touch it, under the journal lock
    /// (or before the writer is shared); no reader can reach it.
    published: Arc<Mutex<Vec<Weak<Snapshot>>>>,
}

impl std::ops::Deref for ChainWriter {
    type Target = ChainDb;
    fn deref(&self) -> &ChainDb {
        &self.reader
    }
}

impl ChainWriter {
    /// Opens (or creates) a store in `path`, with a page cache of [`DEFAULT_PAGE_CACHE_BYTES`].
    pub fn open(path: &Path) -> Result<Self, StorageError> {
        Self::open_with_cache(path, DEFAULT_PAGE_CACHE_BYTES)
    }

    /// Opens (or creates) a store in `path` whose sled page cache holds up to `cache_bytes`.
    /// A state larger than the cache pays a page read and decode on many lookups.
    pub fn open_with_cache(path: &Path, cache_bytes: u64) -> Result<Self, StorageError> {
        let db = sled::Config::new()
            .path(path)
            .mode(sled::Mode::HighThroughput)
            .cache_capacity(cache_bytes)
            .open()?;
        let db = Kv::Sled(db);
        let (journal, replayed) = Journal::open(path, &db)?;
        if replayed > 0 {
            tracing::info!(target: "storage", replayed, "replayed commits the journal held after an unclean stop");
        }
        Self::from_db(db, journal)
    }

    /// A store that lives in this process only (a node without `--datadir`, the tests): a map
    /// in memory rather than sled (`kv`), with nothing to journal.
    pub fn in_memory() -> Result<Self, StorageError> {
        sweep_temporary_stores();
        let db = Kv::memory();
        let journal = Journal::in_memory(&db)?;
        Self::from_db(db, journal)
    }

    /// A store in memory on a temporary sled tree, as a store on disk reads and writes it but
    /// without a journal: tests run the readers' guarantees on both kinds of tree.
    #[cfg(test)]
    pub(crate) fn temporary_sled() -> Result<Self, StorageError> {
        let db = sled::Config::new().path(temporary_store_dir()).temporary(true).open()?;
        let db = Kv::Sled(db);
        let journal = Journal::in_memory(&db)?;
        Self::from_db(db, journal)
    }

    fn from_db(db: Kv, journal: Journal) -> Result<Self, StorageError> {
        let head = match db.get(layout::HEAD_KEY)? {
            Some(v) => be_u64(&v).ok_or(StorageError::Corrupt { what: "head pointer" })?,
            None => NO_HEAD,
        };
        let chain = Arc::new(Generation::new(db, None));
        let reader = ChainDb {
            published: Arc::new(ArcSwap::from_pointee(Snapshot::bare(chain, head))),
            pinned: None,
            #[cfg(test)]
            uncached: false,
        };
        let writer = Self {
            reader,
            journal: Arc::new(Mutex::new(journal)),
            published: Arc::new(Mutex::new(Vec::new())),
        };
        if head != NO_HEAD {
            let block = writer.head_from_store(head);
            writer.publish(Snapshot { block, ..Snapshot::bare(writer.generation(), head) });
        }
        Ok(writer)
    }

    /// This store over the upstream state `fork` (`--fork-url`): accounts, slots, code and
    /// block hashes it has no record of are read from there. Set before anything is written.
    #[must_use]
    pub fn with_fork(self, fork: Arc<dyn crate::ForkSource>) -> Self {
        let current = self.reader.published.load_full();
        let chain = Arc::new(Generation::new(current.chain.db.clone(), Some(fork)));
        self.publish(Snapshot { chain, ..Snapshot::clone(&current) });
        self
    }

    /// Replaces the whole chain with `new`'s (anvil_reset): its records, its fork source, its
    /// head and its journal, in one publication. `new` is a store built off to the side (a
    /// fresh genesis, or a fork's first block) that nobody else holds; readers that pinned a
    /// snapshot of this chain finish on it, and every read after this returns sees `new`'s.
    /// Only the state owner calls it, as it commits.
    pub fn replace_chain(&self, new: Self) -> Result<(), StorageError> {
        let mut journal = self.journal()?;
        let mut theirs = new.journal()?;
        std::mem::swap(&mut *journal, &mut *theirs);
        // The old chain's snapshots read another sled tree, which nothing rewrites any more.
        self.published_log().clear();
        self.publish(Snapshot::clone(&new.reader.published.load_full()));
        Ok(())
    }

    /// The chain published now (the sled tree and the fork source).
    fn generation(&self) -> Arc<Generation> {
        Arc::clone(&self.reader.published.load().chain)
    }

    /// Stores the chain configuration the node must run this chain under, durably.
    pub fn set_chain_config(&self, config: &[u8]) -> Result<(), StorageError> {
        let chain = self.generation();
        chain.db.insert(layout::CHAIN_CONFIG_KEY, config)?;
        chain.db.flush()?;
        Ok(())
    }

    /// Stores the genesis document, durably. Written before block 0, so that a store holding
    /// a block 0 has its document too (a document without block 0 is replaced at next start).
    pub fn set_genesis_document(&self, document: &[u8]) -> Result<(), StorageError> {
        let chain = self.generation();
        chain.db.insert(layout::GENESIS_DOCUMENT_KEY, document)?;
        chain.db.flush()?;
        Ok(())
    }

    /// Records the safe and finalized blocks a consensus client named (engine_forkchoiceUpdated).
    /// Not flushed here: they are hints the client sends again with every update, so a crash
    /// may bring back the previous ones, never a wrong chain.
    pub fn set_forkchoice_marks(&self, marks: ForkchoiceMarks) -> Result<(), StorageError> {
        let chain = self.generation();
        chain.db.insert(layout::FORKCHOICE_KEY, marks.encode())?;
        Ok(())
    }

    /// A reader of this store, for the executors, the RPC front and the pool.
    pub fn reader(&self) -> ChainDb {
        self.reader.clone()
    }

    /// Makes `batch` durable (journaled and fsynced), applies it key by key, then publishes
    /// `number` as head. For dev patches, reverts and rollbacks, which rewrite records a
    /// reader at the head may be reading: the snapshots published before keep what the batch
    /// overwrites (`rewrites`), so such a reader sees none of it; a crash part-way is
    /// completed at the next open (`journal`).
    ///
    /// Only the state owner commits. The journal append is what makes "acknowledged" mean
    /// "survives kill -9" (see `journal`): sled alone would keep the batch in its buffers
    /// until its next flush.
    pub fn commit_batch(&self, batch: WriteBatch, number: u64) -> Result<(), StorageError> {
        self.commit(batch, number, Recovery::Synced, false, None).map(drop)
    }

    /// Makes a new block's `batch` durable, applies it key by key, in order, then publishes
    /// `number` as head;
    /// returns how long applying and making durable took. Readers at the old head never look
    /// at the block's keys (they are versions of a later block, or records only the new head
    /// leads to) until the new snapshot is published, after the batch is visible.
    ///
    /// With `defer`, applying waits for [`Self::settle`] (or the next commit): the block is
    /// durable and the published snapshot carries it as an overlay (`overlay`) meanwhile, so
    /// the state owner can answer before it spends the apply's ~100 µs.
    pub(crate) fn commit_block_timed(
        &self,
        batch: WriteBatch,
        block: HeadBlock,
        defer: bool,
    ) -> Result<(Duration, Duration), StorageError> {
        let number = block.header.number;
        self.commit(batch, number, Recovery::Block, defer, Some(block))
    }

    /// Journal and apply (`journal`), publish the next snapshot, then checkpoint when due. The
    /// head moves before the checkpoint: the block is durable already, and a failed
    /// checkpoint is only retried after the next commit. `block` is the new head block
    /// (`None`: a patch or revert, after which the head block is read back from the store).
    fn commit(
        &self,
        batch: WriteBatch,
        number: u64,
        recovery: Recovery,
        defer: bool,
        block: Option<HeadBlock>,
    ) -> Result<(Duration, Duration), StorageError> {
        let mut journal = self.journal()?;
        if recovery == Recovery::Synced || self.read_by_a_later_snapshot(number) {
            // Rewrites records in place (a patch, revert or rollback), or writes a block number
            // that a snapshot from before a revert still reads as its own: settle the deferred
            // block first, so that sled holds what every live snapshot sees, then keep the
            // values the batch overwrites for them.
            journal.settle()?;
            self.drop_overlay();
            self.keep_preimages(&batch)?;
        }
        let previous = self.reader.published.load_full();
        let mut changes = AccountChanges::of(&batch);
        let slots = SlotChanges::of(&batch);
        let committed = match journal.commit(batch, recovery, defer) {
            Ok(committed) => committed,
            Err(error) => {
                // Part of the batch may be visible: readers ask the store for everything but
                // the deferred keys (which may not be in sled yet).
                self.publish(Snapshot {
                    overlay: previous.overlay.clone(),
                    ..Snapshot::bare(Arc::clone(&previous.chain), previous.head)
                });
                return Err(error);
            }
        };
        // A removed version (a revert): the account's newest version is now one the store
        // holds; read it back so that readers at the head still skip the store.
        let _ = changes.resolve_removed(|address| {
            Ok::<_, std::convert::Infallible>(self.newest_in_store(address))
        });
        let block = match block {
            Some(block) => Some(Arc::new(block)),
            None => self.head_from_store(number),
        };
        self.publish(Snapshot {
            chain: Arc::clone(&previous.chain),
            head: number,
            block,
            // Applied now: the previous deferred block was settled first, so nothing is left.
            overlay: committed.deferred,
            accounts: previous.accounts.with(changes),
            slots: previous.slots.with(slots),
            rewritten: Rewritten::default(),
        });
        journal.checkpoint_if_due();
        Ok((committed.applied, committed.journaled))
    }

    /// Whether a block committed with a deferred apply still waits for [`ChainWriter::settle`]
    /// (readers meanwhile see it through the snapshot's overlay).
    pub fn owes_apply(&self) -> Result<bool, StorageError> {
        Ok(self.journal()?.owes_apply())
    }

    /// Applies a deferred block to sled (one written by a [`crate::BlockWriter`] with a
    /// deferred apply), then checkpoints when due; returns how long applying took. The state
    /// owner calls it once it has answered the block's commit.
    pub fn settle(&self) -> Result<Duration, StorageError> {
        let mut journal = self.journal()?;
        let took = journal.settle()?;
        self.drop_overlay();
        journal.checkpoint_if_due();
        Ok(took)
    }

    /// Applies what is deferred, flushes sled and empties the journal now (shutdown,
    /// benchmarks). Commits do this by themselves every thousand blocks or so.
    pub fn checkpoint(&self) -> Result<(), StorageError> {
        let mut journal = self.journal()?;
        journal.checkpoint()?;
        // Only once it succeeded (a failed settle leaves the deferred keys outside sled), and
        // under the journal lock, as every publication.
        self.drop_overlay();
        Ok(())
    }

    /// Makes the next commit's apply stop with an error after `count` operations, as a crash
    /// part-way would leave it (crash tests).
    #[cfg(test)]
    pub(crate) fn fail_next_apply_after(&self, count: usize) {
        self.journal().expect("journal").fail_next_apply_after(count);
    }

    /// The journal, locked. A poisoned lock means a commit panicked half-way: nothing more is
    /// committed or checkpointed.
    fn journal(&self) -> Result<std::sync::MutexGuard<'_, Journal>, StorageError> {
        self.journal.lock().map_err(|_| StorageError::Corrupt {
            what: "commit journal (an earlier commit panicked)",
        })
    }

    fn publish(&self, snapshot: Snapshot) {
        let snapshot = Arc::new(snapshot);
        let mut published = self.published_log();
        // Forget the snapshots no reader holds any more: at most the requests in flight remain.
        published.retain(|old| old.strong_count() > 0);
        published.push(Arc::downgrade(&snapshot));
        drop(published);
        self.reader.published.store(snapshot);
    }

    /// The snapshots published that may still be read. Taken by publications only, under the
    /// journal lock, so it is never contended; a panic while holding it left only weak
    /// pointers, so a poisoned lock is used as it is.
    fn published_log(&self) -> std::sync::MutexGuard<'_, Vec<Weak<Snapshot>>> {
        self.published.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Whether a snapshot still alive has a head at or past `number`: one published before a
    /// revert, whose blocks the next commits number again.
    fn read_by_a_later_snapshot(&self, number: u64) -> bool {
        self.published_log()
            .iter()
            .filter_map(Weak::upgrade)
            .any(|snapshot| snapshot.head != NO_HEAD && snapshot.head >= number)
    }

    /// Records, in every snapshot still alive, what `batch`'s keys hold in sled now: it is
    /// about to rewrite them in place (`rewrites`). Called with nothing deferred.
    fn keep_preimages(&self, batch: &WriteBatch) -> Result<(), StorageError> {
        let live: Vec<Arc<Snapshot>> =
            self.published_log().iter().filter_map(Weak::upgrade).collect();
        if live.is_empty() {
            return Ok(());
        }
        let db = &self.generation().db;
        let mut preimages = Preimages::default();
        for key in batch.keys() {
            if preimages.get(key).is_none() {
                preimages.record(key, db.get(key)?);
            }
        }
        if preimages.is_empty() {
            return Ok(());
        }
        let preimages = Arc::new(preimages);
        for snapshot in live {
            snapshot.rewritten.add(&preimages);
        }
        Ok(())
    }

    /// Publishes the snapshot again without its overlay, once sled holds the deferred block.
    /// Only the writer calls it, under the journal lock: nothing else publishes meanwhile.
    fn drop_overlay(&self) {
        let current = self.reader.published.load_full();
        if current.overlay.is_some() {
            self.publish(Snapshot { overlay: None, ..Snapshot::clone(&current) });
        }
    }

    /// Block `number` as the store holds it: header, hash and state root (`None` when it has
    /// no header, or it cannot be read: readers then ask the store themselves).
    fn head_from_store(&self, number: u64) -> Option<Arc<HeadBlock>> {
        let store = ChainDb {
            pinned: Some(Arc::new(Snapshot::bare(self.generation(), number))),
            ..self.reader.clone()
        };
        let header = store.header(number).ok()??;
        let hash = store.block_hash(number).ok()??;
        let state_root = store.state_root_at(number).ok()??;
        Some(Arc::new(HeadBlock { header, hash, state_root }))
    }

    /// The newest version of `address` in sled (`None`: none, or unreadable: ask the store).
    /// Called after a commit applied, with nothing deferred.
    fn newest_in_store(&self, address: &Address) -> Option<Newest<StoredAccount>> {
        let from = layout::account_key(address, 0);
        let to = layout::account_key(address, u64::MAX);
        let (key, value) = self.generation().db.range(from..=to).next_back()?.ok()?;
        let (_, block) = layout::account_key_parts(&key)?;
        let account = if value.is_empty() {
            None
        } else {
            Some(StoredAccount::decode(&mut value.as_ref()).ok()?)
        };
        Some(Newest { block, value: account })
    }
}

impl ChainDb {
    /// Which chain this handle reads (changes only with [`ChainWriter::replace_chain`]): a
    /// cache keyed by state root must be keyed by this too.
    pub fn generation(&self) -> u64 {
        self.snapshot().chain.id
    }

    /// The forked base, when this store is a fork's.
    pub fn fork(&self) -> Option<Arc<dyn crate::ForkSource>> {
        self.snapshot().chain.fork.clone()
    }

    /// The snapshot this read works with.
    fn snapshot(&self) -> Loaded<'_> {
        match &self.pinned {
            Some(snapshot) => Loaded::Pinned(snapshot),
            None => Loaded::Live(self.published.load()),
        }
    }

    /// The number of the last committed block, or `None` before genesis.
    pub fn head_number(&self) -> Option<u64> {
        match self.snapshot().head {
            NO_HEAD => None,
            n => Some(n),
        }
    }

    /// This handle pinned to the snapshot published now: all its reads see that one commit,
    /// whatever commits after. For one request's reads; a long-lived holder would never see
    /// a new head.
    #[must_use]
    pub fn pinned(&self) -> Self {
        match &self.pinned {
            Some(_) => self.clone(),
            None => Self { pinned: Some(self.published.load_full()), ..self.clone() },
        }
    }

    /// The value of `key`: the deferred block's, else sled's (in that order: see `overlay`).
    fn get(&self, key: &[u8]) -> Result<Option<sled::IVec>, StorageError> {
        let snapshot = self.snapshot();
        self.get_in(&snapshot, key)
    }

    fn get_in(&self, snapshot: &Snapshot, key: &[u8]) -> Result<Option<sled::IVec>, StorageError> {
        match snapshot.overlay.as_ref().and_then(|overlay| overlay.get(key)) {
            Some(value) => Ok(Some(value)),
            None => Self::stored(snapshot, key),
        }
    }

    /// sled's value of `key` as `snapshot` sees it: unless an in-place commit rewrote it
    /// since, the value in sled. The pre-images are looked at after the read (`rewrites`).
    fn stored(snapshot: &Snapshot, key: &[u8]) -> Result<Option<sled::IVec>, StorageError> {
        let value = snapshot.chain.db.get(key)?;
        Ok(match snapshot.rewritten.load() {
            Some(preimages) => match preimages.get(key) {
                Some(before) => before.clone(),
                None => value,
            },
            None => value,
        })
    }

    /// sled's entry with the largest key in `from..=to` as `snapshot` sees it: sled's entries
    /// that no in-place commit rewrote since, and the rewritten ones that existed for it.
    fn stored_last_in(
        snapshot: &Snapshot,
        from: &[u8],
        to: &[u8],
    ) -> Result<Option<(sled::IVec, sled::IVec)>, StorageError> {
        let mut range = snapshot.chain.db.range(from..=to);
        let mut stored = range.next_back().transpose()?;
        // Each pre-image load follows the sled read it judges (`rewrites`).
        let Some(mut preimages) = snapshot.rewritten.load() else { return Ok(stored) };
        while let Some((key, _)) = &stored {
            if preimages.get(key).is_none() {
                break;
            }
            stored = range.next_back().transpose()?;
            if let Some(newer) = snapshot.rewritten.load() {
                preimages = newer;
            }
        }
        Ok(match (stored, preimages.last_present_in(from, to)) {
            (Some(stored), Some(before)) => Some(if before.0 > stored.0 { before } else { stored }),
            (found, None) | (None, found) => found,
        })
    }

    /// The value stored as the chunks of `key` (`layout::chunks`) as `snapshot` sees it.
    fn stored_chunks(snapshot: &Snapshot, key: &[u8]) -> Result<Option<Vec<u8>>, StorageError> {
        let entries: Vec<(sled::IVec, sled::IVec)> =
            snapshot.chain.db.scan_prefix(key).collect::<Result<_, _>>()?;
        let Some(preimages) = snapshot.rewritten.load() else {
            return Ok(layout::chunks::assemble(key, entries));
        };
        let mut merged: std::collections::BTreeMap<sled::IVec, sled::IVec> =
            entries.into_iter().collect();
        for (rewritten, before) in preimages.with_prefix(key) {
            match before {
                Some(value) => merged.insert(rewritten.as_slice().into(), value.clone()),
                None => merged.remove(rewritten.as_slice()),
            };
        }
        Ok(layout::chunks::assemble(key, merged))
    }

    /// Keys an in-place commit rewrote since this handle's snapshot, with what they held for
    /// it (`rewrites`); `None` when there are none. For scans over sled (`slots`).
    pub(crate) fn rewritten(&self) -> Option<Arc<Preimages>> {
        self.snapshot().rewritten.load()
    }

    /// The entry with the largest key in `from..=to` (the newest version at or before a
    /// block), from the deferred block and sled together.
    fn last_in(
        &self,
        snapshot: &Snapshot,
        from: &[u8],
        to: &[u8],
    ) -> Result<Option<(sled::IVec, sled::IVec)>, StorageError> {
        let deferred = snapshot
            .overlay
            .as_ref()
            .and_then(|overlay| overlay.last_in(from, to))
            .map(|(key, value)| (key.into(), value));
        let stored = Self::stored_last_in(snapshot, from, to)?;
        Ok(match (deferred, stored) {
            (Some(deferred), Some(stored)) => {
                Some(if deferred.0 >= stored.0 { deferred } else { stored })
            }
            (found, None) | (None, found) => found,
        })
    }

    /// This store without the snapshot's head block and account versions: every read goes to
    /// the overlay and sled (tests compare both paths).
    #[cfg(test)]
    pub(crate) fn uncached(&self) -> Self {
        Self { uncached: true, ..self.clone() }
    }

    #[cfg(test)]
    const fn cached(&self) -> bool {
        !self.uncached
    }

    #[cfg(not(test))]
    #[allow(clippy::unused_self)]
    const fn cached(&self) -> bool {
        true
    }

    /// The head block of `snapshot`, when it is block `number`.
    fn head_block<'s>(&self, snapshot: &'s Snapshot, number: u64) -> Option<&'s HeadBlock> {
        snapshot.block.as_deref().filter(|b| self.cached() && b.header.number == number)
    }

    /// The header of block `number`.
    pub fn header(&self, number: u64) -> Result<Option<Header>, StorageError> {
        let snapshot = self.snapshot();
        if let Some(block) = self.head_block(&snapshot, number) {
            return Ok(Some(block.header.clone()));
        }
        let local: Option<Header> =
            self.decode_in(&snapshot, &layout::number_key(layout::HEADER, number), "header")?;
        match (local, self.history_fork(number)) {
            (None, Some(fork)) => fork.header(number),
            (local, _) => Ok(local),
        }
    }

    /// The forked base, when block `number` is the upstream's (below the fork block): its
    /// blocks, receipts and transactions are read there.
    fn history_fork(&self, number: u64) -> Option<Arc<dyn crate::ForkSource>> {
        self.fork().filter(|fork| number < fork.block())
    }

    /// Block `number`'s header with its hash, from one snapshot: a local block's hash as
    /// stored beside it (never recomputed; the head's is in the snapshot), a forked base's
    /// block hashed here, since the hash its upstream reports may not be its header's
    /// (`fork.rs`). `None` when there is no such block.
    pub fn sealed_header(&self, number: u64) -> Result<Option<Sealed<Header>>, StorageError> {
        let snapshot = self.snapshot();
        if let Some(block) = self.head_block(&snapshot, number) {
            return Ok(Some(Sealed::new_unchecked(block.header.clone(), block.hash)));
        }
        let local: Option<Header> =
            self.decode_in(&snapshot, &layout::number_key(layout::HEADER, number), "header")?;
        let Some(header) = local else {
            return Ok(match self.history_fork(number) {
                Some(fork) => fork.header(number)?.map(Sealed::new),
                None => None,
            });
        };
        let stored = self.get_in(&snapshot, &layout::number_key(layout::HASH_BY_NUMBER, number))?;
        Ok(Some(match stored {
            Some(hash) => {
                let hash = B256::from_slice(&hash);
                debug_assert_eq!(hash, header.hash_slow(), "block {number}'s stored hash");
                Sealed::new_unchecked(header, hash)
            }
            // Every commit writes the two together; hash what a store without it has.
            None => Sealed::new(header),
        }))
    }

    /// The hash of block `number`.
    pub fn block_hash(&self, number: u64) -> Result<Option<B256>, StorageError> {
        let snapshot = self.snapshot();
        if let Some(block) = self.head_block(&snapshot, number) {
            return Ok(Some(block.hash));
        }
        let local = self
            .get_in(&snapshot, &layout::number_key(layout::HASH_BY_NUMBER, number))?
            .map(|v| B256::from_slice(&v));
        match (local, &snapshot.chain.fork) {
            // Blocks below a fork are the upstream's.
            (None, Some(fork)) if number < fork.block() => fork.block_hash(number),
            (local, _) => Ok(local),
        }
    }

    /// The number of the block with hash `hash`.
    pub fn block_number(&self, hash: &B256) -> Result<Option<u64>, StorageError> {
        match self.get(&layout::hash_key(layout::NUMBER_BY_HASH, hash))? {
            Some(v) => Ok(Some(be_u64(&v).ok_or(StorageError::Corrupt { what: "block index" })?)),
            None => match self.fork() {
                Some(fork) => fork.block_number(hash),
                None => Ok(None),
            },
        }
    }

    /// The transactions and senders of block `number`.
    pub fn body(&self, number: u64) -> Result<Option<StoredBody>, StorageError> {
        let local = self.decode_chunked(&layout::number_key(layout::BODY, number), "block body")?;
        match (local, self.history_fork(number)) {
            (None, Some(fork)) => Ok(fork.body(number)?.map(|(body, _)| body)),
            (local, _) => Ok(local),
        }
    }

    /// The receipts of block `number`.
    pub fn receipts(&self, number: u64) -> Result<Option<Vec<ReceiptEnvelope>>, StorageError> {
        let local =
            self.decode_chunked(&layout::number_key(layout::RECEIPTS, number), "receipts")?;
        match (local, self.history_fork(number)) {
            (None, Some(fork)) => fork.receipts(number),
            (local, _) => Ok(local),
        }
    }

    /// The ommers and withdrawals of block `number` (empty when none were stored).
    pub fn extras(&self, number: u64) -> Result<BlockExtras, StorageError> {
        let local = self.decode(&layout::number_key(layout::EXTRAS, number), "block extras")?;
        match (local, self.fork()) {
            // The fork block's too: its local record is written without them.
            (None, Some(fork)) if number <= fork.block() => {
                Ok(fork.body(number)?.map(|(_, extras)| extras).unwrap_or_default())
            }
            (local, _) => Ok(local.unwrap_or_default()),
        }
    }

    /// Block `number` whole (header, hash, body, receipts, extras); `None` when there is
    /// none. Its parts are written before its header (`finish_block`), so a header without
    /// them, or a body whose transactions, senders and receipts do not pair up, is corruption.
    pub fn sealed_block(&self, number: u64) -> Result<Option<SealedBlock>, StorageError> {
        let Some(header) = self.header(number)? else { return Ok(None) };
        let corrupt = |what| StorageError::Corrupt { what };
        let hash = self.block_hash(number)?.ok_or(corrupt("a block's hash"))?;
        let body = self.body(number)?.ok_or(corrupt("a block's body"))?;
        let receipts = self.receipts(number)?.ok_or(corrupt("a block's receipts"))?;
        if body.transactions.len() != body.senders.len()
            || body.transactions.len() != receipts.len()
        {
            return Err(corrupt(
                "a block's transactions, senders and receipts, which differ in number",
            ));
        }
        let extras = self.extras(number)?;
        Ok(Some(SealedBlock { header, hash, body, receipts, extras }))
    }

    /// The chain configuration stored by an import (`None` for a dev chain).
    pub fn chain_config(&self) -> Result<Option<Vec<u8>>, StorageError> {
        Ok(self.snapshot().chain.db.get(layout::CHAIN_CONFIG_KEY)?.map(|v| v.to_vec()))
    }

    /// The safe and finalized blocks the consensus client last named (none on a chain no
    /// engine drives: every block is then final).
    pub fn forkchoice_marks(&self) -> Result<ForkchoiceMarks, StorageError> {
        match self.snapshot().chain.db.get(layout::FORKCHOICE_KEY)? {
            Some(bytes) => ForkchoiceMarks::decode(&bytes)
                .ok_or(StorageError::Corrupt { what: "forkchoice marks" }),
            None => Ok(ForkchoiceMarks::default()),
        }
    }

    /// The genesis document (geth's genesis.json) block 0 was made from; `None` for a chain
    /// written before Hearth kept it.
    pub fn genesis_document(&self) -> Result<Option<Vec<u8>>, StorageError> {
        Ok(self.snapshot().chain.db.get(layout::GENESIS_DOCUMENT_KEY)?.map(|v| v.to_vec()))
    }

    /// Where transaction `hash` was included: block number and index.
    pub fn tx_location(&self, hash: &B256) -> Result<Option<(u64, u32)>, StorageError> {
        match self.get(&layout::hash_key(layout::TX_LOOKUP, hash))? {
            Some(v) if v.len() == 12 => {
                let number = be_u64(&v).ok_or(StorageError::Corrupt { what: "tx index" })?;
                let index = u32::from_be_bytes([v[8], v[9], v[10], v[11]]);
                Ok(Some((number, index)))
            }
            Some(_) => Err(StorageError::Corrupt { what: "tx index" }),
            None => match self.fork() {
                Some(fork) => fork.tx_location(hash),
                None => Ok(None),
            },
        }
    }

    /// The account at `address` as of block `number` (`None`: it does not exist).
    pub fn account(
        &self,
        address: &Address,
        number: u64,
    ) -> Result<Option<StoredAccount>, StorageError> {
        let snapshot = self.snapshot();
        // Below a fork's fork block the state is the upstream's as of that block (no local
        // record is that old): a historical state of the fork source's, its incarnation the
        // block so that its slots are read there too.
        if let Some(fork) = &snapshot.chain.fork
            && number < fork.block()
        {
            return Ok(fork.account_at(number, address)?.map(|a| StoredAccount {
                nonce: a.nonce,
                balance: a.balance,
                code_hash: a.code_hash,
                storage_root: crate::trie::EMPTY_ROOT,
                incarnation: number,
            }));
        }
        if self.cached()
            && let Some(account) = snapshot.accounts.get(address, number)
        {
            return Ok(account);
        }
        // Not written recently (or read at an older block): the store. Nothing is kept for
        // the next reads; only the writer publishes account versions (`versions`).
        let from = layout::account_key(address, 0);
        let to = layout::account_key(address, number);
        let account = match self.last_in(&snapshot, &from, &to)? {
            Some((_, value)) => {
                if value.is_empty() {
                    None
                } else {
                    Some(
                        StoredAccount::decode(&mut value.as_ref())
                            .map_err(|source| StorageError::Decode { what: "account", source })?,
                    )
                }
            }
            // Never written here: a fork's account is the upstream's at the fork block, with
            // the fork block as its incarnation so that its slots are read upstream too.
            None => match &snapshot.chain.fork {
                Some(fork) => fork.account(address)?.map(|a| StoredAccount {
                    nonce: a.nonce,
                    balance: a.balance,
                    code_hash: a.code_hash,
                    // The local trie holds what local blocks wrote (ARCHITECTURE.md).
                    storage_root: crate::trie::EMPTY_ROOT,
                    incarnation: fork.block(),
                }),
                None => None,
            },
        };
        Ok(account)
    }

    /// Whether this store has its own record of `address` as of block `number` (a block or a
    /// dev patch wrote it, a deletion included): on a fork, an account without one is the
    /// upstream's as it was at the fork block, unchanged here.
    pub fn has_local_account(&self, address: &Address, number: u64) -> Result<bool, StorageError> {
        let snapshot = self.snapshot();
        if self.cached() && snapshot.accounts.get(address, number).is_some() {
            return Ok(true);
        }
        let from = layout::account_key(address, 0);
        let to = layout::account_key(address, number);
        Ok(self.last_in(&snapshot, &from, &to)?.is_some())
    }

    /// A storage slot of the account's `incarnation` as of block `number`.
    pub fn storage(
        &self,
        address: &Address,
        incarnation: u64,
        slot: &U256,
        number: u64,
    ) -> Result<U256, StorageError> {
        let snapshot = self.snapshot();
        // Below a fork's fork block: the upstream's slot as of that block (see `account`).
        if let Some(fork) = &snapshot.chain.fork
            && number < fork.block()
        {
            return fork.storage_at(number, address, slot);
        }
        if self.cached()
            && let Some(value) = snapshot.slots.get(&(*address, incarnation, *slot), number)
        {
            return Ok(value.unwrap_or_default());
        }
        let from = layout::storage_key(address, incarnation, slot, 0);
        let to = layout::storage_key(address, incarnation, slot, number);
        match self.last_in(&snapshot, &from, &to)? {
            Some((_, value)) => Ok(U256::try_from_be_slice(&value).unwrap_or_default()),
            // The storage the account had at the fork block, not wiped since: the upstream's.
            None => match &snapshot.chain.fork {
                Some(fork) if incarnation == fork.block() => fork.storage(address, slot),
                _ => Ok(U256::ZERO),
            },
        }
    }

    /// Whether storage of an account's `incarnation` as of block `number` may be a fork
    /// upstream's (below the fork block, or never wiped since it): its slots are not all in the
    /// local storage trie, so an empty local storage root does not mean empty storage.
    pub(crate) fn storage_is_inherited(&self, incarnation: u64, number: u64) -> bool {
        self.snapshot()
            .chain
            .fork
            .as_ref()
            .is_some_and(|fork| number < fork.block() || incarnation == fork.block())
    }

    /// Whether slot `slot` of the account's `incarnation` as of block `number` is read from a
    /// fork's upstream: the account's storage is the one it had at the fork block (not wiped
    /// since) and nothing here wrote the slot. The local storage trie does not hold it.
    pub fn slot_is_upstream(
        &self,
        address: &Address,
        incarnation: u64,
        slot: &U256,
        number: u64,
    ) -> Result<bool, StorageError> {
        let snapshot = self.snapshot();
        let inherited =
            snapshot.chain.fork.as_ref().is_some_and(|fork| incarnation == fork.block());
        if !inherited {
            return Ok(false);
        }
        let from = layout::storage_key(address, incarnation, slot, 0);
        let to = layout::storage_key(address, incarnation, slot, number);
        Ok(self.last_in(&snapshot, &from, &to)?.is_none())
    }

    /// Contract code by its hash.
    pub fn code(&self, code_hash: &B256) -> Result<Option<Bytes>, StorageError> {
        let snapshot = self.snapshot();
        match self.get_in(&snapshot, &layout::hash_key(layout::CODE, code_hash))? {
            Some(v) => Ok(Some(Bytes::copy_from_slice(&v))),
            None => match &snapshot.chain.fork {
                Some(fork) => fork.code(code_hash),
                None => Ok(None),
            },
        }
    }

    /// The root of the state as of block `number`: the header's, or the one dev patches left.
    pub fn state_root_at(&self, number: u64) -> Result<Option<B256>, StorageError> {
        let snapshot = self.snapshot();
        if let Some(block) = self.head_block(&snapshot, number) {
            return Ok(Some(block.state_root));
        }
        if let Some(root) =
            self.get_in(&snapshot, &layout::number_key(layout::PATCHED_ROOT, number))?
        {
            if root.len() != 32 {
                return Err(StorageError::Corrupt { what: "patched state root" });
            }
            return Ok(Some(B256::from_slice(&root)));
        }
        let local = self
            .decode_in::<Header>(&snapshot, &layout::number_key(layout::HEADER, number), "header")?
            .map(|h| h.state_root);
        match (local, &snapshot.chain.fork) {
            // An upstream block below a fork's fork block: the root the upstream gave it.
            (None, Some(fork)) if number < fork.block() => {
                Ok(fork.header(number)?.map(|h| h.state_root))
            }
            _ => Ok(local),
        }
    }

    /// Whether this store itself holds `key` (the deferred block or sled; never a fork's
    /// upstream).
    pub(crate) fn holds(&self, key: &[u8]) -> Result<bool, StorageError> {
        Ok(self.get(key)?.is_some())
    }

    /// A raw record by key (patches and reverts record what they overwrite).
    pub(crate) fn raw_get(&self, key: &[u8]) -> Result<Option<Vec<u8>>, StorageError> {
        Ok(self.get(key)?.map(|v| v.to_vec()))
    }

    /// A read-only view of the state as of block `number`.
    /// Its reads all use the snapshot published when it was made ([`Self::pinned`]).
    pub fn state_at(&self, number: u64) -> crate::StateView {
        crate::StateView::new(self.pinned(), number)
    }

    /// Like `decode`, for a record stored in chunks (`layout::chunks`).
    fn decode_chunked<T: Decodable>(
        &self,
        key: &[u8],
        what: &'static str,
    ) -> Result<Option<T>, StorageError> {
        let snapshot = self.snapshot();
        let deferred =
            snapshot.overlay.as_ref().map(|overlay| overlay.with_prefix(key)).unwrap_or_default();
        let value = if deferred.is_empty() {
            Self::stored_chunks(&snapshot, key)?
        } else {
            // A block's records are written whole by one commit: all its chunks are here.
            Some(deferred.iter().fold(Vec::new(), |mut value, (_, piece)| {
                value.extend_from_slice(piece);
                value
            }))
        };
        match value {
            Some(v) => Ok(Some(
                T::decode(&mut v.as_slice())
                    .map_err(|source| StorageError::Decode { what, source })?,
            )),
            None => Ok(None),
        }
    }

    /// Every key that starts with `prefix` (the chunks of a record: `layout::chunks`), from
    /// the deferred block and sled together, in order.
    pub(crate) fn keys_with_prefix(&self, prefix: &[u8]) -> Result<Vec<sled::IVec>, StorageError> {
        let deferred = self
            .snapshot()
            .overlay
            .as_ref()
            .map(|overlay| overlay.with_prefix(prefix))
            .unwrap_or_default();
        let mut keys: std::collections::BTreeSet<sled::IVec> =
            deferred.into_iter().map(|(key, _)| key.into()).collect();
        for key in self.tree().scan_prefix(prefix).keys() {
            keys.insert(key?);
        }
        Ok(keys.into_iter().collect())
    }

    /// The keys under `prefix` of the committed block not yet applied to sled (`slots`).
    pub(crate) fn deferred_keys(&self, prefix: &[u8]) -> Result<Vec<Vec<u8>>, StorageError> {
        let snapshot = self.snapshot();
        let deferred = snapshot.overlay.as_ref().map(|o| o.with_prefix(prefix)).unwrap_or_default();
        Ok(deferred.into_iter().map(|(key, _)| key).collect())
    }

    /// Every version key of `prefix` (`layout::ACCOUNT` or `layout::STORAGE`: the prefix, an
    /// identity of `ident_len` bytes, then a big-endian block number) written at a block after
    /// `after`, from sled only: the caller settles the deferred block first. Each identity
    /// costs one seek past its older versions, so the scan visits the identities and the
    /// versions it returns, not the whole history.
    pub(crate) fn versions_after(
        &self,
        prefix: u8,
        ident_len: usize,
        after: u64,
    ) -> Result<Vec<sled::IVec>, StorageError> {
        let mut found = Vec::new();
        let Some(first) = after.checked_add(1) else { return Ok(found) };
        let key_len = 1 + ident_len + 8;
        let db = self.tree();
        let mut from = vec![prefix];
        while let Some(key) = db.range(from.as_slice()..).keys().next() {
            let key = key?;
            if key.first() != Some(&prefix) {
                break;
            }
            if key.len() != key_len {
                // Not a version key (no such key is written under these prefixes): step over.
                from = key.to_vec();
                from.push(0);
                continue;
            }
            let ident = &key[..1 + ident_len];
            let mut start = ident.to_vec();
            start.extend_from_slice(&first.to_be_bytes());
            let mut last = ident.to_vec();
            last.extend_from_slice(&u64::MAX.to_be_bytes());
            for version in db.range(start.as_slice()..=last.as_slice()).keys() {
                found.push(version?);
            }
            // Past every version of this identity.
            from = last;
            from.push(0);
        }
        Ok(found)
    }

    /// The tree itself: what has been applied to it (tests; `slots`, which seeks by key;
    /// the state dump, which settles the deferred block first).
    pub(crate) fn tree(&self) -> Kv {
        self.snapshot().chain.db.clone()
    }

    fn decode<T: Decodable>(
        &self,
        key: &[u8],
        what: &'static str,
    ) -> Result<Option<T>, StorageError> {
        self.decode_in(&self.snapshot(), key, what)
    }

    fn decode_in<T: Decodable>(
        &self,
        snapshot: &Snapshot,
        key: &[u8],
        what: &'static str,
    ) -> Result<Option<T>, StorageError> {
        match self.get_in(snapshot, key)? {
            Some(v) => Ok(Some(
                T::decode(&mut v.as_ref())
                    .map_err(|source| StorageError::Decode { what, source })?,
            )),
            None => Ok(None),
        }
    }
}

impl NodeSource for ChainDb {
    fn node_into(&self, hash: &B256, out: &mut Vec<u8>) -> Result<bool, StorageError> {
        let Some(rlp) = self.get(&layout::hash_key(layout::TRIE_NODE, hash))? else {
            return Ok(false);
        };
        out.clear();
        out.extend_from_slice(&rlp);
        Ok(true)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The two kinds of tree a chain lives in (`kv`): the readers' guarantees must hold on both.
    const STORES: [fn() -> Result<ChainWriter, StorageError>; 2] =
        [ChainWriter::in_memory, ChainWriter::temporary_sled];

    #[test]
    fn stores_of_dead_processes_are_swept_and_live_ones_kept() {
        let base = std::env::temp_dir().join(format!("hearth-sweep-test-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&base);
        // No pid reaches 2^32 - 1 (Linux caps pid_max at 2^22).
        let dead = base.join("hearth-mem-4294967295-0");
        let live = base.join(format!("hearth-mem-{}-7", std::process::id()));
        let other = base.join("pagecache.tmp.1");
        for dir in [&dead, &live, &other] {
            std::fs::create_dir_all(dir).unwrap();
        }
        sweep_dead_stores(&base);
        assert!(!dead.exists(), "a dead process's store is removed");
        assert!(live.exists() && other.exists(), "live stores and other files stay");
        std::fs::remove_dir_all(&base).unwrap();
    }

    /// A state change that sets `balances` (nonce 0, no code) of their accounts.
    fn balances(balances: [(Address, u64); 2]) -> crate::state::StateDiff {
        use crate::records::EMPTY_CODE_HASH;
        use crate::state::{AccountChange, AccountFields, StateDiff};

        let mut diff = StateDiff::default();
        for (address, balance) in balances {
            let info = AccountFields {
                nonce: 0,
                balance: U256::from(balance),
                code_hash: EMPTY_CODE_HASH,
            };
            let change = AccountChange {
                info: Some(info),
                storage_wiped: false,
                storage: Default::default(),
            };
            diff.accounts.insert(address, change);
        }
        diff
    }

    /// Readers on several threads load snapshots while the writer commits blocks (applied
    /// late, as the state owner does) and reverts some of them, as evm_revert does. Each
    /// block moves value between two accounts, so their balances always sum to `TOTAL`, and
    /// stamps its header's timestamp with the second account's balance: a read that mixed two
    /// blocks would break the sum, the stamp, or the header's agreement with the head number,
    /// hash and state root.
    #[test]
    fn readers_see_whole_blocks_while_the_writer_commits_and_reverts() {
        for store in STORES {
            readers_see_whole_blocks_while_the_writer_commits_and_reverts_on(store().unwrap());
        }
    }

    fn readers_see_whole_blocks_while_the_writer_commits_and_reverts_on(writer: ChainWriter) {
        use std::sync::atomic::AtomicBool;

        use crate::{BlockDraft, BlockKeys, BlockWriter, revert_blocks};

        const TOTAL: u64 = 1_000_000;
        const READERS: usize = 4;
        let x = Address::repeat_byte(0x11);
        let y = Address::repeat_byte(0x22);
        let moved = |to_y: u64| balances([(x, TOTAL - to_y), (y, to_y)]);
        let draft = |number: u64, parent_hash: B256, stamp: u64| BlockDraft {
            header: Header { number, parent_hash, timestamp: stamp, ..Header::default() },
            body: StoredBody { transactions: Vec::new(), senders: Vec::new() },
            receipts: Vec::new(),
            touched: Vec::new(),
        };

        let mut blocks = BlockWriter::new(writer.clone(), 0);
        blocks.set_deferred_apply(true);
        let genesis = blocks.write(draft(0, B256::ZERO, 0), &moved(0)).unwrap();
        let stop = AtomicBool::new(false);
        let reads = AtomicU64::new(0);
        std::thread::scope(|scope| {
            for _ in 0..READERS {
                let reader = writer.reader();
                let (stop, reads) = (&stop, &reads);
                scope.spawn(move || {
                    while !stop.load(Ordering::Relaxed) {
                        // One request: every read below uses one snapshot.
                        let view = reader.pinned();
                        let head = view.head_number().expect("genesis is written");
                        let header = view.header(head).unwrap().expect("the head's header");
                        assert_eq!(header.number, head);
                        assert_eq!(view.block_hash(head).unwrap(), Some(header.hash_slow()));
                        assert_eq!(view.state_root_at(head).unwrap(), Some(header.state_root));
                        let state = view.state_at(head);
                        let balance =
                            |a| state.account(&a).unwrap().expect("written at genesis").balance;
                        let (in_x, in_y) = (balance(x), balance(y));
                        assert_eq!(in_x + in_y, U256::from(TOTAL), "block {head}: a torn read");
                        assert_eq!(
                            in_y,
                            U256::from(header.timestamp),
                            "block {head}: another block's state"
                        );
                        // The same reads from sled, past the snapshot's head block and
                        // account versions: a revert removes these very records meanwhile.
                        let store = view.uncached();
                        let stored = store.header(head).unwrap().expect("the head's header");
                        assert_eq!(stored, header, "block {head}: the stored header");
                        assert!(store.body(head).unwrap().is_some(), "block {head}: its body");
                        let state = store.state_at(head);
                        let balance =
                            |a| state.account(&a).unwrap().expect("written at genesis").balance;
                        assert_eq!((balance(x), balance(y)), (in_x, in_y), "block {head}: sled");
                        reads.fetch_add(1, Ordering::Relaxed);
                    }
                });
            }
            let mut hashes = vec![genesis.hash];
            let mut keys: Vec<BlockKeys> = Vec::new();
            let mut stamp = 0;
            for round in 0..400u64 {
                if round % 9 == 8 && hashes.len() > 4 {
                    // Back three blocks, with the deferred block applied first as the state
                    // owner does before a revert.
                    let target = hashes.len() as u64 - 4;
                    writer.settle().unwrap();
                    revert_blocks(&writer, target, &keys, &[]).unwrap();
                    hashes.truncate(target as usize + 1);
                    keys.retain(|k| k.number <= target);
                    continue;
                }
                stamp += 1;
                let number = hashes.len() as u64;
                let diff = moved(stamp);
                keys.push(BlockKeys::of(number, &diff));
                let block =
                    blocks.write(draft(number, *hashes.last().unwrap(), stamp), &diff).unwrap();
                hashes.push(block.hash);
                if round % 2 == 0 {
                    writer.settle().unwrap();
                }
            }
            stop.store(true, Ordering::Relaxed);
        });
        assert!(reads.load(Ordering::Relaxed) > 0, "the readers ran");
        // The last head is readable from the store alone, too.
        let head = writer.head_number().unwrap();
        let stored = writer.uncached().state_at(head).account(&y).unwrap().unwrap();
        assert_eq!(U256::from(writer.header(head).unwrap().unwrap().timestamp), stored.balance);
    }

    /// A request pinned to a snapshot reads none of the dev patches (and their reverts) that
    /// the writer makes while it runs, even from sled, where they overwrite the head block's
    /// records in place: each patch moves value between two accounts, and a reader reads
    /// both twice.
    #[test]
    fn a_request_reads_none_of_the_patches_made_while_it_runs() {
        for store in STORES {
            a_request_reads_none_of_the_patches_made_while_it_runs_on(store().unwrap());
        }
    }

    fn a_request_reads_none_of_the_patches_made_while_it_runs_on(writer: ChainWriter) {
        use std::sync::atomic::AtomicBool;

        use crate::{BlockDraft, BlockWriter, revert_blocks, write_patch};

        const TOTAL: u64 = 1_000_000;
        let (p, q) = (Address::repeat_byte(0x33), Address::repeat_byte(0x44));
        let moved = |to_q: u64| balances([(p, TOTAL - to_q), (q, to_q)]);
        let mut blocks = BlockWriter::new(writer.clone(), 0);
        let draft = BlockDraft {
            header: Header::default(),
            body: StoredBody { transactions: Vec::new(), senders: Vec::new() },
            receipts: Vec::new(),
            touched: Vec::new(),
        };
        blocks.write(draft, &moved(0)).unwrap();
        let stop = AtomicBool::new(false);
        let reads = AtomicU64::new(0);
        std::thread::scope(|scope| {
            for _ in 0..4 {
                let reader = writer.reader();
                let (stop, reads) = (&stop, &reads);
                scope.spawn(move || {
                    while !stop.load(Ordering::Relaxed) {
                        let view = reader.pinned().uncached();
                        let state = view.state_at(0);
                        let balance = |a| state.account(&a).unwrap().expect("at genesis").balance;
                        let (in_p, in_q) = (balance(p), balance(q));
                        assert_eq!(in_p + in_q, U256::from(TOTAL), "a torn read");
                        assert_eq!((balance(p), balance(q)), (in_p, in_q), "read twice");
                        reads.fetch_add(1, Ordering::Relaxed);
                    }
                });
            }
            let mut undo = Vec::new();
            for round in 1..=599u64 {
                if round % 50 == 0 {
                    revert_blocks(&writer, 0, &[], &undo).unwrap();
                    undo.clear();
                    continue;
                }
                undo.push(write_patch(&writer, &moved(round)).unwrap().1);
            }
            stop.store(true, Ordering::Relaxed);
        });
        assert!(reads.load(Ordering::Relaxed) > 0, "the readers ran");
        let head = writer.uncached().state_at(0);
        let q_now = head.account(&q).unwrap().unwrap().balance;
        assert_eq!(q_now, U256::from(599u64), "the last patch, read from sled");
    }

    /// anvil_reset's swap: a reader pinned before it reads the old chain to the end, every
    /// read after it the new one, records, head and generation together.
    #[test]
    fn a_replaced_chain_is_one_swap_for_readers() {
        use crate::records::EMPTY_CODE_HASH;
        use crate::state::{AccountChange, AccountFields, StateDiff};
        use crate::{BlockDraft, BlockWriter};

        let x = Address::repeat_byte(0x11);
        let chain_with = |blocks: u64, balance: u64| {
            let writer = ChainWriter::in_memory().unwrap();
            let mut block_writer = BlockWriter::new(writer.clone(), 0);
            let mut parent = B256::ZERO;
            for number in 0..blocks {
                let mut diff = StateDiff::default();
                let info = AccountFields {
                    nonce: number,
                    balance: U256::from(balance),
                    code_hash: EMPTY_CODE_HASH,
                };
                let change = AccountChange {
                    info: Some(info),
                    storage_wiped: false,
                    storage: Default::default(),
                };
                diff.accounts.insert(x, change);
                let draft = BlockDraft {
                    header: Header { number, parent_hash: parent, ..Header::default() },
                    body: StoredBody { transactions: Vec::new(), senders: Vec::new() },
                    receipts: Vec::new(),
                    touched: Vec::new(),
                };
                parent = block_writer.write(draft, &diff).unwrap().hash;
            }
            writer
        };
        let writer = chain_with(3, 7);
        let reader = writer.reader();
        let before = reader.pinned();
        let old_generation = reader.generation();
        writer.replace_chain(chain_with(1, 9)).unwrap();
        assert_eq!(before.head_number(), Some(2), "the pinned reader stays on the old chain");
        assert_eq!(before.account(&x, 2).unwrap().unwrap().balance, U256::from(7));
        assert!(before.header(2).unwrap().is_some());
        assert_eq!(reader.head_number(), Some(0), "a live reader sees the new chain");
        assert_eq!(reader.account(&x, 0).unwrap().unwrap().balance, U256::from(9));
        assert!(reader.header(2).unwrap().is_none(), "nothing of the old chain");
        assert_ne!(reader.generation(), old_generation);
        // The writer commits on the new chain.
        let mut blocks = BlockWriter::new(writer.clone(), 0);
        let parent = writer.block_hash(0).unwrap().unwrap();
        let draft = BlockDraft {
            header: Header { number: 1, parent_hash: parent, ..Header::default() },
            body: StoredBody { transactions: Vec::new(), senders: Vec::new() },
            receipts: Vec::new(),
            touched: Vec::new(),
        };
        blocks.write(draft, &StateDiff::default()).unwrap();
        assert_eq!(reader.head_number(), Some(1));
        assert_eq!(before.head_number(), Some(2));
    }

    #[test]
    fn a_temporary_store_lives_under_a_name_the_sweep_knows() {
        let next = temporary_store_dir();
        let name = next.file_name().unwrap().to_str().unwrap().to_owned();
        assert!(name.starts_with(&format!("hearth-mem-{}-", std::process::id())), "{name}");
    }
}

/// The safe and finalized blocks of the last forkchoice update, each by number and hash.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ForkchoiceMarks {
    /// The safe block, when one was named.
    pub safe: Option<(u64, B256)>,
    /// The finalized block, when one was named.
    pub finalized: Option<(u64, B256)>,
}

impl ForkchoiceMarks {
    /// Both marks cut back to `head` and below: a mark above it was rewound away.
    #[must_use]
    pub fn at_most(self, head: u64) -> Self {
        let keep = |mark: Option<(u64, B256)>| mark.filter(|(number, _)| *number <= head);
        Self { safe: keep(self.safe), finalized: keep(self.finalized) }
    }

    fn encode(self) -> [u8; 80] {
        let mut bytes = [0u8; 80];
        for (i, mark) in [self.safe, self.finalized].into_iter().enumerate() {
            if let Some((number, hash)) = mark {
                bytes[i * 40..i * 40 + 8].copy_from_slice(&number.to_be_bytes());
                bytes[i * 40 + 8..i * 40 + 40].copy_from_slice(hash.as_slice());
            }
        }
        bytes
    }

    fn decode(bytes: &[u8]) -> Option<Self> {
        if bytes.len() != 80 {
            return None;
        }
        let mark = |i: usize| {
            let number = u64::from_be_bytes(bytes[i * 40..i * 40 + 8].try_into().ok()?);
            let hash = B256::from_slice(&bytes[i * 40 + 8..i * 40 + 40]);
            Some((!hash.is_zero()).then_some((number, hash)))
        };
        Some(Self { safe: mark(0)?, finalized: mark(1)? })
    }
}
