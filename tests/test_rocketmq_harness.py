"""The RocketMQ harness on a real cluster: one NameServer and two brokers, shared by the module's
tests in order (the faults come last), the real Java client through the driver, ``mqadmin``."""

from __future__ import annotations

import time
import uuid
from pathlib import Path

import pytest

from routewatch import remoting
from routewatch.testing.processes import pid_alive, wait_for
from routewatch.testing.rocketmq import BrokerSpec, ClusterSpec, RocketMQCluster
from tests.support.rocketmq import listeners, loopback_listeners, module_cluster
from tests.support.route_driver import (
    DriverError,
    ProducerSpec,
    RouteDriver,
    javac,
    module_driver,
    play,
)

pytestmark = pytest.mark.rocketmq

SPEC = ClusterSpec(
    namesrvs=("ns1",),
    brokers=(
        BrokerSpec("broker-a", cluster="RouteCluster"),
        BrokerSpec("broker-b", "RouteCluster"),
    ),
)
BROKERS = {"broker-a", "broker-b"}


cluster = module_cluster(SPEC)
driver = module_driver(lambda c: ProducerSpec("p1", c.namesrv_addr()))


def _topic(prefix: str) -> str:
    return f"{prefix}_{uuid.uuid4().hex[:8]}"


def test_the_cluster_boots_and_the_namesrv_lists_both_brokers(cluster: RocketMQCluster) -> None:
    info = cluster.cluster_info()
    assert info.clusters == {"RouteCluster": frozenset(BROKERS)}
    for name in BROKERS:
        broker = cluster.broker(name)
        assert info.addr(name) == broker.addr
        assert broker.running_config()["autoCreateTopicEnable"] == "true"
    # Each broker has the template topic, with defaultTopicQueueNums=8 queues and perm 7.
    template = cluster.route("TBW102")
    assert template is not None and template.broker_names == BROKERS
    assert {(q.read_queue_nums, q.write_queue_nums, q.perm) for q in template.queues} == {(8, 8, 7)}
    # mqadmin sees the same.
    rows = cluster.mqadmin_cluster_list("ns1")
    assert {(r.cluster, r.broker, r.broker_id, r.addr) for r in rows} == {
        ("RouteCluster", name, 0, cluster.broker(name).addr) for name in BROKERS
    }


def test_every_process_listens_on_loopback_only(cluster: RocketMQCluster) -> None:
    """The released 4.9.x binds every listener to every interface; the harness's preloaded
    loopback-bind library keeps them on 127.0.0.1 (as ``ss -ltnp`` would show)."""
    assert listeners(cluster) == loopback_listeners(cluster)


def test_a_send_to_a_new_topic_names_its_broker_and_the_route_reads_back(
    cluster: RocketMQCluster, driver: RouteDriver
) -> None:
    topic = _topic("Harness")
    assert cluster.route(topic) is None
    (outcome,) = driver.send("p1", topic)
    assert outcome.ok, outcome
    assert outcome.broker in BROKERS and outcome.queue_id in range(4)
    assert outcome.producer == "p1" and outcome.topic == topic and outcome.msg_id
    # The broker that took it created the topic and registered it at once.
    route = cluster.route(topic)
    assert route is not None
    assert route.broker_names == {outcome.broker}
    assert route.brokers[0].addrs == {0: cluster.broker(outcome.broker).addr}
    # Straight from the NameServer the route is in fastjson's notation, with bare integer keys.
    raw = remoting.raw_topic_route(cluster.namesrv_addr(), topic)
    assert raw is not None and '"brokerAddrs":{0:"' in raw
    # mqadmin topicRoute prints the same route.
    assert cluster.mqadmin_topic_route(topic, "ns1") == route
    assert cluster.mqadmin_topic_route(_topic("Absent"), "ns1") is None


def test_the_client_route_and_its_refresh(cluster: RocketMQCluster, driver: RouteDriver) -> None:
    # A producer whose periodic refresh (once at its start, then hourly) cannot run mid-test.
    driver.producer(
        ProducerSpec("hourly", cluster.namesrv_addr(), poll_name_server_interval_ms=3_600_000)
    )
    driver.wait_for_first_refresh("hourly")
    # 4.9's refresh fetches the route of the producer's createTopicKey too (5.1.1+'s does not)
    assert driver.client_route("hourly", "TBW102")
    topic = _topic("Refresh")
    assert driver.client_route("hourly", topic) is None
    (outcome,) = driver.send("hourly", topic)
    assert outcome.ok, outcome
    # Until its next refresh the producer holds TBW102's route: 4 queues on each broker.
    assert driver.client_route("hourly", topic) == [
        (b, q) for b in sorted(BROKERS) for q in range(4)
    ]
    assert driver.refresh("hourly", topic)
    assert driver.client_route("hourly", topic) == [(outcome.broker, q) for q in range(4)]


def test_mqadmin_update_and_delete_topic(cluster: RocketMQCluster) -> None:
    topic = _topic("Admin")
    cluster.update_topic(topic, broker="broker-a", read_queues=2, write_queues=2)
    route = cluster.route(topic)
    assert route is not None and route.broker_names == {"broker-a"}
    assert route.queue("broker-a") == remoting.QueueData("broker-a", 2, 2, 6)

    cluster.update_topic(topic, cluster="RouteCluster", read_queues=8, write_queues=8)
    route = cluster.route(topic)
    assert route is not None
    assert [(q.broker, q.read_queue_nums, q.write_queue_nums) for q in route.queues] == [
        ("broker-a", 8, 8),
        ("broker-b", 8, 8),
    ]

    cluster.delete_topic(topic, "RouteCluster")
    assert cluster.route(topic) is None


