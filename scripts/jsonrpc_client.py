"""The JSON-RPC calls the Python load scripts share: one request, one call, batches."""

import json
import urllib.request


def post(url, payload, timeout=600):
    """POSTs `payload` as JSON and returns the decoded answer."""
    body = json.dumps(payload).encode()
    request = urllib.request.Request(url, body, {"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=timeout) as response:
        return json.loads(response.read())


def rpc(url, method, params):
    """One call's result; an error answer raises."""
    answer = post(url, {"jsonrpc": "2.0", "id": 1, "method": method, "params": params})
    if "error" in answer:
        raise RuntimeError(f"{method}: {answer['error']}")
    return answer["result"]


def batch(url, calls, size=250):
    """Sends `calls` ((method, params) pairs) in JSON-RPC batches of `size`; returns the results
    in order; any error answer raises."""
    results = []
    for start in range(0, len(calls), size):
        chunk = calls[start : start + size]
        payload = [
            {"jsonrpc": "2.0", "id": i, "method": m, "params": p} for i, (m, p) in enumerate(chunk)
        ]
        for answer in sorted(post(url, payload), key=lambda a: a["id"]):
            if "error" in answer:
                raise RuntimeError(f"batch call: {answer['error']}")
            results.append(answer["result"])
    return results
