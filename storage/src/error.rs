//! The storage layer's error type.

use alloy_primitives::B256;

/// Anything that can go wrong reading or writing Hearth's storage.
#[derive(Debug, thiserror::Error)]
pub enum StorageError {
    /// The embedded database failed (I/O, corruption detected by sled).
    #[error("database error: {0}; check the --datadir disk and permissions")]
    Db(#[from] sled::Error),
    /// A trie node referenced by hash is not in the node store: the store is incomplete.
    #[error("trie node {0} is missing from the node store; the datadir is incomplete or corrupt")]
    MissingTrieNode(B256),
    /// A stored record could not be decoded.
    #[error("stored {what} could not be decoded: {source}; the datadir is corrupt")]
    Decode {
        /// Which kind of record.
        what: &'static str,
        /// The RLP error.
        source: alloy_rlp::Error,
    },
    /// A stored record has the wrong shape (length, node kind).
    #[error("stored {what} is malformed; the datadir is corrupt")]
    Corrupt {
        /// Which kind of record.
        what: &'static str,
    },
    /// The commit journal could not be read or written.
    #[error("commit journal {path}: {source}; check the --datadir disk and permissions")]
    Journal {
        /// The journal file.
        path: std::path::PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
    /// An imported block's header names a state root other than the one its execution gives.
    #[error(
        "block {number} claims state root {expected} but executing it gives {computed}; the block is invalid and was not written"
    )]
    StateRootMismatch {
        /// The block number.
        number: u64,
        /// The root in the header.
        expected: B256,
        /// The root the diff produces.
        computed: B256,
    },
    /// The fork upstream could not answer a read of the forked state in time.
    #[error("fork upstream: {0}")]
    Fork(String),
}
