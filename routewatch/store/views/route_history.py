"""A topic's route as the console draws it, from the store's route intervals alone: the matrix
NameServer by broker of its route now; the timeline of every change — a broker gained or lost
it on a NameServer, its permission or queue counts changed, the NameServers came to route it
differently or alike again (the same brokers, counts and permissions); and how long each
change took to converge. Pure functions over interval rows (dicts with the columns of
``route_intervals``), so that tests run them on literal rows."""

from __future__ import annotations

from collections.abc import Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

__all__ = [
    "Cell",
    "Change",
    "Interval",
    "alike",
    "changes",
    "episodes",
    "intervals",
    "live_spans",
    "matrix",
]

BrokerKey = tuple[str, int]  # (broker, broker_id)


@dataclass(frozen=True)
class Interval:
    """One registration's route entry for the topic, from ``start`` until ``end`` (None: now)."""

    namesrv: str
    broker: str
    broker_id: int
    read: int
    write: int
    perm: int
    start: int
    end: int | None

    @property
    def config(self) -> tuple[int, int, int]:
        return (self.read, self.write, self.perm)


def intervals(rows: Iterable[Mapping[str, Any]]) -> list[Interval]:
    """Rows of ``route_intervals`` as intervals, by NameServer, broker, id and start."""
    out = [
        Interval(
            r["namesrv"],
            r["broker"],
            int(r["broker_id"]),
            int(r["read_queue_nums"]),
            int(r["write_queue_nums"]),
            int(r["perm"]),
            int(r["valid_from"]),
            None if r["valid_to"] is None else int(r["valid_to"]),
        )
        for r in rows
    ]
    out.sort(key=lambda i: (i.namesrv, i.broker, i.broker_id, i.start))
    return out


@dataclass(frozen=True)
class Cell:
    """One NameServer's route entry for one broker now: its queues, permission, since when."""

    read: int
    write: int
    perm: int
    since: int

    @property
    def writable(self) -> bool:
        return bool(self.perm & 2)

    @property
    def readable(self) -> bool:
        return bool(self.perm & 4)


def matrix(found: Sequence[Interval]) -> dict[str, dict[BrokerKey, Cell]]:
    """The route now: NameServer -> (broker, id) -> its entry (the open intervals)."""
    out: dict[str, dict[BrokerKey, Cell]] = {}
    for i in found:
        if i.end is None:
            out.setdefault(i.namesrv, {})[i.broker, i.broker_id] = Cell(
                i.read, i.write, i.perm, i.start
            )
    return out


@dataclass(frozen=True)
class Change:
    """One change of the topic's route at ``at`` (event time): on one NameServer for one broker
    (``gained``, ``lost``, ``changed``: its queues or permission, ``before`` -> ``after``), or
    of the NameServers together (``diverged``: they route it differently from here on;
    ``agreed``: alike again; ``views``: each one's brokers after the change)."""

    at: int
    what: Literal["gained", "lost", "changed", "diverged", "agreed"]
    namesrv: str | None = None
    broker: str | None = None
    broker_id: int | None = None
    before: tuple[int, int, int] | None = None
    after: tuple[int, int, int] | None = None
    views: dict[str, list[str]] | None = None


def _entries(
    found: Sequence[Interval], at: int, namesrvs: Iterable[str]
) -> dict[str, tuple[tuple[str, int, int, int, int], ...]]:
    """Each NameServer's route entries for the topic just after ``at`` — (broker, id, read,
    write, perm), sorted; none: empty."""
    entries: dict[str, list[tuple[str, int, int, int, int]]] = {ns: [] for ns in namesrvs}
    for i in found:
        if i.start <= at and (i.end is None or i.end > at):
            entries.setdefault(i.namesrv, []).append((i.broker, i.broker_id, *i.config))
    return {ns: tuple(sorted(e)) for ns, e in sorted(entries.items())}


def alike(entries: Mapping[str, Hashable]) -> bool:
    """Whether every NameServer routes the topic the same: the same brokers, queue counts and
    permissions (none at all on every one is alike too)."""
    return len(set(entries.values())) <= 1


