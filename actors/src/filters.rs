//! `FilterActor`: the polling filters of eth_newFilter / eth_newBlockFilter.
//!
//! - **Owns:** the installed filters (at most `max`: the node's `MAX_FILTERS`), each a cursor
//!   (the last block it reported), its criteria, when it was last polled and, for a
//!   pending-transaction filter, the hashes admitted since its last poll (bounded).
//! - **Takes:** `InstallFilter`, `PollFilter`, `GetFilter`, `UninstallFilter` (as `Ask`, from
//!   `FilterClient`), and `TxsAdmitted` from the mempool.
//! - **Sends:** nothing: the RPC front reads the block range a poll returns from the chain.
//! - **Mailbox:** `--actors.mailbox` (default 1024).
//! - **Restart:** `Restart` (`supervise`): a panic in a handler fails that request (-32603) and
//!   empties the table; filters are not persisted (geth's are not either), clients re-install.
//!
//! A filter not polled for `FILTER_TTL` is dropped (as geth), by a sweep on the tokio clock.

use std::collections::HashMap;
use std::num::NonZeroUsize;
use std::time::Duration;

use actix::{Actor, AsyncContext, Context, Handler};
use alloy_primitives::B256;
use hearth_messages::filters::{
    ClearFilters, FilterError, FilterKind, FilterPoll, GetFilter, InstallFilter, PollFilter,
    UninstallFilter,
};
use hearth_messages::interest::Interest;
use hearth_messages::mempool::TxsAdmitted;
use hearth_messages::state::BlocksRemoved;
use tokio::time::Instant;

use crate::supervise::{Restart, RestartCounter, contain};

/// How long a filter lives without being polled (geth's value).
pub const FILTER_TTL: Duration = Duration::from_secs(5 * 60);
/// How often expired filters are swept.
const SWEEP_EVERY: Duration = Duration::from_secs(30);

/// Most hashes a pending-transaction filter holds between polls; older ones are dropped.
pub const MAX_PENDING_PER_FILTER: usize = 10_000;

#[derive(Debug)]
struct Entry {
    kind: FilterKind,
    /// Admitted hashes not yet polled (pending-transaction filters only).
    pending: std::collections::VecDeque<B256>,
    /// Logs it reported that a rewind undid, not yet polled (log filters only), newest
    /// first, at most `MAX_PENDING_PER_FILTER`.
    removed: std::collections::VecDeque<alloy_rpc_types_eth::Log>,
    /// The last block this filter reported (or the head when it was installed).
    cursor: u64,
    last_poll: Instant,
}

/// The filter table: no actix types, tested directly.
#[derive(Debug)]
pub struct Filters {
    entries: HashMap<u64, Entry>,
    next_id: u64,
    max: usize,
}

impl Filters {
    /// An empty table holding at most `max` filters.
    pub fn new(max: NonZeroUsize) -> Self {
        Self { entries: HashMap::new(), next_id: 1, max: max.get() }
    }

    /// Removes every filter; ids already given out are not given again.
    pub fn clear(&mut self) -> usize {
        let removed = self.entries.len();
        self.entries.clear();
        removed
    }

    /// Installs a filter; ids are never reused.
    pub fn install(
        &mut self,
        kind: FilterKind,
        head: u64,
        now: Instant,
    ) -> Result<u64, FilterError> {
        if self.entries.len() >= self.max {
            return Err(FilterError::TooMany { max: self.max });
        }
        let id = self.next_id;
        self.next_id += 1;
        self.entries.insert(
            id,
            Entry {
                kind,
                pending: Default::default(),
                removed: Default::default(),
                cursor: head,
                last_poll: now,
            },
        );
        Ok(id)
    }

    /// The new block range of `id`, moving its cursor to `head`.
    pub fn poll(&mut self, id: u64, head: u64, now: Instant) -> Result<FilterPoll, FilterError> {
        let entry = self.entries.get_mut(&id).ok_or(FilterError::NotFound)?;
        entry.last_poll = now;
        // A rewind moved the cursor back (`blocks_removed`); a head still behind it (a rewind
        // this table did not hear of) reports nothing until the chain passes it.
        let from = entry.cursor.min(head) + 1;
        entry.cursor = head;
        let pending = entry.pending.drain(..).collect();
        let removed = entry.removed.drain(..).collect();
        Ok(FilterPoll { kind: entry.kind.clone(), from, to: head, pending, removed })
    }

