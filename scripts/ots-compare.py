#!/usr/bin/env python3
"""Otterscan's `ots_` methods on Hearth and on anvil, side by side, and against Erigon's rules.

Usage (scripts/ots-compare.sh starts both nodes and calls this):
    python3 scripts/ots-compare.py HEARTH_URL ANVIL_URL CAST [--model-from hearth|anvil] [--quiet]
    python3 scripts/ots-compare.py HEARTH_URL ANVIL_URL CAST --latency [--blocks N] [--txs M]

Both nodes start from the same dev genesis (the "test ... junk" mnemonic, 30M gas, Prague, the
same --timestamp) and get the same raw transactions, signed offline with `cast mktx`, with every
block's timestamp set beforehand, so both chains hold the same transactions at the same
positions. Block hashes, state roots and mixHash differ between the two chains (genesis state,
prevrandao rule); each node's value for block N is replaced by `<hash N>` / `<stateRoot N>` /
`<mixHash N>` before anything is compared, so they are compared by position.

The scenario: ETH transfers (legacy and EIP-1559); deployments; a router that CALLs an EOA with
value, STATICCALLs a contract, DELEGATECALLs another and STATICCALLs the identity precompile; a
revert with Error(string); CREATE2 through a factory (a contract that stays, one that
self-destructs in its constructor); CREATE with value through a factory; a SELFDESTRUCT of an
existing contract to a fresh beneficiary; a nested call whose STATICCALL fails; a deployment that
reverts; empty blocks; a block with three transactions of one sender; the same addresses active
in many blocks so the searches page.

Then every method below is called with the same params on both nodes: ots_getApiLevel,
ots_getInternalOperations / ots_traceTransaction / ots_getTransactionError (every transaction
and an unknown hash), ots_hasCode (every address at several blocks), ots_getBlockDetails(ByHash)
and erigon_getHeaderByNumber (every block, one past the head), ots_getBlockTransactions (every
block, and pages of 1, 2 and 3 in the three-transaction block), ots_searchTransactionsBefore/After
(every address, block numbers 0, 1, every block of the chain and past the head, page sizes 1, 2,
3, 25), ots_getTransactionBySenderAndNonce (every sender, every nonce and the next one),
ots_getContractCreator (every address).

Two checks per call:
  1. Erigon's answer, computed from the model node's standard methods (eth_getBlockByNumber,
     eth_getTransactionByHash, eth_getTransactionReceipt, debug_traceTransaction's callTracer,
     eth_getCode; --model-from, Hearth by default) by Erigon's rules (class Model, written from
     Erigon's rpc/jsonrpc/otterscan_*.go), with the few decisions noted there. Hearth must give
     it: each difference is an ERIGON line and fails the run.
  2. anvil's answer, field by field against Hearth's: each difference is printed as
     `method params path: hearth=... anvil=...`; one listed in KNOWN (why, and which side answers
     as Erigon) is documented, any other fails the run.
Prints `N equal, M different (K known)` (equal: Hearth's answer is anvil's; known: differs only
where KNOWN says, and is Erigon's), then a summary by method and path; exit 1 on any failure.

SELF_TEST=1 (in ots-compare.sh) runs a second anvil in Hearth's place; with --model-from anvil the
ERIGON lines then list every way anvil is not Erigon, and with --simulate-erigon added (the
modelled answers in Hearth's place) the run must pass: KNOWN covers all of them.

--latency: on each node, a chain of N blocks (default 100,000; env OTS_LATENCY_BLOCKS) holding
M transactions (default 1,000) of one sender, one every N/M blocks (send a raw transaction, which
automines a block, then hardhat_mine the empty blocks up to the next), then 20 calls each of
ots_searchTransactionsBefore/After (page size 25) at the newest page, a middle page and the
oldest page; prints the median and p95 in ms, Hearth's beside anvil's.
"""

import argparse
import concurrent.futures
import copy
import json
import os
import re
import statistics
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from evm_code import deploy_code, word  # noqa: E402
from jsonrpc_client import post  # noqa: E402

KEYS = [
    "0xac0974bec39a17e36ba4a6b4d238ff944bacb478cbed5efcae784d7bf4f2ff80",  # alice
    "0x59c6995e998f97a5a0044966f0945389dc9e86dae88c7a8412f4603b6b78690d",  # bob
    "0x5de4111afa1a4b94908f83103eb1f1706367c2e68ca870fc3fb9a804cdab365a",  # carol
    "0x7c852118294e51e653712a81e05800f419141751be58f605c371e15141b007a6",  # dave
]
ALICE = "0xf39fd6e51aad88f6f4ce6ab8827279cfffb92266"
BOB = "0x70997970c51812dc3a010c7d01b50e0d17dc79c8"
CAROL = "0x3c44cdddb6a900fa2b585dd299e03d12fa4293bc"
DAVE = "0x90f79bf6eb2c4f870365e785982e1f101e93b906"
ACCOUNTS = [ALICE, BOB, CAROL, DAVE]
BEEF = "0x000000000000000000000000000000000000beef"  # a SELFDESTRUCT beneficiary, nothing else
STRANGER = "0x00000000000000000000000000000000000c0ffe"  # never touched
IDENTITY = "0x0000000000000000000000000000000000000004"
CREATE2_DEPLOYER = "0x4e59b44847b379578588920ca78fbf26c0b4956c"  # in both genesis states
HISTORY = "0x0000f90827f1c53a10cb7a02335b175320002935"  # EIP-2935, in both genesis states
CHAIN_ID = 31337
GAS_PRICE = 3_000_000_000  # legacy, above every base fee the scenario reaches
GENESIS_TIME = 1_700_000_000  # the --timestamp both nodes start with (ots-compare.sh)
BLOCK_TIME = 12

