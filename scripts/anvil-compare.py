#!/usr/bin/env python3
"""Runs one sequence of JSON-RPC requests against anvil and against Hearth, started with the
same command line (scripts/anvil-compare.sh starts both), and compares the answers field by
field.

    python3 scripts/anvil-compare.py ANVIL_URL HEARTH_URL [--verbose]

Each step sends the same request to both nodes and compares the whole answer: the result (or,
for an error, its code; messages are worded differently). A field that cannot be equal on
two independent chains is not compared for equality but for its kind (same JSON type, and for
hex strings the same length), and only where the step names it, with a reason from REASONS;
README.md ("Differences from anvil") lists them all. Values that differ per node but must be
reused (a snapshot id, a contract address) are saved per node and substituted into later
requests. Prints each differing field, then `N equal, M different`; exits 1 when any step
differs.
"""

import json
import os
import sys
import time
import urllib.request

# Why a field is not compared for equality. README.md ("Differences from anvil") explains each.
REASONS = {
    "client": "the client's name, version and build",
    "instance": "a random id per run of the node",
    "hash": "block hashes cover the state root and prevrandao, which differ (genesis accounts, prevrandao rule)",
    "state-root": "the genesis states differ (which system contracts and deployers each puts there), so every root does",
    "prevrandao": "anvil draws prevrandao at random; Hearth derives it from the parent hash",
    "base-fee": "anvil mines block 1 at the genesis base fee; Hearth applies EIP-1559 from block 1 (compared when both run --block-base-fee-per-gas 0)",
    "size": "Hearth's block size counts the block's (empty) withdrawals list, which a block's encoding holds from Shanghai on; anvil's leaves it out",
    "gas-price": "anvil suggests the lowest tip recent blocks paid (at least 1 gwei); Hearth a fixed 1 gwei tip",
    "snapshot-id": "snapshot ids count from 0x0 in anvil, from 0x1 in Hearth and Hardhat",
    "wall-clock": "depends on the wall clock at the moment of the call",
    "unsigned-hash": "an unsigned transaction's hash covers its placeholder signature (anvil: zero, Hearth: r = sender)",
    "no-slot-code": "no ERC-20 slot: anvil answers its internal-error code -32603, Hearth -32000 (the request, not the node, failed)",
    "receipt-extras": "anvil adds blockTimestamp and blobGasPrice to every receipt; Hearth, as geth, blobGasPrice to blob transactions' only",
    "total-difficulty": "anvil reports totalDifficulty 0x0; Hearth, as geth since the merge, leaves it out",
    "mined-sidecar": "a mined blob transaction: anvil still shows its sidecar (blobs, commitments, proofs); Hearth, as geth, the transaction as the block holds it",
    "unknown-account": "signing for an account without a key: anvil answers -32602 \"No Signer available\", Hearth -32000 \"unknown account\" as geth",
}

# Reasons whose fields are not compared at all, not even for presence or kind.
SKIPPED = {"client", "receipt-extras", "total-difficulty", "mined-sidecar"}

A0 = "0xf39Fd6e51aad88F6F4ce6aB8827279cffFb92266"
A1 = "0x70997970C51812dc3A010C7d01b50e0d17dc79C8"
A2 = "0x3C44CdDdB6a900fa2b585dd299e03d12FA4293BC"
A3 = "0x90F79bf6EB2c4f870365E785982E1f101E93b906"
A4 = "0x15d34AAf54267DB7D7c367839AAf71A00a2C6A65"
STRANGER = "0x00000000000000000000000000000000000c0ffe"
# EIP-7702: code at DELEGATE returns the address it runs as (ADDRESS, MSTORE, RETURN 32 bytes);
# A3 and A4 (unused elsewhere in the sequence) authorize it at nonce 0 on chain 31337. Made with
# `cast wallet sign-auth 0x…7702 --private-key <dev key 3 or 4> --chain 31337 --nonce 0`.
DELEGATE = "0x0000000000000000000000000000000000007702"
WHO_AM_I = "0x3060005260206000f3"
AUTH_A3 = {"chainId": "0x7a69", "address": DELEGATE, "nonce": "0x0", "yParity": "0x0",
           "r": "0xc5d685d29120023a473e3c347ac55a07913f860c20f4cff36d85c7f5f525018c",
           "s": "0x77516114e019343f25a9f9ad9414ff07a8cd5979a0cd5c9f7e2eb03cb6956939"}
AUTH_A4 = {"chainId": "0x7a69", "address": DELEGATE, "nonce": "0x0", "yParity": "0x1",
           "r": "0xe462a2d49a1e201511141987a89b3e6f060c63fbf70126c198cf75f74f01e539",
           "s": "0x3ebe25729551d856928fc2c127015afda1d79a7fe8641c83be32d760d9b3e57e"}
