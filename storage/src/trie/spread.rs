//! Hashing one in-memory trie on several threads: the roots of a block's transactions and
//! receipts.
//!
//! For a block of cheap transactions these two roots cost more than executing the block (a
//! receipt carries a 256-byte bloom: three keccak blocks per leaf, ten thousand leaves). The
//! subtrees are independent, so the trie is cut a few levels below its root into many subtrees
//! ("the frontier", enough for every thread to take several: the keys rlp(0..n) put most
//! leaves under one root nibble, so the cut must go deeper than the root), the threads take
//! them from a shared counter and hash them, and the nodes above the cut are then encoded once,
//! with the subtrees' references looked up instead of recomputed.

use std::collections::HashMap;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicUsize, Ordering};

use super::*;
use crate::cpu::CallerCpu;

/// Fewest leaves worth spreading: below it the threads' start costs more than the hashing
/// (a scoped thread starts in tens of microseconds; 256 receipts hash in about as long).
pub const MIN_SPREAD_LEAVES: usize = 256;

/// Subtrees per thread the cut aims for, so that uneven subtrees even out between threads.
const SUBTREES_PER_THREAD: usize = 16;

/// The roots of two tries over (key, value) pairs held in memory (a block's transactions and
/// receipts, key rlp(index)), on `threads` threads, with `beside` (the rest of the block's
/// post-loop work, such as its state diff) run on the calling thread.
///
/// A second thread builds trie `a` while the calling thread builds trie `b` (encoding the
/// values and inserting them is each trie's one-thread part). Each trie is cut into subtrees
/// as soon as it is built, and its subtrees are hashed from then on by every thread that is
/// free: the thread that built `a` starts on `a`'s at once instead of waiting for the slower
/// build, then takes `b`'s; the calling thread runs `beside`, then takes `b`'s and what is left
/// of `a`'s. Each trie's counter gives every thread its next subtree, so neither thread waits
/// for the other. When one trie is empty (the transactions root is known already), both are
/// built here first and the threads start on the other's subtrees. With one thread, or tries
/// too small to spread, everything runs here: starting a thread costs tens of microseconds,
/// more than a few hundred leaves take.
pub fn ordered_roots_beside<A, B, R>(
    a: A,
    b: B,
    threads: usize,
    beside: impl FnOnce() -> R + Send,
) -> (B256, B256, R)
where
    A: IntoIterator<Item = (Vec<u8>, Vec<u8>)>,
    A::IntoIter: ExactSizeIterator + Send,
    B: IntoIterator<Item = (Vec<u8>, Vec<u8>)>,
    B::IntoIter: ExactSizeIterator,
    R: Send,
{
    let (a, b) = (a.into_iter(), b.into_iter());
    if threads < 2 || a.len() + b.len() < MIN_SPREAD_LEAVES {
        let other = beside();
        return (ordered_root(a), ordered_root(b), other);
    }
    let pool = spread_threads(threads, a.len() + b.len());
    // Declared before the scope, which borrows them: each trie, and its subtrees once cut.
    let (trie_a, trie_b) = (OnceLock::new(), OnceLock::new());
    let (cut_a, cut_b): (OnceLock<Subtrees<'_>>, OnceLock<Subtrees<'_>>) =
        (OnceLock::new(), OnceLock::new());
    let (mut a, mut b) = (Some(a), Some(b));
    if a.as_ref().is_some_and(|a| a.len() == 0) || b.as_ref().is_some_and(|b| b.len() == 0) {
        // One trie is empty (a block whose transactions root is known already): a thread
        // started now would only wait for the other's build. Build both here, then hash.
        if let Some(a) = a.take() {
            build_and_cut(a, &trie_a, &cut_a, threads);
        }
        if let Some(b) = b.take() {
            build_and_cut(b, &trie_b, &cut_b, threads);
        }
    }
    // Each thread started here keeps off this one's core (`crate::cpu`).
    let caller = CallerCpu::now();
    let spread = Spread { trie_a: &trie_a, trie_b: &trie_b, cut_a: &cut_a, cut_b: &cut_b, caller };
    let other = spread.build_and_hash(a, b, threads, pool, beside);
    // The scope joined every thread: both tries are built and every subtree is hashed (a
    // thread that panicked re-raised its panic when the scope ended).
    let root_a = root_of(&trie_a, cut_a);
    let root_b = root_of(&trie_b, cut_b);
    free_both(trie_a, trie_b, caller);
    (root_a, root_b, other)
}

