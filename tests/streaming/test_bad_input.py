"""Noisy input — corrupt lines, every event twice, events shuffled within the lateness bound and
some beyond it — gives the clean trace's alerts, with exact quarantine, duplicate and late
counts in the store and the API's metrics."""

from __future__ import annotations

import os
import random
from pathlib import Path
from typing import Any

import orjson
import pytest
from fastapi.testclient import TestClient
from prometheus_client import CollectorRegistry
from pyspark.sql import SparkSession

from api import ApiSettings, create_app
from emitter.scenarios import SCENARIOS
from routewatch.codec import encode
from routewatch.settings import load
from routewatch.store import open_store
from streaming.job.evaluate import evaluate_traces
from streaming.job.stream import start_stream
from streaming.settings import StreamingSettings

pytestmark = [pytest.mark.spark, pytest.mark.slow]

CORRUPT = [
    b"{not json",
    b'{"v": 1, "type": "send"}',
    b"[]",
    b'{"v": 9, "type": "send"}',
    b'{"v": 1, "type": "metric", "ts": 1}',
]


def _noisy(lines: list[bytes], rng: random.Random) -> tuple[list[bytes], int, int]:
    """Shuffle within 1.8 s, delay five healthy sends by 10 s (late), send everything twice,
    and add 5 % corrupt lines. Returns the lines, how many are late, how many corrupt."""
    events = [orjson.loads(line) for line in lines]
    healthy = [
        i
        for i, e in enumerate(events)
        if e["type"] == "send" and e["topic"] == "PaymentsTopic" and e["ts"] % 7 == 0
    ]
    late = set(rng.sample(healthy, 5))
    keyed = [
        (e["ts"] + (10_000 if i in late else rng.uniform(-900, 900)), line)
        for i, (e, line) in enumerate(zip(events, lines, strict=True))
    ]
    shuffled = [line for _, line in sorted(keyed, key=lambda k: k[0])]
    doubled = [x for line in shuffled for x in (line, line)]
    corrupt = len(doubled) // 20
    for _ in range(corrupt):
        doubled.insert(rng.randrange(len(doubled)), rng.choice(CORRUPT))
    return doubled, len(late), corrupt


def _identity(alerts: list[dict[str, Any]]) -> list[tuple[Any, ...]]:
    return sorted(
        (a["id"], a["kind"], a["state"], a["opened_at"], a["resolved_at"], a["cause"])
        for a in alerts
    )


def test_noisy_input_gives_the_clean_alerts_and_exact_counts(
    spark: SparkSession, tmp_path: Path
) -> None:
    clean = [encode(e) for e in SCENARIOS["demo-mixed"].run(seed=6)]
    noisy, late, corrupt = _noisy(clean, random.Random(6))
    clean_trace = tmp_path / "clean.jsonl"
    clean_trace.write_bytes(b"".join(line + b"\n" for line in clean))
    settings = load(
        StreamingSettings,
        data_dir=tmp_path / "data",
        trigger_interval_s=0.1,
        max_files_per_trigger=1,
    )
    reference = _identity(next(iter(evaluate_traces(spark, [clean_trace], settings).values())))
    settings.spool_dir.mkdir(parents=True)
    for n, start in enumerate(range(0, len(noisy), 97)):
        part = settings.spool_dir / f".part-{n:04d}"
        part.write_bytes(b"".join(line + b"\n" for line in noisy[start : start + 97]))
        os.utime(part, (1_800_000_000 + n, 1_800_000_000 + n))
        part.rename(settings.spool_dir / f"part-{n:04d}.jsonl")

    query = start_stream(spark, settings, "spool")
    try:
        query.processAllAvailable()
    finally:
        query.stop()

    store = open_store(settings.store_url)
    assert _identity(store.alerts()) == reference
    counters = store.counters()
    total = {
        name: sum(v for (n, _, _), v in counters.items() if n == name)
        for name in ("duplicates", "late", "quarantined", "events")
    }
    held = store.clusters()[0]["held"]
    assert total == {
        "duplicates": len(clean),
        "late": late,
        "quarantined": corrupt,
        "events": len(clean) - late - held,
    }
    assert sum(1 for q in store.quarantine(10_000) if q["reason"] == "late") == late

    registry = CollectorRegistry()
    client = TestClient(create_app(load(ApiSettings, data_dir=tmp_path / "data"), registry))
    client.get("/metrics")
    assert registry.get_sample_value("routewatch_events_duplicate_total") == len(clean)
    assert registry.get_sample_value("routewatch_events_late_total") == late
    body = client.get("/quarantine").json()
    assert sum(body["counts"].values()) == corrupt + late
