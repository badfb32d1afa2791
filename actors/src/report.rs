//! What the node prints of what ran, for the developer watching its output: a line per mined
//! transaction (hash, contract created, gas used, block, and why it reverted) and the
//! console.log lines of transactions and calls. Everything goes through `tracing`, target
//! `tx` and `console` (so `RUST_LOG` filters them and `--log.format json` keeps them
//! machine-readable), and console output also to `hearth_console` subscribers.

pub mod artifacts;
pub mod decode;
mod revert;

use std::sync::Arc;

use alloy_consensus::Transaction;
use alloy_primitives::{Address, B256, Bytes};
use hearth_messages::console::{ConsoleLines, ConsoleSource};
use hearth_storage::SealedBlock;
use tracing::{info, warn};

pub use artifacts::Artifacts;
pub use revert::{KnownErrors, revert_reason};

use crate::exec::Show;

/// Prints console output and hands it to the subscription sink.
pub fn console(show: &Show, source: ConsoleSource, lines: ConsoleLines) {
    if lines.is_empty() {
        return;
    }
    match source {
        ConsoleSource::Tx { hash, .. } => {
            for line in &lines.lines {
                info!(target: "console", tx = %hash, "{line}");
            }
            if lines.dropped > 0 {
                warn!(target: "console", tx = %hash, dropped = lines.dropped, "console output cut: {} more console.log calls not shown", lines.dropped);
            }
        }
        ConsoleSource::Call { method } => {
            for line in &lines.lines {
                info!(target: "console", call = method, "{line}");
            }
            if lines.dropped > 0 {
                warn!(target: "console", call = method, dropped = lines.dropped, "console output cut: {} more console.log calls not shown", lines.dropped);
            }
        }
    }
    show.sink.publish(source, &Arc::new(lines));
}

/// Prints a committed block's transactions, each after its console lines: `outputs` are
/// what each returned (revert data for a reverted one, `None` for a halted one) and
/// `console` the lines of those that printed, by position.
pub fn block_mined(
    show: &Show,
    block: &SealedBlock,
    outputs: &[Option<Bytes>],
    console: Vec<(usize, ConsoleLines)>,
) {
    if !tracing::enabled!(target: "tx", tracing::Level::INFO) && console.is_empty() {
        return;
    }
    let mut console = console.into_iter().peekable();
    let time = block_time(block.header.timestamp);
    let mut cumulative = 0;
    for (position, (tx, receipt)) in block.body.transactions.iter().zip(&block.receipts).enumerate()
    {
        let hash = *tx.tx_hash();
        if let Some((_, lines)) = console.next_if(|(at, _)| *at == position) {
            self::console(show, ConsoleSource::Tx { hash, block: block.number() }, lines);
        }
        let gas_used = receipt.cumulative_gas_used() - cumulative;
        cumulative = receipt.cumulative_gas_used();
        let line =
            TxLine { hash, gas_used, block: block.number(), block_hash: block.hash, time: &time };
        let sender = block.body.senders.get(position).copied().unwrap_or_default();
        let created =
            (tx.kind().is_create() && receipt.status()).then(|| sender.create(tx.nonce()));
        if receipt.status() {
            line.mined(created);
        } else {
            let output = outputs.get(position).cloned().flatten();
            line.reverted(&match output {
                Some(data) => revert_reason(&data, &show.artifacts.errors),
                None => "halted (out of gas or an invalid instruction)".to_owned(),
            });
        }
    }
}

/// One transaction's line.
struct TxLine<'a> {
    hash: B256,
    gas_used: u64,
    block: u64,
    block_hash: B256,
    time: &'a str,
}

impl TxLine<'_> {
    fn mined(&self, created: Option<Address>) {
        let Self { hash, gas_used, block, block_hash, time } = self;
        match created {
            Some(contract) => {
                info!(target: "tx", %hash, %contract, gas_used, block, %block_hash, block_time = time, "transaction mined")
            }
            None => {
                info!(target: "tx", %hash, gas_used, block, %block_hash, block_time = time, "transaction mined")
            }
        }
    }

    fn reverted(&self, error: &str) {
        let Self { hash, gas_used, block, block_hash, time } = self;
        info!(target: "tx", %hash, gas_used, block, %block_hash, block_time = time, error, "transaction reverted");
    }
}

/// A block's time as anvil prints it (RFC 7231 date); seconds past year 9999, which no date
/// format holds.
fn block_time(timestamp: u64) -> String {
    const YEAR_10000: u64 = 253_402_300_800;
    if timestamp >= YEAR_10000 {
        return timestamp.to_string();
    }
    httpdate::fmt_http_date(std::time::UNIX_EPOCH + std::time::Duration::from_secs(timestamp))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn block_times_print_as_dates_until_year_9999() {
        assert_eq!(block_time(0), "Thu, 01 Jan 1970 00:00:00 GMT");
        assert_eq!(block_time(253_402_300_799), "Fri, 31 Dec 9999 23:59:59 GMT");
        assert_eq!(block_time(u64::MAX), u64::MAX.to_string());
    }
}
