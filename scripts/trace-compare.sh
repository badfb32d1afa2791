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
. "$ROOT/scripts/peer-lib.sh"
ensure_foundry
HEARTH_BIN=${HEARTH_BIN:-$ROOT/target/debug/hearth}
if ! [ -x "$HEARTH_BIN" ]; then
  ( cd "$ROOT" && cargo build --bin hearth )
fi

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
