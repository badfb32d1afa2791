//! Hearth storage: the Merkle-Patricia trie, versioned state, blocks and receipts on sled.
//!
//! Main types: [`ChainWriter`] (the one handle that commits, owned by the state actor),
//! [`ChainDb`] (the readers' cloneable handle and its read API), [`StateView`] (the state as of
//! one block, a revm `DatabaseRef`), [`BlockWriter`] / [`write_block`] (the one way a block is
//! written) and [`trie::Trie`]. Invariants: a block is written by one journaled batch (durable
//! before it is acknowledged, whole after a crash: see `journal`), applied key by key and never
//! as a sled batch or transaction ([`KeyWrites`]), so sled's global lock stays off; records
//! visible at block N never change after N is committed, except by a dev patch or revert; the
//! head, the deferred block and the newest account versions reach readers as one immutable
//! snapshot the writer swaps in atomically, so readers take no lock the writer takes; trie
//! nodes are addressed by hash and never deleted (archive).

mod address_index;
mod buffers;
mod chain;
mod commit;
pub mod cpu;
mod dump;
mod error;
mod fork;
mod journal;
mod key_writes;
mod kv;
mod layout;
mod node_cache;
mod overlay;
mod patch;
mod patch_log;
mod records;
mod rewrites;
mod slots;
mod state;
pub mod trie;
mod versions;

pub use address_index::{Appearance, Direction};
pub use buffers::ENCODE_BUFFER_RETAINED_BYTES;
pub use chain::{
    ChainDb, ChainWriter, DEFAULT_PAGE_CACHE_BYTES, ForkchoiceMarks, temporary_store_dir,
};
pub use commit::{
    BlockDraft, BlockWriter, DEFAULT_NODE_CACHE_BYTES, WriteTimings, block_roots_beside,
    import_block, import_block_with, import_fork_base, receipts_root, state_root_after,
    transactions_root, transactions_root_of, write_block,
};
pub use dump::{WholeAccount, head_accounts, load_accounts};
pub use error::StorageError;
pub use fork::{
    ForkSource, ForkedAccount, LogQuery, ProofQuery, SimulateQuery, is_overwriting, overwriting,
};
pub use journal::WriteBatch;
pub use key_writes::KeyWrites;
pub use node_cache::NodeCache;
pub use patch::{BlockKeys, PatchUndo, RolledBack, revert_blocks, rollback, write_patch};
pub use patch_log::{PatchRecord, PatchedAccount, PatchedSlot};
pub use records::{
    BlockExtras, Code, EMPTY_CODE_HASH, SealedBlock, StoredAccount, StoredBody, account_trie_key,
    storage_trie_key,
};
pub use slots::{SlotsError, storage_slots};
pub use state::{AccountChange, AccountFields, AccountProof, SlotProof, StateDiff, StateView};
