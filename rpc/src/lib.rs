//! Hearth's JSON-RPC front: HTTP transport, limits, the method table, param decoding and the
//! mapping from internal errors to JSON-RPC codes. It owns nothing mutable: it parses, admits,
//! routes to actors through typed clients and recipients, and encodes.

mod context;

pub use context::{ExtensionMethod, Extensions, RpcContext, RpcLimits};
