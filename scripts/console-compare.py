#!/usr/bin/env python3
"""Hardhat-style console.log: the lines anvil prints against the lines Hearth prints.

Usage (scripts/console-compare.sh starts both nodes and calls this):
    python3 scripts/console-compare.py ANVIL_URL ANVIL_STDOUT HEARTH_URL HEARTH_STDERR CONSOLELOG_JSON

Both nodes run the same dev chain (the "test ... junk" accounts, 30M gas, Prague, automine).
tests/contracts/ConsoleLog.sol is deployed on both from account 0; it staticcalls the console
address (0x000000000000000000636F6e736F6c652e6c6f67) with payloads built here, one for every
console selector anvil 1.7.1 knows (`log()`, `log(T)` for uint256, int256, string, bool,
address, bytes, bytes1..bytes32, `log(string,int256)` and every 2-, 3- and 4-argument
combination of uint256, string, bool and address), with edge values and format strings, plus
payloads anvil refuses (unknown selectors, malformed arguments). They go through mined
transactions, eth_call, a nested call with a caught revert, a reverted transaction, the
constructor, eth_estimateGas, eth_simulateV1, eth_createAccessList and debug_traceCall.

How each node prints (what is parsed here):
- anvil writes to stdout, with no prefix or header: each console line as it is (a string with
  a newline gives two lines; an empty line, from log() or log(""), is not printed; ESC, BEL,
  BS, FF and DEL come out as the text \x1b, \x07, ...), once per EVM execution (so
  eth_estimateGas prints a call's lines once per step of its search); the name of each RPC
  method it serves on a line of its own; after each mined transaction a block of
  four-space-indented lines ("Transaction: 0x..", "Contract created: 0x..", "Gas used: N",
  "Error: reverted with: ..", then "Block Number", "Block Hash", "Block Time") between blank
  lines; and "RPC request failed:" blocks. Console lines of a mined transaction come before its
  block; those of a call after the method's name.
- Hearth (`--log.format json`) writes one JSON object a line on stderr: a console line is
  {"target":"console","fields":{"message":TEXT,"tx":HASH}} for a mined transaction, or with
  "call":METHOD (eth_call, eth_estimateGas, ...) for a call; a mined transaction gives
  {"target":"tx","fields":{"hash","gas_used","block","block_hash","block_time","contract"?,"error"?}}.

Each step is bracketed by two marker lines (an eth_call of init code that logs
"console-compare: <step> begin" / "... end"), so the two outputs are cut into the same steps.
Per step the console lines are compared in order, each with where it came from (the step's
k-th mined transaction, or the call method); per mined transaction the gas used, created
contract, revert reason (anvil's text after "Error: reverted with: ") and block number; per
eth_call the answer (result, or revert data). Prints each difference, then `N equal, M
different`; exits 1 on a difference not listed in DOCUMENTED.

    SABOTAGE=1   alters one Hearth console line before comparing (the run must then fail)
    --hearth-format anvil   parses the "Hearth" side as anvil's stdout (two anvils: a self-test)
"""

import argparse
import difflib
import itertools
import json
import os
import re
import sys
import time
import urllib.error
import urllib.request

ACCOUNTS = [
    "0xf39Fd6e51aad88F6F4ce6aB8827279cffFb92266",
    "0x70997970C51812dc3A010C7d01b50e0d17dc79C8",
]
CONSOLE = "0x000000000000000000636F6e736F6c652e6c6f67"
GAS_FEE_CAP = 20_000_000_000  # above every base fee the run reaches
GAS_TIP = 1_000_000_000
CHUNK_PAYLOADS = 40  # payloads per relay transaction: well under 30M gas and 128 KiB of calldata

# anvil 1.7.1's per-transaction "Error: reverted with: <reason>" for the failures step
# (Hearth's `error` field is compared with <reason>):
#   require(false, "r") / revert("r")   r (as is: a newline stays a newline; not UTF-8: U+FFFD)
#   Error("")                            (empty)
#   Panic(0x12) / 0x01 / 0x11 / 0x99     panic: division or modulo by zero (0x12) / panic: assertion
#                                        failed (0x01) / panic: arithmetic underflow or overflow
#                                        (0x11) / panic: unknown code (0x99)
#   any other selector (custom error)    custom error 0x<selector>: <the rest: as text if UTF-8,
#                                        else lowercase hex without 0x>
#   fewer than 4 bytes                   the bytes as text if UTF-8
#   no revert data                       EvmError: Revert
#   out of gas / INVALID (0xfe)          EvmError: OutOfGas / EvmError: InvalidFEOpcode
# anvil's terminal escaping applies to all its lines (console and reasons): ESC, BEL, BS, FF
# and DEL print as the four characters \x1b, \x07, \x08, \x0c, \x7f; other controls as they are.

