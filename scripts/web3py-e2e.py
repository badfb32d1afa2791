#!/usr/bin/env python3
"""End-to-end check with web3.py (v7) against a running Hearth dev chain.

    python scripts/web3py-e2e.py http://127.0.0.1:8545     # run by scripts/py-e2e.sh

Flow: a transfer from an unlocked dev account (eth_sendTransaction) and its receipt, then its
traces through `w3.provider.make_request`, as debuggers built on web3.py send them:
debug_traceTransaction with callTracer and with the struct logger, debug_traceCall, and
trace_transaction. Exits 1 on any failed check.
"""

import sys

from web3 import Web3

url = sys.argv[1] if len(sys.argv) > 1 else "http://127.0.0.1:8545"
w3 = Web3(Web3.HTTPProvider(url))
fails = 0


def check(name, ok, extra=""):
    global fails
    print(f"{'ok  ' if ok else 'FAIL'} {name} {extra}")
    fails += 0 if ok else 1


def request(method, params):
    answer = w3.provider.make_request(method, params)
    if "error" in answer:
        raise RuntimeError(f"{method}: {answer['error']}")
    return answer["result"]


try:
    alice = w3.eth.accounts[0]
    bob = Web3.to_checksum_address("0x000000000000000000000000000000000000b0b0")
    tx = w3.eth.send_transaction({"from": alice, "to": bob, "value": w3.to_wei(1, "ether")})
    receipt = w3.eth.wait_for_transaction_receipt(tx, timeout=10)
    check("send_transaction + receipt", receipt.status == 1)
    frame = request("debug_traceTransaction", [tx.to_0x_hex(), {"tracer": "callTracer"}])
    check("debug_traceTransaction callTracer",
          frame["type"] == "CALL" and frame["to"] == bob.lower() and frame["gasUsed"] == "0x5208",
          str(frame))
    logs = request("debug_traceTransaction", [tx.to_0x_hex(), {}])
    check("debug_traceTransaction struct logs",
          logs["gas"] == 21000 and logs["failed"] is False and logs["structLogs"] == [], str(logs))
    # A call that runs code: NUMBER, then return it (state override puts the code there).
    code = "0x4360005260206000f3"
    call = request("debug_traceCall", [{"to": bob}, "latest", {"stateOverrides": {bob: {"code": code}}}])
    ops = [log["op"] for log in call["structLogs"]]
    check("debug_traceCall with a state override", ops[0] == "NUMBER" and ops[-1] == "RETURN", str(ops))
    flat = request("trace_transaction", [tx.to_0x_hex()])
    check("trace_transaction", len(flat) == 1 and flat[0]["action"]["to"] == bob.lower(), str(flat))
    try:
        request("debug_traceTransaction", [tx.to_0x_hex(), {"tracer": "jsTracer() { }"}])
        check("a JavaScript tracer is refused", False)
    except RuntimeError as e:
        check("a JavaScript tracer is refused", "-32602" in str(e), str(e))
except Exception as e:  # noqa: BLE001 - report anything as a failed run
    print(f"FAIL exception {e}")
    fails += 1
print(f"web3py-e2e: {fails} failed")
sys.exit(1 if fails else 0)
