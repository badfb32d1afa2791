//! `ForkClient`: how the store reads forked state, from any thread but the backend's.
//!
//! A read looks in the fork cache first (a sled lookup, no message). In a collecting run
//! (`hearth_messages::fork::misses`: calls, estimates, traces and the RPC front's state reads)
//! a miss is noted and read as a stand-in, and the caller fetches it without holding the
//! thread. Elsewhere a miss sends one [`Fetch`] to the backend and blocks the calling thread
//! for that key only, at most the configured wait: block building and the state owner run
//! outside any async runtime, so a blocking wait is theirs to make; the backend runs on its
//! own arbiter, so it never waits on a thread that waits on it.

use std::sync::Arc;
use std::sync::mpsc::{Receiver, RecvTimeoutError, sync_channel};
use std::time::{Duration, Instant};

use actix::prelude::*;
use alloy_consensus::{Header, ReceiptEnvelope};
use alloy_primitives::{Address, B256, Bytes, U256};
use hearth_messages::fork::misses::{self, MissSource};
use hearth_messages::fork::{
    Fetch, ForkCounters, ForkError, ForkKey, ForkReply, ForkValue, PinFork,
};
use hearth_storage::{
    BlockExtras, ForkSource, ForkedAccount, LogQuery, ProofQuery, SimulateQuery, StorageError,
    StoredBody,
};

use super::cache::{ForkCache, ForkCacheError, LocationKind};

/// Most keys one prefetch sends the backend at once: a quarter of its mailbox
/// (`super::DEFAULT_MAILBOX`), which the other readers share.
const PREFETCH_CHUNK: usize = 256;

/// The store's handle on the fork backend and its cache.
#[derive(Debug, Clone)]
pub struct ForkClient {
    fetch: Recipient<Fetch>,
    pin: Recipient<PinFork>,
    cache: ForkCache,
    counters: Arc<ForkCounters>,
    block: u64,
    wait: Duration,
}

impl ForkClient {
    /// An answer kept as the upstream's JSON: `cached`, else fetched as `key`.
    fn json_answer(&self, cached: Option<Vec<u8>>, key: ForkKey) -> Result<Vec<u8>, StorageError> {
        if let Some(json) = cached {
            self.counters.add_hit();
            return Ok(json);
        }
        match self.fetch(key).map_err(storage_error)? {
            ForkValue::Json(json) => Ok(json.to_vec()),
            other => Err(storage_error(unexpected(&other))),
        }
    }

    /// `what` of block `number` was asked of the upstream, which serves only blocks up to the
    /// fork block (below it, for a simulation).
    fn above_fork(&self, what: &str, number: u64) -> StorageError {
        StorageError::Fork(format!(
            "{what} {number} asked of the upstream, past what it serves for the fork block {}",
            self.block
        ))
    }

    /// A client of the backend at `backend`, reading `cache` (the backend's), waiting at most
    /// `wait` for one value.
    pub fn new(
        backend: &Addr<super::ForkBackendActor>,
        cache: ForkCache,
        counters: Arc<ForkCounters>,
        wait: Duration,
    ) -> Self {
        Self {
            fetch: backend.clone().recipient(),
            pin: backend.clone().recipient(),
            cache,
            counters,
            block: 0,
            wait,
        }
    }

    /// Fetches one value (the backend answers from its cache when it can), blocking the
    /// calling thread; in a collecting run, notes it and answers a stand-in instead. Never call
    /// it on the backend's own arbiter.
    pub fn fetch(&self, key: ForkKey) -> Result<ForkValue, ForkError> {
        if let Some(stand_in) = misses::note(&key, || self.miss_source()) {
            return stand_in;
        }
        let deadline = Instant::now() + self.wait;
        self.wait_for(self.send(key)?, deadline)
    }

    /// Fetches several values at once (they go upstream in one batch), blocking the calling
    /// thread until all are in or the wait is over; in a collecting run, notes them all.
    pub fn fetch_many(&self, keys: &[ForkKey]) -> Vec<Result<ForkValue, ForkError>> {
        if misses::collecting() {
            return keys.iter().map(|key| self.fetch(key.clone())).collect();
        }
        let deadline = Instant::now() + self.wait;
        let sent: Vec<_> = keys.iter().map(|key| self.send(key.clone())).collect();
        sent.into_iter().map(|answer| self.wait_for(answer?, deadline)).collect()
    }

