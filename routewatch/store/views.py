"""Read-only views over the store, shaped for the API and the metrics collector."""

from __future__ import annotations

import base64
from dataclasses import dataclass
from typing import Any

import orjson

from routewatch.rocketmq import is_system_topic
from routewatch.store.store import Store

__all__ = [
    "AlertFilter",
    "alert",
    "alerts",
    "broker_views",
    "decode_cursor",
    "route_windows",
    "set_ack",
    "topic_views",
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
    return base64.urlsafe_b64encode(orjson.dumps([opened_at, alert_id])).decode()


def decode_cursor(cursor: str) -> tuple[int, str]:
    """The position a cursor names; ValueError when it is not one this API made."""
    try:
        opened_at, alert_id = orjson.loads(base64.urlsafe_b64decode(cursor.encode()))
    except (ValueError, TypeError, orjson.JSONDecodeError):
        raise ValueError("the cursor is not one this API returned") from None
    if not isinstance(opened_at, int) or not isinstance(alert_id, str):
        raise ValueError("the cursor is not one this API returned")
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


def _row(row: Any) -> dict[str, Any]:
    out = dict(row)
    out["evidence"] = orjson.loads(out["evidence"])
    return out


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
    page = [_row(r) for r in rows[:limit]]
    following = encode_cursor(page[-1]["opened_at"], page[-1]["id"]) if len(rows) > limit else None
    return page, total, following


def alert(store: Store, alert_id: str) -> dict[str, Any] | None:
    row = store.db.execute(f"{_SELECT} WHERE a.id = ?", (alert_id,)).fetchone()
    return None if row is None else _row(row)


def broker_views(store: Store) -> list[dict[str, Any]]:
    """One entry per broker (cluster, name, id): liveness and last heartbeat per NameServer."""
    out: dict[tuple[str, str, int], dict[str, Any]] = {}
    for r in store.brokers():
        key = (r["cluster"], r["broker"], r["broker_id"])
        view = out.setdefault(
            key,
            {
                "cluster": r["cluster"],
                "broker": r["broker"],
                "broker_id": r["broker_id"],
                "addr": r["addr"],
                "live": False,
                "last_heartbeat": r["last_heartbeat"],
                "auto_create_topic_enable": None,
                "tbw102": r["template"],
                "namesrvs": [],
            },
        )
        view["namesrvs"].append(
            {
                "namesrv": r["namesrv"],
                "live": bool(r["live"]),
                "last_heartbeat": r["last_heartbeat"],
                "unregistered": bool(r["shutdown"]),
            }
        )
        if r["last_heartbeat"] >= view["last_heartbeat"]:
            view.update(
                last_heartbeat=r["last_heartbeat"],
                addr=r["addr"],
                tbw102=r["template"],
                auto_create_topic_enable=None
                if r["auto_create"] is None
                else bool(r["auto_create"]),
            )
        view["live"] = view["live"] or bool(r["live"])
    return list(out.values())


def topic_views(store: Store, cluster: str | None = None) -> list[dict[str, Any]]:
    """Per topic: brokers holding it (live registrations), expected brokers (live masters),
    coverage, per-NameServer views, and whether it was auto-created."""
    every = broker_views(store)
    names: dict[str, set[str]] = {}
    for b in every:
        names.setdefault(b["cluster"], set()).add(b["broker"])
    live = [b for b in every if b["live"]]
    expected: dict[str, set[str]] = {}
    for b in live:
        if b["broker_id"] == 0:
            expected.setdefault(b["cluster"], set()).add(b["broker"])
    auto = {
        (r["cluster"], r["topic"]): r["auto_created_at"]
        for r in store.db.execute("SELECT cluster, topic, auto_created_at FROM topics")
    }
    sql = (
        "SELECT cluster, topic, namesrv, broker, broker_id, read_queue_nums, write_queue_nums, "
        "perm FROM route_intervals WHERE valid_to IS NULL"
    )
    args: list[Any] = []
    if cluster is not None:
        sql, args = sql + " AND cluster = ?", [cluster]
    views: dict[tuple[str, str], dict[str, Any]] = {}
    # topics that had a route, or were auto-created, and have none now: coverage 0
    known = (
        "SELECT DISTINCT cluster, topic FROM route_intervals"
        + (" WHERE cluster = ?" if cluster is not None else "")
        + " UNION SELECT cluster, topic FROM topics"
        + (" WHERE cluster = ?" if cluster is not None else "")
    )
    for c, topic in store.db.execute(known, args * 2):
        views[(c, topic)] = {"cluster": c, "topic": topic, "namesrvs": {}, "brokers": set()}
    for r in store.db.execute(sql + " ORDER BY cluster, topic, namesrv, broker, broker_id", args):
        key = (r["cluster"], r["topic"])
        view = views.setdefault(
            key, {"cluster": r["cluster"], "topic": r["topic"], "namesrvs": {}, "brokers": set()}
        )
        view["namesrvs"].setdefault(r["namesrv"], []).append(
            {
                "broker": r["broker"],
                "broker_id": r["broker_id"],
                "read_queue_nums": r["read_queue_nums"],
                "write_queue_nums": r["write_queue_nums"],
                "perm": r["perm"],
            }
        )
        view["brokers"].add(r["broker"])
    out = []
    for (c, topic), view in views.items():
        wanted = expected.get(c, set())
        holding = view["brokers"] & wanted
        out.append(
            {
                "cluster": c,
                "topic": topic,
                "brokers": sorted(view["brokers"]),
                "expected_brokers": sorted(wanted),
                "coverage": len(holding) / len(wanted) if wanted else None,
                "namesrvs": view["namesrvs"],
                "auto_created": (c, topic) in auto,
                "auto_created_at": auto.get((c, topic)),
                "system": is_system_topic(topic, c, names.get(c, set())),
            }
        )
    return out


def route_windows(
    store: Store, cluster: str, topic: str, since: int, until: int, window_ms: int
) -> list[dict[str, Any]]:
    """The topic's route per window ``[start, start + window)`` from ``since`` to ``until``:
    per NameServer, the brokers whose route interval overlaps the window."""
    rows = store.db.execute(
        "SELECT namesrv, broker, broker_id, valid_from, valid_to FROM route_intervals "
        "WHERE cluster = ? AND topic = ? AND valid_from < ? AND (valid_to IS NULL OR valid_to > ?)",
        (cluster, topic, until, since),
    ).fetchall()
    windows = []
    for start in range(since, until, window_ms):
        end = min(start + window_ms, until)
        per_ns: dict[str, set[str]] = {}
        for r in rows:
            if r["valid_from"] < end and (r["valid_to"] is None or r["valid_to"] > start):
                per_ns.setdefault(r["namesrv"], set()).add(r["broker"])
        windows.append(
            {
                "start": start,
                "end": end,
                "namesrvs": {ns: sorted(b) for ns, b in sorted(per_ns.items())},
                "brokers": sorted(set().union(*per_ns.values())) if per_ns else [],
            }
        )
    return windows


def set_ack(
    store: Store,
    alert_id: str,
    *,
    acked_by: str | None = None,
    silenced_until: int | None = None,
    now_ms: int,
) -> None:
    """Record an acknowledgement or a silence (the API's own table; the job never writes it)."""
    with store.transaction() as db:
        db.execute(
            "INSERT INTO alert_acks (alert_id, acked_at, acked_by, silenced_until, updated_at) "
            "VALUES (?, ?, ?, ?, ?) ON CONFLICT (alert_id) DO UPDATE SET "
            "acked_at = COALESCE(excluded.acked_at, alert_acks.acked_at), "
            "acked_by = COALESCE(excluded.acked_by, alert_acks.acked_by), "
            "silenced_until = COALESCE(excluded.silenced_until, alert_acks.silenced_until), "
            "updated_at = excluded.updated_at",
            (alert_id, now_ms if acked_by is not None else None, acked_by, silenced_until, now_ms),
        )
