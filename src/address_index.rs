//! Indexing a store written before the address index existed (`hearth_storage`'s
//! `address_index`): every stored block is replayed on its parent's state to learn what its
//! transactions touched, and the entries are written a thousand blocks per journaled commit,
//! with a progress line every two seconds. Runs once, at start, before the node serves: the
//! last commit records that the index covers the store, so a rebuild cut short (kill -9) is
//! run again from the start at the next open, which rewrites the same keys.

use std::time::{Duration, Instant};

use hearth_actors::ExecutorActor;
use hearth_storage::{ChainWriter, StorageError};
use tracing::{info, warn};

/// Blocks indexed per journaled commit.
const BLOCKS_PER_COMMIT: u64 = 1_000;
/// How often a rebuild says how far it got.
const PROGRESS_EVERY: Duration = Duration::from_secs(2);

/// Why the address index of an older store could not be built.
#[derive(Debug, thiserror::Error)]
pub enum IndexError {
    /// The store failed.
    #[error("cannot write the address index: {0}")]
    Storage(#[from] StorageError),
}

/// Builds the address index of `db` if the store predates it; does nothing otherwise. The
/// store's first block (0, or a fork's fork block, whose parent state is the upstream's) is
/// indexed from its body alone: senders, recipients and created contracts.
pub fn index_old_store(db: &ChainWriter, executor: &mut ExecutorActor) -> Result<(), IndexError> {
    let Some(head) = db.head_number() else { return Ok(()) };
    if db.address_index_from()?.is_some() {
        return Ok(());
    }
    let first = db.fork().map_or(0, |fork| fork.block());
    info!(target: "node", blocks = head - first + 1, "building the address index of a store written before it existed");
    let started = Instant::now();
    let mut said = started;
    let mut chunk = vec![(first, Vec::new())];
    for number in first + 1..=head {
        // A block that does not replay (a fork's upstream unreachable, say) is indexed from
        // its body: senders, recipients and created contracts, still every transaction.
        let touched = executor.touched_accounts(number).unwrap_or_else(|error| {
            warn!(target: "node", number, %error, "indexed from the block's body alone: it did not replay");
            Vec::new()
        });
        chunk.push((number, touched));
        if chunk.len() as u64 >= BLOCKS_PER_COMMIT {
            db.index_old_blocks(&chunk, None)?;
            chunk.clear();
        }
        if said.elapsed() >= PROGRESS_EVERY {
            said = Instant::now();
            info!(target: "node", done = number - first, of = head - first, "address index");
        }
    }
    db.index_old_blocks(&chunk, Some(first))?;
    info!(target: "node", blocks = head - first + 1, took = ?started.elapsed(), "address index built");
    Ok(())
}
