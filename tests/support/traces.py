"""Scenario traces as the engine and the job take them."""

from __future__ import annotations

import random
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import orjson

from emitter.scenarios import SCENARIOS, ExpectedAlert, on_clusters
from emitter.trace import TraceWriter
from emitter.versions import ROCKETMQ_4, Release
from routewatch.codec import encode
from routewatch.events import Event
from routewatch.validation import validate

Arrival = tuple[str, int, int | None, str]


def arrivals(name: str, seed: int = 0, version: Release = ROCKETMQ_4) -> list[Arrival]:
    """``(event_id, ts, seq, raw)`` of every event of a scenario under RocketMQ ``version``'s
    behaviour, in trace order."""
    events = SCENARIOS[name].run(seed, version=version)
    return [(e.event_id, e.ts, e.seq, encode(e).decode()) for e in events]


def expected(name: str, version: Release = ROCKETMQ_4) -> list[tuple[object, ...]]:
    return sorted(_shape(a) for a in SCENARIOS[name].expected_under(version))


def _shape(a: ExpectedAlert) -> tuple[object, ...]:
    return (a.kind, a.state, a.severity, a.cluster, a.topic, a.broker, a.broker_id, a.cause)


SHAPE = ("kind", "state", "severity", "cluster", "topic", "broker", "broker_id", "cause")


def shape(alert: object) -> tuple[object, ...]:
    """The fields of an alert that a scenario's expectation fixes (an object or a dict)."""
    if isinstance(alert, dict):
        return tuple(alert[f] for f in SHAPE)
    return tuple(getattr(alert, f) for f in SHAPE)


def jittered_clusters(
    names: list[str], seed: int, most: int = 12, twice: float = 0.03
) -> list[Arrival]:
    """Scenarios run side by side, each on a cluster of its own (``cluster-<i>``), merged in
    event-time order, then jittered as a shared stream is: cut in runs of up to ``most``
    events, a random third of neighbouring runs swapped (events later than the bound among
    them), and a ``twice`` share of events sent again a little later (duplicates)."""
    rng = random.Random(seed)
    merged = on_clusters({f"cluster-{i}": name for i, name in enumerate(names)}, seed)
    stream = [(e.event_id, e.ts, e.seq, encode(e).decode()) for e in merged]
    runs = []
    while stream:
        runs.append(stream[: rng.randint(1, most)])
        del stream[: len(runs[-1])]
    for i in range(len(runs) - 1):
        if rng.random() < 0.3:
            runs[i], runs[i + 1] = runs[i + 1], runs[i]
    out = [arrival for run in runs for arrival in run]
    for at in sorted(rng.sample(range(len(out)), int(len(out) * twice)), reverse=True):
        out.insert(min(at + rng.randint(1, 20), len(out)), out[at])
    return out


def write_trace(events: Iterable[Event], path: Path) -> int:
    """Write ``events`` to the trace ``path`` as ``routewatch simulate`` does; how many."""
    with TraceWriter(path) as writer:
        for event in events:
            writer.write(event)
        return writer.count


def evaluate_events(events: list[dict[str, Any]], cluster: str) -> tuple[list[Any], list[Any]]:
    """The final alerts and every alert change the job's engine makes of ``events`` (written by
    a collector, in any order), each checked against the contract first."""
    from streaming.engine.runner import run_stream

    for event in events:
        assert validate(event) is None, event
    ordered = sorted(events, key=lambda e: (e["ts"], e.get("seq", -1)))
    arrivals = [(e["event_id"], e["ts"], e.get("seq"), orjson.dumps(e).decode()) for e in ordered]
    run = run_stream(arrivals, lateness_ms=2_000)
    return run.final_alerts(), run.cluster(cluster).alert_changes
