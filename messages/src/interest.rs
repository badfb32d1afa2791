//! `Interest`: whether a listener wants a kind of event right now.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

/// Whether a listener wants an event kind right now. The listener owns it and sets it as its
/// own clients come and go; the producer reads it before each event and skips the send while
/// it is off. A send wakes the listener's thread, and with automine every transaction made
/// three such sends (two admissions, one block) to actors with nobody to tell: skipping them
/// made a sequential sender's transactions ~15% faster. Clones share the flag.
#[derive(Debug, Clone)]
pub struct Interest(Arc<AtomicBool>);

impl Interest {
    /// A listener that wants every event, whatever its clients (extensions, tests).
    pub fn always() -> Self {
        Self(Arc::new(AtomicBool::new(true)))
    }

    /// A listener with no clients yet.
    pub fn none() -> Self {
        Self(Arc::new(AtomicBool::new(false)))
    }

    /// Sets whether events are wanted (the listener only).
    pub fn set(&self, wanted: bool) {
        self.0.store(wanted, Ordering::Release);
    }

    /// Whether events are wanted (the producer, before each send).
    pub fn wanted(&self) -> bool {
        self.0.load(Ordering::Acquire)
    }
}
