//! debug_setHead: geth's way to take the chain back to a block.

use serde_json::Value;

use crate::anvil::rewind::rewind_to;
use crate::core::{RpcContext, RpcError};

/// debug_setHead: `[number]`; drops every block after `number` (durably, as anvil_rollback
/// does: the same rewind through the miner), or changes nothing when `number` is at or past
/// the head, as geth does. `null`.
pub(crate) async fn set_head(ctx: &RpcContext, (number,): (u64,)) -> Result<Value, RpcError> {
    rewind_to(ctx, number).await?;
    Ok(Value::Null)
}
