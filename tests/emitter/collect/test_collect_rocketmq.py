"""``routewatch collect`` against a real RocketMQ: two NameServers, broker-a and broker-b
registered with both, broker-c (auto-creation off, so no TBW102) with ns1 only. The faults that
leave the cluster as it was come first; the last test drives every alert the broker side can
raise, kills broker-b, and ends with the alerts of its twin scenario on the emitter's model
(``broker-side-alerts``).

The events are run through the job's own evaluation path (the in-memory engine, the same step the
Spark job calls). Only the collector writes events: PARTIAL_COVERAGE comes from the auto-creation
it infers from the broker side (``emitter/inference.py``)."""

from __future__ import annotations

import logging
import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import orjson
import pytest

from emitter.collect.derive import Deriver
from emitter.collect.metrics import CollectorMetrics
from emitter.collect.poller import Poller
from routewatch.codec import encode
from routewatch.events import Heartbeat
from routewatch.testing.processes import free_port
from routewatch.testing.rocketmq import RocketMQCluster
from routewatch.validation import validate
from tests.support.collect_alerts import CLUSTER, SPEC, broker_side_alerts
from tests.support.rocketmq import module_cluster
from tests.support.route_driver import ProducerSpec, RouteDriver, module_driver

pytestmark = pytest.mark.rocketmq


cluster = module_cluster(SPEC)
# (a send timeout of 15 s, not the client's 3 s: a broker beside a loaded CI worker was once
# slower than that to take the first send)
driver = module_driver(lambda c: ProducerSpec("p1", c.namesrv_addr(), send_msg_timeout_ms=15_000))


def _poll(poller: Poller, deriver: Deriver) -> list[Heartbeat]:
    return deriver.derive(poller.poll(deriver.known, deriver))


def _warnings(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]


def test_one_poll_writes_what_each_namesrv_holds(cluster: RocketMQCluster) -> None:
    ns1, ns2 = cluster.namesrv_addr("ns1"), cluster.namesrv_addr("ns2")
    counters = CollectorMetrics()
    poller = Poller([ns1, ns2], counters)
    events = _poll(poller, Deriver(30))
    poller.close()
    assert [(e.namesrv, e.broker) for e in events] == [
        (ns1, "broker-a"),
        (ns1, "broker-b"),
        (ns1, "broker-c"),
        (ns2, "broker-a"),
        (ns2, "broker-b"),
    ]  # NameServers in the order they answered, brokers by name
    for e in events:
        broker = cluster.broker(e.broker)
        assert validate(orjson.loads(encode(e))) is None
        assert (e.cluster, e.broker_addr, e.broker_id, e.full) == (CLUSTER, broker.addr, 0, True)
        table = broker.topics()
        assert {t: (c.read_queue_nums, c.write_queue_nums, c.perm) for t, c in table.items()} == {
            t: (c.read_queue_nums, c.write_queue_nums, c.perm) for t, c in e.topics.items()
        }
        config = broker.running_config()
        assert e.auto_create_topic_enable == (config["autoCreateTopicEnable"] == "true")
        assert e.default_topic_queue_nums == int(config["defaultTopicQueueNums"])
    by = {(e.namesrv, e.broker): e for e in events}
    assert "TBW102" in by[(ns1, "broker-a")].topics and "TBW102" not in by[(ns1, "broker-c")].topics
    assert by[(ns1, "broker-a")].data_version == by[(ns2, "broker-a")].data_version
    # requests: 2 cluster lists, 2 topic lists, 5 data versions, 5 routes (each master's
    # broker-named topic, from each NameServer listing it) and TBW102's route from each (asked
    # every round); 3 configurations and 3 topic tables
    assert counters.value("routewatch_collect_requests_total", target="namesrv") == 16
    assert counters.value("routewatch_collect_requests_total", target="broker") == 6
    assert counters.value("routewatch_collect_errors_total") == 0


