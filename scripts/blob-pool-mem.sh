#!/usr/bin/env bash
# Memory of a pool full of blob transactions, Hearth beside anvil in one run: each node starts
# without mining, gets N one-blob transactions (~128 KiB sidecar each) from
# scripts/blob-pool-mem.mjs, and its resident memory is read before and after (VmRSS, VmHWM).
# A third run gives Hearth a small --txpool.max-bytes and sends more than fits: the pool refuses
# the rest ("txpool is full") and its memory stays bounded.
#
#   bash scripts/blob-pool-mem.sh [N]      # N defaults to 500; ports 8722-8724; ANVIL_N=... sends anvil fewer
#   HEARTH_BIN=target/release/hearth bash scripts/blob-pool-mem.sh 1000
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
export JS_DIR=${JS_DIR:-/tmp/hearth-js}
N=${1:-500}
HEARTH_BIN=${HEARTH_BIN:-$ROOT/target/debug/hearth}
ANVIL=${ANVIL:-/tmp/peers/foundry/node_modules/@foundry-rs/anvil-linux-amd64/bin/anvil}
NODE=${NODE:-node}
PIDS=()
trap 'for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done' EXIT

rss() { awk '/VmRSS|VmHWM/ {printf "%s %d MiB  ", $1, $2 / 1024}' "/proc/$1/status"; }
wait_up() {
  for _ in $(seq 1 400); do
    curl -s -o /dev/null -H 'content-type: application/json' \
      -d '{"jsonrpc":"2.0","id":1,"method":"eth_chainId","params":[]}' "http://127.0.0.1:$1" && return 0
    sleep 0.05
  done
  echo "FAIL: nothing listening on $1" >&2; exit 1
}
run() { # name port count command...
  local name=$1 port=$2 count=$3; shift 3
  "$@" >/dev/null 2>&1 &
  local pid=$!; PIDS+=("$pid")
  wait_up "$port"
  echo "== $name ($*)"
  echo "   before: $(rss "$pid")"
  "$NODE" "$ROOT/scripts/blob-pool-mem.mjs" "http://127.0.0.1:$port" "$count"
  echo "   after:  $(rss "$pid")"
  kill "$pid"; wait "$pid" 2>/dev/null || true
}
echo "load: $(uptime)"
run hearth 8722 "$N" "$HEARTH_BIN" --ephemeral --no-mining --http.port 8722 --txpool.max-bytes 1GiB
run anvil 8723 "${ANVIL_N:-$N}" "$ANVIL" --no-mining --port 8723 --hardfork prague
run "hearth, 16 MiB pool" 8724 "$N" "$HEARTH_BIN" --ephemeral --no-mining --http.port 8724 --txpool.max-bytes 16MiB
