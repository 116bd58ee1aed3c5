"""Every topic's summary (coverage, auto-creation, system topic), sorted as ``GET /topics``
lists them, for one version of the store; the expected brokers per cluster; and the cursors of
``GET /topics``."""

from __future__ import annotations

import bisect
import itertools
from dataclasses import dataclass
from typing import Any, NamedTuple

from routewatch.rocketmq import is_system_topic
from routewatch.store.store import Store
from routewatch.store.views.cursors import NOT_OURS, decode, encode

__all__ = [
    "ClusterBrokers",
    "SortKey",
    "StoreVersion",
    "TopicIndex",
    "TopicPage",
    "TopicSummary",
    "cluster_brokers",
    "decode_topic_cursor",
    "encode_topic_cursor",
    "store_version",
    "topic_index",
    "topic_summaries",
]

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
    # (cluster or None: every cluster, system or None: both) -> its topics, in the same order
    lists: dict[tuple[str | None, bool | None], list[TopicSummary]]

    def page(
        self,
        *,
        cluster: str | None = None,
        system: bool | None = None,
        coverage_below: float | None = None,
        after: SortKey | None = None,
        limit: int,
    ) -> TopicPage:
        """The ``limit`` topics following ``after`` that match the filters (``system``: only
        system topics, or only the others). Those with a coverage below ``coverage_below`` are
        a prefix of the order, so this costs O(log n + limit) whatever the filters."""
        ordered = self.lists.get((cluster, system), [])
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
    lists: dict[tuple[str | None, bool | None], list[TopicSummary]] = {
        (None, None): topics,
        (None, True): [],
        (None, False): [],
    }
    for summary in topics:
        lists[(None, summary.system)].append(summary)
        for key in ((summary.cluster, None), (summary.cluster, summary.system)):
            lists.setdefault(key, []).append(summary)
    return TopicIndex(version, brokers, topics, lists)


def encode_topic_cursor(key: SortKey) -> str:
    return encode(list(key))


def decode_topic_cursor(cursor: str) -> SortKey:
    """The position a ``GET /topics`` cursor names; ValueError when it is not one this API
    made."""
    try:
        coverage, cluster, topic = decode(cursor)
    except (ValueError, TypeError):
        raise ValueError(NOT_OURS) from None
    if (
        isinstance(coverage, bool)
        or not isinstance(coverage, int | float)
        or not isinstance(cluster, str)
        or not isinstance(topic, str)
    ):
        raise ValueError(NOT_OURS)
    return (float(coverage), cluster, topic)
