"""The two ways the pipeline runs: over finite traces (``evaluate``), and as the long-running
job over the spool (``stream``). Both wire the same stages of :mod:`streaming.pipeline`."""

from __future__ import annotations

import dataclasses
import faulthandler
import logging
import os
import signal
import threading
import time
import weakref
from pathlib import Path
from types import FrameType
from typing import Any

from pyspark.errors import AnalysisException
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql.streaming.query import StreamingQuery

from routewatch.alerts import Alert, StoredAlert
from routewatch.changes import alert_versions
from routewatch.errors import RoutewatchError
from routewatch.store import Store, StoreUnavailableError, open_store
from streaming.engine.layout import STATE_LAYOUT
from streaming.kafka_source import KafkaDataSource
from streaming.pipeline import changes, file_lines, kafka_lines
from streaming.progress import QueryEvents, add_query_events
from streaming.session import set_log_level, spark_session, stop_session
from streaming.settings import StreamingSettings
from streaming.sink import job_name, store_writer

__all__ = [
    "check_checkpoint",
    "check_readable",
    "evaluate_traces",
    "exit_unless_stopped_within",
    "final_alerts",
    "kafka_records",
    "progress_log",
    "run_stream",
    "start_stream",
]

log = logging.getLogger("routewatch.stream")


def check_readable(path: Path) -> None:
    """Fail with one sentence when a trace cannot be read."""
    try:
        with path.open("rb") as f:
            f.read(1)
    except OSError as exc:
        raise RoutewatchError(f"cannot read the trace {path}: {exc.strerror}.") from None


def final_alerts(rows: list[Any]) -> list[Alert]:
    """The last version of each alert among change rows, ordered by opening."""
    latest = {alert.id: alert for alert in alert_versions(rows)}
    return sorted(latest.values(), key=lambda a: (a.opened_at, a.kind, a.id))


def evaluate_traces(
    spark: SparkSession, paths: list[Path], settings: StreamingSettings
) -> dict[str, list[dict[str, Any]]]:
    """Run the pipeline to completion over each trace separately; the alerts each ends with."""
    for path in paths:
        check_readable(path)
    out: dict[str, list[dict[str, Any]]] = {}
    for path in paths:
        text = spark.read.format("text").load(str(path.absolute()))
        rows = changes(
            file_lines(text),
            lateness_ms=settings.lateness_ms,
            dedupe_horizon_ms=settings.dedupe_horizon_ms,
            final=True,
        ).collect()
        detected = int(time.time() * 1000)
        out[str(path)] = [
            dataclasses.asdict(StoredAlert.detected(a, detected)) for a in final_alerts(rows)
        ]
    return out


def _left_input_unread(progress: dict[str, Any]) -> bool:
    """Whether a batch ended before the input its sources had: a source that reports its
    latest offset (Spark's Kafka source, routewatch's) reported one past the batch's end, as
    when a cap per batch (``ROUTEWATCH_KAFKA_MAX_OFFSETS_PER_TRIGGER``) holds a backlog back.
    A source that reports none (the spool's file source) counts as read to its end."""
    return any(
        source.get("latestOffset") is not None
        and source.get("latestOffset") != source.get("endOffset")
        for source in progress.get("sources") or []
    )


