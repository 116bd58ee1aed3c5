"""The long-running job over the spool: batch boundaries and restarts change no alert."""

from __future__ import annotations

import os
import random
from pathlib import Path
from typing import Any

import orjson
import pytest
from pyspark.sql import SparkSession
from pyspark.sql import functions as F

from emitter.scenarios import SCENARIOS, on_clusters
from emitter.sim import DEFAULT_START_MS
from routewatch.changes import DUPLICATES, LATE
from routewatch.codec import encode
from routewatch.errors import RoutewatchError
from routewatch.settings import load
from routewatch.store import open_store
from streaming.job.evaluate import evaluate_traces
from streaming.job.reset import RESET_COMMAND
from streaming.job.sink import job_name
from streaming.job.stream import LAYOUT_FILE, check_checkpoint, start_stream
from streaming.settings import StreamingSettings
from streaming.spark.session import LOCAL_CHECKPOINT_FS_KEY
from streaming.stages.read import READ_METRICS, TABLES_BY_REFERENCE
from tests.support.stores import EngineJob, batches, snapshot
from tests.support.traces import jittered_clusters

pytestmark = pytest.mark.spark

SCENARIO = "restarted-auto-create-off-stale-tbw102"
CLUSTERED = [  # (nine kinds of alert between them)
    "namesrv-registration-lost",
    "broker-side-alerts",
    "tbw102-deleted-one-broker",
    "master-slave-queue-skew",
    "mixed-auto-create",
    "no-live-broker",
]
FILE_TIME = 1_800_000_000


def _identity(alerts: list[dict[str, Any]]) -> list[tuple[Any, ...]]:
    return sorted(
        (a["id"], a["kind"], a["state"], a["opened_at"], a["resolved_at"]) for a in alerts
    )


def _lines() -> list[bytes]:
    return [encode(e) for e in SCENARIOS[SCENARIO].run(seed=4)]


def _publish(spool: Path, chunks: list[list[bytes]], first: int = 0) -> None:
    """Write each chunk as a spool file, atomically, with strictly increasing times."""
    spool.mkdir(parents=True, exist_ok=True)
    for i, chunk in enumerate(chunks, start=first):
        tmp = spool / f".part-{i:05d}.tmp"
        tmp.write_bytes(b"".join(line + b"\n" for line in chunk))
        os.utime(tmp, (FILE_TIME + i, FILE_TIME + i))
        tmp.rename(spool / f"part-{i:05d}.jsonl")


def _cut(lines: list[bytes], size: int) -> list[list[bytes]]:
    return [lines[i : i + size] for i in range(0, len(lines), size)]


def _settings(root: Path) -> StreamingSettings:
    return load(StreamingSettings, data_dir=root, max_files_per_trigger=1, trigger_interval_s=0.1)


@pytest.fixture(scope="module")
def reference(
    spark: SparkSession, tmp_path_factory: pytest.TempPathFactory
) -> list[tuple[Any, ...]]:
    root = tmp_path_factory.mktemp("reference")
    trace = root / "trace.jsonl"
    trace.write_bytes(b"".join(line + b"\n" for line in _lines()))
    (alerts,) = evaluate_traces(spark, [trace], _settings(root)).values()
    return _identity(alerts)


def _run(spark: SparkSession, settings: StreamingSettings) -> list[dict[str, Any]]:
    """The job over its spool until it has read everything; each batch's progress."""
    query = start_stream(spark, settings, "spool")
    try:
        query.processAllAvailable()
    finally:
        query.stop()
    return [orjson.loads(p.json) for p in query.recentProgress]


def _by_reference(progress: list[dict[str, Any]]) -> int:
    return sum(p["observedMetrics"][READ_METRICS][TABLES_BY_REFERENCE] for p in progress)


