"""What must hold of the alerts of any trace, checked from the trace's own events and
docs/alerts.md's words, not from the engine's code: one open alert per key; no alert of the
collector-added kinds (and BROKER_EXPIRED) that ends at its own instant; BROKER_EXPIRED only at
an instant the collector watched, at its registrations' expiry or at the look that found it
gone; COLLECTOR_SILENT open exactly while the rounds are missing; NAMESRV_UNREACHABLE open
exactly while a round leaves a NameServer unreached past its 30 s."""

from __future__ import annotations

import itertools
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

import orjson

from routewatch.alerts import Alert

__all__ = ["Observed", "violations"]

EXPIRY_MS = 120_000
UNREACHABLE_MS = 30_000


def silent_after(interval_ms: int) -> int:
    """docs/alerts.md, COLLECTOR_SILENT: three of its intervals, at least 30 s."""
    return max(3 * interval_ms, 30_000)


@dataclass
class _Round:
    ts: int
    interval_ms: int
    unreached: dict[str, int | None]
    namesrvs: int

    @property
    def look(self) -> bool:
        return len(self.unreached) < self.namesrvs


@dataclass
class Observed:
    """A trace's events as the invariants read them, per cluster."""

    end: int = 0
    rounds: dict[str, list[_Round]] = field(default_factory=lambda: defaultdict(list))
    # (cluster, broker, id) -> NameServer -> [(ts, timeout ms)] of its heartbeats
    heartbeats: dict[tuple[str, str, int], dict[str, list[tuple[int, int]]]] = field(
        default_factory=lambda: defaultdict(lambda: defaultdict(list))
    )

    @classmethod
    def of(cls, arrivals: Iterable[tuple[str, int, int | None, str]]) -> Observed:
        out = cls()
        for _, ts, _, raw in sorted(arrivals, key=lambda a: a[1]):
            e = orjson.loads(raw)
            out.end = max(out.end, ts)
            if e["type"] == "collector_round":
                unreached = {
                    ns: r["unreachable_since"]
                    for ns, r in e["namesrvs"].items()
                    if not r["reached"]
                }
                out.rounds[e["cluster"]].append(
                    _Round(ts, e["interval_ms"], unreached, len(e["namesrvs"]))
                )
            elif e["type"] == "heartbeat" and not e.get("shutdown"):
                timeout = e.get("heartbeat_timeout_ms") or EXPIRY_MS
                key = (e["cluster"], e["broker"], e["broker_id"])
                out.heartbeats[key][e["namesrv"]].append((ts, timeout))
        return out


def _key(a: Alert) -> tuple[Any, ...]:
    return (a.kind, a.cluster, a.topic, a.broker, a.broker_id)


def _one_open_per_key(alerts: list[Alert]) -> list[str]:
    out = []
    by_key: dict[tuple[Any, ...], list[Alert]] = defaultdict(list)
    for a in alerts:
        by_key[_key(a)].append(a)
    for key, group in by_key.items():
        group.sort(key=lambda a: a.opened_at)
        for before, after in itertools.pairwise(group):
            if before.resolved_at is None or before.resolved_at > after.opened_at:
                out.append(f"{key}: {before.id} still open when {after.id} opened")
    return out


def _no_zero_length(alerts: list[Alert]) -> list[str]:
    kinds = ("BROKER_EXPIRED", "COLLECTOR_SILENT", "NAMESRV_UNREACHABLE", "STALE_ROUTE")
    return [
        f"{a.kind} {a.id} opened and resolved at {a.opened_at}"
        for a in alerts
        if a.kind in kinds and a.resolved_at == a.opened_at
    ]


def _expiry(obs: Observed, key: tuple[str, str, int], before: int) -> int | None:
    """The instant the broker's last registration expired, from its heartbeats before
    ``before`` (one at that instant would have renewed it)."""
    ends = []
    for beats in obs.heartbeats.get(key, {}).values():
        earlier = [(ts, timeout) for ts, timeout in beats if ts < before]
        if earlier:
            ts, timeout = max(earlier)
            ends.append(ts + timeout)
    return max(ends) if ends else None


