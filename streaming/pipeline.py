"""The job's stages, each a DataFrame -> DataFrame function that works on a stream or a table.

    lines   = kafka_lines(...)          # (value, origin), streaming.sources; or the spool's
                                        # files, spool_files(...), and read_lines, which reads
                                        # their lines in stage 1's Python
    events  = read_events(lines)        # stage 1: validated, with arrival order, and each
                                        # block's summary for the clock
    changes = track_clusters(events)    # stage 2+3: route tables and alerts of every cluster,
                                        # on the stream's one clock, and bad input kept with
                                        # its reason

Route tables and alerts are one stateful stage: every rule is judged after every event on the
route tables *as of that event*. Its state is spread over *state buckets*, one per stateful
task (``spark.sql.shuffle.partitions``): each cluster's state is in as many shards by topic as
buckets, one in each (``streaming.engine.shards``), and every bucket receives every block's
summary, so that each keeps the whole stream's clock and reaches the verdicts one intake would
(``streaming.engine.clock``; docs/streaming.md).
"""

from __future__ import annotations

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.group import GroupedData

from routewatch.errors import RoutewatchError
from streaming.stages.known_tables import DEFAULT_LIMIT
from streaming.stages.read import LinesOf, counting_lines, pack_events, read_packed
from streaming.stages.track import CHANGES_SCHEMA, StreamProcessor

__all__ = ["by_bucket", "changes", "state_keys", "track_clusters"]

# how far to look for a key of every partition (a partition's first key is found within a few
# times the number of partitions)
_KEY_SEARCH = 256


def state_keys(spark: SparkSession, partitions: int) -> list[int]:
    """The grouping key of each state bucket: for bucket ``i``, the smallest int that the
    stateful stage's hash partitioning (Murmur3 of the key, modulo the partitions, which
    Spark's ``hash`` computes alike) sends to partition ``i`` — each bucket its own task."""
    found = (
        spark.range(0, _KEY_SEARCH * partitions)
        .select(F.col("id").cast("int").alias("key"))
        .select("key", F.expr(f"pmod(hash(key), {partitions})").alias("partition"))
        .groupBy("partition")
        .agg(F.min("key").alias("key"))
        .collect()
    )
    keys = {row.partition: row.key for row in found}
    if len(keys) != partitions:
        raise RoutewatchError(
            f"no grouping key was found for each of {partitions} state partitions: set "
            "ROUTEWATCH_STATE_PARTITIONS to a smaller number."
        )
    return [keys[i] for i in range(partitions)]


def partitions_of(spark: SparkSession) -> int:
    """The number of stateful tasks, and so of state buckets: the session's shuffle partitions
    (a resumed query keeps its checkpoint's; the job sets the session's from it first)."""
    return int(str(spark.conf.get("spark.sql.shuffle.partitions")))


def by_bucket(
    events: DataFrame, keys: list[int] | None = None, shards: int | None = None
) -> GroupedData:
    """Events grouped for the stateful stage: one group per state bucket (``keys``: their
    grouping keys, found by default), each cluster in ``shards`` shards (as many as buckets by
    default), bad input with the cluster it names; packed a few thousand to a row
    (:func:`streaming.stages.read.pack_events`)."""
    if keys is None:
        keys = state_keys(events.sparkSession, partitions_of(events.sparkSession))
    return pack_events(events, keys, shards).groupBy("bucket")


def track_clusters(
    events: DataFrame,
    *,
    lateness_ms: int,
    dedupe_horizon_ms: int,
    final: bool = False,
    shards: int | None = None,
) -> DataFrame:
    """Events -> changes of every cluster's route tables and alerts, and bad input kept with
    its reason, in one pass (a streaming DataFrame cannot be cached, so two branches over
    ``events`` would read and validate the input twice); each cluster in ``shards`` shards."""
    keys = state_keys(events.sparkSession, partitions_of(events.sparkSession))
    grouped = by_bucket(events, keys, shards)
    return _tracked(grouped, keys, shards, lateness_ms, dedupe_horizon_ms, final)


def _tracked(
    grouped: GroupedData,
    keys: list[int],
    shards: int | None,
    lateness_ms: int,
    dedupe_horizon_ms: int,
    final: bool,
) -> DataFrame:
    processor = StreamProcessor(lateness_ms, dedupe_horizon_ms, keys, final, shards)
    return grouped.transformWithStateInPandas(
        statefulProcessor=processor,
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
    shards: int | None = None,
    lines_of: LinesOf | None = None,
    known_tables_bytes: int = DEFAULT_LIMIT,
) -> DataFrame:
    """The whole pipeline: ``(value, origin)`` lines -> change rows of :data:`CHANGES_SCHEMA`.

    ``by_event_time``: a batch's lines come from several independent sources (Kafka
    partitions) and are interleaved by event time (see ``streaming.stages.read``).
    ``shards``: each cluster's shards by topic (as many as the state buckets by default).
    ``lines_of``: what makes lines of the input's rows, when they are not lines (the spool's
    files: ``streaming.sources.spool.read_lines``). ``known_tables_bytes``: the topic tables
    each read worker keeps (``ROUTEWATCH_KNOWN_TABLES_MB``).
    """
    keys = state_keys(lines.sparkSession, partitions_of(lines.sparkSession))
    packed = read_packed(
        lines,
        keys,
        shards,
        by_event_time=by_event_time,
        lines_of=lines_of,
        known_tables_bytes=known_tables_bytes,
    )
    grouped = counting_lines(packed).groupBy("bucket")
    return _tracked(grouped, keys, shards, lateness_ms, dedupe_horizon_ms, final)
