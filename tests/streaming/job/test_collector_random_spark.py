"""Forty of the random watched-cluster traces (tests/support/collector_traces.py) through
``routewatch evaluate``, the Spark job: the same alerts as the in-process runner, field for
field but the wall clock's ``detected_at``."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import orjson
import pytest

from streaming.engine import run_stream
from tests.support.collector_traces import collector_trace

pytestmark = pytest.mark.spark

SEEDS = range(1000, 1040)


def _without_wall_clock(alert: dict[str, object]) -> dict[str, object]:
    return {k: v for k, v in alert.items() if k != "detected_at"}


def test_collector_random_traces_through_evaluate_match_the_runner(tmp_path: Path) -> None:
    expected = {}
    for seed in SEEDS:
        arrivals = collector_trace(seed).arrivals()
        path = tmp_path / f"trace-{seed}.jsonl"
        path.write_text("".join(raw + "\n" for _, _, _, raw in arrivals))
        alerts = run_stream(arrivals, lateness_ms=0).final_alerts()
        expected[str(path)] = sorted(
            (_without_wall_clock(a.to_dict()) for a in alerts), key=lambda a: str(a["id"])
        )

    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "routewatch.cli",
            "evaluate",
            "--engine",
            "spark",
            *expected,
            "--json",
        ],
        capture_output=True,
        text=True,
        env={**os.environ, "ROUTEWATCH_DATA_DIR": str(tmp_path / "data")},
        check=False,
        timeout=900,
    )

    assert result.returncode == 0, result.stderr[-2000:]
    got = {
        path: sorted(map(_without_wall_clock, alerts), key=lambda a: str(a["id"]))
        for path, alerts in orjson.loads(result.stdout).items()
    }
    assert got == expected
