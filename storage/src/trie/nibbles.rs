//! Nibble paths: keys unpacked into 4-bit steps, kept inline when short.

use super::*;

/// Nibbles held inline: a full 32-byte (hashed) key, so state and storage paths never allocate.
pub(super) const INLINE_NIBBLES: usize = 64;

/// A nibble path, one nibble (0..=15) per byte so that slicing at any nibble is free.
///
/// Paths of secure tries are at most 64 nibbles and live inline; only longer raw keys (rare:
/// tests, ad-hoc tries) spill to the heap.
#[derive(Clone)]
pub(super) enum Nibbles {
    Inline { len: u8, buf: [u8; INLINE_NIBBLES] },
    Heap(Vec<u8>),
}

impl Nibbles {
    /// A path of `len` nibbles whose contents `fill` writes.
    pub(super) fn build(len: usize, fill: impl FnOnce(&mut [u8])) -> Self {
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

    pub(super) fn from_slice(nibbles: &[u8]) -> Self {
        Self::build(nibbles.len(), |out| out.copy_from_slice(nibbles))
    }

    /// The nibble path of a byte key: high nibble first.
    pub(super) fn unpack(key: &[u8]) -> Self {
        Self::build(key.len() * 2, |out| {
            for (pair, byte) in out.chunks_exact_mut(2).zip(key) {
                pair[0] = byte >> 4;
                pair[1] = byte & 0x0f;
            }
        })
    }

    /// `a` followed by `b`: used when a collapsing branch merges paths.
    pub(super) fn concat(a: &[u8], b: &[u8]) -> Self {
        Self::build(a.len() + b.len(), |out| {
            out[..a.len()].copy_from_slice(a);
            out[a.len()..].copy_from_slice(b);
        })
    }

    pub(super) fn as_slice(&self) -> &[u8] {
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
pub(super) fn common_prefix(a: &[u8], b: &[u8]) -> usize {
    a.iter().zip(b).take_while(|(x, y)| x == y).count()
}
