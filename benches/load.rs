//! `hearth-load`: a JSON-RPC load generator for Hearth and its peers (anvil, Hardhat, ganache).
//!
//! Closed loop (`--concurrency N`): N keep-alive connections, each sends its next request as
//! soon as the previous answer arrives — measures capacity. Open loop (`--rate R`): requests are
//! due at fixed times (R per second) whatever the server does, and latency is measured from the
//! time a request was due, so a server that falls behind shows it (no coordinated omission).
//! Two more open-loop columns separate the generator's share: the successful calls' p99 from
//! when each request was written, and the p99 of how late the writes were after their due
//! times (no free connection, or this one thread not scheduled in time).
//!
//! ```text
//! cargo run --release --bin hearth-load -- --target hearth=http://127.0.0.1:8545/ \
//!     --target anvil=http://127.0.0.1:8546/ --workload balanceOf,hashLoop --concurrency 8 --duration 10
//! ```
//! Every run is bounded by `--duration` (seconds) and stops by itself; only loopback URLs are
//! accepted. The BenchToken contract (../shared/peers/build) is deployed from dev account 0 if
//! the target has no code at its usual address.

use std::cell::{Cell, RefCell};
use std::collections::BTreeMap;
use std::rc::Rc;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

#[path = "load/ingest.rs"]
mod ingest;

/// Where BenchToken lands when dev account 0 deploys it first, on every dev node.
const TOKEN: &str = "0x5FbDB2315678afecb367f032d93F642f64180aa3";
const ALICE: &str = "0xf39Fd6e51aad88F6F4ce6aB8827279cffFb92266";
const BOB: &str = "0x70997970C51812dc3A010C7d01b50e0d17dc79C8";

/// One request body per workload name.
fn workload(name: &str) -> Option<Value> {
    let call = |data: &str| json!({"jsonrpc": "2.0", "id": 1, "method": "eth_call", "params": [{"to": TOKEN, "data": data}, "latest"]});
    let n2000 = "00000000000000000000000000000000000000000000000000000000000007d0";
    let bob = "00000000000000000000000070997970c51812dc3a010c7d01b50e0d17dc79c8";
    Some(match name {
        "balanceOf" => {
            call("0x70a08231000000000000000000000000f39fd6e51aad88f6f4ce6ab8827279cfffb92266")
        }
        "hashLoop" => call(&format!("0x67151319{n2000}")),
        // ~10x hashLoop's work (~10 ms a call on this machine): the retry-storm workload.
        "hashLoop20k" => call(&format!("0x67151319{:064x}", 20_000u64)),
        "mathLoop" => call(&format!("0x2a24c92a{n2000}")),
        // hashLoop(10^9): runs until it has burnt the node's whole call gas cap, then fails.
        "gasCap" => call(&format!("0x67151319{:064x}", 1_000_000_000u64)),
        "transferCall" => json!({"jsonrpc": "2.0", "id": 1, "method": "eth_call", "params": [
            {"from": ALICE, "to": TOKEN, "data": format!("0xa9059cbb{bob}{:064x}", 1)}, "latest"]}),
        "stateOverride" => json!({"jsonrpc": "2.0", "id": 1, "method": "eth_call", "params": [
            {"to": TOKEN, "data": format!("0x70a08231{bob}")}, "latest",
            {BOB: {"balance": "0xde0b6b3a7640000"}}]}),
        "blockNumber" => {
            json!({"jsonrpc": "2.0", "id": 1, "method": "eth_blockNumber", "params": []})
        }
        // The pending count asks the mempool (a round trip to its thread); latest reads the
        // store on the RPC worker: their difference is one actor round trip.
        "nonceLatest" => json!({"jsonrpc": "2.0", "id": 1, "method": "eth_getTransactionCount",
            "params": [ALICE, "latest"]}),
        "noncePending" => json!({"jsonrpc": "2.0", "id": 1, "method": "eth_getTransactionCount",
            "params": [ALICE, "pending"]}),
        "getBalance" => {
            json!({"jsonrpc": "2.0", "id": 1, "method": "eth_getBalance", "params": [ALICE, "latest"]})
        }
        _ => return None,
    })
}