    /// Where a collecting run's misses are fetched: this backend.
    fn miss_source(&self) -> MissSource {
        MissSource { backend: self.fetch.clone(), wait: self.wait }
    }

    fn send(&self, key: ForkKey) -> Result<Receiver<Result<ForkValue, ForkError>>, ForkError> {
        let (reply, answer) = sync_channel(1);
        let fetch = Fetch { key, reply: ForkReply::Blocking(reply) };
        self.fetch.try_send(fetch).map_err(|e| match e {
            SendError::Full(_) => ForkError::Backend("its mailbox is full"),
            SendError::Closed(_) => ForkError::STOPPED,
        })?;
        Ok(answer)
    }

    fn wait_for(
        &self,
        answer: Receiver<Result<ForkValue, ForkError>>,
        deadline: Instant,
    ) -> Result<ForkValue, ForkError> {
        let left = deadline.saturating_duration_since(Instant::now());
        answer.recv_timeout(left).map_err(|e| match e {
            RecvTimeoutError::Timeout => ForkError::timed_out(self.wait),
            RecvTimeoutError::Disconnected => ForkError::Backend("it stopped without answering"),
        })?
    }

    /// Fixes the fork block: opens its state cache here and in the backend. `storage_range`:
    /// the fork block's hash and transaction count, where storage pages may be asked for.
    pub fn pin(
        &mut self,
        chain_id: u64,
        block: u64,
        storage_range: Option<(B256, u64)>,
    ) -> Result<(), ForkError> {
        self.cache.pin(chain_id, block).map_err(|e| ForkError::Upstream(e.to_string()))?;
        let (reply, answer) = sync_channel(1);
        self.pin.try_send(PinFork { chain_id, block, storage_range, reply }).map_err(
            |e| match e {
                SendError::Full(_) => ForkError::Backend("its mailbox is full"),
                SendError::Closed(_) => ForkError::Backend("it has stopped"),
            },
        )?;
        answer.recv_timeout(self.wait).map_err(|_| ForkError::Backend("it did not answer"))??;
        self.block = block;
        Ok(())
    }

    /// The cache it reads.
    pub const fn cache(&self) -> &ForkCache {
        &self.cache
    }

    /// The account at the fork block.
    pub fn account_at_fork(&self, address: &Address) -> Result<Option<ForkedAccount>, ForkError> {
        let cached = self.cache.account(address).map_err(|e| ForkError::Upstream(e.to_string()))?;
        if let Some(account) = cached {
            self.counters.add_hit();
            return Ok(account);
        }
        match self.fetch(ForkKey::Account(*address))? {
            ForkValue::Account(account) => Ok(account),
            other => Err(unexpected(&other)),
        }
    }
}

impl ForkClient {
    /// Upstream block `number` (header, hash, body, extras), from the cache or the upstream.
    fn block_at(
        &self,
        number: u64,
    ) -> Result<Option<hearth_messages::fork::ForkedBlock>, StorageError> {
        let cached = (
            self.cache.header(number).map_err(cache_error)?,
            self.cache.body(number).map_err(cache_error)?,
        );
        if let (Some((header, hash)), Some((body, extras))) = cached {
            self.counters.add_hit();
            return Ok(Some(hearth_messages::fork::ForkedBlock { header, hash, body, extras }));
        }
        // Whoever reads a block's body reads its receipts next (a whole block is served with
        // both): they go upstream in the same batch.
        let mut keys = vec![ForkKey::Block(number)];
        if self.cache.receipts(number).map_err(cache_error)?.is_none() {
            keys.push(ForkKey::Receipts(number));
        }
        let block = self.fetch_many(&keys).swap_remove(0);
        match block.map_err(storage_error)? {
            ForkValue::Block(block) => Ok(block.map(|b| *b)),
            other => Err(storage_error(unexpected(&other))),
        }
    }

