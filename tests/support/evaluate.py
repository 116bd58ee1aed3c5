"""``routewatch evaluate --json`` as the tests run it: an engine, traces, each one's alerts."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import orjson

__all__ = ["evaluate_json"]


def evaluate_json(
    data_dir: Path, engine: str, traces: list[Path]
) -> tuple[dict[str, list[dict[str, Any]]], str]:
    """Run ``routewatch evaluate --engine ENGINE TRACE... --json`` (it must succeed): each
    trace's alerts, by path, and what it wrote on standard error."""
    command = [sys.executable, "-m", "routewatch.cli", "evaluate", "--engine", engine]
    result = subprocess.run(
        [*command, *map(str, traces), "--json"],
        capture_output=True,
        text=True,
        env={**os.environ, "ROUTEWATCH_DATA_DIR": str(data_dir)},
        check=False,
        timeout=900,
    )
    assert result.returncode == 0, result.stderr[-2000:]
    alerts: dict[str, list[dict[str, Any]]] = orjson.loads(result.stdout)
    return alerts, result.stderr
