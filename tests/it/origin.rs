//! Web-origin safety through the real HTTP server on 127.0.0.1:0, with the headers a browser
//! sends: a page from another site can neither act (simple requests, preflights, WebSocket
//! upgrades are refused and nothing runs) nor reach the node under another name (DNS
//! rebinding: Host is checked), while a page from a local dev server keeps working; the
//! namespace gate and `--no-unlocked-accounts`; a WebSocket frame refused from its declared
//! length. Flags are parsed as the binary parses them. No test sleeps.

use std::net::SocketAddr;
use std::time::Duration;

use clap::Parser;
use hearth::cli::Cli;
use hearth::config::NodeConfig;
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use crate::subscriptions::Served;

/// How long a test waits for an answer before it fails (a guard, not a pacing sleep).
const ANSWER_TIMEOUT: Duration = Duration::from_secs(20);
/// The attacker's page.
const EVIL: &str = "http://evil.example";
/// A Vite dev server on this machine.
const LOCAL_PAGE: &str = "http://localhost:5173";
/// 1 ETH in wei, hex.
const ONE_ETH: &str = "0xde0b6b3a7640000";

/// The test node's settings with `flags` parsed as the binary parses them.
fn config(flags: &[&str]) -> NodeConfig {
    let mut args = vec!["hearth", "--ephemeral", "--http.port", "0"];
    args.extend_from_slice(flags);
    let parsed = NodeConfig::try_from(Cli::try_parse_from(args).expect("flags parse"))
        .expect("flags are valid");
    let mut config = NodeConfig::for_tests();
    config.web = parsed.web;
    config.api = parsed.api;
    config.unlocked_accounts = parsed.unlocked_accounts;
    config
}

/// An HTTP response: status, headers (names lowercase) and body.
#[derive(Debug)]
struct Response {
    status: u16,
    headers: Vec<(String, String)>,
    body: String,
}

impl Response {
    /// The value of header `name`, if present.
    fn header(&self, name: &str) -> Option<&str> {
        self.headers.iter().find(|(n, _)| n == name).map(|(_, v)| v.as_str())
    }

    /// The body as JSON.
    fn json(&self) -> Value {
        serde_json::from_str(&self.body).unwrap_or_else(|e| panic!("{e}: {}", self.body))
    }
}

/// Sends one HTTP/1.1 request with `headers` (a `Host: addr` is added unless given) and reads
/// the whole response.
async fn request(
    addr: SocketAddr,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: &str,
) -> Response {
    let mut head = format!("{method} {path} HTTP/1.1\r\nConnection: close\r\n");
    if !headers.iter().any(|(name, _)| name.eq_ignore_ascii_case("host")) {
        head.push_str(&format!("Host: {addr}\r\n"));
    }
    for (name, value) in headers {
        head.push_str(&format!("{name}: {value}\r\n"));
    }
    head.push_str(&format!("Content-Length: {}\r\n\r\n{body}", body.len()));
    let exchange = async {
        let mut stream = TcpStream::connect(addr).await.expect("connects");
        stream.write_all(head.as_bytes()).await.expect("request sent");
        let mut raw = Vec::new();
        stream.read_to_end(&mut raw).await.expect("response read");
        raw
    };
    let raw = tokio::time::timeout(ANSWER_TIMEOUT, exchange).await.expect("an answer in time");
    let text = String::from_utf8(raw).expect("a UTF-8 response");
    let (head, body) = text.split_once("\r\n\r\n").expect("a response head");
    let mut lines = head.lines();
    let status = lines
        .next()
        .and_then(|line| line.split_whitespace().nth(1))
        .and_then(|code| code.parse().ok())
        .expect("a status line");
    let headers = lines
        .filter_map(|line| line.split_once(':'))
        .map(|(name, value)| (name.trim().to_ascii_lowercase(), value.trim().to_owned()))
        .collect();
    Response { status, headers, body: body.to_owned() }
}

/// A JSON-RPC request body.
fn rpc(method: &str, params: Value) -> String {
    json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params}).to_string()
}

/// POSTs a JSON-RPC body with `headers`.
async fn post(addr: SocketAddr, headers: &[(&str, &str)], body: &str) -> Response {
    request(addr, "POST", "/", headers, body).await
}

