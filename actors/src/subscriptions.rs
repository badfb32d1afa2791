//! `SubscriptionActor`: WebSocket subscriptions (eth_subscribe) and their fan-out.
//!
//! - **Owns:** the registered WebSocket connections (at most `max_connections`), each with its
//!   subscriptions (at most `max_per_connection`, in the order they were made), the sending end
//!   of its bounded notification queue (`queue` items) and its close signal; and the counters
//!   `/metrics` shows.
//! - **Takes:** `Connect`, `Subscribe`, `Unsubscribe`, `GetSubscriptionStats` (as `Ask`) and
//!   `Disconnect` (`try_send`), all from `SubscriptionClient`; `CloseAll` (shutdown);
//!   `BlockCommitted` from the state actor and `TxsAdmitted` from the mempool.
//! - **Sends:** notifications into each connection's queue with `try_send`, never waiting: a
//!   connection whose queue is full is forgotten at once and told why through its close signal
//!   (the WebSocket session then closes with 1008 "subscriber too slow: N notifications
//!   queued").
//! - **Mailbox:** `--actors.mailbox` (default 1024); a full mailbox makes the publisher drop
//!   that event (counted by the state actor), never wait.
//! - **Restart:** `Restart` (`supervise`): a panic in a handler fails that request (-32603) and
//!   closes every connection (1001), whose clients reconnect; subscriptions live only as long
//!   as their connection, as in geth.

use std::collections::HashMap;
use std::num::NonZeroUsize;
use std::sync::Arc;

use actix::{Actor, Context, Handler, MessageResult};
use alloy_primitives::B128;
use hearth_messages::SealedBlock;
use hearth_messages::console::ConsolePrinted;
use hearth_messages::executor::PooledTx;
use hearth_messages::interest::Interest;
use hearth_messages::mempool::TxsAdmitted;
use hearth_messages::state::{BlockCommitted, BlocksRemoved};
use hearth_messages::subscriptions::{
    CloseAll, CloseReason, Connect, Connection, ConnectionId, Disconnect, GetSubscriptionStats,
    Notice, Notification, Subscribe, SubscriptionError, SubscriptionKind, SubscriptionLimits,
    SubscriptionStats, Unsubscribe,
};
use tokio::sync::mpsc::error::TrySendError;
use tokio::sync::{mpsc, oneshot};

use crate::supervise::{Restart, RestartCounter, contain};

/// One registered connection.
#[derive(Debug)]
struct Conn {
    queue: mpsc::Sender<Notification>,
    close: Option<oneshot::Sender<CloseReason>>,
    /// In the order they were made, so one event's notifications keep that order.
    subs: Vec<(B128, SubscriptionKind)>,
}

/// The subscription table: no actix types, tested directly.
#[derive(Debug)]
pub struct Subscriptions {
    limits: SubscriptionLimits,
    connections: HashMap<ConnectionId, Conn>,
    next_connection: u64,
    next_subscription: u64,
    stats: SubscriptionStats,
}

/// What delivering one notification to one connection came to.
enum Delivery {
    Queued,
    /// The queue is full: the connection is too slow.
    Full,
    /// The session is gone.
    Gone,
}

impl Subscriptions {
    /// An empty table with these bounds.
    pub fn new(limits: SubscriptionLimits) -> Self {
        Self {
            limits,
            connections: HashMap::new(),
            next_connection: 1,
            next_subscription: 1,
            stats: SubscriptionStats::default(),
        }
    }

    /// Registers a connection, if there is room; connections whose session ended without a
    /// `Disconnect` (its mailbox was full then) are forgotten first.
    pub fn connect(&mut self) -> Result<Connection, SubscriptionError> {
        self.connections.retain(|_, c| !c.queue.is_closed());
        let max = self.limits.max_connections.get();
        if self.connections.len() >= max {
            self.stats.refused += 1;
            return Err(SubscriptionError::TooManyConnections { max });
        }
        let id = ConnectionId(self.next_connection);
        self.next_connection += 1;
        let (queue, notifications) = mpsc::channel(self.limits.queue.get());
        let (close, closed) = oneshot::channel();
        self.connections.insert(id, Conn { queue, close: Some(close), subs: Vec::new() });
        Ok(Connection { id, notifications, closed })
    }

