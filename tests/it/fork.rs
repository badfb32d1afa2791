//! Forking a live chain (`--fork-url`): a real upstream (a `hearth` process with contracts
//! deployed) behind a proxy the test owns, which adds 20 ms to every request and counts the
//! JSON-RPC methods it forwards.

use std::collections::HashMap;
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::process::{NodeProcess, TempDir};
use crate::support::fixtures;

pub(crate) const ALICE: &str = "0xf39fd6e51aad88f6f4ce6ab8827279cfffb92266";
/// Not a dev account: it holds on the upstream only what the upstream gave it.
pub(crate) const HOLDER: &str = "0x00000000000000000000000000000000000a11ce";
const LATENCY: Duration = Duration::from_millis(20);

/// A loopback HTTP proxy in front of the upstream: adds [`LATENCY`] per request, counts the
/// JSON-RPC methods of what it forwards, and can play dead (drops every connection).
pub(crate) struct Proxy {
    pub(crate) addr: SocketAddr,
    counts: Arc<Mutex<HashMap<String, u64>>>,
    down: Arc<AtomicBool>,
    /// How many of the next requests get HTTP 503 instead of an answer.
    refuse: Arc<AtomicU32>,
    /// Plays an upstream without anvil's `eth_getAccountInfo` (geth's): the method is renamed
    /// on the way, so the upstream answers it -32601.
    no_account_info: Arc<AtomicBool>,
}

impl Proxy {
    pub(crate) fn start(upstream: SocketAddr) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind proxy");
        let addr = listener.local_addr().expect("proxy address");
        let counts = Arc::new(Mutex::new(HashMap::new()));
        let down = Arc::new(AtomicBool::new(false));
        let refuse = Arc::new(AtomicU32::new(0));
        let no_account_info = Arc::new(AtomicBool::new(false));
        let (c, d, r) = (Arc::clone(&counts), Arc::clone(&down), Arc::clone(&refuse));
        let h = Arc::clone(&no_account_info);
        std::thread::spawn(move || {
            for client in listener.incoming().map_while(Result::ok) {
                let (c, d, r, h) = (Arc::clone(&c), Arc::clone(&d), Arc::clone(&r), Arc::clone(&h));
                std::thread::spawn(move || serve(client, upstream, &c, &d, &r, &h));
            }
        });
        Self { addr, counts, down, refuse, no_account_info }
    }

    pub(crate) fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// Calls forwarded so far of `method`.
    pub(crate) fn count(&self, method: &str) -> u64 {
        self.counts.lock().expect("counts").get(method).copied().unwrap_or(0)
    }

    /// Calls forwarded so far, all methods.
    pub(crate) fn total(&self) -> u64 {
        let counts = self.counts.lock().expect("counts");
        counts.iter().filter(|(m, _)| !m.starts_with('(')).map(|(_, n)| n).sum()
    }

    /// HTTP requests forwarded so far (a JSON-RPC batch is one).
    fn requests(&self) -> u64 {
        self.count("(http requests)")
    }
}

/// Reads one HTTP request (headers and a Content-Length body).
fn read_request(stream: &mut TcpStream) -> Option<(String, Vec<u8>)> {
    let mut buf = Vec::new();
    let mut byte = [0u8; 1];
    while !buf.ends_with(b"\r\n\r\n") {
        if stream.read(&mut byte).ok()? == 0 {
            return None;
        }
        buf.push(byte[0]);
    }
    let head = String::from_utf8_lossy(&buf).into_owned();
    let len = head
        .lines()
        .find_map(|l| {
            let (name, value) = l.split_once(':')?;
            name.eq_ignore_ascii_case("content-length").then(|| value.trim().parse().ok())?
        })
        .unwrap_or(0);
    let mut body = vec![0u8; len];
    stream.read_exact(&mut body).ok()?;
    Some((head, body))
}

