//! Restart counters: how many times an actor rebuilt its state after a panic in a handler.
//! The actor bumps its own counter (a restart is rare: no striping); `/metrics` reads them.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

/// How many times one actor restarted after a panic.
#[derive(Debug, Clone, Default)]
pub struct RestartCounter(Arc<AtomicU64>);

impl RestartCounter {
    /// Restarts so far.
    pub fn get(&self) -> u64 {
        self.0.load(Ordering::Relaxed)
    }

    /// Counts one restart.
    pub fn bump(&self) {
        self.0.fetch_add(1, Ordering::Relaxed);
    }
}
