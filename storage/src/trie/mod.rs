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

mod decode;
mod encode;
mod nibbles;
mod node;
mod read;
mod spread;
mod write;

use decode::*;
use encode::*;
use nibbles::*;
use node::*;
use read::*;
pub use spread::{MIN_SPREAD_LEAVES, ordered_roots_beside};
use write::*;

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

    /// How many non-empty children the root has when it is a loaded branch. A branch root
    /// left with fewer than two (after deletions) is not in canonical form: the parallel block
    /// writer then writes the block on one thread instead.
    pub(crate) fn root_children(&self) -> Option<usize> {
        let Node::Branch { children, .. } = &self.root else { return None };
        Some(children.iter().filter(|child| !matches!(child, Node::Empty)).count())
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
    build_ordered(pairs).0.root_hash()
}

/// The in-memory trie of `pairs`, and how many there were.
fn build_ordered<I: IntoIterator<Item = (Vec<u8>, Vec<u8>)>>(pairs: I) -> (Trie, usize) {
    let mut trie = Trie::new();
    let mut leaves = 0;
    for (key, value) in pairs {
        trie.insert(&NoNodes, &key, value)
            .expect("a trie built in memory never reads its node source");
        leaves += 1;
    }
    (trie, leaves)
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
