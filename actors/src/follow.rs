//! The follower actor of a read replica (`--follow URL`): keeps this node's chain equal to the
//! leader's, and is the replica's one link to the leader.
//!
//! - **Owns:** the leader's HTTP client, the writes waiting for their blocks, and the
//!   [`FollowGauges`] (written here only; `/health` and `/metrics` read them).
//! - **Does:** rounds of [`chase::round`]: each new leader block is sent to the engine actor
//!   as a received payload (executed on its parent and every root checked: a replica never
//!   takes a block it cannot verify), then chosen as the head; a leader that went back
//!   (`evm_revert`, `anvil_rollback`, `anvil_reorg`) is followed back to the common block.
//!   Caught up, it asks again after `--follow.poll-ms`; a failed round is retried with a
//!   backoff that ends at [`MAX_BACKOFF`], so a leader that comes back is found within seconds.
//! - **Takes:** `ForwardWrite` (a client's write, sent to the leader once), `AwaitImport` (a
//!   write's caller waits for the block holding it).
//! - **Mailbox:** `--actors.mailbox`; a round runs beside the calls, never blocking them.
//!
//! Why an actor and not a task: the waiting writes are resolved by the rounds, and one owner of
//! both needs no lock.

pub mod chase;
pub mod leader;
mod target;

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use actix::{Actor, ActorFutureExt, AsyncContext, Context, Handler, ResponseFuture, WrapFuture};
use alloy_primitives::B256;
use hearth_messages::follow::{AwaitImport, FollowError, FollowGauges, ForwardWrite, LeaderAnswer};
use hearth_storage::ChainDb;
use tokio::sync::oneshot;

use self::chase::Round;
use self::leader::Leader;
pub use self::target::{EngineTarget, FollowFailure};

/// Longest wait between two failed rounds.
pub const MAX_BACKOFF: Duration = Duration::from_secs(5);

/// First wait after a failed round.
const FIRST_BACKOFF: Duration = Duration::from_millis(100);

/// Most writes waiting for their blocks at once.
pub const MAX_WAITING: usize = 4096;

/// How often progress is logged while the replica imports.
const PROGRESS_EVERY: Duration = Duration::from_secs(5);

/// How a replica follows.
#[derive(Debug, Clone)]
pub struct FollowerConfig {
    /// The leader's JSON-RPC URL.
    pub leader: String,
    /// How long to wait before asking again once caught up.
    pub poll: Duration,
    /// How long a forwarded write waits for its block (`--follow.max-lag-time`).
    pub max_wait: Duration,
    /// How long one request to the leader may take.
    pub timeout: Duration,
}

/// The follower actor.
#[derive(Debug)]
pub struct FollowerActor {
    leader: Leader,
    target: EngineTarget,
    db: ChainDb,
    gauges: Arc<FollowGauges>,
    config: FollowerConfig,
    /// Forwarded writes waiting for their blocks: each with the first round that may answer
    /// it (one started after the leader answered the write).
    waiting: HashMap<B256, Vec<(u64, oneshot::Sender<()>)>>,
    /// Rounds started so far.
    rounds: u64,
    /// How many blocks the next round fetches per request: halved after a failed round,
    /// doubled after a good one, between 1 and `chase::MAX_BATCH`.
    batch: u64,
    backoff: Duration,
    last_error: Option<String>,
    last_progress: Instant,
}

impl FollowerActor {
    /// A follower of `config.leader` importing into `target`, reporting to `gauges`. Must be
    /// made on the arbiter it runs on (the leader's client is not `Send`).
    pub fn new(
        config: FollowerConfig,
        target: EngineTarget,
        db: ChainDb,
        gauges: Arc<FollowGauges>,
    ) -> Self {
        Self {
            leader: Leader::new(&config.leader, config.timeout, 1),
            target,
            db,
            gauges,
            config,
            waiting: HashMap::new(),
            rounds: 0,
            batch: chase::MAX_BATCH,
            backoff: FIRST_BACKOFF,
            last_error: None,
            last_progress: Instant::now(),
        }
    }

    /// Starts the actor on the current arbiter with its mailbox bounded.
    pub fn start_bounded(self, mailbox: std::num::NonZeroUsize) -> actix::Addr<Self> {
        crate::bounded::start_here(self, mailbox)
    }

    fn run_round(&mut self, ctx: &mut Context<Self>) {
        self.rounds += 1;
        let number = self.rounds;
        let (leader, target) = (self.leader.clone(), self.target.clone());
        let reach = chase::Reach { batch: self.batch, ..chase::Reach::default() };
        let round = async move { chase::round(&leader, &target, reach).await };
        ctx.spawn(round.into_actor(self).map(move |result, act, ctx| {
            let next = act.finish_round(result, number);
            ctx.run_later(next, Self::run_round);
        }));
    }

