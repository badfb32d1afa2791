#!/usr/bin/env bash
# End-to-end check with web3.py (scripts/web3py-e2e.py: sends, traces, eth.sign and
# eth.sign_typed_data recovered locally) against a fresh Hearth dev chain on
# loopback. web3.py comes from PyPI into a virtualenv in /tmp (PY_DIR).
#
#   bash scripts/py-e2e.sh            # builds hearth (debug) if needed
#   HEARTH_BIN=target/release/hearth bash scripts/py-e2e.sh
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
PY_DIR=${PY_DIR:-/tmp/hearth-py}
WEB3_VERSION=7.16.0
HEARTH_BIN=${HEARTH_BIN:-$ROOT/target/debug/hearth}

if ! "$PY_DIR/bin/python" -c "import web3" 2>/dev/null; then
  echo "== installing web3.py $WEB3_VERSION from PyPI into $PY_DIR"
  python3 -m venv "$PY_DIR"
  "$PY_DIR/bin/pip" install --quiet "web3==$WEB3_VERSION"
fi
if ! [ -x "$HEARTH_BIN" ]; then
  ( cd "$ROOT" && cargo build --bin hearth )
fi

LOG=$(mktemp)
"$HEARTH_BIN" --ephemeral --http.port 0 >"$LOG" 2>&1 &
NODE_PID=$!
trap 'kill $NODE_PID 2>/dev/null || true; rm -f "$LOG"' EXIT
for _ in $(seq 1 200); do
  grep -q 'listening on http://' "$LOG" && break
  kill -0 $NODE_PID 2>/dev/null || { cat "$LOG"; echo "FAIL: hearth exited on start" >&2; exit 1; }
  sleep 0.05
done
URL=$(grep -o 'listening on http://[0-9.:]*' "$LOG" | head -1 | sed 's/listening on //')
echo "== web3py-e2e.py against hearth at $URL"
timeout 120 "$PY_DIR/bin/python" "$ROOT/scripts/web3py-e2e.py" "$URL"
