//! The WebSocket side: JSON-RPC over `ws://` on the HTTP port (`GET /` with `Upgrade`).
//!
//! Each connection is one task on the actix-web worker that accepted it. The task owns its
//! socket and nothing else: requests (single or batch) go through the same dispatch as HTTP
//! bodies, up to [`MAX_IN_FLIGHT_PER_CONNECTION`] at once and at most the body limit in bytes
//! (then it stops reading frames), and their answers are written as they complete.
//! Notifications come from the `SubscriptionActor` through the connection's bounded queue.
//! Client frames are read by [`frames::FrameReader`], which refuses a message over the body
//! limit from the length its frame header declares, before reading its payload; actix-ws does
//! the handshake and writes.
//!
//! Keep-alive: the server pings every `RpcLimits::ws_ping_interval`; a connection from which
//! nothing comes (no frame, no pong) for `RpcLimits::ws_idle_timeout` is closed. The close
//! codes the server sends:
//! - 1000 and the others a client sends: echoed when the client closes (RFC 6455 §5.5.1);
//! - 1001 "the node is shutting down", or "idle for 60s: no frame or pong";
//! - 1002 a frame breaking RFC 6455 (unmasked, a bad opcode, ...), with the reason;
//! - 1007 a text message that is not UTF-8;
//! - 1008 "subscriber too slow: N notifications queued" (the actor fired the close signal
//!   because the connection's queue, `--ws.max-queued`, was full);
//! - 1009 "message larger than N bytes" (the request body limit).
//!
//! Nothing here buffers without bound: the queue is bounded by `--ws.max-queued`, requests in
//! flight by the constant and the body limit, and frames by the body limit.

mod frames;

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use actix_web::web::Bytes;
use actix_web::{FromRequest, HttpRequest, HttpResponse, dev, web};
use actix_ws::{CloseCode, Closed, Session};
use futures_util::StreamExt;
use futures_util::stream::FuturesUnordered;
use hearth_messages::subscriptions::{
    CloseReason, Connect, Connection, ConnectionId, Disconnect, Notification,
};
use tokio::sync::oneshot;
use tokio::time::{Instant, MissedTickBehavior, Sleep};

use crate::core::Rejection;
use crate::core::RpcContext;
use frames::{FrameError, FrameReader, Incoming};

/// Most requests of one connection answered at once; past it the connection's frames wait
/// unread (back-pressure on that client only).
pub const MAX_IN_FLIGHT_PER_CONNECTION: usize = 32;

/// How long a close frame may wait for room when the client is not reading; then the
/// connection is dropped without it.
const CLOSE_GRACE: Duration = Duration::from_secs(10);

/// Whether the request asks for a WebSocket.
pub(crate) fn is_upgrade(headers: &actix_web::http::header::HeaderMap) -> bool {
    let upgrade = headers.get(actix_web::http::header::UPGRADE).and_then(|v| v.to_str().ok());
    upgrade.is_some_and(|v| {
        v.split(',').any(|protocol| protocol.trim().eq_ignore_ascii_case("websocket"))
    })
}

/// GET `/`: upgrades to a WebSocket and serves JSON-RPC and subscriptions on it. Without an
/// `Upgrade` header it answers as actix does (400); at `--ws.max-connections` it answers 503.
/// The origin and host were checked before (`server::guard`).
pub(crate) async fn endpoint(
    req: HttpRequest,
    body: web::Payload,
    ctx: web::Data<RpcContext>,
) -> HttpResponse {
    // actix-ws answers the handshake and gives the writing half; it gets an empty body, since
    // the frames are read by `FrameReader` (see the module docs).
    let empty = match web::Payload::from_request(&req, &mut dev::Payload::None).await {
        Ok(empty) => empty,
        Err(error) => return error.error_response(),
    };
    let (response, session, _unread) = match actix_ws::handle(&req, empty) {
        Ok(parts) => parts,
        Err(error) => return error.error_response(),
    };
    let connection = match ctx.subscriptions.connect(Connect).await {
        Ok(Ok(connection)) => connection,
        Ok(Err(error)) => {
            tracing::debug!(target: "rpc::ws", %error, "websocket refused");
            return HttpResponse::ServiceUnavailable().body(error.to_string());
        }
        Err(error) => {
            ctx.metrics.reject(Rejection::MailboxFull);
            return HttpResponse::ServiceUnavailable().body(error.to_string());
        }
    };
    let frames = FrameReader::new(body, ctx.limits.max_body_bytes);
    tracing::debug!(target: "rpc::ws", connection = connection.id.0, "websocket opened");
    actix_web::rt::spawn(run(ctx.into_inner(), connection, session, frames));
    response
}

