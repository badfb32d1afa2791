//! `ask`: request/reply that fails at once when the receiving mailbox is full.
//!
//! actix's `send().await` waits for room in a full mailbox: back-pressure, but a caller on the
//! request path would then wait an unbounded time. `ask` enqueues with `try_send` instead and
//! carries the reply channel inside the message, so a full mailbox is an immediate, countable
//! [`AskError::Full`] (JSON-RPC -32005), and a reply still comes back for every admitted request.
//! An actor answers `Ask<M>` for every `M` it handles through [`answer_asks!`](crate::answer_asks).

use actix::dev::SendError;
use actix::{Message, Recipient};
use tokio::sync::oneshot;

/// `msg`, with the channel its reply goes back on.
#[derive(Debug)]
pub struct Ask<M: Message> {
    /// The request.
    pub msg: M,
    /// Where the handler's reply is sent.
    pub reply: oneshot::Sender<M::Result>,
}

impl<M> Message for Ask<M>
where
    M: Message,
    M::Result: Send,
{
    type Result = ();
}

/// Why an `ask` got no reply.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum AskError {
    /// The mailbox is at its bound; nothing was enqueued.
    #[error("mailbox full")]
    Full,
    /// The actor has stopped.
    #[error("mailbox closed")]
    Closed,
    /// The actor dropped the request without answering (it stopped while handling it).
    #[error("request dropped")]
    Dropped,
}

/// Enqueues `msg` without waiting for room and awaits the reply.
pub async fn ask<M>(to: &Recipient<Ask<M>>, msg: M) -> Result<M::Result, AskError>
where
    M: Message + Send + 'static,
    M::Result: Send,
{
    let (reply, answer) = oneshot::channel();
    to.try_send(Ask { msg, reply }).map_err(|e| match e {
        SendError::Full(_) => AskError::Full,
        SendError::Closed(_) => AskError::Closed,
    })?;
    answer.await.map_err(|_| AskError::Dropped)
}

/// Makes `$actor` answer `Ask<M>` for each listed `M` it already handles, reusing its
/// `Handler<M>` (plain, `MessageResult` and `AtomicResponse` replies alike).
#[macro_export]
macro_rules! answer_asks {
    ($actor:ty: $($msg:ty),+ $(,)?) => {
        $(
            impl ::actix::Handler<$crate::ask::Ask<$msg>> for $actor {
                type Result = ();

                fn handle(&mut self, ask: $crate::ask::Ask<$msg>, ctx: &mut Self::Context) {
                    let response = <Self as ::actix::Handler<$msg>>::handle(self, ask.msg, ctx);
                    ::actix::dev::MessageResponse::<Self, $msg>::handle(response, ctx, Some(ask.reply));
                }
            }
        )+
    };
}