    /// Forgets a connection and its subscriptions.
    pub fn disconnect(&mut self, id: ConnectionId) {
        self.connections.remove(&id);
    }

    /// Adds a subscription to `connection`; ids are never reused.
    pub fn subscribe(
        &mut self,
        connection: ConnectionId,
        kind: SubscriptionKind,
    ) -> Result<B128, SubscriptionError> {
        let conn =
            self.connections.get_mut(&connection).ok_or(SubscriptionError::UnknownConnection)?;
        let max = self.limits.max_per_connection.get();
        if conn.subs.len() >= max {
            return Err(SubscriptionError::TooManySubscriptions { max });
        }
        let id = subscription_id(self.next_subscription);
        self.next_subscription += 1;
        conn.subs.push((id, kind));
        Ok(id)
    }

    /// Removes subscription `id` if `connection` holds it.
    pub fn unsubscribe(&mut self, connection: ConnectionId, id: B128) -> bool {
        let Some(conn) = self.connections.get_mut(&connection) else {
            return false;
        };
        let before = conn.subs.len();
        conn.subs.retain(|(sub, _)| *sub != id);
        conn.subs.len() < before
    }

    /// Queues a block's notifications: its header for each newHeads subscription and each
    /// matching log, in block order, for each logs subscription.
    pub fn block_committed(&mut self, block: &Arc<SealedBlock>) {
        self.deliver(|kind| match kind {
            SubscriptionKind::NewHeads => vec![Notice::Head(Arc::clone(block))],
            SubscriptionKind::Logs(filter) => matching_logs(filter, block, false),
            SubscriptionKind::PendingTxs
            | SubscriptionKind::PendingTxObjects
            | SubscriptionKind::Console => Vec::new(),
        });
    }

    /// Queues the logs of undone blocks (`blocks`, newest first) for each logs subscription,
    /// each with `removed: true`, newest first, as geth sends a reorg's removed logs.
    pub fn blocks_removed(&mut self, blocks: &[SealedBlock]) {
        self.deliver(|kind| match kind {
            SubscriptionKind::Logs(filter) => blocks
                .iter()
                .flat_map(|block| matching_logs(filter, block, true).into_iter().rev())
                .collect(),
            _ => Vec::new(),
        });
    }

    /// Queues one notification per admitted hash for each newPendingTransactions subscription.
    pub fn txs_admitted(&mut self, txs: &[PooledTx]) {
        self.deliver(|kind| match kind {
            SubscriptionKind::PendingTxs => {
                txs.iter().map(|tx| Notice::PendingTx(tx.hash)).collect()
            }
            SubscriptionKind::PendingTxObjects => {
                txs.iter().map(|tx| Notice::PendingTxObject(Box::new(tx.clone()))).collect()
            }
            SubscriptionKind::NewHeads | SubscriptionKind::Logs(_) | SubscriptionKind::Console => {
                Vec::new()
            }
        });
    }

    /// Queues one execution's console output for each hearth_console subscription.
    pub fn console_printed(&mut self, printed: &ConsolePrinted) {
        self.deliver(|kind| match kind {
            SubscriptionKind::Console => vec![Notice::Console(printed.clone())],
            _ => Vec::new(),
        });
    }

    /// Counts of what the table holds and did.
    pub fn stats(&self) -> SubscriptionStats {
        let mut stats = self.stats;
        stats.connections = self.connections.len();
        let subs = self.connections.values().flat_map(|c| &c.subs);
        for (_, kind) in subs {
            match kind {
                SubscriptionKind::NewHeads => stats.new_heads += 1,
                SubscriptionKind::Logs(_) => stats.logs += 1,
                SubscriptionKind::PendingTxs | SubscriptionKind::PendingTxObjects => {
                    stats.pending_txs += 1;
                }
                SubscriptionKind::Console => stats.console += 1,
            }
        }
        stats
    }

