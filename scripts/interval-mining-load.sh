#!/usr/bin/env bash
# Issue 5: with interval mining every 10 ms and a concurrent eth_call load, RPC latency stays
# within 2x of its latency without mining. Two on-disk dev nodes on loopback, one mining an
# (empty) block every 10 ms, loaded one after the other by hearth-load at 4 connections.
#
#   cargo build --release --bin hearth --bin hearth-load && bash scripts/interval-mining-load.sh
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
[ -x target/release/hearth ] && [ -x target/release/hearth-load ] || {
  echo "build first: cargo build --release --bin hearth --bin hearth-load" >&2; exit 2; }
rpc() { # port method
  curl -s -m 1 -H 'content-type: application/json' \
    --data "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"$2\",\"params\":[]}" "http://127.0.0.1:$1/"
}
D1=$(mktemp -d /tmp/hearth-interval.XXXX); D2=$(mktemp -d /tmp/hearth-interval.XXXX)
P1=; P2=
trap 'kill $P1 $P2 2>/dev/null || true; rm -rf "$D1" "$D2"' EXIT
target/release/hearth --dev --datadir "$D1" --http.port 8651 >/dev/null 2>&1 & P1=$!
target/release/hearth --dev --datadir "$D2" --http.port 8652 --block-time 0.01 >/dev/null 2>&1 & P2=$!
for port in 8651 8652; do
  for _ in $(seq 50); do rpc $port eth_chainId >/dev/null && break; sleep 0.1; done
done
target/release/hearth-load --target no-mining=http://127.0.0.1:8651/ \
  --target mining-10ms=http://127.0.0.1:8652/ --workload balanceOf,hashLoop,getBalance \
  --concurrency 4 --duration 8 2>/dev/null | grep -E '^\|'
echo "blocks mined by the 10 ms node: $(rpc 8652 eth_blockNumber)"
