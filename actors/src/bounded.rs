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
/// behind others' (a store on disk's state writer, the code cache, the filters).
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

/// How many messages in a row an actor that shares its thread handles before it lets the
/// other actors on that thread run.
const FAIR_SHARE_MESSAGES: u32 = 32;

/// Makes an actor yield its thread every [`FAIR_SHARE_MESSAGES`] messages.
///
/// Why: actix handles an actor's mailbox in one loop for as long as messages are waiting, so an
/// actor whose mailbox never empties (the mempool under a transaction flood) kept the miner,
/// which shares its thread, from running at all: an Engine API commit waited for as long as
/// the flood lasted. A wait on `yield_now` ends that loop and puts the actor behind the other
/// ready tasks of the thread once.
#[derive(Debug, Default)]
pub(crate) struct FairShare {
    handled: u32,
}

impl FairShare {
    /// Counts one handled message; every [`FAIR_SHARE_MESSAGES`]th, yields.
    pub(crate) fn handled<A>(&mut self, ctx: &mut Context<A>)
    where
        A: Actor<Context = Context<A>>,
    {
        self.handled += 1;
        if self.handled >= FAIR_SHARE_MESSAGES {
            self.handled = 0;
            actix::AsyncContext::wait(
                ctx,
                actix::fut::wrap_future::<_, A>(tokio::task::yield_now()),
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use std::cell::Cell;
    use std::rc::Rc;

    use actix::{Handler, Message};

    use super::*;

    #[derive(Message)]
    #[rtype(result = "()")]
    struct Work;

    #[derive(Message)]
    #[rtype(result = "u32")]
    struct HowFar;

    /// An actor with a long mailbox, counting what it handled.
    struct Busy {
        handled: Rc<Cell<u32>>,
        fair: FairShare,
    }

    impl Actor for Busy {
        type Context = Context<Self>;
    }

    impl Handler<Work> for Busy {
        type Result = ();

        fn handle(&mut self, _msg: Work, ctx: &mut Self::Context) {
            self.handled.set(self.handled.get() + 1);
            self.fair.handled(ctx);
        }
    }

    /// An actor on the same thread that answers how far `Busy` got when it ran.
    struct Probe {
        busy_handled: Rc<Cell<u32>>,
    }

    impl Actor for Probe {
        type Context = Context<Self>;
    }

    impl Handler<HowFar> for Probe {
        type Result = u32;

        fn handle(&mut self, _msg: HowFar, _ctx: &mut Self::Context) -> u32 {
            self.busy_handled.get()
        }
    }

    #[actix::test]
    async fn an_actor_with_a_long_mailbox_lets_its_thread_neighbours_run() {
        let handled = Rc::new(Cell::new(0));
        let room = NonZeroUsize::new(2_000).expect("non-zero");
        let busy =
            start_here(Busy { handled: Rc::clone(&handled), fair: FairShare::default() }, room);
        let probe = Probe { busy_handled: Rc::clone(&handled) }.start();
        for _ in 0..1_000 {
            busy.try_send(Work).expect("room for it");
        }
        let seen = probe.send(HowFar).await.expect("answered");
        // Without yielding, all 1,000 run before the probe: the neighbour starves.
        assert!(seen < 1_000, "the probe ran only after {seen} messages");
        assert!(seen >= FAIR_SHARE_MESSAGES, "{seen}");
    }
}
