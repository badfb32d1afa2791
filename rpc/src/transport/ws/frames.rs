//! Reading a client's WebSocket frames (RFC 6455 §5) within the message size limit.
//!
//! actix-http's frame parser compares a frame's length with its limit only once the whole
//! frame is buffered, and actix-ws's message stream reads the socket for as long as data comes;
//! so a client declaring a 100 MiB frame had all of it read into memory before the 5 MiB limit
//! refused it. [`FrameReader`] looks at the length each frame header declares (its first 2 to
//! 14 bytes) and refuses a frame over the limit, or a continuation that would take its message
//! over it, before reading any of the payload. It reads from the socket only while the frame
//! it is assembling is incomplete, so one connection buffers at most the limit plus one read
//! (the HTTP layer pauses the socket when nobody reads).

use std::fmt::Display;

use actix_web::web::{Bytes, BytesMut};
use actix_ws::{CloseCode, CloseReason};
use futures_util::{Stream, StreamExt};

const CONTINUATION: u8 = 0x0;
const TEXT: u8 = 0x1;
const BINARY: u8 = 0x2;
const CLOSE: u8 = 0x8;
const PING: u8 = 0x9;
const PONG: u8 = 0xa;

/// Largest payload of a control frame (RFC 6455 §5.5).
const MAX_CONTROL_PAYLOAD: u64 = 125;

/// What the client sent.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Incoming {
    /// A whole text or binary message, continuation frames joined (text is valid UTF-8).
    Message(Bytes),
    /// A ping with its payload (to echo in the pong).
    Ping(Bytes),
    /// A pong.
    Pong,
    /// The client's close frame, with its code and reason if it gave them.
    Close(Option<CloseReason>),
}

/// Why the connection cannot go on.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum FrameError {
    /// A frame, or a message in continuation frames, declared more than the limit: close 1009.
    TooBig {
        /// The length declared (for a continuation, the message's total).
        declared: u64,
    },
    /// A frame that breaks RFC 6455 (unmasked, reserved bits or opcode, a control frame over
    /// 125 bytes or fragmented, a continuation out of place, a bad close code): close 1002.
    Protocol(&'static str),
    /// A text message that is not UTF-8: close 1007.
    InvalidUtf8,
    /// The connection failed: nobody to answer.
    Lost(String),
}

impl FrameError {
    /// The close frame to answer with; `None` when the connection is gone.
    pub(crate) fn close_reason(&self, limit: usize) -> Option<CloseReason> {
        let (code, description) = match self {
            Self::TooBig { .. } => (CloseCode::Size, format!("message larger than {limit} bytes")),
            Self::Protocol(why) => (CloseCode::Protocol, (*why).to_owned()),
            Self::InvalidUtf8 => (CloseCode::Invalid, "text message is not UTF-8".to_owned()),
            Self::Lost(_) => return None,
        };
        Some(CloseReason { code, description: Some(description) })
    }
}

/// A frame header.
#[derive(Debug)]
struct Head {
    fin: bool,
    opcode: u8,
    mask: [u8; 4],
    /// Bytes of the header itself (2 to 14).
    len: usize,
    /// The payload length it declares.
    payload_len: u64,
}

/// Reads the header at the start of `buf`; `None` until enough of it is there.
fn parse_head(buf: &[u8]) -> Result<Option<Head>, FrameError> {
    let [first, second, ..] = *buf else { return Ok(None) };
    if first & 0x70 != 0 {
        return Err(FrameError::Protocol("reserved bits set without an extension"));
    }
    if second & 0x80 == 0 {
        return Err(FrameError::Protocol("client frames must be masked"));
    }
    let (payload_len, at) = match second & 0x7f {
        126 => {
            let Some(bytes) = buf.get(2..4) else { return Ok(None) };
            (u64::from(u16::from_be_bytes([bytes[0], bytes[1]])), 4)
        }
        127 => {
            let Some(bytes) = buf.get(2..10) else { return Ok(None) };
            let mut be = [0u8; 8];
            be.copy_from_slice(bytes);
            let len = u64::from_be_bytes(be);
            if len >> 63 != 0 {
                return Err(FrameError::Protocol("payload length has its top bit set"));
            }
            (len, 10)
        }
        n => (u64::from(n), 2),
    };
    let Some(mask) = buf.get(at..at + 4) else { return Ok(None) };
    Ok(Some(Head {
        fin: first & 0x80 != 0,
        opcode: first & 0x0f,
        mask: [mask[0], mask[1], mask[2], mask[3]],
        len: at + 4,
        payload_len,
    }))
}

