#!/usr/bin/env python3
"""Keeps a node's state owner busy with large dev patches (scripts/read-ab.sh, WRITES=patches).

Loads, every PERIOD seconds (back to back when a load takes longer), an anvil_loadState of
ACCOUNTS accounts with SLOTS storage slots each, balances and slot values changed every time so
that each load rewrites every account's version and a new trie path: one patch of several
thousand sled keys. The offered write load is the same for every node it is pointed at, so
two builds' read throughput under it can be compared. Runs until killed; stdlib only.

    python3 scripts/patch-writer.py http://127.0.0.1:9451/ [ACCOUNTS=200] [SLOTS=4] [PERIOD=0.1]
"""
import gzip
import http.client
import json
import sys
import time
import urllib.parse

url = urllib.parse.urlparse(sys.argv[1])
ACCOUNTS = int(sys.argv[2]) if len(sys.argv) > 2 else 200
SLOTS = int(sys.argv[3]) if len(sys.argv) > 3 else 4
PERIOD = float(sys.argv[4]) if len(sys.argv) > 4 else 0.1
conn = http.client.HTTPConnection(url.hostname, url.port, timeout=60)


def rpc(method, params):
    body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": method, "params": params})
    conn.request("POST", "/", body, {"content-type": "application/json"})
    reply = json.loads(conn.getresponse().read())
    if "error" in reply:
        raise SystemExit(f"{method}: {reply['error']}")
    return reply["result"]


# The node's own dump gives the fields anvil_loadState requires (block, best_block_number).
base = json.loads(gzip.decompress(bytes.fromhex(rpc("anvil_dumpState", [])[2:])))


def state(round_):
    accounts = {}
    for i in range(ACCOUNTS):
        address = "0x" + (0xC0FFEE0000 + i).to_bytes(20, "big").hex()
        storage = {f"0x{s:064x}": f"0x{round_ * 1000 + i * SLOTS + s + 1:064x}" for s in range(SLOTS)}
        accounts[address] = {"nonce": 0, "balance": hex(10**18 + round_ * 7 + i), "code": "0x",
                             "storage": storage}
    dump = dict(base, accounts=accounts)
    return "0x" + gzip.compress(json.dumps(dump).encode(), compresslevel=1).hex()


# A few distinct states, prepared once so the writer's own CPU stays small.
states = [state(r) for r in range(8)]
loads = 0
started = time.monotonic()
while True:
    began = time.monotonic()
    rpc("anvil_loadState", [states[loads % len(states)]])
    loads += 1
    if loads % 50 == 0:
        print(f"{loads} loads, {loads / (time.monotonic() - started):.1f}/s", flush=True)
    rest = PERIOD - (time.monotonic() - began)
    if rest > 0:
        time.sleep(rest)
