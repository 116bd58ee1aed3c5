"""The client hook library on a real RocketMQ 5.x whose brokers auto-create topics: the alerts
only a client sees when the template route is TBW102's — ``AT_RISK``, ``SEND_REJECTED`` and
``PARTIAL_COVERAGE`` observed —
from a 5.x client (docs/hook.md). On 4.9 they are in ``tests/test_rocketmq_hook.py`` (brokers
with auto-creation off, the template a key of the producer's own); on 5.x that module gets
"No route info" for both, since a 5.1.1+ client takes the template from TBW102 whatever its key
(apache/rocketmq#6452) and no broker there holds TBW102.

One NameServer, two brokers with ``autoCreateTopicEnable=true`` (each holds TBW102, perm 7).
What the real 5.x client and brokers did, each asserted below:

- a producer of the default key sends once to a new topic: its fallback pull (``via_default``)
  answers TBW102's route over both brokers, with the client's 4 queues; the send goes to one
  broker, which creates the topic (``TopicConfigManager.createTopicInSendMessageMethod``); the
  job, with the collector's heartbeats, opens ``AT_RISK`` (the producer's route spans a broker
  that does not hold the topic);
- a producer that refreshes its routes (every 500 ms) swaps the fallback for the topic's own
  route, on that one broker: ``PARTIAL_COVERAGE``, observed (the client saw the auto-creation)
  and settled at once by the producer's own pull;
- a producer whose ``createTopicKey`` names a topic no broker has: it still pulls TBW102's route
  (#6452), but its send names its own key as the template (``setDefaultTopic(createTopicKey)``,
  ``DefaultMQProducerImpl.sendKernelImpl``), and the broker refuses — "the default topic not
  exist" — with ``TOPIC_NOT_EXIST``: ``SEND_REJECTED`` naming that broker. (On 4.9 the same
  producer would get no route at all: its client pulls its key's route, which does not exist;
  not run here.)
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from routewatch.testing.processes import wait_for
from routewatch.testing.rocketmq import BrokerSpec, ClusterSpec, RocketMQCluster
from tests.support.hook_spools import (
    Collector,
    broker_of,
    collecting,
    evaluate_spools,
    hooked,
    of,
    published,
)
from tests.support.rocketmq import module_cluster
from tests.support.route_driver import RouteDriver

pytestmark = [pytest.mark.rocketmq, pytest.mark.usefixtures("collector")]

CLUSTER = "HookAutoCluster"
BROKERS = ("broker-a", "broker-b")
SPEC = ClusterSpec(
    namesrvs=("ns1",),
    brokers=tuple(BrokerSpec(b, CLUSTER, auto_create_topic=True) for b in BROKERS),
)
HOURLY = 3_600_000
TOPIC_NOT_EXIST = 17

cluster = module_cluster(SPEC, 5)


@pytest.fixture(scope="module")
def driver(cluster: RocketMQCluster) -> Iterator[RouteDriver]:
    with RouteDriver(cluster.workdir / "hook-driver", home=cluster.home) as running:
        yield running


@pytest.fixture(scope="module")
def spools(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("spools-auto-create")


@pytest.fixture(scope="module")
def collector(cluster: RocketMQCluster, spools: Path) -> Iterator[Collector]:
    with collecting(cluster, spools, BROKERS) as running:
        yield running


def test_a_producer_that_refreshes_swaps_the_fallback_for_the_topics_own_route_on_one_broker(
    cluster: RocketMQCluster, driver: RouteDriver, spools: Path
) -> None:
    hooked(
        driver,
        spools,
        "refreshing",
        cluster.namesrv_addr(),
        CLUSTER,
        poll_name_server_interval_ms=500,
    )
    topic = f"Settled_{uuid.uuid4().hex[:8]}"
    (outcome,) = driver.send("refreshing", topic)
    assert outcome.ok, outcome
    own: list[dict[str, Any]] = []

    def refreshed() -> bool:
        own[:] = [
            p
            for p in of(published(driver, spools, "refreshing"), "route_pull", topic)
            if p["result"] == "SUCCESS" and not p["via_default"]
        ]
        return bool(own)

    # the client's next refresh (every 500 ms here, 30 s by default) pulls the topic's own route,
    # which the broker's registration of the new topic has reached: that one broker alone
    wait_for(refreshed, 30, "the producer's pull of the topic's own route")
    assert [q["broker"] for q in own[-1]["queues"]] == [outcome.broker]


def test_a_key_no_broker_has_gets_tbw102s_route_and_is_refused(
    cluster: RocketMQCluster, driver: RouteDriver, spools: Path
) -> None:
    key = f"NoSuchKey_{uuid.uuid4().hex[:8]}"
    hooked(
        driver,
        spools,
        "keyed",
        cluster.namesrv_addr(),
        CLUSTER,
        create_topic_key=key,
        poll_name_server_interval_ms=HOURLY,
        retry_times_when_send_failed=0,
    )
    topic = f"Keyed_{uuid.uuid4().hex[:8]}"
    outcomes = driver.send("keyed", topic, count=2)

    refusers = []
    for outcome in outcomes:
        assert outcome.response_code == TOPIC_NOT_EXIST, outcome
        (cause,) = outcome.causes
        refusers.append(broker_of(cluster, BROKERS, cause["brokerAddr"]))
    events = published(driver, spools, "keyed")
    fallback = [p for p in of(events, "route_pull", topic) if p["via_default"]]
    assert fallback and {(p["result"], p["create_topic_key"]) for p in fallback} == {
        ("SUCCESS", key)
    }
    sends = of(events, "send", topic)
    assert [(s["status"], s["broker"], s["default_topic"]) for s in sends] == [
        ("TOPIC_NOT_EXIST", b, key) for b in refusers
    ]
    assert all(topic not in cluster.broker(b).topics() for b in BROKERS)


# (last before the evaluation: 60 s after its send the broker side's evidence would settle the
# topic's coverage, and PARTIAL_COVERAGE would take AT_RISK's place)
def test_a_new_topic_auto_created_on_one_broker_of_its_fallback_route_is_at_risk(
    cluster: RocketMQCluster, driver: RouteDriver, spools: Path
) -> None:
    hooked(
        driver, spools, "auto", cluster.namesrv_addr(), CLUSTER, poll_name_server_interval_ms=HOURLY
    )
    # its first periodic refresh must not swap the fallback route for the topic's own right
    # after the send (the hook writes that too, and AT_RISK would not open)
    driver.wait_for_first_refresh("auto")
    topic = f"Auto_{uuid.uuid4().hex[:8]}"
    (outcome,) = driver.send("auto", topic)
    assert outcome.ok, outcome

    events = published(driver, spools, "auto")
    (fallback,) = [p for p in of(events, "route_pull", topic) if p["via_default"]]
    assert (fallback["result"], fallback["create_topic_key"]) == ("SUCCESS", "TBW102")
    assert sorted((q["broker"], q["write_queue_nums"], q["perm"]) for q in fallback["queues"]) == [
        (b, 4, 7) for b in BROKERS
    ]
    (send,) = of(events, "send", topic)
    assert (send["status"], send["broker"], send["default_topic"]) == (
        "SEND_OK",
        outcome.broker,
        "TBW102",
    )
    # created on the broker it went to, and only there
    holders = {b for b in BROKERS if topic in cluster.broker(b).topics()}
    assert holders == {outcome.broker}


def test_the_job_evaluates_the_spools(
    cluster: RocketMQCluster, spools: Path, collector: Collector
) -> None:
    """The producers' events and the collector's heartbeats through the job's step: AT_RISK of
    the auto-created topic, SEND_REJECTED of the refused one."""
    final = evaluate_spools(spools, collector, CLUSTER)
    alerts = sorted((str(a.topic).split("_")[0], a.kind, a.state) for a in final if a.topic)
    assert [a for a in alerts if a[0] in ("Auto", "Settled", "Keyed")] == [
        ("Auto", "AT_RISK", "open"),  # its producer still holds the route over both brokers
        ("Keyed", "SEND_REJECTED", "open"),
        # observed, and settled by the producer's own pull: on 1 of the 2 brokers for good
        ("Settled", "PARTIAL_COVERAGE", "open"),
    ]
    (rejected,) = [a for a in final if a.kind == "SEND_REJECTED"]
    assert rejected.evidence["refusals"] == 2
    assert set(rejected.evidence["brokers"]) <= set(BROKERS)
    (partial,) = [a for a in final if a.kind == "PARTIAL_COVERAGE"]
    assert partial.evidence["coverage"] == "1/2"
    assert partial.evidence["auto_created_evidence"] == "observed"
    assert partial.evidence["producers_with_template_route"] == []
