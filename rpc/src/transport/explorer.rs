//! The built-in block explorer: one page and its two assets, compiled into the binary (no
//! CDN, works offline), served on the RPC port behind `--http.explorer`.
//!
//! `GET /` answers the page only to a browser (a request that accepts `text/html` and is not
//! a WebSocket handshake); every other `GET /` goes on to the WebSocket endpoint as before, and
//! JSON-RPC (`POST /`) never sees the page. The page reads the chain with the node's own
//! methods, from its own origin: the access guard's host checks apply to it as to every route,
//! and its Content-Security-Policy lets it load nothing and talk to nothing else (so the page's
//! `?rpc=` option, for working on the page from another server, does nothing here). It never
//! sends a transaction (ARCHITECTURE.md, "The explorer").

use actix_web::http::header::{self, HeaderValue};
use actix_web::{HttpRequest, HttpResponse, web};

use crate::core::RpcContext;

const INDEX: &str = include_str!("../explorer/assets/index.html");
const APP: &str = include_str!("../explorer/assets/app.js");
const STYLE: &str = include_str!("../explorer/assets/style.css");

/// What the page may load and reach: its own origin only (JSON-RPC and the WebSocket).
const POLICY: &str = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; \
                      connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

/// Whether `req` is a browser asking for a page at `/`.
pub(crate) fn wants_page(ctx: &RpcContext, req: &HttpRequest) -> bool {
    ctx.web.explorer
        && !super::ws::is_upgrade(req.headers())
        && req
            .headers()
            .get(header::ACCEPT)
            .and_then(|v| v.to_str().ok())
            .is_some_and(|accept| accept.split(',').any(|t| t.trim().starts_with("text/html")))
}

/// The page.
pub(crate) fn page() -> HttpResponse {
    asset(INDEX, "text/html; charset=utf-8")
}

/// `GET /explorer/{file}`: the page's script and style sheet; 404 when the explorer is off.
pub(crate) async fn file(path: web::Path<String>, ctx: web::Data<RpcContext>) -> HttpResponse {
    if !ctx.web.explorer {
        return HttpResponse::NotFound().finish();
    }
    match path.as_str() {
        "app.js" => asset(APP, "text/javascript; charset=utf-8"),
        "style.css" => asset(STYLE, "text/css; charset=utf-8"),
        _ => HttpResponse::NotFound().finish(),
    }
}

fn asset(body: &'static str, content_type: &'static str) -> HttpResponse {
    HttpResponse::Ok()
        .content_type(content_type)
        .insert_header((header::CONTENT_SECURITY_POLICY, HeaderValue::from_static(POLICY)))
        .insert_header((header::X_CONTENT_TYPE_OPTIONS, HeaderValue::from_static("nosniff")))
        .insert_header((header::REFERRER_POLICY, HeaderValue::from_static("no-referrer")))
        // A new binary may bring new assets: the browser asks again each time (60 KB on loopback).
        .insert_header((header::CACHE_CONTROL, HeaderValue::from_static("no-cache")))
        .body(body)
}
