//! Starting a forked chain (`--fork-url`): the fork backend, its cache, the fork block and the
//! local chain's first block.
//!
//! The upstream is asked for its chain id (unless `--fork-chain-id` or the cache knows it), its
//! head (when the fork block is relative to it) and the fork block's header (unless cached).
//! The local chain is kept in memory and starts with that header verbatim, the dev accounts
//! funded over their upstream nonce and code; everything else is read from the upstream as
//! executions touch it.

pub mod before_tx;
pub mod rules;

use std::sync::Arc;
use std::time::Duration;

use alloy_consensus::ReceiptEnvelope;
use alloy_primitives::{Address, B256, U256};
use hearth_actors::fork::{
    DEFAULT_MAX_BATCH, DEFAULT_MAX_IN_FLIGHT, ForkBackendActor, ForkCache, ForkClient,
};
use hearth_messages::fork::{ForkCounters, ForkError, ForkKey, ForkValue, ForkedBlock};
use hearth_storage::{
    AccountChange, AccountFields, BlockDraft, ChainWriter, EMPTY_CODE_HASH, StateDiff,
};
use tracing::{info, warn};

use crate::config::{ForkBlock, ForkSettings};

/// How much longer than `--fork-timeout` a reader waits for the backend's own answer (which
/// says why it failed) before it gives up on its own.
const WAIT_MARGIN: Duration = Duration::from_millis(500);

/// What starting a fork can fail on.
#[derive(Debug, thiserror::Error)]
pub enum ForkStartError {
    /// The upstream did not answer what the fork needs (the reason names the upstream).
    #[error("cannot fork: {source}; check --fork-url (or raise --fork-timeout)")]
    Upstream {
        /// The upstream (without path or credentials).
        url: String,
        /// Why.
        source: ForkError,
    },
    /// `--fork-block-number -N` reaches below block 0.
    #[error("--fork-block-number -{behind}: the upstream's head is only block {head}")]
    BehindGenesis {
        /// How far below the head.
        behind: u64,
        /// The upstream head.
        head: u64,
    },
    /// The local chain could not be written.
    #[error("cannot write the fork's first block: {0}")]
    Storage(#[from] hearth_storage::StorageError),
}

/// What a node knows of the fork it runs. The backend itself lives as long as the chain that
/// reads through it (its `ForkClient` is the chain's fork source): after anvil_reset, until
/// the last request on the old chain has finished.
#[derive(Debug)]
pub struct ForkHandle {
    /// The backend's counters, for `/metrics` (the same across resets).
    pub counters: Arc<ForkCounters>,
    /// The fork cache (anvil_reset forks again through it: the directory is open already).
    pub cache: ForkCache,
    /// The fork block.
    pub block: u64,
    /// The upstream's hash of the fork block.
    pub block_hash: B256,
    /// The chain id the fork runs under.
    pub chain_id: u64,
    /// `--fork-transaction-hash`: the transactions to replay over the fork block.
    pub replay: Option<before_tx::Replay>,
    /// The fork backend, which anvil_setRpcUrl points at another endpoint.
    pub backend: actix::Addr<ForkBackendActor>,
}

/// What a fork starts from besides its settings: the dev accounts to fund (`balance` wei each
/// at the fork block) and, on anvil_reset, what the node's earlier fork leaves to reuse.
#[derive(Debug, Clone)]
pub struct ForkStart<'a> {
    /// Funded at the fork block.
    pub dev_accounts: &'a [Address],
    /// Their balance.
    pub balance: U256,
    /// The open fork cache (`None`: open the one the settings name).
    pub cache: Option<ForkCache>,
    /// Counters to keep counting in (`None`: new ones).
    pub counters: Option<Arc<ForkCounters>>,
}