def test_the_job_writes_what_its_step_writes_through_the_store_without_spark(
    spark: SparkSession, tmp_path: Path
) -> None:
    """The tests that need only a store's contents (the API's) fill it without Spark
    (``EngineJob``); this holds that store to the job's, row by row, bad input included."""
    lines = [line.decode() for line in _lines()] + ["{broken", '{"v": 1, "type": "send"}']
    job = _settings(tmp_path / "job")
    _publish(job.spool_dir, _cut([line.encode() for line in lines], 60))
    _run(spark, job)
    engine = load(StreamingSettings, data_dir=tmp_path / "engine")
    EngineJob(engine).write(lines)

    expected, got = snapshot(open_store(job.store_url)), snapshot(open_store(engine.store_url))
    assert got["alerts"] and got["quarantine"]
    assert got == expected


@pytest.mark.parametrize(("size", "files_per_batch"), [(17, 1), (60, 1), (40, None)])
def test_any_cut_of_the_trace_into_batches_gives_the_same_alerts(
    spark: SparkSession,
    tmp_path: Path,
    reference: list[tuple[Any, ...]],
    size: int,
    files_per_batch: int | None,
) -> None:
    settings = _settings(tmp_path).model_copy(update={"max_files_per_trigger": files_per_batch})
    _publish(settings.spool_dir, _cut(_lines(), size))

    progress = _run(spark, settings)

    store = open_store(settings.store_url)
    assert _identity(store.alerts()) == reference
    # a registration goes by reference when the same read worker shipped its table whole in an
    # earlier batch of the run. Spark hands a task one of its idle Python workers, in turn, so
    # with two idle (left by an earlier query) two batches may each go to another: of 7 batches
    # some worker reads twice; of 2 (60 lines a file) none need to (seen under -n 2)
    if size == 17:
        assert _by_reference(progress) > 0
    if files_per_batch is None:
        assert _by_reference(progress) == 0
    # the stream's last events are still held by the lateness bound, but no alert changes there
    (clock,) = store.clusters()
    assert clock["stream_time"] > max(max(a[3], a[4] or 0) for a in reference)
    written = batches(store, job_name(str(settings.checkpoint_dir / "spool")))
    files = len(_cut(_lines(), size))
    assert len(written) == (files if files_per_batch == 1 else 1)


def test_read_workers_that_keep_no_table_ship_every_registration_whole_and_alert_alike(
    spark: SparkSession, tmp_path: Path, reference: list[tuple[Any, ...]]
) -> None:
    """ROUTEWATCH_KNOWN_TABLES_MB reaches the read stage's workers: with 0 they remember no
    table, so none is shipped by reference (as it is with the default, above), and the
    alerts are the same."""
    settings = _settings(tmp_path).model_copy(update={"known_tables_mb": 0})
    _publish(settings.spool_dir, _cut(_lines(), 17))

    progress = _run(spark, settings)

    assert len(progress) > 1 and _by_reference(progress) == 0
    assert _identity(open_store(settings.store_url).alerts()) == reference


