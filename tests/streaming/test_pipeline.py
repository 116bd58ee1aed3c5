"""The whole pipeline over traces: every scenario ends with its documented alerts."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest
from pyspark.sql import SparkSession

from emitter.scenarios import SCENARIOS
from emitter.trace import write_trace
from routewatch.settings import load
from streaming.jobs import evaluate_traces
from streaming.pipeline import changes
from streaming.settings import StreamingSettings
from tests.support.traces import expected

pytestmark = pytest.mark.spark

ALERT_FIELDS = {
    "id",
    "kind",
    "severity",
    "state",
    "cluster",
    "topic",
    "broker",
    "broker_id",
    "cause",
    "opened_at",
    "updated_at",
    "resolved_at",
    "detected_at",
    "summary",
    "evidence",
    "remedy",
}


@pytest.fixture(scope="module")
def traces(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    folder = tmp_path_factory.mktemp("traces")
    out = {}
    for name, scenario in SCENARIOS.items():
        out[name] = folder / f"{name}.jsonl.gz"
        write_trace(scenario.run(seed=3), out[name])
    return out


def _settings(tmp_path: Path) -> StreamingSettings:
    return load(StreamingSettings, data_dir=tmp_path)


def test_every_scenario_ends_with_exactly_its_alerts(
    spark: SparkSession, traces: dict[str, Path], tmp_path: Path
) -> None:
    results = evaluate_traces(spark, list(traces.values()), _settings(tmp_path))

    for name, path in traces.items():
        alerts = results[str(path)]
        got = sorted(
            tuple(
                a[f]
                for f in (
                    "kind",
                    "state",
                    "severity",
                    "cluster",
                    "topic",
                    "broker",
                    "broker_id",
                    "cause",
                )
            )
            for a in alerts
        )
        assert got == expected(name), name
        assert all(set(a) == ALERT_FIELDS for a in alerts)
        assert all(a["summary"] and isinstance(a["evidence"], dict) for a in alerts)


def test_bad_input_is_quarantined_with_its_reason_and_changes_nothing(
    spark: SparkSession, traces: dict[str, Path], tmp_path: Path
) -> None:
    import gzip

    lines = gzip.decompress(traces["broker-dies"].read_bytes()).decode().splitlines()
    noisy = tmp_path / "noisy.jsonl"
    noisy.write_text("\n".join([lines[0], "{oops", '{"v":2}', *lines[1:], "[]"]) + "\n")
    text = spark.read.format("text").load(str(noisy))
    from streaming.pipeline import file_lines

    rows = changes(
        file_lines(text), lateness_ms=2000, dedupe_horizon_ms=300_000, final=True
    ).collect()

    bad = sorted(orjson.loads(r.payload)["reason"] for r in rows if r.kind == "bad")
    assert bad == ["not_json", "not_object", "unknown_version"]
    clean = evaluate_traces(spark, [traces["broker-dies"]], _settings(tmp_path))
    alerts = [orjson.loads(r.payload) for r in rows if r.kind == "alert"]
    assert {a["id"] for a in alerts} == {a["id"] for a in clean[str(traces["broker-dies"])]}
