//! A receipt's logs bloom, with the keccak of each address and topic remembered per thread.
//!
//! The bloom sets three bits per log address and per topic, each from that value's keccak: a
//! token transfer's one log costs four hashes, and 20% of a sequential ERC-20 block's
//! transaction loop went to them (BENCHMARKS.md, session 24). The values repeat: a block's logs
//! come from a few contracts, name a few event signatures, and their indexed topics name the
//! same holders again. So each thread that builds receipts keeps the hashes of the last values
//! it met in a small direct-mapped table (a fixed size: one slot per value, a new value takes
//! its slot's place), compared in full before use. The committer's and the miner's threads keep
//! theirs from block to block; a parallel block's helper threads live for the block, so theirs
//! start empty, and a thread makes its table only when it first meets a log.

use std::cell::RefCell;

use alloy_primitives::{B256, Bloom, Log, keccak256};

/// Slots of a thread's table: 2,048 of 65 bytes (the value, its length, its hash), 130 KiB.
const SLOTS: usize = 2048;

/// The last value seen in each slot (a length of 0: none yet) and its keccak.
struct Hashes {
    values: Box<[(u8, [u8; 32])]>,
    hashes: Box<[B256]>,
}

thread_local! {
    static HASHES: RefCell<Hashes> = RefCell::new(Hashes {
        values: vec![(0, [0; 32]); SLOTS].into_boxed_slice(),
        hashes: vec![B256::ZERO; SLOTS].into_boxed_slice(),
    });
}

impl Hashes {
    /// The keccak of `value` (an address or a topic: at most 32 bytes).
    fn keccak(&mut self, value: &[u8]) -> B256 {
        let mut padded = [0u8; 32];
        padded[..value.len()].copy_from_slice(value);
        // A value's length tells an address from a topic holding the same bytes.
        let len = value.len() as u8;
        let slot = slot_of(&padded);
        if self.values[slot] == (len, padded) {
            return self.hashes[slot];
        }
        let hash = keccak256(value);
        self.values[slot] = (len, padded);
        self.hashes[slot] = hash;
        hash
    }
}

/// The slot of a value: its four words, each turned by a different amount (an address and the
/// topic that holds it have the same bytes at different offsets), spread by a multiplication.
fn slot_of(padded: &[u8; 32]) -> usize {
    let mut mixed = 0u64;
    for (i, word) in padded.chunks_exact(8).enumerate() {
        let word = u64::from_le_bytes(word.try_into().expect("8 bytes"));
        mixed ^= word.rotate_left(16 * i as u32);
    }
    (mixed.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> (64 - SLOTS.trailing_zeros())) as usize
}

/// The bloom of `logs`, as `alloy_primitives::logs_bloom` makes it.
pub(crate) fn logs_bloom(logs: &[Log]) -> Bloom {
    if logs.is_empty() {
        return Bloom::ZERO;
    }
    HASHES.with_borrow_mut(|hashes| {
        let mut bloom = Bloom::ZERO;
        for log in logs {
            bloom.m3_2048_hashed(&hashes.keccak(log.address.as_slice()));
            for topic in log.topics() {
                bloom.m3_2048_hashed(&hashes.keccak(topic.as_slice()));
            }
        }
        bloom
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloy_primitives::{Address, LogData, U256};

    fn log(address: Address, topics: Vec<B256>) -> Log {
        Log { address, data: LogData::new_unchecked(topics, Default::default()) }
    }

    /// The same bloom as alloy's, for logs that repeat values, share bytes between an address
    /// and a topic, or collide in a slot (more distinct values than slots), in any order.
    #[test]
    fn blooms_are_alloys() {
        let address = |i: u64| Address::left_padding_from(&i.to_be_bytes());
        let topic = |i: u64| B256::from(U256::from(i));
        let mut logs = Vec::new();
        for i in 0..3 * SLOTS as u64 {
            let holder = address(i % 700);
            logs.push(log(address(1), vec![topic(7), holder.into_word(), topic(i)]));
            // An address, the topic that holds it, and a topic whose padded bytes are the
            // address's own (told apart by length).
            let same_bytes = B256::right_padding_from(holder.as_slice());
            logs.push(log(holder, vec![B256::left_padding_from(holder.as_slice()), same_bytes]));
        }
        for chunk in logs.chunks(5) {
            assert_eq!(logs_bloom(chunk), alloy_primitives::logs_bloom(chunk));
        }
        assert_eq!(logs_bloom(&logs), alloy_primitives::logs_bloom(&logs));
        assert_eq!(logs_bloom(&[]), Bloom::ZERO);
    }

    /// The slots spread the values a block meets: 1,000 holders' addresses and their topics
    /// fill most of the table.
    #[test]
    fn slots_spread_addresses_and_topics() {
        let mut used = vec![false; SLOTS];
        for i in 0..1000u64 {
            let holder = Address::from_slice(&keccak256(i.to_be_bytes())[12..]);
            for value in [holder.as_slice(), holder.into_word().as_slice()] {
                let mut padded = [0u8; 32];
                padded[..value.len()].copy_from_slice(value);
                used[slot_of(&padded)] = true;
            }
        }
        let used = used.iter().filter(|&&u| u).count();
        assert!(used > 1200, "2,000 values in {used} of {SLOTS} slots");
    }
}
