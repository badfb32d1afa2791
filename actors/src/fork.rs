//! `ForkBackendActor`: the upstream connection of a node started with `--fork-url`.
//!
//! - **Owns:** the upstream HTTP client ([`upstream`]), the fork cache's write side
//!   ([`cache`]), the keys being fetched with everyone waiting for each, and the queue of keys
//!   not sent yet.
//! - **Takes:** [`Fetch`] (one value: from the cache, by joining a fetch under way, or in the
//!   next JSON-RPC batch) and [`PinFork`], through [`ForkClient`].
//! - **Sends:** nothing; replies go down each `Fetch`'s channel.
//! - **Mailbox:** [`DEFAULT_MAILBOX`] (a blocked caller queues one `Fetch` at a time; a caller
//!   fetching a collecting run's misses hands over all its keys and waits for room when full).
//! - **Restart:** not restarted: a panic fails the waiting reads (their channels close) and
//!   later reads fail at once with a clear error.
//!
//! It runs on an arbiter of its own, because its callers block their thread until it answers.
//! Concurrent distinct keys go out together: a `Fetch` only queues its key, and the queue is
//! flushed once the mailbox has been drained, as batches of at most `max_batch` keys with at
//! most `max_in_flight` batches under way.
//!
//! A contract's storage comes in one request where the upstream serves geth's
//! `debug_storageRangeAt`: an account's first slot fetch goes out with a request for a page of
//! [`STORAGE_PAGE`] slots of that account at the fork block; a page that holds the whole
//! storage answers every later slot read of the account from the cache (a slot it lacks is
//! zero), so a test suite that reads 200 holders' balances waits for one round trip, not 200.
//! An upstream that refuses [`RANGE_REFUSALS`] pages before serving one is not asked again.

pub mod cache;
pub mod client;
pub mod upstream;

use std::collections::{HashMap, HashSet, VecDeque};
use std::rc::Rc;
use std::sync::Arc;
use std::time::Duration;

use actix::prelude::*;
use alloy_primitives::{Address, B256, Bytes, U256, keccak256};
use hearth_messages::fork::{
    Fetch, ForkCounters, ForkError, ForkKey, ForkReply, ForkValue, ForkedBlock, PinFork,
};
use hearth_storage::{
    BlockExtras, EMPTY_CODE_HASH, ForkedAccount, LogQuery, ProofQuery, SimulateQuery, StoredBody,
};
use serde_json::{Value, json};
use tracing::{debug, warn};

pub use cache::{ForkCache, LocationKind};
pub use client::ForkClient;
pub use upstream::UpstreamConfig;

use upstream::Upstream;

/// Default mailbox of the backend.
pub const DEFAULT_MAILBOX: usize = 1024;
/// Default most keys in one upstream JSON-RPC batch.
pub const DEFAULT_MAX_BATCH: usize = 100;
/// Default most batches under way at once.
pub const DEFAULT_MAX_IN_FLIGHT: usize = 4;
/// Most slots asked for in one storage page: an account with more costs one page (about
/// 150 KiB of JSON) that answers only the slots it holds.
pub const STORAGE_PAGE: u64 = 1024;
/// Refused storage pages, with none served, after which the upstream is not asked for more.
pub const RANGE_REFUSALS: u32 = 3;
/// Accounts whose storage a block changes outside its transactions (the system calls before
/// and after them), so a page is never asked for: geth answers `debug_storageRangeAt` of an
/// empty block with the state before the block, which is their storage one block early. Their
/// slots are read one by one at the fork block.
const SYSTEM_CONTRACTS: [Address; 4] = [
    alloy_eips::eip4788::BEACON_ROOTS_ADDRESS,
    alloy_eips::eip2935::HISTORY_STORAGE_ADDRESS,
    alloy_eips::eip7002::WITHDRAWAL_REQUEST_PREDEPLOY_ADDRESS,
    alloy_eips::eip7251::CONSOLIDATION_REQUEST_PREDEPLOY_ADDRESS,
];

/// The fork backend.
pub struct ForkBackendActor {
    upstream: Rc<Upstream>,
    cache: ForkCache,
    counters: Arc<ForkCounters>,
    /// The fork block (state keys are read at it), once pinned.
    block: Option<u64>,
    /// The fork block's hash and transaction count for storage pages (`None`: not asked).
    storage_range: Option<(B256, u64)>,
    /// The pinned fork block's hash and transaction count, as pinned: what `storage_range`
    /// starts from (and comes back to when the upstream is switched), and the hash a new
    /// upstream must have for that block.
    pinned: Option<(B256, u64)>,
    /// Accounts whose storage page was asked for in this run.
    range_asked: HashSet<Address>,
    /// Slot keys of accounts whose page is on its way, held back (their waiters are in
    /// `waiting`) until the page answers them or shows it does not hold them.
    parked: HashMap<Address, Vec<ForkKey>>,
    /// Whether accounts are asked with `eth_getAccountInfo` (until the upstream refuses it
    /// before serving one), whether it has served one, and the keys asked the plain way
    /// after it failed for them.
    account_info: bool,
    account_info_served: bool,
    account_fallback: HashSet<ForkKey>,
    /// Pages refused so far, and whether any was served.
    range_refused: u32,
    range_served: bool,
    /// Everyone waiting for each key being fetched or queued.
    waiting: HashMap<ForkKey, Vec<ForkReply>>,
    /// Keys not yet sent, oldest first.
    queue: VecDeque<ForkKey>,
    flush_scheduled: bool,
    /// A background flush of the cache is under way.
    flushing: bool,
    in_flight: usize,
    max_batch: usize,
    max_in_flight: usize,
}

