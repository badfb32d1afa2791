//! Heap allocations per eth_call through Hearth's executor (`ExecutorActor::call`, the code an
//! executor thread runs for every eth_call, minus the RPC and the actor mailbox), with the
//! per-thread EVM scratch off (every call allocates its EVM stacks and memory afresh, as before
//! the scratch existed) and on (`SCRATCH_RETAINED_BYTES`), side by side in one run. A counting
//! global allocator counts calls to the allocator and bytes asked for; calls/s on one thread is
//! printed beside them.
//!
//! ```text
//! cargo bench --bench call_allocs              # 2 s per row
//! CALL_ALLOCS_SECS=5 cargo bench --bench call_allocs
//! ```

mod bench_token;
// The counting allocator, shared with the trie bench.
#[path = "../storage/benches/counting_alloc.rs"]
mod counting_alloc;

use bench_token::runtime_code;

use std::time::{Duration, Instant};

use alloy_consensus::Header;
use alloy_primitives::{Address, B256, Bytes, U256, address, hex, keccak256};
use hearth_actors::executor::{ExecConfig, ExecutorActor, SCRATCH_RETAINED_BYTES};
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
    write_block(&db, BlockDraft { header, body, receipts: vec![] }, &diff).expect("genesis");
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
        let outcome = executor.call(call()).expect("call runs");
        assert!(matches!(outcome, CallOutcome::Success { .. }), "call failed: {outcome:?}");
    }
    let (allocs0, bytes0) = counting_alloc::allocated();
    let start = Instant::now();
    let mut calls = 0u64;
    while start.elapsed() < duration {
        std::hint::black_box(executor.call(call()).expect("call runs"));
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
}
