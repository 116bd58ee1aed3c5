"""The alerts as ``GET /alerts`` lists them (with their acknowledgement state), newest first,
a page at a time; and the open alerts counted for the metrics."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from routewatch.store.store import Store, alert_row
from routewatch.store.views.cursors import NOT_OURS, decode, encode

__all__ = ["AlertFilter", "alert", "alerts", "decode_cursor", "encode_cursor", "open_alert_counts"]


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
    page = [alert_row(r) for r in rows[:limit]]
    following = encode_cursor(page[-1]["opened_at"], page[-1]["id"]) if len(rows) > limit else None
    return page, total, following


def alert(store: Store, alert_id: str) -> dict[str, Any] | None:
    row = store.db.execute(f"{_SELECT} WHERE a.id = ?", (alert_id,)).fetchone()
    return None if row is None else alert_row(row)


def open_alert_counts(store: Store) -> list[tuple[str, str, int]]:
    """``(kind, severity, count)`` of the open alerts, by kind and severity."""
    rows = store.db.execute(
        "SELECT kind, severity, COUNT(*) FROM alerts WHERE state = 'open' "
        "GROUP BY kind, severity ORDER BY kind, severity"
    )
    return [(kind, severity, n) for kind, severity, n in rows]
