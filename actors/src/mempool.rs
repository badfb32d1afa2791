//! `MempoolActor`: pending transactions by sender and nonce.
//!
//! - **Owns:** the pool core, [`Pool`] (`mempool/pool.rs`): every admitted, not yet mined
//!   transaction with its indexes, bounds and counters; and the one write side of the shared
//!   chain id (`hearth_messages::ChainId`): `SetChainId` publishes the new id and drops what
//!   was signed for the old one in one handler.
//! - **Takes:** `SubmitTx`, `SubmitTxs`, `SubmitFilled` (each also in `ThenMine`, which
//!   asks the miner's `AutoMine` before answering), `GetPooledTx`, `PendingNonce`,
//!   `IsImpersonated`, `PoolSize`, `GetPoolCounters` (also as `Ask`, from `MempoolClient`);
//!   `GetPoolContent`, `DropTx`, `DropAll`, `RemoveSender`, `SetImpersonated`,
//!   `SetAutoImpersonate`, `SetPoolGasLimit`, `SetChainId`, `Revalidate` (dev controls); and
//!   `TakePending` / `TxsMined` from the miner.
//! - **Sends:** `TxsAdmitted` to its subscribers (filters, subscriptions) with `try_send`: a
//!   full subscriber misses one notification (logged), admission never waits; `AutoMine`
//!   (`ask`) to the miner a `ThenMine` names, after admitting.
//! - **Mailbox:** `--actors.mailbox` (default 1024); the RPC front's `ask` answers -32005 when
//!   it is full.
//! - **Restart:** `Restart` (`supervise`): a panic in a handler fails that request (-32603)
//!   and the pool is rebuilt from what it held, re-admitted at the head (the invalid dropped).
//!   Its contents are not persisted: a node restart empties it, as geth --dev without a journal.
//!
//! Admission runs the rules of [`validation`] (the ones block execution applies).

use actix::{Actor, Context, Handler};
use alloy_primitives::B256;
use hearth_messages::TxError;
use hearth_messages::ask::Ask;
use hearth_messages::executor::PooledTx;
use hearth_messages::interest::Interest;
use hearth_messages::mempool::Admits;
use hearth_messages::mempool::{
    DropAll, DropTx, GetPoolContent, GetPoolCounters, GetPooledTx, PendingNonce, PoolCounters,
    PoolSize, RemoveSender, Revalidate, SetAutoImpersonate, SetChainId, SetImpersonated,
    SetPoolGasLimit, SubmitFilled, SubmitTx, SubmitTxs, TakePending, ThenMine, TxsMined,
};
use hearth_messages::miner::AutoMine;
use hearth_storage::ChainDb;

use crate::supervise::{Restart, RestartCounter, contain};

pub use self::pool::{
    MAX_TX_BYTES, MempoolConfig, Pool, TxOrder, next_base_fee, next_blob_base_fee,
};
pub use self::validation::{SenderState, TxRules, Valid, check_against_state, check_stateless};

pub mod blobs;
pub mod kept_blobs;
mod pool;
pub mod validation;

/// The mempool actor.
#[derive(Debug)]
pub struct MempoolActor {
    pool: Pool,
    db: ChainDb,
    /// Told of every admission while their interest is on (the filter and subscription
    /// actors); never waited on.
    admitted: Vec<(actix::Recipient<hearth_messages::mempool::TxsAdmitted>, Interest)>,
    restarts: RestartCounter,
    /// Yields the thread (shared with the miner) during a flood of submissions.
    fair: crate::bounded::FairShare,
}

impl MempoolActor {
    /// A pool validating against `db`.
    pub fn new(db: ChainDb, config: MempoolConfig) -> Self {
        Self {
            pool: Pool::new(config),
            db,
            admitted: Vec::new(),
            restarts: RestartCounter::default(),
            fair: crate::bounded::FairShare::default(),
        }
    }

    /// How many times the actor restarted after a panic (for `/metrics`).
    pub fn restart_counter(&self) -> RestartCounter {
        self.restarts.clone()
    }

