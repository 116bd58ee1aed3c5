"""Remedies as plans on a real RocketMQ, both release lines (docs/remedies.md): two NameServers,
broker-a and broker-b with auto-creation on, broker-c started with it off (so without TBW102)
and turned on at run time. The faults are made before routewatch starts, so that the job finds
them at its start: topics stuck on broker-a alone, a topic with skewed counts, a topic deleted
on broker-b alone (its route stale), broker-c's missing TBW102. ``routewatch collect`` writes
the spool; the job's own step (the stream job's, in-process: no Spark) follows it into the store
that ``routewatch remedy`` reads and ``routewatch api`` serves. Each test takes its own alert;
they share the cluster and the processes, in file order."""

from __future__ import annotations

import dataclasses
import getpass
import os
import shlex
import socket
import stat
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest

from routewatch import remoting
from routewatch.remoting import TopicRoute
from routewatch.settings import load
from routewatch.store import open_store
from routewatch.store.remedy_runs import release_lock, remedy_runs, take_lock
from routewatch.terminal import iso_time
from routewatch.testing.processes import free_port, start_routewatch, stop, wait_for
from routewatch.testing.rocketmq import (
    TOOL_HEAP,
    BrokerSpec,
    ClusterSpec,
    RocketMQCluster,
    java_command,
    java_env,
)
from streaming.settings import StreamingSettings
from tests.support.rocketmq import EVERY_MAJOR, module_cluster
from tests.support.stores import SpoolFollower

pytestmark = [pytest.mark.rocketmq, pytest.mark.slow]

CLUSTER = "DefaultCluster"
MASTERS = ("broker-a", "broker-b", "broker-c")
SPEC = ClusterSpec(
    namesrvs=("ns1", "ns2"),
    brokers=(
        BrokerSpec("broker-a"),
        BrokerSpec("broker-b"),
        BrokerSpec("broker-c", auto_create_topic=False),
    ),
)
# topics stuck on broker-a alone, one per test that needs a PARTIAL_COVERAGE of its own
STUCK = ("Stuck", "Moved", "Hushed", "Locked", "Frozen", "Pasted")
SKEWED, STALE = "Skewed", "Stale"
TOKEN = "remedy-test-token"

cluster = module_cluster(SPEC, EVERY_MAJOR)


@dataclasses.dataclass
class Rig:
    """The cluster, and routewatch's processes over it."""

    cluster: RocketMQCluster
    data: Path
    env: dict[str, str]
    api: str
    procs: dict[str, subprocess.Popen[bytes]]
    logs: Path
    follower: SpoolFollower

    @property
    def store_url(self) -> str:
        return f"sqlite:///{self.data / 'routewatch.db'}"

    def _running(self) -> None:
        if self.follower.failure is not None:
            raise AssertionError(f"the job's step failed: {self.follower.failure!r}")
        for name, proc in self.procs.items():
            if proc.poll() is not None:
                raise AssertionError((self.logs / f"{name}.log").read_text()[-3000:])

    def alerts(self) -> list[dict[str, Any]]:
        self._running()
        if not (self.data / "routewatch.db").exists():
            return []
        store = open_store(self.store_url)
        try:
            return store.alerts()
        finally:
            store.close()

    def find(self, kind: str, what: str, state: str = "open") -> dict[str, Any] | None:
        for a in self.alerts():
            if a["kind"] == kind and (a["topic"] or a["broker"]) == what and a["state"] == state:
                return a
        return None

    def wait_open(self, kind: str, what: str, timeout: float = 180) -> dict[str, Any]:
        wait_for(lambda: self.find(kind, what) is not None, timeout, f"{kind} of {what}")
        found = self.find(kind, what)
        assert found is not None
        return found

    def wait_resolved(self, alert_id: str, timeout: float = 90) -> dict[str, Any]:
        def resolved() -> dict[str, Any] | None:
            return next(
                (a for a in self.alerts() if a["id"] == alert_id and a["state"] == "resolved"),
                None,
            )

        wait_for(lambda: resolved() is not None, timeout, f"{alert_id} resolved", interval=0.5)
        found = resolved()
        assert found is not None
        return found

    def remedy(
        self, alert_id: str, *flags: str, env: dict[str, str] | None = None
    ) -> tuple[int, dict[str, Any], str]:
        """``routewatch remedy ID FLAGS --json``: its exit status, the run, its error output."""
        result = subprocess.run(
            [sys.executable, "-m", "routewatch.cli", "remedy", alert_id, *flags, "--json"],
            env=env or self.env,
            capture_output=True,
            timeout=300,
            check=False,
        )
        run = orjson.loads(result.stdout) if result.stdout.strip() else {}
        return result.returncode, run, result.stderr.decode()

    def runs(self, alert_id: str) -> list[dict[str, Any]]:
        store = open_store(self.store_url)
        try:
            return remedy_runs(store, alert_id=alert_id)
        finally:
            store.close()

    def routed(self, topic: str) -> dict[str, dict[str, tuple[int, int, int]]]:
        """Every NameServer's route of ``topic``: broker -> (read, write, perm)."""
        out = {}
        for name in self.cluster.namesrvs:
            route = self.cluster.route(topic, name)
            out[name] = {
                q.broker: (q.read_queue_nums, q.write_queue_nums, q.perm)
                for q in (route.queues if route else ())
            }
        return out

    def snapshot(self) -> dict[str, Any]:
        """The whole cluster as routewatch could change it: every broker's table with its data
        version, and every NameServer's route of every topic it lists."""
        tables = {}
        for name in MASTERS:
            with remoting.Connection(self.cluster.broker(name).addr) as conn:
                table = remoting.parse_topic_table(
                    conn.ask(remoting.GET_ALL_TOPIC_CONFIG, "the topic table")
                )
            tables[name] = (
                str(table.version),
                {t: dataclasses.astuple(c) for t, c in table.topics.items()},
            )
        routes: dict[str, dict[str, Any]] = {}
        for name in self.cluster.namesrvs:
            addr = self.cluster.namesrv_addr(name)
            with remoting.Connection(addr) as conn:
                routes[name] = {
                    t: _shape(remoting.route_on(conn, t))
                    for t in sorted(remoting.topic_list_on(conn))
                }
        return {"tables": tables, "routes": routes}


