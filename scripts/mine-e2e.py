#!/usr/bin/env python3
"""End to end: one `evm_mine` of a big pooled block, `--exec.parallel never` against `always`
(and `auto`) in the same run, with a spin-loop baseline (issue 12's end-to-end acceptance).

Usage:
    python3 scripts/mine-e2e.py --hearth target/release/hearth [--rounds 3] [--port-base 9500]
        [--workloads hashloop,erc20,one-sender,transfers] [--modes never,always,auto]
        [--baseline OLD_BINARY] [--exec-threads N] [--perf DIR]

For each workload and round, a fresh node per mode (`--no-mining`, a high `--gas-limit`, enough
`--accounts`) deploys BenchToken, runs the workload's setup blocks, fills its pool through
`eth_sendTransaction` batches, then times one `evm_mine` from the client (request sent to answer
received). The modes of one round run one after another in alternating order, so a neighbour's
load spreads over both. The node logs each block's split at debug level (the miner's `block
timings`: build on the executor pool, commit on the state owner, pool clean-up; the state
owner's `block write timings`: state root, apply, durable, and the lanes the state root ran
in), and the script prints the median of each part for the timed block. `--exec-threads` passes
`--exec.threads` to every node (default: the node's own, the executor threads); a list (`1,2`)
runs every mode at each count, labelled `MODE/tN`, so one run compares the state root in one
lane against several.

Workloads (BenchToken from ../shared/peers/build/BenchToken.json):
- hashloop: 2,000 senders each sending `hashLoop(1000)` (execution-heavy, independent), after
  a warm-up block of 200 more;
- erc20: 1,000 holders each sending two BenchToken transfers to other holders, after a warm-up
  block of one transfer each;
- one-sender: 3,000 plain transfers from one account to 3,000 fresh addresses, after a warm-up
  block of 300;
- transfers: 2,000 senders each sending one plain transfer to its own fresh address (about
  4,000 changed accounts: the widest state root), after a warm-up block of 200 more.

With `--baseline`, every mode also runs on the older binary in the same rounds (labelled
`old-MODE`), so a before/after comparison shares the machine's load; each binary's parallel
modes are compared with its own `never`.

With `--perf DIR`, `perf record --call-graph dwarf` is attached to each node for its timed
`evm_mine` only (from one second before it to a fifth of a second after), written to
`DIR/WORKLOAD-MODE-rROUND.data`, for `scripts/perf-roles.py` (`--frames accrue_` gives the
receipts' blooms' share of the block's loop, BENCHMARKS.md session 24).

Every mode must give the same state root and transactions root for a workload (the blocks are
built from the same pool on the same parent): `identical=yes`. The spin-loop speed-up is two
processes spinning against one, measured right before each workload.
Final lines: `mine-e2e: workload=W txs=N never_ms=A always_ms=B speedup=X spin_speedup=Y
efficiency=X/Y identical=yes|no`.
"""

import argparse
import json
import multiprocessing
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from jsonrpc_client import batch, post, rpc  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
SHARED = os.environ.get("SHARED_DIR", os.path.join(HERE, "..", "..", "shared"))
TOKEN_JSON = os.path.join(SHARED, "peers", "build", "BenchToken.json")
GAS_LIMIT = 3_000_000_000
GENESIS_TIME = 1_800_000_000


def spin(n):
    x = 0
    for i in range(n):
        x ^= i * 2654435761 & 0xFFFFFFFF
    return x


def spin_speedup(work=6_000_000):
    """Two processes each doing `work` at once, against one doing it alone."""
    with multiprocessing.Pool(2) as pool:
        pool.map(spin, [1000, 1000])  # start both workers before timing
        start = time.perf_counter()
        pool.map(spin, [work])
        one = time.perf_counter() - start
        start = time.perf_counter()
        pool.map(spin, [work, work])
        two = time.perf_counter() - start
    return 2 * one / two


