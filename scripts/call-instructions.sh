#!/usr/bin/env bash
# Instructions per eth_call, whole node (HTTP front, admission, executor, every thread), counted
# by valgrind's callgrind: unlike wall time or calls/s, the count does not move with whatever
# else shares the machine, so two builds compare on a busy one. perf's hardware counters are
# not available in this VM; callgrind counts instructions in software.
#
#   bash scripts/call-instructions.sh BIN [BIN ...]       # e.g. /tmp/hearth-old target/release/hearth
#   bash scripts/call-instructions.sh "BIN --disable-console-log" BIN   # one build, two flag sets
#   WORKLOAD=balanceOf CONC=8 SECS=20 PORT=9440 TOP=25 (defaults)
#
# Per binary: start the node under callgrind on a fresh in-memory dev chain, warm it (the load
# tool deploys BenchToken, the caches fill), zero the counters, run hearth-load closed loop for
# SECS (slowed ~50x by valgrind, so a few thousand calls), dump, and print total instructions
# (Ir) over the calls answered, plus the TOP functions by self cost per call.
# The node is stopped by PID at the end; everything listens on 127.0.0.1.
set -euo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
LOAD=${LOAD:-$HERE/target/release/hearth-load}
WORKLOAD=${WORKLOAD:-balanceOf}; CONC=${CONC:-8}; SECS=${SECS:-20}; PORT=${PORT:-9440}
TOP=${TOP:-25}
[ -x "$LOAD" ] || { echo "build first: cargo build --release --bin hearth-load" >&2; exit 2; }
. "$(dirname "${BASH_SOURCE[0]}")/node-lib.sh"
echo "load: $(uptime)"
for bin in "$@"; do
  # A binary and its flags, split on spaces.
  read -r -a cmd <<<"$bin"
  out=$(mktemp -d /tmp/call-instr.XXXX)
  callgrind_node "$out" "$PORT" "${cmd[@]}"
  # Warm-up: deploys the token, fills the caches and pools.
  "$LOAD" --target "w=http://127.0.0.1:$PORT/" --workload "$WORKLOAD" --concurrency "$CONC" \
    --duration 5 --warmup 1 >/dev/null 2>&1
  callgrind_control -z "$NODE_PID" >/dev/null
  rows=$("$LOAD" --target "m=http://127.0.0.1:$PORT/" --workload "$WORKLOAD" \
    --concurrency "$CONC" --duration "$SECS" --warmup 0 2>/dev/null | grep -E '^\| [A-Za-z0-9]+ \| m \|')
  callgrind_total "$out"
  dump=$CALLGRIND_DUMP total=$CALLGRIND_TOTAL
  calls=$(echo "$rows" | awk -F'|' '{ gsub(/ /, "", $9); print $9 + 0 }')
  echo
  echo "## $bin: $WORKLOAD, $CONC connections, $calls calls ok in the counted run"
  echo "$rows"
  awk -v t="$total" -v c="$calls" 'BEGIN { printf "instructions per call: %.0f (%s over %d)\n", t / c, t, c }'
  if [ "$TOP" -gt 0 ]; then
    # Self cost per call of the costliest functions (callgrind_annotate lists them by cost).
    callgrind_annotate --threshold=100 --auto=no "$dump" 2>/dev/null | grep -E '^ *[0-9,]+ ' |
      awk -v c="$calls" -v top="$TOP" 'NR > 1 && n < top { v = $1; gsub(/,/, "", v); $1 = ""; $2 = "";
        printf "%8.0f %s\n", v / c, substr($0, 1, 150); n++ }' || true
  fi
  echo "(files in $out)"
done
echo "load after: $(uptime)"