const WORKLOADS: &str = "balanceOf,hashLoop,hashLoop20k,mathLoop,transferCall,stateOverride,blockNumber,getBalance,nonceLatest,noncePending,gasCap";

#[derive(Debug, Clone)]
struct Options {
    targets: Vec<(String, String)>,
    workloads: Vec<String>,
    concurrency: usize,
    rate: Option<f64>,
    duration: Duration,
    warmup: Duration,
    /// `--ingest RATE`: the transaction soak instead of call workloads.
    ingest: Option<ingest::IngestOptions>,
    /// The first target's process id: its RSS is sampled during each run.
    pid: Option<u32>,
}

fn usage() -> ! {
    print_usage();
    std::process::exit(2)
}

fn print_usage() {
    eprintln!(
        "usage: hearth-load --target NAME=URL [--target NAME=URL ...] [--workload {WORKLOADS}]\n\
         \x20                  [--concurrency N] [--rate REQ_PER_S] [--duration S] [--warmup S] [--pid PID]\n\
         \x20      hearth-load --target NAME=URL --ingest TX_PER_S [--senders N] [--payload BYTES]\n\
         \x20                  [--duration S] [--drain-timeout S] [--pid PID]\n\
         closed loop at N connections by default; --rate makes it open loop (N = max connections);\n\
         --ingest submits signed transactions at a fixed rate (see benches/load/ingest.rs);\n\
         --pid samples that process's RSS (the node under test)"
    );
}

fn parse_options() -> Options {
    let mut options = Options {
        targets: vec![],
        workloads: vec!["balanceOf".into()],
        concurrency: 8,
        rate: None,
        duration: Duration::from_secs(10),
        warmup: Duration::from_secs(1),
        ingest: None,
        pid: None,
    };
    let mut ingest = ingest::IngestOptions {
        rate: 0.0,
        duration: Duration::ZERO,
        senders: 10,
        payload: 100_000,
        pid: None,
        drain_timeout: Duration::from_secs(120),
    };
    let mut ingesting = false;
    let mut args = std::env::args().skip(1);
    while let Some(flag) = args.next() {
        let mut value = || args.next().unwrap_or_else(|| usage());
        match flag.as_str() {
            "--target" => {
                let v = value();
                let (name, url) = v.split_once('=').unwrap_or(("target", v.as_str()));
                options.targets.push((name.to_owned(), url.to_owned()));
            }
            "--workload" => options.workloads = value().split(',').map(str::to_owned).collect(),
            "--concurrency" => options.concurrency = value().parse().unwrap_or_else(|_| usage()),
            "--rate" => options.rate = Some(value().parse().unwrap_or_else(|_| usage())),
            "--duration" => {
                options.duration =
                    Duration::from_secs_f64(value().parse().unwrap_or_else(|_| usage()))
            }
            "--warmup" => {
                options.warmup =
                    Duration::from_secs_f64(value().parse().unwrap_or_else(|_| usage()))
            }
            "--ingest" => {
                ingesting = true;
                ingest.rate = value().parse().unwrap_or_else(|_| usage());
            }
            "--senders" => ingest.senders = value().parse().unwrap_or_else(|_| usage()),
            "--payload" => ingest.payload = value().parse().unwrap_or_else(|_| usage()),
            "--drain-timeout" => {
                ingest.drain_timeout =
                    Duration::from_secs_f64(value().parse().unwrap_or_else(|_| usage()))
            }
            "--pid" => options.pid = Some(value().parse().unwrap_or_else(|_| usage())),
            "--help" | "-h" => {
                print_usage();
                std::process::exit(0)
            }
            _ => usage(),
        }
    }
    if ingesting {
        if ingest.rate <= 0.0 || ingest.senders == 0 || ingest.payload > 120_000 {
            usage();
        }
        ingest.duration = options.duration;
        ingest.pid = options.pid;
        options.ingest = Some(ingest);
    }
    if options.targets.is_empty()
        || options.concurrency == 0
        || options.duration > Duration::from_secs(300)
    {
        usage();
    }
    for w in &options.workloads {
        if workload(w).is_none() {
            eprintln!("unknown workload {w}; known: {WORKLOADS}");
            std::process::exit(2);
        }
    }
    options
}

