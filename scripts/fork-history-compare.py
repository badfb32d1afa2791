#!/usr/bin/env python3
"""History below (and at) the fork block: Hearth --fork-url and anvil --fork-url against the
upstream's own answers, through the same counting proxy.

    python3 scripts/fork-history-compare.py [--hearth target/debug/hearth] [--anvil PATH]
        [--upstream anvil|hearth] [--port-base 9360]

The upstream (anvil or Hearth, --no-mining) on BASE gets BenchToken in block 1, 10 token
transfers and 5 ETH sends in block 2, 3 more transfers in block 3 and an empty block 4. A
proxy on BASE+1 adds 20 ms per request and counts them; Hearth (BASE+2) and anvil (BASE+3)
fork it at block 3. For blocks 0..=3: eth_getBlockByNumber / ByHash (hashes and full),
eth_getBlockReceipts, eth_getBlockTransactionCountBy*, eth_getTransactionByBlock*AndIndex,
eth_getTransactionByHash and eth_getTransactionReceipt of every transaction, and eth_getLogs
(whole range, by address, by topic) are asked of all three. Prints each difference and the
upstream requests Hearth's second pass made (0: all from its cache); exits 1 when Hearth's
answers differ from the upstream's.
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import importlib.util

spec = importlib.util.spec_from_file_location(
    "workload", os.path.join(os.path.dirname(os.path.abspath(__file__)), "fork-workload.py")
)
workload = importlib.util.module_from_spec(spec)
spec.loader.exec_module(workload)
rpc, wait_port = workload.rpc, workload.wait_port

ALICE = workload.ALICE
TRANSFER = "0xddf252ad1be2c89b69c2b068fc378daa952ba7f163c4a11628f55a4df523b3ef"


def call(port, method, params):
    body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": method, "params": params}).encode()
    req = urllib.request.Request(f"http://127.0.0.1:{port}", body, {"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=120) as r:
        answer = json.load(r)
    return answer.get("result", {"error": answer.get("error")})


def setup(port):
    with open(os.path.join(workload.SHARED, "peers/build/BenchToken.json")) as f:
        code = json.load(f)["bytecode"]
    code = code if code.startswith("0x") else "0x" + code
    rpc(port, "eth_sendTransaction", [{"from": ALICE, "data": code}])
    rpc(port, "evm_mine", [])
    token = rpc(port, "eth_getBlockReceipts", ["0x1"])[0]["contractAddress"]
    for i in range(10):
        data = "0xa9059cbb" + f"{0xB0000 + i:064x}" + f"{1000 + i:064x}"
        rpc(port, "eth_sendTransaction", [{"from": ALICE, "to": token, "data": data}])
    for i in range(5):
        rpc(port, "eth_sendTransaction", [{"from": ALICE, "to": f"0x{0xC0000 + i:040x}", "value": hex(10**15)}])
    rpc(port, "evm_mine", [])
    for i in range(3):
        data = "0xa9059cbb" + f"{0xB0000 + i:064x}" + f"{7:064x}"
        rpc(port, "eth_sendTransaction", [{"from": ALICE, "to": token, "data": data}])
    rpc(port, "evm_mine", [])
    rpc(port, "evm_mine", [])
    return token


def requests(port, last, token):
    out = []
    for n in range(last + 1):
        number = hex(n)
        block = rpc(port, "eth_getBlockByNumber", [number, False])
        h = block["hash"]
        out += [
            ("eth_getBlockByNumber", [number, False]),
            ("eth_getBlockByNumber", [number, True]),
            ("eth_getBlockByHash", [h, False]),
            ("eth_getBlockByHash", [h, True]),
            ("eth_getBlockReceipts", [number]),
            ("eth_getBlockTransactionCountByNumber", [number]),
            ("eth_getBlockTransactionCountByHash", [h]),
            ("eth_getTransactionByBlockNumberAndIndex", [number, "0x0"]),
            ("eth_getTransactionByBlockHashAndIndex", [h, "0x1"]),
        ]
        for tx in block["transactions"]:
            out += [("eth_getTransactionByHash", [tx]), ("eth_getTransactionReceipt", [tx])]
    last = hex(last)
    holder = "0x" + f"{0xB0001:064x}"
    out += [
        ("eth_getLogs", [{"fromBlock": "0x0", "toBlock": last}]),
        ("eth_getLogs", [{"fromBlock": "0x2", "toBlock": last, "address": token}]),
        ("eth_getLogs", [{"fromBlock": "0x0", "toBlock": last, "topics": [TRANSFER, None, holder]}]),
    ]
    return out


def differences(a, b, path=""):
    """Paths where two JSON values differ."""
    if isinstance(a, dict) and isinstance(b, dict):
        out = []
        for k in sorted(set(a) | set(b)):
            if k not in a or k not in b:
                out.append(f"{path}.{k}: {'missing' if k not in a else a[k]!r} vs {'missing' if k not in b else b[k]!r}")
            else:
                out += differences(a[k], b[k], f"{path}.{k}")
        return out
    if isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        return [d for i, (x, y) in enumerate(zip(a, b)) for d in differences(x, y, f"{path}[{i}]")]
    return [] if a == b else [f"{path}: {json.dumps(a)[:120]} vs {json.dumps(b)[:120]}"]


def start_all(args, proxy, cache, procs):
    """Starts the upstream (`args.upstream`) on `args.port_base` with the contracts `setup`
    deploys, the counting `proxy` in front of it on the next port, and Hearth (on the fork
    cache `cache`) and anvil forking it at block 3 on the two ports after; adds every process
    to `procs`. Returns the upstream's, Hearth's and anvil's ports, the token and the block."""
    base = args.port_base
    up_port, proxy_port, hearth_port, anvil_port = base, base + 1, base + 2, base + 3
    workload.UP_PORT = up_port
    if args.upstream == "anvil":
        cmd = [args.anvil, "-p", str(up_port), "--no-mining", "--silent"]
    else:
        cmd = [args.hearth, "-p", str(up_port), "--no-mining"]
    up = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    procs.append(up)
    wait_port(up_port, up, "upstream")
    token = setup(up_port)
    server = workload.ThreadingServer(("127.0.0.1", proxy_port), proxy)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    fork_block = 3
    start_forks(args, f"http://127.0.0.1:{proxy_port}", fork_block, cache,
                (hearth_port, anvil_port), procs)
    return (up_port, hearth_port, anvil_port), token, fork_block


