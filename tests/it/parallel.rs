//! Parallel block execution gives exactly the results of sequential execution: random blocks
//! (many senders, a shared contract, reverts, out of gas, CREATE/CREATE2 with colliding salts,
//! SELFDESTRUCT, transfers to the coinbase, a contract reading the coinbase's balance, nonce
//! gaps, the coinbase as a sender) executed with `--exec.parallel never` and `always` give the
//! same state root, state diff, receipts, logs, gas used, bloom and outputs.

use alloy_consensus::Transaction;
use alloy_primitives::{Address, Bytes, TxKind, U256};
use hearth::parallel_kit::{
    COINBASE, COUNTER, Digest, FACTORY, Kit, OBSERVER, PROXY, TOKEN, tx, words,
};
use hearth_actors::{ParallelConfig, ParallelMode};
use hearth_messages::executor::{BuildMode, PooledTx};
use proptest::prelude::*;

const SENDERS: usize = 12;

/// One generated transaction: (sender, kind, argument a, argument b, nonce gap).
type Op = (usize, u8, u8, bool, bool);

fn block(ops: &[Op], coinbase_sends: bool) -> Vec<PooledTx> {
    let mut nonces = [0u64; SENDERS + 1];
    ops.iter()
        .map(|&(s, kind, a, b, gap)| {
            // Index SENDERS is the coinbase itself.
            let (from, slot) = if coinbase_sends && s == 0 {
                (COINBASE, SENDERS)
            } else {
                (hearth::parallel_kit::account(s), s)
            };
            let nonce = nonces[slot] + u64::from(gap);
            if !gap {
                nonces[slot] += 1;
            }
            let small = U256::from(u64::from(a) * 1_000 + 1);
            let flag = U256::from(u8::from(b));
            let (to, value, input, gas) = match kind {
                0 => {
                    let to = hearth::parallel_kit::account(usize::from(a) % SENDERS);
                    (TxKind::Call(to), small, vec![], 21_000)
                }
                1 => (TxKind::Call(Address::repeat_byte(0x10 + a)), small, vec![], 21_000),
                2 => (TxKind::Call(COINBASE), small, vec![], 21_000),
                3 => (TxKind::Call(COUNTER), U256::ZERO, words(None, &[small, flag]), 100_000),
                // Too little gas for the counter's SSTORE: out of gas.
                4 if a % 2 == 0 => {
                    (TxKind::Call(COUNTER), U256::ZERO, words(None, &[small, flag]), 23_000)
                }
                // The counter's slots through another `to`.
                4 => (TxKind::Call(PROXY), U256::ZERO, words(None, &[small, flag]), 150_000),
                5 => (TxKind::Call(OBSERVER), U256::ZERO, vec![], 100_000),
                6 => {
                    // CREATE2 with a salt of 0..3 (repeats collide), or CREATE.
                    let salt = U256::from(a % 3);
                    let input = words(None, &[salt, U256::from(u8::from(a > 5)), flag]);
                    (TxKind::Call(FACTORY), U256::ZERO, input, 300_000)
                }
                _ => (TxKind::Create, U256::ZERO, vec![0x60, a, 0x60, 0x00, 0x55, 0x00], 100_000),
            };
            tx(from, nonce, to, value, input, gas)
        })
        .collect()
}

fn config(mode: ParallelMode, threads: usize) -> ParallelConfig {
    ParallelConfig::new(mode, threads).expect("in range")
}

fn op() -> impl Strategy<Value = Op> {
    (0..SENDERS, 0u8..8, 0u8..8, any::<bool>(), prop::bool::weighted(0.05))
}

