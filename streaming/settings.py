"""The streaming job's settings: the shared keys plus its own, from ``ROUTEWATCH_*``."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from routewatch.settings import Settings

__all__ = ["StreamingSettings"]


class StreamingSettings(Settings):
    """Built once, in the ``stream`` or ``evaluate`` command."""

    lateness_bound_s: float = Field(
        default=2.0,
        ge=0,
        description="How long an event is held for events of its cluster that arrive out of "
        "order; older arrivals are late (0 suits one in-order trace).",
    )
    dedupe_horizon_s: float = Field(
        default=300.0,
        gt=0,
        description="Event time over which repeated event ids are recognised as duplicates.",
    )
    trigger_interval_s: float = Field(
        default=1.0, gt=0, description="Micro-batch trigger interval of the long-running job."
    )
    spark_master: str = Field(default="local[2]", description="Spark master URL.")
    spark_packages: str = Field(
        default="",
        description="Maven coordinates Spark fetches at start (spark.jars.packages), e.g. "
        "org.apache.spark:spark-sql-kafka-0-10_2.13:4.3.0 for Spark's own Kafka source.",
    )
    retention_days: float = Field(
        default=30.0,
        gt=0,
        description="How long resolved alerts, the alert log, closed route intervals and "
        "quarantined input are kept; counters are kept for ever.",
    )
    max_files_per_trigger: int | None = Field(
        default=None, gt=0, description="Cap on spool files per micro-batch (none by default)."
    )

    kafka_source: Literal["auto", "native", "python"] = Field(
        default="auto",
        description="Which Kafka source: Spark's own (native; needs the spark-sql-kafka "
        "connector on the classpath), routewatch's Python one, or native when present (auto).",
    )
    kafka_starting_offsets: str = Field(
        default="earliest",
        description="Where a new query starts reading Kafka: earliest, latest, or a JSON "
        "offsets object as the native source takes it.",
    )
    kafka_max_offsets_per_trigger: int | None = Field(
        default=None, gt=0, description="Cap on Kafka records per micro-batch (none by default)."
    )

    def spark_conf(self) -> dict[str, str]:
        """Spark settings that come from routewatch's."""
        return {"spark.jars.packages": self.spark_packages} if self.spark_packages else {}

    @property
    def lateness_ms(self) -> int:
        return round(self.lateness_bound_s * 1000)

    @property
    def retention_ms(self) -> int:
        return round(self.retention_days * 86_400_000)

    @property
    def dedupe_horizon_ms(self) -> int:
        return round(self.dedupe_horizon_s * 1000)
