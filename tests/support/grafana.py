"""The generated Grafana dashboard read back: its panels' queries, template variables filled in."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
METRIC_NAME = re.compile(r"\broutewatch[_:][a-z0-9_:]*[a-z0-9_]")


@dataclass(frozen=True)
class Target:
    panel: str
    ref: str
    expr: str
    instant: bool


def load(path: Path) -> dict[str, Any]:
    board: dict[str, Any] = json.loads(path.read_text())
    return board


def panels(board: dict[str, Any]) -> list[dict[str, Any]]:
    """The dashboard's panels, rows left out."""
    return [p for p in board["panels"] if p["type"] != "row"]


def targets(board: dict[str, Any]) -> list[Target]:
    return [
        Target(p["title"], t["refId"], t["expr"], bool(t.get("instant")))
        for p in panels(board)
        for t in p["targets"]
    ]


def variable_queries(board: dict[str, Any]) -> dict[str, str]:
    return {
        v["name"]: v["query"]["query"] for v in board["templating"]["list"] if v["type"] == "query"
    }


def fill(expr: str, variables: dict[str, str]) -> str:
    """Grafana's interpolation for a Prometheus query: ``$name`` and ``${name}``, longest first."""
    for name in sorted(variables, key=len, reverse=True):
        expr = expr.replace("${" + name + "}", variables[name]).replace("$" + name, variables[name])
    assert "$" not in expr, f"unfilled template variable in {expr!r}"
    return expr


def metric_names(exprs: list[str]) -> set[str]:
    return {name for e in exprs for name in METRIC_NAME.findall(e)}


def documented_metrics(doc: Path = REPO / "docs" / "metrics.md") -> set[str]:
    """Names in the first column of docs/metrics.md's tables (exported metrics and rules)."""
    return set(re.findall(r"^\| `(routewatch[_:][a-z0-9_:]+)` \|", doc.read_text(), re.MULTILINE))
