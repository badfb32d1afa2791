#!/usr/bin/env bash
# Trace benchmark, Hearth against anvil in the same run (scripts/trace-bench.py says what is
# measured): a struct-log trace of BenchToken's hashLoop(20000) and a callTracer trace of a
# block of 1,000 BenchToken transfers, time and peak RSS of each node.
#
#   bash scripts/trace-bench.sh          # 3 runs of each; RUNS=5 for more
#
# Builds the release hearth. The machine is shared: the load average is printed before and
# after; compare runs made at a low load. Both nodes listen on loopback and stop on exit.
# Both get a 100M gas limit (1,000 transfers of up to 60,000 gas fit one block); Hearth's
# response cap is raised to 1 GiB for the ~220 MB struct-log answer (anvil has no cap).
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
SHARED=${SHARED_DIR:-$ROOT/../shared}
RUNS=${RUNS:-3}
FOUNDRY_DIR=${FOUNDRY_DIR:-/tmp/peers/foundry}
ANVIL=$FOUNDRY_DIR/node_modules/@foundry-rs/anvil-linux-amd64/bin/anvil
HEARTH_BIN=${HEARTH_BIN:-$ROOT/target/release/hearth}

. "$ROOT/scripts/peer-lib.sh"
[ -x "$ANVIL" ] || fail "anvil not found at $ANVIL (bash ../shared/peers/bench.sh install)"
( cd "$ROOT" && cargo build --release --bin hearth )

HEARTH_LOG=$(mktemp) ANVIL_LOG=$(mktemp)
HEARTH_PORT=$(free_port) ANVIL_PORT=$(free_port)
"$HEARTH_BIN" --ephemeral --http.port "$HEARTH_PORT" --gas-limit 100000000 \
  --rpc.max-response-size 1GiB >"$HEARTH_LOG" 2>&1 &
HEARTH_PID=$!
"$ANVIL" --host 127.0.0.1 --port "$ANVIL_PORT" --hardfork prague --gas-limit 100000000 \
  >"$ANVIL_LOG" 2>&1 &
ANVIL_PID=$!
trap 'kill $HEARTH_PID $ANVIL_PID 2>/dev/null || true; rm -f "$HEARTH_LOG" "$ANVIL_LOG"' EXIT
wait_rpc "http://127.0.0.1:$HEARTH_PORT" $HEARTH_PID "$HEARTH_LOG"
wait_rpc "http://127.0.0.1:$ANVIL_PORT" $ANVIL_PID "$ANVIL_LOG"

echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg); $(nproc) cores; $("$ANVIL" --version | head -1)"
python3 "$ROOT/scripts/trace-bench.py" "$RUNS" "$SHARED/peers/build/BenchToken.json" \
  "hearth=http://127.0.0.1:$HEARTH_PORT=$HEARTH_PID" "anvil=http://127.0.0.1:$ANVIL_PORT=$ANVIL_PID"
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