/// What every thread of one [`ordered_roots_beside`] shares: both tries, their subtrees once
/// cut, and the core of the thread that started them.
#[derive(Clone, Copy)]
struct Spread<'s, 't> {
    trie_a: &'t OnceLock<(Trie, usize)>,
    trie_b: &'t OnceLock<(Trie, usize)>,
    cut_a: &'s OnceLock<Subtrees<'t>>,
    cut_b: &'s OnceLock<Subtrees<'t>>,
    caller: CallerCpu,
}

impl Spread<'_, '_> {
    /// Builds the tries of `a` and `b` (those not built yet) and hashes both tries' subtrees
    /// on `pool` threads, this one included, which runs `beside` between its build and its
    /// share of the hashing; returns what `beside` returned once every thread ended.
    fn build_and_hash<A, B, R>(
        self,
        a: Option<A>,
        b: Option<B>,
        threads: usize,
        pool: usize,
        beside: impl FnOnce() -> R + Send,
    ) -> R
    where
        A: Iterator<Item = (Vec<u8>, Vec<u8>)> + Send,
        B: Iterator<Item = (Vec<u8>, Vec<u8>)>,
    {
        let Self { trie_a, trie_b, cut_a, cut_b, caller } = self;
        std::thread::scope(|scope| {
            scope.spawn(move || {
                caller.avoid();
                if let Some(a) = a {
                    build_and_cut(a, trie_a, cut_a, threads);
                }
                hash_subtrees(cut_a, cut_b);
            });
            caller.let_started_move();
            if let Some(b) = b {
                build_and_cut(b, trie_b, cut_b, threads);
            }
            // The other threads start once there is something to hash, rather than spin beside
            // the two builds (on a machine with fewer cores than threads, in their way).
            for _ in 2..pool {
                scope.spawn(move || {
                    caller.avoid();
                    hash_subtrees(cut_b, cut_a);
                });
            }
            if pool > 2 {
                caller.let_started_move();
            }
            // `beside` runs on the calling thread: what it allocates (a block's state diff and
            // body) then comes from that thread's long-lived allocator arena, not from a scoped
            // thread's that ends with the scope while the state owner frees the block later.
            let other = beside();
            hash_subtrees(cut_b, cut_a);
            other
        })
    }
}

/// Hashes the subtrees of `first` left to take, then those of `then`, each once it is cut.
#[inline]
fn hash_subtrees(first: &OnceLock<Subtrees<'_>>, then: &OnceLock<Subtrees<'_>>) {
    let mut buf = Vec::with_capacity(576);
    cut_of(first).hash(&mut buf);
    cut_of(then).hash(&mut buf);
}

/// The root of `trie` above its subtrees, every one of them hashed.
fn root_of<'t>(trie: &'t OnceLock<(Trie, usize)>, cut: OnceLock<Subtrees<'t>>) -> B256 {
    let subtrees = cut.into_inner().unwrap_or_default();
    let (trie, _) = trie.get().expect("the trie was built before the scope ended");
    root_above(trie, &subtrees.nodes, &subtrees.refs())
}

/// Frees both tries, each on its own thread: freeing a big block's two takes half a
/// millisecond.
fn free_both(trie_a: OnceLock<(Trie, usize)>, trie_b: OnceLock<(Trie, usize)>, caller: CallerCpu) {
    std::thread::scope(|scope| {
        scope.spawn(move || {
            caller.avoid();
            drop(trie_a);
        });
        caller.let_started_move();
        drop(trie_b);
    });
}

