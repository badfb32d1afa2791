#!/usr/bin/env python3
"""Side-by-side traces: the same signed transactions on Hearth and on anvil, traced by both.

Usage (scripts/trace-compare.sh starts both nodes and calls this):
    python3 scripts/trace-compare.py HEARTH_URL ANVIL_URL CAST BENCHTOKEN_JSON

Both nodes start from the same dev genesis (the "test ... junk" mnemonic, 30M gas, a 1 gwei
base fee, Prague) and get the same raw transactions, signed offline with `cast mktx`, so every
transaction has the same hash, sender, nonce and contract addresses on both. The scenario:
BenchToken's deployment and transfers, a revert, a nested call (CALL, then a STATICCALL that
halts), CREATE2 of a contract that self-destructs while created and of one that stays, a
SELFDESTRUCT of an existing contract, and an EIP-7702 delegation.

Compared for every transaction: callTracer (plain, withLog, onlyTopCall) and prestateTracer
(plain, diffMode, disableCode + disableStorage), field by field; and the default struct logger,
whose answer must have geth's shape (fields, types, hex forms) and whose steps must equal
anvil's in pc, op, gas, gasCost, depth and stack. Prints each difference, then
`N equal, M different`. Differences documented in README ("Tracing") are listed in KNOWN;
any other difference fails the run (exit 1).
"""

import json
import re
import subprocess
import sys
import time
import urllib.request

from evm_code import deploy_code, word

KEYS = [
    "0xac0974bec39a17e36ba4a6b4d238ff944bacb478cbed5efcae784d7bf4f2ff80",
    "0x59c6995e998f97a5a0044966f0945389dc9e86dae88c7a8412f4603b6b78690d",
    "0x5de4111afa1a4b94908f83103eb1f1706367c2e68ca870fc3fb9a804cdab365a",
]
CHAIN_ID = 31337
GAS_PRICE = 3_000_000_000  # legacy, above every base fee the scenario reaches

# Hand-assembled contracts (tests/it/trace.rs explains each).
CALLEE = "60003580600055806000528060206000a160010160005260206000f3"
NESTER = "602a600052602060006020600060006000355af1506020602060206000600035612710fa5060206000f3"
FACTORY = "36600060003760013660006000f560005260206000f3"
SELF_DESTRUCTING_INIT = "33ff"
SELF_DESTRUCT_RUNTIME = "33ff"

# Differences README's "Tracing" section documents: (tracer label, path, what Hearth has),
# each a regular expression, and why. All are anvil 1.7.1 answering as revm-inspectors did
# before 0.44, where Hearth (on 0.44) answers as geth does.
KNOWN = [
    (r"^callTracer", r"^\.gas$", r"^Hearth",
     "root frame gas: the transaction's gas limit (geth's callTracer), where anvil reports "
     "what is left of it after the intrinsic cost"),
    (r"^prestateTracer( bare)?$", r"^\.0x[0-9a-f]{40}$", r"^only anvil",
     "an account empty before the transaction (a contract being created, a coinbase not yet "
     "paid) is left out, as geth does; anvil lists it with balance 0"),
    (r"^callTracer", r"\.calls\[\d+\]\.error$", r"write protection",
     "a state change in a static call fails with geth's \"write protection\"; anvil says "
     "revm's StateChangeDuringStaticCall"),
    (r"^callTracer onlyTopCall$", r"^\.calls$", r"^only anvil",
     "onlyTopCall answers the top call alone, as geth does; anvil keeps a SELFDESTRUCT under it"),
]

CALL_TRACERS = {
    "callTracer": {"tracer": "callTracer"},
    "callTracer withLog": {"tracer": "callTracer", "tracerConfig": {"withLog": True}},
    "callTracer onlyTopCall": {"tracer": "callTracer", "tracerConfig": {"onlyTopCall": True}},
    "prestateTracer": {"tracer": "prestateTracer"},
    "prestateTracer diffMode": {"tracer": "prestateTracer", "tracerConfig": {"diffMode": True}},
    "prestateTracer bare": {
        "tracer": "prestateTracer",
        "tracerConfig": {"disableCode": True, "disableStorage": True},
    },
}


