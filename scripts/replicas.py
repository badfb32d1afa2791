"""Read replicas end to end: a leader, two replicas (--follow) and HAProxy in front of them.

Run through scripts/replicas.sh (which checks the binaries, installs HAProxy and cleans up):
  1. correctness  transactions through the balancer from 10 senders while 4 readers check each
                  replica answer against the leader's answer at the same height; then heads,
                  hashes and state roots of the replicas equal the leader's
  2. lag          ~1,000 mined tx/s (eth_sendTransaction from 10 senders at the leader); replica
                  head lag in ms from the times pollers (a separate process polling each node
                  every ~2 ms) first saw each block
  3. faults       kill -9 a replica under read load, restart it on its datadir; SIGTERM the
                  leader: replicas serve reads, turn unhealthy, refuse writes naming the leader,
                  and follow again when it comes back with nothing lost
  4. scale        (full only) balanceOf calls per replica-CPU-second: lone node vs 1 and 2
                  replicas behind HAProxy, each Hearth process pinned to its own core
  5. dev methods  a test suite's dev methods through the balancer (patches, header choices,
                  impersonation, a snapshot reverted): the replicas end on the leader's chain

Everything listens on 127.0.0.1 on free ports; every wait is bounded; each phase prints one table
and a PASS/FAIL line; the exit status is non-zero when any phase failed.
"""

import argparse
import atexit
import http.client
import itertools
import json
import os
import random
import re
import signal
import subprocess
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from local_node import free_port  # noqa: E402

HERE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MAX_LAG_TIME_S = 2.0
HAPROXY_FALL_S = 2.0  # `check inter 1s fall 2`: a replica is out at most ~2 s after it turns 503
RECIPIENTS = [
    "0x1111111111111111111111111111111111111111",
    "0x2222222222222222222222222222222222222222",
    "0x3333333333333333333333333333333333333333",
]
# A contract that logs every call: LOG1(topic = caller, data = callvalue); its init code copies
# the 11 runtime bytes (34 6000 52 33 6020 6000 a1 00) and returns them.
LOGGER_INITCODE = "0x600b600c600039600b6000f3" + "346000523360206000a100"
TX_GAS = hex(40_000)


def now():
    return time.monotonic()


def log(*args):
    print(*args, flush=True)


class HttpError(Exception):
    pass


class RpcError(Exception):
    pass


class Conn:
    """A keep-alive JSON-RPC connection (one per thread); a failed request closes it and the
    next one reconnects."""

    def __init__(self, port, timeout=10.0):
        self.port, self.timeout, self.c = port, timeout, None

    def close(self):
        if self.c is not None:
            self.c.close()
            self.c = None

    def request(self, method, path, body=None):
        try:
            if self.c is None:
                self.c = http.client.HTTPConnection("127.0.0.1", self.port, timeout=self.timeout)
            headers = {"Content-Type": "application/json"} if body is not None else {}
            self.c.request(method, path, body, headers)
            r = self.c.getresponse()
            data = r.read()
            if r.will_close:
                self.close()
            return r.status, data
        except Exception:
            self.close()
            raise

    def post(self, payload):
        status, data = self.request("POST", "/", json.dumps(payload).encode())
        if status != 200:
            raise HttpError(f"HTTP {status}: {data[:120].decode(errors='replace').strip()}")
        return json.loads(data)

    def call(self, method, *params):
        answer = self.post({"jsonrpc": "2.0", "id": 1, "method": method, "params": list(params)})
        if "error" in answer:
            raise RpcError(f"{method}: {answer['error']}")
        return answer["result"]

    def batch(self, calls):
        payload = [{"jsonrpc": "2.0", "id": i, "method": m, "params": p} for i, (m, p) in enumerate(calls)]
        answers = self.post(payload)
        if not isinstance(answers, list) or len(answers) != len(calls):
            raise RpcError(f"batch answer: {str(answers)[:200]}")
        answers.sort(key=lambda a: a["id"])
        for a in answers:
            if "error" in a:
                raise RpcError(f"batch call: {a['error']}")
        return [a["result"] for a in answers]

    def health(self):
        status, data = self.request("GET", "/health")
        try:
            return status, json.loads(data)
        except ValueError:
            return status, {"raw": data[:200].decode(errors="replace")}


def one_call(port, method, *params, timeout=10.0):
    c = Conn(port, timeout)
    try:
        return c.call(method, *params)
    finally:
        c.close()


def head_of(port):
    return int(one_call(port, "eth_blockNumber"), 16)


def block_of(port, number):
    return one_call(port, "eth_getBlockByNumber", hex(number), False)


def health_of(port):
    c = Conn(port, 2.0)
    try:
        return c.health()
    finally:
        c.close()


def short(e, n=110):
    s = " ".join(f"{type(e).__name__}: {e}".split())
    return s if len(s) <= n else s[: n - 3] + "..."


