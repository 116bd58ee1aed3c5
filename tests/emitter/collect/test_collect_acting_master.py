"""RocketMQ 5's slave-acting-master mode on a real 5.x cluster, and ``routewatch collect`` on it.

broker-a is a master and its slave, both with ``enableSlaveActingMaster=true``; the NameServer
has ``supportActingMaster=true``; broker-b is a plain master. What 5.x does (source:
``BrokerController.doRegisterBrokerAll``, ``RouteInfoManager.registerBroker``,
``cleanTopicByUnRegisterRequests``, ``pickupTopicRouteData``):

- Such a broker registers with ``heartbeatTimeoutMillis`` = its ``brokerNotActiveTimeoutMillis``
  (10 s) and renews it with a light heartbeat every second: a frozen master leaves the
  NameServer 10 to 15 s after its last heartbeat (the scan runs every 5 s), not 120 s.
- Once the master is gone, the NameServer clears the write bit of broker-a's queues and routes
  the slave's address as brokerId 0 (read-only: consumers read on, producers skip it); its
  cluster list still shows the slave as brokerId 1. The master's next registration restores
  both.

The collector writes the broker's own timeout in its heartbeats (``heartbeat_timeout_ms``), so
the job expires the frozen master 10 s after the collector last saw it listed, as the
NameServer does, and parses every answer of the acting-master mode (``enableActingMaster`` in
the broker data, the slave as brokerId 0) without a complaint.
"""

from __future__ import annotations

import dataclasses
import logging
import time
from typing import Any

import pytest

from emitter.collect.derive import Deriver
from emitter.collect.metrics import CollectorMetrics
from emitter.collect.poller import Poller
from routewatch import remoting
from routewatch.testing.processes import wait_for
from routewatch.testing.rocketmq import BrokerSpec, ClusterSpec, RocketMQCluster
from tests.support.rocketmq import module_cluster
from tests.support.traces import evaluate_events

pytestmark = pytest.mark.rocketmq

CLUSTER = "ActingCluster"
ACTING = {"enableSlaveActingMaster": "true"}
SPEC = ClusterSpec(
    namesrvs=("ns1",),
    brokers=(
        BrokerSpec("broker-a", CLUSTER, properties=ACTING),
        BrokerSpec("broker-a", CLUSTER, broker_id=1, properties=ACTING),
        BrokerSpec("broker-b", CLUSTER),
    ),
    namesrv_properties={"ns1": {"supportActingMaster": "true"}},
)
TOPIC = "ActingTopic"

cluster = module_cluster(SPEC, major=5)


class Watch:
    """The collector's poll (every second), its heartbeats kept as the job reads them."""

    def __init__(self, ns: str) -> None:
        self.poller = Poller([ns], CollectorMetrics(), timeout=1)
        self.deriver = Deriver(10, poll_interval_s=1)
        self.events: list[dict[str, Any]] = []
        self.longest_gap = 0.0
        self._last: float | None = None

    def poll(self) -> None:
        now = time.monotonic()
        if self._last is not None:
            self.longest_gap = max(self.longest_gap, now - self._last)
        self._last = now
        written = self.deriver.derive(self.poller.poll(self.deriver.known, self.deriver))
        self.events += [dataclasses.asdict(e) | {"v": 1, "type": "heartbeat"} for e in written]

    def until(self, condition: Any, timeout: float, what: str) -> None:
        def polled() -> bool:
            self.poll()
            return bool(condition())

        wait_for(polled, timeout, what, interval=1)


def _listed(ns: str) -> dict[int, str]:
    """The ids and addresses the NameServer's cluster list holds for broker-a."""
    data = remoting.cluster_info(ns).brokers.get("broker-a")
    return {} if data is None else dict(data.addrs)


def _route(ns: str) -> tuple[dict[int, str], int]:
    """broker-a in the NameServer's route of the topic: its ids and addresses, its perm."""
    route = remoting.topic_route(ns, TOPIC)
    assert route is not None
    (data,) = [b for b in route.brokers if b.broker == "broker-a"]
    queue = route.queue("broker-a")
    assert queue is not None
    return dict(data.addrs), queue.perm