/// host:port of a loopback http URL; anything else is refused (load goes to this machine only).
fn loopback_addr(url: &str) -> String {
    let rest = url.strip_prefix("http://").unwrap_or_else(|| panic!("only http:// URLs: {url}"));
    let hostport = rest.split('/').next().unwrap_or_default();
    let host = hostport.rsplit_once(':').map_or(hostport, |(h, _)| h);
    assert!(
        host == "localhost" || host.starts_with("127.") || host == "[::1]",
        "refusing to load a non-loopback address: {url}"
    );
    if hostport.contains(':') { hostport.to_owned() } else { format!("{hostport}:80") }
}

/// A keep-alive HTTP/1.1 connection that posts JSON and reads one response at a time.
struct Conn {
    stream: TcpStream,
    buf: Vec<u8>,
}

impl Conn {
    async fn open(addr: &str) -> std::io::Result<Self> {
        let stream = TcpStream::connect(addr).await?;
        stream.set_nodelay(true)?;
        Ok(Self { stream, buf: Vec::with_capacity(16 * 1024) })
    }

    /// Sends `request` (a complete HTTP request) and returns (status, body).
    async fn roundtrip(&mut self, request: &[u8]) -> std::io::Result<(u16, Vec<u8>)> {
        self.stream.write_all(request).await?;
        self.buf.clear();
        loop {
            if let Some(end) = find(&self.buf, b"\r\n\r\n") {
                let head = std::str::from_utf8(&self.buf[..end]).map_err(std::io::Error::other)?;
                let status =
                    head.split_whitespace().nth(1).and_then(|s| s.parse().ok()).unwrap_or(0);
                let length = head
                    .lines()
                    .find_map(|l| {
                        let (k, v) = l.split_once(':')?;
                        k.eq_ignore_ascii_case("content-length")
                            .then(|| v.trim().parse::<usize>().ok())?
                    })
                    .unwrap_or(0);
                let total = end + 4 + length;
                while self.buf.len() < total {
                    self.read_more().await?;
                }
                return Ok((status, self.buf[end + 4..total].to_vec()));
            }
            self.read_more().await?;
        }
    }

    async fn read_more(&mut self) -> std::io::Result<()> {
        let mut chunk = [0u8; 16 * 1024];
        let n = self.stream.read(&mut chunk).await?;
        if n == 0 {
            return Err(std::io::Error::new(
                std::io::ErrorKind::UnexpectedEof,
                "connection closed",
            ));
        }
        self.buf.extend_from_slice(&chunk[..n]);
        Ok(())
    }
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|w| w == needle)
}

