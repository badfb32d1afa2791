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

use actix_web::{FromRequest, HttpRequest, HttpResponse, dev, web};
use actix_ws::{CloseCode, Closed, Session};
use futures_util::StreamExt;
use futures_util::stream::FuturesUnordered;
use hearth_messages::subscriptions::{CloseReason, Connect, Connection, Disconnect};
use tokio::sync::oneshot;
use tokio::time::{Instant, MissedTickBehavior, Sleep};

use crate::core::Rejection;
use crate::core::RpcContext;
use frames::{FrameReader, Incoming};

/// Most requests of one connection answered at once; past it the connection's frames wait
/// unread (back-pressure on that client only).
pub const MAX_IN_FLIGHT_PER_CONNECTION: usize = 32;

/// How long a close frame may wait for room when the client is not reading; then the
/// connection is dropped without it.
const CLOSE_GRACE: Duration = Duration::from_secs(10);

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
    let mut pings =
        tokio::time::interval_at(Instant::now() + limits.ws_ping_interval, limits.ws_ping_interval);
    pings.set_missed_tick_behavior(MissedTickBehavior::Delay);
    let idle = tokio::time::sleep(limits.ws_idle_timeout);
    tokio::pin!(idle);
    // Paces a client that resends at once after -32005, as an HTTP connection is (`shed`).
    let pace = crate::transport::shed::RetryPace::default();
    let pace = &pace;
    let mut in_flight = FuturesUnordered::new();
    // Bytes of the requests in flight: with the count, what one connection may hold.
    let mut in_flight_bytes = 0usize;
    // Requests in flight that may subscribe: notifications wait until they are answered, so a
    // client never sees a notification for an id before the eth_subscribe answer naming it.
    let mut subscribing = 0usize;
    let end = loop {
        let may_read =
            in_flight.len() < MAX_IN_FLIGHT_PER_CONNECTION && in_flight_bytes < max_bytes;
        tokio::select! {
            biased;
            reason = &mut closed => break closing(reason),
            () = &mut idle => break idle_end(limits.ws_idle_timeout),
            Some((answer, may_subscribe, len)) = in_flight.next(), if !in_flight.is_empty() => {
                in_flight_bytes -= len;
                if may_subscribe {
                    subscribing -= 1;
                }
                // A request answered is activity too: a client waiting on slow requests,
                // whose frames are not being read meanwhile, is not idle.
                idle.as_mut().reset(Instant::now() + limits.ws_idle_timeout);
                let Some(answer) = answer else { continue };
                // The transport encodes JSON, which is UTF-8.
                let text = String::from_utf8(answer)
                    .unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned());
                tracing::trace!(target: "rpc::ws", connection = id.0, answer = %text, "answer");
                let sent = write(session.text(text), &mut closed, idle.as_mut(), &limits).await;
                if let Err(end) = sent {
                    break end;
                }
            }
            _ = pings.tick() => {
                let sent = write(session.ping(b""), &mut closed, idle.as_mut(), &limits).await;
                if let Err(end) = sent {
                    break end;
                }
            }
            note = notifications.recv(), if subscribing == 0 => {
                // The actor let go of the queue without a reason: it stopped.
                let Some(note) = note else { break shutting_down() };
                match crate::eth::subscriptions::encode(&note) {
                    Ok(text) => {
                        let sent =
                            write(session.text(text), &mut closed, idle.as_mut(), &limits).await;
                        if let Err(end) = sent {
                            break end;
                        }
                    }
                    Err(error) => {
                        tracing::error!(target: "rpc::ws", %error, "cannot encode a notification");
                    }
                }
            }
            frame = frames.next(), if may_read => {
                idle.as_mut().reset(Instant::now() + limits.ws_idle_timeout);
                let text = match frame {
                    Some(Ok(Incoming::Message(bytes))) => bytes,
                    Some(Ok(Incoming::Ping(bytes))) => {
                        let sent =
                            write(session.pong(&bytes), &mut closed, idle.as_mut(), &limits).await;
                        if let Err(end) = sent {
                            break end;
                        }
                        continue;
                    }
                    Some(Ok(Incoming::Pong)) => continue,
                    // The client's close: answer it with the same code, as RFC 6455 asks.
                    Some(Ok(Incoming::Close(reason))) => {
                        break End::Close(reason.unwrap_or_else(|| CloseCode::Normal.into()));
                    }
                    Some(Err(error)) => match error.close_reason(max_bytes) {
                        Some(reason) => {
                            tracing::debug!(target: "rpc::ws", connection = id.0, ?error, "websocket refused a frame");
                            break End::Close(reason);
                        }
                        // The socket went away without a close frame: nobody to answer.
                        None => {
                            tracing::debug!(target: "rpc::ws", ?error, "websocket connection lost");
                            break End::Quiet;
                        }
                    },
                    None => break End::Quiet,
                };
                tracing::trace!(target: "rpc::ws", connection = id.0, request = %String::from_utf8_lossy(&text), "frame");
                // A false positive only delays notifications until this request is answered.
                let may_subscribe = contains(&text, b"eth_subscribe");
                if may_subscribe {
                    subscribing += 1;
                }
                let len = text.len();
                in_flight_bytes += len;
                in_flight.push(async move {
                    let reply = match crate::transport::shed::refuse_early_paced(ctx, &text, Some(pace)).await {
                        Some(refused) => refused,
                        None => crate::transport::run_request(ctx, &text, Some(id)).await,
                    };
                    (reply.body, may_subscribe, len)
                });
            }
        }
    };
    // A full mailbox loses this; the actor forgets connections whose queue is closed anyway.
    if ctx.subscriptions.disconnect(Disconnect(id)).is_err() {
        tracing::debug!(target: "rpc::ws", connection = id.0, "disconnect not delivered");
    }
    drop(notifications);
    if let End::Close(reason) = end {
        tracing::debug!(target: "rpc::ws", connection = id.0, ?reason, "websocket closing");
        let _ = tokio::time::timeout(CLOSE_GRACE, session.close(Some(reason))).await;
    }
    tracing::debug!(target: "rpc::ws", connection = id.0, "websocket closed");
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

/// Whether `needle` occurs in `haystack`.
fn contains(haystack: &[u8], needle: &[u8]) -> bool {
    haystack.windows(needle.len()).any(|w| w == needle)
}
