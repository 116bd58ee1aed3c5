"""The job's stages, each a DataFrame -> DataFrame function that works on a stream or a table.

    lines   = file_lines(text)          # or kafka_lines(records): (value, origin)
    events  = read_events(lines)        # stage 1: validated, with arrival order
    changes = track_clusters(events)    # stage 2+3: route tables and alerts, per cluster
            + quarantined(events)       # bad input, kept with its reason

Route tables and alerts are one stateful stage: every rule is judged after every event on the
route tables *as of that event*, so they share one state per cluster (see docs/streaming.md).
"""

from __future__ import annotations

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from streaming.processor import CHANGES_SCHEMA, ClusterProcessor
from streaming.read import read_events

__all__ = ["changes", "file_lines", "kafka_lines", "quarantined", "track_clusters"]


def file_lines(text: DataFrame) -> DataFrame:
    """Lines of Spark's text source -> ``(value, origin)``; origin sorts files by modification
    time, then path, then block."""
    meta = F.col("_metadata")
    origin = F.concat_ws(
        "|",
        F.lpad(F.unix_millis(meta["file_modification_time"]).cast("string"), 15, "0"),
        meta["file_path"],
        F.lpad(meta["file_block_start"].cast("string"), 15, "0"),
    )
    return text.select("value", origin.alias("origin"))


def kafka_lines(records: DataFrame) -> DataFrame:
    """Records of a Kafka source (native or ours) -> ``(value, origin)``; origin is the
    partition and offset."""
    origin = F.concat_ws(
        "|",
        F.lpad(F.col("partition").cast("string"), 6, "0"),
        F.lpad(F.col("offset").cast("string"), 20, "0"),
    )
    return records.select(F.col("value").cast("string").alias("value"), origin.alias("origin"))


def track_clusters(
    events: DataFrame, *, lateness_ms: int, dedupe_horizon_ms: int, final: bool = False
) -> DataFrame:
    """Valid events -> changes of each cluster's route tables and alerts."""
    valid = events.where(F.col("reason").isNull()).select(
        "cluster", "arrival", "event_id", "ts", "seq", "value"
    )
    return valid.groupBy("cluster").transformWithStateInPandas(
        statefulProcessor=ClusterProcessor(lateness_ms, dedupe_horizon_ms, final),
        outputStructType=CHANGES_SCHEMA,
        outputMode="Append",
        timeMode="None",
    )


def quarantined(events: DataFrame) -> DataFrame:
    """Bad input -> ``bad`` change rows carrying the raw text, reason and detail."""
    bad = events.where(F.col("reason").isNotNull())
    payload = F.to_json(F.struct(F.col("value").alias("raw"), "reason", "detail"))
    return bad.select(
        "cluster",
        F.lit("bad").alias("kind"),
        F.col("reason").alias("key"),
        F.lit(None).cast("long").alias("at"),
        payload.alias("payload"),
    )


def changes(
    lines: DataFrame,
    *,
    lateness_ms: int,
    dedupe_horizon_ms: int,
    final: bool = False,
    by_event_time: bool = False,
) -> DataFrame:
    """The whole pipeline: ``(value, origin)`` lines -> change rows of :data:`CHANGES_SCHEMA`.

    ``by_event_time``: a batch's lines come from several independent sources (Kafka
    partitions) and are interleaved by event time (see ``streaming.read``).
    """
    events = read_events(lines, by_event_time=by_event_time)
    tracked = track_clusters(
        events, lateness_ms=lateness_ms, dedupe_horizon_ms=dedupe_horizon_ms, final=final
    )
    return tracked.unionByName(quarantined(events))
