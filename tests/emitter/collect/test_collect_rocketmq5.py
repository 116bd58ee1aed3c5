"""``routewatch collect`` on a real RocketMQ 5.x (the release the install step resolves).

- The broker side's alerts, as on 4.9 (:func:`tests.support.collect_alerts.broker_side_alerts`:
  the same cluster, changes and twin scenario; the producer is 5.x's remoting client).
- It keeps no broker alive. A 5.x NameServer renews a broker's liveness whenever it is asked
  the broker's data version (``QUERY_DATA_VERSION``; ``DefaultRequestProcessor
  .queryBrokerTopicConfig`` calls ``updateBrokerInfoUpdateTimestamp`` whatever the version asked,
  where 4.9 renews only on the version it holds): a collector that asked would keep a broker that
  stopped registering routed there for as long as it runs. The collector watching ns1 only,
  frozen broker-a leaves ns1 when it leaves ns2.
"""

from __future__ import annotations

import os
import re
import time
from pathlib import Path

import pytest

from routewatch import remoting
from routewatch.testing.processes import start_routewatch, stop, wait_for
from routewatch.testing.rocketmq import RocketMQCluster, release
from tests.support.collect_alerts import SPEC, broker_side_alerts
from tests.support.rocketmq import module_cluster
from tests.support.route_driver import ProducerSpec, RouteDriver, module_driver

pytestmark = [pytest.mark.rocketmq, pytest.mark.slow]  # (SPEC: two NameServers, brokers a, b, c)

EXPIRY_S = 120  # a NameServer drops a broker it has not heard from for this long
SCAN_S = 5  # a 5.x NameServer looks for them this often (scanNotActiveBrokerInterval)

cluster = module_cluster(SPEC, major=5)
driver = module_driver(lambda c: ProducerSpec("p1", c.namesrv_addr()))


def test_collect_opens_the_broker_side_alerts_on_a_real_5x_cluster(
    cluster: RocketMQCluster, driver: RouteDriver, tmp_path: Path
) -> None:
    assert release(cluster.home)[0] == 5
    broker_side_alerts(cluster, driver, tmp_path)


def _lists(cluster: RocketMQCluster, ns: str) -> bool:
    return "broker-a" in remoting.cluster_info(cluster.namesrv_addr(ns)).brokers


def test_a_frozen_broker_leaves_the_watched_namesrv_when_it_leaves_the_other(
    cluster: RocketMQCluster, tmp_path: Path
) -> None:
    wait_for(lambda: _lists(cluster, "ns1") and _lists(cluster, "ns2"), 60, "broker-a on both")
    env = {
        **os.environ,
        "ROUTEWATCH_DATA_DIR": str(tmp_path),
        "ROUTEWATCH_COLLECT_POLL_INTERVAL_S": "1",
        "ROUTEWATCH_COLLECT_LOG_INTERVAL_S": "5",
    }
    log = tmp_path / "collect.log"
    collector = start_routewatch(
        ["collect", "--namesrv", cluster.namesrv_addr("ns1"), "--to", "stdout"], env, log
    )
    left: dict[str, float] = {}
    try:
        wait_for(lambda: " polls" in log.read_text(), 60, "the collector's first rounds")
        broker = cluster.broker("broker-a")
        broker.freeze()  # SIGSTOP: its connections stay open, its registrations stop
        frozen = time.monotonic()
        try:

            def both_left() -> bool:
                assert collector.poll() is None, log.read_text()[-2000:]
                for ns in ("ns1", "ns2"):
                    if ns not in left and not _lists(cluster, ns):
                        left[ns] = time.monotonic()
                return len(left) == 2

            wait_for(both_left, EXPIRY_S + 30 + 4 * SCAN_S, "broker-a gone from both", 0.5)
        finally:
            broker.thaw()
    finally:
        stop(collector)
    # the collector polled ns1 all along (each poll waits out the frozen broker's timeout)
    polls = [int(n) for n in re.findall(r"(\d+) polls, ", log.read_text())]
    assert polls and polls[-1] >= 20, polls
    # both within a scan of each other, at RocketMQ's own expiry after the freeze
    assert abs(left["ns1"] - left["ns2"]) <= SCAN_S + 1, left
    assert EXPIRY_S - 30 <= left["ns1"] - frozen <= EXPIRY_S + 2 * SCAN_S + 2
