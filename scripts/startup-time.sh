#!/usr/bin/env bash
# Time from starting `hearth --dev` to its first JSON-RPC answer, on a fresh datadir and again
# on the same (existing) datadir. Loopback only; the node is stopped by PID after each run.
#   cargo build --release --bin hearth && bash scripts/startup-time.sh [target/release/hearth]
set -euo pipefail
BIN=${1:-target/release/hearth}
PORT=${PORT:-8547}
DIR=$(mktemp -d)
trap 'rm -rf "$DIR"' EXIT
BODY='{"jsonrpc":"2.0","id":1,"method":"eth_chainId","params":[]}'
for run in "fresh datadir" "existing datadir"; do
  start=$(date +%s%N)
  "$BIN" --dev --datadir "$DIR/chain" --http.port "$PORT" >/dev/null 2>&1 &
  pid=$!
  for _ in $(seq 1 2000); do
    curl -s -m 1 -H 'content-type: application/json' -d "$BODY" "http://127.0.0.1:$PORT/" | grep -q result && break
    sleep 0.002
  done
  end=$(date +%s%N)
  echo "$run: first answer after $(( (end - start) / 1000000 )) ms"
  kill -TERM "$pid"; wait "$pid" || true
done