def _shape(route: TopicRoute | None) -> Any:
    if route is None:
        return None
    return (
        sorted(dataclasses.astuple(q) for q in route.queues),
        sorted((b.broker, sorted(b.addrs.items())) for b in route.brokers),
    )


def _make(cluster: RocketMQCluster, topic: str, broker: str, read: int, write: int) -> None:
    """``topic`` on one broker, by the admin request ``mqadmin updateTopic -b`` sends (without
    its JVM's start)."""
    addr = cluster.broker(broker).addr
    remoting.update_topic_in_broker(addr, topic, read_queues=read, write_queues=write)


@pytest.fixture(scope="module")
def rig(cluster: RocketMQCluster, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Rig]:
    for topic in STUCK:  # the config a send's auto-creation gives, on one broker
        _make(cluster, topic, "broker-a", 4, 4)
    _make(cluster, SKEWED, "broker-a", 8, 4)
    _make(cluster, SKEWED, "broker-b", 4, 4)
    for broker in MASTERS:
        _make(cluster, STALE, broker, 4, 4)
    remoting.delete_topic_in_broker(cluster.broker("broker-b").addr, STALE)
    remoting.update_broker_config(
        cluster.broker("broker-c").addr, {"autoCreateTopicEnable": "true"}
    )

    tmp = tmp_path_factory.mktemp("remedy")
    data = tmp / "data"
    (data / "spool").mkdir(parents=True)
    port = free_port()
    env = {
        **os.environ,
        "ROUTEWATCH_DATA_DIR": str(data),
        "ROUTEWATCH_COLLECT_POLL_INTERVAL_S": "1",
        "ROUTEWATCH_COLLECT_HEARTBEAT_INTERVAL_S": "1",
        "ROUTEWATCH_COLLECT_METRICS_PORT": str(free_port()),
        "ROUTEWATCH_API_PORT": str(port),
        "ROUTEWATCH_API_TOKEN": TOKEN,
        "ROUTEWATCH_REMEDY_REQUEST_TIMEOUT_S": "3",
        "ROUTEWATCH_REMEDY_VERIFY_TIMEOUT_S": "30",
    }
    # the job's own step over the collector's spool (what routewatch stream runs, without
    # Spark: tests/emitter/collect/test_collect_auto_created.py runs the Spark job on it)
    follower = SpoolFollower(load(StreamingSettings, data_dir=data, lateness_bound_s=2))
    procs = {
        "collect": start_routewatch(
            ["collect", "--namesrv", cluster.namesrv_addr(), "--to", "spool"],
            env,
            tmp / "collect.log",
        ),
        "api": start_routewatch(["api"], env, tmp / "api.log"),
    }
    follower.start()
    rig = Rig(cluster, data, env, f"http://127.0.0.1:{port}", procs, tmp, follower)
    try:
        yield rig
    finally:
        for proc in procs.values():
            stop(proc, timeout=60)
        follower.stop()


