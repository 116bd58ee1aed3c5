"""``routewatch evaluate --engine local`` and ``--engine spark`` give the same alerts, field for
field but the wall clock's ``detected_at``, on every scenario of the emitter and every case of
tests/cases/."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from emitter.scenarios import SCENARIOS
from tests.support.cases import CASES, CASES_DIR
from tests.support.evaluate import evaluate_json
from tests.support.traces import write_trace

pytestmark = pytest.mark.spark


def _alerts(tmp_path: Path, engine: str, traces: list[Path]) -> dict[str, list[dict[str, Any]]]:
    out, stderr = evaluate_json(tmp_path / engine, engine, traces)
    assert stderr.splitlines()[-1].startswith(f"routewatch evaluate: engine {engine}: ")
    return {
        trace: sorted(
            ({k: v for k, v in a.items() if k != "detected_at"} for a in alerts),
            key=lambda a: str(a["id"]),
        )
        for trace, alerts in out.items()
    }


def test_both_engines_give_the_same_alerts_on_every_scenario_and_case(tmp_path: Path) -> None:
    traces = [CASES_DIR / name for name in CASES]
    for name, scenario in SCENARIOS.items():
        traces.append(tmp_path / f"{name}.jsonl")
        write_trace(scenario.run(seed=1), traces[-1])

    local = _alerts(tmp_path, "local", traces)
    spark = _alerts(tmp_path, "spark", traces)

    assert list(local) == [str(t) for t in traces]
    assert sum(map(len, local.values())) > len(SCENARIOS)  # (alerts, not empty lists)
    assert local == spark
