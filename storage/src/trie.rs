//! Hearth's Ethereum Merkle-Patricia trie (yellow paper, appendix D).
//!
//! The trie is *incremental*: it starts as a reference to a stored root ([`Trie::at_root`]) and
//! only the nodes on the paths that are read for a mutation get loaded from a [`NodeSource`].
//! Everything else stays an unresolved `Node::Hash`, which costs nothing to hash again because
//! its hash is already known. [`Trie::commit`] re-encodes only what changed, hands the new nodes
//! to a sink (the caller writes them to its store) and collapses the trie back to a single
//! reference to the new root.
//!
//! Invariant kept by every mutation: apart from the children embedded inline in a loaded node
//! (which are re-encoded as part of their parent anyway), a resolved node in memory is one that
//! differs from what is stored. A lookup that changes nothing puts the `Hash` reference back,
//! so committing never re-emits nodes the store already has.
//!
//! The trie is kept canonical at all times (the shape depends only on the set of keys): no
//! branch with a single entry, no extension above a leaf or another extension, no empty paths
//! on extensions. That is what makes its root equal to every other Ethereum client's root.
//!
//! Keys are raw bytes; "secure" tries (state, storage) hash their keys before calling in.
//! Values are opaque bytes (the caller RLP-encodes accounts and slots); an empty value means
//! "absent", as in Ethereum.

use std::fmt;

use alloy_primitives::{B256, b256, keccak256, map::B256Map};
use alloy_rlp::{Encodable, Header};

use crate::StorageError;

/// Keccak of rlp("") — the root of an empty trie.
pub const EMPTY_ROOT: B256 =
    b256!("56e81f171bcc55a6ff8345e692c0f86e5b48e01b996cadc001622fb5e363b421");

/// The RLP of an empty string: an empty branch slot, an empty branch value, the empty trie.
const EMPTY_STRING_CODE: u8 = 0x80;

/// What we name in decode errors.
const WHAT: &str = "trie node";

/// Where trie nodes are read from, by hash (rlp bytes of the node).
///
/// A read copies into a buffer the caller owns, so the trie's walks reuse one buffer for every
/// node they pass through instead of allocating one per node.
pub trait NodeSource {
    /// Replaces the contents of `out` with the RLP of the node whose keccak256 is `hash`;
    /// returns `false` (leaving `out` unspecified) if the store does not have it.
    fn node_into(&self, hash: &B256, out: &mut Vec<u8>) -> Result<bool, StorageError>;

    /// The RLP of the node whose keccak256 is `hash`, or `None` if the store does not have it.
    fn node(&self, hash: &B256) -> Result<Option<Vec<u8>>, StorageError> {
        let mut out = Vec::new();
        Ok(self.node_into(hash, &mut out)?.then_some(out))
    }
}

/// An in-memory node store: for tests and for one-off roots (transactions, receipts).
#[derive(Debug, Default, Clone)]
pub struct MemoryNodes {
    // Keys are keccak outputs, already uniformly distributed: the fixed-bytes hasher just
    // folds them instead of running a general-purpose hash over them again.
    nodes: B256Map<Vec<u8>>,
}

impl MemoryNodes {
    /// An empty store.
    pub fn new() -> Self {
        Self::default()
    }

    /// Stores `rlp` under `hash` (the caller guarantees `hash == keccak256(rlp)`).
    pub fn insert(&mut self, hash: B256, rlp: Vec<u8>) {
        self.nodes.insert(hash, rlp);
    }

    /// How many nodes are stored.
    pub fn len(&self) -> usize {
        self.nodes.len()
    }

    /// Whether no node is stored.
    pub fn is_empty(&self) -> bool {
        self.nodes.is_empty()
    }
}

impl NodeSource for MemoryNodes {
    fn node_into(&self, hash: &B256, out: &mut Vec<u8>) -> Result<bool, StorageError> {
        let Some(rlp) = self.nodes.get(hash) else { return Ok(false) };
        out.clear();
        out.extend_from_slice(rlp);
        Ok(true)
    }
}

/// A source with no nodes, for tries built purely in memory (they never follow a hash).
struct NoNodes;

impl NodeSource for NoNodes {
    fn node_into(&self, _hash: &B256, _out: &mut Vec<u8>) -> Result<bool, StorageError> {
        Ok(false)
    }
}

// ---------------------------------------------------------------------------------------------
// Nibble paths
// ---------------------------------------------------------------------------------------------

/// Nibbles held inline: a full 32-byte (hashed) key, so state and storage paths never allocate.
const INLINE_NIBBLES: usize = 64;

/// A nibble path, one nibble (0..=15) per byte so that slicing at any nibble is free.
///
/// Paths of secure tries are at most 64 nibbles and live inline; only longer raw keys (rare:
/// tests, ad-hoc tries) spill to the heap.
#[derive(Clone)]
enum Nibbles {
    Inline { len: u8, buf: [u8; INLINE_NIBBLES] },
    Heap(Vec<u8>),
}

impl Nibbles {
    /// A path of `len` nibbles whose contents `fill` writes.
    fn build(len: usize, fill: impl FnOnce(&mut [u8])) -> Self {
        if len <= INLINE_NIBBLES {
            let mut buf = [0u8; INLINE_NIBBLES];
            fill(&mut buf[..len]);
            // `len <= 64` so it fits in a u8.
            Self::Inline { len: len as u8, buf }
        } else {
            let mut v = vec![0u8; len];
            fill(&mut v);
            Self::Heap(v)
        }
    }

    fn from_slice(nibbles: &[u8]) -> Self {
        Self::build(nibbles.len(), |out| out.copy_from_slice(nibbles))
    }

    /// The nibble path of a byte key: high nibble first.
    fn unpack(key: &[u8]) -> Self {
        Self::build(key.len() * 2, |out| {
            for (pair, byte) in out.chunks_exact_mut(2).zip(key) {
                pair[0] = byte >> 4;
                pair[1] = byte & 0x0f;
            }
        })
    }