/// What a page would try: send 1 ETH from dev account 0 to account 1.
fn send_one_eth(served: &Served) -> String {
    let alice = served.node.signer(0).address();
    let bob = served.node.signer(1).address();
    rpc("eth_sendTransaction", json!([{"from": alice, "to": bob, "value": ONE_ETH}]))
}

/// Account 1's balance, the head and the pool's pending count: what an attack would change.
async fn chain_state(served: &Served) -> (Value, u64, Value) {
    let bob = served.node.signer(1).address();
    let balance = served.node.ok("eth_getBalance", json!([bob, "latest"])).await;
    let status = served.node.ok("txpool_status", json!([])).await;
    (balance, served.node.block_number().await, status["pending"].clone())
}

#[actix::test]
async fn a_cross_origin_simple_request_changes_nothing() {
    let served = Served::start(config(&[]));
    let before = chain_state(&served).await;
    let bob = served.node.signer(1).address();
    let set_balance = rpc("anvil_setBalance", json!([bob, "0x1"]));

    // What a page on another site sends with fetch(..., {mode: "no-cors"}) or a form post.
    for content_type in
        ["text/plain", "application/x-www-form-urlencoded", "text/plain;charset=UTF-8"]
    {
        for body in [send_one_eth(&served), set_balance.clone()] {
            let response =
                post(served.addr, &[("Origin", EVIL), ("Content-Type", content_type)], &body).await;
            assert_eq!(response.status, 403, "{content_type}: {response:?}");
            assert_eq!(response.header("access-control-allow-origin"), None);
            assert!(response.body.contains("--http.corsdomain"), "{}", response.body);
        }
    }
    // The same with JSON (only possible after a preflight, which is refused below) is refused too.
    let json_type = ("Content-Type", "application/json");
    let response = post(served.addr, &[("Origin", EVIL), json_type], &set_balance).await;
    assert_eq!(response.status, 403);
    // A simple request from an allowed page, or with no Origin at all, still does not run.
    for headers in [
        vec![("Origin", LOCAL_PAGE), ("Content-Type", "text/plain")],
        vec![("Content-Type", "text/plain")],
        vec![("Content-Type", "application/x-www-form-urlencoded")],
        vec![("Content-Type", "multipart/form-data; boundary=x")],
        vec![],
    ] {
        let response = post(served.addr, &headers, &send_one_eth(&served)).await;
        assert_eq!(response.status, 415, "{headers:?}: {response:?}");
        assert_eq!(response.body, "unsupported content type: send Content-Type: application/json");
    }
    assert_eq!(chain_state(&served).await, before, "no balance changed, no transaction");

    let metrics = request(served.addr, "GET", "/metrics", &[], "").await;
    assert!(
        metrics.body.contains("hearth_rpc_refused_total{reason=\"origin\"} 7"),
        "{}",
        metrics.body
    );
    assert!(metrics.body.contains("hearth_rpc_refused_total{reason=\"content_type\"} 5"));
    served.stop().await;
}

#[actix::test]
async fn a_preflight_from_another_site_is_refused() {
    let served = Served::start(config(&[]));
    let preflight = [
        ("Origin", EVIL),
        ("Access-Control-Request-Method", "POST"),
        ("Access-Control-Request-Headers", "content-type"),
    ];
    let response = request(served.addr, "OPTIONS", "/", &preflight, "").await;
    assert_eq!(response.status, 403, "{response:?}");
    assert_eq!(response.header("access-control-allow-origin"), None);
    assert_eq!(response.header("access-control-allow-methods"), None);
    // Look-alikes of an allowed origin are other sites.
    for origin in ["http://localhost.evil.example:5173", "http://127.0.0.1.nip.io", "null"] {
        let preflight = [("Origin", origin), ("Access-Control-Request-Method", "POST")];
        let response = request(served.addr, "OPTIONS", "/", &preflight, "").await;
        assert_eq!(response.status, 403, "{origin}");
    }
    served.stop().await;
}

