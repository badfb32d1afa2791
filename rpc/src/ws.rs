//! The WebSocket side: JSON-RPC over `ws://` on the HTTP port (`GET /` with `Upgrade`).
//!
//! Each connection is one task on the actix-web worker that accepted it. The task owns its
//! socket and nothing else: requests (single or batch) go through the same dispatch as HTTP
//! bodies, up to [`MAX_IN_FLIGHT_PER_CONNECTION`] at once (then it stops reading frames), and
//! their answers are written as they complete. Notifications come from the
//! `SubscriptionActor` through the connection's bounded queue; the actor closes a connection
//! whose queue is full by firing its close signal, and this task then sends a close frame with
//! code 1008 and the reason ("subscriber too slow: N notifications queued"). Nothing here
//! buffers without bound: the queue is bounded by `--ws.max-queued`, in-flight requests by
//! the constant, and each frame by the request body limit (`1009` above it).

use std::sync::Arc;
use std::time::Duration;

use actix_web::{HttpRequest, HttpResponse, web};
use actix_ws::{AggregatedMessage, AggregatedMessageStream, CloseCode, ProtocolError, Session};
use futures_util::StreamExt;
use futures_util::stream::FuturesUnordered;
use hearth_messages::ask::ask;
use hearth_messages::subscriptions::{CloseReason, Connect, Connection, Disconnect};
use tokio::sync::oneshot;

use crate::context::RpcContext;
use crate::metrics::Rejection;

/// Most requests of one connection answered at once; past it the connection's frames wait
/// unread (back-pressure on that client only).
pub const MAX_IN_FLIGHT_PER_CONNECTION: usize = 32;

/// How long a close frame may wait for room when the client is not reading; then the
/// connection is dropped without it.
const CLOSE_GRACE: Duration = Duration::from_secs(10);