# Hand-assembled contracts (runtime code, deployed as is by deploy_code).
# CALLEE and NESTER as in scripts/trace-compare.py (tests/it/trace.rs explains them): CALLEE
# stores its 32-byte argument, logs it and returns it + 1; NESTER CALLs the address it is given
# with 42, then STATICCALLs it (which fails: CALLEE writes storage).
CALLEE = "60003580600055806000528060206000a160010160005260206000f3"
NESTER = "602a600052602060006020600060006000355af1506020602060206000600035612710fa5060206000f3"
# FACTORY: CREATE2 (salt 1) of its calldata as init code, returns the address.
FACTORY = "36600060003760013660006000f560005260206000f3"
# CREATE_FACTORY: CREATE of its calldata as init code with the call's value, returns the address.
CREATE_FACTORY = "36600060003736600034f060005260206000f3"
# ECHO: returns its 32-byte argument + 1, no state.
ECHO = "6000356001016000526020" "6000f3"
# ROUTER(recipient, echo, callee): CALL recipient with the call's value, STATICCALL echo(42),
# DELEGATECALL callee(42), STATICCALL the identity precompile, return echo's answer.
ROUTER = ("6000600060006000346000355af150"          # CALL(gas, w0, callvalue, 0, 0, 0, 0)
          "602a600052"                              # mstore(0, 42)
          "60206020602060006020355afa50"            # STATICCALL(gas, w1, 0, 32, 32, 32)
          "60206020602060006040355af450"            # DELEGATECALL(gas, w2, 0, 32, 32, 32)
          "602060406020600060045afa50"              # STATICCALL(gas, 0x04, 0, 32, 64, 32)
          "60206020f3")                             # return mem[32..64]
# REVERTER: reverts with Error("nope").
REVERTER = ("7f08c379a0" + "00" * 28 + "600052"
            "6020600452" "6004602452"
            "7f6e6f7065" + "00" * 28 + "604452"
            "60646000fd")
# DOOMED: SELFDESTRUCT to the address it is given.
DOOMED = "600035ff"
# Init codes: one that self-destructs to its creator while created, one that reverts.
SELF_DESTRUCTING_INIT = "33ff"
REVERTING_INIT = "60006000fd"

PAGE_SIZES = [1, 2, 3, 25]



def q(n):
    return hex(n)


# ---------------------------------------------------------------------------------------------
# JSON-RPC


class Node:
    def __init__(self, name, url):
        self.name, self.url = name, url

    def answer(self, method, params):
        """('result', value) or ('error', {'code', 'message'})."""
        reply = post(self.url, {"jsonrpc": "2.0", "id": 1, "method": method, "params": params}, timeout=600)
        if "error" in reply:
            return ("error", reply["error"])
        return ("result", reply.get("result"))

    def rpc(self, method, params):
        kind, value = self.answer(method, params)
        if kind == "error":
            raise RuntimeError(f"{self.name} {method} {json.dumps(params)[:200]}: {value}")
        return value

    def receipt(self, tx):
        for _ in range(2000):
            found = self.rpc("eth_getTransactionReceipt", [tx])
            if found is not None:
                return found
            time.sleep(0.005)
        raise RuntimeError(f"{tx} was not mined by {self.name}")


class Signer:
    """Signs transactions offline with cast, tracking each account's nonce."""

    def __init__(self, cast):
        self.cast = cast
        self.nonces = [0] * len(KEYS)

    def raw(self, account, to=None, data="", gas=300_000, value=0, eip1559=False, nonce=None):
        if nonce is None:
            nonce = self.nonces[account]
            self.nonces[account] += 1
        args = [self.cast, "mktx", "--private-key", KEYS[account], "--nonce", str(nonce),
                "--chain", str(CHAIN_ID), "--gas-limit", str(gas), "--value", str(value)]
        if eip1559:
            args += ["--gas-price", str(GAS_PRICE), "--priority-gas-price", "1000000000"]
        else:
            args += ["--legacy", "--gas-price", str(GAS_PRICE)]
        args += (["--create", "0x" + data] if to is None else [to, "0x" + data])
        return subprocess.run(args, check=True, capture_output=True, text=True).stdout.strip()


# ---------------------------------------------------------------------------------------------
# The scenario


