//! `hearth-parallel-bench`: executes big blocks sequentially and in parallel on the same parent
//! state (in-memory store, no commit) and prints, per workload, the best of `--runs` times each
//! way, the re-executions, and a spin-loop baseline's speed-up on the same thread count measured
//! in the same run (one spin trial beside each block run, the best kept as for the blocks), so
//! that the efficiency (speed-up / spin speed-up) is meaningful on a shared machine. The last line per workload has the format:
//!
//! `parallel: workload=W txs=N threads=T sequential_ms=S parallel_ms=P speedup=X spin_speedup=Y efficiency=E identical=yes|no`
//!
//! Usage: `hearth-parallel-bench [--threads T] [--runs R] [--workload NAME|all]`, workloads:
//! transfers, erc20, hotspot, dependent, hashloop, mix, one-sender (3,000 transfers from one
//! account); and `senders` (not in `all`): sender
//! recovery of 10,000 signatures one after another and spread over the threads, with the
//! crossover at small counts.
//!
//! Profiling aids: `--only sequential|parallel` runs one side; `--only copies` times one
//! sequential run alone and then `T` copies at once (how much of a second core this machine
//! gives the workload); `--stale-helpers yes` has the helpers run every transaction against
//! the block's start, so that the committer only validates and commits (a profiler that runs
//! threads one at a time then sees each side's own work). `--console-log yes` has the executor
//! capture console.log output, as a node's does by default.

use std::hint::black_box;
use std::time::{Duration, Instant};

use alloy_primitives::{Address, Bytes, TxKind, U256, hex, keccak256};
use hearth::parallel_kit::{COUNTER, Kit, TOKEN, account, address_word, tx, words};
use hearth_actors::{ParallelConfig, ParallelMode};
use hearth_messages::executor::{BuildMode, PooledTx};

/// BenchToken's runtime code from the peers' artifact.
fn token_code() -> Bytes {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../shared/peers/build/BenchToken.json");
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let artifact: serde_json::Value = serde_json::from_str(&text).expect("artifact JSON");
    let code = artifact["deployedBytecode"].as_str().expect("deployedBytecode");
    Bytes::from(hex::decode(code.trim_start_matches("0x")).expect("hex bytecode"))
}

fn selector(signature: &str) -> [u8; 4] {
    let hash = keccak256(signature);
    [hash[0], hash[1], hash[2], hash[3]]
}

/// A small deterministic generator (SplitMix64).
struct Rng(u64);

impl Rng {
    fn below(&mut self, n: usize) -> usize {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        usize::try_from((z ^ (z >> 31)) % n as u64).expect("fits")
    }
}

/// Per-sender nonces.
#[derive(Default)]
struct Nonces(std::collections::HashMap<Address, u64>);

impl Nonces {
    fn next(&mut self, sender: Address) -> u64 {
        let n = self.0.entry(sender).or_default();
        *n += 1;
        *n - 1
    }
}

fn transfers(n: usize, first_sender: usize, nonces: &mut Nonces) -> Vec<PooledTx> {
    (0..n)
        .map(|i| {
            let from = account(first_sender + i);
            let to = TxKind::Call(Address::repeat_byte(0x55).create(i as u64));
            tx(from, nonces.next(from), to, U256::from(1_000u64), vec![], 21_000)
        })
        .collect()
}

fn erc20(n: usize, holders: usize, rng: &mut Rng, nonces: &mut Nonces) -> Vec<PooledTx> {
    let transfer = selector("transfer(address,uint256)");
    (0..n)
        .map(|_| {
            let from = account(rng.below(holders));
            let to = account(rng.below(holders));
            let input = words(Some(transfer), &[address_word(to), U256::from(1u8)]);
            tx(from, nonces.next(from), TxKind::Call(TOKEN), U256::ZERO, input, 80_000)
        })
        .collect()
}

fn hotspot(n: usize, first_sender: usize, nonces: &mut Nonces) -> Vec<PooledTx> {
    (0..n)
        .map(|i| {
            let from = account(first_sender + i);
            let input = words(None, &[U256::ZERO, U256::ZERO]);
            tx(from, nonces.next(from), TxKind::Call(COUNTER), U256::ZERO, input, 100_000)
        })
        .collect()
}

/// Account i sends to account i + 1, whose next transaction spends what it received: every
/// transaction reads the balance the previous one wrote.
fn dependent(n: usize, nonces: &mut Nonces) -> Vec<PooledTx> {
    (0..n)
        .map(|i| {
            let from = account(i);
            let to = TxKind::Call(account(i + 1));
            tx(from, nonces.next(from), to, U256::from(1_000u64 + i as u64), vec![], 21_000)
        })
        .collect()
}

