"""Alerts' lifecycle: at most one open alert per kind and key, and every change kept.

The alert record, its key and its id are the core's (:mod:`routewatch.alerts`); an alert's id
is derived from its kind, key and ``opened_at``, so the same input gives the same ids whatever
the batching. ``detected_at`` (wall clock) is set by the store when it first writes the alert.
"""

from __future__ import annotations

from typing import Any

from routewatch.alerts import Alert, AlertKey, NoRouteCause, Severity, alert_id

__all__ = ["AlertBook"]


class AlertBook:
    """The open alerts of one cluster and the changes made."""

    def __init__(self) -> None:
        self.open: dict[AlertKey, Alert] = {}
        self.changes: list[Alert] = []

    def get(self, key: AlertKey) -> Alert | None:
        return self.open.get(key)

    def raise_or_update(
        self,
        key: AlertKey,
        at: int,
        *,
        severity: Severity,
        summary: str,
        evidence: dict[str, Any],
        cause: NoRouteCause | None = None,
        remedy: str | None = None,
    ) -> Alert:
        """Open the alert at ``at``, or update the open one when severity, cause or evidence
        changed."""
        current = self.open.get(key)
        if current is None:
            kind, cluster, topic, broker, broker_id = key
            alert = Alert(
                id=alert_id(key, at),
                kind=kind,
                severity=severity,
                state="open",
                cluster=cluster,
                topic=topic,
                broker=broker,
                broker_id=broker_id,
                cause=cause,
                opened_at=at,
                updated_at=at,
                resolved_at=None,
                summary=summary,
                evidence=evidence,
                remedy=remedy,
            )
            self.open[key] = alert
            self.changes.append(_copy(alert))
            return alert
        if (current.severity, current.cause, current.evidence) != (severity, cause, evidence):
            current.severity, current.cause, current.evidence = severity, cause, evidence
            current.summary, current.remedy, current.updated_at = summary, remedy, at
            self.changes.append(_copy(current))
        return current

    def resolve(self, key: AlertKey, at: int, evidence: dict[str, Any] | None = None) -> None:
        alert = self.open.pop(key, None)
        if alert is None:
            return
        alert.state, alert.resolved_at, alert.updated_at = "resolved", at, at
        if evidence is not None:
            alert.evidence = {**alert.evidence, **evidence}
        self.changes.append(_copy(alert))

    def take_changes(self) -> list[Alert]:
        changes, self.changes = self.changes, []
        return changes


def _copy(alert: Alert) -> Alert:
    return Alert.from_dict(alert.to_dict())
