//! The engine actor: what the Engine API keeps between calls, and the calls that need the
//! chain (engine_newPayload, engine_forkchoiceUpdated, engine_getPayload).
//!
//! - **Owns:** the side blocks (received or built, not on the canonical chain), the payloads
//!   it built by id, the blocks it found invalid (`kept`, each bounded by count).
//! - **Takes:** `NewPayload`, `ForkchoiceUpdate`, `GetPayload` (from the RPC front, as `Ask`s).
//! - **Sends:** `BuildPayload` to the executor pool (to build a payload, or check a received
//!   block on its parent); `BetweenBlocks<CommitBlock>` and `Rewind` to the miner (so no block
//!   of its own is built meanwhile); `TakePending` and `TxsMined` to the mempool;
//!   `SetForkchoice` to the state owner (the safe and finalized marks).
//! - **Mailbox:** `--actors.mailbox`; one call at a time (each handler is atomic), as a
//!   consensus client sends them.
//! - **Restart:** a panic fails the one call; what it keeps stays (it changes only once a
//!   call's work is done, `Learned`).
//!
//! Why an actor of its own and not the miner's: the miner decides when blocks are made; here
//! the consensus client decides, and what it sent must outlive a call (a payload is fetched
//! after the update that built it, a side block waits for the update that chooses it).

mod kept;
mod work;

use actix::{Actor, ActorFutureExt, AtomicResponse, Context, Handler, WrapFuture};
use hearth_messages::engine::{
    EngineError, ForkchoiceAnswer, ForkchoiceUpdate, GetPayload, NewPayload, PayloadVerdict,
};
use hearth_storage::ChainDb;

use self::kept::{Kept, Learned};
pub use self::work::{EngineConfig, EnginePeers};
use self::work::{Plan, Work};
use crate::supervise::{Restart, RestartCounter, contain_future, restarted};

/// The engine actor.
#[derive(Debug)]
pub struct EngineActor {
    work: Work,
    kept: Kept,
    restarts: RestartCounter,
}

impl EngineActor {
    /// An engine on `db`'s chain, talking to `peers`.
    pub fn new(db: ChainDb, peers: EnginePeers, config: EngineConfig) -> Self {
        Self {
            work: Work { db, peers, config },
            kept: Kept::default(),
            restarts: RestartCounter::default(),
        }
    }

    /// Starts the actor on the current arbiter with its mailbox bounded from the first
    /// message on.
    pub fn start_bounded(self, mailbox: std::num::NonZeroUsize) -> actix::Addr<Self> {
        crate::bounded::start_here(self, mailbox)
    }

    /// Runs one call's `work` as an atomic future; once done, what it learned is kept and its
    /// answer returned (a panic in it fails this call only).
    fn run<T: 'static>(
        &mut self,
        work: impl std::future::Future<Output = (Result<T, EngineError>, Vec<Learned>)> + 'static,
    ) -> AtomicResponse<Self, Result<T, EngineError>> {
        AtomicResponse::new(Box::pin(contain_future(work).into_actor(self).map(
            |outcome, act, _| match outcome {
                Ok((answer, learned)) => {
                    act.kept.learn(learned);
                    answer
                }
                Err(panic) => Err(EngineError::Panicked(restarted(act, &*panic))),
            },
        )))
    }
}

impl Actor for EngineActor {
    type Context = Context<Self>;
}

impl Restart for EngineActor {
    const NAME: &'static str = "engine";

    fn restarts(&self) -> &RestartCounter {
        &self.restarts
    }

    /// Nothing to rebuild: what it keeps changes only after a call's work is done.
    fn restart(&mut self) {}
}

impl Handler<NewPayload> for EngineActor {
    type Result = AtomicResponse<Self, Result<PayloadVerdict, EngineError>>;

    fn handle(&mut self, msg: NewPayload, _ctx: &mut Self::Context) -> Self::Result {
        let work = self.work.clone();
        let plan = self.work.new_payload_plan(&self.kept, &msg.0);
        self.run(async move {
            match plan {
                Ok(plan) => work.new_payload(plan, msg.0).await,
                Err(error) => (Err(error), Vec::new()),
            }
        })
    }
}

impl Handler<ForkchoiceUpdate> for EngineActor {
    type Result = AtomicResponse<Self, Result<ForkchoiceAnswer, EngineError>>;

    fn handle(&mut self, msg: ForkchoiceUpdate, _ctx: &mut Self::Context) -> Self::Result {
        tracing::debug!(target: "actors::engine", head = %msg.state.head, "forkchoice update");
        let work = self.work.clone();
        let plan: Result<Plan, EngineError> = self.work.head_plan(&self.kept, msg.state.head);
        self.run(async move {
            match plan {
                Ok(plan) => work.forkchoice(plan, msg).await,
                Err(error) => (Err(error), Vec::new()),
            }
        })
    }
}

impl Handler<GetPayload> for EngineActor {
    type Result = AtomicResponse<
        Self,
        Result<std::sync::Arc<hearth_messages::payload::BuiltPayload>, EngineError>,
    >;

    fn handle(&mut self, msg: GetPayload, _ctx: &mut Self::Context) -> Self::Result {
        let found = self.kept.payload(&msg.0).ok_or(EngineError::UnknownPayload);
        self.run(async move { (found, Vec::new()) })
    }
}

hearth_messages::answer_asks!(EngineActor: NewPayload, ForkchoiceUpdate, GetPayload);
