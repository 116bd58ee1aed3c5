"""What each page of the console shows, read from the store: plain data for the templates
(``api/console/templates``). The API's own views and records are the source; nothing here is
kept between requests."""

from __future__ import annotations

import bisect
import time
from dataclasses import dataclass, field
from typing import Any

from api.topic_cache import TopicCache
from routewatch.rocketmq import is_system_topic
from routewatch.store import Store
from routewatch.store.records import BrokerView
from routewatch.store.views import (
    AlertFilter,
    TopicIndex,
    alerts,
    broker_views,
    open_alerts,
    silenced_by,
    stream_time,
    topic_items,
    topic_view,
)
from routewatch.store.views.convergence import ClusterConvergence, cluster_convergence
from routewatch.store.views.route_history import (
    Cell,
    Change,
    changes,
    intervals,
    live_spans,
    matrix,
)
from routewatch.store.views.topic_index import TopicSummary

__all__ = [
    "BrokerPage",
    "ClusterNow",
    "NowPage",
    "TopicPage",
    "broker_page",
    "now_page",
    "open_alerts_fragment",
    "topic_page",
    "topics_page",
]

SEVERITY_RANK = {"critical": 0, "warning": 1, "info": 2}
DEFAULT_RANGE_MS = 3_600_000  # a topic's or a broker's page: the last hour of stream time
BROKER_TOPICS_SHOWN = 500


def _now_ms() -> int:
    return int(time.time() * 1000)


@dataclass
class BrokerRow:
    broker: str
    broker_id: int
    addr: str
    live: bool  # on some NameServer
    namesrvs: dict[str, str]  # NameServer -> "live", "read-only", "expired", "unregistered"


@dataclass
class ClusterNow:
    cluster: str
    namesrvs: list[str]
    brokers: list[BrokerRow]
    stream_time: int | None
    convergence: ClusterConvergence | None  # over the page's range of its stream time


@dataclass
class NowPage:
    clusters: list[ClusterNow]
    alerts: list[dict[str, Any]]  # open, worst first
    last_seq: int  # the alert log's newest entry: the live stream starts after it


def _read_only(store: Store) -> set[tuple[str, str, str, int]]:
    """(cluster, NameServer, broker, id) of the registrations whose every route entry is
    routed without write permission now (a master whose write permission was wiped)."""
    rows = store.db.execute(
        "SELECT cluster, namesrv, broker, broker_id, MAX(perm & 2) AS w FROM route_intervals "
        "WHERE valid_to IS NULL GROUP BY cluster, namesrv, broker, broker_id"
    )
    return {(r["cluster"], r["namesrv"], r["broker"], r["broker_id"]) for r in rows if not r["w"]}


def _broker_rows(
    views: list[BrokerView], read_only: set[tuple[str, str, str, int]]
) -> list[BrokerRow]:
    out = []
    for b in views:
        states = {}
        for liveness in b.namesrvs:
            if liveness.live:
                key = (b.cluster, liveness.namesrv, b.broker, b.broker_id)
                states[liveness.namesrv] = "read-only" if key in read_only else "live"
            else:
                states[liveness.namesrv] = "unregistered" if liveness.unregistered else "expired"
        out.append(BrokerRow(b.broker, b.broker_id, b.addr, b.live, states))
    return out


