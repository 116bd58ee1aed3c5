"""routewatch's local file system for checkpoints: built once with the JDK's compiler, used by
Spark's own checkpoint manager, writing files as Hadoop's would, with no child processes."""

from __future__ import annotations

import logging
import os
import stat
import zipfile
from pathlib import Path

import pytest
from pyspark.sql import SparkSession

from routewatch.java import find_javac
from streaming.spark.local_fs import NO_FORK_FS_CLASS, no_fork_jar
from streaming.spark.session import (
    LOCAL_CHECKPOINT_FS,
    LOCAL_CHECKPOINT_FS_KEY,
    local_checkpoint_fs,
)

JAVAC = find_javac()
needs_javac = pytest.mark.skipif(JAVAC is None, reason="no JDK compiler (javac) on this machine")


@needs_javac
def test_the_jar_is_built_once_and_then_reused(tmp_path: Path) -> None:
    jar = no_fork_jar(tmp_path, JAVAC)

    assert jar is not None and jar.parent == tmp_path
    with zipfile.ZipFile(jar) as archive:
        assert "routewatch/hadoop/NoForkLocalFs.class" in archive.namelist()
    built = jar.stat().st_mtime_ns
    assert no_fork_jar(tmp_path, JAVAC) == jar
    assert jar.stat().st_mtime_ns == built
    assert [p.name for p in tmp_path.iterdir()] == [jar.name]  # no partial file left


def test_without_a_compiler_there_is_no_jar_and_the_log_says_why(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.INFO, logger="routewatch.stream"):
        assert no_fork_jar(tmp_path, None) is None
    assert "no JDK compiler (javac) found" in caplog.text
    assert list(tmp_path.iterdir()) == []


def test_a_failing_compiler_leaves_hadoops_file_system_and_says_so(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.INFO, logger="routewatch.stream"):
        assert no_fork_jar(tmp_path / "cache", "/bin/false") is None
    assert "could not build routewatch's local file system" in caplog.text


def test_only_a_jvm_this_process_starts_in_local_mode_gets_it() -> None:
    assert local_checkpoint_fs("spark://127.0.0.1:7077", {}) == {}
    assert local_checkpoint_fs(None, {}) == {}  # the master is spark-submit's
    assert local_checkpoint_fs("local[2]", {LOCAL_CHECKPOINT_FS_KEY: "x"}) == {}


@pytest.mark.spark
@needs_javac
def test_spark_writes_checkpoint_files_through_it(spark: SparkSession, tmp_path: Path) -> None:
    """The test session is started by spark_session, as the job's is: Spark's checkpoint
    manager gets this file system, and its files come out as through Hadoop's own."""
    jvm = spark.sparkContext._jvm
    assert jvm is not None
    conf = spark._jsc.hadoopConfiguration()
    hadoop_key = LOCAL_CHECKPOINT_FS_KEY.removeprefix("spark.hadoop.")
    assert conf.get(hadoop_key) == NO_FORK_FS_CLASS
    ours = jvm.org.apache.hadoop.fs.FileContext.getFileContext(conf)
    assert ours.getDefaultFileSystem().getClass().getName() == NO_FORK_FS_CLASS
    hadoop_path = jvm.org.apache.hadoop.fs.Path
    manager = jvm.org.apache.spark.sql.execution.streaming.checkpointing.CheckpointFileManager
    files = manager.create(hadoop_path(f"file://{tmp_path}"), conf)
    files.mkdirs(hadoop_path(f"file://{tmp_path / 'offsets'}"))  # (as Spark's logs do first)

    for content in (b"first", b"second"):  # the second replaces the first, atomically
        out = files.createAtomic(hadoop_path(f"file://{tmp_path / 'offsets' / '0'}"), True)
        out.write(bytearray(content))
        out.close()

    written = tmp_path / "offsets" / "0"
    assert written.read_bytes() == b"second"
    assert stat.S_IMODE(written.stat().st_mode) == 0o644  # 0666 less Hadoop's umask, 022
    assert sorted(p.name for p in (tmp_path / "offsets").iterdir()) == ["0"]  # no .crc, no .tmp
    mode = jvm.org.apache.hadoop.fs.permission.FsPermission("640")
    ours.setPermission(hadoop_path(f"file://{written}"), mode)
    assert stat.S_IMODE(written.stat().st_mode) == 0o640

    # what a rename asks of every path (Hadoop forks readlink for it): the same answers
    os.symlink(written, tmp_path / "link")
    hadoop_conf = jvm.org.apache.hadoop.conf.Configuration(conf)
    hadoop_conf.set(hadoop_key, LOCAL_CHECKPOINT_FS)
    hadoops = jvm.org.apache.hadoop.fs.FileContext.getFileContext(hadoop_conf)
    for name in ("link", "offsets/0", "offsets"):
        path = hadoop_path(f"file://{tmp_path / name}")
        mine, theirs = ours.getFileLinkStatus(path), hadoops.getFileLinkStatus(path)
        assert (mine.isSymlink(), mine.isDirectory(), mine.getLen()) == (
            theirs.isSymlink(),
            theirs.isDirectory(),
            theirs.getLen(),
        )