class _ProgressLog:
    """One log line per batch (input rows, duration, event-time lag) and the batch's figures
    in the store, for every routewatch query of one Spark session; and each report, a batch's
    or Spark's idle one, as the job's last sign of life (``jobs``, which ``/readyz`` reads).

    One listener per session (:func:`progress_log`), not one per query: Spark calls every
    listener of a session with every query's events, each call a py4j round trip on Spark's
    one listener thread. Listeners added per query piled up in a session that ran many
    queries (the tests, the benchmarks); their backlog grew, and ``spark.stop()`` waited
    minutes for it to drain. Progress arrives as Spark's JSON (``streaming.progress``).
    """

    def __init__(self) -> None:
        # the queries reported on: id -> (store URL, job name)
        self.queries: dict[str, tuple[str, str]] = {}

    def watch(self, query: StreamingQuery, store_url: str, job: str) -> None:
        self.queries[str(query.id)] = (store_url, job)

    def progress(self, p: dict[str, Any]) -> None:
        target = self.queries.get(p["id"])
        if target is None:
            return
        store_url, job = target
        batch_id, input_rows = p["batchId"], p["numInputRows"]
        duration = int(p.get("durationMs", {}).get("triggerExecution", 0))
        try:
            store = Store(store_url)  # the job migrated it at start
            try:
                store.record_progress(
                    job, batch_id, input_rows, duration, behind=_left_input_unread(p)
                )
                times = [c["stream_time"] for c in store.clusters() if c["stream_time"]]
            finally:
                store.close()
        except StoreUnavailableError as exc:
            # the figures are for people and metrics; the batch itself is safe in the store
            log.warning("batch %d: progress not recorded: %s", batch_id, exc)
            return
        lag = f"{time.time() - max(times) / 1000:.1f} s" if times else "n/a"
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
        if target is None:
            return
        store_url, job = target
        try:
            store = Store(store_url)
            try:
                store.record_idle(job)
            finally:
                store.close()
        except StoreUnavailableError as exc:
            log.warning("idle report not recorded: %s", exc)

    def terminated(self, query_id: str, exception: str | None) -> None:
        if self.queries.pop(query_id, None) is None:
            return
        log.info("stream stopped%s", f": {exception}" if exception else "")


_PROGRESS_LOGS: weakref.WeakKeyDictionary[SparkSession, _ProgressLog] = weakref.WeakKeyDictionary()


def progress_log(spark: SparkSession) -> _ProgressLog:
    """The session's routewatch listener, added to it on first use."""
    listener = _PROGRESS_LOGS.get(spark)
    if listener is None:
        listener = _PROGRESS_LOGS[spark] = _ProgressLog()
        add_query_events(spark, QueryEvents(listener.progress, listener.terminated, listener.idle))
    return listener


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


# beside Spark's own files in a checkpoint: the layout of the processor's state it holds
LAYOUT_FILE = "routewatch-state-layout"


def check_checkpoint(checkpoint: Path) -> None:
    """Resume only a checkpoint whose state this version reads: a new one is marked with the
    state layout; one marked with another, or written before layouts were marked, is refused
    with one sentence saying what to do."""
    marker = checkpoint / LAYOUT_FILE
    if marker.is_file():
        found = marker.read_text().strip()
        if found == str(STATE_LAYOUT):
            return
    else:
        offsets = checkpoint / "offsets"
        if not (offsets.is_dir() and any(p.name.isdigit() for p in offsets.iterdir())):
            checkpoint.mkdir(parents=True, exist_ok=True)
            marker.write_text(f"{STATE_LAYOUT}\n")
            return
        found = "an earlier one"
    raise RoutewatchError(
        f"the checkpoint {checkpoint} holds state in layout {found}, which this routewatch "
        f"(layout {STATE_LAYOUT}) cannot resume: reset the job — stop it, delete the checkpoint "
        "and the store, and start again (docs/operations.md, Resetting the job)."
    )