    /// Records what a round did; answers how long to wait before the next.
    fn finish_round(
        &mut self,
        result: Result<Round<FollowFailure>, FollowFailure>,
        number: u64,
    ) -> Duration {
        let mut round = match result {
            Ok(round) => round,
            // The leader did not answer (or this node's chain could not be read).
            Err(error) => return self.failed(&error),
        };
        self.gauges.heard(round.leader_head);
        if let Some(number) = round.rewound_to {
            self.gauges.rewound();
            tracing::info!(target: "follow", "the leader's chain went back: this replica rewound to block {number}");
        }
        for block in &round.imported {
            self.gauges.imported(block.txs.len());
        }
        self.resolve_waiting(number);
        if let Some(error) = round.stopped.take() {
            match &error {
                FollowFailure::Refused { number, .. } => self.gauges.diverged(*number),
                FollowFailure::Patch { head, .. } => self.gauges.diverged(head + 1),
                FollowFailure::Diverged(diverged) => self.gauges.diverged(diverged.block),
                _ => {}
            }
            return self.failed(&error);
        }
        self.batch = (self.batch * 2).min(chase::MAX_BATCH);
        if !round.imported.is_empty() || round.rewound_to.is_some() {
            self.gauges.converged();
        }
        if self.last_error.take().is_some() {
            tracing::info!(target: "follow", leader = %self.leader.url(), "following again");
        }
        self.backoff = FIRST_BACKOFF;
        if !round.imported.is_empty() && self.last_progress.elapsed() >= PROGRESS_EVERY {
            tracing::info!(target: "follow", "followed to block {} (the leader is at {})", round.head, round.leader_head);
            self.last_progress = Instant::now();
        }
        if round.caught_up() { self.config.poll } else { Duration::ZERO }
    }

    /// Counts a failed round and logs it (once per distinct reason); the wait before the
    /// next, doubled each time up to [`MAX_BACKOFF`].
    fn failed(&mut self, error: &FollowFailure) -> Duration {
        self.gauges.failed();
        // A batch of large blocks may not fit one answer: the next rounds ask for fewer.
        self.batch = (self.batch / 2).max(1);
        let message = error.to_string();
        if self.last_error.as_ref() != Some(&message) {
            tracing::warn!(target: "follow", leader = %self.leader.url(), retry_in = ?self.backoff, "following stopped: {message}");
            self.last_error = Some(message);
        }
        let wait = self.backoff;
        self.backoff = (self.backoff * 2).min(MAX_BACKOFF);
        wait
    }

    /// Answers the writes waiting for their transactions that round `number` may answer and
    /// this node's chain now holds. Only a round started after the leader answered a write can:
    /// before it, the chain here may hold the same transaction in a block the leader has since
    /// undone (a revert, then the same transaction sent again).
    fn resolve_waiting(&mut self, number: u64) {
        let db = &self.db;
        self.waiting.retain(|tx, waiters| {
            let held = || matches!(db.tx_location(tx), Ok(Some(_)));
            if waiters.iter().any(|(first, _)| *first <= number) && held() {
                let (ready, later): (Vec<_>, Vec<_>) =
                    waiters.drain(..).partition(|(first, _)| *first <= number);
                for (_, waiter) in ready {
                    let _ = waiter.send(());
                }
                *waiters = later;
            }
            // Writes whose callers stopped waiting (their deadline passed) are forgotten.
            waiters.retain(|(_, w)| !w.is_closed());
            !waiters.is_empty()
        });
    }
}

impl Actor for FollowerActor {
    type Context = Context<Self>;

    fn started(&mut self, ctx: &mut Self::Context) {
        tracing::info!(target: "follow", leader = %self.leader.url(), "following the leader's chain");
        self.run_round(ctx);
    }
}

impl Handler<ForwardWrite> for FollowerActor {
    type Result = ResponseFuture<Result<LeaderAnswer, FollowError>>;

    fn handle(&mut self, msg: ForwardWrite, _: &mut Self::Context) -> Self::Result {
        let leader = self.leader.clone();
        Box::pin(async move {
            let (response, automine) = leader
                .forward(&msg.method, msg.params)
                .await
                .map_err(|e| FollowError::LeaderUnreachable { leader: e.url, why: e.why })?;
            Ok(LeaderAnswer { response, automine })
        })
    }
}

impl Handler<AwaitImport> for FollowerActor {
    type Result = ResponseFuture<Result<(), FollowError>>;

    fn handle(&mut self, AwaitImport(tx): AwaitImport, _: &mut Self::Context) -> Self::Result {
        // Callers that stopped waiting (their deadline passed) free their places.
        self.waiting.retain(|_, waiters| {
            waiters.retain(|(_, w)| !w.is_closed());
            !waiters.is_empty()
        });
        let waiting: usize = self.waiting.values().map(Vec::len).sum();
        if waiting >= MAX_WAITING {
            return Box::pin(async move { Err(FollowError::TooManyWaiting(waiting)) });
        }
        let (sender, receiver) = oneshot::channel();
        // The next round to start is the first that sees the leader's chain with the write.
        self.waiting.entry(tx).or_default().push((self.rounds + 1, sender));
        let max_wait = self.config.max_wait;
        Box::pin(async move {
            match tokio::time::timeout(max_wait, receiver).await {
                Ok(Ok(())) => Ok(()),
                _ => Err(FollowError::NotImported { tx, waited: max_wait }),
            }
        })
    }
}

hearth_messages::answer_asks!(FollowerActor: ForwardWrite, AwaitImport);