    /// The criteria of `id` (counts as a poll for expiry).
    pub fn get(&mut self, id: u64, now: Instant) -> Result<FilterKind, FilterError> {
        let entry = self.entries.get_mut(&id).ok_or(FilterError::NotFound)?;
        entry.last_poll = now;
        Ok(entry.kind.clone())
    }

    /// Queues admitted hashes on every pending-transaction filter, keeping the newest
    /// `MAX_PENDING_PER_FILTER` of each.
    pub fn admitted(&mut self, hashes: &[B256]) {
        for entry in self.entries.values_mut() {
            if entry.kind == FilterKind::PendingTxs {
                entry.pending.extend(hashes.iter().copied());
                let excess = entry.pending.len().saturating_sub(MAX_PENDING_PER_FILTER);
                entry.pending.drain(..excess);
            }
        }
    }

    /// A rewind undid `blocks` (newest first), leaving `head`: each log filter queues the
    /// undone logs it had reported, `removed: true` (the newest `MAX_PENDING_PER_FILTER`), and
    /// every filter's cursor moves back to `head`, so the blocks that replace them are new.
    pub fn blocks_removed(&mut self, blocks: &[hearth_storage::SealedBlock], head: u64) {
        for entry in self.entries.values_mut() {
            if entry.cursor <= head {
                continue;
            }
            if let FilterKind::Logs(filter) = &entry.kind {
                let reported = blocks.iter().filter(|b| b.number() <= entry.cursor);
                for block in reported.filter(|b| in_range(filter, b.number())) {
                    let logs = crate::block_logs::matching_logs(filter, block, true);
                    entry.removed.extend(logs.into_iter().rev());
                }
                let excess = entry.removed.len().saturating_sub(MAX_PENDING_PER_FILTER);
                entry.removed.drain(entry.removed.len() - excess..);
            }
            entry.cursor = head;
        }
    }

    /// Whether a log filter is installed.
    pub fn wants_logs(&self) -> bool {
        self.entries.values().any(|e| matches!(e.kind, FilterKind::Logs(_)))
    }

    /// Removes `id`.
    pub fn uninstall(&mut self, id: u64) -> bool {
        self.entries.remove(&id).is_some()
    }

    /// Drops the filters not polled since `now - FILTER_TTL`; returns how many.
    pub fn sweep(&mut self, now: Instant) -> usize {
        let before = self.entries.len();
        self.entries.retain(|_, e| now.duration_since(e.last_poll) < FILTER_TTL);
        before - self.entries.len()
    }

    /// Whether a pending-transaction filter is installed.
    pub fn wants_pending(&self) -> bool {
        self.entries.values().any(|e| e.kind == FilterKind::PendingTxs)
    }

    /// Installed filters.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether none is installed.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }
}

/// Whether block `number` is within `filter`'s numbered `fromBlock` / `toBlock` (a tag bounds
/// nothing here: the filter reported the block, so a tag's range held it).
fn in_range(filter: &alloy_rpc_types_eth::Filter, number: u64) -> bool {
    use alloy_rpc_types_eth::{BlockNumberOrTag, FilterBlockOption};
    let FilterBlockOption::Range { from_block, to_block } = &filter.block_option else {
        return false;
    };
    let above = !matches!(from_block, Some(BlockNumberOrTag::Number(from)) if number < *from);
    let below = !matches!(to_block, Some(BlockNumberOrTag::Number(to)) if number > *to);
    above && below
}

/// The filter actor.
#[derive(Debug)]
pub struct FilterActor {
    filters: Filters,
    /// On while a pending-transaction filter is installed.
    pending: Interest,
    /// On while a log filter is installed (it wants `BlocksRemoved`).
    logs: Interest,
    restarts: RestartCounter,
}

impl FilterActor {
    /// Holds at most `max` filters.
    pub fn new(max: NonZeroUsize) -> Self {
        Self {
            filters: Filters::new(max),
            pending: Interest::none(),
            logs: Interest::none(),
            restarts: RestartCounter::default(),
        }
    }

