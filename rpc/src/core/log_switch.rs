//! The switch behind `anvil_setLoggingEnabled`: whether the node's log lines below `warn`
//! (blocks sealed, requests, lifecycle) are written. Warnings and errors are always written: an
//! operator must see those whatever a test script turned off.
//!
//! The switch does not sit in the log filter: a filter asked at every event keeps `tracing`
//! from caching which call sites are off, which also routes every one of sled's disabled
//! `log` records through the bridge (3.5% of a mined transfer's CPU in a profile). Instead the
//! binary hooks a reload of its filter onto [`LogSwitch::set`], so a change rebuilds the
//! per-call-site cache once and logging costs nothing in between.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock};

/// What a change of the switch runs: reloads the log filter (set by the binary).
type Hook = Box<dyn Fn(bool) + Send + Sync>;

/// A shared on/off switch, on by default. Clones flip and read the same switch.
#[derive(Clone, Default)]
pub struct LogSwitch(Arc<Inner>);

#[derive(Default)]
struct Inner {
    off: AtomicBool,
    hook: OnceLock<Hook>,
}

impl std::fmt::Debug for LogSwitch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LogSwitch").field("enabled", &self.enabled()).finish_non_exhaustive()
    }
}

impl LogSwitch {
    /// A switch that is on.
    pub fn new() -> Self {
        Self::default()
    }

    /// Runs `hook` with the new state on every change (the binary reloads its log filter);
    /// only the first hook set is kept.
    pub fn on_change(&self, hook: impl Fn(bool) + Send + Sync + 'static) {
        let _ = self.0.hook.set(Box::new(hook));
    }

    /// Whether informational logging is on.
    pub fn enabled(&self) -> bool {
        !self.0.off.load(Ordering::Relaxed)
    }

    /// Turns informational logging on or off.
    pub fn set(&self, enabled: bool) {
        let was = !self.0.off.swap(!enabled, Ordering::Relaxed);
        if was != enabled
            && let Some(hook) = self.0.hook.get()
        {
            hook(enabled);
        }
    }

    /// Whether an event at `level` is written now: warnings and errors always are.
    pub fn allows(&self, level: &tracing::Level) -> bool {
        *level <= tracing::Level::WARN || self.enabled()
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

    #[test]
    fn the_hook_runs_once_per_change() {
        let switch = LogSwitch::default();
        let seen = Arc::new(std::sync::Mutex::new(Vec::new()));
        let log = Arc::clone(&seen);
        switch.on_change(move |on| log.lock().unwrap().push(on));
        switch.set(false);
        switch.set(false);
        switch.set(true);
        assert_eq!(*seen.lock().unwrap(), vec![false, true]);
    }
}
