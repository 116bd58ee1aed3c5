"""``routewatch sandbox``'s subcommands without a sandbox running, and before one starts: each
says what to do in one sentence (exit status 2); no RocketMQ is started here."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from routewatch.testing.processes import run_routewatch


def _sandbox(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "ROUTEWATCH_DATA_DIR": str(tmp_path)}
    return run_routewatch(["sandbox", *args], env)


@pytest.mark.parametrize(
    "args", [["send", "Orders"], ["admin", "clusterList"], ["break", "kill", "broker-a"]]
)
def test_an_action_without_a_sandbox_says_how_to_start_one(tmp_path: Path, args: list[str]) -> None:
    done = _sandbox(tmp_path, *args)
    assert done.returncode == 2
    assert done.stderr == (
        f"routewatch: no sandbox runs in {tmp_path / 'sandbox'}: start one with `routewatch "
        "sandbox` (in another terminal), or name its directory with --dir.\n"
    )


def test_a_stopped_sandbox_is_told_apart(tmp_path: Path) -> None:
    (tmp_path / "sandbox").mkdir()
    gone = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"],
        capture_output=True,
        text=True,
        check=True,
    )
    (tmp_path / "sandbox" / "sandbox.json").write_text(json.dumps({"pid": int(gone.stdout)}))
    done = _sandbox(tmp_path, "send", "Orders")
    assert done.returncode == 2 and "has stopped (PID" in done.stderr


def test_a_namesrv_port_in_use_stops_the_start_before_anything_is_emptied(tmp_path: Path) -> None:
    keep = tmp_path / "sandbox" / "keep"
    keep.parent.mkdir()
    keep.write_text("a previous sandbox's file")
    with socket.socket() as held:
        held.bind(("127.0.0.1", 0))
        held.listen()
        port = held.getsockname()[1]
        done = _sandbox(tmp_path, "--namesrv-port", str(port), "--namesrvs", "1")
    assert done.returncode == 2 and f"127.0.0.1:{port}" in done.stderr
    assert "Pick free ports with --namesrv-port" in done.stderr
    assert keep.exists()
