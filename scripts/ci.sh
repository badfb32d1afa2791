#!/usr/bin/env bash
# The checks a tool can make (CONVENTIONS.md section 9), in order; stops at the first failure.
#   bash scripts/ci.sh          # what .ci/run calls before the cast end-to-end check
set -euo pipefail
cd "$(dirname "$0")/.."

echo "== module graph: no import cycle over 2 modules, rpc's core a leaf, rpc's layers in order"
python3 ../shared/tools/module_graph.py . --rule --max-cycle 2
python3 scripts/module-rules.py
# ... and the checks can fail: one import against the rule (core naming eth, eth naming anvil)
# must make each exit 1.
sabotage=$(mktemp -d)
trap 'rm -rf "$sabotage"' EXIT
cp -r rpc "$sabotage/"
echo 'use crate::eth::state::block_arg;' >>"$sabotage/rpc/src/core/context.rs"
if python3 ../shared/tools/module_graph.py "$sabotage" --rule --crates rpc >/dev/null; then
  echo "module_graph.py missed core naming eth" >&2; exit 1
fi
cp rpc/src/core/context.rs "$sabotage/rpc/src/core/context.rs"
echo 'use crate::anvil::dev::revalidate;' >>"$sabotage/rpc/src/eth/state.rs"
if python3 scripts/module-rules.py "$sabotage" --graph-tool ../shared/tools/module_graph.py >/dev/null; then
  echo "module-rules.py missed eth naming anvil" >&2; exit 1
fi
echo "== function size: none over 70 lines without a // long: reason (scripts/fn-size.py)"
python3 scripts/fn-size.py
echo "== cargo fmt --all --check"
cargo fmt --all --check
echo "== cargo clippy --workspace --all-targets -- -D warnings"
cargo clippy --workspace --all-targets --locked -- -D warnings
echo "== cargo test --workspace (the README's test command)"
cargo test --workspace --locked
echo "== every EF blockchain test with every block through the parallel path (about 3 s)"
cargo run --locked --quiet -- blocktest ../shared/conformance/blockchain --exec.parallel always --exec.threads 2
echo "== the EF blockchain tests through the Engine API (hearth enginetest)"
cargo run --locked --quiet -- enginetest ../shared/conformance/blockchain
echo "== cargo doc --workspace --no-deps (warnings are errors)"
RUSTDOCFLAGS=-Dwarnings cargo doc --workspace --no-deps --locked
echo "== cargo bench --no-run (dev profile)"
# Built and linked with the dev profile the tests already built: under the release profile
# (which benches inherit, so that what they measure is built as the node is) each of the dozen
# bench binaries would take a fat-LTO link of minutes.
cargo bench --workspace --no-run --locked --profile dev
