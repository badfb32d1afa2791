//! The roots `execute_block` computes after its transaction loop, for a big block: the
//! transactions root and the receipts root, one after the other against side by side on two
//! scoped threads, in the same run (issue 12, "the rest of the block").
//!
//! `cargo bench -p hearth-storage --bench block_roots [-- --txs 3000 --runs 40]`: blocks of
//! `--txs` signed legacy transfers with receipts without logs (plain transfers) and with one
//! ERC-20 `Transfer` log each; prints the median of `--runs` runs of each way.

use std::time::{Duration, Instant};

use alloy_consensus::{
    Receipt, ReceiptEnvelope, ReceiptWithBloom, SignableTransaction, TxEnvelope, TxLegacy,
};
use alloy_primitives::{Address, B256, Bytes, Log, Signature, TxKind, U256};
use hearth_storage::{StoredBody, receipts_root, transactions_root};

fn flag(name: &str, default: usize) -> usize {
    let args: Vec<String> = std::env::args().collect();
    let flag = format!("--{name}");
    args.windows(2).find(|w| w[0] == flag).map_or(default, |w| {
        w[1].parse().unwrap_or_else(|_| {
            eprintln!("{flag}: not a number: {}", w[1]);
            std::process::exit(2)
        })
    })
}

/// A block of `txs` transfers and their receipts, each with `logs` Transfer logs.
fn block(txs: usize, logs: usize) -> (StoredBody, Vec<ReceiptEnvelope>) {
    let transactions: Vec<TxEnvelope> = (0..txs as u64)
        .map(|i| {
            let tx = TxLegacy {
                chain_id: Some(31337),
                nonce: i,
                gas_price: 1_000_000_000,
                gas_limit: 21_000,
                to: TxKind::Call(Address::left_padding_from(&(0xbeef_0000 + i).to_be_bytes())),
                value: U256::from(1),
                input: Bytes::new(),
            };
            let signature = Signature::new(U256::from(i + 1), U256::from(i + 2), i % 2 == 0);
            tx.into_signed(signature).into()
        })
        .collect();
    let receipts = (0..txs as u64)
        .map(|i| {
            let logs = (0..logs)
                .map(|_| {
                    let topics = vec![
                        B256::repeat_byte(0xdd),
                        B256::with_last_byte(1),
                        B256::with_last_byte(2),
                    ];
                    Log::new_unchecked(
                        Address::repeat_byte(7),
                        topics,
                        Bytes::from(vec![i as u8; 32]),
                    )
                })
                .collect();
            let receipt =
                Receipt { status: true.into(), cumulative_gas_used: 21_000 * (i + 1), logs };
            ReceiptEnvelope::Legacy(ReceiptWithBloom::from(receipt))
        })
        .collect();
    let senders = vec![Address::repeat_byte(1); txs];
    (StoredBody { transactions, senders }, receipts)
}

fn median(mut v: Vec<Duration>) -> f64 {
    v.sort();
    v[v.len() / 2].as_secs_f64() * 1e3
}

fn main() {
    let (txs, runs) = (flag("txs", 3000), flag("runs", 40).max(1));
    println!("block_roots: {txs} transactions, median of {runs} runs, load {}", load());
    for (label, logs) in [("transfers (no logs)", 0), ("erc20 (one log each)", 1)] {
        let (body, receipts) = block(txs, logs);
        let (mut tx_ms, mut rx_ms, mut seq, mut par) = (vec![], vec![], vec![], vec![]);
        let mut roots = None;
        for _ in 0..runs {
            let started = Instant::now();
            let a = transactions_root(&body);
            let tx_done = Instant::now();
            let b = receipts_root(&receipts);
            let done = Instant::now();
            tx_ms.push(tx_done - started);
            rx_ms.push(done - tx_done);
            seq.push(done - started);
            let started = Instant::now();
            let (c, d) = std::thread::scope(|scope| {
                let tx_root = scope.spawn(|| transactions_root(&body));
                let rx_root = receipts_root(&receipts);
                (tx_root.join().expect("no panic"), rx_root)
            });
            par.push(started.elapsed());
            assert_eq!((a, b), (c, d), "the roots differ");
            roots = Some((a, b));
        }
        let (seq, par) = (median(seq), median(par));
        println!(
            "  {label}: transactions root {:.2} ms, receipts root {:.2} ms, one after the other \
             {seq:.2} ms, side by side {par:.2} ms ({:.2}x); roots {:?}",
            median(tx_ms),
            median(rx_ms),
            seq / par,
            roots.map(|(a, b)| (a.to_string()[..10].to_owned(), b.to_string()[..10].to_owned())),
        );
    }
}

fn load() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .map_or_else(|_| "unknown".into(), |s| s.split(' ').next().unwrap_or("?").to_owned())
}