def rpc(url, method, params):
    body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": method, "params": params}).encode()
    request = urllib.request.Request(url, body, {"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=60) as response:
        answer = json.load(response)
    if "error" in answer:
        raise RuntimeError(f"{method} on {url}: {answer['error']}")
    return answer["result"]


def receipt(url, tx):
    """The receipt of `tx`; both nodes automine, but anvil may answer a moment after the send."""
    for _ in range(100):
        found = rpc(url, "eth_getTransactionReceipt", [tx])
        if found is not None:
            return found
        time.sleep(0.02)
    raise RuntimeError(f"{tx} was not mined by {url}")



class Sender:
    """Signs the scenario's transactions offline with cast, tracking each account's nonce."""

    def __init__(self, cast):
        self.cast = cast
        self.nonces = [0] * len(KEYS)

    def raw(self, account, to=None, data="", gas=300_000, value=0, auth=None):
        nonce = self.nonces[account]
        args = [self.cast, "mktx", "--private-key", KEYS[account], "--nonce", str(nonce),
                "--chain", str(CHAIN_ID), "--gas-limit", str(gas), "--value", str(value)]
        if auth is None:
            args += ["--legacy", "--gas-price", str(GAS_PRICE)]
        else:
            args += ["--gas-price", str(GAS_PRICE), "--priority-gas-price", "1000000000",
                     "--auth", auth]
        if to is None:
            args += ["--create", "0x" + data]
        else:
            args += [to, "0x" + data]
        self.nonces[account] += 1
        return subprocess.run(args, check=True, capture_output=True, text=True).stdout.strip()

    def sign_auth(self, account, delegate, nonce):
        args = [self.cast, "wallet", "sign-auth", delegate, "--private-key", KEYS[account],
                "--nonce", str(nonce), "--chain", str(CHAIN_ID)]
        return subprocess.run(args, check=True, capture_output=True, text=True).stdout.strip()


def differences(path, ours, theirs, out):
    if isinstance(ours, dict) and isinstance(theirs, dict):
        for key in sorted(set(ours) | set(theirs)):
            sub = f"{path}.{key}"
            if key not in theirs:
                out.append((sub, "only Hearth has it", ours[key]))
            elif key not in ours:
                out.append((sub, "only anvil has it", theirs[key]))
            else:
                differences(sub, ours[key], theirs[key], out)
    elif isinstance(ours, list) and isinstance(theirs, list) and len(ours) == len(theirs):
        for i, (a, b) in enumerate(zip(ours, theirs)):
            differences(f"{path}[{i}]", a, b, out)
    elif ours != theirs:
        out.append((path, f"Hearth {json.dumps(ours)[:120]}", f"anvil {json.dumps(theirs)[:120]}"))


HEX = re.compile(r"^0x[0-9a-f]*$")
QUANTITY = re.compile(r"^0x(0|[1-9a-f][0-9a-f]*)$")
WORD = re.compile(r"^0x[0-9a-f]{64}$")
STRUCT_LOG_FIELDS = {"pc", "op", "gas", "gasCost", "depth", "stack", "memory", "storage",
                     "returnData", "refund", "error"}


def geth_shape(frame):
    """Everything about a struct-log answer that differs from geth's JSON."""
    problems = []
    if set(frame) != {"gas", "failed", "returnValue", "structLogs"}:
        problems.append(f"frame fields {sorted(frame)}")
    if not isinstance(frame.get("gas"), int) or not isinstance(frame.get("failed"), bool):
        problems.append("gas must be a number and failed a boolean")
    if not HEX.match(frame.get("returnValue", "")):
        problems.append("returnValue must be 0x-hex")
    for i, log in enumerate(frame.get("structLogs", [])):
        where = f"structLogs[{i}]"
        if not set(log) <= STRUCT_LOG_FIELDS or not {"pc", "op", "gas", "gasCost", "depth"} <= set(log):
            problems.append(f"{where} fields {sorted(log)}")
        for key in ["pc", "gas", "gasCost", "depth"]:
            if not isinstance(log.get(key), int):
                problems.append(f"{where}.{key} must be a number")
        if "refund" in log and (not isinstance(log["refund"], int) or log["refund"] == 0):
            problems.append(f"{where}.refund must be a non-zero number when present")
        if not all(QUANTITY.match(item) for item in log.get("stack", [])):
            problems.append(f"{where}.stack items must be quantities")
        if "memory" in log and (not log["memory"] or not all(WORD.match(m) for m in log["memory"])):
            problems.append(f"{where}.memory must be non-empty 32-byte words")
        if "storage" in log and not all(WORD.match(k) and WORD.match(v) for k, v in log["storage"].items()):
            problems.append(f"{where}.storage must map 32-byte words to 32-byte words")
        if "returnData" in log and (log["returnData"] == "0x" or not HEX.match(log["returnData"])):
            problems.append(f"{where}.returnData must be non-empty 0x-hex when present")
        if "error" in log and not isinstance(log["error"], str):
            problems.append(f"{where}.error must be a string")
    return problems


STEP_FIELDS = ["pc", "op", "gas", "gasCost", "depth", "stack"]


def main():
    hearth, anvil, cast, artifact = sys.argv[1:5]
    with open(artifact) as f:
        bench = json.load(f)
    token_code = bench["bytecode"].replace("0x", "")
    ids = bench["methodIdentifiers"]
    sender = Sender(cast)
    alice = "0xf39fd6e51aad88f6f4ce6ab8827279cfffb92266"
    bob = "0x70997970c51812dc3a010c7d01b50e0d17dc79c8"
    carol = "0x3c44cdddb6a900fa2b585dd299e03d12fa4293bc"
    # Contract addresses follow from (sender, nonce); both nodes report the same ones.
    scenario = []  # (name, raw transaction)

    def send(name, raw):
        hashes = [rpc(url, "eth_sendRawTransaction", [raw]) for url in (hearth, anvil)]
        assert hashes[0] == hashes[1], f"{name}: {hashes}"
        receipts = [receipt(url, hashes[0]) for url in (hearth, anvil)]
        for key in ["status", "gasUsed", "contractAddress"]:
            assert receipts[0].get(key) == receipts[1].get(key), f"{name} receipt {key}: {receipts}"
        scenario.append((name, hashes[0]))
        return receipts[0]

    transfer = lambda to, amount: ids["transfer(address,uint256)"] + word(to) + word(hex(amount))
    token = send("deploy BenchToken", sender.raw(0, data=token_code, gas=1_000_000))["contractAddress"]
    send("BenchToken transfer", sender.raw(0, token, transfer(bob, 1000), gas=100_000))
    send("BenchToken transfer back", sender.raw(1, token, transfer(alice, 10), gas=100_000))
    send("BenchToken transfer over balance (custom error)",
         sender.raw(1, token, transfer(alice, 10**30), gas=100_000))
    send("revert with a reason", sender.raw(0, token, ids["alwaysRevert()"], gas=100_000))
    callee = send("deploy callee", sender.raw(0, data=deploy_code(CALLEE)))["contractAddress"]
    nester = send("deploy nester", sender.raw(0, data=deploy_code(NESTER)))["contractAddress"]
    factory = send("deploy factory", sender.raw(0, data=deploy_code(FACTORY)))["contractAddress"]
    send("nested call (CALL, failing STATICCALL)", sender.raw(0, nester, word(callee)))
    send("CREATE2 of a self-destructing contract", sender.raw(0, factory, SELF_DESTRUCTING_INIT))
    send("CREATE2 of a contract that stays", sender.raw(0, factory, deploy_code(CALLEE)))
    doomed = send("deploy a self-destructing contract",
                  sender.raw(0, data=deploy_code(SELF_DESTRUCT_RUNTIME)))["contractAddress"]
    send("SELFDESTRUCT of an existing contract", sender.raw(1, doomed, "", value=12345))
    auth = sender.sign_auth(2, callee, nonce=1)
    send("EIP-7702 delegation, then a call of the delegated code",
         sender.raw(2, carol, word("0x7"), gas=200_000, auth=auth))

    equal, different, unknown = 0, 0, []
    for name, tx in scenario:
        for label, options in CALL_TRACERS.items():
            ours = rpc(hearth, "debug_traceTransaction", [tx, options])
            theirs = rpc(anvil, "debug_traceTransaction", [tx, options])
            diffs = []
            differences("", ours, theirs, diffs)
            if not diffs:
                equal += 1
                continue
            different += 1
            for path, a, b in diffs:
                reason = next((why for tracer, where, ours_re, why in KNOWN
                               if re.search(tracer, label) and re.search(where, path)
                               and re.search(ours_re, a)), None)
                print(f"DIFF {name} / {label} {path}: {a} | {b}"
                      + (f"  [documented: {reason}]" if reason else "  [NOT DOCUMENTED]"))
                if reason is None:
                    unknown.append((name, label, path))
        # Struct logs: geth's shape for ours, and the same steps as anvil's.
        ours = rpc(hearth, "debug_traceTransaction", [tx, {"enableMemory": True, "enableReturnData": True}])
        theirs = rpc(anvil, "debug_traceTransaction", [tx, {"enableMemory": True, "enableReturnData": True}])
        problems = geth_shape(ours)
        steps = lambda frame: [{k: log.get(k) for k in STEP_FIELDS} for log in frame["structLogs"]]
        diffs = []
        differences("", {"gas": ours["gas"], "failed": ours["failed"], "returnValue": ours["returnValue"], "steps": steps(ours)},
                    {"gas": theirs["gas"], "failed": theirs["failed"], "returnValue": theirs["returnValue"], "steps": steps(theirs)}, diffs)
        if problems or diffs:
            different += 1
            for problem in problems:
                print(f"DIFF {name} / struct logs: not geth's shape: {problem}")
                unknown.append((name, "struct logs", problem))
            for path, a, b in diffs[:5]:
                print(f"DIFF {name} / struct logs {path}: {a} | {b}")
                unknown.append((name, "struct logs", path))
        else:
            equal += 1

    print(f"{len(scenario)} transactions, {len(CALL_TRACERS) + 1} traces each")
    print(f"{equal} equal, {different} different")
    if unknown:
        print(f"{len(unknown)} differences not documented in README (Tracing)", file=sys.stderr)
        sys.exit(1)


if __name__ == "__main__":
    main()
