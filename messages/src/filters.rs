//! Messages to the `FilterActor`: polling filters (eth_newFilter, eth_newBlockFilter,
//! eth_getFilterChanges, eth_getFilterLogs, eth_uninstallFilter).
//!
//! A filter is a cursor, not a buffer: it remembers the last block it reported, and each poll
//! hands the RPC front the new block range to read from the chain. So an idle filter costs a
//! few bytes however many blocks pass.

use actix::Message;
use alloy_rpc_types_eth::Filter;

/// What a filter reports.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FilterKind {
    /// Hashes of new blocks. Serves eth_newBlockFilter.
    Blocks,
    /// New logs matching the criteria. Serves eth_newFilter.
    Logs(Box<Filter>),
    /// Hashes of transactions admitted to the pool. Serves eth_newPendingTransactionFilter.
    PendingTxs,
}

/// Why a filter request failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FilterError {
    /// No such filter (never installed, uninstalled, or expired after 5 minutes unpolled).
    #[error("filter not found")]
    NotFound,
    /// The filter table is at its bound.
    #[error("limit exceeded: {max} filters installed; uninstall some or let them expire")]
    TooMany {
        /// The bound.
        max: usize,
    },
    /// The filter actor panicked serving this request; it restarted with no filters.
    #[error("internal error in the filters: {0}; filters were reset, install them again")]
    Panicked(String),
}

/// Installs a filter whose first poll reports what comes after block `head`.
#[derive(Debug, Clone)]
pub struct InstallFilter {
    /// What it reports.
    pub kind: FilterKind,
    /// The current head.
    pub head: u64,
}

impl Message for InstallFilter {
    type Result = Result<u64, FilterError>;
}

/// Polls filter `id`: replies with what it reports and the new block range (inclusive; empty
/// when `from > to`), and moves its cursor to `head`. Serves eth_getFilterChanges.
#[derive(Debug, Clone, Copy)]
pub struct PollFilter {
    /// The filter.
    pub id: u64,
    /// The current head.
    pub head: u64,
}

/// The answer to a poll.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FilterPoll {
    /// What the filter reports.
    pub kind: FilterKind,
    /// First new block.
    pub from: u64,
    /// Last new block.
    pub to: u64,
    /// For a pending-transaction filter: the hashes admitted since the last poll.
    pub pending: Vec<alloy_primitives::B256>,
    /// For a log filter: logs it reported that a rewind undid since the last poll, with
    /// `removed: true`, newest first; they come before the new range's logs.
    pub removed: Vec<alloy_rpc_types_eth::Log>,
}

impl Message for PollFilter {
    type Result = Result<FilterPoll, FilterError>;
}

/// The criteria of log filter `id` (it also counts as a poll for expiry). Serves
/// eth_getFilterLogs.
#[derive(Debug, Clone, Copy)]
pub struct GetFilter(pub u64);

impl Message for GetFilter {
    type Result = Result<FilterKind, FilterError>;
}

/// Removes filter `id`; `true` when it existed. Serves eth_uninstallFilter.
#[derive(Debug, Clone, Copy)]
pub struct UninstallFilter(pub u64);

impl Message for UninstallFilter {
    type Result = bool;
}

/// Removes every filter (anvil_reset: their cursors point into a chain that is gone); ids stay
/// unique, so an old id is "filter not found", never someone else's filter. Replies how many
/// were removed.
#[derive(Debug, Clone, Copy)]
pub struct ClearFilters;

impl Message for ClearFilters {
    type Result = usize;
}

crate::actor_client! {
    /// The `FilterActor`'s client (eth_newFilter and friends); every request is `ask`ed.
    pub struct FilterClient for "filters" {
        /// Installs a filter.
        ask install: InstallFilter,
        /// Polls one.
        ask poll: PollFilter,
        /// Reads one's criteria.
        ask get: GetFilter,
        /// Removes one.
        ask uninstall: UninstallFilter,
    }
}
