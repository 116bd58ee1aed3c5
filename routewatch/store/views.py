"""Read-only views over the store, shaped for the API and the metrics collector: alerts,
brokers and topics (records of :mod:`routewatch.store.records`), and the small queries of the
metrics and of ``/readyz``."""

from __future__ import annotations

import base64
import bisect
import itertools
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple

import orjson

from routewatch.rocketmq import is_system_topic
from routewatch.store.records import BrokerView, NamesrvLiveness, QueueView, RouteWindow, TopicView
from routewatch.store.store import Store, alert_row

__all__ = [
    "AlertFilter",
    "ClusterBrokers",
    "SortKey",
    "StoreVersion",
    "TopicIndex",
    "TopicPage",
    "TopicSummary",
    "alert",
    "alerts",
    "broker_views",
    "cluster_brokers",
    "cluster_names",
    "decode_cursor",
    "decode_topic_cursor",
    "encode_topic_cursor",
    "last_batch",
    "newest_times",
    "open_alert_counts",
    "route_windows",
    "store_version",
    "stream_time",
    "topic_index",
    "topic_items",
    "topic_routes",
    "topic_summaries",
    "topic_view",
]

_NOT_OURS = "the cursor is not one this API returned"


def _encode(position: list[Any]) -> str:
    """A cursor: a position in a listing's order, opaque to clients."""
    return base64.urlsafe_b64encode(orjson.dumps(position)).decode()


def _decode(cursor: str) -> Any:
    """What :func:`_encode` was given; ValueError when ``cursor`` is not base64 of JSON."""
    try:
        return orjson.loads(base64.urlsafe_b64decode(cursor.encode()))
    except (ValueError, TypeError, orjson.JSONDecodeError):
        raise ValueError(_NOT_OURS) from None


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
    return _encode([opened_at, alert_id])


def decode_cursor(cursor: str) -> tuple[int, str]:
    """The position a cursor names; ValueError when it is not one this API made."""
    try:
        opened_at, alert_id = _decode(cursor)
    except (ValueError, TypeError):
        raise ValueError(_NOT_OURS) from None
    if not isinstance(opened_at, int) or not isinstance(alert_id, str):
        raise ValueError(_NOT_OURS)
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


# -- topics ------------------------------------------------------------------------------------

# Something that changes with every micro-batch the job commits (see :func:`store_version`).
StoreVersion = tuple[tuple[Any, ...], ...]
# The order of ``GET /topics``: coverage ascending, unknown coverage last, then cluster, topic.
SortKey = tuple[float, str, str]
UNKNOWN_COVERAGE = 2.0  # sorts after every coverage (0..1)


class TopicSummary(NamedTuple):
    """What ``GET /topics`` filters and sorts on, per topic; no per-NameServer routes. (A named
    tuple: an index holds one per topic, and builds them fast.)"""

    cluster: str
    topic: str
    coverage: float | None
    auto_created: bool
    auto_created_at: int | None
    system: bool

    @property
    def sort_key(self) -> SortKey:
        coverage = UNKNOWN_COVERAGE if self.coverage is None else self.coverage
        return (coverage, self.cluster, self.topic)


def _sort_key(summary: TopicSummary) -> SortKey:
    return summary.sort_key


@dataclass(frozen=True, slots=True)
class ClusterBrokers:
    """Per cluster: the expected brokers (live masters, sorted) and every broker's name."""

    expected: dict[str, list[str]]
    names: dict[str, frozenset[str]]


class TopicPage(NamedTuple):
    topics: list[TopicSummary]
    total: int  # every topic matching the filters
    more: bool  # topics follow the page


