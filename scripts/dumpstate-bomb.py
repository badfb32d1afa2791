#!/usr/bin/env python3
"""Sends anvil_loadState a gzip bomb: about 260 KiB that inflate to 257 MiB (a state dump's
opening, then whitespace), past the 256 MiB bound (MAX_STATE_JSON_BYTES). Prints how long the
refusal took and the answer, which must be -32602 "the state is larger than ...". Watch the
node's memory meanwhile (e.g. `ps -o rss= -p PID`): the JSON is parsed as it is inflated, so it
stays flat.

    python3 scripts/dumpstate-bomb.py http://127.0.0.1:PORT/
"""

import json
import sys
import time
import urllib.request
import zlib

# Raw deflate: the opening and one MiB of spaces, then one more MiB of spaces as a segment
# that, after a sync flush, is the same bytes every time it is repeated.
c = zlib.compressobj(9, zlib.DEFLATED, -15)
opening = c.compress(b'{"block":null,"best_block_number":null,"accounts":{}')
opening += c.compress(b" " * (1 << 20)) + c.flush(zlib.Z_SYNC_FLUSH)
segment = c.compress(b" " * (1 << 20)) + c.flush(zlib.Z_SYNC_FLUSH)
# A gzip header (no name, no time); the trailer is never reached.
bomb = b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\xff" + opening + segment * 257
print(f"bomb: {len(bomb)} bytes of gzip, {257 + 1} MiB inflated")
body = {"jsonrpc": "2.0", "id": 1, "method": "anvil_loadState", "params": ["0x" + bomb.hex()]}
request = urllib.request.Request(sys.argv[1], json.dumps(body).encode(), {"content-type": "application/json"})
started = time.time()
with urllib.request.urlopen(request, timeout=600) as response:
    answer = json.loads(response.read())
print(f"answered in {time.time() - started:.2f} s: {answer}")
sys.exit(0 if answer.get("error", {}).get("code") == -32602 else 1)