class Node:
    """One Hearth process with its log file."""

    def __init__(self, binary, port, mode, accounts, exec_threads=None):
        self.url = f"http://127.0.0.1:{port}"
        self.log = tempfile.NamedTemporaryFile(prefix=f"mine-e2e-{mode}-", suffix=".log", delete=False)
        env = dict(os.environ,
                   RUST_LOG="warn,actors::miner=debug,actors::state=debug,actors::block_exec=debug")
        self.home = tempfile.mkdtemp(prefix="mine-e2e-home-")
        env["HOME"] = self.home
        self.process = subprocess.Popen(
            [binary, "-p", str(port), "--no-mining", "--gas-limit", str(GAS_LIMIT),
             "--accounts", str(accounts), "--exec.parallel", mode, "--log.format", "json",
             "--timestamp", str(GENESIS_TIME)]
            + (["--exec.threads", str(exec_threads)] if exec_threads else []),
            stdout=self.log, stderr=subprocess.STDOUT, env=env,
        )
        deadline = time.monotonic() + 60
        while True:
            try:
                rpc(self.url, "eth_chainId", [])
                break
            except Exception:
                if self.process.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError(f"node ({mode}) did not start; log: {self.log.name}")
                time.sleep(0.05)
        self.accounts = rpc(self.url, "eth_accounts", [])
        self.mined = 0
        self.parallel = {}
        self.executed = {}

    def mine(self):
        """Mines one block at a fixed timestamp, so every mode builds the same chain."""
        self.mined += 1
        rpc(self.url, "evm_mine", [GENESIS_TIME + 12 * self.mined])

    def stop(self):
        self.process.terminate()
        try:
            self.process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.process.kill()
        self.log.close()
        # The log is kept only when asked (MINE_E2E_KEEP_LOGS=1) or when the node failed.
        if not os.environ.get("MINE_E2E_KEEP_LOGS") and self.process.returncode in (0, -15):
            os.unlink(self.log.name)
        shutil.rmtree(self.home, ignore_errors=True)

    def timings(self):
        """The last block's split from the node's debug log (µs)."""
        miner, state = {}, {}
        with open(self.log.name) as f:
            for line in f:
                try:
                    entry = json.loads(line)
                except ValueError:
                    continue
                if not isinstance(entry, dict):
                    continue
                fields = entry.get("fields", {})
                if fields.get("message") == "block timings":
                    miner = fields
                elif fields.get("message") == "parallel block":
                    # The timed block's executor split (logged before the miner's timings).
                    self.parallel = fields
                elif fields.get("message") == "block executed":
                    # Every block's set-up, loop and after-the-loop split (newer binaries).
                    self.executed = fields
                elif fields.get("message") == "block write timings":
                    state = fields
        return miner, state


def word(value):
    return f"{value:064x}"


def address_word(address):
    return "0" * 24 + address[2:].lower()


def deploy_token(node, bench):
    code = "0x" + bench["bytecode"].replace("0x", "")
    tx = rpc(node.url, "eth_sendTransaction", [{"from": node.accounts[0], "data": code, "gas": hex(3_000_000)}])
    node.mine()
    receipt = rpc(node.url, "eth_getTransactionReceipt", [tx])
    return receipt["contractAddress"]


