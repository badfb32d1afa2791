#!/usr/bin/env bash
# End-to-end check with a client nobody here wrote: foundry's `cast` (from npm, as
# ../shared/peers does) against a freshly started Hearth dev chain on loopback.
#
#   bash scripts/cast-e2e.sh            # builds hearth (debug) if needed, installs cast into /tmp
#   HEARTH_BIN=target/release/hearth bash scripts/cast-e2e.sh
#
# Flow: chain id, a balance, a raw signed transfer and its receipt, an unlocked transfer,
# deploying BenchToken, calling balanceOf, reading the Transfer logs with `cast logs`, and over
# WebSocket the chain id and Transfer logs streamed by `cast logs --subscribe` (eth_subscribe).
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
SHARED=${SHARED_DIR:-$ROOT/../shared}
CAST_DIR=${CAST_DIR:-/tmp/hearth-cast}
CAST_VERSION=1.7.1
CAST=$CAST_DIR/node_modules/@foundry-rs/cast-linux-amd64/bin/cast
HEARTH_BIN=${HEARTH_BIN:-$ROOT/target/debug/hearth}
ALICE=0xf39Fd6e51aad88F6F4ce6aB8827279cffFb92266
ALICE_KEY=0xac0974bec39a17e36ba4a6b4d238ff944bacb478cbed5efcae784d7bf4f2ff80
BOB=0x70997970C51812dc3A010C7d01b50e0d17dc79C8

step() { printf '\n== %s\n' "$*"; }
fail() { printf 'FAIL: %s\n' "$*" >&2; exit 1; }

if ! [ -x "$CAST" ]; then
  step "installing cast $CAST_VERSION from npm into $CAST_DIR"
  mkdir -p "$CAST_DIR"
  ( cd "$CAST_DIR" && { [ -f package.json ] || npm init -y >/dev/null; } &&
    npm install --no-audit --no-fund --loglevel=error "@foundry-rs/cast-linux-amd64@$CAST_VERSION" )
fi
"$CAST" --version | head -1

if ! [ -x "$HEARTH_BIN" ]; then
  step "building hearth"
  ( cd "$ROOT" && cargo build --bin hearth )
fi

LOG=$(mktemp)
"$HEARTH_BIN" --ephemeral --http.port 0 >"$LOG" 2>&1 &
NODE_PID=$!
trap 'kill $NODE_PID 2>/dev/null || true; rm -f "$LOG"' EXIT
for _ in $(seq 1 200); do
  grep -q 'listening on http://' "$LOG" && break
  kill -0 $NODE_PID 2>/dev/null || { cat "$LOG"; fail "hearth exited on start"; }
  sleep 0.05
done
URL=$(grep -o 'listening on http://[0-9.:]*' "$LOG" | head -1 | sed 's/listening on //')
[ -n "$URL" ] || { cat "$LOG"; fail "hearth did not report its address"; }
export ETH_RPC_URL=$URL
echo "hearth at $URL"

step "chain id"
[ "$("$CAST" chain-id)" = 31337 ] || fail "chain id"

step "balance of account 0"
BAL=$("$CAST" balance "$ALICE")
echo "$BAL"
[ "$BAL" = 10000000000000000000000 ] || fail "balance $BAL"

step "raw signed transfer (eth_sendRawTransaction) and its receipt"
TX=$("$CAST" send --private-key "$ALICE_KEY" "$BOB" --value 1ether --json | jq -r .transactionHash)
"$CAST" receipt "$TX" --json | jq -e '.status == "0x1"' >/dev/null || fail "receipt status"
[ "$("$CAST" balance "$BOB")" = 10001000000000000000000 ] || fail "bob's balance"

step "unlocked transfer (eth_sendTransaction)"
"$CAST" send --unlocked --from "$ALICE" "$BOB" --value 2 --json | jq -e '.status == "0x1"' >/dev/null || fail "unlocked send"