/// XORs `data` with the client's mask, eight bytes at a time.
fn unmask(data: &mut [u8], mask: [u8; 4]) {
    let word = u64::from_ne_bytes([
        mask[0], mask[1], mask[2], mask[3], mask[0], mask[1], mask[2], mask[3],
    ]);
    let mut chunks = data.chunks_exact_mut(8);
    for chunk in &mut chunks {
        let bytes: [u8; 8] = (&*chunk).try_into().expect("chunks_exact yields 8 bytes");
        chunk.copy_from_slice(&(u64::from_ne_bytes(bytes) ^ word).to_ne_bytes());
    }
    // Every chunk was a multiple of 4 bytes, so the remainder starts at mask byte 0.
    for (i, byte) in chunks.into_remainder().iter_mut().enumerate() {
        *byte ^= mask[i & 3];
    }
}

/// The code and reason of a close frame's payload (RFC 6455 §5.5.1, §7.4).
fn close_reason(payload: &[u8]) -> Result<Option<CloseReason>, FrameError> {
    let (code, reason) = match payload {
        [] => return Ok(None),
        [_] => return Err(FrameError::Protocol("close frame with a one-byte payload")),
        [a, b, reason @ ..] => (u16::from_be_bytes([*a, *b]), reason),
    };
    // 1004-1006 and 1015 are reserved for local use, never sent; 1016-2999 are unassigned.
    if !matches!(code, 1000..=1003 | 1007..=1014 | 3000..=4999) {
        return Err(FrameError::Protocol("close frame with an invalid code"));
    }
    let reason = std::str::from_utf8(reason).map_err(|_| FrameError::InvalidUtf8)?;
    Ok(Some(CloseReason {
        code: CloseCode::from(code),
        description: (!reason.is_empty()).then(|| reason.to_owned()),
    }))
}

/// A message whose first frames have come and whose last has not.
#[derive(Debug)]
struct Partial {
    text: bool,
    data: BytesMut,
}

/// Reads frames from a connection's byte stream and yields whole messages and control frames,
/// refusing any message over `limit` bytes from its declared length (see the module docs).
#[derive(Debug)]
pub(crate) struct FrameReader<S> {
    source: S,
    buf: BytesMut,
    limit: usize,
    partial: Option<Partial>,
    ended: bool,
}

impl<S, E> FrameReader<S>
where
    S: Stream<Item = Result<Bytes, E>> + Unpin,
    E: Display,
{
    /// Reads from `source`; messages larger than `limit` bytes are refused.
    pub(crate) fn new(source: S, limit: usize) -> Self {
        Self { source, buf: BytesMut::new(), limit, partial: None, ended: false }
    }

    /// The next message or control frame; `None` once the client has gone. Cancel-safe: a
    /// read interrupted between chunks loses nothing.
    pub(crate) async fn next(&mut self) -> Option<Result<Incoming, FrameError>> {
        loop {
            match self.decode() {
                Ok(Some(incoming)) => return Some(Ok(incoming)),
                Ok(None) => {}
                Err(error) => return Some(Err(error)),
            }
            if self.ended {
                return None;
            }
            match self.source.next().await {
                Some(Ok(chunk)) => self.buf.extend_from_slice(&chunk),
                Some(Err(error)) => return Some(Err(FrameError::Lost(error.to_string()))),
                None => self.ended = true,
            }
        }
    }

    /// Bytes read but not yet handed out (for tests: nothing of a refused frame is read).
    #[cfg(test)]
    pub(crate) fn buffered(&self) -> usize {
        self.buf.len() + self.partial.as_ref().map_or(0, |p| p.data.len())
    }

    /// Takes the next whole frame from the buffer; `None` until one is complete. A header is
    /// judged as soon as it is complete, before its payload is read.
    fn decode(&mut self) -> Result<Option<Incoming>, FrameError> {
        loop {
            let Some(head) = parse_head(&self.buf)? else { return Ok(None) };
            self.admit(&head)?;
            // `admit` bounded it by the limit, which is a usize.
            let payload_len = usize::try_from(head.payload_len)
                .map_err(|_| FrameError::TooBig { declared: head.payload_len })?;
            let total = head.len + payload_len;
            if self.buf.len() < total {
                self.buf.reserve(total - self.buf.len());
                return Ok(None);
            }
            let mut payload = self.buf.split_to(total).split_off(head.len);
            unmask(&mut payload, head.mask);
            match head.opcode {
                PING => return Ok(Some(Incoming::Ping(payload.freeze()))),
                PONG => return Ok(Some(Incoming::Pong)),
                CLOSE => return close_reason(&payload).map(|reason| Some(Incoming::Close(reason))),
                TEXT | BINARY => {
                    let partial = Partial { text: head.opcode == TEXT, data: payload };
                    if head.fin {
                        return finish(partial).map(Some);
                    }
                    self.partial = Some(partial);
                }
                _ => {
                    let Some(partial) = self.partial.as_mut() else {
                        return Err(FrameError::Protocol("continuation without a message"));
                    };
                    partial.data.extend_from_slice(&payload);
                    if head.fin {
                        let partial = self.partial.take().expect("checked just above");
                        return finish(partial).map(Some);
                    }
                }
            }
        }
    }

    /// Refuses a frame from its header alone.
    fn admit(&self, head: &Head) -> Result<(), FrameError> {
        let limit = self.limit as u64;
        match head.opcode {
            CLOSE | PING | PONG => {
                if head.payload_len > MAX_CONTROL_PAYLOAD {
                    return Err(FrameError::Protocol("control frame longer than 125 bytes"));
                }
                if !head.fin {
                    return Err(FrameError::Protocol("fragmented control frame"));
                }
            }
            TEXT | BINARY => {
                if self.partial.is_some() {
                    return Err(FrameError::Protocol("new message before the last one ended"));
                }
                if head.payload_len > limit {
                    return Err(FrameError::TooBig { declared: head.payload_len });
                }
            }
            CONTINUATION => {
                let Some(partial) = &self.partial else {
                    return Err(FrameError::Protocol("continuation without a message"));
                };
                let total = (partial.data.len() as u64).saturating_add(head.payload_len);
                if total > limit {
                    return Err(FrameError::TooBig { declared: total });
                }
            }
            _ => return Err(FrameError::Protocol("reserved opcode")),
        }
        Ok(())
    }
}