def changes(
    found: Sequence[Interval], namesrvs: Iterable[str], since: int, until: int
) -> list[Change]:
    """Every change at an instant in ``[since, until)``, in time order (per instant: the
    entries' changes by NameServer and broker, then the NameServers' agreement). ``namesrvs``:
    the cluster's NameServers, so that one that does not route the topic at all counts as
    routing it to no broker."""
    namesrvs = sorted(set(namesrvs) | {i.namesrv for i in found})
    by_key: dict[tuple[str, str, int], list[Interval]] = {}
    for i in found:
        by_key.setdefault((i.namesrv, i.broker, i.broker_id), []).append(i)
    entries: list[Change] = []
    for (ns, broker, bid), runs in by_key.items():
        for n, i in enumerate(runs):
            prev = runs[n - 1] if n else None
            nxt = runs[n + 1] if n + 1 < len(runs) else None
            if prev is not None and prev.end == i.start:
                if prev.config != i.config:
                    entries.append(
                        Change(i.start, "changed", ns, broker, bid, prev.config, i.config)
                    )
            else:
                entries.append(Change(i.start, "gained", ns, broker, bid, None, i.config))
            if i.end is not None and not (nxt is not None and nxt.start == i.end):
                entries.append(Change(i.end, "lost", ns, broker, bid, i.config, None))
    entries = [c for c in entries if since <= c.at < until]
    out: list[Change] = []
    instants = sorted({c.at for c in entries})
    agree = alike(_entries(found, since - 1, namesrvs)) if instants else True
    for at in instants:
        here = [c for c in entries if c.at == at]
        here.sort(key=lambda c: (c.namesrv or "", c.broker or "", c.broker_id or 0))
        out += here
        now = _entries(found, at, namesrvs)
        now_alike = alike(now)
        if now_alike != agree:
            views = {ns: sorted({e[0] for e in found_}) for ns, found_ in now.items()}
            out.append(Change(at, "agreed" if now_alike else "diverged", views=views))
            agree = now_alike
    return out


EVER = -(2**62)  # before any event time


def episodes(
    found: Sequence[Interval], namesrvs: Iterable[str], since: int, until: int
) -> tuple[list[int], int | None]:
    """How long the topic's route changes took to converge: a change that leaves the
    NameServers routing it alike converged at once (0); one that leaves them apart converged
    when they route it alike again, which ends the episode it began. Returns the durations
    (ms) of the episodes that converged in ``[since, until)``, and the start of the one still
    apart at ``until`` (None if they agree)."""
    done: list[int] = []
    start: int | None = None
    found_changes = changes(found, namesrvs, EVER, until)
    for at in sorted({c.at for c in found_changes}):
        kinds = {c.what for c in found_changes if c.at == at}
        if not kinds & {"gained", "lost", "changed"}:
            continue
        if "diverged" in kinds:
            start = at
        elif "agreed" in kinds:
            if start is not None and since <= at:
                done.append(at - start)
            start = None
        elif start is None and since <= at:
            done.append(0)  # changed on every NameServer at once
    return done, start


def live_spans(
    found: Iterable[tuple[str, int, int | None]], since: int, until: int
) -> dict[str, list[tuple[int, int | None]]]:
    """Per NameServer, the spans in which it routed a broker's topics — the broker registered
    and live there — as the union of ``(namesrv, start, end)`` route intervals, cut to
    ``[since, until)``; a span that lasts through ``until`` ends None."""
    merged: dict[str, list[tuple[int, int | None]]] = {}
    for ns, start, end in sorted(found, key=lambda f: (f[0], f[1])):
        spans = merged.setdefault(ns, [])
        if spans and (spans[-1][1] is None or spans[-1][1] >= start):
            last_start, last_end = spans[-1]
            spans[-1] = (
                last_start,
                None if last_end is None or end is None else max(last_end, end),
            )
        else:
            spans.append((start, end))
    out: dict[str, list[tuple[int, int | None]]] = {}
    for ns, spans in merged.items():
        for start, end in spans:
            if start < until and (end is None or end > since):
                out.setdefault(ns, []).append(
                    (max(start, since), None if end is None or end >= until else end)
                )
    return out