# The same authorization with an s no signature has: it recovers no authority.
AUTH_BAD = {**AUTH_A4, "s": "0xffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff00"}
DOMAIN_TYPE = [{"name": "name", "type": "string"}, {"name": "version", "type": "string"},
               {"name": "chainId", "type": "uint256"}, {"name": "verifyingContract", "type": "address"}]
# EIP-712's own example (nested structs), and an EIP-2612 permit with a full-width value.
MAIL = {"types": {"EIP712Domain": DOMAIN_TYPE,
                  "Person": [{"name": "name", "type": "string"}, {"name": "wallet", "type": "address"}],
                  "Mail": [{"name": "from", "type": "Person"}, {"name": "to", "type": "Person"},
                           {"name": "contents", "type": "string"}]},
        "primaryType": "Mail",
        "domain": {"name": "Ether Mail", "version": "1", "chainId": 1,
                   "verifyingContract": "0xCcCCccccCCCCcCCCCCCcCcCccCcCCCcCcccccccC"},
        "message": {"from": {"name": "Cow", "wallet": "0xCD2a3d9F938E13CD947Ec05AbC7FE734Df8DD826"},
                    "to": {"name": "Bob", "wallet": "0xbBbBBBBbbBBBbbbBbbBbbbbBBbBbbbbBbBbbBBbB"},
                    "contents": "Hello, Bob!"}}
PERMIT = {"types": {"EIP712Domain": DOMAIN_TYPE,
                    "Permit": [{"name": "owner", "type": "address"}, {"name": "spender", "type": "address"},
                               {"name": "value", "type": "uint256"}, {"name": "nonce", "type": "uint256"},
                               {"name": "deadline", "type": "uint256"}]},
          "primaryType": "Permit",
          "domain": {"name": "BenchToken", "version": "1", "chainId": 31337,
                     "verifyingContract": "0x5FbDB2315678afecb367f032d93F642f64180aa3"},
          "message": {"owner": A0, "spender": A1, "value": str(2**256 - 1), "nonce": 0,
                      "deadline": "0x77359400"}}
# Arrays of structs and of bytes32, a bool and a bytes member.
GROUP = {"types": {"EIP712Domain": [{"name": "name", "type": "string"}],
                   "Member": [{"name": "who", "type": "address"}, {"name": "admin", "type": "bool"}],
                   "Group": [{"name": "members", "type": "Member[]"}, {"name": "tags", "type": "bytes32[]"},
                             {"name": "blob", "type": "bytes"}, {"name": "level", "type": "uint8"}]},
         "primaryType": "Group", "domain": {"name": "Groups"},
         "message": {"members": [{"who": A1, "admin": True}, {"who": A2, "admin": False}],
                     "tags": ["0x" + "11" * 32], "blob": "0xc0ffee", "level": 255}}
GWEI = 10**9
# Fixed fees and gas keep what a transaction costs the same on both chains whatever their
# base fee (legacy transactions pay exactly their gas price).
FEES = {"gasPrice": hex(5 * GWEI)}

# Methods that send a transaction (with automine on, mined before the next step).
SENDS = {"eth_sendTransaction", "eth_sendRawTransaction", "eth_sendUnsignedTransaction"}

# Fields of a block that differ by construction (see REASONS); `baseFeePerGas` too, unless
# both nodes run a zero base fee.
BLOCK_IGNORE = {
    "hash": "hash",
    "parentHash": "hash",
    "stateRoot": "state-root",
    "mixHash": "prevrandao",
    "size": "size",
    "totalDifficulty": "total-difficulty",
}
if "--ignore-base-fee" in sys.argv:
    BLOCK_IGNORE["baseFeePerGas"] = "base-fee"
RECEIPT_IGNORE = {
    "blockHash": "hash",
    "logs.*.blockHash": "hash",
    "blockTimestamp": "receipt-extras",
    "blobGasPrice": "receipt-extras",
}
TX_IGNORE = {"blockHash": "hash"}
MINED_SIDECAR = {"blobs": "mined-sidecar", "commitments": "mined-sidecar", "proofs": "mined-sidecar"}


class Node:
    def __init__(self, name, url):
        self.name, self.url, self.vars = name, url, {}

    def request(self, method, params):
        body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": method, "params": params})
        req = urllib.request.Request(self.url, body.encode(), {"content-type": "application/json"})
        with urllib.request.urlopen(req, timeout=60) as response:
            return json.loads(response.read())

    def await_receipt(self, tx_hash):
        """Waits until `tx_hash` has a receipt: anvil answers a send before it mines the
        transaction (Hearth after), so later steps must not race its miner."""
        for _ in range(400):
            if self.request("eth_getTransactionReceipt", [tx_hash]).get("result") is not None:
                return
            time.sleep(0.025)
        raise SystemExit(f"{self.name}: no receipt for {tx_hash} after 10 s")

    def fill(self, value):
        """`value` with every "{name}" string replaced by this node's saved value."""
        # A whole "{name}" is the saved value as it is (a JSON string argument, such as typed
        # data, also starts with "{" but is no name).
        if isinstance(value, str) and value.startswith("{") and value.endswith("}") and value[1:-1].isidentifier():
            return self.vars[value[1:-1]]
        if isinstance(value, str) and "{" in value:
            out = value
            for name, saved in self.vars.items():
                out = out.replace("{" + name + "}", str(saved))
            return out
        if isinstance(value, list):
            return [self.fill(v) for v in value]
        if isinstance(value, dict):
            return {k: self.fill(v) for k, v in value.items()}
        return value


