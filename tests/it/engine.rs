//! The Engine API's authenticated port (`--authrpc.*`): every request needs a fresh JWT made
//! with the node's secret (401 and nothing done otherwise), the port serves the engine methods
//! and the spec's `eth_` subset only, and the public port never serves `engine_`.

use std::net::SocketAddr;

use alloy_rpc_types_engine::{Claims, JwtSecret};
use serde_json::{Value, json};

use crate::process::{NodeProcess, TempDir, post_with};

fn now() -> u64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).expect("clock").as_secs()
}

/// A node with the Engine API port on, its secret file in `dir`; the port's address and the
/// secret (read from the file the node created).
fn node_with_engine(dir: &TempDir) -> (NodeProcess, SocketAddr, JwtSecret) {
    node_with_engine_and(dir, &[])
}

/// [`node_with_engine`] with more flags.
fn node_with_engine_and(dir: &TempDir, more: &[&str]) -> (NodeProcess, SocketAddr, JwtSecret) {
    let path = dir.path().join("jwt.hex");
    let path = path.to_str().expect("utf-8");
    let mut args = vec!["--http.port", "0", "--authrpc.port", "0", "--authrpc.jwtsecret", path];
    args.extend_from_slice(more);
    let node = NodeProcess::spawn(&args);
    // Logged before the node listens on its public port, but stderr may be read after the
    // banner on stdout: in the lines before it, else in the next ones.
    let needle = "Engine API listening";
    let line = match node.log.iter().find(|l| l.contains(needle)) {
        Some(line) => line.clone(),
        None => node.log_until(needle).last().cloned().expect("the Engine API line"),
    };
    let addr = line
        .split("addr=")
        .nth(1)
        .and_then(|rest| rest.split_whitespace().next())
        .and_then(|a| a.parse().ok())
        .unwrap_or_else(|| panic!("no address in {line}"));
    let secret =
        JwtSecret::from_hex(std::fs::read_to_string(path).expect("secret file")).expect("hex");
    (node, addr, secret)
}

fn bearer(secret: &JwtSecret, iat: u64) -> String {
    let token = secret.encode(&Claims { iat, exp: None }).expect("token");
    format!("Authorization: Bearer {token}\r\n")
}

fn request(method: &str, params: Value) -> String {
    json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params}).to_string()
}

#[test]
fn the_engine_port_needs_a_fresh_jwt_of_its_secret_and_serves_its_methods_only() {
    let dir = TempDir::new("engine-jwt");
    let (node, engine, secret) = node_with_engine(&dir);
    let capabilities = request("engine_exchangeCapabilities", json!([["engine_newPayloadV4"]]));
    let send = |auth: &str, body: &str| post_with(engine, auth, body).expect("answered");

    // Refused before anything runs: no header, another secret, iat 61 s off, garbage.
    let head = node.ok("eth_blockNumber", json!([]));
    let mine = request("evm_mine", json!([]));
    for auth in [
        String::new(),
        bearer(&JwtSecret::random(), now()),
        bearer(&secret, now() - 61),
        // (Ahead by more than 61 s: a token made a second before the node checks it is 60 s
        // ahead by then.)
        bearer(&secret, now() + 90),
        "Authorization: Bearer not-a-jwt\r\n".to_owned(),
        "Authorization: Basic dXNlcjpwYXNz\r\n".to_owned(),
    ] {
        for body in [&capabilities, &mine] {
            let (status, text) = send(&auth, body);
            assert_eq!(status, 401, "{auth:?}: {text}");
        }
    }
    assert_eq!(node.ok("eth_blockNumber", json!([])), head, "nothing was mined");

    // A fresh token: the engine methods and the spec's eth_ subset, nothing else.
    let ok = bearer(&secret, now());
    let (status, text) = send(&ok, &capabilities);
    assert_eq!(status, 200, "{text}");
    let answer: Value = serde_json::from_str(&text).expect("json");
    let served = answer["result"].as_array().expect("a list");
    assert!(served.contains(&json!("engine_getClientVersionV1")), "{answer}");
    assert!(!served.contains(&json!("engine_exchangeCapabilities")), "{answer}");
    let version = request(
        "engine_getClientVersionV1",
        json!([{"code": "LH", "name": "Lighthouse", "version": "v7", "commit": "0x01020304"}]),
    );
    let answer: Value = serde_json::from_str(&send(&ok, &version).1).expect("json");
    assert_eq!(answer["result"][0]["code"], "HE", "{answer}");
    let chain_id: Value =
        serde_json::from_str(&send(&ok, &request("eth_chainId", json!([]))).1).expect("json");
    assert_eq!(chain_id["result"], "0x7a69");
    for refused in ["eth_getBalance", "evm_mine", "anvil_setBalance"] {
        let answer: Value =
            serde_json::from_str(&send(&ok, &request(refused, json!([]))).1).expect("json");
        assert_eq!(answer["error"]["code"], -32601, "{refused}: {answer}");
    }
    assert_eq!(node.ok("eth_blockNumber", json!([])), head);

    // A batch is gated item by item.
    let batch =
        format!("[{},{}]", request("eth_chainId", json!([])), request("eth_getBalance", json!([])));
    let answers: Value = serde_json::from_str(&send(&ok, &batch).1).expect("json");
    assert_eq!(answers[0]["result"], "0x7a69", "{answers}");
    assert_eq!(answers[1]["error"]["code"], -32601, "{answers}");
    // A WebSocket handshake needs the token too.
    assert!(handshake(engine, "").starts_with("HTTP/1.1 401"));
    assert!(handshake(engine, &bearer(&secret, now())).starts_with("HTTP/1.1 101"));

    // The public port never serves the engine namespace.
    let public = node.call("engine_exchangeCapabilities", json!([[]]));
    assert_eq!(public["error"]["code"], -32601, "{public}");
}