fn http_request(addr: &str, body: &str) -> Vec<u8> {
    format!(
        "POST / HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    )
    .into_bytes()
}

/// What one run measured.
#[derive(Debug, Default)]
struct Stats {
    latencies_us: Vec<u32>,
    /// Latencies of the requests that succeeded.
    ok_latencies_us: Vec<u32>,
    /// Latencies of the answers that were errors (a shed call's answer must be fast).
    error_latencies_us: Vec<u32>,
    /// Open loop: how late each request was written after its due time (the generator's own
    /// lateness: no free connection, or its thread not scheduled in time).
    send_lag_us: Vec<u32>,
    /// Open loop: latencies of the requests that succeeded from when they were written
    /// rather than due (the node's and the network's share alone).
    ok_from_send_us: Vec<u32>,
    /// Peak RSS of `--pid` during the run.
    peak_rss_mib: Option<f64>,
    ok: u64,
    errors: BTreeMap<String, u64>,
    elapsed: Duration,
}

impl Stats {
    fn record(&mut self, latency: Duration, outcome: Result<(u16, Vec<u8>), String>) {
        let us = latency.as_micros().min(u128::from(u32::MAX)) as u32;
        self.latencies_us.push(us);
        let succeeded = matches!(&outcome, Ok((200, body))
            if serde_json::from_slice::<Value>(body).is_ok_and(|v| v.get("result").is_some()));
        if succeeded {
            self.ok_latencies_us.push(us);
        } else {
            self.error_latencies_us.push(us);
        }
        match outcome {
            Ok((200, body)) => match serde_json::from_slice::<Value>(&body) {
                Ok(v) if v.get("error").is_some() => {
                    *self.errors.entry(format!("rpc {}", v["error"]["code"])).or_default() += 1;
                }
                Ok(_) => self.ok += 1,
                Err(_) => *self.errors.entry("bad json".into()).or_default() += 1,
            },
            Ok((status, body)) => {
                let code = serde_json::from_slice::<Value>(&body)
                    .ok()
                    .map(|v| v["error"]["code"].to_string());
                *self
                    .errors
                    .entry(format!("http {status} {}", code.unwrap_or_default()))
                    .or_default() += 1;
            }
            Err(e) => *self.errors.entry(format!("io {e}")).or_default() += 1,
        }
    }

    /// Open loop: notes that a request due at `due` was written at `sent` and answered
    /// `succeeded` at `now`.
    fn record_send(&mut self, due: Instant, sent: Instant, now: Instant, succeeded: bool) {
        let us = |d: Duration| d.as_micros().min(u128::from(u32::MAX)) as u32;
        self.send_lag_us.push(us(sent.saturating_duration_since(due)));
        if succeeded {
            self.ok_from_send_us.push(us(now.saturating_duration_since(sent)));
        }
    }

    fn percentile(sorted: &[u32], p: f64) -> f64 {
        if sorted.is_empty() {
            return 0.0;
        }
        let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
        f64::from(sorted[i]) / 1000.0
    }
}

/// Runs one workload against one target: closed loop, or open loop when `rate` is set.
async fn run(addr: &str, body: &str, options: &Options, measure: Duration) -> Stats {
    let request = Rc::new(http_request(addr, body));
    let stats = Rc::new(RefCell::new(Stats::default()));
    let start = Instant::now();
    let deadline = start + measure;
    let next_ticket = Rc::new(Cell::new(0u64));
    let mut tasks = Vec::new();
    for _ in 0..options.concurrency {
        let (request, stats, next_ticket) =
            (Rc::clone(&request), Rc::clone(&stats), Rc::clone(&next_ticket));
        let addr = addr.to_owned();
        let rate = options.rate;
        tasks.push(tokio::task::spawn_local(async move {
            let mut conn = match Conn::open(&addr).await {
                Ok(c) => Some(c),
                Err(e) => {
                    stats.borrow_mut().record(Duration::ZERO, Err(e.to_string()));
                    None
                }
            };
            loop {
                // Open loop: take the next due time; closed loop: go now.
                let due = match rate {
                    Some(rate) => {
                        let ticket = next_ticket.get();
                        next_ticket.set(ticket + 1);
                        let due = start + Duration::from_secs_f64(ticket as f64 / rate);
                        if due >= deadline {
                            break;
                        }
                        tokio::time::sleep_until(due.into()).await;
                        due
                    }
                    None => {
                        let now = Instant::now();
                        if now >= deadline {
                            break;
                        }
                        now
                    }
                };
                let sent = Instant::now();
                let outcome = match conn.as_mut() {
                    Some(c) => c.roundtrip(&request).await.map_err(|e| e.to_string()),
                    None => Err("no connection".into()),
                };
                let answered = Instant::now();
                if outcome.is_err() {
                    conn = Conn::open(&addr).await.ok();
                }
                let mut recorded = stats.borrow_mut();
                let ok_before = recorded.ok_latencies_us.len();
                recorded.record(answered - due, outcome);
                if rate.is_some() {
                    let succeeded = recorded.ok_latencies_us.len() > ok_before;
                    recorded.record_send(due, sent, answered, succeeded);
                }
            }
        }));
    }
    // Samples the node's RSS every 100 ms while the run lasts.
    let sampler = options.pid.map(|pid| {
        tokio::task::spawn_local(async move {
            let mut peak: f64 = 0.0;
            while Instant::now() < deadline {
                peak = peak.max(ingest::rss_mib(pid).unwrap_or(0.0));
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
            peak
        })
    });
    for task in tasks {
        let _ = task.await;
    }
    let mut stats = Rc::try_unwrap(stats).map(RefCell::into_inner).unwrap_or_default();
    stats.elapsed = start.elapsed();
    if let Some(sampler) = sampler {
        stats.peak_rss_mib = sampler.await.ok();
    }
    stats
}

/// Deploys BenchToken from account 0 when the target has no code at its usual address.
async fn ensure_token(addr: &str) -> Result<(), String> {
    let mut conn = Conn::open(addr).await.map_err(|e| e.to_string())?;
    let mut rpc = async |body: Value| -> Result<Value, String> {
        let (_, bytes) = conn
            .roundtrip(&http_request(addr, &body.to_string()))
            .await
            .map_err(|e| e.to_string())?;
        serde_json::from_slice::<Value>(&bytes).map_err(|e| e.to_string())
    };
    let code = rpc(
        json!({"jsonrpc": "2.0", "id": 1, "method": "eth_getCode", "params": [TOKEN, "latest"]}),
    )
    .await?;
    if code["result"].as_str().is_some_and(|c| c.len() > 2) {
        return Ok(());
    }
    let artifact = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../shared/peers/build/BenchToken.json");
    let artifact: Value = serde_json::from_str(
        &std::fs::read_to_string(&artifact).map_err(|e| format!("{}: {e}", artifact.display()))?,
    )
    .map_err(|e| e.to_string())?;
    let deploy = json!({"jsonrpc": "2.0", "id": 1, "method": "eth_sendTransaction",
        "params": [{"from": ALICE, "data": artifact["bytecode"], "gas": "0x1e8480"}]});
    let reply = rpc(deploy).await?;
    if reply.get("error").is_some() {
        return Err(format!("deploy failed: {reply}"));
    }
    // Some nodes (anvil) answer eth_sendTransaction before the block is mined: wait for the
    // code, at most 5 s.
    for _ in 0..50 {
        let code = rpc(
            json!({"jsonrpc": "2.0", "id": 1, "method": "eth_getCode", "params": [TOKEN, "latest"]}),
        )
        .await?;
        if code["result"].as_str().is_some_and(|c| c.len() > 2) {
            return Ok(());
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    Err(format!(
        "no code at {TOKEN} after deploying (account 0 must have nonce 0 on a fresh chain)"
    ))
}

fn main() {
    let options = parse_options();
    let runtime =
        tokio::runtime::Builder::new_current_thread().enable_all().build().expect("tokio runtime");
    let local = tokio::task::LocalSet::new();
    local.block_on(&runtime, async {
        if let Some(ingest) = &options.ingest {
            let addr = loopback_addr(&options.targets[0].1);
            if let Err(e) = ingest::run_ingest(&addr, ingest).await {
                eprintln!("ingest: {e}");
                std::process::exit(1);
            }
            return;
        }
        let mode = match options.rate {
            Some(rate) => {
                format!("open loop {rate} req/s, up to {} connections", options.concurrency)
            }
            None => format!("closed loop, {} connections", options.concurrency),
        };
        println!(
            "hearth-load: {mode}, {} s per run (+{} s warm-up)",
            options.duration.as_secs_f64(),
            options.warmup.as_secs_f64()
        );
        println!();
        if let Some(pid) = options.pid {
            println!(
                "RSS of pid {pid} before the runs: {} MiB",
                ingest::rss_mib(pid).map_or("?".to_owned(), |r| format!("{r:.0}"))
            );
        }
        println!(
            "| workload | target | req/s | p50 ms | p90 ms | p99 ms | max ms | ok | ok p99 ms | \
             error p99 ms | slowest error ms | peak RSS MiB | errors | ok p99 from send ms | \
             send lag p99 ms |"
        );
        println!("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|---:|---:|");
        let mut rows: Vec<(String, String, f64, f64)> = Vec::new();
        for (name, url) in &options.targets {
            let addr = loopback_addr(url);
            if let Err(e) = ensure_token(&addr).await {
                eprintln!("{name}: {e}");
                std::process::exit(1);
            }
        }
        for w in &options.workloads {
            let body = workload(w).expect("validated").to_string();
            for (name, url) in &options.targets {
                let addr = loopback_addr(url);
                eprintln!("running {w} against {name} ...");
                if !options.warmup.is_zero() {
                    run(&addr, &body, &options, options.warmup).await;
                }
                let mut stats = run(&addr, &body, &options, options.duration).await;
                stats.latencies_us.sort_unstable();
                stats.ok_latencies_us.sort_unstable();
                let ok_p99 = Stats::percentile(&stats.ok_latencies_us, 0.99);
                stats.error_latencies_us.sort_unstable();
                let error_p99 = Stats::percentile(&stats.error_latencies_us, 0.99);
                let slowest_error = Stats::percentile(&stats.error_latencies_us, 1.0);
                // Open loop only ("-" closed): the ok p99 from the write rather than the due
                // time, and how late the writes were; a large lag is the generator's, not the
                // node's.
                let (from_send, lag) = if options.rate.is_some() {
                    stats.ok_from_send_us.sort_unstable();
                    stats.send_lag_us.sort_unstable();
                    (
                        format!("{:.2}", Stats::percentile(&stats.ok_from_send_us, 0.99)),
                        format!("{:.2}", Stats::percentile(&stats.send_lag_us, 0.99)),
                    )
                } else {
                    ("-".to_owned(), "-".to_owned())
                };
                let peak_rss = stats.peak_rss_mib.map_or("-".to_owned(), |r| format!("{r:.0}"));
                let rps = stats.latencies_us.len() as f64 / stats.elapsed.as_secs_f64();
                let p = |q| Stats::percentile(&stats.latencies_us, q);
                let errors = if stats.errors.is_empty() {
                    "-".to_owned()
                } else {
                    stats
                        .errors
                        .iter()
                        .map(|(k, v)| format!("{k}: {v}"))
                        .collect::<Vec<_>>()
                        .join(", ")
                };
                println!(
                    "| {w} | {name} | {rps:.0} | {:.2} | {:.2} | {:.2} | {:.2} | {} | {ok_p99:.2} | \
                     {error_p99:.2} | {slowest_error:.2} | {peak_rss} | {errors} | {from_send} | \
                     {lag} |",
                    p(0.5),
                    p(0.9),
                    p(0.99),
                    p(1.0),
                    stats.ok
                );
                rows.push((
                    w.clone(),
                    name.clone(),
                    stats.ok as f64 / stats.elapsed.as_secs_f64(),
                    p(0.99),
                ));
            }
        }
        if options.targets.len() > 1 {
            let base = &options.targets[0].0;
            println!();
            println!("| workload | ratio | ok req/s ratio | p99 ratio |");
            println!("|---|---|---:|---:|");
            for w in &options.workloads {
                let find = |t: &str| rows.iter().find(|r| &r.0 == w && r.1 == t);
                let Some(first) = find(base) else { continue };
                for (other, _) in options.targets.iter().skip(1) {
                    if let Some(row) = find(other) {
                        println!(
                            "| {w} | {base} / {other} | {:.2} | {:.2} |",
                            first.2 / row.2.max(1e-9),
                            first.3 / row.3.max(1e-9)
                        );
                    }
                }
            }
        }
    });
}
