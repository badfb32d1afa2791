#!/usr/bin/env python3
"""Start-up time with many dev accounts: from launching the node to its first `eth_accounts`
answer, for Hearth and (when given) anvil, three starts each at 10 and 1,000 accounts. With
anvil, the two nodes' account lists (the default mnemonic and path) must be the same, in order:
Hearth derives its accounts from a parent key made once, and anvil is the reference.

    python3 scripts/startup-accounts.py --hearth target/release/hearth [--anvil PATH] [--port 9850]

Each Hearth start gets a fresh HOME; every node listens on 127.0.0.1 only and is stopped
before the next starts.
"""
import argparse
import json
import os
import shutil
import subprocess
import tempfile
import time
import urllib.request


def first_answer(cmd, port, env=None, timeout=60):
    """Seconds from launch to the first eth_accounts answer, and the accounts it lists."""
    started = time.monotonic()
    process = subprocess.Popen(cmd + ["-p", str(port)], stdout=subprocess.DEVNULL,
                               stderr=subprocess.DEVNULL, env=env)
    body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "eth_accounts", "params": []}).encode()
    try:
        while True:
            if time.monotonic() - started > timeout or process.poll() is not None:
                raise RuntimeError(f"{cmd[0]} did not answer")
            try:
                request = urllib.request.Request(f"http://127.0.0.1:{port}", data=body,
                                                 headers={"content-type": "application/json"})
                accounts = json.loads(urllib.request.urlopen(request, timeout=1).read())["result"]
                return time.monotonic() - started, [a.lower() for a in accounts]
            except OSError:
                time.sleep(0.005)
    finally:
        process.terminate()
        process.wait()


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--hearth", required=True)
    parser.add_argument("--anvil")
    parser.add_argument("--port", type=int, default=9850)
    args = parser.parse_args()
    print("| node | accounts | start to first answer, 3 starts (ms) |")
    print("|---|---:|---|")
    for count in (10, 1000):
        runs = []
        for _ in range(3):
            home = tempfile.mkdtemp(prefix="startup-home-")
            try:
                runs.append(first_answer([args.hearth, "--accounts", str(count)], args.port,
                                         env=dict(os.environ, HOME=home)))
            finally:
                shutil.rmtree(home, ignore_errors=True)
        assert all(len(listed) == count for _, listed in runs)
        print(f"| hearth | {count} | {', '.join(f'{s * 1000:.0f}' for s, _ in runs)} |")
        if args.anvil:
            hearth_accounts = runs[0][1]
            runs = [first_answer([args.anvil, "--accounts", str(count)], args.port) for _ in range(3)]
            assert all(len(listed) == count for _, listed in runs)
            print(f"| anvil | {count} | {', '.join(f'{s * 1000:.0f}' for s, _ in runs)} |")
            if runs[0][1] != hearth_accounts:
                first = next(i for i, (a, b) in enumerate(zip(runs[0][1], hearth_accounts)) if a != b)
                raise SystemExit(f"account {first} differs: anvil {runs[0][1][first]}, "
                                 f"hearth {hearth_accounts[first]}")
            print(f"| (same {count} accounts as anvil, in order) | | |")
    if args.anvil:
        # Another derivation path: account i at the path followed by i, as anvil derives it.
        path = ["--derivation-path", "m/44'/60'/1'/0/", "--accounts", "100"]
        home = tempfile.mkdtemp(prefix="startup-home-")
        try:
            _, hearth_accounts = first_answer([args.hearth] + path, args.port,
                                              env=dict(os.environ, HOME=home))
        finally:
            shutil.rmtree(home, ignore_errors=True)
        _, anvil_accounts = first_answer([args.anvil] + path, args.port)
        if hearth_accounts != anvil_accounts:
            raise SystemExit("the 100 accounts under m/44'/60'/1'/0/ differ from anvil's")
        print("same 100 accounts as anvil under m/44'/60'/1'/0/")


if __name__ == "__main__":
    main()
