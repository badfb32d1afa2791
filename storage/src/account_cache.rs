//! `AccountCache`: the newest version of the accounts written recently, so that reads of them
//! at the head skip sled's reverse range scan.
//!
//! An account read is "the newest version at or before block N": a reverse range scan, which
//! in sled copies a whole leaf node and often seeks its predecessor. After 50,000 blocks that
//! was ~36 µs of every sequential transfer (the pool's nonce check, the executor's three
//! reads, the block writer's previous versions), nearly all of it for accounts the previous
//! block had just written. So every commit records here what it writes: the newest version of
//! an account is block `v`'s, and a read at any N ≥ v is answered from memory. Reads at older
//! blocks, and of accounts not written since the store was opened, go to the store.
//!
//! It stays exact because commits fill it in commit order, a commit that removes a version (a
//! revert) evicts the account, and a read fills it only when it read at or after the head
//! while no commit ran (a sequence count, odd while a commit runs, is the same before and
//! after the read): then the version it found is the newest of all. Bounded by two
//! generations, as `NodeCache`.

use std::sync::RwLock;
use std::sync::atomic::{AtomicU64, Ordering};

use alloy_primitives::Address;
use alloy_primitives::map::AddressMap;
use alloy_rlp::Decodable;

use crate::journal::WriteBatch;
use crate::layout;
use crate::records::StoredAccount;

/// Accounts per generation: at most twice this many are kept (~200 bytes each).
const GENERATION_ENTRIES: usize = 16 * 1024;

/// The newest version of an account: written at `block`; `None` when it was deleted.
#[derive(Debug, Clone)]
struct Newest {
    block: u64,
    account: Option<StoredAccount>,
}

#[derive(Debug, Default)]
struct Generations {
    hot: AddressMap<Newest>,
    cold: AddressMap<Newest>,
}

/// Shared by every clone of a `ChainDb`.
#[derive(Debug, Default)]
pub(crate) struct AccountCache {
    generations: RwLock<Generations>,
    /// Commits begun plus commits ended: odd while one runs.
    commits: AtomicU64,
}

/// Marks a commit as running until dropped.
pub(crate) struct Writing<'a>(&'a AtomicU64);

impl Drop for Writing<'_> {
    fn drop(&mut self) {
        self.0.fetch_add(1, Ordering::SeqCst);
    }
}

impl AccountCache {
    /// Marks a commit as running (from before it records its versions until after the head
    /// moved) for as long as the guard lives.
    pub(crate) fn writing(&self) -> Writing<'_> {
        self.commits.fetch_add(1, Ordering::SeqCst);
        Writing(&self.commits)
    }

    /// The commit count when no commit runs: take it before reading the head, and pass it to
    /// [`Self::fill`].
    pub(crate) fn stable(&self) -> Option<u64> {
        let count = self.commits.load(Ordering::SeqCst);
        count.is_multiple_of(2).then_some(count)
    }

    /// Keeps what a read at or after the head found (`block`: the version's block, 0 when
    /// there was none), unless a commit began since `stable` said `count`.
    pub(crate) fn fill(
        &self,
        address: &Address,
        count: u64,
        block: u64,
        account: Option<StoredAccount>,
    ) {
        let Ok(mut generations) = self.generations.write() else { return };
        // Under the lock: a commit that begins now records after this, and wins.
        if self.commits.load(Ordering::SeqCst) == count {
            generations.keep(*address, Newest { block, account });
        }
    }

    /// The account as of block `number`, when its newest version is known and not after
    /// `number` (`Some(None)`: it does not exist); `None` when the store must be asked.
    pub(crate) fn get(&self, address: &Address, number: u64) -> Option<Option<StoredAccount>> {
        let generations = self.generations.read().ok()?;
        let newest = generations.hot.get(address).or_else(|| generations.cold.get(address))?;
        (newest.block <= number).then(|| newest.account.clone())
    }

    /// Forgets everything (after a commit that failed half-way).
    pub(crate) fn clear(&self) {
        if let Ok(mut generations) = self.generations.write() {
            *generations = Generations::default();
        }
    }

    /// Records the account versions `batch` writes, in its order; an account one of its
    /// removes touches is forgotten. Call for every commit, before the head moves.
    pub(crate) fn record(&self, batch: &WriteBatch) {
        let Ok(mut generations) = self.generations.write() else { return };
        for (key, value) in batch.account_ops() {
            let Some((address, block)) = parse_account_key(key) else { continue };
            let account = match value {
                Some([]) => Some(None),
                Some(mut value) => StoredAccount::decode(&mut value).ok().map(Some),
                None => None,
            };
            match account {
                Some(account) => generations.keep(address, Newest { block, account }),
                // Removed (or unreadable): the store knows which version is newest now.
                None => {
                    generations.hot.remove(&address);
                    generations.cold.remove(&address);
                }
            }
        }
    }
}