/// The local chain of a fork, with its first block written, and the backend serving it.
pub fn open_fork(
    settings: &ForkSettings,
    start: ForkStart<'_>,
) -> Result<(ChainWriter, ForkHandle), ForkStartError> {
    let ForkStart { dev_accounts, balance, cache, counters } = start;
    let url = settings.upstream.display_url();
    let upstream_err = |source| ForkStartError::Upstream { url: url.clone(), source };
    let cache = match cache.map(|open| open.for_endpoint(&settings.upstream.url)) {
        Some(Ok(cache)) => cache,
        Some(Err(e)) => return Err(upstream_err(ForkError::Upstream(e.to_string()))),
        None => open_cache(settings),
    };
    let counters = counters.unwrap_or_else(ForkCounters::shared);
    let (mut client, backend) = start_backend(settings, cache, &counters);
    let ForkPoint { chain_id, block, replay } = fork_point(&client, settings, upstream_err)?;
    // The fork block whole: the local chain serves its transactions and receipts.
    let (fork_block, receipts) = fetch_fork_block(&client, block).map_err(upstream_err)?;
    let block_hash = fork_block.hash;
    // Storage pages are asked for after all of the fork block's transactions.
    let storage_range = Some((block_hash, fork_block.body.transactions.len() as u64));
    client.pin(chain_id, block, storage_range).map_err(upstream_err)?;
    let diff = fund_dev_accounts(&client, dev_accounts, balance).map_err(upstream_err)?;
    let cache = client.cache().clone();
    let chain = ChainWriter::in_memory()?.with_fork(Arc::new(client));
    write_base(&chain, fork_block, receipts, &diff)?;
    info!(target: "node::fork", %url, block, %block_hash, chain_id, "forked");
    Ok((chain, ForkHandle { counters, cache, block, block_hash, chain_id, replay, backend }))
}

/// Starts the fork backend on `cache`, counting in `counters`, and a client of it.
fn start_backend(
    settings: &ForkSettings,
    cache: ForkCache,
    counters: &Arc<ForkCounters>,
) -> (ForkClient, actix::Addr<ForkBackendActor>) {
    let (backend, _arbiter) = ForkBackendActor::start(
        settings.upstream.clone(),
        cache.clone(),
        Arc::clone(counters),
        DEFAULT_MAX_BATCH,
        DEFAULT_MAX_IN_FLIGHT,
    );
    let wait = settings.upstream.timeout + WAIT_MARGIN;
    (ForkClient::new(&backend, cache, Arc::clone(counters), wait), backend)
}

/// Where a fork starts: the chain id it runs under and the upstream block it forks at.
struct ForkPoint {
    chain_id: u64,
    block: u64,
    /// `--fork-transaction-hash`: what to replay over the fork block once the node starts.
    replay: Option<before_tx::Replay>,
}

/// The fork point the settings name, asking the upstream for what they leave to it (its
/// chain id, its head, the block of a transaction).
fn fork_point(
    client: &ForkClient,
    settings: &ForkSettings,
    upstream_err: impl Fn(ForkError) -> ForkStartError,
) -> Result<ForkPoint, ForkStartError> {
    let number = |key| match client.fetch(key) {
        Ok(ForkValue::Number(n)) => Ok(n),
        Ok(other) => Err(ForkError::Upstream(format!("unexpected answer {other:?}"))),
        Err(e) => Err(e),
    };
    let chain_id = match settings.chain_id {
        Some(id) => id,
        None => number(ForkKey::ChainId).map_err(&upstream_err)?,
    };
    let mut replay = None;
    let block = match settings.block {
        ForkBlock::Number(n) => n,
        ForkBlock::Head => number(ForkKey::HeadNumber).map_err(&upstream_err)?,
        ForkBlock::BehindHead(behind) => {
            let head = number(ForkKey::HeadNumber).map_err(&upstream_err)?;
            head.checked_sub(behind).ok_or(ForkStartError::BehindGenesis { behind, head })?
        }
        ForkBlock::BeforeTx(hash) => {
            let (parent, plan) = before_tx::locate(client, hash).map_err(&upstream_err)?;
            replay = Some(plan);
            parent
        }
    };
    Ok(ForkPoint { chain_id, block, replay })
}

