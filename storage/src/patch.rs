//! Dev-chain state changes outside blocks: patches of the head state (anvil_setBalance and
//! friends) and reverts to an earlier head (evm_revert).
//!
//! A patch overwrites the head block's own versions of the accounts and slots it sets, so the
//! head state changes in place (as anvil's "latest" does), and records the patched state root
//! under `P` + head so the next block builds its trie on it. It returns what it overwrote, so a
//! revert can undo it. A revert deletes the versions that later blocks wrote (versioned keys
//! make that exact: each block only ever added keys ending in its own number), the blocks'
//! records and indexes, undoes patches in reverse order, and moves the head back; all in one
//! journaled batch (fsynced, then applied key by key: `journal`). Trie nodes and code are content-addressed and shared, so they stay.
//!
//! A rollback (anvil_rollback) drops the newest blocks without a snapshot's journal: it finds
//! what they wrote from the keys themselves, every account and slot version under a number
//! past the new head (patches made while those blocks were the head included), and removes
//! those with the blocks' records in one journaled batch, so a restart serves the shorter
//! chain.

use alloy_primitives::{Address, B256, U256};

use crate::commit::{Staged, Tries, apply_diff_on};
use crate::layout;
use crate::node_cache::NodeCache;
use crate::state::StateDiff;
use crate::{ChainDb, ChainWriter, StorageError};

/// What one patch overwrote: each key with its previous value (`None`: it was absent).
#[derive(Debug, Clone, Default)]
pub struct PatchUndo {
    pub(crate) entries: Vec<(Vec<u8>, Option<Vec<u8>>)>,
}

/// The state keys one block wrote: each changed account with the slots it wrote.
#[derive(Debug, Clone, Default)]
pub struct BlockKeys {
    /// The block.
    pub number: u64,
    /// Changed accounts and their written slots.
    pub accounts: Vec<(Address, Vec<U256>)>,
}

impl BlockKeys {
    /// The keys `diff` writes as block `number`.
    pub fn of(number: u64, diff: &StateDiff) -> Self {
        let accounts = diff
            .accounts
            .iter()
            .map(|(address, change)| (*address, change.storage.keys().copied().collect()))
            .collect();
        Self { number, accounts }
    }
}

/// Applies `diff` (accounts with their full new fields, and slots) to the head state in place.
/// Returns the new state root and what was overwritten. Accounts with `info: None` are left
/// alone: a patch sets, it never deletes.
///
/// It is the block write path (`apply_diff_on`) with the head as both the state it starts from
/// and the block whose versions it writes, and with an undo journal.
pub fn write_patch(db: &ChainWriter, diff: &StateDiff) -> Result<(B256, PatchUndo), StorageError> {
    let head = db.head_number().ok_or(StorageError::Corrupt { what: "head before a patch" })?;
    let mut sets = diff.clone();
    sets.accounts.retain(|_, change| change.info.is_some());
    let mut staged = Staged::journaled();
    let root = apply_diff_on(
        db,
        &NodeCache::new(0),
        &mut Tries::default(),
        &mut staged,
        Some(head),
        head,
        &sets,
    )?;
    // The next block builds on this root instead of the head header's.
    staged.record(db, &layout::number_key(layout::PATCHED_ROOT, head), root.as_slice())?;
    // Read replicas replay it (`patch_log`); undone with the patch by a revert.
    let seq = crate::patch_log::count(db, head)?;
    let record = alloy_rlp::encode(crate::patch_log::PatchRecord::of(&sets, root));
    staged.record(db, &crate::patch_log::key(head, seq), &record)?;
    let (batch, undo) = staged.into_parts();
    db.commit_batch(batch, head)?;
    Ok((root, undo))
}