#[actix::test]
async fn a_local_dev_server_page_works_after_its_preflight() {
    let served = Served::start(config(&[]));
    let before = chain_state(&served).await;
    let preflight = [
        ("Origin", LOCAL_PAGE),
        ("Access-Control-Request-Method", "POST"),
        ("Access-Control-Request-Headers", "content-type, x-requested-with"),
    ];
    let response = request(served.addr, "OPTIONS", "/", &preflight, "").await;
    assert_eq!(response.status, 204, "{response:?}");
    assert_eq!(response.header("access-control-allow-origin"), Some(LOCAL_PAGE));
    assert_eq!(response.header("access-control-allow-methods"), Some("GET, POST, OPTIONS"));
    assert_eq!(
        response.header("access-control-allow-headers"),
        Some("content-type, x-requested-with")
    );
    assert_eq!(response.header("access-control-max-age"), Some("600"));
    let vary: Vec<&str> =
        response.headers.iter().filter(|(n, _)| n == "vary").map(|(_, v)| v.as_str()).collect();
    assert!(vary.iter().any(|v| v.contains("Origin")), "{vary:?}");

    // The request the browser then sends.
    let headers = [("Origin", LOCAL_PAGE), ("Content-Type", "application/json")];
    let response = post(served.addr, &headers, &send_one_eth(&served)).await;
    assert_eq!(response.status, 200, "{response:?}");
    assert_eq!(response.header("access-control-allow-origin"), Some(LOCAL_PAGE));
    assert_eq!(response.header("vary"), Some("Origin"));
    assert!(response.json()["result"].is_string(), "{}", response.body);
    let after = chain_state(&served).await;
    assert_ne!(after.0, before.0, "the transfer went through");
    assert_eq!(after.1, before.1 + 1, "and was mined");
    // A charset parameter and another case are still JSON; no Origin gets no CORS header.
    let headers = [("Content-Type", "Application/JSON; charset=utf-8")];
    let response = post(served.addr, &headers, &rpc("eth_chainId", json!([]))).await;
    assert_eq!((response.status, response.json()["result"].clone()), (200, json!("0x7a69")));
    assert_eq!(response.header("access-control-allow-origin"), None);
    served.stop().await;
}

#[actix::test]
async fn a_host_that_is_not_allowed_gets_403_and_nothing_runs() {
    let served = Served::start(config(&[]));
    let before = chain_state(&served).await;
    let json_type = ("Content-Type", "application/json");
    // A DNS-rebinding page: its own name, resolving to 127.0.0.1; the browser calls it
    // same-origin.
    let rebound = format!("rebind.evil.example:{}", served.addr.port());
    let host = ("Host", rebound.as_str());
    let response = post(served.addr, &[host, json_type], &send_one_eth(&served)).await;
    assert_eq!(response.status, 403, "{response:?}");
    assert!(response.body.contains("--http.vhosts"), "{}", response.body);
    assert_eq!(request(served.addr, "GET", "/metrics", &[host], "").await.status, 403);
    let upgrade = websocket_upgrade(served.addr, &[host]).await;
    assert!(upgrade.starts_with("HTTP/1.1 403"), "{upgrade}");
    assert_eq!(chain_state(&served).await, before);

    // localhost and IP addresses are answered, whatever the port.
    for allowed in ["localhost", "LOCALHOST:8545", "127.0.0.1:1", "[::1]:8545", "10.1.2.3"] {
        let response =
            post(served.addr, &[("Host", allowed), json_type], &rpc("eth_chainId", json!([])))
                .await;
        assert_eq!(response.status, 200, "{allowed}");
    }
    served.stop().await;
}

