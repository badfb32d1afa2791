//! The address index: for every address, the transactions it appears in, by block and position.
//!
//! An address appears in a transaction when it sent it, received it or was created by it, when
//! a frame of the transaction ran its code (any CALL kind, a DELEGATECALL's library too, frames
//! that reverted included), or when the transaction's committed state touched it (paid,
//! changed, created or destroyed it): what the executor noted (`BlockDraft::touched`). The
//! block's coinbase counts only as sender or recipient: every transaction pays it a fee. That
//! is Erigon's index but for two cases: the address of a CREATE and the beneficiary of a
//! SELFDESTRUCT in a frame that reverted. Otterscan's address pages read it
//! (`ots_searchTransactionsBefore/After`): a range scan over one address's keys instead of a
//! scan of every block.
//!
//! Layout: `I` + address + number + index (empty value) per appearance, and `W` + number with
//! the block's (index, address) pairs, so that a revert or rollback removes exactly the keys
//! the block added. Both are written in the block's own batch (one journaled commit with the
//! block), so the index never holds an entry for an unwritten block nor misses one of a
//! written block, and a revert removes them with the block's other records.

use std::collections::BTreeSet;

use alloy_consensus::Transaction as _;
use alloy_primitives::{Address, TxKind};

use crate::records::StoredBody;
use crate::{ChainDb, ChainWriter, StorageError, layout};

/// `I` + address + number + index: the address appears in that transaction.
const ENTRY_LEN: usize = 1 + 20 + 8 + 4;
/// One (index, address) pair of a block's `W` record.
const PAIR_LEN: usize = 4 + 20;

/// One transaction an address appears in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct Appearance {
    /// The block.
    pub block: u64,
    /// The transaction's position in the block.
    pub index: u32,
}

fn entry_key(address: &Address, number: u64, index: u32) -> [u8; ENTRY_LEN] {
    let mut key = [0u8; ENTRY_LEN];
    key[0] = layout::ADDRESS_INDEX;
    key[1..21].copy_from_slice(address.as_slice());
    key[21..29].copy_from_slice(&number.to_be_bytes());
    key[29..].copy_from_slice(&index.to_be_bytes());
    key
}

fn address_prefix(address: &Address) -> [u8; 21] {
    let mut prefix = [0u8; 21];
    prefix[0] = layout::ADDRESS_INDEX;
    prefix[1..].copy_from_slice(address.as_slice());
    prefix
}

fn appearance_of(key: &[u8]) -> Option<Appearance> {
    if key.len() != ENTRY_LEN {
        return None;
    }
    let block = u64::from_be_bytes(key[21..29].try_into().ok()?);
    let index = u32::from_be_bytes(key[29..].try_into().ok()?);
    Some(Appearance { block, index })
}

/// The (index, address) pairs of a block: each transaction's sender, recipient or created
/// contract, and the accounts it touched (`touched[i]` for transaction `i`, empty when the
/// block was not executed here), the coinbase left out of the touched ones. Sorted, unique.
pub(crate) fn block_pairs(
    body: &StoredBody,
    touched: &[Vec<Address>],
    coinbase: Address,
) -> Vec<(u32, Address)> {
    let mut pairs = BTreeSet::new();
    for (index, (tx, sender)) in body.transactions.iter().zip(&body.senders).enumerate() {
        let index = index as u32;
        pairs.insert((index, *sender));
        match tx.kind() {
            TxKind::Call(to) => {
                pairs.insert((index, to));
            }
            TxKind::Create => {
                pairs.insert((index, sender.create(tx.nonce())));
            }
        }
        for address in touched.get(index as usize).into_iter().flatten() {
            if *address != coinbase {
                pairs.insert((index, *address));
            }
        }
    }
    pairs.into_iter().collect()
}

