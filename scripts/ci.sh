#!/usr/bin/env bash
# The checks a tool can make (CONVENTIONS.md section 9), in order; stops at the first failure.
#   bash scripts/ci.sh          # what .ci/run calls before the cast end-to-end check
set -euo pipefail
cd "$(dirname "$0")/.."

echo "== cargo fmt --all --check"
cargo fmt --all --check
echo "== cargo clippy --workspace --all-targets -- -D warnings"
cargo clippy --workspace --all-targets --locked -- -D warnings
echo "== cargo test --workspace (the README's test command)"
cargo test --workspace --locked
echo "== every EF blockchain test with every block through the parallel path (about 3 s)"
cargo run --locked --quiet -- blocktest ../shared/conformance/blockchain --exec.parallel always --exec.threads 2
echo "== cargo doc --workspace --no-deps (warnings are errors)"
RUSTDOCFLAGS=-Dwarnings cargo doc --workspace --no-deps --locked
echo "== cargo bench --no-run"
cargo bench --workspace --no-run --locked
