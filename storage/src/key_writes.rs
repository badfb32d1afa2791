//! [`KeyWrites`]: how Hearth writes to sled, one key at a time and never as a batch.
//!
//! sled 0.34 guards every tree of the process with one global `RwLock`
//! (`concurrency_control`). Until the process first calls `apply_batch`, a transaction or
//! `checksum`, sled's reads and writes only bump an atomic; from the first such call on, every
//! read takes that lock shared and every batch takes it exclusively, so an `eth_call` could
//! wait for the state owner's batch apply. So Hearth never calls them: this type has no batch
//! method, `clippy.toml` bans sled's batch, transaction and checksum methods, and
//! this module's test fails if a call to them appears in the workspace's sources (sled
//! exposes nothing that says whether the lock is on).
//!
//! What a batch gave, atomicity, comes from the commit journal instead (`journal`): a
//! multi-key write is in the journal before its first key is applied and is replayed, whole,
//! at the next open if the process dies part-way; readers are kept apart from a write in
//! progress by versioned keys (`chain`).

/// Writes to one sled tree, one key at a time. Cheap to clone.
#[derive(Clone)]
pub struct KeyWrites {
    tree: sled::Tree,
}

impl std::fmt::Debug for KeyWrites {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("KeyWrites").finish_non_exhaustive()
    }
}

impl KeyWrites {
    /// The writer of `tree` (a `sled::Db` is its default tree).
    pub fn new(tree: &sled::Tree) -> Self {
        Self { tree: tree.clone() }
    }

    /// Sets `key` to `value`. Idempotent: applying it twice leaves what applying it once does.
    pub fn insert(&self, key: impl AsRef<[u8]>, value: impl AsRef<[u8]>) -> sled::Result<()> {
        self.tree.insert(key.as_ref(), value.as_ref())?;
        Ok(())
    }

    /// Removes `key` (nothing when it is absent). Idempotent.
    pub fn remove(&self, key: impl AsRef<[u8]>) -> sled::Result<()> {
        self.tree.remove(key.as_ref())?;
        Ok(())
    }
}

/// Nothing in the workspace calls a sled batch, transaction or checksum: the first such call
/// would switch the lock on for good (module docs). sled exposes nothing that says whether it
/// is on, so this reads the sources; `clippy.toml` bans the same methods where a type is known.
#[cfg(test)]
mod tests {
    use std::path::{Path, PathBuf};

    /// The calls that turn the lock on (spelled in pieces so this file does not match itself).
    const BANNED: [&str; 3] =
        [concat!("apply_", "batch("), concat!(".trans", "action("), concat!(".check", "sum(")];

    /// Every `.rs` file under `dir`, skipping build output.
    fn sources(dir: &Path, found: &mut Vec<PathBuf>) {
        let Ok(entries) = std::fs::read_dir(dir) else { return };
        for entry in entries.flatten() {
            let path = entry.path();
            if path.is_dir() {
                if path
                    .file_name()
                    .is_some_and(|n| n != "target" && !n.to_string_lossy().starts_with('.'))
                {
                    sources(&path, found);
                }
            } else if path.extension().is_some_and(|e| e == "rs") {
                found.push(path);
            }
        }
    }

    /// The calls to [`BANNED`] methods in `text`, outside `//` comments, as `line: text`.
    fn banned_calls(text: &str) -> Vec<String> {
        text.lines()
            .enumerate()
            .filter(|(_, line)| {
                let code = line.split("//").next().unwrap_or_default();
                BANNED.iter().any(|call| code.contains(call))
            })
            .map(|(n, line)| format!("{}: {}", n + 1, line.trim()))
            .collect()
    }

    #[test]
    fn no_source_calls_a_sled_batch_transaction_or_checksum() {
        // This crate is one folder below the workspace root.
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
        let mut files = Vec::new();
        for dir in ["src", "storage", "actors", "rpc", "messages", "tests", "benches", "examples"] {
            sources(&root.join(dir), &mut files);
        }
        assert!(files.len() > 50, "the workspace's sources were found ({} files)", files.len());
        let mut calls = Vec::new();
        for file in &files {
            let text = std::fs::read_to_string(file).expect("a source file");
            for call in banned_calls(&text) {
                calls.push(format!("{}:{call}", file.display()));
            }
        }
        assert!(calls.is_empty(), "sled calls that turn on its global lock:\n{}", calls.join("\n"));
    }

    /// The check itself finds a call, and not one in a comment.
    #[test]
    fn the_check_finds_a_batch_call_and_skips_comments() {
        let call = format!("    db.{}batch)?; // applied", concat!("apply_", "batch("));
        assert_eq!(banned_calls(&call).len(), 1);
        let tx = format!("    tree{}|t| Ok(()))?;", concat!(".trans", "action("));
        assert_eq!(banned_calls(&tx).len(), 1);
        let comment = format!("    // no db.{}batch) here", concat!("apply_", "batch("));
        assert!(banned_calls(&comment).is_empty());
    }
}