/// Random blocks per run: 96 in CI; `HEARTH_PARALLEL_CASES` raises it for a longer search
/// (`HEARTH_PARALLEL_CASES=5000 cargo test --release --test it parallel_blocks_equal`).
fn cases() -> u32 {
    std::env::var("HEARTH_PARALLEL_CASES").ok().and_then(|v| v.parse().ok()).unwrap_or(96)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: cases(), ..ProptestConfig::default() })]

    #[test]
    fn parallel_blocks_equal_sequential_blocks(
        ops in prop::collection::vec(op(), 1..48),
        coinbase_sends in prop::bool::weighted(0.2),
        threads in 2usize..5,
        stale in any::<bool>(),
    ) {
        let kit = Kit::new(SENDERS, None);
        let txs = block(&ops, coinbase_sends);
        for mode in [BuildMode::Pack, BuildMode::Import] {
            let (sequential, _, _) = kit.execute(&txs, mode, config(ParallelMode::Never, 1));
            let mut parallel = config(ParallelMode::Always, threads);
            // Stale helpers run everything against the block's start: the most conflicts.
            parallel.stale_helpers = stale;
            let (parallel, stats, _) = kit.execute(&txs, mode, parallel);
            // A block refused (an invalid transaction on import) reports no statistics.
            let built = matches!(parallel, Digest::Built { .. });
            prop_assert!(stats.parallel || !built, "`always` took the parallel path");
            prop_assert!(stats.reexecuted <= stats.speculated);
            prop_assert_eq!(sequential, parallel);
        }
    }
}

/// Mostly plain transfers (to senders, to fresh accounts, to the coinbase), with a few calls:
/// blocks that read their accounts ahead instead of speculating.
fn plain_op() -> impl Strategy<Value = Op> {
    let kind = prop_oneof![9 => 0u8..3, 1 => 3u8..8];
    (0..SENDERS, kind, 0u8..8, any::<bool>(), prop::bool::weighted(0.05))
}

proptest! {
    #![proptest_config(ProptestConfig { cases: cases(), ..ProptestConfig::default() })]

    #[test]
    fn plain_blocks_read_ahead_and_equal_sequential_blocks(
        ops in prop::collection::vec(plain_op(), 1..96),
        coinbase_sends in prop::bool::weighted(0.2),
        threads in 2usize..5,
    ) {
        let kit = Kit::new(SENDERS, None);
        let txs = block(&ops, coinbase_sends);
        // Read ahead when the plain transfers declare 80% of the block's gas.
        let gas = |plain: bool| -> u64 {
            txs.iter()
                .filter(|tx| !plain || tx.tx.input().is_empty())
                .map(|tx| tx.tx.gas_limit())
                .sum()
        };
        let reads_ahead = gas(true) * 100 >= gas(false) * 80;
        for mode in [BuildMode::Pack, BuildMode::Import] {
            let (sequential, _, _) = kit.execute(&txs, mode, config(ParallelMode::Never, 1));
            let (parallel, stats, _) =
                kit.execute(&txs, mode, config(ParallelMode::Always, threads));
            // A block refused (an invalid transaction on import) reports no statistics.
            if matches!(parallel, Digest::Built { .. }) {
                prop_assert_eq!(stats.read_ahead, reads_ahead);
            }
            prop_assert_eq!(sequential, parallel);
        }
    }
}

fn stale(threads: usize) -> ParallelConfig {
    ParallelConfig { stale_helpers: true, ..config(ParallelMode::Always, threads) }
}