@dataclass(frozen=True)
class TopicIndex:
    """Every topic's summary in the order of ``GET /topics``, for one version of the store.
    Read-only once built: requests on several threads share it."""

    version: StoreVersion
    brokers: ClusterBrokers
    topics: list[TopicSummary]
    by_cluster: dict[str, list[TopicSummary]]

    def page(
        self,
        *,
        cluster: str | None = None,
        coverage_below: float | None = None,
        after: SortKey | None = None,
        limit: int,
    ) -> TopicPage:
        """The ``limit`` topics following ``after`` that match the filters. Those with a
        coverage below ``coverage_below`` are a prefix of the order, so this costs
        O(log n + limit) whatever the filters."""
        ordered = self.topics if cluster is None else self.by_cluster.get(cluster, [])
        end = len(ordered)
        if coverage_below is not None:
            end = bisect.bisect_left(ordered, (coverage_below, "", ""), key=_sort_key)
        start = 0 if after is None else min(bisect.bisect_right(ordered, after, key=_sort_key), end)
        stop = min(start + limit, end)
        return TopicPage(ordered[start:stop], end, stop < end)

    def worst(self, limit: int) -> list[TopicSummary]:
        """The ``limit`` worst-covered topics that are not system topics and have a coverage."""
        known = (t for t in self.topics if t.coverage is not None and not t.system)
        return list(itertools.islice(known, limit))


def store_version(store: Store) -> StoreVersion:
    """Cheap (two index lookups and the small ``clusters`` table), and changes with every batch
    the job commits: the newest batch of the last job in the ``batches`` table, and every
    cluster's clock, which the job writes (with the wall clock in ``updated_at``) in every batch
    that has changes for that cluster."""
    last = store.db.execute(
        "SELECT job, batch_id FROM batches ORDER BY job DESC, batch_id DESC LIMIT 1"
    ).fetchone()
    clocks = store.db.execute(
        "SELECT cluster, stream_time, max_received, held, updated_at FROM clusters ORDER BY cluster"
    ).fetchall()
    return (tuple(last or ()), *(tuple(clock) for clock in clocks))


def cluster_brokers(store: Store, cluster: str | None = None) -> ClusterBrokers:
    """Expected brokers and broker names per cluster (of one cluster, if given). A broker is
    live if any NameServer has it live, as in :func:`broker_views`."""
    sql, args = "SELECT cluster, broker, broker_id, MAX(live) AS live FROM brokers", []
    if cluster is not None:
        sql, args = sql + " WHERE cluster = ?", [cluster]
    expected: dict[str, set[str]] = {}
    names: dict[str, set[str]] = {}
    for r in store.db.execute(sql + " GROUP BY cluster, broker, broker_id", args):
        names.setdefault(r["cluster"], set()).add(r["broker"])
        if r["broker_id"] == 0 and r["live"]:
            expected.setdefault(r["cluster"], set()).add(r["broker"])
    return ClusterBrokers(
        {c: sorted(b) for c, b in expected.items()}, {c: frozenset(b) for c, b in names.items()}
    )


# Per topic that ever had a route: how many expected brokers (live masters) hold it now, counted
# in SQL over the open route intervals, whatever the NameServers and broker ids.
_HELD = (
    "SELECT r.cluster, r.topic, COUNT(DISTINCT e.broker) AS held FROM route_intervals r "
    "LEFT JOIN (SELECT DISTINCT cluster, broker FROM brokers WHERE broker_id = 0 AND live <> 0) e "
    "ON r.valid_to IS NULL AND e.cluster = r.cluster AND e.broker = r.broker{where} "
    "GROUP BY r.cluster, r.topic"
)


