"""The streaming job's settings: the shared keys plus its own, from ``ROUTEWATCH_*``."""

from __future__ import annotations

import os
import re
from pathlib import Path

from pydantic import Field, field_validator, model_validator

from routewatch.settings import Settings

__all__ = ["StreamingSettings", "under_spark_submit"]

# the masters Spark 4 accepts: local, local[N], local[*], local[N,F], local-cluster[N,C,M],
# spark://host:port[,host:port], yarn, k8s://...
_MASTER = re.compile(
    r"local(\[(\d+|\*)(,\d+)?\])?|local-cluster\[\d+,\d+,\d+\]"
    r"|spark://[^\s/:,]+:\d+(,[^\s/:,]+:\d+)*|yarn|k8s://\S+"
)


def under_spark_submit() -> bool:
    """Whether ``spark-submit`` started this process (PySpark's driver): its JVM runs already,
    with its own master, address and memory."""
    return "PYSPARK_GATEWAY_PORT" in os.environ


class StreamingSettings(Settings):
    """Built once, in the ``stream`` or ``evaluate`` command."""

    lateness_bound_s: float = Field(
        default=2.0,
        ge=0,
        description="How long an event is held for events that arrive out of order, over the "
        "whole stream; older arrivals are late (0 suits one in-order trace; with several "
        "collectors, more than the largest difference between their delays).",
    )
    dedupe_horizon_s: float = Field(
        default=300.0,
        gt=0,
        description="Event time over which repeated event ids are recognised as duplicates.",
    )
    state_partitions: int = Field(
        default=2,
        ge=1,
        le=1024,
        description="Stateful tasks of the job (spark.sql.shuffle.partitions): its clusters are "
        "spread over this many state buckets, each a task, so the job's stateful work uses up "
        "to this many cores; about the cores of all its executors. Fixed per checkpoint: a "
        "resumed job keeps the number its checkpoint was started with.",
    )
    cluster_shards: int = Field(
        default=0,
        ge=0,
        le=1024,
        description="Shards by topic of each cluster's state, spread over the state partitions "
        "(0: as many as the state partitions, so that one large cluster uses them all; 1: each "
        "cluster whole in one, which suits many clusters of like size: a shard applies every "
        "registration of its cluster). Fixed per checkpoint, as the partitions.",
    )
    state_memory_mb: int = Field(
        default=256,
        ge=16,
        description="Memory all of an executor's RocksDB state stores share, in MB (their "
        "block cache and write buffers; spark.sql.streaming.stateStore.rocksdb.maxMemoryUsageMB"
        "), so that more state partitions do not raise the JVM's peak.",
    )
    known_tables_mb: int = Field(
        default=64,
        ge=0,
        description="Topic tables each read worker (a Spark Python worker) keeps, in MB, so "
        "that a registration of a table it has validated before is not validated again: at "
        "least the text of the tables that worker reads (every broker's, of every cluster, on "
        "the spool; its Kafka partitions' on Kafka). 0 keeps none.",
    )
    trigger_interval_s: float = Field(
        default=1.0, gt=0, description="Micro-batch trigger interval of the long-running job."
    )
    spark_master: str = Field(
        default="local[2]",
        description="Spark master URL: local[N], spark://host:port, yarn or k8s://https://host.",
    )

    @field_validator("spark_master")
    @classmethod
    def _check_master(cls, value: str) -> str:
        if not _MASTER.fullmatch(value):
            raise ValueError(
                f"ROUTEWATCH_SPARK_MASTER is {value!r}, which is not a Spark master URL: use "
                "local[N], spark://host:port, yarn or k8s://https://host:port"
            )
        return value

    @model_validator(mode="after")
    def _archive_outside_the_spool(self) -> StreamingSettings:
        archive = self.spool_archive_dir
        if archive is not None and archive.resolve().is_relative_to(self.spool_dir.resolve()):
            raise ValueError(
                f"ROUTEWATCH_SPOOL_ARCHIVE_DIR ({archive}) is inside the spool "
                f"({self.spool_dir}), whose files the job reads: put it elsewhere"
            )
        return self

    spark_packages: str = Field(
        default="",
        description="Maven coordinates Spark fetches at start (spark.jars.packages), comma "
        "separated; when the job reads Kafka and neither this nor ROUTEWATCH_SPARK_JARS is set, "
        "Spark's Kafka connector at PySpark's version.",
    )
    spark_jars: str = Field(
        default="",
        description="Local jars for the job's JVM (spark.jars), comma separated: e.g. Spark's "
        "Kafka connector and what it needs, where Spark cannot fetch them itself.",
    )
    spark_driver_memory: str | None = Field(
        default=None,
        pattern=r"^[0-9]+[kKmMgGtT]?$",
        description="Heap of the job's Spark JVM (spark.driver.memory, e.g. 1536m); unset: "
        "Spark's default, 1g. Under spark-submit its --driver-memory applies instead.",
    )
    spark_driver_java_options: str = Field(
        default="",
        description="More options of the job's Spark JVM (spark.driver.extraJavaOptions), e.g. "
        "its garbage collector; routewatch's logging configuration is added to them. Under "
        "spark-submit its --driver-java-options apply instead.",
    )
    spark_driver_host: str = Field(
        default="127.0.0.1",
        description="Address the driver binds to and executors reach it at; on a cluster of "
        "several hosts, an address of this host the workers can reach.",
    )
    retention_days: float = Field(
        default=30.0,
        gt=0,
        description="How long resolved alerts, the alert log, closed route intervals and "
        "quarantined input are kept; counters are kept for ever.",
    )
    spool_retention_hours: float = Field(
        default=24.0,
        ge=0,
        description="How long the job keeps a spool file it has read and committed before it "
        "removes it (or moves it to ROUTEWATCH_SPOOL_ARCHIVE_DIR), counted from the file's "
        "modification time; 0 keeps every file for ever.",
    )
    spool_archive_dir: Path | None = Field(
        default=None,
        description="Where read spool files go once past ROUTEWATCH_SPOOL_RETENTION_HOURS, "
        "instead of being deleted (not inside the spool directory).",
    )
    max_files_per_trigger: int | None = Field(
        default=None, gt=0, description="Cap on spool files per micro-batch (none by default)."
    )

    kafka_starting_offsets: str = Field(
        default="earliest",
        description="Where a new query starts reading Kafka: earliest, latest, or a JSON "
        "offsets object as the native source takes it.",
    )
    kafka_max_offsets_per_trigger: int | None = Field(
        default=None, gt=0, description="Cap on Kafka records per micro-batch (none by default)."
    )

    def session_master(self) -> str | None:
        """The master to give the session: none when ``spark-submit`` started this driver (its
        ``--master`` wins) unless ROUTEWATCH_SPARK_MASTER is set."""
        if under_spark_submit() and "spark_master" not in self.model_fields_set:
            return None
        return self.spark_master

    def spark_conf(self) -> dict[str, str]:
        """Spark settings that come from routewatch's (under ``spark-submit``, the driver's
        address only when ROUTEWATCH_SPARK_DRIVER_HOST is set: its --conf may give one)."""
        conf: dict[str, str] = {
            "spark.sql.shuffle.partitions": str(self.state_partitions),
            "spark.sql.streaming.stateStore.rocksdb.boundedMemoryUsage": "true",
            "spark.sql.streaming.stateStore.rocksdb.maxMemoryUsageMB": str(self.state_memory_mb),
        }
        submitted = under_spark_submit()
        if not submitted or "spark_driver_host" in self.model_fields_set:
            conf["spark.driver.host"] = self.spark_driver_host
            conf["spark.driver.bindAddress"] = self.spark_driver_host
        if self.spark_driver_memory and not submitted:  # the driver's JVM is not started yet
            conf["spark.driver.memory"] = self.spark_driver_memory
        if self.spark_driver_java_options and not submitted:
            conf["spark.driver.extraJavaOptions"] = self.spark_driver_java_options
        if self.spark_packages:
            conf["spark.jars.packages"] = self.spark_packages
        if self.spark_jars:
            conf["spark.jars"] = self.spark_jars
        return conf

    @property
    def lateness_ms(self) -> int:
        return round(self.lateness_bound_s * 1000)

    @property
    def retention_ms(self) -> int:
        return round(self.retention_days * 86_400_000)

    @property
    def spool_keep_ms(self) -> int | None:
        """How long read spool files are kept (None: for ever)."""
        return round(self.spool_retention_hours * 3_600_000) or None

    @property
    def dedupe_horizon_ms(self) -> int:
        return round(self.dedupe_horizon_s * 1000)

    @property
    def known_tables_bytes(self) -> int:
        return self.known_tables_mb * 1024 * 1024