impl std::fmt::Debug for ForkBackendActor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ForkBackendActor")
            .field("upstream", &self.upstream)
            .field("block", &self.block)
            .field("waiting", &self.waiting.len())
            .field("in_flight", &self.in_flight)
            .finish()
    }
}

impl Actor for ForkBackendActor {
    type Context = Context<Self>;

    fn stopping(&mut self, _ctx: &mut Self::Context) -> Running {
        if let Err(error) = self.cache.flush() {
            warn!(target: "actors::fork", %error, "fork cache not flushed");
        }
        Running::Stop
    }

    /// Once nothing holds the backend's address (the chain reading through it is gone: the
    /// node stopped, or anvil_reset replaced the chain and its last reader finished), its
    /// arbiter, which serves nothing else, goes too.
    fn stopped(&mut self, _ctx: &mut Self::Context) {
        Arbiter::current().stop();
    }
}

impl ForkBackendActor {
    /// Starts the backend on an arbiter of its own (its callers block their threads on it) and
    /// returns its address with the arbiter. The arbiter stops by itself once every address is
    /// dropped.
    pub fn start(
        config: UpstreamConfig,
        cache: ForkCache,
        counters: Arc<ForkCounters>,
        max_batch: usize,
        max_in_flight: usize,
    ) -> (Addr<Self>, Arbiter) {
        let arbiter = Arbiter::new();
        let addr = Self::start_in_arbiter(&arbiter.handle(), move |ctx| {
            ctx.set_mailbox_capacity(DEFAULT_MAILBOX);
            Self {
                upstream: Upstream::new(config, Arc::clone(&counters)),
                cache,
                counters,
                block: None,
                storage_range: None,
                pinned: None,
                range_asked: HashSet::new(),
                parked: HashMap::new(),
                account_info: true,
                account_info_served: false,
                account_fallback: HashSet::new(),
                range_refused: 0,
                range_served: false,
                waiting: HashMap::new(),
                queue: VecDeque::new(),
                flush_scheduled: false,
                flushing: false,
                in_flight: 0,
                max_batch: max_batch.max(1),
                max_in_flight: max_in_flight.max(1),
            }
        });
        (addr, arbiter)
    }

    /// The value of `key` if the cache has it.
    fn cached(&self, key: &ForkKey) -> Result<Option<ForkValue>, ForkError> {
        let fail = |e: cache::ForkCacheError| ForkError::Upstream(e.to_string());
        Ok(match key {
            ForkKey::ChainId => self.cache.chain_id().map_err(fail)?.map(ForkValue::Number),
            ForkKey::HeadNumber => None,
            ForkKey::Header(n) => self
                .cache
                .header(*n)
                .map_err(fail)?
                .map(|(header, hash)| ForkValue::Header(Box::new(header), hash)),
            ForkKey::BlockHash(n) => {
                self.cache.block_hash(*n).map_err(fail)?.map(|h| ForkValue::BlockHash(Some(h)))
            }
            ForkKey::Account(address) => {
                self.cache.account(address).map_err(fail)?.map(ForkValue::Account)
            }
            ForkKey::Storage(address, slot) => {
                self.cache.slot(address, slot).map_err(fail)?.map(ForkValue::Storage)
            }
            ForkKey::AccountAt(n, address) => self
                .cache
                .historical(*n)
                .map_err(fail)?
                .account(address)
                .map_err(fail)?
                .map(ForkValue::Account),
            ForkKey::StorageAt(n, address, slot) => self
                .cache
                .historical(*n)
                .map_err(fail)?
                .slot(address, slot)
                .map_err(fail)?
                .map(ForkValue::Storage),
            ForkKey::StorageRange(_) => None,
            ForkKey::Block(n) => {
                match (self.cache.header(*n).map_err(fail)?, self.cache.body(*n).map_err(fail)?) {
                    (Some((header, hash)), Some((body, extras))) => {
                        Some(ForkValue::Block(Some(Box::new(ForkedBlock {
                            header,
                            hash,
                            body,
                            extras,
                        }))))
                    }
                    _ => None,
                }
            }
            ForkKey::Receipts(n) => {
                self.cache.receipts(*n).map_err(fail)?.map(|r| ForkValue::Receipts(Some(r)))
            }
            ForkKey::BlockNumber(hash) => self
                .cache
                .location(LocationKind::Block, hash)
                .map_err(fail)?
                .map(ForkValue::Location),
            ForkKey::TxLocation(hash) => self
                .cache
                .location(LocationKind::Transaction, hash)
                .map_err(fail)?
                .map(ForkValue::Location),
            ForkKey::Logs(_) | ForkKey::Proof(_) | ForkKey::Simulate(_) => {
                self.cached_answer(key).map_err(fail)?.map(|json| ForkValue::Json(Arc::new(json)))
            }
        })
    }