/// The Host check remembers the last Host a connection was allowed with (clients keep sending
/// the same one): a kept-alive connection that switches to a name not allowed is still refused.
#[actix::test]
async fn every_request_of_a_kept_alive_connection_has_its_host_checked() {
    let served = Served::start(config(&[]));
    let body = rpc("eth_chainId", json!([]));
    let rebound = format!("rebind.evil.example:{}", served.addr.port());
    let mut raw = String::new();
    for (host, connection) in
        [("localhost", "keep-alive"), ("localhost", "keep-alive"), (rebound.as_str(), "close")]
    {
        raw.push_str(&format!(
            "POST / HTTP/1.1\r\nHost: {host}\r\nConnection: {connection}\r\n\
             Content-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
            body.len()
        ));
    }
    let exchange = async {
        let mut stream = TcpStream::connect(served.addr).await.expect("connects");
        stream.write_all(raw.as_bytes()).await.expect("requests sent");
        let mut answers = Vec::new();
        stream.read_to_end(&mut answers).await.expect("responses read");
        answers
    };
    let answers = tokio::time::timeout(ANSWER_TIMEOUT, exchange).await.expect("answers in time");
    let text = String::from_utf8(answers).expect("UTF-8 responses");
    let statuses: Vec<&str> =
        text.match_indices("HTTP/1.1 ").map(|(at, _)| &text[at + 9..at + 12]).collect();
    assert_eq!(statuses, ["200", "200", "403"], "{text}");
    served.stop().await;
}

#[actix::test]
async fn named_vhosts_and_origins_replace_the_defaults() {
    let served = Served::start(config(&[
        "--http.vhosts",
        "node.internal",
        "--http.corsdomain",
        "https://app.example:8443",
        "--ws.origins",
        "none",
    ]));
    let json_type = ("Content-Type", "application/json");
    let chain_id = rpc("eth_chainId", json!([]));
    let ok = |r: &Response| r.status == 200;
    assert!(ok(&post(served.addr, &[("Host", "node.internal:8545"), json_type], &chain_id).await));
    let localhost = post(served.addr, &[("Host", "localhost:8545"), json_type], &chain_id).await;
    assert_eq!(localhost.status, 403, "localhost is no longer listed");
    let app =
        post(served.addr, &[("Origin", "https://app.example:8443"), json_type], &chain_id).await;
    assert_eq!(app.header("access-control-allow-origin"), Some("https://app.example:8443"));
    let local = post(served.addr, &[("Origin", LOCAL_PAGE), json_type], &chain_id).await;
    assert_eq!(local.status, 403, "the loopback default is replaced");
    let upgrade = websocket_upgrade(served.addr, &[("Origin", "https://app.example:8443")]).await;
    assert!(upgrade.starts_with("HTTP/1.1 403"), "--ws.origins none: {upgrade}");
    assert!(websocket_upgrade(served.addr, &[]).await.starts_with("HTTP/1.1 101"), "no Origin");
    served.stop().await;
}

#[actix::test]
async fn corsdomain_star_restores_anvils_behaviour() {
    let served = Served::start(config(&["--http.corsdomain", "*"]));
    let before = chain_state(&served).await;
    let headers =
        [("Origin", EVIL), ("Host", "rebind.evil.example"), ("Content-Type", "application/json")];
    let response = post(served.addr, &headers, &send_one_eth(&served)).await;
    assert_eq!(response.status, 200, "{response:?}");
    assert_eq!(response.header("access-control-allow-origin"), Some("*"));
    assert_ne!(chain_state(&served).await.0, before.0);
    let preflight = [("Origin", EVIL), ("Access-Control-Request-Method", "POST")];
    let response = request(served.addr, "OPTIONS", "/", &preflight, "").await;
    assert_eq!((response.status, response.header("access-control-allow-origin")), (204, Some("*")));
    let upgrade = websocket_upgrade(served.addr, &[("Origin", EVIL)]).await;
    assert!(upgrade.starts_with("HTTP/1.1 101"), "{upgrade}");
    // Simple requests still never run: they would not need a preflight.
    let response =
        post(served.addr, &[("Origin", EVIL), ("Content-Type", "text/plain")], "{}").await;
    assert_eq!(response.status, 415);
    served.stop().await;
}

