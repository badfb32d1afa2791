#!/usr/bin/env bash
# Two hearth builds side by side on read throughput (issue 14's "balanceOf at 8 connections ≥
# before in the same run"): both nodes start on fresh in-memory chains, then ROUNDS rounds of
# hearth-load closed loop at CONC connections, each round running every workload against both
# builds, the order swapped every round (A B, B A, ...) so machine noise favours neither. Prints
# hearth-load's rows and, per round and workload, B's ok calls/s over A's.
#
#   cp target/release/hearth /tmp/hearth-a   # build A, then check out and build B
#   cargo build --release --bin hearth --bin hearth-load
#   bash scripts/read-ab.sh /tmp/hearth-a target/release/hearth [ROUNDS=4]
#   WORKLOADS=balanceOf,getBalance CONC=8 SECS=10 PORT_A=9301 PORT_B=9302 (defaults)
#   WRITES=patches: meanwhile each node's state owner applies a large dev patch every 250 ms
#     (scripts/patch-writer.py; PATCH_ACCOUNTS=200 accounts of 4 slots: thousands of keys each),
#     so the reads run against a busy writer (issue 14: sled's global lock under batch applies).
#
# Nodes listen on 127.0.0.1 only and are stopped by PID at the end; every run is bounded.
set -euo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
A=${1:?first hearth binary}; B=${2:?second hearth binary}; ROUNDS=${3:-4}
LOAD=${LOAD:-$HERE/target/release/hearth-load}
WORKLOADS=${WORKLOADS:-balanceOf,getBalance}; CONC=${CONC:-8}; SECS=${SECS:-10}
PORT_A=${PORT_A:-9301}; PORT_B=${PORT_B:-9302}
[ -x "$LOAD" ] || { echo "build first: cargo build --release --bin hearth-load" >&2; exit 2; }

. "$(dirname "${BASH_SOURCE[0]}")/node-lib.sh"
"$A" --dev --ephemeral --http.port "$PORT_A" >/tmp/read-ab-a.log 2>&1 & PIDS+=($!)
"$B" --dev --ephemeral --http.port "$PORT_B" >/tmp/read-ab-b.log 2>&1 & PIDS+=($!)
wait_up "$PORT_A"; wait_up "$PORT_B"
WRITES=${WRITES:-}
if [ "$WRITES" = patches ]; then
  for port in "$PORT_A" "$PORT_B"; do
    python3 "$HERE/scripts/patch-writer.py" "http://127.0.0.1:$port/" "${PATCH_ACCOUNTS:-200}" 4 "${PATCH_PERIOD:-0.25}" \
      >"/tmp/read-ab-writer-$port.log" 2>&1 & PIDS+=($!)
  done
  sleep 2 # the writers' first loads
elif [ -n "$WRITES" ]; then
  echo "WRITES is patches or unset" >&2; exit 2
fi
TA="A=http://127.0.0.1:$PORT_A/"; TB="B=http://127.0.0.1:$PORT_B/"

echo "A = $A, B = $B; $WORKLOADS, closed loop, $CONC connections, $SECS s per run${WRITES:+, writes: $WRITES}; load: $(uptime)"
OUT=$(mktemp /tmp/read-ab.XXXX)
for round in $(seq 1 "$ROUNDS"); do
  if [ $((round % 2)) = 1 ]; then order=("--target" "$TA" "--target" "$TB"); else order=("--target" "$TB" "--target" "$TA"); fi
  "$LOAD" "${order[@]}" --workload "$WORKLOADS" --concurrency "$CONC" --duration "$SECS" 2>/dev/null \
    | grep -E '^\| [A-Za-z]+ \| [AB] \|' | sed "s/^/round $round /" | tee -a "$OUT"
done
echo
echo "| round | workload | A ok/s | B ok/s | B/A |"
echo "|---|---|---:|---:|---:|"
# ok/s: hearth-load's `ok` column over the run's length.
awk -F'|' -v s="$SECS" '{
  split($1, r, " "); w = $2; t = $3; gsub(/ /, "", w); gsub(/ /, "", t);
  ok[r[2] " " w " " t] = $9 / s; key[r[2] " " w] = 1
} END {
  for (k in key) { split(k, p, " "); a = ok[k " A"]; b = ok[k " B"];
    printf "| %s | %s | %.0f | %.0f | %.3f |\n", p[1], p[2], a, b, (a > 0 ? b / a : 0) }
}' "$OUT" | sort -t'|' -k3,3 -k2,2n
rm -f "$OUT"
if [ -n "$WRITES" ]; then
  for port in "$PORT_A" "$PORT_B"; do echo "writer on $port: $(tail -1 "/tmp/read-ab-writer-$port.log")"; done
fi
echo "load after: $(uptime)"