# Known, explained differences that do not fail the run: (step, anvil line, Hearth line, why),
# each a regular expression searched in "<source> <text>" of the line, the text as printed
# (source: tx#k, the step's k-th mined transaction, or call:<method>; "-" when a side has no
# line there), or in "tx#k.<field> <value>" for a per-transaction field (gas_used, contract,
# error, block), or "<label> <result|error> <value>" for an eth_call answer. Example:
#   (r"^relay", r"\\x1b", r"\x1b", "Hearth's JSON keeps ESC as is; anvil's terminal writer escapes it")
REFUSED = ("anvil makes a console call it cannot decode revert (Hardhat's older log(uint)/log(int) "
           "spellings, unknown selectors, malformed arguments); Hearth lets it run as the call to an "
           "account without code it is on any chain, printing the old spellings as Hardhat does "
           "(README, What the node prints)")
DOCUMENTED = [
    # The refused payloads' step: every line and the gas follow from anvil's revert.
    (r"^refused", r".", r".", REFUSED),
    # The nested step holds one refused payload (payload 3, an old spelling).
    (r"^nested", r"relay: payload \d+ succeeded: false|0x08c379a0|gas_used", r".", REFUSED),
    # eth_estimateGas: anvil prints the lines of every run of its gas search.
    (r"^eth_estimateGas$", r"^call:eth_estimateGas ", r"^-$",
     "anvil prints a call's console lines again for each run of eth_estimateGas's gas search; "
     "Hearth prints them once, from the first run"),
]

# ---------------------------------------------------------------------------------------------
# keccak-256 and a small ABI encoder
# ---------------------------------------------------------------------------------------------
_RC = [
    0x0000000000000001, 0x0000000000008082, 0x800000000000808A, 0x8000000080008000,
    0x000000000000808B, 0x0000000080000001, 0x8000000080008081, 0x8000000000008009,
    0x000000000000008A, 0x0000000000000088, 0x0000000080008009, 0x000000008000000A,
    0x000000008000808B, 0x800000000000008B, 0x8000000000008089, 0x8000000000008003,
    0x8000000000008002, 0x8000000000000080, 0x000000000000800A, 0x800000008000000A,
    0x8000000080008081, 0x8000000000008080, 0x0000000080000001, 0x8000000080008008,
]
_ROT = [[0, 36, 3, 41, 18], [1, 44, 10, 45, 2], [62, 6, 43, 15, 61], [28, 55, 25, 21, 56],
        [27, 20, 39, 8, 14]]
_M64 = (1 << 64) - 1


def _rol(x, n):
    return ((x << n) | (x >> (64 - n))) & _M64 if n else x


def _keccak_f(a):
    for rc in _RC:
        c = [a[x][0] ^ a[x][1] ^ a[x][2] ^ a[x][3] ^ a[x][4] for x in range(5)]
        d = [c[(x - 1) % 5] ^ _rol(c[(x + 1) % 5], 1) for x in range(5)]
        b = [[0] * 5 for _ in range(5)]
        for x in range(5):
            for y in range(5):
                b[y][(2 * x + 3 * y) % 5] = _rol(a[x][y] ^ d[x], _ROT[x][y])
        a = [[b[x][y] ^ (~b[(x + 1) % 5][y] & b[(x + 2) % 5][y]) for y in range(5)] for x in range(5)]
        a[0][0] ^= rc
    return a