#[actix::test]
async fn http_api_serves_only_the_chosen_namespaces() {
    let served = Served::start(config(&["--http.api", "eth,net,web3"]));
    let json_type = [("Content-Type", "application/json")];
    let bob = served.node.signer(1).address();
    for (method, params) in [
        ("anvil_setBalance", json!([bob, "0x1"])),
        ("hardhat_setBalance", json!([bob, "0x1"])),
        ("evm_mine", json!([])),
        ("anvil_impersonateAccount", json!([bob])),
        ("txpool_status", json!([])),
        // anvil's, named in eth_: gated as anvil's (its method table row says so).
        ("eth_sendUnsignedTransaction", json!([{"from": bob, "to": bob}])),
    ] {
        let response = post(served.addr, &json_type, &rpc(method, params)).await.json();
        assert_eq!(response["error"]["code"], -32601, "{method}: {response}");
        assert_eq!(
            response["error"]["message"],
            format!("the method {method} does not exist/is not available")
        );
    }
    assert_eq!(served.node.block_number().await, 0, "evm_mine did not run");
    let response = post(served.addr, &json_type, &rpc("eth_chainId", json!([]))).await.json();
    assert_eq!(response["result"], "0x7a69");
    let response = post(served.addr, &json_type, &rpc("net_version", json!([]))).await.json();
    assert_eq!(response["result"], "31337");
    // The same gate on WebSocket.
    let (head, mut ws) = open_websocket(served.addr, &[]).await;
    assert!(head.starts_with("HTTP/1.1 101"), "{head}");
    let refused = ws_call(&mut ws, &rpc("anvil_setBalance", json!([bob, "0x1"]))).await;
    assert_eq!(refused["error"]["code"], -32601, "{refused}");
    served.stop().await;

    // Without eth, a batch of raw transactions is refused item by item, nothing admitted.
    let served = Served::start(config(&["--http.api", "net"]));
    let alice = served.node.signer(0);
    let raw = |nonce| {
        use alloy_eips::eip2718::Encodable2718;
        let tx = crate::support::fixtures::transfer(&alice, nonce, bob, 1);
        format!("0x{}", alloy_primitives::hex::encode(tx.encoded_2718()))
    };
    let batch = json!([
        {"jsonrpc": "2.0", "id": 1, "method": "eth_sendRawTransaction", "params": [raw(0)]},
        {"jsonrpc": "2.0", "id": 2, "method": "eth_sendRawTransaction", "params": [raw(1)]},
    ]);
    let answers = post(served.addr, &json_type, &batch.to_string()).await.json();
    assert_eq!(answers[0]["error"]["code"], -32601, "{answers}");
    assert_eq!(answers[1]["error"]["code"], -32601, "{answers}");
    assert_eq!(served.node.node.chain.head_number(), Some(0), "nothing was mined");
    served.stop().await;
}

#[actix::test]
async fn no_unlocked_accounts_signs_for_nobody() {
    let served = Served::start(config(&["--no-unlocked-accounts"]));
    let json_type = [("Content-Type", "application/json")];
    let before = chain_state(&served).await;
    let accounts = post(served.addr, &json_type, &rpc("eth_accounts", json!([]))).await.json();
    assert_eq!(accounts["result"], json!([]));
    let refused = post(served.addr, &json_type, &send_one_eth(&served)).await.json();
    assert_eq!(refused["error"]["code"], -32000, "{refused}");
    assert_eq!(refused["error"]["message"], "unknown account");
    assert_eq!(chain_state(&served).await, before);
    // The accounts stay funded, and impersonation (an anvil method) still sends for one.
    let alice = served.node.signer(0).address();
    let balance = post(served.addr, &json_type, &rpc("eth_getBalance", json!([alice, "latest"])))
        .await
        .json();
    assert_ne!(balance["result"], "0x0");
    let impersonate = rpc("anvil_impersonateAccount", json!([alice]));
    assert_eq!(post(served.addr, &json_type, &impersonate).await.json()["result"], Value::Null);
    let sent = post(served.addr, &json_type, &send_one_eth(&served)).await.json();
    assert!(sent["result"].is_string(), "{sent}");
    served.stop().await;

    // Without the anvil namespace there is no way to send from a dev account.
    let served = Served::start(config(&["--no-unlocked-accounts", "--http.api", "eth,net,web3"]));
    let impersonate = rpc("anvil_impersonateAccount", json!([alice]));
    let refused = post(served.addr, &json_type, &impersonate).await.json();
    assert_eq!(refused["error"]["code"], -32601);
    let refused = post(served.addr, &json_type, &send_one_eth(&served)).await.json();
    assert_eq!(refused["error"]["message"], "unknown account");
    served.stop().await;
}

