//! The HTTP side: an actix-web server answering JSON-RPC on `POST /`, WebSocket JSON-RPC on
//! `GET /` with `Upgrade` (see `ws`), Prometheus text on `GET /metrics`, a health probe on
//! `GET /health` (and `/readyz`), and CORS preflights on `OPTIONS`.
//!
//! Every request first passes [`guard`], which applies the web-access policy (`access`) before
//! anything runs or any body is read: a `Host` name not in `--http.vhosts` gets 403; an
//! `Origin` not allowed by `--http.corsdomain` (or `--ws.origins` for a WebSocket upgrade)
//! gets 403; a POST that is not `application/json` gets 415. Allowed cross-origin answers
//! carry `Access-Control-Allow-Origin` and `Vary: Origin`.

use std::cell::RefCell;
use std::io;
use std::net::SocketAddr;
use std::time::Duration;

use actix_web::body::{BoxBody, MessageBody};
use actix_web::dev::{Server, ServiceFactory, ServiceRequest, ServiceResponse};
use actix_web::http::header::{self, ContentType, HeaderName, HeaderValue};
use actix_web::http::{Method, StatusCode};
use actix_web::middleware::{Next, from_fn};
use actix_web::{App, HttpRequest, HttpResponse, HttpServer, web};

use crate::core::RpcContext;
use crate::core::{PREFLIGHT_MAX_AGE_SECS, is_header_token, is_json_content_type};
use crate::core::{Refusal, counter, gauge};
use crate::transport::envelope::RpcReply;

/// The methods a preflight may be answered for.
const ALLOWED_METHODS: &str = "GET, POST, OPTIONS";

/// Binds `addr` and serves JSON-RPC on POST `/` and over WebSocket on GET `/`. Returns the
/// running server (to await or stop) and the bound address (port 0 picks one).
///
/// The server starts when the returned [`Server`] is awaited or spawned, and runs until
/// stopped through its handle: actix-web's signal handling is off, because on a signal it stops
/// the whole actix System (every actor) 300 ms after the server, before the node can dump its
/// state and checkpoint its journal. The node binary stops it on SIGINT/SIGTERM
/// (`hearth::shutdown`).
pub fn serve(
    addr: SocketAddr,
    more: &[std::net::IpAddr],
    ctx: RpcContext,
    workers: usize,
) -> io::Result<(Server, SocketAddr)> {
    let server = HttpServer::new(move || app(ctx.clone()))
        // Each connection remembers its last early refusal, to pace a client that retries at
        // once (`shed`).
        .on_connect(|_, data| {
            data.insert(crate::transport::shed::RetryPace::default());
            data.insert(AllowedHost::default());
        })
        .workers(workers.max(1))
        .keep_alive(KEEP_ALIVE)
        .disable_signals()
        .bind(addr)?;
    let bound = server
        .addrs()
        .first()
        .copied()
        .ok_or_else(|| io::Error::other(format!("binding {addr} gave no address")))?;
    // The further addresses on the same port (the first's, when it was 0), as anvil binds
    // each --host.
    let mut server = server;
    for ip in more {
        server = server.bind(SocketAddr::new(*ip, bound.port()))?;
    }
    tracing::info!(target: "rpc", %bound, also = ?more, workers, "json-rpc server bound");
    Ok((server.run(), bound))
}

/// How long an idle HTTP connection is kept open, told to clients in a `Keep-Alive: timeout=`
/// header. actix-web's default closed them after 5 s without saying so, and a client that
/// reused one later (Hardhat's, through undici) got "other side closed"; anvil keeps idle
/// connections open, and Hardhat's node says `timeout=5` so that its clients stop reusing
/// them first.
pub const KEEP_ALIVE: Duration = Duration::from_secs(60);
const KEEP_ALIVE_HEADER: &str = "timeout=60";

/// The routes, behind the access guard: what each worker serves (and tests call in-process).
pub(crate) fn app(
    ctx: RpcContext,
) -> App<
    impl ServiceFactory<
        ServiceRequest,
        Config = (),
        Response = ServiceResponse<BoxBody>,
        Error = actix_web::Error,
        InitError = (),
    >,
> {
    // actix stops reading a body at this size and answers 413 itself.
    let body_limit = ctx.limits.max_body_bytes;
    App::new()
        .app_data(web::Data::new(ctx))
        .app_data(web::PayloadConfig::new(body_limit))
        .wrap(from_fn(guard))
        .route("/", web::post().to(endpoint))
        .route("/", web::get().to(get_root))
        .route("/explorer/{file}", web::get().to(crate::transport::explorer::file))
        .route("/metrics", web::get().to(metrics))
        .route("/health", web::get().to(health))
        .route("/readyz", web::get().to(health))
        .route("/", web::route().method(Method::OPTIONS).to(preflight))
        .route("/metrics", web::route().method(Method::OPTIONS).to(preflight))
}