/// Forwards one request of a client connection (the answer closes it: the upstream's says
/// `connection: close`, and the client reconnects for the next).
fn serve(
    mut client: TcpStream,
    upstream: SocketAddr,
    counts: &Mutex<HashMap<String, u64>>,
    down: &AtomicBool,
    refuse: &AtomicU32,
    no_account_info: &AtomicBool,
) {
    let Some((_, mut body)) = read_request(&mut client) else { return };
    if down.load(Ordering::Relaxed) {
        return;
    }
    if refuse.fetch_update(Ordering::Relaxed, Ordering::Relaxed, |n| n.checked_sub(1)).is_ok() {
        *counts.lock().expect("counts").entry("(refused)".to_owned()).or_default() += 1;
        let _ = client.write_all(
            b"HTTP/1.1 503 Service Unavailable\r\nContent-Length: 0\r\nConnection: close\r\n\r\n",
        );
        return;
    }
    std::thread::sleep(LATENCY);
    if let Ok(request) = serde_json::from_slice::<Value>(&body) {
        let calls = match request {
            Value::Array(calls) => calls,
            one => vec![one],
        };
        let mut counts = counts.lock().expect("counts");
        *counts.entry("(http requests)".to_owned()).or_default() += 1;
        for call in calls {
            let method = call["method"].as_str().unwrap_or("?").to_owned();
            *counts.entry(method).or_default() += 1;
        }
    }
    if no_account_info.load(Ordering::Relaxed) {
        let text =
            String::from_utf8_lossy(&body).replace("eth_getAccountInfo", "eth_noAccountInfo");
        body = text.into_bytes();
    }
    let Ok(mut up) = TcpStream::connect(upstream) else { return };
    let head = format!(
        "POST / HTTP/1.1\r\nHost: {upstream}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    );
    if up.write_all(head.as_bytes()).and_then(|()| up.write_all(&body)).is_err() {
        return;
    }
    let mut response = Vec::new();
    if up.read_to_end(&mut response).is_err() || response.is_empty() {
        return;
    }
    let _ = client.write_all(&response);
}

/// An upstream dev chain with BenchToken deployed, a non-dev holder funded with ETH and
/// tokens, and a contract whose `fallback` sums its slots 0..49 (slot i holds i + 1).
pub(crate) struct Upstream {
    pub(crate) node: NodeProcess,
    pub(crate) token: String,
    summer: String,
}

/// Creation code of the slot summer: stores i + 1 in slot i for i in 0..50, then returns a
/// runtime that sums SLOAD(0..50) and returns the sum.
fn summer_initcode() -> String {
    let mut runtime = String::from("6000");
    for i in 0..50u8 {
        runtime += &format!("60{i:02x}5401");
    }
    runtime += "60005260206000f3";
    let runtime_len = runtime.len() / 2;
    let mut init = String::new();
    for i in 0..50u8 {
        init += &format!("60{:02x}60{i:02x}55", i + 1);
    }
    // The copy and return below are 13 bytes (the offset takes a PUSH2).
    let offset = init.len() / 2 + 13;
    init += &format!("60{runtime_len:02x}61{offset:04x}600039");
    init += &format!("60{runtime_len:02x}6000f3");
    format!("0x{init}{runtime}")
}

fn receipt_address(node: &NodeProcess, tx: &Value) -> String {
    node.ok("eth_getTransactionReceipt", json!([tx]))["contractAddress"]
        .as_str()
        .expect("a contract")
        .to_owned()
}

pub(crate) fn balance_of(holder: &str) -> String {
    format!("0x70a08231{:0>64}", &holder[2..])
}

impl Upstream {
    pub(crate) fn start() -> Self {
        let node = NodeProcess::spawn(&["--http.port", "0"]);
        let deploy = node.ok(
            "eth_sendTransaction",
            json!([{"from": ALICE, "data": fixtures::bench_token_bytecode()}]),
        );
        let token = receipt_address(&node, &deploy);
        let deploy =
            node.ok("eth_sendTransaction", json!([{"from": ALICE, "data": summer_initcode()}]));
        let summer = receipt_address(&node, &deploy);
        let transfer = format!("0xa9059cbb{:0>64}{:0>64}", &HOLDER[2..], "3e8");
        node.ok("eth_sendTransaction", json!([{"from": ALICE, "to": token, "data": transfer}]));
        node.ok(
            "eth_sendTransaction",
            json!([{"from": ALICE, "to": HOLDER, "value": "0xde0b6b3a7640000"}]),
        );
        Self { node, token, summer }
    }
}

/// A fresh fork cache directory (removed when the first is dropped) and its path.
fn cache_dir(name: &str) -> (TempDir, String) {
    let cache = TempDir::new(name);
    let dir = cache.path().to_str().expect("utf-8").to_owned();
    (cache, dir)
}

/// A forked node through `proxy` at the upstream's block `block`.
fn fork_node(proxy: &Proxy, block: u64, extra: &[&str]) -> NodeProcess {
    let block = block.to_string();
    let url = proxy.url();
    let mut args = vec!["--http.port", "0", "--fork-url", &url, "--fork-block-number", &block];
    args.extend_from_slice(extra);
    NodeProcess::spawn(&args)
}

#[test]
fn a_fork_reads_the_upstream_s_state_and_runs_local_blocks_over_it() {
    or_skip!(crate::conformance::conformance_dir());
    let upstream = Upstream::start();
    let proxy = Proxy::start(upstream.node.addr);
    let head = crate::support::quantity(&upstream.node.ok("eth_blockNumber", json!([])));
    let fork = fork_node(&proxy, head, &["--no-fork-cache"]);
    // Starting took the chain id, the fork block's header and the ten dev accounts, with the
    // two request queues' contracts and their four counters each (what every local block's
    // end reads), the accounts and slots as one JSON-RPC batch.
    eprintln!("startup: {} requests, {} calls", proxy.requests(), proxy.total());
    assert_eq!(proxy.count("eth_getAccountInfo"), 12, "one call an account (anvil's method)");
    assert_eq!((proxy.count("eth_getBalance"), proxy.count("eth_getCode")), (0, 0));
    assert_eq!(proxy.count("eth_getStorageAt"), 8);
    assert_eq!(proxy.requests(), 3, "chain id, header, one batch of accounts and slots");
    let both = |method: &str, params: Value| {
        (upstream.node.ok(method, params.clone()), fork.ok(method, params))
    };
    // The fork continues the upstream's chain: id, number, the fork block's hash.
    for (method, params) in [
        ("eth_chainId", json!([])),
        ("eth_blockNumber", json!([])),
        ("eth_getBalance", json!([HOLDER, "latest"])),
        ("eth_getTransactionCount", json!([ALICE, "latest"])),
        ("eth_getCode", json!([upstream.token, "latest"])),
        ("eth_getStorageAt", json!([upstream.summer, "0x7", "latest"])),
        ("eth_call", json!([{"to": upstream.token, "data": balance_of(HOLDER)}, "latest"])),
        ("eth_call", json!([{"to": upstream.summer}, "latest"])),
    ] {
        let (up, down) = both(method, params);
        assert_eq!(up, down, "{method}");
    }
    let block =
        |node: &NodeProcess| node.ok("eth_getBlockByNumber", json!([format!("{head:#x}"), false]));
    assert_eq!(block(&upstream.node)["hash"], block(&fork)["hash"]);
    assert_eq!(
        fork.ok("eth_call", json!([{"to": upstream.summer}, "latest"])),
        format!("0x{:064x}", 1275),
        "the summer read 50 slots from the upstream"
    );

    // Local blocks over the forked base: an impersonated holder sends tokens; a snapshot
    // and revert undo it; the upstream never changes.
    let snapshot = fork.ok("evm_snapshot", json!([]));
    fork.ok("anvil_impersonateAccount", json!([HOLDER]));
    let transfer = format!("0xa9059cbb{:0>64}{:0>64}", &ALICE[2..], "64");
    let tx = fork.ok(
        "eth_sendTransaction",
        json!([{"from": HOLDER, "to": upstream.token, "data": transfer}]),
    );
    let receipt = fork.ok("eth_getTransactionReceipt", json!([tx]));
    assert_eq!(receipt["status"], "0x1", "{receipt}");
    assert_eq!(crate::support::quantity(&receipt["blockNumber"]), head + 1);
    let holder_tokens = |node: &NodeProcess| {
        node.ok("eth_call", json!([{"to": upstream.token, "data": balance_of(HOLDER)}, "latest"]))
    };
    assert_eq!(holder_tokens(&fork), format!("0x{:064x}", 1000 - 100));
    assert_eq!(holder_tokens(&upstream.node), format!("0x{:064x}", 1000));
    // The holder's history: the local block's transaction, then what the fork block itself
    // (stored with the fork) sent it, and a word that the index starts at the fork block: the
    // upstream's older history is not searched.
    let history = fork.ok("ots_searchTransactionsBefore", json!([HOLDER, 0, 25]));
    assert_eq!(history["txs"][0]["hash"], tx, "{history}");
    let blocks: Vec<u64> = history["txs"]
        .as_array()
        .expect("txs")
        .iter()
        .map(|t| crate::support::quantity(&t["blockNumber"]))
        .collect();
    assert!(blocks[1..].iter().all(|b| *b == head), "{blocks:?}");
    assert_eq!(history["lastPage"], json!(true));
    assert_eq!(history["indexedFrom"], json!(head), "{history}");
    let parent = fork.ok("eth_getBlockByNumber", json!([format!("{:#x}", head + 1), false]));
    assert_eq!(parent["parentHash"], block(&upstream.node)["hash"]);
    fork.ok("anvil_setBalance", json!([HOLDER, "0x1"]));
    assert_eq!(fork.ok("eth_getBalance", json!([HOLDER, "latest"])), "0x1");
    assert_eq!(fork.ok("evm_revert", json!([snapshot])), true);
    assert_eq!(holder_tokens(&fork), format!("0x{:064x}", 1000));
    assert_eq!(
        both("eth_getBalance", json!([HOLDER, "latest"])).0,
        fork.ok("eth_getBalance", json!([HOLDER, "latest"]))
    );
    assert_eq!(crate::support::quantity(&fork.ok("eth_blockNumber", json!([]))), head);
}

#[test]
fn concurrent_calls_over_the_same_cold_slots_fetch_each_slot_once() {
    or_skip!(crate::conformance::conformance_dir());
    let upstream = Upstream::start();
    let proxy = Proxy::start(upstream.node.addr);
    let head = crate::support::quantity(&upstream.node.ok("eth_blockNumber", json!([])));
    let fork = fork_node(&proxy, head, &["--no-fork-cache", "--executor.max-queue-delay", "10s"]);
    let addr = fork.addr;
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "eth_call",
        "params": [{"to": upstream.summer}, "latest"]})
    .to_string();
    let calls: Vec<_> = (0..100)
        .map(|_| {
            let body = body.clone();
            std::thread::spawn(move || crate::process::post(addr, &body).expect("answer"))
        })
        .collect();
    for call in calls {
        let (status, answer) = call.join().expect("caller");
        let answer: Value = serde_json::from_str(&answer).expect("JSON");
        assert_eq!(status, 200);
        assert_eq!(answer["result"], format!("0x{:064x}", 1275), "{answer}");
    }
    // The first miss fetched its slot and a page of the summer's storage, which held all 50.
    let slot_fetches = proxy.count("eth_getStorageAt");
    assert!(slot_fetches <= 50, "{slot_fetches} slot fetches for 50 slots");
    assert_eq!(proxy.count("debug_storageRangeAt"), 1, "one page of the summer's storage");
    let (_, metrics) = crate::process::get(addr, "/metrics").expect("metrics");
    let metric = |name: &str| -> u64 {
        metrics
            .lines()
            .find_map(|l| l.strip_prefix(name).and_then(|v| v.trim().parse().ok()))
            .unwrap_or_else(|| panic!("{name} in {metrics}"))
    };
    // Each value fetched once: the chain id, the fork block and its receipts, the accounts
    // (one eth_getAccountInfo each) and the slots; every other read was coalesced or a hit.
    let values = [
        "eth_chainId",
        "eth_getBlockByNumber",
        "eth_getBlockReceipts",
        "eth_getAccountInfo",
        "eth_getStorageAt",
        "debug_storageRangeAt",
    ];
    assert_eq!(
        metric("hearth_fork_fetches_total "),
        values.iter().map(|m| proxy.count(m)).sum::<u64>()
    );
    // The executors' own read caches answer most repeats; what reached the backend while a
    // fetch of the same slot was under way waited for it.
    assert!(metric("hearth_fork_coalesced_waits_total ") > 0, "{metrics}");
}

