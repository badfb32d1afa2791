//! Starting an actor with a bounded mailbox. actix's `start()` gives a mailbox of 16 and lets
//! `send` wait for room; every Hearth actor instead sets its capacity (`--actors.mailbox`)
//! before its first message, so the bound holds from the start.

use std::num::NonZeroUsize;

use actix::{Actor, Addr, Arbiter, Context};

/// Starts `actor` on the current arbiter (it shares that thread with its neighbours).
pub(crate) fn start_here<A>(actor: A, mailbox: NonZeroUsize) -> Addr<A>
where
    A: Actor<Context = Context<A>>,
{
    A::create(move |ctx| {
        ctx.set_mailbox_capacity(mailbox.get());
        actor
    })
}

/// Starts `actor` on an arbiter (an OS thread) of its own, for actors whose work must not wait
/// behind others' (the state writer, the mempool, the miner's timer).
pub(crate) fn start_on_own_thread<A>(actor: A, mailbox: NonZeroUsize) -> Addr<A>
where
    A: Actor<Context = Context<A>> + Send,
{
    start_on(&Arbiter::new().handle(), actor, mailbox)
}

/// Starts `actor` on `arbiter`'s thread. Actors that talk to each other on every block (the
/// miner and the mempool) share one, so their round trips are task switches, not thread
/// wake-ups.
pub fn start_on<A>(arbiter: &actix::ArbiterHandle, actor: A, mailbox: NonZeroUsize) -> Addr<A>
where
    A: Actor<Context = Context<A>> + Send,
{
    A::start_in_arbiter(arbiter, move |ctx| {
        ctx.set_mailbox_capacity(mailbox.get());
        actor
    })
}
