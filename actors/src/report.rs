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
use revm::context::result::HaltReason;
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

/// Prints what a call (`method`) sent to the console, if anything.
pub(crate) fn call_printed(show: &Show, method: &'static str, printed: crate::console::Captured) {
    if !printed.is_empty() {
        console(show, ConsoleSource::Call { method }, printed.decode());
    }
}

/// What a block's transactions did besides their receipts.
#[derive(Debug, Clone, Copy)]
pub struct Ran<'a> {
    /// What each returned, in block order: revert data for a reverted one, `None` for a halted
    /// one.
    pub outputs: &'a [Option<Bytes>],
    /// Why the halted ones halted, by position.
    pub halts: &'a [(usize, HaltReason)],
}

/// Prints a committed block's transactions, each after its console lines (`console`: the
/// lines of those that printed, by position).
pub fn block_mined(
    show: &Show,
    block: &SealedBlock,
    ran: Ran<'_>,
    console: Vec<(usize, ConsoleLines)>,
) {
    if !tracing::enabled!(target: "tx", tracing::Level::INFO) && console.is_empty() {
        return;
    }
    let mut console = console.into_iter().peekable();
    let time = block_time(block.header.timestamp);
    let mut cumulative = 0;
    let txs = block.body.transactions.iter().zip(&block.receipts).enumerate();
    for (position, (tx, receipt)) in txs {
        let hash = *tx.tx_hash();
        if let Some((_, lines)) = console.next_if(|(at, _)| *at == position) {
            self::console(show, ConsoleSource::Tx { hash, block: block.number() }, lines);
        }
        let gas_used = receipt.cumulative_gas_used() - cumulative;
        cumulative = receipt.cumulative_gas_used();
        let sender = block.body.senders.get(position).copied().unwrap_or_default();
        // The address a creation was for, whether or not it succeeded (anvil prints it either
        // way, as geth's receipt carries it).
        let created = tx.kind().is_create().then(|| sender.create(tx.nonce()));
        let line = TxLine {
            hash,
            created,
            gas_used,
            block: block.number(),
            block_hash: block.hash,
            time: &time,
        };
        if receipt.status() {
            line.mined();
            continue;
        }
        let reason = match ran.outputs.get(position).cloned().flatten() {
            Some(data) if !data.is_empty() => revert_reason(&data, &show.artifacts.errors),
            // anvil's words for a halt, or a revert without data: the EVM's status.
            _ => match ran.halts.iter().find(|(at, _)| *at == position) {
                Some((_, reason)) => halt_reason(reason),
                None => "EvmError: Revert".to_owned(),
            },
        };
        line.reverted(&reason);
    }
}

/// One transaction's line.
struct TxLine<'a> {
    hash: B256,
    created: Option<Address>,
    gas_used: u64,
    block: u64,
    block_hash: B256,
    time: &'a str,
}

impl TxLine<'_> {
    fn mined(&self) {
        let Self { hash, created, gas_used, block, block_hash, time } = self;
        match created {
            Some(contract) => info!(target: "tx", %hash, %contract, gas_used, block,
                %block_hash, block_time = time, "transaction mined"),
            None => info!(target: "tx", %hash, gas_used, block, %block_hash,
                block_time = time, "transaction mined"),
        }
    }

    fn reverted(&self, error: &str) {
        let Self { hash, created, gas_used, block, block_hash, time } = self;
        match created {
            Some(contract) => info!(target: "tx", %hash, %contract, gas_used, block,
                %block_hash, block_time = time, error, "transaction reverted"),
            None => info!(target: "tx", %hash, gas_used, block, %block_hash,
                block_time = time, error, "transaction reverted"),
        }
    }
}

/// anvil's words for a halt: the EVM's status, as revm's interpreter names it.
pub fn halt_reason(reason: &HaltReason) -> String {
    use revm::context::result::OutOfGasError;
    let status = match reason {
        HaltReason::OutOfGas(OutOfGasError::Basic) => "OutOfGas".to_owned(),
        HaltReason::OutOfGas(OutOfGasError::Memory) => "MemoryOOG".to_owned(),
        HaltReason::OutOfGas(OutOfGasError::MemoryLimit) => "MemoryLimitOOG".to_owned(),
        HaltReason::OutOfGas(OutOfGasError::Precompile) => "PrecompileOOG".to_owned(),
        HaltReason::OutOfGas(OutOfGasError::InvalidOperand) => "InvalidOperandOOG".to_owned(),
        HaltReason::OutOfGas(OutOfGasError::ReentrancySentry) => "ReentrancySentryOOG".to_owned(),
        HaltReason::PrecompileErrorWithContext(_) => "PrecompileError".to_owned(),
        other => format!("{other:?}"),
    };
    format!("EvmError: {status}")
}

/// A block's time as anvil prints it (RFC 2822, `Sun, 6 Dec 2026 13:21:35 +0000`); seconds
/// past year 9999, which the format cannot hold.
fn block_time(timestamp: u64) -> String {
    const YEAR_10000: u64 = 253_402_300_800;
    if timestamp >= YEAR_10000 {
        return timestamp.to_string();
    }
    // httpdate writes RFC 7231's fixed form, `Sun, 06 Dec 2026 13:21:35 GMT`: the same date
    // with the day zero-padded and the zone named.
    let date =
        httpdate::fmt_http_date(std::time::UNIX_EPOCH + std::time::Duration::from_secs(timestamp));
    let date = date.strip_suffix(" GMT").unwrap_or(&date);
    match date.split_once(", 0") {
        Some((weekday, rest)) => format!("{weekday}, {rest} +0000"),
        None => format!("{date} +0000"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn halts_read_as_anvils_evm_status() {
        use revm::context::result::OutOfGasError;
        assert_eq!(halt_reason(&HaltReason::OutOfGas(OutOfGasError::Basic)), "EvmError: OutOfGas");
        assert_eq!(halt_reason(&HaltReason::InvalidFEOpcode), "EvmError: InvalidFEOpcode");
    }

    #[test]
    fn block_times_print_as_dates_until_year_9999() {
        assert_eq!(block_time(0), "Thu, 1 Jan 1970 00:00:00 +0000");
        assert_eq!(block_time(1_796_563_295), "Sun, 6 Dec 2026 13:21:35 +0000");
        assert_eq!(block_time(1_797_427_295), "Wed, 16 Dec 2026 13:21:35 +0000");
        assert_eq!(block_time(253_402_300_799), "Fri, 31 Dec 9999 23:59:59 +0000");
        assert_eq!(block_time(u64::MAX), u64::MAX.to_string());
    }
}