def test_a_remedy_dry_run_changes_nothing_and_its_apply_covers_a_stuck_topic(rig: Rig) -> None:
    alert = rig.wait_open("PARTIAL_COVERAGE", "Stuck")
    before = rig.snapshot()
    code, run, err = rig.remedy(alert["id"])
    assert code == 0, err
    assert run["outcome"] == "dry run" and run["refusal"] is None
    assert [(s["status"], s["step"]["broker"]) for s in run["steps"]] == [
        ("would change", "broker-b"),
        ("would change", "broker-c"),
    ]
    assert run["steps"][0]["says"] == (
        "Stuck on broker-b: not held -> 4 read / 4 write queues, perm 6"
    )
    # nothing that changes the cluster was sent: every table and every route, whole, the same
    assert rig.snapshot() == before

    code, run, err = rig.remedy(alert["id"], "--apply")
    assert code == 0, (run, err)
    assert run["outcome"] == "done"
    assert [s["status"] for s in run["steps"]] == ["done", "done"]
    # every NameServer routes it on every master, writable, with the alert's counts
    assert rig.routed("Stuck") == {
        ns: {b: (4, 4, 6) for b in MASTERS} for ns in rig.cluster.namesrvs
    }
    resolved = rig.wait_resolved(alert["id"])
    assert resolved["evidence"]["coverage"] == "3/3"
    # both runs audited, newest first, in the store and through the API
    runs = rig.runs(alert["id"])
    assert [(r["mode"], r["outcome"]) for r in runs] == [("apply", "done"), ("dry_run", "dry run")]
    assert {r["actor"] for r in runs} == {f"os:{getpass.getuser()}@{socket.gethostname()}"}
    with urllib.request.urlopen(f"{rig.api}/remedies?alert_id={alert['id']}") as answer:
        listed = orjson.loads(answer.read())["data"]
    assert [r["seq"] for r in listed] == [r["seq"] for r in runs]

    # the alert resolved: a remedy is refused, in one sentence
    code, run, err = rig.remedy(alert["id"], "--apply")
    assert code == 2 and run["outcome"] == "refused"
    assert run["refusal"].startswith(f"Alert {alert['id']} was resolved at ")
    assert err.strip() == f"routewatch: {run['refusal']}"


def test_a_remedy_is_refused_when_the_route_was_changed_by_hand_after_its_dry_run(
    rig: Rig,
) -> None:
    alert = rig.wait_open("PARTIAL_COVERAGE", "Moved")
    code, run, _ = rig.remedy(alert["id"])
    assert (code, run["outcome"]) == (0, "dry run")
    # by hand, between the dry run and the apply: whether the job has followed yet (its plan
    # changed) or not (the route differs from what the plan assumes), the apply is refused
    _make(rig.cluster, "Moved", "broker-b", 4, 4)
    code, run, _ = rig.remedy(alert["id"], "--apply")
    assert (code, run["outcome"]) == (2, "refused")
    on = ", ".join(sorted(rig.cluster.namesrv_addr(n) for n in ("ns1", "ns2")))
    refused, dry = rig.runs(alert["id"])[:2]
    assert (refused["outcome"], dry["mode"]) == ("refused", "dry_run")
    assert run["refusal"] in (
        f"The cluster is not as the plan assumes any more (broker-b is routed Moved on {on}; "
        "broker-b holds Moved itself): the alert will follow the change; run the dry run again "
        "once it has.",
        f"The plan of alert {alert['id']} changed since your dry run at "
        f"{iso_time(dry['started_at'])} (the cluster "
        "changed): run the dry run again and check it before you apply.",
    )
    assert "Moved" not in rig.cluster.broker("broker-c").topics()  # nothing was sent


