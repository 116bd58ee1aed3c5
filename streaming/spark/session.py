"""How routewatch starts Spark: the settings every session of the job and its tests share."""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Mapping
from pathlib import Path

from pyspark import SparkContext
from pyspark.sql import SparkSession

from routewatch.java import find_javac
from streaming.settings import under_spark_submit
from streaming.spark.local_fs import NO_FORK_FS_CLASS, cache_dir, no_fork_jar

__all__ = [
    "BASE_CONF",
    "JVM_ENV",
    "LOCAL_CHECKPOINT_FS",
    "LOCAL_CHECKPOINT_FS_KEY",
    "ROCKSDB_PROVIDER",
    "local_checkpoint_fs",
    "set_log_level",
    "spark_session",
    "stop_session",
]

ROCKSDB_PROVIDER = "org.apache.spark.sql.execution.streaming.state.RocksDBStateStoreProvider"
# the Hadoop file system Spark's checkpoint manager (a FileContext) uses for file: paths
LOCAL_CHECKPOINT_FS_KEY = "spark.hadoop.fs.AbstractFileSystem.file.impl"
LOCAL_CHECKPOINT_FS = "org.apache.hadoop.fs.local.RawLocalFs"
CLASS_PATH_KEY = "spark.driver.extraClassPath"

BASE_CONF: Mapping[str, str] = {
    "spark.ui.enabled": "false",
    "spark.ui.showConsoleProgress": "false",
    "spark.sql.session.timeZone": "UTC",
    "spark.sql.shuffle.partitions": "2",
    "spark.sql.streaming.stateStore.providerClass": ROCKSDB_PROVIDER,
    # Commit a small changelog per batch instead of uploading a state snapshot every time.
    "spark.sql.streaming.stateStore.rocksdb.changelogCheckpointing.enabled": "true",
    "spark.sql.execution.arrow.pyspark.enabled": "true",
    # Spark broadcasts every stage's task binary, and writes each broadcast into buffers of
    # this size allocated whole, however small it is (Spark's default: 4 MB). An array of half
    # a G1 region or more (512 KB below a 4 GiB heap) is humongous: allocated outside the young
    # generation, each can start a concurrent collection. The job's few stages per micro-batch
    # allocated about 15 MB/s of them at four times real time, a third of all its humongous
    # bytes (docs/performance-notes.md). A task binary is a few kilobytes; broadcasts larger
    # than a block are split into more blocks.
    "spark.broadcast.blockSize": "256k",
    # Checkpoint files on a local disk without Hadoop's .crc side files. Hadoop's checksummed
    # local file system writes each checkpoint file twice (the file and its .crc), and without
    # Hadoop's native library it sets each one's permissions by running chmod in a child
    # process: about a fifth of a small batch's time went there (docs/operations.md,
    # Checkpoints). Spark's state files carry their own checks (LZ4 frame checksums in
    # changelogs, CRC-32 in snapshot zips, RocksDB's block checksums). Only the file: scheme:
    # checkpoints on HDFS or object stores are unaffected. When routewatch starts the JVM in
    # local mode, it uses its own file system instead, with no child processes at all
    # (local_checkpoint_fs).
    LOCAL_CHECKPOINT_FS_KEY: LOCAL_CHECKPOINT_FS,
}


# The environment of the JVM routewatch starts (a variable already set is kept). glibc gives
# threads that allocate at the same time arenas of their own, up to eight per core, and memory
# freed in an arena stays with it. The JVM's native allocations (RocksDB, compression codecs,
# Arrow) spread over them: on the reference fleet about 0.5 GB of the JVM's resident memory
# was in some twenty such arenas. With four, as Hadoop's launch scripts set, the JVM's peak
# resident memory on the same load fell from 1.44-1.54 to 1.28 GB, with batch durations
# within their spread (docs/operations.md, Sizing).
JVM_ENV: Mapping[str, str] = {"MALLOC_ARENA_MAX": "4"}


def spark_session(
    master: str | None = "local[2]",
    app_name: str = "routewatch",
    conf: Mapping[str, str] | None = None,
) -> SparkSession:
    """A Spark session with routewatch's base settings, plus ``conf``; ``master`` None leaves
    the master to ``spark-submit``.

    Python workers run on this interpreter unless ``PYSPARK_PYTHON`` says otherwise.
    """
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    for name, value in JVM_ENV.items():  # (read by the JVM this process starts, if it does)
        os.environ.setdefault(name, value)
    builder = SparkSession.builder.appName(app_name)
    if master is not None:
        builder = builder.master(master)
    extra = dict(conf or {})
    settings = {**BASE_CONF, **extra, **local_checkpoint_fs(master, extra), **_log_config(extra)}
    for key, value in settings.items():
        builder = builder.config(key, value)
    return builder.getOrCreate()


