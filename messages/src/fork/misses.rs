//! Fork reads that do not wait: how a request that misses the fork cache gives its thread back
//! while the upstream answers.
//!
//! A thread that waits for the upstream (20 ms or more a round trip) does nothing else
//! meanwhile: an executor thread held so counts as busy to admission, and with two of them at
//! most two callers' reads are in flight, however many callers there are. So a read-only
//! request runs *collecting*: a read that misses the cache does not send and wait, it notes its
//! key and goes on with a stand-in (an absent account, a zero slot), or stops the run when no
//! stand-in fits (a header, a block) or [`MAX_MISSES_PER_RUN`] keys are noted. The run's result
//! is then thrown away, its caller fetches every noted key at once, asynchronously
//! ([`ForkMisses::fetch`], one batch for all the callers missing at that moment), and runs the
//! request again, now reading those keys from the cache. Each round fetches at least one key
//! the cache lacked, so the rounds end; after [`MAX_ROUNDS`] the request runs once more with
//! reads that wait, as every read did before.
//!
//! What is collected lives in a thread-local, installed around one synchronous run
//! ([`collect`]) or around each poll of one future ([`collect_async`]), so nothing else on the
//! thread sees it. The fork client asks [`note`] on each miss; outside a collecting run it
//! answers `None` and the read waits as usual (block building, the state owner, the pool).

use std::cell::RefCell;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use actix::Recipient;
use actix::prelude::SendError;
use alloy_primitives::U256;

use super::{Fetch, ForkError, ForkKey, ForkReply, ForkValue};

/// Most keys one run notes before it stops: the stand-ins may lead a run down a path the real
/// values would not take, and a run should not ask the upstream for a whole contract's
/// storage on a guess. A call's real reads fit many times over.
pub const MAX_MISSES_PER_RUN: usize = 256;

/// Rounds of collect-fetch-rerun before a request runs with reads that wait: a chain of reads
/// each of which depends on the last (a linked list in storage) costs one round each.
pub const MAX_ROUNDS: u32 = 16;

/// Where a thread's missed keys are fetched: the fork backend that missed them and the most
/// time a read may wait for it (`--fork-timeout`).
#[derive(Clone)]
pub struct MissSource {
    /// The fork backend.
    pub backend: Recipient<Fetch>,
    /// `--fork-timeout`.
    pub wait: Duration,
}

impl std::fmt::Debug for MissSource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MissSource").field("wait", &self.wait).finish_non_exhaustive()
    }
}

/// The keys a collecting run missed, with where to fetch them.
#[derive(Debug, Clone)]
pub struct ForkMisses {
    keys: Vec<ForkKey>,
    source: MissSource,
}

#[derive(Debug, Default)]
struct MissLog {
    keys: Vec<ForkKey>,
    source: Option<MissSource>,
}

impl MissLog {
    fn into_misses(self) -> Option<ForkMisses> {
        match (self.keys.is_empty(), self.source) {
            (false, Some(source)) => Some(ForkMisses { keys: self.keys, source }),
            _ => None,
        }
    }
}

thread_local! {
    /// The collecting run on this thread, if any.
    static LOG: RefCell<Option<MissLog>> = const { RefCell::new(None) };
}

/// Puts back the thread's previous log when a collecting run ends, by return or by panic.
struct Installed {
    previous: Option<Option<MissLog>>,
}

impl Installed {
    fn new(log: MissLog) -> Self {
        Self { previous: Some(LOG.with(|slot| slot.replace(Some(log)))) }
    }

    /// Ends the run: its log, with the previous one back in place.
    fn finish(mut self) -> MissLog {
        let previous = self.previous.take().unwrap_or_default();
        LOG.with(|slot| slot.replace(previous)).unwrap_or_default()
    }
}

impl Drop for Installed {
    fn drop(&mut self) {
        if let Some(previous) = self.previous.take() {
            LOG.with(|slot| slot.replace(previous));
        }
    }
}

/// Runs `run` collecting its fork misses: its result, and the keys to fetch before running it
/// again (`None`: nothing missed, the result stands).
pub fn collect<T>(run: impl FnOnce() -> T) -> (T, Option<ForkMisses>) {
    let installed = Installed::new(MissLog::default());
    let output = run();
    (output, installed.finish().into_misses())
}

/// [`collect`] for a future: the log is installed around each of its polls only, so the other
/// tasks of the thread read as usual.
pub fn collect_async<F: Future>(future: F) -> Collecting<F> {
    Collecting { future: Box::pin(future), log: Some(MissLog::default()) }
}

