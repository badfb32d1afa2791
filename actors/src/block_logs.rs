//! A block's logs as the RPC reports them (eth_getLogs' shape: block-wide log index, block
//! and transaction fields), for one filter: what log subscriptions and log filters send.

use alloy_eips::BlockNumHash;
use alloy_rpc_types_eth::{Filter, Log};
use hearth_storage::SealedBlock;

/// The logs of `block` that match `filter`'s addresses and topics, marked `removed` as asked;
/// the header bloom is checked first.
pub(crate) fn matching_logs(filter: &Filter, block: &SealedBlock, removed: bool) -> Vec<Log> {
    if !filter.matches_bloom(block.header.logs_bloom) {
        return Vec::new();
    }
    let mut logs = Vec::new();
    let tx_hashes = block.body.transactions.iter().map(|tx| *tx.tx_hash());
    filter.append_matching_block_logs(
        &mut logs,
        BlockNumHash { number: block.number(), hash: block.hash },
        block.header.timestamp,
        tx_hashes.zip(&block.receipts),
        removed,
    );
    logs
}
