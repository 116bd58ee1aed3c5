"""The Kafka topic as lines: Spark's own ``kafka`` source (the ``spark-sql-kafka-0-10``
connector) as records (:func:`kafka_records`), and its records as ``(value, origin)`` lines
(:func:`kafka_lines`).

The connector is not part of PySpark: the job's JVM takes it from local jars
(``ROUTEWATCH_SPARK_JARS``), from Maven Central at start (``ROUTEWATCH_SPARK_PACKAGES``, which
defaults to the connector at PySpark's own version when the job reads Kafka and no jar is
given: :func:`connector_conf`), or from ``spark-submit --packages``. Its offsets are in the
checkpoint: a restart resumes each partition where the last committed batch ended.
"""

from __future__ import annotations

import socket

import pyspark
from pyspark.errors import AnalysisException
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from routewatch.errors import RoutewatchError
from streaming.settings import StreamingSettings

__all__ = ["CONNECTOR", "connector_conf", "connector_coordinate", "kafka_lines", "kafka_records"]

CONNECTOR = "org.apache.spark:spark-sql-kafka-0-10_2.13"


def connector_coordinate(version: str = pyspark.__version__) -> str:
    """The Maven coordinate of Spark's Kafka connector for this PySpark."""
    return f"{CONNECTOR}:{version}"


def connector_conf(settings: StreamingSettings) -> dict[str, str]:
    """What the job's Spark session needs to read Kafka when routewatch starts its JVM: nothing
    when local jars (``ROUTEWATCH_SPARK_JARS``) or packages (``ROUTEWATCH_SPARK_PACKAGES``) are
    given, else the connector at PySpark's version from Maven Central (``spark.jars.packages``;
    Spark keeps what it fetched in ``~/.ivy2``)."""
    if settings.spark_jars or settings.spark_packages:
        return {}
    return {"spark.jars.packages": connector_coordinate()}


def kafka_lines(records: DataFrame) -> DataFrame:
    """Records of the Kafka source -> ``(value, origin)``: the value's bytes, and its origin,
    the partition and offset."""
    origin = F.concat_ws(
        "|",
        F.lpad(F.col("partition").cast("string"), 6, "0"),
        F.lpad(F.col("offset").cast("string"), 20, "0"),
    )
    # the value's bytes as they are: the read stage decodes them, and input that is not UTF-8
    # is bad input like any other
    return records.select(F.col("value").alias("value"), origin.alias("origin"))


def kafka_records(spark: SparkSession, settings: StreamingSettings) -> DataFrame:
    """The Kafka topic as a stream of records, from Spark's own source."""
    options = {
        "kafka.bootstrap.servers": settings.kafka_bootstrap,
        "subscribe": settings.kafka_topic,
        "startingOffsets": settings.kafka_starting_offsets,
    }
    if settings.kafka_max_offsets_per_trigger:
        options["maxOffsetsPerTrigger"] = str(settings.kafka_max_offsets_per_trigger)
    try:
        return spark.readStream.format("kafka").options(**options).load()
    except AnalysisException:
        raise RoutewatchError(
            "Spark's Kafka source is not on the job's class path: set ROUTEWATCH_SPARK_JARS to "
            f"the jars of {connector_coordinate()} (or ROUTEWATCH_SPARK_PACKAGES to it), or pass "
            "it to spark-submit with --packages (docs/operations.md, Reading Kafka)."
        ) from None


def check_reachable(bootstrap: str, timeout_s: float = 5.0) -> None:
    """Fail in one sentence, before Spark starts, when no broker of ``bootstrap`` accepts a
    connection (Spark's Kafka source would fail the query later with a long stack trace)."""
    problems = []
    for server in [s.strip() for s in bootstrap.split(",") if s.strip()]:
        host, _, port = server.rpartition(":")
        if not host or not port.isdigit():
            problems.append(f"{server} is not host:port")
            continue
        try:
            socket.create_connection((host, int(port)), timeout=timeout_s).close()
            return
        except OSError as exc:
            problems.append(f"{server}: {exc.strerror or exc}")
    raise RoutewatchError(
        f"Kafka does not answer at ROUTEWATCH_KAFKA_BOOTSTRAP={bootstrap} "
        f"({'; '.join(problems) or 'no server named'}): start Kafka, or point the setting at "
        "brokers that run."
    )
