//! Runs the real `hearth` binary as a child process and talks JSON-RPC to it over HTTP on
//! loopback: for restart, kill -9 and exit-code tests.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};

use serde_json::{Value, json};

/// A fresh, empty directory under the system temp dir, removed on drop.
pub(crate) struct TempDir(PathBuf);

impl TempDir {
    pub(crate) fn new(tag: &str) -> Self {
        static NEXT: AtomicU32 = AtomicU32::new(0);
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        let path =
            std::env::temp_dir().join(format!("hearth-test-{tag}-{}-{n}", std::process::id()));
        let _ = std::fs::remove_dir_all(&path);
        std::fs::create_dir_all(&path).expect("temp dir");
        Self(path)
    }

    pub(crate) fn path(&self) -> &Path {
        &self.0
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// A running `hearth` process.
pub(crate) struct NodeProcess {
    child: Child,
    pub(crate) addr: SocketAddr,
    /// What it printed on stdout up to and including its "Listening on" line (the banner).
    pub(crate) banner: Vec<String>,
    /// The log lines (stderr) seen until then.
    pub(crate) log: Vec<String>,
    /// The lines printed since (`true`: stdout), for [`NodeProcess::log_until`].
    later: std::sync::mpsc::Receiver<(bool, String)>,
}

impl NodeProcess {
    /// Starts `hearth --datadir DIR --http.port 0 ARGS` and waits until it listens.
    pub(crate) fn start(datadir: &Path, args: &[&str]) -> Self {
        let datadir = datadir.to_str().expect("utf-8 temp path");
        let mut all = vec!["--datadir", datadir, "--http.port", "0"];
        all.extend_from_slice(args);
        Self::spawn(&all)
    }

    /// Starts `hearth ARGS` exactly as given (they must choose a free port, e.g. `-p 0`) and
    /// waits until it listens: for the banner's "Listening on ADDR" line on stdout, or with
    /// `-q`/`--quiet` (no banner) for the log line "listening on http://ADDR" on stderr.
    pub(crate) fn spawn(args: &[&str]) -> Self {
        let quiet = args.iter().any(|a| *a == "-q" || *a == "--quiet");
        let mut child = Command::new(env!("CARGO_BIN_EXE_hearth"))
            .args(args)
            .env("RUST_LOG", "info")
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("hearth starts");
        let (lines, rx) = std::sync::mpsc::channel::<(bool, String)>();
        let stdout = child.stdout.take().expect("piped stdout");
        let stderr = child.stderr.take().expect("piped stderr");
        let out_lines = lines.clone();
        // Both streams are drained for the child's whole life, so it never blocks on a full
        // pipe; stderr (the log) is passed on to the test's own stderr.
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                let _ = out_lines.send((true, line));
            }
        });
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                eprintln!("{line}");
                let _ = lines.send((false, line));
            }
        });
        let (mut banner, mut log) = (Vec::new(), Vec::new());
        let addr = loop {
            let Ok((is_stdout, line)) = rx.recv() else {
                panic!("hearth exited before listening; stdout: {banner:#?}");
            };
            if is_stdout {
                banner.push(line.clone());
                if let Some(addr) = line.strip_prefix("Listening on ") {
                    break addr.trim().parse().expect("socket address");
                }
            } else {
                log.push(line.clone());
                if quiet && let Some(rest) = line.split("listening on http://").nth(1) {
                    let addr = rest.split_whitespace().next().expect("address");
                    break addr.parse().expect("socket address");
                }
            }
        };
        // Later lines wait in the channel for `log_until` (a test's node prints little).
        Self { child, addr, banner, log, later: rx }
    }

    /// Runs `hearth ARGS` expecting it to stop on its own: (exit code, stdout, stderr).
    pub(crate) fn run_to_exit(args: &[&str]) -> (i32, String, String) {
        let output = Command::new(env!("CARGO_BIN_EXE_hearth"))
            .args(args)
            .stdin(Stdio::null())
            .output()
            .expect("hearth runs");
        (
            output.status.code().expect("exit code, not a signal"),
            String::from_utf8_lossy(&output.stdout).into_owned(),
            String::from_utf8_lossy(&output.stderr).into_owned(),
        )
    }

    /// The log lines printed since the node listened (or since the last call), up to and
    /// including the first that contains `needle`; fails the test after 20 s without it (a
    /// guard, not a pacing wait).
    pub(crate) fn log_until(&self, needle: &str) -> Vec<String> {
        let mut seen = Vec::new();
        loop {
            match self.later.recv_timeout(std::time::Duration::from_secs(20)) {
                Ok((false, line)) => {
                    let found = line.contains(needle);
                    seen.push(line);
                    if found {
                        return seen;
                    }
                }
                Ok((true, _)) => {}
                Err(e) => panic!("no log line with {needle:?} ({e}); seen: {seen:#?}"),
            }
        }
    }

    /// One JSON-RPC call; the whole response object.
    pub(crate) fn call(&self, method: &str, params: Value) -> Value {
        let body =
            json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params}).to_string();
        let (status, body) = post(self.addr, &body).expect("node answers");
        assert!(status == 200 || status == 503, "HTTP {status}");
        serde_json::from_str(&body).expect("JSON response")
    }

    /// One JSON-RPC call; its result, failing the test on an error.
    pub(crate) fn ok(&self, method: &str, params: Value) -> Value {
        let response = self.call(method, params);
        assert!(response.get("error").is_none(), "{method}: {response}");
        response["result"].clone()
    }

    /// SIGTERM, then waits for a clean exit.
    pub(crate) fn stop(mut self) {
        let status = Command::new("kill")
            .args(["-TERM", &self.child.id().to_string()])
            .status()
            .expect("kill runs");
        assert!(status.success());
        let exit = self.child.wait().expect("child exits");
        assert!(exit.success(), "clean shutdown, got {exit}");
    }

    /// SIGKILL: no chance to flush or clean up.
    pub(crate) fn kill_9(mut self) {
        self.child.kill().expect("SIGKILL");
        let _ = self.child.wait();
    }
}

impl Drop for NodeProcess {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A minimal HTTP/1.1 POST of a JSON body; returns (status, body).
pub(crate) fn post(addr: SocketAddr, body: &str) -> std::io::Result<(u16, String)> {
    post_with(addr, "", body)
}

/// [`post`] with more header lines (`extra`: each ending in CRLF).
pub(crate) fn post_with(
    addr: SocketAddr,
    extra: &str,
    body: &str,
) -> std::io::Result<(u16, String)> {
    let mut stream = TcpStream::connect(addr)?;
    write!(
        stream,
        "POST / HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\n{extra}Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )?;
    read_response(stream)
}

/// A minimal HTTP/1.1 GET; returns (status, body).
pub(crate) fn get(addr: SocketAddr, path: &str) -> std::io::Result<(u16, String)> {
    let mut stream = TcpStream::connect(addr)?;
    write!(stream, "GET {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n")?;
    read_response(stream)
}

/// Reads a whole `Connection: close` response: (status, body).
fn read_response(mut stream: TcpStream) -> std::io::Result<(u16, String)> {
    let mut response = String::new();
    stream.read_to_string(&mut response)?;
    let status = response
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .ok_or_else(|| std::io::Error::other("no status line"))?;
    let body = response.split_once("\r\n\r\n").map(|(_, b)| b.to_owned()).unwrap_or_default();
    Ok((status, body))
}