def answer(response):
    """What is compared of a response: the result, or the error's code."""
    if "error" in response:
        return {"error": {"code": response["error"].get("code")}}
    return {"result": response.get("result")}


def pick(value, path):
    for key in path:
        if isinstance(value, dict):
            value = value.get(key)
        elif isinstance(value, list) and key.isdigit() and int(key) < len(value):
            value = value[int(key)]
        else:
            return None
    return value


def matches(pattern, path):
    parts = pattern.split(".")
    return len(parts) == len(path) and all(p in ("*", k) for p, k in zip(parts, path))


def reason_for(ignore, path):
    return next((r for p, r in ignore.items() if matches(p, path)), None)


def kind(value):
    """A value's kind: its JSON type; for hex, a hash or an address (by length) or a number."""
    if isinstance(value, str) and value.startswith("0x"):
        return ("hex", len(value) if len(value) in (42, 66) else "number")
    if isinstance(value, dict):
        return ("object", len(value))
    return (type(value).__name__,)


def compare(left, right, ignore, path=(), out=None):
    """Differences between `left` and `right` as (path, left, right, note) tuples."""
    out = [] if out is None else out
    reason = reason_for(ignore, path)
    if reason is not None:
        if reason not in SKIPPED and kind(left) != kind(right):
            out.append((path, left, right, f"kind differs (value ignored: {reason})"))
        return out
    if isinstance(left, dict) and isinstance(right, dict):
        for key in sorted(set(left) | set(right)):
            if key not in left or key not in right:
                if reason_for(ignore, path + (key,)) not in SKIPPED:
                    out.append((path + (key,), left.get(key, "<absent>"), right.get(key, "<absent>"), ""))
            else:
                compare(left[key], right[key], ignore, path + (key,), out)
    elif isinstance(left, list) and isinstance(right, list) and len(left) == len(right):
        for i, (a, b) in enumerate(zip(left, right)):
            compare(a, b, ignore, path + (str(i),), out)
    elif left != right:
        out.append((path, left, right, ""))
    return out


def keccak_slot(who, index):
    """The storage slot of `who` in a Solidity mapping at `index`, as 64 hex digits."""
    data = bytes.fromhex(who[2:].lower().rjust(64, "0") + hex(index)[2:].rjust(64, "0"))
    return keccak256(data).hex()