/// BenchToken-like transfers between holders (every call reads and writes two balance slots
/// of one contract) and a counter every call bumps: identical both ways, and every transaction
/// is accounted for once (validated, re-executed or executed in place). Against the block's
/// start, a transfer conflicts exactly when an earlier one wrote a slot it reads.
#[test]
fn token_transfers_and_a_hot_counter_are_identical_and_accounted_for() {
    // balance[caller] -= 1; balance[calldata[0]] += 1 (slots keyed by address).
    let token = [
        0x33, 0x80, 0x54, 0x60, 0x01, 0x90, 0x03, 0x90, 0x55, 0x60, 0x00, 0x35, 0x80, 0x54, 0x60,
        0x01, 0x01, 0x90, 0x55, 0x00,
    ];
    let kit = Kit::new(64, Some((Bytes::from(token.to_vec()), 0)));
    let holder = |i: usize| U256::from_be_slice(kit.senders[i % 64].as_slice());
    // Sender i pays holder i + 32: no transfer reads what another wrote.
    let disjoint: Vec<PooledTx> = (0..32)
        .map(|i| {
            let input = words(None, &[holder(i + 32)]);
            tx(kit.senders[i], 0, TxKind::Call(TOKEN), U256::ZERO, input, 100_000)
        })
        .collect();
    // Sender i pays holder i + 1, which sends next: every transfer reads what the previous wrote.
    let chained: Vec<PooledTx> = (0..32)
        .map(|i| {
            let input = words(None, &[holder(i + 1)]);
            tx(kit.senders[i], 0, TxKind::Call(TOKEN), U256::ZERO, input, 100_000)
        })
        .collect();
    let hot: Vec<PooledTx> = (0..64)
        .map(|i| tx(kit.senders[i], 0, TxKind::Call(COUNTER), U256::ZERO, vec![0; 64], 100_000))
        .collect();
    for (txs, conflicts) in [(&disjoint, 0), (&chained, 31), (&hot, 63)] {
        let (sequential, _, _) = kit.execute(txs, BuildMode::Pack, config(ParallelMode::Never, 1));
        for threads in [2, 3] {
            let (parallel, stats, _) =
                kit.execute(txs, BuildMode::Pack, config(ParallelMode::Always, threads));
            assert_eq!(sequential, parallel);
            assert_eq!(stats.speculated + stats.direct, txs.len(), "{stats:?}");
            assert!(stats.reexecuted <= conflicts, "{stats:?}");
            let (parallel, stats, _) = kit.execute(txs, BuildMode::Pack, stale(threads));
            assert_eq!(sequential, parallel);
            assert_eq!((stats.speculated, stats.reexecuted), (txs.len(), conflicts));
        }
    }
}

/// 80 transfers to `to`, all from the kit's first sender (nonces 0..80), carrying `input`
/// (a payload makes them calls, which a block speculates; without, plain transfers, which
/// a block reads ahead).
fn one_sender_block(kit: &Kit, to: TxKind, input: &[u8]) -> Vec<PooledTx> {
    (0..80).map(|n| tx(kit.senders[0], n, to, U256::from(1u8), input.to_vec(), 21_100)).collect()
}

/// `auto` leaves a block of calls one sender dominates sequential: its later nonces could not
/// run before its earlier ones commit. One sender's plain transfers still read ahead.
#[test]
fn auto_runs_a_one_sender_block_of_calls_sequentially() {
    let kit = Kit::new(80, None);
    let to = TxKind::Call(hearth::parallel_kit::account(79));
    let one = one_sender_block(&kit, to, &[1]);
    let many: Vec<PooledTx> =
        (0..80).map(|i| tx(kit.senders[i], 0, to, U256::from(1u8), vec![1], 21_100)).collect();
    let auto = config(ParallelMode::Auto, 2);
    assert!(!kit.execute(&one, BuildMode::Pack, auto).1.parallel);
    let stats = kit.execute(&many, BuildMode::Pack, auto).1;
    assert!(stats.parallel && !stats.read_ahead, "{stats:?}");
    let plain = one_sender_block(&kit, to, &[]);
    let (sequential, _, _) = kit.execute(&plain, BuildMode::Pack, config(ParallelMode::Never, 1));
    let (parallel, stats, _) = kit.execute(&plain, BuildMode::Pack, auto);
    assert!(stats.parallel && stats.read_ahead, "{stats:?}");
    assert_eq!((stats.speculated, stats.direct), (0, plain.len()), "{stats:?}");
    assert_eq!(sequential, parallel);
}