    /// Sends each connection what `notices` makes of each of its subscriptions; closes the
    /// connections whose queue overflows and forgets those whose session is gone.
    fn deliver(&mut self, notices: impl Fn(&SubscriptionKind) -> Vec<Notice>) {
        let queue_bound = self.limits.queue.get();
        let mut slow = Vec::new();
        let mut gone = Vec::new();
        for (id, conn) in &self.connections {
            'subs: for (subscription, kind) in &conn.subs {
                for item in notices(kind) {
                    let note = Notification { subscription: *subscription, item };
                    match try_queue(&conn.queue, note) {
                        Delivery::Queued => self.stats.notifications += 1,
                        Delivery::Full => {
                            slow.push(*id);
                            break 'subs;
                        }
                        Delivery::Gone => {
                            gone.push(*id);
                            break 'subs;
                        }
                    }
                }
            }
        }
        for id in gone {
            self.connections.remove(&id);
        }
        for id in slow {
            let Some(mut conn) = self.connections.remove(&id) else { continue };
            self.stats.slow_dropped += 1;
            tracing::warn!(target: "actors::subscriptions", connection = id.0, queued = queue_bound, "subscriber too slow; closing its connection");
            if let Some(close) = conn.close.take() {
                // The session may be gone already; then there is nobody left to tell.
                let _ = close.send(CloseReason::TooSlow { queued: queue_bound });
            }
        }
    }

    /// Closes every connection (the node is stopping); later connects still work.
    pub fn close_all(&mut self) {
        for (_, mut conn) in self.connections.drain() {
            if let Some(close) = conn.close.take() {
                let _ = close.send(CloseReason::ShuttingDown);
            }
        }
    }

    /// Connections registered now.
    pub fn len(&self) -> usize {
        self.connections.len()
    }

    /// Whether no connection is registered.
    pub fn is_empty(&self) -> bool {
        self.connections.is_empty()
    }
}

fn try_queue(queue: &mpsc::Sender<Notification>, note: Notification) -> Delivery {
    match queue.try_send(note) {
        Ok(()) => Delivery::Queued,
        Err(TrySendError::Full(_)) => Delivery::Full,
        Err(TrySendError::Closed(_)) => Delivery::Gone,
    }
}

/// The logs of `block` matching `filter` (`removed` as asked), as notices.
fn matching_logs(
    filter: &alloy_rpc_types_eth::Filter,
    block: &SealedBlock,
    removed: bool,
) -> Vec<Notice> {
    let logs = crate::block_logs::matching_logs(filter, block, removed);
    logs.into_iter().map(|log| Notice::Log(Box::new(log))).collect()
}

/// The id of the `n`th subscription: 16 bytes that look random (a bijective mix of `n`, so
/// ids never repeat) but come from no random source, as handlers must stay deterministic.
fn subscription_id(n: u64) -> B128 {
    let mix = |mut z: u64| {
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    };
    let high = mix(n);
    let low = mix(high ^ 0x9e37_79b9_7f4a_7c15);
    B128::from((u128::from(high) << 64) | u128::from(low))
}

/// The subscription actor.
#[derive(Debug)]
pub struct SubscriptionActor {
    subscriptions: Subscriptions,
    /// On while some subscription wants blocks (newHeads, logs).
    blocks: Interest,
    /// On while some subscription wants admitted transactions.
    pending: Interest,
    /// On while some subscription wants console output.
    console: Interest,
    /// On while a logs subscription exists (it wants `BlocksRemoved`).
    logs: Interest,
    restarts: RestartCounter,
}

