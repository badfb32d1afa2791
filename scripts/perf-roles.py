#!/usr/bin/env python3
"""Splits a `perf record --call-graph dwarf` profile of `hearth-parallel-bench --only parallel`
by role, from each sample's stack: the helper threads (`run_helper`), the block's work after the
loop (the roots' trie building and hashing, the state diff), and the committer (the block's
loop, `Committer::run`). For each role: what share of its samples fall under speculation,
validation, commit and publish, waiting (yield, spin) and the rest, and its hottest leaves.

    perf record -F 1499 --call-graph dwarf,32768 -o /tmp/p.data \\
        target/release/hearth-parallel-bench --threads 2 --runs 30 --workload transfers --only parallel
    python3 scripts/perf-roles.py /tmp/p.data [TOP] [--frames PATTERN]

With `--frames PATTERN`, each role also lists the inclusive share of every function on its
stacks whose name contains PATTERN (the share of the role's samples that pass through it, so
inlined callers count too): `--frames commit_publishing`, `--frames 'Arc<revm_bytecode'`.
"""
import collections
import subprocess
import sys

POST = ("hash_subtrees", "build_ordered", "into_diff", "ordered_roots", "root_above")
PARTS = ("speculate", "validate", "commit_publishing", "commit_ref", "Board::take", "Board::put",
         "wait_for_window", "yield", "spin_loop")


def role(frames):
    s = " ".join(frames)
    if "run_helper" in s:
        return "helper"
    if any(k in s for k in POST):
        return "after the loop"
    if "Committer::run" in s or "execute_block" in s:
        return "committer"
    return None


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    args = sys.argv[1:]
    pattern = None
    if "--frames" in args:
        at = args.index("--frames")
        if at + 1 >= len(args):
            sys.exit("--frames needs a pattern")
        pattern = args[at + 1]
        del args[at:at + 2]
    top = int(args[1]) if len(args) > 1 else 20
    out = subprocess.run(["perf", "script", "-i", args[0], "-F", "tid,ip,sym"],
                         capture_output=True, text=True, check=True).stdout
    leaves = collections.defaultdict(collections.Counter)
    parts = collections.defaultdict(collections.Counter)
    through = collections.defaultdict(collections.Counter)
    frames = []

    def flush():
        r = role(frames) if frames else None
        if r is None:
            return
        s = " ".join(frames)
        leaves[r][frames[0]] += 1
        parts[r][next((p for p in PARTS if p in s), "rest")] += 1
        if pattern:
            for f in {f[:100] for f in frames if pattern in f}:
                through[r][f] += 1

    # `perf script`: a header line per sample (not indented), then one indented line per frame,
    # the leaf first.
    for line in out.splitlines():
        if not line.strip():
            continue
        if not line.startswith("\t"):
            flush()
            frames = []
        else:
            fields = line.strip().split(None, 1)
            frames.append(fields[1] if len(fields) > 1 else "?")
    flush()
    for r in ("committer", "helper", "after the loop"):
        n = sum(leaves[r].values())
        print(f"== {r}: {n} samples")
        if not n:
            continue
        for k, v in parts[r].most_common():
            print(f"   [{100 * v / n:5.1f}%] {k}")
        for sym, v in leaves[r].most_common(top):
            print(f"  {100 * v / n:5.1f}% {sym[:100]}")
        if pattern:
            print(f"   through frames containing {pattern!r}:")
            for sym, v in through[r].most_common(top):
                print(f"   {100 * v / n:5.1f}% {sym}")


if __name__ == "__main__":
    main()
