//! Per-thread encode buffers for block commits: the RLP of accounts, headers, bodies and
//! receipts is written into one buffer kept by the committing thread (the state actor's, and a
//! commit lane's), hashed or copied into the write batch from there, instead of into a fresh
//! `Vec` per record.
//!
//! Retention: a buffer that grew past [`ENCODE_BUFFER_RETAINED_BYTES`] (the body or receipts
//! of a large block) is dropped after its use instead of kept, so what a thread holds between
//! commits never exceeds that. The buffer is lent only for the duration of [`with_rlp`]'s
//! closure: it never goes into a message or outlives the call.

use std::cell::RefCell;

use alloy_rlp::Encodable;

/// Most bytes of encode buffer a committing thread keeps between records. 256 KiB holds the
/// body and the receipts of a block of about a thousand transfers.
pub const ENCODE_BUFFER_RETAINED_BYTES: usize = 256 * 1024;

thread_local! {
    static BUFFER: RefCell<Vec<u8>> = const { RefCell::new(Vec::new()) };
}

/// Encodes `value` as RLP into this thread's buffer and hands the bytes to `use_rlp`.
pub(crate) fn with_rlp<T: Encodable + ?Sized, R>(value: &T, use_rlp: impl FnOnce(&[u8]) -> R) -> R {
    // Taken out, not borrowed: a `use_rlp` that encodes again gets a fresh buffer.
    let mut buffer = BUFFER.with(|b| std::mem::take(&mut *b.borrow_mut()));
    buffer.clear();
    value.encode(&mut buffer);
    let result = use_rlp(&buffer);
    if buffer.capacity() <= ENCODE_BUFFER_RETAINED_BYTES {
        BUFFER.with(|b| *b.borrow_mut() = buffer);
    }
    result
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kept() -> usize {
        BUFFER.with(|b| b.borrow().capacity())
    }

    #[test]
    fn encodes_as_alloy_does_and_keeps_only_small_buffers() {
        let value = vec![1u64, 2, 3];
        assert_eq!(with_rlp(&value, <[u8]>::to_vec), alloy_rlp::encode(&value));
        let small = kept();
        assert!(small > 0 && small <= ENCODE_BUFFER_RETAINED_BYTES);
        assert_eq!(with_rlp(&7u64, <[u8]>::to_vec), alloy_rlp::encode(7u64));
        assert_eq!(kept(), small, "the kept buffer is reused");
        let large = vec![0u8; ENCODE_BUFFER_RETAINED_BYTES];
        assert_eq!(with_rlp(&large[..], |rlp| rlp.len()), alloy_rlp::encode(&large[..]).len());
        assert_eq!(kept(), 0, "a buffer past the bound is dropped");
    }
}
