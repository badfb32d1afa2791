#!/usr/bin/env bash
# A script written for anvil, run unchanged against any node binary that takes anvil's command
# line: it starts the node with anvil flags, deploys a token with cast through the
# deterministic CREATE2 deployer (0x4e59b44847b379578588920ca78fbf26c0b4956c), deals tokens and
# sets an allowance, takes and reverts a snapshot, impersonates an account, rolls the chain
# back and checks each step's effect with cast.
#
#   bash scripts/anvil-dropin.sh /tmp/peers/foundry/node_modules/@foundry-rs/anvil-linux-amd64/bin/anvil
#   bash scripts/anvil-dropin.sh target/debug/hearth
#
# Prints each step and `drop-in: N steps passed with BIN`; exits 1 at the first failing step.
set -euo pipefail

BIN=${1:?usage: anvil-dropin.sh NODE_BINARY (anvil or hearth)}
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
SHARED=${SHARED_DIR:-$ROOT/../shared}
PEERS_DIR=${PEERS_DIR:-/tmp/peers}
CAST=$PEERS_DIR/foundry/node_modules/@foundry-rs/cast-linux-amd64/bin/cast
TOKENS=$ROOT/tests/contracts/DevTokens.json
DEPLOYER=0x4e59b44847b379578588920ca78fbf26c0b4956c
KEY0=0xac0974bec39a17e36ba4a6b4d238ff944bacb478cbed5efcae784d7bf4f2ff80
A0=0xf39Fd6e51aad88F6F4ce6aB8827279cffFb92266
A1=0x70997970C51812dc3A010C7d01b50e0d17dc79C8
A2=0x3C44CdDdB6a900fa2b585dd299e03d12FA4293BC
WHALE=0x000000000000000000000000000000000000beef

STEPS=0
step() { STEPS=$((STEPS + 1)); printf '== %s\n' "$*"; }
fail() { printf 'FAIL: %s\n' "$*" >&2; exit 1; }
expect() { # what actual wanted
  [ "$2" = "$3" ] || fail "$1: got '$2', want '$3'"
}

[ -x "$BIN" ] || fail "no executable at $BIN"
if ! [ -x "$CAST" ]; then
  echo "== installing the peers (cast) into $PEERS_DIR"
  SKIP_OHA=1 PEERS_DIR=$PEERS_DIR bash "$SHARED/peers/bench.sh" install
fi
PORT=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
export ETH_RPC_URL=http://127.0.0.1:$PORT

LOG=$(mktemp)
NODE_PID=
trap '[ -n "$NODE_PID" ] && kill "$NODE_PID" 2>/dev/null; rm -f "$LOG"' EXIT

step "start: $(basename "$BIN") -p $PORT --host 127.0.0.1 --hardfork prague -a 5 --balance 1000 --chain-id 31337 --timestamp 1700000000"
"$BIN" -p "$PORT" --host 127.0.0.1 --hardfork prague -a 5 --balance 1000 --chain-id 31337 \
  --timestamp 1700000000 >"$LOG" 2>&1 &
NODE_PID=$!
for _ in $(seq 1 200); do
  "$CAST" chain-id >/dev/null 2>&1 && break
  kill -0 "$NODE_PID" 2>/dev/null || { cat "$LOG"; fail "the node exited on start"; }
  sleep 0.05
done
expect "chain id" "$("$CAST" chain-id)" 31337
expect "accounts" "$("$CAST" rpc eth_accounts | jq length)" 5
expect "balance of account 0" "$("$CAST" balance "$A0" --ether)" 1000.000000000000000000
expect "genesis timestamp" "$("$CAST" block 0 --field timestamp)" 1700000000

step "the CREATE2 deployer is in the genesis"
[ "$("$CAST" code "$DEPLOYER")" != 0x ] || fail "no code at $DEPLOYER"

