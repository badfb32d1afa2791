#!/usr/bin/env bash
# Starts anvil (npm @foundry-rs/anvil-linux-amd64 1.7.1, from /tmp/peers) and Hearth with the
# same anvil command line on two loopback ports, runs one sequence of JSON-RPC requests on both
# (scripts/anvil-compare.py: the everyday methods, anvil's dev methods, signing with the dev keys and
# EIP-7702 authorizations) and compares the
# answers field by field. Prints `N equal, M different`; exits 1 when any answer differs in a
# way README.md ("Differences from anvil") does not list.
#
#   bash scripts/anvil-compare.sh            # builds hearth (debug) if needed
#   HEARTH_BIN=target/release/hearth bash scripts/anvil-compare.sh
#   VERBOSE=1 bash scripts/anvil-compare.sh  # also list the equal steps
#   SABOTAGE=1 bash scripts/anvil-compare.sh # must exit 1: one Hearth answer is altered
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
SHARED=${SHARED_DIR:-$ROOT/../shared}
PEERS_DIR=${PEERS_DIR:-/tmp/peers}
ANVIL=$PEERS_DIR/foundry/node_modules/@foundry-rs/anvil-linux-amd64/bin/anvil
HEARTH_BIN=${HEARTH_BIN:-$ROOT/target/debug/hearth}
BENCH=$SHARED/peers/build/BenchToken.json
TOKENS=$ROOT/tests/contracts/DevTokens.json

# What both nodes are started with: anvil's flags, which Hearth takes as its own spellings.
# A zero base fee keeps every block's base fee equal (anvil mines block 1 at the genesis base
# fee, Hearth applies EIP-1559 from block 1 on: README.md), so base fees are compared too.
ANVIL_ARGS=(--host 127.0.0.1 --hardfork prague --accounts 10 --balance 10000 --chain-id 31337
  --gas-limit 30000000 --block-base-fee-per-gas 0 --timestamp 1700000000)
DRIVER_ARGS=()

fail() { printf 'FAIL: %s\n' "$*" >&2; exit 1; }

if ! [ -x "$ANVIL" ]; then
  echo "== installing the peers (anvil) into $PEERS_DIR"
  SKIP_OHA=1 PEERS_DIR=$PEERS_DIR bash "$SHARED/peers/bench.sh" install
fi
if ! [ -x "$HEARTH_BIN" ]; then
  echo "== building hearth"
  ( cd "$ROOT" && cargo build --bin hearth )
fi
[ -f "$BENCH" ] || fail "no BenchToken artifact at $BENCH"

# Two free loopback ports.
read -r ANVIL_PORT HEARTH_PORT < <(python3 -c '
import socket
socks = [socket.socket() for _ in range(2)]
for s in socks: s.bind(("127.0.0.1", 0))
print(*[s.getsockname()[1] for s in socks])
for s in socks: s.close()')

HEARTH_ARGS=("${ANVIL_ARGS[@]}")
PORT_FLAG=--port
if ! "$HEARTH_BIN" --help | grep -q -- '--port'; then
  # A Hearth built without anvil's command line: its own names for what it has, in memory,
  # at its own genesis base fee (so base fees are compared by kind only).
  HEARTH_ARGS=(--ephemeral --http.addr 127.0.0.1 --accounts 10 --balance 10000 --chain-id 31337
    --gas-limit 30000000)
  PORT_FLAG=--http.port
  DRIVER_ARGS=(--ignore-base-fee)
  echo "note: $HEARTH_BIN has no anvil flags; started with its own: ${HEARTH_ARGS[*]}"
fi

ANVIL_LOG=$(mktemp)
HEARTH_LOG=$(mktemp)
ANVIL_PID=
HEARTH_PID=
cleanup() {
  [ -n "$ANVIL_PID" ] && kill "$ANVIL_PID" 2>/dev/null
  [ -n "$HEARTH_PID" ] && kill "$HEARTH_PID" 2>/dev/null
  rm -f "$ANVIL_LOG" "$HEARTH_LOG" "${BLOB_RAW_TX_FILE:-}"
}
trap cleanup EXIT

"$ANVIL" "${ANVIL_ARGS[@]}" --port "$ANVIL_PORT" >"$ANVIL_LOG" 2>&1 &
ANVIL_PID=$!
"$HEARTH_BIN" "${HEARTH_ARGS[@]}" "$PORT_FLAG" "$HEARTH_PORT" >"$HEARTH_LOG" 2>&1 &
HEARTH_PID=$!

ready() { # url pid log
  for _ in $(seq 1 200); do
    curl -s -o /dev/null -H 'content-type: application/json' \
      -d '{"jsonrpc":"2.0","id":1,"method":"eth_chainId","params":[]}' "$1" && return 0
    kill -0 "$2" 2>/dev/null || { cat "$3"; fail "$1 exited on start"; }
    sleep 0.05
  done
  cat "$3"; fail "$1 did not answer"
}
ready "http://127.0.0.1:$ANVIL_PORT" "$ANVIL_PID" "$ANVIL_LOG"
ready "http://127.0.0.1:$HEARTH_PORT" "$HEARTH_PID" "$HEARTH_LOG"
echo "anvil $("$ANVIL" --version | head -1 | awk '{print $3}') at :$ANVIL_PORT, hearth at :$HEARTH_PORT"

# A signed blob transaction (dev account 5, unused elsewhere in the sequence; version 0 proofs:
# cell proofs are for Osaka, which anvil 1.7.1 takes under Prague too and Hearth refuses) made with cast,
# sent to both nodes as the same bytes.
CAST=$(dirname "$ANVIL")/../../cast-linux-amd64/bin/cast
if [ -x "$CAST" ]; then
  BLOB_FILE=$(mktemp)
  printf 'hearth and anvil keep this blob' >"$BLOB_FILE"
  # A file: the transaction (a 128 KiB blob) is too long for an environment variable.
  BLOB_RAW_TX_FILE=$(mktemp)
  "$CAST" mktx --rpc-url "http://127.0.0.1:$ANVIL_PORT" --chain 31337 --nonce 0 \
    --private-key 0x8b3a350cf5c34c9194ca85829a2df0ec3153be0318b5e2d3348e872092edffba \
    --blob --eip4844 --path "$BLOB_FILE" --gas-limit 21000 --gas-price 2000000000 \
    --priority-gas-price 1000000000 --blob-gas-price 10 \
    0x00000000000000000000000000000000000000b1 >"$BLOB_RAW_TX_FILE"
  rm -f "$BLOB_FILE"
  export BLOB_RAW_TX_FILE
else
  echo "note: no cast beside anvil; the mined-blob steps are left out"
fi

timeout 120 python3 "$ROOT/scripts/anvil-compare.py" "http://127.0.0.1:$ANVIL_PORT" \
  "http://127.0.0.1:$HEARTH_PORT" "$BENCH" "$TOKENS" ${VERBOSE:+--verbose} ${SABOTAGE:+--sabotage} \
  "${DRIVER_ARGS[@]}"
