"""The client hook library's producers and ``routewatch collect`` beside them, for the tests
that run them on a real cluster (``tests/test_rocketmq_hook.py``,
``tests/test_rocketmq_hook_auto_create.py``): each producer writes into a spool of its own
under one folder, the collector into another, and the job's evaluation reads them all."""

from __future__ import annotations

import contextlib
import os
import re
import signal
import subprocess
import sys
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

import orjson

from routewatch.codec import parse
from routewatch.testing.processes import wait_for
from routewatch.testing.rocketmq import RocketMQCluster
from routewatch.validation import BadInput
from tests.support.route_driver import HookSpec, ProducerSpec, RouteDriver
from tests.support.traces import evaluate_events

__all__ = [
    "Collector",
    "broker_of",
    "collecting",
    "evaluate_spools",
    "hooked",
    "of",
    "published",
]

COLLECT = (sys.executable, "-m", "routewatch.cli", "collect")
SPOOL_NAME = re.compile(r"^\d{20}-\d+-[0-9a-f]{8}-\d{8}\.jsonl$")


class Collector:
    """``routewatch collect`` over the module's cluster, polling every 0.5 s and writing a
    heartbeat per broker at least every second into ``spools/collector``: the broker side of
    the evaluation at the end (the other half of issue 26, used as it is)."""

    def __init__(self, cluster: RocketMQCluster, spool: Path, workdir: Path) -> None:
        self.spool = spool
        workdir.mkdir(parents=True, exist_ok=True)
        env = {
            **os.environ,
            "ROUTEWATCH_DATA_DIR": str(workdir / "data"),
            "ROUTEWATCH_SPOOL_DIR": str(spool),
            "ROUTEWATCH_SPOOL_ROLL_INTERVAL_S": "0.5",
            "ROUTEWATCH_COLLECT_POLL_INTERVAL_S": "0.5",
            "ROUTEWATCH_COLLECT_HEARTBEAT_INTERVAL_S": "1",
        }
        with (workdir / "collect.log").open("ab") as log:
            self.proc = subprocess.Popen(
                [*COLLECT, "--namesrv", cluster.namesrv_addr(), "--to", "spool"],
                stdout=log,
                stderr=subprocess.STDOUT,
                env=env,
                start_new_session=True,
            )

    def heartbeats(self) -> list[dict[str, Any]]:
        if not self.spool.is_dir():
            return []
        events = (
            orjson.loads(line)
            for path in sorted(self.spool.glob("[0-9]*.jsonl"))
            for line in path.read_bytes().splitlines()
        )
        return [e for e in events if e["type"] == "heartbeat"]  # (not its rounds' reports)

    def stop(self) -> None:
        """SIGTERM by PID (it publishes what it wrote), SIGKILL if it does not exit."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(30)


@contextlib.contextmanager
def collecting(
    cluster: RocketMQCluster, spools: Path, brokers: Iterable[str]
) -> Iterator[Collector]:
    """A :class:`Collector` into ``spools/collector``, once it writes a heartbeat of each of
    ``brokers``; stopped at the end."""
    running = Collector(cluster, spools / "collector", cluster.workdir / "collector")
    try:
        wait_for(
            lambda: {e["broker"] for e in running.heartbeats()} == set(brokers),
            60,
            "the collector writing a heartbeat of every broker",
        )
        yield running
    finally:
        running.stop()


def broker_of(cluster: RocketMQCluster, brokers: Iterable[str], addr: str | None) -> str | None:
    """Which of ``brokers`` listens at ``addr``."""
    return next((b for b in brokers if cluster.broker(b).addr == addr), None)


def hooked(
    driver: RouteDriver,
    spools: Path,
    name: str,
    namesrv: str | None,
    cluster: str,
    **settings: Any,
) -> dict[str, Any]:
    """Start a producer with the library installed, writing into ``spools/<name>`` for
    ``cluster``."""
    hook = HookSpec(spool_dir=spools / name, cluster=cluster, roll_interval_ms=200)
    started = driver.producer(ProducerSpec(name, namesrv, routewatch=hook, **settings))
    assert started["routewatch"] is True
    return started


def published(driver: RouteDriver, spools: Path, name: str) -> list[dict[str, Any]]:
    """Every event the producer's library published so far (after a flush), each parsed as the
    job parses it; fails on a line that is not a contract event or a file not named as the
    spool source expects."""
    published: dict[str, Any] = {}

    def settled() -> bool:  # the client's own refresh may add events at any time
        published.update(driver.hook_stats(name, flush_ms=2_000))
        return bool(published["written"] == published["accepted"])

    wait_for(settled, 20, f"producer {name}'s events published")
    assert published["dropped"] == 0, published
    assert published["unrepresentable"] == 0 and published["internalErrors"] == 0, published
    spool = spools / name
    files = sorted(spool.iterdir(), key=lambda p: (p.stat().st_mtime_ns, p.name))
    assert all(SPOOL_NAME.match(p.name) for p in files), [p.name for p in files]
    events = []
    for path in files:
        for line in path.read_bytes().splitlines():
            event = parse(line)
            assert not isinstance(event, BadInput), (line, event)
            events.append(event)
    assert len(events) >= published["written"]
    assert [e["seq"] for e in events] == sorted(e["seq"] for e in events)
    return events


def of(events: list[dict[str, Any]], kind: str, topic: str) -> list[dict[str, Any]]:
    return [e for e in events if e["type"] == kind and e["topic"] == topic]


def evaluate_spools(spools: Path, collector: Collector, cluster: str) -> list[Any]:
    """The producers' events and the collector's heartbeats under ``spools``, once the
    heartbeats are 6 s past the producers' last event (time passes in the job through events:
    past every rule's 5 s wait), through the job's own step as one stream in event time (the
    spools were written side by side; ``routewatch evaluate`` is the same step under Spark,
    tested in tests/streaming/job): the final alerts."""
    produced = [
        e for e in _spool_events(spools, but=collector.spool) if e["type"] != "collector_round"
    ]
    last = max(e["ts"] for e in produced)
    wait_for(
        lambda: max((e["ts"] for e in collector.heartbeats()), default=0) > last + 6_000,
        30,
        "the collector's heartbeats 6 s past the producers' last event",
    )
    collector.stop()
    final, _ = evaluate_events(_spool_events(spools), cluster)
    return final


def _spool_events(spools: Path, but: Path | None = None) -> list[dict[str, Any]]:
    """Every published event of every spool under ``spools`` but ``but``."""
    return [
        orjson.loads(line)
        for spool in spools.iterdir()
        if spool.is_dir() and spool != but
        for path in spool.iterdir()
        if not path.name.startswith(".")  # published files only (not .routewatch-origin)
        for line in path.read_bytes().splitlines()
    ]
