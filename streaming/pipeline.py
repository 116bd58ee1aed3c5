"""The job's stages, each a DataFrame -> DataFrame function that works on a stream or a table.

    lines   = spool_lines(...)          # or kafka_lines(...): (value, origin), streaming.sources
    events  = read_events(lines)        # stage 1: validated, with arrival order
    changes = track_clusters(events)    # stage 2+3: route tables and alerts of every cluster,
                                        # on the stream's one clock, and bad input kept with
                                        # its reason

Route tables and alerts are one stateful stage: every rule is judged after every event on the
route tables *as of that event*, and stream time and the lateness bound are the whole stream's,
so the stage keeps one state for the whole stream (see docs/streaming.md).
"""

from __future__ import annotations

from pyspark.sql import DataFrame
from pyspark.sql import functions as F
from pyspark.sql.group import GroupedData

from streaming.stages.read import pack_events, read_events
from streaming.stages.track import CHANGES_SCHEMA, STREAM_KEY, StreamProcessor

__all__ = ["by_stream", "changes", "track_clusters"]


def by_stream(events: DataFrame) -> GroupedData:
    """Events grouped for the stateful stage: all in one group (:data:`STREAM_KEY`), bad input
    included, since the stream has one clock; packed a few thousand to a row
    (:func:`streaming.stages.read.pack_events`)."""
    return pack_events(events).select(F.lit(STREAM_KEY).alias("stream"), "events").groupBy("stream")


def track_clusters(
    events: DataFrame, *, lateness_ms: int, dedupe_horizon_ms: int, final: bool = False
) -> DataFrame:
    """Events -> changes of every cluster's route tables and alerts, and bad input kept with
    its reason, in one pass (a streaming DataFrame cannot be cached, so two branches over
    ``events`` would read and validate the input twice)."""
    return by_stream(events).transformWithStateInPandas(
        statefulProcessor=StreamProcessor(lateness_ms, dedupe_horizon_ms, final),
        outputStructType=CHANGES_SCHEMA,
        outputMode="Append",
        timeMode="None",
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
    partitions) and are interleaved by event time (see ``streaming.stages.read``).
    """
    events = read_events(lines, by_event_time=by_event_time)
    return track_clusters(
        events, lateness_ms=lateness_ms, dedupe_horizon_ms=dedupe_horizon_ms, final=final
    )