/// Forced parallel, a one-sender block wastes no run: the same-sender hint keeps helpers off
/// every transaction whose sender's previous one is not committed (its run would read a stale
/// nonce), and the committer executes those in place.
#[test]
fn a_forced_parallel_one_sender_block_runs_nothing_stale() {
    let kit = Kit::new(80, None);
    let to = TxKind::Call(hearth::parallel_kit::account(79));
    let one = one_sender_block(&kit, to, &[1]);
    let (sequential, _, _) = kit.execute(&one, BuildMode::Pack, config(ParallelMode::Never, 1));
    for threads in [2, 3] {
        let (parallel, stats, _) =
            kit.execute(&one, BuildMode::Pack, config(ParallelMode::Always, threads));
        assert_eq!(sequential, parallel);
        assert!(stats.parallel);
        assert_eq!(stats.reexecuted, 0, "a helper ran a nonce before its turn: {stats:?}");
        assert_eq!(stats.speculated + stats.direct, one.len(), "{stats:?}");
    }
    // Stale helpers (the test mode that runs everything) still do, and every run but the
    // first fails validation.
    let (parallel, stats, _) = kit.execute(&one, BuildMode::Pack, stale(2));
    assert_eq!(sequential, parallel);
    assert!(stats.reexecuted > 0, "{stats:?}");
}

/// The coinbase is lazy: independent transfers that all pay it fees do not conflict on it.
#[test]
fn independent_transfers_commit_without_reexecution() {
    let kit = Kit::new(200, None);
    let txs: Vec<PooledTx> = (0..100)
        .map(|i| {
            let to = TxKind::Call(hearth::parallel_kit::account(100 + i));
            // A payload: calls, which the block speculates (plain transfers read ahead).
            tx(kit.senders[i], 0, to, U256::from(5u8), vec![1], 21_100)
        })
        .collect();
    let (sequential, _, _) = kit.execute(&txs, BuildMode::Pack, config(ParallelMode::Never, 1));
    let (parallel, stats, _) = kit.execute(&txs, BuildMode::Pack, config(ParallelMode::Always, 2));
    assert_eq!(sequential, parallel);
    assert!(matches!(parallel, Digest::Built { included: 100, .. }));
    assert!(stats.parallel);
    assert_eq!(stats.reexecuted, 0, "fee credits to the coinbase made transfers conflict");
    // Even when every run is against the block's start.
    let (parallel, stats, _) = kit.execute(&txs, BuildMode::Pack, stale(2));
    assert_eq!(sequential, parallel);
    assert_eq!((stats.speculated, stats.reexecuted), (100, 0));
}

/// A transaction that reads the coinbase's balance sees every earlier fee: it is validated
/// against the exact balance, so it runs again when earlier transactions paid fees.
#[test]
fn a_coinbase_reader_sees_every_earlier_fee() {
    let kit = Kit::new(8, None);
    let mut txs: Vec<PooledTx> = (0..6)
        .map(|i| {
            // Distinct receivers: only the observer depends on an earlier transaction.
            let to = TxKind::Call(Address::repeat_byte(0x40 + i as u8));
            tx(kit.senders[i], 0, to, U256::from(1u8), vec![], 21_000)
        })
        .collect();
    txs.push(tx(kit.senders[6], 0, TxKind::Call(OBSERVER), U256::ZERO, vec![], 100_000));
    let (sequential, _, _) = kit.execute(&txs, BuildMode::Pack, config(ParallelMode::Never, 1));
    let (parallel, stats, _) = kit.execute(&txs, BuildMode::Pack, stale(3));
    assert_eq!(sequential, parallel);
    assert_eq!(stats.reexecuted, 1, "the observer was committed from a stale coinbase balance");
}

/// `auto` leaves small blocks sequential; flags out of range are refused.
#[test]
fn auto_runs_small_blocks_sequentially_and_threads_are_range_checked() {
    let kit = Kit::new(4, None);
    let txs =
        vec![tx(kit.senders[0], 0, TxKind::Call(kit.senders[1]), U256::from(1u8), vec![], 21_000)];
    let (_, stats, _) = kit.execute(&txs, BuildMode::Pack, config(ParallelMode::Auto, 2));
    assert!(!stats.parallel);
    assert!(ParallelConfig::new(ParallelMode::Auto, 0).is_err());
    assert!(ParallelConfig::new(ParallelMode::Auto, 65).is_err());
    assert_eq!("always".parse::<ParallelMode>(), Ok(ParallelMode::Always));
    assert!("sometimes".parse::<ParallelMode>().is_err());
}

