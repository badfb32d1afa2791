//! BenchToken, the peers' benchmark contract (../shared/peers/build), for the benches that run
//! it without a node.

use alloy_primitives::{Bytes, hex};

/// BenchToken's runtime bytecode, read from the compiled artifact.
pub(crate) fn runtime_code() -> Bytes {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../shared/peers/build/BenchToken.json");
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let artifact: serde_json::Value = serde_json::from_str(&text).expect("artifact JSON");
    let code = artifact["deployedBytecode"].as_str().expect("deployedBytecode");
    Bytes::from(hex::decode(code.trim_start_matches("0x")).expect("hex bytecode"))
}
