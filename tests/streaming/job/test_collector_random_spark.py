"""Forty of the random watched-cluster traces (tests/support/collector_traces.py) through
``routewatch evaluate``, the Spark job: the same alerts as the in-process runner, field for
field but the wall clock's ``detected_at``."""

from __future__ import annotations

from pathlib import Path

import pytest

from streaming.engine import run_stream
from tests.support.collector_traces import collector_trace
from tests.support.evaluate import evaluate_json

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

    out, _ = evaluate_json(tmp_path / "data", "spark", [Path(p) for p in expected])

    got = {
        path: sorted(map(_without_wall_clock, alerts), key=lambda a: str(a["id"]))
        for path, alerts in out.items()
    }
    assert got == expected