/// Sends a WebSocket handshake (with the header lines `extra`) and returns the response head.
fn handshake(addr: SocketAddr, extra: &str) -> String {
    use std::io::{Read, Write};
    let mut stream = std::net::TcpStream::connect(addr).expect("connects");
    write!(
        stream,
        "GET / HTTP/1.1\r\nHost: {addr}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\
         Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n{extra}\r\n"
    )
    .expect("sent");
    let mut head = Vec::new();
    let mut byte = [0u8; 1];
    while !head.ends_with(b"\r\n\r\n") && stream.read(&mut byte).expect("reads") == 1 {
        head.push(byte[0]);
    }
    String::from_utf8(head).expect("ascii")
}

/// `hearth drive --until N` from `leader` into the node whose Engine API is `engine`.
fn drive(leader: &NodeProcess, engine: SocketAddr, dir: &TempDir, until: u64) {
    let secret = dir.path().join("jwt.hex");
    let (leader_url, engine_url) = (format!("http://{}", leader.addr), format!("http://{engine}"));
    let until = until.to_string();
    let (code, _, stderr) = NodeProcess::run_to_exit(&[
        "drive",
        "--leader",
        &leader_url,
        "--engine",
        &engine_url,
        "--jwtsecret",
        secret.to_str().expect("utf-8"),
        "--poll-ms",
        "10",
        "--until",
        &until,
    ]);
    assert_eq!(code, 0, "{stderr}");
}

#[test]
fn hearth_drive_feeds_a_leaders_blocks_and_rewinds_through_the_engine_api() {
    // The same genesis on both: the same dev flags and genesis time.
    let genesis = ["--timestamp", "1700000000"];
    let leader = NodeProcess::spawn(&["--http.port", "0", genesis[0], genesis[1]]);
    let dir = TempDir::new("engine-drive");
    let (follower, engine, _) =
        node_with_engine_and(&dir, &["--no-mining", genesis[0], genesis[1]]);
    let from = leader.ok("eth_accounts", json!([]))[0].clone();
    let send = |n: usize, value: &str| {
        for _ in 0..n {
            let tx = json!([{"from": from, "to": "0x00000000000000000000000000000000000000aa", "value": value}]);
            leader.ok("eth_sendTransaction", tx);
        }
    };
    let hash_at = |node: &NodeProcess, n: u64| {
        node.ok("eth_getBlockByNumber", json!([format!("{n:#x}"), false]))["hash"].clone()
    };
    send(5, "0x1");
    drive(&leader, engine, &dir, 5);
    // The follower prints the blocks the Engine API committed as it prints mined ones.
    let printed = follower.log_until("transaction mined");
    assert!(printed.iter().any(|l| l.contains("block=1")), "{printed:#?}");
    assert_eq!(hash_at(&follower, 5), hash_at(&leader, 5));
    assert_eq!(
        follower
            .ok("eth_getBalance", json!(["0x00000000000000000000000000000000000000aa", "latest"])),
        "0x5"
    );

    // The leader rewinds two blocks and makes three others: the follower goes back to block 3
    // and takes the new ones.
    let old_four = hash_at(&leader, 4);
    leader.ok("anvil_rollback", json!([2]));
    send(3, "0x2");
    drive(&leader, engine, &dir, 6);
    assert_ne!(hash_at(&follower, 4), old_four);
    for n in [3, 4, 6] {
        assert_eq!(hash_at(&follower, n), hash_at(&leader, n), "block {n}");
    }
    let balance = json!(["0x00000000000000000000000000000000000000aa", "latest"]);
    assert_eq!(follower.ok("eth_getBalance", balance), "0x9");
}
