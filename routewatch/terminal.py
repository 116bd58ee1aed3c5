"""What routewatch prints in a terminal — ``demo``, ``stream``, ``evaluate``, ``alerts``: one line
per alert, times in ISO 8601 with the zone (epoch milliseconds only in JSON), its remedy where
asked, and the store's alert log printed as it grows.
"""

from __future__ import annotations

import datetime
from dataclasses import dataclass, field
from typing import Any

__all__ = ["AlertChanges", "alert_line", "iso_time", "remedy_line", "where"]


def iso_time(ms: int | None) -> str:
    """An epoch-millisecond instant for a person: ISO 8601, UTC, to the millisecond; ``-``
    for none."""
    if ms is None:
        return "-"
    stamp = datetime.datetime.fromtimestamp(ms / 1000, tz=datetime.UTC)
    return stamp.isoformat(timespec="milliseconds").replace("+00:00", "Z")


def where(alert: dict[str, Any]) -> str:
    """What an alert is about: ``cluster/topic``, ``cluster/broker/id``, or the cluster."""
    if alert["topic"] is not None:
        return f"{alert['cluster']}/{alert['topic']}"
    if alert["broker"] is not None:
        return f"{alert['cluster']}/{alert['broker']}/{alert['broker_id']}"
    return str(alert["cluster"])


def _instant(change: str, alert: dict[str, Any]) -> int | None:
    """The event time of a change: its opening, its resolution, or its last update."""
    field = {"opened": "opened_at", "resolved": "resolved_at"}.get(change, "updated_at")
    at: int | None = alert[field]
    return at


def alert_line(change: str, alert: dict[str, Any]) -> str:
    """One alert in one line: what happened to it (``opened``, ``resolved``, ``updated``, or
    its state), its severity, kind, what it is about, the event time of that, and its summary."""
    return (
        f"  {change:8s} {alert['severity']:8s} {alert['kind']:18s} {where(alert):30s} "
        f"{iso_time(_instant(change, alert))}  {alert['summary']}"
    )


def remedy_line(alert: dict[str, Any]) -> str | None:
    """The alert's remedy, indented under its line; None when it has none."""
    return None if not alert.get("remedy") else f"      remedy: {alert['remedy']}"


@dataclass
class AlertChanges:
    """The store's alert log, printed entry by entry: every alert opened and resolved, and an
    update when it changes what the line shows (severity or summary; an update of the evidence
    alone is left out). Reading the log, not the alerts' current state, shows an alert that
    opened and resolved between two reads as both."""

    after: int = 0  # the last log entry read
    shown: dict[str, tuple[str, str]] = field(default_factory=dict)  # id -> severity, summary

    def lines(self, entries: list[dict[str, Any]]) -> list[str]:
        out = []
        for entry in entries:
            self.after = max(self.after, entry["seq"])
            alert, change = entry["alert"], entry["change"]
            looks = (alert["severity"], alert["summary"])
            if change == "updated" and self.shown.get(alert["id"]) == looks:
                continue
            self.shown[alert["id"]] = looks
            out.append(alert_line(change, alert))
        return out