/// Sends a WebSocket handshake with `headers` and returns the response head; on 101 the
/// stream is dropped.
async fn websocket_upgrade(addr: SocketAddr, headers: &[(&str, &str)]) -> String {
    let (head, _) = open_websocket(addr, headers).await;
    head
}

/// Sends a WebSocket handshake with `headers`: the response head and the stream.
async fn open_websocket(addr: SocketAddr, headers: &[(&str, &str)]) -> (String, TcpStream) {
    let mut request = String::from(
        "GET / HTTP/1.1\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\
         Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n",
    );
    if !headers.iter().any(|(name, _)| name.eq_ignore_ascii_case("host")) {
        request.push_str(&format!("Host: {addr}\r\n"));
    }
    for (name, value) in headers {
        request.push_str(&format!("{name}: {value}\r\n"));
    }
    request.push_str("\r\n");
    let mut stream = TcpStream::connect(addr).await.expect("connects");
    stream.write_all(request.as_bytes()).await.expect("handshake sent");
    let mut head = Vec::new();
    let read = async {
        while !head.ends_with(b"\r\n\r\n") {
            head.push(stream.read_u8().await.expect("handshake response"));
        }
    };
    tokio::time::timeout(ANSWER_TIMEOUT, read).await.expect("a handshake answer in time");
    (String::from_utf8(head).expect("an ASCII head"), stream)
}

/// Reads one server frame (unmasked): (opcode, payload).
async fn server_frame(stream: &mut TcpStream) -> (u8, Vec<u8>) {
    let read = async {
        let mut head = [0u8; 2];
        stream.read_exact(&mut head).await.expect("frame header");
        let len = match head[1] & 0x7f {
            126 => usize::from(stream.read_u16().await.expect("length")),
            127 => usize::try_from(stream.read_u64().await.expect("length")).expect("fits"),
            n => usize::from(n),
        };
        let mut payload = vec![0; len];
        stream.read_exact(&mut payload).await.expect("payload");
        (head[0] & 0x0f, payload)
    };
    tokio::time::timeout(ANSWER_TIMEOUT, read).await.expect("a frame in time")
}

/// Sends `request` in one masked text frame (all-zero key) and reads the answer.
async fn ws_call(stream: &mut TcpStream, request: &str) -> Value {
    let len = u8::try_from(request.len()).ok().filter(|&n| n < 126).expect("a short request");
    let mut frame = vec![0x81, 0x80 | len, 0, 0, 0, 0];
    frame.extend_from_slice(request.as_bytes());
    stream.write_all(&frame).await.expect("request sent");
    let (opcode, answer) = server_frame(stream).await;
    assert_eq!(opcode, 1, "a text frame");
    serde_json::from_slice(&answer).expect("JSON")
}

#[actix::test]
async fn websocket_upgrades_check_the_origin() {
    let served = Served::start(config(&[]));
    let refused = websocket_upgrade(served.addr, &[("Origin", EVIL)]).await;
    assert!(refused.starts_with("HTTP/1.1 403"), "{refused}");
    for origin in
        [Some(LOCAL_PAGE), Some("chrome-extension://nkbihfbeogaeaoehlefnkodbefgpgknn"), None]
    {
        let headers: Vec<(&str, &str)> = origin.map(|o| ("Origin", o)).into_iter().collect();
        let (head, mut stream) = open_websocket(served.addr, &headers).await;
        assert!(head.starts_with("HTTP/1.1 101"), "{origin:?}: {head}");
        let answer = ws_call(&mut stream, &rpc("eth_chainId", json!([]))).await;
        assert_eq!(answer["result"], "0x7a69", "it serves");
    }
    served.stop().await;
}