def _broker_expired_watched(obs: Observed, alerts: list[Alert]) -> list[str]:
    """In a watched cluster, BROKER_EXPIRED opens only where the collector watched: at its
    registrations' expiry, with a look at most 1.5 intervals before; or at a look, when the
    expiry fell while nobody looked (evidence: the gap from the look before)."""
    out = []
    for a in alerts:
        if a.kind != "BROKER_EXPIRED":
            continue
        assert a.broker is not None and a.broker_id is not None
        key = (a.cluster, a.broker, a.broker_id)
        at = a.opened_at
        expiry = _expiry(obs, key, at)
        rounds = obs.rounds.get(a.cluster, [])
        gap = a.evidence.get("opened_with", a.evidence).get("expired_in_collector_gap")
        if not rounds or rounds[0].ts > at:  # not watched (yet)
            if gap is not None or expiry != at:
                out.append(f"{a.id}: unwatched, opened at {at}, expiry {expiry}, gap {gap}")
            continue
        looks = [r for r in rounds if r.look and r.ts <= at]
        last = looks[-1] if looks else None
        latest = [r for r in rounds if r.ts <= at][-1]
        if gap is None:
            behind = last is None or at > last.ts + latest.interval_ms * 3 // 2
            if expiry != at or behind:
                out.append(f"{a.id}: opened at {at}, expiry {expiry}, last look {last}")
        else:
            before = [r.ts for r in looks if r.ts < at]
            if (
                last is None
                or last.ts != at
                or gap != {"from": before[-1] if before else at, "to": at}
                or expiry is None
                or expiry > at
            ):
                out.append(f"{a.id}: found at {at} with gap {gap}, expiry {expiry}")
    return out


def _intervals(alerts: list[Alert], kind: str, cluster: str) -> list[tuple[int, int | None]]:
    return sorted(
        (a.opened_at, a.resolved_at) for a in alerts if (a.kind, a.cluster) == (kind, cluster)
    )


def _collector_silent_exactly(obs: Observed, alerts: list[Alert]) -> list[str]:
    out = []
    for cluster, rounds in obs.rounds.items():
        expected: list[tuple[int, int | None]] = []
        for here, after in zip(rounds, [*rounds[1:], None], strict=True):
            silent = here.ts + silent_after(here.interval_ms)
            if after is None:
                if silent <= obs.end:
                    expected.append((silent, None))
            elif after.ts > silent:
                expected.append((silent, after.ts))
        got = _intervals(alerts, "COLLECTOR_SILENT", cluster)
        if got != expected:
            out.append(f"COLLECTOR_SILENT of {cluster}: {got} != {expected}")
    return out


def _namesrv_unreachable_exactly(obs: Observed, alerts: list[Alert]) -> list[str]:
    """Open at the first round that finds a NameServer unreached for 30 s (its since the
    earliest of the unbroken run of rounds that did not reach it, whichever collector wrote
    them); open while a round leaves any unreached; resolved by a round that reaches all."""
    out = []
    for cluster, rounds in obs.rounds.items():
        expected: list[tuple[int, int | None]] = []
        since: dict[str, int] = {}
        opened: int | None = None
        for r in rounds:
            since = {
                ns: min(s if s is not None else r.ts, since.get(ns, r.ts))
                for ns, s in r.unreached.items()
            }
            if opened is None and any(r.ts - s >= UNREACHABLE_MS for s in since.values()):
                opened = r.ts
            elif opened is not None and not since:
                expected.append((opened, r.ts))
                opened = None
        if opened is not None:
            expected.append((opened, None))
        got = _intervals(alerts, "NAMESRV_UNREACHABLE", cluster)
        if got != expected:
            out.append(f"NAMESRV_UNREACHABLE of {cluster}: {got} != {expected}")
    return out


def violations(arrivals: list[tuple[str, int, int | None, str]], alerts: list[Alert]) -> list[str]:
    """Every invariant a trace's final alerts break, in words (empty: none)."""
    obs = Observed.of(arrivals)
    return [
        *_one_open_per_key(alerts),
        *_no_zero_length(alerts),
        *_broker_expired_watched(obs, alerts),
        *_collector_silent_exactly(obs, alerts),
        *_namesrv_unreachable_exactly(obs, alerts),
    ]