/// Builds the trie of `pairs` into `trie` and publishes its subtrees for `threads` threads in
/// `cut`; if the build panics, publishes none, so that no thread waits for them forever (the
/// scope then re-raises the panic).
fn build_and_cut<'t>(
    pairs: impl IntoIterator<Item = (Vec<u8>, Vec<u8>)>,
    trie: &'t OnceLock<(Trie, usize)>,
    cut: &OnceLock<Subtrees<'t>>,
    threads: usize,
) {
    let publish = Publish(cut);
    let (trie, leaves) = trie.get_or_init(|| build_ordered(pairs));
    publish.done(Subtrees::new(spread_frontier(trie, threads, *leaves)));
}

/// A trie's subtrees once cut, waited for without sleeping: a thread that sleeps here can take
/// milliseconds to be woken when its core halted meanwhile (a virtual machine's), where the
/// wait itself is usually a fraction of that.
fn cut_of<'c, 't>(cut: &'c OnceLock<Subtrees<'t>>) -> &'c Subtrees<'t> {
    let mut spins = 0u32;
    loop {
        if let Some(subtrees) = cut.get() {
            return subtrees;
        }
        spins += 1;
        if spins < 64 {
            std::hint::spin_loop();
        } else {
            std::thread::yield_now();
        }
    }
}

/// One trie's subtrees below its cut, each hashed by whichever thread takes it next.
#[derive(Default)]
struct Subtrees<'t> {
    nodes: Vec<&'t Node>,
    next: AtomicUsize,
    refs: Vec<OnceLock<NodeRef>>,
}

impl<'t> Subtrees<'t> {
    fn new(nodes: Vec<&'t Node>) -> Self {
        let refs = nodes.iter().map(|_| OnceLock::new()).collect();
        Self { nodes, next: AtomicUsize::new(0), refs }
    }

    /// Hashes subtrees until none is left to take.
    fn hash(&self, buf: &mut Vec<u8>) {
        loop {
            let i = self.next.fetch_add(1, Ordering::Relaxed);
            let Some(node) = self.nodes.get(i) else { break };
            let _ = self.refs[i].set(node_ref(node, buf, &mut |_, _| {}));
        }
    }

    /// Every subtree's reference, in order, once all were hashed.
    fn refs(&self) -> Vec<NodeRef> {
        self.refs
            .iter()
            .map(|r| *r.get().expect("every subtree was hashed before the scope ended"))
            .collect()
    }
}

/// Publishes a trie's subtrees for the other threads, or none when dropped first (its build
/// panicked).
struct Publish<'c, 't>(&'c OnceLock<Subtrees<'t>>);

impl<'t> Publish<'_, 't> {
    fn done(self, subtrees: Subtrees<'t>) {
        let _ = self.0.set(subtrees);
    }
}

impl Drop for Publish<'_, '_> {
    fn drop(&mut self) {
        let _ = self.0.set(Subtrees::default());
    }
}

/// The threads worth starting for `leaves` leaves when `threads` may run: one per
/// `MIN_SPREAD_LEAVES / 2` leaves at most, so that on a many-core machine a block of a few
/// hundred receipts does not start dozens of threads.
const fn spread_threads(threads: usize, leaves: usize) -> usize {
    let worth = leaves / (MIN_SPREAD_LEAVES / 2);
    if threads < worth { threads } else { worth }
}

/// The subtrees `trie` (of `leaves` leaves) is cut into for `threads` threads; empty when it
/// is hashed on one thread.
fn spread_frontier(trie: &Trie, threads: usize, leaves: usize) -> Vec<&Node> {
    let threads = spread_threads(threads, leaves);
    if threads < 2 {
        return Vec::new();
    }
    let frontier = cut(&trie.root, threads * SUBTREES_PER_THREAD);
    if frontier.len() < 2 { Vec::new() } else { frontier }
}