/// Moves the head back to `target`: undoes `undo` (patches since the snapshot, oldest first)
/// and deletes what `blocks` (every block after `target`) wrote, in one journaled batch.
pub fn revert_blocks(
    db: &ChainWriter,
    target: u64,
    blocks: &[BlockKeys],
    undo: &[PatchUndo],
) -> Result<(), StorageError> {
    let mut batch = crate::WriteBatch::default();
    // Patches first, newest first; block deletions below win for keys of removed blocks
    // (the last operation on a key in a batch is the one applied).
    for patch in undo.iter().rev() {
        for (key, old) in patch.entries.iter().rev() {
            match old {
                Some(value) => batch.insert(key.as_slice(), value.as_slice()),
                None => batch.remove(key.as_slice()),
            }
        }
    }
    for keys in blocks.iter().filter(|k| k.number > target) {
        let number = keys.number;
        for (address, slots) in &keys.accounts {
            // Storage versions sit under the incarnation the account had at that block.
            if let Some(account) = db.account(address, number)? {
                for slot in slots {
                    batch.remove(
                        &layout::storage_key(address, account.incarnation, slot, number)[..],
                    );
                }
            }
            batch.remove(&layout::account_key(address, number)[..]);
        }
        remove_block_records(db, &mut batch, number)?;
    }
    batch.insert(layout::HEAD_KEY, &target.to_be_bytes()[..]);
    db.commit_batch(batch, target)
}

/// Adds the removal of block `number`'s own records to `batch`: header, hash and both hash
/// indexes, body and receipts (every chunk), ommers and withdrawals, patched root, and the
/// lookup and address index entries of its transactions. Returns how many transactions the block held.
fn remove_block_records(
    db: &ChainDb,
    batch: &mut crate::WriteBatch,
    number: u64,
) -> Result<usize, StorageError> {
    let mut transactions = 0;
    if let Some(body) = db.body(number)? {
        transactions = body.transactions.len();
        for tx in &body.transactions {
            batch.remove(&layout::hash_key(layout::TX_LOOKUP, tx.tx_hash())[..]);
        }
    }
    if let Some(hash) = db.block_hash(number)? {
        batch.remove(&layout::hash_key(layout::NUMBER_BY_HASH, &hash)[..]);
    }
    for prefix in [layout::BODY, layout::RECEIPTS] {
        // Every chunk of the record (and an unchunked value of an older store).
        for key in db.keys_with_prefix(&layout::number_key(prefix, number))? {
            batch.remove(key);
        }
    }
    for prefix in [layout::HEADER, layout::HASH_BY_NUMBER, layout::PATCHED_ROOT, layout::EXTRAS] {
        batch.remove(&layout::number_key(prefix, number)[..]);
    }
    crate::address_index::remove_block(db, batch, number)?;
    // The patches made while it was the head (`patch_log`).
    for key in db.keys_with_prefix(&layout::number_key(layout::PATCH_LOG, number))? {
        batch.remove(key);
    }
    Ok(transactions)
}

/// What [`rollback`] removed.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RolledBack {
    /// Blocks dropped.
    pub blocks: u64,
    /// Transactions those blocks held.
    pub transactions: usize,
}

/// Makes `target` the head: every block after it goes from the store, with its transactions,
/// receipts and indexes and every account and slot version written under its number (by the
/// block itself or by dev patches made while it was the head), in one journaled batch. The
/// state at `target` is then exactly what it was when `target` was the head; trie nodes and
/// code are content-addressed and stay. A `target` at or after the head changes nothing.
pub fn rollback(db: &ChainWriter, target: u64) -> Result<RolledBack, StorageError> {
    let head = db.head_number().ok_or(StorageError::Corrupt { what: "head before a rollback" })?;
    if target >= head {
        return Ok(RolledBack::default());
    }
    // The scan below reads sled only: apply the deferred block (if any) first.
    db.settle()?;
    let mut batch = crate::WriteBatch::default();
    // Account keys: address; slot keys: address, incarnation, slot.
    for key in db.versions_after(layout::ACCOUNT, 20, target)? {
        batch.remove(key);
    }
    for key in db.versions_after(layout::STORAGE, 20 + 8 + 32, target)? {
        batch.remove(key);
    }
    let mut transactions = 0;
    for number in target + 1..=head {
        transactions += remove_block_records(db, &mut batch, number)?;
    }
    batch.insert(layout::HEAD_KEY, &target.to_be_bytes()[..]);
    db.commit_batch(batch, target)?;
    Ok(RolledBack { blocks: head - target, transactions })
}

