//! In-memory trie nodes and the recycling of their child arrays.

use super::*;

/// A trie node in memory.
#[derive(Debug, Clone, Default)]
pub(super) enum Node {
    /// No node: the empty trie, or an empty branch slot.
    #[default]
    Empty,
    /// The rest of a key and its (non-empty) value.
    Leaf { path: Nibbles, value: Vec<u8> },
    /// A shared, non-empty path segment above a branch.
    Extension { path: Nibbles, child: Box<Self> },
    /// Sixteen children by next nibble, plus the value of a key ending here (empty = none).
    Branch { children: Box<[Self; 16]>, value: Vec<u8> },
    /// A node not loaded yet: in the [`NodeSource`] under this hash, unchanged since.
    Hash(B256),
}

pub(super) fn empty_children() -> Box<[Node; 16]> {
    Box::new(std::array::from_fn(|_| Node::Empty))
}

/// Branch child arrays kept for reuse, all slots [`Node::Empty`]: a branch's boxed array is the
/// one allocation a decoded node makes, and the trie drops that many at every commit, so it
/// hands them back here instead and the next loads take them.
#[derive(Default)]
pub(super) struct Spare {
    #[expect(clippy::vec_box, reason = "the boxes are what is reused: branches hold them")]
    pub(super) arrays: Vec<Box<[Node; 16]>>,
}

impl Spare {
    /// Enough for the dirty paths of a block of a few thousand updates on a large state
    /// (1,000 accounts in a 1M-account trie load ~2,500 branches); beyond that arrays are
    /// freed. Each is 16 nodes (~1.5 KiB), so at most ~6 MiB is kept.
    const MAX: usize = 4096;

    /// An array of 16 empty children, reused when one is spare.
    pub(super) fn children(&mut self) -> Box<[Node; 16]> {
        self.arrays.pop().unwrap_or_else(empty_children)
    }

    /// Takes `node` apart, keeping its branch arrays (emptied) for reuse.
    pub(super) fn recycle(&mut self, node: Node) {
        match node {
            Node::Branch { mut children, .. } => {
                for child in children.iter_mut() {
                    self.recycle(std::mem::take(child));
                }
                if self.arrays.len() < Self::MAX {
                    self.arrays.push(children);
                }
            }
            Node::Extension { child, .. } => self.recycle(*child),
            Node::Empty | Node::Leaf { .. } | Node::Hash(_) => {}
        }
    }
}

// A clone starts with no spare arrays: they are a cache, not part of the value.
impl Clone for Spare {
    fn clone(&self) -> Self {
        Self::default()
    }
}

/// `node` preceded by `prefix` nibbles, in canonical form: a leaf or an extension absorbs the
/// prefix into its own path; anything else gets an extension above it.
pub(super) fn prefixed(prefix: &[u8], node: Node) -> Node {
    match node {
        Node::Empty => Node::Empty,
        Node::Leaf { path, value } => Node::Leaf { path: Nibbles::concat(prefix, &path), value },
        Node::Extension { path, child } => {
            Node::Extension { path: Nibbles::concat(prefix, &path), child }
        }
        other if prefix.is_empty() => other,
        other => Node::Extension { path: Nibbles::from_slice(prefix), child: Box::new(other) },
    }
}

/// Puts a key's remaining path and value into a fresh branch: the branch's own value if the
/// path ends here, else a leaf in the slot of its next nibble.
pub(super) fn put_in_branch(
    children: &mut [Node; 16],
    branch_value: &mut Vec<u8>,
    rest: &[u8],
    value: Vec<u8>,
) {
    match rest.split_first() {
        None => *branch_value = value,
        Some((&i, tail)) => {
            children[usize::from(i)] = Node::Leaf { path: Nibbles::from_slice(tail), value }
        }
    }
}