    /// `a` followed by `b`: used when a collapsing branch merges paths.
    fn concat(a: &[u8], b: &[u8]) -> Self {
        Self::build(a.len() + b.len(), |out| {
            out[..a.len()].copy_from_slice(a);
            out[a.len()..].copy_from_slice(b);
        })
    }

    fn as_slice(&self) -> &[u8] {
        match self {
            Self::Inline { len, buf } => &buf[..usize::from(*len)],
            Self::Heap(v) => v,
        }
    }
}

impl std::ops::Deref for Nibbles {
    type Target = [u8];

    fn deref(&self) -> &[u8] {
        self.as_slice()
    }
}

impl fmt::Debug for Nibbles {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("0x")?;
        for n in self.as_slice() {
            write!(f, "{n:x}")?;
        }
        Ok(())
    }
}

/// Length of the longest common prefix of two nibble paths.
fn common_prefix(a: &[u8], b: &[u8]) -> usize {
    a.iter().zip(b).take_while(|(x, y)| x == y).count()
}

// ---------------------------------------------------------------------------------------------
// Nodes
// ---------------------------------------------------------------------------------------------

/// A trie node in memory.
#[derive(Debug, Clone, Default)]
enum Node {
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

fn empty_children() -> Box<[Node; 16]> {
    Box::new(std::array::from_fn(|_| Node::Empty))
}

/// Branch child arrays kept for reuse, all slots [`Node::Empty`]: a branch's boxed array is the
/// one allocation a decoded node makes, and the trie drops that many at every commit, so it
/// hands them back here instead and the next loads take them.
#[derive(Default)]
struct Spare {
    #[expect(clippy::vec_box, reason = "the boxes are what is reused: branches hold them")]
    arrays: Vec<Box<[Node; 16]>>,
}

impl Spare {
    /// Enough for the dirty paths of a block of a few thousand updates on a large state
    /// (1,000 accounts in a 1M-account trie load ~2,500 branches); beyond that arrays are
    /// freed. Each is 16 nodes (~1.5 KiB), so at most ~6 MiB is kept.
    const MAX: usize = 4096;

    /// An array of 16 empty children, reused when one is spare.
    fn children(&mut self) -> Box<[Node; 16]> {
        self.arrays.pop().unwrap_or_else(empty_children)
    }

