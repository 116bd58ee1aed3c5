from __future__ import annotations

import subprocess
import sys
from importlib.metadata import entry_points

from routewatch.cli import COMMAND_GROUP, build_parser


def test_help_lists_exactly_the_installed_commands() -> None:
    installed = sorted(ep.name for ep in entry_points(group=COMMAND_GROUP))

    result = subprocess.run(
        [sys.executable, "-m", "routewatch.cli", "--help"],
        capture_output=True,
        text=True,
        check=True,
    )

    listed = build_parser()._subparsers._group_actions[0].choices  # type: ignore[union-attr]
    assert sorted(listed) == installed
    for name in installed:
        assert name in result.stdout


def test_no_command_prints_usage_and_exits_2() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "routewatch.cli"], capture_output=True, text=True, check=False
    )

    assert result.returncode == 2
    assert "usage: routewatch" in result.stdout
