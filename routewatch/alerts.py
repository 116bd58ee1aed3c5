"""The alert catalogue's names (docs/alerts.md): kinds, severities, states and causes."""

from __future__ import annotations

import typing
from typing import Final, Literal

__all__ = ["ALERT_KINDS", "NO_ROUTE_CAUSES", "AlertKind", "AlertState", "NoRouteCause", "Severity"]

AlertKind = Literal[
    "PARTIAL_COVERAGE",
    "AT_RISK",
    "NO_ROUTE_INFO",
    "SEND_REJECTED",
    "TEMPLATE_MISSING",
    "BROKER_EXPIRED",
    "QUEUE_SKEW",
    "NAMESRV_DIVERGENCE",
]
Severity = Literal["critical", "warning", "info"]
AlertState = Literal["open", "resolved"]
NoRouteCause = Literal[
    "NO_NAMESRV",
    "NO_LIVE_BROKER",
    "CREATE_TOPIC_KEY_MISMATCH",
    "AUTO_CREATE_DISABLED",
    "TEMPLATE_MISSING",
    "UNKNOWN",
]

ALERT_KINDS: Final[tuple[AlertKind, ...]] = typing.get_args(AlertKind)
NO_ROUTE_CAUSES: Final[tuple[NoRouteCause, ...]] = typing.get_args(NoRouteCause)
