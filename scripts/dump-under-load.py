#!/usr/bin/env python3
"""What a state dump costs the sends beside it. On a chain in memory the state owner shares the
mempool and miner's thread (ARCHITECTURE.md), so while it writes an anvil_dumpState no
transaction is admitted or mined. This starts a fresh node per binary, gives it ACCOUNTS
accounts with a balance and a storage slot each (anvil_setBalance / anvil_setStorageAt in
batches), then sends one transfer at a time for SECONDS seconds, first alone and then with a
second client calling anvil_dumpState back to back, and prints a table: each dump's time, and
the sends' rate, median, p99 and worst latency in both phases.

    python3 scripts/dump-under-load.py --hearth target/release/hearth [--hearth OTHER]
        [--accounts 20000] [--seconds 5]

Each binary is also started with `--datadir` (the state owner on a thread of its own) when
`--disk` is given, for the comparison. Every patch on a datadir is a durable write, so filling
one is slow: keep `--accounts` to a few thousand there (20,000 took more than ten minutes).
"""

import argparse
import multiprocessing
import os
import statistics
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from jsonrpc_client import batch, post, rpc  # noqa: E402
from local_node import free_port, start  # noqa: E402


def fill(url, accounts):
    calls = []
    for i in range(accounts):
        address = "0x" + (0xD000000000000000000000000000000000000000 + i).to_bytes(20, "big").hex()
        calls.append(("anvil_setBalance", [address, hex(10**18 + i)]))
        calls.append(("anvil_setStorageAt", [address, hex(1), "0x" + f"{i + 1:064x}"]))
    batch(url, calls, size=500)


def sends(url, sender, seconds):
    """Sequential transfers for `seconds`; each one's latency in ms."""
    latencies = []
    end = time.monotonic() + seconds
    to = "0x" + "11" * 20
    while time.monotonic() < end:
        started = time.monotonic()
        answer = post(url, {"jsonrpc": "2.0", "id": 1, "method": "eth_sendTransaction",
                            "params": [{"from": sender, "to": to, "value": "0x1"}]})
        if "error" in answer:
            raise RuntimeError(answer["error"])
        latencies.append((time.monotonic() - started) * 1000)
    return latencies


def dumps(url, stop, took):
    """Back-to-back anvil_dumpState until `stop`; each one's time in ms into `took`. Run in a
    process of its own, so decoding a dump does not hold the sender's interpreter."""
    while not stop.is_set():
        started = time.monotonic()
        rpc(url, "anvil_dumpState", [])
        took.append((time.monotonic() - started) * 1000)


def row(name, phase, latencies, seconds, dump_ms):
    lat = sorted(latencies)
    p99 = lat[min(len(lat) - 1, int(len(lat) * 0.99))]
    dumps_col = f"{len(dump_ms)} x {statistics.median(dump_ms):.0f} ms" if dump_ms else "-"
    print(f"| {name} | {phase} | {len(lat) / seconds:.0f} | {statistics.median(lat):.2f} | "
          f"{p99:.2f} | {lat[-1]:.1f} | {dumps_col} |", flush=True)


def run(binary, store, args):
    port = free_port()
    url = f"http://127.0.0.1:{port}/"
    argv = [binary, "--http.port", str(port)]
    tmp = None
    if store == "disk":
        tmp = tempfile.TemporaryDirectory()
        argv += ["--datadir", tmp.name]
    node = start(argv, url)
    try:
        fill(url, args.accounts)
        sender = rpc(url, "eth_accounts", [])[0]
        name = f"{os.path.basename(binary)} ({store})"
        row(name, "sends alone", sends(url, sender, args.seconds), args.seconds, [])
        with multiprocessing.Manager() as manager:
            stop, took = manager.Event(), manager.list()
            dumper = multiprocessing.Process(target=dumps, args=(url, stop, took))
            dumper.start()
            try:
                latencies = sends(url, sender, args.seconds)
            finally:
                stop.set()
                dumper.join()
            row(name, "sends beside dumps", latencies, args.seconds, list(took))
    finally:
        node.kill()
        node.wait()
        if tmp:
            tmp.cleanup()


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--hearth", action="append", required=True)
    ap.add_argument("--accounts", type=int, default=20_000)
    ap.add_argument("--seconds", type=float, default=5.0)
    ap.add_argument("--disk", action="store_true", help="also run each binary on a --datadir")
    args = ap.parse_args()
    if not (1 <= args.accounts <= 1_000_000 and 0.5 <= args.seconds <= 120):
        ap.error("--accounts must be 1..1,000,000 and --seconds 0.5..120")
    print(f"{args.accounts} accounts with a slot each; one sender for {args.seconds} s per phase")
    print("| node | phase | sends/s | median ms | p99 ms | worst ms | dumps |")
    print("|---|---|---:|---:|---:|---:|---|")
    for binary in args.hearth:
        for store in ["memory"] + (["disk"] if args.disk else []):
            run(binary, store, args)


if __name__ == "__main__":
    main()