    /// Where a block or transaction hash is upstream, when below the fork block.
    fn location(
        &self,
        kind: LocationKind,
        hash: &B256,
    ) -> Result<Option<(u64, u32)>, StorageError> {
        let location = match self.cache.location(kind, hash).map_err(cache_error)? {
            Some(location) => {
                self.counters.add_hit();
                location
            }
            None => {
                let key = match kind {
                    LocationKind::Block => ForkKey::BlockNumber(*hash),
                    LocationKind::Transaction => ForkKey::TxLocation(*hash),
                };
                match self.fetch(key).map_err(storage_error)? {
                    ForkValue::Location(location) => location,
                    other => return Err(storage_error(unexpected(&other))),
                }
            }
        };
        // The fork block and what came after it upstream are not this chain's history.
        Ok(location.filter(|(number, _)| *number < self.block))
    }
}

impl ForkClient {
    /// Refuses historical state at or after the fork block: that state is the fork block's
    /// (`ForkSource::account`) or local.
    fn below_fork(&self, number: u64) -> Result<(), StorageError> {
        if number >= self.block {
            return Err(StorageError::Fork(format!(
                "historical state of block {number} asked, not below the fork block {}",
                self.block
            )));
        }
        Ok(())
    }
}

fn cache_error(error: ForkCacheError) -> StorageError {
    StorageError::Fork(error.to_string())
}

fn unexpected(value: &ForkValue) -> ForkError {
    ForkError::Upstream(format!("the backend answered a different kind of value: {value:?}"))
}

fn storage_error(error: ForkError) -> StorageError {
    StorageError::Fork(error.to_string())
}

impl ForkSource for ForkClient {
    fn block(&self) -> u64 {
        self.block
    }

    fn account(&self, address: &Address) -> Result<Option<ForkedAccount>, StorageError> {
        self.account_at_fork(address).map_err(storage_error)
    }

    fn storage(&self, address: &Address, slot: &U256) -> Result<U256, StorageError> {
        let cached =
            self.cache.slot(address, slot).map_err(|e| StorageError::Fork(e.to_string()))?;
        if let Some(value) = cached {
            self.counters.add_hit();
            return Ok(value);
        }
        if hearth_storage::is_overwriting(address) {
            return Ok(U256::ZERO);
        }
        match self.fetch(ForkKey::Storage(*address, *slot)).map_err(storage_error)? {
            ForkValue::Storage(value) => Ok(value),
            other => Err(storage_error(unexpected(&other))),
        }
    }

    fn account_at(
        &self,
        number: u64,
        address: &Address,
    ) -> Result<Option<ForkedAccount>, StorageError> {
        self.below_fork(number)?;
        let cached = self.cache.historical(number).and_then(|state| state.account(address));
        if let Some(account) = cached.map_err(cache_error)? {
            self.counters.add_hit();
            return Ok(account);
        }
        match self.fetch(ForkKey::AccountAt(number, *address)).map_err(storage_error)? {
            ForkValue::Account(account) => Ok(account),
            other => Err(storage_error(unexpected(&other))),
        }
    }

    fn storage_at(
        &self,
        number: u64,
        address: &Address,
        slot: &U256,
    ) -> Result<U256, StorageError> {
        self.below_fork(number)?;
        let cached = self.cache.historical(number).and_then(|state| state.slot(address, slot));
        if let Some(value) = cached.map_err(cache_error)? {
            self.counters.add_hit();
            return Ok(value);
        }
        match self.fetch(ForkKey::StorageAt(number, *address, *slot)).map_err(storage_error)? {
            ForkValue::Storage(value) => Ok(value),
            other => Err(storage_error(unexpected(&other))),
        }
    }

    fn prefetch_at(&self, number: u64, addresses: &[Address]) -> Result<(), StorageError> {
        self.below_fork(number)?;
        let state = self.cache.historical(number).map_err(cache_error)?;
        let mut missing = std::collections::BTreeSet::new();
        for address in addresses {
            if state.account(address).map_err(cache_error)?.is_none() {
                missing.insert(*address);
            }
        }
        let keys: Vec<ForkKey> =
            missing.into_iter().map(|address| ForkKey::AccountAt(number, address)).collect();
        // A share of the backend's mailbox at a time; the first failure fails the replay now,
        // rather than each read after a wait of its own.
        for chunk in keys.chunks(PREFETCH_CHUNK) {
            for answer in self.fetch_many(chunk) {
                answer.map_err(storage_error)?;
            }
        }
        Ok(())
    }

