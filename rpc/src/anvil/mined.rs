//! evm_mine_detailed / anvil_mine_detailed: `[timestamp | {timestamp, blocks}]?`, mines like
//! evm_mine and answers the blocks it mined, with full transactions, each carrying what it
//! returned (`output`, hex; absent when it halted) and, when it failed with decodable revert
//! data, `revertReason` in the words anvil (foundry's revert decoder) uses.

use alloy_primitives::{Bytes, U256};
use hearth_messages::miner::{MineDetailed, MinedBlock};
use serde_json::Value;

use crate::anvil::dev::{block_count, timestamp_within};
use crate::core::RpcContext;
use crate::core::RpcError;
use crate::core::{MineOptions, Params};
use crate::core::{rpc_block, to_json};

/// Most blocks one detailed call mines: they are all in its one answer (an empty block is
/// about 1.3 KB of JSON, so this stays well within the default 25 MiB response cap).
pub(crate) const MAX_DETAILED_BLOCKS: u64 = 10_000;

/// evm_mine_detailed / anvil_mine_detailed.
pub(crate) async fn mine_detailed(ctx: &RpcContext, params: &Params) -> Result<Value, RpcError> {
    params.at_most(1)?;
    let options: MineOptions = params.optional(0)?.unwrap_or_default();
    let count = block_count(ctx, options.blocks.unwrap_or(1), "blocks")?;
    if count > MAX_DETAILED_BLOCKS {
        return Err(RpcError::InvalidParams(format!(
            "invalid argument 0: blocks {count} is over the limit of {MAX_DETAILED_BLOCKS} \
             blocks a detailed answer holds; use evm_mine for more"
        )));
    }
    if let Some(timestamp) = options.timestamp {
        timestamp_within(timestamp)?;
    }
    let mined =
        ctx.miner.mine_detailed(MineDetailed { count, timestamp: options.timestamp }).await??;
    mined.iter().map(detailed).collect::<Result<Vec<_>, _>>().map(Value::Array)
}

/// One mined block as anvil details it.
fn detailed(mined: &MinedBlock) -> Result<Value, RpcError> {
    let block = &mined.block;
    let mut value = to_json(&rpc_block(block, true))?;
    let Some(txs) = value.get_mut("transactions").and_then(Value::as_array_mut) else {
        return Ok(value);
    };
    for (i, tx) in txs.iter_mut().enumerate() {
        let (Some(object), Some(Some(output))) = (tx.as_object_mut(), mined.outputs.get(i)) else {
            continue;
        };
        let failed = block.receipts.get(i).is_some_and(|r| !r.status());
        if failed && let Some(reason) = revert_reason(output) {
            object.insert("revertReason".into(), Value::String(reason));
        }
        object.insert("output".into(), Value::String(Bytes::clone(output).to_string()));
    }
    Ok(value)
}

/// `Error(string)`.
const ERROR_SELECTOR: [u8; 4] = [0x08, 0xc3, 0x79, 0xa0];
/// `Panic(uint256)`.
const PANIC_SELECTOR: [u8; 4] = [0x4e, 0x48, 0x7b, 0x71];

/// A failed transaction's revert data in the words of foundry's revert decoder (which anvil
/// uses here): an `Error(string)`'s reason; a `Panic(uint256)` as `panic: <kind> (0x<code>)`;
/// an ABI string or ASCII text as itself; other data with a selector as `custom error
/// 0x<selector>[: <data>]`; anything shorter as `custom error bytes 0x<data>`; nothing for
/// empty data.
pub(crate) fn revert_reason(data: &[u8]) -> Option<String> {
    if let Some((selector, args)) = data.split_first_chunk::<4>() {
        if *selector == ERROR_SELECTOR
            && let Some(reason) = abi_string(args)
        {
            return Some(reason);
        }
        if *selector == PANIC_SELECTOR && args.len() == 32 {
            return Some(panic_words(U256::from_be_slice(args)));
        }
    }
    let as_text = text(data);
    match data.split_first_chunk::<4>() {
        Some(_) if as_text.is_some() => as_text,
        Some((selector, args)) => {
            let mut out = format!("custom error 0x{}", alloy_primitives::hex::encode(selector));
            if !args.is_empty() {
                out.push_str(": ");
                match std::str::from_utf8(args) {
                    Ok(utf8) => out.push_str(utf8),
                    Err(_) => out.push_str(&alloy_primitives::hex::encode(args)),
                }
            }
            Some(out)
        }
        None if as_text.is_some() => as_text,
        None if data.is_empty() => None,
        None => Some(format!("custom error bytes 0x{}", alloy_primitives::hex::encode(data))),
    }
}