def pct(values, p):
    """Nearest-rank percentile of a non-empty list."""
    v = sorted(values)
    k = max(0, min(len(v) - 1, int(-(-p * len(v) // 100)) - 1))
    return v[k]


def table(headers, rows):
    log("| " + " | ".join(headers) + " |")
    log("|" + "|".join("---" for _ in headers) + "|")
    for r in rows:
        log("| " + " | ".join(str(x) for x in r) + " |")


# --- processes -------------------------------------------------------------------------------

PROCS = []
PROCS_LOAD = []  # hearth-load runs waited for with os.wait4


class Proc:
    """A child process (Hearth or HAProxy) with its log in the work directory; its pid is
    appended to WORK/pids so that replicas.sh's trap can kill it even if Python dies."""

    def __init__(self, ctx, name, argv, port=None):
        self.ctx, self.name, self.argv, self.port = ctx, name, [str(a) for a in argv], port
        self.p = None
        PROCS.append(self)

    @property
    def pid(self):
        return self.p.pid

    def alive(self):
        return self.p is not None and self.p.poll() is None

    def start(self, wait_rpc=True, timeout=30.0):
        logf = open(os.path.join(self.ctx.work, f"{self.name}.log"), "ab")
        self.p = subprocess.Popen(self.argv, stdout=logf, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
        logf.close()
        with open(os.path.join(self.ctx.work, "pids"), "a") as f:
            f.write(f"{self.p.pid}\n")
        if wait_rpc:
            deadline = now() + timeout
            while True:
                try:
                    one_call(self.port, "eth_chainId", timeout=2.0)
                    return self
                except (OSError, HttpError, RpcError, ValueError):
                    if self.p.poll() is not None or now() > deadline:
                        self.kill9()
                        raise SystemExit(f"{self.name} did not start:\n{self.log_tail()}")
                    time.sleep(0.05)
        return self

    def log_tail(self, n=1500):
        with open(os.path.join(self.ctx.work, f"{self.name}.log"), "rb") as f:
            return f.read()[-n:].decode(errors="replace")

    def cpu(self):
        """utime + stime of the process (all threads) in seconds."""
        with open(f"/proc/{self.p.pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    def kill9(self):
        if self.alive():
            self.p.kill()
        if self.p is not None:
            self.p.wait()

    def term(self, timeout=15.0):
        """SIGTERM; True when the process exited within `timeout` (else it is killed)."""
        if not self.alive():
            return True
        self.p.send_signal(signal.SIGTERM)
        try:
            self.p.wait(timeout)
            return True
        except subprocess.TimeoutExpired:
            self.kill9()
            return False


def cleanup():
    for p in PROCS_LOAD:
        if p.returncode is None:
            try:
                p.kill()
            except Exception:
                pass
    for p in PROCS:
        try:
            p.kill9()
        except Exception:
            pass


# --- HAProxy configuration -------------------------------------------------------------------

CFG_PORTS = {"front": 8540, "leader": 8545, "replica1": 8546, "replica2": 8547, "stats": 8404}


def haproxy_cfg(ctx, replicas=("replica1", "replica2"), first_port=None, second_port=None):
    """deploy/haproxy.cfg with this run's ports; replica server lines not in `replicas` are
    dropped; `first_port` and `second_port` put other nodes in the replicas' places. The file is what is tested:
    it must keep its loopback addresses."""
    source = "deploy/haproxy.cfg"
    with open(os.path.join(HERE, "deploy", "haproxy.cfg")) as f:
        text = f.read()
    missing = [p for p in CFG_PORTS.values() if f"127.0.0.1:{p}" not in text]
    if missing:
        sys.exit(f"deploy/haproxy.cfg no longer names 127.0.0.1 ports {missing}: keep its loopback example")
    ports = {"front": ctx.lb_port, "leader": ctx.leader_port, "replica1": first_port or ctx.r_ports[0],
             "replica2": second_port or ctx.r_ports[1], "stats": ctx.stats_port}
    lines = []
    for line in text.splitlines():
        if any(f"127.0.0.1:{CFG_PORTS[r]}" in line and line.strip().startswith("server")
               for r in ("replica1", "replica2") if r not in replicas):
            continue
        lines.append(line)
    text = "\n".join(lines) + "\n"
    # Placeholders first, so that a new port equal to an old one is not replaced twice.
    for key, old in CFG_PORTS.items():
        text = text.replace(f"127.0.0.1:{old}", f"127.0.0.1:@{key}@")
    for key, new in ports.items():
        text = text.replace(f"127.0.0.1:@{key}@", f"127.0.0.1:{new}")
    path = os.path.join(ctx.work, f"haproxy-{len(replicas)}.cfg")
    with open(path, "w") as f:
        f.write(text)
    check = subprocess.run(["haproxy", "-c", "-f", path], capture_output=True, text=True, timeout=30)
    if check.returncode != 0:
        raise SystemExit(f"haproxy -c -f {path} failed:\n{check.stdout}{check.stderr}")
    return path, source


def start_haproxy(ctx, replicas=("replica1", "replica2"), first_port=None, second_port=None):
    path, source = haproxy_cfg(ctx, replicas, first_port, second_port)
    hp = Proc(ctx, f"haproxy-{len(replicas)}", ["haproxy", "-db", "-f", path], ctx.lb_port)
    hp.start(wait_rpc=True, timeout=20)
    return hp, source


# --- shared helpers --------------------------------------------------------------------------


class Counters:
    def __init__(self):
        self.lock = threading.Lock()
        self.n = {}
        self.examples = []

    def add(self, key, k=1, example=None):
        with self.lock:
            self.n[key] = self.n.get(key, 0) + k
            if example and len(self.examples) < 4:
                self.examples.append(f"{key}: {example}")

    def __getitem__(self, key):
        return self.n.get(key, 0)


def send_counted(c, tx, ok, i, counters):
    """One eth_sendTransaction on `c`, counted in `ok[i]` or as a failed send."""
    try:
        c.call("eth_sendTransaction", tx)
        ok[i] += 1
    except Exception as e:  # noqa: BLE001 - counted and reported
        counters.add("failed sends", example=short(e))


def per_sender(port, senders, body, join_s):
    """Runs `body(i, conn)` on a thread per sender, each with its own connection to `port`;
    returns (elapsed s from the start, per-sender ok counts that `body` fills)."""
    ok = [0] * len(senders)

    def run(i):
        c = Conn(port, 30.0)
        body(i, c, ok)
        c.close()

    threads = [threading.Thread(target=run, args=(i,), daemon=True) for i in range(len(senders))]
    t0 = now()
    for t in threads:
        t.start()
    for t in threads:
        t.join(join_s)
    return now() - t0, ok


def send_transactions(port, senders, total, counters, recipients):
    """`total` eth_sendTransaction calls to `port`, spread over `senders` (one thread each,
    sequential per sender); returns (elapsed s, per-sender ok counts)."""
    per = [total // len(senders) + (1 if i < total % len(senders) else 0) for i in range(len(senders))]

    def body(i, c, ok):
        for k in range(per[i]):
            tx = {"from": senders[i], "to": recipients[(i + k) % len(recipients)],
                  "value": hex(1 + k % 5), "gas": TX_GAS}
            send_counted(c, tx, ok, i, counters)

    return per_sender(port, senders, body, 600)


def nonces(port, addrs):
    c = Conn(port)
    try:
        return [int(x, 16) for x in c.batch([("eth_getTransactionCount", [a, "latest"]) for a in addrs])]
    finally:
        c.close()


def wait_synced(ctx, ports, timeout=60.0):
    """Waits until each replica holds the leader's head block (the leader being idle); returns
    {port: seconds or None} and the leader head. The hash is compared, not only the number: after
    evm_revert the leader mines a new block at a height a replica may still hold from the
    abandoned branch, until it follows the reorg."""
    t0 = now()
    target = head_of(ctx.leader_port)
    target_hash = block_of(ctx.leader_port, target)["hash"]
    done = {}
    while now() - t0 < timeout and len(done) < len(ports):
        for p in ports:
            if p in done:
                continue
            try:
                if head_of(p) == target and (block_of(p, target) or {}).get("hash") == target_hash:
                    done[p] = now() - t0
            except Exception:  # noqa: BLE001 - not up yet
                pass
        time.sleep(0.02)
    return {p: done.get(p) for p in ports}, target


def same_block(ctx, port, number):
    """(hash equal, stateRoot equal) of block `number` on `port` and on the leader."""
    try:
        mine, theirs = block_of(port, number), block_of(ctx.leader_port, number)
    except Exception:  # noqa: BLE001
        return False, False
    if not mine or not theirs:
        return False, False
    return mine["hash"] == theirs["hash"], mine["stateRoot"] == theirs["stateRoot"]


def until_health(ports, wanted, deadline):
    """Polls each port's /health every 50 ms until `wanted(status, body)` holds for every port or
    `deadline` passes; {index: (time first seen, body)} for those it held for."""
    seen = {}
    while now() < deadline and len(seen) < len(ports):
        for i, p in enumerate(ports):
            if i in seen:
                continue
            try:
                status, body = health_of(p)
            except Exception:  # noqa: BLE001 - a node down counts as not yet
                continue
            if wanted(status, body):
                seen[i] = (now(), body)
        time.sleep(0.05)
    return seen


def metric(port, name):
    c = Conn(port, 5.0)
    try:
        status, data = c.request("GET", "/metrics")
    finally:
        c.close()
    m = re.search(rf"^{re.escape(name)} (\S+)$", data.decode(), re.M)
    return float(m.group(1)) if m else None


def verdict(name, checks):
    failed = [c for c, ok in checks if not ok]
    if failed:
        log(f"FAIL {name}: " + "; ".join(failed))
    else:
        log(f"PASS {name}")
    log()
    return not failed


# --- phase 1: correctness --------------------------------------------------------------------


def phase_correctness(ctx, n_tx):
    log(f"## 1. correctness: {n_tx} tx via the balancer from 10 senders, 4 readers checking against the leader")
    L, B = ctx.leader_port, ctx.lb_port
    recipients = RECIPIENTS + [ctx.logger]
    watched = recipients + ctx.dev
    c = Counters()
    stop = threading.Event()
    leader_blocks = {}
    start_head = head_of(L)
    nonce0 = nonces(L, ctx.dev)

    def leader_block(lc, n):
        if n not in leader_blocks:
            blk, logs = lc.batch([("eth_getBlockByNumber", [hex(n), False]),
                                  ("eth_getLogs", [{"fromBlock": hex(n), "toBlock": hex(n)}])])
            leader_blocks[n] = (blk, logs)
        return leader_blocks[n]

    def reader(seed):
        rnd = random.Random(seed)
        bc, lc = Conn(B), Conn(L)
        while not stop.is_set():
            addr = rnd.choice(watched)
            try:
                b1, bal, b2 = bc.batch([("eth_blockNumber", []), ("eth_getBalance", [addr, "latest"]),
                                        ("eth_blockNumber", [])])
            except Exception as e:  # noqa: BLE001
                c.add("failed reads", example=short(e))
                time.sleep(0.01)
                continue
            c.add("reads")
            b1, b2, bal = int(b1, 16), int(b2, 16), int(bal, 16)
            try:
                if b2 < b1:
                    c.add("balance mismatches", example=f"head went back {b1} -> {b2}")
                elif b2 - b1 > 64:
                    c.add("balance windows too wide")
                else:
                    want = lc.batch([("eth_getBalance", [addr, hex(n)]) for n in range(b1, b2 + 1)])
                    c.add("balance checks")
                    if bal not in {int(w, 16) for w in want}:
                        c.add("balance mismatches",
                              example=f"{addr[:10]} {bal} not leader's at {b1}..{b2}: {[int(w, 16) for w in want]}")
            except Exception as e:  # noqa: BLE001
                c.add("leader errors", example=short(e))
            n = rnd.randint(max(0, b1 - 3), b1)
            try:
                h, blk, logs = bc.batch([("eth_blockNumber", []), ("eth_getBlockByNumber", [hex(n), False]),
                                         ("eth_getLogs", [{"fromBlock": hex(n), "toBlock": hex(n)}])])
            except Exception as e:  # noqa: BLE001
                c.add("failed reads", example=short(e))
                continue
            c.add("reads")
            if int(h, 16) < n:  # another replica, behind the first one: block n not there yet
                c.add("block checks skipped")
                continue
            try:
                lblk, llogs = leader_block(lc, n)
            except Exception as e:  # noqa: BLE001
                c.add("leader errors", example=short(e))
                continue
            c.add("block checks")
            if blk is None or blk["hash"] != lblk["hash"] or blk["stateRoot"] != lblk["stateRoot"]:
                c.add("block mismatches", example=f"block {n}: {blk and blk['hash']} vs {lblk['hash']}")
            if logs != llogs:
                c.add("log mismatches", example=f"logs of {n}: {len(logs)} vs {len(llogs)}")
        bc.close()
        lc.close()

    readers = [threading.Thread(target=reader, args=(i,), daemon=True) for i in range(4)]
    for t in readers:
        t.start()
    elapsed, ok = send_transactions(B, ctx.dev, n_tx, c, recipients)
    time.sleep(0.3)
    stop.set()
    for t in readers:
        t.join(15)
    sent = sum(ok)
    nonce_delta = sum(b - a for a, b in zip(nonce0, nonces(L, ctx.dev)))
    synced, head = wait_synced(ctx, ctx.r_ports)
    rows = [
        ("tx sent ok / failed", f"{sent} / {c['failed sends']}"),
        ("tx/s through the balancer", f"{sent / elapsed:.0f} ({elapsed:.1f} s)"),
        ("leader blocks mined / sender nonces advanced", f"{head - start_head} / {nonce_delta}"),
        ("reads ok / failed", f"{c['reads']} / {c['failed reads']}"),
        ("balance checks / mismatches", f"{c['balance checks']} / {c['balance mismatches']}"
         + (f" ({c['balance windows too wide']} windows > 64 blocks skipped)" if c["balance windows too wide"] else "")),
        ("block+logs checks / block mismatches / log mismatches",
         f"{c['block checks']} / {c['block mismatches']} / {c['log mismatches']}"
         + f" ({c['block checks skipped']} skipped: replica behind the number)"),
        ("leader errors (checking side)", c["leader errors"]),
    ]
    checks = [
        (f"{c['failed sends']} failed sends", c["failed sends"] == 0),
        (f"nonces advanced {nonce_delta} != sent {sent}", nonce_delta == sent),
        (f"{c['failed reads']} failed reads", c["failed reads"] == 0),
        ("mismatches", c["balance mismatches"] + c["block mismatches"] + c["log mismatches"] == 0),
        ("too few checks", c["balance checks"] > 0 and c["block checks"] > 0),
        (f"{c['leader errors']} leader errors", c["leader errors"] == 0),
    ]
    for i, p in enumerate(ctx.r_ports):
        name = f"replica{i + 1}"
        same_hash, same_root = same_block(ctx, p, head)
        imported = metric(p, "hearth_follow_imported_transactions_total")
        rows.append((f"{name}: synced to {head} after / hash / stateRoot / imported tx (metric)",
                     f"{'%.2f s' % synced[p] if synced[p] is not None else 'NOT in 60 s'} / "
                     f"{'equal' if same_hash else 'DIFFERENT'} / {'equal' if same_root else 'DIFFERENT'} / "
                     + (f"{imported:.0f}" if imported is not None else "?")))
        checks.append((f"{name} not synced/equal", synced[p] is not None and same_hash and same_root))
    table(["check", "value"], rows)
    for e in c.examples:
        log(f"  e.g. {e}")
    return verdict("1 correctness", checks)


# --- phase 2: lag ----------------------------------------------------------------------------


class HeadPoller(threading.Thread):
    """Polls eth_blockNumber on one node every ~`period` s; `seen[b]` = when block b was first
    reported (blocks skipped between two polls get the later time)."""

    def __init__(self, port, period=0.002):
        super().__init__(daemon=True)
        self.port, self.period = port, period
        self.seen, self.last, self.errors = {}, None, 0
        self.stop = threading.Event()

    def run(self):
        c = Conn(self.port, 2.0)
        while not self.stop.is_set():
            t0 = now()
            try:
                n = int(c.call("eth_blockNumber"), 16)
            except Exception:  # noqa: BLE001
                self.errors += 1
                time.sleep(0.01)
                continue
            t = now()
            if self.last is None:
                self.last = n
            elif n > self.last:
                for b in range(self.last + 1, n + 1):
                    self.seen[b] = t
                self.last = n
            time.sleep(max(0.0, self.period - (now() - t0)))
        c.close()


def poll_heads(ports):
    """`replicas.py --poll P,P,...`: one HeadPoller thread per port until a line (or EOF) on
    stdin, then {port: {block: first-seen monotonic time}} as JSON on stdout. A process of its
    own, so that the senders' threads do not delay the pollers' timestamps (CLOCK_MONOTONIC is
    the same in both processes)."""
    sys.setswitchinterval(0.0005)
    pollers = {p: HeadPoller(p) for p in ports}
    for p in pollers.values():
        p.start()
    sys.stdin.readline()
    for p in pollers.values():
        p.stop.set()
    for p in pollers.values():
        p.join(5)
    json.dump({port: {"seen": p.seen, "last": p.last, "errors": p.errors} for port, p in pollers.items()},
              sys.stdout)
    return 0


def send_at_rate(port, senders, rate, secs, counters, recipients):
    """eth_sendTransaction at `rate` per second in aggregate for `secs` s: one thread per sender,
    sequential per sender, each taking the next due time of a shared schedule (a sender behind
    schedule sends at once, so the achieved rate is min(rate, what the node and senders
    sustain)). Returns (elapsed s, per-sender ok counts)."""
    tickets = itertools.count()
    t0 = now() + 0.05
    stop_at = t0 + secs

    def body(i, c, ok):
        k = 0
        while True:
            due = t0 + next(tickets) / rate
            if due >= stop_at:
                break
            delay = due - now()
            if delay > 0:
                time.sleep(delay)
            tx = {"from": senders[i], "to": recipients[k % len(recipients)], "value": "0x1", "gas": TX_GAS}
            k += 1
            send_counted(c, tx, ok, i, counters)

    elapsed, ok = per_sender(port, senders, body, secs + 60)
    return elapsed - 0.05, ok


def phase_lag(ctx, secs, rate=1000):
    log(f"## 2. lag: eth_sendTransaction at {rate} tx/s in aggregate from 10 senders at the leader for {secs} s; "
        "eth_blockNumber polled every ~2 ms per node (separate process)")
    L = ctx.leader_port
    ports = [L] + ctx.r_ports
    poller = subprocess.Popen([sys.executable, os.path.abspath(__file__), "--poll", ",".join(map(str, ports))],
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    PROCS_LOAD.append(poller)
    time.sleep(0.5)
    start_head = head_of(L)
    nonce0 = nonces(L, ctx.dev)
    c = Counters()
    nodes = [ctx.leader] + ctx.replicas
    cpu0 = [n.cpu() for n in nodes]
    elapsed, ok = send_at_rate(L, ctx.dev, rate, secs, c, RECIPIENTS + [ctx.logger])
    mined = sum(b - a for a, b in zip(nonce0, nonces(L, ctx.dev)))
    end_head = head_of(L)
    synced, _ = wait_synced(ctx, ctx.r_ports, 30)
    cpu = [n.cpu() - c0 for n, c0 in zip(nodes, cpu0)]
    time.sleep(0.1)
    out, _ = poller.communicate(b"stop\n", timeout=30)
    polled = {int(k): v for k, v in json.loads(out).items()}
    lead = {int(b): t for b, t in polled[L]["seen"].items()}
    blocks = [b for b in range(start_head + 1, end_head + 1) if b in lead]
    rows, checks = [], [(f"{c['failed sends']} failed sends", c["failed sends"] == 0)]
    for i, p in enumerate(ctx.r_ports):
        name = f"replica{i + 1}"
        seen = {int(b): t for b, t in polled[p]["seen"].items()}
        lags = [(seen[b] - lead[b]) * 1000 for b in blocks if b in seen]
        same_hash, _ = same_block(ctx, p, end_head)
        stats = [f"{pct(lags, 50):.1f}", f"{pct(lags, 99):.1f}", f"{max(lags):.1f}"] if lags else ["-"] * 3
        blocks_done = max(1, end_head - start_head)
        rows.append((name, len(lags), *stats, len(blocks) - len(lags),
                     f"{synced[p]:.2f} s" if synced[p] is not None else "NOT in 30 s",
                     "equal" if same_hash else "DIFFERENT",
                     f"{cpu[i + 1]:.2f} ({cpu[i + 1] * 1e6 / blocks_done:.0f} us/block)"))
        checks.append((f"{name} did not reach the leader's head {end_head} within 30 s", synced[p] is not None))
        checks.append((f"{name} head hash differs", same_hash))
    table(["replica", "blocks", "lag p50 ms", "lag p99 ms", "lag max ms", "blocks not seen",
           "caught up after the load", "head hash", "CPU s (per block)"], rows)
    log(f"leader CPU {cpu[0]:.2f} s ({cpu[0] * 1e6 / max(1, end_head - start_head):.0f} us/block, "
        "the HTTP of every eth_sendTransaction included)")
    achieved = sum(ok) / elapsed
    log(f"sent {sum(ok)} tx in {elapsed:.1f} s: {achieved:.0f} tx/s; leader mined {mined} tx in "
        f"{end_head - start_head} blocks ({(end_head - start_head) / elapsed:.0f} blocks/s); poll errors "
        + "/".join(str(polled[p]["errors"]) for p in ports)
        + ("" if achieved >= 0.9 * rate else f"\nNOTE: {rate} tx/s not reached: the leader (with these Python "
           f"senders, on this machine) mined {achieved:.0f} tx/s"))
    for e in c.examples:
        log(f"  e.g. {e}")
    return verdict("2 lag", checks)


# --- phase 3: faults -------------------------------------------------------------------------


class ReadLoad:
    """4 threads reading through the balancer ([eth_blockNumber, eth_getBalance] batches),
    recording (time, ok, error) per read."""

    def __init__(self, port, addr, threads=4):
        self.port, self.addr = port, addr
        self.events, self.lock = [], threading.Lock()
        self.stop = threading.Event()
        self.threads = [threading.Thread(target=self.run, daemon=True) for _ in range(threads)]

    def run(self):
        c = Conn(self.port, 5.0)
        while not self.stop.is_set():
            try:
                c.batch([("eth_blockNumber", []), ("eth_getBalance", [self.addr, "latest"])])
                ev = (now(), True, None)
            except Exception as e:  # noqa: BLE001
                ev = (now(), False, short(e, 80))
            with self.lock:
                self.events.append(ev)
            time.sleep(0.001 if ev[1] else 0.01)
        c.close()

    def start(self):
        for t in self.threads:
            t.start()

    def finish(self):
        self.stop.set()
        for t in self.threads:
            t.join(10)

    def window(self, t0, t1):
        with self.lock:
            evs = [e for e in self.events if t0 <= e[0] < t1]
        failed = [e for e in evs if not e[1]]
        return len(evs), len(failed), (failed[0][2] if failed else "")


def phase_faults(ctx, n_tx):
    log("## 3. faults: kill -9 replica1 under read load, restart it; SIGTERM the leader, restart it")
    L, B = ctx.leader_port, ctx.lb_port
    r1, r2 = ctx.replicas
    rl = ReadLoad(B, ctx.dev[0])
    rl.start()
    time.sleep(1.0)
    rows, checks = [], []

    # replica1 killed
    t_kill = now()
    r1.kill9()
    time.sleep(3.0)
    n, f, err = rl.window(t_kill, t_kill + 3)
    _, f_late, _ = rl.window(t_kill + HAPROXY_FALL_S, t_kill + 3)
    rows.append(("reads via balancer in the 3 s after kill -9 replica1: total / failed / failed after 2 s",
                 f"{n} / {f} / {f_late}" + (f" ({err})" if err else "")))
    checks.append((f"{f_late} reads failed more than 2 s after the kill", f_late == 0))
    checks.append((f"{f} reads failed after the kill (more than the 4 in flight)", f <= 4))
    # the leader moves on while replica1 is down
    c = Counters()
    send_transactions(L, ctx.dev, n_tx, c, RECIPIENTS)
    t_restart = now()
    r1.start(wait_rpc=True, timeout=60)
    t_up = now() - t_restart
    synced, head = wait_synced(ctx, [r1.port])
    s = synced[r1.port]
    same_hash, same_root = same_block(ctx, r1.port, head)
    rows.append((f"replica1 restarted on its datadir ({n_tx} tx behind): RPC up / head = leader's ({head})",
                 f"{t_up:.2f} s / " + (f"{t_up + s:.2f} s" if s is not None else "NOT within 60 s")
                 + f", hash {'equal' if same_hash else 'DIFFERENT'}, stateRoot {'equal' if same_root else 'DIFFERENT'}"))
    checks.append(("replica1 did not catch up within 60 s", s is not None and same_hash and same_root))
    checks.append((f"{c['failed sends']} sends to the leader failed", c["failed sends"] == 0))
    time.sleep(1.5)  # HAProxy takes replica1 back (rise 1, inter 1s)

    # leader stopped
    before = block_of(L, head_of(L))
    t_term = now()
    exited = ctx.leader.term(15)
    rows.append(("leader exits on SIGTERM", f"{'yes' if exited else 'NO (killed)'} in {now() - t_term:.2f} s"))
    checks.append(("leader did not exit on SIGTERM within 15 s", exited))
    seen = until_health(ctx.r_ports, lambda status, body: status == 503, t_term + MAX_LAG_TIME_S + 2 + 3)
    turned = {i: t - t_term for i, (t, _) in seen.items()}
    statuses = {i: body.get("status") for i, (_, body) in seen.items()}
    for i in range(2):
        t = turned.get(i)
        rows.append((f"replica{i + 1} /health 503 after leader SIGTERM (limit {MAX_LAG_TIME_S + 2:.0f} s)",
                     f"{t:.2f} s, status {statuses[i]}" if t is not None else "NOT seen"))
        checks.append((f"replica{i + 1} /health not 503 within {MAX_LAG_TIME_S + 2:.0f} s",
                       t is not None and t <= MAX_LAG_TIME_S + 2))
    # keep the leader down long enough for HAProxy to act on the 503s (fall 2 x inter 1s)
    t_503 = t_term + max(turned.values(), default=MAX_LAG_TIME_S + 2)
    time.sleep(max(0.0, t_503 + HAPROXY_FALL_S + 1.0 - now()))
    direct_ok = []
    for p in ctx.r_ports:
        try:
            one_call(p, "eth_getBalance", ctx.dev[0], "latest")
            direct_ok.append(True)
        except Exception:  # noqa: BLE001
            direct_ok.append(False)
    rows.append(("direct reads from replica1 / replica2 while the leader is down",
                 " / ".join("ok" if x else "FAILED" for x in direct_ok)))
    checks.append(("a replica refused a direct read while the leader was down", all(direct_ok)))
    try:
        one_call(r1.port, "eth_sendTransaction", {"from": ctx.dev[0], "to": RECIPIENTS[0], "value": "0x1"})
        write_err = None
    except Exception as e:  # noqa: BLE001
        write_err = str(e)
    good_err = write_err is not None and "leader" in write_err
    rows.append(("write via replica1 while the leader is down",
                 ("error naming the leader" if good_err else f"UNEXPECTED: {write_err or 'accepted'}")[:120]))
    checks.append(("write via a replica did not fail naming the leader", good_err))
    t_lstart = now()
    n1, f1, e1 = rl.window(t_term, t_503)
    n2, f2, e2 = rl.window(t_503, t_lstart)
    rows.append(("reads via balancer, leader down, replicas healthy: total / failed",
                 f"{n1} / {f1}" + (f" ({e1})" if e1 else "")))
    rows.append(("reads via balancer, leader down, replicas 503 (HAProxy drops them): total / failed",
                 f"{n2} / {f2}" + (f" ({e2})" if e2 else "")))
    checks.append((f"{f1 + f2} reads via the balancer failed while the leader was down", f1 + f2 == 0))

    # leader back
    ctx.leader.start(wait_rpc=True, timeout=60)
    t_lup = now() - t_lstart
    after = block_of(L, head_of(L))
    kept = after["number"] == before["number"] and after["hash"] == before["hash"]
    rows.append(("leader restarted on its datadir: RPC up / head before -> after",
                 f"{t_lup:.2f} s / {int(before['number'], 16)} -> {int(after['number'], 16)}"
                 f" ({'same hash' if kept else 'DIFFERENT'})"))
    checks.append(("leader lost blocks or changed its head across the restart", kept))
    at_head = int(after["number"], 16)
    seen = until_health(ctx.r_ports, lambda status, body: status == 200 and body.get("head") == at_head,
                        now() + 60)
    healthy = {i: t - t_lstart for i, (t, _) in seen.items()}
    for i, p in enumerate(ctx.r_ports):
        same_hash, same_root = same_block(ctx, p, int(after["number"], 16))
        t = healthy.get(i)
        rows.append((f"replica{i + 1} /health 200 at the leader's head after the leader's restart",
                     (f"{t:.2f} s" if t is not None else "NOT within 60 s")
                     + f", hash {'equal' if same_hash else 'DIFFERENT'}, stateRoot {'equal' if same_root else 'DIFFERENT'}"))
        checks.append((f"replica{i + 1} not healthy/equal within 60 s of the leader's restart",
                       t is not None and same_hash and same_root))
    time.sleep(HAPROXY_FALL_S)
    t_back = now()
    time.sleep(1.0)
    rl.finish()
    n3, f3, e3 = rl.window(t_back, t_back + 1.0)
    rows.append(("reads via balancer once all are back: total / failed", f"{n3} / {f3}" + (f" ({e3})" if e3 else "")))
    checks.append(("reads via the balancer still failing after recovery", n3 > 0 and f3 == 0))
    table(["check", "value"], rows)
    return verdict("3 faults", checks)


# --- phase 4: scale --------------------------------------------------------------------------


def run_load(ctx, url, secs, procs, rate=None):
    """A 2 s warm-up run (deploys BenchToken when absent), then the measured run without warm-up,
    closed loop or at `rate` calls/s (open loop); returns (ok calls, {name: CPU s},
    hearth-load CPU s)."""
    base = [ctx.load, "--target", f"t={url}", "--workload", "balanceOf", "--concurrency", "32"]
    if rate:
        base += ["--rate", str(rate)]
    subprocess.run(base + ["--duration", "2"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                   timeout=60, check=True)
    out_path = os.path.join(ctx.work, "load.out")
    cpu0 = {name: p.cpu() for name, p in procs.items()}
    with open(out_path, "w") as out:
        p = subprocess.Popen(base + ["--duration", str(secs), "--warmup", "0"], stdout=out, stderr=subprocess.STDOUT)
        PROCS_LOAD.append(p)
        _, status, usage = os.wait4(p.pid, 0)
        p.returncode = os.waitstatus_to_exitcode(status)
    cpu = {name: proc.cpu() - cpu0[name] for name, proc in procs.items()}
    with open(out_path) as f:
        text = f.read()
    header, row = None, None
    for ln in text.splitlines():
        if ln.startswith("| workload"):
            header = [x.strip() for x in ln.strip("|").split("|")]
        elif ln.startswith("| balanceOf") and header:
            row = dict(zip(header, [x.strip() for x in ln.strip("|").split("|")]))
    if p.returncode != 0 or row is None:
        raise SystemExit(f"hearth-load failed ({p.returncode}):\n{text[-1500:]}")
    return int(row["ok"]), cpu, usage.ru_utime + usage.ru_stime


#: Calls/s each Hearth node serves in the fixed-rate runs: about a fifth of one core's capacity,
#: so that no process waits for a core and the CPU seconds measure what a call costs.
RATE_PER_NODE = 15_000


SPIN = "import time\nn=0\nend=time.time()+2\nwhile time.time()<end:\n    n+=1\nprint(n)"


def spin_efficiency():
    """Iterations of a Python spin loop per second on core 1 while core 0 spins too, over the
    same alone: what two busy processes get of this machine's two vCPUs (neighbours, shared
    caches, hyperthread siblings)."""
    def run(cores):
        procs = [subprocess.Popen(["taskset", "-c", str(c), sys.executable, "-c", SPIN],
                                  stdout=subprocess.PIPE, text=True) for c in cores]
        return [int(p.communicate(timeout=30)[0]) for p in procs]
    alone = run([1])[0]
    both = run([0, 1])
    return (sum(both) / 2) / alone if alone else 0


def scale_round(ctx, secs, lones):
    """One round of the fixed-rate runs: (a') one lone node behind HAProxy, (b) one replica,
    (a'') two lone nodes, (c) two replicas; {setup: (calls per Hearth CPU s, Hearth CPU s,
    HAProxy CPU s, hearth-load CPU s)}."""
    r1, r2 = ctx.replicas
    (l1, p1), (l2, p2) = lones
    out = {}
    for setup, pins, names, ports in (("a'", [(l1, 0)], ("replica1",), (p1, None)),
                                      ("b", [(r1, 0)], ("replica1",), (None, None)),
                                      ("a''", [(l1, 0), (l2, 1)], ("replica1", "replica2"), (p1, p2)),
                                      ("c", [(r1, 0), (r2, 1)], ("replica1", "replica2"), (None, None))):
        for proc, core in pins:
            subprocess.run(["taskset", "-a", "-p", "-c", str(core), str(proc.pid)], check=True,
                           stdout=subprocess.DEVNULL, timeout=10)
        ctx.haproxy.term(10)
        ctx.haproxy, _ = start_haproxy(ctx, names, *ports)
        time.sleep(1.5)  # first health checks
        procs = {"haproxy": ctx.haproxy}
        procs.update({f"r{i}": proc for i, (proc, _) in enumerate(pins)})
        lb = f"http://127.0.0.1:{ctx.lb_port}/"
        ok, cpu, load_cpu = run_load(ctx, lb, secs, procs, RATE_PER_NODE * len(pins))
        hearth = [cpu[f"r{i}"] for i in range(len(pins))]
        out[setup] = (ok / sum(hearth) if sum(hearth) else 0, hearth, cpu["haproxy"], load_cpu)
    return out


def phase_scale(ctx, secs, rounds=3):
    """balanceOf through HAProxy to one replica (core 0) and to two (cores 0 and 1), against one
    and two lone nodes (no --follow) pinned and balanced the same way, so that what differs is
    only that a replica follows a leader. The acceptance figure is what a call costs a
    replica in CPU, at a fixed rate per node below saturation (RATE_PER_NODE), median of
    `rounds` alternated rounds: with four busy processes on two cores a closed loop measures
    contention for cores, not a replica's cost. The closed-loop calls/s are printed too, as
    what this machine serves, and the spin baseline of its two vCPUs."""
    log(f"## 4. scale: balanceOf, {secs} s runs; Hearth pinned, HAProxy and hearth-load not; cost at "
        f"{RATE_PER_NODE} calls/s per node (median of {rounds} rounds); capacity closed loop, 32 connections")
    lones = []
    for i, core in enumerate((0, 1)):
        port = free_port()
        node = Proc(ctx, f"lone{i + 1}", ["taskset", "-c", str(core), ctx.hearth, "--http.port", port, "-q"],
                    port).start()
        # BenchToken deployed straight to it (through HAProxy the deploy would go to the leader).
        run_load(ctx, f"http://127.0.0.1:{port}/", 1, {})
        lones.append((node, port))
    capacity = {}
    capacity["a"], _, _ = run_load(ctx, f"http://127.0.0.1:{lones[0][1]}/", secs, {})
    results = [scale_round(ctx, secs, lones) for _ in range(rounds)]
    for setup, names, ports in (("a'", ("replica1",), (lones[0][1], None)), ("b", ("replica1",), (None, None)),
                                ("a''", ("replica1", "replica2"), (lones[0][1], lones[1][1])),
                                ("c", ("replica1", "replica2"), (None, None))):
        ctx.haproxy.term(10)
        ctx.haproxy, _ = start_haproxy(ctx, names, *ports)
        time.sleep(1.5)
        capacity[setup], _, _ = run_load(ctx, f"http://127.0.0.1:{ctx.lb_port}/", secs, {})
    for node, _ in lones:
        node.term(10)
    spin = spin_efficiency()
    labels = {"a'": "(a') lone node behind HAProxy, core 0", "b": "(b) HAProxy + 1 replica, core 0",
              "a''": "(a'') HAProxy + 2 lone nodes, cores 0,1", "c": "(c) HAProxy + 2 replicas, cores 0,1"}
    baseline = {"a'": "a'", "b": "a'", "a''": "a''", "c": "a''"}
    medians = {}
    for setup in labels:
        per = sorted(r[setup][0] for r in results)
        medians[setup] = per[len(per) // 2]
    rows = [("(a) lone node, core 0, no HAProxy", f"{capacity['a'] / secs:.0f}", "-", "-", "-", "-", "-")]
    for setup, label in labels.items():
        base = baseline[setup]
        ratios = [r[setup][0] / r[base][0] for r in results if r[base][0]]
        rows.append((label, f"{capacity[setup] / secs:.0f}",
                     " / ".join(f"{r[setup][0]:.0f}" for r in results), f"{medians[setup]:.0f}",
                     " / ".join(f"{x:.2f}" for x in ratios) + f" vs ({base})",
                     f"{medians[setup] / medians[base]:.2f}" if medians[base] else "-",
                     " / ".join(f"{r[setup][2]:.2f}" for r in results)))
    table(["setup", "closed-loop calls/s", "calls per Hearth CPU s, each round", "median",
           "vs the lone nodes each round", "median vs the lone nodes", "HAProxy CPU s each round"], rows)
    log(f"spin baseline: a Python spin loop on each of the two vCPUs at once runs at {spin:.2f} of its "
        "speed alone (what two busy processes get of this machine)")
    checks = []
    for setup in ("b", "c"):
        base = medians[baseline[setup]]
        ratio = medians[setup] / base if base else 0
        checks.append((f"({setup}) median per-CPU-second {ratio:.2f} x its lone nodes', more than 10% below",
                       ratio >= 0.90))
    return verdict("4 scale", checks)


# --- phase 5: dev methods through the balancer ----------------------------------------------


def phase_dev(ctx):
    """A test suite's dev methods through the balancer (routed to the leader): state patches,
    header choices, impersonation, a snapshot reverted. Each replica must end on the leader's
    head hash and state root, with the patched values, healthy."""
    log("## 5. dev methods through the balancer: patches, header choices, impersonation, revert")
    lb = ctx.lb_port
    who = "0x00000000000000000000000000000000000000d1"
    code_at = "0x00000000000000000000000000000000000000d2"
    slot = "0x" + "00" * 31 + "07"
    snapshot = one_call(lb, "evm_snapshot")
    one_call(lb, "anvil_setBalance", who, "0xde0b6b3a7640000")
    one_call(lb, "anvil_setCode", code_at, "0x6001600055")
    one_call(lb, "anvil_setStorageAt", code_at, slot, slot)
    one_call(lb, "hardhat_setNonce", who, "0x5")
    one_call(lb, "evm_mine")
    one_call(lb, "anvil_setNextBlockBaseFeePerGas", "0x0")
    one_call(lb, "evm_mine")
    one_call(lb, "evm_increaseTime", 3600)
    one_call(lb, "anvil_impersonateAccount", who)
    one_call(lb, "eth_sendTransaction", {"from": who, "to": code_at, "value": "0x1"})
    one_call(lb, "evm_revert", snapshot)
    one_call(lb, "anvil_setBalance", who, "0x99")
    one_call(lb, "anvil_setStorageAt", code_at, slot, "0x" + "00" * 31 + "08")
    one_call(lb, "evm_mine")
    synced, target = wait_synced(ctx, ctx.r_ports, 30)
    rows, checks = [], []
    for i, port in enumerate(ctx.r_ports):
        name = f"replica{i + 1}"
        same_hash, same_root = same_block(ctx, port, target)
        reads = [("eth_getBalance", [who, "latest"]), ("eth_getStorageAt", [code_at, slot, "latest"]),
                 ("eth_getTransactionCount", [who, "latest"])]
        same_reads = all(one_call(port, m, *a) == one_call(ctx.leader_port, m, *a) for m, a in reads)
        status, body = health_of(port)
        refused = metric(port, "hearth_follow_refused_block")
        rows.append([name, f"{synced[port]:.2f} s" if synced[port] is not None else "no",
                     "equal" if same_hash else "DIFFERENT", "equal" if same_root else "DIFFERENT",
                     "equal" if same_reads else "DIFFERENT", status, refused])
        checks += [(f"{name} synced", synced[port] is not None), (f"{name} hash", same_hash),
                   (f"{name} stateRoot", same_root), (f"{name} patched values", same_reads),
                   (f"{name} /health 200", status == 200), (f"{name} no refused block", refused == 0)]
    table(["replica", f"at the leader's head {target}", "hash", "stateRoot", "patched reads",
           "/health", "refused block"], rows)
    return verdict("5 dev methods", checks)


class Ctx:
    pass


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="small sizes; skips phase 4")
    ap.add_argument("--hearth", default=os.path.join(HERE, "target/release/hearth"))
    ap.add_argument("--load", default=os.path.join(HERE, "target/release/hearth-load"))
    ap.add_argument("--workdir", help="logs, datadirs and configs (replicas.sh makes it)")
    ap.add_argument("--scale-secs", type=int, default=10, help="length of each phase-4 run (default 10)")
    ap.add_argument("--poll", help=argparse.SUPPRESS)
    ap.add_argument("--phases", default="1,2,3,4,5", help="which phases to run (default all; --quick drops 4)")
    args = ap.parse_args()
    if args.poll:
        return poll_heads([int(p) for p in args.poll.split(",")])
    if not args.workdir:
        ap.error("--workdir is required")
    quick = args.quick
    phases = {int(x) for x in args.phases.split(",") if x}
    if quick:
        phases.discard(4)
    n_tx = 1000 if quick else 10_000
    lag_secs = 5 if quick else 20
    fault_tx = 200 if quick else 1000
    scale_secs = args.scale_secs

    atexit.register(cleanup)
    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(sig, lambda s, f: sys.exit(128 + s))
    limit = 300 if quick else 900

    def watchdog():
        time.sleep(limit)
        log(f"FAIL: the run took more than {limit} s; stopping")
        cleanup()
        os._exit(3)

    threading.Thread(target=watchdog, daemon=True).start()

    ctx = Ctx()
    ctx.work, ctx.hearth, ctx.load = args.workdir, args.hearth, args.load
    ctx.leader_port, ctx.lb_port, ctx.stats_port = free_port(), free_port(), free_port()
    ctx.r_ports = [free_port(), free_port()]
    leader_url = f"http://127.0.0.1:{ctx.leader_port}"
    ctx.leader = Proc(ctx, "leader", [ctx.hearth, "--http.port", ctx.leader_port,
                                      "--datadir", os.path.join(ctx.work, "leader"), "-q"], ctx.leader_port).start()
    ctx.replicas = [
        Proc(ctx, f"replica{i + 1}", [ctx.hearth, "--http.port", p, "--follow", leader_url, "--follow.max-lag", "8",
                                      "--follow.max-lag-time", f"{MAX_LAG_TIME_S:.0f}s",
                                      "--datadir", os.path.join(ctx.work, f"replica{i + 1}"), "-q"], p).start()
        for i, p in enumerate(ctx.r_ports)
    ]
    ctx.haproxy, source = start_haproxy(ctx)
    ctx.dev = one_call(ctx.leader_port, "eth_accounts")
    # BenchToken first, at the address hearth-load calls (dev account 0's first contract), so
    # that phase 4's balanceOf runs the same contract on the replicas as on a lone node.
    subprocess.run([ctx.load, "--target", f"t={leader_url}", "--workload", "balanceOf", "--concurrency", "1",
                    "--duration", "1", "--warmup", "0"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                   timeout=60, check=True)
    h = one_call(ctx.leader_port, "eth_sendTransaction", {"from": ctx.dev[0], "data": LOGGER_INITCODE})
    ctx.logger = one_call(ctx.leader_port, "eth_getTransactionReceipt", h)["contractAddress"]
    synced, _ = wait_synced(ctx, ctx.r_ports, 30)
    if any(v is None for v in synced.values()):
        raise SystemExit("replicas did not follow the leader within 30 s")
    log(f"leader :{ctx.leader_port} (--datadir), replicas :{ctx.r_ports[0]} :{ctx.r_ports[1]} "
        f"(--follow.max-lag 8 --follow.max-lag-time {MAX_LAG_TIME_S:.0f}s --datadir), HAProxy :{ctx.lb_port} "
        f"({source}); {'quick' if quick else 'full'} run; work dir {ctx.work}")
    log()
    results = []
    t0 = now()
    if 1 in phases:
        results.append(phase_correctness(ctx, n_tx))
    if 2 in phases:
        results.append(phase_lag(ctx, lag_secs))
    if 3 in phases:
        results.append(phase_faults(ctx, fault_tx))
    if 5 in phases:
        results.append(phase_dev(ctx))
    if 4 in phases:
        results.append(phase_scale(ctx, scale_secs))
    failed = results.count(False)
    log(f"{'PASS' if not failed else 'FAIL'}: {len(results) - failed} of {len(results)} phases passed "
        f"in {now() - t0:.0f} s")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
