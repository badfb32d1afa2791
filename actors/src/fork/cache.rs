//! The fork cache: every value fetched from a fork's upstream, in sled, apart from the chain.
//!
//! One sled database (default `~/.hearth/fork-cache`) holds a tree of metadata per upstream
//! endpoint (chain id, headers, block hashes) and a tree of state per (endpoint, chain id, fork
//! block), so a restart, a second run or a fork of another block never mixes values up. The
//! backend actor is the only writer; readers (executor threads) read the trees directly.
//!
//! Writes go key by key through `KeyWrites`, never as a sled batch: a batch would switch on
//! sled's process-wide lock, which the chain's readers would then take on every read (the
//! lock is global, so this separate database counts too; `hearth_storage::KeyWrites`). No
//! atomicity is lost that matters: every cached value is self-contained (an upstream value at
//! the fork block, correct on its own), so a write cut short by a crash, or seen half-done by
//! a reader, leaves values that are each right and others merely not cached yet. The one
//! record that speaks for others, a storage page's marker, is written after its entries.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use alloy_consensus::{Header, ReceiptEnvelope};
use alloy_primitives::{Address, B256, Bytes, U256, keccak256};
use alloy_rlp::{Decodable, RlpDecodable, RlpEncodable};
use hearth_storage::{
    BlockExtras, ForkedAccount, KeyWrites, LogQuery, ProofQuery, SimulateQuery, StoredBody,
};

/// What the cache could not do.
#[derive(Debug, thiserror::Error)]
pub enum ForkCacheError {
    /// sled failed.
    #[error("fork cache: {0}; check --fork.cache-dir or run with --no-fork-cache")]
    Db(#[from] sled::Error),
    /// A cached record has the wrong shape.
    #[error("fork cache: a cached {0} is malformed; delete the --fork.cache-dir directory")]
    Corrupt(&'static str),
}

/// The fork cache's sled database and the trees of one upstream endpoint.
#[derive(Debug, Clone)]
pub struct ForkCache {
    db: sled::Db,
    endpoint: B256,
    meta: sled::Tree,
    state: Option<sled::Tree>,
    /// The chain id the state tree was pinned with (historical state trees are named by it).
    chain_id: Option<u64>,
    /// Where it lives (`None`: in memory).
    path: Option<PathBuf>,
    /// Bytes it may still write (`--fork.cache-size` less its size when opened and the keys
    /// and values written since); a write that does not fit is skipped.
    room: Arc<AtomicU64>,
    /// Whether a skipped write was logged already.
    full_logged: Arc<AtomicBool>,
}

/// Key prefixes. Meta tree: chain id, headers, block hashes. State tree: accounts, slots, code.
const CHAIN_ID: &[u8] = b"c";
const HEADER: u8 = b'H';
const BLOCK_HASH: u8 = b'h';
const ACCOUNT: u8 = b'a';
const SLOT: u8 = b's';
const CODE: u8 = b'k';
/// Meta tree: number -> the block's transaction count.
const TX_COUNT: u8 = b'n';
/// State tree: address -> whether a storage page was fetched for it: `1` the page held the
/// whole storage (a slot it lacks is zero), `0` only part of it.
const RANGE: u8 = b'r';
/// State tree: address + keccak(slot) -> value, from a storage page without slot preimages.
const HASHED_SLOT: u8 = b'z';
/// Meta tree, history below a fork block (immutable, so shared by forks of any later block):
/// number -> a block's body and extras; number -> its receipts; hash -> a block's number;
/// hash -> a transaction's block number and index; keccak(query) -> a logs answer;
/// keccak(query) -> an eth_getProof answer; keccak(query) -> an eth_simulateV1 answer.
const BODY: u8 = b'B';
const RECEIPTS: u8 = b'R';
const NUMBER_OF: u8 = b'N';
const TX_AT: u8 = b'T';
const LOGS: u8 = b'L';
const PROOF: u8 = b'P';
const SIMULATED: u8 = b'S';
/// Meta tree: number -> the total difficulty the upstream reported with the block; number ->
/// the size it reported.
const TOTAL_DIFFICULTY: u8 = b'D';
const SIZE: u8 = b'Z';
/// State tree: kind (`NUMBER_OF` or `TX_AT`) + hash -> nothing: the upstream had no such block
/// or transaction below this fork block (another fork block may).
const ABSENT: u8 = b'x';

/// What the meta tree keeps of a block's body.
#[derive(RlpEncodable, RlpDecodable)]
struct CachedBody {
    body: StoredBody,
    extras: BlockExtras,
}

/// Which location a hash is looked up for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LocationKind {
    /// A block's number by its hash.
    Block,
    /// A transaction's block number and index by its hash.
    Transaction,
}

impl LocationKind {
    const fn prefix(self) -> u8 {
        match self {
            Self::Block => NUMBER_OF,
            Self::Transaction => TX_AT,
        }
    }
}

/// One entry of a fetched storage page: the hashed slot, the slot itself when the upstream
/// gave it, and the value.
pub type PageEntry = (B256, Option<U256>, U256);

impl ForkCache {
    /// Opens the cache in `dir` for the upstream `url`, writing at most `max_bytes` in all;
    /// when `dir` is `None` or cannot be opened (another process holds it), an in-memory cache
    /// instead, with the reason it fell back.
    pub fn open(dir: Option<&Path>, url: &str, max_bytes: u64) -> (Self, Option<String>) {
        let endpoint = keccak256(url.as_bytes());
        if let Some(dir) = dir {
            let opened = std::fs::create_dir_all(dir).map_err(|e| e.to_string()).and_then(|()| {
                sled::Config::new()
                    .path(dir)
                    .flush_every_ms(Some(200))
                    .open()
                    .map_err(|e| e.to_string())
            });
            let opened = opened
                .and_then(|db| Self::with_db(db, endpoint, Some(dir.to_path_buf()), max_bytes));
            match opened {
                Ok(cache) => return (cache, None),
                Err(reason) => {
                    let why = format!("cannot open {}: {reason}", dir.display());
                    return (Self::in_memory(endpoint, max_bytes), Some(why));
                }
            }
        }
        (Self::in_memory(endpoint, max_bytes), None)
    }