/// The future of [`collect_async`].
pub struct Collecting<F> {
    future: Pin<Box<F>>,
    log: Option<MissLog>,
}

impl<F> std::fmt::Debug for Collecting<F> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Collecting").finish_non_exhaustive()
    }
}

impl<F: Future> Future for Collecting<F> {
    type Output = (F::Output, Option<ForkMisses>);

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = &mut *self;
        let installed = Installed::new(this.log.take().unwrap_or_default());
        let poll = this.future.as_mut().poll(cx);
        let log = installed.finish();
        match poll {
            Poll::Ready(output) => Poll::Ready((output, log.into_misses())),
            Poll::Pending => {
                this.log = Some(log);
                Poll::Pending
            }
        }
    }
}

/// Whether this thread is in a collecting run.
pub fn collecting() -> bool {
    LOG.with(|slot| slot.borrow().is_some())
}

/// Called by the fork client when `key` missed the cache. Outside a collecting run: `None`,
/// and the read waits for the upstream. In one: the key is noted and the read gets a stand-in
/// (an absent account, a zero slot, an unknown block hash) or, where none fits or the run has
/// noted [`MAX_MISSES_PER_RUN`] keys, [`ForkError::Deferred`], which ends the run.
pub fn note(
    key: &ForkKey,
    source: impl FnOnce() -> MissSource,
) -> Option<Result<ForkValue, ForkError>> {
    LOG.with(|slot| {
        let mut slot = slot.borrow_mut();
        let log = slot.as_mut()?;
        if log.keys.len() >= MAX_MISSES_PER_RUN {
            return Some(Err(ForkError::Deferred));
        }
        if log.source.is_none() {
            log.source = Some(source());
        }
        log.keys.push(key.clone());
        Some(stand_in(key).ok_or(ForkError::Deferred))
    })
}

/// What a collecting run reads in place of `key` until it is fetched, where a value lets the
/// run go on and find more keys in the same round.
fn stand_in(key: &ForkKey) -> Option<ForkValue> {
    match key {
        ForkKey::Account(_) | ForkKey::AccountAt(..) => Some(ForkValue::Account(None)),
        ForkKey::Storage(..) | ForkKey::StorageAt(..) => Some(ForkValue::Storage(U256::ZERO)),
        ForkKey::BlockHash(_) => Some(ForkValue::BlockHash(None)),
        ForkKey::ChainId
        | ForkKey::HeadNumber
        | ForkKey::Header(_)
        | ForkKey::StorageRange(_)
        | ForkKey::Block(_)
        | ForkKey::Receipts(_)
        | ForkKey::BlockNumber(_)
        | ForkKey::TxLocation(_)
        | ForkKey::Logs(_)
        | ForkKey::Proof(_)
        | ForkKey::Simulate(_) => None,
    }
}

impl ForkMisses {
    /// The keys missed, in the order the run read them (a key read twice is noted twice).
    pub fn keys(&self) -> &[ForkKey] {
        &self.keys
    }

