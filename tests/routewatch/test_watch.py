"""``routewatch watch`` before it starts anything: the size's settings go only where the caller
set none, a data directory of replayed traces is refused with the way out, and so is a bad
NameServer list or a port in use — each in one sentence, exit status 2, nothing started."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from routewatch.spool_origin import ORIGIN_FILE
from routewatch.testing.processes import run_routewatch
from routewatch.watch import SIZES, child_env


def test_the_small_size_fills_in_only_what_the_caller_left_unset() -> None:
    env = child_env({"ROUTEWATCH_STATE_PARTITIONS": "4", "PATH": "/bin"}, "small", 8123)
    assert env["ROUTEWATCH_STATE_PARTITIONS"] == "4"  # the caller's
    assert env["ROUTEWATCH_SPARK_DRIVER_MEMORY"] == "512m"  # the size's
    assert env["ROUTEWATCH_API_PORT"] == "8123"
    assert env["PYSPARK_PYTHON"] == sys.executable
    fleet = child_env({"PATH": "/bin"}, "fleet", 8000)
    assert not any(key in fleet for key in SIZES["small"])  # the job's own defaults


def _watch(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return run_routewatch(["watch", *args], {**os.environ, "ROUTEWATCH_DATA_DIR": str(tmp_path)})


def test_a_data_directory_of_replayed_traces_is_refused_with_the_way_out(tmp_path: Path) -> None:
    (tmp_path / "spool").mkdir()
    (tmp_path / "spool" / ORIGIN_FILE).write_text("replayed\n")
    done = _watch(tmp_path, "--namesrv", "127.0.0.1:9876")
    assert done.returncode == 2
    assert done.stderr == (
        f"routewatch: the data directory {tmp_path} holds replayed traces (its spool "
        f"{tmp_path / 'spool'} was written by routewatch replay), which must not mix with a live "
        "cluster's events: give watch a directory of its own (ROUTEWATCH_DATA_DIR=/some/dir "
        "routewatch watch ...), or delete what it holds with `routewatch reset --spool --yes`.\n"
    )
    assert not (tmp_path / "watch").exists()  # nothing started


@pytest.mark.parametrize(
    ("namesrv", "says"),
    [
        ("nohost", "'nohost' is not a NameServer address: write each as host:port"),
        ("a:1;a:1", "--namesrv names a NameServer twice (a:1;a:1): name each once."),
    ],
)
def test_a_bad_namesrv_list_is_refused(tmp_path: Path, namesrv: str, says: str) -> None:
    done = _watch(tmp_path, "--namesrv", namesrv)
    assert done.returncode == 2 and says in done.stderr and done.stderr.count("\n") == 1


def test_a_port_in_use_is_refused_before_anything_starts(tmp_path: Path) -> None:
    with socket.socket() as held:
        held.bind(("127.0.0.1", 0))
        held.listen()
        port = held.getsockname()[1]
        done = _watch(tmp_path, "--namesrv", "127.0.0.1:9876", "--port", str(port))
    assert done.returncode == 2
    assert f"127.0.0.1:{port}" in done.stderr and "Pick a free port with --port" in done.stderr
    assert not (tmp_path / "watch").exists()


def test_a_command_imports_its_own_package_alone() -> None:
    """Each child of watch is ``routewatch <command>``: it holds only what that command runs
    (the API's process no Spark, the collector's no FastAPI)."""
    code = (
        "import sys; from routewatch.cli import build_parser; build_parser(only=sys.argv[1]); "
        "print(' '.join(sorted(m for m in ('pyspark', 'fastapi', 'emitter') if m in sys.modules)))"
    )
    loaded = {
        command: subprocess.run(
            [sys.executable, "-c", code, command], capture_output=True, text=True, check=True
        ).stdout.split()
        for command in ("watch", "collect", "api")
    }
    assert loaded == {"watch": [], "collect": ["emitter"], "api": ["fastapi"]}
