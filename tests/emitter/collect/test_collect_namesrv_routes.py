"""What a NameServer routes, not what each broker holds (``emitter/collect/routes.py``), on a real
RocketMQ: ``mqadmin wipeWritePerm`` and ``addWritePerm``, and a topic deleted on one broker only
that the NameServer still routes. After every poll, each heartbeat the collector writes is
compared with the NameServer's own route of every topic it lists; the alerts that count
writable holders follow, in the job's engine, and the stale route opens STALE_ROUTE (the twin
scenarios on the emitter's model: ``write-perm-wiped``, ``tbw102-deleted-one-broker``). Both
release lines, 4.9 and 5.x; where 5.x differs the test says so."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from emitter.collect.derive import Deriver
from emitter.collect.metrics import CollectorMetrics
from emitter.collect.poller import Poller
from routewatch import remoting
from routewatch.events import Heartbeat, HeldTopic, TopicConfig
from routewatch.rocketmq import PERM_WRITE, TBW102
from routewatch.testing.processes import wait_for
from routewatch.testing.rocketmq import BrokerSpec, ClusterSpec, RocketMQCluster
from tests.support.rocketmq import EVERY_MAJOR, module_cluster
from tests.support.traces import evaluate_events

pytestmark = pytest.mark.rocketmq

CLUSTER = "DefaultCluster"
SPEC = ClusterSpec(namesrvs=("ns1",), brokers=(BrokerSpec("broker-a"), BrokerSpec("broker-b")))

cluster = module_cluster(SPEC, EVERY_MAJOR)


def _routed(ns: str, broker: str) -> dict[str, TopicConfig]:
    """What the NameServer at ``ns`` really routes to ``broker``: every topic it lists, asked."""
    with remoting.Connection(ns) as conn:
        out = {}
        for topic in sorted(remoting.topic_list_on(conn)):
            route = remoting.route_on(conn, topic)
            queue = None if route is None else route.queue(broker)
            if queue is not None:
                out[topic] = TopicConfig(
                    read_queue_nums=queue.read_queue_nums,
                    write_queue_nums=queue.write_queue_nums,
                    perm=queue.perm,
                )
    return out


def _perm(ns: str, topic: str, broker: str) -> int | None:
    route = remoting.topic_route(ns, topic)
    queue = None if route is None else route.queue(broker)
    return None if queue is None else queue.perm


class Watch:
    """The collector's poll, each heartbeat checked against the NameServer's real routes."""

    def __init__(self, ns: str) -> None:
        self.ns = ns
        self.poller = Poller([ns], CollectorMetrics())
        self.deriver = Deriver(30)
        self.events: list[dict[str, Any]] = []

    def poll(self) -> dict[str, Heartbeat]:
        written = self.deriver.derive(self.poller.poll(self.deriver.known, self.deriver))
        for e in written:
            assert e.topics == _routed(self.ns, e.broker), e.broker
        self.events += [dataclasses.asdict(e) | {"v": 1, "type": "heartbeat"} for e in written]
        return {e.broker: e for e in written}


def test_the_collector_writes_what_the_namesrv_routes_and_the_alerts_follow(
    cluster: RocketMQCluster,
) -> None:
    ns = cluster.namesrv_addr("ns1")
    cluster.update_topic("Both", cluster=CLUSTER)
    # one broker only, with the config auto-creation gives: auto-created, seen at start
    cluster.update_topic("Stuck", broker="broker-a", read_queues=4, write_queues=4)
    wait_for(lambda: _perm(ns, "Stuck", "broker-a") is not None, 30, "Stuck routed")
    watch = Watch(ns)
    try:
        first = watch.poll()
        assert first["broker-a"].held is None and first["broker-b"].held is None

        cluster.mqadmin("wipeWritePerm", "-b", "broker-a")
        wait_for(lambda: _perm(ns, "broker-a", "broker-a") == 5, 30, "broker-a wiped")
        wiped = watch.poll()["broker-a"]
        assert all(not c.perm & PERM_WRITE for c in wiped.topics.values())
        assert wiped.data_version != first["broker-a"].data_version  # new content, new name

        cluster.mqadmin("addWritePerm", "-b", "broker-a")
        wait_for(lambda: _perm(ns, "broker-a", "broker-a") == 6, 30, "broker-a writable")
        added = watch.poll()["broker-a"]
        assert {c.perm for c in added.topics.values()} == {6}  # the inherit bit gone too
        # TBW102's inherit bit is the broker's own: routewatch reads it from there
        assert added.held == {TBW102: HeldTopic(held=True, perm=7)}

        # deleted on broker-b only; a topic made there registers its changed table before the
        # broker answers
        b = cluster.brokers["broker-b"].addr
        remoting.delete_topic_in_broker(b, "Both")
        remoting.update_topic_in_broker(b, "Later")
        assert _perm(ns, "Later", "broker-b") == 6
        stale = watch.poll()["broker-b"]
        assert "Both" in stale.topics and "Both" not in cluster.broker("broker-b").topics()
        assert stale.held == {"Both": HeldTopic(held=False, perm=None)}
    finally:
        watch.poller.close()

    final, changes = evaluate_events(watch.events, CLUSTER)
    coverage = [a.evidence["coverage"] for a in changes if a.topic == "Stuck"]
    assert coverage == ["1/2", "0/1", "1/2"]  # wiped: its only writable holder is gone
    assert [a.evidence.get("read_only_brokers") for a in changes if a.topic == "Stuck"] == [
        None,
        ["broker-a"],
        None,
    ]
    assert {(a.kind, a.topic, a.state) for a in final} == {
        ("PARTIAL_COVERAGE", "Stuck", "open"),
        ("STALE_ROUTE", "Both", "open"),  # routed by the NameServer, not held by broker-b
    }
    (stale,) = [a for a in final if a.kind == "STALE_ROUTE"]
    assert stale.evidence == {
        "stale_routes": {ns: ["broker-b"]},
        "brokers_holding_topic": ["broker-a"],
    }


def test_a_read_only_broker_permission_is_what_the_namesrv_routes(
    cluster: RocketMQCluster,
) -> None:
    ns = cluster.namesrv_addr("ns1")
    cluster.update_broker_config("broker-b", "brokerPermission", "4")
    try:
        wait_for(lambda: _perm(ns, "broker-b", "broker-b") == 4, 30, "broker-b read-only")
        watch = Watch(ns)
        try:
            readonly = watch.poll()["broker-b"]  # (checked against every route, as every poll)
            asked = watch.poller.metrics.value(
                "routewatch_collect_requests_total", target="namesrv"
            )
        finally:
            watch.poller.close()
        # registered so by the broker itself: every topic it holds read-only; Both, deleted there
        # by the test above and still routed, keeps the perm it was routed with. 4.9 registers
        # the broker's permission as every topic's (BrokerController.registerBrokerAll); 5.x
        # registers each topic's own perm AND the broker's, so its system topic of perm 1
        # (PERM_INHERIT, rmq_sys_SYNC_BROKER_MEMBER_<broker>, TopicConfigManager) is routed 0
        odd = {"Both": 6}
        if cluster.major == 5:
            odd["rmq_sys_SYNC_BROKER_MEMBER_broker-b"] = 0
        assert {t: c.perm for t, c in readonly.topics.items() if c.perm != 4} == odd
        # no topic asked one by one: the cluster list, the topic list, 2 data versions, 2
        # sentinels, TBW102 (each round), and at this first look the topics one master holds
        # and the other does not (Stuck and Both, on broker-a only; Later, on broker-b only)
        assert asked == 10
        assert readonly.held == {
            "Both": HeldTopic(held=False, perm=None),
            TBW102: HeldTopic(held=True, perm=7),
        }
    finally:
        cluster.update_broker_config("broker-b", "brokerPermission", "6")