impl Generations {
    fn keep(&mut self, address: Address, newest: Newest) {
        if self.hot.len() >= GENERATION_ENTRIES && !self.hot.contains_key(&address) {
            self.cold = std::mem::take(&mut self.hot);
        }
        self.hot.insert(address, newest);
    }
}

/// The address and block of an account-version key (`layout::account_key`).
fn parse_account_key(key: &[u8]) -> Option<(Address, u64)> {
    if key.len() != 29 || key[0] != layout::ACCOUNT {
        return None;
    }
    Some((Address::from_slice(&key[1..21]), layout::be_u64(&key[21..])?))
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloy_primitives::U256;

    fn account(nonce: u64) -> StoredAccount {
        StoredAccount::new(nonce, U256::from(nonce * 10), 0)
    }

    #[test]
    fn answers_reads_at_or_after_the_newest_version_and_forgets_removed_ones() {
        let cache = AccountCache::default();
        let a = Address::repeat_byte(1);
        assert!(cache.get(&a, 5).is_none(), "never written: ask the store");

        let mut block = WriteBatch::default();
        block.insert(layout::account_key(&a, 3), alloy_rlp::encode(account(1)));
        block.insert(layout::account_key(&a, 4), alloy_rlp::encode(account(2)));
        cache.record(&block);
        assert_eq!(cache.get(&a, 4), Some(Some(account(2))));
        assert_eq!(cache.get(&a, 9), Some(Some(account(2))));
        assert!(cache.get(&a, 3).is_none(), "older blocks: ask the store");

        let mut deleted = WriteBatch::default();
        deleted.insert(layout::account_key(&a, 6), []);
        cache.record(&deleted);
        assert_eq!(cache.get(&a, 6), Some(None));

        let mut revert = WriteBatch::default();
        revert.remove(layout::account_key(&a, 6));
        cache.record(&revert);
        assert!(cache.get(&a, 6).is_none(), "a removed version: ask the store");
    }

    #[test]
    fn a_read_fills_only_when_no_commit_ran_meanwhile() {
        let cache = AccountCache::default();
        let a = Address::repeat_byte(2);
        let count = cache.stable().expect("no commit runs");
        cache.fill(&a, count, 0, None);
        assert_eq!(cache.get(&a, 7), Some(None), "absent: no version at all");

        let b = Address::repeat_byte(3);
        let count = cache.stable().unwrap();
        {
            let _writing = cache.writing();
            assert!(cache.stable().is_none(), "a commit runs");
            let mut block = WriteBatch::default();
            block.insert(layout::account_key(&b, 8), alloy_rlp::encode(account(1)));
            cache.record(&block);
        }
        // What a read from before that commit found must not replace what it wrote.
        cache.fill(&b, count, 0, None);
        assert_eq!(cache.get(&b, 8), Some(Some(account(1))));
    }

    #[test]
    fn stays_within_two_generations() {
        let cache = AccountCache::default();
        for i in 0..(3 * GENERATION_ENTRIES as u64) {
            let mut batch = WriteBatch::default();
            let address = Address::left_padding_from(&i.to_be_bytes());
            batch.insert(layout::account_key(&address, i), alloy_rlp::encode(account(i)));
            cache.record(&batch);
        }
        let generations = cache.generations.read().unwrap();
        assert!(generations.hot.len() + generations.cold.len() <= 2 * GENERATION_ENTRIES);
        let newest = Address::left_padding_from(&(3 * GENERATION_ENTRIES as u64 - 1).to_be_bytes());
        assert!(generations.hot.contains_key(&newest));
    }
}
