//! Typed actor clients: one cloneable struct per actor that the RPC front talks to, with a
//! method per message, each answering the actor's reply or an [`ActorError`] that names the actor.
//!
//! A client is the one place that says how a message travels. `ask` enqueues with `try_send`
//! and fails at once on a full mailbox (the request path must not wait for room: see
//! [`crate::ask`]); `send` waits for room (back-pressure, for dev controls that must not be
//! dropped); `tell` enqueues a notification without waiting for anything. The clients
//! themselves are declared with [`actor_client!`](crate::actor_client) beside their messages
//! (`MempoolClient` in `mempool.rs`, `MinerClient` in `miner.rs`, ...), so reading a client
//! shows, per method, the message and the way it is sent.
//!
//! ```
//! # use hearth_messages::filters::{FilterClient, UninstallFilter};
//! # async fn demo(filters: FilterClient) -> Result<(), hearth_messages::client::ActorError> {
//! // eth_uninstallFilter: `Ok(false)` for an unknown id, `Err` when the actor did not answer.
//! let removed: bool = filters.uninstall(UninstallFilter(7)).await?;
//! # let _ = removed;
//! # Ok(())
//! # }
//! ```

use actix::dev::SendError;
use actix::{MailboxError, Message, Recipient};

use crate::ask::{Ask, AskError};

/// Why an actor did not answer a client's request. The RPC front maps [`ActorError::Full`] to
/// -32005 (retry later) and the others to -32603 (the node failed, not the request).
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum ActorError {
    /// The actor's mailbox is at its bound: nothing was enqueued.
    #[error("limit exceeded: the {actor} mailbox is full; retry later")]
    Full {
        /// Which actor.
        actor: &'static str,
    },
    /// The actor stopped before taking or answering the request.
    #[error("internal error: {actor} is unavailable: {source}")]
    Gone {
        /// Which actor.
        actor: &'static str,
        /// What happened.
        source: AskError,
    },
    /// actix could not deliver the request or its answer.
    #[error("internal error: {actor} is unavailable: {source}")]
    Mailbox {
        /// Which actor.
        actor: &'static str,
        /// What actix reported.
        source: MailboxError,
    },
}

impl ActorError {
    /// The error for an `ask` to `actor` that got no reply.
    pub const fn asked(actor: &'static str, source: AskError) -> Self {
        match source {
            AskError::Full => Self::Full { actor },
            AskError::Closed | AskError::Dropped => Self::Gone { actor, source },
        }
    }

    /// Whether the actor's mailbox was full (the caller may retry).
    pub const fn is_full(&self) -> bool {
        matches!(self, Self::Full { .. })
    }
}

/// Enqueues `msg` for `actor` without waiting for room and awaits the reply.
pub async fn ask<M>(
    actor: &'static str,
    to: &Recipient<Ask<M>>,
    msg: M,
) -> Result<M::Result, ActorError>
where
    M: Message + Send + 'static,
    M::Result: Send,
{
    crate::ask::ask(to, msg).await.map_err(|source| ActorError::asked(actor, source))
}

/// Enqueues `msg` for `actor`, waiting for room in its mailbox, and awaits the reply.
pub async fn send<M>(
    actor: &'static str,
    to: &Recipient<M>,
    msg: M,
) -> Result<M::Result, ActorError>
where
    M: Message + Send + 'static,
    M::Result: Send,
{
    to.send(msg).await.map_err(|source| ActorError::Mailbox { actor, source })
}

/// Enqueues the notification `msg` for `actor` without waiting for room or for its handling.
pub fn tell<M>(actor: &'static str, to: &Recipient<M>, msg: M) -> Result<(), ActorError>
where
    M: Message<Result = ()> + Send + 'static,
{
    to.try_send(msg).map_err(|e| match e {
        SendError::Full(_) => ActorError::Full { actor },
        SendError::Closed(_) => ActorError::Gone { actor, source: AskError::Closed },
    })
}

/// Declares a typed client: a struct with one public `Recipient` per message (a test may put
/// a stand-in behind any of them), a method per message that sends it the declared way
/// (`ask`, `send` or `tell`, see the [module docs](crate::client)), and `new`, which takes
/// every recipient from one actor's address.
#[macro_export]
macro_rules! actor_client {
    (
        $(#[$meta:meta])*
        pub struct $client:ident for $actor:literal {
            $( $(#[$fmeta:meta])* $how:ident $field:ident : $msg:ty ),+ $(,)?
        }
    ) => {
        $(#[$meta])*
        #[derive(Clone, Debug)]
        pub struct $client {
            $( $(#[$fmeta])* pub $field: ::actix::Recipient<$crate::actor_client!(@carrier $how $msg)>, )+
        }

        impl $client {
            /// Takes every recipient from one actor's address.
            pub fn new<A>(addr: &::actix::Addr<A>) -> Self
            where
                A: ::actix::Actor $( + ::actix::Handler<$crate::actor_client!(@carrier $how $msg)> )+,
                $( A::Context: ::actix::dev::ToEnvelope<A, $crate::actor_client!(@carrier $how $msg)>, )+
            {
                Self { $( $field: addr.clone().recipient(), )+ }
            }

            $( $crate::actor_client!(@method $actor, $how, $field, $msg, $(#[$fmeta])*); )+
        }
    };
    (@carrier ask $msg:ty) => { $crate::ask::Ask<$msg> };
    (@carrier send $msg:ty) => { $msg };
    (@carrier tell $msg:ty) => { $msg };
    (@method $actor:literal, tell, $field:ident, $msg:ty, $(#[$fmeta:meta])*) => {
        $(#[$fmeta])*
        pub fn $field(&self, msg: $msg) -> Result<(), $crate::client::ActorError> {
            $crate::client::tell($actor, &self.$field, msg)
        }
    };
    // `ask` and `send`: `$how` names the function in this module that sends the message.
    (@method $actor:literal, $how:ident, $field:ident, $msg:ty, $(#[$fmeta:meta])*) => {
        $(#[$fmeta])*
        pub async fn $field(
            &self,
            msg: $msg,
        ) -> Result<<$msg as ::actix::Message>::Result, $crate::client::ActorError> {
            $crate::client::$how($actor, &self.$field, msg).await
        }
    };
}