step "deploy BenchToken"
CODE=$(jq -r .bytecode "$SHARED/peers/build/BenchToken.json")
TOKEN=$("$CAST" send --unlocked --from "$ALICE" --create "$CODE" --json | jq -r .contractAddress)
echo "BenchToken at $TOKEN"
[ "$("$CAST" code "$TOKEN" | wc -c)" -gt 100 ] || fail "no code at $TOKEN"

step "balanceOf"
SUPPLY=$("$CAST" call "$TOKEN" "balanceOf(address)(uint256)" "$ALICE" | awk '{print $1}')
[ "$SUPPLY" = 1000000000000000000000000 ] || fail "balanceOf = $SUPPLY"
"$CAST" send --private-key "$ALICE_KEY" "$TOKEN" "transfer(address,uint256)" "$BOB" 5 >/dev/null
[ "$("$CAST" call "$TOKEN" "balanceOf(address)(uint256)" "$BOB")" = 5 ] || fail "token transfer"

step "reverts carry their reason"
OUT=$("$CAST" call "$TOKEN" "alwaysRevert()" 2>&1 || true)
echo "$OUT" | grep -q "BenchToken: always reverts" || fail "revert reason: $OUT"

step "Transfer logs"
LOGS=$("$CAST" logs --from-block 0 --address "$TOKEN" "Transfer(address,address,uint256)" --json)
[ "$(echo "$LOGS" | jq length)" = 2 ] || fail "expected 2 Transfer logs: $LOGS"
FILTERED=$("$CAST" logs --from-block 0 --address "$TOKEN" "Transfer(address indexed from,address indexed to,uint256)" "$ALICE" "$BOB" --json)
[ "$(echo "$FILTERED" | jq length)" = 1 ] || fail "topic filter: $FILTERED"

step "block and tx lookups"
"$CAST" block latest --json | jq -e '.transactions | length == 1' >/dev/null || fail "latest block"
"$CAST" tx "$TX" --json | jq -e ".hash == \"$TX\"" >/dev/null || fail "tx by hash"

step "over WebSocket: chain id, and Transfer logs streamed by eth_subscribe"
WS_URL=${URL/http:/ws:}
[ "$("$CAST" chain-id --rpc-url "$WS_URL")" = 31337 ] || fail "chain id over ws"
NEXT=$(( $("$CAST" block-number) + 1 ))
SUB_OUT=$(mktemp)
trap 'kill $NODE_PID 2>/dev/null || true; rm -f "$LOG" "$SUB_OUT"' EXIT
# cast prints each log as it arrives (text output); it is stopped once the log is there. (With
# --to-block, cast stops at the next head and can see that head before the log it came after.)
timeout 60 "$CAST" logs --rpc-url "$WS_URL" --subscribe --address "$TOKEN" \
  "Transfer(address,address,uint256)" >"$SUB_OUT" 2>&1 &
SUB_PID=$!
# Send only once the subscription exists (the node counts it on /metrics).
for _ in $(seq 1 200); do
  curl -s "$URL/metrics" | grep -q '^hearth_ws_subscriptions{kind="logs"} 1$' && break
  sleep 0.05
done
"$CAST" send --private-key "$ALICE_KEY" "$TOKEN" "transfer(address,uint256)" "$BOB" 7 >/dev/null
# Bounded wait (10 s) for the streamed log of block NEXT, with value 7.
for _ in $(seq 1 200); do
  grep -q "blockNumber: $NEXT\$" "$SUB_OUT" && break
  sleep 0.05
done
kill "$SUB_PID" 2>/dev/null || true
grep -q "blockNumber: $NEXT\$" "$SUB_OUT" && grep -Eq 'data: 0x0{63}7$' "$SUB_OUT" &&
  grep -q 'removed: false' "$SUB_OUT" || fail "subscribed logs: $(cat "$SUB_OUT")"

echo
echo "cast-e2e: 10 passed, 0 failed"