/// Why the connection loop ended: with a close frame to send, or with none.
enum End {
    Close(actix_ws::CloseReason),
    Quiet,
}

/// Serves one connection until it closes.
async fn run(
    ctx: Arc<RpcContext>,
    connection: Connection,
    mut session: Session,
    mut frames: FrameReader<web::Payload>,
) {
    let Connection { id, mut notifications, mut closed } = connection;
    let ctx = &*ctx;
    let limits = ctx.limits;
    let max_bytes = limits.max_body_bytes;
    let mut pings = ping_timer(&limits);
    let idle = tokio::time::sleep(limits.ws_idle_timeout);
    tokio::pin!(idle);
    // Paces a client that resends at once after -32005, as an HTTP connection is (`shed`).
    let pace = &crate::transport::shed::RetryPace::default();
    let mut in_flight = InFlight::default();
    let end = loop {
        let may_read = in_flight.may_read(max_bytes);
        let step = tokio::select! {
            biased;
            reason = &mut closed => Step::End(closing(reason)),
            () = &mut idle => Step::End(idle_end(limits.ws_idle_timeout)),
            Some((answer, may_subscribe, len)) = in_flight.answers.next(), if !in_flight.answers.is_empty() => {
                in_flight.answered(may_subscribe, len);
                // A request answered is activity too: a client waiting on slow requests,
                // whose frames are not being read meanwhile, is not idle.
                idle.as_mut().reset(Instant::now() + limits.ws_idle_timeout);
                match answer {
                    None => Step::Nothing,
                    Some(answer) => Step::Send(Out::Text(answer_text(answer, id))),
                }
            }
            _ = pings.tick() => Step::Send(Out::Ping),
            note = notifications.recv(), if in_flight.subscribing == 0 => match note {
                // The actor let go of the queue without a reason: it stopped.
                None => Step::End(shutting_down()),
                Some(note) => notification_text(&note).map_or(Step::Nothing, |text| Step::Send(Out::Text(text))),
            },
            frame = frames.next(), if may_read => {
                idle.as_mut().reset(Instant::now() + limits.ws_idle_timeout);
                match read_frame(frame, max_bytes, id) {
                    Read::Request(text) => {
                        in_flight.push(request(ctx, pace, id, text));
                        Step::Nothing
                    }
                    Read::Ping(bytes) => Step::Send(Out::Pong(bytes)),
                    Read::Nothing => Step::Nothing,
                    Read::End(end) => Step::End(end),
                }
            }
        };
        match step {
            Step::Nothing => {}
            Step::End(end) => break end,
            Step::Send(out) => {
                if let Err(end) = send(&mut session, out, &mut closed, idle.as_mut(), &limits).await
                {
                    break end;
                }
            }
        }
    };
    // A full mailbox loses this; the actor forgets connections whose queue is closed anyway.
    if ctx.subscriptions.disconnect(Disconnect(id)).is_err() {
        tracing::debug!(target: "rpc::ws", connection = id.0, "disconnect not delivered");
    }
    drop(notifications);
    close(session, end, id).await;
}

/// A request read from the connection, with what the loop counts of it.
struct Request<F> {
    /// Whether it may subscribe (notifications wait until it is answered).
    may_subscribe: bool,
    /// Its size in bytes.
    len: usize,
    /// Its answer's body (none for notifications only), with `may_subscribe` and `len` again
    /// for the loop to release.
    answer: F,
}