def test_a_jittered_stream_of_six_clusters_on_three_state_partitions_stores_one_steps_rows(
    spark: SparkSession, tmp_path: Path
) -> None:
    """The exactness the engine's tests hold over buckets, shards and batchings, through Spark's
    stream: six scenarios as clusters in one jittered stream (some events late, some twice),
    cut into spool files of random length, three to a batch (each file a block of the batch's
    arrival), on three state partitions (each cluster in three shards by topic) — the job's
    store is, row by row, the store one step over the whole stream writes of the same batches,
    and every partition holds routes."""
    rng = random.Random(6)
    lines = [raw.encode() for _, _, _, raw in jittered_clusters(CLUSTERED, seed=6)]
    chunks = []
    while lines:
        size = rng.randint(1, 150)
        chunks.append(lines[:size])
        del lines[:size]
    settings = _settings(tmp_path / "job").model_copy(
        update={"state_partitions": 3, "max_files_per_trigger": 3}
    )
    _publish(settings.spool_dir, chunks)

    progress = _run(spark, settings)
    assert sum(1 for p in progress if p["numInputRows"]) == (len(chunks) + 2) // 3
    engine = EngineJob(load(StreamingSettings, data_dir=tmp_path / "engine"))
    for first in range(0, len(chunks), 3):
        engine.write([line.decode() for chunk in chunks[first : first + 3] for line in chunk])

    got = snapshot(open_store(settings.store_url))
    expected = snapshot(open_store(engine.url))
    assert got == expected
    assert len({row[4] for row in got["alerts"]}) >= 5, got["alerts"]  # (row[4]: the cluster)
    late, duplicates = (
        sum(row[3] for row in got["counters"] if row[0] == name) for name in (LATE, DUPLICATES)
    )
    assert late > 0 and duplicates > 0, got["counters"]
    # every cluster's routes in more than one state partition, every partition holding routes
    holding = _partitions_holding_routes(spark, settings.checkpoint_dir / "spool")
    assert set(holding) == {f"cluster-{i}" for i in range(len(CLUSTERED))}
    assert all(len(partitions) > 1 for partitions in holding.values()), holding
    assert set().union(*holding.values()) == {0, 1, 2}


def _partitions_holding_routes(spark: SparkSession, checkpoint: Path) -> dict[str, set[int]]:
    """Which state partitions hold route entries of each cluster (layout.py names a cluster
    shard's entries by a JSON triple, its last part ``route/<bucket>``), as Spark's state data
    source reads the checkpoint."""
    rows = (
        spark.read.format("statestore")
        .option("stateVarName", "entries")
        .load(str(checkpoint))
        .select("partition_id", F.col("user_map_key.entry").alias("entry"))
        .collect()
    )
    out: dict[str, set[int]] = {}
    for row in rows:
        if row.entry.startswith("["):
            cluster, _, part = orjson.loads(row.entry)
            if part.startswith("route/"):
                out.setdefault(cluster, set()).add(row.partition_id)
    return out


def test_a_restart_from_the_checkpoint_in_the_middle_gives_the_same_alerts(
    spark: SparkSession, tmp_path: Path
) -> None:
    lines = _lines()
    chunks = _cut(lines, 25)
    half = len(chunks) // 2
    straight, restarted = _settings(tmp_path / "straight"), _settings(tmp_path / "restarted")

    _publish(straight.spool_dir, chunks)
    _run(spark, straight)
    _publish(restarted.spool_dir, chunks[:half])
    _run(spark, restarted)
    _publish(restarted.spool_dir, chunks[half:], first=half)
    assert _by_reference(_run(spark, restarted)) > 0  # (after the restart's first batch)

    one, two = open_store(straight.store_url), open_store(restarted.store_url)
    assert _identity(two.alerts()) == _identity(one.alerts())
    assert two.counters() == one.counters()
    assert two.clusters()[0]["stream_time"] == one.clusters()[0]["stream_time"]


def test_a_checkpoint_of_an_earlier_state_layout_is_refused_in_one_sentence(
    spark: SparkSession, tmp_path: Path
) -> None:
    """Checkpoints written before the stream's one clock hold per-cluster state this version
    cannot read: the job says so instead of resuming them wrongly."""
    settings = _settings(tmp_path)
    _publish(settings.spool_dir, _cut(_lines(), 25)[:2])
    _run(spark, settings)
    checkpoint = settings.checkpoint_dir / "spool"
    (checkpoint / LAYOUT_FILE).unlink()  # as an earlier version left it

    with pytest.raises(RoutewatchError) as refused:
        start_stream(spark, settings, "spool")

    message = str(refused.value)
    assert message.startswith(f"the checkpoint {checkpoint} holds state in layout an earlier one")
    assert f"reset the job with {RESET_COMMAND}, which deletes every checkpoint" in message
    assert message.count(". ") == 0 and message.endswith(".")

    # one of layout 2 (the whole stream in one group, before state buckets), or 3 (each cluster
    # whole in one bucket, before shards): refused alike
    for layout in ("2\n", "3\npartitions 2\n"):
        (checkpoint / LAYOUT_FILE).write_text(layout)
        with pytest.raises(RoutewatchError, match=rf"in layout {layout[0]}, which this routewatch"):
            start_stream(spark, settings, "spool")


