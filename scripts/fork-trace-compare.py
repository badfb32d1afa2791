#!/usr/bin/env python3
"""Traces and state below the fork block: Hearth --fork-url (which re-executes upstream
blocks over the upstream's historical state) against the upstream's own answers and anvil's
fork of the same upstream, through the same counting proxy.

    python3 scripts/fork-trace-compare.py [--hearth target/debug/hearth] [--anvil PATH]
        [--upstream hearth|anvil] [--port-base 9400]

The upstream (Hearth by default, which traces natively; --no-mining) on BASE gets the blocks
of fork-history-compare.py: BenchToken in block 1, 10 token transfers and 5 ETH sends in
block 2, 3 more transfers in block 3 and an empty block 4. A proxy on BASE+1 adds 20 ms per
request and counts them by method; Hearth (BASE+2) and anvil (BASE+3) fork it at block 3.

Traces (blocks 1..=3, every transaction): debug_traceTransaction (struct logs, callTracer,
prestateTracer and its diff mode), debug_traceBlockByNumber / ByHash, trace_block,
trace_transaction, trace_replayTransaction and trace_replayBlockTransactions; compared with
the upstream's answers (anvil's fork's differences are printed for information).
State (blocks 0..=2, below the fork block, by number and by hash): eth_getBalance,
eth_getTransactionCount, eth_getCode, eth_getStorageAt, eth_call, eth_estimateGas; compared
with the upstream and with anvil's fork. Prints each difference, the upstream requests by
method, and those Hearth's second pass made (0: all from its cache); exits 1 when Hearth's
answers differ from the upstream's or anvil's (state) or the second pass went upstream.
SHOW_ANVIL_TRACES=1 prints anvil's fork's trace differences too.
"""

import argparse
import importlib.util
import json
import os
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))


def load(name, file):
    spec = importlib.util.spec_from_file_location(name, os.path.join(HERE, file))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


history = load("history", "fork-history-compare.py")
# The one fork-workload module history runs on: its proxy forwards to the port history sets,
# and counts each method forwarded (`METHODS`).
workload = history.workload
rpc, wait_port, call, differences = workload.rpc, workload.wait_port, history.call, history.differences
ALICE = workload.ALICE
METHODS = workload.METHODS


def trace_requests(port, last):
    calls = {"tracer": "callTracer", "tracerConfig": {"withLog": True}}
    prestate = {"tracer": "prestateTracer"}
    diff = {"tracer": "prestateTracer", "tracerConfig": {"diffMode": True}}
    logs = {"enableMemory": True, "enableReturnData": True}
    out = []
    for n in range(1, last + 1):
        number = hex(n)
        block = rpc(port, "eth_getBlockByNumber", [number, False])
        out += [
            ("debug_traceBlockByNumber", [number, logs]),
            ("debug_traceBlockByNumber", [number, calls]),
            ("debug_traceBlockByHash", [block["hash"], prestate]),
            ("trace_block", [number]),
            ("trace_replayBlockTransactions", [number, ["trace", "stateDiff"]]),
        ]
        for tx in block["transactions"]:
            out += [
                ("debug_traceTransaction", [tx]),
                ("debug_traceTransaction", [tx, calls]),
                ("debug_traceTransaction", [tx, diff]),
                ("trace_transaction", [tx]),
                ("trace_replayTransaction", [tx, ["trace", "vmTrace"]]),
            ]
    return out


def state_requests(port, below, token):
    holder = f"0x{0xB0001:040x}"
    eth = f"0x{0xC0001:040x}"
    balance_of = "0x70a08231" + f"{0xB0001:064x}"
    transfer = "0xa9059cbb" + f"{0xB0002:064x}" + f"{1:064x}"
    out = []
    for n in range(below):
        number = hex(n)
        h = rpc(port, "eth_getBlockByNumber", [number, False])["hash"]
        for at in (number, {"blockHash": h}):
            out += [
                ("eth_getBalance", [ALICE, at]),
                ("eth_getBalance", [eth, at]),
                ("eth_getTransactionCount", [ALICE, at]),
                ("eth_getCode", [token, at]),
                ("eth_getStorageAt", [token, "0x2", at]),
                ("eth_call", [{"to": token, "data": balance_of}, at]),
                ("eth_estimateGas", [{"from": ALICE, "to": token, "data": transfer}, at]),
            ]
        # Not deployed yet at genesis: the call runs against an empty account.
        out.append(("eth_getCode", [holder, number]))
    return out


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--hearth", default=os.path.join(workload.ROOT, "target/debug/hearth"))
    parser.add_argument("--anvil", default=workload.ANVIL)
    parser.add_argument("--upstream", choices=["anvil", "hearth"], default="hearth")
    parser.add_argument("--port-base", type=int, default=9400)
    args = parser.parse_args()
    procs = []
    cache = tempfile.mkdtemp(prefix="hearth-fork-traces-")
    try:
        (up_port, hearth_port, anvil_port), token, fork_block = history.start_all(
            args, workload.Proxy, cache, procs)
        bad = {"trace": 0, "state": 0, "state vs anvil": 0, "anvil trace": 0, "errors": 0}
        answers = []
        kinds = [("trace", r) for r in trace_requests(up_port, fork_block)]
        kinds += [("state", r) for r in state_requests(up_port, fork_block, token)]
        started = time.time()
        for kind, (method, params) in kinds:
            got = call(hearth_port, method, params)
            answers.append(got)
        hearth_seconds = time.time() - started
        first_pass = dict(METHODS)
        for (kind, (method, params)), got in zip(kinds, answers):
            want = call(up_port, method, params)
            theirs = call(anvil_port, method, params)
            if isinstance(got, dict) and got.get("error"):
                bad["errors"] += 1
            diff = differences(want, got)
            if diff:
                bad[kind] += 1
                print(f"hearth {method} {json.dumps(params)[:80]}: {'; '.join(diff[:4])}")
            diff = differences(theirs, got)
            if diff:
                bad["state vs anvil" if kind == "state" else "anvil trace"] += 1
                if kind == "state" or os.environ.get("SHOW_ANVIL_TRACES"):
                    print(f"anvil's fork vs hearth {method} {json.dumps(params)[:80]}: {'; '.join(diff[:4])}")
        before = workload.COUNTS["requests"]
        again = [call(hearth_port, m, p) for _, (m, p) in kinds]
        second = workload.COUNTS["requests"] - before
        traces = sum(1 for k, _ in kinds if k == "trace")
        print(f"upstream {args.upstream}, fork block {fork_block}: {traces} trace requests over blocks "
              f"1..={fork_block}, {len(kinds) - traces} state requests at blocks 0..{fork_block - 1}")
        print(f"hearth answered all in {hearth_seconds:.2f} s; errors among its answers: {bad['errors']}")
        print(f"hearth differs from the upstream: traces {bad['trace']}, state {bad['state']}; "
              f"from anvil's fork: state {bad['state vs anvil']} (traces {bad['anvil trace']}, "
              f"for information)")
        print(f"upstream calls during hearth's first pass (both forks' starts included): "
              f"{json.dumps(dict(sorted(first_pass.items())))}")
        print(f"hearth's second pass: {second} upstream requests, same answers: {again == answers}")
        failed = bad["trace"] or bad["state"] or bad["state vs anvil"] or bad["errors"]
        sys.exit(1 if failed or second or again != answers else 0)
    finally:
        for p in procs:
            p.terminate()
        for p in procs:
            p.wait()
        history.shutil_rm(cache)


if __name__ == "__main__":
    main()
