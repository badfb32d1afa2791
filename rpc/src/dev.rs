//! Dev-chain controls: evm_mine.

use hearth_messages::miner::MineBlocks;
use serde_json::Value;

use crate::context::RpcContext;
use crate::error::RpcError;
use crate::params::{MineOptions, Params};

/// evm_mine: `[timestamp | {timestamp, blocks}]?`; mines the blocks now, whatever the mining
/// mode, with pending transactions if any. Answers "0x0" as anvil and ganache do.
pub(crate) async fn mine(ctx: &RpcContext, params: &Params) -> Result<Value, RpcError> {
    params.at_most(1)?;
    let options: MineOptions = params.optional(0)?.unwrap_or_default();
    let count = options.blocks.unwrap_or(1);
    if count == 0 {
        return Err(RpcError::InvalidParams(
            "invalid argument 0: blocks must be at least 1".into(),
        ));
    }
    let reply = ctx.mine_blocks.send(MineBlocks { count, timestamp: options.timestamp }).await;
    let last = reply.map_err(|e| RpcError::mailbox("miner", e))??;
    tracing::debug!(target: "rpc::dev", count, last, "evm_mine");
    Ok(Value::String("0x0".to_owned()))
}
