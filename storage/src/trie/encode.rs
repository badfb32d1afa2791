//! Encoding nodes to RLP and hashing them for commits and roots.

use super::*;

/// How a node appears inside its parent: its RLP if shorter than 32 bytes, else the RLP string
/// of its hash (0xa0 ++ hash). Either way at most 33 bytes, so it lives on the stack.
#[derive(Clone, Copy)]
pub(super) struct NodeRef {
    pub(super) len: u8,
    pub(super) bytes: [u8; 33],
}

impl NodeRef {
    pub(super) const EMPTY: Self = {
        let mut bytes = [0u8; 33];
        bytes[0] = EMPTY_STRING_CODE;
        Self { len: 1, bytes }
    };

    pub(super) fn hash(hash: &B256) -> Self {
        let mut bytes = [0u8; 33];
        bytes[0] = EMPTY_STRING_CODE + 32;
        bytes[1..].copy_from_slice(hash.as_slice());
        Self { len: 33, bytes }
    }

    /// `rlp` is shorter than 32 bytes.
    pub(super) fn inline(rlp: &[u8]) -> Self {
        let mut bytes = [0u8; 33];
        bytes[..rlp.len()].copy_from_slice(rlp);
        Self { len: rlp.len() as u8, bytes }
    }

    pub(super) fn as_slice(&self) -> &[u8] {
        &self.bytes[..usize::from(self.len)]
    }
}

/// The reference to `node` for its parent; hashed nodes are handed to `emit`. Uses `buf` as
/// scratch.
pub(super) fn node_ref(
    node: &Node,
    buf: &mut Vec<u8>,
    emit: &mut dyn FnMut(B256, &[u8]),
) -> NodeRef {
    match node {
        Node::Empty => NodeRef::EMPTY,
        Node::Hash(hash) => NodeRef::hash(hash),
        _ => {
            encode_into(node, buf, emit);
            if buf.len() < 32 {
                NodeRef::inline(buf)
            } else {
                let hash = keccak256(&buf[..]);
                emit(hash, buf);
                NodeRef::hash(&hash)
            }
        }
    }
}

/// Replaces the contents of `buf` with the RLP of `node`. Children are encoded (and hashed
/// ones emitted) first, into the same buffer, before this node is written.
pub(super) fn encode_into(node: &Node, buf: &mut Vec<u8>, emit: &mut dyn FnMut(B256, &[u8])) {
    match node {
        Node::Empty => {
            buf.clear();
            buf.push(EMPTY_STRING_CODE);
        }
        Node::Hash(_) => {
            unreachable!("a stored node is referenced by its hash, never re-encoded")
        }
        Node::Leaf { path, value } => encode_leaf(buf, path, value),
        Node::Extension { path, child } => {
            let child = node_ref(child, buf, emit);
            write_extension(buf, path, &child);
        }
        Node::Branch { children, value } => {
            let mut refs = [NodeRef::EMPTY; 16];
            for (slot, child) in refs.iter_mut().zip(children.iter()) {
                *slot = node_ref(child, buf, emit);
            }
            write_branch(buf, &refs, value);
        }
    }
}

/// Replaces the contents of `buf` with the RLP of the extension `[hp(path), child]`.
pub(super) fn write_extension(buf: &mut Vec<u8>, path: &[u8], child: &NodeRef) {
    buf.clear();
    let payload_length = hp_length(path.len()) + child.as_slice().len();
    Header { list: true, payload_length }.encode(buf);
    write_hp(buf, path, false);
    buf.extend_from_slice(child.as_slice());
}

/// Replaces the contents of `buf` with the RLP of the branch `[refs..., value]`.
pub(super) fn write_branch(buf: &mut Vec<u8>, refs: &[NodeRef; 16], value: &[u8]) {
    buf.clear();
    let payload_length = refs.iter().map(|r| usize::from(r.len)).sum::<usize>() + value.length();
    Header { list: true, payload_length }.encode(buf);
    for r in refs {
        buf.extend_from_slice(r.as_slice());
    }
    value.encode(buf);
}

/// Replaces the contents of `buf` with the RLP of the leaf `[hp(path), value]`.
pub(super) fn encode_leaf(buf: &mut Vec<u8>, path: &[u8], value: &[u8]) {
    buf.clear();
    let payload_length = hp_length(path.len()) + value.length();
    Header { list: true, payload_length }.encode(buf);
    write_hp(buf, path, true);
    value.encode(buf);
}

/// Length of the RLP string holding the hex-prefix encoding of a path of `nibbles` nibbles.
pub(super) fn hp_length(nibbles: usize) -> usize {
    let bytes = nibbles / 2 + 1;
    // A single HP byte is always < 0x80 (flags 0..=3 in the high nibble): it encodes as itself.
    if bytes == 1 { 1 } else { alloy_rlp::length_of_length(bytes) + bytes }
}

/// Writes the RLP string of the hex-prefix encoding of `path` (flag 2 for a leaf, +1 if the
/// path has odd length, in which case the first nibble shares the flag byte).
pub(super) fn write_hp(buf: &mut Vec<u8>, path: &[u8], leaf: bool) {
    let bytes = path.len() / 2 + 1;
    if bytes > 1 {
        Header { list: false, payload_length: bytes }.encode(buf);
    }
    let flag = if leaf { 0x20 } else { 0x00 };
    let rest = if path.len() % 2 == 1 {
        buf.push(flag | 0x10 | path[0]);
        &path[1..]
    } else {
        buf.push(flag);
        path
    };
    buf.extend(rest.chunks_exact(2).map(|pair| (pair[0] << 4) | pair[1]));
}