    /// An answer kept as the upstream's JSON, if the cache has it.
    fn cached_answer(&self, key: &ForkKey) -> Result<Option<Vec<u8>>, cache::ForkCacheError> {
        match key {
            ForkKey::Logs(query) => self.cache.logs(query),
            ForkKey::Proof(query) => self.cache.proof(query),
            ForkKey::Simulate(query) => self.cache.simulated(query),
            _ => Ok(None),
        }
    }

    /// The JSON-RPC calls that fetch `key` at the fork block.
    fn calls(&self, key: &ForkKey, block: &str) -> Vec<(&'static str, Value)> {
        match key {
            ForkKey::ChainId => vec![("eth_chainId", json!([]))],
            ForkKey::HeadNumber => vec![("eth_blockNumber", json!([]))],
            ForkKey::Header(n) | ForkKey::BlockHash(n) => {
                vec![("eth_getBlockByNumber", json!([format!("{n:#x}"), false]))]
            }
            ForkKey::Account(a) => self.account_calls(key, a, block),
            ForkKey::Storage(a, slot) => {
                vec![("eth_getStorageAt", json!([a, format!("{slot:#x}"), block]))]
            }
            ForkKey::AccountAt(n, a) => self.account_calls(key, a, &format!("{n:#x}")),
            ForkKey::StorageAt(n, a, slot) => {
                vec![("eth_getStorageAt", json!([a, format!("{slot:#x}"), format!("{n:#x}")]))]
            }
            ForkKey::StorageRange(a) => {
                let (hash, transactions) = self.storage_range.unwrap_or_default();
                vec![("debug_storageRangeAt", json!([hash, transactions, a, "0x", STORAGE_PAGE]))]
            }
            ForkKey::Block(n) => vec![("eth_getBlockByNumber", json!([format!("{n:#x}"), true]))],
            ForkKey::Receipts(n) => vec![("eth_getBlockReceipts", json!([format!("{n:#x}")]))],
            ForkKey::BlockNumber(hash) => vec![("eth_getBlockByHash", json!([hash, false]))],
            ForkKey::TxLocation(hash) => vec![("eth_getTransactionByHash", json!([hash]))],
            ForkKey::Logs(query) => vec![("eth_getLogs", json!([log_filter(query)]))],
            ForkKey::Proof(query) => {
                let slots: Vec<String> =
                    query.slots.iter().map(|slot| B256::from(*slot).to_string()).collect();
                let number = format!("{:#x}", query.number);
                vec![("eth_getProof", json!([query.address, slots, number]))]
            }
            ForkKey::Simulate(query) => {
                // The payload was parsed and checked before it was keyed, so it parses.
                let payload: Value = serde_json::from_str(&query.payload).unwrap_or_default();
                vec![("eth_simulateV1", json!([payload, format!("{:#x}", query.base)]))]
            }
        }
    }

    /// The calls that fetch an account at `block`: anvil's `eth_getAccountInfo` (balance,
    /// nonce and code in one call) while the upstream may serve it, else the three plain ones.
    fn account_calls(
        &self,
        key: &ForkKey,
        address: &Address,
        block: &str,
    ) -> Vec<(&'static str, Value)> {
        if self.account_info && !self.account_fallback.contains(key) {
            return vec![("eth_getAccountInfo", json!([address, block]))];
        }
        vec![
            ("eth_getBalance", json!([address, block])),
            ("eth_getTransactionCount", json!([address, block])),
            ("eth_getCode", json!([address, block])),
        ]
    }

    /// Takes an account's `eth_getAccountInfo` that failed: the key is asked again with the
    /// three plain calls, and an upstream that has never served one is not asked for it again
    /// (geth and older nodes have no such method). `true`: the key was queued again.
    fn account_info_refused(&mut self, key: &ForkKey, parts: &[Result<Value, String>]) -> bool {
        // Asked with the one call (the three plain ones answer three parts): the flags may
        // have changed since, with an earlier key of the same batch.
        let is_account = matches!(key, ForkKey::Account(_) | ForkKey::AccountAt(..));
        let Some(Err(reason)) = parts.first().filter(|_| is_account && parts.len() == 1) else {
            return false;
        };
        if !self.account_info_served {
            debug!(target: "actors::fork", %reason, "the upstream serves no eth_getAccountInfo: three calls an account");
            self.account_info = false;
        }
        self.account_fallback.insert(key.clone());
        self.queue.push_back(key.clone());
        true
    }

    /// Queues a page of `address`'s storage beside its first slot fetch, when the upstream
    /// may serve one and none was asked for or cached yet; the account's other slot keys are
    /// then parked until it answers (`true`: asked now).
    fn ask_storage_page(&mut self, address: Address) -> bool {
        if self.storage_range.is_none()
            || self.range_asked.contains(&address)
            || SYSTEM_CONTRACTS.contains(&address)
        {
            return false;
        }
        self.range_asked.insert(address);
        if self.cache.has_page(&address).unwrap_or(true) {
            return false;
        }
        let key = ForkKey::StorageRange(address);
        self.waiting.insert(key.clone(), Vec::new());
        self.queue.push_back(key);
        self.parked.insert(address, Vec::new());
        true
    }

