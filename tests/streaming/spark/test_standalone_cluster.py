"""Production mode's Spark: the stream job on a standalone cluster (a master and two workers on
127.0.0.1) gets the same alerts as the job in local mode — started as ``routewatch stream`` with
ROUTEWATCH_SPARK_MASTER, and submitted with ``spark-submit`` as the README says."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from pyspark.sql import SparkSession

import routewatch.cli
from emitter.scenarios import on_clusters
from routewatch.events import Event
from routewatch.settings import load
from routewatch.store import StoreError, StoreUnavailableError, open_store
from routewatch.testing.processes import group_alive, start_routewatch, stop, wait_for
from streaming.job.evaluate import evaluate_traces
from streaming.job.stream import STOP_DEADLINE_S
from streaming.settings import StreamingSettings
from tests.support.spark_cluster import SPARK_HOME, SparkCluster, running_cluster
from tests.support.traces import write_trace

pytestmark = [pytest.mark.slow, pytest.mark.spark]

CLUSTERS = {"Demo": "demo-mixed", "Diverging": "namesrv-registration-lost"}


def _events() -> list[Event]:
    return on_clusters(CLUSTERS, first_seed=5)


def _identity(alerts: list[dict[str, Any]]) -> list[tuple[Any, ...]]:
    keys = ("id", "kind", "severity", "state", "cluster", "topic", "broker", "cause")
    times = ("opened_at", "updated_at", "resolved_at", "summary")
    return sorted(tuple(a[k] for k in keys + times) for a in alerts)


def _children(pid: int) -> list[int]:
    found = subprocess.run(["pgrep", "-P", str(pid)], capture_output=True, text=True, check=False)
    return [int(p) for p in found.stdout.split()]


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SparkCluster]:
    with running_cluster(tmp_path_factory.mktemp("spark-cluster")) as running:
        yield running


def _event_log_conf(events: Path) -> list[str]:
    """Spark's event log of the job's application, into ``events``: where its tasks ran."""
    events.mkdir(parents=True, exist_ok=True)
    return [
        *("--conf", "spark.eventLog.enabled=true"),
        *("--conf", f"spark.eventLog.dir=file://{events}"),
        *("--conf", "spark.eventLog.compress=false"),
    ]


def _stateful_executors(events: Path) -> set[str]:
    """The executors that ran the stateful stage's tasks, from the event log: a task of a
    stateful operator reports its state store's metrics (``number of total state rows``)."""
    executors = set()
    # (Spark 4 writes an application's log as a directory of rolling files)
    for log in [p for p in events.rglob("*") if p.is_file()]:
        for line in log.read_text(errors="replace").splitlines():
            if '"SparkListenerTaskEnd"' not in line or not line.endswith("}"):
                continue  # (another event, or the last line, still being written)
            event = json.loads(line)
            if event["Event"] != "SparkListenerTaskEnd":
                continue
            info = event["Task Info"]
            names = {a.get("Name") for a in info.get("Accumulables", [])}
            if "number of total state rows" in names:
                executors.add(info["Executor ID"])
    return executors


def _spark_submit(cluster: SparkCluster, env: dict[str, str], log: Path) -> subprocess.Popen[bytes]:
    """The README's spark-submit line (without --packages: the spool needs no connector). In a
    session of its own: spark-submit's JVM starts the Python driver as its child."""
    with log.open("ab") as out:
        return subprocess.Popen(
            [
                str(SPARK_HOME / "bin" / "spark-submit"),
                *("--master", cluster.master_url),
                *("--conf", f"spark.pyspark.python={sys.executable}"),
                *("--conf", f"spark.pyspark.driver.python={sys.executable}"),
                *_event_log_conf(Path(env["ROUTEWATCH_DATA_DIR"]) / "events"),
                routewatch.cli.__file__,
                *("stream", "--source", "spool"),
            ],
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )


@pytest.mark.parametrize("launch", ["routewatch", "spark-submit"])
def test_the_job_on_a_standalone_cluster_gets_the_alerts_of_local_mode(
    spark: SparkSession, cluster: SparkCluster, tmp_path: Path, launch: str
) -> None:
    trace = tmp_path / "trace.jsonl"
    write_trace(_events(), trace)
    local = load(StreamingSettings, data_dir=tmp_path / "local")
    (reference,) = evaluate_traces(spark, [trace], local).values()
    expected = _identity(reference)
    assert {a[1] for a in expected} >= {"BROKER_EXPIRED", "NAMESRV_DIVERGENCE"}

    root = tmp_path / "cluster-job"
    (root / "spool").mkdir(parents=True)
    os.replace(trace, root / "spool" / "trace.jsonl")
    env = {**os.environ, "ROUTEWATCH_DATA_DIR": str(root)}
    if launch == "routewatch":
        env["ROUTEWATCH_SPARK_MASTER"] = cluster.master_url
        # (how pyspark passes arguments to the JVM it launches)
        env["PYSPARK_SUBMIT_ARGS"] = " ".join([*_event_log_conf(root / "events"), "pyspark-shell"])
        log = root / "stream.log"  # (the job's log lines there too)
        job = start_routewatch(["stream", "--source", "spool", "--log", str(log)], env, log)
    else:
        job = _spark_submit(cluster, env, root / "stream.log")
    try:

        def same_alerts() -> bool:
            assert job.poll() is None, (root / "stream.log").read_text()[-3000:]
            if not (root / "routewatch.db").exists():
                return False
            try:
                store = open_store(f"sqlite:///{root / 'routewatch.db'}", readonly=True)
            except StoreUnavailableError:
                return False
            try:
                return _identity(store.alerts()) == expected
            except StoreError:
                return False  # the job has created the file, not yet its tables
            finally:
                store.close()

        wait_for(same_alerts, 300, "the cluster job storing local mode's alerts", interval=1)
        apps = cluster.state()["activeapps"]
        assert [a["name"] for a in apps] == ["routewatch-stream"]
        assert apps[0]["cores"] == 2  # one executor on each worker
        # each cluster is in two shards, one in each state bucket, whose tasks ran on both
        # executors
        wait_for(
            lambda: len(_stateful_executors(root / "events")) == 2,
            60,
            "stateful tasks on both executors in the event log",
            interval=1,
        )
    finally:
        if launch == "spark-submit":
            # stop the Python driver, as an operator does: spark-submit's JVM then exits with it
            # (SIGTERM to the JVM instead leaves the driver waiting on a gateway that is gone)
            for pid in _children(job.pid):
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGTERM)
        # (the driver exits within STOP_DEADLINE_S of its signal, stopped cleanly or not)
        stop(job, STOP_DEADLINE_S + 30)
        if launch == "spark-submit":
            with contextlib.suppress(TimeoutError):
                wait_for(lambda: not group_alive(job.pid), 60, "the submitted job ending")
            with contextlib.suppress(ProcessLookupError):
                os.killpg(job.pid, signal.SIGKILL)  # nothing of it may outlive the test
            wait_for(lambda: not group_alive(job.pid), 30, "the submitted job's processes ending")