/// Adds block `number`'s index entries (`pairs`, from [`block_pairs`]) to `batch`.
pub(crate) fn add_block(batch: &mut crate::WriteBatch, number: u64, pairs: &[(u32, Address)]) {
    if pairs.is_empty() {
        return;
    }
    let mut record = Vec::with_capacity(pairs.len() * PAIR_LEN);
    for (index, address) in pairs {
        batch.insert(&entry_key(address, number, *index)[..], &[][..]);
        record.extend_from_slice(&index.to_be_bytes());
        record.extend_from_slice(address.as_slice());
    }
    // In chunks: a big block's record (24 bytes a pair) would pass sled's blob threshold.
    let key = layout::number_key(layout::BLOCK_APPEARANCES, number);
    layout::chunks::insert(batch, &key, &record);
}

/// Adds the removal of block `number`'s index entries to `batch` (what [`add_block`] wrote).
pub(crate) fn remove_block(
    db: &ChainDb,
    batch: &mut crate::WriteBatch,
    number: u64,
) -> Result<(), StorageError> {
    let keys = db.keys_with_prefix(&layout::number_key(layout::BLOCK_APPEARANCES, number))?;
    let mut record = Vec::new();
    for key in &keys {
        record.extend(db.raw_get(key)?.unwrap_or_default());
    }
    for pair in record.chunks_exact(PAIR_LEN) {
        let index = u32::from_be_bytes(pair[..4].try_into().expect("four bytes"));
        let address = Address::from_slice(&pair[4..]);
        batch.remove(&entry_key(&address, number, index)[..]);
    }
    for key in keys {
        batch.remove(key);
    }
    Ok(())
}

impl ChainWriter {
    /// Indexes blocks written before the address index existed (a store of an older Hearth):
    /// each of `blocks` as (number, the accounts each of its transactions touched, from a
    /// replay), in one journaled commit. With `complete_from`, also records that the index now
    /// covers the store from that block, so the next open does not index again. Indexing a
    /// block twice writes the same keys: a rebuild cut short is simply run again.
    pub fn index_old_blocks(
        &self,
        blocks: &[(u64, Vec<Vec<Address>>)],
        complete_from: Option<u64>,
    ) -> Result<(), StorageError> {
        let head =
            self.head_number().ok_or(StorageError::Corrupt { what: "head before indexing" })?;
        let mut batch = crate::WriteBatch::default();
        for (number, touched) in blocks {
            let body = self
                .body(*number)?
                .unwrap_or(StoredBody { transactions: Vec::new(), senders: Vec::new() });
            let coinbase = self.header(*number)?.map(|h| h.beneficiary).unwrap_or_default();
            add_block(&mut batch, *number, &block_pairs(&body, touched, coinbase));
        }
        if let Some(first) = complete_from {
            batch.insert(layout::ADDRESS_INDEX_FROM_KEY, &first.to_be_bytes()[..]);
        }
        self.commit_batch(batch, head)
    }
}

/// Which way [`ChainDb::appearances`] walks an address's history.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Direction {
    /// Newest first, from blocks before the bound.
    Before,
    /// Oldest first, from blocks after the bound.
    After,
}

impl ChainDb {
    /// The first block the address index covers: every block from it to the head is indexed.
    /// `None` for a store written before the index existed ([`ChainWriter::index_old_blocks`]).
    pub fn address_index_from(&self) -> Result<Option<u64>, StorageError> {
        Ok(self.raw_get(layout::ADDRESS_INDEX_FROM_KEY)?.and_then(|v| {
            let bytes: [u8; 8] = v.as_slice().try_into().ok()?;
            Some(u64::from_be_bytes(bytes))
        }))
    }

    /// The deferred block's entries under `prefix` with keys in `low..high`, in key order.
    fn deferred_appearances(
        &self,
        prefix: &[u8],
        low: &[u8],
        high: &[u8],
    ) -> Result<Vec<Appearance>, StorageError> {
        Ok(self
            .deferred_keys(prefix)?
            .iter()
            .filter(|key| key.as_slice() >= low && key.as_slice() < high)
            .filter_map(|key| appearance_of(key))
            .collect())
    }