/// `GET /`: the explorer page for a browser (`explorer`), else the WebSocket endpoint.
async fn get_root(
    req: HttpRequest,
    body: web::Payload,
    ctx: web::Data<RpcContext>,
) -> HttpResponse {
    if crate::transport::explorer::wants_page(&ctx, &req) {
        return crate::transport::explorer::page();
    }
    crate::transport::ws::endpoint(req, body, ctx).await
}

/// Applies the web-access policy before the route runs (see the module docs), and marks
/// allowed cross-origin answers.
async fn guard(
    req: ServiceRequest,
    next: Next<impl MessageBody + 'static>,
) -> Result<ServiceResponse<BoxBody>, actix_web::Error> {
    let Some(ctx) = req.app_data::<web::Data<RpcContext>>().cloned() else {
        return Ok(next.call(req).await?.map_into_boxed_body());
    };
    if let Some(refusal) = refusal(&ctx, req.request()) {
        let (reason, status, message) = refusal;
        ctx.metrics.refuse(reason);
        tracing::debug!(target: "rpc", %message, "request refused");
        let response =
            HttpResponse::build(status).content_type(ContentType::plaintext()).body(message);
        return Ok(req.into_response(response).map_into_boxed_body());
    }
    let origin = req.headers().get(header::ORIGIN).cloned();
    let policy = if crate::transport::ws::is_upgrade(req.headers()) {
        &ctx.web.ws_origins
    } else {
        &ctx.web.cors
    };
    let allow = origin.as_ref().and_then(|o| o.to_str().ok()).map(|o| {
        HeaderValue::from_str(policy.allow_origin_value(o)).unwrap_or(HeaderValue::from_static("*"))
    });
    let mut response = next.call(req).await?.map_into_boxed_body();
    if response.status() != StatusCode::SWITCHING_PROTOCOLS {
        response.headers_mut().insert(
            HeaderName::from_static("keep-alive"),
            HeaderValue::from_static(KEEP_ALIVE_HEADER),
        );
    }
    if let Some(allow) = allow {
        let headers = response.headers_mut();
        headers.insert(header::ACCESS_CONTROL_ALLOW_ORIGIN, allow);
        headers.append(header::VARY, HeaderValue::from_static("Origin"));
    }
    Ok(response)
}

/// The last `Host` header a connection's requests were allowed with. The policy cannot change
/// while the node runs, so a connection that keeps sending the same `Host` (every client does)
/// has it checked once instead of per request: the check splits, validates and lower-cases the
/// name, about 1,400 instructions of a ~95,000-instruction balanceOf eth_call (BENCHMARKS.md).
/// Lives in the connection's data on its worker thread.
#[derive(Debug, Default)]
struct AllowedHost(RefCell<Option<HeaderValue>>);

/// Why `req` must not run, if it must not: the counter, the status and a message saying which
/// flag would allow it.
fn refusal(ctx: &RpcContext, req: &HttpRequest) -> Option<(Refusal, StatusCode, String)> {
    let headers = req.headers();
    // The Engine API port: every request (a WebSocket handshake too) carries a fresh JWT.
    let authorization = headers.get(header::AUTHORIZATION).map(HeaderValue::as_bytes);
    if let Some(message) = ctx.surface.unauthorized(authorization) {
        return Some((Refusal::Jwt, StatusCode::UNAUTHORIZED, message));
    }
    if let Some(host) = headers.get(header::HOST) {
        let memo = req.conn_data::<AllowedHost>();
        let known = memo.is_some_and(|memo| memo.0.borrow().as_ref() == Some(host));
        if !known {
            let allowed = host.to_str().is_ok_and(|host| ctx.web.vhosts.allows(host));
            if !allowed {
                let message = format!(
                    "host {} is not allowed: add its name to --http.vhosts",
                    String::from_utf8_lossy(host.as_bytes())
                );
                return Some((Refusal::Host, StatusCode::FORBIDDEN, message));
            }
            if let Some(memo) = memo {
                *memo.0.borrow_mut() = Some(host.clone());
            }
        }
    }
    if let Some(origin) = headers.get(header::ORIGIN) {
        let (policy, flag) = if crate::transport::ws::is_upgrade(headers) {
            (&ctx.web.ws_origins, "--ws.origins")
        } else {
            (&ctx.web.cors, "--http.corsdomain")
        };
        if !origin.to_str().is_ok_and(|origin| policy.allows(origin)) {
            let message = format!(
                "origin {} is not allowed: add it to {flag}",
                String::from_utf8_lossy(origin.as_bytes())
            );
            return Some((Refusal::Origin, StatusCode::FORBIDDEN, message));
        }
    }
    if req.method() == Method::POST {
        let json = headers
            .get(header::CONTENT_TYPE)
            .and_then(|value| value.to_str().ok())
            .is_some_and(is_json_content_type);
        if !json {
            let message = "unsupported content type: send Content-Type: application/json".into();
            return Some((Refusal::ContentType, StatusCode::UNSUPPORTED_MEDIA_TYPE, message));
        }
    }
    None
}