    /// Queues a new key, or parks a slot key of an account whose storage page is on its way:
    /// a run that collects its misses (`fork::misses`) hands over all of a contract's slots
    /// at once, and a page holding the whole storage answers them all, so only the first goes
    /// upstream beside the page. A page that lacks some costs those one more round trip.
    fn enqueue(&mut self, key: ForkKey) {
        if let ForkKey::Storage(address, _) = key
            && !self.ask_storage_page(address)
            && let Some(parked) = self.parked.get_mut(&address)
        {
            parked.push(key);
            return;
        }
        self.queue.push_back(key);
    }

    /// Answers the keys parked behind `address`'s page from the cache, and queues the ones it
    /// does not answer.
    fn release_parked(&mut self, address: &Address) {
        for key in self.parked.remove(address).unwrap_or_default() {
            match self.cached(&key) {
                Ok(Some(value)) => {
                    self.counters.add_hit();
                    self.reply(&key, &Ok(value));
                }
                Ok(None) => self.queue.push_back(key),
                Err(error) => self.reply(&key, &Err(error)),
            }
        }
    }

    /// Caches a storage page (or notes that the upstream refused it).
    fn take_storage_page(&mut self, address: &Address, part: Option<Result<Value, String>>) {
        let page = match part {
            Some(Ok(page)) => parse_page(&page),
            Some(Err(message)) => Err(message),
            None => Err("no answer".to_owned()),
        };
        let stored = page.and_then(|(entries, whole)| {
            self.cache.put_page(address, &entries, whole).map_err(|e| e.to_string())
        });
        match stored {
            Ok(()) => {
                self.range_served = true;
                self.counters.add_fetched(1);
            }
            Err(reason) => {
                self.range_refused += 1;
                debug!(target: "actors::fork", %address, %reason, "storage page refused");
                if !self.range_served && self.range_refused >= RANGE_REFUSALS {
                    warn!(
                        target: "actors::fork",
                        %reason,
                        "the upstream serves no debug_storageRangeAt: reading storage slot by slot"
                    );
                    self.storage_range = None;
                }
            }
        }
    }

    /// Sends queued keys upstream while batches may go.
    fn flush(&mut self, ctx: &mut Context<Self>) {
        while self.in_flight < self.max_in_flight && !self.queue.is_empty() {
            let keys = self.next_batch();
            let block = self.block.map_or_else(|| "latest".to_owned(), |b| format!("{b:#x}"));
            let mut calls = Vec::new();
            let mut spans = Vec::with_capacity(keys.len());
            for key in &keys {
                let key_calls = self.calls(key, &block);
                spans.push(key_calls.len());
                calls.extend(key_calls);
            }
            self.in_flight += 1;
            debug!(target: "actors::fork", keys = keys.len(), calls = calls.len(), "fetching");
            let upstream = Rc::clone(&self.upstream);
            ctx.spawn(upstream.batch(calls).into_actor(self).map(move |answer, actor, ctx| {
                actor.in_flight -= 1;
                actor.answer(keys, spans, answer);
                actor.flush(ctx);
                // Durable soon after it is answered, on sled's threads (an fsync here would hold
                // up the next fetch): a node killed with -9 keeps what it fetched.
                if !actor.flushing {
                    actor.flushing = true;
                    let flush = actor.cache.flush_in_background();
                    ctx.spawn(flush.into_actor(actor).map(|(), actor, _| actor.flushing = false));
                }
            }));
        }
    }

    /// The keys of the next batch, from the queue's front: up to `max_batch` light keys, or one
    /// heavy key alone (a forwarded simulation or proof, which may take the upstream long to
    /// answer and must not hold up, or time out with, the reads batched beside it).
    fn next_batch(&mut self) -> Vec<ForkKey> {
        let heavy = |key: &ForkKey| matches!(key, ForkKey::Simulate(_) | ForkKey::Proof(_));
        if self.queue.front().is_some_and(heavy) {
            return self.queue.pop_front().into_iter().collect();
        }
        let light = self.queue.iter().take(self.max_batch).take_while(|key| !heavy(key)).count();
        self.queue.drain(..light).collect()
    }

    /// Decodes a batch's answers, caches them and replies to everyone waiting.
    fn answer(
        &mut self,
        keys: Vec<ForkKey>,
        spans: Vec<usize>,
        answer: Result<Vec<Result<Value, String>>, String>,
    ) {
        let mut results = match answer {
            Ok(results) => results.into_iter(),
            Err(reason) => {
                warn!(target: "actors::fork", %reason, keys = keys.len(), "fork fetch failed");
                self.counters.add_errors(keys.len() as u64);
                for key in keys {
                    // A page nobody waits for is asked again with the account's next miss;
                    // the slots parked behind it go upstream on their own.
                    if let ForkKey::StorageRange(address) = key {
                        self.range_asked.remove(&address);
                        self.waiting.remove(&key);
                        self.release_parked(&address);
                        continue;
                    }
                    self.reply(&key, &Err(ForkError::Upstream(reason.clone())));
                }
                return;
            }
        };
        for (key, span) in keys.into_iter().zip(spans) {
            let parts: Vec<Result<Value, String>> = results.by_ref().take(span).collect();
            if let ForkKey::StorageRange(address) = key {
                self.waiting.remove(&key);
                self.take_storage_page(&address, parts.into_iter().next());
                self.release_parked(&address);
                continue;
            }
            if self.account_info_refused(&key, &parts) {
                continue;
            }
            self.account_fallback.remove(&key);
            let one_call = parts.len() == 1;
            let value = self.decode(&key, parts);
            if one_call
                && value.is_ok()
                && matches!(key, ForkKey::Account(_) | ForkKey::AccountAt(..))
            {
                self.account_info_served = true;
            }
            match &value {
                Ok(_) => self.counters.add_fetched(1),
                Err(_) => self.counters.add_errors(1),
            }
            self.reply(&key, &value);
        }
    }

