# Sourced by the load scripts: stop every node they start when they end, and wait for a node
# to answer on a loopback port.
#   . "$(dirname "${BASH_SOURCE[0]}")/node-lib.sh"; "$BIN" ... & PIDS+=($!); wait_up PORT
PIDS=()
cleanup() { for pid in "${PIDS[@]}"; do kill "$pid" 2>/dev/null || true; done; }
trap cleanup EXIT

# Exits the script unless every argument is an executable (the binaries it compares).
need_bins() { # binary...
  for bin in "$@"; do
    [ -x "$bin" ] || { echo "missing $bin: cargo build --release --bin hearth --bin hearth-load" >&2; exit 2; }
  done
}

# Up to 30 s for eth_chainId to answer on 127.0.0.1:PORT; exits the script otherwise.
wait_up() { # port
  for _ in $(seq 1 300); do
    curl -s -m 1 -H 'content-type: application/json' \
      --data '{"jsonrpc":"2.0","id":1,"method":"eth_chainId","params":[]}' \
      "http://127.0.0.1:$1/" >/dev/null 2>&1 && return 0
    sleep 0.1
  done
  echo "nothing answers on port $1" >&2; exit 1
}