def start_stream(
    spark: SparkSession,
    settings: StreamingSettings,
    source: str,
    checkpoint: Path | None = None,
) -> StreamingQuery:
    """Start the long-running job over ``source`` (``spool`` or ``kafka``), writing to the
    store; checkpoints in ``<data dir>/checkpoints/<source>`` unless ``checkpoint`` is given."""
    checkpoint = checkpoint or settings.checkpoint_dir / source
    check_checkpoint(checkpoint)
    job = job_name(str(checkpoint))
    open_store(settings.store_url).close()  # create and migrate before the first batch
    if source == "spool":
        settings.spool_dir.mkdir(parents=True, exist_ok=True)
        reader = spark.readStream.format("text")
        if settings.max_files_per_trigger:
            reader = reader.option("maxFilesPerTrigger", settings.max_files_per_trigger)
        lines = file_lines(reader.load(str(settings.spool_dir)))
    else:
        lines = kafka_lines(kafka_records(spark, settings))
    output = changes(
        lines,
        lateness_ms=settings.lateness_ms,
        dedupe_horizon_ms=settings.dedupe_horizon_ms,
        by_event_time=source == "kafka",
    )
    listener = progress_log(spark)
    query = (
        output.writeStream.queryName(f"routewatch_{source}")
        .foreachBatch(store_writer(settings.store_url, job, settings.retention_ms))
        .option("checkpointLocation", str(checkpoint))
        .trigger(processingTime=f"{settings.trigger_interval_s} seconds")
        .start()
    )
    listener.watch(query, settings.store_url, job)
    log.info("stream started: query %s, checkpoint %s", query.id, checkpoint)
    return query


# after Ctrl-C or SIGTERM: the current batch may take this long to finish, stopping the query
# (Spark's stopTimeout) this long, and the whole stop this long before the process exits anyway
BATCH_PATIENCE_S = 120.0
QUERY_STOP_TIMEOUT_S = 30
STOP_DEADLINE_S = 180.0


def _stop_between_batches(query: StreamingQuery, patience_s: float = BATCH_PATIENCE_S) -> None:
    """Stop the query once its current micro-batch is done (or after ``patience_s``: a batch
    cut short is redone from the checkpoint at the next start)."""
    deadline = time.monotonic() + patience_s
    while query.isActive and query.status.get("isTriggerActive") and time.monotonic() < deadline:
        query.awaitTermination(1)
    query.stop()


def exit_unless_stopped_within(deadline_s: float) -> threading.Timer:
    """Exit the process (status 1) if it is still running ``deadline_s`` from now, after
    logging why and every thread's stack: a stop that hangs (in Spark or py4j) must not keep a
    stopped job's process, and the JVM it holds, alive. Nothing is lost: the checkpoint redoes
    an unfinished batch at the next start, and the store applies each batch once."""

    def give_up() -> None:
        log.error(
            "the job did not stop within %g s of the signal, so it exits without a clean "
            "stop; the next start resumes from the checkpoint (stacks follow)",
            deadline_s,
        )
        faulthandler.dump_traceback(all_threads=True)
        os._exit(1)

    timer = threading.Timer(deadline_s, give_up)
    timer.daemon = True
    timer.start()
    return timer


def run_stream(settings: StreamingSettings, source: str = "spool") -> int:
    """``routewatch stream``: run until Ctrl-C or SIGTERM, then stop cleanly."""
    spark = spark_session(settings.session_master(), "routewatch-stream", settings.spark_conf())
    set_log_level(spark, "WARN")
    # (Spark's default, 0, waits for the query's thread forever)
    spark.conf.set("spark.sql.streaming.stopTimeout", f"{QUERY_STOP_TIMEOUT_S}s")
    query = start_stream(spark, settings, source)
    stopping: list[int] = []

    def stop(signum: int, frame: FrameType | None) -> None:
        # only a flag: the main thread may be inside a py4j call, which is not reentrant
        stopping.append(signum)

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    try:
        while not query.awaitTermination(1):
            if stopping:
                log.info("stopping (signal %d): finishing the current batch", stopping[0])
                exit_unless_stopped_within(STOP_DEADLINE_S)
                _stop_between_batches(query)
                break
    except Exception as exc:  # the query failed, or did not stop in time: say so in one line
        first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        if not stopping:
            raise RoutewatchError(f"the stream job failed: {first}") from None
        log.warning("the query did not stop cleanly (%s); the next start resumes it", first)
    finally:
        stop_session(spark)
    return 0
