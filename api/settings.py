"""The API's settings: the shared keys plus its own, from ``ROUTEWATCH_*``."""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import Field, SecretStr, field_validator
from pydantic_settings import NoDecode

from routewatch.alertmanager import check_static_labels
from routewatch.remedy.settings import RemedySettings
from routewatch.settings import Settings

__all__ = ["ApiSettings", "PublicSettings"]


class PublicSettings(Settings):
    """What the API and ``routewatch notify`` agree on: where the on-call reaches the API, and
    the labels an operator adds to every routewatch alert (the same in the push to Alertmanager
    and in the per-alert series, so that both make one alert)."""

    public_url: str = Field(
        default="http://127.0.0.1:8000",
        description="The routewatch API as its users reach it (behind a reverse proxy: with "
        "its path prefix): alerts link to <public_url>/alerts/<id>, and the console's links "
        "start with its path.",
    )

    alert_labels: Annotated[dict[str, str], NoDecode] = Field(
        default_factory=dict,
        description="Static labels on every alert pushed to Alertmanager and every per-alert "
        "series, as name=value pairs separated by commas (e.g. env=prod,team=mq).",
    )

    @field_validator("public_url")
    @classmethod
    def _check_public_url(cls, value: str) -> str:
        if not value.startswith(("http://", "https://")):
            raise ValueError(
                f"ROUTEWATCH_PUBLIC_URL must be an http:// or https:// URL, got '{value}'"
            )
        return value.rstrip("/")

    @property
    def base_path(self) -> str:
        """The path prefix of the public URL ('' or e.g. '/routewatch'): the console's links
        start with it."""
        import urllib.parse

        return urllib.parse.urlsplit(self.public_url).path.rstrip("/")

    @field_validator("alert_labels", mode="before")
    @classmethod
    def _parse_labels(cls, value: Any) -> Any:
        if isinstance(value, dict):
            pairs = value
        else:
            pairs = {}
            for part in filter(None, (p.strip() for p in str(value or "").split(","))):
                name, sep, label = part.partition("=")
                if not sep:
                    raise ValueError(
                        f"ROUTEWATCH_ALERT_LABELS takes name=value pairs separated by commas, "
                        f"got '{part}'"
                    )
                pairs[name.strip()] = label.strip()
        try:
            return check_static_labels(pairs)
        except ValueError as exc:
            raise ValueError(f"ROUTEWATCH_ALERT_LABELS: {exc}") from None


class ApiSettings(PublicSettings, RemedySettings):
    """Built once, in ``routewatch api`` (or by a test, for ``create_app``)."""

    api_host: str = Field(default="127.0.0.1", description="Address the API listens on.")
    api_port: int = Field(default=8000, ge=1, le=65535, description="Port the API listens on.")
    api_token: SecretStr | None = Field(
        default=None,
        description="Bearer token for POST /alerts/{id}/ack and /silence; unset disables them.",
    )
    api_worker_threads: int = Field(
        default=4,
        ge=1,
        le=256,
        description="Threads that run the API's store reads; more queue for Python's GIL and "
        "make each request slower under load.",
    )
    metrics_max_topics: int = Field(
        default=200,
        gt=0,
        description="Label cardinality bound: per-topic metrics cover at most this many topics, "
        "the worst-covered first.",
    )
    alert_series_max: int = Field(
        default=1000,
        ge=1,
        description="Label cardinality bound of routewatch_alert_open: at most this many "
        "alerts get a series of their own (critical first, then the oldest); the rest are "
        "counted in one overflow series per kind.",
    )
    ready_max_batch_age_s: float = Field(
        default=120.0,
        gt=0,
        description="/readyz fails when the stream job has reported no progress (a batch, or "
        "Spark's idle report every 10 s) for longer than this, or left input unread after each "
        "batch for longer than this.",
    )
