//! Messages of the fork backend (`ForkBackendActor`), which owns the upstream JSON-RPC
//! connection of a node started with `--fork-url`, and the counters it shares with `/metrics`.
//!
//! A [`Fetch`] carries a reply channel of its own instead of an actix response: some callers
//! are threads that block until their one key arrives, outside any async runtime (block
//! building, the state owner), and a synchronous channel with a timeout is what they can wait
//! on; the others are async callers that fetch what a collecting run missed ([`misses`]).

pub mod misses;

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::SyncSender;

use actix::Message;
use alloy_consensus::{Header, ReceiptEnvelope};
use alloy_primitives::{Address, B256, U256};
use crossbeam_utils::CachePadded;
use hearth_storage::{BlockExtras, ForkedAccount, LogQuery, ProofQuery, SimulateQuery, StoredBody};

/// One value the upstream can be asked for.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ForkKey {
    /// The upstream's chain id (`eth_chainId`).
    ChainId,
    /// The upstream's head block number (`eth_blockNumber`); never cached.
    HeadNumber,
    /// The header of upstream block `n` (`eth_getBlockByNumber`).
    Header(u64),
    /// Balance, nonce and code of an account at the fork block.
    Account(Address),
    /// One storage slot at the fork block.
    Storage(Address, U256),
    /// Balance, nonce and code of an account as of upstream block `n`, below the fork block
    /// (the historical state that state queries and traces of older blocks read).
    AccountAt(u64, Address),
    /// One storage slot as of upstream block `n`, below the fork block.
    StorageAt(u64, Address, U256),
    /// The hash of upstream block `n`.
    BlockHash(u64),
    /// A page of an account's storage at the fork block (`debug_storageRangeAt`), asked by the
    /// backend itself beside an account's first slot fetch; nobody waits for it.
    StorageRange(Address),
    /// Upstream block `n` with its transactions (`eth_getBlockByNumber` with full
    /// transactions): header, body, senders, withdrawals.
    Block(u64),
    /// The receipts of upstream block `n` (`eth_getBlockReceipts`).
    Receipts(u64),
    /// The number of the upstream block with this hash (`eth_getBlockByHash`).
    BlockNumber(B256),
    /// Where an upstream transaction was included (`eth_getTransactionByHash`).
    TxLocation(B256),
    /// The logs of upstream blocks matching a query (`eth_getLogs`).
    Logs(Box<LogQuery>),
    /// An account's proof with some of its slots at upstream block `n`, at or below the fork
    /// block (`eth_getProof`).
    Proof(Box<ProofQuery>),
    /// Simulated blocks on top of upstream block `n`, below the fork block (`eth_simulateV1`).
    Simulate(Box<SimulateQuery>),
}

/// The upstream's answer for a [`ForkKey`] of the same kind.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ForkValue {
    /// A chain id or a block number.
    Number(u64),
    /// A header, with the hash the upstream gives it.
    Header(Box<Header>, B256),
    /// An account (`None`: empty). Its code is in the fork cache by hash.
    Account(Option<ForkedAccount>),
    /// A slot's value.
    Storage(U256),
    /// A block hash (`None`: no such block upstream).
    BlockHash(Option<B256>),
    /// A block: header, its upstream hash, body and extras (`None`: no such block upstream).
    Block(Option<Box<ForkedBlock>>),
    /// A block's receipts (`None`: no such block upstream).
    Receipts(Option<Vec<ReceiptEnvelope>>),
    /// A block number, or where a transaction is (number and index); `None`: not below the
    /// fork block upstream.
    Location(Option<(u64, u32)>),
    /// An answer kept as the upstream's JSON: a logs array, a proof, simulated blocks.
    Json(Arc<Vec<u8>>),
}

/// An upstream block as the fork serves it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ForkedBlock {
    /// The header.
    pub header: Header,
    /// The upstream's hash of it.
    pub hash: B256,
    /// Transactions and their senders.
    pub body: StoredBody,
    /// Ommers and withdrawals.
    pub extras: BlockExtras,
}

/// Why a fork read failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ForkError {
    /// The upstream did not answer well within `--fork-timeout` (after `--fork-retries`).
    #[error("{0}")]
    Upstream(String),
    /// The fork backend is gone or its mailbox is full.
    #[error("fork backend unavailable: {0}")]
    Backend(&'static str),
    /// A collecting run read a key the cache lacks where no stand-in fits (see [`misses`]):
    /// the run stops, and its caller fetches the key and runs the request again.
    #[error("the read waits for the fork upstream")]
    Deferred,
}

impl ForkError {
    /// The backend stopped (its mailbox closed).
    pub const STOPPED: Self = Self::Backend("it has stopped");

    /// No answer came within `--fork-timeout`.
    pub fn timed_out(wait: std::time::Duration) -> Self {
        Self::Upstream(format!("no answer within --fork-timeout ({wait:?})"))
    }
}