    /// How many times the actor restarted after a panic (for `/metrics`).
    pub fn restart_counter(&self) -> RestartCounter {
        self.restarts.clone()
    }

    /// Runs a handler's `work`; a panic in it restarts the actor and fails the request.
    fn contained<T>(
        &mut self,
        work: impl FnOnce(&mut Self) -> Result<T, FilterError>,
    ) -> Result<T, FilterError> {
        contain(self, work).unwrap_or_else(|what| Err(FilterError::Panicked(what)))
    }

    /// Whether it wants `TxsAdmitted` now: pass it to the mempool's `notify_admitted`.
    pub fn pending_interest(&self) -> Interest {
        self.pending.clone()
    }

    /// Whether it wants `BlocksRemoved` now: pass it with `SubscribeRemovals`.
    pub fn logs_interest(&self) -> Interest {
        self.logs.clone()
    }

    /// Publishes whether a pending-transaction filter and a log filter are installed, after
    /// installs and removals.
    fn publish_interest(&self) {
        self.pending.set(self.filters.wants_pending());
        self.logs.set(self.filters.wants_logs());
    }

    /// Starts the actor with its mailbox bounded from the first message on.
    pub fn start_bounded(self, mailbox: NonZeroUsize) -> actix::Addr<Self> {
        crate::bounded::start_here(self, mailbox)
    }
}

impl Actor for FilterActor {
    type Context = Context<Self>;

    fn started(&mut self, ctx: &mut Self::Context) {
        ctx.run_interval(SWEEP_EVERY, |actor, _| {
            let dropped = actor.filters.sweep(Instant::now());
            actor.publish_interest();
            if dropped > 0 {
                tracing::debug!(target: "actors::filters", dropped, "expired filters removed");
            }
        });
    }
}

impl Restart for FilterActor {
    const NAME: &'static str = "filters";

    /// Filters are not persisted (a restarted node has none either): the table starts empty,
    /// and clients re-install on "filter not found", as after a geth restart.
    fn restart(&mut self) {
        self.filters =
            Filters::new(NonZeroUsize::new(self.filters.max).unwrap_or(NonZeroUsize::MIN));
        self.publish_interest();
    }

    fn restarts(&self) -> &RestartCounter {
        &self.restarts
    }
}

impl Handler<InstallFilter> for FilterActor {
    type Result = Result<u64, FilterError>;

    fn handle(&mut self, msg: InstallFilter, _ctx: &mut Self::Context) -> Self::Result {
        self.contained(|act| {
            let id = act.filters.install(msg.kind, msg.head, Instant::now());
            act.publish_interest();
            id
        })
    }
}

impl Handler<PollFilter> for FilterActor {
    type Result = Result<FilterPoll, FilterError>;

    fn handle(&mut self, msg: PollFilter, _ctx: &mut Self::Context) -> Self::Result {
        self.contained(|act| act.filters.poll(msg.id, msg.head, Instant::now()))
    }
}

impl Handler<GetFilter> for FilterActor {
    type Result = Result<FilterKind, FilterError>;

    fn handle(&mut self, msg: GetFilter, _ctx: &mut Self::Context) -> Self::Result {
        self.contained(|act| act.filters.get(msg.0, Instant::now()))
    }
}

impl Handler<BlocksRemoved> for FilterActor {
    type Result = ();

    fn handle(&mut self, msg: BlocksRemoved, _ctx: &mut Self::Context) {
        let _ = self.contained(|act| {
            act.filters.blocks_removed(&msg.blocks, msg.head);
            Ok(())
        });
    }
}

impl Handler<TxsAdmitted> for FilterActor {
    type Result = ();

    fn handle(&mut self, msg: TxsAdmitted, _ctx: &mut Self::Context) {
        let _ = self.contained(|act| {
            let hashes: Vec<B256> = msg.0.iter().map(|tx| tx.hash).collect();
            act.filters.admitted(&hashes);
            Ok(())
        });
    }
}

impl Handler<UninstallFilter> for FilterActor {
    type Result = bool;

