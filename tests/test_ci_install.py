"""``.ci/install`` run again, as every start of ``.ci/demo`` runs it: no pip when pyproject.toml
is what the virtualenv was installed from."""

from __future__ import annotations

import subprocess
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def test_a_second_install_runs_no_pip_when_nothing_changed() -> None:
    runs = [
        subprocess.run(
            ["bash", ".ci/install"], cwd=REPO, capture_output=True, text=True, timeout=900
        )
        for _ in range(2)
    ]

    assert [r.returncode for r in runs] == [0, 0], runs[-1].stderr[-2000:]
    assert "pyproject.toml is unchanged: no pip run" in runs[1].stdout
    assert "installing routewatch" not in runs[1].stdout