class Scenario:
    def __init__(self, hearth, anvil, cast):
        self.nodes = [hearth, anvil]
        self.signer = Signer(cast)
        self.block = 0
        self.txs = []  # (name, hash)
        self.by_sender_nonce = {}  # (sender, nonce) -> hash
        self.addresses = {}  # label -> address

    def both(self, method, params):
        return [node.rpc(method, params) for node in self.nodes]

    def next_block_time(self):
        self.block += 1
        self.both("evm_setNextBlockTimestamp", [GENESIS_TIME + BLOCK_TIME * self.block])

    def record(self, name, account, tx):
        self.txs.append((name, tx))
        self.by_sender_nonce[(ACCOUNTS[account], self.signer.nonces[account] - 1)] = tx

    def send(self, name, account, **fields):
        """One transaction in a block of its own (both nodes automine); its receipt."""
        raw = self.signer.raw(account, **fields)
        self.next_block_time()
        hashes = self.both("eth_sendRawTransaction", [raw])
        assert hashes[0] == hashes[1], f"{name}: {hashes}"
        receipts = [node.receipt(hashes[0]) for node in self.nodes]
        for key in ["status", "gasUsed", "contractAddress", "blockNumber"]:
            assert receipts[0].get(key) == receipts[1].get(key), f"{name} receipt {key}: {receipts}"
        assert int(receipts[0]["blockNumber"], 16) == self.block, f"{name}: block {receipts[0]['blockNumber']}"
        self.record(name, account, hashes[0])
        return receipts[0]

    def send_block(self, items):
        """Several transactions in one block: automine off, send, evm_mine, automine on."""
        self.both("evm_setAutomine", [False])
        sent = []
        for name, account, fields in items:
            raw = self.signer.raw(account, **fields)
            hashes = self.both("eth_sendRawTransaction", [raw])
            assert hashes[0] == hashes[1]
            self.record(name, account, hashes[0])
            sent.append(hashes[0])
        self.next_block_time()
        self.both("evm_mine", [])
        self.both("evm_setAutomine", [True])
        for tx in sent:
            receipts = [node.receipt(tx) for node in self.nodes]
            assert receipts[0]["transactionIndex"] == receipts[1]["transactionIndex"], receipts
            assert int(receipts[0]["blockNumber"], 16) == self.block

    def empty_block(self):
        self.next_block_time()
        self.both("evm_mine", [])

    def build(self):
        a = self.addresses
        for i, who in enumerate(["alice", "bob", "carol", "dave"]):
            a[who] = ACCOUNTS[i]
        self.send("alice -> bob 1 ETH", 0, to=BOB, value=10**18, gas=21_000)
        self.send("bob -> carol 0.5 ETH (EIP-1559)", 1, to=CAROL, value=5 * 10**17, gas=21_000, eip1559=True)
        a["echo"] = self.send("deploy ECHO", 0, data=deploy_code(ECHO))["contractAddress"]
        a["callee"] = self.send("deploy CALLEE", 0, data=deploy_code(CALLEE))["contractAddress"]
        a["router"] = self.send("deploy ROUTER", 0, data=deploy_code(ROUTER))["contractAddress"]
        a["factory"] = self.send("deploy FACTORY (CREATE2)", 0, data=deploy_code(FACTORY))["contractAddress"]
        a["create_factory"] = self.send("deploy CREATE_FACTORY", 0, data=deploy_code(CREATE_FACTORY))["contractAddress"]
        a["reverter"] = self.send("deploy REVERTER (bob)", 1, data=deploy_code(REVERTER))["contractAddress"]
        a["doomed"] = self.send("deploy DOOMED", 0, data=deploy_code(DOOMED))["contractAddress"]
        a["nester"] = self.send("deploy NESTER", 0, data=deploy_code(NESTER))["contractAddress"]
        route = lambda to: word(to) + word(a["echo"]) + word(a["callee"])
        self.send("router: CALL carol with value, STATICCALL, DELEGATECALL, precompile", 0,
                  to=a["router"], data=route(CAROL), value=1000)
        self.send("revert with Error(string)", 1, to=a["reverter"], gas=100_000)
        self.send("CREATE2 of a contract that stays", 0, to=a["factory"], data=deploy_code(CALLEE))
        self.send("CREATE2 of a contract that self-destructs while created", 0,
                  to=a["factory"], data=SELF_DESTRUCTING_INIT)
        self.send("CREATE with value through a factory (carol)", 2, to=a["create_factory"],
                  data=deploy_code(CALLEE), value=7)
        self.send("SELFDESTRUCT of an existing contract to a fresh beneficiary", 1,
                  to=a["doomed"], data=word(BEEF), value=12345)
        self.send("nested call (CALL, failing STATICCALL)", 0, to=a["nester"], data=word(a["callee"]))
        dave_nonce = self.signer.nonces[3]
        self.send("deployment that reverts (dave)", 3, data=REVERTING_INIT, gas=100_000)
        a["failed_create"] = contract_address(DAVE, dave_nonce)
        self.empty_block()
        self.send_block([
            ("alice -> carol 1 wei (block of three)", 0, dict(to=CAROL, value=1, gas=21_000)),
            ("alice -> carol 2 wei (block of three)", 0, dict(to=CAROL, value=2, gas=21_000, eip1559=True)),
            ("router: value 3 to carol (block of three)", 0, dict(to=a["router"], data=route(CAROL), value=3)),
        ])
        self.empty_block()
        self.send("carol -> alice 1 wei", 2, to=ALICE, value=1, gas=21_000)
        self.empty_block()
        self.empty_block()
        self.send("dave -> carol 1 wei", 3, to=CAROL, value=1, gas=21_000)
        self.send("alice -> dave 1 wei (EIP-1559)", 0, to=DAVE, value=1, gas=21_000, eip1559=True)
        self.send("router: zero value to dave", 0, to=a["router"], data=route(DAVE))
        self.empty_block()
        # The CREATE2 and CREATE children, from the traces of their transactions.
        for name, label in [("CREATE2 of a contract that stays", "create2_child"),
                            ("CREATE2 of a contract that self-destructs while created", "create2_doomed"),
                            ("CREATE with value through a factory (carol)", "create_child")]:
            tx = dict(self.txs)[name]
            frame = self.nodes[1].rpc("debug_traceTransaction", [tx, {"tracer": "callTracer"}])
            a[label] = frame["calls"][0]["to"].lower()
        for label, address in [("beef", BEEF), ("identity", IDENTITY), ("stranger", STRANGER),
                               ("create2_deployer", CREATE2_DEPLOYER), ("history", HISTORY),
                               ("coinbase", "0x0000000000000000000000000000000000000000")]:
            a[label] = address
        for label in a:
            a[label] = a[label].lower()
        return self.block


