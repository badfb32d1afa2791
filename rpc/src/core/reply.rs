//! What a method answers ([`Reply`]): a JSON value, a small hot result written straight into
//! the response buffer, a typed result serialized with the response, or JSON text already
//! encoded (large answers, built in a [`CappedJson`] within the response cap).

use serde::Serialize;
use serde_json::Value;

use super::context::RpcLimits;
use super::error::RpcError;

/// What a method answers: a JSON value, a typed result, or its result already encoded as JSON.
/// Large answers (logs) are written straight into their buffer, so that the response cap is
/// counted while they grow instead of after a `Value` tree of all of them was built.
#[derive(Debug)]
pub(crate) enum Reply {
    /// A value, encoded with the response.
    Value(Value),
    /// A small hot result (call output, balance, transaction hash), written as JSON text
    /// straight into the worker's response buffer: no `Value`, no box, no hex `String`.
    Hot(Hot),
    /// A typed result (receipt, block), serialized with the response straight into the
    /// worker's response buffer: no `Value` tree of it is built.
    Typed(Box<dyn TypedResult>),
    /// The `result` member's JSON text, as is.
    Encoded(Vec<u8>),
}

impl Reply {
    /// A typed result, encoded when the response is.
    pub(crate) fn typed<T: serde::Serialize + Send + std::fmt::Debug + 'static>(result: T) -> Self {
        Self::Typed(Box::new(result))
    }
}

/// The small results of the hottest methods, kept inline in [`Reply`].
#[derive(Debug)]
pub(crate) enum Hot {
    /// Bytes as a `0x` hex string (eth_call's output).
    Data(alloy_primitives::Bytes),
    /// A quantity (eth_getBalance).
    Quantity(alloy_primitives::U256),
    /// A 32-byte hash (eth_sendRawTransaction).
    Hash(alloy_primitives::B256),
}

impl Hot {
    /// Appends the JSON text of the result, as serde would write it.
    pub(crate) fn write_json(&self, out: &mut Vec<u8>) {
        match self {
            Self::Data(bytes) => hex_string(out, bytes),
            Self::Quantity(value) => {
                // Writing into a `Vec` cannot fail.
                let _ = std::io::Write::write_fmt(out, format_args!("\"{value:#x}\""));
            }
            Self::Hash(hash) => hex_string(out, hash.as_slice()),
        }
    }
}

/// Appends `bytes` as a JSON `"0x…"` string, without an intermediate `String`.
fn hex_string(out: &mut Vec<u8>, bytes: &[u8]) {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    out.reserve(bytes.len() * 2 + 4);
    out.extend_from_slice(b"\"0x");
    // 32 bytes at a time through a stack buffer: one copy per chunk instead of a capacity
    // check per digit.
    let mut digits = [0u8; 64];
    for chunk in bytes.chunks(32) {
        for (pair, byte) in digits.chunks_exact_mut(2).zip(chunk) {
            pair[0] = DIGITS[usize::from(byte >> 4)];
            pair[1] = DIGITS[usize::from(byte & 0x0f)];
        }
        out.extend_from_slice(&digits[..chunk.len() * 2]);
    }
    out.push(b'"');
}

/// A result that writes itself as JSON: any `Serialize` type, behind one box so that `Reply`
/// stays small whatever the result's size.
pub(crate) trait TypedResult: Send + std::fmt::Debug {
    /// Appends the result's JSON text to `out`.
    fn write_json(&self, out: &mut Vec<u8>) -> serde_json::Result<()>;
}

impl<T: serde::Serialize + Send + std::fmt::Debug> TypedResult for T {
    fn write_json(&self, out: &mut Vec<u8>) -> serde_json::Result<()> {
        serde_json::to_writer(out, self)
    }
}

impl From<Value> for Reply {
    fn from(value: Value) -> Self {
        Self::Value(value)
    }
}

/// A JSON answer written straight into one buffer, refused with -32005 as soon as it outgrows
/// the response cap: what large answers (logs, the pool's content) are built with, so that the
/// cap bounds their memory, not only their size on the wire.
#[derive(Debug)]
pub(crate) struct CappedJson {
    out: Vec<u8>,
    max_bytes: usize,
}

impl CappedJson {
    /// An empty answer capped at the response limit.
    pub(crate) fn new(limits: &RpcLimits) -> Self {
        Self { out: Vec::new(), max_bytes: limits.max_response_bytes }
    }

    /// Appends JSON text as is (punctuation, or something encoded already).
    pub(crate) fn raw(&mut self, text: &[u8]) -> Result<(), RpcError> {
        self.out.extend_from_slice(text);
        self.check()
    }

    /// Appends `value` encoded as JSON.
    pub(crate) fn value<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), RpcError> {
        serde_json::to_writer(&mut self.out, value)?;
        self.check()
    }

    fn check(&self) -> Result<(), RpcError> {
        if self.out.len() >= self.max_bytes {
            return Err(RpcError::ResponseTooLarge { max: self.max_bytes });
        }
        Ok(())
    }

    /// The answer.
    pub(crate) fn finish(self) -> Reply {
        Reply::Encoded(self.out)
    }
}
