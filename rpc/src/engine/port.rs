//! What every Engine API method shares: the engine actor's client, which only the Engine API
//! port has, and the payload status as the spec writes it.

use hearth_messages::engine::{EngineClient, PayloadVerdict};
use serde_json::{Value, json};

use crate::core::{RpcContext, RpcError};

/// The engine actor's client, which only the Engine API port has.
pub(crate) fn engine(ctx: &RpcContext) -> Result<&EngineClient, RpcError> {
    ctx.engine.as_ref().ok_or_else(|| {
        RpcError::MethodNotFound("the engine_ methods are served on the Engine API port".into())
    })
}

/// A payload status as the Engine API writes it.
pub(crate) fn status_json(verdict: &PayloadVerdict) -> Value {
    let (status, latest, error) = match verdict {
        PayloadVerdict::Valid(hash) => ("VALID", Some(*hash), None),
        PayloadVerdict::Invalid { latest_valid_hash, error } => {
            ("INVALID", *latest_valid_hash, Some(error.clone()))
        }
        PayloadVerdict::Syncing => ("SYNCING", None, None),
        PayloadVerdict::Accepted => ("ACCEPTED", None, None),
    };
    json!({"status": status, "latestValidHash": latest, "validationError": error})
}