def workload_txs(name, node, bench):
    """Runs the workload's setup on `node`; returns the transactions of the warm-up block and
    of the timed block (the same kind of transactions, so the node has seen the workload once,
    as a node mining a stream of such blocks has: `--exec.parallel` learns which call targets
    it can split from the blocks it runs)."""
    ids = bench["methodIdentifiers"]
    token = deploy_token(node, bench)
    accounts = node.accounts
    if name == "hashloop":
        data = "0x" + ids["hashLoop(uint256)"] + word(1000)
        txs = [{"from": a, "to": token, "data": data, "gas": hex(400_000)} for a in accounts[1:2201]]
        return txs[:200], txs[200:]
    if name == "erc20":
        holders = accounts[1:1001]
        fund = [
            {"from": accounts[0], "to": token, "gas": hex(100_000),
             "data": "0x" + ids["transfer(address,uint256)"] + address_word(h) + word(10**18)}
            for h in holders
        ]
        batch(node.url, [("eth_sendTransaction", [tx]) for tx in fund])
        node.mine()
        txs = []
        for round_ in range(3):
            for i, holder in enumerate(holders):
                to = holders[(i * 7 + 13 + round_ * 101) % len(holders)]
                txs.append({"from": holder, "to": token, "gas": hex(100_000),
                            "data": "0x" + ids["transfer(address,uint256)"] + address_word(to) + word(1 + round_)})
        return txs[:1000], txs[1000:]
    if name == "transfers":
        txs = [
            {"from": a, "to": "0x" + f"{0xfeed0000 + i:040x}", "value": "0x1", "gas": hex(21_000)}
            for i, a in enumerate(accounts[1:2201])
        ]
        return txs[:200], txs[200:]
    if name == "one-sender":
        txs = [
            {"from": accounts[0], "to": "0x" + f"{0xbeef0000 + i:040x}", "value": "0x1", "gas": hex(21_000)}
            for i in range(3300)
        ]
        return txs[:300], txs[300:]
    raise SystemExit(f"unknown workload {name}")


