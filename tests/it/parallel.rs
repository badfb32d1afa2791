//! Parallel block execution gives exactly the results of sequential execution: random blocks
//! (many senders, a shared contract, reverts, out of gas, CREATE/CREATE2 with colliding salts,
//! SELFDESTRUCT, transfers to the coinbase, a contract reading the coinbase's balance, nonce
//! gaps, the coinbase as a sender) executed with `--exec.parallel never` and `always` give the
//! same state root, state diff, receipts, logs, gas used, bloom and outputs.

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

proptest! {
    #![proptest_config(ProptestConfig { cases: 96, ..ProptestConfig::default() })]

    #[test]
    fn parallel_blocks_equal_sequential_blocks(
        ops in prop::collection::vec(op(), 1..48),
        coinbase_sends in prop::bool::weighted(0.2),
        threads in 2usize..5,
        hints in any::<bool>(),
    ) {
        let kit = Kit::new(SENDERS, None);
        let txs = block(&ops, coinbase_sends);
        for mode in [BuildMode::Pack, BuildMode::Import] {
            let (sequential, _, _) = kit.execute(&txs, mode, config(ParallelMode::Never, 1));
            let mut parallel = config(ParallelMode::Always, threads);
            // Without hints transactions are dealt round-robin: the most cross-worker conflicts.
            parallel.hints = hints;
            let (parallel, stats, _) = kit.execute(&txs, mode, parallel);
            prop_assert!(stats.parallel, "`always` took the parallel path");
            prop_assert_eq!(sequential, parallel);
        }
    }
}

/// Calls to one contract share a worker until a block shows they do not depend on each other
/// (the plan learns it); calls that bump one counter stay together. The contract sits at
/// TOKEN, which no other test of this binary uses (the hints are process-wide).
#[test]
fn calls_to_one_contract_are_split_once_a_block_shows_them_independent() {
    // (took the parallel path, workers) of each of `rounds` blocks of 64 calls to `code`.
    let run = |code: &[u8], mode: ParallelMode, rounds: usize| -> Vec<(bool, usize)> {
        let kit = Kit::new(64, Some((Bytes::from(code.to_vec()), 0)));
        let txs: Vec<PooledTx> = (0..64)
            .map(|i| tx(kit.senders[i], 0, TxKind::Call(TOKEN), U256::ZERO, vec![0; 64], 100_000))
            .collect();
        (0..rounds)
            .map(|_| {
                let never = config(ParallelMode::Never, 1);
                let (sequential, _, _) = kit.execute(&txs, BuildMode::Pack, never);
                let (parallel, stats, _) = kit.execute(&txs, BuildMode::Pack, config(mode, 2));
                assert_eq!(sequential, parallel);
                (stats.parallel, stats.workers)
            })
            .collect()
    };
    // sstore(0, sload(0) + 1): every call depends on the one before.
    let counter = [0x60, 0x00, 0x54, 0x60, 0x01, 0x01, 0x60, 0x00, 0x55, 0x00];
    // keccak256 of 32 bytes of memory, then stop: reads and writes nothing.
    let pure = [0x60, 0x20, 0x60, 0x00, 0x20, 0x50, 0x00];
    let always = ParallelMode::Always;
    hearth_actors::parallel::forget_to_hints();
    assert_eq!(run(&counter, always, 3), [(true, 1); 3], "a counter's calls stay on one worker");
    hearth_actors::parallel::forget_to_hints();
    assert_eq!(run(&pure, always, 2), [(true, 1), (true, 2)], "grouped once, then split");
    // `auto` runs a lopsided block in parallel only to judge a target it does not know yet.
    hearth_actors::parallel::forget_to_hints();
    let auto = ParallelMode::Auto;
    assert_eq!(run(&counter, auto, 2), [(true, 1), (false, 0)], "probed once, then sequential");
    hearth_actors::parallel::forget_to_hints();
    assert_eq!(run(&pure, auto, 2), [(true, 1), (true, 2)], "probed once, then split");
}

/// The coinbase is lazy: independent transfers that all pay it fees do not conflict on it.
#[test]
fn independent_transfers_commit_without_reexecution() {
    let kit = Kit::new(200, None);
    let txs: Vec<PooledTx> = (0..100)
        .map(|i| {
            let to = TxKind::Call(hearth::parallel_kit::account(100 + i));
            tx(kit.senders[i], 0, to, U256::from(5u8), vec![], 21_000)
        })
        .collect();
    let (sequential, _, _) = kit.execute(&txs, BuildMode::Pack, config(ParallelMode::Never, 1));
    let (parallel, stats, _) = kit.execute(&txs, BuildMode::Pack, config(ParallelMode::Always, 2));
    assert_eq!(sequential, parallel);
    assert!(matches!(parallel, Digest::Built { included: 100, .. }));
    assert!(stats.parallel);
    assert_eq!(stats.speculated, 100);
    assert_eq!(stats.reexecuted, 0, "fee credits to the coinbase made transfers conflict");
}

/// A transaction that reads the coinbase's balance sees every earlier fee: it is validated
/// against the exact balance, so it runs again when earlier transactions paid fees.
#[test]
fn a_coinbase_reader_sees_every_earlier_fee() {
    let kit = Kit::new(8, None);
    let mut txs: Vec<PooledTx> = (0..6)
        .map(|i| {
            let to = TxKind::Call(hearth::parallel_kit::account(7));
            tx(kit.senders[i], 0, to, U256::from(1u8), vec![], 21_000)
        })
        .collect();
    txs.push(tx(kit.senders[6], 0, TxKind::Call(OBSERVER), U256::ZERO, vec![], 100_000));
    let (sequential, _, _) = kit.execute(&txs, BuildMode::Pack, config(ParallelMode::Never, 1));
    let (parallel, stats, _) = kit.execute(&txs, BuildMode::Pack, config(ParallelMode::Always, 3));
    assert_eq!(sequential, parallel);
    assert!(stats.reexecuted >= 1, "the observer was committed from a stale coinbase balance");
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
