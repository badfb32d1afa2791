#!/usr/bin/env python3
"""A contract that logs 10 MB through console.log, in a mined transaction and in an eth_call:
the node's peak memory above idle must stay bounded (issue 33: under 64 MiB), and its output
must say the console output was cut. Prints a table.

    python3 scripts/console-mem.py [--hearth target/release/hearth] [--calls 10000] [--bytes 1024]

The contract (raw bytecode, no compiler needed) copies its calldata, a `log(string)` call of
`--bytes` characters, to memory and sends it to the console address `--calls` times. The node
listens on 127.0.0.1 on a free port and is stopped at the end.
"""
import argparse
import json
import os
import socket
import subprocess
import sys
import time
import urllib.request

CONSOLE = "000000000000000000636f6e736f6c652e6c6f67"


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def rpc(url, method, params):
    body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": method, "params": params}).encode()
    req = urllib.request.Request(url, body, {"content-type": "application/json"})
    reply = json.loads(urllib.request.urlopen(req, timeout=120).read())
    if "error" in reply:
        raise RuntimeError(f"{method}: {reply['error']}")
    return reply["result"]


def status_kib(pid, field):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    raise RuntimeError(field)


def looping_logger(calls):
    """Creation code of the contract: CALLDATACOPY, then `calls` STATICCALLs to the console."""
    if not 1 <= calls <= 0xFFFF:
        sys.exit("--calls must be 1-65535")
    runtime = ("365f5f37" + f"61{calls:04x}" + "5b" + "5f5f365f73" + CONSOLE + "5afa50"
               + "6001900380" + "600757" + "00")
    size = len(runtime) // 2
    return f"60{size:02x}600a5f3960{size:02x}5ff3" + runtime


def log_string(n):
    """log(string) calldata with a string of `n` characters."""
    text = ("0123456789abcdef" * (n // 16 + 1))[:n].encode().hex()
    padded = text + "0" * (-len(text) % 64)
    return "0x41304fac" + f"{32:064x}" + f"{n:064x}" + padded


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--hearth", default="target/release/hearth")
    ap.add_argument("--calls", type=int, default=10_000)
    ap.add_argument("--bytes", type=int, default=1024)
    a = ap.parse_args()
    if not 1 <= a.bytes <= 100_000:
        sys.exit("--bytes must be 1-100000")
    port = free_port()
    url = f"http://127.0.0.1:{port}/"
    err = open("/tmp/console-mem.log", "w")
    node = subprocess.Popen([a.hearth, "--ephemeral", "--http.port", str(port)],
                            stdout=subprocess.DEVNULL, stderr=err)
    try:
        for _ in range(300):
            try:
                rpc(url, "eth_chainId", [])
                break
            except OSError:
                time.sleep(0.05)
        alice = rpc(url, "eth_accounts", [])[0]
        deploy = rpc(url, "eth_sendTransaction", [{"from": alice, "data": "0x" + looping_logger(a.calls)}])
        logger = rpc(url, "eth_getTransactionReceipt", [deploy])["contractAddress"]
        data = log_string(a.bytes)
        idle_rss = status_kib(node.pid, "VmRSS")
        idle_hwm = status_kib(node.pid, "VmHWM")
        total_mb = a.calls * (len(data) // 2 - 2) / 1e6
        rpc(url, "eth_call", [{"to": logger, "data": data, "gas": "0x1c9c380"}, "latest"])
        after_call = status_kib(node.pid, "VmHWM")
        tx = rpc(url, "eth_sendTransaction", [{"from": alice, "to": logger, "data": data, "gas": "0x1c9c380"}])
        status = rpc(url, "eth_getTransactionReceipt", [tx])["status"]
        after_tx = status_kib(node.pid, "VmHWM")
    finally:
        node.terminate()
        node.wait(timeout=30)
        err.close()
    log = open("/tmp/console-mem.log").read()
    cut = [l for l in log.splitlines() if "console output cut" in l]
    peak = max(after_call, after_tx, idle_hwm) - idle_rss
    print(f"console.log of {total_mb:.1f} MB ({a.calls} calls of {a.bytes} characters), tx status {status}")
    print("| | KiB |")
    print("|---|---|")
    print(f"| RSS idle (after deploy) | {idle_rss} |")
    print(f"| peak after eth_call | {after_call} |")
    print(f"| peak after the mined transaction | {after_tx} |")
    print(f"| peak above idle | {peak} |")
    print(f"lines saying the output was cut: {len(cut)}")
    for line in cut:
        print("  " + line[:200])
    ok = peak < 64 * 1024 and len(cut) == 2 and status == "0x1"
    print("ok" if ok else "FAIL")
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
