#!/usr/bin/env bash
# Hearth's traces against anvil's, on the same signed transactions (scripts/trace-compare.py
# says which and what is compared). Prints each difference and `N equal, M different`; fails
# on a difference that README's "Tracing" section does not document.
#
#   bash scripts/trace-compare.sh                       # debug build of hearth, built if needed
#   HEARTH_BIN=target/release/hearth bash scripts/trace-compare.sh
#
# anvil and cast come from npm (@foundry-rs/*-linux-amd64@1.7.1), as ../shared/peers/bench.sh
# installs them; FOUNDRY_DIR points at an existing install (default /tmp/peers/foundry, else
# they are installed into /tmp/hearth-foundry). Both nodes listen on loopback, on free ports,
# and are stopped on exit. Takes about 10 s once built.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
SHARED=${SHARED_DIR:-$ROOT/../shared}
VERSION=1.7.1
FOUNDRY_DIR=${FOUNDRY_DIR:-/tmp/peers/foundry}
if ! [ -x "$FOUNDRY_DIR/node_modules/@foundry-rs/anvil-linux-amd64/bin/anvil" ]; then
  FOUNDRY_DIR=/tmp/hearth-foundry
fi
ANVIL=$FOUNDRY_DIR/node_modules/@foundry-rs/anvil-linux-amd64/bin/anvil
CAST=$FOUNDRY_DIR/node_modules/@foundry-rs/cast-linux-amd64/bin/cast
HEARTH_BIN=${HEARTH_BIN:-$ROOT/target/debug/hearth}

fail() { printf 'FAIL: %s\n' "$*" >&2; exit 1; }

if ! [ -x "$ANVIL" ] || ! [ -x "$CAST" ]; then
  echo "installing anvil and cast $VERSION from npm into $FOUNDRY_DIR"
  mkdir -p "$FOUNDRY_DIR"
  ( cd "$FOUNDRY_DIR" && { [ -f package.json ] || npm init -y >/dev/null; } &&
    npm install --no-audit --no-fund --loglevel=error \
      "@foundry-rs/anvil-linux-amd64@$VERSION" "@foundry-rs/cast-linux-amd64@$VERSION" )
fi
if ! [ -x "$HEARTH_BIN" ]; then
  ( cd "$ROOT" && cargo build --bin hearth )
fi

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
wait_rpc() {
  local url=$1 pid=$2 log=$3
  for _ in $(seq 1 300); do
    curl -s -m 1 -H 'Content-Type: application/json' \
      -d '{"jsonrpc":"2.0","id":1,"method":"eth_chainId","params":[]}' "$url" 2>/dev/null |
      grep -q result && return 0
    kill -0 "$pid" 2>/dev/null || { cat "$log"; fail "$url: the node exited on start"; }
    sleep 0.05
  done
  cat "$log"; fail "$url did not answer"
}

HEARTH_LOG=$(mktemp) ANVIL_LOG=$(mktemp)
HEARTH_PORT=$(free_port) ANVIL_PORT=$(free_port)
"$HEARTH_BIN" --ephemeral --http.port "$HEARTH_PORT" >"$HEARTH_LOG" 2>&1 &
HEARTH_PID=$!
# The same chain as Hearth's dev chain. Two flags make it so: anvil keeps --base-fee for block 1,
# where EIP-1559 (and Hearth, and geth --dev) lowers genesis's 1 gwei by 1/8 as genesis used no
# gas, so anvil starts at 0.875 gwei; and anvil records opcode steps (struct logs) only with
# --steps-tracing (without it its struct logs are empty).
"$ANVIL" --host 127.0.0.1 --port "$ANVIL_PORT" --hardfork prague --gas-limit 30000000 \
  --base-fee 875000000 --steps-tracing >"$ANVIL_LOG" 2>&1 &
ANVIL_PID=$!
trap 'kill $HEARTH_PID $ANVIL_PID 2>/dev/null || true; rm -f "$HEARTH_LOG" "$ANVIL_LOG"' EXIT
HEARTH_URL=http://127.0.0.1:$HEARTH_PORT ANVIL_URL=http://127.0.0.1:$ANVIL_PORT
wait_rpc "$HEARTH_URL" $HEARTH_PID "$HEARTH_LOG"
wait_rpc "$ANVIL_URL" $ANVIL_PID "$ANVIL_LOG"
"$ANVIL" --version | head -1

python3 "$ROOT/scripts/trace-compare.py" "$HEARTH_URL" "$ANVIL_URL" "$CAST" \
  "$SHARED/peers/build/BenchToken.json"