def run_one(binary, port, mode, name, bench, exec_threads=None, perf_to=None):
    """(ms of the timed evm_mine, txs, state root, tx root, miner split, state split); with
    `perf_to`, the timed evm_mine is profiled into that file."""
    node = Node(binary, port, mode, 2201, exec_threads)
    try:
        warmup, txs = workload_txs(name, node, bench)
        batch(node.url, [("eth_sendTransaction", [tx]) for tx in warmup])
        node.mine()
        batch(node.url, [("eth_sendTransaction", [tx]) for tx in txs])
        status = rpc(node.url, "txpool_status", [])
        pending = int(status["pending"], 16)
        if pending != len(txs):
            raise RuntimeError(f"{name}/{mode}: {pending} pending, expected {len(txs)}")
        perf = None
        if perf_to:
            perf = subprocess.Popen(
                ["perf", "record", "-F", "4999", "--call-graph", "dwarf,16384", "-p",
                 str(node.process.pid), "-o", perf_to],
                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            time.sleep(1.0)  # perf attaches before the block
        start = time.perf_counter()
        node.mine()
        ms = (time.perf_counter() - start) * 1000
        if perf:
            time.sleep(0.2)
            perf.send_signal(2)
            perf.wait(timeout=60)
        block = rpc(node.url, "eth_getBlockByNumber", ["latest", False])
        if len(block["transactions"]) != len(txs):
            raise RuntimeError(f"{name}/{mode}: block has {len(block['transactions'])} of {len(txs)} txs")
        miner, state = node.timings()
        miner = dict(miner, parallel=node.parallel, executed=node.executed)
        return ms, len(txs), block["stateRoot"], block["transactionsRoot"], miner, state
    finally:
        node.stop()


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--hearth", required=True)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--port-base", type=int, default=9500)
    parser.add_argument("--workloads", default="hashloop,erc20,one-sender,transfers")
    parser.add_argument("--modes", default="never,always,auto")
    parser.add_argument("--baseline", help="an older hearth binary to run beside --hearth")
    parser.add_argument("--exec-threads", help="--exec.threads for every node, or a list (1,2)")
    parser.add_argument("--perf", help="a directory: profile each timed evm_mine into it")
    args = parser.parse_args()
    if not 1 <= args.rounds <= 50:
        sys.exit("--rounds must be in 1..=50")
    if args.perf:
        if shutil.which("perf") is None:
            sys.exit("--perf needs perf (linux-tools) on PATH")
        os.makedirs(args.perf, exist_ok=True)
    with open(TOKEN_JSON) as f:
        bench = json.load(f)
    # (label, binary, mode, threads): the binary under test, then the baseline's.
    counts = [int(t) for t in args.exec_threads.split(",")] if args.exec_threads else [None]
    suffix = (lambda t: f"/t{t}") if len(counts) > 1 else (lambda t: "")
    variants = [(f"{m}{suffix(t)}", args.hearth, m, t) for t in counts for m in args.modes.split(",")]
    if args.baseline:
        variants += [(f"old-{m}{suffix(t)}", args.baseline, m, t) for t in counts for m in args.modes.split(",")]
    modes = [label for label, _, _, _ in variants]
    binary_of = {label: (binary, mode, t) for label, binary, mode, t in variants}
    finals = []
    print(f"load average before: {os.getloadavg()[0]:.2f}", flush=True)
    print("| workload | mode | txs | evm_mine ms (median) | build ms | commit ms | state root ms | lanes | apply ms | durable ms | pool ms |")
    print("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for name in args.workloads.split(","):
        spin = spin_speedup()
        samples = {m: [] for m in modes}
        roots = set()
        txs = 0
        for round_ in range(args.rounds):
            order = modes if round_ % 2 == 0 else list(reversed(modes))
            for mode in order:
                binary, flag, threads = binary_of[mode]
                perf_to = (os.path.join(args.perf, f"{name}-{mode.replace('/', '-')}-r{round_ + 1}.data")
                           if args.perf else None)
                ms, txs, root, txroot, miner, state = run_one(binary, args.port_base, flag, name, bench,
                                                              threads, perf_to)
                samples[mode].append((ms, miner, state))
                roots.add((root, txroot))
                par = miner.get("parallel") or {}
                split = " ".join(f"{k}={par[k]}" for k in ("read_ahead", "validated", "reexecuted", "direct",
                                                           "abandoned", "waited_us", "helper_start_us") if k in par)
                # Older binaries log no "block executed": their loop time is in the parallel split.
                done = miner.get("executed") or ({"loop_us": par["loop_us"]} if "loop_us" in par else {})
                phases = " ".join(f"{k}={done[k]}" for k in ("setup_us", "loop_us", "after_us") if k in done)
                print(f"# {name} round {round_ + 1} {mode}: {ms:.1f} ms state {root[:12]} txs {txroot[:12]}"
                      f"{' executed: ' + phases if phases else ''}"
                      f"{' parallel: ' + split if split else ''}", file=sys.stderr, flush=True)
        for mode in modes:
            runs = samples[mode]
            med = lambda key, src: statistics.median(float(r[src].get(key, 0)) for r in runs) / 1000

            def part(key, src):
                return f"{med(key, src):.1f}"

            def lanes(runs):
                # Older binaries do not log the lanes.
                seen = sorted({str(r[2]["lanes"]) for r in runs if "lanes" in r[2]})
                return "/".join(seen) or "-"

            print(f"| {name} | {mode} | {txs} | {statistics.median(r[0] for r in runs):.1f} | "
                  f"{part('build_us', 1)} | {part('commit_us', 1)} | {part('state_us', 2)} | "
                  f"{lanes(runs)} | "
                  f"{part('apply_us', 2)} | {part('durable_us', 2)} | {part('pool_us', 1)} |", flush=True)
        # Every variant built the same block (also when no mode is compared with another).
        finals.append(f"mine-e2e: workload={name} variants={len(modes)} identical={'yes' if len(roots) == 1 else 'no'}")
        for mode in modes:
            base = ("old-never" if mode.startswith("old-") else "never") + suffix(binary_of[mode][2])
            if mode == base or base not in samples:
                continue
            never = statistics.median(r[0] for r in samples[base])
            this = statistics.median(r[0] for r in samples[mode])
            speedup = never / this
            finals.append(
                f"mine-e2e: workload={name} mode={mode} txs={txs} never_ms={never:.1f} {mode}_ms={this:.1f} "
                f"speedup={speedup:.2f} spin_speedup={spin:.2f} efficiency={speedup / spin:.2f} "
                f"identical={'yes' if len(roots) == 1 else 'no'}"
            )
    print(f"load average after: {os.getloadavg()[0]:.2f}")
    for line in finals:
        print(line)
    if any("identical=no" in line for line in finals):
        sys.exit(1)


if __name__ == "__main__":
    main()
