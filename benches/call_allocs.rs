//! Heap allocations per hot operation, in two parts.
//!
//! 1. Per eth_call through Hearth's executor (`ExecutorActor::call`, the code an executor
//!    thread runs for every eth_call, minus the RPC and the actor mailbox), with the
//!    per-thread EVM scratch off (every call allocates its EVM stacks and memory afresh, as
//!    before the scratch existed) and on (`SCRATCH_RETAINED_BYTES`), side by side in one run;
//!    calls/s on one thread is printed beside them. Counted on the measuring thread.
//! 2. Per request through a whole node in this process (`hearth_rpc::handle_body`, what the
//!    HTTP route runs for a body, then the actors): eth_call, eth_getBalance,
//!    eth_getTransactionReceipt, eth_getBlockByNumber, eth_sendRawTransaction with automine off
//!    (admission only) and on (admission and a 1-transfer block), and the 1-transfer block
//!    alone (evm_mine with one pending transfer). Counted over every thread (the request
//!    crosses the RPC worker, an executor thread, the mempool, the miner and the state actor),
//!    so sled's background threads add a little noise; the idle row measures it.
//!
//! ```text
//! cargo bench --bench call_allocs              # 2 s per row of part 1
//! CALL_ALLOCS_SECS=5 cargo bench --bench call_allocs
//! ```

mod bench_token;
// The counting allocator, shared with the trie bench.
#[path = "../storage/benches/counting_alloc.rs"]
mod counting_alloc;

use bench_token::runtime_code;

use std::time::{Duration, Instant};

use alloy_consensus::{Header, SignableTransaction, TxEip1559, TxEnvelope};
use alloy_eips::Encodable2718;
use alloy_primitives::{Address, B256, Bytes, TxKind, U256, address, hex, keccak256};
use alloy_signer::SignerSync;
use alloy_signer_local::PrivateKeySigner;
use hearth_actors::exec::{ExecConfig, SCRATCH_RETAINED_BYTES};
use hearth_actors::executor::ExecutorActor;
use hearth_messages::executor::{Call, CallOutcome, CallRequest};
use hearth_storage::{
    AccountChange, AccountFields, BlockDraft, ChainWriter, StateDiff, StoredBody, write_block,
};
use revm::primitives::hardfork::SpecId;

const TOKEN: Address = address!("5FbDB2315678afecb367f032d93F642f64180aa3");
const HOLDER: Address = address!("f39Fd6e51aad88F6F4ce6aB8827279cffFb92266");

/// An in-memory chain whose genesis holds BenchToken at its usual address, with HOLDER owning
/// the whole supply (slot 0: totalSupply; slot 1: the balanceOf mapping).
fn chain() -> ChainWriter {
    let db = ChainWriter::in_memory().expect("in-memory store");
    let code = runtime_code();
    let code_hash = keccak256(&code);
    let supply = U256::from(1_000_000u64) * U256::from(10u64).pow(U256::from(18u64));
    let holder_slot = keccak256(
        [B256::left_padding_from(HOLDER.as_slice()).0, B256::with_last_byte(1).0].concat(),
    );
    let mut diff = StateDiff::default();
    diff.codes.insert(code_hash, code);
    diff.accounts.insert(
        TOKEN,
        AccountChange {
            info: Some(AccountFields { nonce: 1, balance: U256::ZERO, code_hash }),
            storage_wiped: false,
            storage: [(U256::ZERO, supply), (U256::from_be_bytes(holder_slot.0), supply)].into(),
        },
    );
    let header = Header {
        number: 0,
        gas_limit: 30_000_000,
        base_fee_per_gas: Some(1_000_000_000),
        ..Default::default()
    };
    let body = StoredBody { transactions: vec![], senders: vec![] };
    write_block(&db, BlockDraft { header, body, receipts: vec![], touched: Vec::new() }, &diff)
        .expect("genesis");
    db
}

fn request(calldata: &str) -> CallRequest {
    CallRequest {
        from: Some(HOLDER),
        to: Some(TOKEN),
        input: Bytes::from(hex::decode(calldata).expect("static hex")),
        ..Default::default()
    }
}