    fn reply(&mut self, key: &ForkKey, value: &Result<ForkValue, ForkError>) {
        for waiter in self.waiting.remove(key).unwrap_or_default() {
            waiter.send(value.clone());
        }
    }

    /// One key's value from its calls' answers, cached on the way.
    fn decode(
        &self,
        key: &ForkKey,
        parts: Vec<Result<Value, String>>,
    ) -> Result<ForkValue, ForkError> {
        let mut values = Vec::with_capacity(parts.len());
        for part in parts {
            values.push(part.map_err(|message| self.bad(key, &format!("error {message:?}")))?);
        }
        match key {
            ForkKey::ChainId | ForkKey::HeadNumber => self.decode_number(key, &values[0]),
            ForkKey::Header(n) => self.decode_header(key, *n, &values[0]),
            ForkKey::BlockHash(n) => self.decode_block_hash(key, *n, &values[0]),
            ForkKey::Account(address) | ForkKey::AccountAt(_, address) => {
                self.decode_account(key, address, &values)
            }
            ForkKey::Storage(address, slot) | ForkKey::StorageAt(_, address, slot) => {
                self.decode_slot(key, address, slot, &values[0])
            }
            ForkKey::StorageRange(_) => Err(self.bad(key, "a storage page is not a value")),
            ForkKey::Block(n) => self.decode_block(key, *n, &values[0]),
            ForkKey::Receipts(n) => self.decode_receipts(key, *n, &values[0]),
            ForkKey::BlockNumber(hash) => self.decode_block_number(key, hash, &values[0]),
            ForkKey::TxLocation(hash) => self.decode_tx_location(key, hash, &values[0]),
            ForkKey::Logs(query) => self.decode_logs(key, query, &values[0]),
            ForkKey::Proof(query) => self.decode_proof(key, query, &values[0]),
            ForkKey::Simulate(query) => self.decode_simulated(key, query, &values[0]),
        }
    }

    /// The upstream answered `key` with something unusable: `what`.
    fn bad(&self, key: &ForkKey, what: &str) -> ForkError {
        // A forwarded simulation is named by its base block, not by its (large) payload.
        let named = match key {
            ForkKey::Simulate(query) => format!("eth_simulateV1 on block {}", query.base),
            other => format!("{other:?}"),
        };
        ForkError::Upstream(format!("{}: {what} for {named}", self.upstream_name()))
    }

    /// The chain id (cached) or the head number.
    fn decode_number(&self, key: &ForkKey, value: &Value) -> Result<ForkValue, ForkError> {
        let n = quantity_u64(value).ok_or_else(|| self.bad(key, "not a quantity"))?;
        if *key == ForkKey::ChainId {
            self.cache.put_chain_id(n).map_err(cache_err)?;
        }
        Ok(ForkValue::Number(n))
    }

    /// Block `n`'s header, and its transaction count when the answer lists them.
    fn decode_header(&self, key: &ForkKey, n: u64, value: &Value) -> Result<ForkValue, ForkError> {
        if value.is_null() {
            return Err(self.bad(key, &format!("block {n} is not in the upstream chain")));
        }
        let header: alloy_rpc_types_eth::Header = serde_json::from_value(value.clone())
            .map_err(|e| self.bad(key, &format!("undecodable header ({e})")))?;
        let hash = header.hash;
        let header = header.inner;
        if let Some(transactions) = value.get("transactions").and_then(Value::as_array) {
            self.cache.put_tx_count(n, transactions.len() as u64).map_err(cache_err)?;
        }
        self.cache.put_header(&header, hash).map_err(cache_err)?;
        Ok(ForkValue::Header(Box::new(header), hash))
    }

    /// Block `n`'s hash (`None`: no such block upstream).
    fn decode_block_hash(
        &self,
        key: &ForkKey,
        n: u64,
        value: &Value,
    ) -> Result<ForkValue, ForkError> {
        let hash = match value.get("hash").and_then(Value::as_str) {
            Some(hash) => Some(hash.parse::<B256>().map_err(|_| self.bad(key, "bad block hash"))?),
            None => None,
        };
        if let Some(hash) = hash {
            self.cache.put_block_hash(n, hash).map_err(cache_err)?;
        }
        Ok(ForkValue::BlockHash(hash))
    }

