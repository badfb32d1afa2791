#!/usr/bin/env bash
# Browser test of the built-in block explorer (rpc/src/explorer/assets): starts a fresh Hearth
# dev chain on loopback with a Foundry-style --artifacts build of tests/contracts, deploys
# DevToken and ConsoleLog and sends transfers, a reverting call, a nested call and a queued
# transaction (python3, eth_sendTransaction from the unlocked dev accounts), then
# scripts/explorer-browser.mjs drives Debian's headless Chromium with playwright-core through
# the page (home → block → transaction → address, mempool, accounts, search, errors), checks
# what it shows against the node's own answers and saves screenshots.
#
#   bash scripts/explorer-browser.sh                      # target/release/hearth; never builds
#   HEARTH_BIN=target/debug/hearth SCREENSHOT_DIR=/tmp/shots bash scripts/explorer-browser.sh
#
# The page: the node's own `/` when it serves the explorer there; otherwise (a binary from
# before the explorer) the .mjs serves rpc/src/explorer/assets itself on another loopback port
# and proxies POST /, GET /metrics and the WebSocket to the node, saying so.
# EXPLORER_SERVE=node requires the node's own page (fails otherwise), EXPLORER_SERVE=proxy
# always uses the proxy; EXPLORER_URL overrides the page's address altogether.
# Installs once: Debian's chromium (apt-get, when run as root and /usr/bin/chromium is
# missing) and playwright-core from npm into $EXPLORER_NPM_DIR (never a browser download).
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
HEARTH_BIN=${HEARTH_BIN:-$ROOT/target/release/hearth}
NODE=${NODE:-node}
CHROMIUM=${CHROMIUM:-/usr/bin/chromium}
export EXPLORER_NPM_DIR=${EXPLORER_NPM_DIR:-/tmp/hearth-explorer-npm}
export SCREENSHOT_DIR=${SCREENSHOT_DIR:-/tmp/hearth-explorer-shots}
export EXPLORER_SERVE=${EXPLORER_SERVE:-auto}

[ -x "$HEARTH_BIN" ] || { echo "FAIL: no hearth binary at $HEARTH_BIN (build it first: cargo build --release --bin hearth; this script never builds)" >&2; exit 2; }
. "$ROOT/scripts/explorer-lib.sh"
explorer_browser_ready

