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

import logging
import re
import threading
import time
import weakref
from collections.abc import Callable
from typing import Any, ClassVar

import orjson
from pyspark.java_gateway import ensure_callback_server_started
from pyspark.sql import SparkSession

from routewatch.store import Store, StoreError, StoreUnavailableError
from routewatch.store.backend import locate
from streaming.job.console import Console
from streaming.stages.read import LINES_READ, READ_METRICS

__all__ = [
    "QueryEvents",
    "add_query_events",
    "input_lines",
    "left_input_unread",
    "progress_log",
    "record_start",
    "root_cause",
]

log = logging.getLogger("routewatch.stream")

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


def input_lines(progress: Any) -> int:
    """The lines (Kafka records) a micro-batch read, from its progress: the read stage's own
    count (``streaming.stages.read.counting_lines``), or else Spark's ``numInputRows`` — which
    for the spool, whose source rows are files, counts files."""
    try:  # (Spark's JSON, or PySpark's progress object, whose metrics are rows)
        lines = progress["observedMetrics"][READ_METRICS][LINES_READ]
    except (KeyError, ValueError, TypeError):
        lines = None
    return int(progress["numInputRows"] if lines is None else lines)


def left_input_unread(progress: dict[str, Any]) -> bool:
    """Whether a batch ended before the input its sources had: a source that reports its
    latest offset (Spark's Kafka source, routewatch's) reported one past the batch's end, as
    when a cap per batch (``ROUTEWATCH_KAFKA_MAX_OFFSETS_PER_TRIGGER``) holds a backlog back.
    A source that reports none (the spool's file source) counts as read to its end."""
    return any(
        source.get("latestOffset") is not None
        and source.get("latestOffset") != source.get("endOffset")
        for source in progress.get("sources") or []
    )


def lag_words(now_s: float, newest_ms: int) -> str:
    """The event-time lag for the log: wall clock minus the newest stream time, or, when the
    events are stamped ahead of this host's clock (clock skew, or a trace rebased to a later
    start), how far ahead — never a negative lag."""
    lag = now_s - newest_ms / 1000
    if lag < 0:
        return f"none (events stamped {-lag:.1f} s ahead of this host's clock)"
    return f"{lag:.1f} s"