def test_a_lost_master_leaves_in_10_s_its_slave_acts_read_only_and_the_collector_follows(
    cluster: RocketMQCluster, caplog: pytest.LogCaptureFixture
) -> None:
    ns = cluster.namesrv_addr("ns1")
    master, slave = cluster.broker("broker-a"), cluster.broker("broker-a@1")
    cluster.update_topic(TOPIC, cluster=CLUSTER)
    both = {0: master.addr, 1: slave.addr}
    wait_for(lambda: _listed(ns) == both, 30, "the master and its slave listed")
    assert _route(ns) == (both, 6)
    # the mode's registrations carry the broker's own timeout (the broker data says the mode)
    config = remoting.broker_config(master.addr)
    assert (config["enableSlaveActingMaster"], config["brokerNotActiveTimeoutMillis"]) == (
        "true",
        "10000",
    )
    watch = Watch(ns)
    caplog.set_level(logging.WARNING, "routewatch.collect")
    try:
        watch.poll()
        assert {(e["broker"], e["broker_id"], e["heartbeat_timeout_ms"]) for e in watch.events} == {
            ("broker-a", 0, 10_000),
            ("broker-a", 1, 10_000),
            ("broker-b", 0, None),
        }

        # frozen: it no longer renews; the NameServer drops it 10 to 15 s later, not 120 s
        master.freeze()
        frozen_at = time.monotonic()
        watch.until(lambda: 0 not in _listed(ns), 30, "the frozen master dropped")
        dropped_after = time.monotonic() - frozen_at
        print(f"frozen master dropped by the NameServer after {dropped_after:.1f} s")
        assert 8 <= dropped_after <= 20
        # the slave acts: routed as brokerId 0, broker-a's queues read-only; listed as it is
        assert _route(ns) == ({0: slave.addr}, 4)
        assert _listed(ns) == {1: slave.addr}
        watch.until(lambda: len(watch.events) and _job_sees_expired(watch), 20, "the expiry")

        # back: its next full registration (every 30 s) restores the route
        master.thaw()
        watch.until(
            lambda: _route(ns) == (both, 6) and not _job_sees_expired(watch),
            45,
            "the thawed master routed again, and seen so by the collector",
        )

        # killed: the NameServer drops it at once (the connection closes)
        master.kill()
        watch.until(lambda: _route(ns) == ({0: slave.addr}, 4), 5, "the slave acting at once")
        watch.until(lambda: _job_sees_expired(watch), 20, "the second expiry")
        # restarted while the collector goes on looking, as an operator's restart would be
        # watched (polls held off for the JVM's start would let the slave's own 10 s lapse too)
        master.spawn()
        watch.until(
            lambda: _route(ns) == (both, 6) and not _job_sees_expired(watch),
            90,
            "the restarted master routed, and seen so by the collector",
        )
        master.wait_ready()
    finally:
        watch.poller.close()
    print(f"longest time between two polls: {watch.longest_gap:.1f} s")

    refusals = [r.getMessage() for r in caplog.records if "protocol" in r.getMessage().lower()]
    assert refusals == []  # every acting-master answer parsed
    final, changes = evaluate_events(watch.events, CLUSTER)
    # each loss: BROKER_EXPIRED of the master, 10 s after the collector last saw it listed
    # (120 s without the broker's own timeout), resolved by its next registration
    assert [(a.kind, a.broker, a.broker_id, a.state) for a in changes] == [
        ("BROKER_EXPIRED", "broker-a", 0, "open"),
        ("BROKER_EXPIRED", "broker-a", 0, "resolved"),
    ] * 2
    assert {(a.kind, a.state) for a in final} == {("BROKER_EXPIRED", "resolved")}
    seen = [e["ts"] for e in watch.events if (e["broker"], e["broker_id"]) == ("broker-a", 0)]
    for opened in [a.opened_at for a in changes if a.state == "open"]:
        assert opened - max(ts for ts in seen if ts < opened) == 10_000


def _job_sees_expired(watch: Watch) -> bool:
    final, _ = evaluate_events(watch.events, CLUSTER)
    return any(a.kind == "BROKER_EXPIRED" and a.state == "open" for a in final)