/// Starts running the request `text`: refused early when the pool is over its budget (paced
/// like an HTTP connection), else run.
fn request<'a>(
    ctx: &'a RpcContext,
    pace: &'a crate::transport::shed::RetryPace,
    id: ConnectionId,
    text: Bytes,
) -> Request<impl Future<Output = (Option<Vec<u8>>, bool, usize)> + 'a> {
    tracing::trace!(target: "rpc::ws", connection = id.0, request = %String::from_utf8_lossy(&text), "frame");
    // A false positive only delays notifications until this request is answered.
    let may_subscribe = contains(&text, b"eth_subscribe");
    let len = text.len();
    let answer = async move {
        let reply = match crate::transport::shed::refuse_early_paced(ctx, &text, Some(pace)).await {
            Some(refused) => refused,
            None => crate::transport::run_request(ctx, &text, Some(id)).await,
        };
        (reply.body, may_subscribe, len)
    };
    Request { may_subscribe, len, answer }
}

/// Ends the connection: with a close frame when `end` has one (within [`CLOSE_GRACE`]).
async fn close(session: Session, end: End, id: ConnectionId) {
    if let End::Close(reason) = end {
        tracing::debug!(target: "rpc::ws", connection = id.0, ?reason, "websocket closing");
        let _ = tokio::time::timeout(CLOSE_GRACE, session.close(Some(reason))).await;
    }
    tracing::debug!(target: "rpc::ws", connection = id.0, "websocket closed");
}

/// What one read from the client's frames asks the loop to do.
enum Read {
    /// Run this request text.
    Request(Bytes),
    /// Answer a ping with these bytes.
    Ping(Bytes),
    /// Nothing (a pong).
    Nothing,
    /// End the connection.
    End(End),
}

/// Sorts what the frame reader gave: a request, a ping, a pong, or the connection's end.
fn read_frame(
    frame: Option<Result<Incoming, FrameError>>,
    max_bytes: usize,
    id: ConnectionId,
) -> Read {
    match frame {
        Some(Ok(Incoming::Message(bytes))) => Read::Request(bytes),
        Some(Ok(Incoming::Ping(bytes))) => Read::Ping(bytes),
        Some(Ok(Incoming::Pong)) => Read::Nothing,
        // The client's close: answer it with the same code, as RFC 6455 asks.
        Some(Ok(Incoming::Close(reason))) => {
            Read::End(End::Close(reason.unwrap_or_else(|| CloseCode::Normal.into())))
        }
        Some(Err(error)) => match error.close_reason(max_bytes) {
            Some(reason) => {
                tracing::debug!(target: "rpc::ws", connection = id.0, ?error, "websocket refused a frame");
                Read::End(End::Close(reason))
            }
            // The socket went away without a close frame: nobody to answer.
            None => {
                tracing::debug!(target: "rpc::ws", ?error, "websocket connection lost");
                Read::End(End::Quiet)
            }
        },
        None => Read::End(End::Quiet),
    }
}

/// An answer's text: the transport encodes JSON, which is UTF-8.
fn answer_text(answer: Vec<u8>, id: ConnectionId) -> String {
    let text = String::from_utf8(answer)
        .unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned());
    tracing::trace!(target: "rpc::ws", connection = id.0, answer = %text, "answer");
    text
}

/// The requests of one connection being answered, and what they hold.
struct InFlight<F> {
    /// Their answers, as they come.
    answers: FuturesUnordered<F>,
    /// Their bytes: with the count, what one connection may hold.
    bytes: usize,
    /// Those that may subscribe: notifications wait until they are answered, so a client
    /// never sees a notification for an id before the eth_subscribe answer naming it.
    subscribing: usize,
}

impl<F> Default for InFlight<F> {
    fn default() -> Self {
        Self { answers: FuturesUnordered::new(), bytes: 0, subscribing: 0 }
    }
}

impl<F: Future> InFlight<F> {
    /// Whether another request may be read: under the count and the bytes one connection holds.
    fn may_read(&self, max_bytes: usize) -> bool {
        self.answers.len() < MAX_IN_FLIGHT_PER_CONNECTION && self.bytes < max_bytes
    }

