#!/usr/bin/env python3
"""Resident memory of a fresh node, idle and after a short automine load, for one or more
binaries side by side.

`VmRSS` counts the executable's file pages too (clean, shared with the page cache), and how
many of a 100 MB binary's pages a start maps depends on the page cache (a binary just built
maps more): two builds of the same code differed by 3 MiB there. `RssAnon`, the node's own
memory, is the figure to compare; both are printed.

Per binary and start (`--starts`, alternating the binaries): starts `BIN --ephemeral` on a free
loopback port, reads `RssAnon` and `VmRSS` from /proc two seconds after it answers, then has
eight dev accounts send `--transfers` 1-wei transfers in all (automine, eight at a time) and
reads them again. Prints one line per start and a median per binary.

    python3 scripts/idle-rss.py [--starts 4] [--transfers 2400] BIN [BIN ...]

Stdlib only; loopback only; every wait is bounded.
"""
import argparse
import os
import statistics
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from jsonrpc_client import rpc  # noqa: E402
from local_node import free_port, start, status_kib as kib  # noqa: E402

SENDERS = 8


def one_start(binary, transfers):
    port = free_port()
    url = f"http://127.0.0.1:{port}/"
    proc = start([binary, "--ephemeral", "--host", "127.0.0.1", "-p", str(port)], url)
    try:
        time.sleep(2)
        idle = (kib(proc.pid, "RssAnon"), kib(proc.pid, "VmRSS"))
        senders = rpc(url, "eth_accounts", [])[:SENDERS]
        each = transfers // len(senders)
        errors = []

        def send(sender):
            try:
                for _ in range(each):
                    rpc(url, "eth_sendTransaction",
                        [{"from": sender, "to": "0x" + "00" * 19 + "aa", "value": "0x1"}])
            except Exception as e:  # reported below: a refused send spoils the figure
                errors.append(str(e))

        threads = [threading.Thread(target=send, args=(s,)) for s in senders]
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout=300)
        if errors:
            sys.exit(f"{binary}: a transfer failed: {errors[0]}")
        return idle + (kib(proc.pid, "RssAnon"), kib(proc.pid, "VmRSS"))
    finally:
        proc.kill()
        proc.wait()


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("binaries", nargs="+")
    ap.add_argument("--starts", type=int, default=4)
    ap.add_argument("--transfers", type=int, default=2400)
    args = ap.parse_args()
    if not 1 <= args.starts <= 100:
        sys.exit("--starts must be in 1..=100")
    if not SENDERS <= args.transfers <= 1_000_000:
        sys.exit(f"--transfers must be in {SENDERS}..=1000000")
    results = {b: [] for b in args.binaries}
    for start in range(args.starts):
        for binary in args.binaries:
            figures = one_start(binary, args.transfers)
            results[binary].append(figures)
            anon, rss, anon_after, rss_after = (f / 1024 for f in figures)
            print(f"start {start + 1} {binary}: idle {anon:.1f} MiB anonymous ({rss:.1f} RSS), "
                  f"after {args.transfers} transfers {anon_after:.1f} ({rss_after:.1f})",
                  file=sys.stderr, flush=True)
    print("| binary | idle anonymous MiB (median, range) | idle RSS | after load, anonymous "
          "| after load, RSS |")
    print("|---|---|---|---|---|")
    for binary, runs in results.items():
        def col(i):
            values = [r[i] / 1024 for r in runs]
            return f"{statistics.median(values):.1f} ({min(values):.1f}-{max(values):.1f})"
        print(f"| {binary} | {col(0)} | {col(1)} | {col(2)} | {col(3)} |")


if __name__ == "__main__":
    main()
