"""Alert records and their lifecycle: at most one open alert per kind and key.

An alert's ``id`` is derived from its kind, key and ``opened_at``, so the same input gives the
same ids whatever the batching. ``detected_at`` (wall clock) is set by the store when it first
writes the alert.
"""

from __future__ import annotations

import hashlib
from dataclasses import asdict, dataclass, field
from typing import Any

__all__ = ["REMEDIES", "Alert", "AlertBook", "AlertKey", "alert_id"]

AlertKey = tuple[str, str, str | None, str | None, int | None]
"""(kind, cluster, topic, broker, broker_id)."""


def alert_id(key: AlertKey, opened_at: int) -> str:
    """Stable id: a digest of kind, key and the opening instant."""
    kind, cluster, topic, broker, broker_id = key
    parts = (kind, cluster, topic or "", broker or "", "" if broker_id is None else broker_id)
    text = "|".join(map(str, (*parts, opened_at)))
    return f"{kind.lower()}-{hashlib.sha1(text.encode()).hexdigest()[:16]}"


@dataclass(slots=True)
class Alert:
    """One alert, in the fields of the catalogue (``detected_at`` is the store's)."""

    id: str
    kind: str
    severity: str
    state: str
    cluster: str
    topic: str | None
    broker: str | None
    broker_id: int | None
    cause: str | None
    opened_at: int
    updated_at: int
    resolved_at: int | None
    summary: str
    evidence: dict[str, Any] = field(default_factory=dict)
    remedy: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Alert:
        return cls(**data)

    @property
    def key(self) -> AlertKey:
        return (self.kind, self.cluster, self.topic, self.broker, self.broker_id)


REMEDIES = {
    "TEMPLATE_MISSING": "Restart the broker with autoCreateTopicEnable=true so that it recreates "
    "TBW102, or turn auto-creation off on purpose.",
    "BROKER_EXPIRED": "Check the broker process and its namesrvAddr list.",
    "NAMESRV_DIVERGENCE": "Check the broker process and its namesrvAddr list: it no longer "
    "reaches every NameServer.",
}


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
        severity: str,
        summary: str,
        evidence: dict[str, Any],
        cause: str | None = None,
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