    fn code(&self, code_hash: &B256) -> Result<Option<Bytes>, StorageError> {
        self.cache.code(code_hash).map_err(|e| StorageError::Fork(e.to_string()))
    }

    fn block_hash(&self, number: u64) -> Result<Option<B256>, StorageError> {
        let cached =
            self.cache.block_hash(number).map_err(|e| StorageError::Fork(e.to_string()))?;
        if let Some(hash) = cached {
            self.counters.add_hit();
            return Ok(Some(hash));
        }
        match self.fetch(ForkKey::BlockHash(number)).map_err(storage_error)? {
            ForkValue::BlockHash(hash) => Ok(hash),
            other => Err(storage_error(unexpected(&other))),
        }
    }

    fn header(&self, number: u64) -> Result<Option<Header>, StorageError> {
        if number > self.block {
            return Ok(None);
        }
        if let Some((header, _)) = self.cache.header(number).map_err(cache_error)? {
            self.counters.add_hit();
            return Ok(Some(header));
        }
        match self.fetch(ForkKey::Header(number)).map_err(storage_error)? {
            ForkValue::Header(header, _) => Ok(Some(*header)),
            other => Err(storage_error(unexpected(&other))),
        }
    }

    fn body(&self, number: u64) -> Result<Option<(StoredBody, BlockExtras)>, StorageError> {
        if number > self.block {
            return Ok(None);
        }
        Ok(self.block_at(number)?.map(|block| (block.body, block.extras)))
    }

    fn block_report(&self, number: u64) -> Result<(Option<U256>, Option<u64>), StorageError> {
        if number > self.block {
            return Ok((None, None));
        }
        let td = self.cache.total_difficulty(number).map_err(cache_error)?;
        Ok((td, self.cache.size(number).map_err(cache_error)?))
    }

    fn receipts(&self, number: u64) -> Result<Option<Vec<ReceiptEnvelope>>, StorageError> {
        if number > self.block {
            return Ok(None);
        }
        if let Some(receipts) = self.cache.receipts(number).map_err(cache_error)? {
            self.counters.add_hit();
            return Ok(Some(receipts));
        }
        match self.fetch(ForkKey::Receipts(number)).map_err(storage_error)? {
            ForkValue::Receipts(receipts) => Ok(receipts),
            other => Err(storage_error(unexpected(&other))),
        }
    }

    fn block_number(&self, hash: &B256) -> Result<Option<u64>, StorageError> {
        Ok(self.location(LocationKind::Block, hash)?.map(|(number, _)| number))
    }

    fn tx_location(&self, hash: &B256) -> Result<Option<(u64, u32)>, StorageError> {
        self.location(LocationKind::Transaction, hash)
    }

    fn logs(&self, query: &LogQuery) -> Result<Vec<u8>, StorageError> {
        if query.to > self.block {
            return Err(self.above_fork("logs of block", query.to));
        }
        let cached = self.cache.logs(query).map_err(cache_error)?;
        self.json_answer(cached, ForkKey::Logs(Box::new(query.clone())))
    }

    fn proof(&self, query: &ProofQuery) -> Result<Vec<u8>, StorageError> {
        if query.number > self.block {
            return Err(self.above_fork("a proof of block", query.number));
        }
        let cached = self.cache.proof(query).map_err(cache_error)?;
        self.json_answer(cached, ForkKey::Proof(Box::new(query.clone())))
    }

    fn simulate(&self, query: &SimulateQuery) -> Result<Vec<u8>, StorageError> {
        if query.base >= self.block {
            return Err(self.above_fork("a simulation on block", query.base));
        }
        let cached = self.cache.simulated(query).map_err(cache_error)?;
        self.json_answer(cached, ForkKey::Simulate(Box::new(query.clone())))
    }
}