WORK=$(mktemp -d /tmp/hearth-explorer.XXXXXX)
NODE_PID=
cleanup() {
  if [ -n "$NODE_PID" ]; then kill "$NODE_PID" 2>/dev/null || true; wait "$NODE_PID" 2>/dev/null || true; fi
  rm -rf "$WORK"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# A Foundry-style build (out/<File>.sol/<Contract>.json) so the node names contracts, functions
# and events in hearth_traceTransactionDecoded.
python3 - "$ROOT/tests/contracts" "$WORK/out" <<'EOF'
import json, os, sys
src, out = sys.argv[1], sys.argv[2]
for file, names in (("DevTokens", ["DevToken"]), ("ConsoleLog", ["ConsoleLog"])):
    compiled = json.load(open(os.path.join(src, file + ".json")))
    os.makedirs(os.path.join(out, file + ".sol"), exist_ok=True)
    for name in names:
        c = compiled[name]
        json.dump({"abi": c["abi"], "bytecode": {"object": c["bytecode"]},
                   "deployedBytecode": {"object": c["deployedBytecode"], "immutableReferences": {}}},
                  open(os.path.join(out, file + ".sol", name + ".json"), "w"))
EOF

"$HEARTH_BIN" --ephemeral --http.port 0 --artifacts "$WORK/out" >"$WORK/node.log" 2>&1 &
NODE_PID=$!
for _ in $(seq 1 200); do
  grep -q 'listening on http://' "$WORK/node.log" && break
  kill -0 "$NODE_PID" 2>/dev/null || { cat "$WORK/node.log"; echo "FAIL: hearth exited on start" >&2; exit 1; }
  sleep 0.1
done
URL=$(grep -o 'listening on http://[0-9.:]*' "$WORK/node.log" | head -1 | sed 's/listening on //')
[ -n "$URL" ] || { cat "$WORK/node.log"; echo "FAIL: hearth did not say where it listens" >&2; exit 1; }
export NODE_URL="$URL/" EXPLORER_ARTIFACTS=1
echo "== hearth at $NODE_URL ($HEARTH_BIN)"

# The chain the page shows: two contracts, transfers, a revert, a nested call, a queued tx.
export SEED_FILE="$WORK/seed.json"
timeout 30 python3 - "$NODE_URL" "$ROOT/tests/contracts" "$SEED_FILE" <<'EOF'
import json, os, sys, time, urllib.request
url, src, seed_file = sys.argv[1:4]
def rpc(method, params=()):
    req = urllib.request.Request(url, json.dumps({"jsonrpc": "2.0", "id": 1, "method": method, "params": list(params)}).encode(),
                                 {"Content-Type": "application/json"})
    answer = json.loads(urllib.request.urlopen(req, timeout=20).read())
    if "error" in answer:
        sys.exit(f"FAIL: seeding: {method}: {answer['error']}")
    return answer["result"]
def selector(signature):
    return rpc("web3_sha3", ["0x" + signature.encode().hex()])[:10]
word = lambda v: format(v, "064x")
addr_word = lambda a: a[2:].lower().rjust(64, "0")
def send(tx):
    h = rpc("eth_sendTransaction", [tx])
    for _ in range(100):  # mined before the answer (automine); a moment later on other nodes
        receipt = rpc("eth_getTransactionReceipt", [h])
        if receipt:
            return h, receipt
        time.sleep(0.05)
    sys.exit(f"FAIL: seeding: {h} was not mined")
accounts = rpc("eth_accounts")
a0, a1, a2, a3, a4, a5 = accounts[:6]
token_json = json.load(open(os.path.join(src, "DevTokens.json")))["DevToken"]
console_json = json.load(open(os.path.join(src, "ConsoleLog.json")))["ConsoleLog"]
seed = {"accounts": accounts}
seed["deployToken"], r = send({"from": a0, "data": token_json["bytecode"], "gas": hex(3_000_000)})
token = seed["token"] = r["contractAddress"]
seed["deployConsole"], r = send({"from": a0, "data": console_json["bytecode"] + word(32) + word(0), "gas": hex(5_000_000)})
console = seed["console"] = r["contractAddress"]
transfer = selector("transfer(address,uint256)")
seed["tokenTransfer"], _ = send({"from": a0, "to": token, "data": transfer + addr_word(a2) + word(10**18)})
seed["ethTransfer"], _ = send({"from": a1, "to": a3, "value": hex(5 * 10**18)})
seed["reverted"], r = send({"from": a4, "to": token, "gas": hex(100_000), "data": transfer + addr_word(a2) + word(10**18)})
assert r["status"] == "0x0", "the over-balance transfer should revert"
# nested([], []): calls one and two frames down, a caught revert, console.log lines, an event.
seed["nested"], r = send({"from": a0, "to": console, "gas": hex(2_000_000),
                          "data": selector("nested(bytes[],bytes[])") + word(64) + word(96) + word(0) + word(0)})
assert r["status"] == "0x1", "nested() should succeed"
# A block of 30 transfers (two pages in the block view), mined at once.
rpc("evm_setAutomine", [False])
many = [rpc("eth_sendTransaction", [{"from": accounts[7 + i % 2], "to": a3, "value": hex(i + 1)}]) for i in range(30)]
rpc("evm_mine")
rpc("evm_setAutomine", [True])
big_block = rpc("eth_getTransactionReceipt", [many[0]])["blockNumber"]
assert all(rpc("eth_getTransactionReceipt", [h])["blockNumber"] == big_block for h in many), "the 30 transfers should share a block"
seed["bigBlock"] = int(big_block, 16)
# A nonce gap: stays queued in the pool.
nonce = int(rpc("eth_getTransactionCount", [a5, "latest"]), 16)
seed["queued"] = rpc("eth_sendTransaction", [{"from": a5, "to": a3, "value": "0x1", "nonce": hex(nonce + 3)}])
json.dump(seed, open(seed_file, "w"), indent=1)
print(f"== seeded: DevToken at {token}, ConsoleLog at {console}, 30 transfers in block {seed['bigBlock']}, "
      f"head {int(rpc('eth_blockNumber'), 16)}, 1 queued transaction")
EOF

mkdir -p "$SCREENSHOT_DIR"
export CHROMIUM
timeout 120 "$NODE" "$ROOT/scripts/explorer-browser.mjs"
