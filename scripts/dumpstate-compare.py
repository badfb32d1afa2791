#!/usr/bin/env python3
"""State dumps between anvil and Hearth, both ways, over RPC and through files
(scripts/dumpstate-compare.sh starts the nodes and calls the steps in order).

    python3 scripts/dumpstate-compare.py build URL              # transfers, a contract, dev patches
    python3 scripts/dumpstate-compare.py rpc FROM_URL TO_URL    # anvil_dumpState -> anvil_loadState, compare
    python3 scripts/dumpstate-compare.py file FILE URL          # a --dump-state file against a node's reads

`rpc` dumps FROM, loads the dump into TO, then reads every account of the dump on both nodes
(eth_getBalance, eth_getTransactionCount, eth_getCode, eth_getStorageAt of every slot the dump
lists) and compares each value: the two nodes' answers must be equal, and equal to the dump's.
`file` reads a `--dump-state` file (plain JSON) and compares it with what URL, started with
`--load-state FILE`, answers. Each prints `LABEL: N equal, M different` (and every difference)
and exits 1 on any difference. With SABOTAGE set, `rpc` changes one loaded balance on TO before
comparing, which must make it fail.
"""

import gzip
import json
import os
import sys
import urllib.request

A0 = "0xf39fd6e51aad88f6f4ce6ab8827279cfffb92266"
A1 = "0x70997970c51812dc3a010c7d01b50e0d17dc79c8"
STRANGER = "0x00000000000000000000000000000000000c0ffe"
PATCHED = "0x000000000000000000000000000000000000d00d"
# A contract whose constructor stores 0x2a in slot 0 and 0x99 in slot 1, and whose code returns
# slot 0: SLOAD(0), MSTORE(0), RETURN(0, 32).
RUNTIME = "60005460005260206000f3"


def init_code(salt):
    runtime = bytes.fromhex(RUNTIME)
    body = bytes.fromhex("602a600055") + bytes([0x60, salt, 0x60, 0x01, 0x55])
    tail_len = 12
    offset = len(body) + tail_len
    tail = bytes([0x60, len(runtime), 0x60, offset, 0x60, 0, 0x39, 0x60, len(runtime), 0x60, 0, 0xF3])
    return "0x" + (body + tail + runtime).hex()


def rpc(url, method, params=()):
    body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": method, "params": list(params)}).encode()
    request = urllib.request.Request(url, body, {"content-type": "application/json"})
    with urllib.request.urlopen(request, timeout=60) as response:
        answer = json.loads(response.read())
    if "error" in answer:
        raise SystemExit(f"{url} {method}: {answer['error']}")
    return answer["result"]


def wait_receipt(url, tx_hash):
    receipt = rpc(url, "eth_getTransactionReceipt", [tx_hash])
    if receipt is None:
        rpc(url, "evm_mine")
        receipt = rpc(url, "eth_getTransactionReceipt", [tx_hash])
    if receipt is None or receipt["status"] != "0x1":
        raise SystemExit(f"{url}: transaction {tx_hash} failed: {receipt}")
    return receipt


def build(url, salt=0x99):
    """Transfers, a contract with storage, and every dev patch."""
    for value in (0x1234, 0x10, 0x1):
        wait_receipt(url, rpc(url, "eth_sendTransaction", [{"from": A0, "to": STRANGER, "value": hex(value)}]))
    wait_receipt(url, rpc(url, "eth_sendTransaction", [{"from": A1, "to": A0, "value": "0xde0b6b3a7640000"}]))
    receipt = wait_receipt(url, rpc(url, "eth_sendTransaction", [{"from": A0, "data": init_code(salt), "gas": "0x100000"}]))
    contract = receipt["contractAddress"]
    rpc(url, "anvil_setCode", [PATCHED, "0x6001600055"])
    rpc(url, "anvil_setNonce", [PATCHED, "0x2a"])
    rpc(url, "anvil_setBalance", [PATCHED, "0x" + "f" * 64])
    rpc(url, "anvil_setStorageAt", [PATCHED, "0x7", "0x" + "ff" * 32])
    rpc(url, "anvil_setStorageAt", [contract, "0x" + "ab" * 32, "0x" + "01" * 32])
    print(f"built state on {url}: contract {contract}")


class Tally:
    def __init__(self, label):
        self.label, self.equal, self.different = label, 0, []

    def check(self, what, *values):
        if all(v == values[0] for v in values):
            self.equal += 1
        else:
            self.different.append((what, values))

    def report(self):
        for what, values in self.different:
            print(f"  DIFFERENT {what}: {' vs '.join(map(str, values))}")
        print(f"{self.label}: {self.equal} equal, {len(self.different)} different")
        return not self.different


def as_int(value):
    if isinstance(value, int):
        return value
    return int(value, 16)


def reads(url, address, slots):
    """What `url` answers for the account: balance, nonce, code and each slot, normalized."""
    return {
        "balance": as_int(rpc(url, "eth_getBalance", [address, "latest"])),
        "nonce": as_int(rpc(url, "eth_getTransactionCount", [address, "latest"])),
        "code": rpc(url, "eth_getCode", [address, "latest"]).lower(),
        "storage": {slot: as_int(rpc(url, "eth_getStorageAt", [address, slot, "latest"])) for slot in slots},
    }


def from_dump(account):
    return {
        "balance": as_int(account["balance"]),
        "nonce": as_int(account["nonce"]),
        "code": account["code"].lower(),
        "storage": {slot: as_int(value) for slot, value in account["storage"].items()},
    }


def compare(tally, dump, *urls):
    """Every account of `dump` as each node answers it, and as the dump says."""
    accounts = dump["accounts"]
    if not accounts:
        tally.check("accounts in the dump", "none", "some")
    for address, account in sorted(accounts.items()):
        expected = from_dump(account)
        answers = [reads(url, address, list(account["storage"])) for url in urls]
        for field in ("balance", "nonce", "code"):
            tally.check(f"{address} {field}", expected[field], *[a[field] for a in answers])
        for slot in account["storage"]:
            tally.check(f"{address} slot {slot}", expected["storage"][slot], *[a["storage"][slot] for a in answers])


def decode_hex_gzip(text):
    data = bytes.fromhex(text[2:])
    if data[:2] != b"\x1f\x8b":
        raise SystemExit("anvil_dumpState did not answer gzip")
    return json.loads(gzip.decompress(data))


def main():
    command, *args = sys.argv[1:]
    if command == "build":
        build(args[0], int(args[1], 16) if len(args) > 1 else 0x99)
        return 0
    if command == "rpc":
        source, target = args
        dumped = rpc(source, "anvil_dumpState")
        dump = decode_hex_gzip(dumped)
        if rpc(target, "anvil_loadState", [dumped]) is not True:
            raise SystemExit("anvil_loadState did not answer true")
        if os.environ.get("SABOTAGE"):
            # Proves the comparison can fail: one loaded balance changed behind its back.
            rpc(target, "anvil_setBalance", [STRANGER, "0x1"])
        tally = Tally(f"dump of {source} loaded into {target}")
        compare(tally, dump, source, target)
        return 0 if tally.report() else 1
    if command == "file":
        path, url = args
        with open(path, encoding="utf-8") as f:
            dump = json.load(f)
        tally = Tally(f"{path} loaded into {url}")
        compare(tally, dump, url)
        return 0 if tally.report() else 1
    raise SystemExit(f"unknown command {command}")


if __name__ == "__main__":
    sys.exit(main())
