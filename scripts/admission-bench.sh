#!/usr/bin/env bash
# Admission by latency budget (issue 14, part 3), measured side by side in one run:
#   1. closed loop, 8, 16 and 64 connections of eth_call balanceOf and hashLoop(2000):
#      this build with its default flags ("new"), against an older build ($OLD, required: the
#      release binary) with --executor.max-in-flight 64 ("old-64") and with its defaults
#      ("old-default"). The acceptance: new refuses nothing (-32005: 0) and completes at least
#      what old-64 does; p99 in the table.
#   2. open loop: hashLoop(2000) at 3x the capacity new measured in part 1 (8 connections) for
#      $OVER_SECS s, at up to 512 connections so that the node, not the load generator, holds
#      the queue: every request answered, the admitted calls' p99 ("ok p99") against the budget
#      (100 ms) plus one service time (from /metrics), refusals' p99 and slowest.
#
#   cargo build --release --bin hearth --bin hearth-load && OLD=... bash scripts/admission-bench.sh
#
# Env: OLD (binary to compare), SECS (closed-loop run length, 8), OVER_SECS (30), PORT_BASE
# (8740; uses three ports from it). Every node listens on 127.0.0.1, runs in memory and is
# stopped by PID at the end; every run is bounded in time.
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
NEW=${NEW:-$HERE/target/release/hearth}
# The build before admission by latency (89f73cb), which still has --executor.max-in-flight:
#   git worktree add /tmp/hearth-89f73cb-src 89f73cb && (cd /tmp/hearth-89f73cb-src &&
#   cargo build --release --bin hearth) && OLD=/tmp/hearth-89f73cb-src/target/release/hearth
OLD=${OLD:?set OLD to a release build of 89f73cb (see above)}
LOAD=${LOAD:-$HERE/target/release/hearth-load}
SECS=${SECS:-8}
OVER_SECS=${OVER_SECS:-30}
PORT_BASE=${PORT_BASE:-8740}
. "$(dirname "${BASH_SOURCE[0]}")/node-lib.sh"
need_bins "$NEW" "$OLD" "$LOAD"

P_NEW=$PORT_BASE; P_OLD64=$((PORT_BASE + 1)); P_OLD=$((PORT_BASE + 2))
"$NEW" --ephemeral --http.port $P_NEW >/tmp/admission-new.log 2>&1 &
PIDS+=($!); NEW_PID=$!
"$OLD" --ephemeral --http.port $P_OLD64 --executor.max-in-flight 64 >/tmp/admission-old64.log 2>&1 &
PIDS+=($!)
"$OLD" --ephemeral --http.port $P_OLD >/tmp/admission-old.log 2>&1 &
PIDS+=($!)
for port in $P_NEW $P_OLD64 $P_OLD; do wait_up $port; done
N=new=http://127.0.0.1:$P_NEW/
O64=old-64=http://127.0.0.1:$P_OLD64/
O=old-default=http://127.0.0.1:$P_OLD/

echo "machine load before: $(uptime)"
echo "new: $NEW ($(cd "$HERE" && git rev-parse --short HEAD 2>/dev/null || echo '?')); old: $OLD"
echo
echo "## 1. closed loop"
for conns in 8 16 64; do
  echo "### $conns connections"
  "$LOAD" --target "$N" --target "$O64" --target "$O" --workload balanceOf,hashLoop \
    --concurrency "$conns" --duration "$SECS" | grep -E '^\|' | tee "/tmp/admission-closed-$conns.txt"
done

# ok calls/s of a row: the `ok` column over the run's length.
ok_rate() { # file workload target
  awk -F'|' -v w="$2" -v t="$3" -v s="$SECS" \
    '$2 ~ "^ "w" $" && $3 ~ "^ "t" $" { printf "%d", $9 / s }' "$1"
}
echo
echo "### summary: successful calls/s and -32005 count (new vs old-64)"
echo "| workload | conns | new ok/s | old-64 ok/s | new/old-64 | new p99 ms | old-64 p99 ms | new errors |"
echo "|---|---:|---:|---:|---:|---:|---:|---|"
for conns in 8 16 64; do
  f=/tmp/admission-closed-$conns.txt
  for w in balanceOf hashLoop; do
    new=$(ok_rate "$f" $w new); old=$(ok_rate "$f" $w old-64)
    p99n=$(awk -F'|' -v w=$w '$2 ~ "^ "w" $" && $3 ~ "^ new $" {gsub(/ /,"",$7); print $7}' "$f")
    p99o=$(awk -F'|' -v w=$w '$2 ~ "^ "w" $" && $3 ~ "^ old-64 $" {gsub(/ /,"",$7); print $7}' "$f")
    errs=$(awk -F'|' -v w=$w '$2 ~ "^ "w" $" && $3 ~ "^ new $" {gsub(/^ +| +$/,"",$14); print $14}' "$f")
    ratio=$(awk -v a="$new" -v b="$old" 'BEGIN { if (b > 0) printf "%.2fx", a / b; else print "-" }')
    echo "| $w | $conns | $new | $old | $ratio | $p99n | $p99o | ${errs:--} |"
  done
done

CAP=$(ok_rate /tmp/admission-closed-8.txt hashLoop new)
# The queue-delay histogram's buckets (cumulative counts by upper bound) from /metrics.
buckets() { curl -s "http://127.0.0.1:$P_NEW/metrics" | awk -F'[{}" ]+' '/^hearth_executor_queue_delay_seconds_bucket/ { print $3, $4 }'; }
buckets >/tmp/admission-delays-before.txt
echo
echo "## 2. open loop: hashLoop(2000) at 3x new's capacity ($CAP calls/s) for $OVER_SECS s"
"$LOAD" --target "$N" --workload hashLoop --rate $((CAP * 3)) --concurrency 512 \
  --duration "$OVER_SECS" --warmup 0 --pid "$NEW_PID" | grep -E '^\||RSS'
buckets >/tmp/admission-delays-after.txt
metrics=$(curl -s "http://127.0.0.1:$P_NEW/metrics")
service=$(echo "$metrics" | awk '/^hearth_executor_service_time_seconds/ { s += $2; n++ } END { if (n) printf "%.3f", s / n * 1000 }')
echo "service time per call at the end (mean over threads): $service ms; budget 100 ms"
# p50/p99 of the wait in the executor queue during the overload alone (bucket upper bounds):
# what admission promises, apart from the HTTP front's and the load generator's own delays.
paste /tmp/admission-delays-before.txt /tmp/admission-delays-after.txt | awk '
  { le[NR] = $1; n[NR] = $4 - $2 } END {
    total = n[NR]; p50 = ""; p99 = "";
    for (i = 1; i <= NR; i++) {
      if (p50 == "" && n[i] >= 0.50 * total) p50 = le[i];
      if (p99 == "" && n[i] >= 0.99 * total) p99 = le[i];
    }
    printf "executor queue wait during the overload: %d requests admitted, p50 <= %s s, p99 <= %s s\n", total, p50, p99 }'
echo "$metrics" | grep -E '^hearth_executor_(refusals|queue_delay_seconds_(count|sum))|^hearth_rpc_rejections_total\{path="executor_busy"' || true
echo "machine load after: $(uptime)"