/// One row: allocations and bytes per call, and calls/s, over `duration` on this thread.
fn measure(
    executor: &mut ExecutorActor,
    request: &CallRequest,
    duration: Duration,
) -> (f64, f64, f64) {
    let call = || Call { request: request.clone(), block: 0 };
    // Warm the code cache, the read cache and the scratch; then measure.
    for _ in 0..50 {
        let outcome = executor.call(&call()).expect("call runs");
        assert!(matches!(outcome, CallOutcome::Success { .. }), "call failed: {outcome:?}");
    }
    let (allocs0, bytes0) = counting_alloc::allocated();
    let start = Instant::now();
    let mut calls = 0u64;
    while start.elapsed() < duration {
        std::hint::black_box(executor.call(&call()).expect("call runs"));
        calls += 1;
    }
    let elapsed = start.elapsed().as_secs_f64();
    let (allocs1, bytes1) = counting_alloc::allocated();
    let n = calls as f64;
    ((allocs1 - allocs0) as f64 / n, (bytes1 - bytes0) as f64 / n, n / elapsed)
}

fn main() {
    // `cargo test` / `cargo bench --no-run` build this; only a real bench run measures.
    if std::env::args().any(|a| a == "--test" || a == "--list") {
        return;
    }
    let secs: f64 =
        std::env::var("CALL_ALLOCS_SECS").ok().and_then(|s| s.parse().ok()).unwrap_or(2.0);
    let duration = Duration::from_secs_f64(secs);
    let db = chain();
    let config = ExecConfig {
        chain_id: hearth_messages::ChainId::new(31337),
        spec: SpecId::PRAGUE,
        gas_cap: 50_000_000,
        evm_timeout: Some(Duration::from_secs(5)),
        blob_params: None,
        code_size_limit: None,
        parallel: hearth_actors::ParallelConfig::default(),
        show: hearth_actors::Show::default(),
    };
    let workloads = [
        ("balanceOf", "70a08231000000000000000000000000f39fd6e51aad88f6f4ce6ab8827279cfffb92266"),
        (
            "transfer (eth_call)",
            "a9059cbb00000000000000000000000070997970c51812dc3a010c7d01b50e0d17dc79c80000000000000000000000000000000000000000000000000000000000000001",
        ),
        (
            "mathLoop(2000)",
            "2a24c92a00000000000000000000000000000000000000000000000000000000000007d0",
        ),
        (
            "hashLoop(2000)",
            "6715131900000000000000000000000000000000000000000000000000000000000007d0",
        ),
    ];
    println!(
        "eth_call through ExecutorActor::call, one thread, {secs} s per row; scratch retention \
         {} KiB per thread",
        SCRATCH_RETAINED_BYTES / 1024
    );
    println!();
    println!("| call | scratch | allocations/call | KiB allocated/call | calls/s |");
    println!("|---|---|---:|---:|---:|");
    for (name, calldata) in workloads {
        let request = request(calldata);
        for (label, retain) in [("off (fresh EVM)", 0), ("on", SCRATCH_RETAINED_BYTES)] {
            eprintln!("measuring {name}, scratch {label} ...");
            let mut executor = ExecutorActor::new(db.reader(), config.clone(), None);
            executor.set_scratch_retention(retain);
            let (allocs, bytes, rate) = measure(&mut executor, &request, duration);
            println!("| {name} | {label} | {allocs:.1} | {:.1} | {rate:.0} |", bytes / 1024.0);
        }
    }
    println!();
    whole_node();
}

/// Runs `body` `n` times through the node's RPC entry and returns allocations and KiB per
/// request over every thread. The answer is checked to be a result, not an error.
async fn per_request(ctx: &hearth_rpc::RpcContext, body: &str, n: u64) -> (f64, f64) {
    let run = || async {
        let reply = hearth_rpc::handle_body(ctx, body.as_bytes()).await;
        let body = reply.body.expect("an answer");
        assert!(
            !body.windows(8).any(|w| w == b"\"error\":"),
            "request failed: {}",
            String::from_utf8_lossy(&body)
        );
    };
    for _ in 0..20 {
        run().await;
    }
    let (a0, b0) = counting_alloc::allocated_everywhere();
    for _ in 0..n {
        run().await;
    }
    let (a1, b1) = counting_alloc::allocated_everywhere();
    ((a1 - a0) as f64 / n as f64, (b1 - b0) as f64 / n as f64 / 1024.0)
}

