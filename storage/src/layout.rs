//! The key layout of Hearth's one sled tree.
//!
//! Everything lives in a single tree. Every commit (a block, a dev patch, a revert) is
//! journaled and applied key by key (`journal`, `key_writes`); the layout's part in that is
//! that records are versioned by block number, so what a reader at block N reads is not what a
//! later block writes (`chain`). Each record kind has a one-byte prefix; numbers are big-endian so that keys sort by block number
//! and a reverse range scan finds "the newest version at or before block N".

use alloy_primitives::{Address, B256, U256};

/// `H` + number: RLP of the block header.
pub(crate) const HEADER: u8 = b'H';
/// `h` + number: the block hash.
pub(crate) const HASH_BY_NUMBER: u8 = b'h';
/// `N` + hash: the block number.
pub(crate) const NUMBER_BY_HASH: u8 = b'N';
/// `B` + number + chunk: the block body (transactions and senders), in chunks (see `chunks`).
pub(crate) const BODY: u8 = b'B';
/// `R` + number + chunk: the block's receipts, in chunks (see `chunks`).
pub(crate) const RECEIPTS: u8 = b'R';
/// `T` + tx hash: block number (8 bytes) and index (4 bytes).
pub(crate) const TX_LOOKUP: u8 = b'T';
/// `O` + number: ommers and withdrawals of the block (absent when both are empty).
pub(crate) const EXTRAS: u8 = b'O';
/// `A` + address + number: the account as of that block (empty value: deleted).
pub(crate) const ACCOUNT: u8 = b'A';
/// `S` + address + incarnation + slot + number: a storage value as of that block (empty: zero).
pub(crate) const STORAGE: u8 = b'S';
/// `C` + code hash: contract bytecode.
pub(crate) const CODE: u8 = b'C';
/// `X` + node hash: RLP of a trie node (state and storage tries share the store).
pub(crate) const TRIE_NODE: u8 = b'X';

/// `P` + number: the state root of that block's state after dev patches (absent: no patch,
/// the header's root holds).
pub(crate) const PATCHED_ROOT: u8 = b'P';

/// `L` + number + sequence (u32): a dev patch made while that block was the head, for read
/// replicas to replay (`patch_log`).
pub(crate) const PATCH_LOG: u8 = b'L';

/// `I` + address + number + index (u32): the address appears in that transaction
/// (`address_index`).
pub(crate) const ADDRESS_INDEX: u8 = b'I';
/// `W` + number + chunk: the (index, address) pairs block `number` added to the address index,
/// so that removing the block removes them (`address_index`), in chunks (see `chunks`).
pub(crate) const BLOCK_APPEARANCES: u8 = b'W';

/// The key of the head pointer.
pub(crate) const HEAD_KEY: &[u8] = b"mhead";
/// The key of the chain configuration an imported chain runs under (JSON, opaque here).
pub(crate) const CHAIN_CONFIG_KEY: &[u8] = b"mchainconfig";
/// The genesis.json block 0 was made from (JSON text).
pub(crate) const GENESIS_DOCUMENT_KEY: &[u8] = b"mgenesisdoc";
/// The engine's safe and finalized blocks (`ForkchoiceMarks`, 80 bytes).
pub(crate) const FORKCHOICE_KEY: &[u8] = b"mforkchoice";
/// The key of the last commit sled holds whole: its journal sequence number (`journal`).
pub(crate) const COMMIT_SEQ_KEY: &[u8] = b"mcommitseq";
/// The key of the marker a commit applied key by key writes first (`journal`).
pub(crate) const PENDING_KEY: &[u8] = b"mpending";
/// The first block the address index covers (8 bytes, big-endian): written with a store's
/// first block; absent in a store written before the index existed (`address_index`).
pub(crate) const ADDRESS_INDEX_FROM_KEY: &[u8] = b"maddrindex";

/// Whether `key` holds a record of one block only (a version or record under that block's
/// number, or an index entry pointing at that block): a block commit cut short may delete it.
/// Trie nodes and code are shared by content, and the `m` keys by every commit.
pub(crate) fn belongs_to_one_block(key: &[u8]) -> bool {
    matches!(
        key.first(),
        Some(
            &(ACCOUNT
                | STORAGE
                | BODY
                | RECEIPTS
                | HEADER
                | HASH_BY_NUMBER
                | NUMBER_BY_HASH
                | TX_LOOKUP
                | EXTRAS
                | ADDRESS_INDEX
                | BLOCK_APPEARANCES)
        )
    )
}