@pytest.fixture
def bad_servers() -> Iterator[dict[str, str]]:
    """A server answering garbage and one that never answers, on 127.0.0.1."""
    garbage = socket.create_server(("127.0.0.1", 0))
    silent = socket.create_server(("127.0.0.1", 0))
    stopping = threading.Event()
    held: list[socket.socket] = []

    def serve(server: socket.socket, answer: bytes | None) -> None:
        server.settimeout(0.2)
        while not stopping.is_set():
            try:
                conn, _ = server.accept()
            except (TimeoutError, OSError):
                continue
            conn.recv(65536)
            if answer is None:
                held.append(conn)  # read the request, never answer
            else:
                conn.sendall(answer)
                conn.close()

    threads = [
        threading.Thread(target=serve, args=(garbage, b"\x00\x00\x00\x0c\x00\x00\x00\x08{nonsense"))
    ]
    threads.append(threading.Thread(target=serve, args=(silent, None)))
    for t in threads:
        t.start()
    yield {
        "garbage": f"127.0.0.1:{garbage.getsockname()[1]}",
        "silent": f"127.0.0.1:{silent.getsockname()[1]}",
        "down": f"127.0.0.1:{free_port()}",
    }
    stopping.set()
    for t in threads:
        t.join(5)
    for s in [garbage, silent, *held]:
        s.close()


def test_namesrvs_down_slow_or_answering_garbage(
    cluster: RocketMQCluster, bad_servers: dict[str, str], caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, "routewatch.collect")
    ns1 = cluster.namesrv_addr("ns1")
    bad = [bad_servers["down"], bad_servers["silent"], bad_servers["garbage"]]
    counters = CollectorMetrics()
    poller = Poller([ns1, *bad], counters, timeout=0.5)
    deriver = Deriver(30)
    events = [e for _ in range(3) for e in _poll(poller, deriver)]
    poller.close()
    # every event is of the NameServer that answered, and the brokers it lists
    assert {e.namesrv for e in events} == {ns1}
    assert sorted(e.broker for e in events) == ["broker-a", "broker-b", "broker-c"]
    # one line per bad NameServer over three polls, saying what was wrong and what follows
    warnings = _warnings(caplog)
    assert len(warnings) == 3, warnings
    down, silent, garbage = (next(w for w in warnings if addr in w) for addr in bad)
    assert "refused the connection" in down
    assert "did not answer within 0.5 s" in silent
    assert "not RocketMQ's protocol" in garbage
    assert all("writing nothing for it until it answers" in w for w in warnings)
    assert (
        counters.value("routewatch_collect_errors_total", target="namesrv", reason="timeout") == 3
    )
    assert (
        counters.value("routewatch_collect_errors_total", target="namesrv", reason="garbage") == 3
    )
    assert (
        counters.value("routewatch_collect_errors_total", target="namesrv", reason="unreachable")
        == 3
    )
    assert counters.value("routewatch_collect_targets_down", target="namesrv") == 3
    assert counters.value("routewatch_collect_polls_total") == 3


def test_a_broker_that_does_not_answer_but_is_listed_keeps_its_heartbeats(
    cluster: RocketMQCluster, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, "routewatch.collect")
    broker = cluster.broker("broker-b")
    ns1 = cluster.namesrv_addr("ns1")
    counters = CollectorMetrics()
    poller = Poller([ns1], counters, timeout=0.5)
    clock = [time.time()]
    poller.clock = lambda: clock[0]
    deriver = Deriver(heartbeat_interval_s=5)
    first = {e.broker: e for e in _poll(poller, deriver)}
    broker.freeze()  # SIGSTOP: its connections stay open, the NameServer still lists it
    try:
        clock[0] += 1
        assert _poll(poller, deriver) == []  # nothing changed, nothing due
        clock[0] += 5
        renewed = {e.broker: e for e in _poll(poller, deriver)}
        clock[0] += 5
        _poll(poller, deriver)
    finally:
        broker.thaw()
    clock[0] += 1
    _poll(poller, deriver)
    poller.close()
    # its liveness is renewed with what was last known of it: same version, same table
    assert set(renewed) == {"broker-a", "broker-b", "broker-c"}
    assert renewed["broker-b"].data_version == first["broker-b"].data_version
    assert renewed["broker-b"].topics == first["broker-b"].topics
    warnings = _warnings(caplog)
    assert len(warnings) == 2, warnings
    assert warnings[0].startswith(f"broker broker-b at {broker.addr} did not answer within 0.5 s;")
    assert "heartbeats go on with what was last known of it" in warnings[0]
    assert warnings[1] == f"broker broker-b at {broker.addr} answers again."
    assert counters.value("routewatch_collect_errors_total", target="broker", reason="timeout") == 3


# -- the alerts on a real cluster ---------------------------------------------------------------


@pytest.mark.slow
def test_collect_opens_the_broker_side_alerts_on_a_real_cluster(
    cluster: RocketMQCluster, driver: RouteDriver, tmp_path: Path
) -> None:
    broker_side_alerts(cluster, driver, tmp_path)