    fn in_memory(endpoint: B256, max_bytes: u64) -> Self {
        // In /dev/shm where the machine has it, named so that a later process removes it if
        // this one dies without dropping it (as the chain's own in-memory stores).
        let path = hearth_storage::temporary_store_dir();
        let db = sled::Config::new().path(path).temporary(true).open();
        let opened = db.map_err(|e| e.to_string());
        match opened.and_then(|db| Self::with_db(db, endpoint, None, max_bytes)) {
            Ok(cache) => cache,
            // A temporary store that cannot even be created leaves nothing to fall back on.
            Err(reason) => panic!("cannot create an in-memory fork cache: {reason}"),
        }
    }

    fn with_db(
        db: sled::Db,
        endpoint: B256,
        path: Option<PathBuf>,
        max_bytes: u64,
    ) -> Result<Self, String> {
        let meta = db.open_tree(format!("meta-{endpoint}")).map_err(|e| e.to_string())?;
        let used = db.size_on_disk().map_err(|e| e.to_string())?;
        let room = Arc::new(AtomicU64::new(max_bytes.saturating_sub(used)));
        Ok(Self {
            db,
            endpoint,
            meta,
            state: None,
            chain_id: None,
            path,
            room,
            full_logged: Arc::default(),
        })
    }

    /// The same cache database, for the upstream `url` (anvil_reset to another upstream, or
    /// to another block of this one): no second open of the directory, whose lock this process
    /// already holds, and the same room. Not pinned to a block yet.
    pub fn for_endpoint(&self, url: &str) -> Result<Self, ForkCacheError> {
        let endpoint = keccak256(url.as_bytes());
        let meta = self.db.open_tree(format!("meta-{endpoint}"))?;
        Ok(Self { endpoint, meta, state: None, chain_id: None, ..self.clone() })
    }

    /// Takes `bytes` of the room left; `false` (and nothing taken) when they do not fit.
    fn fits(&self, bytes: usize) -> bool {
        let bytes = bytes as u64;
        let fits = self
            .room
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |room| room.checked_sub(bytes))
            .is_ok();
        if !fits && !self.full_logged.swap(true, Ordering::Relaxed) {
            tracing::warn!(
                target: "actors::fork",
                "the fork cache is full (--fork.cache-size): values fetched from now on are not kept"
            );
        }
        fits
    }

    /// Where the cache lives on disk (`None`: in memory).
    pub fn path(&self) -> Option<&Path> {
        self.path.as_deref()
    }

    /// Opens the state tree of `block` of chain `chain_id` at this endpoint.
    pub fn pin(&mut self, chain_id: u64, block: u64) -> Result<(), ForkCacheError> {
        self.state = Some(self.state_tree(chain_id, block)?);
        self.chain_id = Some(chain_id);
        Ok(())
    }

    fn state_tree(&self, chain_id: u64, block: u64) -> Result<sled::Tree, ForkCacheError> {
        Ok(self.db.open_tree(format!("state-{}-{chain_id}-{block}", self.endpoint))?)
    }

