//! What a contract printed through Hardhat's console (console.log and forge-std's console and
//! console2): calls to [`CONSOLE_ADDRESS`], decoded into lines on the executor thread, carried
//! to whoever prints them (the miner for mined transactions, the executor for calls) and to
//! the `hearth_console` subscription.

use alloy_primitives::{Address, B256, address};

/// The address console.sol calls (the ASCII of "console.log"). No code lives there: a call to
/// it runs as a call to an empty account, and the node only reads what was sent.
pub const CONSOLE_ADDRESS: Address = address!("0x000000000000000000636F6e736F6c652e6c6f67");

/// The lines one execution printed, in call order (a reverted frame's included, as anvil and
/// Hardhat show them).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ConsoleLines {
    /// The formatted lines; a call whose text has line breaks gives one line per break.
    pub lines: Vec<String>,
    /// console calls past the output bound, not shown (0: the output is whole).
    pub dropped: u64,
}

impl ConsoleLines {
    /// Whether there is nothing to show (no line and nothing dropped).
    pub fn is_empty(&self) -> bool {
        self.lines.is_empty() && self.dropped == 0
    }
}

/// Where console output came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ConsoleSource {
    /// A mined transaction.
    Tx {
        /// Its hash.
        hash: B256,
        /// The block it is in.
        block: u64,
    },
    /// A call that changed nothing: `method` is the RPC method that ran it (eth_call,
    /// eth_estimateGas, eth_simulateV1).
    Call {
        /// The RPC method.
        method: &'static str,
    },
}

/// Console output, published to the subscription actor for `hearth_console` subscribers.
/// Sent with `try_send`: a full mailbox loses the notice, never stalls the sender.
#[derive(Debug, Clone)]
pub struct ConsolePrinted {
    /// Where it came from.
    pub source: ConsoleSource,
    /// What was printed.
    pub lines: std::sync::Arc<ConsoleLines>,
}

impl actix::Message for ConsolePrinted {
    type Result = ();
}

/// Where console output goes besides the log: the subscription actor, while some connection
/// holds a `hearth_console` subscription (`interest`). Cloned into every executor thread and
/// the miner; the default goes nowhere.
#[derive(Clone, Default)]
pub struct ConsoleSink {
    to: Option<(actix::Recipient<ConsolePrinted>, crate::interest::Interest)>,
}

impl ConsoleSink {
    /// A sink that tells `to` while `interest` says someone listens.
    pub fn new(to: actix::Recipient<ConsolePrinted>, interest: crate::interest::Interest) -> Self {
        Self { to: Some((to, interest)) }
    }

    /// Hands `lines` to the listener if it wants them; a full mailbox loses them.
    pub fn publish(&self, source: ConsoleSource, lines: &std::sync::Arc<ConsoleLines>) {
        if let Some((to, interest)) = &self.to
            && interest.wanted()
        {
            let _ = to.try_send(ConsolePrinted { source, lines: std::sync::Arc::clone(lines) });
        }
    }
}

impl std::fmt::Debug for ConsoleSink {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(if self.to.is_some() {
            "ConsoleSink(subscriptions)"
        } else {
            "ConsoleSink(none)"
        })
    }
}