    /// An account, at the fork block or (`AccountAt`) at an earlier one: one
    /// `eth_getAccountInfo` object, or the three plain answers.
    fn decode_account(
        &self,
        key: &ForkKey,
        address: &Address,
        values: &[Value],
    ) -> Result<ForkValue, ForkError> {
        let bad = |what: &str| self.bad(key, what);
        let (balance, nonce, code) = match values {
            [info] => (&info["balance"], &info["nonce"], &info["code"]),
            [balance, nonce, code] => (balance, nonce, code),
            _ => return Err(bad("an account answer of another shape")),
        };
        let balance = quantity_u256(balance).ok_or_else(|| bad("bad balance"))?;
        let nonce = quantity_u64(nonce).ok_or_else(|| bad("bad nonce"))?;
        let code: Bytes = serde_json::from_value(code.clone()).map_err(|_| bad("bad code"))?;
        let code_hash = if code.is_empty() { EMPTY_CODE_HASH } else { keccak256(&code) };
        let account = (nonce != 0 || !balance.is_zero() || !code.is_empty())
            .then_some(ForkedAccount { nonce, balance, code_hash });
        let stored = match key {
            ForkKey::AccountAt(n, _) => self
                .cache
                .historical(*n)
                .and_then(|state| state.put_account(address, account.as_ref(), &code)),
            _ => self.cache.put_account(address, account.as_ref(), &code),
        };
        stored.map_err(cache_err)?;
        Ok(ForkValue::Account(account))
    }

    /// A storage slot, at the fork block or (`StorageAt`) at an earlier one.
    fn decode_slot(
        &self,
        key: &ForkKey,
        address: &Address,
        slot: &U256,
        value: &Value,
    ) -> Result<ForkValue, ForkError> {
        let value = quantity_u256(value).ok_or_else(|| self.bad(key, "bad slot value"))?;
        let stored = match key {
            ForkKey::StorageAt(n, ..) => {
                self.cache.historical(*n).and_then(|state| state.put_slot(address, slot, value))
            }
            _ => self.cache.put_slot(address, slot, value),
        };
        stored.map_err(cache_err)?;
        Ok(ForkValue::Storage(value))
    }

    /// Block `n` whole (`None`: no such block upstream), with the fields only the answer
    /// carries.
    fn decode_block(&self, key: &ForkKey, n: u64, value: &Value) -> Result<ForkValue, ForkError> {
        if value.is_null() {
            return Ok(ForkValue::Block(None));
        }
        let block = decode_block(value).map_err(|why| self.bad(key, &why))?;
        if block.header.number != n {
            let answered = format!("block {} answered for block {n}", block.header.number);
            return Err(self.bad(key, &answered));
        }
        self.cache.put_header(&block.header, block.hash).map_err(cache_err)?;
        let count = block.body.transactions.len() as u64;
        self.cache.put_tx_count(n, count).map_err(cache_err)?;
        // Fields only the answer carries, kept so that the fork answers as the upstream.
        if let Some(td) = value.get("totalDifficulty").and_then(quantity_u256) {
            self.cache.put_total_difficulty(n, td).map_err(cache_err)?;
        }
        if let Some(size) = value.get("size").and_then(quantity_u64) {
            self.cache.put_size(n, size).map_err(cache_err)?;
        }
        self.cache.put_body(n, &block.body, &block.extras).map_err(cache_err)?;
        Ok(ForkValue::Block(Some(Box::new(block))))
    }

    /// Block `n`'s receipts (`None`: no such block upstream).
    fn decode_receipts(
        &self,
        key: &ForkKey,
        n: u64,
        value: &Value,
    ) -> Result<ForkValue, ForkError> {
        if value.is_null() {
            return Ok(ForkValue::Receipts(None));
        }
        let receipts: Vec<alloy_rpc_types_eth::TransactionReceipt> =
            serde_json::from_value(value.clone())
                .map_err(|e| self.bad(key, &format!("undecodable receipts ({e})")))?;
        let receipts: Vec<_> =
            receipts.into_iter().map(|r| r.inner.map_logs(|log| log.inner)).collect();
        self.cache.put_receipts(n, &receipts).map_err(cache_err)?;
        Ok(ForkValue::Receipts(Some(receipts)))
    }

    /// The number of the block with `hash` (`None`: unknown upstream).
    fn decode_block_number(
        &self,
        key: &ForkKey,
        hash: &B256,
        value: &Value,
    ) -> Result<ForkValue, ForkError> {
        let number = match value.get("number") {
            Some(number) => Some(quantity_u64(number).ok_or_else(|| self.bad(key, "bad number"))?),
            None => None,
        };
        let location = number.map(|n| (n, 0));
        self.cache.put_location(LocationKind::Block, hash, location).map_err(cache_err)?;
        Ok(ForkValue::Location(location))
    }

    /// Where the transaction `hash` is: its block number and index.
    fn decode_tx_location(
        &self,
        key: &ForkKey,
        hash: &B256,
        value: &Value,
    ) -> Result<ForkValue, ForkError> {
        let at = |field: &str| value.get(field).filter(|v| !v.is_null());
        let location = match (at("blockNumber"), at("transactionIndex")) {
            (Some(number), Some(index)) => {
                let number =
                    quantity_u64(number).ok_or_else(|| self.bad(key, "bad block number"))?;
                let index = quantity_u64(index)
                    .and_then(|i| u32::try_from(i).ok())
                    .ok_or_else(|| self.bad(key, "bad transaction index"))?;
                Some((number, index))
            }
            // Unknown, or pending upstream: never below this fork block.
            _ => None,
        };
        let kind = LocationKind::Transaction;
        self.cache.put_location(kind, hash, location).map_err(cache_err)?;
        Ok(ForkValue::Location(location))
    }

