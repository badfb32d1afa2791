#!/usr/bin/env python3
"""Dev writes of the head state while automine builds blocks: none may be lost.

Eight dev accounts send 1-wei transfers to one address X back to back (automine, so a block is
being built most of the time), and meanwhile each round makes one write to X's account:

- set:    anvil_setBalance(X, B) with B far above anything the transfers add; afterwards X
          holds at least B.
- add:    anvil_addBalance(X, A) with A as large; afterwards X holds at least A more than it
          did just before.
- revert: evm_snapshot, anvil_setBalance(X, B), evm_revert; afterwards X holds less than B.

A block whose build began before the write, and which committed after it, carries X's whole
account as the old state had it: the first two writes would be undone, the revert's would come
back. Each such round is counted as lost. The node is started here (loopback, a free port);
with --anvil the same rounds run against anvil first, as the reference.

    python3 scripts/patch-race.py [--hearth target/debug/hearth] [--anvil PATH] [--rounds 30]
                                  [--kinds set,add,revert]

Exits 1 when any round against Hearth was lost. Stdlib only; every wait is bounded.
"""
import argparse
import os
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from jsonrpc_client import rpc  # noqa: E402
from local_node import free_port, start  # noqa: E402

X = "0x00000000000000000000000000000000000c0ffe"
BIG = 10**30
SENDERS = 8


def balance(url):
    return int(rpc(url, "eth_getBalance", [X, "latest"]), 16)


def run(name, url, rounds, kinds):
    accounts = rpc(url, "eth_accounts", [])[:SENDERS]
    lost = {"set": 0, "add": 0, "revert": 0}
    first = int(rpc(url, "eth_blockNumber", []), 16)
    for r in range(rounds):
        kind = kinds[r % len(kinds)]
        stop = threading.Event()
        errors = []

        def send(sender):
            while not stop.is_set():
                try:
                    rpc(url, "eth_sendTransaction", [{"from": sender, "to": X, "value": "0x1"}])
                except Exception as e:  # a refused send is a failure of the run, not a loss
                    errors.append(str(e))
                    return

        threads = [threading.Thread(target=send, args=(a,)) for a in accounts]
        for t in threads:
            t.start()
        time.sleep(0.03)
        target = BIG * (r + 2)
        if kind == "set":
            rpc(url, "anvil_setBalance", [X, hex(target)])
        elif kind == "add":
            before = balance(url)
            rpc(url, "anvil_addBalance", [X, hex(BIG)])
        else:
            snapshot = rpc(url, "evm_snapshot", [])
            rpc(url, "anvil_setBalance", [X, hex(target)])
            rpc(url, "evm_revert", [snapshot])
        time.sleep(0.03)
        stop.set()
        for t in threads:
            t.join(timeout=60)
        if errors:
            sys.exit(f"{name}: a transfer failed in round {r} ({kind}): {errors[0]}")
        final = balance(url)
        if kind == "set" and final < target:
            lost["set"] += 1
        elif kind == "add" and final < before + BIG:
            lost["add"] += 1
        elif kind == "revert" and final >= target:
            lost["revert"] += 1
        if kind == "revert":
            # Start the next round below every later target again.
            rpc(url, "anvil_setBalance", [X, "0x0"])
    blocks = int(rpc(url, "eth_blockNumber", []), 16) - first
    total = sum(lost.values())
    detail = ", ".join(f"{k} {v}" for k, v in lost.items())
    print(f"patch-race: {name}: {rounds} rounds, {blocks} blocks mined meanwhile, "
          f"{total} lost ({detail})")
    return total


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--hearth", default="target/debug/hearth")
    ap.add_argument("--anvil", help="run the same rounds against this anvil first")
    ap.add_argument("--rounds", type=int, default=30)
    ap.add_argument("--kinds", default="set,add,revert", help="which writes, in turn")
    args = ap.parse_args()
    kinds = args.kinds.split(",")
    if not kinds or any(k not in ("set", "add", "revert") for k in kinds):
        sys.exit("--kinds is a comma-separated list of set, add, revert")
    if args.rounds < 1 or args.rounds > 10_000:
        sys.exit("--rounds must be in 1..=10000")
    nodes = []
    if args.anvil:
        nodes.append(("anvil", [args.anvil, "--host", "127.0.0.1", "--silent"]))
    nodes.append(("hearth", [args.hearth, "--ephemeral", "--host", "127.0.0.1"]))
    lost_hearth = 0
    for name, argv in nodes:
        port = free_port()
        url = f"http://127.0.0.1:{port}/"
        proc = start(argv + ["-p", str(port)], url)
        try:
            lost = run(name, url, args.rounds, kinds)
        finally:
            proc.kill()
            proc.wait()
        if name == "hearth":
            lost_hearth = lost
    sys.exit(1 if lost_hearth else 0)


if __name__ == "__main__":
    main()
