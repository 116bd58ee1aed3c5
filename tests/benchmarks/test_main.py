"""The benchmarks' headline table: every headline figure has a line, recorded or not."""

from __future__ import annotations

import pytest

from benchmarks.__main__ import TARGETS, headline_table
from benchmarks.results import HEADLINE_KEYS


def test_every_headline_figure_has_a_target() -> None:
    assert set(TARGETS) == set(HEADLINE_KEYS)


def test_the_table_prints_every_headline_figure(capsys: pytest.CaptureFixture[str]) -> None:
    headline_table()  # (from the recorded benchmarks/results/latest.json)

    out = capsys.readouterr().out
    assert all(key in out for key in HEADLINE_KEYS)