def test_a_checkpoint_keeps_the_shards_per_cluster_it_was_started_with(
    spark: SparkSession, tmp_path: Path, reference: list[tuple[Any, ...]]
) -> None:
    chunks = _cut(_lines(), 25)
    half = len(chunks) // 2
    whole = load(
        StreamingSettings,
        data_dir=tmp_path,
        max_files_per_trigger=1,
        trigger_interval_s=0.1,
        cluster_shards=1,  # (each cluster whole in one of the two state partitions)
    )
    _publish(whole.spool_dir, chunks[:half])
    _run(spark, whole)
    marker = whole.checkpoint_dir / "spool" / LAYOUT_FILE
    assert marker.read_text().splitlines()[1:] == ["partitions 2", "shards 1"]

    _publish(whole.spool_dir, chunks[half:], first=half)
    _run(spark, _settings(tmp_path))  # (the default: as many shards as partitions)

    assert marker.read_text().splitlines()[1:] == ["partitions 2", "shards 1"]
    assert _identity(open_store(whole.store_url).alerts()) == reference


def test_a_checkpoint_s_marker_gives_its_partitions_and_shards_or_one_clear_sentence(
    tmp_path: Path,
) -> None:
    checkpoint = tmp_path / "checkpoint"
    assert check_checkpoint(checkpoint, 4, 1) == (4, 1)  # (a new one: marked)
    assert check_checkpoint(checkpoint, 2, 0) == (4, 1)  # (then kept)
    (checkpoint / LAYOUT_FILE).unlink()
    assert check_checkpoint(checkpoint, 3, 0) == (3, 3)  # (0: as many as the partitions)
    (checkpoint / LAYOUT_FILE).write_text("4\npartitions 2\n")  # (before the shards setting)
    assert check_checkpoint(checkpoint, 3, 1) == (2, 2)

    (checkpoint / LAYOUT_FILE).write_text("4\npartitions two\n")
    with pytest.raises(RoutewatchError) as refused:
        check_checkpoint(checkpoint, 2, 0)
    message = str(refused.value)
    assert "does not say its state partitions: reset the job" in message
    assert message.count(". ") == 0 and message.endswith(".")


def _checksum_files(checkpoint: Path) -> set[str]:
    """The .crc files of what each batch writes: its offsets, commit, file list, changelogs."""
    return {
        str(p.relative_to(checkpoint))
        for p in checkpoint.rglob(".*.crc")
        if p.parts[len(checkpoint.parts)] in ("offsets", "commits", "sources")
        or p.name.endswith(".changelog.crc")
    }


def test_a_checkpoint_written_with_hadoop_checksums_resumes_and_new_files_have_none(
    spark: SparkSession, tmp_path: Path, reference: list[tuple[Any, ...]]
) -> None:
    """Checkpoints of earlier versions were written through Hadoop's checksummed local file
    system (a .crc beside each file); the job now writes local checkpoints without them."""
    settings = _settings(tmp_path)
    checkpoint = settings.checkpoint_dir / "spool"
    chunks = _cut(_lines(), 25)
    half = len(chunks) // 2
    _publish(settings.spool_dir, chunks[:half])
    # (a session's Hadoop settings are read without the spark.hadoop. prefix)
    hadoop_key = LOCAL_CHECKPOINT_FS_KEY.removeprefix("spark.hadoop.")
    spark.conf.set(hadoop_key, "org.apache.hadoop.fs.local.LocalFs")  # Hadoop's default
    try:
        _run(spark, settings)
    finally:
        spark.conf.unset(hadoop_key)
    before = _checksum_files(checkpoint)
    assert {f"commits/.{b}.crc" for b in range(half)} <= before
    assert any(name.endswith(".changelog.crc") for name in before)

    _publish(settings.spool_dir, chunks[half:], first=half)
    _run(spark, settings)

    assert _identity(open_store(settings.store_url).alerts()) == reference
    assert (checkpoint / "commits" / str(len(chunks) - 1)).exists()
    assert _checksum_files(checkpoint) == before


