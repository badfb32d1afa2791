//! Writes: insertion and removal that keep the trie canonical.

use super::*;

/// Inserts `value` (non-empty) at `path` below `node`. Returns whether anything changed, so a
/// no-op can put a loaded node back to its hash reference.
pub(super) fn insert_at(
    src: &mut Loader<'_>,
    node: &mut Node,
    path: &[u8],
    value: Vec<u8>,
) -> Result<bool, StorageError> {
    match node {
        Node::Empty => {
            *node = Node::Leaf { path: Nibbles::from_slice(path), value };
            Ok(true)
        }
        Node::Hash(hash) => {
            let hash = *hash;
            insert_below_hash(src, node, hash, path, value)
        }
        Node::Leaf { path: leaf_path, value: leaf_value } => {
            if leaf_path.as_slice() == path {
                if *leaf_value == value {
                    return Ok(false);
                }
                *leaf_value = value;
                return Ok(true);
            }
            let leaf_value = std::mem::take(leaf_value);
            *node = split_leaf(src, leaf_path, leaf_value, path, value);
            Ok(true)
        }
        Node::Extension { path: ext_path, child } => {
            let c = common_prefix(ext_path, path);
            if c == ext_path.len() {
                return insert_at(src, child, &path[c..], value);
            }
            split_extension(src, node, c, path, value);
            Ok(true)
        }
        Node::Branch { children, value: branch_value } => match path.split_first() {
            Some((&i, rest)) => insert_at(src, &mut children[usize::from(i)], rest, value),
            None if *branch_value == value => Ok(false),
            None => {
                *branch_value = value;
                Ok(true)
            }
        },
    }
}

/// [`insert_at`] on `node`, a reference to the stored node `hash`: a leaf the loader read
/// last is replaced without loading it; any other node is loaded, and put back to its
/// reference if the insert changed nothing.
#[inline]
fn insert_below_hash(
    src: &mut Loader<'_>,
    node: &mut Node,
    hash: B256,
    path: &[u8],
    value: Vec<u8>,
) -> Result<bool, StorageError> {
    if src.is_previous_leaf(&hash, path) {
        if src.previous == Some(value.as_slice()) {
            return Ok(false);
        }
        *node = Node::Leaf { path: Nibbles::from_slice(path), value };
        return Ok(true);
    }
    *node = src.load(&hash)?;
    let changed = insert_at(src, node, path, value)?;
    if !changed {
        // Keep the invariant: resolved nodes are dirty ones.
        src.discard(std::mem::replace(node, Node::Hash(hash)));
    }
    Ok(changed)
}

/// What replaces the leaf at `leaf_path` when the key `path`, a different one, is inserted
/// beside it.
#[inline]
fn split_leaf(
    src: &mut Loader<'_>,
    leaf_path: &[u8],
    leaf_value: Vec<u8>,
    path: &[u8],
    value: Vec<u8>,
) -> Node {
    // The keys diverge after `c` shared nibbles (or one ends there): a branch holds both,
    // under an extension for the shared part.
    let c = common_prefix(leaf_path, path);
    let mut children = src.spare.children();
    let mut branch_value = Vec::new();
    put_in_branch(&mut children, &mut branch_value, &leaf_path[c..], leaf_value);
    put_in_branch(&mut children, &mut branch_value, &path[c..], value);
    prefixed(&path[..c], Node::Branch { children, value: branch_value })
}

/// Splits the extension `node` around a new branch at nibble `c`, where the key `path`
/// leaves it, and puts `value` in that branch.
#[inline]
fn split_extension(src: &mut Loader<'_>, node: &mut Node, c: usize, path: &[u8], value: Vec<u8>) {
    let Node::Extension { path: ext_path, child } = std::mem::take(node) else {
        unreachable!("only called on an extension")
    };
    let mut children = src.spare.children();
    let mut branch_value = Vec::new();
    // What stays below the branch of the old extension: its remaining path (minus the slot
    // nibble) above its old child, or the child itself if nothing remains.
    let tail = &ext_path[c + 1..];
    children[usize::from(ext_path[c])] = if tail.is_empty() {
        *child
    } else {
        Node::Extension { path: Nibbles::from_slice(tail), child }
    };
    put_in_branch(&mut children, &mut branch_value, &path[c..], value);
    *node = prefixed(&ext_path[..c], Node::Branch { children, value: branch_value });
}

