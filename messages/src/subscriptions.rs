//! Messages to the `SubscriptionActor`: WebSocket subscriptions (eth_subscribe,
//! eth_unsubscribe) and the connections that hold them.
//!
//! A WebSocket connection registers with [`Connect`] and gets back the receiving ends of two
//! channels: a bounded queue of [`Notification`]s and a one-shot close signal. The actor fills
//! the queue with `try_send` and never waits; when a connection's queue is full, the actor
//! forgets the connection and fires the close signal with [`CloseReason::TooSlow`], so a
//! subscriber that does not read is closed rather than buffered for without bound.

use std::num::NonZeroUsize;
use std::sync::Arc;

use actix::Message;
use alloy_primitives::{B128, B256};
use alloy_rpc_types_eth::{Filter, Log};
use hearth_storage::SealedBlock;
use tokio::sync::{mpsc, oneshot};

/// A connection, as the subscription actor numbers them (never reused).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ConnectionId(pub u64);

/// What a subscription reports.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SubscriptionKind {
    /// Each new head block's header. Serves eth_subscribe("newHeads").
    NewHeads,
    /// Each new log matching the address and topic criteria. Serves eth_subscribe("logs").
    Logs(Box<Filter>),
    /// Hashes of transactions admitted to the pool. Serves
    /// eth_subscribe("newPendingTransactions").
    PendingTxs,
    /// Transactions admitted to the pool, whole. Serves
    /// eth_subscribe("newPendingTransactions", true).
    PendingTxObjects,
    /// What contracts print with console.log, per transaction or call. Serves
    /// eth_subscribe("hearth_console").
    Console,
}

/// The bounds of the subscription service, validated at startup.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SubscriptionLimits {
    /// Most WebSocket connections open at once (`--ws.max-connections`).
    pub max_connections: NonZeroUsize,
    /// Most subscriptions one connection holds (`--ws.max-subscriptions`).
    pub max_per_connection: NonZeroUsize,
    /// Most notifications queued for one connection before it is closed as too slow
    /// (`--ws.max-queued`).
    pub queue: NonZeroUsize,
}

/// Why a subscription request failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SubscriptionError {
    /// The connection table is at `--ws.max-connections`.
    #[error(
        "limit exceeded: {max} WebSocket connections open; close one or raise --ws.max-connections"
    )]
    TooManyConnections {
        /// The bound.
        max: usize,
    },
    /// This connection holds `--ws.max-subscriptions` subscriptions.
    #[error(
        "limit exceeded: {max} subscriptions on this connection; eth_unsubscribe some or open another connection"
    )]
    TooManySubscriptions {
        /// The bound.
        max: usize,
    },
    /// The connection is not registered (it was closed as too slow, or never connected).
    #[error("this connection was closed; reconnect to subscribe")]
    UnknownConnection,
    /// The subscription actor panicked serving this request; it closed every connection.
    #[error("internal error in the subscriptions: {0}; reconnect and subscribe again")]
    Panicked(String),
}

/// Why the subscription actor closed a connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum CloseReason {
    /// Its notification queue was full: the client does not read fast enough.
    #[error("subscriber too slow: {queued} notifications queued")]
    TooSlow {
        /// The queue's bound, all of it waiting.
        queued: usize,
    },
    /// The node is stopping.
    #[error("the node is shutting down")]
    ShuttingDown,
}

/// Registers a new WebSocket connection. Replies with its id and the receiving ends of its
/// notification queue and close signal.
#[derive(Debug, Clone, Copy)]
pub struct Connect;

/// A registered connection: what the WebSocket session reads from.
#[derive(Debug)]
pub struct Connection {
    /// Its id, named in `Subscribe`, `Unsubscribe` and `Disconnect`.
    pub id: ConnectionId,
    /// Notifications, in the order the events happened; bounded by `SubscriptionLimits::queue`.
    pub notifications: mpsc::Receiver<Notification>,
    /// Fires once if the actor closes the connection (its queue overflowed).
    pub closed: oneshot::Receiver<CloseReason>,
}

impl Message for Connect {
    type Result = Result<Connection, SubscriptionError>;
}

/// The connection ended; its subscriptions go with it.
#[derive(Debug, Clone, Copy)]
pub struct Disconnect(pub ConnectionId);

impl Message for Disconnect {
    type Result = ();
}

/// Adds a subscription to `connection`. Serves eth_subscribe. Replies with its id.
#[derive(Debug, Clone)]
pub struct Subscribe {
    /// The connection that receives the notifications.
    pub connection: ConnectionId,
    /// What to report.
    pub kind: SubscriptionKind,
}

impl Message for Subscribe {
    type Result = Result<B128, SubscriptionError>;
}

/// Removes subscription `id` of `connection`; `true` when it existed there. Serves
/// eth_unsubscribe.
#[derive(Debug, Clone, Copy)]
pub struct Unsubscribe {
    /// The connection that made it (another connection's id is not found).
    pub connection: ConnectionId,
    /// The subscription.
    pub id: B128,
}

impl Message for Unsubscribe {
    type Result = bool;
}

/// The node is stopping: close every WebSocket connection now (code 1001) rather than let
/// them hold the server's graceful shutdown open until its timeout.
#[derive(Debug, Clone, Copy)]
pub struct CloseAll;

impl Message for CloseAll {
    type Result = ();
}

/// One item for one subscription.
#[derive(Debug, Clone)]
pub struct Notification {
    /// The subscription it is for.
    pub subscription: B128,
    /// What happened.
    pub item: Notice,
}

/// The payload of a notification, before it is encoded as JSON.
#[derive(Debug, Clone)]
pub enum Notice {
    /// A new head (newHeads): the header is encoded from the block.
    Head(Arc<SealedBlock>),
    /// A matching log (logs), with its block, transaction and log indexes.
    Log(Box<Log>),
    /// An admitted transaction's hash (newPendingTransactions).
    PendingTx(B256),
    /// An admitted transaction, whole (newPendingTransactions with `true`).
    PendingTxObject(Box<crate::executor::PooledTx>),
    /// console.log output of one transaction or call (hearth_console).
    Console(crate::console::ConsolePrinted),
}

/// The subscription actor's counters. Serves `GET /metrics`.
#[derive(Debug, Clone, Copy)]
pub struct GetSubscriptionStats;

/// Counts of what the subscription actor holds and did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SubscriptionStats {
    /// Connections registered now.
    pub connections: usize,
    /// newHeads subscriptions now.
    pub new_heads: usize,
    /// logs subscriptions now.
    pub logs: usize,
    /// newPendingTransactions subscriptions now.
    pub pending_txs: usize,
    /// hearth_console subscriptions now.
    pub console: usize,
    /// Notifications queued since start.
    pub notifications: u64,
    /// Connections closed because their queue was full.
    pub slow_dropped: u64,
    /// Connections refused at `--ws.max-connections`.
    pub refused: u64,
}

impl Message for GetSubscriptionStats {
    type Result = SubscriptionStats;
}

crate::actor_client! {
    /// The `SubscriptionActor`'s client (WebSocket connections, eth_subscribe and friends).
    pub struct SubscriptionClient for "subscriptions" {
        /// Registers a WebSocket connection.
        ask connect: Connect,
        /// Forgets one; a closing connection does not wait for it.
        tell disconnect: Disconnect,
        /// Adds a subscription.
        ask subscribe: Subscribe,
        /// Removes one.
        ask unsubscribe: Unsubscribe,
        /// Its counters, for `GET /metrics`.
        ask stats: GetSubscriptionStats,
    }
}
