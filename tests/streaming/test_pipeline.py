"""The whole pipeline over traces: every scenario ends with its documented alerts."""

from __future__ import annotations

import dataclasses
import gzip
import random
from pathlib import Path

import orjson
import pytest
from pyspark.sql import SparkSession
from pyspark.sql import functions as F

from emitter.scenarios import SCENARIOS
from routewatch.alerts import Alert, StoredAlert
from routewatch.changes import BadLine, ChangeRow, Count, RouteChange, decode
from routewatch.codec import encode
from routewatch.settings import load
from streaming.engine.runner import StreamRun, run_stream
from streaming.job.evaluate import evaluate_traces, final_alerts
from streaming.pipeline import changes, track_clusters
from streaming.settings import StreamingSettings
from streaming.sources.spool import read_lines, trace_files
from streaming.stages.read import read_events
from tests.support.traces import expected, shape, write_trace

pytestmark = pytest.mark.spark

ALERT_FIELDS = {f.name for f in dataclasses.fields(StoredAlert)}


@pytest.fixture(scope="module")
def traces(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    folder = tmp_path_factory.mktemp("traces")
    out = {}
    for name, scenario in SCENARIOS.items():
        out[name] = folder / f"{name}.jsonl.gz"
        write_trace(scenario.run(seed=3), out[name])
    return out


@pytest.fixture(autouse=True)
def _state_store_coordinator(spark: SparkSession) -> None:
    """A batch query with a stateful stage needs the state store coordinator, which the driver
    starts with its streaming query manager (``streaming.job.evaluate`` says why): asked for
    here, so that each test runs alone as in the module."""
    spark.streams.active  # noqa: B018


def _settings(tmp_path: Path) -> StreamingSettings:
    return load(StreamingSettings, data_dir=tmp_path)


def test_every_scenario_ends_with_exactly_its_alerts(
    spark: SparkSession, traces: dict[str, Path], tmp_path: Path
) -> None:
    results = evaluate_traces(spark, list(traces.values()), _settings(tmp_path))

    for name, path in traces.items():
        alerts = results[str(path)]
        got = sorted(shape(a) for a in alerts)
        assert got == expected(name), name
        assert all(set(a) == ALERT_FIELDS for a in alerts)
        assert all(a["summary"] and isinstance(a["evidence"], dict) for a in alerts)


def test_bad_input_is_quarantined_with_its_reason_and_changes_nothing(
    spark: SparkSession, traces: dict[str, Path], tmp_path: Path
) -> None:
    lines = gzip.decompress(traces["broker-dies"].read_bytes()).decode().splitlines()
    noisy = tmp_path / "noisy.jsonl"
    noisy.write_text("\n".join([lines[0], "{oops", '{"v":2}', *lines[1:], "[]"]) + "\n")
    files = trace_files(spark, [noisy])

    rows = changes(
        files, lateness_ms=2000, dedupe_horizon_ms=300_000, final=True, lines_of=read_lines
    ).collect()

    changes_ = [decode(ChangeRow(*r)) for r in rows]
    bad = sorted(c.reason for c in changes_ if isinstance(c, BadLine))
    assert bad == ["not_json", "not_object", "unknown_version"]
    clean = evaluate_traces(spark, [traces["broker-dies"]], _settings(tmp_path))
    alerts = [c for c in changes_ if isinstance(c, Alert)]
    assert {a.id for a in alerts} == {a["id"] for a in clean[str(traces["broker-dies"])]}


def _heartbeat(ts: int, broker: str, topics: dict[str, int], version: str) -> str:
    return orjson.dumps(
        {
            "v": 1,
            "type": "heartbeat",
            "ts": ts,
            "cluster": "C",
            "event_id": f"{broker}-{ts}",
            "broker": broker,
            "broker_addr": "10.0.0.1:10911",
            "broker_id": 0,
            "namesrv": "ns1",
            "auto_create_topic_enable": False,
            "default_topic_queue_nums": 8,
            "full": True,
            "topics": {
                t: {"read_queue_nums": q, "write_queue_nums": q, "perm": 6}
                for t, q in topics.items()
            },
            "data_version": version,
        }
    ).decode()


def test_track_clusters_turns_registrations_into_route_changes_and_alerts(
    spark: SparkSession,
) -> None:
    lines = [
        _heartbeat(1_000, "a", {"T": 8}, "v1"),
        _heartbeat(1_500, "b", {"T": 4}, "v1"),
        _heartbeat(31_000, "a", {"T": 8}, "v1"),  # unchanged table: no route change
        _heartbeat(31_500, "b", {"T": 8}, "v2"),  # now even: the skew resolves
    ]
    frame = spark.createDataFrame([(v, "f") for v in lines], "value string, origin string")
    events = read_events(frame.coalesce(1))

    rows = track_clusters(events, lateness_ms=0, dedupe_horizon_ms=60_000, final=True).collect()

    changes_ = [decode(ChangeRow(*r)) for r in rows]
    routes = sorted((c.reg[1], c.at, c.config) for c in changes_ if isinstance(c, RouteChange))
    assert routes == [("a", 1_000, (8, 8, 6)), ("b", 1_500, (4, 4, 6)), ("b", 31_500, (8, 8, 6))]
    (skew,) = final_alerts(rows)
    assert (skew.kind, skew.opened_at, skew.resolved_at) == ("QUEUE_SKEW", 1_500, 31_500)
    counts = {(c.name, c.label): c.value for c in changes_ if isinstance(c, Count)}
    assert counts == {("events", "heartbeat"): 4}


def test_a_proxys_route_miss_reaches_the_engine_through_spark(spark: SparkSession) -> None:
    miss = orjson.dumps(
        {
            "v": 1,
            "type": "proxy_route_miss",
            "ts": 5_000,
            "cluster": "C",
            "event_id": "proxylog-1",
            "proxy": "host:/logs/broker_default.log",
            "topic": "T",
            "thread": "GrpcRouteThreadPool-0",
        }
    ).decode()
    lines = [_heartbeat(1_000, "a", {"U": 8}, "v1"), miss]
    frame = spark.createDataFrame([(v, "f") for v in lines], "value string, origin string")

    rows = track_clusters(
        read_events(frame.coalesce(1)), lateness_ms=0, dedupe_horizon_ms=60_000, final=True
    ).collect()

    (alert,) = final_alerts(rows)
    assert (alert.kind, alert.topic, alert.cause, alert.opened_at) == (
        "NO_ROUTE_INFO",
        "T",
        "GRPC_NOT_CREATED",
        5_000,
    )
    counts = {
        (c.name, c.label): c.value for r in rows if isinstance(c := decode(ChangeRow(*r)), Count)
    }
    assert counts[("events", "proxy_route_miss")] == 1


def test_bad_input_is_kept_with_raw_text_reason_and_detail_in_the_same_pass(
    spark: SparkSession,
) -> None:
    lines = ["{nope", "[1]", _heartbeat(1_000, "a", {"T": 8}, "v1")]
    frame = spark.createDataFrame([(v, "f") for v in lines], "value string, origin string")

    rows = track_clusters(
        read_events(frame.coalesce(1)), lateness_ms=0, dedupe_horizon_ms=60_000, final=True
    ).collect()

    changes_ = [decode(ChangeRow(*r)) for r in rows]
    bad = sorted((c.reason, c.raw) for c in changes_ if isinstance(c, BadLine))
    assert bad == [("not_json", "{nope"), ("not_object", "[1]")]
    counts = {(c.name, c.label): c.value for c in changes_ if isinstance(c, Count)}
    assert counts == {("events", "heartbeat"): 1}  # the bad lines reached no cluster's state


def _interleaved_clusters(seed: int) -> list[tuple[str, int, int | None, str]]:
    """Five scenarios, each as its own cluster, their events taken in random runs: the stream
    whose clock every state bucket must keep (some events arrive more than the bound late)."""
    rng = random.Random(seed)
    queues = []
    for i, name in enumerate(sorted(SCENARIOS)[:5]):
        queue = []
        for e in SCENARIOS[name].run(seed=seed):
            event = orjson.loads(encode(e))
            event["cluster"] = f"cluster-{i}"
            queue.append((e.event_id, e.ts, e.seq, orjson.dumps(event).decode()))
        queues.append(queue)
    stream = []
    while any(queues):
        queue = rng.choice([q for q in queues if q])
        take = rng.randint(1, 30)
        stream += queue[:take]
        del queue[:take]
    return stream


def test_state_buckets_on_several_tasks_give_exactly_one_intakes_alerts(
    spark: SparkSession,
) -> None:
    stream = _interleaved_clusters(seed=4)
    reference = run_stream(stream, lateness_ms=2000)
    assert reference.late > 0
    # the stream's lines in blocks (origins) of random length, spread over three partitions
    rng = random.Random(4)
    rows: list[tuple[str, str, int]] = []
    origin, n = 0, 0
    for _, _, _, raw in stream:
        if n == 0:
            origin, n = origin + 1, rng.randint(1, 40)
        rows.append((raw, f"o{origin:05d}", len(rows)))
        n -= 1
    lines = (
        spark.createDataFrame(rows, "value string, origin string, n long")
        .repartition(3, "origin")
        .sortWithinPartitions("origin", "n")
        .select("value", "origin")
    )

    spark.conf.set("spark.sql.shuffle.partitions", "3")
    try:
        out = (
            changes(lines, lateness_ms=2000, dedupe_horizon_ms=300_000, final=True)
            .select("*", F.spark_partition_id().alias("task"))
            .collect()
        )
    finally:
        spark.conf.set("spark.sql.shuffle.partitions", "2")

    run = StreamRun()
    run.add([ChangeRow(*r[:-1]) for r in out])
    # each cluster in shards by topic, one per task: a cluster's routes change on several
    tasks: dict[str | None, set[int]] = {}
    for r in out:
        if r.kind == "route":
            tasks.setdefault(r.cluster, set()).add(r.task)
    assert len(tasks) >= 3 and all(len(t) > 1 for t in tasks.values()), tasks
    for cluster, expected_run in reference.clusters.items():
        got = _by_alert(run.cluster(cluster).alert_changes)
        assert got == _by_alert(expected_run.alert_changes), cluster
    assert (run.late, run.duplicates) == (reference.late, reference.duplicates)


def _by_alert(changes: list[Alert]) -> dict[str, list[dict[str, object]]]:
    """A cluster's alert changes, each alert's in order (the order between two alerts of a
    cluster in shards is not kept, nor needed)."""
    out: dict[str, list[dict[str, object]]] = {}
    for alert in changes:
        out.setdefault(alert.id, []).append(alert.to_dict())
    return out
