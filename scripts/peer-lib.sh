# Sourced by the scripts that compare Hearth with anvil: free loopback ports, waiting for a
# node's JSON-RPC, and anvil and cast from npm. Defines no trap (each script stops its own
# nodes).
#   . "$(dirname "${BASH_SOURCE[0]}")/peer-lib.sh"

fail() { printf 'FAIL: %s\n' "$*" >&2; exit 1; }

# A free TCP port on 127.0.0.1.
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

# Up to 15 s for URL to answer eth_chainId; fails (printing LOG) when PID exits first or time
# runs out.
wait_rpc() { # url pid log
  local url=$1 pid=$2 log=$3
  for _ in $(seq 1 300); do
    curl -s -m 1 -H 'Content-Type: application/json' \
      -d '{"jsonrpc":"2.0","id":1,"method":"eth_chainId","params":[]}' "$url" 2>/dev/null |
      grep -q result && return 0
    kill -0 "$pid" 2>/dev/null || { cat "$log"; fail "$url: the node exited on start"; }
    sleep 0.05
  done
  cat "$log"; fail "$url did not answer"
}

# Sets ANVIL and CAST to foundry 1.7.1's binaries from npm: FOUNDRY_DIR's (default
# /tmp/peers/foundry, as ../shared/peers/bench.sh installs them), else installed into
# /tmp/hearth-foundry.
FOUNDRY_VERSION=1.7.1
ensure_foundry() {
  FOUNDRY_DIR=${FOUNDRY_DIR:-/tmp/peers/foundry}
  if ! [ -x "$FOUNDRY_DIR/node_modules/@foundry-rs/anvil-linux-amd64/bin/anvil" ]; then
    FOUNDRY_DIR=/tmp/hearth-foundry
  fi
  ANVIL=$FOUNDRY_DIR/node_modules/@foundry-rs/anvil-linux-amd64/bin/anvil
  CAST=$FOUNDRY_DIR/node_modules/@foundry-rs/cast-linux-amd64/bin/cast
  if ! [ -x "$ANVIL" ] || ! [ -x "$CAST" ]; then
    echo "installing anvil and cast $FOUNDRY_VERSION from npm into $FOUNDRY_DIR"
    mkdir -p "$FOUNDRY_DIR"
    ( cd "$FOUNDRY_DIR" && { [ -f package.json ] || npm init -y >/dev/null; } &&
      npm install --no-audit --no-fund --loglevel=error \
        "@foundry-rs/anvil-linux-amd64@$FOUNDRY_VERSION" "@foundry-rs/cast-linux-amd64@$FOUNDRY_VERSION" )
  fi
}