/// One sender's nonce chain: n transfers from one account to fresh addresses (no helper can
/// run ahead of it; the parallel path must not be slower than sequential).
fn one_sender(n: usize, nonces: &mut Nonces) -> Vec<PooledTx> {
    let from = account(0);
    (0..n)
        .map(|i| {
            let to = TxKind::Call(Address::repeat_byte(0x66).create(i as u64));
            tx(from, nonces.next(from), to, U256::from(1_000u64), vec![], 21_000)
        })
        .collect()
}

fn hashloop(n: usize, first_sender: usize, nonces: &mut Nonces) -> Vec<PooledTx> {
    let hash_loop = selector("hashLoop(uint256)");
    (0..n)
        .map(|i| {
            let from = account(first_sender + i);
            let input = words(Some(hash_loop), &[U256::from(1_000u64)]);
            tx(from, nonces.next(from), TxKind::Call(TOKEN), U256::ZERO, input, 1_000_000)
        })
        .collect()
}

/// The workload's chain and block.
fn workload(name: &str) -> Option<(Kit, Vec<PooledTx>)> {
    let mut rng = Rng(42);
    let mut nonces = Nonces::default();
    let token = || Some((token_code(), 1_000));
    Some(match name {
        "transfers" => (Kit::new(10_000, None), transfers(10_000, 0, &mut nonces)),
        "erc20" => (Kit::new(1_000, token()), erc20(10_000, 1_000, &mut rng, &mut nonces)),
        "hotspot" => (Kit::new(5_000, None), hotspot(5_000, 0, &mut nonces)),
        "dependent" => (Kit::new(5_001, None), dependent(5_000, &mut nonces)),
        "hashloop" => (Kit::new(2_000, token()), hashloop(2_000, 0, &mut nonces)),
        "one-sender" => (Kit::new(1, None), one_sender(3_000, &mut nonces)),
        "mix" => {
            let kit = Kit::new(5_000, token());
            let mut parts = [
                transfers(2_500, 1_000, &mut nonces),
                erc20(2_500, 1_000, &mut rng, &mut nonces),
                hotspot(1_000, 3_500, &mut nonces),
            ]
            .map(Vec::into_iter);
            // Interleave the three kinds; each sender's nonces stay in order.
            let mut block = Vec::new();
            while block.len() < 6_000 {
                for part in &mut parts {
                    if let Some(t) = part.next() {
                        block.push(t);
                    }
                }
            }
            (kit, block)
        }
        _ => return None,
    })
}

/// The spin baseline: one thread doing the spin work once, then `threads` threads each doing
/// it at once. The speed-up is `threads` x the first over the second ([`Spin::speedup`]).
#[derive(Debug, Clone, Copy)]
struct Spin {
    one: Duration,
    all: Duration,
}

impl Spin {
    const NONE: Self = Self { one: Duration::MAX, all: Duration::MAX };

    /// One trial.
    fn measure(threads: usize) -> Self {
        fn spin() -> u64 {
            let mut x = 0x1234_5678_u64;
            for i in 0..20_000_000u64 {
                x = black_box(x.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(i));
            }
            x
        }
        let started = Instant::now();
        black_box(spin());
        let one = started.elapsed();
        let started = Instant::now();
        std::thread::scope(|s| {
            for _ in 0..threads {
                s.spawn(|| black_box(spin()));
            }
        });
        Self { one, all: started.elapsed() }
    }

    /// The best of both times so far, as the block times are the best of their runs: one
    /// noisy trial (a neighbour taking the core for a moment) then moves neither figure.
    fn best(self, other: Self) -> Self {
        Self { one: self.one.min(other.one), all: self.all.min(other.all) }
    }

    fn speedup(self, threads: usize) -> f64 {
        threads as f64 * self.one.as_secs_f64() / self.all.as_secs_f64()
    }
}

/// The machine's parallel speed-up right now: the best of `trials` spin trials.
fn spin_speedup(threads: usize, trials: usize) -> f64 {
    (0..trials).fold(Spin::NONE, |best, _| best.best(Spin::measure(threads))).speedup(threads)
}

/// `threads` copies of the workload's sequential block executed at once, against one alone:
/// the speed-up this machine gives this kind of work right now (memory, allocator and caches
/// shared), beside the spin loop's (registers only). Informative; efficiency uses the spin's.
fn work_speedup(kit: &Kit, txs: &[PooledTx], threads: usize) -> f64 {
    let (one, all) = work_times(kit, txs, threads);
    threads as f64 * one.as_secs_f64() / all.as_secs_f64()
}