    /// The logs `query` matches, kept as the upstream's JSON.
    fn decode_logs(
        &self,
        key: &ForkKey,
        query: &LogQuery,
        value: &Value,
    ) -> Result<ForkValue, ForkError> {
        if !value.is_array() {
            return Err(self.bad(key, "logs that are not an array"));
        }
        let json = serde_json::to_vec(value).map_err(|e| self.bad(key, &e.to_string()))?;
        self.cache.put_logs(query, &json).map_err(cache_err)?;
        Ok(ForkValue::Json(Arc::new(json)))
    }

    /// An upstream proof, kept as it came once it is the object asked for: the account
    /// named, one storage proof a slot. Whether its nodes hash to the block's root is the
    /// reader's to check: it is served as the upstream's answer.
    fn decode_proof(
        &self,
        key: &ForkKey,
        query: &ProofQuery,
        value: &Value,
    ) -> Result<ForkValue, ForkError> {
        let address = value.get("address").and_then(Value::as_str);
        let named = address.and_then(|a| a.parse::<Address>().ok()) == Some(query.address);
        let slots = value.get("storageProof").and_then(Value::as_array).map(Vec::len);
        if !named || value.get("accountProof").is_none_or(|p| !p.is_array()) {
            return Err(self.bad(key, "a proof of another account, or no account proof"));
        }
        if slots != Some(query.slots.len()) {
            return Err(self.bad(key, "a proof with another number of storage proofs"));
        }
        let json = serde_json::to_vec(value).map_err(|e| self.bad(key, &e.to_string()))?;
        self.cache.put_proof(query, &json).map_err(cache_err)?;
        Ok(ForkValue::Json(Arc::new(json)))
    }

    /// The upstream's simulated blocks, kept as they came once they are an array.
    fn decode_simulated(
        &self,
        key: &ForkKey,
        query: &SimulateQuery,
        value: &Value,
    ) -> Result<ForkValue, ForkError> {
        if !value.is_array() {
            return Err(self.bad(key, "simulated blocks that are not an array"));
        }
        let json = serde_json::to_vec(value).map_err(|e| self.bad(key, &e.to_string()))?;
        self.cache.put_simulated(query, &json).map_err(cache_err)?;
        Ok(ForkValue::Json(Arc::new(json)))
    }

    fn upstream_name(&self) -> String {
        format!("{:?}", self.upstream)
    }

    fn is_state_key(key: &ForkKey) -> bool {
        matches!(
            key,
            ForkKey::Account(_)
                | ForkKey::Storage(..)
                | ForkKey::AccountAt(..)
                | ForkKey::StorageAt(..)
        )
    }
}

/// A fork cache write that failed, as the reader sees it.
fn cache_err(e: cache::ForkCacheError) -> ForkError {
    ForkError::Upstream(e.to_string())
}

/// An `eth_getLogs` filter object for `query` (a topic position that takes any topic is
/// `null`).
fn log_filter(query: &LogQuery) -> Value {
    let topics: Vec<Value> = query
        .topics
        .iter()
        .map(|set| if set.is_empty() { Value::Null } else { json!(set) })
        .collect();
    json!({
        "fromBlock": format!("{:#x}", query.from),
        "toBlock": format!("{:#x}", query.to),
        "address": query.addresses,
        "topics": topics,
    })
}

/// An upstream block with full transactions as the fork keeps it. A block with ommers is
/// refused: the answer names only their hashes, and a block here keeps their headers.
fn decode_block(value: &Value) -> Result<ForkedBlock, String> {
    let block: alloy_rpc_types_eth::Block =
        serde_json::from_value(value.clone()).map_err(|e| format!("undecodable block ({e})"))?;
    if !block.uncles.is_empty() {
        return Err(format!(
            "block {} has ommers, which a fork does not serve yet",
            block.header.number
        ));
    }
    let transactions = match block.transactions {
        alloy_rpc_types_eth::BlockTransactions::Full(transactions) => transactions,
        alloy_rpc_types_eth::BlockTransactions::Hashes(hashes) if hashes.is_empty() => vec![],
        _ => return Err("a block without its transactions".to_owned()),
    };
    let (transactions, senders) = transactions.into_iter().map(|tx| tx.inner.into_parts()).unzip();
    let withdrawals = block.withdrawals.map(|w| w.into_inner()).unwrap_or_default();
    Ok(ForkedBlock {
        header: block.header.inner,
        hash: block.header.hash,
        body: StoredBody { transactions, senders },
        extras: BlockExtras { ommers: vec![], withdrawals },
    })
}

/// A `debug_storageRangeAt` answer's entries, and whether it held the whole storage (no
/// `nextKey`).
fn parse_page(page: &Value) -> Result<(Vec<cache::PageEntry>, bool), String> {
    let storage = page["storage"].as_object().ok_or("no storage object in the answer")?;
    let whole = page["nextKey"].is_null();
    let mut entries = Vec::with_capacity(storage.len());
    for (hashed, entry) in storage {
        let hashed: B256 = hashed.parse().map_err(|_| format!("bad hashed slot {hashed:?}"))?;
        let value: B256 = serde_json::from_value(entry["value"].clone())
            .map_err(|_| format!("bad value of {hashed}"))?;
        // A preimage is used only when it hashes to the key it came with.
        let slot = serde_json::from_value::<B256>(entry["key"].clone())
            .ok()
            .filter(|slot| keccak256(slot) == hashed)
            .map(|slot| U256::from_be_bytes(slot.0));
        entries.push((hashed, slot, U256::from_be_bytes(value.0)));
    }
    Ok((entries, whole))
}

