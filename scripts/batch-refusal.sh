#!/usr/bin/env bash
# What a refused JSON-RPC batch costs the RPC front, for two builds side by side in one run
# (BENCHMARKS.md, "Refused batches"). Each build's node (default flags, in memory) is put
# under a storm of 64 closed-loop connections of hashLoop(20000) (~10 ms a call) so that its
# executor pool refuses calls; meanwhile one persistent connection times, round trip:
#   - a single eth_call (refused: HTTP 503, -32005), 25 ms apart (past the retry window, so
#     never held);
#   - a batch of BATCH eth_calls (every item refused -32005), 25 ms apart;
#   - the same batch resent at once after its refusal (a quick retry: held RETRY_PAUSE when
#     the build paces refused batches, answered at once when not).
# Per item = (batch median - single median) / (BATCH - 1). The builds run in turn, ROUNDS times
# (old, new, old, new, ...), one node under load at a time; `uptime` is printed with every
# row, since only the figures of one run compare on a shared machine.
#
#   bash scripts/batch-refusal.sh OLD_HEARTH NEW_HEARTH [HEARTH_LOAD]
#
# HEARTH_LOAD defaults to this tree's target/release/hearth-load (it must know hashLoop20k).
# Env: ROUNDS (2), BATCH (items per batch, 100; 2..=1000, the node's default item limit),
# STORM_SECS (bound on each storm, 30), PORT_BASE (9700; uses two ports).
# Nodes listen on 127.0.0.1 only and are stopped by PID at the end; every run is bounded.
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
OLD=${1:?usage: batch-refusal.sh OLD_HEARTH NEW_HEARTH [HEARTH_LOAD]}
NEW=${2:?usage: batch-refusal.sh OLD_HEARTH NEW_HEARTH [HEARTH_LOAD]}
LOAD=${3:-$HERE/target/release/hearth-load}
ROUNDS=${ROUNDS:-2}
BATCH=${BATCH:-100}
[ "$BATCH" -ge 2 ] && [ "$BATCH" -le 1000 ] || { echo "BATCH must be 2..=1000" >&2; exit 2; }
STORM_SECS=${STORM_SECS:-30}
PORT_BASE=${PORT_BASE:-9700}
. "$(dirname "${BASH_SOURCE[0]}")/node-lib.sh"
need_bins "$OLD" "$NEW" "$LOAD"

P_OLD=$PORT_BASE; P_NEW=$((PORT_BASE + 1))
"$OLD" --ephemeral --http.port $P_OLD >/tmp/batch-refusal-old.log 2>&1 & PIDS+=($!)
"$NEW" --ephemeral --http.port $P_NEW >/tmp/batch-refusal-new.log 2>&1 & PIDS+=($!)
wait_up $P_OLD; wait_up $P_NEW
# The workloads deploy their contracts on first use; a short idle run does it outside the timing.
for port in $P_OLD $P_NEW; do
  timeout 60 "$LOAD" --target "n=http://127.0.0.1:$port/" --workload hashLoop20k \
    --concurrency 1 --duration 1 --warmup 0 >/dev/null 2>&1
done

# Times the three kinds of request on one connection; prints one table row.
time_refusals() { # name port
  timeout 120 python3 - "$1" "$2" "$BATCH" <<'PY'
import http.client, json, statistics, sys, time
name, port, items = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
call = {"jsonrpc": "2.0", "method": "eth_call",
        "params": [{"to": "0x5FbDB2315678afecb367f032d93F642f64180aa3", "data": "0x70a08231"
                    + "0" * 24 + "f39fd6e51aad88f6f4ce6ab8827279cfffb92266"}, "latest"]}
single = json.dumps({**call, "id": 1}).encode()
batch = json.dumps([{**call, "id": i} for i in range(items)]).encode()
conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
def post(body):
    start = time.perf_counter()
    conn.request("POST", "/", body, {"content-type": "application/json"})
    reply = conn.getresponse()
    data = reply.read()
    return time.perf_counter() - start, reply.status, data
times = {"single": [], "batch": [], "retry": []}
refused = {"single": 0, "batch": 0, "retry": 0}
sent = {"single": 0, "batch": 0, "retry": 0}
def busy(data):
    answer = json.loads(data)
    items = answer if isinstance(answer, list) else [answer]
    return sum(1 for a in items if a.get("error", {}).get("code") == -32005)
for _ in range(2):
    for kind, body, n in [("single", single, 100), ("batch", batch, 20)]:
        for _ in range(n):
            dt, status, data = post(body)
            times[kind].append(dt); refused[kind] += busy(data); sent[kind] += 1
            time.sleep(0.025)  # past the 20 ms retry window: never held
    for _ in range(10):  # a batch resent at once after its answer
        dt, status, data = post(batch)
        times["retry"].append(dt); refused["retry"] += busy(data); sent["retry"] += 1
    time.sleep(0.025)
s = statistics.median(times["single"]) * 1e3
b = statistics.median(times["batch"]) * 1e3
r = statistics.median(times["retry"]) * 1e3
per_item = (b - s) / (items - 1) * 1e3
print(f"{name:<5} {s:>9.3f} {b:>10.3f} {per_item:>9.1f} {r:>10.1f}"
      f"   {refused['single']}/{sent['single']} {refused['batch']}/{sent['batch'] * items}"
      f" {refused['retry']}/{sent['retry'] * items}")
PY
}

echo "old: $OLD"
echo "new: $NEW"
echo "load: $LOAD; $(nproc) CPUs"
echo "batch of $BATCH eth_calls"
echo "build single_ms  batch_ms per_item_us retry_ms   refused: single batch-items retry-items | uptime"
for round in $(seq 1 "$ROUNDS"); do
  for which in old new; do
    port=$P_OLD; [ "$which" = new ] && port=$P_NEW
    timeout $((STORM_SECS + 30)) "$LOAD" --target "n=http://127.0.0.1:$port/" \
      --workload hashLoop20k --concurrency 64 --duration "$STORM_SECS" --warmup 0 \
      >/tmp/batch-refusal-storm-$which.txt 2>&1 &
    storm=$!
    sleep 3
    row=$(time_refusals "$which" "$port")
    kill "$storm" 2>/dev/null || true
    wait "$storm" 2>/dev/null || true
    echo "$row  | $(uptime | sed 's/.*load average: /load /')"
    sleep 2
  done
done