/// `data` as a non-empty ABI-encoded string, else as non-empty ASCII text.
fn text(data: &[u8]) -> Option<String> {
    if let Some(s) = abi_string(data).filter(|s| !s.is_empty()) {
        return Some(s);
    }
    (!data.is_empty() && data.is_ascii()).then(|| String::from_utf8_lossy(data).into_owned())
}

/// One ABI-encoded `string`: an offset word, then at that offset a length word and the UTF-8
/// bytes.
fn abi_string(args: &[u8]) -> Option<String> {
    let word = |at: usize| -> Option<usize> {
        let bytes = args.get(at..at.checked_add(32)?)?;
        usize::try_from(U256::from_be_slice(bytes)).ok()
    };
    let offset = word(0)?;
    let length = word(offset)?;
    let start = offset.checked_add(32)?;
    let bytes = args.get(start..start.checked_add(length)?)?;
    String::from_utf8(bytes.to_vec()).ok()
}

/// A Solidity panic code as foundry words it: `panic: arithmetic underflow or overflow (0x11)`.
fn panic_words(code: U256) -> String {
    let kind = match u64::try_from(code) {
        Ok(0x00) => Some("generic/unspecified error"),
        Ok(0x01) => Some("assertion failed"),
        Ok(0x11) => Some("arithmetic underflow or overflow"),
        Ok(0x12) => Some("division or modulo by zero"),
        Ok(0x21) => Some("failed to convert value into enum type"),
        Ok(0x22) => Some("storage byte array incorrectly encoded"),
        Ok(0x31) => Some("called `.pop()` on an empty array"),
        Ok(0x32) => Some("array out-of-bounds access"),
        Ok(0x41) => Some("memory allocation error"),
        Ok(0x51) => Some("called an invalid internal function"),
        _ => None,
    };
    match kind {
        Some(kind) => format!("panic: {kind} (0x{:02x})", code.to::<u64>()),
        None => format!("panic: unknown code (0x{code:x})"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn error_string(reason: &str) -> Vec<u8> {
        let mut out = ERROR_SELECTOR.to_vec();
        out.extend_from_slice(&U256::from(32).to_be_bytes::<32>());
        out.extend_from_slice(&U256::from(reason.len()).to_be_bytes::<32>());
        let mut padded = reason.as_bytes().to_vec();
        padded.resize(reason.len().div_ceil(32) * 32, 0);
        out.extend_from_slice(&padded);
        out
    }

    #[test]
    fn reasons_read_as_foundry_words_them() {
        let reason = "BenchToken: always reverts";
        assert_eq!(revert_reason(&error_string(reason)).as_deref(), Some(reason));
        let mut panic = PANIC_SELECTOR.to_vec();
        panic.extend_from_slice(&U256::from(0x11).to_be_bytes::<32>());
        assert_eq!(
            revert_reason(&panic).as_deref(),
            Some("panic: arithmetic underflow or overflow (0x11)")
        );
        let mut odd = PANIC_SELECTOR.to_vec();
        odd.extend_from_slice(&U256::from(0x99).to_be_bytes::<32>());
        assert_eq!(revert_reason(&odd).as_deref(), Some("panic: unknown code (0x99)"));
        // Insufficient(uint256,uint256) with a value that is not ASCII.
        let mut custom = vec![0xf8, 0x9e, 0xcf, 0x4c];
        custom.extend_from_slice(&U256::MAX.to_be_bytes::<32>());
        let words = revert_reason(&custom).expect("decoded");
        assert_eq!(words, format!("custom error 0xf89ecf4c: {}", "ff".repeat(32)));
        assert_eq!(revert_reason(b"plain text").as_deref(), Some("plain text"));
        assert_eq!(revert_reason(&[]), None);
        assert_eq!(revert_reason(&[0xde, 0xad]).as_deref(), Some("custom error bytes 0xdead"));
        assert_eq!(
            revert_reason(&[0xde, 0xad, 0xbe, 0xef]).as_deref(),
            Some("custom error 0xdeadbeef")
        );
    }

    #[test]
    fn malformed_strings_do_not_panic() {
        let mut huge_offset = ERROR_SELECTOR.to_vec();
        huge_offset.extend_from_slice(&[0xff; 32]);
        assert!(revert_reason(&huge_offset).is_some());
        let mut truncated = error_string("a long reason that is cut");
        truncated.truncate(50);
        assert!(revert_reason(&truncated).is_some());
    }
}