    /// The state tree of upstream block `number` of the pinned chain, for the historical
    /// state below the fork block: a value at a fixed block never changes, so it is kept
    /// under (endpoint, chain id, block) like the fork block's own state, and a fork of that
    /// very block later finds it.
    pub fn historical(&self, number: u64) -> Result<HistoricalState<'_>, ForkCacheError> {
        let chain_id =
            self.chain_id.ok_or(ForkCacheError::Corrupt("state before the fork was pinned"))?;
        Ok(HistoricalState { cache: self, tree: self.state_tree(chain_id, number)? })
    }

    /// Whether the state tree is open.
    pub const fn is_pinned(&self) -> bool {
        self.state.is_some()
    }

    fn state(&self) -> Result<&sled::Tree, ForkCacheError> {
        self.state.as_ref().ok_or(ForkCacheError::Corrupt("state before the fork was pinned"))
    }

    /// The cached chain id.
    pub fn chain_id(&self) -> Result<Option<u64>, ForkCacheError> {
        match self.meta.get(CHAIN_ID)? {
            Some(v) => Ok(Some(u64_from(&v).ok_or(ForkCacheError::Corrupt("chain id"))?)),
            None => Ok(None),
        }
    }

    /// Caches the chain id.
    pub fn put_chain_id(&self, chain_id: u64) -> Result<(), ForkCacheError> {
        if !self.fits(9) {
            return Ok(());
        }
        KeyWrites::new(&self.meta).insert(CHAIN_ID, &chain_id.to_be_bytes()[..])?;
        Ok(())
    }

    /// A cached header and its upstream hash.
    pub fn header(&self, number: u64) -> Result<Option<(Header, B256)>, ForkCacheError> {
        let Some(v) = self.meta.get(number_key(HEADER, number))? else { return Ok(None) };
        if v.len() < 32 {
            return Err(ForkCacheError::Corrupt("header"));
        }
        let hash = B256::from_slice(&v[..32]);
        let header =
            Header::decode(&mut &v[32..]).map_err(|_| ForkCacheError::Corrupt("header"))?;
        Ok(Some((header, hash)))
    }

    /// Caches a header with its upstream hash.
    pub fn put_header(&self, header: &Header, hash: B256) -> Result<(), ForkCacheError> {
        let mut v = hash.to_vec();
        v.extend_from_slice(&alloy_rlp::encode(header));
        if !self.fits(9 + v.len()) {
            return Ok(());
        }
        KeyWrites::new(&self.meta).insert(&number_key(HEADER, header.number)[..], v)?;
        self.put_block_hash(header.number, hash)
    }

    /// A cached block hash.
    pub fn block_hash(&self, number: u64) -> Result<Option<B256>, ForkCacheError> {
        match self.meta.get(number_key(BLOCK_HASH, number))? {
            Some(v) if v.len() == 32 => Ok(Some(B256::from_slice(&v))),
            Some(_) => Err(ForkCacheError::Corrupt("block hash")),
            None => Ok(None),
        }
    }

    /// Caches a block hash.
    pub fn put_block_hash(&self, number: u64, hash: B256) -> Result<(), ForkCacheError> {
        if !self.fits(9 + 32) {
            return Ok(());
        }
        KeyWrites::new(&self.meta).insert(&number_key(BLOCK_HASH, number)[..], hash.as_slice())?;
        Ok(())
    }

    /// A cached account: `Some(None)` when the upstream has it empty.
    pub fn account(
        &self,
        address: &Address,
    ) -> Result<Option<Option<ForkedAccount>>, ForkCacheError> {
        account_in(self.state()?, address)
    }

    /// Caches an account and its code (code first: a reader that finds the account finds it).
    pub fn put_account(
        &self,
        address: &Address,
        account: Option<&ForkedAccount>,
        code: &Bytes,
    ) -> Result<(), ForkCacheError> {
        let state = self.state()?;
        self.put_account_in(state, state, address, account, code)
    }

    /// Writes an account to `state` and its code to `codes`.
    fn put_account_in(
        &self,
        state: &sled::Tree,
        codes: &sled::Tree,
        address: &Address,
        account: Option<&ForkedAccount>,
        code: &Bytes,
    ) -> Result<(), ForkCacheError> {
        if !self.fits(21 + 72 + 33 + code.len()) {
            return Ok(());
        }
        let value = match account {
            Some(a) => {
                if !code.is_empty() {
                    KeyWrites::new(codes)
                        .insert(&hash_key(CODE, &a.code_hash)[..], code.as_ref())?;
                }
                let mut v = Vec::with_capacity(72);
                v.extend_from_slice(&a.nonce.to_be_bytes());
                v.extend_from_slice(&a.balance.to_be_bytes::<32>());
                v.extend_from_slice(a.code_hash.as_slice());
                v
            }
            None => Vec::new(),
        };
        KeyWrites::new(state).insert(&address_key(ACCOUNT, address)[..], value)?;
        Ok(())
    }

    /// A cached slot: fetched on its own, or in a storage page of its account (absent from a
    /// page that held the whole storage: zero).
    pub fn slot(&self, address: &Address, slot: &U256) -> Result<Option<U256>, ForkCacheError> {
        let state = self.state()?;
        if let Some(v) = state.get(slot_key(address, slot))? {
            return value_from(&v).map(Some);
        }
        let Some(page) = state.get(address_key(RANGE, address))? else { return Ok(None) };
        let hashed = keccak256(slot.to_be_bytes::<32>());
        match state.get(hashed_slot_key(address, &hashed))? {
            Some(v) => value_from(&v).map(Some),
            None => Ok((page.as_ref() == [1]).then_some(U256::ZERO)),
        }
    }

    /// Whether a storage page of `address` was cached (whole or not).
    pub fn has_page(&self, address: &Address) -> Result<bool, ForkCacheError> {
        Ok(self.state()?.contains_key(address_key(RANGE, address))?)
    }

    /// Caches a storage page of `address` (`whole`: it held every non-zero slot), key by key
    /// with its marker last: a reader (or a reopened cache, sled recovering a prefix of its
    /// writes) that sees the marker sees every entry; entries without a marker are each a
    /// correct slot value, and the page is fetched again.
    pub fn put_page(
        &self,
        address: &Address,
        entries: &[PageEntry],
        whole: bool,
    ) -> Result<(), ForkCacheError> {
        // All of the page or nothing: a marker without its entries would answer zero.
        if !self.fits(22 + entries.len() * (53 + 32)) {
            return Ok(());
        }
        let writes = KeyWrites::new(self.state()?);
        for (hashed, slot, value) in entries {
            let value = value.to_be_bytes::<32>();
            match slot {
                Some(slot) => writes.insert(&slot_key(address, slot)[..], &value[..])?,
                None => writes.insert(&hashed_slot_key(address, hashed)[..], &value[..])?,
            }
        }
        writes.insert(&address_key(RANGE, address)[..], &[u8::from(whole)][..])?;
        Ok(())
    }

    /// The cached transaction count of upstream block `number`.
    pub fn tx_count(&self, number: u64) -> Result<Option<u64>, ForkCacheError> {
        match self.meta.get(number_key(TX_COUNT, number))? {
            Some(v) => Ok(Some(u64_from(&v).ok_or(ForkCacheError::Corrupt("transaction count"))?)),
            None => Ok(None),
        }
    }

    /// Caches the transaction count of upstream block `number`.
    pub fn put_tx_count(&self, number: u64, count: u64) -> Result<(), ForkCacheError> {
        if !self.fits(9 + 8) {
            return Ok(());
        }
        KeyWrites::new(&self.meta)
            .insert(&number_key(TX_COUNT, number)[..], &count.to_be_bytes()[..])?;
        Ok(())
    }

    /// Caches a slot.
    pub fn put_slot(
        &self,
        address: &Address,
        slot: &U256,
        value: U256,
    ) -> Result<(), ForkCacheError> {
        if !self.fits(53 + 32) {
            return Ok(());
        }
        KeyWrites::new(self.state()?)
            .insert(&slot_key(address, slot)[..], &value.to_be_bytes::<32>()[..])?;
        Ok(())
    }

    /// Cached code by hash: of an account at the fork block, or of one below it (whose code
    /// the meta tree keeps, as code by hash is the same at every block).
    pub fn code(&self, code_hash: &B256) -> Result<Option<Bytes>, ForkCacheError> {
        let key = hash_key(CODE, code_hash);
        let code = match self.state()?.get(key)? {
            Some(code) => Some(code),
            None => self.meta.get(key)?,
        };
        Ok(code.map(|v| Bytes::copy_from_slice(&v)))
    }

    /// A cached block body with its extras.
    pub fn body(&self, number: u64) -> Result<Option<(StoredBody, BlockExtras)>, ForkCacheError> {
        let Some(v) = self.meta.get(number_key(BODY, number))? else { return Ok(None) };
        let cached =
            CachedBody::decode(&mut &v[..]).map_err(|_| ForkCacheError::Corrupt("block body"))?;
        Ok(Some((cached.body, cached.extras)))
    }

    /// Caches a block body with its extras.
    pub fn put_body(
        &self,
        number: u64,
        body: &StoredBody,
        extras: &BlockExtras,
    ) -> Result<(), ForkCacheError> {
        let v = alloy_rlp::encode(CachedBody { body: body.clone(), extras: extras.clone() });
        if !self.fits(9 + v.len()) {
            return Ok(());
        }
        KeyWrites::new(&self.meta).insert(&number_key(BODY, number)[..], v)?;
        Ok(())
    }

    /// The total difficulty cached with block `number`.
    pub fn total_difficulty(&self, number: u64) -> Result<Option<U256>, ForkCacheError> {
        match self.meta.get(number_key(TOTAL_DIFFICULTY, number))? {
            Some(v) => value_from(&v).map(Some),
            None => Ok(None),
        }
    }

    /// Caches the total difficulty of block `number`.
    pub fn put_total_difficulty(&self, number: u64, td: U256) -> Result<(), ForkCacheError> {
        if !self.fits(9 + 32) {
            return Ok(());
        }
        KeyWrites::new(&self.meta)
            .insert(&number_key(TOTAL_DIFFICULTY, number)[..], &td.to_be_bytes::<32>()[..])?;
        Ok(())
    }

    /// The size the upstream reported for block `number`.
    pub fn size(&self, number: u64) -> Result<Option<u64>, ForkCacheError> {
        match self.meta.get(number_key(SIZE, number))? {
            Some(v) => Ok(Some(u64_from(&v).ok_or(ForkCacheError::Corrupt("block size"))?)),
            None => Ok(None),
        }
    }

    /// Caches the size the upstream reported for block `number`.
    pub fn put_size(&self, number: u64, size: u64) -> Result<(), ForkCacheError> {
        if !self.fits(9 + 8) {
            return Ok(());
        }
        KeyWrites::new(&self.meta)
            .insert(&number_key(SIZE, number)[..], &size.to_be_bytes()[..])?;
        Ok(())
    }

    /// A block's cached receipts.
    pub fn receipts(&self, number: u64) -> Result<Option<Vec<ReceiptEnvelope>>, ForkCacheError> {
        let Some(v) = self.meta.get(number_key(RECEIPTS, number))? else { return Ok(None) };
        let receipts = Vec::<ReceiptEnvelope>::decode(&mut &v[..])
            .map_err(|_| ForkCacheError::Corrupt("receipts"))?;
        Ok(Some(receipts))
    }

    /// Caches a block's receipts.
    pub fn put_receipts(
        &self,
        number: u64,
        receipts: &[ReceiptEnvelope],
    ) -> Result<(), ForkCacheError> {
        let v = alloy_rlp::encode(receipts.to_vec());
        if !self.fits(9 + v.len()) {
            return Ok(());
        }
        KeyWrites::new(&self.meta).insert(&number_key(RECEIPTS, number)[..], v)?;
        Ok(())
    }

    /// A cached location of a block or transaction hash: `Some(None)` when the upstream had
    /// none below the pinned fork block.
    pub fn location(
        &self,
        kind: LocationKind,
        hash: &B256,
    ) -> Result<Option<Option<(u64, u32)>>, ForkCacheError> {
        if let Some(v) = self.meta.get(hash_key(kind.prefix(), hash))? {
            let number = u64_from(v.get(..8).ok_or(ForkCacheError::Corrupt("location"))?)
                .ok_or(ForkCacheError::Corrupt("location"))?;
            let index = match v.get(8..) {
                Some(rest) if rest.len() == 4 => {
                    u32::from_be_bytes([rest[0], rest[1], rest[2], rest[3]])
                }
                _ => 0,
            };
            return Ok(Some(Some((number, index))));
        }
        // Absence is kept per fork block: before one is pinned nothing is known.
        let Some(state) = &self.state else { return Ok(None) };
        Ok(state.contains_key(absent_key(kind, hash))?.then_some(None))
    }

    /// Caches where a hash is (`None`: not below the pinned fork block, kept for this fork
    /// block only).
    pub fn put_location(
        &self,
        kind: LocationKind,
        hash: &B256,
        location: Option<(u64, u32)>,
    ) -> Result<(), ForkCacheError> {
        if !self.fits(34 + 12) {
            return Ok(());
        }
        match location {
            Some((number, index)) => {
                let mut v = number.to_be_bytes().to_vec();
                if kind == LocationKind::Transaction {
                    v.extend_from_slice(&index.to_be_bytes());
                }
                KeyWrites::new(&self.meta).insert(&hash_key(kind.prefix(), hash)[..], v)?;
            }
            None => {
                if let Some(state) = &self.state {
                    state.insert(&absent_key(kind, hash)[..], &[][..])?;
                }
            }
        }
        Ok(())
    }

    /// A cached logs answer (a JSON array).
    pub fn logs(&self, query: &LogQuery) -> Result<Option<Vec<u8>>, ForkCacheError> {
        self.answer(&query_key(LOGS, query))
    }

    /// Caches a logs answer.
    pub fn put_logs(&self, query: &LogQuery, json: &[u8]) -> Result<(), ForkCacheError> {
        self.put_answer(&query_key(LOGS, query), json)
    }

    /// A cached proof (a JSON object).
    pub fn proof(&self, query: &ProofQuery) -> Result<Option<Vec<u8>>, ForkCacheError> {
        self.answer(&query_key(PROOF, query))
    }

    /// Caches a proof.
    pub fn put_proof(&self, query: &ProofQuery, json: &[u8]) -> Result<(), ForkCacheError> {
        self.put_answer(&query_key(PROOF, query), json)
    }

    /// A cached eth_simulateV1 answer (a JSON array).
    pub fn simulated(&self, query: &SimulateQuery) -> Result<Option<Vec<u8>>, ForkCacheError> {
        self.answer(&query_key(SIMULATED, query))
    }

    /// Caches an eth_simulateV1 answer.
    pub fn put_simulated(&self, query: &SimulateQuery, json: &[u8]) -> Result<(), ForkCacheError> {
        self.put_answer(&query_key(SIMULATED, query), json)
    }

    /// An upstream answer kept as its JSON, under the hash of the query it answers.
    fn answer(&self, key: &[u8; 33]) -> Result<Option<Vec<u8>>, ForkCacheError> {
        Ok(self.meta.get(key)?.map(|v| v.to_vec()))
    }

    fn put_answer(&self, key: &[u8; 33], json: &[u8]) -> Result<(), ForkCacheError> {
        if !self.fits(key.len() + json.len()) {
            return Ok(());
        }
        KeyWrites::new(&self.meta).insert(&key[..], json)?;
        Ok(())
    }

    /// Makes what is cached durable on sled's own threads (the caller does not wait for the
    /// disk).
    pub fn flush_in_background(&self) -> impl std::future::Future<Output = ()> + 'static {
        let db = self.db.clone();
        async move {
            if let Err(error) = db.flush_async().await {
                tracing::warn!(target: "actors::fork", %error, "fork cache not flushed");
            }
        }
    }

    /// Makes what is cached durable (on clean shutdown; sled also flushes every 200 ms).
    pub fn flush(&self) -> Result<(), ForkCacheError> {
        self.db.flush()?;
        Ok(())
    }
}

