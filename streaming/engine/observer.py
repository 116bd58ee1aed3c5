"""A cluster's observer (``routewatch collect``) in the stream: how long it may be silent.

Its rounds (``collector_round`` events) move the cluster's time while nothing changes; when they
stop for :func:`silent_after` the cluster's collector is silent (``COLLECTOR_SILENT``), and its
brokers' expiries wait for its return (docs/alerts.md, ``BROKER_EXPIRED``).
"""

from __future__ import annotations

__all__ = ["OBSERVER_SILENT_MIN_MS", "silent_after"]

OBSERVER_SILENT_MIN_MS = 30_000


def silent_after(interval_ms: int) -> int:
    """How long a cluster's observer may write nothing before it counts as silent: three of its
    rounds, and at least 30 s (well before a broker's 120 s expiry)."""
    return max(3 * interval_ms, OBSERVER_SILENT_MIN_MS)
