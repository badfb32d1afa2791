#!/usr/bin/env bash
# Hearth's console.log lines against anvil's, for the same contract and calls
# (scripts/console-compare.py says which and what is compared). Prints each difference and
# `N equal, M different`; fails on a difference not listed in DOCUMENTED there.
#
#   bash scripts/console-compare.sh                       # debug build of hearth, built if needed
#   HEARTH_BIN=target/release/hearth bash scripts/console-compare.sh
#   SABOTAGE=1 bash scripts/console-compare.sh            # must exit 1: one Hearth line is altered
#   KEEP_LOGS=DIR bash scripts/console-compare.sh         # keep both nodes' output in DIR
#
# anvil comes from npm (@foundry-rs/anvil-linux-amd64@1.7.1), as ../shared/peers/bench.sh
# installs it; FOUNDRY_DIR points at an existing install (default /tmp/peers/foundry, else it
# is installed into /tmp/hearth-foundry). The contract is tests/contracts/ConsoleLog.json
# (scripts/compile-contract.mjs ConsoleLog). Both nodes listen on loopback, on free ports, and are stopped
# on exit. anvil prints console lines on stdout; Hearth, with --log.format json, on stderr.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
. "$ROOT/scripts/peer-lib.sh"
ensure_foundry
HEARTH_BIN=${HEARTH_BIN:-$ROOT/target/debug/hearth}
if ! [ -x "$HEARTH_BIN" ]; then
  ( cd "$ROOT" && cargo build --bin hearth )
fi

LOGS=$(mktemp -d)
HEARTH_ERR=$LOGS/hearth.stderr HEARTH_OUT=$LOGS/hearth.stdout ANVIL_OUT=$LOGS/anvil.stdout
HEARTH_PORT=$(free_port) ANVIL_PORT=$(free_port)
"$HEARTH_BIN" --ephemeral --http.port "$HEARTH_PORT" --log.format json >"$HEARTH_OUT" 2>"$HEARTH_ERR" &
HEARTH_PID=$!
# The same chain as Hearth's dev chain: anvil keeps --base-fee for block 1, where EIP-1559 (and
# Hearth) lowers genesis's 1 gwei by 1/8 as genesis used no gas, so anvil starts at 0.875 gwei.
"$ANVIL" --host 127.0.0.1 --port "$ANVIL_PORT" --hardfork prague --gas-limit 30000000 \
  --base-fee 875000000 >"$ANVIL_OUT" 2>&1 &
ANVIL_PID=$!
cleanup() {
  kill $HEARTH_PID $ANVIL_PID 2>/dev/null || true
  if [ -n "${KEEP_LOGS:-}" ]; then mkdir -p "$KEEP_LOGS" && cp "$LOGS"/* "$KEEP_LOGS"/; fi
  rm -rf "$LOGS"
}
trap cleanup EXIT
HEARTH_URL=http://127.0.0.1:$HEARTH_PORT ANVIL_URL=http://127.0.0.1:$ANVIL_PORT
wait_rpc "$HEARTH_URL" $HEARTH_PID "$HEARTH_ERR"
wait_rpc "$ANVIL_URL" $ANVIL_PID "$ANVIL_OUT"
"$ANVIL" --version | head -1

python3 "$ROOT/scripts/console-compare.py" "$ANVIL_URL" "$ANVIL_OUT" "$HEARTH_URL" "$HEARTH_ERR" \
  "$ROOT/tests/contracts/ConsoleLog.json"