/// The state of upstream block `N` below the fork block ([`ForkCache::historical`]): accounts
/// and slots read one by one (no storage pages), code in the meta tree.
#[derive(Debug)]
pub struct HistoricalState<'a> {
    cache: &'a ForkCache,
    tree: sled::Tree,
}

impl HistoricalState<'_> {
    /// A cached account: `Some(None)` when the upstream had it empty.
    pub fn account(
        &self,
        address: &Address,
    ) -> Result<Option<Option<ForkedAccount>>, ForkCacheError> {
        account_in(&self.tree, address)
    }

    /// Caches an account, its code in the meta tree.
    pub fn put_account(
        &self,
        address: &Address,
        account: Option<&ForkedAccount>,
        code: &Bytes,
    ) -> Result<(), ForkCacheError> {
        self.cache.put_account_in(&self.tree, &self.cache.meta, address, account, code)
    }

    /// A cached slot.
    pub fn slot(&self, address: &Address, slot: &U256) -> Result<Option<U256>, ForkCacheError> {
        match self.tree.get(slot_key(address, slot))? {
            Some(v) => value_from(&v).map(Some),
            None => Ok(None),
        }
    }

    /// Caches a slot.
    pub fn put_slot(
        &self,
        address: &Address,
        slot: &U256,
        value: U256,
    ) -> Result<(), ForkCacheError> {
        if !self.cache.fits(53 + 32) {
            return Ok(());
        }
        KeyWrites::new(&self.tree)
            .insert(&slot_key(address, slot)[..], &value.to_be_bytes::<32>()[..])?;
        Ok(())
    }
}

