"""The broker side's alerts on a real cluster, from ``routewatch collect`` alone: the same run on
each RocketMQ release line (``tests/emitter/collect/test_collect_rocketmq.py`` on 4.9,
``test_collect_rocketmq5.py`` on 5.x)."""

from __future__ import annotations

import dataclasses
import os
import time
import urllib.request
import uuid
from pathlib import Path
from typing import Any

import orjson

from routewatch.testing.processes import free_port, start_routewatch, stop, wait_for
from routewatch.testing.rocketmq import BrokerSpec, ClusterSpec, RocketMQCluster
from tests.support.alert_wording import wording_problems
from tests.support.route_driver import RouteDriver
from tests.support.traces import evaluate_events, expected, shape

CLUSTER = "DefaultCluster"
# two NameServers, broker-a and broker-b registered with both, broker-c (auto-creation off, so
# no TBW102) with ns1 only
SPEC = ClusterSpec(
    namesrvs=("ns1", "ns2"),
    brokers=(
        BrokerSpec("broker-a"),
        BrokerSpec("broker-b"),
        BrokerSpec("broker-c", namesrvs=("ns1",), auto_create_topic=False),
    ),
)


def _spool_events(spool: Path) -> list[dict[str, Any]]:
    events = []
    for path in sorted(spool.glob("*.jsonl")):
        events += [orjson.loads(line) for line in path.read_bytes().splitlines()]
    return events


def _metrics(port: int) -> str:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as answer:
        return str(answer.read().decode())


def broker_side_alerts(cluster: RocketMQCluster, driver: RouteDriver, tmp_path: Path) -> None:
    """``routewatch collect`` (1 s polls) on :data:`SPEC`'s cluster drives every alert the broker
    side can raise — QUEUE_SKEW, TEMPLATE_MISSING, PARTIAL_COVERAGE (one send of the driver's
    producer ``p1``), BROKER_EXPIRED (broker-b killed), NAMESRV_DIVERGENCE (broker-c on ns1
    only) — and its events end with the alerts of the twin scenario ``broker-side-alerts``."""
    spool, port = tmp_path / "spool", free_port()
    env = {
        **os.environ,
        "ROUTEWATCH_DATA_DIR": str(tmp_path / "data"),
        "ROUTEWATCH_SPOOL_DIR": str(spool),
        "ROUTEWATCH_COLLECT_POLL_INTERVAL_S": "1",
        "ROUTEWATCH_COLLECT_METRICS_PORT": str(port),
    }
    log = tmp_path / "collect.log"
    proc = start_routewatch(
        ["collect", "--namesrv", cluster.namesrv_addr(), "--to", "spool"], env, log
    )

    def newest() -> int:
        return max((e["ts"] for e in _spool_events(spool)), default=0)

    try:
        wait_for(lambda: len(_spool_events(spool)) >= 5, 60, "the first events in the spool")
        skewed, stuck = f"Skew_{uuid.uuid4().hex[:6]}", f"Stuck_{uuid.uuid4().hex[:6]}"
        # QUEUE_SKEW: 8 queues on broker-a, 4 on broker-c
        cluster.update_topic(skewed, broker="broker-a", read_queues=8, write_queues=8)
        cluster.update_topic(skewed, broker="broker-c", read_queues=4, write_queues=4)
        # TEMPLATE_MISSING: auto-creation turned on at run time on a broker without TBW102
        cluster.update_broker_config("broker-c", "autoCreateTopicEnable", "true")
        # PARTIAL_COVERAGE: one send to a new topic lands on one broker, which creates it
        (outcome,) = driver.send("p1", stuck)
        assert outcome.ok, outcome

        def holds_stuck() -> bool:
            return any(
                e.get("broker") == outcome.broker and stuck in e["topics"]
                for e in _spool_events(spool)
            )

        wait_for(holds_stuck, 30, f"a heartbeat of {outcome.broker} holding {stuck}")
        # BROKER_EXPIRED: broker-b dies; both NameServers drop it at once
        killed_at = int(time.time() * 1000)
        cluster.broker("broker-b").kill()
        # NAMESRV_DIVERGENCE (broker-c on ns1 only, 60 s) and the expiry (120 s) need event time
        wait_for(lambda: newest() > killed_at + 125_000, 240, "event time 125 s past the kill")
        metrics = _metrics(port)
    finally:
        stop(proc)
    output = log.read_text()
    assert proc.returncode == 0, output
    assert "stopped;" in output and "Traceback" not in output

    events = _spool_events(spool)
    # never a heartbeat of broker-b once the NameServers dropped it
    late_b = [e for e in events if e.get("broker") == "broker-b" and e["ts"] > killed_at + 3_000]
    assert late_b == []
    assert {e["namesrv"] for e in events if e.get("broker") == "broker-c"} == {
        cluster.namesrv_addr("ns1")
    }
    final, alerts = evaluate_events(events, CLUSTER)
    # the twin scenario's alerts, its topic names for this run's
    names = {skewed: "SkewTopic", stuck: "StuckTopic"}
    assert sorted(
        shape(dataclasses.replace(a, topic=names.get(a.topic, a.topic))) for a in final
    ) == expected("broker-side-alerts")
    opened = {(a.kind, a.topic or a.broker) for a in alerts}
    assert ("QUEUE_SKEW", skewed) in opened
    assert ("TEMPLATE_MISSING", "broker-c") in opened
    assert ("PARTIAL_COVERAGE", stuck) in opened
    assert ("BROKER_EXPIRED", "broker-b") in opened
    assert ("NAMESRV_DIVERGENCE", "broker-c") in opened
    assert not [a for a in alerts if a.broker == "broker-a"], "broker-a was healthy throughout"
    expired = next(a for a in alerts if a.kind == "BROKER_EXPIRED")
    # its last heartbeat is at most one renewal (30 s) and a poll before the kill
    assert killed_at + 120_000 - 32_000 <= expired.opened_at <= killed_at + 120_000
    # what they say holds of their evidence, and no system topic of the real brokers' tables
    # (the cluster's and brokers' own, the reply topic, TBW102, ...) in a count or topic list
    brokers = frozenset(b.name for b in SPEC.brokers)
    assert [p for a in alerts for p in wording_problems(a.to_dict(), brokers)] == []
    assert "broker-b" in expired.evidence["system_topics"]

    # the counters, on its own /metrics while it ran (the spool got every event it wrote)
    values = dict(
        line.rsplit(" ", 1) for line in metrics.splitlines() if line and not line.startswith("#")
    )
    assert 0 < float(values["routewatch_collect_events_written_total"]) <= len(events)
    assert float(values["routewatch_collect_polls_total"]) >= 125
    assert float(values['routewatch_collect_requests_total{target="namesrv"}']) > 0
    assert 'routewatch_collect_targets_down{target="broker"}' in values