impl SubscriptionActor {
    /// An actor with these bounds.
    pub fn new(limits: SubscriptionLimits) -> Self {
        Self {
            subscriptions: Subscriptions::new(limits),
            blocks: Interest::none(),
            pending: Interest::none(),
            console: Interest::none(),
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
        work: impl FnOnce(&mut Self) -> Result<T, SubscriptionError>,
    ) -> Result<T, SubscriptionError> {
        contain(self, work).unwrap_or_else(|what| Err(SubscriptionError::Panicked(what)))
    }

    /// Whether it wants `BlockCommitted` now: pass it with `SubscribeBlocks`.
    pub fn block_interest(&self) -> Interest {
        self.blocks.clone()
    }

    /// Whether it wants `TxsAdmitted` now: pass it to the mempool's `notify_admitted`.
    pub fn pending_interest(&self) -> Interest {
        self.pending.clone()
    }

    /// Whether it wants `BlocksRemoved` now (a logs subscription exists): pass it with
    /// `SubscribeRemovals`.
    pub fn logs_interest(&self) -> Interest {
        self.logs.clone()
    }

    /// Whether it wants `ConsolePrinted` now: pass it to the `ConsoleSink`.
    pub fn console_interest(&self) -> Interest {
        self.console.clone()
    }

    /// Publishes what the subscriptions now want, after anything that adds or drops some.
    fn publish_interest(&self) {
        let stats = self.subscriptions.stats();
        self.blocks.set(stats.new_heads + stats.logs > 0);
        self.pending.set(stats.pending_txs > 0);
        self.console.set(stats.console > 0);
        self.logs.set(stats.logs > 0);
    }

    /// Starts the actor with its mailbox bounded from the first message on.
    pub fn start_bounded(self, mailbox: NonZeroUsize) -> actix::Addr<Self> {
        crate::bounded::start_here(self, mailbox)
    }
}

impl Actor for SubscriptionActor {
    type Context = Context<Self>;
}

impl Restart for SubscriptionActor {
    const NAME: &'static str = "subscriptions";

    /// Subscriptions live only as long as their connection: every connection is closed (1001,
    /// as at shutdown) and its client reconnects and subscribes again. Ids keep counting, so a
    /// late `Disconnect` of an old connection can never hit a new one.
    fn restart(&mut self) {
        self.subscriptions.close_all();
        self.publish_interest();
    }

    fn restarts(&self) -> &RestartCounter {
        &self.restarts
    }
}

impl Handler<Connect> for SubscriptionActor {
    type Result = Result<Connection, SubscriptionError>;

    fn handle(&mut self, _msg: Connect, _ctx: &mut Self::Context) -> Self::Result {
        self.contained(|act| act.subscriptions.connect())
    }
}

impl Handler<Disconnect> for SubscriptionActor {
    type Result = ();

    fn handle(&mut self, msg: Disconnect, _ctx: &mut Self::Context) {
        let _ = self.contained(|act| {
            act.subscriptions.disconnect(msg.0);
            act.publish_interest();
            Ok(())
        });
    }
}

impl Handler<Subscribe> for SubscriptionActor {
    type Result = Result<B128, SubscriptionError>;

    fn handle(&mut self, msg: Subscribe, _ctx: &mut Self::Context) -> Self::Result {
        self.contained(|act| {
            let id = act.subscriptions.subscribe(msg.connection, msg.kind);
            act.publish_interest();
            id
        })
    }
}

impl Handler<Unsubscribe> for SubscriptionActor {
    type Result = bool;

    /// After a panic every connection was closed, so "not subscribed" (`false`) is true.
    fn handle(&mut self, msg: Unsubscribe, _ctx: &mut Self::Context) -> bool {
        self.contained(|act| {
            let removed = act.subscriptions.unsubscribe(msg.connection, msg.id);
            act.publish_interest();
            Ok(removed)
        })
        .unwrap_or(false)
    }
}

impl Handler<GetSubscriptionStats> for SubscriptionActor {
    type Result = MessageResult<GetSubscriptionStats>;

    fn handle(&mut self, _msg: GetSubscriptionStats, _ctx: &mut Self::Context) -> Self::Result {
        MessageResult(self.subscriptions.stats())
    }
}

impl Handler<BlockCommitted> for SubscriptionActor {
    type Result = ();