/// Removes the key at `path` below `node`, restoring canonical form on the way up. Returns
/// whether anything changed.
pub(super) fn remove_at(
    src: &mut Loader<'_>,
    node: &mut Node,
    path: &[u8],
) -> Result<bool, StorageError> {
    match node {
        Node::Empty => Ok(false),
        Node::Hash(hash) => {
            let hash = *hash;
            *node = src.load(&hash)?;
            let changed = remove_at(src, node, path)?;
            if !changed {
                src.discard(std::mem::replace(node, Node::Hash(hash)));
            }
            Ok(changed)
        }
        Node::Leaf { path: leaf_path, .. } => {
            if leaf_path.as_slice() != path {
                return Ok(false);
            }
            *node = Node::Empty;
            Ok(true)
        }
        Node::Extension { path: ext_path, child } => {
            let Some(rest) = path.strip_prefix(ext_path.as_slice()) else {
                return Ok(false);
            };
            if !remove_at(src, child, rest)? {
                return Ok(false);
            }
            // The child was a branch. If it collapsed into a leaf or an extension, its path
            // joins ours: an extension may only sit above a branch.
            if !matches!(**child, Node::Branch { .. } | Node::Hash(_)) {
                let Node::Extension { path: ext_path, child } = std::mem::take(node) else {
                    unreachable!("matched as an extension just above")
                };
                *node = prefixed(&ext_path, *child);
            }
            Ok(true)
        }
        Node::Branch { children, value } => {
            match path.split_first() {
                Some((&i, rest)) => {
                    if !remove_at(src, &mut children[usize::from(i)], rest)? {
                        return Ok(false);
                    }
                }
                None if value.is_empty() => return Ok(false),
                // Drop the allocation too, not just the contents.
                None => *value = Vec::new(),
            }
            collapse_branch(src, node)?;
            Ok(true)
        }
    }
}

/// After a removal below a branch: a branch left with only its value becomes a leaf, one left
/// with a single child and no value merges into that child.
pub(super) fn collapse_branch(src: &mut Loader<'_>, node: &mut Node) -> Result<(), StorageError> {
    let Node::Branch { children, value } = node else {
        return Ok(());
    };
    let mut occupied = children.iter().enumerate().filter(|(_, c)| !matches!(c, Node::Empty));
    let only = match (occupied.next(), occupied.next()) {
        (Some(_), Some(_)) => return Ok(()),
        (Some((i, _)), None) if value.is_empty() => i,
        (Some(_), None) => return Ok(()),
        (None, _) => {
            *node = if value.is_empty() {
                Node::Empty
            } else {
                Node::Leaf { path: Nibbles::from_slice(&[]), value: std::mem::take(value) }
            };
            return Ok(());
        }
    };
    // The surviving child's kind decides the merge, so a stored child has to be looked at.
    // Load it before taking anything out, so an error leaves the trie whole. A stored branch
    // stays a hash reference: it does not change (an extension simply points at it).
    if let Node::Hash(hash) = &children[only] {
        let loaded = src.load(hash)?;
        if matches!(loaded, Node::Branch { .. }) {
            src.discard(loaded);
        } else {
            children[only] = loaded;
        }
    }
    let child = std::mem::take(&mut children[only]);
    // `only` < 16, so it is a nibble.
    let emptied = std::mem::replace(node, prefixed(&[only as u8], child));
    src.discard(emptied);
    Ok(())
}
