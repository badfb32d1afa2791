//! Decoding stored RLP nodes back into the in-memory form.

use super::*;

pub(super) fn corrupt() -> StorageError {
    StorageError::Corrupt { what: WHAT }
}

/// Reads the stored node `hash` into `out`; a node the store lacks is an error.
pub(super) fn fetch_into(
    src: &dyn NodeSource,
    hash: &B256,
    out: &mut Vec<u8>,
) -> Result<(), StorageError> {
    if src.node_into(hash, out)? { Ok(()) } else { Err(StorageError::MissingTrieNode(*hash)) }
}

/// A node source and the buffer that stored nodes are read into before decoding: mutations
/// load every node through one buffer (the trie's scratch) instead of one allocation each.
pub(super) struct Loader<'a> {
    pub(super) src: &'a dyn NodeSource,
    pub(super) buf: &'a mut Vec<u8>,
    pub(super) spare: &'a mut Spare,
    /// The value the key being inserted has in the store, when the caller knows it.
    pub(super) previous: Option<&'a [u8]>,
}

impl Loader<'_> {
    /// Whether the stored node `hash`, reached with `path` left of the key, is the key's leaf
    /// holding `previous`: then there is nothing to read, the caller knows the node already.
    pub(super) fn is_previous_leaf(&mut self, hash: &B256, path: &[u8]) -> bool {
        let Some(previous) = self.previous else { return false };
        encode_leaf(self.buf, path, previous);
        keccak256(&self.buf[..]) == *hash
    }

    /// Loads and decodes the stored node `hash`.
    pub(super) fn load(&mut self, hash: &B256) -> Result<Node, StorageError> {
        fetch_into(self.src, hash, self.buf)?;
        decode_node(self.buf, self.spare)
    }

    /// Drops a node the trie no longer holds, keeping its branch arrays.
    pub(super) fn discard(&mut self, node: Node) {
        self.spare.recycle(node);
    }
}

/// One RLP item: list or string, its payload, and its whole encoding.
#[derive(Clone, Copy)]
pub(super) struct Item<'a> {
    pub(super) list: bool,
    pub(super) payload: &'a [u8],
    pub(super) raw: &'a [u8],
}

/// Splits the next RLP item off `buf`.
pub(super) fn next_item<'a>(buf: &mut &'a [u8]) -> Result<Item<'a>, StorageError> {
    let start = *buf;
    let header =
        Header::decode(buf).map_err(|source| StorageError::Decode { what: WHAT, source })?;
    // `Header::decode` checked that the payload is there (and did not consume a single byte
    // < 0x80, which is its own payload).
    let (payload, rest) = buf.split_at(header.payload_length);
    *buf = rest;
    let raw = &start[..start.len() - rest.len()];
    Ok(Item { list: header.list, payload, raw })
}

/// The payload of a node's RLP, which must be exactly one list.
pub(super) fn list_payload(rlp: &[u8]) -> Result<&[u8], StorageError> {
    let mut buf = rlp;
    let item = next_item(&mut buf)?;
    if !item.list || !buf.is_empty() {
        return Err(corrupt());
    }
    Ok(item.payload)
}

/// A child slot of a branch or an extension.
pub(super) enum ChildRef<'a> {
    Empty,
    Hash(B256),
    /// The RLP of a node embedded in its parent.
    Inline(&'a [u8]),
}

pub(super) fn child_ref(item: Item<'_>) -> Result<ChildRef<'_>, StorageError> {
    if item.list {
        return Ok(ChildRef::Inline(item.raw));
    }
    match item.payload.len() {
        0 => Ok(ChildRef::Empty),
        32 => Ok(ChildRef::Hash(B256::from_slice(item.payload))),
        _ => Err(corrupt()),
    }
}

pub(super) fn decode_child(item: Item<'_>, spare: &mut Spare) -> Result<Node, StorageError> {
    Ok(match child_ref(item)? {
        ChildRef::Empty => Node::Empty,
        ChildRef::Hash(hash) => Node::Hash(hash),
        // Inline children are part of their parent: decode them straight into nodes.
        ChildRef::Inline(raw) => decode_node(raw, spare)?,
    })
}

/// Decodes the RLP of a node, inline children included.
pub(super) fn decode_node(rlp: &[u8], spare: &mut Spare) -> Result<Node, StorageError> {
    let mut items = list_payload(rlp)?;
    let first = next_item(&mut items)?;
    let second = next_item(&mut items)?;
    if items.is_empty() {
        let hp = Hp::parse(first)?;
        let path = hp.to_nibbles();
        if hp.leaf {
            if second.list {
                return Err(corrupt());
            }
            return Ok(Node::Leaf { path, value: second.payload.to_vec() });
        }
        if path.is_empty() {
            return Err(corrupt());
        }
        let child = decode_child(second, spare)?;
        if matches!(child, Node::Empty) {
            return Err(corrupt());
        }
        return Ok(Node::Extension { path, child: Box::new(child) });
    }
    let mut children = spare.children();
    children[0] = decode_child(first, spare)?;
    children[1] = decode_child(second, spare)?;
    for child in &mut children[2..] {
        *child = decode_child(next_item(&mut items)?, spare)?;
    }
    let value = next_item(&mut items)?;
    if value.list || !items.is_empty() {
        return Err(corrupt());
    }
    Ok(Node::Branch { children, value: value.payload.to_vec() })
}

/// A hex-prefix encoded path as stored, read without unpacking it.
pub(super) struct Hp<'a> {
    pub(super) leaf: bool,
    /// The first nibble of an odd-length path, kept in the flag byte.
    pub(super) odd_nibble: Option<u8>,
    /// The remaining nibbles, two per byte.
    pub(super) bytes: &'a [u8],
}

impl<'a> Hp<'a> {
    pub(super) fn parse(item: Item<'a>) -> Result<Self, StorageError> {
        let Some((&flags, bytes)) = item.payload.split_first().filter(|_| !item.list) else {
            return Err(corrupt());
        };
        let kind = flags >> 4;
        let odd = kind & 1 == 1;
        if kind > 3 || (!odd && flags & 0x0f != 0) {
            return Err(corrupt());
        }
        Ok(Self { leaf: kind & 2 != 0, odd_nibble: odd.then_some(flags & 0x0f), bytes })
    }

    pub(super) fn len(&self) -> usize {
        self.bytes.len() * 2 + usize::from(self.odd_nibble.is_some())
    }

    pub(super) fn nibbles(&self) -> impl Iterator<Item = u8> + '_ {
        self.odd_nibble.into_iter().chain(self.bytes.iter().flat_map(|b| [b >> 4, b & 0x0f]))
    }

    pub(super) fn is_prefix_of(&self, path: &[u8]) -> bool {
        path.len() >= self.len() && self.nibbles().zip(path).all(|(a, &b)| a == b)
    }

    pub(super) fn equals(&self, path: &[u8]) -> bool {
        path.len() == self.len() && self.is_prefix_of(path)
    }

    pub(super) fn to_nibbles(&self) -> Nibbles {
        Nibbles::build(self.len(), |out| {
            for (slot, nibble) in out.iter_mut().zip(self.nibbles()) {
                *slot = nibble;
            }
        })
    }
}