/// OPTIONS `/` and `/metrics`: a CORS preflight from an allowed origin (the guard refused the others)
/// is answered with what may follow; without `Origin` it only lists the methods.
async fn preflight(req: HttpRequest, ctx: web::Data<RpcContext>) -> HttpResponse {
    let headers = req.headers();
    let Some(origin) = headers.get(header::ORIGIN).and_then(|o| o.to_str().ok()) else {
        return HttpResponse::NoContent().insert_header((header::ALLOW, ALLOWED_METHODS)).finish();
    };
    // Content-Type always; besides it, any well-formed header the page asks for: the node reads
    // no other request header, so allowing one grants nothing.
    let mut allow_headers = String::from("content-type");
    if let Some(asked) =
        headers.get(header::ACCESS_CONTROL_REQUEST_HEADERS).and_then(|h| h.to_str().ok())
    {
        for name in asked.split(',').map(str::trim) {
            if is_header_token(name) && !name.eq_ignore_ascii_case("content-type") {
                allow_headers.push_str(", ");
                allow_headers.push_str(&name.to_ascii_lowercase());
            }
        }
    }
    let mut response = HttpResponse::NoContent();
    response
        .insert_header((header::ACCESS_CONTROL_ALLOW_METHODS, ALLOWED_METHODS))
        .insert_header((header::ACCESS_CONTROL_ALLOW_HEADERS, allow_headers))
        .insert_header((header::ACCESS_CONTROL_MAX_AGE, PREFLIGHT_MAX_AGE_SECS))
        .insert_header((
            header::VARY,
            "Access-Control-Request-Method, Access-Control-Request-Headers",
        ));
    // Chrome asks before a public page may reach a private address (Private Network Access);
    // the origin is already one the operator allowed.
    if headers
        .get("access-control-request-private-network")
        .is_some_and(|v| v.as_bytes().eq_ignore_ascii_case(b"true"))
    {
        response.insert_header(("access-control-allow-private-network", "true"));
    }
    tracing::debug!(target: "rpc", origin, cors_any = ctx.web.cors.is_any(), "preflight answered");
    response.finish()
}

/// POST `/`: one JSON-RPC body in, one reply out. An executor call the pool would refuse (or a
/// batch of only such calls) is answered from a scan of the body, and held first when its
/// connection retries at once (`shed`).
async fn endpoint(req: HttpRequest, ctx: web::Data<RpcContext>, body: web::Bytes) -> HttpResponse {
    let pace = req.conn_data::<crate::transport::shed::RetryPace>();
    // Timed for the admitted calls' stages on /metrics (`ExecutorClient::timed`).
    let reply = ctx
        .executor
        .timed(async {
            match crate::transport::shed::refuse_early_paced(&ctx, &body, pace).await {
                Some(refused) => refused,
                // Boxed: the request's future holds the largest of every method's (6.6 KB in
                // a release build), and this block is moved into `timed`'s task-local scope
                // and into the handler's box before it runs; unboxed, each move copied all of
                // it (memmove was 6% of the front worker's time at 64 connections, 3% boxed).
                None => Box::pin(crate::transport::run_request(&ctx, &body, None)).await,
            }
        })
        .await;
    let RpcReply { status, body } = reply;
    let status = StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    match body {
        Some(body) => HttpResponse::build(status).content_type(ContentType::json()).body(body),
        None => HttpResponse::build(status).finish(),
    }
}