def _heartbeat(event_id: str, ts: int, queues: int, full: bool) -> bytes:
    return orjson.dumps(
        {
            "v": 1,
            "type": "heartbeat",
            "ts": ts,
            "cluster": "C",
            "event_id": event_id,
            "broker": "broker-a",
            "broker_addr": "10.0.0.1:10911",
            "broker_id": 0,
            "namesrv": "10.0.0.100:9876",
            "auto_create_topic_enable": False,
            "default_topic_queue_nums": 8,
            "full": full,
            "topics": {"T": {"read_queue_nums": queues, "write_queue_nums": queues, "perm": 6}},
        }
    )


def test_events_with_the_same_ts_keep_their_arrival_order_across_batches(
    spark: SparkSession, tmp_path: Path
) -> None:
    """Held events keep their arrival numbers from batch to batch: the full table, then the
    update that arrived after it in the next batch (with the same ts, no seq, and an id that
    sorts first), leave the topic on the update's 4 queues."""
    settings = _settings(tmp_path)
    _publish(
        settings.spool_dir,
        [
            [_heartbeat("z-full", 1_000, 8, True)],
            [_heartbeat("a-update", 1_000, 4, False)],
            [_heartbeat("later", 10_000, 4, True)],  # carries stream time past the bound
        ],
    )

    _run(spark, settings)

    store = open_store(settings.store_url)
    routes = store.db.execute(
        "SELECT write_queue_nums FROM route_intervals WHERE topic = 'T' ORDER BY valid_from"
    ).fetchall()
    assert [r[0] for r in routes] == [8, 4]


def _silent_cluster_lines() -> list[bytes]:
    """Two clusters (the broker-dies scenario on each); every event of the second after 50 s is
    cut off, so its brokers fall silent together while the first's events go on."""
    cut = DEFAULT_START_MS + 50_000
    events = on_clusters({"Live": "broker-dies", "Silent": "broker-dies"}, first_seed=3)
    return [encode(e) for e in events if e.cluster == "Live" or e.ts <= cut]


@pytest.fixture(scope="module")
def silent_reference(
    spark: SparkSession, tmp_path_factory: pytest.TempPathFactory
) -> list[tuple[Any, ...]]:
    root = tmp_path_factory.mktemp("silent-reference")
    trace = root / "trace.jsonl"
    trace.write_bytes(b"".join(line + b"\n" for line in _silent_cluster_lines()))
    (alerts,) = evaluate_traces(spark, [trace], _settings(root)).values()
    expired = {(a["cluster"], a["broker"]) for a in alerts if a["kind"] == "BROKER_EXPIRED"}
    assert {("Silent", "broker-a"), ("Silent", "broker-b")} <= expired
    return _identity(alerts)


@pytest.mark.parametrize("size", [30, 200])
def test_a_silent_cluster_expires_whatever_the_batches_and_across_a_restart(
    spark: SparkSession, tmp_path: Path, silent_reference: list[tuple[Any, ...]], size: int
) -> None:
    settings = _settings(tmp_path)
    chunks = _cut(_silent_cluster_lines(), size)
    half = len(chunks) // 2
    _publish(settings.spool_dir, chunks[:half])
    _run(spark, settings)
    _publish(settings.spool_dir, chunks[half:], first=half)

    _run(spark, settings)

    store = open_store(settings.store_url)
    assert _identity(store.alerts()) == silent_reference
    clocks = {c["cluster"]: c["stream_time"] for c in store.clusters()}
    assert clocks["Silent"] == clocks["Live"]  # one clock: the silent cluster's moved on too
