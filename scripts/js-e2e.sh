#!/usr/bin/env bash
# End-to-end checks with the JavaScript clients most dapp tests use, against fresh Hearth dev
# chains on loopback: scripts/viem-e2e.mjs in viem's "hardhat" test-client mode, then in its
# "anvil" mode, then scripts/ethers-e2e.mjs (ethers v6), then scripts/viem-blob-e2e.mjs (blob
# transactions with viem's kzg, through c-kzg from npm), each on its own fresh chain.
#
#   bash scripts/js-e2e.sh            # builds hearth (debug) if needed, installs both into /tmp
#   HEARTH_BIN=target/release/hearth bash scripts/js-e2e.sh
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
export JS_DIR=${JS_DIR:-/tmp/hearth-js}
VIEM_VERSION=2.57.20
ETHERS_VERSION=6.17.0
# Node bindings of c-kzg (built from source by npm), for viem's blob transactions.
CKZG_VERSION=4.1.0
HEARTH_BIN=${HEARTH_BIN:-$ROOT/target/debug/hearth}
NODE=${NODE:-node}

if ! [ -f "$JS_DIR/node_modules/viem/package.json" ] || ! [ -f "$JS_DIR/node_modules/ethers/package.json" ] ||
   ! [ -f "$JS_DIR/node_modules/c-kzg/package.json" ]; then
  echo "== installing viem $VIEM_VERSION, ethers $ETHERS_VERSION and c-kzg $CKZG_VERSION from npm into $JS_DIR"
  mkdir -p "$JS_DIR"
  ( cd "$JS_DIR" && { [ -f package.json ] || npm init -y >/dev/null; } &&
    npm install --no-audit --no-fund --loglevel=error "viem@$VIEM_VERSION" "ethers@$ETHERS_VERSION" "c-kzg@$CKZG_VERSION" )
fi
if ! [ -x "$HEARTH_BIN" ]; then
  echo "== building hearth"
  ( cd "$ROOT" && cargo build --bin hearth )
fi

LOG=$(mktemp)
NODE_PID=
trap '[ -n "$NODE_PID" ] && kill $NODE_PID 2>/dev/null; rm -f "$LOG"' EXIT
for check in "viem-e2e.mjs hardhat" "viem-e2e.mjs anvil" "ethers-e2e.mjs" "viem-blob-e2e.mjs"; do
  "$HEARTH_BIN" --ephemeral --http.port 0 >"$LOG" 2>&1 &
  NODE_PID=$!
  for _ in $(seq 1 200); do
    grep -q 'listening on http://' "$LOG" && break
    kill -0 $NODE_PID 2>/dev/null || { cat "$LOG"; echo "FAIL: hearth exited on start" >&2; exit 1; }
    sleep 0.05
  done
  URL=$(grep -o 'listening on http://[0-9.:]*' "$LOG" | head -1 | sed 's/listening on //')
  read -r script mode <<<"$check"
  echo "== $script ${mode:-} against hearth at $URL"
  timeout 120 "$NODE" "$ROOT/scripts/$script" "$URL" ${mode:+"$mode"}
  kill $NODE_PID; wait $NODE_PID 2>/dev/null || true; NODE_PID=
done
