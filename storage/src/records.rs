//! The records Hearth stores: accounts, block bodies and receipts.

use alloy_consensus::{Header, ReceiptEnvelope, TxEnvelope};
use alloy_eips::eip4895::Withdrawal;
use alloy_primitives::{Address, B256, Bytes, U256, keccak256};
use alloy_rlp::{RlpDecodable, RlpEncodable};

use crate::trie::EMPTY_ROOT;

/// keccak256 of empty code.
pub const EMPTY_CODE_HASH: B256 =
    alloy_primitives::b256!("c5d2460186f7233c927e7db2dcc703c0e500b653ca82273b7bfad8045d85a470");

/// An account as stored: the trie fields plus the storage incarnation.
///
/// The incarnation is the block number at which the account's current storage began (it was
/// created, re-created or its storage wiped). Storage records are keyed by it, so wiping an
/// account's storage is O(1): the old incarnation's slots are simply no longer looked at.
#[derive(Debug, Clone, PartialEq, Eq, RlpEncodable, RlpDecodable)]
pub struct StoredAccount {
    /// Transaction count.
    pub nonce: u64,
    /// Balance in wei.
    pub balance: U256,
    /// keccak256 of the code.
    pub code_hash: B256,
    /// Root of the account's storage trie.
    pub storage_root: B256,
    /// Block number at which the current storage began.
    pub incarnation: u64,
}

impl StoredAccount {
    /// A fresh account with no code and no storage.
    pub const fn new(nonce: u64, balance: U256, incarnation: u64) -> Self {
        Self { nonce, balance, code_hash: EMPTY_CODE_HASH, storage_root: EMPTY_ROOT, incarnation }
    }

    /// The RLP value of the account in the state trie: `[nonce, balance, storageRoot, codeHash]`.
    pub fn trie_value(&self) -> Vec<u8> {
        #[derive(RlpEncodable)]
        struct TrieAccount {
            nonce: u64,
            balance: U256,
            storage_root: B256,
            code_hash: B256,
        }
        alloy_rlp::encode(TrieAccount {
            nonce: self.nonce,
            balance: self.balance,
            storage_root: self.storage_root,
            code_hash: self.code_hash,
        })
    }
}

/// The state trie key of an address (secure trie).
pub fn account_trie_key(address: &Address) -> B256 {
    keccak256(address)
}

/// The storage trie key of a slot (secure trie).
pub fn storage_trie_key(slot: &U256) -> B256 {
    keccak256(slot.to_be_bytes::<32>())
}

/// The transactions of a block with their recovered senders, as stored.
#[derive(Debug, Clone, PartialEq, Eq, RlpEncodable, RlpDecodable)]
pub struct StoredBody {
    /// Transactions in block order.
    pub transactions: Vec<TxEnvelope>,
    /// The sender of each transaction.
    pub senders: Vec<Address>,
}

/// The parts of a block body besides its transactions: ommer headers (pre-merge) and
/// withdrawals (Shanghai+). Kept apart from [`StoredBody`] so that stores written before they
/// were recorded stay readable: a block without the record has neither.
#[derive(Debug, Clone, Default, PartialEq, Eq, RlpEncodable, RlpDecodable)]
pub struct BlockExtras {
    /// Ommer (uncle) headers in block order.
    pub ommers: Vec<Header>,
    /// Withdrawals in block order.
    pub withdrawals: Vec<Withdrawal>,
}

impl BlockExtras {
    /// Whether there is nothing to store.
    pub fn is_empty(&self) -> bool {
        self.ommers.is_empty() && self.withdrawals.is_empty()
    }
}

/// A whole block as committed: header, hash, body and receipts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SealedBlock {
    /// The header.
    pub header: Header,
    /// keccak256 of the RLP header.
    pub hash: B256,
    /// Transactions and senders.
    pub body: StoredBody,
    /// One receipt per transaction.
    pub receipts: Vec<ReceiptEnvelope>,
    /// Ommers and withdrawals.
    pub extras: BlockExtras,
}

impl SealedBlock {
    /// The block number.
    pub const fn number(&self) -> u64 {
        self.header.number
    }

    /// Size in bytes of the block's RLP encoding (header, transactions, ommers, withdrawals).
    pub fn size(&self) -> u64 {
        use alloy_rlp::Encodable;
        let mut len = self.header.length();
        len += alloy_rlp::list_length(&self.body.transactions);
        len += alloy_rlp::list_length(&self.extras.ommers);
        if self.header.withdrawals_root.is_some() {
            len += alloy_rlp::list_length(&self.extras.withdrawals);
        }
        (alloy_rlp::length_of_length(len) + len) as u64
    }
}

/// A contract's code, shared cheaply.
pub type Code = Bytes;
