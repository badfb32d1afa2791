#!/usr/bin/env python3
"""Two `hearth-parallel-bench` builds side by side (issue 12): for each round, each workload,
each binary in turn, one `BIN --threads 2 --runs RUNS --workload W`; then, per workload and
binary, the median speed-up over the rounds with its range, the median spin speed-up, and
whether every run said `identical=yes`. Alternating keeps a neighbour's load from favouring
one build; compare the speed-ups (the old bench's single-trial spin made old efficiencies
noisy).

    cp target/release/hearth-parallel-bench /tmp/pb-old   # build old, then new
    python3 scripts/parallel-ab.py --rounds 3 --runs 15 --workloads transfers,erc20 \\
        /tmp/pb-old target/release/hearth-parallel-bench
"""
import argparse
import collections
import os
import statistics
import subprocess
import sys


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--runs", type=int, default=15)
    ap.add_argument("--workloads", default="transfers,erc20,hotspot,dependent,mix")
    ap.add_argument("bins", nargs="+")
    a = ap.parse_args()
    if not 1 <= a.rounds <= 50 or not 1 <= a.runs <= 100:
        sys.exit("--rounds must be 1-50 and --runs 1-100")
    for b in a.bins:
        if not os.access(b, os.X_OK):
            sys.exit(f"{b}: not an executable")
    seen = collections.defaultdict(list)
    for r in range(a.rounds):
        for w in a.workloads.split(","):
            for b in a.bins:
                out = subprocess.run([b, "--threads", "2", "--runs", str(a.runs), "--workload", w],
                                     capture_output=True, text=True, check=True).stdout
                line = next(l for l in out.splitlines() if l.startswith("parallel:"))
                kv = dict(x.split("=", 1) for x in line.split()[1:])
                seen[(w, b)].append(kv)
                print(f"round {r + 1} {w} {b}: speedup={kv['speedup']} spin={kv['spin_speedup']} "
                      f"identical={kv['identical']}", flush=True)
    print("| workload | binary | rounds | median speed-up (range) | median spin | identical |")
    print("|---|---|---:|---|---:|---|")
    for (w, b), runs in sorted(seen.items()):
        sp = [float(k["speedup"]) for k in runs]
        spin = statistics.median(float(k["spin_speedup"]) for k in runs)
        same = "yes" if all(k["identical"] == "yes" for k in runs) else "NO"
        print(f"| {w} | {b} | {len(runs)} | {statistics.median(sp):.2f} ({min(sp):.2f}-{max(sp):.2f})"
              f" | {spin:.2f} | {same} |")


if __name__ == "__main__":
    main()