def contract_address(sender, nonce):
    """CREATE's address: keccak(rlp([sender, nonce]))[12:]."""
    sender_bytes = bytes.fromhex(sender[2:])
    if nonce == 0:
        nonce_rlp = b"\x80"
    elif nonce < 0x80:
        nonce_rlp = bytes([nonce])
    else:
        raw = nonce.to_bytes((nonce.bit_length() + 7) // 8, "big")
        nonce_rlp = bytes([0x80 + len(raw)]) + raw
    payload = bytes([0x80 + 20]) + sender_bytes + nonce_rlp
    return "0x" + keccak256(bytes([0xc0 + len(payload)]) + payload)[12:].hex()


def keccak256(data):
    """Keccak-256 (the pre-SHA3 padding), for contract addresses."""
    rc = [0x0000000000000001, 0x0000000000008082, 0x800000000000808A, 0x8000000080008000,
          0x000000000000808B, 0x0000000080000001, 0x8000000080008081, 0x8000000000008009,
          0x000000000000008A, 0x0000000000000088, 0x0000000080008009, 0x000000008000000A,
          0x000000008000808B, 0x800000000000008B, 0x8000000000008089, 0x8000000000008003,
          0x8000000000008002, 0x8000000000000080, 0x000000000000800A, 0x800000008000000A,
          0x8000000080008081, 0x8000000000008080, 0x0000000080000001, 0x8000000080008008]
    rot = [[0, 36, 3, 41, 18], [1, 44, 10, 45, 2], [62, 6, 43, 15, 61], [28, 55, 25, 21, 56],
           [27, 20, 39, 8, 14]]
    mask = (1 << 64) - 1
    rate = 136
    msg = bytearray(data) + b"\x01"
    while len(msg) % rate:
        msg.append(0)
    msg[-1] |= 0x80
    s = [[0] * 5 for _ in range(5)]
    for block in range(0, len(msg), rate):
        for i in range(rate // 8):
            s[i % 5][i // 5] ^= int.from_bytes(msg[block + 8 * i: block + 8 * i + 8], "little")
        for r in range(24):
            c = [s[x][0] ^ s[x][1] ^ s[x][2] ^ s[x][3] ^ s[x][4] for x in range(5)]
            d = [c[(x - 1) % 5] ^ (((c[(x + 1) % 5] << 1) | (c[(x + 1) % 5] >> 63)) & mask) for x in range(5)]
            s = [[s[x][y] ^ d[x] for y in range(5)] for x in range(5)]
            b = [[0] * 5 for _ in range(5)]
            for x in range(5):
                for y in range(5):
                    n = rot[x][y]
                    b[y][(2 * x + 3 * y) % 5] = ((s[x][y] << n) | (s[x][y] >> (64 - n))) & mask if n else s[x][y]
            s = [[b[x][y] ^ ((~b[(x + 1) % 5][y]) & b[(x + 2) % 5][y]) for y in range(5)] for x in range(5)]
            s[0][0] ^= rc[r]
    out = b"".join(s[i % 5][i // 5].to_bytes(8, "little") for i in range(4))
    return out


# ---------------------------------------------------------------------------------------------
# Normalising: block hashes, state roots and mixHash by position


def position_names(node, head):
    """Names by position for what differs between the two chains: block hashes (wherever they
    appear), and each block's stateRoot and mixHash (only under those keys: an empty trie's root
    is also every empty block's transactionsRoot)."""
    names = {"*": {}, "stateRoot": {}, "mixHash": {}}
    for n in range(head + 1):
        block = node.rpc("eth_getBlockByNumber", [q(n), False])
        names["*"][block["hash"]] = f"<hash {n}>"
        names["stateRoot"][block["stateRoot"]] = f"<stateRoot {n}>"
        if block.get("mixHash"):
            names["mixHash"][block["mixHash"]] = f"<mixHash {n}>"
    return names


def normalize(value, names, key=None):
    if isinstance(value, dict):
        return {k: normalize(v, names, k) for k, v in value.items()}
    if isinstance(value, list):
        return [normalize(v, names) for v in value]
    if isinstance(value, str):
        if key in names and value in names[key]:
            return names[key][value]
        return names["*"].get(value, value)
    return value


# ---------------------------------------------------------------------------------------------
# Erigon's answers, computed from the model node's standard methods (the rules of ots-spec.md)

ANY_ERROR = ("error", "any")  # Erigon answers an error (its code and words are not compared)
PRECOMPILES = {f"0x{i:040x}" for i in range(1, 0x12)}


def flatten(frame, depth=0, out=None):
    """A callTracer tree as a pre-order list of (depth, frame without calls)."""
    out = [] if out is None else out
    out.append((depth, {k: v for k, v in frame.items() if k != "calls"}))
    for child in frame.get("calls", []) or []:
        flatten(child, depth + 1, out)
    return out


def quantity(value):
    return hex(int(value, 16)) if value else "0x0"


class Model:
    """Everything Erigon's answers are made of, read from one node."""

    def __init__(self, node, scenario, head):
        self.node, self.scenario, self.head = node, scenario, head
        self.blocks = [node.rpc("eth_getBlockByNumber", [q(n), True]) for n in range(head + 1)]
        self.blocks_bare = [node.rpc("eth_getBlockByNumber", [q(n), False]) for n in range(head + 1)]
        self.tx_order = [tx["hash"] for block in self.blocks for tx in block["transactions"]]
        self.tx = {h: node.rpc("eth_getTransactionByHash", [h]) for h in self.tx_order}
        self.receipt = {h: node.rpc("eth_getTransactionReceipt", [h]) for h in self.tx_order}
        self.frames = {h: flatten(node.rpc("debug_traceTransaction", [h, {"tracer": "callTracer"}]))
                       for h in self.tx_order}
        for h, frames in self.frames.items():
            root = frames[0][1]
            if root["type"] == "CREATE" and not root.get("to"):
                # A failed deployment: some callTracers leave `to` out; Erigon's frame has it.
                root["to"] = contract_address(root["from"].lower(), int(self.tx[h]["nonce"], 16))
        self.appearances = {h: self.touched(h) for h in self.tx_order}

    def touched(self, h):
        """Erigon's trace index: `from` and `to` of every frame the transaction opened."""
        seen = set()
        for _, frame in self.frames[h]:
            for key in ("from", "to"):
                if frame.get(key):
                    seen.add(frame[key].lower())
        receipt = self.receipt[h]
        if self.tx[h].get("to") is None and receipt.get("contractAddress"):
            seen.add(receipt["contractAddress"].lower())  # a failed creation's frame still has it
        return seen

    def ots_getApiLevel(self, params):
        return ("result", 8)

    def erigon_getHeaderByNumber(self, params):
        n = self.number(params[0])
        if n is None:
            return ANY_ERROR
        header = copy.deepcopy(self.blocks_bare[n])
        for key in ["transactions", "uncles", "withdrawals", "size", "totalDifficulty"]:
            header.pop(key, None)
        return ("result", header)

    def number(self, tag):
        n = self.head if tag == "latest" else (tag if isinstance(tag, int) else int(tag, 16))
        return n if n <= self.head else None

    def ots_hasCode(self, params):
        n = self.number(params[1])
        if n is None:
            return ANY_ERROR
        return ("result", self.node.rpc("eth_getCode", [params[0], q(n)]) != "0x")

    def ots_getTransactionError(self, params):
        h = params[0]
        if h not in self.tx:
            return ANY_ERROR
        if self.receipt[h]["status"] == "0x1":
            return ("result", "0x")
        root = self.frames[h][0][1]
        reverted = "revert" in (root.get("error") or "").lower()
        return ("result", (root.get("output") or "0x") if reverted else "0x")

    def ots_getInternalOperations(self, params):
        h = params[0]
        if h not in self.tx:
            return ANY_ERROR
        ops = []
        for depth, f in self.frames[h]:
            if depth == 0:
                continue
            kind, value = f["type"], quantity(f.get("value"))
            code = {"CREATE": 2, "CREATE2": 3, "SELFDESTRUCT": 1}.get(kind)
            if kind == "CALL" and int(value, 16):
                code = 0
            if code is not None:
                ops.append({"type": code, "from": f["from"].lower(), "to": f.get("to", "").lower(), "value": value})
        return ("result", ops)

    def ots_traceTransaction(self, params):
        h = params[0]
        if h not in self.tx:
            return ANY_ERROR
        entries = []
        for depth, f in self.frames[h]:
            kind = f["type"]
            if kind != "SELFDESTRUCT" and f.get("to", "").lower() in PRECOMPILES:
                continue  # Erigon leaves precompile calls out
            entry = {"type": kind, "depth": depth, "from": f["from"].lower(), "to": f.get("to", "").lower(),
                     "value": None if kind in ("STATICCALL", "DELEGATECALL") else quantity(f.get("value")),
                     "input": f.get("input") or "0x", "output": f.get("output") or "0x"}
            if kind == "SELFDESTRUCT":
                entry.update(depth=entries[-1]["depth"] + 1, input="0x", output="0x")
            entries.append(entry)
        return ("result", entries)

    def block_by(self, params, by_hash):
        if by_hash:
            matches = [n for n, b in enumerate(self.blocks) if b["hash"] == params[0]]
            return matches[0] if matches else None
        return self.number(params[0])

    def details(self, n):
        block = copy.deepcopy(self.blocks_bare[n])
        count = len(block.pop("transactions"))
        block["transactionCount"] = count
        block["logsBloom"] = None
        fees = sum(int(self.receipt[tx["hash"]]["gasUsed"], 16) * int(self.receipt[tx["hash"]]["effectiveGasPrice"], 16)
                   for tx in self.blocks[n]["transactions"])
        return ("result", {"block": block,
                           "issuance": {"blockReward": "0x0", "uncleReward": "0x0", "issuance": "0x0"},
                           "totalFees": hex(fees)})

    def ots_getBlockDetails(self, params):
        n = self.block_by(params, False)
        return ANY_ERROR if n is None else self.details(n)

    def ots_getBlockDetailsByHash(self, params):
        n = self.block_by(params, True)
        return ANY_ERROR if n is None else self.details(n)

    def ots_getBlockTransactions(self, params):
        n, page, size = params
        n = self.number(n)
        if n is None:
            return ANY_ERROR  # Erigon 3: block not found (2.x: null)
        block = copy.deepcopy(self.blocks[n])
        txs = block["transactions"]
        for tx in txs:
            if len(tx["input"]) >= 10:
                tx["input"] = tx["input"][:10]
        end = len(txs) - page * size
        start = max(end - size, 0)
        end = max(end, 0)
        block["transactions"] = txs[start:end]
        block["transactionCount"] = len(txs)
        block["logsBloom"] = None
        receipts = []
        for tx in block["transactions"]:
            receipt = copy.deepcopy(self.receipt[tx["hash"]])
            receipt["logs"], receipt["logsBloom"] = None, None
            receipts.append(receipt)
        return ("result", {"fullblock": block, "receipts": receipts})

    def matches(self, address):
        """(block, index, hash) of the transactions `address` appears in, oldest first."""
        out = []
        for h in self.tx_order:
            if address.lower() in self.appearances[h]:
                r = self.receipt[h]
                out.append((int(r["blockNumber"], 16), int(r["transactionIndex"], 16), h))
        return out

    def search(self, address, block, page_size, before):
        found = self.matches(address)
        if before:
            # Erigon answers B == 1 as B == 0 (a bug it keeps for compatibility); Hearth answers
            # what is before block 1: nothing (the spec's decision).
            pool = [m for m in reversed(found) if block == 0 or m[0] < block]
        else:
            pool = [m for m in found if m[0] > block]
        page, reached, more, last_block = [], False, False, None
        for m in pool:
            if reached and m[0] != last_block:
                more = True
                break
            page.append(m)
            last_block = m[0]
            if len(page) >= page_size:
                reached = True
        if not before:
            page.reverse()
        txs, receipts = [], []
        for _, _, h in page:
            txs.append(copy.deepcopy(self.tx[h]))
            receipt = copy.deepcopy(self.receipt[h])
            receipt["timestamp"] = int(self.blocks[int(receipt["blockNumber"], 16)]["timestamp"], 16)
            receipts.append(receipt)
        first, last = (block == 0, not more) if before else (not more, block == 0)
        return ("result", {"txs": txs, "receipts": receipts, "firstPage": first, "lastPage": last})

    def ots_searchTransactionsBefore(self, params):
        return self.search(params[0], params[1], params[2], True)

    def ots_searchTransactionsAfter(self, params):
        return self.search(params[0], params[1], params[2], False)

    def ots_getTransactionBySenderAndNonce(self, params):
        return ("result", self.scenario.by_sender_nonce.get((params[0].lower(), params[1])))

    def ots_getContractCreator(self, params):
        address = params[0].lower()
        if self.node.rpc("eth_getCode", [address, "latest"]) == "0x":
            return ("result", None)
        creator = None
        for h in self.tx_order:
            for _, f in self.frames[h]:
                if f["type"] in ("CREATE", "CREATE2") and f.get("to", "").lower() == address and not f.get("error"):
                    creator = {"hash": h, "creator": f["from"].lower()}
        # Genesis-allocated contracts have no creation: Erigon errors, Hearth answers null.
        return ("result", creator)


# ---------------------------------------------------------------------------------------------
# Erigon-shape checks of Hearth's answers (the parts the model's values do not pin down)

QUANTITY = re.compile(r"^0x(0|[1-9a-f][0-9a-f]*)$")


def erigon_shape(method, answer):
    kind, value = answer
    if kind == "error" or value is None:
        return []
    problems = []
    if method == "ots_searchTransactionsBefore" or method == "ots_searchTransactionsAfter":
        for i, r in enumerate(value.get("receipts", [])):
            if not isinstance(r.get("timestamp"), int) or isinstance(r.get("timestamp"), bool):
                problems.append(f".receipts[{i}].timestamp must be a JSON number (Erigon's block.Time())")
        order = [(int(t["blockNumber"], 16), int(t["transactionIndex"], 16)) for t in value.get("txs", [])]
        if order != sorted(order, reverse=True):
            problems.append(".txs must be newest first (block, then index, descending)")
    if method in ("ots_getBlockDetails", "ots_getBlockDetailsByHash"):
        if not isinstance(value["block"].get("transactionCount"), int):
            problems.append(".block.transactionCount must be a JSON number")
    if method == "ots_getBlockTransactions" and not isinstance(value["fullblock"].get("transactionCount"), int):
        problems.append(".fullblock.transactionCount must be a JSON number")
    if method == "ots_getInternalOperations":
        for i, op in enumerate(value):
            if not isinstance(op.get("type"), int) or not QUANTITY.match(op.get("value", "")):
                problems.append(f"[{i}]: type must be a number, value a quantity")
    return problems


# ---------------------------------------------------------------------------------------------
# Differences from anvil that are documented: (method, path, why, who answers as Erigon: "hearth",
# or "-" where Erigon has no say: the two dev chains differ). `path` is matched against the
# difference's path (after the block positions are named); a difference is documented when its
# method and path match an entry (Hearth's answer is held to Erigon's separately).

KNOWN = [
    # chain-level, not ots_: README "Differences from anvil"
    (r".", r"\.size$", "block size: Hearth's counts the block's (empty) withdrawals list, anvil's leaves it out", "-"),
    (r".", r"\.totalDifficulty$", "anvil reports totalDifficulty 0x0; Hearth, as geth since the merge, leaves it out", "hearth"),
    (r".", r"\.blockTimestamp$", "anvil adds blockTimestamp to transactions and receipts; Hearth, as geth, does not", "hearth"),
    (r".", r"\.blobGasPrice$", "anvil adds blobGasPrice to every receipt; Hearth, as geth, to blob transactions' only", "hearth"),
    (r".", r"\.baseFeePerGas$",
     "genesis base fee: anvil runs --base-fee 875000000 so that block 1 matches (trace-compare.sh); Hearth's genesis holds 1 gwei", "-"),
    # erigon_getHeaderByNumber
    (r"^erigon_getHeaderByNumber$", r"^\.(transactions|uncles|withdrawals)$",
     "anvil answers the whole block (eth_getBlockByNumber); Erigon the header alone", "hearth"),
    (r"^erigon_getHeaderByNumber$", r"^$", "past the head: anvil null, Erigon an error (block header not found)", "hearth"),
    # ots_getInternalOperations
    (r"^ots_getInternalOperations$", r"^(|\.length|\[\d+\])$",
     "anvil lists the transaction's own frame (its transfer or contract creation) and reports a contract "
     "that self-destructs while created as a SELFDESTRUCT without its CREATE/CREATE2; Erigon lists frames "
     "at depth > 0, a CREATE2 then its SELFDESTRUCT; unknown hash: anvil -32603, Erigon an error", "hearth"),
    (r"^ots_getInternalOperations$", r"^\[\d+\]\.(type|from|to|value)$",
     "the same operations shifted by anvil's extra entry for the transaction's own frame", "hearth"),
    # ots_traceTransaction
    (r"^ots_traceTransaction$", r"^(|\.length|\[\d+\])$",
     "anvil leaves out CREATE, CREATE2 and SELFDESTRUCT entries (a deployment's trace is []) and answers [] "
     "for an unknown hash; Erigon lists them and errors on an unknown hash", "hearth"),
    (r"^ots_traceTransaction$", r"^\[\d+\]\.value$",
     "value: Erigon null for STATICCALL and DELEGATECALL; anvil the parity trace's value", "hearth"),
    (r"^ots_traceTransaction$", r"^\[\d+\]\.(type|depth|from|to|input|output)$",
     "the same calls shifted by the CREATE/CREATE2/SELFDESTRUCT entries anvil leaves out", "hearth"),
    # ots_getTransactionError
    (r"^ots_getTransactionError$", r"^$", "unknown hash: anvil \"0x\", Erigon an error", "hearth"),
    # ots_getBlockDetails / ByHash
    (r"^ots_getBlockDetails(ByHash)?$", r"^\.block\.logsBloom$", "Erigon answers logsBloom null; anvil the bloom", "hearth"),
    (r"^ots_getBlockDetails(ByHash)?$", r"^$", "unknown block: error codes differ (anvil -32001 \"Resource not found\")", "-"),
    # ots_getBlockTransactions
    (r"^ots_getBlockTransactions$", r"^\.fullblock\.logsBloom$", "Erigon answers logsBloom null; anvil the bloom", "hearth"),
    (r"^ots_getBlockTransactions$", r"^\.fullblock\.transactionCount$",
     "anvil's transactionCount is the page's length; Erigon's the block's", "hearth"),
    (r"^ots_getBlockTransactions$", r"^\.(fullblock\.transactions|receipts)(\.length|\[\d+\](\.\w+)?)?$",
     "pages: Erigon's page 0 holds the block's last pageSize transactions (counted from the end), anvil's the first", "hearth"),
    (r"^ots_getBlockTransactions$", r"^\.receipts\[\d+\]\.(logs|logsBloom)$",
     "Erigon answers a receipt's logs and logsBloom null; anvil the real ones", "hearth"),
    (r"^ots_getBlockTransactions$", r"^\.receipts\[\d+\]\.timestamp$",
     "anvil adds timestamp to ots_getBlockTransactions' receipts; Erigon to the searches' only", "hearth"),
    (r"^ots_getBlockTransactions$", r"^$", "past the head: error codes differ (anvil -32001)", "-"),
    # the searches
    (r"^ots_search", r"^\.receipts\[\d+\]\.timestamp$",
     "receipt timestamp: Erigon a JSON number (block.Time()), anvil a quantity", "hearth"),
    (r"^ots_searchTransactionsBefore$", r"^\.firstPage$",
     "firstPage: Erigon only for blockNumber 0; anvil also past the head", "hearth"),
    (r"^ots_searchTransactionsBefore$", r"^\.lastPage$",
     "lastPage: Erigon when no older match remains; anvil only when it scanned down to block 1 "
     "(false when the page ends exactly at the oldest match, and for blockNumber 1)", "hearth"),
    (r"^ots_searchTransactionsAfter$", r"^\.firstPage$",
     "firstPage: Erigon when no newer match remains; anvil only when it scanned up to the head", "hearth"),
    (r"^ots_search", r"^\.(txs|receipts)(\.length|\[\d+\].*)?$",
     "matches: Erigon counts a SELFDESTRUCT's beneficiary, anvil does not; After: anvil orders one block's "
     "matches oldest first, Erigon newest first (and the page shifts with firstPage/lastPage)", "hearth"),
    # ots_getContractCreator
    (r"^ots_getContractCreator$", r"^$",
     "an address without code now (a contract that self-destructed while created): Erigon null, anvil its creator", "hearth"),
    # ots_hasCode
    (r"^ots_hasCode$", r"^$", "past the head: error codes differ (anvil -32602 BlockOutOfRangeError)", "-"),
]


def known_reason(method, path):
    for method_re, path_re, why, erigon in KNOWN:
        if re.search(method_re, method) and re.search(path_re, path):
            return why, erigon
    return None


# ---------------------------------------------------------------------------------------------
# Comparing


def show(answer, width=140):
    kind, value = answer
    if kind == "error":
        if value == "any":
            return "an error"
        return f"error {value.get('code')} {json.dumps(value.get('message', ''))[:80]}"
    text = json.dumps(value)
    return text if len(text) <= width else text[:width - 3] + "..."


def differences(path, ours, theirs, out, width=140):
    if isinstance(ours, dict) and isinstance(theirs, dict):
        for key in sorted(set(ours) | set(theirs)):
            sub = f"{path}.{key}"
            if key not in theirs:
                out.append((sub, show(("result", ours[key]), width), "(absent)"))
            elif key not in ours:
                out.append((sub, "(absent)", show(("result", theirs[key]), width)))
            else:
                differences(sub, ours[key], theirs[key], out, width)
    elif isinstance(ours, list) and isinstance(theirs, list):
        if len(ours) != len(theirs):
            out.append((f"{path}.length", str(len(ours)), str(len(theirs))))
        for i, (a, b) in enumerate(zip(ours, theirs)):
            differences(f"{path}[{i}]", a, b, out, width)
        for i in range(min(len(ours), len(theirs)), max(len(ours), len(theirs))):
            out.append((f"{path}[{i}]", show(("result", ours[i]), width) if i < len(ours) else "(absent)",
                        show(("result", theirs[i]), width) if i < len(theirs) else "(absent)"))
    elif ours != theirs or type(ours) is not type(theirs):
        out.append((path, show(("result", ours), width), show(("result", theirs), width)))


def answer_differences(ours, theirs, width=140):
    """Differences of two answers: field by field when both are results; an error is compared
    by its code (the words differ between nodes)."""
    if ours[0] == "result" and theirs[0] == "result":
        out = []
        differences("", ours[1], theirs[1], out, width)
        return out
    if ours[0] == "error" and theirs[0] == "error":
        codes = [None if side[1] == "any" else side[1].get("code") for side in (ours, theirs)]
        if codes[0] == codes[1] or (None in codes and -32601 not in codes):
            return []  # "any" error is Erigon's: a method that does not exist is not one
    return [("", show(ours, width), show(theirs, width))]


def calls_for(scenario, head, model):
    a = scenario.addresses
    unknown = "0x" + "11" * 32
    txs = [h for _, h in scenario.txs]
    calls = [("ots_getApiLevel", [])]
    for h in txs + [unknown]:
        for method in ["ots_getInternalOperations", "ots_traceTransaction", "ots_getTransactionError"]:
            calls.append((method, [h]))
    for n in list(range(head + 1)) + [head + 1]:
        calls.append(("erigon_getHeaderByNumber", [n]))
        calls.append(("ots_getBlockDetails", [n]))
        calls.append(("ots_getBlockTransactions", [n, 0, 25]))
    calls.append(("erigon_getHeaderByNumber", ["latest"]))
    for n in range(head + 1):
        calls.append(("ots_getBlockDetailsByHash", [("hash", n)]))
    calls.append(("ots_getBlockDetailsByHash", [unknown]))
    three = next(n for n, b in enumerate(model.blocks) if len(b["transactions"]) == 3)
    for page, size in [(0, 1), (1, 1), (2, 1), (3, 1), (0, 2), (1, 2), (2, 2), (0, 3), (1, 3)]:
        calls.append(("ots_getBlockTransactions", [three, page, size]))
    mid = head // 2
    for address in sorted(set(a.values())):
        for n in [0, mid, head, head + 1]:
            calls.append(("ots_hasCode", [address, n]))
        calls.append(("ots_getContractCreator", [address]))
    # Searches: the busiest addresses at every block, the others at a few.
    busy = {a["alice"], a["carol"], a["router"]}
    for address in sorted(set(a.values())):
        blocks = list(range(head + 2)) + [head + 50] if address in busy else [0, 1, mid, head - 1, head, head + 1]
        for size in PAGE_SIZES:
            for b in blocks:
                calls.append(("ots_searchTransactionsBefore", [address, b, size]))
                calls.append(("ots_searchTransactionsAfter", [address, b, size]))
    for i, who in enumerate(ACCOUNTS):
        for nonce in range(scenario.signer.nonces[i] + 2):
            calls.append(("ots_getTransactionBySenderAndNonce", [who, nonce]))
    return calls


def resolve(params, hashes):
    return [hashes[p[1]] if isinstance(p, tuple) else p for p in params]


def label(params):
    return json.dumps([f"<hash {p[1]}>" if isinstance(p, tuple) else p for p in params])


def generic(path):
    return re.sub(r"\[\d+\]", "[i]", path)


def compare(hearth, anvil, cast, model_from, quiet, simulate):
    scenario = Scenario(hearth, anvil, cast)
    head = scenario.build()
    print(f"scenario: {len(scenario.txs)} transactions in {head} blocks")
    names = {n.name: position_names(n, head) for n in (hearth, anvil)}
    own_hashes = {n.name: {int(v.split()[1][:-1]): k for k, v in names[n.name]["*"].items()}
                  for n in (hearth, anvil)}
    model_node = hearth if model_from == "hearth" else anvil
    model = Model(model_node, scenario, head)
    calls = calls_for(scenario, head, model)

    equal = different = known = 0
    failed_calls = 0
    summary = {}  # (kind, method, generic path, note) -> count
    for method, params in calls:
        expected_raw = getattr(model, method)(resolve(params, own_hashes[model_node.name]))
        expected = (expected_raw[0], normalize(expected_raw[1], names[model_node.name])) \
            if expected_raw[0] == "result" else expected_raw
        answers = {}
        for node in (hearth, anvil):
            kind, value = node.answer(method, resolve(params, own_hashes[node.name]))
            answers[node.name] = (kind, normalize(value, names[node.name]) if kind == "result" else value)
        ours, theirs = answers[hearth.name], answers[anvil.name]
        if simulate:
            ours = expected  # what Erigon would answer: checks that KNOWN covers anvil's ways
        where = f"{method} {label(params)}"
        failed = False
        # 1. Erigon's answer
        erigon = answer_differences(ours, expected, 1000) + [(p, "-", "-") for p in erigon_shape(method, ours)]
        for path, a, b in erigon:
            failed = True
            print(f"ERIGON {where} {path}: hearth={a} erigon={b}" if a != "-" else f"ERIGON {where}: {path}")
            key = ("ERIGON", method, generic(path), "")
            summary[key] = summary.get(key, 0) + 1
        # 2. anvil's answer
        diffs = answer_differences(ours, theirs)
        if not diffs:
            equal += 1
        else:
            different += 1
            documented = True
            for path, a, b in diffs:
                # A method Hearth does not have is never a documented difference.
                reason = None if a.startswith("error -32601") else known_reason(method, path)
                documented &= reason is not None
                note = f"[known: {reason[0]}; as Erigon: {reason[1]}]" if reason else "[NOT DOCUMENTED]"
                if not quiet or reason is None:
                    print(f"{where} {path}: hearth={a} anvil={b}  {note}")
                key = ("anvil", method, generic(path), "known" if reason else "NOT DOCUMENTED")
                summary[key] = summary.get(key, 0) + 1
            if documented and not erigon:
                known += 1
            failed |= not documented
        failed_calls += failed
    print(f"\nsummary (differences by method and path):")
    for (kind, method, path, note), count in sorted(summary.items()):
        print(f"  {count:6} {kind:<6} {method} {path or '(answer)'} {note}")
    source = "Erigon's answers computed from anvil, in Hearth's place" if simulate else "Hearth"
    print(f"{len(calls)} calls to {source} and anvil; Erigon's answers modelled from {model_node.name}'s "
          f"standard methods")
    print(f"{equal} equal, {different} different ({known} known)")
    if failed_calls:
        print(f"{failed_calls} calls failed: Hearth does not answer as Erigon (ERIGON lines), or differs "
              f"from anvil where KNOWN lists nothing ([NOT DOCUMENTED])", file=sys.stderr)
        return 1
    return 0


# ---------------------------------------------------------------------------------------------
# Latency


def sign_many(cast, count):
    """`count` transfers alice -> carol, nonces 0.., signed with cast in parallel."""
    signer = Signer(cast)
    with concurrent.futures.ThreadPoolExecutor(max_workers=4) as pool:
        jobs = [pool.submit(signer.raw, 0, to=CAROL, value=1, gas=21_000, nonce=i) for i in range(count)]
        return [job.result() for job in jobs]


def build_history(node, raws, blocks):
    """`raws` spread over a chain of `blocks` blocks: each sent (and automined), then the
    empty blocks up to the next one mined with hardhat_mine. Returns the block of each."""
    gap = max(blocks // len(raws), 1)
    start = time.time()
    tx_blocks = []
    for i, raw in enumerate(raws):
        tx = node.rpc("eth_sendRawTransaction", [raw])
        tx_blocks.append(int(node.receipt(tx)["blockNumber"], 16))
        if gap > 1:
            node.rpc("hardhat_mine", [hex(gap - 1)])
        if (i + 1) % 100 == 0 and time.time() - start > 30:
            print(f"  {node.name}: {i + 1} transactions, block {tx_blocks[-1]} ({time.time() - start:.0f} s)",
                  flush=True)
    rest = blocks - int(node.rpc("eth_blockNumber", []), 16)
    if rest > 0:
        node.rpc("hardhat_mine", [hex(rest)])
    print(f"{node.name}: {len(raws)} transactions in {int(node.rpc('eth_blockNumber', []), 16)} blocks "
          f"({time.time() - start:.1f} s)", flush=True)
    return tx_blocks


def timed(node, method, params, rounds=20):
    """(median, p95) in ms of `rounds` calls, and what the answer held."""
    kind, value = node.answer(method, params)
    if kind == "error":
        return None, f"error {value.get('code')}"
    times = []
    for _ in range(rounds):
        start = time.perf_counter()
        node.answer(method, params)
        times.append((time.perf_counter() - start) * 1000)
    times.sort()
    p95 = times[min(len(times) - 1, int(round(0.95 * len(times))) - 1)]
    return (statistics.median(times), p95), f"{len(value['txs'])} txs"


CASES = [("Before", "newest"), ("Before", "middle"), ("Before", "oldest"),
         ("After", "oldest"), ("After", "middle"), ("After", "newest")]


def latency(nodes, cast, blocks, count):
    """Each node in turn: its chain, then its timings (so a long anvil build can be cut short
    with Hearth's figures already printed)."""
    print(f"signing {count} transactions with cast", flush=True)
    raws = sign_many(cast, count)
    results = {}
    for node in nodes:
        b = build_history(node, raws, blocks)
        at = {("Before", "newest"): 0, ("Before", "middle"): b[count // 2], ("Before", "oldest"): b[25],
              ("After", "oldest"): 0, ("After", "middle"): b[count // 2], ("After", "newest"): b[count - 26]}
        for direction, page in CASES:
            results[(node.name, direction, page)] = timed(
                node, f"ots_searchTransactions{direction}", [CAROL, at[(direction, page)], 25])
            stats, note = results[(node.name, direction, page)]
            shown = f"median {stats[0]:.2f} ms, p95 {stats[1]:.2f} ms" if stats else "-"
            print(f"  {node.name} {direction} {page}: {shown} ({note})", flush=True)
    print(f"\nots_searchTransactions*, page size 25, 20 calls each, {count} matching transactions "
          f"in {blocks} blocks (ms)")
    header = f"{'method':<8} {'page':<7}"
    for node in nodes:
        header += f" {node.name + ' median':>14} {'p95':>9} {'':<13}"
    print(header)
    for direction, page in CASES:
        line = f"{direction:<8} {page:<7}"
        for node in nodes:
            stats, note = results[(node.name, direction, page)]
            cells = (f"{stats[0]:.2f}", f"{stats[1]:.2f}") if stats else ("-", "-")
            line += f" {cells[0]:>14} {cells[1]:>9} {note:<13}"
        print(line.rstrip())
    return 0


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("hearth")
    parser.add_argument("anvil")
    parser.add_argument("cast")
    parser.add_argument("--model-from", choices=["hearth", "anvil"], default="hearth",
                        help="node whose standard methods Erigon's answers are computed from")
    parser.add_argument("--quiet", action="store_true", help="print only undocumented differences")
    parser.add_argument("--simulate-erigon", action="store_true",
                        help="put the modelled Erigon answers in Hearth's place (with SELF_TEST=1 and "
                             "--model-from anvil: checks that KNOWN covers every way anvil differs)")
    parser.add_argument("--latency", action="store_true", help="time the searches on a long chain instead")
    parser.add_argument("--blocks", type=int, default=int(os.environ.get("OTS_LATENCY_BLOCKS", 100_000)))
    parser.add_argument("--txs", type=int, default=int(os.environ.get("OTS_LATENCY_TXS", 1_000)))
    parser.add_argument("--latency-nodes", default=os.environ.get("OTS_LATENCY_NODES", "hearth,anvil"),
                        help="which nodes --latency builds and times, in order (anvil mines about "
                             "50 empty blocks a second: 100,000 take it half an hour)")
    args = parser.parse_args()
    hearth, anvil = Node("hearth", args.hearth), Node("anvil", args.anvil)
    if args.latency:
        chosen = [{"hearth": hearth, "anvil": anvil}[name] for name in args.latency_nodes.split(",")]
        sys.exit(latency(chosen, args.cast, args.blocks, args.txs))
    sys.exit(compare(hearth, anvil, args.cast, args.model_from, args.quiet, args.simulate_erigon))


if __name__ == "__main__":
    main()