def start_forks(args, url, fork_block, cache, ports, procs):
    """Starts Hearth (on the fork cache `cache`) and anvil, each forking `url` at `fork_block`
    on its port of `ports`, adds them to `procs` and waits until both listen."""
    hearth_port, anvil_port = ports
    hearth = subprocess.Popen(
        [args.hearth, "-p", str(hearth_port), "--fork-url", url, "--fork-block-number", str(fork_block),
         "--fork.cache-dir", cache],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    procs.append(hearth)
    anvil = subprocess.Popen(
        [args.anvil, "-p", str(anvil_port), "--fork-url", url, "--fork-block-number", str(fork_block),
         "--no-storage-caching", "--silent"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    procs.append(anvil)
    wait_port(hearth_port, hearth, "hearth")
    wait_port(anvil_port, anvil, "anvil")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--hearth", default=os.path.join(workload.ROOT, "target/debug/hearth"))
    parser.add_argument("--anvil", default=workload.ANVIL)
    parser.add_argument("--upstream", choices=["anvil", "hearth"], default="anvil")
    parser.add_argument("--port-base", type=int, default=9360)
    args = parser.parse_args()
    procs = []
    cache = tempfile.mkdtemp(prefix="hearth-fork-history-")
    try:
        (up_port, hearth_port, anvil_port), token, fork_block = start_all(
            args, workload.Proxy, cache, procs)
        asked = requests(up_port, fork_block, token)
        hearth_bad = anvil_bad = 0
        answers = []
        for method, params in asked:
            want = call(up_port, method, params)
            got = call(hearth_port, method, params)
            theirs = call(anvil_port, method, params)
            answers.append(got)
            for who, answer in (("hearth", got), ("anvil", theirs)):
                diff = differences(want, answer)
                if diff:
                    if who == "hearth":
                        hearth_bad += 1
                    else:
                        anvil_bad += 1
                    print(f"{who} {method} {json.dumps(params)[:80]}: {'; '.join(diff[:4])}")
        before = workload.COUNTS["requests"]
        again = [call(hearth_port, m, p) for m, p in asked]
        second = workload.COUNTS["requests"] - before
        print(f"upstream {args.upstream}: {len(asked)} requests over blocks 0..={fork_block}; "
              f"hearth differs from the upstream in {hearth_bad}, anvil in {anvil_bad}; "
              f"hearth's second pass: {second} upstream requests, same answers: {again == answers}")
        shutil_rm(cache)
        sys.exit(1 if hearth_bad or second or again != answers else 0)
    finally:
        for p in procs:
            p.terminate()
        for p in procs:
            p.wait()


def shutil_rm(path):
    import shutil
    shutil.rmtree(path, ignore_errors=True)


if __name__ == "__main__":
    main()