#[test]
fn a_contract_s_storage_comes_in_one_page_and_a_refused_page_falls_back_to_slots() {
    or_skip!(crate::conformance::conformance_dir());
    let upstream = Upstream::start();
    let proxy = Proxy::start(upstream.node.addr);
    let head = crate::support::quantity(&upstream.node.ok("eth_blockNumber", json!([])));
    let fork = fork_node(&proxy, head, &["--no-fork-cache"]);
    // The start's slots (the request queues' counters).
    let at_start = proxy.count("eth_getStorageAt");
    let sum = format!("0x{:064x}", 1275);
    assert_eq!(fork.ok("eth_call", json!([{"to": upstream.summer}, "latest"])), sum);
    // 50 SLOADs: the first fetched its slot beside a page holding the whole storage.
    assert_eq!(proxy.count("eth_getStorageAt"), at_start + 1);
    assert_eq!(proxy.count("debug_storageRangeAt"), 1);
    let requests = proxy.requests();
    // A slot the page lacks is zero, known without asking.
    assert_eq!(
        fork.ok("eth_getStorageAt", json!([upstream.summer, "0x63", "latest"])),
        format!("0x{:064x}", 0)
    );
    assert_eq!(
        fork.ok("eth_getStorageAt", json!([upstream.summer, "0x31", "latest"])),
        format!("0x{:064x}", 50)
    );
    assert_eq!(proxy.requests(), requests, "answered from the page");
    // A system contract's storage changes outside transactions (geth pages an empty block's
    // state before its system calls): its slots are read one by one, never paged.
    let history = "0x0000f90827f1c53a10cb7a02335b175320002935";
    let slot = format!("{:#x}", (head - 1) % 8191);
    assert_eq!(
        fork.ok("eth_getStorageAt", json!([history, slot, "latest"])),
        upstream.node.ok("eth_getStorageAt", json!([history, slot, format!("{head:#x}")]))
    );
    assert_eq!(proxy.count("debug_storageRangeAt"), 1, "no page of a system contract");
    assert_eq!(proxy.count("eth_getStorageAt"), at_start + 2);
    // The page is the fork block's: a later upstream write does not show.
    let page = upstream.node.ok(
        "debug_storageRangeAt",
        json!([
            upstream.node.ok("eth_getBlockByNumber", json!([format!("{head:#x}"), false]))["hash"],
            0,
            upstream.summer,
            "0x",
            10
        ]),
    );
    assert_eq!(page["storage"].as_object().map(serde_json::Map::len), Some(10), "{page}");
    assert!(page["nextKey"].is_string(), "{page}");

    // A fork of that fork: its upstream refuses pages of forked accounts, so slots come one
    // by one, and the answers are the same.
    let middle = Proxy::start(fork.addr);
    let second = fork_node(&middle, head, &["--no-fork-cache"]);
    let at_start = middle.count("eth_getStorageAt");
    assert_eq!(second.ok("eth_call", json!([{"to": upstream.summer}, "latest"])), sum);
    assert_eq!(middle.count("debug_storageRangeAt"), 1, "asked once, refused");
    assert_eq!(middle.count("eth_getStorageAt"), at_start + 50);
}

#[test]
fn a_restart_on_the_same_cache_fetches_nothing() {
    or_skip!(crate::conformance::conformance_dir());
    let upstream = Upstream::start();
    let proxy = Proxy::start(upstream.node.addr);
    let head = crate::support::quantity(&upstream.node.ok("eth_blockNumber", json!([])));
    let (_cache, dir) = cache_dir("fork-cache");
    let reads = |node: &NodeProcess| {
        vec![
            node.ok("eth_call", json!([{"to": upstream.summer}, "latest"])),
            node.ok(
                "eth_call",
                json!([{"to": upstream.token, "data": balance_of(HOLDER)}, "latest"]),
            ),
            node.ok("eth_getBalance", json!([HOLDER, "latest"])),
            node.ok("eth_getCode", json!([upstream.token, "latest"])),
        ]
    };
    let first = fork_node(&proxy, head, &["--fork.cache-dir", &dir]);
    let cold = reads(&first);
    first.stop();
    let fetched = proxy.total();
    assert_eq!(proxy.count("debug_storageRangeAt"), 2, "a page each of the summer and token");
    assert!(fetched > 15, "the cold run fetched ({fetched})");
    let second = fork_node(&proxy, head, &["--fork.cache-dir", &dir]);
    assert_eq!(reads(&second), cold);
    assert_eq!(proxy.total(), fetched, "the warm run asked the upstream nothing");
    let (_, metrics) = crate::process::get(second.addr, "/metrics").expect("metrics");
    let metric = |name: &str| -> u64 {
        metrics
            .lines()
            .find_map(|l| l.strip_prefix(name).and_then(|v| v.trim().parse().ok()))
            .unwrap_or_else(|| panic!("{name} in {metrics}"))
    };
    assert_eq!(metric("hearth_fork_upstream_requests_total "), 0);
    assert!(metric("hearth_fork_cache_hits_total ") >= 50, "{metrics}");
    // A second process while the first holds the cache runs on an in-memory one.
    let third = fork_node(&proxy, head, &["--fork.cache-dir", &dir]);
    assert!(third.log.iter().any(|l| l.contains("fork cache kept in memory")), "{:?}", third.log);
    assert_eq!(reads(&third)[0], cold[0]);
}

#[test]
fn a_dead_upstream_fails_reads_with_32000_within_the_timeout_and_the_node_carries_on() {
    or_skip!(crate::conformance::conformance_dir());
    let upstream = Upstream::start();
    let proxy = Proxy::start(upstream.node.addr);
    let head = crate::support::quantity(&upstream.node.ok("eth_blockNumber", json!([])));
    let fork = fork_node(
        &proxy,
        head,
        &["--no-fork-cache", "--fork-timeout", "1s", "--fork-retries", "3"],
    );
    // HTTP 503 twice: the third attempt answers.
    proxy.refuse.store(2, Ordering::Relaxed);
    assert_eq!(
        fork.ok("eth_getBalance", json!([upstream.token, "latest"])),
        upstream.node.ok("eth_getBalance", json!([upstream.token, "latest"]))
    );
    assert_eq!(proxy.count("(refused)"), 2);
    proxy.down.store(true, Ordering::Relaxed);
    fails_fast_with_the_upstream_down(&fork, "eth_getBalance", json!([HOLDER, "latest"]));
    let call = fork.call("eth_call", json!([{"to": upstream.summer}, "latest"]));
    assert_eq!(call["error"]["code"], -32000, "{call}");
    // The node stays up, and reads resume once the upstream answers again.
    assert_eq!(crate::support::quantity(&fork.ok("eth_blockNumber", json!([]))), head);
    proxy.down.store(false, Ordering::Relaxed);
    assert_eq!(
        fork.ok("eth_getBalance", json!([HOLDER, "latest"])),
        upstream.node.ok("eth_getBalance", json!([HOLDER, "latest"]))
    );
    // A killed upstream is as dead.
    let summer = upstream.summer.clone();
    upstream.node.kill_9();
    let started = Instant::now();
    let answer = fork.call("eth_call", json!([{"to": summer}, "latest"]));
    assert_eq!(answer["error"]["code"], -32000, "{answer}");
    assert!(started.elapsed() < Duration::from_millis(1_800));
    assert_eq!(crate::support::quantity(&fork.ok("eth_blockNumber", json!([]))), head);
}

