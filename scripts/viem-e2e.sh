#!/usr/bin/env bash
# End-to-end check with viem, the TypeScript client most dapp tests use, against fresh Hearth
# dev chains on loopback: scripts/viem-e2e.mjs in viem's "hardhat" test-client mode, then in
# its "anvil" mode (each on its own fresh chain).
#
#   bash scripts/viem-e2e.sh            # builds hearth (debug) if needed, installs viem into /tmp
#   HEARTH_BIN=target/release/hearth bash scripts/viem-e2e.sh
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
export VIEM_DIR=${VIEM_DIR:-/tmp/hearth-viem}
VIEM_VERSION=2.57.20
HEARTH_BIN=${HEARTH_BIN:-$ROOT/target/debug/hearth}
NODE=${NODE:-node}

if ! [ -f "$VIEM_DIR/node_modules/viem/package.json" ]; then
  echo "== installing viem $VIEM_VERSION from npm into $VIEM_DIR"
  mkdir -p "$VIEM_DIR"
  ( cd "$VIEM_DIR" && { [ -f package.json ] || npm init -y >/dev/null; } &&
    npm install --no-audit --no-fund --loglevel=error "viem@$VIEM_VERSION" )
fi
if ! [ -x "$HEARTH_BIN" ]; then
  echo "== building hearth"
  ( cd "$ROOT" && cargo build --bin hearth )
fi

LOG=$(mktemp)
NODE_PID=
trap '[ -n "$NODE_PID" ] && kill $NODE_PID 2>/dev/null; rm -f "$LOG"' EXIT
for mode in hardhat anvil; do
  "$HEARTH_BIN" --ephemeral --http.port 0 >"$LOG" 2>&1 &
  NODE_PID=$!
  for _ in $(seq 1 200); do
    grep -q 'listening on http://' "$LOG" && break
    kill -0 $NODE_PID 2>/dev/null || { cat "$LOG"; echo "FAIL: hearth exited on start" >&2; exit 1; }
    sleep 0.05
  done
  URL=$(grep -o 'listening on http://[0-9.:]*' "$LOG" | head -1 | sed 's/listening on //')
  echo "== viem ($mode mode) against hearth at $URL"
  timeout 120 "$NODE" "$ROOT/scripts/viem-e2e.mjs" "$URL" "$mode"
  kill $NODE_PID; wait $NODE_PID 2>/dev/null || true; NODE_PID=
done
