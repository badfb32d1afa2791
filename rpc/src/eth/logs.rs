//! eth_getLogs: the logs of a block range (or one block by hash) that match a filter.
//!
//! Each block's header bloom is checked first, so only blocks that may hold a match are read
//! whole. A range is inclusive, defaults to "latest" at both ends, is cut at the head, and may
//! span at most [`MAX_BLOCK_RANGE`] blocks (-32005 above). As geth: `fromBlock > toBlock` is
//! -32000 "invalid block range params", an unknown `blockHash` is -32000 "unknown block".
//! An answer holds at most `--rpc.max-logs` logs and the response cap in bytes (-32005 past
//! either, counted while the logs are encoded).

use crate::core::Params;
use crate::core::RpcError;
use crate::core::{CappedJson, Reply};
use crate::core::{RpcContext, RpcLimits};
use crate::core::{head, read_block, tag_number};
use alloy_eips::BlockNumHash;
use alloy_rpc_types_eth::{BlockNumberOrTag, Filter, FilterBlockOption};
use hearth_messages::storage::LogQuery;

/// The most blocks one eth_getLogs request scans.
pub(crate) const MAX_BLOCK_RANGE: u64 = 10_000;

/// eth_getLogs: `[filter]`.
pub(crate) fn get_logs(ctx: &RpcContext, params: &Params) -> Result<Reply, RpcError> {
    params.at_most(1)?;
    let filter: Filter = params.required(0)?;
    let Some((from, to)) = block_range(ctx, &filter.block_option)? else {
        return Ok(Reply::Encoded(b"[]".to_vec()));
    };
    encode_matching_logs(ctx, &filter, from, to)
}

/// The logs of blocks `from..=to` that match `filter`'s addresses and topics (its own block
/// range is the caller's business), with block, transaction and block-wide log indexes,
/// encoded as a JSON array while they are read: at most one block's logs are decoded at a
/// time, and the answer stops with -32005 as soon as it holds more than `--rpc.max-logs` logs
/// or more bytes than the response cap, so a cheap request over a log-heavy range costs at
/// most the cap in memory.
pub(crate) fn encode_matching_logs(
    ctx: &RpcContext,
    filter: &Filter,
    from: u64,
    to: u64,
) -> Result<Reply, RpcError> {
    encode_logs_after(ctx, &[], filter, from, to)
}

/// `first` (a filter's removed logs), then what [`encode_matching_logs`] gives, within the
/// same caps.
pub(crate) fn encode_logs_after(
    ctx: &RpcContext,
    first: &[alloy_rpc_types_eth::Log],
    filter: &Filter,
    from: u64,
    to: u64,
) -> Result<Reply, RpcError> {
    let mut out = LogWriter::new(&ctx.limits);
    for log in first {
        out.push(log)?;
    }
    if from > to {
        return out.finish();
    }
    let mut from = from;
    // A fork's blocks below its fork block are the upstream's: their logs come from one
    // upstream eth_getLogs (cached), counted against the same caps as the local ones.
    if let Some(fork) = ctx.chain.fork()
        && from < fork.block()
    {
        let upstream_to = to.min(fork.block() - 1);
        let json = fork.logs(&log_query(filter, from, upstream_to))?;
        let logs: Vec<alloy_rpc_types_eth::Log> = serde_json::from_slice(&json).map_err(|e| {
            hearth_messages::storage::StorageError::Fork(format!("undecodable logs ({e})"))
        })?;
        for log in &logs {
            out.push(log)?;
        }
        from = fork.block();
    }
    let mut block_logs = Vec::new();
    for number in from..=to {
        let Some(header) = ctx.chain.header(number)? else {
            continue;
        };
        if !filter.matches_bloom(header.logs_bloom) {
            continue;
        }
        let Some(block) = read_block(ctx, number)? else {
            continue;
        };
        let tx_hashes = block.body.transactions.iter().map(|tx| *tx.tx_hash());
        // Adds each matching log with its block, transaction and block-wide log index.
        filter.append_matching_block_logs(
            &mut block_logs,
            BlockNumHash { number, hash: block.hash },
            block.header.timestamp,
            tx_hashes.zip(&block.receipts),
            false,
        );
        for log in block_logs.drain(..) {
            out.push(&log)?;
        }
    }
    out.finish()
}