def test_a_remedy_is_refused_while_silenced_locked_unreachable_unseen_or_losing_a_route(
    rig: Rig,
) -> None:
    # silenced
    hushed = rig.wait_open("PARTIAL_COVERAGE", "Hushed")
    subprocess.run(
        [sys.executable, "-m", "routewatch.cli", "silence", hushed["id"], "--for", "1h"],
        env=rig.env,
        check=True,
        capture_output=True,
    )
    code, run, _ = rig.remedy(hushed["id"], "--apply")
    assert code == 2 and run["refusal"].startswith(f"Alert {hushed['id']} is silenced until ")
    assert run["refusal"].endswith(
        f"lift the silence first (routewatch silence {hushed['id']} --lift)."
    )

    # another apply of the same alert running
    locked = rig.wait_open("PARTIAL_COVERAGE", "Locked")
    store = open_store(rig.store_url)
    now = int(time.time() * 1000)
    assert take_lock(store, locked["id"], "os:someone@elsewhere", now, now + 600_000) is None
    try:
        code, run, _ = rig.remedy(locked["id"], "--apply")
    finally:
        release_lock(store, locked["id"], now)
    assert code == 2
    assert run["refusal"].startswith(f"Another apply of alert {locked['id']} is running ")
    assert "by os:someone@elsewhere): wait for it to end." in run["refusal"]

    # a broker of the plan that does not answer (frozen: its connections open, no answer)
    frozen = rig.wait_open("PARTIAL_COVERAGE", "Frozen")
    broker_b = rig.cluster.broker("broker-b")
    broker_b.freeze()
    try:
        code, run, _ = rig.remedy(frozen["id"], "--apply")
    finally:
        broker_b.thaw()
    assert code == 2
    assert run["refusal"].startswith(f"Broker {broker_b.addr} did not answer (")
    assert run["refusal"].endswith(
        "nothing was changed; run it again once every NameServer and broker of the plan answers."
    )
    assert "Frozen" not in broker_b.topics()

    # a plan that would leave the topic writable on fewer masters than now (its one holder
    # made read-only: the store's plan rewritten, as no kind's plan does it)
    plan = frozen["plan"]
    plan["steps"] = [
        {
            **plan["steps"][0],
            "broker": "broker-a",
            "addr": rig.cluster.broker("broker-a").addr,
            "perm": 4,
        }
    ]
    with store.transaction() as db:
        db.execute(
            "UPDATE alerts SET plan = ? WHERE id = ?", (orjson.dumps(plan).decode(), frozen["id"])
        )
    code, run, _ = rig.remedy(frozen["id"], "--apply")
    assert code == 2
    assert run["refusal"] == (
        "The plan would leave Frozen routed writable on 0 masters, fewer than the 1 now: add "
        "--allow-loss to do it anyway."
    )
    assert all(q == (4, 4, 6) for r in rig.routed("Frozen").values() for q in r.values())

    # a plan naming an address the collector never saw for the cluster (the broker's own
    # address with another port: the store's plan rewritten)
    plan = locked["plan"]
    forged = "127.0.0.1:1"
    plan["steps"][0]["addr"] = forged
    with store.transaction() as db:
        db.execute(
            "UPDATE alerts SET plan = ? WHERE id = ?", (orjson.dumps(plan).decode(), locked["id"])
        )
    store.close()
    code, run, _ = rig.remedy(locked["id"], "--apply")
    assert code == 2
    assert run["refusal"] == (
        f"Broker broker-b at {forged} was never seen by the collector as a master of cluster "
        f"{CLUSTER}: routewatch acts only on the cluster it watches."
    )


def test_a_remedy_through_the_api_needs_its_token(rig: Rig) -> None:
    alert = rig.wait_open("PARTIAL_COVERAGE", "Locked")
    url = f"{rig.api}/alerts/{alert['id']}/remedy?apply=true"
    with pytest.raises(urllib.error.HTTPError) as refused:
        urllib.request.urlopen(urllib.request.Request(url, method="POST"), timeout=30)
    assert refused.value.code in (401, 403)
    no_token = {k: v for k, v in rig.env.items() if k != "ROUTEWATCH_API_TOKEN"}
    code, _, err = rig.remedy(alert["id"], "--apply", "--api", rig.api, env=no_token)
    assert code == 2
    assert err.strip() == (
        "routewatch: applying a remedy through the API needs its token: set "
        "ROUTEWATCH_API_TOKEN to the API's."
    )
    # with the token: a dry run, audited as the token's digest (never the token)
    code, run, err = rig.remedy(alert["id"], "--api", rig.api)
    assert code == 2, err  # its plan was rewritten by the test before: refused, said through 409
    assert run["actor"].startswith("token:") and TOKEN not in run["actor"]
    assert run["refusal"].startswith("Broker broker-b at 127.0.0.1:1 was never seen")


