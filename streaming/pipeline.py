"""The job's stages, each a DataFrame -> DataFrame function that works on a stream or a table.

    lines   = file_lines(text)          # or kafka_lines(records): (value, origin)
    events  = read_events(lines)        # stage 1: validated, with arrival order
    changes = track_clusters(events)    # stage 2+3: route tables and alerts, per cluster,
                                        # and bad input kept with its reason

Route tables and alerts are one stateful stage: every rule is judged after every event on the
route tables *as of that event*, so they share one state per cluster (see docs/streaming.md).
"""

from __future__ import annotations

from pyspark.sql import DataFrame
from pyspark.sql import functions as F
from pyspark.sql.group import GroupedData

from streaming.processor import CHANGES_SCHEMA, QUARANTINE_KEY, ClusterProcessor
from streaming.read import read_events

__all__ = ["by_cluster", "changes", "file_lines", "kafka_lines", "quarantined", "track_clusters"]


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


def by_cluster(events: DataFrame) -> GroupedData:
    """Events grouped for the stateful stage: by their cluster, and bad input under
    :data:`QUARANTINE_KEY` (with its own cluster, if it named one, as ``event_cluster``)."""
    bad = F.col("reason").isNotNull()
    return events.select(
        F.when(bad, F.lit(QUARANTINE_KEY)).otherwise(F.col("cluster")).alias("cluster"),
        F.col("cluster").alias("event_cluster"),
        "arrival",
        "event_id",
        "ts",
        "seq",
        "value",
        "reason",
        "detail",
    ).groupBy("cluster")


def track_clusters(
    events: DataFrame,
    *,
    lateness_ms: int,
    dedupe_horizon_ms: int,
    final: bool = False,
    legacy_state: bool = False,
) -> DataFrame:
    """Events -> changes of each cluster's route tables and alerts, and bad input kept with its
    reason.

    One pass: bad input goes through the same stateful stage, grouped under
    :data:`QUARANTINE_KEY` (which touches no state), so that a batch's input is read and
    validated once. (A union of two branches over ``events`` would read and validate it
    twice: a streaming DataFrame cannot be cached.) ``legacy_state``: the checkpoint may hold
    clusters in the earlier state layout (``streaming.legacy_state``).
    """
    return by_cluster(events).transformWithStateInPandas(
        statefulProcessor=ClusterProcessor(lateness_ms, dedupe_horizon_ms, final, legacy_state),
        outputStructType=CHANGES_SCHEMA,
        outputMode="Append",
        timeMode="None",
    )


def quarantined(events: DataFrame) -> DataFrame:
    """Bad input -> ``bad`` change rows, as a second branch over ``events`` (the plan of
    checkpoints started before the single pass; see :func:`changes`)."""
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
    single_pass: bool = True,
    legacy_state: bool = False,
) -> DataFrame:
    """The whole pipeline: ``(value, origin)`` lines -> change rows of :data:`CHANGES_SCHEMA`.

    ``by_event_time``: a batch's lines come from several independent sources (Kafka
    partitions) and are interleaved by event time (see ``streaming.read``).

    ``single_pass=False`` is the plan of checkpoints started by earlier versions: valid events
    through the stateful stage, unioned with bad input as a second branch, which reads and
    validates the input twice. Spark resumes a checkpoint only with the plan's number of
    sources (two there), so such checkpoints keep that plan until they are reset.
    ``legacy_state``: see :func:`track_clusters`.
    """
    events = read_events(lines, by_event_time=by_event_time)

    def tracked(these: DataFrame) -> DataFrame:
        return track_clusters(
            these,
            lateness_ms=lateness_ms,
            dedupe_horizon_ms=dedupe_horizon_ms,
            final=final,
            legacy_state=legacy_state,
        )

    if single_pass:
        return tracked(events)
    return tracked(events.where(F.col("reason").isNull())).unionByName(quarantined(events))
