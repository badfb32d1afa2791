#!/usr/bin/env python3
"""Times two traces on Hearth and on anvil in the same run, with each process's peak memory.

Usage (scripts/trace-bench.sh starts both nodes and calls this):
    python3 scripts/trace-bench.py RUNS BENCHTOKEN_JSON NAME=URL=PID [NAME=URL=PID ...]

1. The default struct logger over BenchToken's hashLoop(20000) (debug_traceCall: about a
   million steps, a ~220 MB answer), on every node.
2. callTracer over a block of 1,000 BenchToken transfers (debug_traceBlockByNumber).

Each trace runs RUNS times per node, nodes alternating, the block traces first (see main),
except anvil's block trace, which runs once (it takes minutes on anvil 1.7.1); time is the
client's, from sending the
request to the last byte of the answer; peak RSS is the process's VmHWM after the trace, the
mark reset (`echo 5 > /proc/PID/clear_refs`) before it, so it is the peak of that trace alone
on top of what the node held. Prints one line per run and a table of medians.
"""

import json
import os
import statistics
import sys
import time
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from local_node import status_kib as kib  # noqa: E402

ALICE = "0xf39fd6e51aad88f6f4ce6ab8827279cfffb92266"
BOB = "0x70997970c51812dc3a010c7d01b50e0d17dc79c8"


def post(url, payload):
    body = json.dumps(payload).encode()
    request = urllib.request.Request(url, body, {"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=600) as response:
        return response.read()


def rpc(url, method, params):
    answer = json.loads(post(url, {"jsonrpc": "2.0", "id": 1, "method": method, "params": params}))
    if "error" in answer:
        raise RuntimeError(f"{method} on {url}: {answer['error']}")
    return answer["result"]


def receipt(url, tx):
    """The receipt of `tx`: anvil may answer the send a moment before it has one."""
    for _ in range(250):
        found = rpc(url, "eth_getTransactionReceipt", [tx])
        if found is not None:
            return found
        time.sleep(0.02)
    raise RuntimeError(f"{tx} was not mined by {url}")


def measure(node, method, params):
    """(seconds, peak RSS MiB, RSS before MiB, answer bytes) of one request."""
    name, url, pid = node
    with open(f"/proc/{pid}/clear_refs", "w") as f:
        f.write("5")
    before = kib(pid, "VmRSS")
    start = time.perf_counter()
    raw = post(url, {"jsonrpc": "2.0", "id": 1, "method": method, "params": params})
    seconds = time.perf_counter() - start
    peak = kib(pid, "VmHWM")
    if b'"error"' in raw[:200]:
        raise RuntimeError(f"{name}: {raw[:300]!r}")
    return seconds, peak / 1024, before / 1024, len(raw)


def setup(node, bench):
    """Deploys BenchToken and mines one block of 1,000 transfers; returns (token, block)."""
    _, url, _ = node
    code = "0x" + bench["bytecode"].replace("0x", "")
    tx = rpc(url, "eth_sendTransaction", [{"from": ALICE, "data": code, "gas": "0x100000"}])
    token = receipt(url, tx)["contractAddress"]
    rpc(url, "evm_setAutomine", [False])
    selector = bench["methodIdentifiers"]["transfer(address,uint256)"]
    # Explicit nonces: anvil gives concurrent sends of one account the same nonce.
    nonce = int(rpc(url, "eth_getTransactionCount", [ALICE, "pending"]), 16)
    batch = []
    for i in range(1000):
        data = "0x" + selector + BOB[2:].rjust(64, "0") + format(i + 1, "064x")
        call = {"from": ALICE, "to": token, "data": data, "gas": "0xea60", "gasPrice": "0xb2d05e00",
                "nonce": hex(nonce + i)}
        batch.append({"jsonrpc": "2.0", "id": i, "method": "eth_sendTransaction", "params": [call]})
    answers = json.loads(post(url, batch))
    failed = [a for a in answers if "error" in a]
    if failed:
        raise RuntimeError(f"{url}: {len(failed)} transfers refused, e.g. {failed[0]}")
    rpc(url, "evm_mine", [])
    rpc(url, "evm_setAutomine", [True])
    number = rpc(url, "eth_blockNumber", [])
    block = rpc(url, "eth_getBlockByNumber", [number, False])
    if len(block["transactions"]) != 1000:
        raise RuntimeError(f"{url}: block {number} holds {len(block['transactions'])} transfers")
    return token, number


def main():
    runs = int(sys.argv[1])
    with open(sys.argv[2]) as f:
        bench = json.load(f)
    nodes = [tuple(arg.split("=", 2)) for arg in sys.argv[3:]]
    prepared = {node[0]: setup(node, bench) for node in nodes}
    hash_loop = bench["methodIdentifiers"]["hashLoop(uint256)"] + format(20000, "064x")
    results = {}

    def one(run, node, label, method, params):
        seconds, peak, before, size = measure(node, method, params)
        results.setdefault((label, node[0]), []).append((seconds, peak, before, size))
        print(f"run {run + 1} {node[0]:7} {label:30} {seconds:7.3f} s  peak RSS "
              f"{peak:7.0f} MiB (held {before:5.0f} MiB before)  answer {size / 1e6:6.1f} MB",
              flush=True)

    # The block traces first, while each node holds little: a struct-log trace leaves a few
    # hundred MiB of freed heap resident in either process, which would hide their peaks.
    for run in range(runs):
        for node in nodes:
            if run > 0 and node[0] == "anvil":
                continue
            _, block = prepared[node[0]]
            one(run, node, "callTracer, 1,000 transfers", "debug_traceBlockByNumber",
                [block, {"tracer": "callTracer"}])
    for run in range(runs):
        for node in nodes:
            token, _ = prepared[node[0]]
            call = {"to": token, "data": "0x" + hash_loop, "gas": "0x1c9c380"}
            one(run, node, "struct logs, hashLoop(20000)", "debug_traceCall", [call, "latest", {}])
    print()
    print("| trace | node | time (median) | peak RSS (median) | RSS before | answer |")
    print("|---|---|---|---|---|---|")
    for (label, name), samples in results.items():
        seconds = statistics.median(s[0] for s in samples)
        peak = statistics.median(s[1] for s in samples)
        before = statistics.median(s[2] for s in samples)
        print(f"| {label} | {name} | {seconds:.2f} s | {peak:.0f} MiB | {before:.0f} MiB | "
              f"{samples[0][3] / 1e6:.1f} MB |")


if __name__ == "__main__":
    main()