def test_a_remedy_raises_skewed_counts_and_never_lowers_a_read_count(rig: Rig) -> None:
    alert = rig.wait_open("QUEUE_SKEW", SKEWED)
    code, run, err = rig.remedy(alert["id"], "--apply")
    assert code == 0, (run, err)
    assert [(s["step"]["broker"], s["status"]) for s in run["steps"]] == [
        ("broker-a", "done"),
        ("broker-b", "done"),
    ]
    # every count raised to the largest (broker-a's 8 read queues), none lowered
    for routes in rig.routed(SKEWED).values():
        assert routes == {"broker-a": (8, 8, 6), "broker-b": (8, 8, 6)}
    rig.wait_resolved(alert["id"])


def test_a_remedy_makes_a_stale_route_held_again(rig: Rig) -> None:
    alert = rig.wait_open("STALE_ROUTE", STALE)
    # the alternative deletes routes: not without --allow-loss
    code, run, _ = rig.remedy(alert["id"], "--alternative", "--apply")
    assert code == 2
    assert run["refusal"].startswith("Step 1 could lose something (Stale has no route on ")
    assert run["refusal"].endswith("add --allow-loss to perform it.")
    assert STALE not in rig.cluster.broker("broker-b").topics()

    code, run, err = rig.remedy(alert["id"], "--apply")
    assert code == 0, (run, err)
    assert rig.cluster.broker("broker-b").topics()[STALE] == remoting.TopicConfig(4, 4, 6)
    rig.wait_resolved(alert["id"])


def test_a_remedy_restores_tbw102_on_5x_and_says_why_not_on_4_9(rig: Rig) -> None:
    alert = rig.wait_open("TEMPLATE_MISSING", "broker-c")
    code, run, err = rig.remedy(alert["id"], "--apply")
    if rig.cluster.major == 4:
        assert code == 2
        assert run["refusal"] == (
            f"Broker broker-c ({rig.cluster.broker('broker-c').addr}) runs RocketMQ 4.9, which "
            "refuses any admin request on TBW102 (a system topic): take the plan's alternative "
            f"(routewatch remedy {alert['id']} --alternative), a restart with "
            "autoCreateTopicEnable=true."
        )
        code, run, _ = rig.remedy(alert["id"], "--alternative")
        assert code == 0
        ((step,),) = [[s for s in run["steps"]]]
        assert step["status"] == "manual: not yet"
        assert step["says"] == "broker-c's own TBW102 has INHERIT: its TBW102 is missing"
        return
    assert code == 0, (run, err)
    # with the inherit bit and the broker's own count (defaultTopicQueueNums, 8)
    assert rig.cluster.broker("broker-c").topics()["TBW102"] == remoting.TopicConfig(8, 8, 7)
    config = rig.cluster.broker("broker-c").running_config()
    assert config["validateSystemTopicWhenUpdateTopic"] == "true"  # set back
    rig.wait_resolved(alert["id"])


@pytest.fixture
def real_mqadmin(rig: Rig, tmp_path: Path) -> Path:
    """A directory with an ``mqadmin`` that runs the cluster's own (its tools' main class)."""
    command = java_command(
        rig.cluster.home,
        tmp_path / "home",
        TOOL_HEAP,
        "org.apache.rocketmq.tools.command.MQAdminStartup",
    )
    script = tmp_path / "bin" / "mqadmin"
    script.parent.mkdir()
    script.write_text(f'#!/bin/sh\nexec {shlex.join(command)} "$@"\n')
    script.chmod(script.stat().st_mode | stat.S_IEXEC)
    return script.parent


def test_a_remedy_shell_form_runs_as_pasted_with_the_real_mqadmin(
    rig: Rig, real_mqadmin: Path
) -> None:
    alert = rig.wait_open("PARTIAL_COVERAGE", "Pasted")
    env = {
        **java_env(rig.cluster.home),
        "PATH": f"{real_mqadmin}:{os.environ['PATH']}",
    }
    for step in alert["plan"]["steps"]:
        result = subprocess.run(
            ["bash", "-c", step["shell"]], env=env, capture_output=True, text=True, timeout=120
        )
        assert result.returncode == 0 and "Exception" not in result.stdout, result
    wait_for(
        lambda: all(len(r) == 3 for r in rig.routed("Pasted").values()),
        30,
        "Pasted routed on every master by every NameServer",
    )
    rig.wait_resolved(alert["id"])