/// Importing a chain of big blocks gives the head hash of the node that mined it, whether its
/// blocks run in parallel or not: each block holds a token's transfers from one sender (a
/// nonce chain) and plain transfers from nine senders to seven receivers (shared balances).
#[test]
fn an_imported_chain_of_big_blocks_reaches_the_same_head_every_way() {
    or_skip!(crate::conformance::conformance_dir());
    use crate::process::{NodeProcess, TempDir};
    use crate::support::fixtures;
    use serde_json::{Value, json};

    let dir = TempDir::new("parallel-import");
    let dev = dir.path().join("dev");
    let node = NodeProcess::start(&dev, &["--no-mining"]);
    let accounts: Value = node.ok("eth_accounts", json!([]));
    let accounts: Vec<&str> =
        accounts.as_array().unwrap().iter().map(|a| a.as_str().unwrap()).collect();
    let deploy = node.ok(
        "eth_sendTransaction",
        json!([{"from": accounts[0], "data": fixtures::bench_token_bytecode()}]),
    );
    node.ok("evm_mine", json!([]));
    let receipt = node.ok("eth_getTransactionReceipt", json!([deploy]));
    let token = receipt["contractAddress"].as_str().unwrap().to_owned();
    for _ in 0..2 {
        for i in 0..60u64 {
            let transfer = format!("0xa9059cbb{:0>64x}{:0>64x}", 0x1000 + i % 13, 1);
            node.ok(
                "eth_sendTransaction",
                json!([{"from": accounts[0], "to": token, "data": transfer}]),
            );
            let to = format!("0x{:0>40x}", 0x2000 + i % 7);
            let from = accounts[1 + usize::try_from(i).unwrap() % 9];
            node.ok("eth_sendTransaction", json!([{"from": from, "to": to, "value": "0x1"}]));
        }
        node.ok("evm_mine", json!([]));
    }
    let head: Value = node.ok("eth_getBlockByNumber", json!(["latest", false]));
    assert_eq!(head["transactions"].as_array().map(Vec::len), Some(120), "{head}");
    node.stop();

    let (genesis, blocks) = (dir.path().join("genesis.json"), dir.path().join("chain.rlp"));
    let (genesis, blocks) = (genesis.to_str().unwrap(), blocks.to_str().unwrap());
    let (ok, log) = crate::hostile::hearth(&[
        "export",
        "--datadir",
        dev.to_str().unwrap(),
        "--genesis-out",
        genesis,
        blocks,
    ]);
    assert!(ok, "{log}");
    let hash = head["hash"].as_str().unwrap();
    for mode in ["never", "always", "auto"] {
        let copy = dir.path().join(mode);
        let (ok, log) = crate::hostile::hearth(&[
            "import",
            "--genesis",
            genesis,
            "--datadir",
            copy.to_str().unwrap(),
            "--exec.parallel",
            mode,
            "--exec.threads",
            "3",
            blocks,
        ]);
        assert!(ok, "{mode}: {log}");
        assert!(log.contains(&format!("head #3 {hash}")), "{mode}: not the same head: {log}");
    }
}

/// A pool that offers more plain transfers than the block's gas limit fits (30 million gas:
/// 1,428 transfers) reads ahead only what can fit, and packs exactly what sequential packing
/// does.
#[test]
fn a_pool_bigger_than_the_block_reads_ahead_what_fits() {
    let kit = Kit { gas_limit: 30_000_000, ..Kit::new(2_000, None) };
    let txs: Vec<PooledTx> = (0..2_000)
        .map(|i| {
            let to = TxKind::Call(Address::repeat_byte(0x11).create(i as u64));
            tx(kit.senders[i], 0, to, U256::from(7u8), vec![], 21_000)
        })
        .collect();
    let (sequential, _, _) = kit.execute(&txs, BuildMode::Pack, config(ParallelMode::Never, 1));
    let (parallel, stats, _) = kit.execute(&txs, BuildMode::Pack, config(ParallelMode::Auto, 2));
    assert!(stats.parallel && stats.read_ahead, "{stats:?}");
    assert!(matches!(parallel, Digest::Built { included: 1_428, .. }));
    assert_eq!(sequential, parallel);
}
