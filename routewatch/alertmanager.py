"""A routewatch alert as Alertmanager sees it: its labels, annotations and link, and the silence
that matches it alone (docs/alertmanager.md).

Defined once, here: ``routewatch notify`` pushes these labels to Alertmanager's v2 API, and the
API's per-alert series (``routewatch_alert_open``) carries the same ones, so that the shipped
per-kind Prometheus rules make alerts with the very labels of the push — Alertmanager, which
identifies an alert by its labels, holds one alert for both.
"""

from __future__ import annotations

import datetime
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

import orjson

__all__ = [
    "ALERT_LABELS",
    "EVIDENCE_MAX_CHARS",
    "Links",
    "alert_labels",
    "am_time",
    "check_static_labels",
    "firing",
    "labels_key",
    "resolved",
    "silence",
]

# every label routewatch sets; a static label of the operator's may not be one of them
ALERT_LABELS: Final = ("alertname", "cluster", "topic", "broker", "severity", "routewatch_id")
EVIDENCE_MAX_CHARS: Final = 1024
_LABEL_NAME = re.compile(r"[a-zA-Z_][a-zA-Z0-9_]*")


def check_static_labels(labels: Mapping[str, str]) -> dict[str, str]:
    """The operator's static labels, checked: valid Prometheus label names, none of routewatch's
    own, no empty value (an empty label is no label to Alertmanager and Prometheus)."""
    for name, value in labels.items():
        if not _LABEL_NAME.fullmatch(name) or name.startswith("__"):
            raise ValueError(f"'{name}' is not a valid label name")
        if name in ALERT_LABELS:
            raise ValueError(f"'{name}' is a label routewatch sets itself; choose another name")
        if not value:
            raise ValueError(f"label '{name}' has an empty value")
    return dict(labels)


def alert_labels(alert: Mapping[str, Any], static: Mapping[str, str] = {}) -> dict[str, str]:
    """The labels that identify one routewatch alert in Alertmanager and in Prometheus:
    ``alertname`` (its kind), ``cluster``, ``topic`` and ``broker`` where it has them,
    ``severity``, ``routewatch_id``, and the operator's static labels.

    A topic alert has no ``broker`` — except a ``PARTIAL_COVERAGE`` whose topic was held by a
    master that has since expired: ``broker`` names it (the first, by name), so that the
    shipped inhibition rule lets that broker's ``BROKER_EXPIRED`` stand for it."""
    labels = {
        **static,
        "alertname": alert["kind"],
        "cluster": alert["cluster"],
        "severity": alert["severity"],
        "routewatch_id": alert["id"],
    }
    if alert.get("topic"):
        labels["topic"] = alert["topic"]
    broker = alert.get("broker")
    if not broker and alert["kind"] == "PARTIAL_COVERAGE":
        expired = (alert.get("evidence") or {}).get("expired_brokers_with_topic") or []
        broker = expired[0] if expired else None
    if broker:
        labels["broker"] = broker
    return labels


def labels_key(labels: Mapping[str, str]) -> str:
    """One text per label set (sorted JSON): how the push remembers what it sent."""
    return orjson.dumps(dict(sorted(labels.items()))).decode()


def am_time(ms: int) -> str:
    """Epoch milliseconds as the RFC 3339 text Alertmanager reads."""
    at = datetime.datetime.fromtimestamp(ms / 1000, tz=datetime.UTC)
    return at.isoformat(timespec="milliseconds").replace("+00:00", "Z")


@dataclass(frozen=True)
class Links:
    """Where an alert's links point: the API as its users reach it (``ROUTEWATCH_PUBLIC_URL``)
    and the alert catalogue's page, one section per kind (``ROUTEWATCH_RUNBOOK_URL``)."""

    public_url: str
    runbook_url: str

    def alert(self, alert_id: str) -> str:
        return f"{self.public_url.rstrip('/')}/alerts/{alert_id}"

    def runbook(self, kind: str) -> str:
        return f"{self.runbook_url}#{kind.lower()}"


def _short_evidence(evidence: Mapping[str, Any]) -> str:
    """The evidence as compact JSON, without the opening evidence, cut to
    :data:`EVIDENCE_MAX_CHARS` (the whole of it is behind the alert's link)."""
    text = orjson.dumps({k: v for k, v in evidence.items() if k != "opened_with"}).decode()
    if len(text) <= EVIDENCE_MAX_CHARS:
        return text
    return text[: EVIDENCE_MAX_CHARS - 1] + "…"


def firing(
    alert: Mapping[str, Any],
    labels: Mapping[str, str],
    links: Links,
    *,
    now_ms: int,
    valid_ms: int,
) -> dict[str, Any]:
    """An open alert as an Alertmanager alert: firing until ``now_ms + valid_ms`` unless sent
    again (a pusher that stops lets its alerts end rather than fire for ever)."""
    annotations = {
        "summary": alert["summary"],
        "evidence": _short_evidence(alert["evidence"]),
        "runbook_url": links.runbook(alert["kind"]),
    }
    if alert.get("remedy"):
        annotations["remedy"] = alert["remedy"]
    return {
        "labels": dict(labels),
        "annotations": annotations,
        "startsAt": am_time(min(alert["opened_at"], now_ms)),
        "endsAt": am_time(now_ms + valid_ms),
        "generatorURL": links.alert(alert["id"]),
    }


def resolved(labels: Mapping[str, str], ended_ms: int, links: Links) -> dict[str, Any]:
    """The resolution of what was pushed under ``labels``: ended at ``ended_ms``."""
    return {
        "labels": dict(labels),
        "endsAt": am_time(ended_ms),
        "generatorURL": links.alert(labels["routewatch_id"]),
    }


def silence(
    alert_id: str, *, starts_ms: int, ends_ms: int, comment: str, silence_id: str | None = None
) -> dict[str, Any]:
    """An Alertmanager silence that matches one routewatch alert and nothing else (its
    ``routewatch_id``); with ``silence_id``, the update of that silence."""
    body: dict[str, Any] = {
        "matchers": [
            {"name": "routewatch_id", "value": alert_id, "isRegex": False, "isEqual": True}
        ],
        "startsAt": am_time(starts_ms),
        "endsAt": am_time(ends_ms),
        "createdBy": "routewatch",
        "comment": comment,
    }
    if silence_id is not None:
        body["id"] = silence_id
    return body
