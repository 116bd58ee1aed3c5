"""Alerts' lifecycle: at most one open alert per kind and key, and every change kept.

The alert record, its key and its id are the core's (:mod:`routewatch.alerts`); an alert's id
is derived from its kind, key and ``opened_at``, so the same input gives the same ids whatever
the batching. ``detected_at`` (wall clock) is set by the store when it first writes the alert.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

import orjson

from routewatch.alerts import Alert, AlertKey, NoRouteCause, Severity, alert_id
from routewatch.remedy.plan import Plan

__all__ = ["OPENED_WITH", "AlertBook", "Ending"]

# the key of a resolved alert's evidence that holds its evidence as it opened
OPENED_WITH = "opened_with"


class Ending(NamedTuple):
    """How an alert ended: its summary, in the past tense, and its evidence as it stands at
    the resolution (the book adds the evidence it opened with, under :data:`OPENED_WITH`)."""

    summary: str
    evidence: dict[str, Any]


class AlertBook:
    """The open alerts of one cluster, the evidence each opened with (by id), and the changes
    made."""

    def __init__(self, opened_with: dict[str, dict[str, Any]] | None = None) -> None:
        self.open: dict[AlertKey, Alert] = {}
        self.opened_with: dict[str, dict[str, Any]] = opened_with or {}
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
        plan: Callable[[], Plan] | None = None,
    ) -> Alert:
        """Open the alert at ``at``, or update the open one when severity, cause or evidence
        changed; ``plan`` is called only then (a rule raises on every judgement while open, and
        most change nothing)."""
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
                plan=None if plan is None else plan().to_dict(),
            )
            self.open[key] = alert
            self.opened_with[alert.id] = orjson.loads(orjson.dumps(evidence))
            self.changes.append(_copy(alert))
            return alert
        if (current.severity, current.cause, current.evidence) != (severity, cause, evidence):
            current.severity, current.cause, current.evidence = severity, cause, evidence
            current.summary, current.remedy, current.updated_at = summary, remedy, at
            current.plan = None if plan is None else plan().to_dict()
            self.changes.append(_copy(current))
        return current

    def resolve(self, key: AlertKey, at: int, ending: Callable[[Alert], Ending]) -> None:
        """Resolve the open alert of ``key`` at ``at``, if there is one, as ``ending`` says from
        it: its past-tense summary and its evidence at the resolution, with the evidence it
        opened with under :data:`OPENED_WITH` (an alert opened before that was kept: the
        evidence it last had). ``ending`` is called only for an open alert."""
        alert = self.open.pop(key, None)
        if alert is None:
            return
        summary, evidence = ending(alert)
        opened = self.opened_with.pop(alert.id, None) or alert.evidence
        alert.state, alert.resolved_at, alert.updated_at = "resolved", at, at
        alert.summary, alert.evidence = summary, {**evidence, OPENED_WITH: opened}
        self.changes.append(_copy(alert))

    def opening(self, alert: Alert) -> dict[str, Any]:
        """The evidence an open alert opened with (one opened before that was kept: its
        evidence now)."""
        return self.opened_with.get(alert.id) or alert.evidence

    def take_changes(self) -> list[Alert]:
        changes, self.changes = self.changes, []
        return changes


def _copy(alert: Alert) -> Alert:
    return Alert.from_dict(alert.to_dict())
