#!/usr/bin/env python3
"""Interval mining with a full pool, `--exec.parallel never` against `auto` (or any modes) in
the same run (issue 12): blocks per second, mined transactions per second, and eth_call
latency while the blocks are built against the same node idle.

Usage:
    python3 scripts/interval-full-pool.py --hearth target/release/hearth [--txs 20000]
        [--senders 100] [--modes never,auto] [--port 9520] [--callers 4]

For each mode: a fresh node (`--no-mining`, `--accounts` = senders + 1) deploys BenchToken,
then `--callers` threads call `balanceOf` in a closed loop for 5 s (idle latency). The pool
is filled with `--txs` transfers from `--senders` accounts (JSON-RPC batches of
eth_sendTransaction), interval mining is switched on (`evm_setIntervalMining 1000`: one block a second, `--interval-ms`), and the
callers keep calling until the pool is empty. Printed per mode: blocks mined, blocks/s and
mined tx/s over the drain, the largest block, and eth_call p50/p99 idle and while mining (the
issue asks: p99 while mining within 2x of idle p99).
"""

import argparse
import json
import os
import sys
import statistics
import subprocess
import tempfile
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from jsonrpc_client import batch, post, rpc  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
SHARED = os.environ.get("SHARED_DIR", os.path.join(HERE, "..", "..", "shared"))
TOKEN_JSON = os.path.join(SHARED, "peers", "build", "BenchToken.json")


def percentile(samples, p):
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, int(len(ordered) * p))] if ordered else float("nan")


class Callers:
    """Threads calling `balanceOf` in a closed loop, recording each call's latency (ms)."""

    def __init__(self, url, token, data, count):
        self.url, self.stop, self.samples, self.errors = url, threading.Event(), [], 0
        self.payload = {"jsonrpc": "2.0", "id": 1, "method": "eth_call",
                        "params": [{"to": token, "data": data}, "latest"]}
        self.threads = [threading.Thread(target=self.loop, daemon=True) for _ in range(count)]

    def loop(self):
        while not self.stop.is_set():
            start = time.perf_counter()
            try:
                answer = post(self.url, self.payload, timeout=30)
                ok = "result" in answer
            except Exception:
                ok = False
            if ok:
                self.samples.append((time.perf_counter() - start) * 1000)
            else:
                self.errors += 1

    def run_for(self, seconds):
        for t in self.threads:
            t.start()
        time.sleep(seconds)
        return self

    def take(self):
        taken, self.samples = self.samples, []
        return taken

    def finish(self):
        self.stop.set()
        for t in self.threads:
            t.join()


def run_mode(binary, port, mode, args, bench):
    env = dict(os.environ, HOME=tempfile.mkdtemp(prefix="interval-full-pool-"))
    log = tempfile.NamedTemporaryFile(prefix=f"interval-full-pool-{mode}-", suffix=".log", delete=False)
    node = subprocess.Popen(
        [binary, "-p", str(port), "--no-mining", "--accounts", str(args.senders + 1),
         "--exec.parallel", mode, "--txpool.max-count", str(args.txs + 1000)],
        stdout=log, stderr=subprocess.STDOUT, env=env)
    url = f"http://127.0.0.1:{port}"
    try:
        for _ in range(600):
            try:
                rpc(url, "eth_chainId", [])
                break
            except Exception:
                time.sleep(0.05)
        accounts = rpc(url, "eth_accounts", [])
        code = "0x" + bench["bytecode"].replace("0x", "")
        tx = rpc(url, "eth_sendTransaction", [{"from": accounts[0], "data": code, "gas": hex(3_000_000)}])
        rpc(url, "evm_mine", [])
        token = rpc(url, "eth_getTransactionReceipt", [tx])["contractAddress"]
        data = "0x" + bench["methodIdentifiers"]["balanceOf(address)"] + "0" * 24 + accounts[0][2:]
        callers = Callers(url, token, data, args.callers).run_for(5)
        idle = callers.take()
        senders = accounts[1 : args.senders + 1]
        per_sender = args.txs // len(senders)
        transfers = [
            ("eth_sendTransaction", [{"from": s, "to": "0x" + f"{0xfee0000 + j * 1000 + i:040x}",
                                      "value": "0x1", "gas": hex(21_000),
                                      # Full blocks raise the base fee 12.5% each: a fee cap
                                      # at twice the first one would price out the tail.
                                      "maxFeePerGas": hex(100 * 10**9),
                                      "maxPriorityFeePerGas": hex(10**9)}])
            for j in range(per_sender) for i, s in enumerate(senders)
        ]
        callers.take()  # the fill's own latency is not the question
        batch(url, transfers)
        start_block = int(rpc(url, "eth_blockNumber", []), 16)
        callers.take()
        started = time.perf_counter()
        rpc(url, "evm_setIntervalMining", [args.interval_ms])
        while int(rpc(url, "txpool_status", [])["pending"], 16) > 0:
            time.sleep(0.05)
            if time.perf_counter() - started > 600:
                raise RuntimeError(f"{mode}: the pool did not drain in 600 s")
        drained = time.perf_counter() - started
        mining = callers.take()
        callers.finish()
        end_block = int(rpc(url, "eth_blockNumber", []), 16)
        sizes = [len(rpc(url, "eth_getBlockByNumber", [hex(n), False])["transactions"])
                 for n in range(start_block + 1, end_block + 1)]
        return {
            "mode": mode, "blocks": len(sizes), "mined": sum(sizes), "seconds": drained,
            "largest": max(sizes or [0]), "idle": idle, "mining": mining, "errors": callers.errors,
        }
    finally:
        node.terminate()
        node.wait(timeout=30)
        log.close()


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--hearth", required=True)
    parser.add_argument("--txs", type=int, default=20000)
    parser.add_argument("--senders", type=int, default=100)
    parser.add_argument("--modes", default="never,auto")
    parser.add_argument("--port", type=int, default=9520)
    parser.add_argument("--callers", type=int, default=4)
    parser.add_argument("--interval-ms", type=int, default=1000)
    args = parser.parse_args()
    if not (1 <= args.senders <= 5000 and 1 <= args.txs <= 200_000 and 1 <= args.callers <= 64
            and 1 <= args.interval_ms <= 60_000):
        raise SystemExit("--senders 1..5000, --txs 1..200000, --callers 1..64, --interval-ms 1..60000")
    with open(TOKEN_JSON) as f:
        bench = json.load(f)
    print(f"load average before: {os.getloadavg()[0]:.2f}", flush=True)
    results = [run_mode(args.hearth, args.port, mode, args, bench) for mode in args.modes.split(",")]
    print("| mode | blocks | mined | drain s | blocks/s | mined tx/s | largest block | "
          "eth_call p50 / p99 idle ms | p50 / p99 while mining ms | p99 ratio | errors |")
    print("|---|---:|---:|---:|---:|---:|---:|---|---|---:|---:|")
    for r in results:
        ratio = percentile(r["mining"], 0.99) / percentile(r["idle"], 0.99)
        print(f"| {r['mode']} | {r['blocks']} | {r['mined']} | {r['seconds']:.1f} | "
              f"{r['blocks'] / r['seconds']:.2f} | {r['mined'] / r['seconds']:.0f} | {r['largest']} | "
              f"{statistics.median(r['idle']):.2f} / {percentile(r['idle'], 0.99):.2f} | "
              f"{statistics.median(r['mining']):.2f} / {percentile(r['mining'], 0.99):.2f} | "
              f"{ratio:.2f} | {r['errors']} |")
    print(f"load average after: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