fn quantity_u64(v: &Value) -> Option<u64> {
    u64::from_str_radix(v.as_str()?.strip_prefix("0x")?, 16).ok()
}

fn quantity_u256(v: &Value) -> Option<U256> {
    let hex = v.as_str()?.strip_prefix("0x")?;
    if hex.is_empty() {
        return Some(U256::ZERO);
    }
    U256::from_str_radix(hex, 16).ok()
}

impl Handler<Fetch> for ForkBackendActor {
    type Result = ();

    fn handle(&mut self, msg: Fetch, ctx: &mut Self::Context) {
        let Fetch { key, reply } = msg;
        if Self::is_state_key(&key) && self.block.is_none() {
            reply.send(Err(ForkError::Backend("state read before the fork block is set")));
            return;
        }
        match self.cached(&key) {
            Ok(Some(value)) => {
                self.counters.add_hit();
                reply.send(Ok(value));
                return;
            }
            Ok(None) => {}
            Err(error) => {
                reply.send(Err(error));
                return;
            }
        }
        if let Some(waiters) = self.waiting.get_mut(&key) {
            self.counters.add_coalesced();
            waiters.push(reply);
            return;
        }
        self.waiting.insert(key.clone(), vec![reply]);
        self.enqueue(key);
        if !self.flush_scheduled {
            self.flush_scheduled = true;
            // After the keys already in the mailbox have queued too: they go in one batch.
            ctx.run_later(Duration::ZERO, |actor, ctx| {
                actor.flush_scheduled = false;
                actor.flush(ctx);
            });
        }
    }
}

/// Sends later reads to another endpoint (anvil_setRpcUrl) once it proves to serve the same
/// chain: its chain id and the pinned fork block's hash are the cached ones. Reads already on
/// their way finish at the old endpoint. What the old endpoint did not serve (anvil's
/// `eth_getAccountInfo`, storage pages) is asked of the new one again.
#[derive(Debug, Clone)]
pub struct SwitchUpstream {
    /// The new endpoint, with the node's other upstream settings.
    pub config: UpstreamConfig,
}

impl Message for SwitchUpstream {
    type Result = Result<(), ForkError>;
}

impl Handler<SwitchUpstream> for ForkBackendActor {
    type Result = ResponseActFuture<Self, Result<(), ForkError>>;

    fn handle(&mut self, msg: SwitchUpstream, _ctx: &mut Self::Context) -> Self::Result {
        let candidate = Upstream::new(msg.config, Arc::clone(&self.counters));
        // The upstream's chain id, when the fork asked it (`--fork-chain-id` may have spared it).
        let chain_id = self.cache.chain_id().ok().flatten();
        let (Some(block), Some(hash)) = (self.block, self.pinned.map(|(hash, _)| hash)) else {
            return Box::pin(actix::fut::ready(Err(ForkError::Upstream(
                "the fork has not started yet".to_owned(),
            ))));
        };
        let calls = vec![
            ("eth_chainId", json!([])),
            ("eth_getBlockByNumber", json!([format!("{block:#x}"), false])),
        ];
        let name = format!("{candidate:?}");
        let check = Rc::clone(&candidate).batch(calls);
        Box::pin(check.into_actor(self).map(move |answer, actor, _ctx| {
            let refused = |why: String| Err(ForkError::Upstream(format!("{name}: {why}")));
            let parts = match answer {
                Ok(parts) => parts,
                Err(e) => return refused(e),
            };
            let served_id = parts[0].as_ref().ok().and_then(quantity_u64);
            if let Some(chain_id) = chain_id
                && served_id != Some(chain_id)
            {
                let served =
                    served_id.map_or_else(|| "no chain id".to_owned(), |id| id.to_string());
                return refused(format!(
                    "serves chain id {served}, the fork's upstream {chain_id}"
                ));
            }
            let served_hash =
                parts[1].as_ref().ok().and_then(|b| b.get("hash")).and_then(Value::as_str);
            if served_hash.and_then(|h| h.parse::<B256>().ok()) != Some(hash) {
                return refused(format!("does not have the fork block {block} with hash {hash}"));
            }
            actor.upstream = candidate;
            actor.account_info = true;
            actor.account_info_served = false;
            actor.account_fallback.clear();
            // Pages are asked of the new endpoint again, even if the old one refused them.
            actor.storage_range = actor.pinned;
            actor.range_refused = 0;
            actor.range_served = false;
            Ok(())
        }))
    }
}

impl Handler<PinFork> for ForkBackendActor {
    type Result = ();

    fn handle(&mut self, msg: PinFork, _ctx: &mut Self::Context) {
        let pinned = self
            .cache
            .pin(msg.chain_id, msg.block)
            .map(|()| {
                self.block = Some(msg.block);
                self.storage_range = msg.storage_range;
                self.pinned = msg.storage_range;
                self.range_asked.clear();
                // Keys parked behind a page of the previous block go upstream at this one.
                let parked: Vec<ForkKey> = self.parked.drain().flat_map(|(_, keys)| keys).collect();
                self.queue.extend(parked);
            })
            .map_err(|e| ForkError::Upstream(e.to_string()));
        let _ = msg.reply.try_send(pinned);
    }
}
