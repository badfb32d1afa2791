#!/usr/bin/env bash
# Two commits side by side on the one-sender (or N-sender) automine burst: builds each commit's
# release `hearth` in a worktree of this repository (one shared target dir, so the second build
# reuses the first's dependencies), keeps the two binaries, then runs scripts/txburst-ab.sh on
# them (fresh nodes, rounds alternated, the node's CPU per transaction beside the rate) and
# prints both medians. Bisecting a regression is running it on the two ends, then on the middle
# commit against each end.
#
#   bash scripts/txburst-bisect.sh GOOD BAD [ROUNDS=3] [SENDERS=1]     # commits, tags, branches
#   STORE=memory bash scripts/txburst-bisect.sh 9ce5f15 HEAD 5
#
# Each build takes 2-5 minutes on this machine (the first one longer); binaries are kept in
# $BISECT_DIR (default /tmp/hearth-bisect) by commit, so a commit is built once. The worktrees
# are removed on exit. Needs what txburst-ab.sh needs (Node 22 from ../shared/peers).
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$HERE/.." && pwd)
A=${1:?first commit}; B=${2:?second commit}
ROUNDS=${3:-3}; SENDERS=${4:-1}
BISECT_DIR=${BISECT_DIR:-/tmp/hearth-bisect}
mkdir -p "$BISECT_DIR/bin"
export CARGO_TARGET_DIR=$BISECT_DIR/target

WORKTREES=()
cleanup() {
  for tree in "${WORKTREES[@]+"${WORKTREES[@]}"}"; do
    git -C "$ROOT" worktree remove --force "$tree" 2>/dev/null || true
  done
}
trap cleanup EXIT

# Sets BIN to the release binary of commit $1, built unless kept from an earlier run (in this
# shell, not a subshell: the worktree list is what the exit trap removes).
build_commit() {
  local sha tree
  sha=$(git -C "$ROOT" rev-parse --short=10 "$1^{commit}")
  BIN=$BISECT_DIR/bin/hearth-$sha
  if ! [ -x "$BIN" ]; then
    tree=$BISECT_DIR/tree-$sha
    git -C "$ROOT" worktree add --detach --force "$tree" "$sha" >&2
    WORKTREES+=("$tree")
    echo "== building $1 ($sha)" >&2
    ( cd "$tree" && cargo build --release --locked --bin hearth >&2 )
    cp "$CARGO_TARGET_DIR/release/hearth" "$BIN"
  fi
}

build_commit "$A"; BIN_A=$BIN
build_commit "$B"; BIN_B=$BIN
OUT=$(mktemp)
bash "$HERE/txburst-ab.sh" "$BIN_A" "$BIN_B" "$ROUNDS" "$SENDERS" | tee "$OUT"
median() { sort -n | awk '{v[NR]=$1} END {print (NR % 2) ? v[(NR+1)/2] : (v[NR/2] + v[NR/2+1]) / 2}'; }
for side in A B; do
  rate=$(sed -n "s/^round [0-9]*  $side .* mined \([0-9.]*\) tx\/s.*/\1/p" "$OUT" | median)
  cpu=$(sed -n "s/^round [0-9]*  $side .* node CPU \([0-9]*\) us\/tx/\1/p" "$OUT" | median)
  commit=$A; [ "$side" = B ] && commit=$B
  echo "median $side $commit: $rate mined tx/s, node CPU $cpu us/tx"
done
rm -f "$OUT"
