//! `ChainDb`: the handle to Hearth's store, and the read API every component shares.
//!
//! Reads are lock-free for the caller: sled serves concurrent readers, and every record a
//! reader can see at block N is immutable once block N is committed (later blocks write new
//! versions under larger keys). The head number is published through an atomic only after the
//! block's batch is durable, so a reader that loads the head sees a whole block or none of it.

use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, RwLock};
use std::time::Duration;

use alloy_consensus::{Header, ReceiptEnvelope};
use alloy_primitives::{Address, B256, Bytes, U256};
use alloy_rlp::Decodable;

use crate::account_cache::{AccountCache, AccountChanges};
use crate::journal::Journal;
use crate::layout::{self, be_u64};
use crate::overlay::Overlay;
use crate::records::{BlockExtras, StoredAccount, StoredBody};
use crate::trie::NodeSource;
use crate::{StorageError, WriteBatch};

/// Shared handle to the store. Cheap to clone; every clone sees the same data and head.
#[derive(Debug, Clone)]
pub struct ChainDb {
    db: sled::Db,
    /// The last committed block, or `u64::MAX` before genesis.
    head: Arc<AtomicU64>,
    /// The write side: numbers commits, makes them durable on disk and applies them to sled.
    /// Only the state owner commits, so the lock is never contended.
    journal: Arc<Mutex<Journal>>,
    /// The committed block not yet applied to sled, if any; every read looks here first.
    overlay: Arc<Overlay>,
    /// The last block committed, decoded: every transaction and call reads the head's header
    /// and state root (the next block's parent, the base fee, the call's environment), and a
    /// sled lookup with an RLP decode cost microseconds each time. Set by block commits,
    /// cleared by patches and reverts (which change the head's root or the head itself).
    head_block: Arc<RwLock<Option<Arc<HeadBlock>>>>,
    /// The newest version of recently written accounts (`account_cache`).
    accounts: Arc<AccountCache>,
    /// The upstream state under a forked chain (`fork`), read where no local record exists.
    fork: Option<Arc<dyn crate::ForkSource>>,
}

/// What [`ChainDb::head_block`] keeps of the last block committed.
#[derive(Debug)]
pub(crate) struct HeadBlock {
    pub(crate) header: Header,
    pub(crate) hash: B256,
}

const NO_HEAD: u64 = u64::MAX;

/// Blocks of at most this many keys go into sled key by key; larger ones as one sled batch.
/// A sled batch has a fixed cost (it seals sled's IO buffer twice, waking every idle IO
/// thread each time: `WriteBatch::apply_in_order`; one sender's transfers ran 18% faster key by
/// key) but costs less per key: the trie bench's 1,000-account blocks (~4,500 keys) took a
/// median 59 ms to apply key by key and 43-55 ms as a batch (BENCHMARKS.md).
const IN_ORDER_MAX_OPS: usize = 128;

/// The page cache a store opens with: a cap on the pages sled keeps decoded in memory, not an
/// allocation (a small state uses what it needs). sled's own default is 1 GiB; a state of a
/// million accounts is a ~2 GB store, and with 1 GiB its block writes spend a third of their
/// time reading evicted pages back (1,000-account block: 118 ms with 1 GiB, 78 ms with 4 GiB;
/// BENCHMARKS.md). Stores larger than the cache still work, they only read more. The node
/// itself opens with `--cache.db` (128 MiB by default), which keeps a dev node's memory flat
/// under sustained ingest; import, export and the benches use this default.
pub const DEFAULT_PAGE_CACHE_BYTES: u64 = 4 * 1024 * 1024 * 1024;