#[test]
fn fork_flags_are_checked_where_they_are_parsed() {
    const HASH: &str = "0x0000000000000000000000000000000000000000000000000000000000000001";
    for (args, says) in [
        (&["--fork-block-number", "3"][..], "--fork-block-number: needs --fork-url"),
        (&["--fork-url", "ftp://x"][..], "--fork-url: must be an http:// or https:// URL"),
        (
            &["--fork-url", "http://x", "--fork-retries", "101"][..],
            "--fork-retries must be between 0 and 100",
        ),
        (
            &["--fork-url", "http://x", "--fork-timeout", "0s"][..],
            "--fork-timeout must be a positive duration",
        ),
        (
            &["--fork-url", "http://x", "--fork-rate-limit", "0"][..],
            "--fork-rate-limit must be between 1",
        ),
        (
            &["--fork-url", "http://x", "--fork-header", "novalue"][..],
            "--fork-header: must be KEY:VALUE",
        ),
        (
            &["--fork-url", "http://x", "--fork-chain-id", "0"][..],
            "--fork-chain-id: must be at least 1",
        ),
        (
            &["--fork-url", "http://x", "--no-fork-cache", "--fork.cache-dir", "/tmp/x"][..],
            "contradicts",
        ),
        (
            &["--fork-url", "http://x", "--fork.cache-size", "lots"][..],
            "--fork.cache-size must be a byte size",
        ),
        (
            &["--fork-url", "http://x", "--fork-transaction-hash", "0x01"][..],
            "--fork-transaction-hash: must be a 32-byte hex hash",
        ),
        (
            &[
                "--fork-url",
                "http://x",
                "--fork-transaction-hash",
                HASH,
                "--fork-block-number",
                "1",
            ][..],
            "cannot be used with",
        ),
    ] {
        let (code, _, err) = NodeProcess::run_to_exit(args);
        assert_eq!(code, 2, "{args:?}: {err}");
        assert!(err.contains(says), "{args:?}: {err}");
    }
}

/// The history methods a fork serves from the upstream, for blocks `0..=last` of `node`: every
/// block by number and hash (hashes and full), its receipts, transaction counts, transactions
/// by index and by hash, receipts by hash, and logs over the range and filtered.
fn history_requests(node: &NodeProcess, last: u64, token: &str) -> Vec<(&'static str, Value)> {
    let mut requests = Vec::new();
    for n in 0..=last {
        let number = format!("{n:#x}");
        let block = node.ok("eth_getBlockByNumber", json!([number, false]));
        let hash = block["hash"].clone();
        requests.push(("eth_getBlockByNumber", json!([number, false])));
        requests.push(("eth_getBlockByNumber", json!([number, true])));
        requests.push(("eth_getBlockByHash", json!([hash, true])));
        requests.push(("eth_getBlockByHash", json!([hash, false])));
        requests.push(("eth_getBlockReceipts", json!([number])));
        requests.push(("eth_getBlockReceipts", json!([hash])));
        requests.push(("eth_getBlockTransactionCountByNumber", json!([number])));
        requests.push(("eth_getBlockTransactionCountByHash", json!([hash])));
        requests.push(("eth_getTransactionByBlockNumberAndIndex", json!([number, "0x0"])));
        requests.push(("eth_getTransactionByBlockHashAndIndex", json!([hash, "0x0"])));
        for tx in block["transactions"].as_array().expect("transactions") {
            requests.push(("eth_getTransactionByHash", json!([tx])));
            requests.push(("eth_getTransactionReceipt", json!([tx])));
        }
    }
    let transfer = "0xddf252ad1be2c89b69c2b068fc378daa952ba7f163c4a11628f55a4df523b3ef";
    let last = format!("{last:#x}");
    requests.push(("eth_getLogs", json!([{"fromBlock": "0x0", "toBlock": last}])));
    requests
        .push(("eth_getLogs", json!([{"fromBlock": "0x1", "toBlock": last, "address": token}])));
    requests.push((
        "eth_getLogs",
        json!([{"fromBlock": "0x0", "toBlock": last, "topics": [transfer, null, format!("0x{:0>64}", &HOLDER[2..])]}]),
    ));
    requests
}

#[test]
fn history_below_and_at_the_fork_block_is_the_upstream_s_and_is_cached() {
    or_skip!(crate::conformance::conformance_dir());
    let upstream = Upstream::start();
    let proxy = Proxy::start(upstream.node.addr);
    let head = crate::support::quantity(&upstream.node.ok("eth_blockNumber", json!([])));
    // Fork at the token transfer's block (it logs), one block below the upstream's head.
    let fork_block = head - 1;
    let (_cache, dir) = cache_dir("fork-history");
    let fork = fork_node(&proxy, fork_block, &["--fork.cache-dir", &dir]);
    let requests = history_requests(&upstream.node, fork_block, &upstream.token);
    let answers: Vec<Value> = requests.iter().map(|(m, p)| fork.ok(m, p.clone())).collect();
    for ((method, params), answer) in requests.iter().zip(&answers) {
        assert_eq!(&upstream.node.ok(method, params.clone()), answer, "{method} {params}");
        // Genesis has no transaction 0; everything else exists.
        assert!(method.contains("AndIndex") || !answer.is_null(), "{method} {params}");
    }
    let by_index =
        requests.iter().zip(&answers).filter(|((m, _), a)| m.contains("AndIndex") && !a.is_null());
    assert_eq!(by_index.count(), 2 * fork_block as usize, "transaction 0 of blocks 1..=fork block");
    // The mint below the fork block and the fork block's own Transfer.
    let logs = fork.ok("eth_getLogs", json!([{"fromBlock": "0x0", "toBlock": "latest"}]));
    assert_eq!(logs.as_array().map(Vec::len), Some(2), "{logs}");
    assert_eq!(crate::support::quantity(&logs[1]["blockNumber"]), fork_block);
    // A second read of everything is answered from the cache.
    let requests_before = proxy.requests();
    for ((method, params), answer) in requests.iter().zip(&answers) {
        assert_eq!(&fork.ok(method, params.clone()), answer, "{method} {params} again");
    }
    assert_eq!(proxy.requests(), requests_before, "the second reads asked the upstream nothing");
    // What came after the fork block upstream is not this chain's.
    let later = upstream.node.ok("eth_getBlockByNumber", json!([format!("{head:#x}"), false]));
    let later_tx = later["transactions"][0].clone();
    assert!(fork.ok("eth_getTransactionByHash", json!([later_tx])).is_null());
    assert!(fork.ok("eth_getBlockByHash", json!([later["hash"], false])).is_null());
    // A local block after the fork block: logs over the whole range are the upstream's
    // followed by the local ones.
    fork.ok("anvil_impersonateAccount", json!([HOLDER]));
    // (The holder's ETH came after the fork block upstream.)
    fork.ok("anvil_setBalance", json!([HOLDER, "0xde0b6b3a7640000"]));
    let transfer = format!("0xa9059cbb{:0>64}{:0>64}", &ALICE[2..], "64");
    fork.ok(
        "eth_sendTransaction",
        json!([{"from": HOLDER, "to": upstream.token, "data": transfer}]),
    );
    let all = fork.ok("eth_getLogs", json!([{"fromBlock": "0x0", "toBlock": "latest"}]));
    assert_eq!(all.as_array().map(Vec::len), Some(3), "{all}");
    assert_eq!((&all[0], &all[1]), (&logs[0], &logs[1]));
    assert_eq!(crate::support::quantity(&all[2]["blockNumber"]), fork_block + 1);
    // --rpc.max-logs counts the upstream's logs and the local ones together.
    let capped = fork_node(&proxy, fork_block, &["--no-fork-cache", "--rpc.max-logs", "2"]);
    let range = json!([{"fromBlock": "0x0", "toBlock": "latest"}]);
    assert_eq!(capped.ok("eth_getLogs", range.clone()), logs, "two logs fit");
    capped.ok("anvil_impersonateAccount", json!([HOLDER]));
    capped.ok("anvil_setBalance", json!([HOLDER, "0xde0b6b3a7640000"]));
    capped.ok(
        "eth_sendTransaction",
        json!([{"from": HOLDER, "to": upstream.token, "data": transfer}]),
    );
    let over = capped.call("eth_getLogs", range);
    assert_eq!(over["error"]["code"], -32005, "{over}");
    fork.stop();
    // A restart on the same cache serves the history without the upstream.
    let requests_before = proxy.requests();
    let again = fork_node(&proxy, fork_block, &["--fork.cache-dir", &dir]);
    for ((method, params), answer) in requests.iter().zip(&answers) {
        assert_eq!(&again.ok(method, params.clone()), answer, "{method} {params} after a restart");
    }
    assert_eq!(proxy.requests(), requests_before, "the restart and its reads asked nothing");
    let (_, metrics) = crate::process::get(again.addr, "/metrics").expect("metrics");
    assert!(metrics.contains("hearth_fork_cache_hits_total"), "{metrics}");
}

