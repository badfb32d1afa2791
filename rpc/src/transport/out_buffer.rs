//! The RPC worker's response buffer: every JSON-RPC response is encoded into one buffer kept
//! per worker thread, then copied out at its exact size for the HTTP body, instead of into a
//! fresh `Vec` that reallocates as it doubles (a receipt's answer grew through six of them).
//!
//! Retention: a buffer that grew past [`RESPONSE_BUFFER_RETAINED_BYTES`] (a large block, a
//! trace) is dropped after its response instead of kept, so what a worker thread holds between
//! requests never exceeds that. The buffer is borrowed only inside [`encode_with`], which is
//! synchronous: it never crosses an `.await` or a message, so concurrent requests on one
//! worker (a batch's items, other connections) cannot see each other's bytes.

use std::cell::RefCell;

/// Most bytes of response buffer an RPC worker thread keeps between requests. 64 KiB holds
/// every answer to the hot methods on a dev chain (a call's output, a balance, a receipt with
/// a few logs, a block of a few hundred transaction hashes) many times over; larger answers
/// allocate their own buffer and drop it.
pub const RESPONSE_BUFFER_RETAINED_BYTES: usize = 64 * 1024;

thread_local! {
    static BUFFER: RefCell<Vec<u8>> = const { RefCell::new(Vec::new()) };
}

/// Runs `write` on this thread's response buffer (empty) and returns what it wrote, copied
/// into a `Vec` of exactly that size. The buffer is kept for the next response when its
/// capacity is within [`RESPONSE_BUFFER_RETAINED_BYTES`].
pub(crate) fn encode_with(write: impl FnOnce(&mut Vec<u8>)) -> Vec<u8> {
    // Taken out rather than borrowed, so a `write` that encodes another response (none does
    // today) would get a fresh buffer instead of a `RefCell` panic.
    let mut buffer = BUFFER.with(|b| std::mem::take(&mut *b.borrow_mut()));
    buffer.clear();
    write(&mut buffer);
    let out = buffer.as_slice().to_vec();
    if buffer.capacity() <= RESPONSE_BUFFER_RETAINED_BYTES {
        BUFFER.with(|b| *b.borrow_mut() = buffer);
    }
    out
}

/// The capacity of this thread's kept buffer (tests).
#[cfg(test)]
pub(crate) fn retained_capacity() -> usize {
    BUFFER.with(|b| b.borrow().capacity())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_buffer_is_reused_and_a_large_one_is_dropped() {
        let small = encode_with(|out| out.extend_from_slice(b"{\"a\":1}"));
        assert_eq!(small, b"{\"a\":1}");
        assert_eq!(small.capacity(), small.len(), "the body is copied at its exact size");
        let kept = retained_capacity();
        assert!(kept >= small.len() && kept <= RESPONSE_BUFFER_RETAINED_BYTES);
        // The next response starts empty in the same buffer.
        assert_eq!(encode_with(|out| out.push(b'2')), b"2");
        assert_eq!(retained_capacity(), kept, "no new buffer for a response that fits");
        let large = encode_with(|out| out.resize(RESPONSE_BUFFER_RETAINED_BYTES + 1, b'x'));
        assert_eq!(large.len(), RESPONSE_BUFFER_RETAINED_BYTES + 1);
        assert_eq!(retained_capacity(), 0, "a buffer over the bound is not kept");
        assert_eq!(encode_with(|out| out.push(b'3')), b"3");
    }
}