#[actix::test]
async fn an_oversized_declared_websocket_frame_closes_with_1009_unread() {
    let served = Served::start(config(&[]));
    let (head, mut stream) = open_websocket(served.addr, &[]).await;
    assert!(head.starts_with("HTTP/1.1 101"), "{head}");
    // The header of a 100 MiB text frame, and not one byte of its payload: the answer cannot
    // wait for the payload, nor has the server read it.
    let mut header = vec![0x81, 0x80 | 127];
    header.extend_from_slice(&(100u64 << 20).to_be_bytes());
    header.extend_from_slice(&[1, 2, 3, 4]);
    stream.write_all(&header).await.expect("header sent");
    let (opcode, payload) = server_frame(&mut stream).await;
    assert_eq!(opcode, 8, "a close frame");
    assert_eq!(u16::from_be_bytes([payload[0], payload[1]]), 1009);
    assert_eq!(&payload[2..], b"message larger than 5242880 bytes");
    // Then the server ends the connection.
    let mut rest = Vec::new();
    let end = tokio::time::timeout(ANSWER_TIMEOUT, stream.read_to_end(&mut rest)).await;
    assert!(matches!(end, Ok(Ok(0)) | Ok(Err(_))), "closed, got {end:?} {rest:?}");
    // The node is fine.
    assert_eq!(served.node.ok("eth_chainId", json!([])).await, "0x7a69");
    served.stop().await;
}

#[test]
fn a_malformed_access_flag_stops_startup_with_exit_code_2() {
    for (flag, value) in [
        ("--http.corsdomain", "localhost:3000"),
        ("--ws.origins", "http://a.test/path"),
        ("--http.vhosts", "localhost:8545"),
        ("--http.api", "eth,foo"),
    ] {
        let output = std::process::Command::new(env!("CARGO_BIN_EXE_hearth"))
            .args(["--ephemeral", "--http.port", "0", flag, value])
            .output()
            .expect("hearth runs");
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(2), "{flag} {value}: {stderr}");
        assert!(stderr.starts_with(&format!("error: {flag} ")), "{stderr}");
    }
}

/// What a browser's address bar sends for a page.
const BROWSER_ACCEPT: &str = "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8";

#[actix::test]
async fn a_browser_gets_the_explorer_and_json_rpc_clients_do_not() {
    let served = Served::start(config(&["--http.explorer", "true"]));
    let page = request(served.addr, "GET", "/", &[("Accept", BROWSER_ACCEPT)], "").await;
    assert_eq!(page.status, 200);
    assert!(page.header("content-type").is_some_and(|t| t.starts_with("text/html")));
    assert!(page.body.contains("/explorer/app.js"), "{}", page.body);
    let policy = page.header("content-security-policy").expect("a policy");
    assert!(policy.contains("connect-src 'self'") && policy.contains("frame-ancestors 'none'"));
    for (path, kind) in
        [("/explorer/app.js", "text/javascript"), ("/explorer/style.css", "text/css")]
    {
        let asset = request(served.addr, "GET", path, &[], "").await;
        assert_eq!(asset.status, 200, "{path}");
        assert!(asset.header("content-type").is_some_and(|t| t.starts_with(kind)), "{path}");
    }
    assert_eq!(request(served.addr, "GET", "/explorer/../Cargo.toml", &[], "").await.status, 404);
    // JSON-RPC and a GET that is not a browser's are what they were.
    let answer =
        post(served.addr, &[("Content-Type", "application/json")], &rpc("eth_chainId", json!([])))
            .await;
    assert!(answer.json()["result"].is_string(), "{}", answer.body);
    let plain = request(served.addr, "GET", "/", &[("Accept", "application/json")], "").await;
    assert_ne!(plain.status, 200, "no page without text/html");
    // The host check covers the page as every route.
    let rebinding = request(
        served.addr,
        "GET",
        "/",
        &[("Host", "evil.example"), ("Accept", BROWSER_ACCEPT)],
        "",
    )
    .await;
    assert_eq!(rebinding.status, 403);
}

#[actix::test]
async fn the_explorer_can_be_turned_off() {
    let served = Served::start(config(&["--http.explorer", "false"]));
    let page = request(served.addr, "GET", "/", &[("Accept", BROWSER_ACCEPT)], "").await;
    assert_ne!(page.status, 200);
    assert!(!page.body.contains("<html"));
    assert_eq!(request(served.addr, "GET", "/explorer/app.js", &[], "").await.status, 404);
    let defaults = config(&[]);
    assert!(defaults.web.explorer, "on by default on loopback");
    assert!(!config(&["--http.addr", "0.0.0.0"]).web.explorer, "off when reachable from outside");
}
