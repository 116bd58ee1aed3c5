"""The catalogue's small cases (tests/cases/): each trace's arrivals and the alerts it must end
with, in the shape both the in-process runner and ``routewatch evaluate`` give them."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson

__all__ = ["CASES", "CASES_DIR", "T0", "case_arrivals", "expected", "shape"]

CASES_DIR = Path(__file__).resolve().parents[1] / "cases"
T0 = 1_767_225_600_000  # 2026-01-01T00:00:00Z, the cases' zero
_EXPECTED: dict[str, list[dict[str, Any]]] = orjson.loads(
    (CASES_DIR / "expected.json").read_bytes()
)
CASES = sorted(_EXPECTED)

Shape = tuple[Any, ...]


def case_arrivals(name: str) -> list[tuple[str, int, int | None, str]]:
    """``(event_id, ts, seq, raw)`` of every line of a case, in file order."""
    out = []
    for line in (CASES_DIR / name).read_text().splitlines():
        event = orjson.loads(line)
        out.append((event["event_id"], event["ts"], event.get("seq"), line))
    return out


def _seconds(ms: int | None) -> float | None:
    return None if ms is None else (ms - T0) / 1000


def shape(alert: dict[str, Any]) -> Shape:
    """An alert (as ``Alert.to_dict`` gives it) as the cases fix it: kind, key, state, cause and
    its instants in seconds after T0."""
    return (
        alert["kind"],
        alert["cluster"],
        alert["topic"],
        alert["broker"],
        alert["broker_id"],
        alert["state"],
        alert["cause"],
        _seconds(alert["opened_at"]),
        _seconds(alert["resolved_at"]),
    )


def expected(name: str) -> list[Shape]:
    """The alerts a case must end with, sorted."""
    return sorted(
        (
            a["kind"],
            a["cluster"],
            a["topic"],
            a["broker"],
            a["broker_id"],
            a["state"],
            a["cause"],
            a["opened"],
            a["resolved"],
        )
        for a in _EXPECTED[name]
    )
