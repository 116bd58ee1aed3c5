"""``routewatch stream``: the long-running job over the spool or Kafka, writing to the store;
its checkpoint check, start, and clean stop on a signal."""

from __future__ import annotations

import faulthandler
import logging
import os
import signal
import threading
import time
from pathlib import Path
from types import FrameType

from pyspark.sql import SparkSession
from pyspark.sql.streaming.query import StreamingQuery

from routewatch.errors import RoutewatchError
from routewatch.store import open_store
from streaming.engine.layout import STATE_LAYOUT
from streaming.job.console import Console
from streaming.job.progress import progress_log, record_start, root_cause
from streaming.job.reset import RESET_COMMAND
from streaming.job.sink import job_name, store_writer
from streaming.pipeline import changes
from streaming.settings import StreamingSettings, under_spark_submit
from streaming.sources.kafka import check_reachable, connector_conf, kafka_lines, kafka_records
from streaming.sources.spool import read_lines, spool_files
from streaming.spark.session import set_log_level, spark_session, stop_session

__all__ = [
    "LAYOUT_FILE",
    "STOP_DEADLINE_S",
    "check_checkpoint",
    "exit_unless_stopped_within",
    "run_stream",
    "start_stream",
]

log = logging.getLogger("routewatch.stream")


# beside Spark's own files in a checkpoint: the layout of the processor's state it holds
LAYOUT_FILE = "routewatch-state-layout"


def check_checkpoint(checkpoint: Path, partitions: int, shards: int = 0) -> tuple[int, int]:
    """Resume only a checkpoint whose state this version reads: a new one is marked with the
    state layout, its number of state partitions (``partitions``) and of shards per cluster
    (``shards``, 0: as many as the partitions); one marked with another layout, or written
    before layouts were marked, is refused with one sentence saying what to do. Returns the
    checkpoint's number of state partitions and of shards per cluster."""
    marker = checkpoint / LAYOUT_FILE
    if marker.is_file():
        found, _, rest = marker.read_text().strip().partition("\n")
        fields = dict(line.split(" ", 1) for line in rest.splitlines() if " " in line)
        if found == str(STATE_LAYOUT):
            try:
                stored = int(fields["partitions"])
                # (a marker without shards: as many as partitions, as this layout began)
                return stored, int(fields.get("shards", stored))
            except (KeyError, ValueError):
                raise RoutewatchError(
                    f"the checkpoint {checkpoint} has a state layout marker ({marker}) that "
                    f"does not say its state partitions: reset the job with {RESET_COMMAND}, "
                    "which deletes every checkpoint and the store (docs/operations.md, "
                    "Resetting the job)."
                ) from None
    else:
        offsets = checkpoint / "offsets"
        if not (offsets.is_dir() and any(p.name.isdigit() for p in offsets.iterdir())):
            checkpoint.mkdir(parents=True, exist_ok=True)
            shards = shards or partitions
            marker.write_text(f"{STATE_LAYOUT}\npartitions {partitions}\nshards {shards}\n")
            return partitions, shards
        found = "an earlier one"
    raise RoutewatchError(
        f"the checkpoint {checkpoint} holds state in layout {found}, which this routewatch "
        f"(layout {STATE_LAYOUT}) cannot resume: reset the job with {RESET_COMMAND}, which "
        "deletes every checkpoint and the store (docs/operations.md, Resetting the job)."
    )


