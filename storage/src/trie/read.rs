//! Reads: lookups and proofs, walking stored RLP without decoding whole nodes.

use super::*;

pub(super) fn get_at(
    src: &dyn NodeSource,
    node: &Node,
    path: &[u8],
) -> Result<Option<Vec<u8>>, StorageError> {
    match node {
        Node::Empty => Ok(None),
        Node::Leaf { path: leaf, value } => Ok((leaf.as_slice() == path).then(|| value.clone())),
        Node::Extension { path: ext, child } => match path.strip_prefix(ext.as_slice()) {
            Some(rest) => get_at(src, child, rest),
            None => Ok(None),
        },
        Node::Branch { children, value } => match path.split_first() {
            Some((&i, rest)) => get_at(src, &children[usize::from(i)], rest),
            None => Ok((!value.is_empty()).then(|| value.clone())),
        },
        Node::Hash(hash) => walk_stored(src, *hash, path, None),
    }
}

/// Follows `path` through stored nodes starting at `hash`, straight on their RLP: a read does
/// not build [`Node`]s (no boxed branch per level), it only copies out the value found. When
/// `proof` is given, every node fetched is appended to it.
pub(super) fn walk_stored(
    src: &dyn NodeSource,
    mut hash: B256,
    path: &[u8],
    mut proof: Option<&mut Vec<Vec<u8>>>,
) -> Result<Option<Vec<u8>>, StorageError> {
    let mut consumed = 0;
    // A plain read passes every node through this one buffer; a proof keeps each node it
    // reads, so there each node gets its own (that allocation is the proof itself).
    let mut scratch = Vec::new();
    loop {
        let mut rlp = if proof.is_some() { Vec::new() } else { std::mem::take(&mut scratch) };
        fetch_into(src, &hash, &mut rlp)?;
        let next = match walk_rlp(&rlp, &path[consumed..])? {
            Walk::Value(value) => Err(value.map(<[u8]>::to_vec)),
            Walk::Follow(child, used) => Ok((child, used)),
        };
        match proof.as_deref_mut() {
            Some(proof) => proof.push(rlp),
            None => scratch = rlp,
        }
        match next {
            Err(value) => return Ok(value),
            Ok((child, used)) => {
                hash = child;
                consumed += used;
            }
        }
    }
}

/// Where a lookup inside one stored node ended.
pub(super) enum Walk<'a> {
    /// The lookup is over: the value, or `None` if the key is absent.
    Value(Option<&'a [u8]>),
    /// Continue at the stored node with this hash, after consuming this many nibbles.
    Follow(B256, usize),
}

/// Follows `path` inside the RLP of one stored node, descending into inline children.
pub(super) fn walk_rlp<'a>(mut node: &'a [u8], path: &[u8]) -> Result<Walk<'a>, StorageError> {
    let mut consumed = 0;
    loop {
        let rest = &path[consumed..];
        let mut items = list_payload(node)?;
        let first = next_item(&mut items)?;
        let second = next_item(&mut items)?;
        let child = if items.is_empty() {
            // Two items: a leaf or an extension.
            let hp = Hp::parse(first)?;
            if hp.leaf {
                if second.list {
                    return Err(corrupt());
                }
                return Ok(Walk::Value(hp.equals(rest).then_some(second.payload)));
            }
            if !hp.is_prefix_of(rest) {
                return Ok(Walk::Value(None));
            }
            consumed += hp.len();
            match child_ref(second)? {
                ChildRef::Empty => return Err(corrupt()),
                child => child,
            }
        } else {
            // Seventeen items: a branch. Only skip to the one item we need.
            let Some(&nibble) = rest.first() else {
                for _ in 2..16 {
                    next_item(&mut items)?;
                }
                let value = next_item(&mut items)?;
                if value.list {
                    return Err(corrupt());
                }
                return Ok(Walk::Value((!value.payload.is_empty()).then_some(value.payload)));
            };
            let item = match nibble {
                0 => first,
                1 => second,
                n => {
                    for _ in 2..n {
                        next_item(&mut items)?;
                    }
                    next_item(&mut items)?
                }
            };
            consumed += 1;
            child_ref(item)?
        };
        match child {
            ChildRef::Empty => return Ok(Walk::Value(None)),
            ChildRef::Hash(hash) => return Ok(Walk::Follow(hash, consumed)),
            ChildRef::Inline(raw) => node = raw,
        }
    }
}

pub(super) fn proof_at(
    src: &dyn NodeSource,
    node: &Node,
    is_root: bool,
    path: &[u8],
    proof: &mut Vec<Vec<u8>>,
    buf: &mut Vec<u8>,
) -> Result<(), StorageError> {
    match node {
        Node::Empty => Ok(()),
        Node::Hash(hash) => walk_stored(src, *hash, path, Some(proof)).map(drop),
        _ => {
            // An uncommitted node: encode it. Like a stored node, it appears in the proof on
            // its own only if it is the root or too big to be inlined in its parent.
            encode_into(node, buf, &mut |_, _| {});
            if is_root || buf.len() >= 32 {
                proof.push(buf.clone());
            }
            match node {
                Node::Extension { path: ext, child } => match path.strip_prefix(ext.as_slice()) {
                    Some(rest) => proof_at(src, child, false, rest, proof, buf),
                    None => Ok(()),
                },
                Node::Branch { children, .. } => match path.split_first() {
                    Some((&i, rest)) => {
                        proof_at(src, &children[usize::from(i)], false, rest, proof, buf)
                    }
                    None => Ok(()),
                },
                _ => Ok(()),
            }
        }
    }
}
