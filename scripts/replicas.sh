#!/usr/bin/env bash
# Read replicas end to end (scripts/replicas.py): a leader (--datadir), two replicas
# (--follow, each on its own --datadir) and HAProxy in front, configured as deploy/haproxy.cfg with
# this run's ports. Phases: 1 correctness, 2 lag at ~1,000 tx/s, 3 faults (kill -9 a replica,
# SIGTERM the leader), 4 scale (full runs only), 5 dev methods through the balancer. One table
# and a PASS/FAIL line per phase; exits non-zero when any phase failed.
#
#   cargo build --release --bin hearth --bin hearth-load
#   bash scripts/replicas.sh [--quick] [--phases 1,2,3,4,5]
#   HEARTH=... LOAD=... (binaries; default target/release), KEEP=1 keeps the work dir (logs)
#
# Everything listens on 127.0.0.1 on free ports; the processes started are killed at exit (the
# Python script does it, and this trap kills any left from the pids it recorded).
set -euo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
HEARTH=${HEARTH:-$HERE/target/release/hearth}
LOAD=${LOAD:-$HERE/target/release/hearth-load}
for bin in "$HEARTH" "$LOAD"; do
  [ -x "$bin" ] || { echo "$bin is missing: build with cargo build --release --bin hearth --bin hearth-load" >&2; exit 2; }
done
command -v taskset >/dev/null || { echo "taskset (util-linux) is needed" >&2; exit 2; }
if ! command -v haproxy >/dev/null; then
  echo "installing haproxy (apt-get install -y haproxy)" >&2
  apt-get install -y haproxy >/dev/null 2>&1 || { apt-get update >/dev/null && apt-get install -y haproxy >/dev/null; }
fi

WORK=$(mktemp -d /tmp/replicas.XXXXXX)
PY=
cleanup() {
  local rc=$?
  set +e
  if [ -n "$PY" ] && kill "$PY" 2>/dev/null; then wait "$PY" 2>/dev/null; fi
  # Anything the script started and did not stop (it was killed, say): only our own processes.
  if [ -f "$WORK/pids" ]; then
    while read -r pid; do
      if grep -qaE 'hearth|haproxy' "/proc/$pid/cmdline" 2>/dev/null; then kill -9 "$pid" 2>/dev/null || true; fi
    done <"$WORK/pids"
  fi
  if [ "$rc" = 0 ] && [ -z "${KEEP:-}" ]; then rm -rf "$WORK"; else echo "logs: $WORK" >&2; fi
  exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT TERM HUP

python3 "$HERE/scripts/replicas.py" --hearth "$HEARTH" --load "$LOAD" --workdir "$WORK" "$@" &
PY=$!
wait "$PY"
