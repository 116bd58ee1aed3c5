"""The job's Spark settings: which master the session gets, the driver's address, and the
state stores' memory."""

from __future__ import annotations

from pathlib import Path

import pytest

from routewatch.errors import RoutewatchError
from routewatch.settings import load
from streaming.settings import StreamingSettings


def test_spark_submit_chooses_the_master_unless_routewatch_is_told_one(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    assert load(StreamingSettings).session_master() == "local[2]"
    monkeypatch.setenv("PYSPARK_GATEWAY_PORT", "40000")  # how pyspark runs under spark-submit
    assert load(StreamingSettings).session_master() is None
    monkeypatch.setenv("ROUTEWATCH_SPARK_MASTER", "spark://127.0.0.1:7077")
    assert load(StreamingSettings).session_master() == "spark://127.0.0.1:7077"


def test_the_driver_binds_where_executors_reach_it(monkeypatch: pytest.MonkeyPatch) -> None:
    assert load(StreamingSettings).spark_conf()["spark.driver.host"] == "127.0.0.1"
    monkeypatch.setenv("ROUTEWATCH_SPARK_DRIVER_HOST", "10.0.0.5")
    conf = load(StreamingSettings).spark_conf()
    assert conf["spark.driver.host"] == conf["spark.driver.bindAddress"] == "10.0.0.5"
    assert "spark.jars.packages" not in conf


def test_under_spark_submit_its_driver_address_stands_unless_routewatch_is_told_one(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("PYSPARK_GATEWAY_PORT", "40000")
    assert "spark.driver.host" not in load(StreamingSettings).spark_conf()
    monkeypatch.setenv("ROUTEWATCH_SPARK_DRIVER_HOST", "10.0.0.5")
    assert load(StreamingSettings).spark_conf()["spark.driver.host"] == "10.0.0.5"


def test_the_driver_heap_is_spark_s_default_unless_set_and_spark_submit_s_under_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    assert "spark.driver.memory" not in load(StreamingSettings).spark_conf()
    monkeypatch.setenv("ROUTEWATCH_SPARK_DRIVER_MEMORY", "1536m")
    assert load(StreamingSettings).spark_conf()["spark.driver.memory"] == "1536m"
    monkeypatch.setenv("PYSPARK_GATEWAY_PORT", "40000")  # the JVM runs already: --driver-memory
    assert "spark.driver.memory" not in load(StreamingSettings).spark_conf()
    monkeypatch.setenv("ROUTEWATCH_SPARK_DRIVER_MEMORY", "lots")
    with pytest.raises(RoutewatchError, match="SPARK_DRIVER_MEMORY"):
        load(StreamingSettings)


@pytest.mark.parametrize(
    "master",
    ["local", "local[*]", "local[4,2]", "spark://a:7077,b:7077", "yarn", "k8s://https://h"],
)
def test_a_spark_master_url_is_taken(master: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ROUTEWATCH_SPARK_MASTER", master)
    assert load(StreamingSettings).spark_master == master


@pytest.mark.parametrize("master", ["bogus", "local[", "spark://a", "local[2] "])
def test_a_spark_master_that_is_no_url_is_one_sentence(
    master: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ROUTEWATCH_SPARK_MASTER", master)
    with pytest.raises(RoutewatchError) as raised:
        load(StreamingSettings)
    message = str(raised.value)
    assert message.startswith("ROUTEWATCH_SPARK_MASTER") and message.count("\n") == 0
    assert message.endswith("fix the environment and start again.")


def test_a_spool_archive_inside_the_spool_is_one_sentence(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("ROUTEWATCH_DATA_DIR", str(tmp_path))
    monkeypatch.setenv("ROUTEWATCH_SPOOL_ARCHIVE_DIR", str(tmp_path / "spool" / "done"))
    with pytest.raises(RoutewatchError) as raised:
        load(StreamingSettings)
    assert str(raised.value) == (
        f"ROUTEWATCH_SPOOL_ARCHIVE_DIR ({tmp_path / 'spool' / 'done'}) is inside the spool "
        f"({tmp_path / 'spool'}), whose files the job reads: put it elsewhere; fix the "
        "environment and start again."
    )
    monkeypatch.setenv("ROUTEWATCH_SPOOL_ARCHIVE_DIR", str(tmp_path / "archive"))
    assert load(StreamingSettings).spool_archive_dir == tmp_path / "archive"


def test_every_state_store_of_an_executor_shares_one_bounded_rocksdb_memory(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    conf = load(StreamingSettings).spark_conf()
    assert conf["spark.sql.streaming.stateStore.rocksdb.boundedMemoryUsage"] == "true"
    assert conf["spark.sql.streaming.stateStore.rocksdb.maxMemoryUsageMB"] == "256"
    monkeypatch.setenv("ROUTEWATCH_STATE_PARTITIONS", "8")
    monkeypatch.setenv("ROUTEWATCH_STATE_MEMORY_MB", "128")
    conf = load(StreamingSettings).spark_conf()
    assert conf["spark.sql.shuffle.partitions"] == "8"
    assert conf["spark.sql.streaming.stateStore.rocksdb.maxMemoryUsageMB"] == "128"  # (not 8x)
