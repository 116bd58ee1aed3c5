"""The API's settings: the shared keys plus its own, from ``ROUTEWATCH_*``."""

from __future__ import annotations

from pydantic import Field, SecretStr

from routewatch.settings import Settings

__all__ = ["ApiSettings"]


class ApiSettings(Settings):
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
    ready_max_batch_age_s: float = Field(
        default=120.0,
        gt=0,
        description="/readyz fails when the stream job has reported no progress (a batch, or "
        "Spark's idle report every 10 s) for longer than this, or left input unread after each "
        "batch for longer than this.",
    )
