"""SIGKILL the stream job at seeded random points, restart it from its checkpoint each time: the
store ends identical, row for row, to an uninterrupted run's (all but wall-clock columns).

The kill points are batches of the run and a phase within each: ``planned`` (Spark has written
the batch's offsets to its write-ahead log: the batch is running), ``stored`` (the sink has
written the batch to the store; Spark may not have committed it) or ``committed``.

Batch boundaries may differ from the uninterrupted run's after a restart: Spark's file source
logs the files of the next batch before the offsets, so a batch planned just before the kill
can be merged into the first new one. Nothing stored depends on boundaries (the engine logs
every version of every alert), so the comparison is of the stored rows, not of the batches.
"""

from __future__ import annotations

import functools
import os
import random
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from pyspark.sql import SparkSession

from emitter.scenarios import on_clusters
from routewatch.codec import encode
from routewatch.events import Event
from routewatch.settings import load
from routewatch.store import StoreError, StoreUnavailableError, open_store
from routewatch.testing.kafka import KafkaBroker
from routewatch.testing.parts import spark_kafka_jars
from routewatch.testing.processes import group_alive, start_routewatch, stop, wait_for
from streaming.engine.shards import HEAD_SHARD, shard_bucket
from streaming.job.sink import job_name
from streaming.job.stream import start_stream
from streaming.settings import StreamingSettings
from tests.support.stores import batches, snapshot

pytestmark = [pytest.mark.slow, pytest.mark.spark]

PHASES = ("planned", "stored", "committed")
KILLS = len(PHASES)  # each phase once per run, at seeded batches (a restart costs ~40 s)
CLUSTERS = {"Demo": "demo-mixed", "Expiring": "broker-dies"}
FILE_TIME = 1_800_000_000
CHUNK = 40  # events per spool file, and Kafka records per batch


def _events() -> list[Event]:
    # the job's default two state partitions: each cluster's head shard (its broker alerts) on
    # another, so the kills hit head and topic shards in both buckets
    assert {shard_bucket(c, HEAD_SHARD, 2) for c in CLUSTERS} == {0, 1}
    return on_clusters(CLUSTERS, first_seed=7)


def _publish_spool(spool: Path, lines: list[bytes]) -> int:
    """One spool file per CHUNK events, published atomically with strictly increasing times."""
    spool.mkdir(parents=True, exist_ok=True)
    chunks = [lines[i : i + CHUNK] for i in range(0, len(lines), CHUNK)]
    for i, chunk in enumerate(chunks):
        tmp = spool / f".part-{i:05d}.tmp"
        tmp.write_bytes(b"".join(line + b"\n" for line in chunk))
        os.utime(tmp, (FILE_TIME + i, FILE_TIME + i))
        tmp.rename(spool / f"part-{i:05d}.jsonl")
    return len(chunks)


def _produce(broker: KafkaBroker, topic: str, lines: list[bytes]) -> None:
    from kafka import KafkaProducer

    producer = KafkaProducer(bootstrap_servers=broker.bootstrap, acks="all")
    try:
        for i, line in enumerate(lines):
            producer.send(topic, value=line, partition=i % 2)
        producer.flush(60)
    finally:
        producer.close()


class Checkpoint:
    def __init__(self, path: Path) -> None:
        self.path = path

    def _ids(self, log: str) -> list[int]:
        folder = self.path / log
        if not folder.is_dir():
            return []
        return sorted(int(p.name) for p in folder.iterdir() if p.name.isdigit())

    def has(self, log: str, batch: int) -> bool:
        return batch in self._ids(log)

    def final_source_offset(self) -> str | None:
        """The source offset of the newest committed batch (the last line of its WAL entry)."""
        committed = self._ids("commits")
        if not committed:
            return None
        return (self.path / "offsets" / str(committed[-1])).read_text().splitlines()[-1]


def _stored(store_file: Path, job: str, batch: int) -> bool:
    if not store_file.exists():
        return False
    try:
        store = open_store(f"sqlite:///{store_file}", readonly=True)
    except StoreUnavailableError:
        return False
    try:
        return any(b["batch_id"] == batch for b in batches(store, job))
    except StoreError:
        return False  # not migrated yet
    finally:
        store.close()


def _group_gone(pgid: int) -> bool:
    return not group_alive(pgid)


def _reference(spark: SparkSession, settings: StreamingSettings, source: str) -> Path:
    query = start_stream(spark, settings, source)
    try:
        query.processAllAvailable()
    finally:
        query.stop()
    return settings.checkpoint_dir / source


def _kill_points(seed: int, batches: int) -> list[tuple[int, str]]:
    rng = random.Random(seed)
    # a restart can merge two batches into one (module docstring), so the last KILLS batch ids
    # may never exist: kill before them
    picked = sorted(rng.sample(range(1, batches - 1 - KILLS), KILLS))
    phases = list(PHASES)
    rng.shuffle(phases)
    return list(zip(picked, phases, strict=True))


