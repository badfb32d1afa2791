#!/usr/bin/env python3
"""What a hostile client sends, against a running Hearth node (scripts/abuse.sh starts one).

Usage: abuse.py URL PID MAX_RSS_MIB

Each probe sends what once broke the node (issue 15), then checks that the node still mines and
answers, and that its peak RSS (VmHWM) stays under MAX_RSS_MIB. Prints one line per probe and
`N probes, F failed, peak RSS M MiB`; exits 1 when anything failed. Standard library only, so it
runs on a bare machine; traffic goes to the node's loopback address only, every wait is bounded.
"""

import base64
import json
import os
import socket
import struct
import sys
import time
import urllib.error
import urllib.request

URL, PID, MAX_RSS_MIB = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
HOST, PORT = URL.split("//")[1].rsplit(":", 1)
PORT = int(PORT)
ALICE = "0xf39fd6e51aad88f6f4ce6ab8827279cfffb92266"
BOB = "0x70997970c51812dc3a010c7d01b50e0d17dc79c8"
# A contract that emits LOG0 (no data) as many times as the first calldata word says:
# n = calldataload(0); while n != 0 { log0(0, 0); n -= 1 }
LOGGER = "0x00000000000000000000000000000000000010a0"
LOGGER_CODE = "0x6000355b801560155760006000a0600190036003565b00"

failures = []
results = []


def rss_mib(field="VmHWM"):
    with open(f"/proc/{PID}/status") as status:
        for line in status:
            if line.startswith(field + ":"):
                return int(line.split()[1]) // 1024
    return -1


def http(body, headers=None, timeout=30):
    """POSTs `body` (bytes); returns (status, parsed JSON or raw text)."""
    request = urllib.request.Request(URL, data=body, method="POST")
    for key, value in (headers or {"Content-Type": "application/json"}).items():
        request.add_header(key, value)
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            status, text = response.status, response.read()
    except urllib.error.HTTPError as error:
        status, text = error.code, error.read()
    try:
        return status, json.loads(text) if text else None
    except ValueError:
        return status, text.decode(errors="replace")


def rpc(method, params, timeout=30):
    body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": method, "params": params}).encode()
    return http(body, timeout=timeout)[1]


def ok(method, params, timeout=30):
    answer = rpc(method, params, timeout)
    if not isinstance(answer, dict) or "error" in answer:
        raise AssertionError(f"{method} failed: {answer}")
    return answer["result"]


def error_code(method, params, timeout=10):
    answer = rpc(method, params, timeout)
    return answer.get("error", {}).get("code") if isinstance(answer, dict) else None


def alive():
    """The node answers, and automine still mines a transfer."""
    before = int(ok("eth_blockNumber", []), 16)
    tx = ok("eth_sendTransaction", [{"from": ALICE, "to": BOB, "value": "0x1"}])
    receipt = ok("eth_getTransactionReceipt", [tx])
    assert receipt and receipt["status"] == "0x1", f"transfer not mined: {receipt}"
    assert int(ok("eth_blockNumber", []), 16) == before + 1, "no new block"


ONLY = os.environ.get("ABUSE_ONLY", "")


def probe(name):
    def run(check):
        if ONLY not in name:
            return check
        started = time.monotonic()
        try:
            check()
            alive()
            outcome = "ok"
        except Exception as error:  # a probe reports, the next one still runs
            outcome = f"FAILED: {error}"
            failures.append(name)
        took = time.monotonic() - started
        line = f"{name:<44} {outcome:<10} {took:6.1f} s   rss {rss_mib('VmRSS'):4} MiB (peak {rss_mib():4})"
        print(line, flush=True)
        results.append(line)
        return check

    return run


@probe("overflowing interval (anvil seconds)")
def _():
    assert error_code("anvil_setIntervalMining", ["0x7fffffffffffffff"]) == -32602
    assert error_code("evm_setIntervalMining", [18446744073709551615]) == -32602
    assert error_code("evm_setIntervalMining", [[1, "0xffffffffffffffff"]]) == -32602


@probe("overflowing timestamps")
def _():
    assert error_code("evm_setNextBlockTimestamp", ["0x8000000000000000"]) == -32602
    assert error_code("evm_mine", ["0xffffffffffffffff"]) == -32602
    assert error_code("evm_increaseTime", ["0x7fffffffffffffff"]) == -32000
    assert error_code("anvil_mine", ["0x2", "0xffffffffffffffff"]) == -32602