    fn handle(&mut self, msg: BlockCommitted, _ctx: &mut Self::Context) {
        let _ = self.contained(|act| {
            act.subscriptions.block_committed(&msg.block);
            // A slow connection may have been dropped.
            act.publish_interest();
            Ok(())
        });
    }
}

impl Handler<ConsolePrinted> for SubscriptionActor {
    type Result = ();

    fn handle(&mut self, msg: ConsolePrinted, _ctx: &mut Self::Context) {
        let _ = self.contained(|act| {
            act.subscriptions.console_printed(&msg);
            act.publish_interest();
            Ok(())
        });
    }
}

impl Handler<BlocksRemoved> for SubscriptionActor {
    type Result = ();

    fn handle(&mut self, msg: BlocksRemoved, _ctx: &mut Self::Context) {
        let _ = self.contained(|act| {
            act.subscriptions.blocks_removed(&msg.blocks);
            act.publish_interest();
            Ok(())
        });
    }
}

impl Handler<CloseAll> for SubscriptionActor {
    type Result = ();

    fn handle(&mut self, _msg: CloseAll, _ctx: &mut Self::Context) {
        tracing::info!(target: "actors::subscriptions", connections = self.subscriptions.len(), "closing websocket connections");
        self.subscriptions.close_all();
        self.publish_interest();
    }
}

impl Handler<TxsAdmitted> for SubscriptionActor {
    type Result = ();

    fn handle(&mut self, msg: TxsAdmitted, _ctx: &mut Self::Context) {
        let _ = self.contained(|act| {
            act.subscriptions.txs_admitted(&msg.0);
            act.publish_interest();
            Ok(())
        });
    }
}

// The RPC front asks with `ask` (fail fast when the mailbox is full).
hearth_messages::answer_asks!(
    SubscriptionActor: Connect,
    Subscribe,
    Unsubscribe,
    GetSubscriptionStats
);

#[cfg(test)]
mod tests {
    use alloy_primitives::B256;

    use super::*;

    fn limits(connections: usize, per_connection: usize, queue: usize) -> SubscriptionLimits {
        SubscriptionLimits {
            max_connections: NonZeroUsize::new(connections).expect("non-zero"),
            max_per_connection: NonZeroUsize::new(per_connection).expect("non-zero"),
            queue: NonZeroUsize::new(queue).expect("non-zero"),
        }
    }

    fn hash(i: u64) -> B256 {
        B256::left_padding_from(&i.to_be_bytes())
    }

    /// A pooled transaction whose hash is `hash(i)` (its contents do not matter here).
    fn pooled(i: u64) -> PooledTx {
        use alloy_consensus::{SignableTransaction, TxLegacy};
        let signed = TxLegacy::default().into_signed(alloy_primitives::Signature::test_signature());
        let tx = std::sync::Arc::new(signed.into());
        PooledTx { tx, sender: alloy_primitives::Address::ZERO, hash: hash(i) }
    }

    #[actix::test]
    async fn interest_follows_the_subscriptions() {
        let actor = SubscriptionActor::new(limits(4, 4, 8));
        let (blocks, pending) = (actor.block_interest(), actor.pending_interest());
        let addr = actor.start_bounded(NonZeroUsize::new(16).expect("non-zero"));
        assert!(!blocks.wanted() && !pending.wanted(), "nobody listens yet");
        let conn = addr.send(Connect).await.unwrap().expect("room");
        let subscribe = |kind| addr.send(Subscribe { connection: conn.id, kind });
        let heads = subscribe(SubscriptionKind::NewHeads).await.unwrap().expect("room");
        assert!(blocks.wanted() && !pending.wanted());
        subscribe(SubscriptionKind::PendingTxs).await.unwrap().expect("room");
        assert!(pending.wanted());
        assert!(addr.send(Unsubscribe { connection: conn.id, id: heads }).await.unwrap());
        assert!(!blocks.wanted() && pending.wanted());
        addr.send(Disconnect(conn.id)).await.unwrap();
        assert!(!blocks.wanted() && !pending.wanted(), "a closed connection wants nothing");
    }