def _crash_and_restart(
    root: Path, env: dict[str, str], source: str, points: list[tuple[int, str]], final: str
) -> list[str]:
    """Run ``routewatch stream`` under ``env``, SIGKILL it at each point, restart it each time,
    and let the last run catch up with ``final`` (the uninterrupted run's last source offset)."""
    checkpoint = Checkpoint(root / "checkpoints" / source)
    store_file = root / "routewatch.db"
    job = job_name(str(root / "checkpoints" / source))
    log_path = root / "stream.log"
    root.mkdir(parents=True, exist_ok=True)
    seen: list[str] = []

    def start() -> subprocess.Popen[bytes]:
        argv = ["stream", "--source", source, "--log", str(log_path)]
        return start_routewatch(argv, env, log_path, new_session=True)

    def alive(proc: subprocess.Popen[bytes]) -> None:
        if proc.poll() is not None:
            raise AssertionError(f"the job exited: {log_path.read_text()[-3000:]}")

    for batch, phase in points:
        proc = start()
        try:

            def reached(
                proc: subprocess.Popen[bytes] = proc, batch: int = batch, phase: str = phase
            ) -> bool:
                alive(proc)
                if phase == "planned":
                    return checkpoint.has("offsets", batch)
                if phase == "stored":
                    return _stored(store_file, job, batch)
                return checkpoint.has("commits", batch)

            wait_for(reached, 300, f"batch {batch} {phase}", interval=0.02)
            os.killpg(proc.pid, signal.SIGKILL)  # the driver, Spark's JVM and its Python workers
            proc.wait(30)
            wait_for(
                functools.partial(_group_gone, proc.pid), 60, "the killed job's processes ending"
            )
            state = (
                f"batch {batch} {phase}: offsets={checkpoint.has('offsets', batch)} "
                f"stored={_stored(store_file, job, batch)} "
                f"committed={checkpoint.has('commits', batch)}"
            )
            seen.append(state)
        finally:
            stop(proc)
    proc = start()
    try:

        def caught_up() -> bool:
            alive(proc)
            return checkpoint.final_source_offset() == final

        wait_for(caught_up, 300, "the restarted job catching up", interval=0.2)
    finally:
        stop(proc)
    return seen


def _compare(reference: StreamingSettings, root: Path, source: str, seen: list[str]) -> None:
    one = open_store(reference.store_url)
    two = open_store(f"sqlite:///{root / 'routewatch.db'}")
    expected, got = snapshot(one), snapshot(two)
    assert expected["alerts"], "the scenario raised no alert: nothing was compared"
    for table in expected:
        assert got[table] == expected[table], (table, seen)
    # every batch the job ran is in the store once: ids run 0, 1, 2, ... with no gap
    ids = [b["batch_id"] for b in batches(two, job_name(str(root / "checkpoints" / source)))]
    assert ids == list(range(len(ids)))


def _env(root: Path, **settings: Any) -> dict[str, str]:
    env = {**os.environ, "ROUTEWATCH_DATA_DIR": str(root), "PYSPARK_PYTHON": sys.executable}
    env.update({f"ROUTEWATCH_{k.upper()}": str(v) for k, v in settings.items()})
    return env


@pytest.mark.parametrize("seed", [2026])
def test_sigkill_at_random_points_over_the_spool(
    spark: SparkSession, tmp_path: Path, seed: int
) -> None:
    lines = [encode(e) for e in _events()]
    spool = tmp_path / "spool"
    files = _publish_spool(spool, lines)
    caps = {"max_files_per_trigger": 1, "trigger_interval_s": 0.1, "spool_dir": spool}
    reference = load(StreamingSettings, data_dir=tmp_path / "straight", **caps)
    final = Checkpoint(_reference(spark, reference, "spool")).final_source_offset()
    assert final is not None

    points = _kill_points(seed, files)
    root = tmp_path / "crashed"
    seen = _crash_and_restart(root, _env(root, **caps), "spool", points, final)

    assert len(seen) == KILLS
    _compare(reference, root, "spool", seen)


@pytest.mark.kafka
@pytest.mark.parametrize("seed", [11])
def test_sigkill_at_random_points_over_kafka(
    spark: SparkSession, kafka_broker: KafkaBroker, tmp_path: Path, seed: int
) -> None:
    lines = [encode(e) for e in _events()]
    topic = "crash.events"
    kafka_broker.create_topic(topic, partitions=2)
    _produce(kafka_broker, topic, lines)
    caps = {
        "kafka_bootstrap": kafka_broker.bootstrap,
        "kafka_topic": topic,
        "spark_jars": spark_kafka_jars(),
        "kafka_max_offsets_per_trigger": CHUNK,
        "trigger_interval_s": 0.1,
    }
    reference = load(StreamingSettings, data_dir=tmp_path / "straight", **caps)
    final = Checkpoint(_reference(spark, reference, "kafka")).final_source_offset()
    assert final is not None

    points = _kill_points(seed, len(lines) // CHUNK)
    root = tmp_path / "crashed"
    seen = _crash_and_restart(root, _env(root, **caps), "kafka", points, final)

    assert len(seen) == KILLS
    _compare(reference, root, "kafka", seen)
