//! The kernel's interface to a parallel block: what the block's other threads published for a
//! database to read before the store ([`PublishedValues`]), where the committer publishes each
//! commit ([`Publish`]), and what a speculative run read ([`ReadLog`]).
//!
//! As revm's `DatabaseRef` separates a database's interface from its implementations, the
//! kernel owns these traits and `parallel` implements them (`Published`, the block's
//! multi-version memory; `ReadAhead`, the snapshot accounts helpers read ahead). `ExecDb` is
//! generic over them, so a read through them is a call the compiler inlines, never a virtual
//! one: they sit on every account, slot and code read of a parallel block.

use alloy_primitives::{Address, B256, U256};
use hearth_storage::StoredAccount;
use revm::bytecode::Bytecode;
use revm::state::AccountInfo;

/// What a published read of a slot found.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum SlotRead {
    /// The slot's committed value.
    Value(U256),
    /// The block wrote neither the slot nor the account's storage: read the start state.
    NotWritten,
}

/// Values a parallel block's other threads published for one database to read before the
/// store: what the committer committed so far (a helper's database reads them before the
/// block's own changes), or the snapshot accounts the helpers read ahead of the committer (the
/// committer's database reads them before the store). Each implementation publishes one kind;
/// what it does not publish reads as nothing published, so `()` is the database of a call, a
/// simulation or a replay, which reads the store alone.
pub(crate) trait PublishedValues {
    /// The account as the block committed it: `Some(None)` deleted, `None` not published.
    fn account(&self, _address: &Address) -> Option<Option<AccountInfo>> {
        None
    }

    /// A slot as the block committed it.
    fn slot(&self, _address: &Address, _slot: &U256) -> SlotRead {
        SlotRead::NotWritten
    }

    /// Code the block deployed.
    fn code(&self, _hash: &B256) -> Option<Bytecode> {
        None
    }

    /// The snapshot's account at `address` when transaction `index` names it and it was read
    /// ahead (`Some(None)`: absent from the snapshot).
    fn snapshot_account(&self, _index: usize, _address: &Address) -> Option<Option<StoredAccount>> {
        None
    }
}

/// Nothing published: a database that reads its snapshot and its own changes only.
impl PublishedValues for () {}

/// Where a parallel block's committer publishes what each commit left, for the helpers'
/// databases to read ([`PublishedValues`]). One writer: the committer.
pub(crate) trait Publish {
    /// Transaction `writer` left `address` as `account` (`None`: deleted), having reset its
    /// storage when `storage_reset`.
    fn put_account(
        &self,
        writer: usize,
        address: Address,
        account: Option<AccountInfo>,
        storage_reset: bool,
    );

    /// Transaction `writer` left `slot` of `address` holding `value`.
    fn put_slot(&self, writer: usize, address: Address, slot: U256, value: U256);

    /// The block deployed `code`.
    fn put_code(&self, hash: B256, code: Bytecode);
}

/// The reads of one transaction, in the order revm made them.
#[derive(Debug, Default)]
pub(crate) struct ReadLog {
    pub(crate) accounts: Vec<(Address, Option<AccountInfo>)>,
    pub(crate) slots: Vec<(Address, U256, U256)>,
}