    /// The transactions `address` appears in, in blocks strictly before `bound` (`Before`,
    /// newest first) or strictly after it (`After`, oldest first), up to the head this reader
    /// sees. `visit` is called for each and says whether to go on: a page is whole blocks,
    /// which only the caller knows when to stop at.
    pub fn appearances(
        &self,
        address: &Address,
        direction: Direction,
        bound: u64,
        mut visit: impl FnMut(Appearance) -> bool,
    ) -> Result<(), StorageError> {
        let Some(head) = self.head_number() else { return Ok(()) };
        let prefix = address_prefix(address);
        let (low, high) = match direction {
            Direction::Before => (entry_key(address, 0, 0), entry_key(address, bound, 0)),
            Direction::After => {
                let Some(first) = bound.checked_add(1) else { return Ok(()) };
                (entry_key(address, first, 0), entry_key(address, u64::MAX, u32::MAX))
            }
        };
        // The deferred block (at most one) is merged in; sled holds every other entry.
        let mut deferred = self.deferred_appearances(&prefix, &low, &high)?;
        let tree = self.tree();
        let range = tree.range(&low[..]..&high[..]);
        let mut stored = range.keys().map(|key| key.map(|k| appearance_of(&k)));
        let mut next_stored = |backwards: bool| -> Result<Option<Appearance>, StorageError> {
            loop {
                let item = if backwards { stored.next_back() } else { stored.next() };
                match item {
                    None => return Ok(None),
                    Some(Ok(Some(found))) => return Ok(Some(found)),
                    Some(Ok(None)) => continue,
                    Some(Err(error)) => return Err(error.into()),
                }
            }
        };
        let backwards = direction == Direction::Before;
        if backwards {
            deferred.reverse();
        }
        let mut deferred = deferred.into_iter().peekable();
        let mut pending = next_stored(backwards)?;
        loop {
            // The next of the two sources in walking order (a key in both is visited once).
            let take_deferred = match (pending, deferred.peek()) {
                (None, None) => return Ok(()),
                (None, Some(_)) => true,
                (Some(_), None) => false,
                (Some(s), Some(d)) if s == *d => {
                    deferred.next();
                    false
                }
                (Some(s), Some(d)) => (*d > s) == backwards,
            };
            let next = if take_deferred {
                deferred.next().expect("peeked")
            } else {
                let found = pending.expect("some");
                pending = next_stored(backwards)?;
                found
            };
            // Entries of a block being applied that this reader's head does not include yet.
            if next.block > head {
                continue;
            }
            if !visit(next) {
                return Ok(());
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use alloy_consensus::{Header, SignableTransaction, TxEnvelope, TxLegacy};
    use alloy_primitives::{Signature, U256};

    use super::*;
    use crate::{BlockDraft, BlockWriter, ChainWriter, StateDiff};

    const ALICE: Address = Address::repeat_byte(0xa1);
    const BOB: Address = Address::repeat_byte(0xb0);
    const CAROL: Address = Address::repeat_byte(0xc0);

    /// Block `number`: `count` transfers from ALICE to BOB, the last touching CAROL too.
    fn block(number: u64, count: u64) -> BlockDraft {
        let transactions: Vec<TxEnvelope> = (0..count)
            .map(|i| {
                let tx = TxLegacy {
                    nonce: number * 10 + i,
                    gas_limit: 21_000,
                    to: TxKind::Call(BOB),
                    ..Default::default()
                };
                tx.into_signed(Signature::new(U256::from(1), U256::from(2), false)).into()
            })
            .collect();
        let mut touched = vec![vec![ALICE, BOB]; count as usize];
        if let Some(last) = touched.last_mut() {
            last.push(CAROL);
        }
        BlockDraft {
            header: Header { number, timestamp: number, ..Header::default() },
            body: StoredBody { senders: vec![ALICE; transactions.len()], transactions },
            receipts: Vec::new(),
            touched,
        }
    }

    fn found(db: &ChainDb, who: Address, direction: Direction, bound: u64) -> Vec<(u64, u32)> {
        let mut all = Vec::new();
        db.appearances(&who, direction, bound, |a| {
            all.push((a.block, a.index));
            true
        })
        .expect("read");
        all
    }

    /// Before walks newest first below the bound, After oldest first above it; the deferred
    /// block (not yet in sled) is merged in; a revert takes a block's entries away.
    #[test]
    fn searches_walk_whole_history_both_ways_and_follow_a_revert() {
        let db = ChainWriter::in_memory().expect("store");
        let mut writer = BlockWriter::new(db.clone(), 0);
        writer.set_deferred_apply(true);
        for (number, count) in [(0, 0), (1, 2), (2, 0), (3, 1), (4, 2)] {
            writer.write(block(number, count), &StateDiff::default()).expect("block");
        }
        assert_eq!(db.address_index_from().expect("read"), Some(0));
        let before = found(&db, ALICE, Direction::Before, u64::MAX);
        assert_eq!(before, vec![(4, 1), (4, 0), (3, 0), (1, 1), (1, 0)]);
        assert_eq!(found(&db, BOB, Direction::Before, 4), vec![(3, 0), (1, 1), (1, 0)]);
        assert_eq!(found(&db, BOB, Direction::After, 1), vec![(3, 0), (4, 0), (4, 1)]);
        assert_eq!(found(&db, CAROL, Direction::After, 0), vec![(1, 1), (3, 0), (4, 1)]);
        assert_eq!(found(&db, Address::repeat_byte(7), Direction::Before, u64::MAX), vec![]);
        let mut first = None;
        db.appearances(&ALICE, Direction::After, 0, |a| {
            first = Some(a);
            false
        })
        .expect("read");
        assert_eq!(first, Some(Appearance { block: 1, index: 0 }));

        let keys = crate::BlockKeys { number: 4, accounts: Vec::new() };
        crate::revert_blocks(&db, 3, &[keys], &[]).expect("revert");
        assert_eq!(found(&db, CAROL, Direction::After, 0), vec![(1, 1), (3, 0)]);
        assert_eq!(
            db.raw_get(&layout::number_key(layout::BLOCK_APPEARANCES, 4)).expect("read"),
            None
        );
    }

    #[test]
    fn keys_sort_by_address_then_block_then_position() {
        let a = Address::repeat_byte(1);
        assert!(entry_key(&a, 1, 9) < entry_key(&a, 2, 0));
        assert!(entry_key(&a, 2, 0) < entry_key(&a, 2, 1));
        assert!(entry_key(&a, u64::MAX, u32::MAX) < entry_key(&Address::repeat_byte(2), 0, 0));
        assert_eq!(appearance_of(&entry_key(&a, 7, 3)), Some(Appearance { block: 7, index: 3 }));
        assert_eq!(appearance_of(&address_prefix(&a)), None);
    }

    /// The index keys and the marker, as sled holds them.
    fn index_records(db: &ChainWriter) -> Vec<(Vec<u8>, Vec<u8>)> {
        db.checkpoint().expect("checkpoint");
        db.tree()
            .iter()
            .map(|entry| entry.expect("entry"))
            .filter(|(key, _)| {
                matches!(key.first(), Some(&(layout::ADDRESS_INDEX | layout::BLOCK_APPEARANCES)))
                    || key.as_ref() == layout::ADDRESS_INDEX_FROM_KEY
            })
            .map(|(key, value)| (key.to_vec(), value.to_vec()))
            .collect()
    }

    /// A store without the index (an older Hearth's), indexed from its blocks and what their
    /// replays touched, holds what a store indexed as it was written holds.
    #[test]
    fn indexing_an_older_store_writes_what_indexing_as_written_does() {
        let db = ChainWriter::in_memory().expect("store");
        let mut writer = BlockWriter::new(db.clone(), 0);
        let blocks = [(0, 0), (1, 2), (2, 0), (3, 3)];
        for (number, count) in blocks {
            writer.write(block(number, count), &StateDiff::default()).expect("block");
        }
        let whole = index_records(&db);
        assert!(whole.len() > 5, "{whole:?}");
        for (key, _) in &whole {
            db.tree().remove(key).expect("remove");
        }
        assert_eq!(db.address_index_from().expect("read"), None);
        let touched: Vec<_> = blocks.iter().map(|(n, c)| (*n, block(*n, *c).touched)).collect();
        db.index_old_blocks(&touched[..2], None).expect("first part");
        assert_eq!(db.address_index_from().expect("read"), None, "not complete yet");
        db.index_old_blocks(&touched, Some(0)).expect("all, once more");
        assert_eq!(index_records(&db), whole);
    }
}