/// A complete message; text must be UTF-8.
fn finish(partial: Partial) -> Result<Incoming, FrameError> {
    if partial.text && std::str::from_utf8(&partial.data).is_err() {
        return Err(FrameError::InvalidUtf8);
    }
    Ok(Incoming::Message(partial.data.freeze()))
}

#[cfg(test)]
mod tests {
    use std::convert::Infallible;

    use futures_util::stream;

    use super::*;

    const MASK: [u8; 4] = [0x37, 0xfa, 0x21, 0x3d];

    /// A masked client frame.
    fn frame(fin: bool, opcode: u8, payload: &[u8]) -> Vec<u8> {
        let mut out = vec![if fin { 0x80 } else { 0 } | opcode];
        let len = payload.len();
        if len < 126 {
            out.push(0x80 | len as u8);
        } else if len <= usize::from(u16::MAX) {
            out.push(0x80 | 126);
            out.extend_from_slice(&(len as u16).to_be_bytes());
        } else {
            out.push(0x80 | 127);
            out.extend_from_slice(&(len as u64).to_be_bytes());
        }
        out.extend_from_slice(&MASK);
        out.extend(payload.iter().enumerate().map(|(i, b)| b ^ MASK[i % 4]));
        out
    }

    /// A reader over `chunks`, each delivered as one read.
    fn reader(
        chunks: Vec<Vec<u8>>,
        limit: usize,
    ) -> FrameReader<impl Stream<Item = Result<Bytes, Infallible>> + Unpin> {
        FrameReader::new(stream::iter(chunks.into_iter().map(|c| Ok(Bytes::from(c)))), limit)
    }

    #[actix::test]
    async fn messages_pings_and_close_come_through() {
        let text = br#"{"jsonrpc":"2.0","id":1,"method":"eth_chainId"}"#;
        let mut all = frame(true, TEXT, text);
        all.extend(frame(true, PING, b"hi"));
        all.extend(frame(false, BINARY, b"ab"));
        all.extend(frame(true, PONG, b""));
        all.extend(frame(false, CONTINUATION, b"cd"));
        all.extend(frame(true, CONTINUATION, b"e"));
        all.extend(frame(true, TEXT, &vec![b'x'; 70_000]));
        all.extend(frame(true, CLOSE, &[0x03, 0xe8, b'o', b'k']));
        // Split at awkward places: inside headers and payloads.
        let chunks = all.chunks(7).map(<[u8]>::to_vec).collect();
        let mut frames = reader(chunks, 100_000);
        assert_eq!(frames.next().await, Some(Ok(Incoming::Message(Bytes::from_static(text)))));
        assert_eq!(frames.next().await, Some(Ok(Incoming::Ping(Bytes::from_static(b"hi")))));
        assert_eq!(frames.next().await, Some(Ok(Incoming::Pong)), "control frames interleave");
        assert_eq!(frames.next().await, Some(Ok(Incoming::Message(Bytes::from_static(b"abcde")))));
        assert_eq!(
            frames.next().await,
            Some(Ok(Incoming::Message(Bytes::from(vec![b'x'; 70_000])))),
            "a 64-bit length"
        );
        let close = CloseReason { code: CloseCode::Normal, description: Some("ok".into()) };
        assert_eq!(frames.next().await, Some(Ok(Incoming::Close(Some(close)))));
        assert_eq!(frames.next().await, None);
    }