/// Where the next in-memory store keeps its files: `hearth-mem-PID-N` in `/dev/shm` (RAM) when
/// there is one, else the temp dir. sled removes a temporary store when it is dropped, but a
/// process that exits without dropping it (a killed node, a test binary whose actors still
/// hold the store) used to leave sled's `pagecache.tmp.*` behind in /dev/shm, in RAM, for good:
/// 13 GB of them after a day of test runs here. So each process first removes the stores of
/// processes that no longer run. Every temporary sled store of the node (the chain's, the fork
/// cache's) is placed here, so one sweep covers them all.
pub fn temporary_store_dir() -> std::path::PathBuf {
    static SWEPT: std::sync::Once = std::sync::Once::new();
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let shm = Path::new("/dev/shm");
    let base = if shm.is_dir() { shm.to_path_buf() } else { std::env::temp_dir() };
    SWEPT.call_once(|| sweep_dead_stores(&base));
    let n = NEXT.fetch_add(1, Ordering::Relaxed);
    base.join(format!("hearth-mem-{}-{n}", std::process::id()))
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

impl ChainDb {
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
        let overlay = Arc::new(Overlay::default());
        let (journal, replayed) = Journal::open(path, &db, Arc::clone(&overlay))?;
        if replayed > 0 {
            tracing::info!(target: "storage", replayed, "replayed commits the journal held after an unclean stop");
        }
        Self::from_db(db, journal, overlay)
    }

    /// A store that lives in memory only (tests), with the default page cache.
    pub fn in_memory() -> Result<Self, StorageError> {
        Self::in_memory_with_cache(DEFAULT_PAGE_CACHE_BYTES)
    }

    /// A store that lives in memory only (`--ephemeral`), whose page cache holds up to
    /// `cache_bytes`.
    pub fn in_memory_with_cache(cache_bytes: u64) -> Result<Self, StorageError> {
        let db = sled::Config::new()
            .path(temporary_store_dir())
            .temporary(true)
            .cache_capacity(cache_bytes)
            .open()?;
        let overlay = Arc::new(Overlay::default());
        let journal = Journal::in_memory(&db, Arc::clone(&overlay))?;
        Self::from_db(db, journal, overlay)
    }

    fn from_db(
        db: sled::Db,
        journal: Journal,
        overlay: Arc<Overlay>,
    ) -> Result<Self, StorageError> {
        let head = match db.get(layout::HEAD_KEY)? {
            Some(v) => be_u64(&v).ok_or(StorageError::Corrupt { what: "head pointer" })?,
            None => NO_HEAD,
        };
        Ok(Self {
            db,
            head: Arc::new(AtomicU64::new(head)),
            journal: Arc::new(Mutex::new(journal)),
            overlay,
            head_block: Arc::default(),
            accounts: Arc::default(),
            fork: None,
        })
    }

    /// This store over the upstream state `fork` (`--fork-url`): accounts, slots, code and
    /// block hashes it has no record of are read from there. Set before the store is shared.
    #[must_use]
    pub fn with_fork(mut self, fork: Arc<dyn crate::ForkSource>) -> Self {
        self.fork = Some(fork);
        self
    }

    /// The forked base, when this store is a fork's.
    pub fn fork(&self) -> Option<&Arc<dyn crate::ForkSource>> {
        self.fork.as_ref()
    }

    /// The number of the last committed block, or `None` before genesis.
    pub fn head_number(&self) -> Option<u64> {
        match self.head.load(Ordering::Acquire) {
            NO_HEAD => None,
            n => Some(n),
        }
    }

    /// Makes `batch` durable, applies it atomically (readers see all of it or none), then
    /// publishes `number` as head. For dev patches and reverts, which rewrite records a
    /// reader at the head may be reading.
    ///
    /// Only the state owner commits. The journal append is what makes "acknowledged" mean
    /// "survives kill -9" (see `journal`): sled alone would keep the batch in its buffers
    /// until its next flush.
    pub fn commit_batch(&self, batch: WriteBatch, number: u64) -> Result<(), StorageError> {
        self.commit(batch, number, false, false, None).map(drop)
    }

    /// Makes a new block's `batch` durable, applies it (small blocks key by key, in order,
    /// large ones as one sled batch: [`IN_ORDER_MAX_OPS`]), then publishes `number` as head;
    /// returns how long applying and making durable took. A reader can see a small block's
    /// first keys before its last, so `batch` puts what makes it reachable (the header, the
    /// hash and transaction indexes, the head pointer) after what they point to; nothing a
    /// reader at an earlier head reads is rewritten.
    ///
    /// With `defer`, applying waits for [`Self::settle`] (or the next commit): the block is
    /// durable and every reader sees it through the overlay (`overlay`) meanwhile, so the
    /// state owner can answer before it spends the apply's ~100 µs.
    pub(crate) fn commit_block_timed(
        &self,
        batch: WriteBatch,
        block: HeadBlock,
        defer: bool,
    ) -> Result<(Duration, Duration), StorageError> {
        let in_order = batch.len() <= IN_ORDER_MAX_OPS;
        let number = block.header.number;
        self.commit(batch, number, in_order, defer, Some(block))
    }

    /// Journal and apply (`journal`), publish, then checkpoint when due. The head moves
    /// before the checkpoint: the block is durable already, and a failed checkpoint is only
    /// retried after the next commit. `block` is the new head block (`None`: a patch or
    /// revert, after which the head's header or root is read from the store again).
    fn commit(
        &self,
        batch: WriteBatch,
        number: u64,
        in_order: bool,
        defer: bool,
        block: Option<HeadBlock>,
    ) -> Result<(Duration, Duration), StorageError> {
        let mut journal = self.journal()?;
        // While the batch becomes visible, readers of what it changes ask the store, which
        // shows all of it or none: the head's header and root after a patch or revert, the
        // accounts it writes (a patch rewrites the head's own versions). Cached again after.
        let _writing = self.accounts.writing();
        let changes = AccountChanges::of(&batch);
        self.accounts.forget(&changes);
        if block.is_none()
            && let Ok(mut head_block) = self.head_block.write()
        {
            *head_block = None;
        }
        let timings =
            journal.commit(batch, in_order, defer).inspect_err(|_| self.accounts.clear())?;
        self.accounts.record(changes);
        // Before the head moves: a reader that sees the new head finds its block here.
        if let Some(block) = block
            && let Ok(mut head_block) = self.head_block.write()
        {
            *head_block = Some(Arc::new(block));
        }
        self.head.store(number, Ordering::Release);
        journal.checkpoint_if_due();
        Ok(timings)
    }

    /// Applies a deferred block to sled (one written by a [`crate::BlockWriter`] with a
    /// deferred apply), then checkpoints when due; returns how long applying took. The state
    /// owner calls it once it has answered the block's commit.
    pub fn settle(&self) -> Result<Duration, StorageError> {
        let mut journal = self.journal()?;
        let took = journal.settle()?;
        journal.checkpoint_if_due();
        Ok(took)
    }

    /// Applies what is deferred, flushes sled and empties the journal now (shutdown,
    /// benchmarks). Commits do this by themselves every thousand blocks or so.
    pub fn checkpoint(&self) -> Result<(), StorageError> {
        self.journal()?.checkpoint()
    }

    /// The journal, locked. A poisoned lock means a commit panicked half-way: nothing more is
    /// committed or checkpointed.
    fn journal(&self) -> Result<std::sync::MutexGuard<'_, Journal>, StorageError> {
        self.journal.lock().map_err(|_| StorageError::Corrupt {
            what: "commit journal (an earlier commit panicked)",
        })
    }

    /// The value of `key`: the deferred block's, else sled's (in that order: see `overlay`).
    fn get(&self, key: &[u8]) -> Result<Option<sled::IVec>, StorageError> {
        match self.overlay.get(key)? {
            Some(value) => Ok(Some(value)),
            None => Ok(self.db.get(key)?),
        }
    }

    /// The entry with the largest key in `from..=to` (the newest version at or before a
    /// block), from the deferred block and sled together.
    fn last_in(
        &self,
        from: &[u8],
        to: &[u8],
    ) -> Result<Option<(sled::IVec, sled::IVec)>, StorageError> {
        let deferred = self.overlay.last_in(from, to)?.map(|(key, value)| (key.into(), value));
        let stored = self.db.range(from..=to).next_back().transpose()?;
        Ok(match (deferred, stored) {
            (Some(deferred), Some(stored)) => {
                Some(if deferred.0 >= stored.0 { deferred } else { stored })
            }
            (found, None) | (None, found) => found,
        })
    }

    /// This store without its head-block and account caches: every read goes to the overlay
    /// and sled (tests compare both paths).
    #[cfg(test)]
    pub(crate) fn uncached(&self) -> Self {
        Self {
            head_block: Arc::default(),
            accounts: Arc::new(AccountCache::never_filled()),
            ..self.clone()
        }
    }

    /// The last block committed, when it is block `number`.
    fn head_block(&self, number: u64) -> Option<Arc<HeadBlock>> {
        let head_block = self.head_block.read().ok()?;
        head_block.as_ref().filter(|b| b.header.number == number).cloned()
    }

    /// The header of block `number`.
    pub fn header(&self, number: u64) -> Result<Option<Header>, StorageError> {
        if let Some(block) = self.head_block(number) {
            return Ok(Some(block.header.clone()));
        }
        self.decode(&layout::number_key(layout::HEADER, number), "header")
    }

    /// The hash of block `number`.
    pub fn block_hash(&self, number: u64) -> Result<Option<B256>, StorageError> {
        if let Some(block) = self.head_block(number) {
            return Ok(Some(block.hash));
        }
        let local = self
            .get(&layout::number_key(layout::HASH_BY_NUMBER, number))?
            .map(|v| B256::from_slice(&v));
        match (local, &self.fork) {
            // Blocks below a fork are the upstream's.
            (None, Some(fork)) if number < fork.block() => fork.block_hash(number),
            (local, _) => Ok(local),
        }
    }

    /// The number of the block with hash `hash`.
    pub fn block_number(&self, hash: &B256) -> Result<Option<u64>, StorageError> {
        match self.get(&layout::hash_key(layout::NUMBER_BY_HASH, hash))? {
            Some(v) => Ok(Some(be_u64(&v).ok_or(StorageError::Corrupt { what: "block index" })?)),
            None => Ok(None),
        }
    }

    /// The transactions and senders of block `number`.
    pub fn body(&self, number: u64) -> Result<Option<StoredBody>, StorageError> {
        self.decode_chunked(&layout::number_key(layout::BODY, number), "block body")
    }

    /// The receipts of block `number`.
    pub fn receipts(&self, number: u64) -> Result<Option<Vec<ReceiptEnvelope>>, StorageError> {
        self.decode_chunked(&layout::number_key(layout::RECEIPTS, number), "receipts")
    }

    /// The ommers and withdrawals of block `number` (empty when none were stored).
    pub fn extras(&self, number: u64) -> Result<BlockExtras, StorageError> {
        Ok(self
            .decode(&layout::number_key(layout::EXTRAS, number), "block extras")?
            .unwrap_or_default())
    }

    /// The chain configuration stored by an import (`None` for a dev chain).
    pub fn chain_config(&self) -> Result<Option<Vec<u8>>, StorageError> {
        Ok(self.db.get(layout::CHAIN_CONFIG_KEY)?.map(|v| v.to_vec()))
    }

    /// Stores the chain configuration the node must run this chain under, durably.
    pub fn set_chain_config(&self, config: &[u8]) -> Result<(), StorageError> {
        self.db.insert(layout::CHAIN_CONFIG_KEY, config)?;
        self.db.flush()?;
        Ok(())
    }

    /// The genesis document (geth's genesis.json) block 0 was made from; `None` for a chain
    /// written before Hearth kept it.
    pub fn genesis_document(&self) -> Result<Option<Vec<u8>>, StorageError> {
        Ok(self.db.get(layout::GENESIS_DOCUMENT_KEY)?.map(|v| v.to_vec()))
    }

    /// Stores the genesis document, durably. Written before block 0, so that a store holding
    /// a block 0 has its document too (a document without block 0 is replaced at next start).
    pub fn set_genesis_document(&self, document: &[u8]) -> Result<(), StorageError> {
        self.db.insert(layout::GENESIS_DOCUMENT_KEY, document)?;
        self.db.flush()?;
        Ok(())
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
            None => Ok(None),
        }
    }

    /// The account at `address` as of block `number` (`None`: it does not exist).
    pub fn account(
        &self,
        address: &Address,
        number: u64,
    ) -> Result<Option<StoredAccount>, StorageError> {
        if let Some(account) = self.accounts.get(address, number) {
            return Ok(account);
        }
        // A read at or after the head, with no commit under way, finds the newest version
        // of all: worth keeping for the next reads (`account_cache`).
        // The generation first: a commit that ends after it changes it, one that ended before
        // it has moved the head already.
        let generation = self.accounts.stable();
        let at_head = self.head_number().is_none_or(|head| number >= head);
        let stable = generation.filter(|_| at_head);
        let from = layout::account_key(address, 0);
        let to = layout::account_key(address, number);
        let (block, account) = match self.last_in(&from, &to)? {
            Some((key, value)) => {
                let (_, block) = layout::account_key_parts(&key)
                    .ok_or(StorageError::Corrupt { what: "account key" })?;
                if value.is_empty() {
                    (block, None)
                } else {
                    let account = StoredAccount::decode(&mut value.as_ref())
                        .map_err(|source| StorageError::Decode { what: "account", source })?;
                    (block, Some(account))
                }
            }
            // Never written here: a fork's account is the upstream's at the fork block, with
            // the fork block as its incarnation so that its slots are read upstream too.
            None => match &self.fork {
                Some(fork) => (
                    0,
                    fork.account(address)?.map(|a| StoredAccount {
                        nonce: a.nonce,
                        balance: a.balance,
                        code_hash: a.code_hash,
                        // The local trie holds what local blocks wrote (ARCHITECTURE.md).
                        storage_root: crate::trie::EMPTY_ROOT,
                        incarnation: fork.block(),
                    }),
                ),
                None => (0, None),
            },
        };
        if let Some(generation) = stable {
            self.accounts.fill(address, generation, block, account.clone());
        }
        Ok(account)
    }

    /// A storage slot of the account's `incarnation` as of block `number`.
    pub fn storage(
        &self,
        address: &Address,
        incarnation: u64,
        slot: &U256,
        number: u64,
    ) -> Result<U256, StorageError> {
        let from = layout::storage_key(address, incarnation, slot, 0);
        let to = layout::storage_key(address, incarnation, slot, number);
        match self.last_in(&from, &to)? {
            Some((_, value)) => Ok(U256::try_from_be_slice(&value).unwrap_or_default()),
            // The storage the account had at the fork block, not wiped since: the upstream's.
            None => match &self.fork {
                Some(fork) if incarnation == fork.block() => fork.storage(address, slot),
                _ => Ok(U256::ZERO),
            },
        }
    }

    /// Contract code by its hash.
    pub fn code(&self, code_hash: &B256) -> Result<Option<Bytes>, StorageError> {
        match self.get(&layout::hash_key(layout::CODE, code_hash))? {
            Some(v) => Ok(Some(Bytes::copy_from_slice(&v))),
            None => match &self.fork {
                Some(fork) => fork.code(code_hash),
                None => Ok(None),
            },
        }
    }

    /// The root of the state as of block `number`: the header's, or the one dev patches left.
    pub fn state_root_at(&self, number: u64) -> Result<Option<B256>, StorageError> {
        // A block just committed has no patched root; a patch clears `head_block`.
        if let Some(block) = self.head_block(number) {
            return Ok(Some(block.header.state_root));
        }
        if let Some(root) = self.get(&layout::number_key(layout::PATCHED_ROOT, number))? {
            if root.len() != 32 {
                return Err(StorageError::Corrupt { what: "patched state root" });
            }
            return Ok(Some(B256::from_slice(&root)));
        }
        Ok(self.header(number)?.map(|h| h.state_root))
    }

    /// A raw record by key (patches and reverts record what they overwrite).
    pub(crate) fn raw_get(&self, key: &[u8]) -> Result<Option<Vec<u8>>, StorageError> {
        Ok(self.get(key)?.map(|v| v.to_vec()))
    }

    /// A read-only view of the state as of block `number`.
    pub fn state_at(&self, number: u64) -> crate::StateView {
        crate::StateView::new(self.clone(), number)
    }

    /// Like `decode`, for a record stored in chunks (`layout::chunks`).
    fn decode_chunked<T: Decodable>(
        &self,
        key: &[u8],
        what: &'static str,
    ) -> Result<Option<T>, StorageError> {
        let deferred = self.overlay.with_prefix(key)?;
        let value = if deferred.is_empty() {
            layout::chunks::get(&self.db, key)?
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
        let mut keys: std::collections::BTreeSet<sled::IVec> =
            self.overlay.with_prefix(prefix)?.into_iter().map(|(key, _)| key.into()).collect();
        for key in self.db.scan_prefix(prefix).keys() {
            keys.insert(key?);
        }
        Ok(keys.into_iter().collect())
    }

    /// The keys under `prefix` of the committed block not yet applied to sled (`slots`).
    pub(crate) fn deferred_keys(&self, prefix: &[u8]) -> Result<Vec<Vec<u8>>, StorageError> {
        Ok(self.overlay.with_prefix(prefix)?.into_iter().map(|(key, _)| key).collect())
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
        let mut from = vec![prefix];
        while let Some(key) = self.db.range(from.as_slice()..).keys().next() {
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
            for version in self.db.range(start.as_slice()..=last.as_slice()).keys() {
                found.push(version?);
            }
            // Past every version of this identity.
            from = last;
            from.push(0);
        }
        Ok(found)
    }

    /// The sled tree itself: what has been applied to it (tests; `slots`, which seeks by key;
    /// the state dump, which settles the deferred block first).
    pub(crate) const fn sled(&self) -> &sled::Db {
        &self.db
    }

    fn decode<T: Decodable>(
        &self,
        key: &[u8],
        what: &'static str,
    ) -> Result<Option<T>, StorageError> {
        match self.get(key)? {
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

    #[test]
    fn an_in_memory_store_lives_under_a_name_the_sweep_knows() {
        let db = ChainDb::in_memory().unwrap();
        drop(db);
        let next = temporary_store_dir();
        let name = next.file_name().unwrap().to_str().unwrap().to_owned();
        assert!(name.starts_with(&format!("hearth-mem-{}-", std::process::id())), "{name}");
    }
}