def topic_summaries(
    store: Store, brokers: ClusterBrokers, only: tuple[str, str] | None = None
) -> list[TopicSummary]:
    """Every topic that had a route or was auto-created (only ``(cluster, topic)``, if given),
    unordered; one that has no route now has coverage 0."""
    where, args = "", []
    if only is not None:
        where, args = " WHERE {t}cluster = ? AND {t}topic = ?", list(only)
    auto = {
        (r[0], r[1]): r[2]
        for r in store.db.execute(
            "SELECT cluster, topic, auto_created_at FROM topics" + where.format(t=""), args
        )
    }
    out = []
    for cluster, topic, held in store.db.execute(_HELD.format(where=where.format(t="r.")), args):
        created = (cluster, topic) in auto
        at = auto.pop((cluster, topic), None)
        out.append(_summary(cluster, topic, int(held), created, at, brokers))
    # auto-created, and never had a route
    out += [_summary(c, t, 0, True, at, brokers) for (c, t), at in auto.items()]
    return out


def _summary(
    cluster: str,
    topic: str,
    held: int,
    auto_created: bool,
    auto_created_at: int | None,
    brokers: ClusterBrokers,
) -> TopicSummary:
    expected = len(brokers.expected.get(cluster, ()))
    return TopicSummary(
        cluster,
        topic,
        held / expected if expected else None,
        auto_created,
        auto_created_at,
        is_system_topic(topic, cluster, brokers.names.get(cluster, frozenset())),
    )


def topic_index(store: Store, version: StoreVersion) -> TopicIndex:
    """Every topic's summary, sorted, for the store's ``version`` (read in the same snapshot)."""
    brokers = cluster_brokers(store)
    topics = sorted(topic_summaries(store, brokers), key=_sort_key)
    by_cluster: dict[str, list[TopicSummary]] = {}
    for summary in topics:
        by_cluster.setdefault(summary.cluster, []).append(summary)
    return TopicIndex(version, brokers, topics, by_cluster)


def encode_topic_cursor(key: SortKey) -> str:
    return _encode(list(key))


def decode_topic_cursor(cursor: str) -> SortKey:
    """The position a ``GET /topics`` cursor names; ValueError when it is not one this API
    made."""
    try:
        coverage, cluster, topic = _decode(cursor)
    except (ValueError, TypeError):
        raise ValueError(_NOT_OURS) from None
    if (
        isinstance(coverage, bool)
        or not isinstance(coverage, int | float)
        or not isinstance(cluster, str)
        or not isinstance(topic, str)
    ):
        raise ValueError(_NOT_OURS)
    return (float(coverage), cluster, topic)


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


# -- the metrics collector's and the API's small queries ------------------------------------------


def open_alert_counts(store: Store) -> list[tuple[str, str, int]]:
    """``(kind, severity, count)`` of the open alerts, by kind and severity."""
    rows = store.db.execute(
        "SELECT kind, severity, COUNT(*) FROM alerts WHERE state = 'open' "
        "GROUP BY kind, severity ORDER BY kind, severity"
    )
    return [(kind, severity, n) for kind, severity, n in rows]


def cluster_names(store: Store) -> list[str]:
    """Every cluster the job has written a clock for."""
    return [cluster for (cluster,) in store.db.execute("SELECT cluster FROM clusters")]


def last_batch(store: Store) -> dict[str, Any] | None:
    """The stream job's last timed micro-batch: its input rows, duration and event-time lag."""
    row = store.db.execute(
        "SELECT input_rows, duration_ms, event_time_lag_ms FROM batches "
        "WHERE duration_ms IS NOT NULL ORDER BY written_at DESC LIMIT 1"
    ).fetchone()
    return None if row is None else dict(zip(row.keys(), row, strict=True))


def newest_times(store: Store) -> tuple[int | None, int | None]:
    """The newest stream time of any cluster, and when (epoch ms, wall clock) the job last
    received an event newer than every event before it."""
    newest, input_at = store.db.execute(
        "SELECT MAX(stream_time), MAX(input_at) FROM clusters"
    ).fetchone()
    return newest, input_at


def stream_time(store: Store, cluster: str) -> int | None:
    """A cluster's stream time, or None when the job has not written one."""
    row = store.db.execute(
        "SELECT stream_time FROM clusters WHERE cluster = ?", (cluster,)
    ).fetchone()
    return None if row is None else row[0]
