"""The catalogue's small cases (tests/cases/README.md) through ``routewatch evaluate``: the Spark
job, with its default lateness bound, ends each with exactly the alerts listed."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import orjson
import pytest

from tests.support.cases import CASES, CASES_DIR, expected, shape

pytestmark = pytest.mark.spark


def test_evaluate_ends_every_case_with_exactly_its_alerts(tmp_path: Path) -> None:
    traces = [CASES_DIR / name for name in CASES]

    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "routewatch.cli",
            "evaluate",
            "--engine",
            "spark",
            *map(str, traces),
            "--json",
        ],
        capture_output=True,
        text=True,
        env={**os.environ, "ROUTEWATCH_DATA_DIR": str(tmp_path / "data")},
        check=False,
        timeout=600,
    )

    assert result.returncode == 0, result.stderr[-2000:]
    out = orjson.loads(result.stdout)
    got = {Path(trace).name: sorted(map(shape, alerts)) for trace, alerts in out.items()}
    assert got == {name: expected(name) for name in CASES}
