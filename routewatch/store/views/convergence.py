"""Convergence at a glance, per cluster (docs/metrics.md, "Convergence"): the share of its
topics that are where they should be — on every writable master, and routed alike (the same
brokers, queue counts and permissions) by every NameServer its brokers are live on — and how
long its route changes took to converge over a range of its stream time.

A route change converges when every NameServer routes the topic alike again: at once (0 s) when
it reached them all at the same instant, else when the last one caught up
(:func:`~routewatch.store.views.route_history.episodes`). The console and ``/metrics`` both read
these figures from here.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass
from typing import Any

from routewatch.store.store import Store
from routewatch.store.views.route_history import alike, episodes, intervals
from routewatch.store.views.topic_index import TopicIndex

__all__ = ["ClusterConvergence", "cluster_convergence", "live_namesrvs"]

_CHUNK = 500


@dataclass(frozen=True)
class ClusterConvergence:
    cluster: str
    since: int
    until: int
    topics: int  # the cluster's topics, RocketMQ's own aside
    converged: int  # on every writable master and routed alike by every NameServer
    apart: int  # routed differently by its NameServers now
    durations_ms: tuple[int, ...]  # the route changes that converged in the range
    oldest_apart: int | None  # when the oldest change still apart at the range's end began

    @property
    def ratio(self) -> float | None:
        return None if not self.topics else self.converged / self.topics

    @property
    def median_s(self) -> float | None:
        return None if not self.durations_ms else statistics.median(self.durations_ms) / 1000

    @property
    def worst_s(self) -> float | None:
        return None if not self.durations_ms else max(self.durations_ms) / 1000


def live_namesrvs(store: Store, cluster: str) -> list[str]:
    """The NameServers some broker of the cluster is live on now (a NameServer retired, or
    down, does not keep every topic apart for ever)."""
    rows = store.db.execute(
        "SELECT DISTINCT namesrv FROM brokers WHERE cluster = ? AND live = 1", (cluster,)
    )
    return sorted(r["namesrv"] for r in rows)


def _entries_now(store: Store, cluster: str, namesrvs: set[str]) -> dict[str, dict[str, set[Any]]]:
    """topic -> NameServer -> its route entries now, on the given NameServers."""
    out: dict[str, dict[str, set[Any]]] = {}
    rows = store.db.execute(
        "SELECT topic, namesrv, broker, broker_id, read_queue_nums, write_queue_nums, perm "
        "FROM route_intervals WHERE cluster = ? AND valid_to IS NULL",
        (cluster,),
    )
    for r in rows:
        if r["namesrv"] in namesrvs:
            out.setdefault(r["topic"], {}).setdefault(r["namesrv"], set()).add(
                (r[2], r[3], r[4], r[5], r[6])
            )
    return out


def _changed(store: Store, cluster: str, since: int, until: int) -> set[str]:
    rows = store.db.execute(
        "SELECT DISTINCT topic FROM route_intervals WHERE cluster = ? AND "
        "((valid_from >= ? AND valid_from < ?) OR (valid_to >= ? AND valid_to < ?))",
        (cluster, since, until, since, until),
    )
    return {r["topic"] for r in rows}


def _intervals_of(store: Store, cluster: str, topics: list[str]) -> dict[str, list[Any]]:
    out: dict[str, list[Any]] = {}
    for i in range(0, len(topics), _CHUNK):
        chunk = topics[i : i + _CHUNK]
        marks = ", ".join("?" * len(chunk))
        rows = store.db.execute(
            f"SELECT * FROM route_intervals WHERE cluster = ? AND topic IN ({marks})",
            [cluster, *chunk],
        )
        for r in rows:
            out.setdefault(r["topic"], []).append(dict(r))
    return out


def cluster_convergence(
    store: Store, index: TopicIndex, cluster: str, since: int, until: int
) -> ClusterConvergence:
    """The cluster's figures now, and over ``[since, until)`` of its stream time (call it
    inside a snapshot of the store, with that snapshot's index)."""
    namesrvs = live_namesrvs(store, cluster)
    users = index.lists.get((cluster, False), [])
    now = _entries_now(store, cluster, set(namesrvs))
    apart_now: set[str] = set()
    converged = 0
    for t in users:
        per_ns = {ns: frozenset(now.get(t.topic, {}).get(ns, set())) for ns in namesrvs}
        if not alike(per_ns):
            apart_now.add(t.topic)
        elif t.coverage == 1.0:
            converged += 1
    names = {t.topic for t in users}
    look = sorted((_changed(store, cluster, since, until) & names) | apart_now)
    durations: list[int] = []
    oldest: int | None = None
    live = set(namesrvs)
    for rows in _intervals_of(store, cluster, look).values():
        found = [i for i in intervals(rows) if i.namesrv in live]
        done, start = episodes(found, namesrvs, since, until)
        durations += done
        if start is not None:
            oldest = start if oldest is None else min(oldest, start)
    return ClusterConvergence(
        cluster=cluster,
        since=since,
        until=until,
        topics=len(users),
        converged=converged,
        apart=len(apart_now),
        durations_ms=tuple(sorted(durations)),
        oldest_apart=oldest,
    )