    /// Starts waiting for `request`'s answer.
    fn push(&mut self, request: Request<F>) {
        self.subscribing += usize::from(request.may_subscribe);
        self.bytes += request.len;
        self.answers.push(request.answer);
    }

    /// Releases what an answered request held.
    fn answered(&mut self, may_subscribe: bool, len: usize) {
        self.bytes -= len;
        self.subscribing -= usize::from(may_subscribe);
    }
}

/// A notification's JSON text; `None` (logged) when it cannot be encoded.
fn notification_text(note: &Notification) -> Option<String> {
    crate::eth::subscriptions::encode(note)
        .map_err(|error| {
            tracing::error!(target: "rpc::ws", %error, "cannot encode a notification");
        })
        .ok()
}

/// The end for a connection silent for `timeout`: 1001.
fn idle_end(timeout: Duration) -> End {
    End::Close(actix_ws::CloseReason {
        code: CloseCode::Away,
        description: Some(format!("idle for {timeout:?}: no frame or pong")),
    })
}

/// The end for a fired (or dropped) close signal.
fn closing(reason: Result<CloseReason, oneshot::error::RecvError>) -> End {
    match reason {
        Ok(reason @ CloseReason::TooSlow { .. }) => End::Close(actix_ws::CloseReason {
            code: CloseCode::Policy,
            description: Some(reason.to_string()),
        }),
        Ok(CloseReason::ShuttingDown) => shutting_down(),
        Err(_) => shutting_down(),
    }
}

/// The end when the node is shutting down (or the subscription actor has stopped): 1001.
fn shutting_down() -> End {
    End::Close(actix_ws::CloseReason {
        code: CloseCode::Away,
        description: Some(CloseReason::ShuttingDown.to_string()),
    })
}

/// Sends one frame (`sent` is the session's send), unless the close signal fires or the idle
/// deadline passes while the socket has no room.
async fn write(
    sent: impl Future<Output = Result<(), Closed>>,
    closed: &mut oneshot::Receiver<CloseReason>,
    idle: Pin<&mut Sleep>,
    limits: &crate::RpcLimits,
) -> Result<(), End> {
    tokio::select! {
        biased;
        reason = closed => Err(closing(reason)),
        () = idle => Err(idle_end(limits.ws_idle_timeout)),
        sent = sent => sent.map_err(|_| End::Quiet),
    }
}

/// The keep-alive pings' timer: the first a whole interval after the connection opened; a
/// tick missed while the loop was busy is delayed, not bunched.
fn ping_timer(limits: &crate::RpcLimits) -> tokio::time::Interval {
    let mut pings =
        tokio::time::interval_at(Instant::now() + limits.ws_ping_interval, limits.ws_ping_interval);
    pings.set_missed_tick_behavior(MissedTickBehavior::Delay);
    pings
}

/// What one turn of a connection's loop does.
enum Step {
    /// Nothing to send.
    Nothing,
    /// Send a frame.
    Send(Out),
    /// End the connection.
    End(End),
}

/// A frame to send.
enum Out {
    /// An answer or a notification.
    Text(String),
    /// The server's keep-alive ping.
    Ping,
    /// The answer to a client's ping.
    Pong(Bytes),
}

/// Sends `out`, unless the connection closes or stays idle meanwhile ([`write`]).
async fn send(
    session: &mut Session,
    out: Out,
    closed: &mut oneshot::Receiver<CloseReason>,
    idle: Pin<&mut Sleep>,
    limits: &crate::RpcLimits,
) -> Result<(), End> {
    match out {
        Out::Text(text) => write(session.text(text), closed, idle, limits).await,
        Out::Ping => write(session.ping(b""), closed, idle, limits).await,
        Out::Pong(bytes) => write(session.pong(&bytes), closed, idle, limits).await,
    }
}

/// Whether `needle` occurs in `haystack`.
fn contains(haystack: &[u8], needle: &[u8]) -> bool {
    haystack.windows(needle.len()).any(|w| w == needle)
}
