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
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};

use super::*;

/// Fewest leaves worth spreading: below it the threads' start costs more than the hashing
/// (a scoped thread starts in tens of microseconds; 256 receipts hash in about as long).
pub const MIN_SPREAD_LEAVES: usize = 256;

/// Subtrees per thread the cut aims for, so that uneven subtrees even out between threads.
const SUBTREES_PER_THREAD: usize = 16;

/// The roots of two tries over (key, value) pairs held in memory (a block's transactions and
/// receipts, key rlp(index)), on `threads` threads, with `beside` (the rest of the block's
/// post-loop work, such as its state diff) run on the calling thread: the two tries are built
/// at once (one on a second thread: encoding the values and inserting them is each trie's
/// one-thread part), then the subtrees of both are hashed by one pool of `threads`, the calling
/// thread running `beside` first; the pool's counter gives it fewer subtrees, so neither waits
/// for the other. With one thread, or tries too small to spread, everything runs here: starting a
/// thread costs tens of microseconds, more than a few hundred leaves take.
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
    let ((trie_a, leaves_a), (trie_b, leaves_b)) = if a.len() == 0 || b.len() == 0 {
        // One trie is empty (a block whose transactions root is known already): no thread to
        // start for it.
        (build_ordered(a), build_ordered(b))
    } else {
        std::thread::scope(|scope| {
            let built_a = scope.spawn(|| build_ordered(a));
            let built_b = build_ordered(b);
            let built_a = built_a.join().unwrap_or_else(|panic| std::panic::resume_unwind(panic));
            (built_a, built_b)
        })
    };
    let frontier_a = spread_frontier(&trie_a, threads, leaves_a);
    let frontier_b = spread_frontier(&trie_b, threads, leaves_b);
    let all: Vec<&Node> = frontier_a.iter().chain(&frontier_b).copied().collect();
    let (refs, other) = if all.is_empty() {
        (Vec::new(), beside())
    } else {
        hash_subtrees_beside(&all, spread_threads(threads, leaves_a + leaves_b), beside)
    };
    let (refs_a, refs_b) = refs.split_at(frontier_a.len());
    (root_above(&trie_a, &frontier_a, refs_a), root_above(&trie_b, &frontier_b, refs_b), other)
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

/// The references of `subtrees`, in order, hashed by `threads` threads taking them in turn;
/// the calling thread runs `beside` first.
fn hash_subtrees_beside<R: Send>(
    subtrees: &[&Node],
    threads: usize,
    beside: impl FnOnce() -> R + Send,
) -> (Vec<NodeRef>, R) {
    let next = AtomicUsize::new(0);
    let refs: Vec<Mutex<Option<NodeRef>>> = subtrees.iter().map(|_| Mutex::new(None)).collect();
    let work = || {
        let mut buf = Vec::with_capacity(576);
        loop {
            let i = next.fetch_add(1, Ordering::Relaxed);
            let Some(node) = subtrees.get(i) else { break };
            let r = node_ref(node, &mut buf, &mut |_, _| {});
            *refs[i].lock().unwrap_or_else(std::sync::PoisonError::into_inner) = Some(r);
        }
    };
    // `beside` runs on the calling thread: what it allocates (a block's state diff and body)
    // then comes from that thread's long-lived allocator arena, not from a scoped thread's
    // that ends with the scope while the state owner frees the block later.
    let other = std::thread::scope(|scope| {
        for _ in 1..threads.min(subtrees.len()) {
            scope.spawn(work);
        }
        let other = beside();
        work();
        other
    });
    let refs = refs
        .into_iter()
        .map(|r| {
            r.into_inner()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .expect("every subtree was hashed before the scope ended")
        })
        .collect();
    (refs, other)
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
                    let frontier = cut(&trie.root, threads * SUBTREES_PER_THREAD);
                    let (refs, ()) = hash_subtrees_beside(&frontier, threads, || ());
                    let root = root_above(&trie, &frontier, &refs);
                    assert_eq!(root, expected, "n={n} value_len={value_len} threads={threads}");
                }
            }
        }
    }
}
