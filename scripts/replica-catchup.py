"""A read replica catching up from far behind: memory must not grow with the distance.

A node's memory grows with the chain it writes (the store's caches), so both runs below
write the same chain: LENGTH blocks (200 transfer blocks, then empty ones).
- near: a replica follows the leader live: the leader mines 10 blocks, waits until the
  replica holds them, and again, so the replica is never more than 10 blocks behind;
- far: a fresh replica starts once the leader holds all LENGTH blocks, LENGTH behind.
Each run's peak RSS (VmHWM, sampled every 0.5 s with the head as progress) is printed; the
far run's must stay within 10% (+16 MiB) of the near run's: one batch of at most 32 blocks is
held at a time, however far behind. Both use `--cache.db 64MiB`.

    cargo build --release --bin hearth
    python3 scripts/replica-catchup.py [--hearth target/release/hearth] [--length 30000]
"""

import argparse
import os
import shutil
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(__file__))
from jsonrpc_client import rpc  # noqa: E402
from local_node import free_port, start, status_kib  # noqa: E402

SINK = "0x00000000000000000000000000000000000000aa"
TIME_LIMIT_S = 900


CACHE = "64MiB"
CACHE_MIB = 64


def replica(hearth, leader_url, datadir):
    """A replica of `leader_url` on `datadir`: (process, url)."""
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    argv = [hearth, "--http.port", str(port), "-q", "--cache.db", CACHE, "--datadir", datadir,
            "--follow", leader_url, "--follow.poll-ms", "2"]
    return start(argv, url), url


def head(url):
    return int(rpc(url, "eth_blockNumber", []), 16)


def new_leader(hearth, work, name):
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    proc = start([hearth, "--http.port", str(port), "-q", "--cache.db", CACHE,
                  "--datadir", os.path.join(work, name)], url)
    sender = rpc(url, "eth_accounts", [])[0]
    for _ in range(200):
        rpc(url, "eth_sendTransaction", [{"from": sender, "to": SINK, "value": "0x1"}])
    return proc, url


class Sampler:
    """Peak RSS of a process, and progress lines every 5 s."""

    def __init__(self, label, pid, url, target):
        self.label, self.pid, self.url, self.target = label, pid, url, target
        self.began = time.monotonic()
        self.peak, self.rss, self.last_print = 0, 0, 0.0

    def sample(self):
        self.rss = status_kib(self.pid, "VmRSS")
        self.peak = max(self.peak, status_kib(self.pid, "VmHWM"))
        elapsed = time.monotonic() - self.began
        if elapsed - self.last_print >= 5:
            print(f"  {self.label}: block {head(self.url)} of {self.target}, "
                  f"RSS {self.rss // 1024} MiB ({elapsed:.0f} s)", file=sys.stderr)
            self.last_print = elapsed
        if elapsed > TIME_LIMIT_S:
            sys.exit(f"{self.label}: not done within {TIME_LIMIT_S} s")

    def row(self, behind):
        seconds = time.monotonic() - self.began
        return {"label": self.label, "behind": behind, "seconds": seconds,
                "blocks_per_s": self.target / seconds, "peak_mib": self.peak / 1024,
                "end_mib": self.rss / 1024}


def near_run(hearth, work, length):
    """The replica follows live, at most 10 blocks behind."""
    leader, leader_url = new_leader(hearth, work, "leader-near")
    proc, url = replica(hearth, leader_url, os.path.join(work, "near"))
    try:
        sampler = Sampler("near", proc.pid, url, length)
        next_sample = 0.0
        while head(leader_url) < length:
            rpc(leader_url, "anvil_mine", [hex(min(10, length - head(leader_url)))])
            wanted = head(leader_url)
            while head(url) < wanted:
                time.sleep(0.001)
            if time.monotonic() >= next_sample:
                sampler.sample()
                next_sample = time.monotonic() + 0.5
        sampler.sample()
        return sampler.row(10)
    finally:
        for p in (proc, leader):
            p.kill()
            p.wait()


def far_run(hearth, work, length):
    """A fresh replica starts once the leader holds the whole chain."""
    leader, leader_url = new_leader(hearth, work, "leader-far")
    rpc(leader_url, "anvil_mine", [hex(length - 200)])
    proc, url = replica(hearth, leader_url, os.path.join(work, "far"))
    try:
        sampler = Sampler("far", proc.pid, url, length)
        while head(url) < length:
            sampler.sample()
            time.sleep(0.5)
        sampler.sample()
        ours = rpc(url, "eth_getBlockByNumber", [hex(length), False])["hash"]
        theirs = rpc(leader_url, "eth_getBlockByNumber", [hex(length), False])["hash"]
        if ours != theirs:
            sys.exit(f"block {length}: replica {ours}, leader {theirs}")
        return sampler.row(length)
    finally:
        for p in (proc, leader):
            p.kill()
            p.wait()


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--hearth", default="target/release/hearth")
    parser.add_argument("--length", type=int, default=30_000)
    args = parser.parse_args()
    work = tempfile.mkdtemp(prefix="replica-catchup-")
    try:
        near = near_run(args.hearth, work, args.length)
        far = far_run(args.hearth, work, args.length)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print(f"{'run':>5} {'most behind':>12} {'seconds':>8} {'blocks/s':>9} "
          f"{'peak RSS MiB':>13} {'RSS at end MiB':>15}")
    for r in (near, far):
        print(f"{r['label']:>5} {r['behind']:>12} {r['seconds']:>8.1f} {r['blocks_per_s']:>9.0f} "
              f"{r['peak_mib']:>13.1f} {r['end_mib']:>15.1f}")
    if far["peak_mib"] > near["peak_mib"] * 1.1 + 16:
        sys.exit(f"FAIL: peak RSS {far['peak_mib']:.0f} MiB {far['behind']} behind against "
                 f"{near['peak_mib']:.0f} MiB at most {near['behind']} behind")
    print(f"PASS: {far['behind']} blocks behind peaks within 10% of at most "
          f"{near['behind']} behind, the same chain written")


if __name__ == "__main__":
    main()
