"""The loopback-bind library the RocketMQ servers of the harness run with: a wildcard bind lands
on 127.0.0.1, a connection to any address but loopback is refused in the process, and loopback
works as ever. Checked in a Python child with the library preloaded."""

from __future__ import annotations

import os
import subprocess
import sys

from routewatch.testing.loopback import loopback_bind_library

CHILD = """
import socket, sys, time
server = socket.socket()
server.bind(("0.0.0.0", 0))
server.listen()
host, port = server.getsockname()
print("bound", host)
with socket.create_connection(("127.0.0.1", port), timeout=5):
    print("loopback connected")
for target in sys.argv[1:]:
    # a listener there (an explicit address, which the library leaves alone) that a
    # connection would reach without the library; it accepts nothing and lives a moment
    there = socket.socket()
    there.bind((target, 0))
    there.listen()
    started = time.monotonic()
    try:
        socket.create_connection(there.getsockname(), timeout=5).close()
        print("connected", target)
    except ConnectionRefusedError:
        print("refused", target, time.monotonic() - started < 1)
    there.close()
"""


def _own_addresses() -> list[str]:
    """This host's own non-loopback IPv4 addresses (a connection there stays on the machine)."""
    try:
        out = subprocess.run(["hostname", "-I"], capture_output=True, text=True, check=False)
    except OSError:
        return []
    return [a for a in out.stdout.split() if "." in a and not a.startswith("127.")]


def test_binds_land_on_loopback_and_connects_elsewhere_are_refused() -> None:
    own = _own_addresses()
    env = {**os.environ, "LD_PRELOAD": str(loopback_bind_library())}
    result = subprocess.run(
        [sys.executable, "-c", CHILD, *own], env=env, capture_output=True, text=True, timeout=60
    )

    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[:2] == ["bound 127.0.0.1", "loopback connected"]
    # refused at once, in the process, though a listener waited there
    assert lines[2:] == [f"refused {a} True" for a in own]