def keccak256(data):
    rate = 136
    padded = bytearray(data) + b"\x01"
    padded += b"\x00" * (-len(padded) % rate)
    padded[-1] |= 0x80
    a = [[0] * 5 for _ in range(5)]
    for start in range(0, len(padded), rate):
        for i in range(rate // 8):
            a[i % 5][i // 5] ^= int.from_bytes(padded[start + 8 * i:start + 8 * i + 8], "little")
        a = _keccak_f(a)
    return b"".join(a[i % 5][i // 5].to_bytes(8, "little") for i in range(4))


def selector(signature):
    return keccak256(signature.encode())[:4]


def _word(n):
    return (n % (1 << 256)).to_bytes(32, "big")


def _padded(raw):
    return raw + b"\x00" * (-len(raw) % 32)


def _static(kind, value):
    if kind in ("uint256", "int256"):
        return _word(value)
    if kind == "bool":
        return _word(1 if value else 0)
    if kind == "address":
        return _word(int(value, 16))
    if kind.startswith("bytes") and kind != "bytes":
        return value.ljust(32, b"\x00")
    raise ValueError(kind)


def _dynamic(kind, value):
    if kind in ("string", "bytes"):
        raw = value.encode() if isinstance(value, str) else value  # bytes: a string not UTF-8
        return _word(len(raw)) + _padded(raw)
    if kind == "bytes[]":
        return _word(len(value)) + encode(["bytes"] * len(value), value)
    raise ValueError(kind)


def encode(kinds, values):
    """The ABI encoding of `values` as a tuple of `kinds` (no selector)."""
    heads, tails, offset = [], [], 32 * len(kinds)
    for kind, value in zip(kinds, values):
        if kind in ("string", "bytes") or kind.endswith("[]"):
            tail = _dynamic(kind, value)
            heads.append(_word(offset + sum(len(t) for t in tails)))
            tails.append(tail)
        else:
            heads.append(_static(kind, value))
    return b"".join(heads) + b"".join(tails)


def calldata(signature, *values):
    kinds = signature[signature.index("(") + 1:-1]
    kinds = kinds.split(",") if kinds else []
    return selector(signature) + encode(kinds, values)


def hexs(raw):
    return "0x" + raw.hex()


# ---------------------------------------------------------------------------------------------
# console payloads
# ---------------------------------------------------------------------------------------------
UINTS = [0, 1, 2, 7, 42, 255, 256, 10**18, 123456789, 2**64, 2**128 - 1, 2**255, 2**256 - 1, 10**77]
INTS = [0, 1, -1, 42, -42, 10**18, -10**18, 2**255 - 1, -2**255, -2**128]
BOOLS = [True, False]
ADDRESSES = [
    "0xf39Fd6e51aad88F6F4ce6aB8827279cffFb92266",
    "0x0000000000000000000000000000000000000000",
    CONSOLE,
    "0xffffffffffffffffffffffffffffffffffffffff",
    "0x00000000000000000000000000000000000000ff",
    "0xabcdefabcdefabcdefabcdefabcdefabcdefabcd",
    "0x70997970c51812dc3a010c7d01b50e0d17dc79c8",
]
STRINGS = [
    "",
    "hello",
    "héllo wörld ✓",
    "emoji 🦀 and 中文",
    "line one\nline two",
    "tab\there",
    "  leading and trailing  ",
    "quote \" and backslash \\",
    "percent %s here is a value, not a format",
    "ansi \x1b[31mred\x1b[0m",
    "bel\x07 bs\x08 ff\x0c del\x7f cr\r vt\x0b nul\x00 end",
    "a" * 70,
    "0x1234",
    "x" * 600,
]
# First string argument: the format string (anvil formats %s %d %i %o %x %e and %%).
FORMATS = [
    "%s", "%d", "%i", "%o", "%x", "%e", "%5e", "%%", "100% sure", "%", "trailing %",
    "%s %s %s %s %s", "%d and %s", "no specifiers", "%s%%%d", "%5", "%.3e", "%-d", "%z", "%c",
    "%%s %s", "%18e", "%0e", "% d", "%ee", "%5s", "%i%i%i", "value: %o / %x / %e", "%18e %2e %1e",
]
BYTES = [b"", b"\x01", bytes(range(33)), b"\xff" * 32, bytes(range(64)), b"hello"]
BASIC = ["uint256", "string", "bool", "address"]


class Values:
    """Rotates through each type's values, so every selector gets different ones."""

    def __init__(self):
        self.turn = itertools.count()

    def pick(self, kind, first):
        n = next(self.turn)
        if kind == "uint256":
            return UINTS[n % len(UINTS)]
        if kind == "int256":
            return INTS[n % len(INTS)]
        if kind == "bool":
            return BOOLS[n % 2]
        if kind == "address":
            return ADDRESSES[n % len(ADDRESSES)]
        if kind == "string":
            return FORMATS[n % len(FORMATS)] if first else STRINGS[n % len(STRINGS)]
        raise ValueError(kind)


def console_payloads():
    """(label, payload) for every console selector anvil knows, with varied values."""
    out = [("log()", selector("log()"))]
    for v in UINTS:
        out.append(("log(uint256)", calldata("log(uint256)", v)))
    for v in INTS:
        out.append(("log(int256)", calldata("log(int256)", v)))
    for v in STRINGS + FORMATS:
        out.append(("log(string)", calldata("log(string)", v)))
    for v in BOOLS:
        out.append(("log(bool)", calldata("log(bool)", v)))
    for v in ADDRESSES:
        out.append(("log(address)", calldata("log(address)", v)))
    for v in BYTES:
        out.append(("log(bytes)", calldata("log(bytes)", v)))
    for n in range(1, 33):
        for v in (bytes(range(1, n + 1)), b"\x00" * n, b"\xff" * n):
            out.append((f"log(bytes{n})", calldata(f"log(bytes{n})", v)))
    for fmt, v in zip(FORMATS, itertools.cycle(INTS)):
        out.append(("log(string,int256)", calldata("log(string,int256)", fmt, v)))
    values = Values()
    for arity in (2, 3, 4):
        for kinds in itertools.product(BASIC, repeat=arity):
            signature = f"log({','.join(kinds)})"
            args = [values.pick(kind, i == 0) for i, kind in enumerate(kinds)]
            out.append((signature, calldata(signature, *args)))
    # Every format string against each type as its one argument.
    for kind in BASIC:
        for fmt in FORMATS:
            signature = f"log(string,{kind})"
            out.append((signature, calldata(signature, fmt, values.pick(kind, False))))
    return out


def refused_payloads():
    """Payloads anvil 1.7.1 may refuse: unknown selectors, malformed or odd arguments."""
    word = lambda n: _word(n)
    log_string = selector("log(string)")
    return [
        ("old Hardhat log(uint)", selector("log(uint)") + word(42)),
        ("old Hardhat log(int)", selector("log(int)") + word(-1)),
        ("old Hardhat log(string,uint)", selector("log(string,uint)") + encode(["string", "uint256"], ["x %d", 5])),
        ("old Hardhat log(uint,uint,uint,uint)", selector("log(uint,uint,uint,uint)") + word(1) + word(2) + word(3) + word(4)),
        ("forge-std logUint(uint256)", selector("logUint(uint256)") + word(43)),
        ("foo()", selector("foo()")),
        ("empty payload", b""),
        ("one byte", b"\x12"),
        ("three bytes", selector("log()")[:3]),
        ("log(string) without arguments", log_string),
        ("log(uint256) short by one byte", selector("log(uint256)") + word(42)[:31]),
        ("log(uint256) with trailing bytes", selector("log(uint256)") + word(42) + b"\x01\x02"),
        ("log() with trailing bytes", selector("log()") + word(1)),
        ("log(string) offset past the end", log_string + word(0x1000)),
        ("log(string) length past the end", log_string + word(32) + word(1000) + _padded(b"short")),
        ("log(string) not UTF-8", log_string + encode(["string"], [b"bad \xff\xfe utf8 \xc3"])),
        ("log(string) dirty padding", log_string + word(32) + word(2) + b"hi" + b"\x01" * 30),
        ("log(bool) of 2", selector("log(bool)") + word(2)),
        ("log(address) dirty high bytes", selector("log(address)") + b"\x01" * 12 + bytes.fromhex(ACCOUNTS[0][2:])),
        ("log(bytes1) dirty low bytes", selector("log(bytes1)") + b"\x12" + b"\x34" * 31),
        ("log(uint256,uint256) one argument", selector("log(uint256,uint256)") + word(1)),
    ]


# ---------------------------------------------------------------------------------------------
# RPC
# ---------------------------------------------------------------------------------------------
class RpcError(Exception):
    def __init__(self, method, error):
        super().__init__(f"{method}: {error}")
        self.error = error


def rpc(url, method, params):
    body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": method, "params": params}).encode()
    request = urllib.request.Request(url, body, {"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=120) as response:
        answer = json.load(response)
    if "error" in answer:
        raise RpcError(method, answer["error"])
    return answer["result"]


# ---------------------------------------------------------------------------------------------
# reading each node's output
# ---------------------------------------------------------------------------------------------
METHOD_LINE = re.compile(r"^(eth|net|web3|debug|trace|anvil|hardhat|evm|txpool|ots|personal|erigon|admin|rpc)_[A-Za-z0-9]+$")
CALL_METHODS = {"eth_call", "eth_estimateGas", "eth_simulateV1", "eth_createAccessList", "debug_traceCall",
                "trace_call", "eth_callMany", "trace_callMany"}
SEND_METHODS = {"eth_sendTransaction", "eth_sendRawTransaction", "eth_sendTransactionSync",
                "eth_sendRawTransactionSync", "eth_sendUnsignedTransaction", "anvil_mine", "evm_mine"}


def read_lines(path):
    """Complete lines of a file that is still being written (split at \\n only)."""
    with open(path, "rb") as f:
        raw = f.read()
    lines = raw.split(b"\n")
    return [line.decode("utf-8", "replace") for line in lines[:-1]]


class AnvilOutput:
    """anvil's stdout: console lines among method names, per-transaction blocks and RPC errors."""

    def __init__(self, path):
        self.path = path

    def lines(self):
        return read_lines(self.path)

    def has_console_line(self, text):
        return text in self.lines()

    def has_tx(self, tx):
        lines = self.lines()
        try:
            at = lines.index(f"    Transaction: {tx}")
        except ValueError:
            return False
        return any(line.startswith("    Block Time: ") for line in lines[at:])

    def region(self, begin, end):
        lines = self.lines()
        if begin not in lines:
            return None
        start = lines.index(begin) + 1
        stop = lines.index(end, start) if end in lines[start:] else len(lines)
        return self.events(lines[start:stop])

    @staticmethod
    def events(lines):
        """("console", text, source) / ("tx", fields) in order; source is "call:<method>",
        or "tx:<hash>" once the transaction's block follows."""
        out, current, pending = [], None, []
        i = 0

        def next_content(j):
            while j < len(lines) and METHOD_LINE.match(lines[j]):
                j += 1
            return lines[j] if j < len(lines) else None

        while i < len(lines):
            line = lines[i]
            if METHOD_LINE.match(line):
                if line in CALL_METHODS:
                    current = "call:" + line
                elif line in SEND_METHODS:
                    current = "tx"
                i += 1
                continue
            if line == "" and (next_content(i + 1) or "").startswith("    Transaction: "):
                fields, key, i = {}, None, i + 1
                while i < len(lines):
                    line = lines[i]
                    i += 1
                    if METHOD_LINE.match(line) or line == "":
                        if line == "" and "Block Time" in fields:
                            break
                        continue
                    match = re.match(r"^    ([A-Za-z ]+): (.*)$", line)
                    if match:
                        key = match.group(1)
                        fields[key] = match.group(2)
                    elif key is not None:  # a reason with a newline in it
                        fields[key] += "\n" + line
                for entry in pending:
                    entry[2] = "tx:" + fields.get("Transaction", "?")
                pending = []
                out.append(["tx", fields])
                continue
            if line == "" and next_content(i + 1) == "RPC request failed:":
                i += 1
                while i < len(lines) and lines[i] != "":
                    i += 1
                i += 1
                continue
            entry = ["console", line, current or "?"]
            if current == "tx":
                pending.append(entry)
            out.append(entry)
            i += 1
        return out


class HearthOutput:
    """Hearth's stderr with --log.format json: one JSON object a line."""

    def __init__(self, path):
        self.path = path

    def records(self):
        out = []
        for line in read_lines(self.path):
            if not line.startswith("{"):
                continue
            try:
                out.append(json.loads(line))
            except json.JSONDecodeError:
                continue
        return out

    @staticmethod
    def fields(record):
        fields = record.get("fields")
        return fields if isinstance(fields, dict) else record

    def has_console_line(self, text):
        return any(r.get("target") == "console" and self.fields(r).get("message") == text
                   for r in self.records())

    def has_tx(self, tx):
        return any(r.get("target") == "tx" and str(self.fields(r).get("hash", "")).lower() == tx.lower()
                   for r in self.records())

    def region(self, begin, end):
        records = self.records()
        marks = [i for i, r in enumerate(records)
                 if r.get("target") == "console" and self.fields(r).get("message") in (begin, end)]
        starts = [i for i in marks if self.fields(records[i]).get("message") == begin]
        if not starts:
            return None
        start = starts[0] + 1
        stops = [i for i in marks if i >= start and self.fields(records[i]).get("message") == end]
        out = []
        for record in records[start:stops[0] if stops else len(records)]:
            fields = self.fields(record)
            if record.get("target") == "console":
                if fields.get("tx") is not None:
                    source = "tx:" + str(fields["tx"])
                elif fields.get("call") is not None:
                    source = "call:" + str(fields["call"])
                else:
                    source = "?"
                for text in terminal(str(fields.get("message", ""))).split("\n"):
                    out.append(["console", text, source])
            elif record.get("target") == "tx":
                out.append(["tx", {
                    "Transaction": fields.get("hash"),
                    "Contract created": fields.get("contract"),
                    "Gas used": fields.get("gas_used"),
                    "Error": None if fields.get("error") is None else terminal(fields["error"]),
                    "Block Number": fields.get("block"),
                    "Block Hash": fields.get("block_hash"),
                    "Block Time": fields.get("block_time"),
                    "hearth": True,
                }])
        return out


# ---------------------------------------------------------------------------------------------
# a node under test
# ---------------------------------------------------------------------------------------------
MARKER_INIT_PREFIX_LEN = 42


def marker_init_code(text):
    """Init code that staticcalls the console with log(string) `text`, then stops."""
    payload = calldata("log(string)", text)
    size = len(payload)
    code = (bytes([0x61]) + size.to_bytes(2, "big")          # PUSH2 size
            + bytes([0x61]) + MARKER_INIT_PREFIX_LEN.to_bytes(2, "big")  # PUSH2 offset
            + bytes([0x60, 0x00, 0x39])                      # PUSH1 0, CODECOPY
            + bytes([0x60, 0x00, 0x60, 0x00])                # retSize, retOffset
            + bytes([0x61]) + size.to_bytes(2, "big")        # argsSize
            + bytes([0x60, 0x00])                            # argsOffset
            + bytes([0x73]) + bytes.fromhex(CONSOLE[2:])     # PUSH20 console
            + bytes([0x5A, 0xFA, 0x00]))                     # GAS, STATICCALL, STOP
    assert len(code) == MARKER_INIT_PREFIX_LEN
    return code + payload


class Node:
    def __init__(self, name, url, output):
        self.name, self.url, self.output = name, url, output
        self.nonce = 0
        self.step_txs = []  # hashes sent in the current step, in order
        self.step_calls = []  # (label, outcome) of the current step's eth_calls
        self.contract = None
        self.marker_wait = 15.0
        self.problems = []

    def rpc(self, method, params):
        return rpc(self.url, method, params)

    def send(self, to, data, gas, value=0):
        tx = {"from": ACCOUNTS[0], "data": hexs(data), "gas": hex(gas), "value": hex(value),
              "nonce": hex(self.nonce), "maxFeePerGas": hex(GAS_FEE_CAP),
              "maxPriorityFeePerGas": hex(GAS_TIP)}
        if to is not None:
            tx["to"] = to
        tx_hash = self.rpc("eth_sendTransaction", [tx])
        self.nonce += 1
        self.step_txs.append(tx_hash)
        receipt = None
        for _ in range(500):
            receipt = self.rpc("eth_getTransactionReceipt", [tx_hash])
            if receipt is not None:
                break
            time.sleep(0.02)
        if receipt is None:
            raise RuntimeError(f"{self.name}: {tx_hash} was not mined")
        return receipt

    def call(self, label, data, to=None, method="eth_call"):
        request = {"from": ACCOUNTS[0], "to": to or self.contract, "data": hexs(data)}
        if method == "eth_estimateGas":
            params = [request]
        elif method == "debug_traceCall":
            params = [request, "latest", {"tracer": "callTracer"}]
        else:
            params = [request, "latest"]
        try:
            outcome = ("result", self.rpc(method, params))
        except RpcError as e:
            error = e.error if isinstance(e.error, dict) else {}
            outcome = ("error", error.get("data") if isinstance(error.get("data"), str) else error.get("message"))
        if method == "eth_call":
            self.step_calls.append((label, outcome))
        return outcome

    def marker(self, text):
        request = {"from": ACCOUNTS[0], "data": hexs(marker_init_code(text))}
        self.rpc("eth_call", [request, "latest"])
        deadline = time.time() + self.marker_wait
        while time.time() < deadline:
            if self.output.has_console_line(text):
                return True
            time.sleep(0.05)
        self.problems.append(f"{self.name} did not print the marker {text!r}")
        self.marker_wait = 1.0  # it prints no console line: do not wait long for the next ones
        return False

    def wait_txs(self):
        deadline = time.time() + 15
        for tx in self.step_txs:
            while not self.output.has_tx(tx):
                if time.time() > deadline:
                    self.problems.append(f"{self.name} printed no transaction line for {tx}")
                    break
                time.sleep(0.05)


# ---------------------------------------------------------------------------------------------
# the steps: each runs on one node; `node.step_txs` collects its mined transactions
# ---------------------------------------------------------------------------------------------
def chunks(items, size=CHUNK_PAYLOADS):
    return [items[i:i + size] for i in range(0, len(items), size)]


def relay_data(payloads):
    return calldata("relay(bytes[])", [p for _, p in payloads])


def build_steps(artifact):
    payloads = console_payloads()
    refused = refused_payloads()
    bytecode = bytes.fromhex(artifact["bytecode"][2:])
    constructor_payloads = payloads[::16] + [("log(string)", calldata("log(string)", s)) for s in STRINGS[:6]]
    nested_a = [payloads[i] for i in (1, 20, 40, 60, 300)]
    nested_b = [payloads[i] for i in (2, 30, 200)] + refused[:1]
    revert_payloads = payloads[100:110]
    rounds_ok, rounds_oog = 5, 2000

    def deploy(node):
        receipt = node.send(None, bytecode + encode(["bytes[]"], [[p for _, p in constructor_payloads]]), 5_000_000)
        node.contract = receipt["contractAddress"]

    def transfer(node):
        node.send(ACCOUNTS[1], b"", 21_000, value=10**18)

    def relay_tx(node):
        for chunk in chunks(payloads):
            node.send(node.contract, relay_data(chunk), 8_000_000)

    def relay_call(node):
        for n, chunk in enumerate(chunks(payloads)):
            node.call(f"relay chunk {n}", relay_data(chunk))

    def refused_tx(node):
        node.send(node.contract, relay_data(refused), 3_000_000)

    def refused_call(node):
        node.call("relay refused", relay_data(refused))

    direct_args = [
        (42, -7, "direct ✓ line\nand more", ACCOUNTS[1], True, b"\xab" * 32, b"\x01\x02\x03"),
        # (not the zero address: it is the coinbase, its balance follows every earlier gas difference)
        (2**256 - 1, -2**255, "", "0x000000000000000000000000000000000000dEaD", False, b"\x00" * 32, b""),
    ]
    direct_kinds = ["uint256", "int256", "string", "address", "bool", "bytes32", "bytes"]

    def direct_tx(node):
        for args in direct_args:
            node.send(node.contract, selector(f"direct({','.join(direct_kinds)})") + encode(direct_kinds, args), 1_000_000)

    def direct_call(node):
        for n, args in enumerate(direct_args):
            node.call(f"direct {n}", selector(f"direct({','.join(direct_kinds)})") + encode(direct_kinds, args))

    nested_data = calldata("nested(bytes[],bytes[])", [p for _, p in nested_a], [p for _, p in nested_b])

    def nested_tx(node):
        node.send(node.contract, nested_data, 3_000_000)

    def nested_call(node):
        node.call("nested", nested_data)

    revert_data = calldata("relayThenRevert(bytes[])", [p for _, p in revert_payloads])

    def revert_tx(node):
        node.send(node.contract, revert_data, 2_000_000)

    def revert_call(node):
        node.call("relayThenRevert", revert_data)

    failures = [
        ("require", calldata("failRequire()"), 1_000_000),
        ("panic 0x12", calldata("failDivide(uint256)", 0), 1_000_000),
        ("panic 0x01", calldata("failAssert(uint256)", 0), 1_000_000),
        ("custom error", calldata("failCustom(uint256)", 7), 1_000_000),
        ("custom error, not UTF-8", calldata("failCustom(uint256)", 2**256 - 1), 1_000_000),
        ("empty revert", calldata("revertWith(bytes)", b""), 1_000_000),
        ("Error(\"\")", calldata("revertWith(bytes)", calldata("Error(string)", "")), 1_000_000),
        ("Error with a newline", calldata("revertWith(bytes)", calldata("Error(string)", "first\nsecond")), 1_000_000),
        ("Error not UTF-8", calldata("revertWith(bytes)", calldata("Error(string)", b"bad \xff utf8")), 1_000_000),
        ("Error malformed", calldata("revertWith(bytes)", selector("Error(string)") + _word(32)), 1_000_000),
        ("Panic(0x99)", calldata("revertWith(bytes)", calldata("Panic(uint256)", 0x99)), 1_000_000),
        ("three bytes", calldata("revertWith(bytes)", b"\x01\x02\x03"), 1_000_000),
        ("a known selector", calldata("revertWith(bytes)", calldata("log(string)", "not an error")), 1_000_000),
        ("out of gas", calldata("burn(uint256)", rounds_oog), 100_000),
        ("invalid opcode (create)", None, 100_000),
    ]

    def failures_tx(node):
        for _, data, gas in failures:
            if data is None:
                node.send(None, b"\xfe", gas)
            else:
                node.send(node.contract, data, gas)
        node.send(node.contract, calldata("burn(uint256)", rounds_ok), 1_000_000)

    def failures_call(node):
        for label, data, _ in failures:
            if data is not None:
                node.call(label, data)

    small = [payloads[0], payloads[5], payloads[200]]

    def estimate(node):
        node.call("estimate relay", relay_data(small), method="eth_estimateGas")

    def estimate_revert(node):
        node.call("estimate failRequire", calldata("failRequire()"), method="eth_estimateGas")

    def simulate(node):
        calls = [{"from": ACCOUNTS[0], "to": node.contract, "data": hexs(relay_data(small))},
                 {"from": ACCOUNTS[0], "to": node.contract, "data": hexs(calldata("failRequire()"))}]
        try:
            node.rpc("eth_simulateV1", [{"blockStateCalls": [{"calls": calls}]}, "latest"])
        except RpcError as e:
            node.problems.append(f"{node.name} eth_simulateV1: {e}")

    def access_list(node):
        node.call("access list", relay_data(small), method="eth_createAccessList")

    def trace_call(node):
        node.call("debug_traceCall", relay_data(small), method="debug_traceCall")

    return [
        ("deploy", deploy), ("transfer", transfer),
        ("relay tx", relay_tx), ("relay call", relay_call),
        ("refused tx", refused_tx), ("refused call", refused_call),
        ("direct tx", direct_tx), ("direct call", direct_call),
        ("nested tx", nested_tx), ("nested call", nested_call),
        ("relayThenRevert tx", revert_tx), ("relayThenRevert call", revert_call),
        ("failures tx", failures_tx), ("failures call", failures_call),
        ("eth_estimateGas", estimate), ("eth_estimateGas revert", estimate_revert),
        ("eth_simulateV1", simulate), ("eth_createAccessList", access_list),
        ("debug_traceCall", trace_call),
    ]


# ---------------------------------------------------------------------------------------------
# comparing
# ---------------------------------------------------------------------------------------------
def number(value):
    if value is None:
        return None
    if isinstance(value, int):
        return value
    text = str(value).strip()
    try:
        return int(text, 16) if text.lower().startswith("0x") else int(text)
    except ValueError:
        return text


def reason(anvil_error):
    if anvil_error is None:
        return None
    return anvil_error[len("reverted with: "):] if anvil_error.startswith("reverted with: ") else anvil_error


def tx_view(fields, hearth):
    """The compared fields of one per-transaction line."""
    contract = fields.get("Contract created")
    return {
        "gas_used": number(fields.get("Gas used")),
        "contract": contract.lower() if isinstance(contract, str) else contract,
        "error": fields.get("Error") if hearth else reason(fields.get("Error")),
        "block": number(fields.get("Block Number")),
    }


def labelled(events, txs):
    """Console lines as (source, text) with each transaction hash as tx#k; per-tx views by k."""
    label = {tx.lower(): f"tx#{k}" for k, tx in enumerate(txs)}
    lines, tx_lines = [], {}
    for event in events:
        if event[0] == "console":
            source = event[2]
            if source.startswith("tx:"):
                source = label.get(source[3:].lower(), "tx:unknown " + source[3:])
            lines.append((source, event[1]))
        else:
            fields = event[1]
            k = label.get(str(fields.get("Transaction")).lower())
            if k is not None:
                tx_lines[k] = tx_view(fields, fields.get("hearth", False))
    return lines, tx_lines


# Hearth's text log and anvil's output both come from tracing-subscriber's text writer, which
# prints these five controls as escapes (so a contract cannot drive the terminal); Hearth's
# JSON log keeps the text as it was (JSON-escaped). Comparing the JSON, apply the same escaping.
TERMINAL_ESCAPES = {"\x1b": "\\x1b", "\x07": "\\x07", "\x08": "\\x08", "\x0c": "\\x0c", "\x7f": "\\x7f"}


def terminal(text):
    return "".join(TERMINAL_ESCAPES.get(c, c) for c in text)


def documented(step, anvil_side, hearth_side):
    for step_re, anvil_re, hearth_re, why in DOCUMENTED:
        if re.search(step_re, step) and re.search(anvil_re, anvil_side) and re.search(hearth_re, hearth_side):
            return why
    return None


def raw(line):
    return "-" if line is None else f"{line[0]} {line[1]}"


def show(line):
    return "-" if line is None else f"{line[0]} {line[1]!r}"


class Tally:
    def __init__(self):
        self.equal = self.different = 0
        self.undocumented = 0
        self.printed = 0

    def diff(self, step, where, anvil_side, hearth_side, anvil_raw=None, hearth_raw=None):
        """One difference: *_side as printed, *_raw (default: the same) as DOCUMENTED sees it."""
        self.different += 1
        why = documented(step, anvil_side if anvil_raw is None else anvil_raw,
                         hearth_side if hearth_raw is None else hearth_raw)
        if why is None:
            self.undocumented += 1
        if self.printed < 400:
            self.printed += 1
            print(f"DIFF [{step}] {where}\n    anvil:  {anvil_side}\n    hearth: {hearth_side}"
                  + (f"\n    documented: {why}" if why else ""))


def compare_lines(step, tally, anvil_lines, hearth_lines):
    matcher = difflib.SequenceMatcher(None, anvil_lines, hearth_lines, autojunk=False)
    for op, a0, a1, h0, h1 in matcher.get_opcodes():
        if op == "equal":
            tally.equal += a1 - a0
            continue
        for k in range(max(a1 - a0, h1 - h0)):
            a = anvil_lines[a0 + k] if a0 + k < a1 else None
            h = hearth_lines[h0 + k] if h0 + k < h1 else None
            where = f"line {a0 + k if a is not None else '-'} / {h0 + k if h is not None else '-'}"
            tally.diff(step, where, show(a), show(h), raw(a), raw(h))


def main():
    parser = argparse.ArgumentParser(description="console.log lines: anvil against Hearth")
    for name in ("anvil_url", "anvil_log", "hearth_url", "hearth_log", "artifact"):
        parser.add_argument(name)
    parser.add_argument("--hearth-format", choices=("json", "anvil"), default="json")
    options = parser.parse_args()
    anvil_url, anvil_log, hearth_url, hearth_log, artifact_path = (
        options.anvil_url, options.anvil_log, options.hearth_url, options.hearth_log, options.artifact)
    hearth_format = options.hearth_format
    artifact = json.load(open(artifact_path))["ConsoleLog"]
    anvil = Node("anvil", anvil_url, AnvilOutput(anvil_log))
    hearth = Node("hearth", hearth_url, AnvilOutput(hearth_log) if hearth_format == "anvil" else HearthOutput(hearth_log))
    assert keccak256(b"").hex() == "c5d2460186f7233c927e7db2dcc703c0e500b653ca82273b7bfad8045d85a470"
    assert selector("log(string)").hex() == "41304fac"

    steps = build_steps(artifact)
    print(f"{len(console_payloads())} console payloads ({len(set(s for s, _ in console_payloads()))} selectors), "
          f"{len(refused_payloads())} refused ones, {len(steps)} steps")
    results = {}
    for name, run in steps:
        for node in (anvil, hearth):
            node.step_txs, node.step_calls = [], []
            begin, end = f"console-compare: {name} begin", f"console-compare: {name} end"
            node.marker(begin)
            run(node)
            node.wait_txs()
            node.marker(end)
            results[(name, node.name)] = (list(node.step_txs), list(node.step_calls))

    tally = Tally()
    same_hashes = True
    for name, _ in steps:
        begin, end = f"console-compare: {name} begin", f"console-compare: {name} end"
        a_txs, a_calls = results[(name, "anvil")]
        h_txs, h_calls = results[(name, "hearth")]
        same_hashes &= [t.lower() for t in a_txs] == [t.lower() for t in h_txs]
        a_events = anvil.output.region(begin, end) or []
        h_events = hearth.output.region(begin, end) or []
        a_lines, a_tx = labelled(a_events, a_txs)
        h_lines, h_tx = labelled(h_events, h_txs)
        if os.environ.get("SABOTAGE") and name == "relay tx" and h_lines:
            k = min(3, len(h_lines) - 1)
            h_lines[k] = (h_lines[k][0], h_lines[k][1] + " (sabotaged)")
        compare_lines(name, tally, a_lines, h_lines)
        for k in range(len(a_txs)):
            label = f"tx#{k}"
            a, h = a_tx.get(label), h_tx.get(label)
            if a is None or h is None:
                tally.diff(name, f"{label} line", "-" if a is None else f"{label} {a}", "-" if h is None else f"{label} {h}")
                continue
            for field in ("gas_used", "contract", "error", "block"):
                if a[field] == h[field]:
                    tally.equal += 1
                else:
                    tally.diff(name, f"{label}.{field}", f"{label}.{field} {a[field]!r}", f"{label}.{field} {h[field]!r}",
                               f"{label}.{field} {a[field]}", f"{label}.{field} {h[field]}")
        for (label, a_out), (_, h_out) in zip(a_calls, h_calls):
            if a_out == h_out:
                tally.equal += 1
            else:
                tally.diff(name, f"eth_call {label} answer", f"{label} {a_out[0]} {a_out[1]}", f"{label} {h_out[0]} {h_out[1]}")
        print(f"[{name}] anvil {len(a_lines)} console lines, hearth {len(h_lines)}; {len(a_txs)} transactions")

    for problem in anvil.problems + hearth.problems:
        print(f"NOTE {problem}")
    if not same_hashes:
        print("NOTE the two nodes gave different transaction hashes for the same requests (compared by order)")
    if tally.printed < tally.different:
        print(f"... {tally.different - tally.printed} more differences not printed")
    print(f"{tally.equal} equal, {tally.different} different")
    if tally.undocumented:
        print(f"{tally.undocumented} differences not listed in DOCUMENTED", file=sys.stderr)
        sys.exit(1)
    if anvil.problems:
        print("anvil did not print what it should (see NOTE above)", file=sys.stderr)
        sys.exit(1)


if __name__ == "__main__":
    main()