/// Records that can be large (a block's transactions or receipts: megabytes) are stored as
/// chunks of at most `CHUNK_BYTES` under `key ++ chunk index`, never as one sled value.
///
/// Why: sled 0.34 writes a value larger than an eighth of its segment as a separate blob and
/// counts only the blob's pointer against `cache_capacity`, while the node that holds it keeps
/// the whole value in memory. Large values thus escape the cache bound and memory grows with
/// every block written (measured: ~3 MB per block of 100 KB transactions). A sled leaf holds at
/// most 16 entries, so 4 KiB chunks keep every node well under the blob threshold (128 KiB).
pub(crate) mod chunks {
    /// Largest chunk stored.
    pub(crate) const CHUNK_BYTES: usize = 4 * 1024;

    fn chunk_key(key: &[u8], index: u32) -> Vec<u8> {
        let mut chunk = Vec::with_capacity(key.len() + 4);
        chunk.extend_from_slice(key);
        chunk.extend_from_slice(&index.to_be_bytes());
        chunk
    }

    /// Adds `value` to `batch` as the chunks of `key` (one empty chunk for an empty value).
    pub(crate) fn insert(batch: &mut crate::WriteBatch, key: &[u8], value: &[u8]) {
        if value.is_empty() {
            batch.insert(chunk_key(key, 0), &[][..]);
        }
        for (index, piece) in value.chunks(CHUNK_BYTES).enumerate() {
            batch.insert(chunk_key(key, index as u32), piece);
        }
    }

    /// The value stored as the chunks of `key`, or as one value under `key` itself (stores
    /// written before chunking); `None` when neither exists.
    #[cfg(test)]
    pub(crate) fn get(db: &crate::kv::Kv, key: &[u8]) -> sled::Result<Option<Vec<u8>>> {
        let entries: Vec<_> = db.scan_prefix(key).collect::<sled::Result<_>>()?;
        Ok(assemble(key, entries))
    }

    /// The value of `key` from the entries under it, in key order: its chunks, or one value
    /// under `key` itself (stores written before chunking); `None` when there are none.
    pub(crate) fn assemble(
        key: &[u8],
        entries: impl IntoIterator<Item = (sled::IVec, sled::IVec)>,
    ) -> Option<Vec<u8>> {
        let mut value: Option<Vec<u8>> = None;
        for (k, piece) in entries {
            if k.len() == key.len() {
                return Some(piece.to_vec());
            }
            value.get_or_insert_with(Vec::new).extend_from_slice(&piece);
        }
        value
    }
}

pub(crate) fn number_key(prefix: u8, number: u64) -> [u8; 9] {
    let mut key = [0u8; 9];
    key[0] = prefix;
    key[1..].copy_from_slice(&number.to_be_bytes());
    key
}

pub(crate) fn hash_key(prefix: u8, hash: &B256) -> [u8; 33] {
    let mut key = [0u8; 33];
    key[0] = prefix;
    key[1..].copy_from_slice(hash.as_slice());
    key
}

pub(crate) fn account_key(address: &Address, number: u64) -> [u8; 29] {
    let mut key = [0u8; 29];
    key[0] = ACCOUNT;
    key[1..21].copy_from_slice(address.as_slice());
    key[21..].copy_from_slice(&number.to_be_bytes());
    key
}

/// The address and block of an account-version key ([`account_key`]); `None` for any other.
pub(crate) fn account_key_parts(key: &[u8]) -> Option<(Address, u64)> {
    if key.len() != 29 || key[0] != ACCOUNT {
        return None;
    }
    Some((Address::from_slice(&key[1..21]), be_u64(&key[21..])?))
}