/// An account of a state tree: `Some(None)` when the upstream has it empty.
fn account_in(
    state: &sled::Tree,
    address: &Address,
) -> Result<Option<Option<ForkedAccount>>, ForkCacheError> {
    let Some(v) = state.get(address_key(ACCOUNT, address))? else { return Ok(None) };
    if v.is_empty() {
        return Ok(Some(None));
    }
    if v.len() != 72 {
        return Err(ForkCacheError::Corrupt("account"));
    }
    Ok(Some(Some(ForkedAccount {
        nonce: u64_from(&v[..8]).ok_or(ForkCacheError::Corrupt("account"))?,
        balance: U256::from_be_slice(&v[8..40]),
        code_hash: B256::from_slice(&v[40..72]),
    })))
}

fn value_from(v: &[u8]) -> Result<U256, ForkCacheError> {
    if v.len() != 32 {
        return Err(ForkCacheError::Corrupt("slot"));
    }
    Ok(U256::from_be_slice(v))
}

fn hashed_slot_key(address: &Address, hashed: &B256) -> [u8; 53] {
    let mut k = [0u8; 53];
    k[0] = HASHED_SLOT;
    k[1..21].copy_from_slice(address.as_slice());
    k[21..].copy_from_slice(hashed.as_slice());
    k
}

