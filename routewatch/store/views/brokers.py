"""The brokers as ``GET /brokers`` lists them (:class:`~routewatch.store.records.BrokerView`)."""

from __future__ import annotations

from typing import Any

from routewatch.store.records import BrokerView, NamesrvLiveness
from routewatch.store.store import Store

__all__ = ["broker_views"]


def broker_views(store: Store) -> list[BrokerView]:
    """One entry per broker (cluster, name, id): liveness and last heartbeat per NameServer."""
    registrations: dict[tuple[str, str, int], list[Any]] = {}
    for r in store.brokers():
        registrations.setdefault((r["cluster"], r["broker"], r["broker_id"]), []).append(r)
    return [_broker(rows) for rows in registrations.values()]


def _broker(rows: list[Any]) -> BrokerView:
    """A broker from its registrations (rows of ``brokers``, by NameServer): its address,
    template and auto-create setting are those of the newest heartbeat (the last such row)."""
    newest = rows[0]
    for r in rows[1:]:
        if r["last_heartbeat"] >= newest["last_heartbeat"]:
            newest = r
    return BrokerView(
        cluster=newest["cluster"],
        broker=newest["broker"],
        broker_id=newest["broker_id"],
        addr=newest["addr"],
        live=any(r["live"] for r in rows),
        last_heartbeat=newest["last_heartbeat"],
        auto_create_topic_enable=None
        if newest["auto_create"] is None
        else bool(newest["auto_create"]),
        tbw102=newest["template"],
        namesrvs=[
            NamesrvLiveness(
                namesrv=r["namesrv"],
                live=bool(r["live"]),
                last_heartbeat=r["last_heartbeat"],
                unregistered=bool(r["shutdown"]),
            )
            for r in rows
        ],
    )
