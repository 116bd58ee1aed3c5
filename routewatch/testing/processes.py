"""For tests that start servers: free loopback ports, waiting on conditions, stopping by PID."""

from __future__ import annotations

import contextlib
import ipaddress
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import httpx


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on right now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def wait_for(
    condition: Callable[[], bool], timeout: float, what: str, interval: float = 0.1
) -> None:
    """Poll ``condition`` until it is true, or fail after ``timeout`` seconds naming ``what``."""
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise TimeoutError(f"{what} did not happen within {timeout:.0f} s")
        time.sleep(interval)


def stop(proc: subprocess.Popen[bytes], timeout: float = 30) -> None:
    """Stop a process this test started, by its PID: SIGTERM, then SIGKILL if it lingers."""
    if proc.poll() is not None:
        return
    with contextlib.suppress(ProcessLookupError):
        os.kill(proc.pid, signal.SIGTERM)
    try:
        proc.wait(timeout)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):
            os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout)


def start_routewatch(
    argv: list[str], env: dict[str, str], log: Path, *, new_session: bool = False
) -> subprocess.Popen[bytes]:
    """``routewatch ARGV`` in this interpreter, its output (both streams) appended to ``log``;
    with ``new_session``, in a process group of its own (its PID is the group's id), so that it
    and every process it starts (Spark's JVM, Python workers) can be signalled together."""
    with log.open("ab") as out:
        return subprocess.Popen(
            [sys.executable, "-m", "routewatch.cli", *argv],
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=new_session,
        )


def run_routewatch(
    argv: list[str], env: dict[str, str], timeout: float = 120
) -> subprocess.CompletedProcess[str]:
    """``routewatch ARGV`` in this interpreter, run to its end; its output captured as text."""
    return subprocess.run(
        [sys.executable, "-m", "routewatch.cli", *argv],
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
        stdin=subprocess.DEVNULL,
        check=False,
    )


def group_alive(pgid: int) -> bool:
    """True while any process of the group ``pgid`` exists."""
    return _signal_reaches(os.killpg, pgid)


def pid_alive(pid: int) -> bool:
    """True while the process ``pid`` exists."""
    return _signal_reaches(os.kill, pid)


def _signal_reaches(send: Callable[[int, int], None], target: int) -> bool:
    try:
        send(target, 0)  # signal 0: only whether the target exists
    except ProcessLookupError:
        return False
    return True


def api_answers(url: str, proc: subprocess.Popen[bytes], log: Path) -> bool:
    """True once the API at ``url`` answers ``/healthz``; fails with its log if it exited."""
    assert proc.poll() is None, log.read_text(errors="replace")[-3000:]
    try:
        return httpx.get(f"{url}/healthz", timeout=1).status_code == 200
    except httpx.HTTPError:
        return False


def listening_addresses(pid: int) -> set[tuple[str, int]]:
    """The TCP addresses the process ``pid`` listens on, as ``(address, port)``, read from
    ``/proc`` (its sockets' inodes, then the kernel's TCP tables): what ``ss -ltnp`` shows for
    it. An IPv4-mapped IPv6 address is given as its IPv4 address."""
    inodes = set()
    for fd in Path(f"/proc/{pid}/fd").iterdir():
        with contextlib.suppress(OSError):
            target = os.readlink(fd)
            if target.startswith("socket:["):
                inodes.add(target[len("socket:[") : -1])
    found = set()
    for table, width in (("tcp", 8), ("tcp6", 32)):
        with contextlib.suppress(FileNotFoundError), open(f"/proc/{pid}/net/{table}") as f:
            next(f)
            for line in f:
                fields = line.split()
                local, state, inode = fields[1], fields[3], fields[9]
                if state != "0A" or inode not in inodes:  # 0A: LISTEN
                    continue
                hex_addr, hex_port = local.split(":")
                found.add((_proc_address(hex_addr, width), int(hex_port, 16)))
    return found


def _proc_address(hex_addr: str, width: int) -> str:
    """An address as /proc/net/tcp{,6} writes it: 32-bit words in the host's (little-endian)
    byte order."""
    raw = b"".join(bytes.fromhex(hex_addr[i : i + 8])[::-1] for i in range(0, width, 8))
    if len(raw) == 16 and raw[:12] == b"\0" * 10 + b"\xff\xff":
        raw = raw[12:]
    return str(ipaddress.ip_address(raw))