#[test]
fn a_dead_upstream_fails_history_reads_with_32000_within_the_timeout() {
    or_skip!(crate::conformance::conformance_dir());
    let upstream = Upstream::start();
    let proxy = Proxy::start(upstream.node.addr);
    let head = crate::support::quantity(&upstream.node.ok("eth_blockNumber", json!([])));
    let fork = fork_node(&proxy, head, &["--no-fork-cache", "--fork-timeout", "1s"]);
    proxy.down.store(true, Ordering::Relaxed);
    for (method, params) in [
        ("eth_getBlockByNumber", json!(["0x1", true])),
        ("eth_getBlockReceipts", json!(["0x1"])),
        ("eth_getLogs", json!([{"fromBlock": "0x0", "toBlock": "0x1"}])),
        ("eth_getTransactionByHash", json!([format!("0x{:064x}", 7)])),
    ] {
        fails_fast_with_the_upstream_down(&fork, method, params);
    }
    proxy.down.store(false, Ordering::Relaxed);
    assert_eq!(
        fork.ok("eth_getBlockByNumber", json!(["0x1", true])),
        upstream.node.ok("eth_getBlockByNumber", json!(["0x1", true]))
    );
}

#[test]
fn fork_transaction_hash_forks_just_before_the_transaction() {
    let upstream = NodeProcess::spawn(&["--http.port", "0", "--no-mining"]);
    let to = |i: u64| format!("0x{:040x}", 0xb0 + i);
    let hashes: Vec<Value> = (1..=3)
        .map(|i| {
            upstream.ok(
                "eth_sendTransaction",
                json!([{"from": ALICE, "to": to(i), "value": format!("{i:#x}")}]),
            )
        })
        .collect();
    upstream.ok("evm_mine", json!([]));
    upstream.ok("evm_mine", json!([]));
    let receipt = upstream.ok("eth_getTransactionReceipt", json!([hashes[2]]));
    let block = crate::support::quantity(&receipt["blockNumber"]);
    assert_eq!(receipt["transactionIndex"], "0x2");
    let proxy = Proxy::start(upstream.addr);
    let url = proxy.url();
    let hash = hashes[2].as_str().expect("hash");
    let fork = NodeProcess::spawn(&[
        "--http.port",
        "0",
        "--fork-url",
        &url,
        "--fork-transaction-hash",
        hash,
        "--no-fork-cache",
    ]);
    // The earlier two are the first local block, numbered as upstream, in upstream order.
    assert_eq!(crate::support::quantity(&fork.ok("eth_blockNumber", json!([]))), block);
    let local = fork.ok("eth_getBlockByNumber", json!([format!("{block:#x}"), false]));
    assert_eq!(local["transactions"], json!([hashes[0], hashes[1]]));
    let parent = upstream.ok("eth_getBlockByNumber", json!([format!("{:#x}", block - 1), false]));
    assert_eq!(local["parentHash"], parent["hash"]);
    let upstream_block = upstream.ok("eth_getBlockByNumber", json!([format!("{block:#x}"), false]));
    assert_eq!(local["timestamp"], upstream_block["timestamp"]);
    for i in 1..=2 {
        let receipt = fork.ok("eth_getTransactionReceipt", json!([hashes[i - 1]]));
        assert_eq!(receipt["status"], "0x1", "{receipt}");
        assert_eq!(fork.ok("eth_getBalance", json!([to(i as u64), "latest"])), format!("{i:#x}"));
    }
    // The state is just before the transaction: it has not run, and it runs next.
    assert_eq!(fork.ok("eth_getBalance", json!([to(3), "latest"])), "0x0");
    assert!(fork.ok("eth_getTransactionByHash", json!([hash])).is_null());
    assert_eq!(fork.ok("eth_getTransactionCount", json!([ALICE, "latest"])), "0x2");
    let raw = upstream.ok("debug_getRawTransaction", json!([hash]));
    assert_eq!(fork.ok("eth_sendRawTransaction", json!([raw])), hashes[2]);
    let mined = fork.ok("eth_getTransactionReceipt", json!([hash]));
    assert_eq!(mined["status"], "0x1", "{mined}");
    assert_eq!(fork.ok("eth_getBalance", json!([to(3), "latest"])), "0x3");
    // An unknown hash stops the start with a clear error.
    let missing = format!("0x{:064x}", 9);
    let (code, _, err) = NodeProcess::run_to_exit(&[
        "--fork-url",
        &url,
        "--fork-transaction-hash",
        &missing,
        "--no-fork-cache",
    ]);
    assert_ne!(code, 0, "{err}");
    assert!(err.contains("no mined transaction"), "{err}");
}

/// The traces of every upstream block `1..=last` and of each of its transactions, as a geth
/// and a parity client ask for them (opcode logs, call and prestate tracers, parity's traces
/// and replays).
fn trace_requests(node: &NodeProcess, last: u64) -> Vec<(&'static str, Value)> {
    let mut requests = Vec::new();
    let call = json!({"tracer": "callTracer", "tracerConfig": {"withLog": true}});
    let prestate = json!({"tracer": "prestateTracer"});
    let diff = json!({"tracer": "prestateTracer", "tracerConfig": {"diffMode": true}});
    let logs = json!({"enableMemory": true, "enableReturnData": true});
    let range = json!({"fromBlock": "0x1", "toBlock": format!("{last:#x}")});
    requests.push(("trace_filter", json!([range])));
    for n in 1..=last {
        let number = format!("{n:#x}");
        let block = node.ok("eth_getBlockByNumber", json!([number, false]));
        requests.push((
            "trace_call",
            json!([{"from": ALICE, "to": HOLDER, "value": "0x1"}, ["trace"], number]),
        ));
        requests.push(("debug_traceBlockByNumber", json!([number, logs])));
        requests.push(("debug_traceBlockByNumber", json!([number, call])));
        requests.push(("debug_traceBlockByHash", json!([block["hash"], prestate])));
        requests.push(("trace_block", json!([number])));
        requests.push(("trace_replayBlockTransactions", json!([number, ["trace", "stateDiff"]])));
        for tx in block["transactions"].as_array().expect("transactions") {
            requests.push(("debug_traceTransaction", json!([tx])));
            requests.push(("debug_traceTransaction", json!([tx, call])));
            requests.push(("debug_traceTransaction", json!([tx, diff])));
            requests.push(("trace_transaction", json!([tx])));
            requests.push(("trace_get", json!([tx, ["0x0"]])));
            requests.push(("trace_replayTransaction", json!([tx, ["trace", "vmTrace"]])));
        }
    }
    requests
}

/// State queries at every block `0..last` (below the fork block), by number and by hash.
fn state_requests(
    node: &NodeProcess,
    upstream: &Upstream,
    last: u64,
) -> Vec<(&'static str, Value)> {
    let mut requests = Vec::new();
    let transfer = format!("0xa9059cbb{:0>64}{:0>64}", &HOLDER[2..], "1");
    for n in 0..last {
        let number = format!("{n:#x}");
        let hash = node.ok("eth_getBlockByNumber", json!([number, false]))["hash"].clone();
        for at in [json!(number), json!({"blockHash": hash})] {
            requests.push(("eth_getBalance", json!([HOLDER, at])));
            requests.push(("eth_getBalance", json!([ALICE, at])));
            requests.push(("eth_getTransactionCount", json!([ALICE, at])));
            requests.push(("eth_getCode", json!([upstream.token, at])));
            requests.push(("eth_getStorageAt", json!([upstream.summer, "0x7", at])));
            let holder_tokens = json!({"to": upstream.token, "data": balance_of(HOLDER)});
            requests.push(("eth_call", json!([holder_tokens, at])));
            requests.push(("eth_call", json!([{"to": upstream.summer}, at])));
            let send = json!({"from": ALICE, "to": upstream.token, "data": transfer});
            requests.push(("eth_estimateGas", json!([send, at])));
            requests.push(("eth_createAccessList", json!([send, at])));
            let call = json!({"tracer": "callTracer"});
            requests.push(("debug_traceCall", json!([send, at, call])));
            let slots = json!({upstream.summer.clone(): [format!("0x{:064x}", 3)]});
            requests.push(("eth_getStorageValues", json!([slots, at])));
        }
    }
    requests
}

