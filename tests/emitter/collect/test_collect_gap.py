"""``routewatch collect`` killed for 150 s on a real RocketMQ (4.9 and 5.x) and started again: the
job raises the collector's own alert over the gap, and no ``BROKER_EXPIRED`` for the brokers it
finds still registered when it is back (its rounds, ``collector_round`` events, tell the job it
watches); and a NameServer it cannot reach (a closed port) is unknown, with an alert of its own,
not a divergence.
A broker killed while the collector runs still expires at its usual instant: the last test of
``test_collect_rocketmq.py``."""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

import orjson
import pytest

from emitter.collect.derive import Deriver
from emitter.collect.metrics import CollectorMetrics
from emitter.collect.poller import Poller
from routewatch.codec import encode
from routewatch.events import CollectorRound, Heartbeat
from routewatch.testing.processes import free_port, start_routewatch, stop, wait_for
from routewatch.testing.rocketmq import BrokerSpec, ClusterSpec, RocketMQCluster
from tests.support.rocketmq import EVERY_MAJOR, module_cluster
from tests.support.traces import evaluate_events

pytestmark = pytest.mark.rocketmq

CLUSTER = "DefaultCluster"
SPEC = ClusterSpec(brokers=(BrokerSpec("broker-a"), BrokerSpec("broker-b")))
GAP_S = 150

cluster = module_cluster(SPEC, EVERY_MAJOR)


def _events(spool: Path) -> list[dict[str, Any]]:
    return [
        orjson.loads(line)
        for path in sorted(spool.glob("*.jsonl"))
        for line in path.read_bytes().splitlines()
    ]


def _rounds(spool: Path) -> list[dict[str, Any]]:
    return [e for e in _events(spool) if e["type"] == "collector_round"]


@pytest.mark.slow
def test_a_collector_gap_pages_as_the_collector_not_as_the_brokers(
    cluster: RocketMQCluster, tmp_path: Path
) -> None:
    spool = tmp_path / "spool"
    env = {
        **os.environ,
        "ROUTEWATCH_DATA_DIR": str(tmp_path / "data"),
        "ROUTEWATCH_SPOOL_DIR": str(spool),
        "ROUTEWATCH_SPOOL_ROLL_INTERVAL_S": "1",
        "ROUTEWATCH_COLLECT_POLL_INTERVAL_S": "1",
    }
    argv = ["collect", "--namesrv", cluster.namesrv_addr(), "--to", "spool"]
    first = start_routewatch(argv, env, tmp_path / "first.log")
    try:
        wait_for(lambda: len(_rounds(spool)) >= 3, 60, "the collector's first rounds")
    finally:
        first.kill()  # (a crash: no clean stop)
        first.wait(30)
    killed = time.monotonic()
    last_round = max(e["ts"] for e in _rounds(spool))
    # the gap itself is what is tested: 150 s in which nobody watches
    wait_for(
        lambda: time.monotonic() >= killed + GAP_S, GAP_S + 10, f"{GAP_S} s without a collector"
    )
    second = start_routewatch(argv, env, tmp_path / "second.log")
    try:
        wait_for(
            lambda: any(e["ts"] > last_round + GAP_S * 1000 for e in _rounds(spool)),
            60,
            "the second collector's first round",
        )
    finally:
        stop(second)

    events = _events(spool)
    final, changes = evaluate_events(events, CLUSTER)
    back = min(e["ts"] for e in _rounds(spool) if e["ts"] > last_round + GAP_S * 1000)
    (silent,) = [a for a in final if a.kind == "COLLECTOR_SILENT"]
    assert (silent.state, silent.opened_at, silent.resolved_at) == (
        "resolved",
        last_round + 30_000,  # three 1 s rounds, and at least 30 s
        back,
    )
    assert [a for a in changes if a.kind == "BROKER_EXPIRED"] == []
    assert {a.kind for a in final} == {"COLLECTOR_SILENT"}


def test_a_namesrv_the_collector_cannot_reach_is_unknown_not_a_divergence(
    cluster: RocketMQCluster,
) -> None:
    # the cluster's NameServer, and one on a closed port; the rounds 10 s apart in event time
    closed = f"127.0.0.1:{free_port()}"
    clock = iter(range(1_800_000_000, 1_900_000_000, 10))
    poller = Poller([cluster.namesrv_addr(), closed], CollectorMetrics(), clock=lambda: next(clock))
    deriver = Deriver(10)
    events: list[dict[str, Any]] = []
    try:
        for _ in range(6):
            snap = poller.poll(deriver.known, deriver)
            written: list[Heartbeat | CollectorRound] = list(deriver.derive(snap))
            written += deriver.rounds(poller.namesrvs, snap, int(poller.clock() * 1000), 10_000)
            events += [orjson.loads(encode(e)) for e in written]
    finally:
        poller.close()
    rounds = [e for e in events if e["type"] == "collector_round"]
    assert rounds[-1]["namesrvs"][closed] == {
        "reached": False,
        "unreachable_since": rounds[0]["ts"],
    }
    final, _ = evaluate_events(events, CLUSTER)
    (unreachable,) = final
    assert (unreachable.kind, unreachable.state) == ("NAMESRV_UNREACHABLE", "open")
    assert unreachable.evidence["unreachable_since"] == {closed: rounds[0]["ts"]}
