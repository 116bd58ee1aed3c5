"""``routewatch collect`` on a real RocketMQ 5.x (the release the install step resolves).

- The broker side's alerts, as on 4.9 (:func:`tests.support.collect_alerts.broker_side_alerts`:
  the same cluster, changes and twin scenario; the producer is 5.x's remoting client).

That it keeps no broker alive (a 5.x NameServer renews a broker's liveness whenever it is asked
the broker's data version, ``QUERY_DATA_VERSION``; ``DefaultRequestProcessor
.queryBrokerTopicConfig`` calls ``updateBrokerInfoUpdateTimestamp`` whatever the version asked,
where 4.9 renews only on the version it holds) is held in experiment 9
(``tests/test_rocketmq_liveness.py``): with the collector watching ns1, a frozen broker leaves
ns1 when it leaves ns2, on both lines.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from routewatch.testing.rocketmq import RocketMQCluster, release
from tests.support.collect_alerts import SPEC, broker_side_alerts
from tests.support.rocketmq import module_cluster
from tests.support.route_driver import ProducerSpec, RouteDriver, module_driver

pytestmark = [pytest.mark.rocketmq, pytest.mark.slow]  # (SPEC: two NameServers, brokers a, b, c)

cluster = module_cluster(SPEC, major=5)
# (a send timeout of 15 s, not the client's 3 s: a broker beside a loaded CI worker was once
# slower than that to take the first send)
driver = module_driver(lambda c: ProducerSpec("p1", c.namesrv_addr(), send_msg_timeout_ms=15_000))


def test_collect_opens_the_broker_side_alerts_on_a_real_5x_cluster(
    cluster: RocketMQCluster, driver: RouteDriver, tmp_path: Path
) -> None:
    assert release(cluster.home)[0] == 5
    broker_side_alerts(cluster, driver, tmp_path)
