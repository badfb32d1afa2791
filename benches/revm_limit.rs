//! The ceiling for eth_call throughput on this machine: bare revm running BenchToken calls
//! with no RPC, no actors and an in-memory database, one reused `Evm` per thread (as Hearth's
//! executors do). Prints calls/s for 1..=N threads beside a spin-loop baseline measured in the
//! same run, so the parallel speed-up is read against what the machine gives two busy threads.
//!
//! ```text
//! cargo bench --bench revm_limit                 # hashLoop(2000), 5 s per row
//! REVM_LIMIT_SECS=2 REVM_LIMIT_CALL=balanceOf cargo bench --bench revm_limit
//! ```

mod bench_token;

use bench_token::runtime_code;

use std::time::{Duration, Instant};

use alloy_primitives::{Address, Bytes, TxKind, U256, address, hex};
use revm::bytecode::Bytecode;
use revm::context::{CfgEnv, Context, TxEnv};
use revm::database::{CacheDB, EmptyDB};
use revm::primitives::hardfork::SpecId;
use revm::state::AccountInfo;
use revm::{ExecuteEvm, InspectEvm, MainBuilder, MainContext};

const TOKEN: Address = address!("5FbDB2315678afecb367f032d93F642f64180aa3");

fn calldata(name: &str) -> Bytes {
    let hex_str = match name {
        "balanceOf" => "70a08231000000000000000000000000f39fd6e51aad88f6f4ce6ab8827279cfffb92266",
        "mathLoop" => "2a24c92a00000000000000000000000000000000000000000000000000000000000007d0",
        _ => "6715131900000000000000000000000000000000000000000000000000000000000007d0",
    };
    Bytes::from(hex::decode(hex_str).expect("static hex"))
}

/// A time cap kept by an inspector, a clock check every 4,096 instructions: what eth_call ran
/// under until session 21 (now capped instructions, `actors/src/exec/time_cap.rs`). Its column,
/// "inspecting loop", is the cost of revm's inspecting loop, which traces still pay.
struct Deadline {
    at: Instant,
    steps: u32,
}

impl<CTX> revm::Inspector<CTX> for Deadline {
    fn step(&mut self, interp: &mut revm::interpreter::Interpreter, _context: &mut CTX) {
        self.steps = self.steps.wrapping_add(1);
        if self.steps.is_multiple_of(4096) && Instant::now() >= self.at {
            interp.halt(revm::interpreter::InstructionResult::OutOfGas);
        }
    }
}

/// Calls per second on one thread for `duration`, with or without the deadline inspector.
fn revm_thread(code: Bytes, input: Bytes, duration: Duration, inspect: bool) -> f64 {
    let mut db = CacheDB::new(EmptyDB::default());
    let bytecode = Bytecode::new_raw(code);
    db.insert_account_info(
        TOKEN,
        AccountInfo { code_hash: bytecode.hash_slow(), code: Some(bytecode), ..Default::default() },
    );
    // Prague, as the node runs (Osaka would cap a transaction's gas at 2^24).
    let mut cfg = CfgEnv::new_with_spec(SpecId::PRAGUE);
    cfg.disable_nonce_check = true;
    cfg.disable_base_fee = true;
    let deadline = Deadline { at: Instant::now() + Duration::from_secs(3600), steps: 0 };
    let mut evm =
        Context::mainnet().with_db(db).with_cfg(cfg).build_mainnet_with_inspector(deadline);
    let tx = TxEnv {
        caller: Address::ZERO,
        kind: TxKind::Call(TOKEN),
        data: input,
        gas_limit: 50_000_000,
        value: U256::ZERO,
        ..Default::default()
    };
    let start = Instant::now();
    let mut calls = 0u64;
    while start.elapsed() < duration {
        let result = if inspect {
            evm.inspect_tx(tx.clone()).expect("call runs")
        } else {
            evm.transact(tx.clone()).expect("call runs")
        };
        assert!(result.result.is_success());
        calls += 1;
    }
    calls as f64 / start.elapsed().as_secs_f64()
}

/// Iterations per second of a pure integer loop on one thread: what a core gives.
fn spin_thread(duration: Duration) -> f64 {
    let start = Instant::now();
    let mut x = 0x9e37_79b9_7f4a_7c15u64;
    let mut rounds = 0u64;
    while start.elapsed() < duration {
        for _ in 0..100_000 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
        }
        rounds += 1;
    }
    std::hint::black_box(x);
    rounds as f64 / start.elapsed().as_secs_f64()
}

fn parallel<F: Fn() -> f64 + Send + Sync + Clone + 'static>(threads: usize, f: F) -> f64 {
    let handles: Vec<_> = (0..threads).map(|_| std::thread::spawn(f.clone())).collect();
    handles.into_iter().map(|h| h.join().expect("bench thread")).sum()
}

fn main() {
    // `cargo test` / `cargo bench --no-run` build this; only a real bench run measures.
    if std::env::args().any(|a| a == "--test" || a == "--list") {
        return;
    }
    let secs: f64 =
        std::env::var("REVM_LIMIT_SECS").ok().and_then(|s| s.parse().ok()).unwrap_or(5.0);
    let call = std::env::var("REVM_LIMIT_CALL").unwrap_or_else(|_| "hashLoop".into());
    let duration = Duration::from_secs_f64(secs);
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let code = runtime_code();
    let input = calldata(&call);
    println!("bare revm, BenchToken {call}, {secs} s per row, {cores} cores");
    println!();
    println!(
        "| threads | calls/s | per thread | speed-up | spin-loop speed-up | inspecting loop |"
    );
    println!("|---:|---:|---:|---:|---:|---:|");
    let mut base = (0.0, 0.0);
    for threads in 1..=cores {
        eprintln!("measuring {threads} thread(s) ...");
        let (c, i) = (code.clone(), input.clone());
        let rate = parallel(threads, move || revm_thread(c.clone(), i.clone(), duration, false));
        let (c, i) = (code.clone(), input.clone());
        let inspected =
            parallel(threads, move || revm_thread(c.clone(), i.clone(), duration, true));
        let spin = parallel(threads, move || spin_thread(duration));
        if threads == 1 {
            base = (rate, spin);
        }
        println!(
            "| {threads} | {rate:.0} | {:.0} | {:.2}x | {:.2}x | {inspected:.0} ({:.0}%) |",
            rate / threads as f64,
            rate / base.0,
            spin / base.1,
            100.0 * inspected / rate
        );
    }
}