fn u64_from(v: &[u8]) -> Option<u64> {
    Some(u64::from_be_bytes(v.try_into().ok()?))
}

fn number_key(prefix: u8, number: u64) -> [u8; 9] {
    let mut k = [0u8; 9];
    k[0] = prefix;
    k[1..].copy_from_slice(&number.to_be_bytes());
    k
}

fn address_key(prefix: u8, address: &Address) -> [u8; 21] {
    let mut k = [0u8; 21];
    k[0] = prefix;
    k[1..].copy_from_slice(address.as_slice());
    k
}

fn hash_key(prefix: u8, hash: &B256) -> [u8; 33] {
    let mut k = [0u8; 33];
    k[0] = prefix;
    k[1..].copy_from_slice(hash.as_slice());
    k
}

fn absent_key(kind: LocationKind, hash: &B256) -> [u8; 34] {
    let mut k = [0u8; 34];
    k[0] = ABSENT;
    k[1] = kind.prefix();
    k[2..].copy_from_slice(hash.as_slice());
    k
}

/// The key of an answer to `query` (a logs filter, a proof): the hash of its RLP.
fn query_key(prefix: u8, query: &impl alloy_rlp::Encodable) -> [u8; 33] {
    hash_key(prefix, &keccak256(alloy_rlp::encode(query)))
}

