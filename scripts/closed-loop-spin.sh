#!/usr/bin/env bash
# Closed loops on a busy machine (issue 31): hashLoop(2000) eth_calls from 8, 16 and 64
# closed-loop connections (each sends its next request when the answer arrives) while a CPU
# spin loop holds one of the two cores, as a laptop that is also compiling would, for each
# binary given, rounds alternated, default flags. The acceptance: 0 refused (-32005) at every
# connection count. Also prints each run's successful calls/s, p99, and the executor queue's
# wait (p50 and p99, from /metrics) that admission saw.
#
#   bash scripts/closed-loop-spin.sh HEARTH [HEARTH ...]
#
# Env: SECS (run length, 10), CONNS ("8 16 64"), ROUNDS (1), SPIN (1; 0 runs without the spin
# loop), LOAD (hearth-load, this tree's release build), PORT_BASE (9480). Nodes listen on
# 127.0.0.1, run in memory and are stopped at the end; every run is bounded in time.
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
[ $# -ge 1 ] || { echo "usage: closed-loop-spin.sh HEARTH [HEARTH ...]" >&2; exit 2; }
LOAD=${LOAD:-$HERE/target/release/hearth-load}
SECS=${SECS:-10}
CONNS=${CONNS:-8 16 64}
ROUNDS=${ROUNDS:-1}
SPIN=${SPIN:-1}
PORT_BASE=${PORT_BASE:-9480}
. "$(dirname "${BASH_SOURCE[0]}")/node-lib.sh"
need_bins "$@" "$LOAD"

PORTS=()
i=0
for bin in "$@"; do
  port=$((PORT_BASE + i))
  "$bin" --ephemeral --http.port "$port" >"/tmp/closed-loop-spin-$i.log" 2>&1 &
  PIDS+=($!)
  PORTS+=("$port")
  i=$((i + 1))
done
for port in "${PORTS[@]}"; do wait_up "$port"; done

# Cumulative queue-delay buckets (upper bound, count) from /metrics.
buckets() { curl -s "http://127.0.0.1:$1/metrics" | awk -F'[{}" ]+' '/^hearth_executor_queue_delay_seconds_bucket/ { print $3, $4 }'; }
# p50 and p99 upper bounds of the requests counted between two bucket dumps.
quantiles() {
  paste "$1" "$2" | awk '{ le[NR] = $1; n[NR] = $4 - $2 } END {
    total = n[NR]; p50 = ""; p99 = "";
    for (i = 1; i <= NR; i++) {
      if (p50 == "" && n[i] >= 0.50 * total) p50 = le[i];
      if (p99 == "" && n[i] >= 0.99 * total) p99 = le[i];
    }
    printf "%s %s", p50 * 1000, p99 * 1000 }'
}

echo "machine: $(nproc) CPUs; $(uptime | sed 's/.*load average: /load /'); spin loop: $SPIN; $SECS s a run"
echo "| round | binary | conns | ok/s | refused | p99 ms | queue p50 ms | queue p99 ms |"
echo "|---:|---|---:|---:|---:|---:|---:|---|"
TMP=$(mktemp -d /tmp/closed-loop-spin.XXXXXX)
# Warm each node up (code analysed, service time measured) without the spin loop.
for port in "${PORTS[@]}"; do
  "$LOAD" --target "w=http://127.0.0.1:$port/" --workload hashLoop --concurrency 2 --duration 2 >/dev/null
done
for round in $(seq 1 "$ROUNDS"); do
  for conns in $CONNS; do
    i=0
    for bin in "$@"; do
      port=${PORTS[$i]}
      buckets "$port" >"$TMP/before"
      spin_pid=
      if [ "$SPIN" = 1 ]; then
        timeout $((SECS + 5)) sh -c 'while :; do :; done' &
        spin_pid=$!
      fi
      "$LOAD" --target "b$i=http://127.0.0.1:$port/" --workload hashLoop --concurrency "$conns" \
        --duration "$SECS" --warmup 0 | grep -E '^\| hashLoop' >"$TMP/row" || true
      [ -n "$spin_pid" ] && kill "$spin_pid" 2>/dev/null; wait "$spin_pid" 2>/dev/null || true
      buckets "$port" >"$TMP/after"
      read -r q50 q99 <<<"$(quantiles "$TMP/before" "$TMP/after")"
      awk -F'|' -v r="$round" -v b="$(basename "$bin")#$i" -v c="$conns" -v s="$SECS" -v q50="$q50" -v q99="$q99" '{
        gsub(/ /, "", $7); errs = $14; gsub(/^ +| +$/, "", errs);
        refused = 0; if (match(errs, /-32005: *[0-9]+/)) { x = substr(errs, RSTART, RLENGTH); sub(/-32005: */, "", x); refused = x }
        printf "| %s | %s | %s | %d | %s | %s | %s | %s |\n", r, b, c, $9 / s, refused, $7, q50, q99 }' "$TMP/row"
      i=$((i + 1))
    done
  done
done
rm -rf "$TMP"
echo "load after: $(uptime | sed 's/.*load average: //')"
