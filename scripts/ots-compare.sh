#!/usr/bin/env bash
# Hearth's Otterscan methods (ots_*, erigon_getHeaderByNumber) against anvil's and against
# Erigon's rules, on the same signed transactions (scripts/ots-compare.py says which and what is
# compared). Prints each difference and `N equal, M different (K known)`; fails when Hearth does
# not answer as Erigon or differs from anvil in a way KNOWN does not list.
#
#   bash scripts/ots-compare.sh                                   # target/release/hearth
#   HEARTH_BIN=target/debug/hearth bash scripts/ots-compare.sh
#   bash scripts/ots-compare.sh --quiet                           # only undocumented differences
#   bash scripts/ots-compare.sh --latency                         # search latency, 100,000 blocks
#   OTS_LATENCY_BLOCKS=2000 bash scripts/ots-compare.sh --latency # a quick one
#   SELF_TEST=1 bash scripts/ots-compare.sh --model-from anvil    # a second anvil in Hearth's place:
#                                                                 # shows where anvil is not Erigon
#
# Hearth is not built here (HEARTH_BIN must exist). anvil and cast come from npm
# (@foundry-rs/*-linux-amd64@1.7.1) through scripts/peer-lib.sh's ensure_foundry. Both nodes
# listen on loopback, on free ports, start from the same genesis timestamp, and are stopped on
# exit. The comparison takes about 5 s. --latency builds each node's chain in turn: 100,000
# blocks take Hearth about 45 s and anvil about half an hour (it mines ~50 empty blocks a
# second); OTS_LATENCY_NODES=hearth (or --latency-nodes hearth) times Hearth alone.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
. "$ROOT/scripts/peer-lib.sh"
ensure_foundry
# anvil's HOME (its ~/.foundry): a fresh one per run, removed on exit. anvil keeps the states
# of a long chain under ~/.foundry/anvil/tmp and leaves them there: two latency runs (10,000
# blocks, then 10,000 of 100,000) left 25 GB and filled this machine's disk.
OWN_ANVIL_HOME=
if [ -z "${ANVIL_HOME:-}" ]; then
  ANVIL_HOME=$(mktemp -d /tmp/hearth-ots-anvil.XXXXXX)
  OWN_ANVIL_HOME=$ANVIL_HOME
fi
mkdir -p "$ANVIL_HOME"
HEARTH_BIN=${HEARTH_BIN:-$ROOT/target/release/hearth}
GENESIS_TIME=1700000000  # GENESIS_TIME in ots-compare.py

# The same chain as Hearth's dev chain (scripts/trace-compare.sh explains the flags), from the
# same genesis timestamp; the script sets each block's timestamp.
ANVIL_ARGS=(--host 127.0.0.1 --hardfork prague --gas-limit 30000000 --base-fee 875000000
  --timestamp "$GENESIS_TIME")
# A latency run keeps anvil's states off the disk (searches read no state).
case " $* " in *" --latency "*) ANVIL_ARGS+=(--max-persisted-states 0) ;; esac

HEARTH_LOG=$(mktemp) ANVIL_LOG=$(mktemp)
HEARTH_PORT=$(free_port) ANVIL_PORT=$(free_port)
HEARTH_PID= ANVIL_PID=
cleanup() {
  for pid in $HEARTH_PID $ANVIL_PID; do
    kill "$pid" 2>/dev/null || true
  done
  for pid in $HEARTH_PID $ANVIL_PID; do
    wait "$pid" 2>/dev/null || true
  done
  rm -f "$HEARTH_LOG" "$ANVIL_LOG"
  [ -z "$OWN_ANVIL_HOME" ] || rm -rf "$OWN_ANVIL_HOME"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

if [ -n "${SELF_TEST:-}" ]; then
  # A second anvil where Hearth would be: every anvil answer is then "equal", and the ERIGON
  # lines show where anvil does not answer as Erigon (with --model-from anvil).
  HOME=$ANVIL_HOME "$ANVIL" "${ANVIL_ARGS[@]}" --port "$HEARTH_PORT" >"$HEARTH_LOG" 2>&1 &
else
  [ -x "$HEARTH_BIN" ] || fail "no Hearth binary at $HEARTH_BIN (build it, or set HEARTH_BIN)"
  "$HEARTH_BIN" --ephemeral --http.port "$HEARTH_PORT" --timestamp "$GENESIS_TIME" >"$HEARTH_LOG" 2>&1 &
fi
HEARTH_PID=$!
HOME=$ANVIL_HOME "$ANVIL" "${ANVIL_ARGS[@]}" --port "$ANVIL_PORT" >"$ANVIL_LOG" 2>&1 &
ANVIL_PID=$!
HEARTH_URL=http://127.0.0.1:$HEARTH_PORT ANVIL_URL=http://127.0.0.1:$ANVIL_PORT
wait_rpc "$HEARTH_URL" "$HEARTH_PID" "$HEARTH_LOG"
wait_rpc "$ANVIL_URL" "$ANVIL_PID" "$ANVIL_LOG"
HOME=$ANVIL_HOME "$ANVIL" --version | head -1

python3 "$ROOT/scripts/ots-compare.py" "$HEARTH_URL" "$ANVIL_URL" "$CAST" "$@"
