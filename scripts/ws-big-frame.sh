#!/usr/bin/env bash
# Peak memory of a node sent one oversized WebSocket frame: starts a fresh node (ephemeral, on
# loopback), reads its VmHWM (peak RSS) from /proc, opens a WebSocket, sends the header of a
# SIZE_MIB frame and then its whole payload (as a hostile client would), reads the close frame
# the node answers, and reads VmHWM again. The node refuses frames over the 5 MiB body limit
# from the length in the header (close 1009) without reading the payload.
#
#   HEARTH_BIN=target/release/hearth bash scripts/ws-big-frame.sh            # 100 MiB
#   SIZE_MIB=400 CONNECTIONS=4 HEARTH_BIN=target/release/hearth bash scripts/ws-big-frame.sh
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
HEARTH_BIN=${HEARTH_BIN:-$ROOT/target/release/hearth}
SIZE_MIB=${SIZE_MIB:-100}
CONNECTIONS=${CONNECTIONS:-1}

LOG=$(mktemp)
"$HEARTH_BIN" --ephemeral --http.port 0 >"$LOG" 2>&1 &
NODE_PID=$!
trap 'kill $NODE_PID 2>/dev/null || true; rm -f "$LOG"' EXIT
for _ in $(seq 1 200); do
  grep -q 'listening on http://' "$LOG" && break
  kill -0 $NODE_PID 2>/dev/null || { cat "$LOG"; echo "FAIL: hearth exited on start" >&2; exit 1; }
  sleep 0.05
done
ADDR=$(grep -o 'listening on http://[0-9.:]*' "$LOG" | head -1 | sed 's|listening on http://||')
hwm() { awk '/VmHWM/ {print $2}' "/proc/$NODE_PID/status"; }
BEFORE=$(hwm)

python3 - "$ADDR" "$SIZE_MIB" "$CONNECTIONS" <<'EOF'
import socket, struct, sys, threading, time
host, port = sys.argv[1].rsplit(":", 1)
size = int(sys.argv[2]) << 20
connections = int(sys.argv[3])
results = []

def one():
    s = socket.create_connection((host, int(port)))
    s.sendall(b"GET / HTTP/1.1\r\nHost: 127.0.0.1\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
              b"Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n")
    head = b""
    while not head.endswith(b"\r\n\r\n"):
        head += s.recv(1)
    assert head.startswith(b"HTTP/1.1 101"), head
    started = time.monotonic()
    s.sendall(b"\x81\xff" + struct.pack(">Q", size) + b"\0\0\0\0")
    # The payload, as a hostile client sends it; the node may close before it is all sent.
    chunk = b"x" * (1 << 20)
    sent = 0
    s.settimeout(60)
    try:
        while sent < size:
            s.sendall(chunk)
            sent += len(chunk)
    except OSError:
        pass
    answer = b""
    try:
        while len(answer) < 4:
            got = s.recv(4096)
            if not got:
                break
            answer += got
    except OSError:
        pass
    code = struct.unpack(">H", answer[2:4])[0] if len(answer) >= 4 and answer[0] == 0x88 else None
    results.append((code, sent >> 20, time.monotonic() - started))
    s.close()

threads = [threading.Thread(target=one) for _ in range(connections)]
for t in threads: t.start()
for t in threads: t.join()
for code, sent_mib, secs in results:
    print(f"close code {code}, {sent_mib} MiB of payload written before the node closed, {secs:.2f} s")
EOF
# The node answers an ordinary request afterwards.
curl -s -m 5 -H 'content-type: application/json' \
  -d '{"jsonrpc":"2.0","id":1,"method":"eth_chainId","params":[]}' "http://$ADDR/" | grep -q 0x7a69 \
  || { echo "FAIL: the node stopped answering" >&2; exit 1; }
AFTER=$(hwm)
echo "VmHWM before: $((BEFORE / 1024)) MiB, after ${CONNECTIONS} x ${SIZE_MIB} MiB frame(s): $((AFTER / 1024)) MiB"