def local_checkpoint_fs(master: str | None, conf: Mapping[str, str]) -> dict[str, str]:
    """Spark settings for routewatch's own local file system (``streaming.spark.local_fs``), when
    this process is about to start Spark's JVM in local mode and the file system's jar can be
    built; none otherwise (``BASE_CONF``'s ``RawLocalFs`` applies), nor when ``conf`` names a
    file system itself. A class path in ``conf`` is kept, with the jar added to it."""
    if LOCAL_CHECKPOINT_FS_KEY in conf:
        return {}
    if master is None or not master.startswith("local"):
        return {}  # a cluster's executors write the state store's files: not on their path
    if under_spark_submit() or SparkContext._active_spark_context is not None:
        return {}  # the JVM is running already: its class path is set
    jar = no_fork_jar(cache_dir(), find_javac())
    if jar is None:
        return {}
    path = os.pathsep.join(p for p in (conf.get(CLASS_PATH_KEY), str(jar)) if p)
    return {CLASS_PATH_KEY: path, LOCAL_CHECKPOINT_FS_KEY: NO_FORK_FS_CLASS}


LOG_CONFIG = Path(__file__).with_name("log4j2.properties")
JAVA_OPTIONS_KEY = "spark.driver.extraJavaOptions"


def _log_config(conf: Mapping[str, str]) -> dict[str, str]:
    """routewatch's log4j configuration for the JVM this process is about to start
    (:data:`LOG_CONFIG`): Spark's warnings without its start-up banner, its hint for SparkR
    users and the lines every clean stop logs. None when the JVM runs already, under
    spark-submit (its configuration applies), or when ``conf`` names one."""
    if under_spark_submit() or SparkContext._active_spark_context is not None:
        return {}
    options = conf.get(JAVA_OPTIONS_KEY, "")
    if "log4j2.configurationFile" in options:
        return {}
    ours = f"-Dlog4j2.configurationFile={LOG_CONFIG.as_uri()}"
    return {JAVA_OPTIONS_KEY: f"{options} {ours}".strip()}


# Spark's state server for Python stateful processors logs a warning for every read of a map
# state key that does not exist. routewatch reads absent keys by design (a cluster's first
# batch, the first events of a second, a bucket of topics without rule state): dozens of lines
# per batch that say nothing is wrong. Its errors still show.
STATE_SERVER_LOGGER = (
    "org.apache.spark.sql.execution.python.streaming.TransformWithStateInPySparkStateServer"
)


# Loggers whose warnings say nothing to an operator, kept at ERROR (LOG_CONFIG names them too,
# for the JVM's start): "Failed to cancel job group" on every clean stop of a query, and
# "spark.sql.adaptive.enabled is not supported in streaming DataFrames" at every start.
QUIET_LOGGERS = (
    STATE_SERVER_LOGGER,
    "org.apache.spark.scheduler.DAGScheduler",
    "org.apache.spark.sql.execution.streaming.runtime.ResolveWriteToStream",
)


def set_log_level(spark: SparkSession, level: str) -> None:
    """Spark's log level (as ``SparkContext.setLogLevel``, which sets every logger), with
    :data:`QUIET_LOGGERS` left at errors."""
    spark.sparkContext.setLogLevel(level)
    jvm = spark.sparkContext._jvm
    assert jvm is not None  # (a live session's driver)
    log4j = jvm.org.apache.logging.log4j
    for name in QUIET_LOGGERS:
        log4j.core.config.Configurator.setLevel(name, log4j.Level.ERROR)


def stop_session(spark: SparkSession) -> None:
    """Stop a session in the order Spark expects: its streaming queries, then the state stores
    (their maintenance task and the providers they keep open), then the session.

    ``SparkSession.stop`` alone leaves the state stores' maintenance task scheduled in the JVM:
    its next run finds no SparkEnv and logs ``IllegalStateException: SparkEnv not active, cannot
    do maintenance on StateStores`` with its stack, after the process's own last words. Spark's
    own tests stop the state stores the same way, with ``StateStore.stop()``.
    """
    try:
        for query in spark.streams.active:
            with contextlib.suppress(Exception):  # (one that failed meanwhile is stopped)
                query.stop()
        jvm = spark.sparkContext._jvm
        with contextlib.suppress(Exception):  # only a log line is at stake: stop the session
            if jvm is not None:
                jvm.org.apache.spark.sql.execution.streaming.state.StateStore.stop()
    finally:
        spark.stop()
