"""Convergence at a glance: the Now page's figures equal the metrics', and both equal what this
test computes from the trace's own registrations — which topics sit on every writable master
and are routed alike by both NameServers, and how long each route change took to reach both."""

from __future__ import annotations

import re
import statistics
from pathlib import Path
from typing import Any

import orjson
import pytest
from fastapi.testclient import TestClient
from prometheus_client.parser import text_string_to_metric_families

from api import ApiSettings, create_app
from routewatch.rocketmq import is_system_topic
from routewatch.settings import load
from streaming.settings import StreamingSettings
from tests.streaming.engine.events import NS1, NS2, Trace
from tests.support.stores import EngineJob

Tables = dict[str, int | tuple[int, int, int]]


def _trace() -> Trace:
    """Brokers a and b on two NameServers, registering every 30 s and when a table changes:
    T reaches ns1 on a at 10 s and ns2 at 12 s, then b on both at 20 s; U is on both from the
    start, its counts on a go to 8 on ns1 at 40 s and on ns2 at 45 s; V is on a alone; W
    reaches ns1 on a at 50 s and never ns2."""
    tables: dict[tuple[str, str], list[tuple[float, Tables]]] = {
        (NS1, "a"): [
            (0, {"U": 4, "V": 4}),
            (10, {"U": 4, "V": 4, "T": 4}),
            (40, {"U": 8, "V": 4, "T": 4}),
            (50, {"U": 8, "V": 4, "T": 4, "W": 4}),
        ],
        (NS2, "a"): [
            (0, {"U": 4, "V": 4}),
            (12, {"U": 4, "V": 4, "T": 4}),
            (45, {"U": 8, "V": 4, "T": 4}),
        ],
        (NS1, "b"): [(0, {"U": 4}), (20, {"U": 4, "T": 4})],
        (NS2, "b"): [(0, {"U": 4}), (20, {"U": 4, "T": 4})],
    }
    t = Trace()
    for (ns, broker), changes in tables.items():
        times = sorted({at for at, _ in changes} | {30.0, 60.0, 90.0})
        for at in times:
            table = [tb for when, tb in changes if when <= at][-1]
            t.hb(at, broker, table, ns=ns)
    return t


def _from_trace(events: list[dict[str, Any]], span_ms: int) -> dict[str, Any]:
    """The figures, from the registrations alone: each NameServer's route of each topic is the
    entries of the brokers whose latest registration there lists it (no broker expires in
    this trace: each registers every 30 s)."""
    latest: dict[tuple[str, str], dict[str, tuple[int, int, int]]] = {}
    namesrvs = sorted({e["namesrv"] for e in events})
    topics = sorted(
        {t for e in events for t in e["topics"] if not is_system_topic(t, e["cluster"])}
    )

    def route(topic: str) -> dict[str, frozenset[tuple[Any, ...]]]:
        return {
            ns: frozenset(
                (b, 0, *cfg)
                for (n, b), table in latest.items()
                if n == ns
                for t, cfg in table.items()
                if t == topic
            )
            for ns in namesrvs
        }

    durations: list[int] = []
    start: dict[str, int] = {}
    before = {t: route(t) for t in topics}
    for ts in sorted({e["ts"] for e in events}):
        for e in events:
            if e["ts"] == ts:
                latest[e["namesrv"], e["broker"]] = {
                    t: (c["read_queue_nums"], c["write_queue_nums"], c["perm"])
                    for t, c in e["topics"].items()
                }
        for t in topics:
            now = route(t)
            if now == before[t]:
                continue
            if len(set(now.values())) > 1:  # apart after this change
                start.setdefault(t, ts)
            elif t in start:
                durations.append(ts - start.pop(t))
            else:
                durations.append(0)
            before[t] = now
    brokers = {b for (_, b) in latest}
    converged = [
        t
        for t in topics
        if len(set(before[t].values())) == 1
        and {e[0] for e in next(iter(before[t].values()))} == brokers
    ]
    assert max(e["ts"] for e in events) - min(e["ts"] for e in events) < span_ms
    return {
        "ratio": len(converged) / len(topics),
        "apart": len(start),
        "changes": len(durations),
        "median": statistics.median(durations) / 1000,
        "worst": max(durations) / 1000,
    }


@pytest.fixture
def client(tmp_path: Path) -> TestClient:
    job = EngineJob(load(StreamingSettings, data_dir=tmp_path))
    job.write([raw for _, _, _, raw in _trace().arrivals()])
    return TestClient(create_app(load(ApiSettings, data_dir=tmp_path)))


def test_the_convergence_figures_are_the_traces_on_the_page_and_in_the_metrics(
    client: TestClient,
) -> None:
    events = [orjson.loads(raw) for _, _, _, raw in _trace().arrivals()]
    wanted = _from_trace(events, 3_600_000)
    # (what the trace holds, said in words: T, U converged, V on a alone, W apart; T's and U's
    # changes took 2 s and 5 s, the others reached both NameServers at once)
    assert wanted == {"ratio": 0.5, "apart": 1, "changes": 5, "median": 0.0, "worst": 5.0}

    page = client.get("/").text
    row = re.search(r'<tr data-cluster="C" ([^>]*)>', page)
    assert row is not None
    shown = dict(re.findall(r'(data-[a-z]+)="([^"]*)"', row.group(1)))
    assert float(shown["data-ratio"]) == wanted["ratio"]
    assert int(shown["data-apart"]) == wanted["apart"]
    assert int(shown["data-changes"]) == wanted["changes"]
    assert float(shown["data-median"]) == wanted["median"]
    assert float(shown["data-worst"]) == wanted["worst"]

    metrics = {
        (s.name, s.labels.get("quantile")): s.value
        for f in text_string_to_metric_families(client.get("/metrics").text)
        for s in f.samples
        if s.name.startswith("routewatch_cluster_") and s.labels.get("cluster") == "C"
    }
    assert metrics == {
        ("routewatch_cluster_topics_converged_ratio", None): wanted["ratio"],
        ("routewatch_cluster_topics_apart", None): wanted["apart"],
        ("routewatch_cluster_route_changes_converged", None): wanted["changes"],
        ("routewatch_cluster_route_convergence_seconds", "0.5"): wanted["median"],
        ("routewatch_cluster_route_convergence_seconds", "1"): wanted["worst"],
    }
