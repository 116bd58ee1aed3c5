"""The Kafka topic as lines: Spark's own ``kafka`` source when its connector is on the classpath
(:func:`kafka_records`), else a Kafka source on PySpark's Python Data Source API, with
kafka-python (:class:`KafkaDataSource`); either's records as ``(value, origin)`` lines
(:func:`kafka_lines`).

The Python source is used when Spark's own is not on the classpath (it is not downloadable here),
and in every test. It offers the native source's columns (``key, value, topic, partition,
offset, timestamp, timestampType``) and option names (``kafka.bootstrap.servers``,
``subscribe``, ``startingOffsets``, ``maxOffsetsPerTrigger``, ``failOnDataLoss``), plus
``kafka.api.version`` (e.g. ``0.9``), which kafka-python needs against old brokers.

Offsets: the stream offset is ``{topic: {partition: next offset}}``, as the native source
writes it, so Spark's checkpoint holds exactly where each partition stands and a restart
resumes there. ``maxOffsetsPerTrigger`` is honoured through admission control: PySpark 4.3
passes ``latestOffset(start, limit)`` the batch's start offset and a ``ReadMaxRows`` limit, and
the cap is shared among partitions in proportion to their backlog. Each partition of a batch
is one Spark task that reads exactly ``[start, end)`` and yields Arrow record batches.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
from pyspark.errors import AnalysisException
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.datasource import DataSource, DataSourceStreamReader, InputPartition
from pyspark.sql.streaming.datasource import ReadAllAvailable, ReadLimit, ReadMaxRows
from pyspark.sql.types import StructType

from routewatch.errors import RoutewatchError
from streaming.settings import StreamingSettings

__all__ = [
    "KAFKA_SCHEMA",
    "KafkaDataSource",
    "KafkaPartition",
    "kafka_lines",
    "kafka_records",
    "share_cap",
]

KAFKA_SCHEMA = (
    "key binary, value binary, topic string, partition int, offset long, "
    "timestamp timestamp, timestampType int"
)
_ARROW = pa.schema(
    [
        ("key", pa.binary()),
        ("value", pa.binary()),
        ("topic", pa.string()),
        ("partition", pa.int32()),
        ("offset", pa.int64()),
        ("timestamp", pa.timestamp("us", tz="UTC")),
        ("timestampType", pa.int32()),
    ]
)
_ARROW_ROWS = 4_096
_STALL_S = 60.0


@dataclass(frozen=True)
class KafkaPartition(InputPartition):
    """One Kafka partition's slice of a micro-batch: offsets ``[start, end)``."""

    topic: str
    partition: int
    start: int
    end: int