@probe("huge block counts answer at once")
def _():
    for method, params in [
        ("evm_mine", [{"blocks": "0xffffffffffffffff"}]),
        ("anvil_mine", ["0xffffffffffffffff"]),
        ("hardhat_mine", ["0xffffffffffffffff"]),
    ]:
        started = time.monotonic()
        code = error_code(method, params, timeout=5)
        assert code == -32602, f"{method}: {code}"
        assert time.monotonic() - started < 1, f"{method} took long"


@probe("a long mining run does not block the miner")
def _():
    # 5,000 blocks in chunks; a status read must not wait for all of them.
    import threading

    done = threading.Event()
    threading.Thread(target=lambda: (ok("anvil_mine", ["0x1388"], timeout=300), done.set())).start()
    time.sleep(0.2)
    started = time.monotonic()
    ok("anvil_getAutomine", [])
    assert time.monotonic() - started < 1, "the miner's status waited for the run"
    done.wait(300)
    assert done.is_set(), "the run did not finish"


def ws_connect(recv_buffer=None):
    sock = socket.create_connection((HOST, PORT), timeout=10)
    if recv_buffer:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, recv_buffer)
    key = base64.b64encode(os.urandom(16)).decode()
    sock.sendall(
        (
            f"GET / HTTP/1.1\r\nHost: {HOST}:{PORT}\r\nUpgrade: websocket\r\n"
            f"Connection: Upgrade\r\nSec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\n\r\n"
        ).encode()
    )
    head = b""
    while b"\r\n\r\n" not in head:
        chunk = sock.recv(1)
        if not chunk:
            raise AssertionError("websocket upgrade refused")
        head += chunk
    assert b" 101 " in head.split(b"\r\n")[0], head
    return sock


def ws_header(opcode, length):
    first = bytes([0x80 | opcode])
    if length < 126:
        return first + bytes([0x80 | length])
    if length < 1 << 16:
        return first + bytes([0x80 | 126]) + struct.pack(">H", length)
    return first + bytes([0x80 | 127]) + struct.pack(">Q", length)


def ws_send(sock, text):
    payload = text.encode()
    sock.sendall(ws_header(1, len(payload)) + b"\0\0\0\0" + payload)


def ws_read_frame(sock):
    def exact(n):
        data = b""
        while len(data) < n:
            chunk = sock.recv(n - len(data))
            if not chunk:
                raise EOFError("closed")
            data += chunk
        return data

    first, second = exact(2)
    length = second & 0x7F
    if length == 126:
        length = struct.unpack(">H", exact(2))[0]
    elif length == 127:
        length = struct.unpack(">Q", exact(8))[0]
    return first & 0x0F, exact(length)


@probe("a 100 MiB websocket frame")
def _():
    sock = ws_connect()
    total = 100 * 1024 * 1024
    sock.sendall(ws_header(1, total) + b"\0\0\0\0")
    sent, chunk, closed = 0, b"x" * 65536, False
    sock.settimeout(5)
    try:
        while sent < total:
            sock.sendall(chunk)
            sent += len(chunk)
    except OSError:
        closed = True
    code = None
    try:
        while True:
            opcode, payload = ws_read_frame(sock)
            if opcode == 8:
                code = struct.unpack(">H", payload[:2])[0] if len(payload) >= 2 else None
                break
    except (OSError, EOFError):
        pass
    sock.close()
    assert code in (1009, None) or closed, f"close code {code}"
    assert code == 1009, f"expected close 1009, got {code} after {sent >> 20} MiB sent"