#[cfg(test)]
mod tests {
    use alloy_consensus::{Header, SignableTransaction, TxEnvelope, TxLegacy};
    use alloy_primitives::{Address, Signature, U256};

    use proptest::prelude::Strategy as _;

    use super::*;
    use crate::commit::{BlockDraft, BlockWriter, write_block};
    use crate::records::{EMPTY_CODE_HASH, StoredBody};
    use crate::state::{AccountChange, AccountFields};

    /// Block `number`, holding two transactions whose hashes depend on `salt`.
    fn draft(number: u64, salt: u8) -> BlockDraft {
        let transactions: Vec<TxEnvelope> = (0..2u64)
            .map(|i| {
                let tx = TxLegacy {
                    nonce: number * 2 + i,
                    gas_limit: 21_000,
                    input: vec![salt; 3].into(),
                    ..Default::default()
                };
                tx.into_signed(Signature::new(U256::from(1), U256::from(2), false)).into()
            })
            .collect();
        let senders = vec![Address::repeat_byte(9); transactions.len()];
        BlockDraft {
            header: Header { number, timestamp: number, ..Header::default() },
            body: StoredBody { transactions, senders },
            receipts: Vec::new(),
            touched: Vec::new(),
        }
    }

    fn set(nonce: u64, balance: u64, slots: &[(u64, u64)]) -> AccountChange {
        AccountChange {
            info: Some(AccountFields {
                nonce,
                balance: U256::from(balance),
                code_hash: EMPTY_CODE_HASH,
            }),
            storage_wiped: false,
            storage: slots.iter().map(|(k, v)| (U256::from(*k), U256::from(*v))).collect(),
        }
    }

    /// Block `number` of a history that changes a few accounts and slots every block,
    /// deletes account 3 at block 6 and creates it again (a new storage incarnation) at 7.
    fn diff(number: u64) -> StateDiff {
        let mut diff = StateDiff::default();
        for i in 0..4u64 {
            let address = Address::repeat_byte(i as u8 + 1);
            let change = match (i, number) {
                (2, 6) => {
                    AccountChange { info: None, storage_wiped: true, storage: Default::default() }
                }
                _ => set(number, number * 10 + i, &[(i, number + 1), (number % 3, i + 7)]),
            };
            diff.accounts.insert(address, change);
        }
        diff
    }

    /// A dev patch of account 9 (balance and one slot) at the current head.
    fn patch(db: &ChainWriter, balance: u64) {
        let mut diff = StateDiff::default();
        diff.accounts.insert(Address::repeat_byte(9), set(0, balance, &[(1, balance)]));
        write_patch(db, &diff).expect("patch");
    }

    /// Blocks 0..=last, with a patch after blocks 2 and 7.
    fn history(db: &ChainWriter, last: u64) {
        let mut writer = BlockWriter::new(db.clone(), 0);
        // Deferred like the node's writer: the rollback must apply a pending block first.
        writer.set_deferred_apply(true);
        for number in 0..=last {
            writer.write(draft(number, 1), &diff(number)).expect("block");
            if number == 2 || number == 7 {
                patch(db, 1_000 + number);
            }
        }
    }

    /// Every record a block or patch writes (not trie nodes or code, which are shared by
    /// content, nor the journal's bookkeeping), as sled holds them once applied.
    fn records(db: &ChainWriter) -> Vec<(Vec<u8>, Vec<u8>)> {
        db.checkpoint().expect("checkpoint");
        db.tree()
            .iter()
            .map(|entry| entry.expect("entry"))
            .filter(|(key, _)| {
                !matches!(key.first(), Some(&(layout::TRIE_NODE | layout::CODE | b'm')))
                    || key.as_ref() == layout::HEAD_KEY
            })
            .map(|(key, value)| (key.to_vec(), value.to_vec()))
            .collect()
    }

