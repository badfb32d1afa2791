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

# Up to 30 s (TRIES of PAUSE seconds: 300 of 0.1 unless given) for eth_chainId to answer on
# 127.0.0.1:PORT; exits the script otherwise.
wait_up() { # port [tries] [pause]
  for _ in $(seq 1 "${2:-300}"); do
    curl -s -m 2 -H 'content-type: application/json' \
      --data '{"jsonrpc":"2.0","id":1,"method":"eth_chainId","params":[]}' \
      "http://127.0.0.1:$1/" >/dev/null 2>&1 && return 0
    sleep "${3:-0.1}"
  done
  echo "nothing answers on port $1" >&2; exit 1
}

# Starts `CMD... --dev --ephemeral --http.port PORT` under valgrind's callgrind, its output in
# DIR, and waits (up to 120 s: valgrind is slow to start) for it to answer; sets NODE_PID.
callgrind_node() { # dir port cmd...
  local dir=$1 port=$2; shift 2
  # --fair-sched: sled spins on a lazy static while another thread starts it; valgrind runs one
  # thread at a time, and without a fair lock the spinner can keep the CPU for minutes.
  valgrind --tool=callgrind --fair-sched=yes --callgrind-out-file="$dir/cg.%p" \
    "$@" --dev --ephemeral --http.port "$port" >"$dir/node.log" 2>&1 &
  NODE_PID=$!; PIDS+=("$NODE_PID")
  wait_up "$port" 600 0.2
}

# Dumps NODE_PID's counters since the last zeroing and stops it; sets CALLGRIND_DUMP (the
# newest cg.*.* file in DIR) and CALLGRIND_TOTAL (its instructions).
callgrind_total() { # dir
  callgrind_control -d "$NODE_PID" >/dev/null
  kill "$NODE_PID"; wait "$NODE_PID" 2>/dev/null || true
  CALLGRIND_DUMP=$(ls -t "$1"/cg.*.* 2>/dev/null | head -1)
  CALLGRIND_TOTAL=$(callgrind_annotate "$CALLGRIND_DUMP" 2>/dev/null |
    awk '/PROGRAM TOTALS/ { gsub(/,/, "", $1); print $1; exit }')
}
