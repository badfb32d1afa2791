//! What the node can serve: eth_capabilities (execution-apis' history availability report).
//!
//! Hearth is an archive node: every block, body, receipt, transaction lookup, log and past
//! state is kept from genesis on, and none is ever deleted, so each resource is enabled from
//! block 0 and none has a deletion window (`deleteStrategy` is omitted, as the spec says for
//! resources without sliding deletion).

use serde_json::{Value, json};

use crate::core::Params;
use crate::core::RpcContext;
use crate::core::RpcError;
use crate::core::{head, quantity};

/// The resources eth_capabilities reports, by their names in the spec.
const RESOURCES: [&str; 6] = ["state", "tx", "logs", "receipts", "blocks", "stateproofs"];

/// eth_capabilities: `[]`; the head and, per resource, that it is served from block 0.
pub(crate) fn capabilities(ctx: &RpcContext, params: &Params) -> Result<Value, RpcError> {
    params.at_most(0)?;
    let number = head(ctx)?;
    let hash =
        ctx.chain.block_hash(number)?.ok_or(RpcError::MissingRecord { number, what: "hash" })?;
    let mut answer = serde_json::Map::new();
    answer.insert("head".to_owned(), json!({ "number": quantity(number), "hash": hash }));
    for resource in RESOURCES {
        answer.insert(resource.to_owned(), json!({ "disabled": false, "oldestBlock": "0x0" }));
    }
    Ok(Value::Object(answer))
}
