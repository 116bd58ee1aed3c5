"""Topics left on one broker by a plain ``DefaultMQProducer``, found from the broker side alone,
on a real RocketMQ (a NameServer, broker-a and broker-b with auto-creation on): ``routewatch
collect`` into the spool, ``routewatch stream`` over it, and the job's step over the same files
as one stream (what ``routewatch evaluate`` runs). No event is written by the test; the producer
has no hook. On both release lines, 4.9 and 5.x (a 5.x broker registers a topic a send
auto-created alone, under a new data version, where 4.9 registers its whole table: the
collector finds it either way).

The twin scenario ``broker-side-auto-created`` (``emitter/scenarios.py``) does the same on the
emitter's model, under the cluster's line; both end with the alerts it expects."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from pathlib import Path
from typing import Any

import orjson
import pytest

from emitter.versions import line_of
from routewatch.store import open_store
from routewatch.testing.processes import free_port, start_routewatch, stop, wait_for
from routewatch.testing.rocketmq import BrokerSpec, ClusterSpec, RocketMQCluster
from tests.support.rocketmq import EVERY_MAJOR, module_cluster
from tests.support.route_driver import ProducerSpec, RouteDriver, module_driver
from tests.support.traces import evaluate_events, expected, shape

pytestmark = [pytest.mark.rocketmq, pytest.mark.spark, pytest.mark.slow]

TWIN = "broker-side-auto-created"
POLL_S, LATENESS_S = 1.0, 2.0
SPEC = ClusterSpec(brokers=(BrokerSpec("broker-a"), BrokerSpec("broker-b")))

cluster = module_cluster(SPEC, EVERY_MAJOR)
driver = module_driver(lambda c: ProducerSpec("p1", c.namesrv_addr()))


def _spool_events(spool: Path) -> list[dict[str, Any]]:
    events = []
    for path in sorted(spool.glob("*.jsonl"), key=lambda p: (p.stat().st_mtime_ns, p.name)):
        events += [orjson.loads(line) for line in path.read_bytes().splitlines()]
    return events


def _first_sight(events: list[dict[str, Any]], topic: str) -> int:
    return min(int(e["ts"]) for e in events if topic in e.get("topics", {}))


def _holders(cluster: RocketMQCluster, topic: str) -> list[str]:
    return [name for name in ("broker-a", "broker-b") if topic in cluster.broker(name).topics()]


def test_stuck_topics_are_found_from_the_broker_side_alone(
    cluster: RocketMQCluster, driver: RouteDriver, tmp_path: Path
) -> None:
    # a topic stuck before routewatch was installed: one send, one broker
    (before,) = driver.send("p1", "BeforeTopic")
    assert before.ok, before
    assert _holders(cluster, "BeforeTopic") == [before.broker]

    data, spool = tmp_path / "data", tmp_path / "data" / "spool"
    env = {
        **os.environ,
        "ROUTEWATCH_DATA_DIR": str(data),
        "ROUTEWATCH_SPOOL_DIR": str(spool),
        "ROUTEWATCH_LATENESS_BOUND_S": str(LATENESS_S),
        "ROUTEWATCH_TRIGGER_INTERVAL_S": "1",
        "ROUTEWATCH_COLLECT_POLL_INTERVAL_S": str(POLL_S),
        "ROUTEWATCH_COLLECT_HEARTBEAT_INTERVAL_S": str(POLL_S),
        "ROUTEWATCH_COLLECT_METRICS_PORT": str(free_port()),
    }
    spool.mkdir(parents=True)
    log = tmp_path / "stream.log"  # (the job's log lines there too)
    stream = start_routewatch(["stream", "--source", "spool", "--log", str(log)], env, log)
    collect = start_routewatch(
        ["collect", "--namesrv", cluster.namesrv_addr(), "--to", "spool"],
        env,
        tmp_path / "collect.log",
    )
    store_url = f"sqlite:///{data / 'routewatch.db'}"

    def coverage(running: bool = True) -> dict[str, dict[str, Any]]:
        for proc, log in ((stream, "stream.log"), (collect, "collect.log")):
            if running and proc.poll() is not None:
                raise AssertionError((tmp_path / log).read_text()[-3000:])
        if not (data / "routewatch.db").exists():
            return {}
        store = open_store(store_url)
        try:
            return {a["topic"]: a for a in store.alerts() if a["kind"] == "PARTIAL_COVERAGE"}
        finally:
            store.close()

    try:
        wait_for(lambda: len(_spool_events(spool)) >= 2, 120, "the collector's first heartbeats")
        first_poll = min(e["ts"] for e in _spool_events(spool))
        # found at start: opened at the collector's first sight of it, settled at once
        wait_for(lambda: "BeforeTopic" in coverage(), 180, "BeforeTopic's PARTIAL_COVERAGE")

        cluster.update_topic("ClusterTopic", cluster="DefaultCluster")  # -c: every master
        cluster.update_topic("OneBrokerTopic", broker="broker-a")  # -b: one broker, on purpose
        sent_at = time.time()
        (stuck,) = driver.send("p1", "StuckTopic")
        assert stuck.ok, stuck

        # within 60 s + the poll interval + the lateness bound + 5 s of the send
        deadline = sent_at + 60 + POLL_S + LATENESS_S + 5
        wait_for(
            lambda: "StuckTopic" in coverage(),
            deadline - time.time(),
            "StuckTopic's PARTIAL_COVERAGE within its bound",
            interval=0.25,
        )
        stored_after = time.time() - sent_at
        print(f"StuckTopic's PARTIAL_COVERAGE was in the store {stored_after:.1f} s after the send")
        wait_for(lambda: "OneBrokerTopic" in coverage(), 60, "OneBrokerTopic's PARTIAL_COVERAGE")
        # ClusterTopic's 60 s have passed on both brokers by now
        wait_for(
            lambda: (
                max(e["ts"] for e in _spool_events(spool))
                > _first_sight(_spool_events(spool), "ClusterTopic") + 65_000
            ),
            60,
            "event time 65 s past ClusterTopic's creation",
        )
    finally:
        stop(collect)
        stream.send_signal(signal.SIGTERM)
        try:
            stream.wait(120)
        except subprocess.TimeoutExpired:
            stop(stream)
    assert collect.returncode == 0, (tmp_path / "collect.log").read_text()[-3000:]

    # the cluster as the alerts say: each on one broker, ClusterTopic on both
    assert _holders(cluster, "StuckTopic") == [stuck.broker]
    assert _holders(cluster, "OneBrokerTopic") == ["broker-a"]
    assert _holders(cluster, "ClusterTopic") == ["broker-a", "broker-b"]

    events = _spool_events(spool)
    found = coverage(running=False)
    assert set(found) == {"BeforeTopic", "OneBrokerTopic", "StuckTopic"}, found  # no ClusterTopic
    before_alert, stuck_alert = found["BeforeTopic"], found["StuckTopic"]
    assert before_alert["evidence"]["auto_created_evidence"] == "inferred_at_start"
    assert before_alert["opened_at"] == before_alert["evidence"]["auto_created_at"] == first_poll
    assert stuck_alert["evidence"]["auto_created_evidence"] == "inferred_while_watching"
    assert stuck_alert["opened_at"] <= _first_sight(events, "StuckTopic") + 60_000
    assert stored_after <= 60 + POLL_S + LATENESS_S + 5
    remedy = found["OneBrokerTopic"]["remedy"]
    assert "mqadmin updateTopic" in remedy and "silence this alert" in remedy

    # the stream, the job's step over the same files as one stream, and the twin scenario agree
    twin = expected(TWIN, line_of(cluster.release))
    stored = sorted(shape(a) for a in open_store(store_url).alerts())
    assert stored == twin
    final, _ = evaluate_events(events, "DefaultCluster")
    assert sorted(shape(a) for a in final) == twin
