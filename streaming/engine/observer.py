"""A cluster's observer (``routewatch collect``) in the stream: how long it may be silent.

Its rounds (``collector_round`` events) move the cluster's time while nothing changes; when they
stop for :func:`silent_after` the cluster's collector is silent (``COLLECTOR_SILENT``). A round
that reached at least one NameServer is a *look*; once the last look is :func:`behind_after`
old, its brokers' expiries wait for its next look (docs/alerts.md, ``BROKER_EXPIRED``).
"""

from __future__ import annotations

__all__ = ["OBSERVER_SILENT_MIN_MS", "behind_after", "silent_after"]

OBSERVER_SILENT_MIN_MS = 30_000


def silent_after(interval_ms: int) -> int:
    """How long a cluster's observer may write nothing before it counts as silent: three of its
    rounds, and at least 30 s (well before a broker's 120 s expiry)."""
    return max(3 * interval_ms, OBSERVER_SILENT_MIN_MS)


def behind_after(interval_ms: int) -> int:
    """How long after its last look (a round that reached a NameServer) a cluster's observer is
    *behind*: its next look is more than half an interval late. A registration whose expiry
    falls while it is behind is judged at its next look, not at the expiry (docs/alerts.md,
    BROKER_EXPIRED): the observer renews a live broker only when it looks."""
    return interval_ms + interval_ms // 2
