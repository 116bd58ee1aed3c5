"""The alert catalogue (docs/alerts.md) in code: its names — kinds, severities, states and
causes — and the alert record, with its key and id.

The record is defined once, here: the engine raises and updates :class:`Alert` s, the store's
``alerts`` table has a column per field of :class:`StoredAlert`, and the API's ``AlertPublic``
is :class:`StoredAlert` with the acknowledgement state.
"""

from __future__ import annotations

import dataclasses
import hashlib
import typing
from dataclasses import dataclass
from typing import Any, Final, Literal

__all__ = [
    "ALERT_KINDS",
    "NO_ROUTE_CAUSES",
    "Alert",
    "AlertKey",
    "AlertKind",
    "AlertState",
    "NoRouteCause",
    "Severity",
    "StoredAlert",
    "alert_id",
]

AlertKind = Literal[
    "PARTIAL_COVERAGE",
    "AT_RISK",
    "NO_ROUTE_INFO",
    "SEND_REJECTED",
    "TEMPLATE_MISSING",
    "BROKER_EXPIRED",
    "QUEUE_SKEW",
    "NAMESRV_DIVERGENCE",
    "STALE_ROUTE",
    "COLLECTOR_SILENT",
    "NAMESRV_UNREACHABLE",
]
Severity = Literal["critical", "warning", "info"]
AlertState = Literal["open", "resolved"]
NoRouteCause = Literal[
    "NO_NAMESRV",
    "NO_LIVE_BROKER",
    "CREATE_TOPIC_KEY_MISMATCH",
    "AUTO_CREATE_DISABLED",
    "TEMPLATE_MISSING",
    "GRPC_NOT_CREATED",
    "UNKNOWN",
]

ALERT_KINDS: Final[tuple[AlertKind, ...]] = typing.get_args(AlertKind)
NO_ROUTE_CAUSES: Final[tuple[NoRouteCause, ...]] = typing.get_args(NoRouteCause)

AlertKey = tuple[AlertKind, str, str | None, str | None, int | None]
"""(kind, cluster, topic, broker, broker_id): at most one alert of a key is open at a time."""


def alert_id(key: AlertKey, opened_at: int) -> str:
    """Stable id: a digest of kind, key and the opening instant, so the same input gives the
    same ids whatever the batching."""
    kind, cluster, topic, broker, broker_id = key
    parts = (kind, cluster, topic or "", broker or "", "" if broker_id is None else broker_id)
    text = "|".join(map(str, (*parts, opened_at)))
    return f"{kind.lower()}-{hashlib.sha1(text.encode()).hexdigest()[:16]}"


@dataclass(slots=True)
class Alert:
    """One alert in the catalogue's fields, all in event time: what the engine raises, updates
    and resolves (``id`` is :func:`alert_id` of its key and ``opened_at``)."""

    id: str
    kind: AlertKind
    severity: Severity
    state: AlertState
    cluster: str
    topic: str | None
    broker: str | None
    broker_id: int | None
    cause: NoRouteCause | None
    opened_at: int
    updated_at: int
    resolved_at: int | None
    summary: str
    evidence: dict[str, Any]
    remedy: str | None
    plan: dict[str, Any] | None  # the remedy as data: routewatch.remedy.plan.Plan.to_dict()

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Alert:
        # (an alert kept before plans existed, in a checkpoint's state or the store's log, has
        # none)
        return cls(**{"plan": None, **data})

    @property
    def key(self) -> AlertKey:
        return (self.kind, self.cluster, self.topic, self.broker, self.broker_id)


@dataclass(slots=True)
class StoredAlert(Alert):
    """An alert as the store keeps it: with ``detected_at``, the wall clock (epoch ms) at which
    the store first wrote it (``routewatch evaluate``: when the pipeline ended)."""

    detected_at: int

    @classmethod
    def detected(cls, alert: Alert, at: int) -> StoredAlert:
        return cls(**alert.to_dict(), detected_at=at)