fn rpc(method: &str, params: &str) -> String {
    format!(r#"{{"jsonrpc":"2.0","id":1,"method":"{method}","params":{params}}}"#)
}

/// A signed transfer of 1 wei from `signer` with `nonce`, as eth_sendRawTransaction's body.
fn raw_transfer(signer: &PrivateKeySigner, nonce: u64) -> String {
    let tx = TxEip1559 {
        chain_id: 31337,
        nonce,
        gas_limit: 21_000,
        max_fee_per_gas: 10_000_000_000,
        max_priority_fee_per_gas: 1_000_000_000,
        to: TxKind::Call(address!("70997970C51812dc3A010C7d01b50e0d17dc79C8")),
        value: U256::from(1),
        access_list: Default::default(),
        input: Bytes::new(),
    };
    let signature = signer.sign_hash_sync(&tx.signature_hash()).expect("signs");
    let envelope: TxEnvelope = tx.into_signed(signature).into();
    let raw = hex::encode_prefixed(envelope.encoded_2718());
    rpc("eth_sendRawTransaction", &format!(r#"["{raw}"]"#))
}

/// Part 2: a whole node (default flags but in memory, two executor threads).
fn whole_node() {
    let n: u64 =
        std::env::var("CALL_ALLOCS_REQUESTS").ok().and_then(|s| s.parse().ok()).unwrap_or(2000);
    let system = actix_rt::System::new();
    system.block_on(async move {
        let node = hearth::node::Node::start_with_clock(
            hearth::config::NodeConfig::for_tests(),
            std::sync::Arc::new(|| 1_700_000_000),
        )
        .expect("node starts");
        let ctx = node.rpc_context(hearth_rpc::Extensions::default());
        // BenchToken at TOKEN with HOLDER's balance, through the dev methods.
        let code = hex::encode_prefixed(runtime_code());
        let token = format!("{TOKEN:?}");
        let ok = |body: String| {
            let ctx = &ctx;
            async move { per_request(ctx, &body, 1).await }
        };
        ok(rpc("anvil_setCode", &format!(r#"["{token}","{code}"]"#))).await;
        let holder_slot = keccak256(
            [B256::left_padding_from(HOLDER.as_slice()).0, B256::with_last_byte(1).0].concat(),
        );
        ok(rpc(
            "anvil_setStorageAt",
            &format!(r#"["{token}","{holder_slot}","0x{:064x}"]"#, 1_000_000u64),
        ))
        .await;
        let signer = node.signers[0].clone();
        let mut nonce = 0u64;
        // One mined transfer, for the receipt and block rows.
        let body = raw_transfer(&signer, nonce);
        nonce += 1;
        let reply = hearth_rpc::handle_body(&ctx, body.as_bytes()).await;
        let answer: serde_json::Value =
            serde_json::from_slice(&reply.body.expect("an answer")).expect("JSON");
        let hash = answer["result"].as_str().expect("a transaction hash").to_owned();

        println!(
            "whole node in this process (hearth_rpc::handle_body), {n} requests per row, \
             allocations over every thread"
        );
        println!();
        println!("| request | allocations/request | KiB allocated/request |");
        println!("|---|---:|---:|");
        let calldata = "70a08231000000000000000000000000f39fd6e51aad88f6f4ce6ab8827279cfffb92266";
        let rows = [
            ("eth_call balanceOf", rpc("eth_call", &format!(r#"[{{"to":"{token}","data":"0x{calldata}"}},"latest"]"#))),
            ("eth_getBalance", rpc("eth_getBalance", &format!(r#"["{:?}","latest"]"#, HOLDER))),
            ("eth_getTransactionReceipt", rpc("eth_getTransactionReceipt", &format!(r#"["{hash}"]"#))),
            ("eth_getBlockByNumber (1 tx, hashes)", rpc("eth_getBlockByNumber", r#"["latest",false]"#)),
            ("eth_getBlockByNumber (1 tx, full)", rpc("eth_getBlockByNumber", r#"["latest",true]"#)),
            ("eth_blockNumber", rpc("eth_blockNumber", "[]")),
        ];
        for (name, body) in rows {
            eprintln!("measuring {name} ...");
            let (allocs, kib) = per_request(&ctx, &body, n).await;
            println!("| {name} | {allocs:.1} | {kib:.1} |");
        }

        // eth_sendRawTransaction, automine on: admission, a 1-transfer block, its commit.
        eprintln!("measuring eth_sendRawTransaction (automine) ...");
        let blocks = (n / 4).max(20);
        let mined = measure_each(&ctx, blocks, |_| {
            let body = raw_transfer(&signer, nonce);
            nonce += 1;
            body
        })
        .await;
        // Automine off: admission only (the pool takes them all; mined afterwards).
        ok(rpc("evm_setAutomine", "[false]")).await;
        eprintln!("measuring eth_sendRawTransaction (automine off) ...");
        let pooled = measure_each(&ctx, blocks, |_| {
            let body = raw_transfer(&signer, nonce);
            nonce += 1;
            body
        })
        .await;
        ok(rpc("evm_mine", "[]")).await;
        // The block alone: one pending transfer (sent uncounted), then evm_mine counted.
        eprintln!("measuring evm_mine with one pending transfer ...");
        let mut total = (0u64, 0u64);
        for i in 0..blocks + 20 {
            let body = raw_transfer(&signer, nonce);
            nonce += 1;
            hearth_rpc::handle_body(&ctx, body.as_bytes()).await;
            let (a0, b0) = counting_alloc::allocated_everywhere();
            let reply = hearth_rpc::handle_body(&ctx, rpc("evm_mine", "[]").as_bytes()).await;
            let (a1, b1) = counting_alloc::allocated_everywhere();
            assert_eq!(reply.status, 200);
            if i >= 20 {
                total.0 += a1 - a0;
                total.1 += b1 - b0;
            }
        }
        let block = (total.0 as f64 / blocks as f64, total.1 as f64 / blocks as f64 / 1024.0);
        println!("| eth_sendRawTransaction, automine off (admission) | {:.1} | {:.1} |", pooled.0, pooled.1);
        println!("| eth_sendRawTransaction, automine on (admission + 1-transfer block) | {:.1} | {:.1} |", mined.0, mined.1);
        println!("| evm_mine, 1 pending transfer (the 1-transfer block) | {:.1} | {:.1} |", block.0, block.1);
        // What the idle node allocates meanwhile (timers, sled's threads), for scale.
        let (a0, b0) = counting_alloc::allocated_everywhere();
        tokio::time::sleep(Duration::from_millis(500)).await;
        let (a1, b1) = counting_alloc::allocated_everywhere();
        println!("| (idle node, 500 ms) | {} | {:.1} |", a1 - a0, (b1 - b0) as f64 / 1024.0);
        drop(node);
        actix::System::current().stop();
    });
}

/// Runs the bodies `make` gives `count` times after 20 warm-up ones, counting each request's
/// allocations over every thread; signing happens outside the count.
async fn measure_each(
    ctx: &hearth_rpc::RpcContext,
    count: u64,
    mut make: impl FnMut(u64) -> String,
) -> (f64, f64) {
    let mut total = (0u64, 0u64);
    for i in 0..count + 20 {
        let body = make(i);
        let (a0, b0) = counting_alloc::allocated_everywhere();
        let reply = hearth_rpc::handle_body(ctx, body.as_bytes()).await;
        let (a1, b1) = counting_alloc::allocated_everywhere();
        let text = reply.body.expect("an answer");
        assert!(
            !text.windows(8).any(|w| w == b"\"error\":"),
            "request failed: {}",
            String::from_utf8_lossy(&text)
        );
        if i >= 20 {
            total.0 += a1 - a0;
            total.1 += b1 - b0;
        }
    }
    (total.0 as f64 / count as f64, total.1 as f64 / count as f64 / 1024.0)
}
