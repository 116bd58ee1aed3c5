"""A port in use is one sentence (``routewatch/listen.py``), and the demo says so before it
empties or starts anything."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from routewatch.errors import RoutewatchError
from routewatch.listen import check_can_listen
from routewatch.testing.processes import free_port


def test_a_free_port_passes_and_a_taken_one_is_one_sentence() -> None:
    check_can_listen("127.0.0.1", free_port(), "unused")
    with socket.create_server(("127.0.0.1", 0)) as taken:
        port = taken.getsockname()[1]
        with pytest.raises(RoutewatchError) as raised:
            check_can_listen("127.0.0.1", port, "pick another")
    assert str(raised.value) == (
        f"cannot listen on 127.0.0.1:{port} (Address already in use): pick another."
    )


def test_a_second_demo_on_a_taken_port_stops_before_emptying_the_first_ones(
    tmp_path: Path,
) -> None:
    first = tmp_path / "demo" / "stream.log"  # what the running demo has written
    first.parent.mkdir()
    first.write_text("the first demo's log")
    with socket.create_server(("127.0.0.1", 0)) as taken:
        port = taken.getsockname()[1]
        result = subprocess.run(
            [sys.executable, "-m", "routewatch.cli", "demo", "--port", str(port)],
            capture_output=True,
            text=True,
            env={**os.environ, "ROUTEWATCH_DATA_DIR": str(tmp_path)},
            check=False,
            timeout=60,
        )
    assert result.returncode == 2
    assert result.stderr == (
        f"routewatch: cannot listen on 127.0.0.1:{port} (Address already in use): is another "
        "demo running? Stop it, or pick a free port with --port.\n"
    )
    assert first.read_text() == "the first demo's log"
