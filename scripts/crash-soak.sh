#!/usr/bin/env bash
# Crash safety under load (issue 15): N cycles of mixed load on ONE datadir, each ended by
# `kill -9` at a random moment, then a restart and a check of everything acknowledged before:
# receipts, block hashes, and balances, nonces and code against the receipts. The load, the
# kills and the checks are scripts/crash-soak.mjs (ethers v6 signs the raw transactions).
#
#   bash scripts/crash-soak.sh N            # N kill -9 cycles (1..1000); CI runs 3
#   SEED=123 bash scripts/crash-soak.sh 50  # the same schedule (modes, kill delays, values) again
#   HEARTH_BIN=path/to/hearth bash scripts/crash-soak.sh 5   # default target/release/hearth
#   SOAK_SABOTAGE=revert bash scripts/crash-soak.sh 1   # must fail: the chain is rolled back
#                                                        # (evm_revert) just before the kill; with
#                                                        # =balance, a balance is set instead
#
# Odd cycles automine, even cycles interval mining (--block-time 0.2). Progress on stderr, one
# line per cycle; the last line on stdout is `N cycles, A acknowledged, L lost, C changed blocks`.
# Exit 1 if anything acknowledged was lost, a block changed, or the state disagrees with the
# receipts; 2 on bad usage. Loopback only; the datadir lives under a mktemp directory removed at
# the end (KEEP_SOAK_DIR=1 keeps it, with the node's logs, for a post-mortem).
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
N=${1:-}
if ! [[ "$N" =~ ^[0-9]{1,4}$ ]] || (( 10#$N < 1 || 10#$N > 1000 )); then
  echo "usage: bash scripts/crash-soak.sh N   (N kill -9 cycles, 1 to 1000)" >&2
  exit 2
fi
N=$((10#$N))
SEED=${SEED:-$(( (RANDOM << 16 | RANDOM) & 0xffffffff ))}
if ! [[ "$SEED" =~ ^[0-9]{1,10}$ ]] || (( SEED > 4294967295 )); then
  echo "SEED must be an integer from 0 to 4294967295, got $SEED" >&2
  exit 2
fi
export SEED
export SHARED_DIR=${SHARED_DIR:-$ROOT/../shared}
export JS_DIR=${JS_DIR:-/tmp/hearth-js}
export HEARTH_BIN=${HEARTH_BIN:-$ROOT/target/release/hearth}
ETHERS_VERSION=6.17.0 # as scripts/js-e2e.sh, which shares $JS_DIR
NODE=${NODE:-node}

[ -f "$SHARED_DIR/peers/build/BenchToken.json" ] ||
  { echo "BenchToken.json not found under $SHARED_DIR/peers/build (set SHARED_DIR)" >&2; exit 2; }
if ! [ -f "$JS_DIR/node_modules/ethers/package.json" ]; then
  echo "== installing ethers $ETHERS_VERSION from npm into $JS_DIR" >&2
  mkdir -p "$JS_DIR"
  ( cd "$JS_DIR" && { [ -f package.json ] || npm init -y >/dev/null; } &&
    npm install --no-audit --no-fund --loglevel=error "ethers@$ETHERS_VERSION" ) >&2
fi
if ! [ -x "$HEARTH_BIN" ]; then
  echo "== building hearth (release)" >&2
  ( cd "$ROOT" && cargo build --release --bin hearth ) >&2
fi

export SOAK_DIR
SOAK_DIR=$(mktemp -d /tmp/hearth-soak.XXXXXX)
cleanup() {
  # The driver records each node it starts; one still running (the driver died) is stopped
  # here, and only if that pid is still our hearth binary.
  local pid
  pid=$(cat "$SOAK_DIR/hearth.pid" 2>/dev/null || true)
  if [ -n "$pid" ] && [ "$(readlink "/proc/$pid/exe" 2>/dev/null)" = "$(readlink -f "$HEARTH_BIN")" ]; then
    kill -9 "$pid" 2>/dev/null || true
  fi
  if [ "${KEEP_SOAK_DIR:-0}" = 1 ]; then
    echo "kept $SOAK_DIR" >&2
  else
    rm -rf "$SOAK_DIR"
  fi
}
trap cleanup EXIT
# Bounded: a cycle takes a few seconds; the checks grow with the chain.
timeout $((120 + 60 * N)) "$NODE" "$ROOT/scripts/crash-soak.mjs" "$N"