/// GET `/`: upgrades to a WebSocket and serves JSON-RPC and subscriptions on it. Without an
/// `Upgrade` header it answers as actix does (400); at `--ws.max-connections` it answers 503.
pub(crate) async fn endpoint(
    req: HttpRequest,
    body: web::Payload,
    ctx: web::Data<RpcContext>,
) -> HttpResponse {
    let (response, session, stream) = match actix_ws::handle(&req, body) {
        Ok(parts) => parts,
        Err(error) => return error.error_response(),
    };
    let connection = match ask(&ctx.subscriptions.connect, Connect).await {
        Ok(Ok(connection)) => connection,
        Ok(Err(error)) => {
            tracing::debug!(target: "rpc::ws", %error, "websocket refused");
            return HttpResponse::ServiceUnavailable().body(error.to_string());
        }
        Err(error) => {
            ctx.metrics.reject(Rejection::MailboxFull);
            let error = crate::RpcError::ask("subscriptions", error);
            return HttpResponse::ServiceUnavailable().body(error.to_string());
        }
    };
    let max = ctx.limits.max_body_bytes;
    let stream = stream.max_frame_size(max).aggregate_continuations().max_continuation_size(max);
    tracing::debug!(target: "rpc::ws", connection = connection.id.0, "websocket opened");
    actix_web::rt::spawn(run(ctx.into_inner(), connection, session, stream));
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
    mut stream: AggregatedMessageStream,
) {
    let Connection { id, mut notifications, mut closed } = connection;
    let ctx = &*ctx;
    let mut in_flight = FuturesUnordered::new();
    // Requests in flight that may subscribe: notifications wait until they are answered, so a
    // client never sees a notification for an id before the eth_subscribe answer naming it.
    let mut subscribing = 0usize;
    let end = loop {
        tokio::select! {
            biased;
            reason = &mut closed => break closing(reason),
            Some((answer, may_subscribe)) = in_flight.next(), if !in_flight.is_empty() => {
                if may_subscribe {
                    subscribing -= 1;
                }
                let Some(answer) = answer else { continue };
                // The transport encodes JSON, which is UTF-8.
                let text = String::from_utf8(answer)
                    .unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned());
                tracing::trace!(target: "rpc::ws", connection = id.0, answer = %text, "answer");
                if let Err(end) = write(&mut session, text, &mut closed).await {
                    break end;
                }
            }
            note = notifications.recv(), if subscribing == 0 => {
                // The actor let go of the queue without a reason: it stopped.
                let Some(note) = note else { break shutting_down() };
                match crate::subscriptions::encode(&note) {
                    Ok(text) => {
                        if let Err(end) = write(&mut session, text, &mut closed).await {
                            break end;
                        }
                    }
                    Err(error) => {
                        tracing::error!(target: "rpc::ws", %error, "cannot encode a notification");
                    }
                }
            }
            frame = stream.next(), if in_flight.len() < MAX_IN_FLIGHT_PER_CONNECTION => {
                let text = match frame {
                    Some(Ok(AggregatedMessage::Text(text))) => text.into_bytes(),
                    Some(Ok(AggregatedMessage::Binary(bytes))) => bytes,
                    Some(Ok(AggregatedMessage::Ping(bytes))) => {
                        if session.pong(&bytes).await.is_err() {
                            break End::Quiet;
                        }
                        continue;
                    }
                    Some(Ok(AggregatedMessage::Pong(_))) => continue,
                    // The client's close: answer it with the same code, as RFC 6455 asks.
                    Some(Ok(AggregatedMessage::Close(reason))) => {
                        break End::Close(reason.unwrap_or_else(|| CloseCode::Normal.into()));
                    }
                    // One frame over the limit, or (actix-ws reports it as I/O) a message in
                    // continuation frames over it.
                    Some(Err(ProtocolError::Overflow)) => {
                        break too_big(ctx);
                    }
                    Some(Err(ProtocolError::Io(error)))
                        if error.to_string().contains("maximum continuation size") =>
                    {
                        break too_big(ctx);
                    }
                    // The socket went away without a close frame: nobody to answer.
                    Some(Err(ProtocolError::Io(error))) => {
                        tracing::debug!(target: "rpc::ws", %error, "websocket connection lost");
                        break End::Quiet;
                    }
                    Some(Err(error)) => {
                        tracing::debug!(target: "rpc::ws", %error, "websocket protocol error");
                        break End::Close(actix_ws::CloseReason {
                            code: CloseCode::Protocol,
                            description: Some(error.to_string()),
                        });
                    }
                    None => break End::Quiet,
                };
                tracing::trace!(target: "rpc::ws", connection = id.0, request = %String::from_utf8_lossy(&text), "frame");
                // A false positive only delays notifications until this request is answered.
                let may_subscribe = contains(&text, b"eth_subscribe");
                if may_subscribe {
                    subscribing += 1;
                }
                in_flight.push(async move {
                    let reply = crate::handle_request(ctx, &text, Some(id)).await;
                    (reply.body, may_subscribe)
                });
            }
        }
    };
    // A full mailbox loses this; the actor forgets connections whose queue is closed anyway.
    if ctx.subscriptions.disconnect.try_send(Disconnect(id)).is_err() {
        tracing::debug!(target: "rpc::ws", connection = id.0, "disconnect not delivered");
    }
    drop(notifications);
    if let End::Close(reason) = end {
        tracing::debug!(target: "rpc::ws", connection = id.0, ?reason, "websocket closing");
        let _ = tokio::time::timeout(CLOSE_GRACE, session.close(Some(reason))).await;
    }
    tracing::debug!(target: "rpc::ws", connection = id.0, "websocket closed");
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

/// The end for a message over the request body limit: close code 1009.
fn too_big(ctx: &RpcContext) -> End {
    End::Close(actix_ws::CloseReason {
        code: CloseCode::Size,
        description: Some(format!("message larger than {} bytes", ctx.limits.max_body_bytes)),
    })
}

/// The end when the node is shutting down (or the subscription actor has stopped): 1001.
fn shutting_down() -> End {
    End::Close(actix_ws::CloseReason {
        code: CloseCode::Away,
        description: Some(CloseReason::ShuttingDown.to_string()),
    })
}

/// Writes one text frame, unless the close signal fires while the socket has no room.
async fn write(
    session: &mut Session,
    text: String,
    closed: &mut oneshot::Receiver<CloseReason>,
) -> Result<(), End> {
    tokio::select! {
        biased;
        reason = closed => Err(closing(reason)),
        sent = session.text(text) => sent.map_err(|_| End::Quiet),
    }
}

/// Whether `needle` occurs in `haystack`.
fn contains(haystack: &[u8], needle: &[u8]) -> bool {
    haystack.windows(needle.len()).any(|w| w == needle)
}
