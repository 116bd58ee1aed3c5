"""``routewatch collect`` against a real RocketMQ broker with ACL enabled, one account that is
not an admin, no address white-listed — 4.9's plain ACL (``aclEnable=true``) and 5.x's
authentication and authorization (``authenticationEnabled``, the account a normal user; 5.x
dropped the plain ACL): unsigned requests are refused and said so in one sentence; requests
signed with the account's keys watch it (5.x checks the same signature as 4.9, ``AclSigner``,
and asks no permission for the configuration and the topic table); the secret key never
appears in what the collector says."""

from __future__ import annotations

import logging
import os
import subprocess
import sys
from pathlib import Path

import orjson
import pytest

from emitter.collect.derive import Deriver
from emitter.collect.metrics import CollectorMetrics
from emitter.collect.poller import Poller
from routewatch.remoting import Credentials, RemotingError, update_topic_in_broker
from routewatch.testing.rocketmq import BrokerSpec, ClusterSpec, RocketMQCluster
from tests.support.rocketmq import EVERY_MAJOR, module_cluster

pytestmark = pytest.mark.rocketmq

SECRET = "s3cr3t-never-logged-7c1e"
ACCOUNT = Credentials("routewatch", SECRET)
SPEC = ClusterSpec(brokers=(BrokerSpec("broker-a", acl=ACCOUNT),))

cluster = module_cluster(SPEC, EVERY_MAJOR)


def _round(poller: Poller) -> list[object]:
    deriver = Deriver(30)
    try:
        return list(deriver.derive(poller.poll(deriver.known, deriver)))
    finally:
        poller.close()


def _said(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]


def test_unsigned_requests_are_refused_in_one_sentence(
    cluster: RocketMQCluster, caplog: pytest.LogCaptureFixture
) -> None:
    counters = CollectorMetrics()
    assert _round(Poller([cluster.namesrv_addr()], counters)) == []
    said, waiting = _said(caplog)  # the refusal, then that its heartbeats wait for it
    assert "whose configuration is not known yet" in waiting
    assert said.startswith(f"broker broker-a at {cluster.broker('broker-a').addr} refuses")
    assert "ACL is enabled there; set ROUTEWATCH_COLLECT_ACCESS_KEY" in said
    assert counters.value("routewatch_collect_errors_total", target="broker", reason="refused") == 1


def test_a_wrong_secret_is_refused_in_one_sentence(
    cluster: RocketMQCluster, caplog: pytest.LogCaptureFixture
) -> None:
    wrong = Credentials("routewatch", "not-the-secret")
    assert _round(Poller([cluster.namesrv_addr()], CollectorMetrics(), credentials=wrong)) == []
    said = _said(caplog)[0]
    assert "refuses the collector's ACL credentials" in said
    assert "check signature failed" in said.lower()  # 4.9: "Check signature failed", 5.x lower


def test_signed_requests_watch_the_broker(
    cluster: RocketMQCluster, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    counters = CollectorMetrics()
    (event,) = _round(Poller([cluster.namesrv_addr()], counters, credentials=ACCOUNT))
    assert event.broker == "broker-a"  # type: ignore[attr-defined]
    topics = event.topics  # type: ignore[attr-defined]
    own = cluster.broker("broker-a").topics()
    assert {t: (c.read_queue_nums, c.write_queue_nums, c.perm) for t, c in topics.items()} == {
        t: (c.read_queue_nums, c.write_queue_nums, c.perm) for t, c in own.items()
    }
    assert counters.value("routewatch_collect_errors_total") == 0
    assert SECRET not in caplog.text and SECRET not in repr(ACCOUNT)
    if cluster.major == 5:  # the account is a normal user there: what it may not do is refused
        with pytest.raises(RemotingError, match="has no permission"):
            update_topic_in_broker(cluster.broker("broker-a").addr, "Made", credentials=ACCOUNT)


def test_the_command_signs_with_its_settings_and_never_shows_the_secret(
    cluster: RocketMQCluster, tmp_path: Path
) -> None:
    env = {
        **os.environ,
        "ROUTEWATCH_COLLECT_ACCESS_KEY": ACCOUNT.access_key,
        "ROUTEWATCH_COLLECT_SECRET_KEY": SECRET,
        "ROUTEWATCH_DATA_DIR": str(tmp_path),
    }
    argv = [sys.executable, "-m", "routewatch.cli", "collect", "--once", "--to", "stdout"]
    argv += ["--namesrv", cluster.namesrv_addr()]
    done = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    events = [orjson.loads(line) for line in done.stdout.splitlines()]
    (event,) = [e for e in events if e["type"] == "heartbeat"]
    assert event["broker"] == "broker-a"
    assert [e["type"] for e in events] == ["heartbeat", "collector_round"]
    assert "signing as routewatch" in done.stderr and "refuse" not in done.stderr
    assert SECRET not in done.stderr + done.stdout

    # one key without the other: one sentence, nothing run
    env.pop("ROUTEWATCH_COLLECT_SECRET_KEY")
    done = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 2 and done.stdout == ""
    assert "ROUTEWATCH_COLLECT_ACCESS_KEY and ROUTEWATCH_COLLECT_SECRET_KEY go together" in (
        done.stderr
    )