    /// Runs a handler's `work`; a panic in it rebuilds the pool and fails the request.
    fn contained<T>(
        &mut self,
        work: impl FnOnce(&mut Self) -> Result<T, TxError>,
    ) -> Result<T, TxError> {
        contain(self, work).unwrap_or_else(|what| Err(TxError::Panicked(what)))
    }

    /// Also tells `subscriber` the hash of every transaction admitted while `interest` is on.
    pub fn notify_admitted(
        mut self,
        subscriber: actix::Recipient<hearth_messages::mempool::TxsAdmitted>,
        interest: Interest,
    ) -> Self {
        self.admitted.push((subscriber, interest));
        self
    }

    /// Tells the subscribers what was admitted; a full subscriber misses it (logged).
    fn announce(&self, hashes: Vec<B256>) {
        if hashes.is_empty() || !self.admitted.iter().any(|(_, i)| i.wanted()) {
            return;
        }
        // Just admitted, so pooled (an Arc each: sharing them copies no transaction).
        let txs: Vec<_> = hashes.iter().filter_map(|hash| self.pool.get(hash).cloned()).collect();
        for (subscriber, _) in self.admitted.iter().filter(|(_, i)| i.wanted()) {
            let note = hearth_messages::mempool::TxsAdmitted(txs.clone());
            if subscriber.try_send(note).is_err() {
                tracing::warn!(target: "actors::mempool", "admission subscriber busy; notification dropped");
            }
        }
    }
}

impl Actor for MempoolActor {
    type Context = Context<Self>;
}

impl Restart for MempoolActor {
    const NAME: &'static str = "mempool";

    /// The pool is not persisted, so its owner is itself: the transactions it holds are
    /// re-admitted into fresh indexes, and those no longer valid at the head are dropped.
    fn restart(&mut self) {
        self.pool = self.pool.rebuilt(&self.db);
    }

    fn restarts(&self) -> &RestartCounter {
        &self.restarts
    }
}

impl Handler<SubmitTx> for MempoolActor {
    type Result = Result<B256, TxError>;

    fn handle(&mut self, msg: SubmitTx, ctx: &mut Self::Context) -> Self::Result {
        self.fair.handled(ctx);
        let hash = self.contained(|act| act.pool.admit(&act.db, msg.tx))?;
        self.announce(vec![hash]);
        Ok(hash)
    }
}

impl Handler<TakePending> for MempoolActor {
    type Result = Vec<PooledTx>;

    /// After a panic the block is built without pooled transactions; they stay pooled.
    fn handle(&mut self, msg: TakePending, _ctx: &mut Self::Context) -> Self::Result {
        self.contained(|act| {
            Ok(act.pool.pending(&act.db, msg.gas_limit, msg.max_bytes, msg.base_fee))
        })
        .unwrap_or_default()
    }
}

impl Handler<TxsMined> for MempoolActor {
    type Result = bool;

    fn handle(&mut self, msg: TxsMined, _ctx: &mut Self::Context) -> Self::Result {
        self.contained(|act| {
            act.pool.drop_invalid(&msg.invalid);
            act.pool.remove_mined(&act.db, msg.included);
            Ok(!act.pool.is_empty())
        })
        // The rebuilt pool dropped what the block mined; ask for another block if any is left.
        .unwrap_or_else(|_| !self.pool.is_empty())
    }
}

impl Handler<GetPoolCounters> for MempoolActor {
    type Result = actix::MessageResult<GetPoolCounters>;

    fn handle(&mut self, _msg: GetPoolCounters, _ctx: &mut Self::Context) -> Self::Result {
        actix::MessageResult(PoolCounters { dropped_invalid: self.pool.dropped_invalid() })
    }
}

impl Handler<GetPooledTx> for MempoolActor {
    type Result = Option<PooledTx>;

    fn handle(&mut self, msg: GetPooledTx, _ctx: &mut Self::Context) -> Self::Result {
        self.pool.get(&msg.0).cloned()
    }
}

impl Handler<hearth_messages::mempool::GetPooledByNonce> for MempoolActor {
    type Result = Option<PooledTx>;

