//! The Engine API's JWT secret file (`--authrpc.jwtsecret`): 32 bytes in hex, read at start, or
//! created with a random secret when missing, readable by its owner only (as geth and reth do),
//! so that the consensus client started beside the node can read the same file.

use std::io::Write;
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;

use alloy_rpc_types_engine::JwtSecret;
use rand::RngCore;

use crate::node::NodeError;

/// The secret in `path`, created (mode 0600; its directory too, with the default mode) when the
/// file does not exist. Two processes creating it at once read the one that won.
pub fn load_or_create(path: &Path) -> Result<JwtSecret, NodeError> {
    let fail = |reason: String| NodeError::JwtSecret { path: path.to_owned(), reason };
    match std::fs::read_to_string(path) {
        Ok(text) => JwtSecret::from_hex(text.trim())
            .map_err(|e| fail(format!("{e}: the file must hold 32 bytes as 64 hex digits"))),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            let mut bytes = [0u8; 32];
            rand::thread_rng().fill_bytes(&mut bytes);
            let hex = alloy_primitives::hex::encode(bytes);
            if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
                std::fs::create_dir_all(dir)
                    .map_err(|e| fail(format!("cannot create its directory: {e}")))?;
            }
            let mut file = match std::fs::OpenOptions::new()
                .write(true)
                .create_new(true)
                .mode(0o600)
                .open(path)
            {
                Ok(file) => file,
                // Another process created it meanwhile: its secret is the one.
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
                    return load_or_create(path);
                }
                Err(e) => return Err(fail(format!("cannot create it: {e}"))),
            };
            file.write_all(hex.as_bytes()).map_err(|e| fail(format!("cannot write it: {e}")))?;
            tracing::info!(target: "node", path = %path.display(), "created a new JWT secret for the Engine API");
            JwtSecret::from_hex(&hex).map_err(|e| fail(e.to_string()))
        }
        Err(e) => Err(fail(format!("cannot read it: {e}"))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_missing_secret_is_created_owner_only_and_read_back() {
        let dir = std::env::temp_dir().join(format!("hearth-jwt-{}", std::process::id()));
        let path = dir.join("nested").join("jwt.hex");
        let _ = std::fs::remove_dir_all(&dir);
        let created = load_or_create(&path).expect("created");
        let mode = std::os::unix::fs::PermissionsExt::mode(
            &std::fs::metadata(&path).expect("file").permissions(),
        );
        assert_eq!(mode & 0o777, 0o600);
        let text = std::fs::read_to_string(&path).expect("readable");
        assert_eq!(text.len(), 64);
        let again = load_or_create(&path).expect("read back");
        let claims = alloy_rpc_types_engine::Claims::with_current_timestamp();
        let token = created.encode(&claims).expect("token");
        again.validate(&token).expect("the same secret");
        std::fs::write(&path, "0x1234").expect("overwrite");
        let short = load_or_create(&path).unwrap_err().to_string();
        assert!(short.contains("64 hex digits"), "{short}");
        let _ = std::fs::remove_dir_all(&dir);
    }
}