def start_stream(
    spark: SparkSession,
    settings: StreamingSettings,
    source: str,
    checkpoint: Path | None = None,
    console: Console | None = None,
) -> StreamingQuery:
    """Start the long-running job over ``source`` (``spool`` or ``kafka``), writing to the
    store; checkpoints in ``<data dir>/checkpoints/<source>`` unless ``checkpoint`` is given;
    its operator's lines to ``console``, if given."""
    checkpoint = checkpoint or settings.checkpoint_dir / source
    partitions, shards = check_checkpoint(
        checkpoint, settings.state_partitions, settings.cluster_shards
    )
    if shards != (settings.cluster_shards or partitions):
        log.warning(
            "the checkpoint %s was started with %d shards per cluster, which it keeps: "
            "ROUTEWATCH_CLUSTER_SHARDS applies to a new checkpoint only (docs/operations.md, "
            "Sizing)",
            checkpoint,
            shards,
        )
    if partitions != settings.state_partitions:
        log.warning(
            "the checkpoint %s was started with %d state partitions, which it keeps: "
            "ROUTEWATCH_STATE_PARTITIONS=%d applies to a new checkpoint only (docs/operations.md, "
            "Sizing)",
            checkpoint,
            partitions,
            settings.state_partitions,
        )
    # (Spark keeps a resumed query's shuffle partitions too; the state buckets follow them)
    spark.conf.set("spark.sql.shuffle.partitions", str(partitions))
    job = job_name(str(checkpoint))
    store = open_store(settings.store_url)  # create and migrate before the first batch
    try:
        if console is not None:
            console.start(store)  # (the alerts said from here on)
    finally:
        store.close()
    if source == "spool":
        files = spool_files(spark, settings.spool_dir, settings.max_files_per_trigger)
        rows, lines_of = files, read_lines
    else:
        rows, lines_of = kafka_lines(kafka_records(spark, settings)), None
    output = changes(
        rows,
        lateness_ms=settings.lateness_ms,
        dedupe_horizon_ms=settings.dedupe_horizon_ms,
        by_event_time=source == "kafka",
        shards=shards,
        lines_of=lines_of,
        known_tables_bytes=settings.known_tables_bytes,
    )
    listener = progress_log(spark)
    query = (
        output.writeStream.queryName(f"routewatch_{source}")
        .foreachBatch(
            store_writer(
                settings.store_url,
                job,
                settings.retention_ms,
                source_log=checkpoint / "sources" / "0" if source == "spool" else None,
                spool_keep_ms=settings.spool_keep_ms,
                spool_archive=settings.spool_archive_dir,
            )
        )
        .option("checkpointLocation", str(checkpoint))
        .trigger(processingTime=f"{settings.trigger_interval_s} seconds")
        .start()
    )
    # a sign of life that clears the end a run before recorded, before the listener may record
    # this run's (a query that fails within these lines ends unrecorded, as a killed one)
    record_start(settings.store_url, job)
    listener.watch(str(query.id), settings.store_url, job, console)
    log.info("stream started: query %s, checkpoint %s", query.id, checkpoint)
    return query


# after Ctrl-C or SIGTERM: the current batch may take this long to finish, stopping the query
# (Spark's stopTimeout) this long, and the whole stop this long before the process exits anyway
BATCH_PATIENCE_S = 120.0
QUERY_STOP_TIMEOUT_S = 30
STOP_DEADLINE_S = 180.0
END_RECORD_S = 10.0  # how long a stopped job waits for its end to be recorded


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


def run_stream(
    settings: StreamingSettings, source: str = "spool", console: Console | None = None
) -> int:
    """``routewatch stream``: run until Ctrl-C or SIGTERM, then stop cleanly; the operator's
    lines to ``console``, if given."""
    if source == "kafka":
        check_reachable(settings.kafka_bootstrap)
    conf = settings.spark_conf()
    if source == "kafka" and not under_spark_submit():
        conf.update(connector_conf(settings))
    spark = spark_session(settings.session_master(), "routewatch-stream", conf)
    set_log_level(spark, "WARN")
    # (Spark's default, 0, waits for the query's thread forever)
    spark.conf.set("spark.sql.streaming.stopTimeout", f"{QUERY_STOP_TIMEOUT_S}s")
    query = start_stream(spark, settings, source, console=console)
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
        cause = root_cause(str(exc)) or type(exc).__name__
        if not stopping:
            raise RoutewatchError(
                f"the stream job failed: {cause} (the job's log above has the whole trace; "
                "the next start resumes from the checkpoint)."
            ) from None
        log.warning("the query did not stop cleanly (%s); the next start resumes it", cause)
    finally:
        # the stop, or the failure, in the store before the session goes (Spark tells the
        # listener after the query ended; unrecorded, reports simply end, as after a kill)
        if not progress_log(spark).wait_for_end(str(query.id), END_RECORD_S):
            log.warning("the query's end was not recorded in the store within %g s", END_RECORD_S)
        stop_session(spark)
    return 0
