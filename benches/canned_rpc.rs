//! The round-trip limit of a JSON-RPC client (issue 38): a trivial HTTP/1.1 keep-alive server
//! that answers `eth_sendTransaction` with a canned hash and does nothing else, so a client such
//! as `txburst.mjs` measures its own rate with no node behind it. The node's rate is then stated
//! as a share of that limit, measured in the same run.
//!
//!   hearth-canned-rpc [PORT=0]      (prints `listening on 127.0.0.1:PORT`; loopback only)
//!
//! It answers what txburst.mjs asks: `eth_accounts` (the dev chain's ten), `eth_blockNumber`,
//! `eth_getTransactionCount` (the number of sends so far, so every "nonce" reads as mined),
//! `eth_sendTransaction`, `eth_getTransactionReceipt` (status 1), `txpool_status`, `evm_mine`.
//! One thread per connection and only the standard library: no framework cost in the limit.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::atomic::{AtomicU64, Ordering};

static SENT: AtomicU64 = AtomicU64::new(0);

const ACCOUNTS: &str = r#"["0xf39fd6e51aad88f6f4ce6ab8827279cfffb92266","0x70997970c51812dc3a010c7d01b50e0d17dc79c8","0x3c44cdddb6a900fa2b585dd299e03d12fa4293bc","0x90f79bf6eb2c4f870365e785982e1f101e93b906","0x15d34aaf54267db7d7c367839aaf71a00a2c6a65","0x9965507d1a55bcc2695c58ba16fb37d819b0a4dc","0x976ea74026e726554db657fa54763abd0c3a0aa9","0x14dc79964da2c08b23698b3d3cc7ca32193d9955","0x23618e81e3f5cdf7f54c3d65f7fbc0abf5b21e8f","0xa0ee7a142d267c1f36714e4a8f75612f20a79720"]"#;
const HASH: &str = "\"0x5d1f8f0b6b6a1c6b7a3b6b0c5e1d9c1a8c4e2f3a1b0c9d8e7f6a5b4c3d2e1f00\"";

fn main() {
    let port: u16 = match std::env::args().nth(1).map(|p| p.parse()) {
        None => 0,
        Some(Ok(port)) => port,
        Some(Err(_)) => {
            eprintln!("usage: hearth-canned-rpc [PORT] (0..=65535)");
            std::process::exit(2);
        }
    };
    let listener = TcpListener::bind(("127.0.0.1", port)).expect("bind 127.0.0.1");
    println!("listening on {}", listener.local_addr().expect("local address"));
    for stream in listener.incoming().flatten() {
        std::thread::spawn(move || serve(stream));
    }
}

/// Answers requests on one keep-alive connection until the client closes it or sends
/// something this server does not read (a request with no `content-length`).
fn serve(stream: TcpStream) {
    let _ = stream.set_nodelay(true);
    let Ok(mut writer) = stream.try_clone() else { return };
    let mut reader = BufReader::new(stream);
    let mut line = String::new();
    let mut body = Vec::new();
    loop {
        let mut length = None;
        loop {
            line.clear();
            match reader.read_line(&mut line) {
                Ok(0) | Err(_) => return,
                Ok(_) => {}
            }
            if line == "\r\n" {
                break;
            }
            if let Some((name, value)) = line.split_once(':')
                && name.eq_ignore_ascii_case("content-length")
            {
                length = value.trim().parse::<usize>().ok();
            }
        }
        let Some(length) = length.filter(|&n| n <= 1 << 20) else { return };
        body.resize(length, 0);
        if reader.read_exact(&mut body).is_err() {
            return;
        }
        let answer = answer(&body);
        let head = format!(
            "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n",
            answer.len()
        );
        if writer
            .write_all(head.as_bytes())
            .and_then(|()| writer.write_all(answer.as_bytes()))
            .is_err()
        {
            return;
        }
    }
}

/// The canned answer to one JSON-RPC request (no batches: txburst sends none).
fn answer(body: &[u8]) -> String {
    let request: serde_json::Value = serde_json::from_slice(body).unwrap_or_default();
    let id = request.get("id").cloned().unwrap_or(serde_json::Value::Null);
    let result = match request.get("method").and_then(|m| m.as_str()).unwrap_or("") {
        "eth_accounts" => ACCOUNTS.to_string(),
        "eth_blockNumber" => "\"0x0\"".to_string(),
        "eth_getTransactionCount" => format!("\"0x{:x}\"", SENT.load(Ordering::Relaxed)),
        "eth_sendTransaction" => {
            SENT.fetch_add(1, Ordering::Relaxed);
            HASH.to_string()
        }
        "eth_getTransactionReceipt" => r#"{"status":"0x1"}"#.to_string(),
        "txpool_status" => r#"{"pending":"0x0","queued":"0x0"}"#.to_string(),
        "evm_mine" => "\"0x0\"".to_string(),
        _ => {
            return format!(
                r#"{{"jsonrpc":"2.0","id":{id},"error":{{"code":-32601,"message":"not canned"}}}}"#
            );
        }
    };
    format!(r#"{{"jsonrpc":"2.0","id":{id},"result":{result}}}"#)
}
