#!/usr/bin/env bash
# eth_call under load against issue 38's bars, Hearth beside anvil in one run: hearth-load's
# closed loop at 8, 16 and 64 connections, balanceOf, hashLoop(2000) and eth_blockNumber (the
# HTTP floor), ROUNDS rounds with the two nodes' order swapped every round so machine noise
# favours neither. Prints every row, then per connection count the medians and the ratios the
# issue asks for: balanceOf Hearth/anvil (>= 2), hashLoop Hearth/anvil (>= 1.2), balanceOf over
# Hearth's own eth_blockNumber (>= 0.8 at 64), and the errors (0).
#
#   cargo build --release --bin hearth --bin hearth-load && bash scripts/call-vs-anvil.sh [ROUNDS=3]
#   CONCS="8 16 64" SECS=4 HEARTH=target/release/hearth (defaults)
#
# anvil comes from ../shared/peers/bench.sh install ($PEERS_DIR, default /tmp/peers). Both nodes
# listen on 127.0.0.1, are fresh for the run and stopped by PID at the end; every run is bounded.
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
PEERS_DIR=${PEERS_DIR:-/tmp/peers}
ANVIL=$PEERS_DIR/foundry/node_modules/@foundry-rs/anvil-linux-amd64/bin/anvil
HEARTH=${HEARTH:-$HERE/target/release/hearth}
LOAD=${LOAD:-$HERE/target/release/hearth-load}
ROUNDS=${1:-3}
CONCS=${CONCS:-8 16 64}
SECS=${SECS:-4}
case "$ROUNDS" in ''|*[!0-9]*|0) echo "ROUNDS is a positive number, not '$ROUNDS'" >&2; exit 2 ;; esac
case "$SECS" in ''|*[!0-9]*|0) echo "SECS is a positive whole number, not '$SECS'" >&2; exit 2 ;; esac
[ -x "$HEARTH" ] && [ -x "$LOAD" ] || {
  echo "build first: cargo build --release --bin hearth --bin hearth-load" >&2; exit 2; }
[ -x "$ANVIL" ] || { echo "install the peers first: bash ../shared/peers/bench.sh install" >&2; exit 2; }

. "$(dirname "${BASH_SOURCE[0]}")/node-lib.sh"   # PIDS, cleanup, wait_up
. "$(dirname "${BASH_SOURCE[0]}")/peer-lib.sh"   # free_port
PORT_H=$(free_port); PORT_A=$(free_port)
# anvil keeps state files under $HOME/.foundry: a throwaway home keeps them out of the real one.
ANVIL_HOME=$(mktemp -d)
OUT=$(mktemp)
trap 'cleanup; rm -rf "$ANVIL_HOME" "$OUT"' EXIT
"$HEARTH" --http.port "$PORT_H" >/dev/null 2>&1 & PIDS+=($!)
HOME=$ANVIL_HOME "$ANVIL" --host 127.0.0.1 --port "$PORT_A" >/dev/null 2>&1 & PIDS+=($!)
wait_up "$PORT_H"; wait_up "$PORT_A"

for conc in $CONCS; do
  for round in $(seq 1 "$ROUNDS"); do
    if [ $((round % 2)) = 1 ]; then
      targets=(--target "hearth=http://127.0.0.1:$PORT_H" --target "anvil=http://127.0.0.1:$PORT_A")
    else
      targets=(--target "anvil=http://127.0.0.1:$PORT_A" --target "hearth=http://127.0.0.1:$PORT_H")
    fi
    echo "== $conc connections, round $round" >&2
    timeout $((SECS * 30 + 60)) "$LOAD" "${targets[@]}" --workload balanceOf,hashLoop,blockNumber \
      --concurrency "$conc" --duration "$SECS" --warmup 1 2>/dev/null \
      | awk -v c="$conc" '/^\| (balanceOf|hashLoop|blockNumber) \| (hearth|anvil) \|/ { print c " " $0 }' \
      | tee -a "$OUT"
  done
done

python3 - "$OUT" "$SECS" <<'EOF'
import statistics, sys
# Answered calls per second (hearth-load's `ok` over the run), so a refused call never counts.
secs = float(sys.argv[2])
rows = {}
errors = {}
for line in open(sys.argv[1]):
    conc, rest = line.split(" ", 1)
    cells = [c.strip() for c in rest.strip().strip("|").split("|")]
    workload, target, rate = cells[0], cells[1], int(cells[7]) / secs
    err = cells[12]
    rows.setdefault((int(conc), workload, target), []).append(rate)
    if err not in ("-", "0", ""):
        errors[(int(conc), target)] = errors.get((int(conc), target), "") + err + " "
def med(c, w, t):
    v = rows.get((c, w, t))
    return statistics.median(v) if v else float("nan")
print()
print("| connections | balanceOf hearth | balanceOf anvil | hearth/anvil (>= 2) | hashLoop hearth | hashLoop anvil | hearth/anvil (>= 1.2) | blockNumber hearth | balanceOf/blockNumber (>= 0.8 at 64) | errors |")
print("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|")
for c in sorted({k[0] for k in rows}):
    b_h, b_a = med(c, "balanceOf", "hearth"), med(c, "balanceOf", "anvil")
    h_h, h_a = med(c, "hashLoop", "hearth"), med(c, "hashLoop", "anvil")
    n_h = med(c, "blockNumber", "hearth")
    spread = lambda w, t: "-".join(f"{x:.0f}" for x in (min(rows[(c, w, t)]), max(rows[(c, w, t)])))
    errs = errors.get((c, "hearth"), "") + errors.get((c, "anvil"), "")
    print(f"| {c} | {b_h:.0f} ({spread('balanceOf', 'hearth')}) | {b_a:.0f} ({spread('balanceOf', 'anvil')}) | "
          f"{b_h / b_a:.2f}x | {h_h:.0f} | {h_a:.0f} | {h_h / h_a:.2f}x | {n_h:.0f} | {b_h / n_h:.2f} | {errs.strip() or '0'} |")
EOF