/// Whether `answer` is a JSON-RPC error (the same error upstream and on the fork is equal).
fn answer_of(node: &NodeProcess, method: &str, params: &Value) -> Value {
    let answer = node.call(method, params.clone());
    match answer.get("result") {
        Some(result) => result.clone(),
        None => json!({"error": answer["error"]}),
    }
}

#[test]
fn traces_and_state_below_the_fork_block_are_the_upstream_s_by_re_execution() {
    or_skip!(crate::conformance::conformance_dir());
    let upstream = Upstream::start();
    let proxy = Proxy::start(upstream.node.addr);
    let fork_block = crate::support::quantity(&upstream.node.ok("eth_blockNumber", json!([])));
    // A block after the fork block upstream: the fork's history must not see it.
    upstream.node.ok("eth_sendTransaction", json!([{"from": ALICE, "to": HOLDER, "value": "0x5"}]));
    let (_cache, dir) = cache_dir("fork-traces");
    let fork = fork_node(&proxy, fork_block, &["--fork.cache-dir", &dir]);
    let mut requests = trace_requests(&upstream.node, fork_block);
    requests.extend(state_requests(&upstream.node, &upstream, fork_block));
    let answers: Vec<Value> = requests.iter().map(|(m, p)| answer_of(&fork, m, p)).collect();
    for ((method, params), answer) in requests.iter().zip(&answers) {
        let expected = answer_of(&upstream.node, method, params);
        assert_eq!(&expected, answer, "{method} {params}");
    }
    // Every block's transaction traced, and the state queries are real values, not errors.
    let failed: Vec<_> = requests
        .iter()
        .zip(&answers)
        .filter(|(_, a)| a.get("error").is_some())
        .map(|((m, p), a)| format!("{m} {p}: {a}"))
        .collect();
    assert!(failed.is_empty(), "{failed:#?}");
    // The holder's tokens came in block 3 and its ETH in the fork block: each block's own.
    let tokens = |at: &str| {
        fork.ok("eth_call", json!([{"to": upstream.token, "data": balance_of(HOLDER)}, at]))
    };
    assert_eq!(tokens("0x2"), format!("0x{:064x}", 0));
    assert_eq!(tokens("0x3"), format!("0x{:064x}", 1000));
    assert_eq!(fork.ok("eth_getBalance", json!([HOLDER, "0x3"])), "0x0");
    assert_eq!(fork.ok("eth_getBalance", json!([HOLDER, "latest"])), "0xde0b6b3a7640000");
    // Historical state goes upstream at the block asked for, by value, batched and cached.
    assert!(proxy.count("eth_getStorageAt") > 0 && proxy.count("eth_getAccountInfo") > 10);
    assert_eq!(proxy.count("debug_traceTransaction"), 0, "traces are re-executed, not forwarded");
    assert_eq!(proxy.count("eth_call"), 0, "calls are run here");
    let requests_before = proxy.requests();
    for ((method, params), answer) in requests.iter().zip(&answers) {
        assert_eq!(&answer_of(&fork, method, params), answer, "{method} {params} again");
    }
    assert_eq!(proxy.requests(), requests_before, "the second run asked the upstream nothing");
    // A proof below the fork block is the upstream's (it has the trie).
    let proof = json!([HOLDER, [], "0x1"]);
    assert_eq!(fork.ok("eth_getProof", proof.clone()), upstream.node.ok("eth_getProof", proof));
    fork.stop();
    // A restart on the same cache re-executes from the cache alone.
    let again = fork_node(&proxy, fork_block, &["--fork.cache-dir", &dir]);
    let requests_before = proxy.requests();
    for ((method, params), answer) in requests.iter().zip(&answers).step_by(7) {
        assert_eq!(&answer_of(&again, method, params), answer, "{method} {params} after a restart");
    }
    assert_eq!(proxy.requests(), requests_before, "the restart's reads asked nothing");
}

#[test]
fn a_dead_upstream_fails_traces_and_old_state_with_32000_within_the_timeout() {
    or_skip!(crate::conformance::conformance_dir());
    let upstream = Upstream::start();
    let proxy = Proxy::start(upstream.node.addr);
    let head = crate::support::quantity(&upstream.node.ok("eth_blockNumber", json!([])));
    let fork = fork_node(&proxy, head, &["--no-fork-cache", "--fork-timeout", "1s"]);
    let block = upstream.node.ok("eth_getBlockByNumber", json!([format!("{head:#x}"), false]));
    let tx = block["transactions"][0].clone();
    // The block and its location are cached; its parent state is not.
    fork.ok("eth_getTransactionByHash", json!([tx]));
    fork.ok("eth_getBlockByNumber", json!([format!("{head:#x}"), true]));
    proxy.down.store(true, Ordering::Relaxed);
    let call = json!({"to": upstream.summer});
    for (method, params) in [
        ("debug_traceTransaction", json!([tx])),
        ("trace_block", json!([format!("{head:#x}")])),
        ("eth_getBalance", json!([HOLDER, "0x1"])),
        ("eth_call", json!([call, "0x2"])),
    ] {
        fails_fast_with_the_upstream_down(&fork, method, params);
    }
    proxy.down.store(false, Ordering::Relaxed);
    assert_eq!(
        fork.ok("debug_traceTransaction", json!([tx])),
        upstream.node.ok("debug_traceTransaction", json!([tx]))
    );
}

/// A fork runs the upstream's rules at the fork block, not the dev default: a fork of a
/// Cancun chain mines Cancun blocks (blob gas fields, no requests hash) unless `--hardfork`
/// says otherwise.
#[test]
fn a_fork_runs_the_upstream_s_rules_unless_hardfork_is_given() {
    let upstream = NodeProcess::spawn(&["--http.port", "0", "--hardfork", "cancun"]);
    upstream.ok("evm_mine", json!([]));
    let proxy = Proxy::start(upstream.addr);
    let header_of_next_block = |fork: &NodeProcess| {
        fork.ok("evm_mine", json!([]));
        fork.ok("eth_getBlockByNumber", json!(["latest", false]))
    };
    let fork = fork_node(&proxy, 1, &["--no-fork-cache"]);
    let mined = header_of_next_block(&fork);
    assert_eq!(mined["number"], "0x2");
    assert!(mined.get("blobGasUsed").is_some(), "Cancun: {mined}");
    assert!(mined.get("requestsHash").is_none(), "not Prague: {mined}");
    let fork = fork_node(&proxy, 1, &["--no-fork-cache", "--hardfork", "prague"]);
    let mined = header_of_next_block(&fork);
    assert!(mined.get("requestsHash").is_some(), "--hardfork prague: {mined}");
}

/// `method` on `fork` (started with `--fork-timeout 1s`) while its upstream is down: -32000
/// `fork upstream: ...` well within two timeouts, never a hang.
fn fails_fast_with_the_upstream_down(fork: &NodeProcess, method: &str, params: Value) {
    let started = Instant::now();
    let answer = fork.call(method, params);
    assert_eq!(answer["error"]["code"], -32000, "{method}: {answer}");
    let message = answer["error"]["message"].as_str().expect("message");
    assert!(message.starts_with("fork upstream: "), "{message}");
    assert!(started.elapsed() < Duration::from_millis(1_800), "{method}");
}

