"""Starting a node (Hearth or a peer) on a free loopback port for the Python scripts."""

import socket
import subprocess
import sys
import tempfile
import time

from jsonrpc_client import rpc


def free_port():
    """A loopback port nothing listens on now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start(argv, url, tries=300):
    """Starts `argv` and waits (at most `tries` x 50 ms) until `url` answers eth_chainId;
    exits with the end of the node's output when it does not."""
    log = tempfile.TemporaryFile()
    proc = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT)
    for _ in range(tries):
        try:
            rpc(url, "eth_chainId", [])
            return proc
        except OSError:
            if proc.poll() is not None:
                break
            time.sleep(0.05)
    proc.kill()
    log.seek(0)
    sys.exit(f"{argv[0]} did not start:\n{log.read().decode(errors='replace')[-2000:]}")


def status_kib(pid, field):
    """A `kB` field (VmRSS, VmHWM, RssAnon, ...) of /proc/PID/status."""
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    raise RuntimeError(f"no {field} for pid {pid}")
