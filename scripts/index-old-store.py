#!/usr/bin/env python3
"""A datadir written by a Hearth from before the address index, opened by this one.

usage: python3 scripts/index-old-store.py OLD_HEARTH NEW_HEARTH [TRANSFERS=30] [GAP=100]

OLD_HEARTH (a build before the index, e.g. commit 9ce5f15) writes TRANSFERS transfers from the
three first dev accounts to one address, GAP empty blocks after each, into a new datadir; then
NEW_HEARTH opens the datadir, indexes it at start (its log's "address index built" line says
how many blocks and how long), and both Otterscan searches must list every transfer. Exits 1
when they do not. Loopback only; the datadir is removed at the end.
"""
import json
import shutil
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, __import__("os").path.dirname(__import__("os").path.abspath(__file__)))
from jsonrpc_client import rpc  # noqa: E402
from local_node import free_port  # noqa: E402

TARGET = "0x" + "77" * 20


def start(binary, datadir, log):
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    proc = subprocess.Popen([binary, "--datadir", datadir, "--http.port", str(port)],
                            stdout=log, stderr=subprocess.STDOUT)
    for _ in range(400):
        try:
            rpc(url, "eth_chainId", [])
            return proc, url
        except OSError:
            time.sleep(0.05)
    proc.kill()
    sys.exit(f"{binary} did not start")


def main():
    old, new = sys.argv[1], sys.argv[2]
    transfers = int(sys.argv[3]) if len(sys.argv) > 3 else 30
    gap = int(sys.argv[4]) if len(sys.argv) > 4 else 100
    datadir = tempfile.mkdtemp(prefix="hearth-old-store.")
    try:
        with tempfile.TemporaryFile() as log:
            proc, url = start(old, datadir, log)
            accounts = rpc(url, "eth_accounts", [])
            sent = []
            for i in range(transfers):
                tx = {"from": accounts[i % 3], "to": TARGET, "value": "0x1"}
                sent.append(rpc(url, "eth_sendTransaction", [tx]))
                rpc(url, "hardhat_mine", [hex(gap)])
            head = int(rpc(url, "eth_blockNumber", []), 16)
            proc.terminate()
            proc.wait()
        with tempfile.TemporaryFile() as log:
            started = time.time()
            proc, url = start(new, datadir, log)
            opened = time.time() - started
            before = rpc(url, "ots_searchTransactionsBefore", [TARGET, 0, 100])
            after = rpc(url, "ots_searchTransactionsAfter", [TARGET, 0, 100])
            proc.terminate()
            proc.wait()
            log.seek(0)
            lines = [l for l in log.read().decode(errors="replace").splitlines() if "address index" in l]
        print(f"old store: {transfers} transfers in {head + 1} blocks; opened by the new build in {opened:.2f} s")
        for line in lines:
            print("  " + line)
        want = list(reversed(sent))
        ok = [t["hash"] for t in before["txs"]] == want and [t["hash"] for t in after["txs"]] == want
        print("searches list every transfer, newest first" if ok else "FAIL: the searches do not list the transfers")
        return 0 if ok and lines else 1
    finally:
        shutil.rmtree(datadir, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