    /// Fetches every missed key into the fork cache, without blocking a thread: all are handed
    /// to the backend at once (so they go upstream together, with other callers' keys of the
    /// moment), then awaited, within `--fork-timeout` in all. An upstream error or a timeout
    /// is the error a waiting read gets.
    pub async fn fetch(self) -> Result<(), ForkError> {
        let Self { mut keys, source } = self;
        keys.sort_unstable();
        keys.dedup();
        let deadline = tokio::time::Instant::now() + source.wait;
        let mut answers = Vec::with_capacity(keys.len());
        for key in keys {
            let (reply, answer) = tokio::sync::oneshot::channel();
            let fetch = Fetch { key, reply: ForkReply::Async(reply) };
            match source.backend.try_send(fetch) {
                Ok(()) => {}
                // A full mailbox is waited on here: this caller holds no thread meanwhile.
                Err(SendError::Full(fetch)) => {
                    source.backend.send(fetch).await.map_err(|_| ForkError::STOPPED)?;
                }
                Err(SendError::Closed(_)) => return Err(ForkError::STOPPED),
            }
            answers.push(answer);
        }
        for answer in answers {
            match tokio::time::timeout_at(deadline, answer).await {
                Err(_) => return Err(ForkError::timed_out(source.wait)),
                Ok(Err(_)) => return Err(ForkError::Backend("it stopped without answering")),
                Ok(Ok(value)) => {
                    value?;
                }
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use actix::prelude::*;
    use alloy_primitives::Address;

    use super::*;

    /// A backend that answers every key after the test says so, counting what it was asked.
    struct Backend {
        asked: Vec<ForkKey>,
    }

    impl Actor for Backend {
        type Context = actix::Context<Self>;
    }

    impl Handler<Fetch> for Backend {
        type Result = ();

        fn handle(&mut self, msg: Fetch, _ctx: &mut Self::Context) {
            self.asked.push(msg.key.clone());
            let value = match msg.key {
                ForkKey::Storage(..) => Ok(ForkValue::Storage(U256::from(7))),
                ForkKey::Header(_) => Err(ForkError::Upstream("gone".into())),
                _ => Ok(ForkValue::Account(None)),
            };
            msg.reply.send(value);
        }
    }

    struct Asked;

    impl Message for Asked {
        type Result = Vec<ForkKey>;
    }

    impl Handler<Asked> for Backend {
        type Result = MessageResult<Asked>;

        fn handle(&mut self, _: Asked, _ctx: &mut Self::Context) -> Self::Result {
            MessageResult(std::mem::take(&mut self.asked))
        }
    }

    fn source(backend: &Addr<Backend>) -> MissSource {
        MissSource { backend: backend.clone().recipient(), wait: Duration::from_secs(5) }
    }

    const A: Address = Address::repeat_byte(0xaa);

    #[test]
    fn outside_a_collecting_run_a_miss_waits_as_usual() {
        assert!(!collecting());
        assert!(note(&ForkKey::Account(A), || unreachable!("no source is asked")).is_none());
    }

    #[actix::test]
    async fn a_run_notes_its_misses_reads_stand_ins_and_its_caller_fetches_them_at_once() {
        let backend = Backend { asked: vec![] }.start();
        let slot = ForkKey::Storage(A, U256::from(1));
        let ((account, value, header), misses) = collect(|| {
            assert!(collecting());
            (
                note(&ForkKey::Account(A), || source(&backend)),
                note(&slot, || source(&backend)),
                note(&ForkKey::Header(9), || source(&backend)),
            )
        });
        assert!(!collecting(), "the log is gone with the run");
        assert_eq!(account, Some(Ok(ForkValue::Account(None))));
        assert_eq!(value, Some(Ok(ForkValue::Storage(U256::ZERO))));
        assert_eq!(header, Some(Err(ForkError::Deferred)), "no stand-in for a header");
        let misses = misses.expect("three keys missed");
        assert_eq!(misses.keys(), [ForkKey::Account(A), slot.clone(), ForkKey::Header(9)]);
        // The header's upstream error is what the caller gets.
        let error = misses.clone().fetch().await.unwrap_err();
        assert_eq!(error, ForkError::Upstream("gone".into()));
        assert_eq!(backend.send(Asked).await.unwrap().len(), 3, "every key asked at once");
    }

    #[actix::test]
    async fn a_run_that_missed_nothing_has_nothing_to_fetch() {
        let (answer, misses) = collect(|| 42);
        assert_eq!((answer, misses.is_none()), (42, true));
    }

    #[test]
    fn a_run_stops_reading_stand_ins_past_its_cap_and_a_panic_leaves_no_log_behind() {
        let system = actix::System::new();
        system.block_on(async {
            let backend = Backend { asked: vec![] }.start();
            let (last, misses) = collect(|| {
                let mut last = None;
                for i in 0..=MAX_MISSES_PER_RUN {
                    last = note(&ForkKey::Storage(A, U256::from(i)), || source(&backend));
                }
                last
            });
            assert_eq!(last, Some(Err(ForkError::Deferred)));
            assert_eq!(misses.unwrap().keys().len(), MAX_MISSES_PER_RUN);
            let panicked = std::panic::catch_unwind(|| collect(|| panic!("in the run")));
            assert!(panicked.is_err());
            assert!(!collecting(), "the panic took the log down with it");
        });
    }

    #[actix::test]
    async fn a_future_collects_across_its_polls_and_only_while_polled() {
        let backend = Backend { asked: vec![] }.start();
        let b = backend.clone();
        let (_, misses) = collect_async(async move {
            note(&ForkKey::Account(A), || source(&b));
            tokio::task::yield_now().await;
            assert!(collecting(), "installed again on the next poll");
            note(&ForkKey::Storage(A, U256::from(3)), || source(&b));
        })
        .await;
        assert!(!collecting());
        assert_eq!(misses.unwrap().keys().len(), 2);
        // Fetched values are the backend's.
        let (_, misses) =
            collect(|| note(&ForkKey::Storage(A, U256::from(5)), || source(&backend)));
        misses.unwrap().fetch().await.unwrap();
    }
}