/// Where a [`Fetch`]'s answer goes: a thread blocked on it, or a task awaiting it.
#[derive(Debug)]
pub enum ForkReply {
    /// A thread waiting with a timeout (`ForkClient::fetch`).
    Blocking(SyncSender<Result<ForkValue, ForkError>>),
    /// A task awaiting it (`misses::ForkMisses::fetch`).
    Async(tokio::sync::oneshot::Sender<Result<ForkValue, ForkError>>),
}

impl ForkReply {
    /// Hands over the answer; a waiter that gave up (timed out) has dropped its end, and then
    /// nothing happens.
    pub fn send(self, value: Result<ForkValue, ForkError>) {
        match self {
            Self::Blocking(reply) => {
                let _ = reply.try_send(value);
            }
            Self::Async(reply) => {
                let _ = reply.send(value);
            }
        }
    }
}

/// Asks the backend for one value: from its cache, from a fetch already under way for the same
/// key, or from the next upstream batch.
#[derive(Debug)]
pub struct Fetch {
    /// What to fetch.
    pub key: ForkKey,
    /// Where the answer goes (exactly once).
    pub reply: ForkReply,
}

impl Message for Fetch {
    type Result = ();
}

/// Opens the cache of the forked state at `block` of chain `chain_id` (the state tree of the
/// fork cache); state keys are refused until it is sent.
#[derive(Debug)]
pub struct PinFork {
    /// The upstream's chain id.
    pub chain_id: u64,
    /// The fork block.
    pub block: u64,
    /// The fork block's upstream hash and transaction count, at which a contract's storage is
    /// asked for in pages (`None`: slot by slot only).
    pub storage_range: Option<(B256, u64)>,
    /// Where the outcome goes.
    pub reply: SyncSender<Result<(), ForkError>>,
}

impl Message for PinFork {
    type Result = ();
}

/// How many stripes the cache-hit counter has: executor threads and RPC workers count hits
/// on their own cache line.
const HIT_STRIPES: usize = 8;

/// The fork backend's counters, for `/metrics`. The backend alone bumps the fetch counters;
/// cache hits are counted where they happen (the reading thread), on striped cache lines.
#[derive(Debug, Default)]
pub struct ForkCounters {
    upstream_requests: AtomicU64,
    fetched: AtomicU64,
    coalesced: AtomicU64,
    errors: AtomicU64,
    hits: [CachePadded<AtomicU64>; HIT_STRIPES],
}

/// A snapshot of [`ForkCounters`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ForkStats {
    /// HTTP requests sent upstream (one JSON-RPC batch is one request; retries count).
    pub upstream_requests: u64,
    /// Keys fetched from the upstream (each key once, however many waited for it).
    pub fetched: u64,
    /// Reads that joined a fetch already under way for the same key.
    pub coalesced: u64,
    /// Reads answered from the fork cache (memory or disk) without the upstream.
    pub cache_hits: u64,
    /// Keys whose fetch failed (each waiter got a `fork upstream` error).
    pub errors: u64,
}

impl ForkCounters {
    /// New shared counters at zero.
    pub fn shared() -> Arc<Self> {
        Arc::default()
    }

    /// Counts `n` upstream HTTP requests.
    pub fn add_requests(&self, n: u64) {
        self.upstream_requests.fetch_add(n, Ordering::Relaxed);
    }

    /// Counts `n` keys fetched.
    pub fn add_fetched(&self, n: u64) {
        self.fetched.fetch_add(n, Ordering::Relaxed);
    }

    /// Counts one read that joined a fetch under way.
    pub fn add_coalesced(&self) {
        self.coalesced.fetch_add(1, Ordering::Relaxed);
    }

    /// Counts `n` keys whose fetch failed.
    pub fn add_errors(&self, n: u64) {
        self.errors.fetch_add(n, Ordering::Relaxed);
    }

    /// Counts one cache hit on the calling thread's stripe.
    pub fn add_hit(&self) {
        thread_local! {
            static STRIPE: usize = {
                use std::hash::BuildHasher;
                let hash = std::collections::hash_map::RandomState::new()
                    .hash_one(std::thread::current().id());
                (hash as usize) % HIT_STRIPES
            };
        }
        STRIPE.with(|stripe| self.hits[*stripe].fetch_add(1, Ordering::Relaxed));
    }

    /// The counters now.
    pub fn stats(&self) -> ForkStats {
        ForkStats {
            upstream_requests: self.upstream_requests.load(Ordering::Relaxed),
            fetched: self.fetched.load(Ordering::Relaxed),
            coalesced: self.coalesced.load(Ordering::Relaxed),
            cache_hits: self.hits.iter().map(|h| h.load(Ordering::Relaxed)).sum(),
            errors: self.errors.load(Ordering::Relaxed),
        }
    }
}