fn slot_key(address: &Address, slot: &U256) -> [u8; 53] {
    let mut k = [0u8; 53];
    k[0] = SLOT;
    k[1..21].copy_from_slice(address.as_slice());
    k[21..].copy_from_slice(&slot.to_be_bytes::<32>());
    k
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_round_trip_and_trees_are_apart() {
        let (mut cache, why) = ForkCache::open(None, "http://a", u64::MAX);
        assert!(why.is_none());
        cache.pin(1, 10).unwrap();
        let a = Address::repeat_byte(1);
        let account = ForkedAccount { nonce: 3, balance: U256::from(7), code_hash: keccak256([1]) };
        cache.put_account(&a, Some(&account), &Bytes::from(vec![1])).unwrap();
        cache.put_slot(&a, &U256::from(2), U256::from(9)).unwrap();
        assert_eq!(cache.account(&a).unwrap(), Some(Some(account)));
        assert_eq!(cache.code(&account.code_hash).unwrap(), Some(Bytes::from(vec![1])));
        assert_eq!(cache.slot(&a, &U256::from(2)).unwrap(), Some(U256::from(9)));
        // Another fork block of the same endpoint sees none of it.
        cache.pin(1, 11).unwrap();
        assert_eq!(cache.account(&a).unwrap(), None);
        assert_eq!(cache.slot(&a, &U256::from(2)).unwrap(), None);
    }

    #[test]
    fn historical_state_is_kept_per_block_and_a_fork_of_that_block_finds_it() {
        let (mut cache, _) = ForkCache::open(None, "http://a", u64::MAX);
        assert!(cache.historical(3).is_err(), "no chain id before a pin");
        cache.pin(1, 10).unwrap();
        let a = Address::repeat_byte(1);
        let old = ForkedAccount { nonce: 1, balance: U256::from(5), code_hash: keccak256([2]) };
        let at_3 = cache.historical(3).unwrap();
        at_3.put_account(&a, Some(&old), &Bytes::from(vec![2])).unwrap();
        at_3.put_slot(&a, &U256::from(4), U256::from(8)).unwrap();
        assert_eq!(at_3.account(&a).unwrap(), Some(Some(old)));
        assert_eq!(at_3.slot(&a, &U256::from(4)).unwrap(), Some(U256::from(8)));
        // Not the fork block's, nor another block's; its code is found by hash from any.
        assert_eq!(cache.account(&a).unwrap(), None);
        assert_eq!(cache.historical(4).unwrap().account(&a).unwrap(), None);
        assert_eq!(cache.historical(4).unwrap().slot(&a, &U256::from(4)).unwrap(), None);
        assert_eq!(cache.code(&old.code_hash).unwrap(), Some(Bytes::from(vec![2])));
        // A fork of block 3 reads the same values as its own state.
        cache.pin(1, 3).unwrap();
        assert_eq!(cache.account(&a).unwrap(), Some(Some(old)));
        assert_eq!(cache.slot(&a, &U256::from(4)).unwrap(), Some(U256::from(8)));
        // Another chain id of the endpoint does not.
        cache.pin(2, 10).unwrap();
        assert_eq!(cache.historical(3).unwrap().account(&a).unwrap(), None);
    }

    #[test]
    fn a_whole_storage_page_answers_every_slot_of_its_account() {
        let (mut cache, _) = ForkCache::open(None, "http://a", u64::MAX);
        cache.pin(1, 10).unwrap();
        let (a, b) = (Address::repeat_byte(1), Address::repeat_byte(2));
        let hashed = |slot: u64| keccak256(U256::from(slot).to_be_bytes::<32>());
        // Slot 1 came with its preimage, slot 2 without.
        let entries =
            [(hashed(1), Some(U256::from(1)), U256::from(11)), (hashed(2), None, U256::from(22))];
        cache.put_page(&a, &entries, true).unwrap();
        cache.put_page(&b, &entries, false).unwrap();
        assert!(cache.has_page(&a).unwrap());
        assert_eq!(cache.slot(&a, &U256::from(1)).unwrap(), Some(U256::from(11)));
        assert_eq!(cache.slot(&a, &U256::from(2)).unwrap(), Some(U256::from(22)));
        assert_eq!(cache.slot(&a, &U256::from(3)).unwrap(), Some(U256::ZERO), "whole: zero");
        assert_eq!(cache.slot(&b, &U256::from(2)).unwrap(), Some(U256::from(22)));
        assert_eq!(cache.slot(&b, &U256::from(3)).unwrap(), None, "part: not known");
        assert_eq!(cache.slot(&Address::ZERO, &U256::from(1)).unwrap(), None);
    }

    #[test]
    fn history_is_kept_per_endpoint_and_absence_per_fork_block() {
        let (mut cache, _) = ForkCache::open(None, "http://a", u64::MAX);
        let hash = B256::repeat_byte(7);
        // Before a fork block is pinned, absence is neither known nor kept.
        cache.put_location(LocationKind::Transaction, &hash, None).unwrap();
        assert_eq!(cache.location(LocationKind::Transaction, &hash).unwrap(), None);
        cache.pin(1, 10).unwrap();
        cache.put_location(LocationKind::Transaction, &hash, None).unwrap();
        assert_eq!(cache.location(LocationKind::Transaction, &hash).unwrap(), Some(None));
        assert_eq!(cache.location(LocationKind::Block, &hash).unwrap(), None, "another kind");
        let found = B256::repeat_byte(8);
        cache.put_location(LocationKind::Transaction, &found, Some((4, 2))).unwrap();
        cache.put_location(LocationKind::Block, &found, Some((5, 0))).unwrap();
        let body = StoredBody { transactions: vec![], senders: vec![] };
        cache.put_body(4, &body, &BlockExtras::default()).unwrap();
        cache.put_receipts(4, &[]).unwrap();
        let query = LogQuery { from: 1, to: 4, addresses: vec![Address::ZERO], topics: vec![] };
        cache.put_logs(&query, b"[]").unwrap();
        // Another fork block of the endpoint: what was found is still found, absence is not.
        cache.pin(1, 20).unwrap();
        assert_eq!(cache.location(LocationKind::Transaction, &hash).unwrap(), None);
        assert_eq!(cache.location(LocationKind::Transaction, &found).unwrap(), Some(Some((4, 2))));
        assert_eq!(cache.location(LocationKind::Block, &found).unwrap(), Some(Some((5, 0))));
        assert_eq!(cache.body(4).unwrap(), Some((body, BlockExtras::default())));
        assert_eq!(cache.receipts(4).unwrap(), Some(vec![]));
        assert_eq!(cache.logs(&query).unwrap(), Some(b"[]".to_vec()));
        let other = LogQuery { to: 3, ..query };
        assert_eq!(cache.logs(&other).unwrap(), None, "another range is another answer");
    }

    #[test]
    fn a_full_cache_keeps_nothing_more_and_says_so_by_answering_none() {
        let (mut cache, _) = ForkCache::open(None, "http://a", 0);
        cache.pin(1, 10).unwrap();
        let a = Address::repeat_byte(1);
        cache.put_slot(&a, &U256::from(2), U256::from(9)).unwrap();
        assert_eq!(cache.slot(&a, &U256::from(2)).unwrap(), None);
        let (mut roomy, _) = ForkCache::open(None, "http://b", 1 << 20);
        roomy.pin(1, 10).unwrap();
        roomy.put_slot(&a, &U256::from(2), U256::from(9)).unwrap();
        assert_eq!(roomy.slot(&a, &U256::from(2)).unwrap(), Some(U256::from(9)));
    }

    #[test]
    fn a_locked_directory_falls_back_to_memory_and_says_why() {
        let dir = std::env::temp_dir().join(format!("hearth-fork-lock-{}", std::process::id()));
        let (first, why) = ForkCache::open(Some(&dir), "http://a", u64::MAX);
        assert!(why.is_none() && first.path().is_some());
        let (second, why) = ForkCache::open(Some(&dir), "http://a", u64::MAX);
        assert!(second.path().is_none());
        assert!(why.expect("a reason").contains("cannot open"));
        drop((first, second));
        let _ = std::fs::remove_dir_all(dir);
    }
}
