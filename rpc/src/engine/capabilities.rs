//! engine_exchangeCapabilities and engine_getClientVersionV1: what the two sides tell each
//! other before the consensus client drives anything.

use serde_json::{Value, json};

use crate::core::{Params, RpcError, json_kind};

/// The client code Hearth gives itself in engine_getClientVersionV1 (two letters; the spec's
/// registry has none for Hearth, and "HE" is no other client's).
const CLIENT_CODE: &str = "HE";

/// engine_exchangeCapabilities: `[consensusCapabilities]`; the engine methods this node
/// serves (`served`: the method table's), itself left out (as the spec says). What the
/// consensus layer lists is not used.
pub(crate) fn exchange_capabilities(
    params: &Params,
    served: impl Iterator<Item = &'static str>,
) -> Result<Value, RpcError> {
    params.at_most(1)?;
    let given: Value = params.required(0)?;
    let listed = given.as_array().is_some_and(|items| items.iter().all(Value::is_string));
    if !listed {
        return Err(RpcError::InvalidParams(format!(
            "invalid argument 0: expected an array of method names, got {}",
            json_kind(&given)
        )));
    }
    let served: Vec<&str> = served.filter(|name| *name != "engine_exchangeCapabilities").collect();
    Ok(json!(served))
}

/// engine_getClientVersionV1: `[consensusClientVersion]`; this node's version, one entry.
/// Hearth is built without its git revision: the commit is four zero bytes.
pub(crate) fn client_version_v1(params: &Params) -> Result<Value, RpcError> {
    params.at_most(1)?;
    let given: Value = params.required(0)?;
    let fields = ["code", "name", "version", "commit"];
    let shaped = given
        .as_object()
        .is_some_and(|o| fields.iter().all(|f| o.get(*f).is_some_and(Value::is_string)));
    if !shaped {
        return Err(RpcError::InvalidParams(
            "invalid argument 0: expected {code, name, version, commit}, all strings".to_owned(),
        ));
    }
    Ok(json!([{
        "code": CLIENT_CODE,
        "name": "Hearth",
        "version": concat!("v", env!("CARGO_PKG_VERSION")),
        "commit": "0x00000000",
    }]))
}