def keccak256(data):
    """Keccak-256 (Ethereum's, not SHA3-256's padding), in pure Python: this script needs no
    packages."""
    rate, state = 136, [0] * 25
    rounds = [0x0000000000000001, 0x0000000000008082, 0x800000000000808A, 0x8000000080008000,
              0x000000000000808B, 0x0000000080000001, 0x8000000080008081, 0x8000000000008009,
              0x000000000000008A, 0x0000000000000088, 0x0000000080008009, 0x000000008000000A,
              0x000000008000808B, 0x800000000000008B, 0x8000000000008089, 0x8000000000008003,
              0x8000000000008002, 0x8000000000000080, 0x000000000000800A, 0x800000008000000A,
              0x8000000080008081, 0x8000000000008080, 0x0000000080000001, 0x8000000080008008]
    rotations = [0, 1, 62, 28, 27, 36, 44, 6, 55, 20, 3, 10, 43, 25, 39, 41, 45, 15, 21, 8, 18,
                 2, 61, 56, 14]
    mask = (1 << 64) - 1

    def rol(x, n):
        return ((x << n) | (x >> (64 - n))) & mask if n else x

    def permute():
        for rc in rounds:
            c = [state[x] ^ state[x + 5] ^ state[x + 10] ^ state[x + 15] ^ state[x + 20] for x in range(5)]
            d = [c[(x - 1) % 5] ^ rol(c[(x + 1) % 5], 1) for x in range(5)]
            for i in range(25):
                state[i] ^= d[i % 5]
            b = [0] * 25
            for x in range(5):
                for y in range(5):
                    b[y + 5 * ((2 * x + 3 * y) % 5)] = rol(state[x + 5 * y], rotations[x + 5 * y])
            for x in range(5):
                for y in range(5):
                    state[x + 5 * y] = b[x + 5 * y] ^ ((~b[(x + 1) % 5 + 5 * y]) & b[(x + 2) % 5 + 5 * y])
            state[0] ^= rc

    room = rate - len(data) % rate
    tail = b"\x81" if room == 1 else b"\x01" + b"\x00" * (room - 2) + b"\x80"
    padded = bytes(data) + tail
    for off in range(0, len(padded), rate):
        for i in range(rate // 8):
            state[i] ^= int.from_bytes(padded[off + 8 * i: off + 8 * i + 8], "little")
        permute()
    return b"".join(state[i].to_bytes(8, "little") for i in range(4))


def blob_steps():
    """A blob transaction made by the driver (cast mktx), sent raw, mined at once, then its
    blobs asked for by transaction hash and by versioned hash."""
    path = os.environ.get("BLOB_RAW_TX_FILE")
    if not path:
        return []
    raw = open(path).read().strip()
    return [
        ("eth_sendRawTransaction", [raw], {"save": {"blobtx": "result"}}),
        ("eth_getTransactionByHash", ["{blobtx}"], {"ignore": {**TX_IGNORE, **MINED_SIDECAR}, "save": {"versioned": "result.blobVersionedHashes.0"}}),
        ("anvil_getBlobsByTransactionHash", ["{blobtx}"], {}),
        ("anvil_getBlobByHash", ["{versioned}"], {}),
    ]


def steps():
    """The sequence: (label, method, params, options). Options: `ignore` {path: reason} (paths
    within the answer, "*" matching any key), `save` {var: path} (per node, from the result),
    `prefix` (ignore paths apply under `result.`)."""
    bench = json.load(open(sys.argv[3]))["bytecode"]
    dev_tokens = json.load(open(sys.argv[4]))
    dev_token, hashed_token = dev_tokens["DevToken"]["bytecode"], dev_tokens["HashedToken"]["bytecode"]

    def send(frm, **fields):
        return {"from": frm, "gas": hex(fields.pop("gas", 300_000)), **FEES, **fields}

    def block(tag, full=False, extra=None):
        ignore = dict(BLOCK_IGNORE)
        if full:
            ignore.update({f"transactions.*.{k}": v for k, v in TX_IGNORE.items()})
        ignore.update(extra or {})
        return ("eth_getBlockByNumber", [tag, full], {"ignore": ignore})

    def call(to, data):
        return ("eth_call", [{"to": to, "data": data}, "latest"], {})

    def balance_of(token, who):
        return call(token, "0x70a08231" + who[2:].lower().rjust(64, "0"))

    def allowance(token, owner, spender):
        data = "0xdd62ed3e" + owner[2:].lower().rjust(64, "0") + spender[2:].lower().rjust(64, "0")
        return call(token, data)

    receipt = {"ignore": RECEIPT_IGNORE}
    seq = [
        # The chain as it starts.
        ("web3_clientVersion", [], {"ignore": {"result": "client"}}),
        ("eth_chainId", [], {}),
        ("net_version", [], {}),
        ("eth_accounts", [], {}),
        ("eth_blockNumber", [], {}),
        ("eth_getBalance", [A0, "latest"], {}),
        ("anvil_metadata", [], {"ignore": {"result.clientVersion": "client", "result.clientSemver": "client",
                                            "result.clientCommitSha": "client", "result.instanceId": "instance",
                                            "result.latestBlockHash": "hash"}}),
        # Every block from here is stamped by the timestamp interval, from a fixed first one.
        ("evm_setNextBlockTimestamp", [2_000_000_000], {}),
        ("anvil_setBlockTimestampInterval", [12], {}),
        # Deploy BenchToken and DevToken; call, transfer, estimate.
        ("eth_sendTransaction", [send(A0, data=bench, gas=1_000_000)], {"save": {"deploy": "result"}}),
        ("eth_getTransactionReceipt", ["{deploy}"], {**receipt, "save": {"bench": "result.contractAddress"}}),
        ("eth_sendTransaction", [send(A0, data=dev_token, gas=2_000_000)], {"save": {"deploy2": "result"}}),
        ("eth_getTransactionReceipt", ["{deploy2}"], {**receipt, "save": {"devtoken": "result.contractAddress"}}),
        ("eth_sendTransaction", [send(A0, data=hashed_token, gas=1_000_000)], {"save": {"deploy3": "result"}}),
        ("eth_getTransactionReceipt", ["{deploy3}"], {**receipt, "save": {"hashed": "result.contractAddress"}}),
        ("eth_getCode", ["{bench}", "latest"], {}),
        # An account's trie fields (a contract with storage, an empty account) and anvil's
        # one-call account read.
        ("eth_getAccount", ["{bench}", "latest"], {}),
        ("eth_getAccount", [STRANGER, "latest"], {}),
        ("eth_getAccountInfo", ["{bench}", "latest"], {}),
        ("eth_getAccountInfo", [A0, "latest"], {}),
        balance_of("{bench}", A0),
        # A call for another chain is refused (anvil's -32003); this chain's runs.
        ("eth_call", [{"to": "{bench}", "data": "0x18160ddd", "chainId": "0x1"}, "latest"], {}),
        ("eth_call", [{"to": "{bench}", "data": "0x18160ddd", "chainId": "0x7a69"}, "latest"], {}),
        ("eth_createAccessList", [{"to": "{bench}", "data": "0x18160ddd", "chainId": "0x1"}], {}),
        ("eth_estimateGas", [{"from": A0, "to": "{bench}", "data": "0xa9059cbb" + A1[2:].lower().rjust(64, "0") + hex(5)[2:].rjust(64, "0")}], {}),
        ("eth_sendTransaction", [send(A0, to="{bench}", data="0xa9059cbb" + A1[2:].lower().rjust(64, "0") + hex(5)[2:].rjust(64, "0"))], {"save": {"transfer": "result"}}),
        ("eth_getTransactionReceipt", ["{transfer}"], receipt),
        ("eth_getTransactionByHash", ["{transfer}"], {"ignore": TX_IGNORE}),
        # Raw bytes: by hash, by block and index, and past them.
        ("eth_getRawTransactionByHash", ["{transfer}"], {}),
        ("eth_getRawTransactionByBlockNumberAndIndex", ["latest", "0x0"], {}),
        ("eth_getRawTransactionByBlockNumberAndIndex", ["latest", "0x9"], {}),
        ("eth_getRawTransactionByHash", ["0x" + "00" * 31 + "01"], {}),
        ("anvil_getIntervalMining", [], {}),
        # Blobs by hash: unknown ones, a hash of the wrong length, and (when the driver made
        # one with cast: BLOB_RAW_TX_FILE) a mined blob transaction's, by transaction and versioned
        # hash: the same signed bytes on both nodes, so the same hashes.
        ("anvil_getBlobByHash", ["0x01" + "00" * 31], {}),
        ("anvil_getBlobsByTransactionHash", ["0x" + "00" * 31 + "01"], {}),
        ("anvil_getBlobByHash", ["0x01"], {}),
        # On a dev chain the URL is only kept (for a reset into a fork): both answer null.
        ("anvil_setRpcUrl", ["http://127.0.0.1:1"], {}),
        # A sender's transaction by nonce: the deploy (nonce 0), the transfer (3), none yet (99).
        ("eth_getTransactionBySenderAndNonce", [A0, "0x0"], {"ignore": TX_IGNORE}),
        ("eth_getTransactionBySenderAndNonce", [A0, "0x3"], {"ignore": TX_IGNORE}),
        ("eth_getTransactionBySenderAndNonce", [A0, "0x63"], {}),
        balance_of("{bench}", A1),
        block("latest", full=True),
        # (After the latest block was compared: the blob transaction's block, whose
        # transactionsRoot anvil computes over the sidecar too, is not asked for whole.)
        *blob_steps(),
        ("eth_sendTransaction", [send(A0, to=A1, value=hex(10**18), gas=21_000)], {"save": {"eth": "result"}}),
        ("eth_getTransactionReceipt", ["{eth}"], receipt),
        ("eth_getBalance", [A0, "latest"], {}),
        ("eth_getBalance", [A1, "latest"], {}),
        ("eth_getTransactionCount", [A0, "latest"], {}),
        # Balances and ERC-20 state by dev methods.
        ("anvil_addBalance", [A2, "0x1234"], {}),
        ("eth_getBalance", [A2, "latest"], {}),
        # anvil's aliases of its own methods.
        ("hardhat_addBalance", [A2, "0x10"], {}),
        ("eth_getBalance", [A2, "latest"], {}),
        ("evm_setAccountNonce", [STRANGER, "0x7"], {}),
        ("eth_getTransactionCount", [STRANGER, "latest"], {}),
        ("anvil_setBalance", [STRANGER, hex(10**18)], {}),
        ("anvil_dealERC20", [A2, "{bench}", hex(777)], {}),
        balance_of("{bench}", A2),
        ("anvil_dealERC20", [A2, "{devtoken}", hex(10**20)], {}),
        balance_of("{devtoken}", A2),
        ("anvil_dealERC20", [A2, "{hashed}", hex(31337)], {}),
        balance_of("{hashed}", A2),
        ("anvil_setERC20Allowance", [A2, A1, "{devtoken}", hex(55)], {}),
        allowance("{devtoken}", A2, A1),
        ("anvil_setERC20Allowance", [A2, A1, "{hashed}", hex(66)], {}),
        allowance("{hashed}", A2, A1),
        # DevToken's balances live in the mapping at slot 4: keccak(who . 4).
        ("eth_getStorageAt", ["{devtoken}", "0x" + keccak_slot(A2, 4), "latest"], {}),
        # transferFrom(A2, A0, 50) by A1 spends the allowance just set.
        ("eth_sendTransaction", [send(A1, to="{devtoken}", data="0x23b872dd" + A2[2:].lower().rjust(64, "0") + A0[2:].lower().rjust(64, "0") + hex(50)[2:].rjust(64, "0"))], {"save": {"spent": "result"}}),
        ("eth_getTransactionReceipt", ["{spent}"], receipt),
        allowance("{devtoken}", A2, A1),
        ("anvil_dealERC20", [A2, A1, "0x1"], {"ignore": {"error.code": "no-slot-code"}}),
        ("anvil_dealERC20", [A2, "{bench}"], {}),
        # Snapshots, mining, the clock.
        ("evm_snapshot", [], {"ignore": {"result": "snapshot-id"}, "save": {"snap": "result"}}),
        ("anvil_mine", [3], {}),
        ("eth_blockNumber", [], {}),
        block("latest"),
        ("anvil_increaseTime", [0], {"ignore": {"result": "wall-clock"}}),
        ("evm_revert", ["{snap}"], {}),
        ("eth_blockNumber", [], {}),
        ("evm_revert", ["{snap}"], {}),
        ("anvil_snapshot", [], {"ignore": {"result": "snapshot-id"}, "save": {"snap2": "result"}}),
        ("evm_mine", [], {}),
        ("anvil_revert", ["{snap2}"], {}),
        ("anvil_removeBlockTimestampInterval", [], {}),
        ("anvil_removeBlockTimestampInterval", [], {}),
        ("anvil_setTime", [2_100_000_000], {"ignore": {"result": "wall-clock"}}),
        ("anvil_setBlockTimestampInterval", [7], {}),
        ("evm_mine", [], {}),
        block("latest"),
        ("anvil_setNextBlockTimestamp", [2_100_000_100], {}),
        ("anvil_setBlockGasLimit", ["0x1c9c381"], {}),
        ("evm_mine", [], {}),
        block("latest"),
        ("anvil_setBlockGasLimit", ["0x1c9c380"], {}),
        # The pool: automine off, three pending, drop by sender and all.
        ("anvil_setAutomine", [False], {}),
        ("anvil_getAutomine", [], {}),
        ("eth_sendTransaction", [send(A0, to=A1, value="0x1", gas=21_000)], {"save": {"p1": "result"}}),
        ("eth_sendTransaction", [send(A0, to=A1, value="0x2", gas=21_000)], {}),
        ("eth_sendTransaction", [send(A1, to=A0, value="0x3", gas=21_000)], {"save": {"p3": "result"}}),
        ("txpool_status", [], {}),
        # A pending transaction by sender and nonce (the pool is looked at first).
        ("eth_getTransactionCount", [A1, "latest"], {"save": {"a1nonce": "result"}}),
        ("eth_getTransactionBySenderAndNonce", [A1, "{a1nonce}"], {"ignore": TX_IGNORE}),
        ("anvil_removePoolTransactions", [A1], {}),
        ("txpool_status", [], {}),
        ("hardhat_dropAllTransactions", [], {}),
        ("txpool_status", [], {}),
        ("eth_sendTransaction", [send(A0, to=A1, value="0x4", gas=21_000)], {}),
        ("anvil_dropAllTransactions", [], {}),
        ("txpool_status", [], {}),
        # Detailed mining: a deploy and a reverting call in one block.
        ("eth_sendTransaction", [send(A0, data=bench, gas=1_000_000)], {}),
        ("eth_sendTransaction", [send(A0, to="{bench}", data="0x9fb37853", gas=100_000)], {}),
        ("evm_mine_detailed", [], {"ignore": {**{f"result.*.{k}": v for k, v in BLOCK_IGNORE.items()},
                                                **{f"result.*.transactions.*.{k}": v for k, v in TX_IGNORE.items()}}}),
        # anvil needs the timestamp key, null or not, beside blocks (a serde detail).
        ("anvil_mine_detailed", [{"timestamp": None, "blocks": 2}], {"ignore": {f"result.*.{k}": v for k, v in BLOCK_IGNORE.items()}}),
        ("anvil_setAutomine", [True], {}),
        # An unsigned send from an account that is not impersonated.
        ("eth_sendUnsignedTransaction", [send(STRANGER, to=A1, value="0x5", gas=21_000)], {"ignore": {"result": "unsigned-hash"}, "save": {"unsigned": "result"}}),
        ("eth_getTransactionReceipt", ["{unsigned}"], {"ignore": {**RECEIPT_IGNORE, "transactionHash": "unsigned-hash", "logsBloom": "unsigned-hash"}}),
        ("eth_getTransactionCount", [STRANGER, "latest"], {}),
        # Rollback and reorg.
        ("eth_blockNumber", [], {}),
        ("eth_sendTransaction", [send(A0, to=A1, value="0x10", gas=21_000)], {"save": {"gone": "result"}}),
        ("anvil_rollback", [2], {}),
        ("eth_blockNumber", [], {}),
        ("eth_getTransactionReceipt", ["{gone}"], {}),
        ("eth_getBalance", [A1, "latest"], {}),
        ("eth_getTransactionCount", [A0, "latest"], {}),
        ("anvil_rollback", [None], {}),
        ("eth_blockNumber", [], {}),
        ("anvil_rollback", [10_000], {}),
        ("anvil_reorg", [2, [[send(A0, to=A2, value="0x99", gas=21_000), 0], [send(A0, to=A2, value="0x98", gas=21_000), 1]]], {}),
        ("eth_blockNumber", [], {}),
        block("latest", full=True),
        ("eth_getBalance", [A2, "latest"], {}),
        ("anvil_reorg", [10_000, []], {}),
        # The chain id, logging, min gas price, node facts.
        ("anvil_setChainId", [5], {}),
        ("eth_chainId", [], {}),
        ("net_version", [], {}),
        ("anvil_setChainId", [31337], {}),
        ("eth_chainId", [], {}),
        ("anvil_setLoggingEnabled", [False], {}),
        ("anvil_setLoggingEnabled", [True], {}),
        ("anvil_setMinGasPrice", ["0x1"], {}),
        ("anvil_nodeInfo", [], {"ignore": {"result.currentBlockHash": "hash", "result.environment.gasPrice": "gas-price",
                                            **({"result.environment.baseFee": "base-fee"} if "baseFeePerGas" in BLOCK_IGNORE else {})}}),
        ("evm_snapshot", [], {"ignore": {"result": "snapshot-id"}}),
        ("hardhat_metadata", [], {"ignore": {"result.clientVersion": "client", "result.clientSemver": "client",
                                              "result.clientCommitSha": "client", "result.instanceId": "instance",
                                              "result.latestBlockHash": "hash", "result.snapshots": "snapshot-id"}}),
        # Signing with the dev keys: byte-equal signatures and signed transactions.
        ("eth_sign", [A0, "0xdeadbeef"], {}),
        ("personal_sign", ["0xdeadbeef", A0], {}),
        ("personal_sign", ["0x" + "Hello, Hearth".encode().hex(), A1], {}),
        ("eth_sign", [A2, "0x"], {}),
        ("eth_signTypedData_v4", [A0, MAIL], {}),
        ("eth_signTypedData_v4", [A1, json.dumps(MAIL)], {}),
        ("eth_signTypedData_v4", [A0, PERMIT], {}),
        ("eth_signTypedData_v4", [A2, GROUP], {}),
        ("eth_signTransaction", [{"from": A0, "to": A1, "value": "0x1", "gas": "0x5208", "gasPrice": hex(5 * GWEI), "nonce": "0x7"}], {}),
        ("eth_signTransaction", [{"from": A0, "to": A1, "gas": "0x7530", "gasPrice": hex(5 * GWEI), "nonce": "0x7",
                                  "accessList": [{"address": A2, "storageKeys": ["0x" + "00" * 31 + "01"]}]}], {}),
        ("eth_signTransaction", [{"from": A1, "to": A2, "value": "0x5", "data": "0x1234", "gas": "0x7530",
                                  "maxFeePerGas": hex(3 * GWEI), "maxPriorityFeePerGas": hex(GWEI), "nonce": "0x0"}], {}),
        # Nonce (the pending one) and gas (an estimate) filled by the node.
        ("eth_signTransaction", [{"from": A1, "to": A2, "value": "0x5", "maxFeePerGas": hex(3 * GWEI),
                                  "maxPriorityFeePerGas": hex(GWEI)}], {}),
        ("eth_getTransactionCount", [A1, "pending"], {}),
        # EIP-7966: a signed transaction sent, answered with its receipt.
        ("eth_getTransactionCount", [A2, "latest"], {"save": {"a2n": "result"}}),
        ("eth_signTransaction", [{"from": A2, "to": A1, "value": "0x9", "gas": "0x5208", "gasPrice": hex(5 * GWEI),
                                  "nonce": "{a2n}"}], {"save": {"signed": "result"}}),
        ("eth_sendRawTransactionSync", ["{signed}"], {"ignore": RECEIPT_IGNORE}),
        ("eth_sign", [STRANGER, "0x01"], {"ignore": {"error.code": "unknown-account"}}),
        ("eth_signTypedData_v4", [STRANGER, MAIL], {"ignore": {"error.code": "unknown-account"}}),
        ("eth_signTypedData_v4", [A0, {**MAIL, "primaryType": "Letter"}], {}),
        ("eth_signTypedData_v4", [A0, {**GROUP, "message": {**GROUP["message"], "level": 256}}], {}),
        ("eth_sign", [A0, "hello"], {}),
        # EIP-7702: calls see an authorization without committing it; a bad one is skipped.
        ("anvil_setCode", [DELEGATE, WHO_AM_I], {}),
        ("eth_call", [{"to": A4}, "latest"], {}),
        ("eth_call", [{"to": A4, "authorizationList": [AUTH_A4]}, "latest"], {}),
        ("eth_call", [{"to": A4, "authorizationList": [AUTH_BAD]}, "latest"], {}),
        ("eth_call", [{"to": A4, "gasPrice": "0x0", "authorizationList": [AUTH_A4]}, "latest"], {}),
        ("eth_estimateGas", [{"from": A0, "to": A4, "authorizationList": [AUTH_A4]}], {}),
        ("eth_getCode", [A4, "latest"], {}),
        ("eth_signTransaction", [{"from": A0, "to": A4, "gas": "0x186a0", "maxFeePerGas": hex(3 * GWEI),
                                  "maxPriorityFeePerGas": hex(GWEI), "nonce": "0x9", "authorizationList": [AUTH_A4]}], {}),
        # ... and eth_sendTransaction delegates A3 for good, sponsored by A0.
        ("eth_sendTransaction", [{"from": A0, "to": A3, "gas": "0x186a0", "maxFeePerGas": hex(3 * GWEI),
                                  "maxPriorityFeePerGas": hex(GWEI), "authorizationList": [AUTH_A3]}], {"save": {"setcode": "result"}}),
        ("eth_getTransactionReceipt", ["{setcode}"], receipt),
        ("eth_getTransactionByHash", ["{setcode}"], {"ignore": TX_IGNORE}),
        ("eth_getCode", [A3, "latest"], {}),
        ("eth_getTransactionCount", [A3, "latest"], {}),
        ("eth_call", [{"to": A3}, "latest"], {}),
        # Bad input: both refuse it as bad params (codes compared, not the wording).
        ("anvil_setChainId", [], {}),
        ("anvil_setChainId", [True], {}),
        ("anvil_addBalance", [A0], {}),
        ("anvil_addBalance", ["0x12", "0x1"], {}),
        ("anvil_dealERC20", [A0, "0x12", "0x1"], {}),
        ("anvil_setERC20Allowance", [A0, A1, "{devtoken}"], {}),
        ("anvil_setTime", ["0xffffffffffffffff"], {}),
        ("anvil_setTime", [-1], {}),
        ("anvil_setBlockTimestampInterval", [-1], {}),
        ("anvil_setLoggingEnabled", ["yes"], {}),
        ("anvil_removePoolTransactions", [], {}),
        ("anvil_rollback", ["x"], {}),
        ("anvil_reorg", [1, [["0x02", 5]]], {}),
        ("eth_sendUnsignedTransaction", [{"to": A1}], {}),
        ("anvil_setMinGasPrice", ["x"], {}),
        ("eth_blockNumber", [], {}),
        ("eth_getBlockByNumber", ["0x2", False], {"ignore": BLOCK_IGNORE}),
    ]
    return seq


def main():
    anvil, hearth = Node("anvil", sys.argv[1]), Node("hearth", sys.argv[2])
    verbose = "--verbose" in sys.argv
    # Proves the comparison can fail: Hearth's chain id answer is changed before comparing.
    sabotage = "--sabotage" in sys.argv
    equal = different = ignored = 0
    automine = True
    for index, (method, params, options) in enumerate(steps()):
        if method in ("anvil_setAutomine", "evm_setAutomine"):
            automine = bool(params[0])
        answers = []
        for node in (anvil, hearth):
            response = node.request(method, node.fill(params))
            if automine and method in SENDS and "result" in response:
                node.await_receipt(response["result"])
            for var, path in options.get("save", {}).items():
                node.vars[var] = pick(response, path.split("."))
            if sabotage and node is hearth and method == "eth_chainId":
                response = {"result": "0x1"}
            answers.append(answer(response))
        ignore = options.get("ignore", {})
        # Block-level patterns name fields of the result.
        ignore = {p if p.startswith(("result", "error")) else "result." + p: r for p, r in ignore.items()}
        ignored += sum(1 for p in ignore if any(matches(p, path) for path in paths(answers[0])))
        diffs = compare(answers[0], answers[1], ignore)
        label = f"{index:3} {method}"
        if diffs:
            different += 1
            print(f"DIFFERENT {label} {json.dumps(params)[:120]}")
            for path, left, right, note in diffs:
                where = ".".join(path) or "(answer)"
                print(f"    {where}: anvil {json.dumps(left)[:200]}  hearth {json.dumps(right)[:200]} {note}")
        else:
            equal += 1
            if verbose:
                print(f"equal     {label}")
    print(f"{equal} equal, {different} different ({ignored} fields compared by kind only, for the reasons in README.md)")
    return 1 if different else 0


def paths(value, path=()):
    """Every path in `value`, leaves and inner nodes."""
    yield path
    if isinstance(value, dict):
        for key, inner in value.items():
            yield from paths(inner, path + (key,))
    elif isinstance(value, list):
        for i, inner in enumerate(value):
            yield from paths(inner, path + (str(i),))


if __name__ == "__main__":
    sys.exit(main())
