"""The catalogue's small cases (tests/cases/README.md) through ``routewatch evaluate``: the Spark
job, with its default lateness bound, ends each with exactly the alerts listed."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.cases import CASES, CASES_DIR, expected, shape
from tests.support.evaluate import evaluate_json

pytestmark = pytest.mark.spark


def test_evaluate_ends_every_case_with_exactly_its_alerts(tmp_path: Path) -> None:
    out, _ = evaluate_json(tmp_path / "data", "spark", [CASES_DIR / name for name in CASES])

    got = {Path(trace).name: sorted(map(shape, alerts)) for trace, alerts in out.items()}
    assert got == {name: expected(name) for name in CASES}
