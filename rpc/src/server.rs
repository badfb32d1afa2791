//! The HTTP side: an actix-web server answering JSON-RPC on `POST /`, WebSocket JSON-RPC on
//! `GET /` with `Upgrade` (see `ws`), and Prometheus text on `GET /metrics`.

use std::io;
use std::net::SocketAddr;

use actix_web::dev::Server;
use actix_web::http::StatusCode;
use actix_web::http::header::ContentType;
use actix_web::{App, HttpResponse, HttpServer, web};

use crate::context::RpcContext;
use crate::handle_body;
use crate::transport::RpcReply;

/// Binds `addr` and serves JSON-RPC on POST `/` and over WebSocket on GET `/`. Returns the running server (to await or stop)
/// and the bound address (port 0 picks one).
///
/// The server starts when the returned [`Server`] is awaited or spawned. It keeps actix-web's
/// signal handling: SIGINT/SIGTERM stop it gracefully, which is how the node shuts down.
pub fn serve(
    addr: SocketAddr,
    ctx: RpcContext,
    workers: usize,
) -> io::Result<(Server, SocketAddr)> {
    // actix stops reading a body at this size and answers 413 itself.
    let body_limit = ctx.limits.max_body_bytes;
    let server = HttpServer::new(move || {
        App::new()
            .app_data(web::Data::new(ctx.clone()))
            .app_data(web::PayloadConfig::new(body_limit))
            .route("/", web::post().to(endpoint))
            .route("/", web::get().to(crate::ws::endpoint))
            .route("/metrics", web::get().to(metrics))
    })
    .workers(workers.max(1))
    .bind(addr)?;
    let bound = server
        .addrs()
        .first()
        .copied()
        .ok_or_else(|| io::Error::other(format!("binding {addr} gave no address")))?;
    tracing::info!(target: "rpc", %bound, workers, "json-rpc server bound");
    Ok((server.run(), bound))
}

/// POST `/`: one JSON-RPC body in, one reply out.
async fn endpoint(ctx: web::Data<RpcContext>, body: web::Bytes) -> HttpResponse {
    let RpcReply { status, body } = handle_body(&ctx, &body).await;
    let status = StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    match body {
        Some(body) => HttpResponse::build(status).content_type(ContentType::json()).body(body),
        None => HttpResponse::build(status).finish(),
    }
}

/// GET `/metrics`: Prometheus text. Request counters come from the striped `RpcMetrics`; the
/// gauges other actors own are asked for now, with `ask` (a busy actor is skipped, not waited on).
async fn metrics(ctx: web::Data<RpcContext>) -> HttpResponse {
    use hearth_messages::ask::ask;
    use hearth_messages::code_cache::GetCodeCacheStats;
    use hearth_messages::mempool::{GetPoolCounters, PoolSize};

    use crate::metrics::{counter, gauge};

    let mut out = String::with_capacity(16 * 1024);
    ctx.metrics.render(&mut out);
    if let Some(head) = ctx.chain.head_number() {
        gauge(&mut out, "hearth_block_number", "Number of the head block.", head);
    }
    gauge(
        &mut out,
        "hearth_executor_in_flight",
        "Calls admitted to the executor pool now.",
        ctx.executor.in_flight(),
    );
    gauge(
        &mut out,
        "hearth_executor_max_in_flight",
        "The executor pool's admission bound.",
        ctx.executor.max_in_flight(),
    );
    if let Ok((pending, queued)) = ask(&ctx.metric_sources.pool_size, PoolSize).await {
        gauge(&mut out, "hearth_mempool_pending", "Executable pooled transactions.", pending);
        gauge(
            &mut out,
            "hearth_mempool_queued",
            "Pooled transactions waiting on a nonce gap or fee.",
            queued,
        );
    }
    if let Ok(counters) = ask(&ctx.metric_sources.pool_counters, GetPoolCounters).await {
        counter(
            &mut out,
            "hearth_mempool_dropped_invalid_total",
            "Admitted transactions that block building refused, dropped from the pool.",
            counters.dropped_invalid,
        );
    }
    if let Ok(stats) = ask(&ctx.metric_sources.code_cache, GetCodeCacheStats).await {
        counter(
            &mut out,
            "hearth_code_cache_hits_total",
            "Shared code cache lookups that found the code.",
            stats.hits,
        );
        counter(
            &mut out,
            "hearth_code_cache_misses_total",
            "Shared code cache lookups that did not.",
            stats.misses,
        );
        counter(
            &mut out,
            "hearth_code_cache_evictions_total",
            "Entries evicted to stay within --cache.code-entries.",
            stats.evictions,
        );
        gauge(
            &mut out,
            "hearth_code_cache_entries",
            "Analysed contracts held in the shared code cache.",
            stats.entries,
        );
    }
    if let Ok(stats) =
        ask(&ctx.subscriptions.stats, hearth_messages::subscriptions::GetSubscriptionStats).await
    {
        crate::metrics::subscription_metrics(&mut out, &stats);
    }
    if let Ok(status) =
        ctx.controls.mining_status.send(hearth_messages::miner::GetMiningStatus).await
    {
        counter(
            &mut out,
            "hearth_miner_ticks_skipped_total",
            "Interval ticks skipped because a block was still being built.",
            status.ticks_skipped,
        );
    }
    HttpResponse::Ok().content_type("text/plain; version=0.0.4").body(out)
}
