//! eth_createAccessList: the EIP-2930 access list a call needs and the gas it uses with it,
//! run on the executor pool (admitted and time-capped like eth_call).

use std::sync::Arc;

use alloy_rpc_types_eth::{BlockId, BlockNumberOrTag};
use hearth_messages::access_list::CreateAccessList;
use hearth_messages::executor::StateOverrides;
use serde_json::{Value, json};

use crate::core::RpcContext;
use crate::core::RpcError;
use crate::core::{Params, TxObject};
use crate::core::{quantity, state_block};

/// eth_createAccessList: `[txObject, block?, stateOverrides?]`; `{accessList, gasUsed}`, and
/// `error` when the call fails even with the list (geth's answer: the list is still given).
pub(crate) async fn create_access_list(
    ctx: &RpcContext,
    params: &Params,
) -> Result<Value, RpcError> {
    params.at_most(3)?;
    let tx: TxObject = params.required(0)?;
    let block: BlockId = params.optional(1)?.unwrap_or(BlockId::Number(BlockNumberOrTag::Latest));
    let overrides: Option<StateOverrides> = params.optional(2)?;
    let block = state_block(ctx, block)?;
    let mut request = tx.into_call_request(ctx.limits.gas_cap);
    request.state_overrides = overrides.filter(|o| !o.is_empty()).map(Arc::new);
    let outcome = ctx.executor.create_access_list(CreateAccessList { request, block }).await?;
    let mut answer = json!({
        "accessList": outcome.access_list,
        "gasUsed": quantity(outcome.gas_used),
    });
    if let (Some(error), Some(fields)) = (outcome.error, answer.as_object_mut()) {
        fields.insert("error".to_owned(), Value::String(error));
    }
    Ok(answer)
}