    /// A store rolled back to block 5 holds exactly the records of a store that only ever
    /// wrote blocks 0..=5 (the patch at head 7 and account 3's second incarnation gone), and
    /// the next block written on both has the same state root.
    #[test]
    fn a_rollback_leaves_exactly_the_shorter_chain() {
        let rolled = ChainWriter::in_memory().expect("store");
        history(&rolled, 9);
        let short = ChainWriter::in_memory().expect("store");
        history(&short, 5);

        let removed = rollback(&rolled, 5).expect("rollback");
        assert_eq!(removed, RolledBack { blocks: 4, transactions: 8 });
        assert_eq!(rolled.head_number(), Some(5));
        assert_eq!(rolled.header(6).expect("read"), None);
        assert_eq!(rolled.block_hash(9).expect("read"), None);
        assert_eq!(records(&rolled), records(&short));
        let account = |db: &ChainDb, n| db.account(&Address::repeat_byte(n), 5).expect("read");
        for n in [1, 2, 3, 4, 9] {
            assert_eq!(account(&rolled, n), account(&short, n), "account {n}");
        }

        let next = |db: &ChainWriter| write_block(db, draft(6, 2), &diff(8)).expect("block 6");
        assert_eq!(next(&rolled).header.state_root, next(&short).header.state_root);
        assert_eq!(records(&rolled), records(&short));
    }

    /// Each patch is logged at the head it patched, with the accounts it set and the root it
    /// left; a revert that undoes a patch removes its record too.
    #[test]
    fn the_patch_log_holds_each_patch_at_its_head_until_undone() {
        let db = ChainWriter::in_memory().expect("store");
        history(&db, 3);
        patch(&db, 5);
        let mut diff = StateDiff::default();
        diff.accounts.insert(Address::repeat_byte(8), set(4, 77, &[(3, 9)]));
        let (root, undo) = write_patch(&db, &diff).expect("patch");

        assert_eq!(db.patches_at(2).expect("read").len(), 1);
        let logged = db.patches_at(3).expect("read");
        assert_eq!(logged.len(), 2);
        assert_eq!(logged[1].root, root);
        let roots = db.patch_roots_at(3).expect("read");
        assert_eq!(roots, logged.iter().map(|r| r.root).collect::<Vec<_>>());
        assert_eq!(db.state_root_at(3).expect("read"), Some(root));
        let account = &logged[1].accounts[0];
        assert_eq!(
            (account.address, account.nonce, account.balance),
            (Address::repeat_byte(8), 4, U256::from(77))
        );
        assert_eq!(
            account.storage,
            vec![crate::PatchedSlot { slot: U256::from(3), value: U256::from(9) }]
        );

        revert_blocks(&db, 3, &[], &[undo]).expect("revert");
        let logged = db.patches_at(3).expect("read");
        assert_eq!(logged.len(), 1);
        assert_eq!(db.state_root_at(3).expect("read"), Some(logged[0].root));
    }

    #[test]
    fn a_rollback_to_the_head_or_past_it_changes_nothing() {
        let db = ChainWriter::in_memory().expect("store");
        history(&db, 3);
        let before = records(&db);
        assert_eq!(rollback(&db, 3).expect("rollback"), RolledBack::default());
        assert_eq!(rollback(&db, 7).expect("rollback"), RolledBack::default());
        assert_eq!(records(&db), before);
        assert_eq!(db.head_number(), Some(3));
    }

    /// What a model history does: blocks (their contents drawn from a seed), dev patches on
    /// the head, and rollbacks.
    #[derive(Debug, Clone)]
    enum Op {
        Block(u8),
        Patch(u8),
        Rollback(u8),
    }

