//! `hearth-load --ingest RATE`: sustained transaction ingest (issue 5's soak).
//!
//! Signed EIP-1559 transactions, each carrying `--payload` zero bytes of calldata, go to
//! `eth_sendRawTransaction` at a fixed rate (open loop: due times do not wait for the server),
//! one connection per sender, each sender's nonces in order. A transaction refused with -32005
//! (pool full) is offered again at that sender's next due time, so the node's backpressure is
//! what limits the accepted rate. Every second a line of the curve is printed: what was offered,
//! accepted and refused so far, the pool's size, the head and the node's RSS (`--pid`, read
//! from /proc). When `--duration` is over, submission stops and the run waits (at most
//! `--drain-timeout` seconds) for the pool to empty, then checks that every accepted
//! transaction was mined: each sender's mined nonce must equal the nonces it had accepted.
//!
//! Blocks that are always full raise the base fee 12.5% a block, which from the dev default of
//! 1 gwei would price these transactions out within a minute; the run therefore starts by
//! setting the next block's base fee to zero (`anvil_setNextBlockBaseFeePerGas`, which Hearth,
//! anvil and Hardhat's `hardhat_` twin accept), and says so.

use std::cell::RefCell;
use std::rc::Rc;
use std::time::{Duration, Instant};

use alloy_consensus::{SignableTransaction, TxEip1559, TxEnvelope};
use alloy_eips::eip2718::Encodable2718;
use alloy_primitives::{Bytes, TxKind, U256, hex};
use alloy_signer::SignerSync;
use alloy_signer_local::PrivateKeySigner;
use serde_json::{Value, json};

use crate::{Conn, http_request};

/// What `--ingest` runs with.
#[derive(Debug, Clone)]
pub(crate) struct IngestOptions {
    /// Transactions offered per second (all senders together).
    pub rate: f64,
    /// How long transactions are offered.
    pub duration: Duration,
    /// Dev accounts that send (mnemonic indexes 0..senders).
    pub senders: u32,
    /// Zero bytes of calldata per transaction.
    pub payload: usize,
    /// The node's process id, for its RSS.
    pub pid: Option<u32>,
    /// Longest wait for the pool to empty after the load stops.
    pub drain_timeout: Duration,
}

/// Counts shared by the sender tasks and the sampler.
#[derive(Debug, Default)]
struct Tally {
    offered: u64,
    accepted: u64,
    pool_full: u64,
    /// Other errors, by message.
    other: std::collections::BTreeMap<String, u64>,
    /// Slowest answer to a refused (-32005) submission.
    max_refusal: Duration,
}

async fn rpc(conn: &mut Conn, addr: &str, method: &str, params: Value) -> Result<Value, String> {
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params}).to_string();
    let (_, bytes) =
        conn.roundtrip(&http_request(addr, &body)).await.map_err(|e| format!("{method}: {e}"))?;
    serde_json::from_slice(&bytes).map_err(|e| format!("{method}: {e}"))
}

fn quantity(v: &Value) -> Option<u64> {
    u64::from_str_radix(v.as_str()?.trim_start_matches("0x"), 16).ok()
}

/// Resident set of `pid` in MiB, from /proc.
pub(crate) fn rss_mib(pid: u32) -> Option<f64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let line = status.lines().find(|l| l.starts_with("VmRSS:"))?;
    let kib: f64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib / 1024.0)
}

/// A signed transfer of nothing to the sender itself, carrying `payload` zero bytes. The gas
/// limit is the intrinsic cost with Prague's calldata floor (EIP-7623: 10 gas per zero byte).
fn signed(signer: &PrivateKeySigner, chain_id: u64, nonce: u64, payload: usize) -> String {
    let tx = TxEip1559 {
        chain_id,
        nonce,
        gas_limit: 21_000 + 10 * payload as u64,
        max_fee_per_gas: 10_000_000_000,
        max_priority_fee_per_gas: 1,
        to: TxKind::Call(signer.address()),
        value: U256::ZERO,
        access_list: Default::default(),
        input: Bytes::from(vec![0u8; payload]),
    };
    let signature = signer.sign_hash_sync(&tx.signature_hash()).expect("a local key signs");
    let envelope: TxEnvelope = tx.into_signed(signature).into();
    format!("0x{}", hex::encode(envelope.encoded_2718()))
}