/// Sends `requests` from `callers` concurrent clients (each sends its next request when its
/// last is answered) and returns every answer in the requests' order, each with how long it
/// took; a request the node did not answer (it was killed) answers `Value::Null`.
fn concurrently(
    addr: SocketAddr,
    requests: &[(&str, Value)],
    callers: usize,
) -> Vec<(Value, Duration)> {
    let next = std::sync::atomic::AtomicUsize::new(0);
    let answers = Mutex::new(vec![(Value::Null, Duration::ZERO); requests.len()]);
    std::thread::scope(|scope| {
        for _ in 0..callers {
            scope.spawn(|| {
                loop {
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    let Some((method, params)) = requests.get(i) else { break };
                    let body =
                        json!({"jsonrpc": "2.0", "id": i, "method": method, "params": params});
                    let started = Instant::now();
                    let answer = crate::process::post(addr, &body.to_string())
                        .ok()
                        .and_then(|(_, body)| serde_json::from_str(&body).ok())
                        .unwrap_or(Value::Null);
                    answers.lock().expect("answers")[i] = (answer, started.elapsed());
                }
            });
        }
    });
    answers.into_inner().expect("answers")
}

/// Reads of accounts nobody has read before (each a fetch), of the token's and the summer's
/// storage: what a test suite's workers ask a fresh fork.
fn cold_reads(upstream: &Upstream, first: u64, count: u64) -> Vec<(&'static str, Value)> {
    let mut requests = Vec::new();
    for i in first..first + count {
        let stranger = format!("{:#042x}", 0xdead_0000_u64 + i);
        requests.push(("eth_getBalance", json!([stranger, "latest"])));
        requests.push(("eth_call", json!([{"to": stranger, "data": "0x"}, "latest"])));
        requests.push((
            "eth_call",
            json!([{"to": upstream.token, "data": balance_of(HOLDER)}, "latest"]),
        ));
        requests.push(("eth_call", json!([{"to": upstream.summer}, "latest"])));
    }
    requests
}

#[test]
fn sixteen_and_thirty_two_callers_on_a_cold_fork_are_all_served_and_a_dead_upstream_fails_them_together()
 {
    or_skip!(crate::conformance::conformance_dir());
    let upstream = Upstream::start();
    let proxy = Proxy::start(upstream.node.addr);
    let head = crate::support::quantity(&upstream.node.ok("eth_blockNumber", json!([])));
    // Default admission: the callers' waits on the upstream are not the executors' queue.
    let fork = fork_node(&proxy, head, &["--no-fork-cache", "--fork-timeout", "1s"]);
    let expected = |requests: &[(&str, Value)]| -> Vec<Value> {
        requests.iter().map(|(m, p)| upstream.node.ok(m, p.clone())).collect()
    };
    let started = proxy.requests();
    for (callers, first) in [(16, 0), (32, 100)] {
        let requests = cold_reads(&upstream, first, 32);
        let answers = concurrently(fork.addr, &requests, callers);
        let results: Vec<Value> = answers.iter().map(|(a, _)| a["result"].clone()).collect();
        for (answer, _) in &answers {
            assert!(answer.get("error").is_none(), "{callers} callers: {answer}");
        }
        assert_eq!(results, expected(&requests), "{callers} callers");
    }
    // 128 cold accounts and two contracts' storage: the concurrent callers' misses went up
    // together, a few batches, not a request each.
    let requests = proxy.requests() - started;
    assert!(requests <= 64, "{requests} upstream requests for 256 reads");

    // Dead: every caller fails with -32000 within the timeout, all at once rather than one
    // after another.
    proxy.down.store(true, Ordering::Relaxed);
    let requests = cold_reads(&upstream, 200, 8);
    let started = Instant::now();
    let answers = concurrently(fork.addr, &requests, 32);
    for (answer, took) in answers.iter().filter(|(a, _)| a.get("error").is_some()) {
        assert_eq!(answer["error"]["code"], -32000, "{answer}");
        assert!(*took < Duration::from_millis(2_500), "{took:?}");
    }
    let failed = answers.iter().filter(|(a, _)| a.get("error").is_some()).count();
    assert_eq!(failed, 16, "every read of a cold account failed: {answers:?}");
    assert!(started.elapsed() < Duration::from_secs(5), "{:?}", started.elapsed());
    // Back: the same reads are served.
    proxy.down.store(false, Ordering::Relaxed);
    let answers = concurrently(fork.addr, &requests, 32);
    let results: Vec<Value> = answers.iter().map(|(a, _)| a["result"].clone()).collect();
    assert_eq!(results, expected(&requests));
}

#[test]
fn a_fork_killed_during_concurrent_cold_reads_serves_the_same_answers_on_its_cache() {
    or_skip!(crate::conformance::conformance_dir());
    let upstream = Upstream::start();
    let proxy = Proxy::start(upstream.node.addr);
    let head = crate::support::quantity(&upstream.node.ok("eth_blockNumber", json!([])));
    let (_cache, dir) = cache_dir("fork-crash-cache");
    let requests = cold_reads(&upstream, 0, 64);
    let expected: Vec<Value> =
        requests.iter().map(|(m, p)| upstream.node.ok(m, p.clone())).collect();
    let first = fork_node(&proxy, head, &["--fork.cache-dir", &dir]);
    let addr = first.addr;
    let startup = proxy.requests();
    // Killed while 32 callers read: some reads answered, some not yet.
    std::thread::scope(|scope| {
        let readers = scope.spawn(|| concurrently(addr, &requests, 32));
        while proxy.requests() < startup + 2 && !readers.is_finished() {
            std::thread::yield_now();
        }
        first.kill_9();
        for ((answer, _), want) in readers.join().expect("readers").iter().zip(&expected) {
            // Answered before the kill: right. Cut off: nothing.
            if answer.get("result").is_some() {
                assert_eq!(&answer["result"], want);
            }
        }
    });
    // The cache the kill left is read again: every answer the upstream's.
    let second = fork_node(&proxy, head, &["--fork.cache-dir", &dir]);
    let answers = concurrently(second.addr, &requests, 32);
    let results: Vec<Value> = answers.iter().map(|(a, _)| a["result"].clone()).collect();
    assert_eq!(results, expected);
}

#[test]
fn an_upstream_without_eth_get_account_info_is_asked_three_calls_an_account() {
    or_skip!(crate::conformance::conformance_dir());
    let upstream = Upstream::start();
    let proxy = Proxy::start(upstream.node.addr);
    proxy.no_account_info.store(true, Ordering::Relaxed);
    let head = crate::support::quantity(&upstream.node.ok("eth_blockNumber", json!([])));
    let fork = fork_node(&proxy, head, &["--no-fork-cache"]);
    // The start's twelve accounts (ten dev accounts, two request queues) were asked once with
    // the method, refused, asked again the plain way; later accounts the plain way only.
    assert_eq!(proxy.count("eth_getAccountInfo"), 12);
    assert_eq!(proxy.count("eth_getBalance"), 12);
    for (method, params) in [
        ("eth_getBalance", json!([HOLDER, "latest"])),
        ("eth_getCode", json!([upstream.token, "latest"])),
        ("eth_call", json!([{"to": upstream.token, "data": balance_of(HOLDER)}, "latest"])),
    ] {
        assert_eq!(fork.ok(method, params.clone()), upstream.node.ok(method, params), "{method}");
    }
    assert_eq!(proxy.count("eth_getAccountInfo"), 12, "not asked again");
    assert!(proxy.count("eth_getBalance") >= 14, "{}", proxy.count("eth_getBalance"));
}

