#!/usr/bin/env python3
"""An ev-node-shaped sequencer driving a Hearth node through the Engine API, with and without a
pool flood beside it, and a table of what it measured.

Per round, as ev-node's `execution/evm` client does: txpoolExt_getTxs (public port) ->
engine_forkchoiceUpdatedV3 with attributes carrying those transactions and a gas limit ->
engine_getPayloadV4 -> engine_newPayloadV4 -> engine_forkchoiceUpdatedV3 to the new block,
finalized every 10 blocks. Every status must be VALID. Two floods beside it: threads sending
eth_sendTransaction from the dev accounts as fast as the node takes them (a refused send,
-32005, is counted, not retried), and with --ingest RATE `hearth-load --ingest` offering signed
transactions at RATE per second from 8 senders (open loop; it reports what the pool refused).
Peak memory is the node's VmHWM.

    cargo build --release --bin hearth --bin hearth-load
    python3 scripts/engine-driver.py --hearth target/release/hearth --rounds 1000 --ingest 5000

Bounded: every run stops after --rounds rounds (or --max-seconds), the flood with it.
Loopback only.
"""

import argparse
import base64
import hashlib
import hmac
import json
import os
import sys
import tempfile
import subprocess
import threading
import time
import urllib.error
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from local_node import free_port, start, status_kib  # noqa: E402

ZERO = "0x" + "00" * 32


def b64(data):
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


class Engine:
    """JSON-RPC to the Engine API port with a fresh HS256 token per request."""

    def __init__(self, url, secret):
        self.url, self.secret = url, secret

    def token(self):
        header = b64(json.dumps({"alg": "HS256", "typ": "JWT"}).encode())
        claims = b64(json.dumps({"iat": int(time.time())}).encode())
        signed = hmac.new(self.secret, f"{header}.{claims}".encode(), hashlib.sha256).digest()
        return f"{header}.{claims}.{b64(signed)}"

    def call(self, method, params):
        body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": method, "params": params})
        request = urllib.request.Request(self.url, body.encode(), {
            "Content-Type": "application/json",
            "Authorization": "Bearer " + self.token(),
        })
        with urllib.request.urlopen(request, timeout=120) as response:
            answer = json.loads(response.read())
        if "error" in answer:
            raise RuntimeError(f"{method}: {answer['error']}")
        return answer["result"]