def worst_first(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Alerts critical first, then warning, info; newest first within a severity."""
    return sorted(
        rows, key=lambda a: (SEVERITY_RANK.get(a["severity"], 3), -a["opened_at"], a["id"])
    )


def now_page(store: Store, cache: TopicCache, span_ms: int = DEFAULT_RANGE_MS) -> NowPage:
    """Open alerts, clusters with their brokers on each NameServer, and each cluster's
    convergence over the ``span_ms`` up to its stream time, from one snapshot of the store."""
    with store.snapshot():
        index = cache.get(store)
        views = broker_views(store)
        read_only = _read_only(store)
        rows = open_alerts(store)
        held = silenced_by(store, rows, _now_ms())
        last = store.db.execute("SELECT MAX(seq) FROM alert_log").fetchone()[0] or 0
        clusters = sorted({b.cluster for b in views} | {a["cluster"] for a in rows})
        times = {c: stream_time(store, c) for c in clusters}
        convergence = {
            c: cluster_convergence(store, index, c, t + 1 - span_ms, t + 1)
            for c, t in times.items()
            if t is not None
        }
    for r in rows:
        r["silenced_by"] = held.get(r["id"], [])
    per_cluster: dict[str, list[BrokerView]] = {}
    for b in views:
        per_cluster.setdefault(b.cluster, []).append(b)
    out = []
    for cluster in clusters:
        mine = per_cluster.get(cluster, [])
        namesrvs = sorted({n.namesrv for b in mine for n in b.namesrvs})
        out.append(
            ClusterNow(
                cluster,
                namesrvs,
                _broker_rows(mine, read_only),
                times[cluster],
                convergence.get(cluster),
            )
        )
    return NowPage(out, worst_first(rows), int(last))


def open_alerts_fragment(store: Store) -> list[dict[str, Any]]:
    """The open alerts, worst first, with the silences that hold them."""
    with store.snapshot():
        rows = open_alerts(store)
        held = silenced_by(store, rows, _now_ms())
    for r in rows:
        r["silenced_by"] = held.get(r["id"], [])
    return worst_first(rows)


def topics_page(
    store: Store,
    index: TopicIndex,
    *,
    cluster: str | None,
    name: str,
    system: bool,
    after: tuple[float, str, str] | None,
    limit: int,
) -> tuple[list[TopicSummary], int, bool]:
    """One page of topics, worst coverage first: the cluster's (or all), users' topics only
    unless ``system``, whose name holds ``name`` (any case); the page, how many match, and
    whether more follow."""
    ordered = index.lists.get((cluster, None if system else False), [])
    if name:
        needle = name.casefold()
        ordered = [t for t in ordered if needle in t.topic.casefold()]
    start = 0 if after is None else bisect.bisect_right(ordered, after, key=lambda t: t.sort_key)
    page = ordered[start : start + limit]
    return page, len(ordered), start + limit < len(ordered)


@dataclass
class TopicPage:
    cluster: str
    topic: str
    system: bool
    current: Any  # TopicView or None
    namesrvs: list[str]
    brokers: list[tuple[str, int]]
    matrix: dict[str, dict[tuple[str, int], Cell]]
    changes: list[Change]
    alerts: list[dict[str, Any]]
    since: int
    until: int
    expected: list[str] = field(default_factory=list)


def _range(
    store: Store, cluster: str, since: int | None, until: int | None, span_ms: int
) -> tuple[int, int]:
    """``[since, until)``: by default the ``span_ms`` up to the cluster's stream time."""
    if until is None:
        now = stream_time(store, cluster)
        until = (now if now is not None else _now_ms()) + 1
    return (until - span_ms if since is None else since), until


def _cluster_namesrvs(store: Store, cluster: str) -> list[str]:
    rows = store.db.execute("SELECT DISTINCT namesrv FROM brokers WHERE cluster = ?", (cluster,))
    return sorted(r["namesrv"] for r in rows)


def topic_page(
    store: Store,
    cluster: str,
    topic: str,
    since: int | None,
    until: int | None,
    span_ms: int = DEFAULT_RANGE_MS,
) -> TopicPage | None:
    """A topic's route now (NameServer by broker) and every change in ``[since, until)`` (by
    default the last hour of its cluster's stream time), with its alerts on the same axis;
    None when the store has nothing of it."""
    with store.snapshot():
        since, until = _range(store, cluster, since, until, span_ms)
        current = topic_view(store, cluster, topic)
        rows = store.db.execute(
            "SELECT * FROM route_intervals WHERE cluster = ? AND topic = ? AND valid_from < ? "
            "AND (valid_to IS NULL OR valid_to >= ?)",
            (cluster, topic, until, since - 1),
        ).fetchall()
        namesrvs = _cluster_namesrvs(store, cluster)
        found, _, _ = alerts(
            store, AlertFilter(cluster=cluster, topic=topic, since=since, until=until), limit=1000
        )
    if current is None and not rows and not found:
        return None
    spans = intervals(dict(r) for r in rows)
    now = matrix(spans)
    namesrvs = sorted(set(namesrvs) | set(now))
    expected = list(current.expected_brokers) if current is not None else []
    # the brokers any NameServer routes it to, and the expected masters that lack it
    brokers = sorted({key for cells in now.values() for key in cells} | {(b, 0) for b in expected})
    return TopicPage(
        cluster=cluster,
        topic=topic,
        system=is_system_topic(topic, cluster),
        current=current,
        namesrvs=namesrvs,
        brokers=brokers,
        matrix=now,
        changes=changes(spans, namesrvs, since, until),
        alerts=worst_first(found),
        since=since,
        until=until,
        expected=expected,
    )


@dataclass
class BrokerPage:
    cluster: str
    broker: str
    broker_id: int
    view: BrokerView | None
    topics: list[Any]  # TopicView records of the topics it holds now (the first shown)
    held: int  # how many topics it holds
    spans: dict[str, list[tuple[int, int | None]]]
    alerts: list[dict[str, Any]]
    since: int
    until: int


def broker_page(
    store: Store,
    index: TopicIndex,
    cluster: str,
    broker: str,
    broker_id: int,
    since: int | None,
    until: int | None,
    span_ms: int = DEFAULT_RANGE_MS,
) -> BrokerPage | None:
    """A broker: the topics it holds now (worst coverage first, the first
    :data:`BROKER_TOPICS_SHOWN`), the spans in which each NameServer routed it over
    ``[since, until)``, and its alerts."""
    with store.snapshot():
        since, until = _range(store, cluster, since, until, span_ms)
        view = next(
            (
                b
                for b in broker_views(store)
                if (b.cluster, b.broker, b.broker_id) == (cluster, broker, broker_id)
            ),
            None,
        )
        held = [
            r["topic"]
            for r in store.db.execute(
                "SELECT DISTINCT topic FROM route_intervals WHERE cluster = ? AND broker = ? "
                "AND broker_id = ? AND valid_to IS NULL",
                (cluster, broker, broker_id),
            )
        ]
        found = store.db.execute(
            "SELECT namesrv, valid_from, valid_to FROM route_intervals WHERE cluster = ? AND "
            "broker = ? AND broker_id = ? AND valid_from < ? AND (valid_to IS NULL OR "
            "valid_to > ?)",
            (cluster, broker, broker_id, until, since),
        ).fetchall()
        mine, _, _ = alerts(
            store, AlertFilter(cluster=cluster, broker=broker, since=since, until=until), limit=1000
        )
        # its topics, worst coverage first, from the index (one pass, whatever their number)
        wanted = set(held)
        summaries = [t for t in index.lists.get((cluster, None), []) if t.topic in wanted]
        shown = summaries[:BROKER_TOPICS_SHOWN]
        topics = topic_items(store, index.brokers, shown)
    if view is None and not held and not found and not mine:
        return None
    spans = live_spans(
        ((r["namesrv"], r["valid_from"], r["valid_to"]) for r in found), since, until
    )
    mine = [a for a in mine if a["broker_id"] in (None, broker_id)]
    return BrokerPage(
        cluster, broker, broker_id, view, topics, len(held), spans, worst_first(mine), since, until
    )
