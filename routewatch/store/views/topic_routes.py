"""Topics with their routes (:class:`~routewatch.store.records.TopicView`), and a topic's route
per time window (:class:`~routewatch.store.records.RouteWindow`)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from routewatch.store.records import QueueView, RouteWindow, TopicView
from routewatch.store.store import Store
from routewatch.store.views.topic_index import (
    ClusterBrokers,
    TopicSummary,
    cluster_brokers,
    topic_summaries,
)

__all__ = ["Routes", "route_windows", "topic_items", "topic_routes", "topic_view"]

_ROUTES = (
    "SELECT cluster, topic, namesrv, broker, broker_id, read_queue_nums, write_queue_nums, perm "
    "FROM route_intervals WHERE valid_to IS NULL AND cluster = ? AND topic IN ({marks})"
)
_TOPICS_PER_QUERY = 500  # bound parameters per query (SQLite's limit was 999 before 3.32)

Routes = dict[str, list[QueueView]]  # per NameServer, its route entries


def topic_routes(store: Store, keys: Iterable[tuple[str, str]]) -> dict[tuple[str, str], Routes]:
    """The current route entries per NameServer of the topics ``(cluster, topic)`` given, and of
    those only; NameServers in order, entries by broker and broker id."""
    per_cluster: dict[str, list[str]] = {}
    for cluster, topic in keys:
        per_cluster.setdefault(cluster, []).append(topic)
    rows: list[Any] = []
    for cluster, topics in per_cluster.items():
        for i in range(0, len(topics), _TOPICS_PER_QUERY):
            chunk = topics[i : i + _TOPICS_PER_QUERY]
            sql = _ROUTES.format(marks=", ".join("?" * len(chunk)))
            rows += store.db.execute(sql, [cluster, *chunk]).fetchall()
    # ordered here, not in SQL: PostgreSQL's collation may order text differently
    rows.sort(key=lambda r: (r["cluster"], r["topic"], r["namesrv"], r["broker"], r["broker_id"]))
    out: dict[tuple[str, str], Routes] = {}
    for r in rows:
        per_ns = out.setdefault((r["cluster"], r["topic"]), {})
        per_ns.setdefault(r["namesrv"], []).append(
            QueueView(
                broker=r["broker"],
                broker_id=r["broker_id"],
                read_queue_nums=r["read_queue_nums"],
                write_queue_nums=r["write_queue_nums"],
                perm=r["perm"],
            )
        )
    return out


def topic_items(
    store: Store, brokers: ClusterBrokers, topics: Sequence[TopicSummary]
) -> list[TopicView]:
    """The topics as ``GET /topics`` lists them, with their routes per NameServer: brokers
    holding the topic, expected brokers, coverage, auto-creation, system topic or not."""
    routes = topic_routes(store, [(t.cluster, t.topic) for t in topics])
    return [
        _item(t, routes.get((t.cluster, t.topic), {}), brokers.expected.get(t.cluster, []))
        for t in topics
    ]


def _item(summary: TopicSummary, routes: Routes, expected: list[str]) -> TopicView:
    return TopicView(
        cluster=summary.cluster,
        topic=summary.topic,
        brokers=sorted({entry.broker for entries in routes.values() for entry in entries}),
        expected_brokers=list(expected),
        coverage=summary.coverage,
        namesrvs=routes,
        auto_created=summary.auto_created,
        auto_created_at=summary.auto_created_at,
        system=summary.system,
    )


def topic_view(store: Store, cluster: str, topic: str) -> TopicView | None:
    """One topic as ``GET /topics`` lists it, from that topic's rows only; None when it never
    had a route and was not auto-created."""
    brokers = cluster_brokers(store, cluster)
    found = topic_summaries(store, brokers, only=(cluster, topic))
    return topic_items(store, brokers, found)[0] if found else None


def route_windows(
    store: Store, cluster: str, topic: str, since: int, until: int, window_ms: int
) -> list[RouteWindow]:
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
            RouteWindow(
                start=start,
                end=end,
                namesrvs={ns: sorted(b) for ns, b in sorted(per_ns.items())},
                brokers=sorted(set().union(*per_ns.values())) if per_ns else [],
            )
        )
    return windows