/// The dev accounts funded with `balance` each over their upstream nonce and code, as the
/// fork's first block writes them.
fn fund_dev_accounts(
    client: &ForkClient,
    dev_accounts: &[Address],
    balance: U256,
) -> Result<StateDiff, ForkError> {
    let mut diff = StateDiff::default();
    let mut keys: Vec<ForkKey> = dev_accounts.iter().map(|a| ForkKey::Account(*a)).collect();
    // Fetched beside them, into the cache: what every local block's end reads (EIP-7002's and
    // EIP-7251's queue counters and pointers, slots 0 to 3), which block building would
    // otherwise fetch one by one on its thread before the first block's answer.
    let queues = [
        alloy_eips::eip7002::WITHDRAWAL_REQUEST_PREDEPLOY_ADDRESS,
        alloy_eips::eip7251::CONSOLIDATION_REQUEST_PREDEPLOY_ADDRESS,
    ];
    let system_slots =
        queues.iter().flat_map(|a| (0..4u8).map(|s| ForkKey::Storage(*a, U256::from(s))));
    keys.extend(queues.iter().map(|a| ForkKey::Account(*a)).chain(system_slots));
    let fetched = client.fetch_many(&keys);
    // Only the dev accounts' answers are used here; the rest are in the cache (or fail later,
    // where they are read, as any read would).
    for (address, fetched) in dev_accounts.iter().zip(fetched) {
        let upstream = match fetched? {
            ForkValue::Account(account) => account,
            other => return Err(ForkError::Upstream(format!("unexpected answer {other:?}"))),
        };
        let (nonce, code_hash) = upstream.map_or((0, EMPTY_CODE_HASH), |a| (a.nonce, a.code_hash));
        diff.accounts.insert(
            *address,
            AccountChange {
                info: Some(AccountFields { nonce, balance, code_hash }),
                storage_wiped: false,
                storage: Default::default(),
            },
        );
    }
    Ok(diff)
}

/// The fork cache the settings name, or one in memory (saying why).
fn open_cache(settings: &ForkSettings) -> ForkCache {
    let (cache, fallback) =
        ForkCache::open(settings.cache_dir.as_deref(), &settings.upstream.url, settings.cache_size);
    match (fallback, cache.path()) {
        (Some(reason), _) => {
            warn!(target: "node::fork", %reason, "fork cache kept in memory for this run");
        }
        (None, Some(path)) => info!(target: "node::fork", path = %path.display(), "fork cache"),
        (None, None) => info!(target: "node::fork", "fork cache in memory (--no-fork-cache)"),
    }
    cache
}

/// Upstream block `number` with its transactions and receipts, fetched together.
fn fetch_fork_block(
    client: &ForkClient,
    number: u64,
) -> Result<(ForkedBlock, Vec<ReceiptEnvelope>), ForkError> {
    let mut answers = client.fetch_many(&[ForkKey::Block(number), ForkKey::Receipts(number)]);
    let receipts = answers.pop().expect("two answers");
    let block = answers.pop().expect("two answers");
    let missing = || ForkError::Upstream(format!("block {number} is not in the upstream chain"));
    let block = match block? {
        ForkValue::Block(Some(block)) => *block,
        ForkValue::Block(None) => return Err(missing()),
        other => return Err(ForkError::Upstream(format!("unexpected answer {other:?}"))),
    };
    let receipts = match receipts? {
        ForkValue::Receipts(Some(receipts)) => receipts,
        ForkValue::Receipts(None) => return Err(missing()),
        other => return Err(ForkError::Upstream(format!("unexpected answer {other:?}"))),
    };
    if receipts.len() != block.body.transactions.len() {
        return Err(ForkError::Upstream(format!(
            "block {number} has {} transactions and {} receipts upstream",
            block.body.transactions.len(),
            receipts.len()
        )));
    }
    Ok((block, receipts))
}

fn write_base(
    chain: &ChainWriter,
    block: ForkedBlock,
    receipts: Vec<ReceiptEnvelope>,
    diff: &StateDiff,
) -> Result<(), ForkStartError> {
    let ForkedBlock { header, hash: upstream_hash, body, extras: _ } = block;
    if header.hash_slow() != upstream_hash {
        // A chain whose headers carry fields alloy does not know: local blocks still link to
        // the header as decoded, which is all BLOCKHASH and parent hashes need here.
        warn!(
            target: "node::fork",
            upstream = %upstream_hash,
            decoded = %header.hash_slow(),
            "the fork block's header hashes differently here than upstream"
        );
    }
    // Its ommers and withdrawals are read from the fork cache (`ChainDb::extras`).
    let draft = BlockDraft { header, body, receipts, touched: Vec::new() };
    hearth_storage::import_fork_base(chain, draft, diff)?;
    Ok(())
}