    fn handle(
        &mut self,
        msg: hearth_messages::mempool::GetPooledByNonce,
        _ctx: &mut Self::Context,
    ) -> Self::Result {
        self.pool.by_nonce(&msg.sender, msg.nonce).cloned()
    }
}

impl Handler<hearth_messages::mempool::GetBlobs> for MempoolActor {
    type Result = Option<Vec<alloy_eips::eip4844::Blob>>;

    fn handle(
        &mut self,
        msg: hearth_messages::mempool::GetBlobs,
        _ctx: &mut Self::Context,
    ) -> Self::Result {
        self.pool.blobs(&msg)
    }
}

impl Handler<hearth_messages::mempool::GetBlobTxs> for MempoolActor {
    type Result = actix::MessageResult<hearth_messages::mempool::GetBlobTxs>;

    fn handle(
        &mut self,
        msg: hearth_messages::mempool::GetBlobTxs,
        _ctx: &mut Self::Context,
    ) -> Self::Result {
        use hearth_messages::mempool::GetBlobTxs;
        actix::MessageResult(match msg {
            GetBlobTxs::Versioned(hashes) => hashes.iter().map(|h| self.pool.blob_tx(h)).collect(),
            GetBlobTxs::Transactions(hashes) => {
                hashes.iter().map(|h| self.pool.blob_tx_by_hash(h)).collect()
            }
        })
    }
}

impl Handler<PendingNonce> for MempoolActor {
    type Result = Result<u64, TxError>;

    fn handle(&mut self, msg: PendingNonce, _ctx: &mut Self::Context) -> Self::Result {
        self.contained(|act| act.pool.pending_nonce(&act.db, &msg.0))
    }
}

impl Handler<PoolSize> for MempoolActor {
    type Result = actix::MessageResult<PoolSize>;

    fn handle(&mut self, _msg: PoolSize, _ctx: &mut Self::Context) -> Self::Result {
        let executable = self.pool.pending(&self.db, u64::MAX, usize::MAX, 0).len();
        actix::MessageResult((executable, self.pool.len() - executable))
    }
}

impl Handler<SubmitTxs> for MempoolActor {
    type Result = Result<Vec<Result<B256, TxError>>, TxError>;

    fn handle(&mut self, msg: SubmitTxs, ctx: &mut Self::Context) -> Self::Result {
        self.fair.handled(ctx);
        let results = self.contained(|act| act.pool.admit_batch(&act.db, msg.txs))?;
        self.announce(results.iter().filter_map(|r| r.as_ref().ok().copied()).collect());
        Ok(results)
    }
}

impl Handler<SubmitFilled> for MempoolActor {
    type Result = Result<B256, TxError>;

    fn handle(&mut self, msg: SubmitFilled, ctx: &mut Self::Context) -> Self::Result {
        self.fair.handled(ctx);
        let hash = self.contained(|act| act.pool.admit_filled(&act.db, msg))?;
        self.announce(vec![hash]);
        Ok(hash)
    }
}

/// Admits in this visit, then asks the miner (on this thread) to mine, and answers once it
/// has: the caller's one hop to this thread covers both. (A macro: a generic impl over every
/// `M` the pool handles sends the trait solver round `ThenMine<ThenMine<..>>`.)
macro_rules! then_mine {
    ($($msg:ty),+) => {$(
        impl Handler<ThenMine<$msg>> for MempoolActor {
            type Result = actix::ResponseFuture<<$msg as actix::Message>::Result>;

            fn handle(&mut self, msg: ThenMine<$msg>, ctx: &mut Self::Context) -> Self::Result {
                let admitted = <Self as Handler<$msg>>::handle(self, msg.submit, ctx);
                let miner = msg.miner;
                Box::pin(async move {
                    if admitted.admitted_any() {
                        automine(&miner).await;
                    }
                    admitted
                })
            }
        }
    )+};
}

then_mine!(SubmitTx, SubmitFilled, SubmitTxs);

