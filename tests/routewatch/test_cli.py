from __future__ import annotations

import subprocess
import sys
from importlib.metadata import entry_points

from routewatch.cli import COMMAND_GROUP


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


def test_no_command_prints_usage_and_exits_2() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "routewatch.cli"], capture_output=True, text=True, check=False
    )

    assert result.returncode == 2
    assert "usage: routewatch" in result.stdout