/// GET `/metrics`: Prometheus text. Request counters come from the striped `RpcMetrics`; the
/// gauges other actors own are asked for now, with `ask` (a busy actor is skipped, not waited on).
/// `GET /health` and `GET /readyz`, for a load balancer or an orchestrator's probe: 200 with
/// the head while the node serves its chain, 503 when it cannot read its head (the store is
/// gone or the node is shutting down). A read replica (`--follow`) answers 503 also while it
/// is more than `--follow.max-lag` blocks behind its leader or has not heard from it within
/// `--follow.max-lag-time`, with the lag in the body; it serves reads all the same.
async fn health(ctx: web::Data<RpcContext>) -> HttpResponse {
    let head = ctx.chain.head_number();
    let hash = head.and_then(|number| ctx.chain.block_hash(number).ok().flatten());
    let (Some(number), Some(hash)) = (head, hash) else {
        return HttpResponse::ServiceUnavailable()
            .content_type(ContentType::json())
            .body(r#"{"status":"unavailable","reason":"no head block to serve"}"#);
    };
    let Some(replica) = &ctx.replica else {
        return HttpResponse::Ok()
            .content_type(ContentType::json())
            .body(format!(r#"{{"status":"ok","head":{number},"hash":"{hash}"}}"#));
    };
    let (fit, mut body) = crate::replica::health(replica, number, std::time::SystemTime::now());
    body["hash"] = serde_json::Value::String(hash.to_string());
    let mut response = if fit { HttpResponse::Ok() } else { HttpResponse::ServiceUnavailable() };
    response.content_type(ContentType::json()).body(body.to_string())
}

async fn metrics(ctx: web::Data<RpcContext>) -> HttpResponse {
    let mut out = String::with_capacity(16 * 1024);
    ctx.metrics.render(&mut out);
    if let Some(head) = ctx.chain.head_number() {
        gauge(&mut out, "hearth_block_number", "Number of the head block.", head);
    }
    crate::core::executor_metrics(&mut out, &ctx.executor);
    mempool_metrics(&mut out, &ctx).await;
    code_cache_metrics(&mut out, &ctx).await;
    if let Ok(stats) =
        ctx.subscriptions.stats(hearth_messages::subscriptions::GetSubscriptionStats).await
    {
        crate::core::subscription_metrics(&mut out, &stats);
    }
    if let Ok(status) = ctx.miner.mining_status(hearth_messages::miner::GetMiningStatus).await {
        counter(
            &mut out,
            "hearth_miner_ticks_skipped_total",
            "Interval ticks skipped because a block was still being built.",
            status.ticks_skipped,
        );
    }
    if let Some(fork) = &ctx.metric_sources.fork {
        fork_metrics(&mut out, fork);
    }
    if let Some(replica) = &ctx.replica {
        crate::replica::metrics(&mut out, replica, ctx.chain.head_number().unwrap_or_default());
    }
    crate::core::restart_metrics(&mut out, &ctx.metric_sources.restarts, ctx.metrics.panics());
    HttpResponse::Ok().content_type("text/plain; version=0.0.4").body(out)
}

/// The pool's gauges and counters, asked of the pool at scrape time.
async fn mempool_metrics(out: &mut String, ctx: &RpcContext) {
    use hearth_messages::mempool::{GetPoolCounters, PoolSize};
    if let Ok((pending, queued)) = ctx.mempool.pool_size(PoolSize).await {
        gauge(out, "hearth_mempool_pending", "Executable pooled transactions.", pending);
        gauge(
            out,
            "hearth_mempool_queued",
            "Pooled transactions waiting on a nonce gap or fee.",
            queued,
        );
    }
    if let Ok(counters) = ctx.mempool.pool_counters(GetPoolCounters).await {
        counter(
            out,
            "hearth_mempool_dropped_invalid_total",
            "Admitted transactions that block building refused, dropped from the pool.",
            counters.dropped_invalid,
        );
    }
}

/// The shared code cache's counters, asked of it at scrape time.
async fn code_cache_metrics(out: &mut String, ctx: &RpcContext) {
    use hearth_messages::code_cache::GetCodeCacheStats;
    if let Ok(stats) = ctx.metric_sources.code_cache.stats(GetCodeCacheStats).await {
        counter(
            out,
            "hearth_code_cache_hits_total",
            "Shared code cache lookups that found the code.",
            stats.hits,
        );
        counter(
            out,
            "hearth_code_cache_misses_total",
            "Shared code cache lookups that did not.",
            stats.misses,
        );
        counter(
            out,
            "hearth_code_cache_evictions_total",
            "Entries evicted to stay within --cache.code-entries.",
            stats.evictions,
        );
        gauge(
            out,
            "hearth_code_cache_entries",
            "Analysed contracts held in the shared code cache.",
            stats.entries,
        );
    }
}

/// The fork backend's counters.
fn fork_metrics(out: &mut String, fork: &hearth_messages::fork::ForkCounters) {
    let stats = fork.stats();
    counter(
        out,
        "hearth_fork_upstream_requests_total",
        "HTTP requests sent to the fork upstream (a JSON-RPC batch is one; retries count).",
        stats.upstream_requests,
    );
    counter(
        out,
        "hearth_fork_fetches_total",
        "Values (accounts, slots, block hashes, headers) fetched from the fork upstream.",
        stats.fetched,
    );
    counter(
        out,
        "hearth_fork_coalesced_waits_total",
        "Fork reads that joined a fetch of the same value already under way.",
        stats.coalesced,
    );
    counter(
        out,
        "hearth_fork_cache_hits_total",
        "Fork reads answered from the fork cache without the upstream.",
        stats.cache_hits,
    );
    counter(
        out,
        "hearth_fork_fetch_errors_total",
        "Values whose fetch failed (the readers got a fork upstream error).",
        stats.errors,
    );
}