pub(crate) fn storage_key(
    address: &Address,
    incarnation: u64,
    slot: &U256,
    number: u64,
) -> [u8; 69] {
    let mut key = [0u8; 69];
    key[0] = STORAGE;
    key[1..21].copy_from_slice(address.as_slice());
    key[21..29].copy_from_slice(&incarnation.to_be_bytes());
    key[29..61].copy_from_slice(&slot.to_be_bytes::<32>());
    key[61..].copy_from_slice(&number.to_be_bytes());
    key
}

/// The address, incarnation, slot and block of a storage-version key ([`storage_key`]);
/// `None` for any other.
pub(crate) fn storage_key_parts(key: &[u8]) -> Option<(Address, u64, U256, u64)> {
    if key.len() != 69 || key[0] != STORAGE {
        return None;
    }
    Some((
        Address::from_slice(&key[1..21]),
        be_u64(&key[21..29])?,
        U256::from_be_slice(&key[29..61]),
        be_u64(&key[61..])?,
    ))
}

/// Decodes a big-endian u64 stored as a value.
pub(crate) fn be_u64(bytes: &[u8]) -> Option<u64> {
    Some(u64::from_be_bytes(bytes.get(..8)?.try_into().ok()?))
}

#[cfg(test)]
mod tests {
    use super::chunks;

    fn tree() -> crate::kv::Kv {
        crate::kv::Kv::Sled(sled::Config::new().temporary(true).open().expect("temporary sled"))
    }

    #[test]
    fn chunked_values_round_trip_and_stay_small() {
        let db = tree();
        let key = super::number_key(super::BODY, 7);
        let neighbour = super::number_key(super::BODY, 8);
        let value: Vec<u8> = (0..3 * chunks::CHUNK_BYTES + 5).map(|i| i as u8).collect();
        let mut batch = crate::WriteBatch::default();
        chunks::insert(&mut batch, &key, &value);
        chunks::insert(&mut batch, &neighbour, b"next block");
        chunks::insert(&mut batch, &super::number_key(super::BODY, 9), b"");
        batch.apply(&db).expect("batch");
        assert_eq!(chunks::get(&db, &key).expect("read"), Some(value));
        assert_eq!(chunks::get(&db, &neighbour).expect("read"), Some(b"next block".to_vec()));
        assert_eq!(
            chunks::get(&db, &super::number_key(super::BODY, 9)).expect("read"),
            Some(vec![])
        );
        assert_eq!(chunks::get(&db, &super::number_key(super::BODY, 10)).expect("read"), None);
        assert!(db.iter().all(|entry| entry.expect("value").1.len() <= chunks::CHUNK_BYTES));
        assert_eq!(db.scan_prefix(key).count(), 4, "3 full chunks and a tail");
    }

    /// A revert finds every chunk of a record, and only those, whether the block is applied
    /// to sled or still deferred (`ChainDb::keys_with_prefix`).
    #[test]
    fn every_chunk_of_a_record_and_nothing_else_is_found_for_removal() {
        let key = super::number_key(super::BODY, 7);
        let neighbour = super::number_key(super::BODY, 8);
        let value: Vec<u8> = (0..3 * chunks::CHUNK_BYTES + 5).map(|i| i as u8).collect();
        let store = crate::ChainWriter::in_memory().expect("store");
        let mut batch = crate::WriteBatch::default();
        chunks::insert(&mut batch, &key, &value);
        chunks::insert(&mut batch, &neighbour, b"next block");
        store.commit_batch(batch, 0).expect("commit");
        let found = store.keys_with_prefix(&key).expect("keys");
        assert_eq!(found.len(), 4, "3 full chunks and a tail");
        let mut batch = crate::WriteBatch::default();
        for chunk in found {
            batch.remove(chunk);
        }
        store.commit_batch(batch, 0).expect("commit");
        assert_eq!(chunks::get(&store.tree(), &key).expect("read"), None);
        let kept = chunks::get(&store.tree(), &neighbour).expect("read");
        assert_eq!(kept, Some(b"next block".to_vec()));
    }

    #[test]
    fn a_value_stored_before_chunking_still_reads() {
        let db = tree();
        let key = super::number_key(super::RECEIPTS, 3);
        db.insert(key, &b"one value"[..]).expect("insert");
        assert_eq!(chunks::get(&db, &key).expect("read"), Some(b"one value".to_vec()));
    }
}
