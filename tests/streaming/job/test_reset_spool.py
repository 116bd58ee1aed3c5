"""``routewatch reset --spool``: a data directory a replay wrote, emptied so that ``collect``
can watch a live cluster from it; a dry run with nothing running lists and exits 0."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from emitter.scenarios import SCENARIOS
from routewatch.testing.processes import free_port
from tests.support.traces import write_trace


def _routewatch(data: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "routewatch.cli", *args],
        env={**os.environ, "ROUTEWATCH_DATA_DIR": str(data)},
        capture_output=True,
        text=True,
        check=False,
        timeout=300,
    )


def test_after_a_replay_reset_with_the_spool_lets_collect_use_the_data_directory(
    tmp_path: Path,
) -> None:
    data, trace = tmp_path / "data", tmp_path / "trace.jsonl"
    write_trace(SCENARIOS["broker-dies"].run(seed=1), trace)
    assert (
        _routewatch(data, "replay", str(trace), "--to", "spool", "--speed", "max").returncode == 0
    )
    collect = ("collect", "--namesrv", f"127.0.0.1:{free_port()}", "--once")
    refused = _routewatch(data, *collect)
    assert refused.returncode == 2 and "routewatch reset --spool --yes" in refused.stderr

    listed = _routewatch(data, "reset", "--spool")  # a dry run, nothing running

    assert listed.returncode == 0, listed.stderr
    files = sorted(p for p in (data / "spool").iterdir() if p.is_file())
    assert listed.stdout.splitlines() == [
        "routewatch reset would delete:",
        f"  the spool's {len(files)} file(s) in {data / 'spool'} (its events and its mark)",
        "nothing was deleted: run routewatch reset --yes --spool to delete these.",
    ]
    assert listed.stderr == ""

    reset = _routewatch(data, "reset", "--spool", "--yes")

    assert reset.returncode == 0, reset.stderr
    assert reset.stdout.splitlines() == [
        f"deleted the spool's {len(files)} file(s) in {data / 'spool'} (its events and its mark)"
    ]
    assert [p for p in (data / "spool").iterdir() if p.is_file()] == []
    watched = _routewatch(data, *collect)
    assert "no NameServer of --namesrv answered" in watched.stderr  # (it took the spool)


def test_a_dry_run_with_nothing_to_delete_says_so_and_exits_0(tmp_path: Path) -> None:
    listed = _routewatch(tmp_path / "data", "reset")

    assert (listed.returncode, listed.stdout) == (
        0,
        "nothing to delete: the job has no checkpoint and no store yet\n",
    )
