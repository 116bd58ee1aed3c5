"""The emitter's settings (``replay``): the shared keys plus its own, from ``ROUTEWATCH_*``."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from routewatch.settings import Settings

__all__ = ["EmitterSettings"]


class EmitterSettings(Settings):
    """Built once, in the ``replay`` command."""

    kafka_acks: Literal["0", "1", "all"] = Field(
        default="all", description="Kafka producer acks: 0, 1 or all."
    )
    kafka_linger_ms: int = Field(
        default=50,
        ge=0,
        description="How long the Kafka producer waits to fill a batch (adds at most this to "
        "detection latency).",
    )
    kafka_batch_bytes: int = Field(
        default=1_000_000,
        gt=0,
        description="Kafka producer batch size per partition, bytes: at most the broker's "
        "message.max.bytes (1,048,588 by default), which bounds a whole record batch.",
    )
    kafka_compression: Literal["none", "gzip"] = Field(
        default="none", description="Kafka message compression (none or gzip)."
    )
    kafka_retries: int = Field(
        default=5, ge=0, description="Retries of a failed Kafka delivery before it is reported."
    )
    spool_roll_events: int = Field(
        default=5_000, gt=0, description="Events per spool file before a new one is started."
    )
    spool_roll_interval_s: float = Field(
        default=0.25,
        gt=0,
        description="Longest a spool file stays open before it is published: it adds to "
        "detection latency.",
    )
