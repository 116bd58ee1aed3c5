"""How the job's change rows are written: one function per kind of change, all inside the
batch's write transaction (:meth:`routewatch.store.Store.write_batch`)."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

import orjson

from routewatch.alerts import Alert, StoredAlert
from routewatch.changes import (
    ALERTS_OPENED,
    LATE,
    QUARANTINED,
    BadLine,
    BrokerState,
    ClusterClock,
    Count,
    LateEvent,
    RouteChange,
    TopicCreated,
)
from routewatch.store.backend import Backend

__all__ = ["write_change"]


def write_change(db: Backend, cluster: str | None, change: Any, now: int) -> None:
    """Write one decoded change row of ``cluster``; ``now`` is the batch's wall clock (ms)."""
    _WRITERS[type(change)](db, cluster, change, now)


# the columns of ``alerts``: a stored alert's fields
_ALERT_COLUMNS = tuple(f.name for f in dataclasses.fields(StoredAlert))
_ALERT_UPDATES = ", ".join(
    f"{c} = excluded.{c}" for c in _ALERT_COLUMNS if c not in ("id", "detected_at")
)
_ALERT_UPSERT = (
    f"INSERT INTO alerts ({', '.join(_ALERT_COLUMNS)}) "
    f"VALUES ({', '.join('?' * len(_ALERT_COLUMNS))}) "
    f"ON CONFLICT (id) DO UPDATE SET {_ALERT_UPDATES}"
)


def _write_alert(db: Backend, cluster: str | None, alert: Alert, now: int) -> None:
    found = db.execute("SELECT detected_at FROM alerts WHERE id = ?", (alert.id,)).fetchone()
    stored = StoredAlert.detected(alert, found[0] if found else now)
    values = [getattr(stored, c) for c in _ALERT_COLUMNS]
    # a field that holds an object (the evidence) is kept as its JSON text
    values = [orjson.dumps(v).decode() if isinstance(v, dict) else v for v in values]
    db.execute(_ALERT_UPSERT, values)
    change = "opened" if not found else ("resolved" if alert.state == "resolved" else "updated")
    if not found:
        _add_counter(db, ALERTS_OPENED, alert.kind, alert.cluster, 1)
    db.execute(
        "INSERT INTO alert_log (alert_id, change, at, written_at, alert) VALUES (?, ?, ?, ?, ?)",
        (alert.id, change, alert.updated_at, now, orjson.dumps(stored).decode()),
    )


def _write_route(db: Backend, cluster: str | None, change: RouteChange, now: int) -> None:
    key = (cluster, change.topic, *change.reg)
    db.execute(
        "UPDATE route_intervals SET valid_to = ? WHERE cluster = ? AND topic = ? AND namesrv = ? "
        "AND broker = ? AND broker_id = ? AND valid_to IS NULL",
        (change.at, *key),
    )
    if change.config is not None:
        db.execute(
            "INSERT INTO route_intervals (cluster, topic, namesrv, broker, broker_id, "
            "read_queue_nums, write_queue_nums, perm, valid_from) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (*key, *change.config, change.at),
        )


def _write_broker(db: Backend, cluster: str | None, s: BrokerState, now: int) -> None:
    db.execute(
        "INSERT INTO brokers (cluster, namesrv, broker, broker_id, addr, live, shutdown, "
        "auto_create, template, last_heartbeat) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?) "
        "ON CONFLICT (cluster, namesrv, broker, broker_id) DO UPDATE SET addr = excluded.addr, "
        "live = excluded.live, shutdown = excluded.shutdown, auto_create = excluded.auto_create, "
        "template = excluded.template, last_heartbeat = excluded.last_heartbeat",
        (
            cluster,
            *s.reg,
            s.addr,
            s.live,
            s.shutdown,
            s.auto_create,
            s.template,
            s.last_heartbeat,
        ),
    )


def _add_counter(db: Backend, name: str, label: str, cluster: str, value: int) -> None:
    db.execute(
        "INSERT INTO counters (name, label, cluster, value) VALUES (?, ?, ?, ?) "
        "ON CONFLICT (name, label, cluster) DO UPDATE SET value = counters.value + excluded.value",
        (name, label, cluster, value),
    )


def _write_count(db: Backend, cluster: str | None, count: Count, now: int) -> None:
    _add_counter(db, count.name, count.label, cluster or "", count.value)


def _quarantine(
    db: Backend, now: int, cluster: str | None, reason: str, detail: str, raw: str
) -> None:
    db.execute(
        "INSERT INTO quarantine (arrived_at, cluster, reason, detail, raw) VALUES (?, ?, ?, ?, ?)",
        (now, cluster, reason, detail, raw),
    )


def _write_bad(db: Backend, cluster: str | None, bad: BadLine, now: int) -> None:
    _quarantine(db, now, cluster, bad.reason, bad.detail, bad.raw)
    _add_counter(db, QUARANTINED, bad.reason, cluster or "", 1)


def _write_late(db: Backend, cluster: str | None, late: LateEvent, now: int) -> None:
    _quarantine(db, now, cluster, LATE, late.detail, late.raw)


def _write_clock(db: Backend, cluster: str | None, clock: ClusterClock, now: int) -> None:
    """The cluster's clock; ``input_at`` becomes ``now`` on its first write and whenever
    ``max_received`` grows (an event newer than every event before it arrived), so
    that the input stopping shows as its age (``routewatch_stream_input_age_seconds``). The
    SET expressions read the stored row as it was before this update."""
    db.execute(
        "INSERT INTO clusters (cluster, stream_time, max_received, held, updated_at, input_at) "
        "VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (cluster) DO UPDATE SET "
        "input_at = CASE WHEN clusters.input_at IS NULL "
        "OR excluded.max_received > clusters.max_received "
        "OR (clusters.max_received IS NULL AND excluded.max_received IS NOT NULL) "
        "THEN excluded.input_at ELSE clusters.input_at END, "
        "stream_time = excluded.stream_time, max_received = excluded.max_received, "
        "held = excluded.held, updated_at = excluded.updated_at",
        (cluster, clock.stream_time, clock.max_received, clock.held, now, now),
    )


def _write_topic(db: Backend, cluster: str | None, created: TopicCreated, now: int) -> None:
    db.execute(
        "INSERT INTO topics (cluster, topic, auto_created_at) VALUES (?, ?, ?) "
        "ON CONFLICT (cluster, topic) DO UPDATE SET auto_created_at = excluded.auto_created_at",
        (cluster, created.topic, created.auto_created_at),
    )


# how each kind of change is written, by its record
_WRITERS: dict[type, Callable[[Backend, str | None, Any, int], None]] = {
    Alert: _write_alert,
    RouteChange: _write_route,
    TopicCreated: _write_topic,
    BrokerState: _write_broker,
    Count: _write_count,
    BadLine: _write_bad,
    LateEvent: _write_late,
    ClusterClock: _write_clock,
}