/// `filter`'s addresses and topics over blocks `from..=to`, as an upstream query (sorted, so
/// one filter is one cache key whatever order its sets came in).
fn log_query(filter: &Filter, from: u64, to: u64) -> LogQuery {
    let mut addresses: Vec<_> = filter.address.iter().copied().collect();
    addresses.sort_unstable();
    let mut topics: Vec<Vec<_>> = filter
        .topics
        .iter()
        .map(|set| {
            let mut set: Vec<_> = set.iter().copied().collect();
            set.sort_unstable();
            set
        })
        .collect();
    while topics.last().is_some_and(Vec::is_empty) {
        topics.pop();
    }
    LogQuery { from, to, addresses, topics }
}

/// A JSON array of logs written into one capped buffer, with `--rpc.max-logs` counted per log.
struct LogWriter {
    out: CappedJson,
    count: usize,
    max_logs: usize,
}

impl LogWriter {
    fn new(limits: &RpcLimits) -> Self {
        Self { out: CappedJson::new(limits), count: 0, max_logs: limits.max_logs }
    }

    /// Appends one log, or fails once the answer is over either cap.
    fn push(&mut self, log: &alloy_rpc_types_eth::Log) -> Result<(), RpcError> {
        self.count += 1;
        if self.count > self.max_logs {
            return Err(RpcError::TooManyLogs { max: self.max_logs });
        }
        self.out.raw(if self.count > 1 { b"," } else { b"[" })?;
        self.out.value(log)
    }

    fn finish(mut self) -> Result<Reply, RpcError> {
        self.out.raw(if self.count == 0 { b"[]" } else { b"]" })?;
        Ok(self.out.finish())
    }
}

/// The inclusive block range to scan, or `None` when it lies wholly after the head.
pub(crate) fn block_range(
    ctx: &RpcContext,
    option: &FilterBlockOption,
) -> Result<Option<(u64, u64)>, RpcError> {
    let head = head(ctx)?;
    match *option {
        FilterBlockOption::AtBlockHash(hash) => {
            let number = ctx.chain.block_number(&hash)?.ok_or(RpcError::UnknownBlock)?;
            Ok(Some((number, number)))
        }
        FilterBlockOption::Range { from_block, to_block } => {
            let from = tag_number(ctx, from_block.unwrap_or(BlockNumberOrTag::Latest), head)?;
            let to = tag_number(ctx, to_block.unwrap_or(BlockNumberOrTag::Latest), head)?;
            range_within(from, to, head)
        }
    }
}

/// Checks and cuts `from..=to` to the head (shared with trace_filter).
pub(crate) fn range_within(from: u64, to: u64, head: u64) -> Result<Option<(u64, u64)>, RpcError> {
    if from > to {
        return Err(RpcError::InvalidBlockRange);
    }
    let to = to.min(head);
    if from > to {
        return Ok(None);
    }
    if to - from >= MAX_BLOCK_RANGE {
        return Err(RpcError::BlockRangeTooLarge { max: MAX_BLOCK_RANGE });
    }
    Ok(Some((from, to)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges_are_checked_and_cut_at_the_head() {
        assert_eq!(range_within(1, 5, 10).unwrap(), Some((1, 5)));
        assert_eq!(range_within(5, 50, 10).unwrap(), Some((5, 10)));
        assert_eq!(range_within(11, 50, 10).unwrap(), None);
        assert_eq!(range_within(6, 5, 10).unwrap_err().to_string(), "invalid block range params");
        assert_eq!(
            range_within(0, MAX_BLOCK_RANGE - 1, u64::MAX).unwrap(),
            Some((0, MAX_BLOCK_RANGE - 1))
        );
        let err = range_within(0, MAX_BLOCK_RANGE, u64::MAX).unwrap_err();
        assert_eq!(
            (err.code(), err.to_string()),
            (-32005, "query exceeds max block range 10000".into())
        );
    }
}