class ProgressLog:
    """One log line per batch (input rows, duration, event-time lag) and the batch's figures
    in the store, for every routewatch query of one Spark session; and each report, a batch's
    or Spark's idle one, as the job's last sign of life (``jobs``, which ``/readyz`` reads).

    One listener per session (:func:`progress_log`), not one per query: Spark calls every
    listener of a session with every query's events, each call a py4j round trip on Spark's
    one listener thread. Listeners added per query piled up in a session that ran many
    queries (the tests, the benchmarks); their backlog grew, and ``spark.stop()`` waited
    minutes for it to drain. Progress arrives as Spark's JSON (:class:`QueryEvents`).
    """

    def __init__(self) -> None:
        # the queries reported on: id -> (store URL, job name)
        self.queries: dict[str, tuple[str, str]] = {}
        # the operator's lines of a query, if it has any (routewatch stream's)
        self.consoles: dict[str, Console] = {}
        # each query's end, set once it is recorded (Spark calls listeners after stop returns)
        self.ends: dict[str, threading.Event] = {}

    def watch(
        self, query_id: str, store_url: str, job: str, console: Console | None = None
    ) -> None:
        """Report on the query ``query_id`` (a ``StreamingQuery``'s ``id``) as ``job``; after
        each batch, to ``console`` too, if given."""
        self.ends[query_id] = threading.Event()  # (first: terminated may come at once)
        if console is not None:
            self.consoles[query_id] = console
        self.queries[query_id] = (store_url, job)

    def wait_for_end(self, query_id: str, timeout_s: float) -> bool:
        """Wait until the end of query ``query_id`` (stopped, or failed) is recorded in its
        store; whether it was within ``timeout_s``. Its idle and progress reports come first:
        Spark's listener bus delivers a query's events in order."""
        end = self.ends.get(query_id)
        recorded = end is not None and end.wait(timeout_s)
        if recorded:
            self.ends.pop(query_id, None)
        return recorded

    def progress(self, p: dict[str, Any]) -> None:
        target = self.queries.get(p["id"])
        if target is None:
            return
        store_url, job = target
        batch_id, input_rows = p["batchId"], input_lines(p)
        duration = int(p.get("durationMs", {}).get("triggerExecution", 0))
        try:
            store = Store(store_url)  # the job migrated it at start
            try:
                store.record_progress(
                    job, batch_id, input_rows, duration, behind=left_input_unread(p)
                )
                times = [c["stream_time"] for c in store.clusters() if c["stream_time"]]
                lag = lag_words(time.time(), max(times)) if times else "n/a"
                console = self.consoles.get(p["id"])
                if console is not None:
                    console.batch(store, batch_id, input_rows, duration, lag)
            finally:
                store.close()
        except StoreUnavailableError as exc:
            # the figures are for people and metrics; the batch itself is safe in the store
            log.warning("batch %d: progress not recorded: %s", batch_id, exc)
            return
        log.info(
            "batch %d: %d input rows in %d ms, event-time lag %s",
            batch_id,
            input_rows,
            duration,
            lag,
        )

    def idle(self, query_id: str) -> None:
        """Spark's report that the query is idle (every 10 s while it finds nothing to read):
        a write of one row, so that an idle job still shows as alive. Not logged."""
        target = self.queries.get(query_id)
        if target is not None:
            store_url, job = target
            _record(store_url, "idle report", lambda store: store.record_idle(job))

    def terminated(self, query_id: str, exception: str | None) -> None:
        """The query ended: the job's stop (or failure, with its root cause) in the store, so
        that ``/readyz`` says so at once and ``routewatch reset`` need not wait for its
        reports to age."""
        target = self.queries.pop(query_id, None)
        self.consoles.pop(query_id, None)
        if target is None:
            return
        store_url, job = target
        failure = (root_cause(exception) or exception.strip()[:500]) if exception else None
        file = locate(store_url).file
        try:
            if file is None or file.exists():  # (a store deleted meanwhile is not made again)
                # (deleted between the two, it holds no table: a StoreError, said too)

                def stop(store: Store) -> None:
                    store.record_stop(job, failure)

                _record(store_url, "stop", stop, StoreError)
        finally:
            end = self.ends.get(query_id)
            if end is not None:
                end.set()
        log.info("stream stopped%s", f": {exception}" if exception else "")


def _record(
    store_url: str,
    what: str,
    write: Callable[[Store], None],
    errors: type[StoreError] = StoreUnavailableError,
) -> None:
    """One write of the job's reports to its store (migrated at the job's start); a store that
    cannot take it now is said in the log: the reports are for people and /readyz, the
    batches are safe in the store."""
    try:
        store = Store(store_url)
        try:
            write(store)
        finally:
            store.close()
    except errors as exc:
        log.warning("the %s was not recorded: %s", what, exc)


_PY_ERROR = re.compile(r"^[A-Za-z_][\w.]*(Error|Exception|Exit|Interrupt)\b.*$")
_JAVA_CAUSE = re.compile(r"^\s*Caused by: (.+)$")


def root_cause(text: str) -> str:
    """The innermost cause in a failed query's message: the last Python exception line of a
    traceback in it, else the last Java ``Caused by:``, else its first line (a query's
    message nests Spark's wrapper errors around the cause, which comes last)."""
    lines = text.splitlines()
    for pattern in (_PY_ERROR, _JAVA_CAUSE):
        found = [m for line in lines if (m := pattern.match(line.strip()))]
        if found:
            last = found[-1]
            return (last.group(1) if pattern is _JAVA_CAUSE else last.group(0)).strip()
    return lines[0].strip() if lines else ""


def record_start(store_url: str, job: str) -> None:
    """The job's start in its store: a sign of life, as an idle report is, which clears the
    end its run before recorded — so that neither ``/readyz`` nor a reset takes a job that is
    starting again (its first batch may be long) for one that ended."""
    _record(store_url, "start", lambda store: store.record_idle(job))


_PROGRESS_LOGS: weakref.WeakKeyDictionary[SparkSession, ProgressLog] = weakref.WeakKeyDictionary()


def progress_log(spark: SparkSession) -> ProgressLog:
    """The session's routewatch listener, added to it on first use."""
    listener = _PROGRESS_LOGS.get(spark)
    if listener is None:
        listener = _PROGRESS_LOGS[spark] = ProgressLog()
        add_query_events(spark, QueryEvents(listener.progress, listener.terminated, listener.idle))
    return listener
