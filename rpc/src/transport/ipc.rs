//! JSON-RPC over a Unix socket (`--ipc`), as geth, anvil and reth serve it to forge and cast.
//! A connection sends requests (objects or batches) one after another, with or without
//! whitespace between them, and gets each answer as one line of JSON, in order. The method
//! set and limits are HTTP's (no subscriptions, as over HTTP; at most `MAX_IPC_CONNECTIONS`
//! connections): a request larger than the
//! request size limit, or text that is not JSON, gets an error and the connection is closed,
//! since where the next request would start is unknown.

use std::io;
use std::path::{Path, PathBuf};

use serde::de::IgnoredAny;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{UnixListener, UnixStream};

use crate::core::{RpcContext, RpcError};

/// Longest path a Unix socket address holds (`sun_path`, with its terminating zero).
pub const MAX_IPC_PATH_BYTES: usize = 107;

/// Most IPC connections open at once: each holds up to the request size limit while a
/// request arrives, so the count bounds the memory they take. One over it is told so and
/// closed.
pub const MAX_IPC_CONNECTIONS: usize = 256;

/// Binds `path` (a stale socket file there is replaced, as anvil does; any other file is an
/// error) and serves JSON-RPC on it on the current runtime until the runtime stops; the
/// socket file is removed then.
pub fn serve_ipc(path: &Path, ctx: RpcContext) -> io::Result<()> {
    use std::os::unix::fs::FileTypeExt as _;
    if let Ok(meta) = std::fs::symlink_metadata(path) {
        if !meta.file_type().is_socket() {
            return Err(io::Error::new(
                io::ErrorKind::AlreadyExists,
                format!("{} exists and is not a socket; give --ipc another path", path.display()),
            ));
        }
        std::fs::remove_file(path)?;
    }
    let listener = UnixListener::bind(path)?;
    let socket = Socket(path.to_owned());
    tracing::info!(target: "rpc", path = %path.display(), "json-rpc ipc listening");
    let open = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    actix_web::rt::spawn(async move {
        let _socket = socket;
        loop {
            match listener.accept().await {
                Ok((mut stream, _)) => {
                    use std::sync::atomic::Ordering;
                    if open.fetch_add(1, Ordering::AcqRel) >= MAX_IPC_CONNECTIONS {
                        open.fetch_sub(1, Ordering::AcqRel);
                        let full = RpcError::IpcConnections { max: MAX_IPC_CONNECTIONS };
                        let _ = stream.write_all(&error_line(&full)).await;
                        continue;
                    }
                    let (ctx, open) = (ctx.clone(), std::sync::Arc::clone(&open));
                    actix_web::rt::spawn(async move {
                        serve_connection(stream, ctx).await;
                        open.fetch_sub(1, Ordering::AcqRel);
                    });
                }
                Err(error) => {
                    tracing::warn!(target: "rpc", %error, "ipc accept failed");
                }
            }
        }
    });
    Ok(())
}

/// The socket file, removed when the server's task ends.
struct Socket(PathBuf);

impl Drop for Socket {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

/// Answers one connection's requests in order until it closes.
async fn serve_connection(stream: UnixStream, ctx: RpcContext) {
    let (mut read, mut write) = stream.into_split();
    let max = ctx.limits.max_body_bytes;
    let mut buf: Vec<u8> = Vec::with_capacity(8192);
    let mut chunk = vec![0u8; 16 * 1024];
    loop {
        match next_request(&mut buf) {
            Next::Request(body) => {
                let reply = crate::transport::handle_body(&ctx, &body).await;
                if let Some(mut out) = reply.body {
                    out.push(b'\n');
                    if write.write_all(&out).await.is_err() {
                        return;
                    }
                }
                continue;
            }
            Next::Invalid(message) => {
                let _ = write.write_all(&error_line(&RpcError::Parse(message))).await;
                return;
            }
            Next::More => {}
        }
        if buf.len() > max {
            let over = RpcError::InvalidRequest("the request is over the request size limit");
            let _ = write.write_all(&error_line(&over)).await;
            return;
        }
        match read.read(&mut chunk).await {
            Ok(0) | Err(_) => return,
            Ok(n) => buf.extend_from_slice(&chunk[..n]),
        }
    }
}

/// What the buffered bytes hold.
#[derive(Debug, PartialEq, Eq)]
enum Next {
    /// One whole JSON text, taken out of the buffer.
    Request(Vec<u8>),
    /// Not JSON: the connection cannot go on.
    Invalid(String),
    /// Nothing whole yet.
    More,
}

/// Takes the first whole JSON text out of `buf`. A text is only looked for when the buffer
/// ends in `}` or `]` (with trailing whitespace), as every request does: a large request
/// arriving in pieces is not parsed again and again.
fn next_request(buf: &mut Vec<u8>) -> Next {
    let Some(start) = buf.iter().position(|b| !b.is_ascii_whitespace()) else {
        buf.clear();
        return Next::More;
    };
    let last = buf.iter().rposition(|b| !b.is_ascii_whitespace()).unwrap_or(start);
    if !matches!(buf[last], b'}' | b']') {
        return Next::More;
    }
    let mut texts = serde_json::Deserializer::from_slice(&buf[start..]).into_iter::<IgnoredAny>();
    match texts.next() {
        Some(Ok(_)) => {
            let end = start + texts.byte_offset();
            let body = buf[start..end].to_vec();
            buf.drain(..end);
            Next::Request(body)
        }
        Some(Err(e)) if e.is_eof() => Next::More,
        Some(Err(e)) => Next::Invalid(e.to_string()),
        None => Next::More,
    }
}

/// A JSON-RPC error response without an id (encoded as HTTP encodes one), as one line.
fn error_line(error: &RpcError) -> Vec<u8> {
    let mut line = crate::transport::envelope::encode_error(&serde_json::Value::Null, error);
    line.push(b'\n');
    line
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requests_are_split_whatever_the_spacing() {
        let mut buf = b" {\"a\":1}{\"b\":[2]}\n[{\"c\":3}]".to_vec();
        assert_eq!(next_request(&mut buf), Next::Request(b"{\"a\":1}".to_vec()));
        assert_eq!(next_request(&mut buf), Next::Request(b"{\"b\":[2]}".to_vec()));
        assert_eq!(next_request(&mut buf), Next::Request(b"[{\"c\":3}]".to_vec()));
        assert_eq!(next_request(&mut buf), Next::More);
        assert!(buf.is_empty());
        // Half a request waits; its rest completes it.
        let mut buf = b"{\"method\":\"eth_ch".to_vec();
        assert_eq!(next_request(&mut buf), Next::More);
        buf.extend_from_slice(b"ainId\",\"x\":{}}");
        assert!(matches!(next_request(&mut buf), Next::Request(_)));
        // Not JSON.
        let mut buf = b"hello}".to_vec();
        assert!(matches!(next_request(&mut buf), Next::Invalid(_)));
    }
}