#[test]
fn proofs_up_to_the_fork_block_are_the_upstream_s_and_local_ones_after_a_change() {
    use crate::proof::{b256, verify_against};
    or_skip!(crate::conformance::conformance_dir());
    let upstream = Upstream::start();
    // Fifty accounts that only the upstream funded.
    let accounts: Vec<String> = (0..50u64).map(|i| format!("0x{:040x}", 0xb0b000 + i)).collect();
    for (i, account) in accounts.iter().enumerate() {
        let value = format!("{:#x}", i + 1);
        upstream
            .node
            .ok("eth_sendTransaction", json!([{"from": ALICE, "to": account, "value": value}]));
    }
    let proxy = Proxy::start(upstream.node.addr);
    let head = crate::support::quantity(&upstream.node.ok("eth_blockNumber", json!([])));
    let fork = fork_node(&proxy, head, &["--no-fork-cache"]);
    let tag = |n: u64| format!("{n:#x}");
    let root = |node: &NodeProcess, n: u64| {
        b256(&node.ok("eth_getBlockByNumber", json!([tag(n), false]))["stateRoot"])
    };
    let address = |a: &str| a.parse::<alloy_primitives::Address>().expect("address");
    // The summer's fifty slots hold 1..=50.
    let slots: Vec<String> = (0..50u64).map(|i| format!("{i:#x}")).collect();
    let slots: Vec<&str> = slots.iter().map(String::as_str).collect();

    // At the fork block and below it: the upstream's proofs, which verify against the
    // upstream block's root and equal the upstream's own answers.
    for number in [head, head - 25] {
        let upstream_root = root(&upstream.node, number);
        assert_eq!(root(&fork, number), upstream_root, "the fork shows the upstream's header");
        let funded = accounts.iter().take(if number == head { 50 } else { 24 });
        for account in funded {
            let params = json!([account, [], tag(number)]);
            let proof = fork.ok("eth_getProof", params.clone());
            verify_against(&proof, upstream_root, address(account), true, &[], &tag(number));
            assert_eq!(proof, upstream.node.ok("eth_getProof", params), "{account} at {number}");
        }
        let params = json!([upstream.summer, slots, tag(number)]);
        let proof = fork.ok("eth_getProof", params.clone());
        verify_against(&proof, upstream_root, address(&upstream.summer), true, &slots, "fork");
        assert_eq!(proof, upstream.node.ok("eth_getProof", params));
        let params = json!([upstream.summer, tag(number)]);
        assert_eq!(
            fork.ok("eth_getAccount", params.clone()),
            upstream.node.ok("eth_getAccount", params)
        );
    }
    // Asked again: from the cache.
    let asked = proxy.count("eth_getProof");
    assert_eq!(asked, 50 + 24 + 2 + 2, "one upstream proof a query (eth_getAccount's included)");
    fork.ok("eth_getProof", json!([upstream.summer, slots, tag(head)]));
    assert_eq!(proxy.count("eth_getProof"), asked, "a cached proof asks the upstream nothing");

    // A dev account is written here at the fork block: its proof is the local trie's.
    fork.ok("eth_getProof", json!([ALICE, [], tag(head)]));
    assert_eq!(proxy.count("eth_getProof"), asked, "a local account is not asked upstream");

    // After a local change, in a local block: the local trie's proof, against its root.
    let paid = &accounts[7];
    fork.ok("eth_sendTransaction", json!([{"from": ALICE, "to": paid, "value": "0x100"}]));
    fork.ok("anvil_setStorageAt", json!([upstream.summer, "0x3", format!("0x{:064x}", 99)]));
    fork.ok("evm_mine", json!([]));
    let local = head + 2;
    let local_root = root(&fork, local);
    let proof = fork.ok("eth_getProof", json!([paid, [], tag(local)]));
    assert_eq!(proof["balance"], format!("{:#x}", 8 + 0x100));
    verify_against(&proof, local_root, address(paid), true, &[], "local");
    let proof = fork.ok("eth_getProof", json!([upstream.summer, ["0x3"], tag(local)]));
    assert_eq!(proof["storageProof"][0]["value"], "0x63");
    verify_against(&proof, local_root, address(&upstream.summer), true, &["0x3"], "local");
    assert_eq!(proxy.count("eth_getProof"), asked, "what was written here is proven here");
    // A slot of that contract never written here holds the upstream's value, which the local
    // trie cannot prove: refused, not answered with a proof that would not verify.
    let mixed = fork.call("eth_getProof", json!([upstream.summer, ["0x3", "0x7"], tag(local)]));
    assert_eq!(mixed["error"]["code"], -32000, "{mixed}");
    // An account never written here is as it was at the fork block: the upstream's proof there.
    let untouched = &accounts[9];
    let proof = fork.ok("eth_getProof", json!([untouched, [], tag(local)]));
    assert_eq!(proof, upstream.node.ok("eth_getProof", json!([untouched, [], tag(head)])));
    verify_against(&proof, root(&upstream.node, head), address(untouched), true, &[], "head");
    let token_at =
        |node: &NodeProcess, n: u64| node.ok("eth_getAccount", json!([upstream.token, tag(n)]));
    assert_eq!(token_at(&fork, local), token_at(&upstream.node, head), "its storage root too");
}

#[test]
fn simulations_below_the_fork_block_are_the_upstream_s() {
    or_skip!(crate::conformance::conformance_dir());
    let upstream = Upstream::start();
    let proxy = Proxy::start(upstream.node.addr);
    let head = crate::support::quantity(&upstream.node.ok("eth_blockNumber", json!([])));
    let fork = fork_node(&proxy, head, &["--no-fork-cache"]);
    let below = format!("{:#x}", head - 1);
    let payload = json!({"blockStateCalls": [{"calls": [
        {"from": ALICE, "to": upstream.token, "data": balance_of(HOLDER)},
        {"from": ALICE, "to": HOLDER, "value": "0x1"},
    ]}]});
    let params = json!([payload, below]);
    let simulated = fork.ok("eth_simulateV1", params.clone());
    assert_eq!(simulated, upstream.node.ok("eth_simulateV1", params.clone()));
    assert_eq!(simulated[0]["calls"][0]["status"], "0x1", "{simulated}");
    assert_eq!(proxy.count("eth_simulateV1"), 1);
    assert_eq!(fork.ok("eth_simulateV1", params), simulated);
    assert_eq!(proxy.count("eth_simulateV1"), 1, "the answer is cached");
    // From the fork block on, the fork simulates on its own state.
    let at_fork = json!([payload, format!("{head:#x}")]);
    assert_eq!(fork.ok("eth_simulateV1", at_fork)[0]["calls"][1]["status"], "0x1");
    assert_eq!(proxy.count("eth_simulateV1"), 1);
}

#[test]
fn set_rpc_url_moves_the_fork_to_another_endpoint_of_the_same_chain_only() {
    or_skip!(crate::conformance::conformance_dir());
    let upstream = Upstream::start();
    let (first, second) = (Proxy::start(upstream.node.addr), Proxy::start(upstream.node.addr));
    let head = crate::support::quantity(&upstream.node.ok("eth_blockNumber", json!([])));
    let fork = fork_node(&first, head, &["--no-fork-cache"]);
    assert_eq!(fork.ok("anvil_setRpcUrl", json!([second.url()])), Value::Null);
    let before = first.total();
    let balance = fork.ok("eth_getBalance", json!([HOLDER, "latest"]));
    assert_eq!(balance, upstream.node.ok("eth_getBalance", json!([HOLDER, "latest"])));
    assert_eq!(first.total(), before, "the old endpoint is asked nothing more");
    assert!(second.count("eth_getAccountInfo") >= 1, "the new one is asked");
    // Another chain, a dead endpoint, a URL that is no http(s) URL: refused, nothing changes.
    let other = NodeProcess::spawn(&["--http.port", "0", "--chain-id", "5"]);
    let refused = fork.call("anvil_setRpcUrl", json!([format!("http://{}", other.addr)]));
    assert_eq!(refused["error"]["code"], -32603, "{refused}");
    assert!(
        refused["error"]["message"].as_str().is_some_and(|m| m.contains("chain id")),
        "{refused}"
    );
    let dead = fork.call("anvil_setRpcUrl", json!(["http://127.0.0.1:1"]));
    assert_eq!(dead["error"]["code"], -32603, "{dead}");
    let bad = fork.call("anvil_setRpcUrl", json!(["ftp://example.org"]));
    assert_eq!(bad["error"]["code"], -32602, "{bad}");
    let asked = second.total();
    fork.ok("eth_getStorageAt", json!([upstream.summer, "0x9", "latest"]));
    assert!(second.total() > asked, "reads still go to the endpoint that was accepted");
    // On a dev chain the URL is kept: a reset into a fork that names none forks from it.
    let dev = NodeProcess::spawn(&["--http.port", "0", "--no-fork-cache"]);
    assert_eq!(dev.ok("anvil_setRpcUrl", json!([second.url()])), Value::Null);
    let block = format!("{head:#x}");
    dev.ok("anvil_reset", json!([{"forking": {"blockNumber": block}}]));
    assert_eq!(dev.ok("eth_getBalance", json!([HOLDER, "latest"])), balance);
}