/// One sequential run alone, then how long `threads` copies at once take: from when they start
/// together to when the last one's block is built. Each copy times its own `build_block`, as
/// the run alone does; the state root the kit computes after it (for the digest) is not
/// counted in either.
fn work_times(kit: &Kit, txs: &[PooledTx], threads: usize) -> (Duration, Duration) {
    let sequential = ParallelConfig::default();
    let one = kit.execute(txs, BuildMode::Pack, sequential).2;
    let start = std::sync::Barrier::new(threads);
    let all = std::thread::scope(|s| {
        let copies: Vec<_> = (0..threads)
            .map(|_| {
                s.spawn(|| {
                    start.wait();
                    kit.execute(txs, BuildMode::Pack, sequential).2
                })
            })
            .collect();
        copies.into_iter().map(|copy| copy.join().expect("a copy ran")).max()
    });
    (one, all.unwrap_or_default())
}

/// `n` EIP-1559 transfers signed by `n` distinct keys.
fn signed_transfers(n: usize) -> Vec<alloy_consensus::TxEnvelope> {
    use alloy_consensus::SignableTransaction;
    use alloy_signer::SignerSync;
    (0..n)
        .map(|i| {
            let key = alloy_primitives::B256::from(U256::from(i + 1));
            let signer = alloy_signer_local::PrivateKeySigner::from_bytes(&key).expect("key");
            let body = alloy_consensus::TxEip1559 {
                chain_id: 1,
                nonce: 0,
                gas_limit: 21_000,
                max_fee_per_gas: 2_000_000_000,
                max_priority_fee_per_gas: 1_000_000_000,
                to: TxKind::Call(Address::with_last_byte(1)),
                value: U256::from(i),
                access_list: Default::default(),
                input: Bytes::new(),
            };
            let signature = signer.sign_hash_sync(&body.signature_hash()).expect("signs");
            body.into_signed(signature).into()
        })
        .collect()
}

/// Sender recovery of 10,000 signatures (an imported block's, a pool batch's) on one thread
/// and spread by `hearth_actors::senders`, then the crossover at small counts that
/// `MIN_PARALLEL_SENDERS` is set from.
fn bench_senders(threads: usize, runs: usize) {
    use alloy_consensus::transaction::SignerRecoverable;
    use hearth_actors::senders::{recover_all, recover_spread};
    let recover = |tx: &alloy_consensus::TxEnvelope| tx.recover_signer().ok();
    let best = |f: &dyn Fn() -> Vec<Option<Address>>, repeat: usize| {
        let mut best = Duration::MAX;
        let mut out = Vec::new();
        for _ in 0..runs {
            let started = Instant::now();
            for _ in 0..repeat {
                out = black_box(f());
            }
            best = best.min(started.elapsed() / repeat as u32);
        }
        (best, out)
    };
    for n in [2usize, 4, 8, 16, 32, 64] {
        let txs = signed_transfers(n);
        let (seq, _) = best(&|| txs.iter().map(recover).collect(), 200);
        let (par, _) = best(&|| recover_spread(&txs, threads, &recover), 200);
        println!(
            "senders: n={n} sequential {:.1} us, spread {:.1} us",
            seq.as_secs_f64() * 1e6,
            par.as_secs_f64() * 1e6
        );
    }
    let txs = signed_transfers(10_000);
    let (seq, a) = best(&|| txs.iter().map(recover).collect(), 1);
    let (par, b) = best(&|| recover_all(&txs, threads, recover), 1);
    let spin = spin_speedup(threads, runs);
    let speedup = seq.as_secs_f64() / par.as_secs_f64();
    let identical = a == b && a.iter().all(Option::is_some);
    println!(
        "parallel: workload=senders txs={} threads={threads} sequential_ms={:.1} parallel_ms={:.1} speedup={speedup:.2} spin_speedup={spin:.2} efficiency={:.2} identical={}",
        txs.len(),
        ms(seq),
        ms(par),
        speedup / spin,
        if identical { "yes" } else { "no" }
    );
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1_000.0
}