/// One automine run after an admission. The transaction is admitted whatever happens next, so
/// a failure is logged, not answered. A full miner mailbox means blocks are already being
/// built back to back, and the miner mines until nothing executable is left, so what was just
/// admitted is picked up without this nudge.
async fn automine(miner: &actix::Recipient<Ask<AutoMine>>) {
    match hearth_messages::ask::ask(miner, AutoMine).await {
        Ok(Ok(_)) => {}
        Ok(Err(error)) => {
            tracing::warn!(target: "actors::mempool", %error, "automine after submit failed");
        }
        Err(error) => {
            tracing::warn!(target: "actors::mempool", %error, "miner unavailable after submit");
        }
    }
}

impl Handler<SetImpersonated> for MempoolActor {
    type Result = ();

    fn handle(&mut self, msg: SetImpersonated, _ctx: &mut Self::Context) -> Self::Result {
        self.pool.set_impersonated(msg.address, msg.enabled);
    }
}

impl Handler<SetAutoImpersonate> for MempoolActor {
    type Result = ();

    fn handle(&mut self, msg: SetAutoImpersonate, _ctx: &mut Self::Context) -> Self::Result {
        self.pool.set_auto_impersonate(msg.0);
    }
}

impl Handler<GetPoolContent> for MempoolActor {
    type Result = actix::MessageResult<GetPoolContent>;

    fn handle(&mut self, _msg: GetPoolContent, _ctx: &mut Self::Context) -> Self::Result {
        actix::MessageResult(self.pool.content(&self.db, next_base_fee(&self.db)))
    }
}

impl Handler<DropTx> for MempoolActor {
    type Result = bool;

    fn handle(&mut self, msg: DropTx, _ctx: &mut Self::Context) -> Self::Result {
        self.pool.drop_tx(&msg.0)
    }
}

impl Handler<DropAll> for MempoolActor {
    type Result = usize;

    fn handle(&mut self, msg: DropAll, _ctx: &mut Self::Context) -> Self::Result {
        if msg.chain_replaced {
            self.pool.forget_mined();
        }
        self.pool.drop_all()
    }
}

impl Handler<RemoveSender> for MempoolActor {
    type Result = usize;

    fn handle(&mut self, msg: RemoveSender, _ctx: &mut Self::Context) -> Self::Result {
        self.pool.remove_sender(&msg.0)
    }
}

impl Handler<SetChainId> for MempoolActor {
    type Result = usize;

    fn handle(&mut self, msg: SetChainId, _ctx: &mut Self::Context) -> Self::Result {
        let dropped = self.pool.set_chain_id(msg.0);
        tracing::info!(target: "actors::mempool", chain_id = msg.0, dropped, "chain id set");
        dropped
    }
}

impl Handler<SetPoolGasLimit> for MempoolActor {
    type Result = ();

    fn handle(&mut self, msg: SetPoolGasLimit, _ctx: &mut Self::Context) -> Self::Result {
        self.pool.set_block_gas_limit(msg.0);
    }
}

impl Handler<Revalidate> for MempoolActor {
    type Result = ();

    fn handle(&mut self, _msg: Revalidate, _ctx: &mut Self::Context) -> Self::Result {
        let _ = self.contained(|act| {
            act.pool.remove_mined(&act.db, []);
            Ok(())
        });
    }
}

// The RPC front asks these with `ask` (fail fast when the mailbox is full).
impl Handler<hearth_messages::mempool::IsImpersonated> for MempoolActor {
    type Result = bool;

    fn handle(
        &mut self,
        msg: hearth_messages::mempool::IsImpersonated,
        _ctx: &mut Self::Context,
    ) -> bool {
        self.pool.is_impersonated(&msg.0)
    }
}

hearth_messages::answer_asks!(MempoolActor: ThenMine<SubmitTx>, ThenMine<SubmitFilled>, ThenMine<SubmitTxs>, GetPooledTx, hearth_messages::mempool::GetPooledByNonce, hearth_messages::mempool::GetBlobs, hearth_messages::mempool::GetBlobTxs, TakePending, PendingNonce, PoolSize, GetPoolCounters, hearth_messages::mempool::IsImpersonated);
