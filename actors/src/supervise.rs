//! Failure containment: a panic in an actor's handler fails that one request, and the actor
//! goes on with its state rebuilt, instead of taking its mailbox down with it.
//!
//! actix runs an actor as one task; a panic in a handler unwinds out of that task, tokio drops
//! it, and every later message to the actor fails with "mailbox closed" until the process
//! restarts (a hostile tester stopped mining for good this way). actix's `Supervisor` does not
//! help: it restarts an actor that *stopped*, but a panic unwinds through the supervisor too.
//! So each restartable actor runs its handlers' work through [`contain`] (or its future
//! through [`contain_future`]): the panic is caught at the handler, logged with its message,
//! counted in the actor's [`RestartCounter`] (exported on `/metrics` as
//! `hearth_actor_restarts_total`), the actor's [`Restart::restart`] rebuilds what the panic
//! may have left half-changed from its owner (settings, the chain), and the request gets an
//! error that the RPC front answers with -32603.

use std::any::Any;
use std::future::Future;
use std::panic::AssertUnwindSafe;

use futures_util::FutureExt;
pub use hearth_messages::restarts::RestartCounter;

/// An actor that can rebuild its state after one of its handlers panicked.
pub trait Restart {
    /// The actor's name in logs and metrics (`miner`, `mempool`, ...).
    const NAME: &'static str;

    /// Rebuilds what a panic may have left half-changed, from the actor's owner: its
    /// settings, the chain. Runs right after the panicking handler, before the next message.
    fn restart(&mut self);

    /// The actor's restart counter.
    fn restarts(&self) -> &RestartCounter;
}

/// The text of a panic's payload.
pub fn panic_message(panic: &(dyn Any + Send)) -> String {
    panic
        .downcast_ref::<&str>()
        .map(|s| (*s).to_owned())
        .or_else(|| panic.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "no message".to_owned())
}

/// Runs `work` on `actor`. A panic in it restarts the actor and comes back as `Err` with the
/// panic's message, for the handler to answer as an internal error.
pub fn contain<A: Restart, T>(actor: &mut A, work: impl FnOnce(&mut A) -> T) -> Result<T, String> {
    match std::panic::catch_unwind(AssertUnwindSafe(|| work(actor))) {
        Ok(value) => Ok(value),
        Err(panic) => Err(restarted(actor, &*panic)),
    }
}

/// Restarts `actor` after `panic` (caught by the caller) and gives the panic's message.
pub fn restarted<A: Restart>(actor: &mut A, panic: &(dyn Any + Send)) -> String {
    let what = panic_message(panic);
    actor.restarts().bump();
    tracing::error!(
        target: "actors::supervise",
        actor = A::NAME,
        panic = %what,
        restarts = actor.restarts().get(),
        "a handler panicked; the request failed and the actor restarted"
    );
    actor.restart();
    what
}

/// Runs `future`, turning a panic while it is polled into `Err` with the panic's message. The
/// caller restarts the actor (with [`restarted`]'s logic through [`Restart`]) when it gets the
/// result back on the actor.
pub async fn contain_future<F: Future>(future: F) -> Result<F::Output, Box<dyn Any + Send>> {
    AssertUnwindSafe(future).catch_unwind().await
}

/// Makes the receiving actor's handler panic with this message, inside its containment: for
/// the tests that show a panic fails one request and the actor goes on. Only in builds with
/// the `test-hooks` feature (the test suite's).
#[cfg(feature = "test-hooks")]
#[derive(Debug, Clone, Copy)]
pub struct PanicForTest(pub &'static str);

#[cfg(feature = "test-hooks")]
impl actix::Message for PanicForTest {
    type Result = Result<(), hearth_messages::MineError>;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Default)]
    struct Counter {
        value: u32,
        restarts: RestartCounter,
    }

    impl Restart for Counter {
        const NAME: &'static str = "counter";

        fn restart(&mut self) {
            self.value = 0;
        }

        fn restarts(&self) -> &RestartCounter {
            &self.restarts
        }
    }

    #[test]
    fn a_panic_fails_the_work_and_restarts_the_actor() {
        let mut actor = Counter::default();
        assert_eq!(
            contain(&mut actor, |a| {
                a.value += 1;
                a.value
            }),
            Ok(1)
        );
        let failed = contain(&mut actor, |a| {
            a.value += 10;
            panic!("half-way through {}", a.value)
        });
        assert_eq!(failed, Err::<(), _>("half-way through 11".to_owned()));
        assert_eq!((actor.value, actor.restarts.get()), (0, 1), "rebuilt and counted");
        assert_eq!(contain(&mut actor, |a| a.value), Ok(0));
    }

    #[test]
    fn a_panicking_future_is_an_error() {
        let ready = futures_util::future::ready(5).now_or_never();
        assert_eq!(ready, Some(5));
        let failed = contain_future(async { panic!("in a future") }).now_or_never();
        let panic = failed.expect("ready").expect_err("panicked");
        assert_eq!(panic_message(&*panic), "in a future");
        assert_eq!(contain_future(async { 7 }).now_or_never().map(Result::ok), Some(Some(7)));
    }
}