fn main() {
    let mut threads = 2usize;
    let mut runs = 3usize;
    let mut which = "all".to_owned();
    // Profiling aid: run one side only (its instructions, under `perf stat`, against the other's).
    let mut only = String::new();
    let mut stale_helpers = false;
    let mut console_log = false;
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        let value = args.next().unwrap_or_default();
        match arg.as_str() {
            "--threads" => threads = value.parse().unwrap_or(0),
            "--runs" => runs = value.parse().unwrap_or(0),
            "--workload" => which = value,
            "--only" if ["sequential", "parallel", "copies"].contains(&value.as_str()) => {
                only = value;
            }
            // Profiling aid: helpers run every transaction against the block's start and the
            // committer only validates and commits, so that a profiler (which may run the
            // threads one at a time) sees the two sides' work apart.
            "--stale-helpers" if value == "yes" => stale_helpers = true,
            // The executor captures console.log output, as a node's does by default.
            "--console-log" if value == "yes" || value == "no" => console_log = value == "yes",
            other => {
                eprintln!(
                    "unknown argument {other}; use --threads T --runs R --workload NAME \
                     [--only sequential|parallel|copies] [--stale-helpers yes] \
                     [--console-log yes|no]"
                );
                std::process::exit(2);
            }
        }
    }
    let Ok(mut parallel) = ParallelConfig::new(ParallelMode::Always, threads) else {
        eprintln!("--threads must be between 1 and 64");
        std::process::exit(2);
    };
    parallel.stale_helpers = stale_helpers;
    if !(1..=100).contains(&runs) {
        eprintln!("--runs must be between 1 and 100");
        std::process::exit(2);
    }
    if which == "senders" {
        bench_senders(threads, runs);
        return;
    }
    let sequential = ParallelConfig::default();
    let names = ["transfers", "erc20", "hotspot", "dependent", "hashloop", "mix", "one-sender"];
    let selected: Vec<&str> = if which == "all" { names.to_vec() } else { vec![which.as_str()] };
    for name in selected {
        let Some((mut kit, txs)) = workload(name) else {
            eprintln!("unknown workload {name}; one of {names:?} or all");
            std::process::exit(2);
        };
        kit.console_log = console_log;
        let (mut best_seq, mut best_par) = (Duration::MAX, Duration::MAX);
        let mut identical = true;
        let mut last = hearth_actors::parallel::ParallelStats::default();
        // The set-up's and the transaction loop's shares of each side's best run.
        let (mut seq_split, mut par_split) =
            ((Duration::ZERO, Duration::ZERO), (Duration::ZERO, Duration::ZERO));
        if only == "copies" {
            // For a profiler: only the sequential copies at once, `runs` times, each after
            // one alone (its time printed too: repeated runs are not all alike).
            for _ in 0..runs {
                let (one, all) = work_times(&kit, &txs, threads);
                println!(
                    "{name}: one alone {:.1} ms, {threads} sequential copies at once {:.1} ms",
                    ms(one),
                    ms(all)
                );
            }
            continue;
        }
        // The spin trials are interleaved with the block runs, so that both see the same
        // neighbours, and each keeps its best as the block times do.
        let mut spin = Spin::NONE;
        for _ in 0..runs {
            spin = spin.best(Spin::measure(threads));
            if !only.is_empty() {
                let config = if only == "sequential" { sequential } else { parallel };
                let (stats, took) = kit.time(&txs, BuildMode::Pack, config);
                last = stats;
                best_par = best_par.min(took);
                best_seq = best_par;
                continue;
            }
            let (a, seq_stats, seq) = kit.execute(&txs, BuildMode::Pack, sequential);
            let (b, stats, par) = kit.execute(&txs, BuildMode::Pack, parallel);
            identical &= a == b;
            last = stats;
            if seq < best_seq {
                (best_seq, seq_split) = (seq, (seq_stats.setup_time, seq_stats.loop_time));
            }
            if par < best_par {
                (best_par, par_split) = (par, (stats.setup_time, stats.loop_time));
            }
        }
        let spin = spin.speedup(threads);
        if only.is_empty() {
            println!(
                "{name}: {threads} sequential copies at once: {:.2}x (spin loop {spin:.2}x)",
                work_speedup(&kit, &txs, threads)
            );
        }
        let speedup = best_seq.as_secs_f64() / best_par.as_secs_f64();
        if only.is_empty() {
            // The block's transaction loop, and the rest (set-up, roots, diff), in each side's
            // best run; then the set-up alone (a parallel block's plan, board and hints).
            let rest =
                |best: Duration, (_, looped): (Duration, Duration)| ms(best.saturating_sub(looped));
            println!(
                "{name}: loop / rest: sequential {:.1} / {:.1} ms, parallel {:.1} / {:.1} ms \
                 (of the rest, set-up: sequential {:.2} ms, parallel {:.2} ms)",
                ms(seq_split.1),
                rest(best_seq, seq_split),
                ms(par_split.1),
                rest(best_par, par_split),
                ms(seq_split.0),
                ms(par_split.0),
            );
        }
        println!(
            "{name}: txs={} sequential {:.1} ms, parallel {:.1} ms; last parallel run: {} validated \
             speculative runs, {} re-executed, {} executed in place by the committer ({} of them \
             abandoned by a helper); the committer waited {:.2} ms for helpers' runs",
            txs.len(),
            ms(best_seq),
            ms(best_par),
            last.speculated - last.reexecuted,
            last.reexecuted,
            last.direct,
            last.abandoned,
            ms(last.waited)
        );
        println!(
            "parallel: workload={name} txs={} threads={threads} sequential_ms={:.1} parallel_ms={:.1} speedup={speedup:.2} spin_speedup={spin:.2} efficiency={:.2} identical={}",
            txs.len(),
            ms(best_seq),
            ms(best_par),
            speedup / spin,
            if identical { "yes" } else { "no" }
        );
    }
}