step "deploy DevToken through the CREATE2 deployer"
INIT=$(jq -r .DevToken.bytecode "$TOKENS")
SALT=0x$(printf '%064x' 31337)
TOKEN=$("$CAST" create2 --salt "$SALT" --init-code "$INIT")
"$CAST" send --private-key "$KEY0" "$DEPLOYER" "$SALT${INIT#0x}" --json | jq -e '.status == "0x1"' >/dev/null ||
  fail "deploy through $DEPLOYER"
[ "$("$CAST" code "$TOKEN" | wc -c)" -gt 100 ] || fail "no code at the CREATE2 address $TOKEN"
# The constructor mints to its msg.sender: the deployer contract.
expect "the CREATE2 deployer's token balance" \
  "$("$CAST" call "$TOKEN" 'balanceOf(address)(uint256)' "$DEPLOYER" | awk '{print $1}')" 1000000000000000000000000

step "deal tokens (anvil_dealERC20) and set an allowance (anvil_setERC20Allowance)"
"$CAST" rpc anvil_dealERC20 "$A2" "$TOKEN" 0x3635c9adc5dea00000 >/dev/null
expect "dealt balance" "$("$CAST" call "$TOKEN" 'balanceOf(address)(uint256)' "$A2" | awk '{print $1}')" \
  1000000000000000000000
"$CAST" rpc anvil_setERC20Allowance "$A2" "$A1" "$TOKEN" 0x2a >/dev/null
expect "allowance" "$("$CAST" call "$TOKEN" 'allowance(address,address)(uint256)' "$A2" "$A1")" 42
"$CAST" rpc anvil_dealERC20 "$A2" "$A0" 0x1 >/dev/null 2>&1 && fail "dealERC20 on an account without code succeeded"

step "snapshot, transfer, revert"
SNAPSHOT=$("$CAST" rpc evm_snapshot | tr -d '"')
HEAD=$("$CAST" block-number)
"$CAST" send --private-key "$KEY0" "$TOKEN" 'transfer(address,uint256)' "$A1" 500 >/dev/null 2>&1 &&
  fail "account 0 holds no tokens, yet its transfer succeeded"
"$CAST" send --unlocked --from "$A2" "$TOKEN" 'transfer(address,uint256)' "$A1" 500 >/dev/null
expect "balance after the transfer" "$("$CAST" call "$TOKEN" 'balanceOf(address)(uint256)' "$A1")" 500
expect "revert" "$("$CAST" rpc evm_revert "$SNAPSHOT")" true
expect "balance after the revert" "$("$CAST" call "$TOKEN" 'balanceOf(address)(uint256)' "$A1")" 0
expect "head after the revert" "$("$CAST" block-number)" "$HEAD"

step "impersonate an account that holds no key"
"$CAST" rpc anvil_setBalance "$WHALE" 0xde0b6b3a7640000 >/dev/null
"$CAST" rpc anvil_impersonateAccount "$WHALE" >/dev/null
"$CAST" send --unlocked --from "$WHALE" "$A1" --value 1000 --json | jq -e '.status == "0x1"' >/dev/null ||
  fail "impersonated send"
"$CAST" rpc anvil_stopImpersonatingAccount "$WHALE" >/dev/null

step "mine, move time, roll back"
"$CAST" rpc anvil_mine 0x3 >/dev/null
"$CAST" rpc evm_increaseTime 3600 >/dev/null
BEFORE=$("$CAST" block-number)
TX=$("$CAST" send --private-key "$KEY0" "$A1" --value 1 --json | jq -r .transactionHash)
expect "head after a transfer" "$("$CAST" block-number)" $((BEFORE + 1))
"$CAST" rpc anvil_rollback 1 >/dev/null
expect "head after the rollback" "$("$CAST" block-number)" "$BEFORE"
expect "receipt of the rolled-back transfer" "$("$CAST" rpc eth_getTransactionReceipt "$TX")" null
DEPTH=$(("$BEFORE" + 1))
"$CAST" rpc anvil_rollback "$DEPTH" >/dev/null 2>&1 && fail "a rollback deeper than the chain succeeded"
expect "head after the refused rollback" "$("$CAST" block-number)" "$BEFORE"

echo "drop-in: $STEPS steps passed with $BIN"