def share_cap(start: dict[int, int], latest: dict[int, int], cap: int) -> dict[int, int]:
    """End offsets that admit at most ``cap`` records, shared in proportion to each partition's
    backlog (rounded down, the remainder to the largest backlogs, ties by partition)."""
    backlog = {p: max(latest[p] - start.get(p, 0), 0) for p in latest}
    total = sum(backlog.values())
    if total <= cap:
        return dict(latest)
    shares = {p: backlog[p] * cap // total for p in backlog}
    left = cap - sum(shares.values())
    for p in sorted(backlog, key=lambda p: (-(backlog[p] - shares[p]), p))[:left]:
        shares[p] += 1
    return {p: start.get(p, 0) + shares[p] for p in latest}


def _api_version(text: str | None) -> tuple[int, ...] | None:
    return None if not text or text == "auto" else tuple(int(x) for x in text.split("."))


class _Client:
    """The kafka-python consumer the reader uses for metadata and offsets."""

    def __init__(self, options: dict[str, str]) -> None:
        from kafka import KafkaConsumer

        kwargs: dict[str, Any] = {
            "bootstrap_servers": options["kafka.bootstrap.servers"].split(","),
            "enable_auto_commit": False,
            "group_id": None,
        }
        version = _api_version(options.get("kafka.api.version"))
        if version is not None:
            kwargs["api_version"] = version
        self.consumer = KafkaConsumer(**kwargs)

    def partitions(self, topic: str) -> list[int]:
        parts = self.consumer.partitions_for_topic(topic)
        if not parts:
            self.consumer.topics()  # refresh metadata once (the topic may be new)
            parts = self.consumer.partitions_for_topic(topic)
        return sorted(parts or ())

    def offsets(self, topic: str, which: str) -> dict[int, int]:
        from kafka import TopicPartition

        tps = [TopicPartition(topic, p) for p in self.partitions(topic)]
        if not tps:
            return {}
        found = (
            self.consumer.beginning_offsets(tps)
            if which == "earliest"
            else self.consumer.end_offsets(tps)
        )
        return {tp.partition: int(off) for tp, off in found.items()}

    def close(self) -> None:
        self.consumer.close()


class KafkaStreamReader(DataSourceStreamReader):
    """Plans micro-batches of Kafka offsets; ``options`` have lower-cased names."""

    def __init__(self, options: dict[str, str]) -> None:
        self.options = options
        self.topic = options["subscribe"]
        self.starting = options.get("startingoffsets", "earliest")
        cap = options.get("maxoffsetspertrigger")
        self.cap = int(cap) if cap else None
        self.fail_on_data_loss = options.get("failondataloss", "true").lower() != "false"
        self._client: _Client | None = None
        self._latest: dict[str, Any] | None = None  # the topic's end, as last seen

    @property
    def client(self) -> _Client:
        if self._client is None:
            self._client = _Client(self.options)
        return self._client

    def _offset(self, per_partition: dict[int, int]) -> dict[str, Any]:
        return {self.topic: {str(p): o for p, o in sorted(per_partition.items())}}

    def _parse(self, offset: dict[str, Any]) -> dict[int, int]:
        return {int(p): int(o) for p, o in offset.get(self.topic, {}).items()}

    def initialOffset(self) -> dict[str, Any]:
        if self.starting in ("earliest", "latest"):
            return self._offset(self.client.offsets(self.topic, self.starting))
        import json

        return {self.topic: json.loads(self.starting)[self.topic]}

    def getDefaultReadLimit(self) -> ReadLimit:
        return ReadMaxRows(self.cap) if self.cap else ReadAllAvailable()

    def latestOffset(self, start: dict[str, Any], limit: ReadLimit) -> dict[str, Any]:
        begin = self._parse(start)
        latest = self.client.offsets(self.topic, "latest")
        for p in latest:  # a partition added since the start is read from its beginning
            if p not in begin:
                begin[p] = self.client.offsets(self.topic, "earliest").get(p, 0)
        latest = {p: max(o, begin.get(p, 0)) for p, o in latest.items()}
        self._latest = self._offset(latest)
        if isinstance(limit, ReadMaxRows):
            latest = share_cap(begin, latest, limit.max_rows)
        return self._offset(latest)

    def reportLatestOffset(self) -> dict[str, Any] | None:
        """The topic's end when the batch was planned, whatever the cap let in: Spark puts it
        in the batch's progress (``latestOffset``), where a batch that ended before it shows
        that records wait (the job is behind; ``/readyz``)."""
        return self._latest

    def partitions(self, start: dict[str, Any], end: dict[str, Any]) -> list[InputPartition]:
        begin, finish = self._parse(start), self._parse(end)
        return [
            KafkaPartition(self.topic, p, begin.get(p, 0), finish[p])
            for p in sorted(finish)
            if finish[p] > begin.get(p, 0)
        ]

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        assert isinstance(partition, KafkaPartition)
        yield from read_partition(self.options, partition, self.fail_on_data_loss)

    def commit(self, end: dict[str, Any]) -> None:
        pass  # the offsets live in Spark's checkpoint

    def stop(self) -> None:
        if self._client is not None:
            self._client.close()
            self._client = None


def read_partition(
    options: dict[str, str], part: KafkaPartition, fail_on_data_loss: bool = True
) -> Iterator[pa.RecordBatch]:
    """Every record of ``[part.start, part.end)``, in offset order, as Arrow batches."""
    from kafka import KafkaConsumer, TopicPartition

    kwargs: dict[str, Any] = {
        "bootstrap_servers": options["kafka.bootstrap.servers"].split(","),
        "enable_auto_commit": False,
        "group_id": None,
        "auto_offset_reset": "none",
        "max_partition_fetch_bytes": 8 << 20,
    }
    version = _api_version(options.get("kafka.api.version"))
    if version is not None:
        kwargs["api_version"] = version
    consumer = KafkaConsumer(**kwargs)
    tp = TopicPartition(part.topic, part.partition)
    try:
        consumer.assign([tp])
        consumer.seek(tp, part.start)
        rows: dict[str, list[Any]] = {name: [] for name in _ARROW.names}
        expected = part.start
        last_progress = time.monotonic()
        while expected < part.end:
            polled = consumer.poll(timeout_ms=1000, max_records=_ARROW_ROWS).get(tp, [])
            if not polled:
                if time.monotonic() - last_progress > _STALL_S:
                    raise RuntimeError(
                        f"Kafka partition {part.topic}-{part.partition} gave no record at offset "
                        f"{expected} for {_STALL_S:.0f} s (planned up to {part.end})"
                    )
                continue
            last_progress = time.monotonic()
            for record in polled:
                if record.offset < expected or record.offset >= part.end:
                    continue
                if record.offset > expected and fail_on_data_loss:
                    raise RuntimeError(
                        f"Kafka partition {part.topic}-{part.partition} lost offsets "
                        f"{expected}..{record.offset - 1} (failOnDataLoss=true)"
                    )
                expected = record.offset + 1
                rows["key"].append(record.key)
                rows["value"].append(record.value)
                rows["topic"].append(part.topic)
                rows["partition"].append(part.partition)
                rows["offset"].append(record.offset)
                stamp = record.timestamp  # None or -1 before Kafka 0.10's message format
                rows["timestamp"].append(stamp * 1000 if stamp is not None and stamp >= 0 else None)
                rows["timestampType"].append(max(record.timestamp_type or 0, 0))
            if len(rows["offset"]) >= _ARROW_ROWS or expected >= part.end:
                yield pa.RecordBatch.from_pydict(rows, schema=_ARROW)
                rows = {name: [] for name in _ARROW.names}
    finally:
        consumer.close()


class KafkaDataSource(DataSource):
    """``spark.readStream.format("routewatch_kafka")`` after ``spark.dataSource.register``."""

    @classmethod
    def name(cls) -> str:
        return "routewatch_kafka"

    def schema(self) -> str:
        return KAFKA_SCHEMA

    def streamReader(self, schema: StructType) -> DataSourceStreamReader:
        for required in ("kafka.bootstrap.servers", "subscribe"):
            if required not in self.options:
                raise ValueError(f"the routewatch_kafka source needs the option {required}")
        # Spark hands options over case-insensitively; keep them lower-cased.
        return KafkaStreamReader({k.lower(): v for k, v in self.options.items()})


def kafka_lines(records: DataFrame) -> DataFrame:
    """Records of a Kafka source (native or ours) -> ``(value, origin)``; origin is the
    partition and offset."""
    origin = F.concat_ws(
        "|",
        F.lpad(F.col("partition").cast("string"), 6, "0"),
        F.lpad(F.col("offset").cast("string"), 20, "0"),
    )
    return records.select(F.col("value").cast("string").alias("value"), origin.alias("origin"))


def kafka_records(spark: SparkSession, settings: StreamingSettings) -> DataFrame:
    """The Kafka topic as a stream of records: Spark's own ``kafka`` source when its connector
    is on the classpath (and ``kafka_source`` allows it), else routewatch's Python source."""
    options = {
        "kafka.bootstrap.servers": settings.kafka_bootstrap,
        "subscribe": settings.kafka_topic,
        "startingOffsets": settings.kafka_starting_offsets,
    }
    if settings.kafka_max_offsets_per_trigger:
        options["maxOffsetsPerTrigger"] = str(settings.kafka_max_offsets_per_trigger)
    if settings.kafka_source in ("auto", "native"):
        try:
            return spark.readStream.format("kafka").options(**options).load()
        except AnalysisException:
            if settings.kafka_source == "native":
                raise RoutewatchError(
                    "Spark's kafka source is not on the classpath: start the job with "
                    "--packages org.apache.spark:spark-sql-kafka-0-10_2.13:<spark version>, "
                    "or set ROUTEWATCH_KAFKA_SOURCE=python."
                ) from None
    spark.dataSource.register(KafkaDataSource)
    if settings.kafka_api_version is not None:
        options["kafka.api.version"] = ".".join(map(str, settings.kafka_api_version))
    return spark.readStream.format(KafkaDataSource.name()).options(**options).load()
