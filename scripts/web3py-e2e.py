#!/usr/bin/env python3
"""End-to-end check with web3.py (v7) against a running Hearth dev chain.

    python scripts/web3py-e2e.py http://127.0.0.1:8545     # run by scripts/py-e2e.sh

Flow: a transfer from an unlocked dev account (eth_sendTransaction) and its receipt, then its
traces through `w3.provider.make_request`, as debuggers built on web3.py send them:
debug_traceTransaction with callTracer and with the struct logger, debug_traceCall, and
trace_transaction; then signing with the node's account: `w3.eth.sign` (eth_sign),
`w3.eth.sign_typed_data` (which web3.py sends as eth_signTypedData, served with v4's rules) and
eth_signTypedData_v4 through make_request, each checked by recovering the signer with
eth_account (a web3.py dependency). Exits 1 on any failed check.
"""

import sys

from eth_account import Account
from eth_account.messages import encode_defunct, encode_typed_data
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
    # Signing with the dev key of account 1, recovered locally.
    signer = w3.eth.accounts[1]
    signature = w3.eth.sign(signer, data=b"hello from web3.py")
    recovered = Account.recover_message(encode_defunct(b"hello from web3.py"), signature=signature)
    check("eth.sign", recovered == signer, recovered)
    mail = {
        "types": {
            "EIP712Domain": [{"name": "name", "type": "string"}, {"name": "chainId", "type": "uint256"}],
            "Person": [{"name": "name", "type": "string"}, {"name": "wallet", "type": "address"}],
            "Mail": [{"name": "from", "type": "Person"}, {"name": "to", "type": "Person"},
                     {"name": "contents", "type": "string"}],
        },
        "primaryType": "Mail",
        "domain": {"name": "Ether Mail", "chainId": 31337},
        "message": {"from": {"name": "Cow", "wallet": "0xCD2a3d9F938E13CD947Ec05AbC7FE734Df8DD826"},
                    "to": {"name": "Bob", "wallet": "0xbBbBBBBbbBBBbbbBbbBbbbbBBbBbbbbBbBbbBBbB"},
                    "contents": "Hello, Bob!"},
    }
    expected = encode_typed_data(full_message=mail)
    typed = w3.eth.sign_typed_data(signer, mail)
    check("eth.sign_typed_data", Account.recover_message(expected, signature=typed) == signer)
    v4 = request("eth_signTypedData_v4", [signer, mail])
    check("eth_signTypedData_v4 via make_request", v4 == typed.to_0x_hex(), v4)
    try:
        request("eth_signTypedData_v4", [signer, {**mail, "primaryType": "Letter"}])
        check("typed data with a wrong primaryType is refused", False)
    except RuntimeError as e:
        check("typed data with a wrong primaryType is refused", "-32602" in str(e), str(e))
except Exception as e:  # noqa: BLE001 - report anything as a failed run
    print(f"FAIL exception {e}")
    fails += 1
print(f"web3py-e2e: {fails} failed")
sys.exit(1 if fails else 0)