/// Runs the soak against `addr` and prints the curve and the verdict.
pub(crate) async fn run_ingest(addr: &str, options: &IngestOptions) -> Result<(), String> {
    let mut conn = Conn::open(addr).await.map_err(|e| e.to_string())?;
    let chain_id = quantity(&rpc(&mut conn, addr, "eth_chainId", json!([])).await?["result"])
        .ok_or("eth_chainId gave no number")?;
    let zero_fee = rpc(&mut conn, addr, "anvil_setNextBlockBaseFeePerGas", json!(["0x0"])).await?;
    let zero_fee = if zero_fee.get("error").is_none() {
        zero_fee
    } else {
        rpc(&mut conn, addr, "hardhat_setNextBlockBaseFeePerGas", json!(["0x0"])).await?
    };
    if zero_fee.get("error").is_some() {
        eprintln!("note: the target refused a zero base fee ({zero_fee}); fees may rise");
    }
    let signers =
        hearth_actors::dev::dev_signers(hearth_actors::dev::DEFAULT_MNEMONIC, options.senders)
            .map_err(|e| e.to_string())?;
    let mut nonces = Vec::new();
    for signer in &signers {
        let reply =
            rpc(&mut conn, addr, "eth_getTransactionCount", json!([signer.address(), "pending"]))
                .await?;
        nonces.push(quantity(&reply["result"]).ok_or("eth_getTransactionCount gave no number")?);
    }
    let gas_limit = rpc(&mut conn, addr, "eth_getBlockByNumber", json!(["latest", false]))
        .await?["result"]["gasLimit"]
        .clone();
    let per_block = quantity(&gas_limit).map(|g| g / (21_000 + 10 * options.payload as u64));
    println!(
        "ingest: {} tx/s for {} s from {} senders, {} B of calldata each ({} B encoded); base fee \
         set to 0; a block holds {} of them",
        options.rate,
        options.duration.as_secs(),
        options.senders,
        options.payload,
        signed(&signers[0], chain_id, 0, options.payload).len() / 2 - 1,
        per_block.map_or("?".to_owned(), |n| n.to_string()),
    );
    println!();
    println!(
        "| t s | offered | accepted | refused -32005 | pool pending | pool queued | head | RSS MiB |"
    );
    println!("|---:|---:|---:|---:|---:|---:|---:|---:|");

    let tally = Rc::new(RefCell::new(Tally::default()));
    let start = Instant::now();
    let stop_at = start + options.duration;
    let next_ticket = Rc::new(std::cell::Cell::new(0u64));
    let senders_done = Rc::new(std::cell::Cell::new(0usize));
    let mut tasks = Vec::new();
    for (signer, nonce) in signers.iter().cloned().zip(nonces.iter().copied()) {
        let (tally, next_ticket) = (Rc::clone(&tally), Rc::clone(&next_ticket));
        let done = Rc::clone(&senders_done);
        let (addr, rate, payload) = (addr.to_owned(), options.rate, options.payload);
        tasks.push(tokio::task::spawn_local(async move {
            let mut conn = Conn::open(&addr).await.ok();
            let mut nonce = nonce;
            let mut request = None;
            loop {
                let ticket = next_ticket.get();
                next_ticket.set(ticket + 1);
                let due = start + Duration::from_secs_f64(ticket as f64 / rate);
                if due >= stop_at {
                    done.set(done.get() + 1);
                    break nonce;
                }
                tokio::time::sleep_until(due.into()).await;
                // The same signed bytes are offered again until the pool takes them.
                let body = request.get_or_insert_with(|| {
                    let raw = signed(&signer, chain_id, nonce, payload);
                    http_request(
                        &addr,
                        &json!({"jsonrpc": "2.0", "id": 1,
                        "method": "eth_sendRawTransaction", "params": [raw]})
                        .to_string(),
                    )
                });
                tally.borrow_mut().offered += 1;
                let sent = Instant::now();
                let reply = match conn.as_mut() {
                    Some(c) => c.roundtrip(body).await.map_err(|e| e.to_string()),
                    None => Err("no connection".to_owned()),
                };
                let reconnect = reply.is_err();
                {
                    let mut tally = tally.borrow_mut();
                    match reply.map(|(_, b)| serde_json::from_slice::<Value>(&b)) {
                        // "already known" / "nonce too low": an earlier attempt whose answer
                        // was lost got in; the transaction is the pool's (or mined).
                        Ok(Ok(v))
                            if v.get("result").is_some()
                                || v["error"]["message"].as_str().is_some_and(|m| {
                                    m.contains("already known") || m.contains("nonce too low")
                                }) =>
                        {
                            tally.accepted += 1;
                            nonce += 1;
                            request = None;
                        }
                        Ok(Ok(v)) if v["error"]["code"] == -32005 => {
                            tally.pool_full += 1;
                            tally.max_refusal = tally.max_refusal.max(sent.elapsed());
                        }
                        Ok(Ok(v)) => {
                            let message = v["error"]["message"].as_str().unwrap_or("?").to_owned();
                            *tally.other.entry(message).or_default() += 1;
                        }
                        Ok(Err(e)) => {
                            *tally.other.entry(format!("bad json: {e}")).or_default() += 1
                        }
                        Err(e) => *tally.other.entry(format!("io: {e}")).or_default() += 1,
                    }
                }
                if reconnect {
                    conn = Conn::open(&addr).await.ok();
                }
            }
        }));
    }

    // The sampler: one line a second while offering, then until the pool is empty.
    let mut peak_rss: f64 = 0.0;
    let idle_rss = options.pid.and_then(rss_mib);
    let mut drained = false;
    let mut second = 0u64;
    loop {
        second += 1;
        tokio::time::sleep_until((start + Duration::from_secs(second)).into()).await;
        // A failed sample is reported and the run goes on (the verdict comes at the end).
        let sample = async {
            let status = rpc(&mut conn, addr, "txpool_status", json!([])).await?;
            let head = rpc(&mut conn, addr, "eth_blockNumber", json!([])).await?;
            Ok::<_, String>((status, head))
        };
        let (status, head) = match sample.await {
            Ok(sample) => sample,
            Err(e) => {
                eprintln!("sample at {second} s failed: {e}");
                conn = Conn::open(addr).await.map_err(|e| e.to_string())?;
                continue;
            }
        };
        let pending = quantity(&status["result"]["pending"]).unwrap_or(0);
        let queued = quantity(&status["result"]["queued"]).unwrap_or(0);
        let head = quantity(&head["result"]).unwrap_or(0);
        let rss = options.pid.and_then(rss_mib);
        peak_rss = peak_rss.max(rss.unwrap_or(0.0));
        let t = tally.borrow();
        println!(
            "| {second} | {} | {} | {} | {pending} | {queued} | {head} | {} |",
            t.offered,
            t.accepted,
            t.pool_full,
            rss.map_or("-".to_owned(), |r| format!("{r:.0}"))
        );
        // Offering ends when every sender has passed its last due time (its last answer in).
        let offering = senders_done.get() < signers.len();
        if !offering && pending + queued == 0 {
            drained = true;
            break;
        }
        if !offering && Instant::now() > stop_at + options.drain_timeout {
            break;
        }
    }
    let mut expected = Vec::new();
    for task in tasks {
        expected.push(task.await.map_err(|e| e.to_string())?);
    }
    let mut unmined = 0u64;
    for (signer, want) in signers.iter().zip(&expected) {
        let reply =
            rpc(&mut conn, addr, "eth_getTransactionCount", json!([signer.address(), "latest"]))
                .await?;
        let mined = quantity(&reply["result"]).unwrap_or(0);
        unmined += want.saturating_sub(mined);
    }
    let t = tally.borrow();
    println!();
    println!(
        "offered {} over {} s; accepted {}; refused with -32005 (pool full) {} (slowest refusal \
         {:.1} ms); other errors: {}",
        t.offered,
        options.duration.as_secs(),
        t.accepted,
        t.pool_full,
        t.max_refusal.as_secs_f64() * 1000.0,
        if t.other.is_empty() { "none".to_owned() } else { format!("{:?}", t.other) }
    );
    if let Some(idle) = idle_rss {
        println!("RSS: {idle:.0} MiB at start, peak {peak_rss:.0} MiB");
    }
    println!(
        "pool {} after the load; accepted but not mined: {unmined}",
        if drained { "drained" } else { "NOT drained within --drain-timeout" }
    );
    if unmined > 0 || !drained {
        return Err(format!("{unmined} accepted transactions were not mined"));
    }
    Ok(())
}