    #[actix::test]
    async fn an_oversized_frame_is_refused_from_its_header_alone() {
        // Only the header of a 100 MiB frame: nothing of the payload ever comes.
        let mut head = vec![0x81, 0x80 | 127];
        head.extend_from_slice(&(100u64 << 20).to_be_bytes());
        head.extend_from_slice(&MASK);
        let mut frames = reader(vec![head], 1024);
        assert_eq!(frames.next().await, Some(Err(FrameError::TooBig { declared: 100 << 20 })));
        assert_eq!(frames.buffered(), 14, "only the header was read");
        let reason = FrameError::TooBig { declared: 1 }.close_reason(1024).expect("a close");
        assert_eq!(reason.code, CloseCode::Size);
        assert_eq!(reason.description.as_deref(), Some("message larger than 1024 bytes"));
    }

    #[actix::test]
    async fn continuations_are_refused_once_their_total_would_pass_the_limit() {
        let mut first = frame(false, TEXT, &[b'a'; 600]);
        first.extend(frame(false, CONTINUATION, &[b'b'; 400]));
        // The third fragment's header alone: 600 + 400 + 100 > 1024.
        let third = frame(true, CONTINUATION, &[b'c'; 100])[..6].to_vec();
        let mut over = reader(vec![first, third], 1024);
        assert_eq!(over.next().await, Some(Err(FrameError::TooBig { declared: 1100 })));
        let exact = {
            let mut all = frame(false, TEXT, &[b'a'; 1000]);
            all.extend(frame(true, CONTINUATION, &[b'b'; 24]));
            all
        };
        let mut within = reader(vec![exact], 1024);
        assert!(matches!(within.next().await, Some(Ok(Incoming::Message(m))) if m.len() == 1024));
    }

    #[actix::test]
    async fn protocol_violations_close_with_their_reason() {
        let unmasked = vec![0x81, 0x02, b'h', b'i'];
        let mut long_ping = vec![0x89, 0x80 | 126];
        long_ping.extend_from_slice(&200u16.to_be_bytes());
        long_ping.extend_from_slice(&MASK);
        let cases: Vec<(Vec<u8>, FrameError)> = vec![
            (unmasked, FrameError::Protocol("client frames must be masked")),
            (
                vec![0xc1, 0x80, 0, 0, 0, 0],
                FrameError::Protocol("reserved bits set without an extension"),
            ),
            (frame(true, 0x3, b""), FrameError::Protocol("reserved opcode")),
            (long_ping, FrameError::Protocol("control frame longer than 125 bytes")),
            (frame(false, PING, b""), FrameError::Protocol("fragmented control frame")),
            (
                frame(true, CONTINUATION, b"x"),
                FrameError::Protocol("continuation without a message"),
            ),
            (
                [frame(false, TEXT, b"a"), frame(true, TEXT, b"b")].concat(),
                FrameError::Protocol("new message before the last one ended"),
            ),
            (
                frame(true, CLOSE, &[0x03]),
                FrameError::Protocol("close frame with a one-byte payload"),
            ),
            (
                frame(true, CLOSE, &[0x03, 0xee]),
                FrameError::Protocol("close frame with an invalid code"),
            ),
            (frame(true, TEXT, &[0xff, 0xfe]), FrameError::InvalidUtf8),
        ];
        for (bytes, want) in cases {
            let mut frames = reader(vec![bytes.clone()], 1024);
            assert_eq!(frames.next().await, Some(Err(want)), "{bytes:02x?}");
        }
        let mut binary = reader(vec![frame(true, BINARY, &[0xff, 0xfe])], 1024);
        assert!(matches!(binary.next().await, Some(Ok(Incoming::Message(_)))), "binary is bytes");
        assert_eq!(
            FrameError::InvalidUtf8.close_reason(1).map(|r| r.code),
            Some(CloseCode::Invalid)
        );
        assert_eq!(FrameError::Lost("gone".into()).close_reason(1), None);
    }

    #[test]
    fn unmask_matches_the_bytewise_definition() {
        for len in [0, 1, 3, 4, 7, 8, 9, 15, 16, 17, 100] {
            let plain: Vec<u8> = (0..len).map(|i| i as u8).collect();
            let mut data: Vec<u8> =
                plain.iter().enumerate().map(|(i, b)| b ^ MASK[i % 4]).collect();
            unmask(&mut data, MASK);
            assert_eq!(data, plain, "length {len}");
        }
    }
}