def public(url, method, params):
    body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": method, "params": params}).encode()
    request = urllib.request.Request(url, body, {"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=120) as response:
        return json.loads(response.read())


def flood(url, accounts, stop, counts):
    """Sends transfers from `accounts` until `stop` is set; counts sent and refused."""
    while not stop.is_set():
        for account in accounts:
            answer = public(url, "eth_sendTransaction",
                            [{"from": account, "to": "0x" + "44" * 20, "value": "0x1"}])
            key = "sent" if "result" in answer else "refused"
            counts[key] = counts.get(key, 0) + 1


def run(hearth, rounds, flood_threads, max_seconds, ingest=None):
    directory = tempfile.mkdtemp(prefix="hearth-engine-driver-")
    secret_path = os.path.join(directory, "jwt.hex")
    http, auth = free_port(), free_port()
    url, engine_url = f"http://127.0.0.1:{http}/", f"http://127.0.0.1:{auth}/"
    node = start([hearth, "--ephemeral", "--no-mining", "--http.port", str(http),
                  "--authrpc.port", str(auth), "--authrpc.jwtsecret", secret_path], url)
    try:
        secret = bytes.fromhex(open(secret_path).read().strip().removeprefix("0x"))
        engine = Engine(engine_url, secret)
        genesis = public(url, "eth_getBlockByNumber", ["latest", False])["result"]
        state = {"headBlockHash": genesis["hash"], "safeBlockHash": genesis["hash"],
                 "finalizedBlockHash": genesis["hash"]}
        status = engine.call("engine_forkchoiceUpdatedV3", [state, None])
        assert status["payloadStatus"]["status"] == "VALID", status
        accounts = public(url, "eth_accounts", [])["result"]
        stop, counts, threads = threading.Event(), {}, []
        for i in range(flood_threads):
            mine = accounts[1 + i::flood_threads] if flood_threads else []
            thread = threading.Thread(target=flood, args=(url, mine, stop, counts), daemon=True)
            thread.start()
            threads.append(thread)
        loader = None
        if ingest:
            rate, load_bin = ingest
            loader = subprocess.Popen(
                [load_bin, "--target", f"hearth={url}", "--ingest", str(rate), "--senders", "8",
                 "--duration", str(int(max_seconds)), "--drain-timeout", "1", "--pid", str(node.pid)],
                stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
            time.sleep(1)
        head, finalized, txs_total, done = genesis, genesis["hash"], 0, 0
        started = time.monotonic()
        for round_ in range(1, rounds + 1):
            if time.monotonic() - started > max_seconds:
                break
            txs = public(url, "txpoolExt_getTxs", [])["result"]
            attributes = {
                "timestamp": hex(int(head["timestamp"], 16) + 1), "prevRandao": ZERO,
                "suggestedFeeRecipient": "0x" + "fe" * 20, "withdrawals": [],
                "parentBeaconBlockRoot": ZERO, "transactions": txs, "gasLimit": "0x1c9c380",
            }
            state = {"headBlockHash": head["hash"], "safeBlockHash": head["hash"],
                     "finalizedBlockHash": finalized}
            chosen = engine.call("engine_forkchoiceUpdatedV3", [state, attributes])
            assert chosen["payloadStatus"]["status"] == "VALID", chosen
            built = engine.call("engine_getPayloadV4", [chosen["payloadId"]])
            payload = built["executionPayload"]
            status = engine.call("engine_newPayloadV4",
                                 [payload, [], ZERO, built["executionRequests"]])
            assert status["status"] == "VALID", status
            if round_ % 10 == 0:
                finalized = payload["blockHash"]
            state = {"headBlockHash": payload["blockHash"], "safeBlockHash": payload["blockHash"],
                     "finalizedBlockHash": finalized}
            chosen = engine.call("engine_forkchoiceUpdatedV3", [state, None])
            assert chosen["payloadStatus"]["status"] == "VALID", chosen
            head = {"hash": payload["blockHash"], "timestamp": payload["timestamp"]}
            txs_total += len(payload["transactions"])
            done = round_
            if round_ % 100 == 0:
                print(f"  round {round_}/{rounds}: {txs_total} txs so far", file=sys.stderr)
        elapsed = time.monotonic() - started
        stop.set()
        if loader:
            loader.terminate()
            out = loader.communicate(timeout=30)[0].strip().splitlines()
            # hearth-load's curve: "... offered N accepted N refused N ..." per second.
            counts["sent"] = counts.get("sent", 0)
            counts["ingest_last"] = out[-1] if out else ""
        for thread in threads:
            thread.join(timeout=10)
        peak = status_kib(node.pid, "VmHWM")
        tip = public(url, "eth_getBlockByNumber", ["latest", False])["result"]
        assert tip["hash"] == head["hash"], "the head is the last block chosen"
        return {"rounds": done, "seconds": elapsed, "txs": txs_total,
                "sent": counts.get("sent", 0), "refused": counts.get("refused", 0),
                "peak_mib": peak / 1024, "ingest_last": counts.get("ingest_last", "")}
    finally:
        node.kill()
        node.wait()


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--hearth", default="target/release/hearth")
    parser.add_argument("--rounds", type=int, default=1000)
    parser.add_argument("--flood-threads", type=int, default=4)
    parser.add_argument("--max-seconds", type=float, default=300)
    parser.add_argument("--ingest", type=int, help="also offer signed transactions at this rate")
    parser.add_argument("--hearth-load", default="target/release/hearth-load")
    args = parser.parse_args()
    rows = []
    runs = [("quiet pool", 0, None),
            (f"flood ({args.flood_threads} senders)", args.flood_threads, None)]
    if args.ingest:
        runs.append((f"ingest {args.ingest}/s", 0, (args.ingest, args.hearth_load)))
    for label, threads, ingest in runs:
        print(f"{label} ...", file=sys.stderr)
        rows.append((label, run(args.hearth, args.rounds, threads, args.max_seconds, ingest)))
    print(f"{'run':<22} {'rounds':>7} {'blocks/s':>9} {'txs':>7} {'tx/block':>9} "
          f"{'flood sent':>11} {'refused':>8} {'peak MiB':>9}")
    for label, r in rows:
        print(f"{label:<22} {r['rounds']:>7} {r['rounds'] / r['seconds']:>9.1f} {r['txs']:>7} "
              f"{r['txs'] / max(r['rounds'], 1):>9.1f} {r['sent']:>11} {r['refused']:>8} "
              f"{r['peak_mib']:>9.1f}")
        if r["ingest_last"]:
            print(f"  hearth-load's last line: {r['ingest_last']}")


if __name__ == "__main__":
    main()
