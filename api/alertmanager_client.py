"""Alertmanager's v2 API, as ``routewatch notify`` uses it: post alerts, read the alerts with
their silences, read, post and expire silences. Plain HTTP with the standard library; every
failure is an :class:`AlertmanagerError` with one line saying what went wrong."""

from __future__ import annotations

import datetime
import urllib.error
import urllib.parse
import urllib.request
from typing import Any

import orjson

__all__ = ["BATCH", "Alertmanager", "AlertmanagerError", "parse_time"]

BATCH = 500  # alerts per request


class AlertmanagerError(Exception):
    """An Alertmanager did not answer, or refused a request."""


def parse_time(text: str) -> int:
    """Alertmanager's RFC 3339 time (nanoseconds allowed) as epoch milliseconds."""
    head, _, rest = text.partition(".")
    if rest:  # fractional seconds, then the zone
        digits = "".join(c for c in rest if c.isdigit())
        zone = rest[len(digits) :]
        text = f"{head}.{digits[:6].ljust(6, '0')}{zone}"
    at = datetime.datetime.fromisoformat(text.replace("Z", "+00:00"))
    return int(at.timestamp() * 1000)


class Alertmanager:
    """One Alertmanager, by its base URL (``http://host:9093``, or with a path prefix)."""

    def __init__(self, url: str, timeout_s: float = 10.0) -> None:
        self.url = url.rstrip("/")
        self.timeout_s = timeout_s

    def _call(
        self, method: str, path: str, body: Any = None, query: dict[str, Any] | None = None
    ) -> Any:
        address = f"{self.url}/api/v2{path}"
        if query:
            address += "?" + urllib.parse.urlencode(query, doseq=True)
        data = None if body is None else orjson.dumps(body)
        request = urllib.request.Request(
            address, data=data, method=method, headers={"Content-Type": "application/json"}
        )
        try:
            with urllib.request.urlopen(request, timeout=self.timeout_s) as response:
                raw = response.read()
        except urllib.error.HTTPError as exc:
            detail = exc.read().decode(errors="replace").strip()[:300]
            raise AlertmanagerError(
                f"Alertmanager at {self.url} refused {method} {path} with HTTP {exc.code}: "
                f"{detail or exc.reason}"
            ) from None
        except (urllib.error.URLError, OSError) as exc:
            reason = getattr(exc, "reason", exc)
            raise AlertmanagerError(
                f"Alertmanager at {self.url} did not answer {method} {path}: {reason}"
            ) from None
        return orjson.loads(raw) if raw.strip() else None

    def post_alerts(self, alerts: list[dict[str, Any]]) -> None:
        """Send alerts, firing or resolved, :data:`BATCH` to a request (as Prometheus
        batches them; an empty list sends nothing)."""
        for start in range(0, len(alerts), BATCH):
            self._call("POST", "/alerts", alerts[start : start + BATCH])

    def alerts(self) -> list[dict[str, Any]]:
        """routewatch's alerts that this Alertmanager holds, active, silenced or inhibited,
        each with ``status.silencedBy``."""
        found = self._call("GET", "/alerts", query={"filter": 'routewatch_id=~".+"'})
        return list(found or [])

    def silences(self) -> list[dict[str, Any]]:
        return list(self._call("GET", "/silences") or [])

    def post_silence(self, silence: dict[str, Any]) -> str:
        """Create a silence, or update the one whose ``id`` it carries; its id."""
        return str(self._call("POST", "/silences", silence)["silenceID"])

    def expire_silence(self, silence_id: str) -> None:
        self._call("DELETE", f"/silence/{urllib.parse.quote(silence_id)}")
