from __future__ import annotations

import subprocess
import sys
from importlib.metadata import entry_points
from pathlib import Path

import pytest

from routewatch.cli import COMMAND_GROUP, plain_text

REPO = Path(__file__).resolve().parents[2]
# what reStructuredText markup looks like in a terminal
MARKUP = ("``", ":func:", ":class:", ":mod:", ":meth:", "**")


def test_help_lists_exactly_the_installed_commands() -> None:
    installed = sorted(ep.name for ep in entry_points(group=COMMAND_GROUP))

    result = subprocess.run(
        [sys.executable, "-m", "routewatch.cli", "--help"],
        capture_output=True,
        text=True,
        check=True,
    )

    commands_section = result.stdout.split("commands:", 1)[1]
    listed = sorted(
        line.split()[0]
        for line in commands_section.splitlines()[2:]
        if line.startswith("    ") and not line.startswith("     ")
    )
    assert listed == installed
    for name in installed:
        sub = subprocess.run(
            [sys.executable, "-m", "routewatch.cli", name, "--help"],
            capture_output=True,
            text=True,
            check=False,
        )
        assert sub.returncode == 0, sub.stderr
        assert f"usage: routewatch {name}" in sub.stdout
        assert not [m for m in MARKUP if m in sub.stdout], sub.stdout  # help is plain text


def test_no_command_prints_usage_and_exits_2() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "routewatch.cli"], capture_output=True, text=True, check=False
    )

    assert result.returncode == 2
    assert "usage: routewatch" in result.stdout


@pytest.mark.parametrize(
    "argv",
    [
        ["-m", "benchmarks"],
        ["-m", "benchmarks.api_load"],
        ["-m", "benchmarks.detection_latency"],
        ["-m", "benchmarks.fleet_realtime"],
        ["-m", "benchmarks.replay_rates"],
        ["benchmarks/fleet_generation.py"],
        ["-m", "dashboards"],
    ],
)
def test_the_other_commands_help_is_plain_text_too(argv: list[str]) -> None:
    result = subprocess.run(
        [sys.executable, *argv, "--help"], capture_output=True, text=True, check=True, cwd=REPO
    )

    assert result.stdout.startswith("usage: ")
    assert not [m for m in MARKUP if m in result.stdout], result.stdout


def test_plain_text_takes_markup_and_examples_out_of_a_docstring() -> None:
    doc = """``python -m x``: does :func:`y.z`
    and more.

        python -m x --flag

    **Second.** paragraph.
    """

    assert plain_text(doc) == "python -m x: does y.z and more.\n\nSecond. paragraph."
    assert plain_text(doc, 1) == "python -m x: does y.z and more."
    assert plain_text(None) == ""