    /// Block `number`'s changes drawn from `seed`: a few of eight accounts set (with slots),
    /// or deleted, so that storage incarnations come and go.
    fn seeded(number: u64, seed: u8) -> StateDiff {
        let mut diff = StateDiff::default();
        for i in 0..3u64 {
            let pick = (u64::from(seed) + i * 3) % 8;
            let address = Address::repeat_byte(pick as u8 + 1);
            let change = if (u64::from(seed) + i) % 5 == 0 {
                AccountChange { info: None, storage_wiped: true, storage: Default::default() }
            } else {
                set(number, u64::from(seed) * 7 + i, &[(pick, number + 1), (i, u64::from(seed))])
            };
            diff.accounts.insert(address, change);
        }
        diff
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig {
            cases: 24,
            failure_persistence: None,
            ..proptest::prelude::ProptestConfig::default()
        })]

        /// After every step of a history of blocks, patches and rollbacks, the store holds
        /// exactly the records of a store that only ever wrote what the rollbacks left (the
        /// model: the history with each rollback's dropped blocks and their patches cut out).
        #[test]
        fn rollbacks_match_a_store_that_never_saw_the_dropped_blocks(
            ops in proptest::collection::vec(
                proptest::prop_oneof![
                    4 => proptest::prelude::any::<u8>().prop_map(Op::Block),
                    1 => proptest::prelude::any::<u8>().prop_map(Op::Patch),
                    1 => (0u8..5).prop_map(Op::Rollback),
                ],
                1..12,
            )
        ) {
            let store = ChainWriter::in_memory().expect("store");
            let mut writer = BlockWriter::new(store.clone(), 0);
            writer.set_deferred_apply(true);
            writer.write(draft(0, 0), &diff(0)).expect("genesis");
            // What survives: each block's seed, and each patch's head and seed, in order.
            let mut kept: Vec<Op> = Vec::new();
            let mut head = 0u64;
            for op in ops {
                match op {
                    Op::Block(seed) => {
                        head += 1;
                        writer.write(draft(head, seed), &seeded(head, seed)).expect("block");
                        kept.push(Op::Block(seed));
                    }
                    Op::Patch(seed) => {
                        patch(&store, u64::from(seed));
                        kept.push(Op::Patch(seed));
                    }
                    Op::Rollback(depth) => {
                        let target = head.saturating_sub(u64::from(depth));
                        rollback(&store, target).expect("rollback");
                        // Cut the history after block `target`'s last patch.
                        let mut blocks = 0;
                        let cut = kept
                            .iter()
                            .position(|op| {
                                if let Op::Block(_) = op {
                                    blocks += 1;
                                }
                                blocks > target
                            })
                            .unwrap_or(kept.len());
                        kept.truncate(cut);
                        head = target;
                    }
                }
                let model = ChainWriter::in_memory().expect("store");
                write_block(&model, draft(0, 0), &diff(0)).expect("genesis");
                let mut number = 0;
                for op in &kept {
                    match op {
                        Op::Block(seed) => {
                            number += 1;
                            write_block(&model, draft(number, *seed), &seeded(number, *seed))
                                .expect("block");
                        }
                        Op::Patch(seed) => patch(&model, u64::from(*seed)),
                        Op::Rollback(_) => unreachable!("the model keeps no rollback"),
                    }
                }
                proptest::prop_assert_eq!(store.head_number(), Some(head));
                proptest::prop_assert_eq!(records(&store), records(&model));
            }
        }
    }

    /// A rollback is durable: a store reopened from its directory serves the shorter chain.
    #[test]
    fn a_rollback_survives_reopening_the_store() {
        let dir = std::env::temp_dir().join(format!("hearth-rollback-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        {
            let db = ChainWriter::open(&dir).expect("open");
            history(&db, 6);
            rollback(&db, 4).expect("rollback");
            // No checkpoint: the journal alone must carry the rollback.
        }
        let db = reopen(&dir);
        assert_eq!(db.head_number(), Some(4));
        assert_eq!(db.header(5).expect("read"), None);
        let short = ChainWriter::in_memory().expect("store");
        history(&short, 4);
        assert_eq!(records(&db), records(&short));
        drop(db);
        let _ = std::fs::remove_dir_all(&dir);
    }

    /// Block `number` changing `accounts` accounts with two slots each: over a hundred keys
    /// (the size that used to go to sled as one atomic batch).
    fn wide(number: u64, accounts: u8) -> StateDiff {
        let mut diff = StateDiff::default();
        for i in 0..accounts {
            let slots = [(u64::from(i), number), (1_000 + number, u64::from(i) + 1)];
            diff.accounts
                .insert(Address::repeat_byte(i + 1), set(number, number + u64::from(i), &slots));
        }
        diff
    }

    /// One step of the history [`cut_history`] replays: a wide block, a patch, a revert of
    /// both, another block, a rollback.
    fn crash_step(
        db: &ChainWriter,
        step: usize,
        keys: &mut Vec<BlockKeys>,
        undo: &mut Vec<PatchUndo>,
    ) -> Result<(), StorageError> {
        let block = |number: u64, keys: &mut Vec<BlockKeys>| {
            let diff = wide(number, 40);
            keys.push(BlockKeys::of(number, &diff));
            write_block(db, draft(number, 3), &diff).map(drop)
        };
        match step {
            0 => block(3, keys),
            1 => {
                let mut diff = StateDiff::default();
                for i in 0..30u8 {
                    diff.accounts.insert(
                        Address::repeat_byte(i + 1),
                        set(7, 5_000 + u64::from(i), &[(9, 9)]),
                    );
                }
                write_patch(db, &diff).map(|(_, patch)| undo.push(patch))
            }
            2 => revert_blocks(db, 2, keys, undo),
            3 => block(3, keys),
            _ => rollback(db, 1).map(drop),
        }
    }

    /// Blocks 0..=2, then steps `0..steps`; the last one cut short after `cut` operations
    /// when given (the error it then returns is expected).
    fn cut_history(db: &ChainWriter, steps: usize, cut: Option<usize>) {
        for number in 0..=2 {
            write_block(db, draft(number, 1), &diff(number)).expect("block");
        }
        let (mut keys, mut undo) = (Vec::new(), Vec::new());
        for step in 0..steps {
            if step + 1 == steps
                && let Some(cut) = cut
            {
                db.fail_next_apply_after(cut);
                let failed = crash_step(db, step, &mut keys, &mut undo);
                assert!(failed.is_err(), "step {step} cut after {cut} reports the failure");
                return;
            }
            crash_step(db, step, &mut keys, &mut undo).expect("step");
            if step == 2 {
                // Reverted: those blocks and patches are gone.
                keys.clear();
                undo.clear();
            }
        }
    }

    /// Opens the store in `dir`. sled's flusher thread outlives the last handle of a store
    /// by up to one flush and holds its file lock meanwhile, so an open right after a drop
    /// can find the store still locked (seen with the whole suite running): retried for up to
    /// two seconds.
    fn reopen(dir: &std::path::Path) -> ChainWriter {
        for _ in 0..200 {
            if let Ok(db) = ChainWriter::open(dir) {
                return db;
            }
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        ChainWriter::open(dir).expect("reopen")
    }

    /// Each kind of multi-key commit (a block of over a hundred keys, a dev patch, a revert, a
    /// rollback), cut short after `cut` of its operations as if the process died there (sled
    /// keeps what was applied, the journal holds the record), is whole once the store is
    /// opened again: it holds exactly the records of a store that was never interrupted.
    #[test]
    fn a_commit_cut_short_after_any_key_is_completed_when_the_store_reopens() {
        let whole: Vec<_> = (1..=5)
            .map(|steps| {
                let db = ChainWriter::in_memory().expect("store");
                cut_history(&db, steps, None);
                (db.head_number(), records(&db))
            })
            .collect();
        let dir = std::env::temp_dir().join(format!("hearth-cut-{}", std::process::id()));
        for steps in 1..=5 {
            for cut in [0, 1, 2, 17, 60, 100_000] {
                let _ = std::fs::remove_dir_all(&dir);
                {
                    let db = reopen(&dir);
                    cut_history(&db, steps, Some(cut));
                }
                let db = reopen(&dir);
                let (head, records_whole) = &whole[steps - 1];
                assert_eq!(db.head_number(), *head, "step {}, cut after {cut}", steps - 1);
                assert!(records(&db) == *records_whole, "step {}, cut after {cut}", steps - 1);
            }
        }
        let _ = std::fs::remove_dir_all(&dir);
    }
}
