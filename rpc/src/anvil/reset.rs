//! anvil_reset / hardhat_reset: `[]` (or `[null]`) for a fresh dev chain, `[{"forking":
//! {"jsonRpcUrl", "blockNumber"}}]` for a fork (the inner object also alone, as anvil takes it).
//! Without `jsonRpcUrl` a fork node forks its own upstream again; without `blockNumber`, at the
//! upstream's head. anvil answers `null`, Hardhat `true`. The node's resetter builds the new
//! chain first and switches to it in one step; a failure leaves the chain as it was.

use hearth_messages::ask::ask;
use hearth_messages::client::ActorError;
use hearth_messages::reset::{ResetChain, ResetError, ResetTarget, SetForkUrl};
use serde_json::{Map, Value};

use crate::core::RpcError;
use crate::core::{Dialect, RpcContext};
use crate::core::{FromParam, HexOrDecimal, Params};

/// The shape anvil's message names when the argument is neither.
const SHAPE: &str = r#"expected {"forking": {"jsonRpcUrl": URL, "blockNumber": N}}, {"jsonRpcUrl": URL, "blockNumber": N} or nothing"#;

/// The target argument 0 names.
fn target(params: &Params) -> Result<ResetTarget, RpcError> {
    params.at_most(1)?;
    let Some(Target(target)) = params.optional::<Target>(0)? else {
        return Ok(ResetTarget::Dev);
    };
    Ok(target)
}

struct Target(ResetTarget);

impl FromParam for Target {
    fn from_param(value: &Value) -> Result<Self, String> {
        let Value::Object(outer) = value else { return Err(SHAPE.to_owned()) };
        let inner: &Map<String, Value> = match outer.get("forking") {
            Some(Value::Object(forking)) => forking,
            None | Some(Value::Null) => outer,
            Some(_) => return Err(format!("forking: {SHAPE}")),
        };
        let url = match inner.get("jsonRpcUrl") {
            None | Some(Value::Null) => None,
            Some(Value::String(url)) => Some(url.clone()),
            Some(_) => return Err("jsonRpcUrl: expected a string".to_owned()),
        };
        let block = match inner.get("blockNumber") {
            None | Some(Value::Null) => None,
            Some(n) => {
                Some(HexOrDecimal::from_param(n).map_err(|e| format!("blockNumber: {e}"))?.0)
            }
        };
        Ok(Self(ResetTarget::Fork { url, block }))
    }
}

/// anvil_reset / hardhat_reset.
pub(crate) async fn reset(
    ctx: &RpcContext,
    dialect: Dialect,
    params: &Params,
) -> Result<Value, RpcError> {
    let target = target(params)?;
    let Some(resetter) = &ctx.reset else {
        return Err(RpcError::Unsupported(format!(
            "{} is not available on this node (it was started on a given store)",
            dialect.method("reset")
        )));
    };
    let reset = ask(resetter, ResetChain(target)).await;
    match reset.map_err(|e| ActorError::asked("resetter", e))? {
        Ok(()) => Ok(if dialect == Dialect::Hardhat { Value::Bool(true) } else { Value::Null }),
        Err(e @ (ResetError::NoForkUrl | ResetError::Invalid(_))) => {
            Err(RpcError::InvalidParams(e.to_string()))
        }
        Err(e @ ResetError::Persistent) => Err(RpcError::Unsupported(e.to_string())),
        Err(ResetError::Start(reason)) => Err(RpcError::ResetFailed(reason)),
        Err(ResetError::Switch(e)) => Err(RpcError::Mine(e)),
        Err(ResetError::Closed) => Err(RpcError::ResetFailed("the node is shutting down".into())),
    }
}

/// anvil_setRpcUrl: `[url]`. On a fork, later upstream reads (and a reset that names no URL)
/// go to `url`, once it proves to serve the same chain id and the fork block with the same
/// hash (as newer anvil checks; anvil 1.7.1 takes any string); else nothing changes and the
/// answer is -32000 saying why. On a dev chain the URL is kept for a reset into a fork that
/// names none.
pub(crate) async fn set_rpc_url(ctx: &RpcContext, params: &Params) -> Result<Value, RpcError> {
    params.at_most(1)?;
    let url: String = params.required(0)?;
    let Some(resetter) = &ctx.fork_url else {
        return Err(RpcError::Unsupported(
            "anvil_setRpcUrl is not available on this node (it was started on a given store)"
                .to_owned(),
        ));
    };
    match ask(resetter, SetForkUrl(url)).await.map_err(|e| ActorError::asked("resetter", e))? {
        Ok(()) => Ok(Value::Null),
        Err(e @ ResetError::Invalid(_)) => Err(RpcError::InvalidParams(e.to_string())),
        Err(ResetError::Start(reason)) => Err(RpcError::ResetFailed(reason)),
        Err(e) => Err(RpcError::ResetFailed(e.to_string())),
    }
}