@probe("a subscriber that never reads")
def _():
    sock = ws_connect(recv_buffer=4096)
    # 100 newHeads subscriptions: each block queues 100 notifications (~70 KB).
    for i in range(100):
        ws_send(sock, json.dumps({"jsonrpc": "2.0", "id": i, "method": "eth_subscribe", "params": ["newHeads"]}))
        opcode, payload = ws_read_frame(sock)
        assert b"result" in payload, payload
    # Stop reading: 300 blocks (~20 MB of notifications) overflow the kernel's socket buffers
    # and then the connection's queue (1,024), and the node closes it, without waiting for it.
    started = time.monotonic()
    ok("anvil_mine", ["0x12c"], timeout=300)
    assert time.monotonic() - started < 60, "mining waited for the subscriber"
    with urllib.request.urlopen(URL + "/metrics", timeout=10) as response:
        metrics = response.read().decode()
    dropped = [line for line in metrics.splitlines()
               if line.startswith("hearth_ws_slow_subscribers_dropped_total")]
    sock.close()
    assert dropped and int(dropped[0].split()[-1]) >= 1, f"not dropped: {dropped}"


def fill_logs(transactions, logs_each):
    """`transactions` transactions of `logs_each` LOG0, sent in JSON-RPC batches of 50."""
    data = "0x" + format(logs_each, "064x")
    gas = hex(30_000 + 425 * logs_each)
    for start in range(0, transactions, 50):
        batch = [
            {"jsonrpc": "2.0", "id": i, "method": "eth_sendTransaction",
             "params": [{"from": ALICE, "to": LOGGER, "data": data, "gas": gas}]}
            for i in range(start, min(start + 50, transactions))
        ]
        status, answers = http(json.dumps(batch).encode(), timeout=120)
        bad = [a for a in answers if "error" in a]
        assert status == 200 and not bad, f"sending log transactions: {bad[:1]}"


@probe("eth_getLogs over 300,000 logs")
def _():
    ok("anvil_setCode", [LOGGER, LOGGER_CODE])
    first = int(ok("eth_blockNumber", []), 16) + 1
    fill_logs(3000, 100)
    # Both caps: the log count (default 10,000) and, with the count raised by abuse.sh's flags,
    # the 25 MiB response cap. Either way -32005, at once, without building the whole answer.
    for _ in range(3):
        code = error_code("eth_getLogs", [{"fromBlock": hex(first), "toBlock": "latest"}], timeout=60)
        assert code == -32005, f"eth_getLogs: {code}"


@probe("eth_getLogs over 10 x 70,000 LOG0")
def _():
    first = int(ok("eth_blockNumber", []), 16) + 1
    fill_logs(10, 70_000)
    code = error_code("eth_getLogs", [{"fromBlock": hex(first), "toBlock": "latest"}], timeout=60)
    assert code == -32005, f"eth_getLogs: {code}"
    # One block's worth is within the caps only with the count raised; the answer still comes.
    code = error_code("eth_getLogs", [{"fromBlock": hex(first), "toBlock": hex(first)}], timeout=60)
    assert code in (None, -32005), code


@probe("cross-origin simple requests change nothing")
def _():
    balance = ok("eth_getBalance", [BOB, "latest"])
    send = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "eth_sendTransaction",
                       "params": [{"from": ALICE, "to": BOB, "value": "0xde0b6b3a7640000"}]}).encode()
    set_balance = json.dumps({"jsonrpc": "2.0", "id": 2, "method": "anvil_setBalance",
                              "params": [BOB, "0x1"]}).encode()
    for content_type in ["text/plain", "application/x-www-form-urlencoded", None]:
        for body in (send, set_balance):
            headers = {"Origin": "http://evil.example"}
            if content_type:
                headers["Content-Type"] = content_type
            status, _ = http(body, headers)
            assert status in (403, 415), f"{content_type}: HTTP {status}"
    # A JSON request from another site (no preflight could have allowed it) is refused too.
    status, _ = http(send, {"Origin": "http://evil.example", "Content-Type": "application/json"})
    assert status == 403, f"cross-origin JSON: HTTP {status}"
    # DNS rebinding: a Host that is not the node's.
    status, _ = http(send, {"Host": "evil.example", "Content-Type": "application/json"})
    assert status == 403, f"foreign Host: HTTP {status}"
    assert ok("eth_getBalance", [BOB, "latest"]) == balance, "the balance changed"


print(f"{len(results)} probes, {len(failures)} failed, peak RSS {rss_mib()} MiB (bound {MAX_RSS_MIB})")
if rss_mib() > MAX_RSS_MIB:
    failures.append("rss")
    print(f"FAILED: peak RSS {rss_mib()} MiB is over {MAX_RSS_MIB} MiB")
sys.exit(1 if failures else 0)
