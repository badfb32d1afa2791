//! The HTTP side: an actix-web server answering JSON-RPC on `POST /`.

use std::io;
use std::net::SocketAddr;

use actix_web::dev::Server;
use actix_web::http::StatusCode;
use actix_web::http::header::ContentType;
use actix_web::{App, HttpResponse, HttpServer, web};

use crate::context::RpcContext;
use crate::handle_body;
use crate::transport::RpcReply;

/// Binds `addr` and serves JSON-RPC on POST `/`. Returns the running server (to await or stop)
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
