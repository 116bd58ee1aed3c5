"""Spark's streaming query events, delivered to Python as one JSON text per batch.

PySpark's ``StreamingQueryListener`` builds each progress event in Python by walking Spark's
Java object through py4j: one round trip per field, per entry of ``durationMs`` and
``eventTime``, per state operator and each of its custom metrics (RocksDB has about twenty),
per source. On the reference fleet that was about 150 ms of the JVM's CPU (Spark's listener
thread, answering py4j) and 50 ms of the driver's per batch, taken from the two cores the
batches need (the README's Performance section). :class:`QueryEvents` receives the progress
as Spark's own JSON instead: two round trips.

It implements Spark's ``PythonStreamingQueryListener`` interface directly, so it is added with
:func:`add_query_events`, not ``spark.streams.addListener``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, ClassVar

import orjson
from pyspark.java_gateway import ensure_callback_server_started
from pyspark.sql import SparkSession

__all__ = ["QueryEvents", "add_query_events"]

JAVA_LISTENER = "org.apache.spark.sql.streaming.PythonStreamingQueryListener"


class QueryEvents:
    """Calls ``on_progress`` with each batch's progress (Spark's ``StreamingQueryProgress``
    as the dict of its JSON: ``id``, ``batchId``, ``numInputRows``, ``durationMs``,
    ``sources``, ...), ``on_idle`` (if given) with the id of a query that is idle — Spark
    reports it every ``spark.sql.streaming.noDataProgressEventInterval`` (10 s) while a query
    finds nothing to read, in place of a progress report — and ``on_terminated`` with a
    stopped query's id and its failure (None when it stopped normally). Spark calls them on its
    listener thread, for every query of the session."""

    def __init__(
        self,
        on_progress: Callable[[dict[str, Any]], None],
        on_terminated: Callable[[str, str | None], None],
        on_idle: Callable[[str], None] | None = None,
    ) -> None:
        self.on_progress = on_progress
        self.on_terminated = on_terminated
        self.on_idle = on_idle

    def onQueryStarted(self, jevent: Any) -> None:
        pass

    def onQueryProgress(self, jevent: Any) -> None:
        self.on_progress(orjson.loads(jevent.progress().json()))

    def onQueryIdle(self, jevent: Any) -> None:
        if self.on_idle is not None:
            self.on_idle(str(jevent.id().toString()))

    def onQueryTerminated(self, jevent: Any) -> None:
        exception = jevent.exception()
        self.on_terminated(
            str(jevent.id().toString()), exception.get() if exception.isDefined() else None
        )

    class Java:  # (py4j: the Java interface this class implements; Java's method names)
        implements: ClassVar[list[str]] = [JAVA_LISTENER]


def add_query_events(spark: SparkSession, events: QueryEvents) -> Any:
    """Add ``events`` to the session's streaming query listeners; returns Spark's listener
    (for ``spark.streams._jsqm.removeListener``)."""
    gateway = spark.sparkContext._gateway
    assert gateway is not None and spark.sparkContext._jvm is not None
    ensure_callback_server_started(gateway)  # type: ignore[no-untyped-call]
    jvm = spark.sparkContext._jvm
    wrapper = jvm.org.apache.spark.sql.streaming.PythonStreamingQueryListenerWrapper(events)
    spark.streams._jsqm.addListener(wrapper)
    return wrapper
