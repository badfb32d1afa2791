#!/usr/bin/env bash
# anvil_reset side by side: the same sequence against anvil and Hearth, answers printed in two
# columns (what a reset resets, what it keeps, how it fails). The upstream is an anvil.
#   scripts/reset-compare.sh [path/to/hearth]   (ports 9300-9310)
set -u
. "$(dirname "${BASH_SOURCE[0]}")/node-lib.sh"
HEARTH=${1:-target/debug/hearth}
ANVIL=${ANVIL:-/tmp/peers/foundry/node_modules/@foundry-rs/anvil-linux-amd64/bin/anvil}
UP=9301
"$ANVIL" -p $UP --silent --chain-id 777 >/dev/null 2>&1 & PIDS+=($!)
"$ANVIL" -p 9300 --silent >/dev/null 2>&1 & PIDS+=($!)
"$HEARTH" -p 9302 --fork-timeout 2s --no-fork-cache -q >/dev/null 2>&1 & PIDS+=($!)
wait_up $UP; wait_up 9300; wait_up 9302
raw() { curl -s -H 'content-type: application/json' \
  -d "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"$2\",\"params\":$3}" "http://127.0.0.1:$1/"; }
r() { raw "$@" | sed -e 's/"jsonrpc":"2.0","id":1,//' | cut -c1-70; }
both() { printf '%-58s | %-70s | %s\n' "$1 $2" "$(r 9300 "$1" "$2")" "$(r 9302 "$1" "$2")"; }
r $UP anvil_mine '["0x5"]' >/dev/null
A0=0xf39Fd6e51aad88F6F4ce6aB8827279cffFb92266
AA=0x00000000000000000000000000000000000000aa
printf '%-58s | %-70s | %s\n' "call" "anvil" "hearth"
both eth_sendTransaction "[{\"from\":\"$A0\",\"to\":\"$AA\",\"value\":\"0x1\"}]"
both anvil_impersonateAccount "[\"$AA\"]"
both evm_setAutomine '[false]'
both anvil_setBlockTimestampInterval '[100]'
both anvil_setCoinbase '["0x00000000000000000000000000000000000000cc"]'
both anvil_setNextBlockBaseFeePerGas '["0x1234"]'
both evm_increaseTime '[100000]'
both evm_snapshot '[]'
both eth_sendTransaction "[{\"from\":\"$A0\",\"to\":\"$AA\",\"value\":\"0x1\"}]"
both anvil_reset '[{}]'
both anvil_reset '[{"forking":{"blockNumber":3}}]'
both anvil_reset '["x"]'
both anvil_reset '[{"forking":{"jsonRpcUrl":"http://127.0.0.1:9310","blockNumber":1}}]'
both eth_blockNumber '[]'
both anvil_reset '[]'
both eth_blockNumber '[]'
both txpool_status '[]'
both evm_revert '["0x1"]'
both anvil_getAutomine '[]'
both anvil_setBalance "[\"$AA\",\"0xffffffffffffffffff\"]"
both eth_sendTransaction "[{\"from\":\"$AA\",\"to\":\"$A0\",\"value\":\"0x0\"}]"
both evm_mine '[]'
both eth_getBlockByNumber '["0x1",false]'
for f in miner baseFeePerGas; do
  printf '%-58s | %-70s | %s\n' "block 1 $f" \
    "$(raw 9300 eth_getBlockByNumber '["0x1",false]' | grep -o "\"$f\":\"[^\"]*\"")" \
    "$(raw 9302 eth_getBlockByNumber '["0x1",false]' | grep -o "\"$f\":\"[^\"]*\"")"
done
both anvil_reset "[{\"forking\":{\"jsonRpcUrl\":\"http://127.0.0.1:$UP\",\"blockNumber\":3}}]"
both eth_blockNumber '[]'
both eth_chainId '[]'
both anvil_reset '[{"forking":{"blockNumber":2}}]'
both eth_blockNumber '[]'
both anvil_reset '[{}]'
both eth_blockNumber '[]'
both anvil_reset "[{\"jsonRpcUrl\":\"http://127.0.0.1:$UP\",\"blockNumber\":\"0x2\"}]"
both eth_blockNumber '[]'
both anvil_reset '[]'
both eth_blockNumber '[]'
both eth_chainId '[]'
both hardhat_reset '[]'
