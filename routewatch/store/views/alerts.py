"""The alerts as ``GET /alerts`` lists them (with their acknowledgement state), newest first,
a page at a time; and the open alerts counted for the metrics."""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

from routewatch.store.store import Store, alert_row
from routewatch.store.views.cursors import NOT_OURS, decode, encode

__all__ = [
    "AlertFilter",
    "alert",
    "alerts",
    "decode_cursor",
    "encode_cursor",
    "open_alert_counts",
    "open_alerts",
    "paging_alerts",
    "silenced_by",
]


@dataclass(frozen=True)
class AlertFilter:
    """Filters of ``GET /alerts``; ``since``/``until`` select alerts active in that window."""

    state: str | None = None
    kind: str | None = None
    severity: str | None = None
    cluster: str | None = None
    topic: str | None = None
    broker: str | None = None
    since: int | None = None
    until: int | None = None


def encode_cursor(opened_at: int, alert_id: str) -> str:
    return encode([opened_at, alert_id])


def decode_cursor(cursor: str) -> tuple[int, str]:
    """The position a cursor names; ValueError when it is not one this API made."""
    try:
        opened_at, alert_id = decode(cursor)
    except (ValueError, TypeError):
        raise ValueError(NOT_OURS) from None
    if not isinstance(opened_at, int) or not isinstance(alert_id, str):
        raise ValueError(NOT_OURS)
    return opened_at, alert_id


def _where(f: AlertFilter) -> tuple[str, list[Any]]:
    clauses, args = ["1 = 1"], []
    for column in ("state", "kind", "severity", "cluster", "topic", "broker"):
        value = getattr(f, column)
        if value is not None:
            clauses.append(f"a.{column} = ?")
            args.append(value)
    if f.until is not None:
        clauses.append("a.opened_at < ?")
        args.append(f.until)
    if f.since is not None:
        clauses.append("(a.resolved_at IS NULL OR a.resolved_at >= ?)")
        args.append(f.since)
    return " AND ".join(clauses), args


_SELECT = (
    "SELECT a.*, k.acked_at, k.acked_by, k.silenced_until FROM alerts a "
    "LEFT JOIN alert_acks k ON k.alert_id = a.id"
)


def alerts(
    store: Store, f: AlertFilter, *, limit: int, cursor: str | None = None
) -> tuple[list[dict[str, Any]], int, str | None]:
    """Matching alerts, newest first: a page, the total count, and the next page's cursor."""
    where, args = _where(f)
    total = store.db.execute(f"SELECT COUNT(*) FROM alerts a WHERE {where}", args).fetchone()[0]
    page_where, page_args = where, list(args)
    if cursor is not None:
        opened_at, alert_id = decode_cursor(cursor)
        page_where += " AND (a.opened_at < ? OR (a.opened_at = ? AND a.id < ?))"
        page_args += [opened_at, opened_at, alert_id]
    rows = store.db.execute(
        f"{_SELECT} WHERE {page_where} ORDER BY a.opened_at DESC, a.id DESC LIMIT ?",
        [*page_args, limit + 1],
    ).fetchall()
    page = _with_silences(store, [alert_row(r) for r in rows[:limit]])
    following = encode_cursor(page[-1]["opened_at"], page[-1]["id"]) if len(rows) > limit else None
    return page, total, following


def alert(store: Store, alert_id: str) -> dict[str, Any] | None:
    row = store.db.execute(f"{_SELECT} WHERE a.id = ?", (alert_id,)).fetchone()
    return None if row is None else _with_silences(store, [alert_row(row)])[0]


def open_alerts(store: Store) -> list[dict[str, Any]]:
    """Every open alert with its acknowledgement state, oldest first."""
    rows = store.db.execute(f"{_SELECT} WHERE a.state = 'open' ORDER BY a.opened_at, a.id")
    return [alert_row(r) for r in rows]


def silenced_by(
    store: Store, alerts: list[dict[str, Any]], now_ms: int
) -> dict[str, list[dict[str, Any]]]:
    """The silences that hold each of ``alerts`` (rows with ``silenced_until``) at ``now_ms``:
    routewatch's own, then each Alertmanager's, soonest to end first (one an Alertmanager
    holds only because routewatch made it from its own is not listed twice)."""
    out: dict[str, list[dict[str, Any]]] = {}
    for a in alerts:
        until = a.get("silenced_until")
        if until is not None and until > now_ms:
            out.setdefault(a["id"], []).append(
                {
                    "source": "routewatch",
                    "id": None,
                    "until": until,
                    "by": a.get("acked_by"),
                    "comment": None,
                }
            )
    ids = [a["id"] for a in alerts]
    for start in range(0, len(ids), 500):
        chunk = ids[start : start + 500]
        marks = ", ".join("?" * len(chunk))
        rows = store.db.execute(
            "SELECT DISTINCT alert_id, silence_id, ends_at, created_by, comment "
            f"FROM alertmanager_silences WHERE ours = 0 AND ends_at > ? AND alert_id IN ({marks}) "
            "ORDER BY ends_at, silence_id",
            [now_ms, *chunk],
        )
        for r in rows:
            out.setdefault(r["alert_id"], []).append(
                {
                    "source": "alertmanager",
                    "id": r["silence_id"],
                    "until": r["ends_at"],
                    "by": r["created_by"],
                    "comment": r["comment"],
                }
            )
    return out


def paging_alerts(store: Store, now_ms: int) -> list[dict[str, Any]]:
    """The open alerts that no silence holds at ``now_ms``, oldest first: those that page."""
    rows = open_alerts(store)
    held = silenced_by(store, rows, now_ms)
    return [r for r in rows if r["id"] not in held]


def _with_silences(store: Store, rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    found = silenced_by(store, rows, int(time.time() * 1000))
    for r in rows:
        r["silenced_by"] = found.get(r["id"], [])
    return rows


def open_alert_counts(store: Store) -> list[tuple[str, str, int]]:
    """``(kind, severity, count)`` of the open alerts, by kind and severity."""
    rows = store.db.execute(
        "SELECT kind, severity, COUNT(*) FROM alerts WHERE state = 'open' "
        "GROUP BY kind, severity ORDER BY kind, severity"
    )
    return [(kind, severity, n) for kind, severity, n in rows]