    /// After a panic the table is empty, so "not installed" (`false`) is the true answer.
    fn handle(&mut self, msg: UninstallFilter, _ctx: &mut Self::Context) -> bool {
        self.contained(|act| {
            let removed = act.filters.uninstall(msg.0);
            act.publish_interest();
            Ok(removed)
        })
        .unwrap_or(false)
    }
}

impl Handler<ClearFilters> for FilterActor {
    type Result = usize;

    fn handle(&mut self, _msg: ClearFilters, _ctx: &mut Self::Context) -> usize {
        let removed = self.filters.clear();
        self.publish_interest();
        removed
    }
}

// The RPC front asks with `ask` (fail fast when the mailbox is full).
hearth_messages::answer_asks!(FilterActor: InstallFilter, PollFilter, GetFilter, UninstallFilter);

#[cfg(test)]
mod tests {
    use super::*;

    #[actix::test]
    async fn interest_follows_pending_transaction_filters() {
        let actor = FilterActor::new(NonZeroUsize::new(4).expect("non-zero"));
        let pending = actor.pending_interest();
        let addr = actor.start_bounded(NonZeroUsize::new(16).expect("non-zero"));
        let install = |kind| addr.send(InstallFilter { kind, head: 0 });
        install(FilterKind::Blocks).await.unwrap().expect("room");
        assert!(!pending.wanted(), "a block filter does not need admissions");
        let id = install(FilterKind::PendingTxs).await.unwrap().expect("room");
        assert!(pending.wanted());
        assert!(addr.send(UninstallFilter(id)).await.unwrap());
        assert!(!pending.wanted());
    }

    #[test]
    fn a_filter_reports_each_block_once_and_expires_unpolled() {
        let t0 = Instant::now();
        let mut filters = Filters::new(NonZeroUsize::new(2).expect("2 is non-zero"));
        let id = filters.install(FilterKind::Blocks, 5, t0).expect("room");
        let poll = filters.poll(id, 8, t0).expect("installed");
        assert_eq!((poll.from, poll.to), (6, 8));
        let poll = filters.poll(id, 8, t0).expect("installed");
        assert!(poll.from > poll.to, "nothing new");
        // After a revert below the cursor, nothing is reported until the chain passes it.
        let poll = filters.poll(id, 4, t0).expect("installed");
        assert!(poll.from > poll.to);
        assert_eq!(filters.poll(id, 6, t0).expect("installed").from, 5);

        let other = filters.install(FilterKind::Blocks, 0, t0).expect("room");
        assert_eq!(
            filters.install(FilterKind::Blocks, 0, t0),
            Err(FilterError::TooMany { max: 2 })
        );
        assert!(filters.uninstall(other));
        assert!(!filters.uninstall(other));

        assert_eq!(filters.sweep(t0 + FILTER_TTL - Duration::from_secs(1)), 0);
        assert_eq!(filters.sweep(t0 + FILTER_TTL), 1);
        assert_eq!(filters.poll(id, 9, t0), Err(FilterError::NotFound));
        assert!(filters.is_empty());
    }

    #[test]
    fn pending_transaction_filters_queue_admissions_up_to_their_bound() {
        let t0 = Instant::now();
        let mut filters = Filters::new(NonZeroUsize::new(4).expect("4 is non-zero"));
        let pending = filters.install(FilterKind::PendingTxs, 0, t0).expect("room");
        let blocks = filters.install(FilterKind::Blocks, 0, t0).expect("room");
        let hashes: Vec<B256> = (0..MAX_PENDING_PER_FILTER as u64 + 5)
            .map(|i| B256::left_padding_from(&i.to_be_bytes()))
            .collect();
        filters.admitted(&hashes);
        let got = filters.poll(pending, 0, t0).expect("installed").pending;
        assert_eq!(got.len(), MAX_PENDING_PER_FILTER, "bounded");
        assert_eq!(got.first(), Some(&hashes[5]), "the oldest were dropped");
        assert!(filters.poll(pending, 0, t0).expect("installed").pending.is_empty(), "drained");
        assert!(
            filters.poll(blocks, 0, t0).expect("installed").pending.is_empty(),
            "block filters take none"
        );
    }
}
