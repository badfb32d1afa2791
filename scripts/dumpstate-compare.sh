#!/usr/bin/env bash
# State dumps between anvil 1.7.1 (npm @foundry-rs/anvil-linux-amd64, from /tmp/peers) and
# Hearth, both ways, on loopback (scripts/dumpstate-compare.py does the requests):
#   1. state built on anvil (transfers, a contract with storage, dev patches), anvil_dumpState,
#      anvil_loadState into Hearth: every account of the dump read on both and compared;
#   2. more state built on Hearth, Hearth's anvil_dumpState loaded into a fresh anvil: the same;
#   3. anvil --dump-state FILE (on SIGINT) -> hearth --load-state FILE: Hearth's reads against
#      the file;
#   4. hearth --dump-state FILE (on SIGTERM) -> anvil --load-state FILE: anvil's reads against
#      the file.
# Prints `dumpstate-compare: N equal, M different` and exits 1 on any difference.
#
#   bash scripts/dumpstate-compare.sh            # builds hearth (debug) if needed
#   HEARTH_BIN=target/release/hearth bash scripts/dumpstate-compare.sh
#   SABOTAGE=1 bash scripts/dumpstate-compare.sh # must exit 1: one loaded balance is altered
#   PORT_BASE=9140 (default): the nodes listen on PORT_BASE..PORT_BASE+5
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
SHARED=${SHARED_DIR:-$ROOT/../shared}
PEERS_DIR=${PEERS_DIR:-/tmp/peers}
ANVIL=$PEERS_DIR/foundry/node_modules/@foundry-rs/anvil-linux-amd64/bin/anvil
HEARTH_BIN=${HEARTH_BIN:-$ROOT/target/debug/hearth}
PORT_BASE=${PORT_BASE:-9140}
DRIVER="python3 $ROOT/scripts/dumpstate-compare.py"
# What every node is started with (anvil's flags, which Hearth takes as its own spellings).
ARGS=(--host 127.0.0.1 --hardfork prague --chain-id 31337 --timestamp 1700000000 --quiet)

if ! [ -x "$ANVIL" ]; then
  echo "== installing the peers (anvil) into $PEERS_DIR"
  SKIP_OHA=1 PEERS_DIR=$PEERS_DIR bash "$SHARED/peers/bench.sh" install
fi
if ! [ -x "$HEARTH_BIN" ]; then
  echo "== building hearth"
  ( cd "$ROOT" && cargo build --bin hearth )
fi

WORK=$(mktemp -d)
# PIDS, cleanup (stops every node started) and wait_up PORT.
. "$ROOT/scripts/node-lib.sh"
trap 'cleanup; wait 2>/dev/null || true; rm -rf "$WORK"' EXIT

# start NAME BIN PORT ARGS...: runs a node in the background, logging to $WORK/NAME.log.
start() {
  local name=$1 bin=$2 port=$3; shift 3
  "$bin" "${ARGS[@]}" --port "$port" "$@" >"$WORK/$name.log" 2>&1 &
  PIDS+=($!)
  eval "PID_$name=$!"
  wait_up "$port"
}

# stop NAME SIGNAL: signals the node and waits for it to exit (it writes its dump on the way).
stop() {
  local pid_var="PID_$1"
  local pid=${!pid_var}
  kill -"$2" "$pid"
  wait "$pid" || { echo "$1 exited with $?; its log:" >&2; cat "$WORK/$1.log" >&2; exit 1; }
}

url() { echo "http://127.0.0.1:$1/"; }

OUT="$WORK/steps.out"
: >"$OUT"
step() { # runs one driver step, keeping its output; a difference fails at the end
  echo "== $1"; shift
  $DRIVER "$@" | tee -a "$OUT" || true
}

A=$PORT_BASE; H=$((PORT_BASE + 1)); A2=$((PORT_BASE + 2))
start anvil "$ANVIL" "$A"
start hearth "$HEARTH_BIN" "$H"
start anvil2 "$ANVIL" "$A2"

$DRIVER build "$(url "$A")"
step "1. anvil_dumpState of anvil -> anvil_loadState into Hearth" rpc "$(url "$A")" "$(url "$H")"
$DRIVER build "$(url "$H")" 0x77
step "2. anvil_dumpState of Hearth -> anvil_loadState into a fresh anvil" rpc "$(url "$H")" "$(url "$A2")"

F1=$((PORT_BASE + 3)); F2=$((PORT_BASE + 4)); F3=$((PORT_BASE + 5))
start anvil_file "$ANVIL" "$F1" --dump-state "$WORK/anvil-state.json"
$DRIVER build "$(url "$F1")"
stop anvil_file INT
[ -f "$WORK/anvil-state.json" ] || { echo "anvil wrote no --dump-state file" >&2; exit 1; }
start hearth_load "$HEARTH_BIN" "$F2" --load-state "$WORK/anvil-state.json"
step "3. anvil --dump-state -> hearth --load-state" file "$WORK/anvil-state.json" "$(url "$F2")"

start hearth_file "$HEARTH_BIN" "$F3" --dump-state "$WORK/hearth-state.json"
$DRIVER build "$(url "$F3")" 0x55
stop hearth_file TERM
[ -f "$WORK/hearth-state.json" ] || { echo "hearth wrote no --dump-state file" >&2; exit 1; }
start anvil_load "$ANVIL" "$F1" --load-state "$WORK/hearth-state.json"
step "4. hearth --dump-state -> anvil --load-state" file "$WORK/hearth-state.json" "$(url "$F1")"

EQUAL=$(grep -Eo '[0-9]+ equal' "$OUT" | awk '{s += $1} END {print s + 0}')
DIFFERENT=$(grep -Eo '[0-9]+ different' "$OUT" | awk '{s += $1} END {print s + 0}')
STEPS=$(grep -Ec '^[^ ].*: [0-9]+ equal, [0-9]+ different$' "$OUT" || true)
echo "dumpstate-compare: $EQUAL equal, $DIFFERENT different ($STEPS of 4 comparisons ran)"
[ "$DIFFERENT" -eq 0 ] && [ "$STEPS" -eq 4 ]