    #[test]
    fn bounds_on_connections_and_subscriptions_hold() {
        let mut table = Subscriptions::new(limits(1, 2, 4));
        let conn = table.connect().expect("room");
        assert_eq!(
            table.connect().expect_err("full"),
            SubscriptionError::TooManyConnections { max: 1 }
        );
        let a = table.subscribe(conn.id, SubscriptionKind::NewHeads).expect("room");
        let b = table.subscribe(conn.id, SubscriptionKind::PendingTxs).expect("room");
        assert_ne!(a, b, "ids are unique");
        assert_eq!(
            table.subscribe(conn.id, SubscriptionKind::NewHeads),
            Err(SubscriptionError::TooManySubscriptions { max: 2 })
        );
        assert!(!table.unsubscribe(ConnectionId(99), a), "another connection's id is not found");
        assert!(table.unsubscribe(conn.id, a));
        assert!(!table.unsubscribe(conn.id, a));
        let stats = table.stats();
        assert_eq!((stats.connections, stats.pending_txs, stats.new_heads), (1, 1, 0));
        assert_eq!(stats.refused, 1);
        // A session that ended without saying so frees its slot on the next connect.
        drop(conn);
        let again = table.connect().expect("the dead connection was pruned");
        assert_eq!(
            table.subscribe(ConnectionId(1), SubscriptionKind::NewHeads),
            Err(SubscriptionError::UnknownConnection)
        );
        table.disconnect(again.id);
        assert!(table.is_empty());
    }

    #[test]
    fn a_full_queue_closes_the_connection_with_the_reason() {
        let mut table = Subscriptions::new(limits(4, 4, 2));
        let mut slow = table.connect().expect("room");
        let mut fast = table.connect().expect("room");
        let slow_sub = table.subscribe(slow.id, SubscriptionKind::PendingTxs).expect("room");
        let fast_sub = table.subscribe(fast.id, SubscriptionKind::PendingTxs).expect("room");
        table.txs_admitted(&[pooled(1), pooled(2)]);
        // The fast one reads; the slow one does not.
        for expected in [hash(1), hash(2)] {
            let note = fast.notifications.try_recv().expect("queued");
            assert_eq!(note.subscription, fast_sub);
            assert!(matches!(note.item, Notice::PendingTx(h) if h == expected));
        }
        table.txs_admitted(&[pooled(3)]);
        assert_eq!(slow.closed.try_recv(), Ok(CloseReason::TooSlow { queued: 2 }));
        assert_eq!(
            CloseReason::TooSlow { queued: 2 }.to_string(),
            "subscriber too slow: 2 notifications queued"
        );
        assert!(matches!(fast.notifications.try_recv(), Ok(n) if n.subscription == fast_sub));
        let stats = table.stats();
        assert_eq!((stats.connections, stats.slow_dropped, stats.notifications), (1, 1, 5));
        assert_eq!(
            table.subscribe(slow.id, SubscriptionKind::NewHeads),
            Err(SubscriptionError::UnknownConnection),
            "the slow connection is forgotten"
        );
        // What was queued before the overflow can still be read.
        assert!(matches!(slow.notifications.try_recv(), Ok(n) if n.subscription == slow_sub));
    }

    #[test]
    fn close_all_tells_every_connection() {
        let mut table = Subscriptions::new(limits(4, 4, 4));
        let mut a = table.connect().expect("room");
        let mut b = table.connect().expect("room");
        table.close_all();
        assert_eq!(a.closed.try_recv(), Ok(CloseReason::ShuttingDown));
        assert_eq!(b.closed.try_recv(), Ok(CloseReason::ShuttingDown));
        assert!(table.is_empty());
    }

    #[test]
    fn subscription_ids_do_not_repeat() {
        let ids: std::collections::HashSet<_> = (1..10_000).map(subscription_id).collect();
        assert_eq!(ids.len(), 9_999);
        assert_ne!(subscription_id(1), B128::ZERO);
    }
}