def test_mqadmin_update_broker_config(cluster: RocketMQCluster) -> None:
    broker = cluster.broker("broker-b")
    cluster.update_broker_config("broker-b", "autoCreateTopicEnable", "false")
    try:
        assert broker.running_config()["autoCreateTopicEnable"] == "false"
    finally:
        cluster.update_broker_config("broker-b", "autoCreateTopicEnable", "true")
    assert broker.running_config()["autoCreateTopicEnable"] == "true"


HOOK = """
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Paths;
import java.nio.file.StandardOpenOption;
import org.apache.rocketmq.remoting.RPCHook;
import org.apache.rocketmq.remoting.protocol.RemotingCommand;

public class RecordingHook implements RPCHook {
    public void doBeforeRequest(String remoteAddr, RemotingCommand request) {
        record(request.getCode() + " " + remoteAddr);
    }

    public void doAfterResponse(String remoteAddr, RemotingCommand request,
            RemotingCommand response) {
    }

    static synchronized void record(String line) {
        try {
            Files.write(Paths.get(System.getProperty("routewatch.hook.out")),
                (line + "\\n").getBytes(StandardCharsets.UTF_8),
                StandardOpenOption.CREATE, StandardOpenOption.APPEND);
        } catch (java.io.IOException e) {
            throw new RuntimeException(e);
        }
    }
}
"""


def test_a_producer_with_a_client_hook(cluster: RocketMQCluster, tmp_path: Path) -> None:
    (tmp_path / "RecordingHook.java").write_text(HOOK)
    javac(tmp_path / "RecordingHook.java", tmp_path / "classes", cluster.home)
    record = tmp_path / "hook.out"
    topic = _topic("Hooked")
    events = play(
        {
            "producers": [
                {
                    "name": "hooked",
                    "namesrvAddr": cluster.namesrv_addr(),
                    "rpcHook": "RecordingHook",
                }
            ],
            "steps": [{"send": {"producer": "hooked", "topic": topic, "count": 2}}],
        },
        tmp_path / "driver",
        home=cluster.home,
        classpath=[tmp_path / "classes"],
        system_properties={"routewatch.hook.out": str(record)},
    )
    assert events[0]["event"] == "started" and events[0]["rpcHook"] == "RecordingHook"
    sends = [e for e in events if e["event"] == "send"]
    assert [e["status"] for e in sends] == ["SEND_OK", "SEND_OK"]
    codes = {line.split()[0] for line in record.read_text().splitlines()}
    # The hook saw the route requests (105) and the sends (310, SEND_MESSAGE_V2).
    assert {"105", "310"} <= codes


def test_a_hook_that_is_not_on_the_class_path_is_an_error(
    cluster: RocketMQCluster, driver: RouteDriver
) -> None:
    with pytest.raises(DriverError, match=r"no\.such\.Hook is not on the class path"):
        driver.producer(ProducerSpec("nohook", cluster.namesrv_addr(), rpc_hook="no.such.Hook"))


def test_a_failed_send_reports_the_client_exception(driver: RouteDriver) -> None:
    # No NameServer address: the client looks one up at 127.0.0.1:1 (closed), then fails the send.
    driver.producer(ProducerSpec("lost", None))
    (outcome,) = driver.send("lost", _topic("Lost"))
    assert not outcome.ok and outcome.status is None and outcome.broker is None
    assert outcome.exception and outcome.message


def test_a_frozen_broker_keeps_its_registration_and_thaws(cluster: RocketMQCluster) -> None:
    broker = cluster.broker("broker-b")
    broker.freeze()
    try:
        assert broker.state() == "T"
        assert not broker.answers(timeout=1.0)
        # Its connection to the NameServer stays open: only the 120 s silence rule drops it.
        time.sleep(2)  # what is asserted is that nothing happens in this interval
        assert cluster.cluster_info().addr("broker-b") == broker.addr
    finally:
        broker.thaw()
    assert broker.state() != "T"
    wait_for(broker.answers, 30, "the thawed broker answering")


def test_a_killed_broker_is_dropped_and_restarts_on_its_store(
    cluster: RocketMQCluster, driver: RouteDriver
) -> None:
    topic = _topic("Kept")
    cluster.update_topic(topic, broker="broker-b", read_queues=4, write_queues=4)
    broker = cluster.broker("broker-b")
    pid = broker.pid
    broker.kill()
    assert not pid_alive(pid)
    # Its connection closed: the NameServer drops it at once, not after 120 s.
    wait_for(
        lambda: cluster.cluster_info().addr("broker-b") is None, 10, "the NameServer dropping it"
    )
    assert cluster.route(topic) is None

    broker.restart(auto_create_topic=False)
    assert broker.pid != pid
    assert broker.running_config()["autoCreateTopicEnable"] == "false"
    assert "autoCreateTopicEnable=false" in (broker.dir / "broker.properties").read_text()
    # It registers the topic it had stored again.
    route = cluster.route(topic)
    assert route is not None and route.broker_names == {"broker-b"}
    (outcome,) = driver.send("p1", topic)
    assert outcome.ok and outcome.broker == "broker-b", outcome


def test_a_cluster_description_is_checked() -> None:
    with pytest.raises(ValueError, match="1 to 3 NameServers"):
        ClusterSpec(brokers=(BrokerSpec("a"),), namesrvs=())
    with pytest.raises(ValueError, match="1 to 4 brokers"):
        ClusterSpec(brokers=tuple(BrokerSpec(f"b{i}") for i in range(5)))
    with pytest.raises(ValueError, match="unknown NameServers"):
        ClusterSpec(brokers=(BrokerSpec("a", namesrvs=("ns9",)),))
    with pytest.raises(ValueError, match="distinct"):
        ClusterSpec(brokers=(BrokerSpec("a"), BrokerSpec("a")))
    assert BrokerSpec("a", broker_id=1).key == "a@1"
