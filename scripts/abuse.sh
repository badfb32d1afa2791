#!/usr/bin/env bash
# What a hostile client sends (issue 15), against a fresh node: overflowing durations and
# timestamps, huge block counts, a long mining run, a 100 MiB WebSocket frame, a subscriber
# that never reads, log queries over 300,000 and 700,000 logs, cross-origin simple requests and
# a foreign Host header. After each, the node must still mine and answer, and its peak RSS must
# stay under MAX_RSS_MIB (default 300). Prints one line per probe and a summary; exit 1 on any
# failure. Loopback only; every wait is bounded.
#
#   bash scripts/abuse.sh                                   # debug build (built if missing)
#   HEARTH_BIN=target/release/hearth bash scripts/abuse.sh
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
HEARTH_BIN=${HEARTH_BIN:-$ROOT/target/debug/hearth}
MAX_RSS_MIB=${MAX_RSS_MIB:-300}

if ! [ -x "$HEARTH_BIN" ]; then
  echo "== building hearth"
  ( cd "$ROOT" && cargo build --bin hearth )
fi

LOG=$(mktemp)
# The log count cap is raised so that the 25 MiB response cap is what stops the big queries.
"$HEARTH_BIN" --ephemeral --http.port 0 --rpc.max-logs 10000000 >"$LOG" 2>&1 &
NODE_PID=$!
trap 'kill $NODE_PID 2>/dev/null || true; rm -f "$LOG"' EXIT
for _ in $(seq 1 200); do
  grep -q 'listening on http://' "$LOG" && break
  kill -0 $NODE_PID 2>/dev/null || { cat "$LOG"; echo "hearth exited on start" >&2; exit 1; }
  sleep 0.05
done
URL=$(grep -o 'listening on http://[0-9.:]*' "$LOG" | head -1 | sed 's/listening on //')
[ -n "$URL" ] || { cat "$LOG"; echo "hearth did not report its address" >&2; exit 1; }
echo "== abuse against $URL (pid $NODE_PID, $HEARTH_BIN)"
status=0
timeout 900 python3 "$ROOT/scripts/abuse.py" "$URL" "$NODE_PID" "$MAX_RSS_MIB" || status=$?
kill -0 $NODE_PID 2>/dev/null || { tail -20 "$LOG"; echo "FAIL: the node died" >&2; exit 1; }
exit $status