/// The root hash of `trie` whose `frontier` subtrees were hashed to `refs` (in order): the
/// nodes above the cut are encoded once, each subtree's reference looked up. An empty frontier
/// is the one-thread [`Trie::root_hash`].
fn root_above(trie: &Trie, frontier: &[&Node], refs: &[NodeRef]) -> B256 {
    if frontier.is_empty() {
        return trie.root_hash();
    }
    let done: HashMap<*const Node, NodeRef> =
        frontier.iter().map(|node| std::ptr::from_ref(*node)).zip(refs.iter().copied()).collect();
    let mut buf = Vec::with_capacity(576);
    encode_above(&trie.root, &mut buf, &done);
    keccak256(&buf)
}

/// The children of branches and extensions, level by level from `root`, until at least `want`
/// of them are branches or extensions (subtrees worth a thread's turn) or nothing is left to
/// open; empty slots are not kept. Leaves do not count: the keys rlp(0..n) of a big block put
/// a hundred and thirty leaves (indexes below 128 and under 0x81) beside the one branch that
/// holds all the rest (under 0x82), and a cut that counted them stopped there, leaving one
/// thread nearly the whole trie to hash.
fn cut(root: &Node, want: usize) -> Vec<&Node> {
    let mut frontier = vec![root];
    loop {
        let mut next = Vec::with_capacity(frontier.len() * 4);
        let mut opened = false;
        for node in &frontier {
            match node {
                Node::Branch { children, .. } => {
                    opened = true;
                    next.extend(children.iter().filter(|c| !matches!(c, Node::Empty)));
                }
                Node::Extension { child, .. } => {
                    opened = true;
                    next.push(child);
                }
                Node::Leaf { .. } | Node::Hash(_) | Node::Empty => next.push(node),
            }
        }
        if !opened {
            return frontier;
        }
        frontier = next;
        let inner = frontier
            .iter()
            .filter(|node| matches!(node, Node::Branch { .. } | Node::Extension { .. }))
            .count();
        if inner >= want {
            return frontier;
        }
    }
}

/// The RLP of `node` into `buf`, taking the references of subtrees already hashed from `done`.
fn encode_above(node: &Node, buf: &mut Vec<u8>, done: &HashMap<*const Node, NodeRef>) {
    match node {
        Node::Extension { path, child } => {
            let child = ref_above(child, buf, done);
            write_extension(buf, path, &child);
        }
        Node::Branch { children, value } => {
            let mut refs = [NodeRef::EMPTY; 16];
            for (slot, child) in refs.iter_mut().zip(children.iter()) {
                *slot = ref_above(child, buf, done);
            }
            write_branch(buf, &refs, value);
        }
        other => encode_into(other, buf, &mut |_, _| {}),
    }
}

