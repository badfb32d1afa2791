#!/usr/bin/env bash
# eth_call under load, Hearth beside anvil in one run (issue 4's acceptance), with hearth-load:
#   1. capacity: closed loop at 8 connections, balanceOf and hashLoop(2000), Hearth with its
#      default admission (a 100 ms queue-delay budget, which refuses no closed-loop client below
#      capacity) and anvil;
#   2. fixed-rate degradation: hashLoop(2000) open loop at 15% and 80% of each node's capacity;
#   3. a call that burns the whole gas cap: time to fail and peak RSS;
#   4. overload: hashLoop(2000) at 3x Hearth's capacity for 30 s, then 15% for 2 s (recovery),
#      and the rejection counters from /metrics.
#
#   cargo build --release --bin hearth --bin hearth-load && bash scripts/call-load.sh
#
# anvil comes from ../shared/peers/bench.sh install ($PEERS_DIR, default /tmp/peers). Every
# node listens on 127.0.0.1 and is stopped by PID at the end; every run is bounded in time.
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
PEERS_DIR=${PEERS_DIR:-/tmp/peers}
ANVIL=$PEERS_DIR/foundry/node_modules/@foundry-rs/anvil-linux-amd64/bin/anvil
HEARTH=$HERE/target/release/hearth
LOAD=$HERE/target/release/hearth-load
SECS=${SECS:-10}
[ -x "$HEARTH" ] && [ -x "$LOAD" ] || {
  echo "build first: cargo build --release --bin hearth --bin hearth-load" >&2; exit 2; }
[ -x "$ANVIL" ] || { echo "install the peers first: bash ../shared/peers/bench.sh install" >&2; exit 2; }

. "$(dirname "${BASH_SOURCE[0]}")/node-lib.sh"

"$HEARTH" --dev --ephemeral --http.port 8621 >/tmp/call-load-hearth.log 2>&1 &
PIDS+=($!); HEARTH_PID=$!
mkdir -p "$PEERS_DIR/anvil-home"
HOME=$PEERS_DIR/anvil-home "$ANVIL" --host 127.0.0.1 --port 8623 >/tmp/call-load-anvil.log 2>&1 &
PIDS+=($!); ANVIL_PID=$!
for port in 8621 8623; do wait_up $port; done
H=hearth=http://127.0.0.1:8621/
A=anvil=http://127.0.0.1:8623/

echo "## 1. capacity, closed loop, 8 connections"
"$LOAD" --target "$H" --target "$A" --workload balanceOf,hashLoop \
  --concurrency 8 --duration "$SECS" | tee /tmp/call-load-capacity.txt
# ok calls/s of a row: the `ok` column over the run's length.
ok_rate() { # workload target
  awk -F'|' -v w="$1" -v t="$2" -v s="$SECS" \
    '$2 ~ "^ "w" $" && $3 ~ "^ "t" $" { printf "%d", $9 / s }' /tmp/call-load-capacity.txt
}
# Capacity is what the executors complete with nothing shed: at 8 closed-loop connections the
# default admission refuses nothing.
CAP_H=$(ok_rate hashLoop hearth)
CAP_A=$(ok_rate hashLoop anvil)
echo "hashLoop capacity: hearth $CAP_H calls/s, anvil $CAP_A calls/s"

echo
echo "## 2. fixed-rate degradation, hashLoop(2000), open loop"
for target in hearth anvil; do
  if [ $target = hearth ]; then url=$H; cap=$CAP_H; else url=$A; cap=$CAP_A; fi
  for pct in 15 80; do
    rate=$((cap * pct / 100))
    echo "### $target at $pct% of capacity ($rate calls/s)"
    "$LOAD" --target "$url" --workload hashLoop --rate "$rate" --concurrency 64 \
      --duration "$SECS" | grep -E '^\| hashLoop'
  done
done

echo
echo "## 3. a call that burns the whole gas cap (hashLoop(10^9)), one at a time"
"$LOAD" --target "$H" --workload gasCap --concurrency 1 --duration 5 --warmup 0 --pid "$HEARTH_PID" | grep -E 'RSS|gasCap \|'
"$LOAD" --target "$A" --workload gasCap --concurrency 1 --duration 5 --warmup 0 --pid "$ANVIL_PID" | grep -E 'RSS|gasCap \|'

echo
echo "## 4. overload: hashLoop(2000) at 3x Hearth's capacity for 30 s, then 15% (recovery)"
"$LOAD" --target "$H" --workload hashLoop --rate $((CAP_H * 3)) --concurrency 64 --duration 30 \
  --warmup 0 --pid "$HEARTH_PID" | grep -E 'RSS|hashLoop \|'
"$LOAD" --target "$H" --workload hashLoop --rate $((CAP_H * 15 / 100)) --concurrency 64 \
  --duration 2 --warmup 0 | grep -E 'hashLoop \|'
echo "rejections counted by Hearth:"
curl -s http://127.0.0.1:8621/metrics | grep -E '^hearth_rpc_rejections|^hearth_executor' || true
