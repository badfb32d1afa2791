//! The switch behind `anvil_setLoggingEnabled`: whether the node's log lines below `warn`
//! (blocks sealed, requests, lifecycle) are written. The node's log subscriber reads it for
//! every event (one relaxed load); the RPC method flips it. Warnings and errors are always
//! written: an operator must see those whatever a test script turned off.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

/// A shared on/off switch, on by default. Clones flip and read the same switch.
#[derive(Debug, Clone)]
pub struct LogSwitch(Arc<AtomicBool>);

impl LogSwitch {
    /// A switch that is on.
    pub fn new() -> Self {
        Self(Arc::new(AtomicBool::new(true)))
    }

    /// Whether informational logging is on.
    pub fn enabled(&self) -> bool {
        self.0.load(Ordering::Relaxed)
    }

    /// Turns informational logging on or off.
    pub fn set(&self, enabled: bool) {
        self.0.store(enabled, Ordering::Relaxed);
    }

    /// Whether an event at `level` is written now: warnings and errors always are.
    pub fn allows(&self, level: &tracing::Level) -> bool {
        *level <= tracing::Level::WARN || self.enabled()
    }
}

impl Default for LogSwitch {
    fn default() -> Self {
        Self::new()
    }
}

#[cfg(test)]
mod tests {
    use tracing::Level;

    use super::*;

    #[test]
    fn off_keeps_warnings_and_errors() {
        let switch = LogSwitch::default();
        let subscriber_side = switch.clone();
        assert!(subscriber_side.allows(&Level::INFO));
        switch.set(false);
        assert!(!subscriber_side.allows(&Level::INFO));
        assert!(!subscriber_side.allows(&Level::DEBUG));
        assert!(subscriber_side.allows(&Level::WARN));
        assert!(subscriber_side.allows(&Level::ERROR));
        switch.set(true);
        assert!(subscriber_side.allows(&Level::TRACE));
    }
}
