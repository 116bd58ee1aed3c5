"""``routewatch reset`` as an operator meets it: a checkpoint written by the design before the
state buckets (the benchmarks' baseline, c062ce8, run from its own code) stops today's job with
one sentence naming the reset command; the command lists before it deletes, waits for the job
to be gone (at once for a job that recorded its stop), and after it the job starts over and
raises the trace's alerts."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from benchmarks.revisions import BASELINE, checkout, environment, stream_command
from emitter.scenarios import SCENARIOS
from routewatch.store import StoreError, open_store
from routewatch.testing.processes import wait_for
from streaming.job.reset import RESET_COMMAND
from tests.support.traces import expected, shape, write_trace

pytestmark = [pytest.mark.slow, pytest.mark.spark]

SCENARIO = "broker-dies"


def _env(data: Path, tree: Path | None = None) -> tuple[dict[str, str], Path]:
    env, cwd = environment(tree)
    return env | {"ROUTEWATCH_DATA_DIR": str(data), "ROUTEWATCH_TRIGGER_INTERVAL_S": "1"}, cwd


def _alerts(data: Path) -> list[tuple[object, ...]]:
    if not (data / "routewatch.db").exists():
        return []
    store = open_store(f"sqlite:///{data / 'routewatch.db'}", readonly=True)
    try:
        return sorted(shape(a) for a in store.alerts())
    except StoreError:  # (the job has created the file and not migrated it yet)
        return []
    finally:
        store.close()


def _stream_until_alerted(data: Path, tree: Path | None, log: Path) -> None:
    """Run ``tree``'s job (None: this checkout's) until it stored the trace's alerts, then stop
    it as an operator does (SIGTERM)."""
    env, cwd = _env(data, tree)
    with log.open("wb") as out:
        job = subprocess.Popen(
            stream_command(tree, "--source", "spool"),
            env=env,
            cwd=cwd,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        try:

            def alerted() -> bool:
                if job.poll() is not None:
                    raise AssertionError(log.read_text()[-3000:])
                return _alerts(data) == expected(SCENARIO)

            wait_for(alerted, 300, f"the job of {tree or 'this checkout'} raising the alerts")
            job.send_signal(signal.SIGTERM)
            assert job.wait(120) == 0, log.read_text()[-3000:]
        finally:
            if job.poll() is None:
                os.killpg(job.pid, signal.SIGKILL)
                job.wait()


def _routewatch(data: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env, cwd = _env(data)
    return subprocess.run(
        [sys.executable, "-m", "routewatch.cli", *args],
        env=env,
        cwd=cwd,
        capture_output=True,
        text=True,
        check=False,
        timeout=600,
    )


def test_a_checkpoint_of_the_design_before_is_refused_naming_the_reset_that_starts_over(
    tmp_path: Path,
) -> None:
    data = tmp_path / "data"
    write_trace(SCENARIOS[SCENARIO].run(seed=1), data / "spool" / "trace.jsonl")
    _stream_until_alerted(data, checkout(BASELINE), tmp_path / "baseline.log")
    checkpoint = data / "checkpoints" / "spool"

    refused = _routewatch(data, "stream", "--source", "spool")

    assert refused.returncode == 2
    sentence = refused.stderr.splitlines()[-1]
    assert sentence.startswith(f"routewatch: the checkpoint {checkpoint} holds state in layout ")
    assert f"reset the job with {RESET_COMMAND}, which deletes" in sentence
    assert sentence.endswith(".") and sentence.count(". ") == 0

    listed = _routewatch(data, "reset")
    assert listed.returncode == 2
    assert listed.stdout.splitlines() == [
        "routewatch reset would delete:",
        f"  the store {data / 'routewatch.db'} (with its -wal and -shm files)",
        f"  the checkpoint {checkpoint}",
    ]
    assert listed.stderr.startswith(  # (the baseline's job reported moments ago)
        "routewatch: nothing was deleted: a routewatch job reported to the store at "
    )
    assert listed.stderr.endswith(
        f"so it may still run: stop every routewatch stream, then run {RESET_COMMAND} to "
        "delete these.\n"
    )
    assert checkpoint.is_dir() and _alerts(data) == expected(SCENARIO)

    # the baseline's job reported to the store moments ago, when it stopped
    waited = _routewatch(data, "reset", "--yes")
    assert waited.returncode == 2
    assert waited.stderr.startswith("routewatch: a routewatch job reported to the store at ")
    assert waited.stderr.endswith("(or add --force if none runs).\n")
    assert checkpoint.is_dir()

    reset = _routewatch(data, "reset", "--yes", "--force")
    assert reset.returncode == 0, reset.stderr[-2000:]
    assert reset.stdout.splitlines()[0] == f"deleted the file {data / 'routewatch.db'}"
    assert reset.stdout.splitlines()[-1] == f"deleted the checkpoint {checkpoint}"
    assert not checkpoint.exists() and not list(data.glob("routewatch.db*"))
    assert (data / "spool" / "trace.jsonl").is_file()  # (the input stays)

    _stream_until_alerted(data, None, tmp_path / "after.log")
    assert _alerts(data) == expected(SCENARIO)

    # this checkout's job recorded its stop in the store: a reset need not wait, nor force
    again = _routewatch(data, "reset", "--yes")
    assert again.returncode == 0, again.stderr[-2000:]
    assert not (data / "checkpoints" / "spool").exists()
