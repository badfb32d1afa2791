//! The key layout of Hearth's one sled tree.
//!
//! Everything lives in a single tree so that one block commit is one atomic `apply_batch`
//! (sled batches are atomic per tree only). Each record kind has a one-byte prefix; numbers are
//! big-endian so that keys sort by block number and a reverse range scan finds "the newest
//! version at or before block N".

use alloy_primitives::{Address, B256, U256};

/// `H` + number: RLP of the block header.
pub(crate) const HEADER: u8 = b'H';
/// `h` + number: the block hash.
pub(crate) const HASH_BY_NUMBER: u8 = b'h';
/// `N` + hash: the block number.
pub(crate) const NUMBER_BY_HASH: u8 = b'N';
/// `B` + number: the block body (transactions and senders).
pub(crate) const BODY: u8 = b'B';
/// `R` + number: the block's receipts.
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

/// The key of the head pointer.
pub(crate) const HEAD_KEY: &[u8] = b"mhead";
/// The key of the chain configuration an imported chain runs under (JSON, opaque here).
pub(crate) const CHAIN_CONFIG_KEY: &[u8] = b"mchainconfig";

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

/// Decodes a big-endian u64 stored as a value.
pub(crate) fn be_u64(bytes: &[u8]) -> Option<u64> {
    Some(u64::from_be_bytes(bytes.get(..8)?.try_into().ok()?))
}