    /// Takes `node` apart, keeping its branch arrays (emptied) for reuse.
    fn recycle(&mut self, node: Node) {
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
fn prefixed(prefix: &[u8], node: Node) -> Node {
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
fn put_in_branch(
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

// ---------------------------------------------------------------------------------------------
// The trie
// ---------------------------------------------------------------------------------------------

/// An Ethereum Merkle-Patricia trie, resolved lazily from a [`NodeSource`].
///
/// If a method returns an error (a node missing from or corrupt in the source), the in-memory
/// trie may hold a partial update: drop it and start again from the last committed root.
#[derive(Clone, Default)]
pub struct Trie {
    root: Node,
    /// Where stored nodes are read before decoding, and where commits encode: kept across
    /// mutations and commits so that, once it has grown to the largest node, neither allocates.
    scratch: Vec<u8>,
    /// Branch arrays from committed or discarded nodes, for the next loads to reuse.
    spare: Spare,
}

impl fmt::Debug for Trie {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Trie").field("root", &self.root).finish_non_exhaustive()
    }
}

impl Trie {
    /// An empty trie.
    pub fn new() -> Self {
        Self::default()
    }

    /// The trie stored under `root`, resolved lazily from a [`NodeSource`]; [`EMPTY_ROOT`] is
    /// the empty trie and needs no stored node.
    pub fn at_root(root: B256) -> Self {
        Self { root: Self::reference(root), scratch: Vec::new(), spare: Spare::default() }
    }

    /// Points the trie at the stored root `root`, dropping uncommitted changes but keeping its
    /// buffers: a long-lived trie (the block writer's) reloads paths without allocating.
    pub fn set_root(&mut self, root: B256) {
        let old = std::mem::replace(&mut self.root, Self::reference(root));
        self.spare.recycle(old);
    }

    /// The in-memory form of a stored root.
    const fn reference(root: B256) -> Node {
        // `B256`'s `==` is not const; the empty root is the one hash that needs no node.
        if root.const_eq(&EMPTY_ROOT) { Node::Empty } else { Node::Hash(root) }
    }

    /// The value under `key`, if any.
    pub fn get(&self, src: &dyn NodeSource, key: &[u8]) -> Result<Option<Vec<u8>>, StorageError> {
        let path = Nibbles::unpack(key);
        get_at(src, &self.root, &path)
    }

    /// Sets `key` to `value`; an empty value removes the key (Ethereum has no empty values).
    pub fn insert(
        &mut self,
        src: &dyn NodeSource,
        key: &[u8],
        value: Vec<u8>,
    ) -> Result<(), StorageError> {
        if value.is_empty() {
            return self.remove(src, key);
        }
        self.insert_replacing(src, key, value, None)
    }

    /// [`Trie::insert`] for a caller that knows the value `key` has in the stored trie
    /// (`previous`, `None`: unknown or absent). When the walk reaches a stored node that is
    /// exactly that key's leaf with that value (its hash says so), the leaf is replaced without
    /// reading it: for a state trie of a million accounts that is one store read saved per
    /// changed account, out of about six. A wrong `previous` costs a hash and nothing else:
    /// the node is then read as usual.
    pub fn insert_replacing(
        &mut self,
        src: &dyn NodeSource,
        key: &[u8],
        value: Vec<u8>,
        previous: Option<&[u8]>,
    ) -> Result<(), StorageError> {
        if value.is_empty() {
            return self.remove(src, key);
        }
        let path = Nibbles::unpack(key);
        let mut loader = Loader { src, buf: &mut self.scratch, spare: &mut self.spare, previous };
        insert_at(&mut loader, &mut self.root, &path, value).map(drop)
    }

    /// Removes `key` (nothing happens if it is absent).
    pub fn remove(&mut self, src: &dyn NodeSource, key: &[u8]) -> Result<(), StorageError> {
        let path = Nibbles::unpack(key);
        let mut loader =
            Loader { src, buf: &mut self.scratch, spare: &mut self.spare, previous: None };
        remove_at(&mut loader, &mut self.root, &path).map(drop)
    }

    /// Hashes what changed, hands every node whose RLP is >= 32 bytes AND the root node
    /// (always, even if < 32 bytes) to `sink` as (keccak(rlp), rlp), and collapses the
    /// in-memory trie to a reference to the new root. Returns the root hash. Unchanged
    /// subtrees (still unresolved hash refs) cost nothing.
    ///
    /// The RLP handed to `sink` is borrowed from the trie's scratch buffer: the sink copies what
    /// it keeps (a store batch copies anyway), so committing allocates nothing per node.
    ///
    /// Two cases emit nothing: an unchanged trie (its root is already stored) and the empty
    /// trie (its root [`EMPTY_ROOT`] needs no node: [`Trie::at_root`] knows it).
    pub fn commit(&mut self, sink: &mut dyn FnMut(B256, &[u8])) -> B256 {
        let root = match &self.root {
            Node::Empty => EMPTY_ROOT,
            Node::Hash(hash) => *hash,
            node => {
                // One buffer for the whole walk: each node is encoded into it after its
                // children are done with it.
                let buf = &mut self.scratch;
                encode_into(node, buf, sink);
                let hash = keccak256(&buf[..]);
                sink(hash, buf);
                hash
            }
        };
        self.set_root(root);
        root
    }

    /// Loads the root node if it is still a stored reference; returns whether the root is a
    /// branch. The parallel block writer splits the work under a branch root between threads.
    pub(crate) fn load_root_branch(&mut self, src: &dyn NodeSource) -> Result<bool, StorageError> {
        if let Node::Hash(hash) = self.root {
            let mut loader =
                Loader { src, buf: &mut self.scratch, spare: &mut self.spare, previous: None };
            self.root = loader.load(&hash)?;
        }
        Ok(matches!(self.root, Node::Branch { .. }))
    }

    /// Commits the subtrees under the root branch's children `slots` (see [`Trie::commit`]),
    /// leaving each as a hash reference (or as itself when it is small enough to be inlined
    /// in the root). Nothing happens when the root is not a loaded branch.
    pub(crate) fn commit_children(
        &mut self,
        slots: std::ops::Range<usize>,
        sink: &mut dyn FnMut(B256, &[u8]),
    ) {
        let Node::Branch { children, .. } = &mut self.root else { return };
        for child in &mut children[slots] {
            if matches!(child, Node::Empty | Node::Hash(_)) {
                continue;
            }
            encode_into(child, &mut self.scratch, sink);
            if self.scratch.len() >= 32 {
                let hash = keccak256(&self.scratch[..]);
                sink(hash, &self.scratch);
                self.spare.recycle(std::mem::replace(child, Node::Hash(hash)));
            }
        }
    }

    /// Moves the root children `slots` of `other` into this trie's root, replacing its own;
    /// both roots must be loaded branches ([`Trie::load_root_branch`]). Returns whether they
    /// were. Two tries at the same root that changed disjoint slots merge this way.
    pub(crate) fn adopt_children(
        &mut self,
        other: &mut Self,
        slots: std::ops::Range<usize>,
    ) -> bool {
        let (Node::Branch { children: ours, .. }, Node::Branch { children: theirs, .. }) =
            (&mut self.root, &mut other.root)
        else {
            return false;
        };
        for slot in slots {
            let old = std::mem::replace(&mut ours[slot], std::mem::take(&mut theirs[slot]));
            self.spare.recycle(old);
        }
        true
    }

    /// Root hash without emitting or collapsing.
    pub fn root_hash(&self) -> B256 {
        match &self.root {
            Node::Empty => EMPTY_ROOT,
            Node::Hash(hash) => *hash,
            node => {
                let mut buf = Vec::with_capacity(576);
                encode_into(node, &mut buf, &mut |_, _| {});
                keccak256(&buf)
            }
        }
    }

    /// EIP-1186 proof: the RLP of every node on the path from the root towards `key` (root
    /// first), for a committed trie (root resolved through `src`). Works for present and absent
    /// keys. The empty trie has an empty proof.
    ///
    /// Also works on uncommitted changes (the changed nodes are encoded on the fly, which costs
    /// a re-hash of their subtrees per level), but the proof is only useful against a root that
    /// has been committed.
    pub fn proof(&self, src: &dyn NodeSource, key: &[u8]) -> Result<Vec<Vec<u8>>, StorageError> {
        let path = Nibbles::unpack(key);
        // A state or storage trie of up to billions of keys is at most ~9 nodes deep.
        let mut proof = Vec::with_capacity(10);
        let mut buf = Vec::new();
        proof_at(src, &self.root, true, &path, &mut proof, &mut buf)?;
        Ok(proof)
    }
}

/// Convenience: the root of a trie over (key, value) pairs held in memory (e.g. transactions
/// root with key rlp(index)).
pub fn ordered_root<I: IntoIterator<Item = (Vec<u8>, Vec<u8>)>>(pairs: I) -> B256 {
    let mut trie = Trie::new();
    for (key, value) in pairs {
        trie.insert(&NoNodes, &key, value)
            .expect("a trie built in memory never reads its node source");
    }
    trie.root_hash()
}

// ---------------------------------------------------------------------------------------------
// Reads
// ---------------------------------------------------------------------------------------------

fn get_at(src: &dyn NodeSource, node: &Node, path: &[u8]) -> Result<Option<Vec<u8>>, StorageError> {
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
fn walk_stored(
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
enum Walk<'a> {
    /// The lookup is over: the value, or `None` if the key is absent.
    Value(Option<&'a [u8]>),
    /// Continue at the stored node with this hash, after consuming this many nibbles.
    Follow(B256, usize),
}

/// Follows `path` inside the RLP of one stored node, descending into inline children.
fn walk_rlp<'a>(mut node: &'a [u8], path: &[u8]) -> Result<Walk<'a>, StorageError> {
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

fn proof_at(
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

// ---------------------------------------------------------------------------------------------
// Writes
// ---------------------------------------------------------------------------------------------

/// Inserts `value` (non-empty) at `path` below `node`. Returns whether anything changed, so a
/// no-op can put a loaded node back to its hash reference.
fn insert_at(
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
        Node::Leaf { path: leaf_path, value: leaf_value } => {
            if leaf_path.as_slice() == path {
                if *leaf_value == value {
                    return Ok(false);
                }
                *leaf_value = value;
                return Ok(true);
            }
            // The keys diverge after `c` shared nibbles (or one ends there): a branch holds
            // both, under an extension for the shared part.
            let c = common_prefix(leaf_path, path);
            let mut children = src.spare.children();
            let mut branch_value = Vec::new();
            put_in_branch(
                &mut children,
                &mut branch_value,
                &leaf_path[c..],
                std::mem::take(leaf_value),
            );
            put_in_branch(&mut children, &mut branch_value, &path[c..], value);
            *node = prefixed(&path[..c], Node::Branch { children, value: branch_value });
            Ok(true)
        }
        Node::Extension { path: ext_path, child } => {
            let c = common_prefix(ext_path, path);
            if c == ext_path.len() {
                return insert_at(src, child, &path[c..], value);
            }
            // The key leaves the extension at nibble `c`: split it around a new branch.
            let Node::Extension { path: ext_path, child } = std::mem::take(node) else {
                unreachable!("matched as an extension just above")
            };
            let mut children = src.spare.children();
            let mut branch_value = Vec::new();
            // What stays below the branch of the old extension: its remaining path (minus
            // the slot nibble) above its old child, or the child itself if nothing remains.
            let tail = &ext_path[c + 1..];
            children[usize::from(ext_path[c])] = if tail.is_empty() {
                *child
            } else {
                Node::Extension { path: Nibbles::from_slice(tail), child }
            };
            put_in_branch(&mut children, &mut branch_value, &path[c..], value);
            *node = prefixed(&ext_path[..c], Node::Branch { children, value: branch_value });
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

/// Removes the key at `path` below `node`, restoring canonical form on the way up. Returns
/// whether anything changed.
fn remove_at(src: &mut Loader<'_>, node: &mut Node, path: &[u8]) -> Result<bool, StorageError> {
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
fn collapse_branch(src: &mut Loader<'_>, node: &mut Node) -> Result<(), StorageError> {
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

// ---------------------------------------------------------------------------------------------
// Encoding
// ---------------------------------------------------------------------------------------------

/// How a node appears inside its parent: its RLP if shorter than 32 bytes, else the RLP string
/// of its hash (0xa0 ++ hash). Either way at most 33 bytes, so it lives on the stack.
#[derive(Clone, Copy)]
struct NodeRef {
    len: u8,
    bytes: [u8; 33],
}

impl NodeRef {
    const EMPTY: Self = {
        let mut bytes = [0u8; 33];
        bytes[0] = EMPTY_STRING_CODE;
        Self { len: 1, bytes }
    };

    fn hash(hash: &B256) -> Self {
        let mut bytes = [0u8; 33];
        bytes[0] = EMPTY_STRING_CODE + 32;
        bytes[1..].copy_from_slice(hash.as_slice());
        Self { len: 33, bytes }
    }

    /// `rlp` is shorter than 32 bytes.
    fn inline(rlp: &[u8]) -> Self {
        let mut bytes = [0u8; 33];
        bytes[..rlp.len()].copy_from_slice(rlp);
        Self { len: rlp.len() as u8, bytes }
    }

    fn as_slice(&self) -> &[u8] {
        &self.bytes[..usize::from(self.len)]
    }
}

/// The reference to `node` for its parent; hashed nodes are handed to `emit`. Uses `buf` as
/// scratch.
fn node_ref(node: &Node, buf: &mut Vec<u8>, emit: &mut dyn FnMut(B256, &[u8])) -> NodeRef {
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
fn encode_into(node: &Node, buf: &mut Vec<u8>, emit: &mut dyn FnMut(B256, &[u8])) {
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
            buf.clear();
            let payload_length = hp_length(path.len()) + child.as_slice().len();
            Header { list: true, payload_length }.encode(buf);
            write_hp(buf, path, false);
            buf.extend_from_slice(child.as_slice());
        }
        Node::Branch { children, value } => {
            let mut refs = [NodeRef::EMPTY; 16];
            for (slot, child) in refs.iter_mut().zip(children.iter()) {
                *slot = node_ref(child, buf, emit);
            }
            buf.clear();
            let payload_length =
                refs.iter().map(|r| usize::from(r.len)).sum::<usize>() + value.as_slice().length();
            Header { list: true, payload_length }.encode(buf);
            for r in &refs {
                buf.extend_from_slice(r.as_slice());
            }
            value.as_slice().encode(buf);
        }
    }
}

/// Replaces the contents of `buf` with the RLP of the leaf `[hp(path), value]`.
fn encode_leaf(buf: &mut Vec<u8>, path: &[u8], value: &[u8]) {
    buf.clear();
    let payload_length = hp_length(path.len()) + value.length();
    Header { list: true, payload_length }.encode(buf);
    write_hp(buf, path, true);
    value.encode(buf);
}

/// Length of the RLP string holding the hex-prefix encoding of a path of `nibbles` nibbles.
fn hp_length(nibbles: usize) -> usize {
    let bytes = nibbles / 2 + 1;
    // A single HP byte is always < 0x80 (flags 0..=3 in the high nibble): it encodes as itself.
    if bytes == 1 { 1 } else { alloy_rlp::length_of_length(bytes) + bytes }
}

/// Writes the RLP string of the hex-prefix encoding of `path` (flag 2 for a leaf, +1 if the
/// path has odd length, in which case the first nibble shares the flag byte).
fn write_hp(buf: &mut Vec<u8>, path: &[u8], leaf: bool) {
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

// ---------------------------------------------------------------------------------------------
// Decoding
// ---------------------------------------------------------------------------------------------

fn corrupt() -> StorageError {
    StorageError::Corrupt { what: WHAT }
}

/// Reads the stored node `hash` into `out`; a node the store lacks is an error.
fn fetch_into(src: &dyn NodeSource, hash: &B256, out: &mut Vec<u8>) -> Result<(), StorageError> {
    if src.node_into(hash, out)? { Ok(()) } else { Err(StorageError::MissingTrieNode(*hash)) }
}

/// A node source and the buffer that stored nodes are read into before decoding: mutations
/// load every node through one buffer (the trie's scratch) instead of one allocation each.
struct Loader<'a> {
    src: &'a dyn NodeSource,
    buf: &'a mut Vec<u8>,
    spare: &'a mut Spare,
    /// The value the key being inserted has in the store, when the caller knows it.
    previous: Option<&'a [u8]>,
}

impl Loader<'_> {
    /// Whether the stored node `hash`, reached with `path` left of the key, is the key's leaf
    /// holding `previous`: then there is nothing to read, the caller knows the node already.
    fn is_previous_leaf(&mut self, hash: &B256, path: &[u8]) -> bool {
        let Some(previous) = self.previous else { return false };
        encode_leaf(self.buf, path, previous);
        keccak256(&self.buf[..]) == *hash
    }

    /// Loads and decodes the stored node `hash`.
    fn load(&mut self, hash: &B256) -> Result<Node, StorageError> {
        fetch_into(self.src, hash, self.buf)?;
        decode_node(self.buf, self.spare)
    }

    /// Drops a node the trie no longer holds, keeping its branch arrays.
    fn discard(&mut self, node: Node) {
        self.spare.recycle(node);
    }
}

/// One RLP item: list or string, its payload, and its whole encoding.
#[derive(Clone, Copy)]
struct Item<'a> {
    list: bool,
    payload: &'a [u8],
    raw: &'a [u8],
}

/// Splits the next RLP item off `buf`.
fn next_item<'a>(buf: &mut &'a [u8]) -> Result<Item<'a>, StorageError> {
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
fn list_payload(rlp: &[u8]) -> Result<&[u8], StorageError> {
    let mut buf = rlp;
    let item = next_item(&mut buf)?;
    if !item.list || !buf.is_empty() {
        return Err(corrupt());
    }
    Ok(item.payload)
}

/// A child slot of a branch or an extension.
enum ChildRef<'a> {
    Empty,
    Hash(B256),
    /// The RLP of a node embedded in its parent.
    Inline(&'a [u8]),
}

fn child_ref(item: Item<'_>) -> Result<ChildRef<'_>, StorageError> {
    if item.list {
        return Ok(ChildRef::Inline(item.raw));
    }
    match item.payload.len() {
        0 => Ok(ChildRef::Empty),
        32 => Ok(ChildRef::Hash(B256::from_slice(item.payload))),
        _ => Err(corrupt()),
    }
}

fn decode_child(item: Item<'_>, spare: &mut Spare) -> Result<Node, StorageError> {
    Ok(match child_ref(item)? {
        ChildRef::Empty => Node::Empty,
        ChildRef::Hash(hash) => Node::Hash(hash),
        // Inline children are part of their parent: decode them straight into nodes.
        ChildRef::Inline(raw) => decode_node(raw, spare)?,
    })
}

/// Decodes the RLP of a node, inline children included.
fn decode_node(rlp: &[u8], spare: &mut Spare) -> Result<Node, StorageError> {
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
struct Hp<'a> {
    leaf: bool,
    /// The first nibble of an odd-length path, kept in the flag byte.
    odd_nibble: Option<u8>,
    /// The remaining nibbles, two per byte.
    bytes: &'a [u8],
}

impl<'a> Hp<'a> {
    fn parse(item: Item<'a>) -> Result<Self, StorageError> {
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

    fn len(&self) -> usize {
        self.bytes.len() * 2 + usize::from(self.odd_nibble.is_some())
    }

    fn nibbles(&self) -> impl Iterator<Item = u8> + '_ {
        self.odd_nibble.into_iter().chain(self.bytes.iter().flat_map(|b| [b >> 4, b & 0x0f]))
    }

    fn is_prefix_of(&self, path: &[u8]) -> bool {
        path.len() >= self.len() && self.nibbles().zip(path).all(|(a, &b)| a == b)
    }

    fn equals(&self, path: &[u8]) -> bool {
        path.len() == self.len() && self.is_prefix_of(path)
    }

    fn to_nibbles(&self) -> Nibbles {
        Nibbles::build(self.len(), |out| {
            for (slot, nibble) in out.iter_mut().zip(self.nibbles()) {
                *slot = nibble;
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloy_primitives::Bytes;
    use alloy_trie::{HashBuilder, Nibbles as OracleNibbles, proof::verify_proof};
    use std::collections::BTreeMap;

    /// xorshift64: deterministic, no dependency.
    struct Rng(u64);

    impl Rng {
        fn next(&mut self) -> u64 {
            let mut x = self.0;
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            self.0 = x;
            x
        }

        fn below(&mut self, n: usize) -> usize {
            (self.next() % n as u64) as usize
        }

        fn bytes(&mut self, len: usize) -> Vec<u8> {
            (0..len).map(|_| self.next() as u8).collect()
        }
    }

    /// alloy-trie's root over a set of prefix-free keys (what `HashBuilder` supports).
    fn oracle_root(model: &BTreeMap<Vec<u8>, Vec<u8>>) -> B256 {
        let mut hb = HashBuilder::default();
        for (key, value) in model {
            hb.add_leaf(OracleNibbles::unpack(key), value);
        }
        hb.root()
    }

    /// A naive, non-incremental root over any key set (prefixes allowed, so branch values):
    /// builds each node from the sorted entries below it. Independent of the code above.
    fn naive_root(model: &BTreeMap<Vec<u8>, Vec<u8>>) -> B256 {
        fn hp(path: &[u8], leaf: bool) -> Vec<u8> {
            let flag = if leaf { 2u8 } else { 0 };
            let (first, rest) = if path.len() % 2 == 1 {
                (((flag + 1) << 4) | path[0], &path[1..])
            } else {
                (flag << 4, path)
            };
            std::iter::once(first).chain(rest.chunks(2).map(|c| (c[0] << 4) | c[1])).collect()
        }
        fn list(items: &[Vec<u8>]) -> Vec<u8> {
            let payload: Vec<u8> = items.concat();
            let mut out = Vec::new();
            Header { list: true, payload_length: payload.len() }.encode(&mut out);
            out.extend(payload);
            out
        }
        fn string(bytes: &[u8]) -> Vec<u8> {
            alloy_rlp::encode(bytes)
        }
        fn reference(rlp: Vec<u8>) -> Vec<u8> {
            if rlp.len() < 32 { rlp } else { string(keccak256(&rlp).as_slice()) }
        }
        fn node(entries: &[(Vec<u8>, Vec<u8>)]) -> Vec<u8> {
            if let [(path, value)] = entries {
                return list(&[string(&hp(path, true)), string(value)]);
            }
            let first = &entries[0].0;
            let shared = entries
                .iter()
                .map(|(p, _)| p.iter().zip(first).take_while(|(a, b)| a == b).count())
                .min()
                .unwrap();
            if shared > 0 {
                let rest: Vec<_> =
                    entries.iter().map(|(p, v)| (p[shared..].to_vec(), v.clone())).collect();
                return list(&[string(&hp(&first[..shared], false)), reference(node(&rest))]);
            }
            let mut items = Vec::new();
            for nibble in 0..16u8 {
                let group: Vec<_> = entries
                    .iter()
                    .filter(|(p, _)| p.first() == Some(&nibble))
                    .map(|(p, v)| (p[1..].to_vec(), v.clone()))
                    .collect();
                items.push(if group.is_empty() { vec![0x80] } else { reference(node(&group)) });
            }
            let value = entries.iter().find(|(p, _)| p.is_empty()).map(|(_, v)| v.clone());
            items.push(string(&value.unwrap_or_default()));
            list(&items)
        }
        if model.is_empty() {
            return EMPTY_ROOT;
        }
        let entries: Vec<_> =
            model.iter().map(|(k, v)| (Nibbles::unpack(k).to_vec(), v.clone())).collect();
        keccak256(node(&entries))
    }

    fn commit_into(trie: &mut Trie, nodes: &mut MemoryNodes) -> (B256, usize) {
        let mut emitted = 0;
        let root = trie.commit(&mut |hash, rlp| {
            assert_eq!(keccak256(rlp), hash, "sink got a hash that is not keccak(rlp)");
            emitted += 1;
            nodes.insert(hash, rlp.to_vec());
        });
        (root, emitted)
    }

    fn check_proof(
        trie: &Trie,
        nodes: &MemoryNodes,
        root: B256,
        key: &[u8],
        want: Option<&Vec<u8>>,
    ) {
        let proof = trie.proof(nodes, key).unwrap();
        if root == EMPTY_ROOT {
            assert!(proof.is_empty());
            return;
        }
        assert_eq!(keccak256(&proof[0]), root, "proof must start at the root");
        // alloy's verifier compares the root node by its reference, which for a root RLP
        // shorter than 32 bytes is the RLP itself: it cannot check tiny tries.
        if proof[0].len() < 32 {
            return;
        }
        let proof: Vec<Bytes> = proof.into_iter().map(Bytes::from).collect();
        verify_proof(root, OracleNibbles::unpack(key), want.cloned(), &proof)
            .unwrap_or_else(|e| panic!("proof for {key:02x?} (want {want:02x?}): {e:?}"));
    }

    struct Scenario {
        seed: u64,
        /// Keys of the pool.
        pool: Vec<Vec<u8>>,
        max_value: usize,
        ops: usize,
        commit_every: usize,
        /// Keys are prefix-free (fixed length): alloy's HashBuilder can be the oracle.
        prefix_free: bool,
    }

    fn run(s: Scenario) {
        let mut rng = Rng(s.seed);
        let mut nodes = MemoryNodes::new();
        let mut trie = Trie::new();
        let mut model = BTreeMap::new();
        let oracle = |m: &BTreeMap<Vec<u8>, Vec<u8>>| {
            if s.prefix_free { oracle_root(m) } else { naive_root(m) }
        };
        for step in 1..=s.ops {
            let key = s.pool[rng.below(s.pool.len())].clone();
            match rng.below(10) {
                0..=5 => {
                    let len = 1 + rng.below(s.max_value);
                    let value = rng.bytes(len);
                    trie.insert(&nodes, &key, value.clone()).unwrap();
                    model.insert(key, value);
                }
                6..=8 => {
                    trie.remove(&nodes, &key).unwrap();
                    model.remove(&key);
                }
                _ => {
                    trie.insert(&nodes, &key, Vec::new()).unwrap();
                    model.remove(&key);
                }
            }
            if step % 7 == 0 {
                assert_eq!(trie.root_hash(), oracle(&model), "seed {} step {step}", s.seed);
            }
            if step % s.commit_every == 0 {
                let (root, _) = commit_into(&mut trie, &mut nodes);
                assert_eq!(root, oracle(&model), "seed {} commit at step {step}", s.seed);
                if rng.below(2) == 0 {
                    trie = Trie::at_root(root);
                }
                // Reads straight from the store agree with the model.
                for _ in 0..8 {
                    let key = &s.pool[rng.below(s.pool.len())];
                    assert_eq!(trie.get(&nodes, key).unwrap().as_ref(), model.get(key));
                }
            }
        }
        let (root, _) = commit_into(&mut trie, &mut nodes);
        assert_eq!(root, oracle(&model));
        let fresh = Trie::at_root(root);
        for key in &s.pool {
            assert_eq!(fresh.get(&nodes, key).unwrap().as_ref(), model.get(key));
            if s.prefix_free {
                check_proof(&fresh, &nodes, root, key, model.get(key));
            }
        }
        // Removing everything gets back to the empty root, through the store.
        let mut trie = Trie::at_root(root);
        for key in model.keys() {
            trie.remove(&nodes, key).unwrap();
        }
        assert_eq!(trie.root_hash(), EMPTY_ROOT);
    }

    fn random_pool(rng: &mut Rng, count: usize, len: usize, alphabet: usize) -> Vec<Vec<u8>> {
        // A small alphabet makes keys share long prefixes (extensions, deep branches).
        (0..count).map(|_| (0..len).map(|_| rng.below(alphabet) as u8 * 0x11).collect()).collect()
    }

    #[test]
    fn empty_root_constant() {
        assert_eq!(EMPTY_ROOT, keccak256([EMPTY_STRING_CODE]));
        assert_eq!(Trie::new().root_hash(), EMPTY_ROOT);
        assert_eq!(ordered_root(Vec::new()), EMPTY_ROOT);
        assert_eq!(Trie::at_root(EMPTY_ROOT).get(&MemoryNodes::new(), b"x").unwrap(), None);
    }

    #[test]
    fn random_hashed_keys_match_alloy() {
        for seed in 1..=4u64 {
            let mut rng = Rng(seed.wrapping_mul(0x9e37_79b9_7f4a_7c15));
            let pool = (0..300).map(|_| rng.bytes(32)).collect();
            run(Scenario {
                seed,
                pool,
                max_value: 80,
                ops: 3000,
                commit_every: 97,
                prefix_free: true,
            });
        }
    }

    #[test]
    fn random_short_keys_with_inline_nodes_match_alloy() {
        for (seed, len, alphabet) in
            [(11u64, 1, 16), (12, 2, 4), (13, 3, 3), (14, 4, 2), (15, 8, 2)]
        {
            let mut rng = Rng(seed);
            let pool = random_pool(&mut rng, 40, len, alphabet);
            // Values of 1..=6 bytes keep many nodes under 32 bytes: embedded inline.
            run(Scenario {
                seed,
                pool,
                max_value: 6,
                ops: 2000,
                commit_every: 31,
                prefix_free: true,
            });
        }
    }

    #[test]
    fn random_prefix_keys_with_branch_values_match_naive() {
        for seed in 21..=26u64 {
            let mut rng = Rng(seed);
            // Keys of 0..=3 bytes over a tiny alphabet: many keys are prefixes of others.
            let pool = (0..30)
                .map(|_| {
                    let len = rng.below(4);
                    (0..len).map(|_| [0x00, 0x01, 0x10, 0xab][rng.below(4)]).collect()
                })
                .collect();
            let max_value = if seed % 2 == 0 { 3 } else { 40 };
            run(Scenario {
                seed,
                pool,
                max_value,
                ops: 2000,
                commit_every: 23,
                prefix_free: false,
            });
        }
    }

    #[test]
    fn commit_emits_only_changed_nodes() {
        let mut rng = Rng(77);
        let mut nodes = MemoryNodes::new();
        let mut trie = Trie::new();
        let mut model = BTreeMap::new();
        for _ in 0..2000 {
            let (key, value) = (rng.bytes(32), rng.bytes(40));
            trie.insert(&nodes, &key, value.clone()).unwrap();
            model.insert(key, value);
        }
        let (root, emitted) = commit_into(&mut trie, &mut nodes);
        assert_eq!(root, oracle_root(&model));
        assert_eq!(emitted, nodes.len());

        // No-ops leave the trie a bare reference: nothing is re-emitted.
        let (key, value) = model.iter().next().map(|(k, v)| (k.clone(), v.clone())).unwrap();
        trie.insert(&nodes, &key, value).unwrap();
        trie.remove(&nodes, &rng.bytes(32)).unwrap();
        assert_eq!(commit_into(&mut trie, &mut nodes), (root, 0));

        // One change re-emits its path only (a 2000-key trie is ~4 levels deep).
        trie.insert(&nodes, &key, b"changed".to_vec()).unwrap();
        model.insert(key, b"changed".to_vec());
        let (root, emitted) = commit_into(&mut trie, &mut nodes);
        assert_eq!(root, oracle_root(&model));
        assert!((1..=6).contains(&emitted), "emitted {emitted}");
    }

    /// A source that counts the nodes read through it.
    struct Counted<'a>(&'a MemoryNodes, std::cell::Cell<usize>);

    impl NodeSource for Counted<'_> {
        fn node_into(&self, hash: &B256, out: &mut Vec<u8>) -> Result<bool, StorageError> {
            self.1.set(self.1.get() + 1);
            self.0.node_into(hash, out)
        }
    }

    #[test]
    fn insert_replacing_skips_reading_the_known_leaf() {
        let mut rng = Rng(9);
        let mut nodes = MemoryNodes::new();
        let mut trie = Trie::new();
        let mut model = BTreeMap::new();
        for _ in 0..500 {
            let (key, value) = (rng.bytes(32), rng.bytes(40));
            trie.insert(&nodes, &key, value.clone()).unwrap();
            model.insert(key, value);
        }
        let (root, _) = commit_into(&mut trie, &mut nodes);
        // Inserts `new` at `key` into a fresh trie at `root`: nodes read and the new root.
        let update = |key: &[u8], new: &[u8], previous: Option<&[u8]>| {
            let src = Counted(&nodes, std::cell::Cell::new(0));
            let mut trie = Trie::at_root(root);
            trie.insert_replacing(&src, key, new.to_vec(), previous).unwrap();
            (src.1.get(), trie.commit(&mut |_, _| {}))
        };
        for (key, old) in model.iter().take(50) {
            let new = rng.bytes(40);
            let plain = update(key, &new, None);
            let mut changed = model.clone();
            changed.insert(key.clone(), new.clone());
            assert_eq!(plain.1, oracle_root(&changed));
            // The right previous value: the same root, one read (the leaf) fewer.
            assert_eq!(update(key, &new, Some(old)), (plain.0 - 1, plain.1));
            // A wrong one costs nothing but a hash: the leaf is read as usual.
            assert_eq!(update(key, &new, Some(b"not the value")), plain);
            // Writing the value the key already has changes nothing and reads no leaf.
            assert_eq!(update(key, old, Some(old)), (plain.0 - 1, root));
        }
        // An absent key with a previous value claimed: inserted as usual.
        let key = rng.bytes(32);
        let mut changed = model.clone();
        changed.insert(key.clone(), b"new".to_vec());
        assert_eq!(update(&key, b"new", Some(b"claimed")).1, oracle_root(&changed));
    }

    #[test]
    fn small_root_is_emitted_and_reloads() {
        let mut nodes = MemoryNodes::new();
        let mut trie = Trie::new();
        trie.insert(&nodes, &[0x12], vec![0x01]).unwrap();
        let (root, emitted) = commit_into(&mut trie, &mut nodes);
        assert_eq!(emitted, 1);
        assert!(nodes.node(&root).unwrap().is_some_and(|rlp| rlp.len() < 32));
        let mut trie = Trie::at_root(root);
        assert_eq!(trie.get(&nodes, &[0x12]).unwrap(), Some(vec![0x01]));
        assert_eq!(trie.proof(&nodes, &[0x12]).unwrap().len(), 1);
        trie.remove(&nodes, &[0x12]).unwrap();
        assert_eq!(commit_into(&mut trie, &mut nodes), (EMPTY_ROOT, 0));
    }

    #[test]
    fn missing_node_is_an_error() {
        let mut nodes = MemoryNodes::new();
        let mut trie = Trie::new();
        for i in 0..50u8 {
            trie.insert(&nodes, keccak256([i]).as_slice(), vec![i; 40]).unwrap();
        }
        let (root, _) = commit_into(&mut trie, &mut nodes);
        let empty = MemoryNodes::new();
        let trie = Trie::at_root(root);
        assert!(
            matches!(trie.get(&empty, b"k"), Err(StorageError::MissingTrieNode(h)) if h == root)
        );
        let mut trie = Trie::at_root(root);
        assert!(matches!(
            trie.insert(&empty, b"k", vec![1]),
            Err(StorageError::MissingTrieNode(_))
        ));
    }

    #[test]
    fn corrupt_node_is_an_error() {
        let mut nodes = MemoryNodes::new();
        let bogus = keccak256(b"bogus");
        nodes.insert(bogus, vec![0xc2, 0x80]);
        let trie = Trie::at_root(bogus);
        assert!(matches!(trie.get(&nodes, b"k"), Err(StorageError::Decode { .. })));
        nodes.insert(bogus, vec![0x83, 1, 2, 3]);
        assert!(matches!(trie.get(&nodes, b"k"), Err(StorageError::Corrupt { .. })));
    }

    #[test]
    fn uncommitted_proof_matches_committed_proof() {
        let mut rng = Rng(5);
        let mut nodes = MemoryNodes::new();
        let mut trie = Trie::new();
        let keys: Vec<_> = (0..200).map(|_| rng.bytes(32)).collect();
        for key in &keys {
            let len = 1 + rng.below(50);
            trie.insert(&nodes, key, rng.bytes(len)).unwrap();
        }
        let dirty = trie.clone();
        let (root, _) = commit_into(&mut trie, &mut nodes);
        for key in keys.iter().take(20).chain([&rng.bytes(32)]) {
            assert_eq!(dirty.proof(&nodes, key).unwrap(), trie.proof(&nodes, key).unwrap());
            assert_eq!(dirty.get(&nodes, key).unwrap(), trie.get(&nodes, key).unwrap());
        }
        assert_eq!(dirty.root_hash(), root);
    }

    #[test]
    fn ordered_root_matches_alloy() {
        for n in [0usize, 1, 2, 127, 128, 129, 300] {
            let items: Vec<Vec<u8>> = (0..n).map(|i| vec![i as u8; 1 + i % 70]).collect();
            let ours = ordered_root(
                items
                    .iter()
                    .enumerate()
                    .map(|(i, item)| (alloy_rlp::encode(i), alloy_rlp::encode(item))),
            );
            assert_eq!(ours, alloy_trie::root::ordered_trie_root(&items), "n = {n}");
        }
    }

    #[test]
    fn known_vectors() {
        // From ethereum/tests TrieTests/trieanyorder.json ("puppy", "dogs"): short keys that
        // are prefixes of each other (branch values, inline nodes).
        let puppy = [("do", "verb"), ("horse", "stallion"), ("doge", "coin"), ("dog", "puppy")];
        let root =
            ordered_root(puppy.iter().map(|(k, v)| (k.as_bytes().to_vec(), v.as_bytes().to_vec())));
        assert_eq!(root, b256!("5991bb8c6514148a29db676a14ac506cd2cd5775ace63c30a4fe457715e9ac84"));
        let dogs = [("doe", "reindeer"), ("dog", "puppy"), ("dogglesworth", "cat")];
        let root =
            ordered_root(dogs.iter().map(|(k, v)| (k.as_bytes().to_vec(), v.as_bytes().to_vec())));
        assert_eq!(root, b256!("8aad789dff2f538bca5d8ea56e8abe10f4c7ba3a5dea95fea4cd6e7c3a1168d3"));
    }
}