fn ref_above(node: &Node, buf: &mut Vec<u8>, done: &HashMap<*const Node, NodeRef>) -> NodeRef {
    if let Some(r) = done.get(&std::ptr::from_ref(node)) {
        return *r;
    }
    match node {
        Node::Extension { .. } | Node::Branch { .. } => {
            encode_above(node, buf, done);
            if buf.len() < 32 { NodeRef::inline(buf) } else { NodeRef::hash(&keccak256(&buf[..])) }
        }
        other => node_ref(other, buf, &mut |_, _| {}),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pairs(n: usize, value_len: usize) -> Vec<(Vec<u8>, Vec<u8>)> {
        (0..n)
            .map(|i| {
                let value: Vec<u8> = (0..value_len).map(|j| (i * 31 + j * 7) as u8).collect();
                (alloy_rlp::encode(i), value)
            })
            .collect()
    }

    /// Two tries built at once and hashed by one pool, one thread running `beside` first: each
    /// root is its own one-thread root, whichever of them is too small to spread, and
    /// `beside`'s result comes back.
    #[test]
    fn two_roots_spread_together_are_each_one_thread_root() {
        for (n_a, n_b) in
            [(0, 0), (0, 300), (300, 0), (5, 4097), (1000, 300), (257, 256), (4097, 4095)]
        {
            for (len_a, len_b) in [(40, 300), (3, 1)] {
                let expected = (ordered_root(pairs(n_a, len_a)), ordered_root(pairs(n_b, len_b)));
                for threads in [1, 2, 5] {
                    let (root_a, root_b, beside) =
                        ordered_roots_beside(pairs(n_a, len_a), pairs(n_b, len_b), threads, || {
                            n_a + n_b
                        });
                    assert_eq!(
                        (root_a, root_b),
                        expected,
                        "n={n_a}/{n_b} value_len={len_a}/{len_b} threads={threads}"
                    );
                    assert_eq!(beside, n_a + n_b);
                }
            }
        }
    }

    /// A panic while building either trie, or in `beside`, comes back to the caller instead of
    /// leaving a thread waiting for subtrees that will never be cut.
    #[test]
    fn a_panic_in_either_build_or_beside_reaches_the_caller() {
        let failing = |fails: bool| {
            (0..1_000usize).map(move |i| {
                assert!(!(fails && i == 500), "the pairs failed");
                (alloy_rlp::encode(i), vec![7u8; 40])
            })
        };
        for (a_fails, b_fails, beside_fails) in
            [(true, false, false), (false, true, false), (false, false, true), (true, true, false)]
        {
            let outcome = std::panic::catch_unwind(|| {
                ordered_roots_beside(failing(a_fails), failing(b_fails), 2, || {
                    assert!(!beside_fails, "beside failed");
                })
            });
            assert!(outcome.is_err(), "a={a_fails} b={b_fails} beside={beside_fails}");
        }
    }

    fn leaves_under(node: &Node) -> usize {
        match node {
            Node::Leaf { .. } => 1,
            Node::Branch { children, value } => {
                children.iter().map(leaves_under).sum::<usize>() + usize::from(!value.is_empty())
            }
            Node::Extension { child, .. } => leaves_under(child),
            Node::Hash(_) | Node::Empty => 0,
        }
    }

    /// A big block's trie is cut into subtrees of a few hundred leaves at most: the cut once
    /// stopped at the level where about 130 small leaves sat beside the one branch holding
    /// every index from 256 on, and that branch was one thread's whole work.
    #[test]
    fn a_big_block_is_cut_into_even_subtrees() {
        for n in [1_000, 2_000, 10_000, 30_000] {
            let (trie, leaves) = build_ordered(pairs(n, 3));
            for threads in [2, 4] {
                let frontier = cut(&trie.root, threads * SUBTREES_PER_THREAD);
                let biggest = frontier.iter().map(|node| leaves_under(node)).max().unwrap_or(0);
                assert!(
                    biggest * threads * 4 <= leaves,
                    "n={n} threads={threads}: a subtree of {biggest} of {leaves} leaves"
                );
            }
        }
    }

    /// Every size around the threshold and the rlp(index) key boundaries (128, 256, 4096),
    /// short values (inline nodes) and long ones, cut for 2 and 5 threads whatever the size:
    /// the same root as one thread computes.
    #[test]
    fn a_spread_root_is_the_one_thread_root() {
        for n in [0, 1, 2, 17, 127, 128, 129, 255, 256, 257, 300, 1000, 4095, 4097] {
            for value_len in [1, 3, 40, 300] {
                let expected = ordered_root(pairs(n, value_len));
                for threads in [2, 5] {
                    let (trie, _) = build_ordered(pairs(n, value_len));
                    // Force the spread path whatever the size.
                    let subtrees = Subtrees::new(cut(&trie.root, threads * SUBTREES_PER_THREAD));
                    std::thread::scope(|scope| {
                        for _ in 1..threads {
                            scope.spawn(|| subtrees.hash(&mut Vec::new()));
                        }
                        subtrees.hash(&mut Vec::new());
                    });
                    let root = root_above(&trie, &subtrees.nodes, &subtrees.refs());
                    assert_eq!(root, expected, "n={n} value_len={value_len} threads={threads}");
                }
            }
        }
    }
}
